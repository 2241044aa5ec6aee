import RollcallProtocol

/// Reassembles one connection's text messages from lws' receive chunks (fragments, and
/// pieces of a frame larger than the rx buffer) and applies the frame rules of PROTOCOL §1:
/// binary → 1003, over `limits.maxFrameBytes` → 1009 (checked before buffering, so a huge
/// frame is refused at its first chunk), not strict UTF-8 → 1007. Holds nothing between
/// messages.
struct MessageAssembler {
    /// What one chunk amounted to.
    enum Outcome: Equatable {
        /// More chunks are needed.
        case incomplete
        /// A complete, UTF-8 valid text message.
        case message([UInt8])
        /// The peer broke a frame rule: close with this code.
        case fault(CloseCode, reason: String)
    }

    /// Fragments of the message being reassembled (empty between messages).
    private(set) var partial: [UInt8] = []

    /// Takes one chunk. `isBinary` (`lws_frame_is_binary`), `remainingInFrame`
    /// (`lws_remaining_packet_payload`) and `isFinalFragment` (`lws_is_final_fragment`)
    /// describe the frame it belongs to; the message is complete when nothing remains of a
    /// final fragment.
    mutating func take(
        _ chunk: UnsafeRawBufferPointer, isBinary: Bool, remainingInFrame: Int, isFinalFragment: Bool, limit: Int
    ) -> Outcome {
        if isBinary {
            return .fault(.binaryFrame, reason: "binary frames are not supported")
        }
        if partial.count + chunk.count + remainingInFrame > limit {
            return .fault(.frameTooBig, reason: "message larger than \(limit) bytes")
        }
        let isComplete = remainingInFrame == 0 && isFinalFragment
        let message: [UInt8]
        if isComplete && partial.isEmpty {
            message = Array(chunk)
        } else {
            partial.append(contentsOf: chunk)
            guard isComplete else { return .incomplete }
            message = partial
            partial = []
        }
        guard UTF8Validation.isValid(message) else {
            return .fault(.invalidUTF8, reason: "invalid UTF-8")
        }
        return .message(message)
    }

    /// Drops any partial message (the connection is closing).
    mutating func reset() {
        partial = []
    }
}
