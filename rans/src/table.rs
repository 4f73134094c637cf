//! The static frequency table: validation, construction from a histogram, slot lookup.
//!
//! A table over the 16 nibble symbols has `M = 2^scale_bits` slots. Symbol `s` owns the
//! contiguous band of slots `[start[s], start[s] + freq[s])`, where `start` is the exclusive
//! prefix sum of `freq` and `Σ freq = M`; the decoder turns the low `scale_bits` bits of its
//! state into a slot and the slot into a symbol with one array lookup.
//!
//! [`Table`] is a plain value with fixed-size arrays (no allocation), big enough for every legal
//! scale (`1..=15`, so `2^15` slots), and it can be rebuilt in place so an embedded caller can
//! keep one in a `static` or reuse one per container. Every constructor validates, so a `Table`
//! value is always a valid table; the decoders rely on that and on nothing else.
//!
//! Validation runs the four classes in the codec's order: `E_TABLE_SCALE`, `E_TABLE_START`,
//! `E_TABLE_FREQ_SUM`, `E_TABLE_SLOT` (the reference validator's JSON parse checks the sum
//! before the starts; that order belongs to the JSON layer in the `tetrad` crate).
//!
//! [`quantize_freq`] is the normative float64 largest-remainder normalisation that turns a
//! pooled histogram into frequencies. It has to match the reference bit for bit, so it does
//! exactly the same IEEE double operations; `core` has no `f64::floor`, and for non-negative
//! values below 2^53 the `as u64` truncation is exactly `floor`.

use crate::error::TableError;

/// Number of symbols of the nibble alphabet.
pub const SYMBOLS: usize = 16;
/// Largest legal scale bits.
pub const MAX_SCALE_BITS: u32 = 15;
/// Slot capacity of a [`Table`]: `2^MAX_SCALE_BITS`.
pub const MAX_SLOTS: usize = 1 << MAX_SCALE_BITS;
/// Zero bytes kept after the slot → symbol array, so a SIMD arm may load 4 (or up to 16)
/// bytes at any slot index without leaving the array.
pub const SLOT_SLACK: usize = 16;
/// Scale bits of the `int4-rans256-g0` format.
pub const FORMAT_SCALE_BITS: u32 = 14;

/// A validated static rANS frequency table over the 16 nibble symbols.
///
/// About 33 KiB; build it once and share it by reference. Construct with
/// [`Table::from_freq`], [`Table::from_histogram`] or [`Table::from_parts`] (or their in-place
/// `rebuild_*` forms).
#[derive(Clone)]
pub struct Table {
    scale_bits: u32,
    freq: [u32; SYMBOLS],
    start: [u32; SYMBOLS],
    /// slot → symbol for the first `M` entries, zero afterwards (including the slack).
    sym: [u8; MAX_SLOTS + SLOT_SLACK],
}

impl core::fmt::Debug for Table {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Table")
            .field("scale_bits", &self.scale_bits)
            .field("freq", &self.freq)
            .field("start", &self.start)
            .finish_non_exhaustive()
    }
}

impl PartialEq for Table {
    fn eq(&self, other: &Self) -> bool {
        // The slots are a function of (scale_bits, freq) for every valid table.
        self.scale_bits == other.scale_bits && self.freq == other.freq
    }
}
impl Eq for Table {}

impl Default for Table {
    fn default() -> Self {
        Self::new()
    }
}

impl Table {
    /// The uniform table at scale bits 4 (`freq[s] = 1` for all 16 symbols): a valid
    /// placeholder for a `static` that is rebuilt before use.
    #[allow(clippy::cast_possible_truncation)] // s < 16.
    pub const fn new() -> Self {
        let mut t = Table {
            scale_bits: 4,
            freq: [1; SYMBOLS],
            start: [0; SYMBOLS],
            sym: [0; MAX_SLOTS + SLOT_SLACK],
        };
        let mut s = 0;
        while s < SYMBOLS {
            t.start[s] = s as u32;
            t.sym[s] = s as u8;
            s += 1;
        }
        t
    }

    /// A table from frequencies (`Σ freq = 2^scale_bits`); `start` and the slots are derived.
    pub fn from_freq(scale_bits: u32, freq: &[u32; SYMBOLS]) -> Result<Self, TableError> {
        let mut t = Self::new();
        t.rebuild_from_freq(scale_bits, freq)?;
        Ok(t)
    }

    /// [`Table::from_freq`] in place. On error `self` is left unchanged.
    pub fn rebuild_from_freq(
        &mut self,
        scale_bits: u32,
        freq: &[u32; SYMBOLS],
    ) -> Result<(), TableError> {
        let m = check_scale(scale_bits)?;
        let mut start = [0u32; SYMBOLS];
        let mut sum = 0u64;
        for s in 0..SYMBOLS {
            // Bounded by M below before any start is used.
            start[s] = u32::try_from(sum).unwrap_or(u32::MAX);
            sum += u64::from(freq[s]);
        }
        if sum != u64::from(m) {
            return Err(TableError::FreqSum { got: sum, expected: m });
        }
        self.install(scale_bits, freq, &start);
        Ok(())
    }

