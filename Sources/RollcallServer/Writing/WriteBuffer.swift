import CRollcallShim

/// The one reusable output buffer of the service thread, with `LWS_PRE` bytes of headroom
/// before the payload as `lws_write` requires. Grows only for an object larger than the batch.
final class WriteBuffer {
    private(set) var base: UnsafeMutablePointer<UInt8>
    private(set) var capacity: Int

    init(initialCapacity: Int) {
        capacity = initialCapacity
        base = .allocate(capacity: rollcall_lws_pre + initialCapacity)
    }

    deinit { base.deallocate() }

    /// Where the payload starts.
    var payload: UnsafeMutablePointer<UInt8> { base + rollcall_lws_pre }

    /// Makes room for a payload of `bytes`.
    func reserve(_ bytes: Int) {
        guard bytes > capacity else { return }
        base.deallocate()
        capacity = bytes
        base = .allocate(capacity: rollcall_lws_pre + bytes)
    }
}
