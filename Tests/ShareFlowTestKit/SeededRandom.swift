/// A small linear congruential generator: the same seed, the same sequence, on every machine
/// (property tests print their seed to be replayed).
public struct SeededRandom: Sendable {
    public private(set) var state: UInt64

    public init(seed: UInt64) { state = seed }

    /// A number from 0 to `n - 1`.
    public mutating func next(_ n: Int) -> Int {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return Int((state >> 33) % UInt64(n))
    }
}
