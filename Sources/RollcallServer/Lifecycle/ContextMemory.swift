import CRollcallShim
#if canImport(Glibc)
import Glibc
#endif

/// The C memory an lws context reads for its whole life: the strings of its creation info,
/// its protocol list and its idle policy. Freed with the server, after the context is gone.
final class ContextMemory {
    private var strings: [UnsafeMutablePointer<CChar>] = []
    private var protocolList: UnsafeMutablePointer<lws_protocols>?
    private var protocolCount = 0
    private var idlePolicy: UnsafeMutablePointer<lws_retry_bo_t>?

    /// A C copy of `string` that lives as long as this memory.
    func cString(_ string: String) -> UnsafeMutablePointer<CChar> {
        let pointer = strdup(string)!
        strings.append(pointer)
        return pointer
    }

    /// A protocol list of `count` zeroed entries (the last one ends the list).
    func protocols(count: Int) -> UnsafeMutablePointer<lws_protocols> {
        let list = UnsafeMutablePointer<lws_protocols>.allocate(capacity: count)
        list.initialize(repeating: lws_protocols(), count: count)
        protocolList = list
        protocolCount = count
        return list
    }

    /// A zeroed idle ("validity") policy: lws keeps no per-connection validity timer.
    func noIdlePolicy() -> UnsafeMutablePointer<lws_retry_bo_t> {
        let policy = UnsafeMutablePointer<lws_retry_bo_t>.allocate(capacity: 1)
        policy.initialize(to: lws_retry_bo_t())
        idlePolicy = policy
        return policy
    }

    deinit {
        for string in strings { free(string) }
        protocolList?.deinitialize(count: protocolCount)
        protocolList?.deallocate()
        idlePolicy?.deallocate()
    }
}
