//! The chunk model: 16 frequencies out of `M = 4096`, and the alias tables derived from them.
//!
//! A chunk stores only its frequencies. Both sides derive the same *alias layout* from them
//! with the deterministic procedure of the spec: the 4096 slots form 16 buckets of 256;
//! bucket `b` belongs to symbol `b` for its first `div[b]` slots and to `alias[b]` for the
//! rest. Walking the symbols in a fixed order (the lowest-numbered unplaced symbol whose
//! remaining frequency is at most 256 takes its own bucket; the lowest-numbered unplaced
//! symbol with more than 256 left donates the remainder) always succeeds, because the
//! remaining frequencies of the `k` unplaced symbols always sum to `256·k`.
//!
//! Each symbol's slots are numbered `0..f` (own bucket first, then its alias segments in
//! bucket order); that number is the rANS "index within the symbol". The decoder turns it
//! into one packed entry per bucket half (`f`, symbol, and the offset `c = index − slot`), so
//! a decode step is `x' = f·(x >> 12) + (x & 4095) + c` after two 16-entry lookups; the
//! encoder keeps the inverse (index → slot) per symbol.

use super::M;

/// Bucket width in slots.
const BUCKET: u32 = 256;

/// A validated chunk model and its decode tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Model {
    freq: [u16; 16],
    /// Per bucket: the first slot of the upper part, `256·b + div[b]` (the next bucket's first
    /// slot when the bucket is all symbol `b`; 4096 for the last one, above every slot).
    pub(crate) thr: [u32; 16],
    /// Per bucket: the entry of the lower part (symbol `b`).
    pub(crate) lo: [u32; 16],
    /// Per bucket: the entry of the upper part (the alias symbol); equal to `lo` when
    /// the bucket has no upper part.
    pub(crate) hi: [u32; 16],
}

/// Packs a decode entry: `f` in bits 0..12, the symbol in bits 12..16, `c` (signed) in 16..32.
#[allow(clippy::cast_possible_truncation)] // c ∈ (−4096, 4096) fits i16 by construction.
fn entry(f: u16, sym: usize, c: i32) -> u32 {
    u32::from(f) | ((sym as u32) << 12) | (u32::from(c as i16 as u16) << 16)
}

impl Model {
    /// Validates 16 frequencies (each ≤ 4095, sum 4096) and builds the alias tables.
    /// On refusal returns `(sum, max)` for the error message.
    pub fn new(freq: [u16; 16]) -> Result<Model, (u32, u16)> {
        let sum: u32 = freq.iter().map(|&f| u32::from(f)).sum();
        let max = freq.iter().copied().max().unwrap_or(0);
        if sum != M || u32::from(max) >= M {
            return Err((sum, max));
        }
        let (div, alias) = alias_layout(&freq);
        let mut next = div; // next index to hand out, per symbol
        let mut thr = [0u32; 16];
        let mut lo = [0u32; 16];
        let mut hi = [0u32; 16];
        for b in 0..16 {
            let base = BUCKET * small(b);
            thr[b] = base + div[b];
            #[allow(clippy::cast_possible_wrap)] // base < 4096
            let own = entry(freq[b], b, -(base as i32));
            lo[b] = own;
            hi[b] = own;
            if div[b] < BUCKET {
                let a = alias[b];
                let off = next[a];
                next[a] += BUCKET - div[b];
                #[allow(clippy::cast_possible_wrap)] // all terms < 8192
                let c = off as i32 - base as i32 - div[b] as i32;
                hi[b] = entry(freq[a], a, c);
            }
        }
        debug_assert!((0..16).all(|s| next[s] == u32::from(freq[s])));
        Ok(Model { freq, thr, lo, hi })
    }

