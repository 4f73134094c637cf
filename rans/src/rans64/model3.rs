//! The version-3 chunk model: 16 frequencies out of `M = 256`, and the alias tables derived
//! from them.
//!
//! The layout is version 2's with every size divided by 16: the 256 slots form 16 buckets of
//! 16; bucket `b` belongs to symbol `b` for its first `div[b]` slots and to `alias[b]` for the
//! rest, derived from the frequencies by the same walk ([`alias_layout_in`]). With 16-bit
//! states (`x ∈ [2^8, 2^16)`) the slot is the state's low byte, `b` its high nibble and
//! `j = x & 15` the position in the bucket, so every per-bucket field fits one byte and a
//! lookup is one 16-byte `pshufb` table (`tbl` on NEON) for all the lanes of a vector:
//!
//! - lower part (`j < div[b]`): symbol `b`, index `j` (a symbol's own bucket comes first);
//! - upper part: symbol `alias[b]`, index `(j + cup[b]) mod 256`, where `cup[b]` is the
//!   part's first index minus `div[b]`, kept mod 256 (the true index is below `f ≤ 255`, so
//!   the byte addition is exact);
//! - `x' = f·(x >> 8) + index` in 16 bits (`f ≤ 255`, `x >> 8 ≤ 255`, `index < f`).

use super::V3_M;
use super::model::alias_layout_in;

/// Bucket width in slots.
const BUCKET: u32 = 16;

/// A validated version-3 chunk model and its decode tables (one byte per bucket each, the
/// form the SIMD arms load as 16-byte lookup tables).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Model3 {
    /// Per symbol: its frequency (also the lower part's frequency of bucket `s`).
    pub(crate) freq: [u8; 16],
    /// Per bucket: `div[b]`, the slots of the lower part (0..=16).
    pub(crate) div: [u8; 16],
    /// Per bucket: the upper part's frequency (`freq[b]` when there is no upper part).
    pub(crate) fup: [u8; 16],
    /// Per bucket: the upper part's first index minus `div[b]`, mod 256 (0 without one).
    pub(crate) cup: [u8; 16],
    /// Per bucket: the upper part's symbol (`b` when there is no upper part).
    pub(crate) sup: [u8; 16],
}

impl Model3 {
    /// Validates 16 frequencies (each ≤ 255, sum 256) and builds the alias tables.
    /// On refusal returns `(sum, max)` for the error message.
    pub fn new(freq: [u8; 16]) -> Result<Model3, (u32, u16)> {
        let sum: u32 = freq.iter().map(|&f| u32::from(f)).sum();
        let max = freq.iter().copied().max().unwrap_or(0);
        if sum != V3_M || u32::from(max) >= V3_M {
            return Err((sum, u16::from(max)));
        }
        let (div, alias) = alias_layout_in(&freq.map(u32::from), BUCKET);
        let mut next = div; // next index to hand out, per symbol
        let mut m = Model3 { freq, div: [0; 16], fup: freq, cup: [0; 16], sup: [0; 16] };
        for b in 0..16 {
            m.div[b] = byte(div[b]);
            m.sup[b] = byte_of(b);
            if div[b] < BUCKET {
                let a = alias[b];
                m.fup[b] = freq[a];
                m.sup[b] = byte_of(a);
                m.cup[b] = byte(next[a].wrapping_sub(div[b]));
                next[a] += BUCKET - div[b];
            }
        }
        debug_assert!((0..16).all(|s| next[s] == u32::from(freq[s])));
        Ok(m)
    }

    /// The 16 frequencies.
    pub fn freq(&self) -> &[u8; 16] {
        &self.freq
    }

    /// Decodes one state (`x < 2^16`): returns `(symbol, next state before refill)`. The
    /// scalar form of the step every version-3 arm performs.
    #[inline(always)]
    pub(crate) fn step(&self, x: u32) -> (u8, u32) {
        let b = ((x >> 4) & 15) as usize;
        #[allow(clippy::cast_possible_truncation)] // 4-bit field
        let j = (x & 15) as u8;
        if j < self.div[b] {
            (byte_of(b), u32::from(self.freq[b]) * (x >> 8) + u32::from(j))
        } else {
            let index = j.wrapping_add(self.cup[b]);
            (self.sup[b], u32::from(self.fup[b]) * (x >> 8) + u32::from(index))
        }
    }
}

/// The version-3 encoder's view: per symbol its frequency and index → slot map.
pub(crate) struct EncodeModel3 {
    /// Per symbol: `(f, start of its run in `slots`, reciprocal m = ceil(2^24 / f))`: for
    /// `x < 2^16` the error of `x·m / 2^24` against `x / f` is below `2^-8 < 1/f`, so its floor
    /// is `x div f`.
    pub(crate) sym: [(u32, u32, u32); 16],
    /// Concatenated per symbol (in symbol order): the slot of each index `0..f`.
    pub(crate) slots: [u8; V3_M as usize],
}