    /// The table of a histogram, normalised by [`quantize_freq`].
    pub fn from_histogram(scale_bits: u32, hist: &[u64; SYMBOLS]) -> Result<Self, TableError> {
        let freq = quantize_freq(hist, scale_bits)?;
        Self::from_freq(scale_bits, &freq)
    }

    /// [`Table::from_histogram`] in place. On error `self` is left unchanged.
    pub fn rebuild_from_histogram(
        &mut self,
        scale_bits: u32,
        hist: &[u64; SYMBOLS],
    ) -> Result<(), TableError> {
        let freq = quantize_freq(hist, scale_bits)?;
        self.rebuild_from_freq(scale_bits, &freq)
    }

    /// A table from all of its stored parts (what a serialised table carries), validated in
    /// the codec's order: scale, then each start against the running prefix, then the sum,
    /// then every slot (value ≤ 15 and inside its symbol's band). `slots` must hold exactly
    /// `M` entries (else [`TableError::SlotCount`]).
    pub fn from_parts(
        scale_bits: u32,
        freq: &[u32; SYMBOLS],
        start: &[u32; SYMBOLS],
        slots: &[u16],
    ) -> Result<Self, TableError> {
        let mut t = Self::new();
        t.rebuild_from_parts(scale_bits, freq, start, slots)?;
        Ok(t)
    }

    /// [`Table::from_parts`] in place. On error `self` is left unchanged.
    pub fn rebuild_from_parts(
        &mut self,
        scale_bits: u32,
        freq: &[u32; SYMBOLS],
        start: &[u32; SYMBOLS],
        slots: &[u16],
    ) -> Result<(), TableError> {
        self.rebuild_parts_with(scale_bits, freq, start, slots.len(), |i| slots[i])
    }

    /// [`Table::from_parts`] with the slot array given as its serialised bytes: `2·M` bytes,
    /// each slot a little-endian u16 (the `slot_to_symbol_b64` payload). An odd byte count is
    /// a wrong slot count.
    pub fn from_parts_le_bytes(
        scale_bits: u32,
        freq: &[u32; SYMBOLS],
        start: &[u32; SYMBOLS],
        slot_bytes: &[u8],
    ) -> Result<Self, TableError> {
        let mut t = Self::new();
        t.rebuild_from_parts_le_bytes(scale_bits, freq, start, slot_bytes)?;
        Ok(t)
    }

    /// [`Table::from_parts_le_bytes`] in place. On error `self` is left unchanged.
    pub fn rebuild_from_parts_le_bytes(
        &mut self,
        scale_bits: u32,
        freq: &[u32; SYMBOLS],
        start: &[u32; SYMBOLS],
        slot_bytes: &[u8],
    ) -> Result<(), TableError> {
        if !slot_bytes.len().is_multiple_of(2) {
            // Validate scale first so the class order holds even for odd lengths.
            let m = check_scale(scale_bits)?;
            check_starts_and_sum(m, freq, start)?;
            return Err(TableError::SlotCount { got: slot_bytes.len() / 2, expected: m as usize });
        }
        self.rebuild_parts_with(scale_bits, freq, start, slot_bytes.len() / 2, |i| {
            u16::from_le_bytes([slot_bytes[2 * i], slot_bytes[2 * i + 1]])
        })
    }

    fn rebuild_parts_with(
        &mut self,
        scale_bits: u32,
        freq: &[u32; SYMBOLS],
        start: &[u32; SYMBOLS],
        n_slots: usize,
        slot: impl Fn(usize) -> u16,
    ) -> Result<(), TableError> {
        let m = check_scale(scale_bits)?;
        check_starts_and_sum(m, freq, start)?;
        let m = m as usize;
        if n_slots != m {
            return Err(TableError::SlotCount { got: n_slots, expected: m });
        }
        // Bands partition [0, M) now, so "every slot lies in the band of its value" is
        // exactly "slot i maps to the symbol whose band holds i".
        let mut s = 0usize;
        for i in 0..m {
            while s < SYMBOLS && i >= (start[s] + freq[s]) as usize {
                s += 1;
            }
            let v = slot(i);
            if usize::from(v) != s {
                #[allow(clippy::cast_possible_truncation)] // s < 16: the bands cover [0, M).
                return Err(TableError::Slot { slot: i, got: v, expected: s as u8 });
            }
        }
        self.install(scale_bits, freq, start);
        Ok(())
    }