    /// The *byte-plane form* of the decode tables, for arms whose cheap lookup is a 16-byte
    /// `pshufb` table (AVX2, where a 16-entry `vpermd` lookup costs two permutes and a blend):
    /// four 16-bit fields per bucket, each split into a low-byte and a high-byte plane of 16
    /// bytes, in the order `[A lo, A hi, B lo, B hi, C lo, C hi, E lo, E hi]`:
    /// `A` = the lower part's `f | sym << 12`, `B` = `div[b]` (0..=256, the lower part's slot
    /// count and so the threshold on `j = x & 255`), `C` = the upper part's `f | sym << 12`,
    /// `E` = the upper part's first index minus `div[b]` (0 when the bucket has no upper part).
    /// Then the step is: `lower = j < B`, `fs = lower ? A : C`,
    /// `index = j + (lower ? 0 : E)` (mod 2^16; it is the index in `0..f`), and
    /// `x' = (fs & 4095)·(x >> 12) + index` — no signed field, no `thr`, and every value fits
    /// 16 bits, so one `pshufb` pair serves sixteen states (the test helper `step_planes` is
    /// its scalar form, checked against [`Model::step`] on every slot).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // only the AVX2 arm uses it
    pub(crate) fn byte_planes(&self) -> [[u8; 16]; 8] {
        let mut planes = [[0u8; 16]; 8];
        #[allow(clippy::needless_range_loop)] // b indexes four tables and eight planes
        for b in 0..16 {
            let div = self.thr[b] - BUCKET * small(b);
            // c_hi + thr[b] is the upper part's first index (and `div` again when the bucket
            // has no upper part, as `hi == lo` there, so E = 0).
            #[allow(clippy::cast_sign_loss, clippy::cast_possible_wrap)] // in 0..4096
            let first = (((self.hi[b] as i32) >> 16) + self.thr[b] as i32) as u32;
            let fields = [self.lo[b] & 0xFFFF, div, self.hi[b] & 0xFFFF, first.wrapping_sub(div)];
            for (k, v) in fields.into_iter().enumerate() {
                #[allow(clippy::cast_possible_truncation)] // one byte of a 16-bit field each
                let (lo, hi) = (v as u8, (v >> 8) as u8);
                planes[2 * k][b] = lo;
                planes[2 * k + 1][b] = hi;
            }
        }
        planes
    }

    /// [`Model::step`] computed from [`Model::byte_planes`] (the AVX2 arm's formula, in
    /// 16-bit arithmetic as the arm does it).
    #[cfg(test)]
    fn step_planes(p: &[[u8; 16]; 8], x: u32) -> (u8, u32) {
        let b = ((x >> 8) & 15) as usize;
        let field = |k: usize| u16::from(p[2 * k][b]) | (u16::from(p[2 * k + 1][b]) << 8);
        #[allow(clippy::cast_possible_truncation)] // low byte
        let j = (x & 0xFF) as u16;
        let lower = j < field(1);
        let fs = if lower { field(0) } else { field(2) };
        let index = j.wrapping_add(if lower { 0 } else { field(3) });
        #[allow(clippy::cast_possible_truncation)] // 4-bit field
        let sym = (fs >> 12) as u8;
        (sym, u32::from(fs & 0xFFF) * (x >> 12) + u32::from(index))
    }

    /// The 16 frequencies.
    pub fn freq(&self) -> &[u16; 16] {
        &self.freq
    }

    /// Decodes one state: returns `(symbol, next state before refill)`. The scalar form of
    /// the step every arm performs.
    #[inline(always)]
    pub(crate) fn step(&self, x: u32) -> (u8, u32) {
        let b = ((x >> 8) & 15) as usize;
        let e = if (x & 0xFFF) >= self.thr[b] { self.hi[b] } else { self.lo[b] };
        let f = e & 0xFFF;
        #[allow(clippy::cast_possible_truncation)] // 4-bit field
        let sym = ((e >> 12) & 15) as u8;
        #[allow(clippy::cast_possible_wrap)] // the signed field in the top half
        let c = (e as i32) >> 16;
        // index = slot + c ∈ [0, f); f·(x >> 12) + index < 4095·2^20 + 4095 < 2^32.
        #[allow(clippy::cast_sign_loss, clippy::cast_possible_wrap)]
        let index = ((x & 0xFFF) as i32 + c) as u32;
        (sym, f * (x >> 12) + index)
    }
}

/// The alias layout: `div[b]` (0..=256) and `alias[b]` per bucket.
fn alias_layout(freq: &[u16; 16]) -> ([u32; 16], [usize; 16]) {
    alias_layout_in(&freq.map(u32::from), BUCKET)
}