impl EncodeModel3 {
    /// Builds the encoder tables for a validated frequency set.
    pub(crate) fn new(freq: &[u8; 16]) -> EncodeModel3 {
        let (div, alias) = alias_layout_in(&freq.map(u32::from), BUCKET);
        let mut sym = [(0u32, 0u32, 0u32); 16];
        let mut start = 0u32;
        for s in 0..16 {
            let f = u32::from(freq[s]);
            let m = if f == 0 { 0 } else { (1u32 << 24).div_ceil(f) };
            sym[s] = (f, start, m);
            start += u32::from(freq[s]);
        }
        let mut slots = [0u8; V3_M as usize];
        let mut next = div;
        for s in 0..16 {
            for i in 0..div[s] {
                slots[(sym[s].1 + i) as usize] = byte(BUCKET * byte_of(s) as u32 + i);
            }
        }
        for b in 0..16 {
            if div[b] < BUCKET {
                let a = alias[b];
                for k in 0..BUCKET - div[b] {
                    slots[(sym[a].1 + next[a] + k) as usize] =
                        byte(BUCKET * u32::from(byte_of(b)) + div[b] + k);
                }
                next[a] += BUCKET - div[b];
            }
        }
        EncodeModel3 { sym, slots }
    }
}

/// A value known to be below 256 as a byte.
#[allow(clippy::cast_possible_truncation)] // callers pass values < 256
fn byte(v: u32) -> u8 {
    v as u8
}

/// A symbol or bucket index (< 16) as a byte.
#[allow(clippy::cast_possible_truncation)] // indices below 16
fn byte_of(i: usize) -> u8 {
    i as u8
}

/// The version-3 frequency normalisation: [`normalize`](super::normalize)'s rules with a
/// total of 256 (present symbols at least 1, none above 255; a single symbol gets 255 and the
/// lowest absent symbol 1; an all-zero histogram the uniform model, 16 each).
pub fn normalize3(hist: &[u64; 16]) -> [u8; 16] {
    #[allow(clippy::cast_possible_truncation)] // ≤ 255
    super::model::normalize_to(hist, V3_M).map(|f| f as u8)
}

/// Frequency tables for tests of the version-3 step: edge cases and 2,000 normalised random
/// histograms, about one count in four zero.
#[cfg(test)]
pub(crate) fn sample_tables3() -> std::vec::Vec<[u8; 16]> {
    let mut tables = std::vec![
        [16; 16],
        [255, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 255],
        [1, 1, 1, 1, 1, 1, 1, 241, 1, 1, 1, 1, 1, 1, 1, 1],
        [30, 2, 16, 16, 1, 31, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16],
    ];
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..2000 {
        let mut hist = [0u64; 16];
        for h in &mut hist {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            *h = if seed >> 62 == 0 { 0 } else { (seed >> 33) % 100_000 };
        }
        tables.push(normalize3(&hist));
    }
    tables
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alias_layout_is_a_bijection() {
        for freq in sample_tables3() {
            let model = Model3::new(freq).unwrap();
            let enc = EncodeModel3::new(&freq);
            let mut seen = [false; 256];
            for s in 0..16 {
                let (f, start, m) = enc.sym[s];
                for x in (0..1u32 << 16).step_by(97).chain([65535]).filter(|_| f > 0) {
                    assert_eq!(
                        (u64::from(x) * u64::from(m)) >> 24,
                        u64::from(x / f),
                        "x {x} f {f}"
                    );
                }
                for i in 0..f {
                    let slot = enc.slots[(start + i) as usize];
                    assert!(!seen[usize::from(slot)], "slot {slot} used twice");
                    seen[usize::from(slot)] = true;
                    // Decoding a state whose low 8 bits are this slot gives (s, f·q + i).
                    let x = (77u32 << 8) | u32::from(slot);
                    assert_eq!(model.step(x), (byte_of(s), f * 77 + i), "{freq:?} slot {slot}");
                }
            }
            assert!(seen.iter().all(|&v| v));
        }
    }

    #[test]
    fn normalize3_contract() {
        assert_eq!(normalize3(&[0; 16]), [16; 16]);
        let mut one = [0u64; 16];
        one[5] = 1000;
        let f = normalize3(&one);
        assert_eq!((f[5], f[0]), (255, 1));
        let mut h = [0u64; 16];
        h[3] = 1;
        h[4] = u64::MAX;
        let f = normalize3(&h);
        assert_eq!(f.iter().map(|&v| u32::from(v)).sum::<u32>(), 256);
        assert_eq!(f[3], 1);
    }

    #[test]
    fn model_refuses_bad_tables() {
        assert_eq!(Model3::new([0; 16]), Err((0, 0)));
        let mut f = [0u8; 16];
        f[0] = 255;
        assert_eq!(Model3::new(f), Err((255, 255)));
        f[1] = 1;
        assert!(Model3::new(f).is_ok());
        assert_eq!(Model3::new([17; 16]), Err((17 * 16, 17)));
    }
}