    /// Writes a validated table. `freq`/`start` must already be consistent.
    fn install(&mut self, scale_bits: u32, freq: &[u32; SYMBOLS], start: &[u32; SYMBOLS]) {
        self.scale_bits = scale_bits;
        self.freq = *freq;
        self.start = *start;
        self.sym.fill(0);
        for s in 0..SYMBOLS {
            let (a, f) = (start[s] as usize, freq[s] as usize);
            #[allow(clippy::cast_possible_truncation)] // s < 16.
            self.sym[a..a + f].fill(s as u8);
        }
    }

    /// Scale bits (`1..=15`).
    #[inline]
    pub const fn scale_bits(&self) -> u32 {
        self.scale_bits
    }

    /// `M = 2^scale_bits`, the slot count.
    #[inline]
    pub const fn m(&self) -> u32 {
        1 << self.scale_bits
    }

    /// Frequency of each symbol (`Σ = M`; 0 = the symbol cannot be coded).
    #[inline]
    pub const fn freq(&self) -> &[u32; SYMBOLS] {
        &self.freq
    }

    /// Exclusive prefix sum of [`Table::freq`]: the first slot of each symbol's band.
    #[inline]
    pub const fn start(&self) -> &[u32; SYMBOLS] {
        &self.start
    }

    /// The symbol of slot `slot`. Slots at or above `M` read as 0.
    ///
    /// # Panics
    /// If `slot >= MAX_SLOTS + SLOT_SLACK`.
    #[inline]
    pub fn symbol(&self, slot: usize) -> u8 {
        self.sym[slot]
    }

    /// The slot → symbol array: `M` entries, one byte per slot.
    #[inline]
    pub fn slot_symbols(&self) -> &[u8] {
        &self.sym[..self.m() as usize]
    }

    /// The slot → symbol array with [`SLOT_SLACK`] zero bytes after it: at least
    /// `M + SLOT_SLACK` bytes, for SIMD arms that load several bytes at one slot index.
    #[inline]
    pub fn slot_symbols_padded(&self) -> &[u8; MAX_SLOTS + SLOT_SLACK] {
        &self.sym
    }

    /// The slots as the u16 values a serialised table stores (`M` of them).
    pub fn slots_u16(&self) -> impl ExactSizeIterator<Item = u16> + '_ {
        self.slot_symbols().iter().map(|&s| u16::from(s))
    }

    /// Writes the serialised slot array (`2·M` bytes, little-endian u16 per slot) into the
    /// front of `out` and returns the byte count, or `None` if `out` is shorter than `2·M`.
    pub fn write_slots_le(&self, out: &mut [u8]) -> Option<usize> {
        let n = 2 * self.m() as usize;
        let out = out.get_mut(..n)?;
        for (pair, &s) in out.chunks_exact_mut(2).zip(self.slot_symbols()) {
            pair[0] = s;
            pair[1] = 0;
        }
        Some(n)
    }

    /// Whether `symbol` can be coded (it is ≤ 15 and its frequency is nonzero).
    #[inline]
    pub fn codable(&self, symbol: u8) -> bool {
        usize::from(symbol) < SYMBOLS && self.freq[usize::from(symbol)] != 0
    }

    /// Bit `s` set ⇔ symbol `s` is codable.
    #[inline]
    pub fn codable_mask(&self) -> u16 {
        let mut mask = 0u16;
        for s in 0..SYMBOLS {
            if self.freq[s] != 0 {
                mask |= 1 << s;
            }
        }
        mask
    }
}

/// `M` for valid scale bits, else `E_TABLE_SCALE`.
fn check_scale(scale_bits: u32) -> Result<u32, TableError> {
    if (1..=MAX_SCALE_BITS).contains(&scale_bits) {
        Ok(1 << scale_bits)
    } else {
        Err(TableError::Scale { got: scale_bits })
    }
}

/// Each start against the running prefix (`E_TABLE_START`), then the sum (`E_TABLE_FREQ_SUM`).
fn check_starts_and_sum(
    m: u32,
    freq: &[u32; SYMBOLS],
    start: &[u32; SYMBOLS],
) -> Result<(), TableError> {
    let mut sum = 0u64;
    for s in 0..SYMBOLS {
        if u64::from(start[s]) != sum {
            #[allow(clippy::cast_possible_truncation)] // s < 16.
            return Err(TableError::Start { symbol: s as u8, got: start[s], expected: sum });
        }
        sum += u64::from(freq[s]);
    }
    if sum != u64::from(m) {
        return Err(TableError::FreqSum { got: sum, expected: m });
    }
    Ok(())
}

/// Exact `floor` of a finite, non-negative double below 2^53 (what `raw_i` always is here).
#[inline]
fn floor_nonneg(x: f64) -> f64 {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_precision_loss)]
    // x ∈ [0, 2^15]: truncation toward zero is floor, and the integer is exact in f64.
    let f = x as u64 as f64;
    f
}