/// The alias layout of 16 frequencies over 16 buckets of `bucket` slots (256 for versions 1
/// and 2, 16 for version 3): `div[b]` (0..=bucket) and `alias[b]` per bucket.
pub(crate) fn alias_layout_in(freq: &[u32; 16], bucket: u32) -> ([u32; 16], [usize; 16]) {
    let mut rem = *freq;
    let mut placed = [false; 16];
    let mut div = [0u32; 16];
    let mut alias = [0usize; 16];
    for _ in 0..16 {
        // The unplaced symbols' remainders sum to bucket·k, so one of them is ≤ bucket, and
        // when it is < bucket another one is > bucket (module essay).
        let Some(s) = (0..16).find(|&s| !placed[s] && rem[s] <= bucket) else {
            unreachable!("alias invariant: some unplaced remainder is at most one bucket")
        };
        placed[s] = true;
        div[s] = rem[s];
        alias[s] = s;
        if rem[s] < bucket {
            let Some(g) = (0..16).find(|&g| !placed[g] && rem[g] > bucket) else {
                unreachable!("alias invariant: a donor with more than one bucket left exists")
            };
            alias[s] = g;
            rem[g] -= bucket - rem[s];
        }
    }
    (div, alias)
}

/// The encoder's view: per symbol its frequency, reciprocal and index → slot map.
pub(crate) struct EncodeModel {
    /// Per symbol: `(f, start of its run in `slots`, reciprocal m = ceil(2^44 / f))`.
    pub(crate) sym: [(u32, u32, u64); 16],
    /// Concatenated per symbol (in symbol order): the slot of each index `0..f`. Stored as
    /// u32 so a SIMD arm can gather it directly.
    pub(crate) slots: [u32; M as usize],
}

impl EncodeModel {
    /// Builds the encoder tables for a validated frequency set.
    pub(crate) fn new(freq: &[u16; 16]) -> EncodeModel {
        let (div, alias) = alias_layout(freq);
        let mut sym = [(0u32, 0u32, 0u64); 16];
        let mut start = 0u32;
        for s in 0..16 {
            let f = u32::from(freq[s]);
            let m = if f == 0 { 0 } else { (1u64 << 44).div_ceil(u64::from(f)) };
            sym[s] = (f, start, m);
            start += f;
        }
        let mut slots = [0u32; M as usize];
        let mut next = [0u32; 16];
        for s in 0..16 {
            for i in 0..div[s] {
                slots[(sym[s].1 + i) as usize] = BUCKET * small(s) + i;
            }
            next[s] = div[s];
        }
        for b in 0..16 {
            if div[b] < BUCKET {
                let a = alias[b];
                for k in 0..BUCKET - div[b] {
                    slots[(sym[a].1 + next[a] + k) as usize] = BUCKET * small(b) + div[b] + k;
                }
                next[a] += BUCKET - div[b];
            }
        }
        EncodeModel { sym, slots }
    }
}

/// A symbol or bucket index (< 16) as u32.
#[allow(clippy::cast_possible_truncation)] // indices below 16
fn small(i: usize) -> u32 {
    i as u32
}

/// The reference encoder's frequency normalisation (informative in the spec, but what tetrad
/// writes, so blobs are reproducible): from nibble counts to 16 frequencies summing to 4096,
/// every present symbol at least 1, none above 4095.
///
/// Start from `max(1, floor(count·4096/total))` for present symbols; while the sum is short,
/// give one to the symbol with the largest `count / f` (lowest index on ties); while it is
/// over, take one from the symbol (with `f > 1`) with the smallest `count / (f − 1)`. A
/// single-symbol input gets 4095 and the lowest absent symbol 1. An all-zero histogram gives
/// the uniform model (256 each).
pub fn normalize(hist: &[u64; 16]) -> [u16; 16] {
    #[allow(clippy::cast_possible_truncation)] // ≤ 4095
    normalize_to(hist, M).map(|f| f as u16)
}

