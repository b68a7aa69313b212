extension Console {
    /// Printing and completion, in Lua: they walk Lua values as Lua sees them. The text:
    /// `Lua/console_prelude.lua`, linted and embedded at build time (the EmbedLua plugin).
    static var prelude: String { EmbeddedLua.consolePrelude }
}
