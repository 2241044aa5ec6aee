import CRollcallShim
import Logging

/// Routes libwebsockets' own log lines into swift-log.
///
/// lws levels map to: ERR → error, WARN → warning, USER → info, NOTICE → debug,
/// INFO → trace. Only the lws levels the configured level would show are enabled in lws,
/// so nothing is formatted for nothing.
enum LWSLogBridge {
    /// The logger lws lines go to (label `lws`).
    nonisolated(unsafe) static var logger = Logger(label: "rollcall.lws")
    /// The first few ERR lines lws logged since the last reset (cleared before context
    /// creation, to explain a failure: the first line is usually the cause).
    nonisolated(unsafe) static var recentErrors: [String] = []

    /// Installs the bridge for `level` (process-wide: lws logging is global).
    static func install(level: Logger.Level) {
        logger.logLevel = level
        var mask = UInt32(LLL_ERR) | UInt32(LLL_WARN) | UInt32(LLL_USER)
        if level <= .debug { mask |= UInt32(LLL_NOTICE) }
        if level <= .trace { mask |= UInt32(LLL_INFO) }
        lws_set_log_level(Int32(mask), lwsLogEmit)
    }

    static func emit(level: Int32, line: String) {
        var text = Substring(line)
        while let last = text.last, last == "\n" || last == "\r" { text = text.dropLast() }
        let message = Logger.Message(stringLiteral: String(text))
        switch UInt32(level) {
        case UInt32(LLL_ERR):
            if recentErrors.count < 4 { recentErrors.append(String(text)) }
            logger.error(message)
        case UInt32(LLL_WARN): logger.warning(message)
        case UInt32(LLL_USER): logger.info(message)
        case UInt32(LLL_NOTICE): logger.debug(message)
        default: logger.trace(message)
        }
    }
}

private let lwsLogEmit: @convention(c) (Int32, UnsafePointer<CChar>?) -> Void = { level, line in
    guard let line else { return }
    LWSLogBridge.emit(level: level, line: String(cString: line))
}
