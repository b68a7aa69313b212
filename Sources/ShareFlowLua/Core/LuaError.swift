/// A Lua error that reached Swift: the message and, when the call was made by the host,
/// the traceback Lua's message handler collected.
public struct LuaError: Error, CustomStringConvertible, Sendable {
    /// What kind of failure: `runtime` (an error raised while running, a spent CPU budget too),
    /// `syntax` (a chunk that does not load), `memory` (out of memory or past the cap, a full
    /// stack), `limit` (declared, but nothing in ShareFlowLua makes it today).
    public enum Kind: Sendable { case runtime, syntax, memory, limit }
    /// Which kind of failure: a `syntax` error is told apart by the console and `shareflow run`.
    public let kind: Kind
    /// First line: `file:line: message`.
    public let message: String
    /// `stack traceback:` and the frames, or empty.
    public let traceback: String

    /// An error raised in Swift (a check of the host's, a file that cannot be read).
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

    /// The message, and the traceback on the lines after it when there is one.
    public var description: String {
        traceback.isEmpty ? message : message + "\n" + traceback
    }
}

/// Thrown by Swift functions bound into Lua to raise a specific Lua value (a string or an
/// error object) rather than a message.
public struct LuaRaise: Error, @unchecked Sendable {  // thrown and caught on the state's own thread
    let push: (LuaState) -> Void
    /// Raises the one value `push` pushes (an error value, as the bindings raise a `ShareFlowError`).
    public init(_ push: @escaping (LuaState) -> Void) { self.push = push }
    /// Raises `text` exactly, as a Lua string: unlike a thrown Swift error, without the caller's
    /// position and the function's name (add `LuaCall.position` for the former).
    public static func message(_ text: String) -> LuaRaise { LuaRaise { $0.push(string: text) } }
}

/// A programming mistake in the arguments of a bound function, reported like `lauxlib`'s
/// `bad argument #1 to 'insert' (table expected, got nil)`.
public struct LuaArgumentError: Error, CustomStringConvertible {
    /// The argument's position, counted from 1 with `self` for a method (the message Lua shows
    /// counts without it, as `luaL_argerror` does).
    public let position: Int
    /// The bound function's name (`accounts.create`); the message uses the name Lua called it by,
    /// when known.
    public let function: String
    /// What was wrong (`string expected, got nil`).
    public let reason: String
    /// As `lauxlib` words it: `bad argument #1 to 'f' (reason)`.
    public var description: String { "bad argument #\(position) to '\(function)' (\(reason))" }
}