/// Normalises a 16-bin histogram to frequencies summing to `M = 2^scale_bits`: the reference
/// float64 largest-remainder algorithm, bit for bit.
///
/// `total = Σ h` as a double; `raw_i = (h_i / total) · M`; `f_i = floor(raw_i)`, raised to 1
/// for a present symbol (absent symbols stay 0). A positive deficit is handed out once, +1 per
/// present symbol in order of decreasing remainder `raw_i − floor(raw_i)` (ties: lower index
/// first); a negative one is taken back by cycling through the symbols in order of decreasing
/// `f` (ties: lower index first), −1 from each with `f_i > 1`, until it is zero.
///
/// Refuses an all-zero histogram ([`TableError::EmptyHistogram`]) and one with more present
/// symbols than slots ([`TableError::TooManySymbols`]).
pub fn quantize_freq(hist: &[u64; SYMBOLS], scale_bits: u32) -> Result<[u32; SYMBOLS], TableError> {
    let m = check_scale(scale_bits)?;
    #[allow(clippy::cast_possible_truncation)] // at most 16.
    let present = hist.iter().filter(|&&h| h > 0).count() as u32;
    if present == 0 {
        return Err(TableError::EmptyHistogram);
    }
    if m < present {
        return Err(TableError::TooManySymbols { present, m });
    }
    // Σ h as an exact integer (u128 cannot overflow for 16 u64s), rounded once to a double.
    let total_int: u128 = hist.iter().map(|&h| u128::from(h)).sum();
    #[allow(clippy::cast_precision_loss)] // the reference rounds Σ h to a double too.
    let total = total_int as f64;
    let mf = f64::from(m);

    let mut raw = [0f64; SYMBOLS];
    let mut freq = [0u32; SYMBOLS];
    let mut sum: i64 = 0;
    for s in 0..SYMBOLS {
        #[allow(clippy::cast_precision_loss)] // the reference divides doubles.
        let h = hist[s] as f64;
        raw[s] = (h / total) * mf;
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        // raw ∈ [0, M]: exact.
        let mut f = floor_nonneg(raw[s]) as u32;
        if hist[s] > 0 && f == 0 {
            f = 1;
        }
        freq[s] = f;
        sum += i64::from(f);
    }
    let mut deficit = i64::from(m) - sum;

    if deficit > 0 {
        let mut rem = [0f64; SYMBOLS];
        for s in 0..SYMBOLS {
            rem[s] = if hist[s] > 0 { raw[s] - floor_nonneg(raw[s]) } else { -1.0 };
        }
        // Stable sort of indices by decreasing remainder (insertion sort: ties keep order).
        let order = stable_order(|a, b| rem[a] > rem[b]);
        for &s in &order {
            if deficit == 0 {
                break;
            }
            if hist[s] > 0 {
                freq[s] += 1;
                deficit -= 1;
            }
        }
    } else if deficit < 0 {
        let f0 = freq;
        let order = stable_order(|a, b| f0[a] > f0[b]);
        // Every pass takes at least one unit while some f > 1, and Σ f > M ≥ present means
        // some f > 1, so this loop ends.
        while deficit < 0 {
            let mut progressed = false;
            for &s in &order {
                if deficit == 0 {
                    break;
                }
                if freq[s] > 1 {
                    freq[s] -= 1;
                    deficit += 1;
                    progressed = true;
                }
            }
            if !progressed {
                // Unreachable for m ≥ present (then Σ f ≤ M once every f is 1), kept so a
                // logic error can never hang.
                break;
            }
        }
    }
    Ok(freq)
}

/// The 16 indices sorted stably; `before(a, b)` means "a strictly goes before b".
fn stable_order(before: impl Fn(usize, usize) -> bool) -> [usize; SYMBOLS] {
    let mut order = [0usize; SYMBOLS];
    for (i, o) in order.iter_mut().enumerate() {
        *o = i;
    }
    for i in 1..SYMBOLS {
        let mut j = i;
        while j > 0 && before(order[j], order[j - 1]) {
            order.swap(j, j - 1);
            j -= 1;
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_example() {
        let mut h = [0u64; 16];
        h[1] = 1;
        h[2] = 1;
        h[3] = 1;
        let f = quantize_freq(&h, 14).unwrap();
        assert_eq!(&f[..4], &[0, 5462, 5461, 5461]);
    }

    #[test]
    fn placeholder_is_valid() {
        let t = Table::new();
        let slots: [u16; 16] = core::array::from_fn(|i| u16::try_from(i).unwrap());
        let u = Table::from_parts(4, t.freq(), t.start(), &slots).unwrap();
        assert_eq!(t, u);
        assert_eq!(t.slot_symbols(), &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);
    }
}
