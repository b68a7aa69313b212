/// A Lua error that reached Swift: the message and, when the call was made by the host,
/// the traceback Lua's message handler collected.
public struct LuaError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable { case runtime, syntax, memory, limit }
    public let kind: Kind
    /// First line: `file:line: message`.
    public let message: String
    /// `stack traceback:` and the frames, or empty.
    public let traceback: String

    public init(kind: Kind = .runtime, message: String, traceback: String = "") {
        self.kind = kind
        self.message = message
        self.traceback = traceback
    }

    /// Splits what `sf_traceback` produced into message and traceback.
    init(kind: Kind, handled text: String) {
        if let range = text.range(of: "\nstack traceback:") {
            self.init(
                kind: kind,
                message: String(text[..<range.lowerBound]),
                traceback: String(text[text.index(after: range.lowerBound)...])
            )
        } else {
            self.init(kind: kind, message: text)
        }
    }

    public var description: String {
        traceback.isEmpty ? message : message + "\n" + traceback
    }
}

/// Thrown by Swift functions bound into Lua to raise a specific Lua value (a string or an
/// error object) rather than a message.
public struct LuaRaise: Error, @unchecked Sendable {  // thrown and caught on the state's own thread
    let push: (LuaState) -> Void
    public init(_ push: @escaping (LuaState) -> Void) { self.push = push }
    public static func message(_ text: String) -> LuaRaise { LuaRaise { $0.push(string: text) } }
}

/// A programming mistake in the arguments of a bound function, reported like `lauxlib`'s
/// `bad argument #1 to 'insert' (table expected, got nil)`.
public struct LuaArgumentError: Error, CustomStringConvertible {
    public let position: Int
    public let function: String
    public let reason: String
    public var description: String { "bad argument #\(position) to '\(function)' (\(reason))" }
}
