import CEditLine
import Foundation

/// The console's line reader on a terminal, through libedit: emacs keys, Ctrl-R history
/// search, UTF-8-safe editing, history browsing and Tab completion.
final class EditLineReader {
    enum Input: Equatable {
        case line(String)
        case interrupt
        case endOfFile
    }

    /// Given the text before the cursor: where the word being completed starts (in
    /// characters), and the candidates that replace it.
    var completer: ((String) -> (start: Int, candidates: [String]))?
    private var el: OpaquePointer?
    private var history: OpaquePointer?
    private var promptBuffer: UnsafeMutablePointer<CChar>?
    fileprivate var interrupted = false
    /// The last completion listed its candidates for this text: a second Tab lists again.
    private var lastListed: String?

    init(history lines: [String]) {
        sf_el_utf8_locale()
        el = sf_el_init()
        history = sf_history_init(1000)
        for line in lines { line.withCString { sf_history_enter(history, $0) } }
        sf_el_setup(
            el,
            history,
            promptFunction,
            completeFunction,
            interruptFunction,
            Unmanaged.passUnretained(self).toOpaque()
        )
    }

    deinit {
        el_end(el)
        history_end(history)
        free(promptBuffer)
    }

    func readLine(prompt: String) -> Input {
        free(promptBuffer)
        promptBuffer = strdup(prompt)
        interrupted = false
        var count: Int32 = 0
        guard let raw = el_gets(el, &count), count > 0 else {
            if interrupted { return .interrupt }
            // Ctrl-D on an empty line: leave on a fresh line.
            FileHandle.standardOutput.write(Data("\n".utf8))
            return .endOfFile
        }
        var line = String(cString: raw)
        if line.hasSuffix("\n") { line.removeLast() }
        if !line.trimmingCharacters(in: .whitespaces).isEmpty { line.withCString { sf_history_enter(history, $0) } }
        return .line(line)
    }

    fileprivate var prompt: UnsafeMutablePointer<CChar>? { promptBuffer }

    /// Tab: the candidates' common prefix in place of the word, or (when that adds nothing)
    /// the candidates listed under the line.
    fileprivate func complete() -> UInt8 {
        guard let completer, let info = el_line(el) else { return UInt8(CC_ERROR) }
        let before = String(
            decoding: UnsafeRawBufferPointer(
                start: info.pointee.buffer,
                count: info.pointee.cursor - info.pointee.buffer
            ),
            as: UTF8.self
        )
        let (start, candidates) = completer(before)
        guard !candidates.isEmpty else { return UInt8(CC_ERROR) }
        let word = String(before.dropFirst(start))
        var common = candidates[0]
        for c in candidates.dropFirst() { common = String(common.commonPrefix(with: c)) }
        if common.count > word.count {
            el_deletestr(el, Int32(word.count))
            _ = common.withCString { el_insertstr(el, $0) }
            lastListed = nil
            return UInt8(CC_REFRESH)
        }
        guard candidates.count > 1 else { return UInt8(CC_REFRESH) }
        let list = candidates.prefix(60).joined(separator: "  ") + (candidates.count > 60 ? "  …" : "")
        FileHandle.standardOutput.write(Data(("\n" + list + "\n").utf8))
        lastListed = before
        return UInt8(CC_REDISPLAY)
    }
}

private let promptFunction: @convention(c) (OpaquePointer?) -> UnsafeMutablePointer<CChar>? = { el in
    guard let client = sf_el_client(el) else { return nil }
    return Unmanaged<EditLineReader>.fromOpaque(client).takeUnretainedValue().prompt
}

private let completeFunction: @convention(c) (OpaquePointer?, Int32) -> UInt8 = { el, _ in
    guard let client = sf_el_client(el) else { return UInt8(CC_ERROR) }
    return Unmanaged<EditLineReader>.fromOpaque(client).takeUnretainedValue().complete()
}

/// Ctrl-C at the prompt: drop the line being typed and start afresh (el_gets returns nothing).
private let interruptFunction: @convention(c) (OpaquePointer?, Int32) -> UInt8 = { el, _ in
    guard let client = sf_el_client(el) else { return UInt8(CC_EOF) }
    Unmanaged<EditLineReader>.fromOpaque(client).takeUnretainedValue().interrupted = true
    FileHandle.standardOutput.write(Data("^C\n".utf8))
    return UInt8(CC_EOF)
}
