/// A small linear congruential generator: the same seed, the same sequence, on every machine
/// (property tests print their seed to be replayed). As a `RandomNumberGenerator` (for
/// `Int.random(in:using:)`, `randomElement(using:)`) each step's state is mixed (SplitMix64's
/// finalizer), since an LCG's low bits alone repeat quickly.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    public private(set) var state: UInt64

    public init(seed: UInt64) { state = seed }

    /// A number from 0 to `n - 1`.
    public mutating func next(_ n: Int) -> Int {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int((state >> 33) % UInt64(n))
    }

    public mutating func next() -> UInt64 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
