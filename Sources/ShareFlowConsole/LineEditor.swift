import ShareFlowLua
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A small line editor for the console: raw terminal mode, arrows, Home/End, Ctrl-A/E/U/W/K,
/// history (Up/Down) and Tab completion.
public final class LineEditor {
    public enum Input: Equatable {
        case line(String)
        case interrupt
        case endOfFile
    }

    /// Oldest first.
    public var history: [String] = []
    /// Given the text before the cursor: where the word being completed starts, and the
    /// candidates that replace it.
    public var completer: ((String) -> (start: Int, candidates: [String]))?

    private let input: Int32
    private let output: Int32

    public init(input: Int32 = STDIN_FILENO, output: Int32 = STDOUT_FILENO) {
        self.input = input
        self.output = output
    }

    public func readLine(prompt: String) -> Input {
        var saved = termios()
        tcgetattr(input, &saved)
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ECHO | ICANON | ISIG | IEXTEN)
        raw.c_iflag &= ~tcflag_t(IXON | ICRNL)
        tcsetattr(input, TCSADRAIN, &raw)
        defer { tcsetattr(input, TCSADRAIN, &saved) }

        var buffer: [Character] = []
        var cursor = 0
        var historyIndex = history.count
        var pending = ""  // the line being typed when browsing history

        func redraw() {
            let tail = buffer.count - cursor
            var s = "\r" + prompt + String(buffer) + "\u{1b}[K"
            if tail > 0 { s += "\u{1b}[\(tail)D" }
            write(s)
        }
        func set(_ text: String) {
            buffer = Array(text)
            cursor = buffer.count
            redraw()
        }

        write(prompt)
        while true {
            guard let key = readKey() else {
                write("\r\n")
                return .endOfFile
            }
            switch key {
            case .char(let c):
                buffer.insert(c, at: cursor)
                cursor += 1
                if cursor == buffer.count { write(String(c)) } else { redraw() }
            case .enter:
                write("\r\n")
                let line = String(buffer)
                if !line.trimmingCharacters(in: .whitespaces).isEmpty, history.last != line { history.append(line) }
                return .line(line)
            case .ctrl("c"):
                write("^C\r\n")
                return .interrupt
            case .ctrl("d"):
                if buffer.isEmpty {
                    write("\r\n")
                    return .endOfFile
                }
                if cursor < buffer.count { buffer.remove(at: cursor); redraw() }
            case .backspace:
                if cursor > 0 { cursor -= 1; buffer.remove(at: cursor); redraw() }
            case .delete:
                if cursor < buffer.count { buffer.remove(at: cursor); redraw() }
            case .left, .ctrl("b"):
                if cursor > 0 { cursor -= 1; redraw() }
            case .right, .ctrl("f"):
                if cursor < buffer.count { cursor += 1; redraw() }
            case .home, .ctrl("a"):
                cursor = 0; redraw()
            case .end, .ctrl("e"):
                cursor = buffer.count; redraw()
            case .ctrl("u"):
                buffer.removeSubrange(0..<cursor); cursor = 0; redraw()
            case .ctrl("k"):
                buffer.removeSubrange(cursor..<buffer.count); redraw()
            case .ctrl("w"):
                var start = cursor
                while start > 0 && buffer[start - 1] == " " { start -= 1 }
                while start > 0 && buffer[start - 1] != " " { start -= 1 }
                buffer.removeSubrange(start..<cursor); cursor = start; redraw()
            case .ctrl("l"):
                write("\u{1b}[H\u{1b}[2J"); redraw()
            case .up:
                guard historyIndex > 0 else { continue }
                if historyIndex == history.count { pending = String(buffer) }
                historyIndex -= 1
                set(history[historyIndex])
            case .down:
                guard historyIndex < history.count else { continue }
                historyIndex += 1
                set(historyIndex == history.count ? pending : history[historyIndex])
            case .tab:
                switch completion(for: String(buffer[0..<cursor])) {
                case .insert(let text):
                    buffer.insert(contentsOf: text, at: cursor)
                    cursor += text.count
                    redraw()
                case .show(let list):
                    write("\r\n" + list + "\r\n")
                    redraw()
                case .nothing:
                    break
                }
            default:
                continue
            }
        }
    }

    enum Completion { case insert([Character]), show(String), nothing }

    /// What Tab does: insert the candidates' common prefix, or list them.
    private func completion(for before: String) -> Completion {
        guard let completer else { return .nothing }
        let (start, candidates) = completer(before)
        guard !candidates.isEmpty else { return .nothing }
        let word = String(Array(before)[start...])
        var common = candidates[0]
        for c in candidates.dropFirst() {
            while !c.hasPrefix(common) { common.removeLast() }
        }
        if common.count > word.count { return .insert(Array(common.dropFirst(word.count))) }
        if candidates.count > 1 {
            return .show(candidates.prefix(60).joined(separator: "  ") + (candidates.count > 60 ? "  …" : ""))
        }
        return .nothing
    }

    // MARK: Keys

    enum Key: Equatable {
        case char(Character), ctrl(Character), enter, backspace, delete, tab
        case up, down, left, right, home, end, unknown
    }

    private func readByte() -> UInt8? {
        var b: UInt8 = 0
        while true {
            let n = Glibc.read(input, &b, 1)
            if n == 1 { return b }
            if n < 0 && errno == EINTR { continue }
            return nil
        }
    }

    private func readKey() -> Key? {
        guard let b = readByte() else { return nil }
        switch b {
        case 13, 10: return .enter
        case 9: return .tab
        case 127, 8: return .backspace
        case 27: return readEscape()
        case 1...26: return .ctrl(Character(UnicodeScalar(b + 96)))
        case 0x20..<0x80: return .char(Character(UnicodeScalar(b)))
        case 0xC0...0xFF:
            let extra = b >= 0xF0 ? 3 : b >= 0xE0 ? 2 : 1
            var bytes = [b]
            for _ in 0..<extra { if let c = readByte() { bytes.append(c) } }
            return String(bytes: bytes, encoding: .utf8).flatMap(\.first).map { .char($0) } ?? .unknown
        default: return .unknown
        }
    }

    private func readEscape() -> Key {
        guard let b1 = readByte() else { return .unknown }
        guard b1 == UInt8(ascii: "[") || b1 == UInt8(ascii: "O") else { return .unknown }
        guard let b2 = readByte() else { return .unknown }
        switch b2 {
        case UInt8(ascii: "A"): return .up
        case UInt8(ascii: "B"): return .down
        case UInt8(ascii: "C"): return .right
        case UInt8(ascii: "D"): return .left
        case UInt8(ascii: "H"): return .home
        case UInt8(ascii: "F"): return .end
        case UInt8(ascii: "0")...UInt8(ascii: "9"):
            var code = Int(b2 - UInt8(ascii: "0"))
            while let b = readByte() {
                if b == UInt8(ascii: "~") { break }
                if b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") { code = code * 10 + Int(b - UInt8(ascii: "0")) } else { return .unknown }
            }
            switch code {
            case 1, 7: return .home
            case 4, 8: return .end
            case 3: return .delete
            default: return .unknown
            }
        default: return .unknown
        }
    }

    private func write(_ s: String) {
        var s = s
        s.withUTF8 { buf in _ = Glibc.write(output, buf.baseAddress, buf.count) }
    }
}