/// [`normalize`] for a total `m` (4096 in versions 1 and 2, 256 in version 3): the same
/// rules with `m` in place of 4096 (a single symbol gets `m − 1`, the uniform model `m / 16`).
pub(crate) fn normalize_to(hist: &[u64; 16], m: u32) -> [u32; 16] {
    let total: u128 = hist.iter().map(|&h| u128::from(h)).sum();
    if total == 0 {
        return [m / 16; 16];
    }
    let mut f = [0u32; 16];
    for s in 0..16 {
        if hist[s] > 0 {
            #[allow(clippy::cast_possible_truncation)] // ≤ m
            let q = (u128::from(hist[s]) * u128::from(m) / total) as u32;
            f[s] = q.max(1);
        }
    }
    let mut sum: u32 = f.iter().sum();
    while sum < m {
        // Largest count/f among present symbols: h_a·f_b > h_b·f_a.
        let mut best: Option<usize> = None;
        for s in 0..16 {
            if hist[s] == 0 {
                continue;
            }
            best = match best {
                Some(b)
                    if u128::from(hist[s]) * u128::from(f[b])
                        <= u128::from(hist[b]) * u128::from(f[s]) =>
                {
                    Some(b)
                }
                _ => Some(s),
            };
        }
        let Some(b) = best else { unreachable!("total > 0 means a present symbol") };
        f[b] += 1;
        sum += 1;
    }
    while sum > m {
        let mut best: Option<usize> = None;
        for s in 0..16 {
            if f[s] <= 1 {
                continue;
            }
            best = match best {
                Some(b)
                    if u128::from(hist[s]) * u128::from(f[b] - 1)
                        >= u128::from(hist[b]) * u128::from(f[s] - 1) =>
                {
                    Some(b)
                }
                _ => Some(s),
            };
        }
        let Some(b) = best else { unreachable!("sum > m needs some f > 1") };
        f[b] -= 1;
        sum -= 1;
    }
    if let Some(s) = (0..16).find(|&s| f[s] == m) {
        f[s] = m - 1;
        let Some(z) = (0..16).find(|&z| hist[z] == 0) else { unreachable!("one symbol present") };
        f[z] = 1;
    }
    f
}

/// Frequency tables for tests of the decode step: fixed edge cases (all 256, one symbol
/// nearly alone at either end, one dominant symbol among ones, a mix of exact 256s) and
/// 2,000 normalised random histograms, about one count in four zero.
#[cfg(test)]
pub(crate) fn sample_tables() -> std::vec::Vec<[u16; 16]> {
    let mut tables = std::vec![
        [256; 16],
        [4095, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 4095],
        [1, 1, 1, 1, 1, 1, 1, 4081, 1, 1, 1, 1, 1, 1, 1, 1],
        [300, 212, 256, 256, 1, 511, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256],
    ];
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..2000 {
        let mut hist = [0u64; 16];
        for h in &mut hist {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            *h = if seed >> 62 == 0 { 0 } else { (seed >> 33) % 100_000 };
        }
        tables.push(normalize(&hist));
    }
    tables
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_bijection(freq: [u16; 16]) {
        let model = Model::new(freq).unwrap();
        let enc = EncodeModel::new(&freq);
        let planes = model.byte_planes();
        let mut seen = [false; 4096];
        for s in 0..16 {
            let (f, start, _) = enc.sym[s];
            for i in 0..f {
                let slot = enc.slots[(start + i) as usize];
                assert!(!seen[slot as usize], "slot {slot} used twice");
                seen[slot as usize] = true;
                // Decoding a state whose low 12 bits are this slot gives (s, f·q + i).
                let x = (77u32 << 12) | slot;
                let (sym, next) = model.step(x);
                assert_eq!(usize::from(sym), s);
                assert_eq!(next, f * 77 + i);
                assert_eq!(Model::step_planes(&planes, x), (sym, next), "slot {slot}");
            }
        }
        assert!(seen.iter().all(|&v| v));
    }

    #[test]
    fn alias_layout_is_a_bijection() {
        for freq in sample_tables() {
            check_bijection(freq);
        }
    }

    #[test]
    fn normalize_contract() {
        assert_eq!(normalize(&[0; 16]), [256; 16]);
        let mut one = [0u64; 16];
        one[5] = 1000;
        let f = normalize(&one);
        assert_eq!(f[5], 4095);
        assert_eq!(f[0], 1);
        let mut h = [0u64; 16];
        h[3] = 1;
        h[4] = u64::MAX;
        let f = normalize(&h);
        assert_eq!(f.iter().map(|&v| u32::from(v)).sum::<u32>(), 4096);
        assert_eq!(f[3], 1);
    }

    #[test]
    fn model_refuses_bad_tables() {
        assert_eq!(Model::new([0; 16]), Err((0, 0)));
        let mut f = [0u16; 16];
        f[0] = 4096;
        assert_eq!(Model::new(f), Err((4096, 4096)));
        assert_eq!(Model::new([257; 16]), Err((257 * 16, 257)));
    }
}
