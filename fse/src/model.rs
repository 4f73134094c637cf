//! The static order-0 model: nibble counts, the integer normalisation with the "big" rule,
//! and the decode table.
//!
//! Normalisation is the reference's exactly (`docs/cfs1.md` §3): floor-scale every present
//! count to 4096 with 64-bit integers, lift zeros to 1, cap at `4096 − (used − 1)`, then give
//! the whole rounding error, positive or negative, to the symbol with the largest frequency
//! (ties: the last present symbol keeps it if it is among the largest, otherwise the first of
//! them). It is not the largest-remainder rule of `int4-rans256-g0`, which is why this crate
//! does not share tetrad-rans' table builder. No floats anywhere, so the result is the same
//! on every target.
//!
//! The decode table has one 4-byte entry per slot — frequency, and the slot's offset within
//! its symbol's range (the "bias") with the symbol in the top four bits — so a decoder step
//! is one table load, one multiply and one add. 4096 entries are 16 KiB: L1-resident.

use crate::{M, PROB_BITS};

/// Counts of the sixteen nibble values over both nibbles of every byte of `src`.
#[must_use]
pub fn count_nibbles(src: &[u8]) -> [u64; 16] {
    // Four byte histograms break the store-to-load dependency on runs of equal bytes.
    let mut h = [[0u32; 256]; 4];
    let mut chunks = src.chunks_exact(4);
    let mut total = [0u64; 256];
    let mut since_flush = 0usize;
    for c in &mut chunks {
        h[0][usize::from(c[0])] += 1;
        h[1][usize::from(c[1])] += 1;
        h[2][usize::from(c[2])] += 1;
        h[3][usize::from(c[3])] += 1;
        since_flush += 1;
        // A u32 bin takes 2^32 − 1 increments; flush well before.
        if since_flush == 1 << 30 {
            flush(&mut h, &mut total);
            since_flush = 0;
        }
    }
    for &b in chunks.remainder() {
        h[0][usize::from(b)] += 1;
    }
    flush(&mut h, &mut total);
    let mut cnt = [0u64; 16];
    for (b, &c) in total.iter().enumerate() {
        cnt[b & 15] += c;
        cnt[b >> 4] += c;
    }
    cnt
}

fn flush(h: &mut [[u32; 256]; 4], total: &mut [u64; 256]) {
    for part in h.iter_mut() {
        for (t, c) in total.iter_mut().zip(part.iter_mut()) {
            *t += u64::from(*c);
            *c = 0;
        }
    }
}

/// Normalises nibble counts to sixteen frequencies summing to 4096 with the reference's
/// integer rule (see the module docs). Returns `None` where the reference "fails" and the
/// encoder must write raw: no counts at all, or the largest frequency would drop below 1.
///
/// ```
/// // A single present symbol takes the whole table.
/// let mut cnt = [0u64; 16];
/// cnt[8] = 200;
/// let f = tetrad_fse::normalize(&cnt).unwrap();
/// assert_eq!(f[8], 4096);
/// assert_eq!(f.iter().map(|&x| u32::from(x)).sum::<u32>(), 4096);
/// ```
#[must_use]
pub fn normalize(cnt: &[u64; 16]) -> Option<[u16; 16]> {
    let tot: u64 = cnt.iter().sum();
    if tot == 0 {
        return None;
    }
    let used = cnt.iter().filter(|&&c| c > 0).count() as u64;
    let cap = u64::from(M) - (used - 1);
    // Signed: the correction below may subtract.
    let mut freq = [0i64; 16];
    let mut sum = 0i64;
    let mut last = 0usize;
    for (i, &c) in cnt.iter().enumerate() {
        if c == 0 {
            continue;
        }
        // c ≤ 2^33 (two nibbles per byte, < 2^32 bytes) so c · 4096 < 2^45: no overflow.
        // For larger synthetic counts, u128 keeps the floor exact.
        let f = u128::from(c) * u128::from(M) / u128::from(tot);
        // f ≤ 4096 because c ≤ tot.
        let f = u64::try_from(f).unwrap_or(u64::MAX).clamp(1, cap);
        // f ≤ 4096: fits.
        freq[i] = f as i64;
        sum += freq[i];
        last = i;
    }
    let mut big = last;
    for i in 0..16 {
        if freq[i] > freq[big] {
            big = i;
        }
    }
    freq[big] += i64::from(M) - sum;
    if freq[big] < 1 {
        return None;
    }
    let mut out = [0u16; 16];
    for (o, &f) in out.iter_mut().zip(freq.iter()) {
        // Every entry is in 0..=4096 here: the others were capped, and freq[big] is
        // 4096 − (sum of the others) ≤ 4096 and was just checked ≥ 1.
        *o = u16::try_from(f).ok()?;
    }
    Some(out)
}

/// One decode-table entry: `freq` of the slot's symbol, and `bias_sym` = the slot's offset
/// within the symbol's range (low 12 bits) | symbol << 12.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct Entry {
    pub(crate) freq: u16,
    pub(crate) bias_sym: u16,
}

/// The per-slot decode table of one frequency table (16 KiB).
#[derive(Clone)]
pub struct DecodeTable {
    pub(crate) slots: [Entry; 1 << PROB_BITS],
}

impl core::fmt::Debug for DecodeTable {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DecodeTable").finish_non_exhaustive()
    }
}

impl Default for DecodeTable {
    fn default() -> Self {
        Self::new()
    }
}

impl DecodeTable {
    /// An empty table (every slot zero); [`decode_into_scratch`](crate::decode_into_scratch)
    /// fills it from each blob's frequencies. `const`, so it can initialise a `static`.
    #[must_use]
    pub const fn new() -> Self {
        Self { slots: [Entry { freq: 0, bias_sym: 0 }; 1 << PROB_BITS] }
    }

    /// Fills the table for `freq`, which the caller has checked sums to 4096.
    pub(crate) fn rebuild(&mut self, freq: &[u16; 16]) {
        let mut slot = 0usize;
        for (s, &f) in (0u16..).zip(freq.iter()) {
            for k in 0..f {
                // slot < 4096 because the frequencies sum to 4096.
                self.slots[slot] = Entry { freq: f, bias_sym: k | s << 12 };
                slot += 1;
            }
        }
    }
}
