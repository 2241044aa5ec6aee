#if ROLLCALL_FUZZ
/// libFuzzer's entry point: one input per call (built with `-DROLLCALL_FUZZ -sanitize=fuzzer`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    FuzzHarness.run(input)
    return 0
}

/// libFuzzer's driver (`-sanitize=fuzzer` links it in).
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// SwiftPM links executables with `--defsym main=rollcall_fuzz_main` (its entry-point
/// renaming), which would hide libFuzzer's own `main`; this entry point hands over to
/// libFuzzer's driver instead, so `swift build` works without extra linker flags.
@_cdecl("rollcall_fuzz_main")
public func rollcallFuzzMain(
    _ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> CInt {
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments) { data, size in fuzzTestOneInput(data, size) }
}
#else
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Without libFuzzer: replays the files named on the command line (e.g. `Fuzz/corpus/*` or a
/// crash file) through the same harness, so a finding can be reproduced in a normal build.
@main
struct FuzzReplay {
    static func main() {
        let paths = CommandLine.arguments.dropFirst()
        if paths.isEmpty {
            print("usage: rollcall-fuzz FILE...  (replays inputs; `make fuzz` builds the fuzzer)")
            return
        }
        for path in paths {
            guard let bytes = readFile(path) else { print("cannot read \(path)"); exit(2) }
            FuzzHarness.run(bytes)
        }
        print("replayed \(paths.count) input(s): all invariants held")
    }

    static func readFile(_ path: String) -> [UInt8]? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            if count <= 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
        }
        return bytes
    }
}
#endif
