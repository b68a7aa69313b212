import Foundation
import ShareFlow

/// Where a PostgreSQL store's password comes from when its URL has none, as libpq looks
/// (so a password need not sit in the URL, where `ps` shows it to every user): `PGPASSWORD`,
/// then the config's `postgres.passwordFile` (the file's first line), then the password file
/// (`PGPASSFILE`, else `~/.pgpass`: `host:port:database:user:password` lines, `*` matching
/// anything, `\` escaping `:` and `\`; ignored, as libpq does, when group or others can read it).
///
/// ```swift
/// let password = try PostgresPassword.find(for: location, passwordFile: "/run/secrets/pg")
/// ```
enum PostgresPassword {
    static func find(
        for location: PostgresLocation,
        passwordFile: String?,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> String? {
        if let password = location.password { return password }
        if let password = environment["PGPASSWORD"], !password.isEmpty { return password }
        if let passwordFile {
            guard let data = try? BoundedFile.read(passwordFile, maxBytes: 64 << 10) else {
                throw StoreError.cannotOpen(path: location.label, reason: "its password file \(passwordFile) (postgres.passwordFile) cannot be read")
            }
            let text = String(decoding: data, as: UTF8.self)
            return String(text.split(separator: "\n", omittingEmptySubsequences: false).first ?? "")
                .trimmingCharacters(in: CharacterSet(charactersIn: "\r"))
        }
        let file =
            environment["PGPASSFILE"].flatMap { $0.isEmpty ? nil : $0 }
            ?? environment["HOME"].map { $0 + "/.pgpass" }
        guard let file else { return nil }
        return lookUp(in: file, location)
    }

    /// The password of the first matching line of a libpq password file, if it is private.
    static func lookUp(in file: String, _ location: PostgresLocation) -> String? {
        var info = stat()
        guard stat(file, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_mode & (S_IRWXG | S_IRWXO) == 0,
            let data = try? BoundedFile.read(file, maxBytes: 1 << 20)
        else { return nil }
        let wanted = [location.host, String(location.port), location.database, location.user]
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") where !line.hasPrefix("#") {
            let fields = split(String(line))
            guard fields.count == 5 else { continue }
            if zip(fields.prefix(4), wanted).allSatisfy({ $0 == "*" || $0 == $1 || ($0 == "localhost" && $1 == "127.0.0.1") }) {
                return fields[4]
            }
        }
        return nil
    }

    /// A line's fields: split at `:`, `\` escaping the next character.
    private static func split(_ line: String) -> [String] {
        var fields = [""]
        var escaped = false
        for c in line.trimmingCharacters(in: CharacterSet(charactersIn: "\r")) {
            if escaped {
                fields[fields.count - 1].append(c)
                escaped = false
            } else if c == "\\" {
                escaped = true
            } else if c == ":" {
                fields.append("")
            } else {
                fields[fields.count - 1].append(c)
            }
        }
        return fields
    }
}
