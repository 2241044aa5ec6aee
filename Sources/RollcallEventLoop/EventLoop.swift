import CRollcallShim
import Foundation

/// The libev loop (epoll) that lws runs on as a *foreign* loop, loaded at run time: the
/// default. `ROLLCALL_EVENT_LOOP=poll` in the environment selects lws' own poll loop instead,
/// and the broker falls back to it (with a warning) when libev cannot be loaded.
///
/// lws' own service (`lws_service`) is `poll(2)` over every descriptor followed by a walk of
/// the descriptor table, so each wake-up costs O(connections). With an event library lws
/// registers one watcher per descriptor and is called only for the ready ones.
///
/// lws 4.1.6's libev plugin re-arms its timer with `ev_timer_set` + `ev_timer_start`, which
/// does nothing while the timer is active: a timer scheduled earlier than the one already
/// armed (our heartbeats, login timeouts, presence intervals) would fire late. A
/// ``pacemakerMicroseconds`` lws timer that reschedules itself keeps lws' timer armed at
/// most that far ahead, so every lws timer fires at most that late.
public final class EventLoop {
    /// The `struct ev_loop *`.
    public let loop: UnsafeMutableRawPointer
    /// `foreign_loops` for `lws_context_creation_info`: one loop per service thread (there is one).
    public let foreignLoops: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    private let run: @convention(c) (UnsafeMutableRawPointer?, Int32) -> Int32
    private let destroyLoop: @convention(c) (UnsafeMutableRawPointer?) -> Void
    /// An lws timer followed by the context pointer it reschedules itself on.
    private let pacemaker: UnsafeMutableRawPointer

    /// How far ahead lws' libev timer may be armed at most.
    public static let pacemakerMicroseconds: lws_usec_t = 10_000
    /// libev's `EVBACKEND_EPOLL` and `EVRUN_ONCE`.
    private static let epollBackend: UInt32 = 0x4
    private static let runOnceFlag: Int32 = 2
    private static let contextOffset = (MemoryLayout<lws_sorted_usec_list_t>.stride + 15) & ~15

    /// True unless the environment asks for lws' poll loop (`ROLLCALL_EVENT_LOOP=poll`).
    /// Measured in BENCHMARKS.md: a 1000-user join storm costs 0.4 broker CPU seconds on this
    /// loop against 1.9 on the poll loop, which polls every descriptor on each wake-up.
    public static var isRequested: Bool { ProcessInfo.processInfo.environment["ROLLCALL_EVENT_LOOP"] != "poll" }

    /// A new epoll loop, or nil when libev is not installed.
    public init?() {
        guard let library = dlopen("libev.so.4", RTLD_NOW | RTLD_GLOBAL),
              let newSymbol = dlsym(library, "ev_loop_new"),
              let runSymbol = dlsym(library, "ev_run"),
              let destroySymbol = dlsym(library, "ev_loop_destroy")
        else { return nil }
        let newLoop = unsafeBitCast(newSymbol, to: (@convention(c) (UInt32) -> UnsafeMutableRawPointer?).self)
        guard let loop = newLoop(Self.epollBackend) else { return nil }
        self.loop = loop
        run = unsafeBitCast(runSymbol, to: (@convention(c) (UnsafeMutableRawPointer?, Int32) -> Int32).self)
        destroyLoop = unsafeBitCast(destroySymbol, to: (@convention(c) (UnsafeMutableRawPointer?) -> Void).self)
        foreignLoops = .allocate(capacity: 1)
        foreignLoops.initialize(to: loop)
        pacemaker = .allocate(byteCount: Self.contextOffset + MemoryLayout<OpaquePointer?>.stride, alignment: 16)
        pacemaker.initializeMemory(as: UInt8.self, repeating: 0, count: Self.contextOffset + MemoryLayout<OpaquePointer?>.stride)
    }

    /// What ``createContext(_:onLibev:)`` made.
    public struct Creation {
        /// The context, nil when lws could not create one on either loop.
        public let context: OpaquePointer?
        /// The libev loop the context runs on; nil: lws' own poll loop.
        public let loop: EventLoop?
        /// libev was wanted but could not be used (not installed, or lws refused it).
        public let fellBackToPoll: Bool
    }

    /// Creates an lws context on a new libev loop when `wanted` (started, pacemaker running),
    /// falling back to lws' poll loop when libev cannot be loaded or lws refuses it.
    public static func createContext(_ info: lws_context_creation_info, onLibev wanted: Bool) -> Creation {
        var info = info
        if wanted, let loop = EventLoop() {
            var withLoop = info
            withLoop.options |= UInt64(LWS_SERVER_OPTION_LIBEV)
            withLoop.foreign_loops = loop.foreignLoops
            if let created = lws_create_context(&withLoop) {
                loop.start(context: created)
                return Creation(context: created, loop: loop, fellBackToPoll: false)
            }
            loop.destroy()
            return Creation(context: lws_create_context(&info), loop: nil, fellBackToPoll: true)
        }
        return Creation(context: lws_create_context(&info), loop: nil, fellBackToPoll: wanted)
    }

    /// Starts the pacemaker on `context` (service thread, once the context exists).
    public func start(context: OpaquePointer) {
        pacemaker.storeBytes(of: Optional(context), toByteOffset: Self.contextOffset, as: OpaquePointer?.self)
        Self.beat(pacemaker.assumingMemoryBound(to: lws_sorted_usec_list_t.self))
    }

    /// One turn: waits for the next ready descriptor, timer or `lws_cancel_service`, and
    /// lets lws handle it.
    public func runOnce() {
        _ = run(loop, Self.runOnceFlag)
    }

    /// Destroys the loop; call after `lws_context_destroy` (which cancels the pacemaker).
    public func destroy() {
        destroyLoop(loop)
        foreignLoops.deallocate()
        pacemaker.deallocate()
    }

    /// Reschedules the pacemaker timer (its callback, too).
    private static let beat: @convention(c) (UnsafeMutablePointer<lws_sorted_usec_list_t>?) -> Void = { sul in
        guard let sul else { return }
        let raw = UnsafeMutableRawPointer(sul)
        guard let context = raw.load(fromByteOffset: contextOffset, as: OpaquePointer?.self) else { return }
        lws_sul_schedule(context, 0, sul, EventLoop.beat, pacemakerMicroseconds)
    }
}
