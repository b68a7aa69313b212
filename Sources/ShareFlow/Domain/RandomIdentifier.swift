import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Random identifiers: participant IDs, record names, share URL tokens.
///
/// Foundation's `UUID()` on Linux opens, reads and closes `/dev/urandom` for every value —
/// three system calls, a fifth of a FetchShareParticipants item. The kernel's generator is
/// still the only source here, read 4 KiB at a time (one open/read/close per 256 IDs) into a locked pool.
///
/// ```swift
/// let id = RandomIdentifier.uuidString()   // "3F2A9C1E-…", version 4, as UUID().uuidString
/// ```
public enum RandomIdentifier {
    /// A version 4 UUID in upper-case canonical form.
    public static func uuidString() -> String {
        var b = pool.take16()
        b.6 = (b.6 & 0x0F) | 0x40  // version 4
        b.8 = (b.8 & 0x3F) | 0x80  // RFC 4122 variant
        return withUnsafeBytes(of: &b) { raw in
            String(unsafeUninitializedCapacity: 36) { out in
                let hex: StaticString = "0123456789ABCDEF"
                let digits = hex.utf8Start
                var o = 0
                for i in 0..<16 {
                    if i == 4 || i == 6 || i == 8 || i == 10 {
                        out[o] = UInt8(ascii: "-")
                        o += 1
                    }
                    out[o] = digits[Int(raw[i] >> 4)]
                    out[o + 1] = digits[Int(raw[i] & 0x0F)]
                    o += 2
                }
                return o
            }
        }
    }

    /// A record's change tag (R21): 12 lower-case hex digits, as the store's triggers make them.
    public static func changeTag() -> String {
        bytes(6).map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }

    /// `count` random bytes from the kernel's generator.
    public static func bytes(_ count: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(count)
        while out.count < count {
            let b = pool.take16()
            withUnsafeBytes(of: b) { out.append(contentsOf: $0.prefix(count - out.count)) }
        }
        return out
    }

    private static let pool = Pool()

    /// 4 KiB of kernel randomness handed out 16 bytes at a time; every byte is used once.
    private final class Pool: @unchecked Sendable {  // all state behind `lock`
        typealias Block = (
            UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
            UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
        )
        private let lock = NSLock()
        private let buffer = UnsafeMutableRawPointer.allocate(byteCount: 4096, alignment: 16)
        private var next = 4096

        func take16() -> Block {
            lock.lock()
            defer { lock.unlock() }
            if next == 4096 {
                refill()
                next = 0
            }
            let block = buffer.loadUnaligned(fromByteOffset: next, as: Block.self)
            // Handed-out bytes are wiped so a later dump of the pool cannot replay them.
            (buffer + next).initializeMemory(as: UInt8.self, repeating: 0, count: 16)
            next += 16
            return block
        }

        private func refill() {
            let fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { fatalError("cannot open /dev/urandom: errno \(errno)") }
            defer { close(fd) }
            var filled = 0
            while filled < 4096 {
                let n = read(fd, buffer + filled, 4096 - filled)
                if n > 0 { filled += n } else if n == 0 || errno != EINTR { fatalError("cannot read /dev/urandom: errno \(errno)") }
            }
        }
    }
}
