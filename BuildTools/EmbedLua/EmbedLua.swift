import Foundation
import PackagePlugin

/// Embeds a target's own Lua in its binary: the `.lua` files of the target's `Lua/` folder
/// (excluded from its sources in Package.swift) become `EmbeddedLua.swift`, an `enum
/// EmbeddedLua` with one `static let` a file (`sandbox_prelude.lua` is
/// `EmbeddedLua.sandboxPrelude`). The binary then needs no file at run time, from any folder.
/// The Lua itself is linted with the rest (`make lint`, .luacheckrc).
@main
struct EmbedLua: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        guard let target = target as? SourceModuleTarget else { return [] }
        let folder = target.directoryURL.appending(path: "Lua")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path(percentEncoded: false))
            .filter { $0.hasSuffix(".lua") }
            .sorted()
        let inputs = names.map { folder.appending(path: $0) }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedLua.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(names.joined(separator: ", ")) in \(target.name)",
                executable: try context.tool(named: "EmbedLuaGenerator").url,
                arguments: [output.path(percentEncoded: false)] + inputs.map { $0.path(percentEncoded: false) },
                inputFiles: inputs,
                outputFiles: [output]
            )
        ]
    }
}
