//! The `int4-rans256-g0` record: framing, the bound, the encoder and the parser.
//!
//! A record holds the packed int4 bytes of one tensor as `N` interleaved rANS streams (the
//! format pins `N = 256`; the primitive takes any `1..=MAX_STREAMS`). Nibble `j` (low nibble
//! first within each byte) is symbol `j div N` of stream `j mod N`, so a group of consecutive
//! streams decodes a contiguous run of output per round.
//!
//! ```text
//! offset 0      n_symbols      u64 LE
//! offset 8      packed_bytes   u64 LE = n/2 + (n & 1)
//! offset 16     offsets[N+1]   u32 LE, relative to the payload; offsets[0] = 0
//!               zero padding to head = round16(16 + 4·(N+1))   (1056 for N = 256)
//! offset head   payload: stream i = payload[offsets[i] .. offsets[i+1]]
//!               zero padding to round16(payload_len)
//! ```
//!
//! [`Record::parse_streams`] checks the ten refusals in the codec's order, without allocating, without
//! reading past the blob and without any alignment requirement (every field is read with
//! `from_le_bytes`). The reference validator checks all offsets for monotonicity before any
//! stream length; [`ParseOrder::Validator`] reproduces that order (the two differ only on
//! records with several faults). Every parsed [`Record`] is a cheap borrowed view: stream
//! `i`'s bytes are two offset reads away.

use crate::error::{EncodeError, RecordError};
use crate::stream::{RANS_L, encode_core, max_stream_len};
use crate::table::{SYMBOLS, Table};

/// The largest stream count the allocation-free decoders hold state for.
pub const MAX_STREAMS: usize = 256;
/// The stream count of the `int4-rans256-g0` format.
pub const FORMAT_STREAMS: usize = 256;
/// Bytes before the payload in a record with `N = 256` streams.
pub const FORMAT_HEAD_LEN: usize = head_len(FORMAT_STREAMS);

/// `x` rounded up to a multiple of 16 (saturating).
pub const fn round16(x: usize) -> usize {
    match x.checked_add(15) {
        Some(v) => v & !15,
        None => usize::MAX,
    }
}

const fn round16_u64(x: u64) -> u64 {
    (x + 15) & !15
}

/// Bytes before the payload: `round16(16 + 4·(N+1))` (saturating).
pub const fn head_len(n_streams: usize) -> usize {
    round16(16usize.saturating_add(n_streams.saturating_add(1).saturating_mul(4)))
}

/// A record of `n_symbols` nibbles in `n_streams` streams is never longer than this, for any
/// valid table with scale bits ≤ 15: `head + round16(N · (ceil((n/N + 1)·15/8) + 4))`
/// (saturating; a buffer this long never fails with `E_SCRATCH` for lack of room).
pub const fn max_record_len(n_symbols: usize, n_streams: usize) -> usize {
    if n_streams == 0 {
        return head_len(0);
    }
    let per = (n_symbols / n_streams).saturating_add(1).saturating_mul(15);
    let per = (per / 8 + !per.is_multiple_of(8) as usize).saturating_add(4);
    head_len(n_streams).saturating_add(round16(per.saturating_mul(n_streams)))
}

/// Where the nibbles to encode come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nibbles<'a> {
    /// Packed int4 bytes, low nibble first: `2 · len` symbols (the real use).
    Packed(&'a [u8]),
    /// One symbol per byte (tests, odd counts): `len` symbols, each must be ≤ 15.
    Unpacked(&'a [u8]),
}

impl Nibbles<'_> {
    /// Number of symbols.
    pub const fn len(&self) -> usize {
        match self {
            Nibbles::Packed(b) => b.len().saturating_mul(2),
            Nibbles::Unpacked(b) => b.len(),
        }
    }

    /// Whether there are no symbols.
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Symbol `j`.
    ///
    /// # Panics
    /// If `j >= self.len()`.
    #[inline]
    pub fn get(&self, j: usize) -> u8 {
        match self {
            Nibbles::Packed(b) => (b[j >> 1] >> ((j & 1) << 2)) & 0xF,
            Nibbles::Unpacked(b) => b[j],
        }
    }

    /// Index and value of the first symbol the table cannot code.
    fn first_uncodable(&self, table: &Table) -> Option<(usize, u8)> {
        let ok = table.codable_mask();
        match self {
            Nibbles::Packed(b) => {
                let mut seen = 0u16;
                for &v in b.iter() {
                    seen |= (1 << (v & 0xF)) | (1 << (v >> 4));
                }
                if seen & !ok == 0 {
                    return None;
                }
                (0..self.len()).map(|j| (j, self.get(j))).find(|&(_, s)| !table.codable(s))
            }
            Nibbles::Unpacked(b) => b.iter().position(|&s| !table.codable(s)).map(|j| (j, b[j])),
        }
    }
}

/// Symbols in stream `i` of a record of `n` symbols in `n_streams` streams (0 when
/// `n_streams` is 0).
#[inline]
pub const fn stream_symbols(n: u64, n_streams: usize, i: usize) -> u64 {
    if n_streams == 0 {
        return 0;
    }
    let nn = n_streams as u64;
    n / nn + ((i as u64) < n % nn) as u64
}

/// Encodes `nibbles` as a record of `n_streams` interleaved streams into the front of `dst`
/// and returns the record length.
///
/// Every symbol is checked against the table before anything is written
/// (`E_SYMBOL_UNCODABLE`). `dst` must hold the record (`E_SCRATCH` otherwise;
/// [`max_record_len`] is always enough, and the exact length is `head + round16(payload)`);
/// the payload must fit in u32. Streams are encoded last to first, each written backwards
/// below the previous one from the end of `dst`, then the payload is moved down behind the
/// header in one copy.
pub fn encode_record(
    table: &Table,
    nibbles: Nibbles<'_>,
    n_streams: usize,
    dst: &mut [u8],
) -> Result<usize, EncodeError> {
    if n_streams == 0 || n_streams > MAX_STREAMS {
        return Err(EncodeError::NStreams { got: n_streams });
    }
    let n = nibbles.len();
    if n == 0 {
        return Err(EncodeError::Empty);
    }
    if let Some((index, symbol)) = nibbles.first_uncodable(table) {
        return Err(EncodeError::SymbolUncodable { index, symbol });
    }
    let head = head_len(n_streams);
    let cap = dst.len();
    if cap < head {
        return Err(EncodeError::Scratch { needed: head as u64, available: cap as u64 });
    }
    let mut lens = [0usize; MAX_STREAMS];
    let fast = match nibbles {
        Nibbles::Packed(b) => encode_interleaved(table, n, n_streams, head, dst, &mut lens, |j| {
            (b[j >> 1] >> ((j & 1) << 2)) & 0xF
        }),
        Nibbles::Unpacked(b) => {
            encode_interleaved(table, n, n_streams, head, dst, &mut lens, |j| b[j])
        }
    };
    if !fast {
        encode_sequential(table, nibbles, n_streams, head, dst, &mut lens)?;
    }
    let payload: usize = lens[..n_streams].iter().sum();
    let Ok(payload32) = u32::try_from(payload) else {
        return Err(EncodeError::Scratch {
            needed: payload as u64,
            available: u64::from(u32::MAX),
        });
    };
    let total = head + round16(payload);
    if total > cap {
        return Err(EncodeError::Scratch { needed: total as u64, available: cap as u64 });
    }
    dst[head + payload..total].fill(0);
    dst[..head].fill(0);
    dst[0..8].copy_from_slice(&(n as u64).to_le_bytes());
    dst[8..16].copy_from_slice(&(n as u64).div_ceil(2).to_le_bytes());
    let mut off = 0usize;
    for i in 0..n_streams {
        #[allow(clippy::cast_possible_truncation)] // ≤ payload, which fits in u32.
        dst[16 + 4 * i..20 + 4 * i].copy_from_slice(&(off as u32).to_le_bytes());
        off += lens[i];
    }
    dst[16 + 4 * n_streams..20 + 4 * n_streams].copy_from_slice(&payload32.to_le_bytes());
    Ok(total)
}

/// Encodes all streams together, round by round from the last, each into its own region of
/// `dst` sized by [`max_stream_len`]; the input is read sequentially (backwards) and the
/// streams' dependency chains overlap. Then compacts the streams to `dst[head..]` and fills
/// `lens`. Returns `false`, having written nothing that matters, when `dst` cannot hold every
/// region at its bound or a stream outgrows its region (the sequential encoder, which needs
/// only the exact size, runs then).
fn encode_interleaved(
    table: &Table,
    n: usize,
    n_streams: usize,
    head: usize,
    dst: &mut [u8],
    lens: &mut [usize; MAX_STREAMS],
    nib: impl Fn(usize) -> u8,
) -> bool {
    let sb = table.scale_bits();
    // Region i is dst[ends[i] - bound_i .. ends[i]], regions in stream order after head.
    let mut ends = [0usize; MAX_STREAMS];
    let mut starts = [0usize; MAX_STREAMS];
    let mut at = head;
    for i in 0..n_streams {
        #[allow(clippy::cast_possible_truncation)] // ≤ n.
        let c = stream_symbols(n as u64, n_streams, i) as usize;
        starts[i] = at;
        at = at.saturating_add(max_stream_len(c, sb));
        ends[i] = at;
    }
    if at > dst.len() {
        return false;
    }
    let (freq, start) = (table.freq(), table.start());
    let x_max_unit = (RANS_L >> sb) << 8;
    let mut x = [RANS_L; MAX_STREAMS];
    let mut p = ends;
    let rounds = n.div_ceil(n_streams);
    for k in (0..rounds).rev() {
        let base = k * n_streams;
        let width = n_streams.min(n - base);
        for i in 0..width {
            let s = usize::from(nib(base + i)) & (SYMBOLS - 1);
            let f = freq[s];
            let x_max = x_max_unit * f;
            let (mut xi, mut pi) = (x[i], p[i]);
            while xi >= x_max {
                // Never writes outside region i, even if the bound were ever too tight.
                if pi == starts[i] {
                    return false;
                }
                pi -= 1;
                #[allow(clippy::cast_possible_truncation)] // the low byte, by design.
                {
                    dst[pi] = xi as u8;
                }
                xi >>= 8;
            }
            x[i] = ((xi / f) << sb) + (xi % f) + start[s];
            p[i] = pi;
        }
    }
    // Flush the states and compact: stream i moves down to follow stream i − 1.
    let mut to = head;
    for i in 0..n_streams {
        if p[i] < starts[i] + 4 {
            return false;
        }
    }
    for i in 0..n_streams {
        let a = p[i] - 4;
        dst[a..p[i]].copy_from_slice(&x[i].to_be_bytes());
        let len = ends[i] - a;
        dst.copy_within(a..ends[i], to);
        lens[i] = len;
        to += len;
    }
    true
}

/// Encodes the streams one at a time, last first, each backwards below the previous one from
/// the end of `dst`, then moves the payload down behind the header; needs only the exact size.
fn encode_sequential(
    table: &Table,
    nibbles: Nibbles<'_>,
    n_streams: usize,
    head: usize,
    dst: &mut [u8],
    lens: &mut [usize; MAX_STREAMS],
) -> Result<(), EncodeError> {
    let n = nibbles.len();
    let cap = dst.len();
    let mut lo = cap;
    for i in (0..n_streams).rev() {
        // usize fits: c ≤ n.
        #[allow(clippy::cast_possible_truncation)]
        let c = stream_symbols(n as u64, n_streams, i) as usize;
        let len = match nibbles {
            Nibbles::Packed(b) => encode_core(
                table,
                c,
                |k| {
                    let j = i + k * n_streams;
                    (b[j >> 1] >> ((j & 1) << 2)) & 0xF
                },
                &mut dst[head..lo],
            ),
            Nibbles::Unpacked(b) => {
                encode_core(table, c, |k| b[i + k * n_streams], &mut dst[head..lo])
            }
        }
        .map_err(|_| EncodeError::Scratch {
            needed: (cap - lo + head) as u64 + 1,
            available: cap as u64,
        })?;
        lo -= len;
        lens[i] = len;
    }
    dst.copy_within(lo..cap, head);
    Ok(())
}

/// [`encode_record`] of packed int4 bytes with the format's 256 streams.
pub fn encode_record_packed(
    table: &Table,
    packed: &[u8],
    dst: &mut [u8],
) -> Result<usize, EncodeError> {
    encode_record(table, Nibbles::Packed(packed), FORMAT_STREAMS, dst)
}

/// Which of the two reference orders the parser checks offsets in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ParseOrder {
    /// The codec's order (the library's): for each stream in turn, monotonicity then the
    /// 4-byte minimum.
    #[default]
    Codec,
    /// The reference validator's order: every offset for monotonicity first, then every
    /// stream length.
    Validator,
}

/// A parsed, framing-valid record: a borrowed view of the blob.
///
/// Holding one proves the ten framing checks passed: offsets start at 0, grow by at least 4
/// per stream, end inside the blob, the length and padding are exact, and `n_symbols` is
/// within the bomb bound. Stream contents are only checked by decoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    blob: &'a [u8],
    n_streams: usize,
    n_symbols: u64,
    head: usize,
    payload_len: usize,
}

#[inline]
fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

#[inline]
fn le_u64(b: &[u8], at: usize) -> u64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(v)
}

impl<'a> Record<'a> {
    /// Parses a record of `n_streams` streams in the codec's order (see the module docs).
    pub fn parse_streams(blob: &'a [u8], n_streams: usize) -> Result<Self, RecordError> {
        Self::parse_streams_in_order(blob, n_streams, ParseOrder::Codec)
    }

    /// Parses a record with the format's 256 streams in the codec's order.
    pub fn parse(blob: &'a [u8]) -> Result<Self, RecordError> {
        Self::parse_streams(blob, FORMAT_STREAMS)
    }

    /// Parses a record, checking offsets in the given order. Refusals, in order:
    /// `E_NSTREAMS`, `E_TRUNCATED` (header), `E_EMPTY`, `E_COUNT_MISMATCH`, `E_OFFSET_FIRST`,
    /// `E_OFFSETS_MONOTONIC` / `E_STREAM_SHORT`, `E_TRUNCATED` (payload),
    /// `E_LENGTH_MISMATCH`, `E_OVERSIZE`, `E_PAD_NONZERO` (header pad, then payload pad).
    pub fn parse_streams_in_order(
        blob: &'a [u8],
        n_streams: usize,
        order: ParseOrder,
    ) -> Result<Self, RecordError> {
        if n_streams == 0 || n_streams > MAX_STREAMS {
            return Err(RecordError::NStreams { got: n_streams });
        }
        let head = head_len(n_streams);
        if blob.len() < head {
            return Err(RecordError::Truncated { needed: head as u64, available: blob.len() });
        }
        let n_symbols = le_u64(blob, 0);
        let packed_bytes = le_u64(blob, 8);
        if n_symbols == 0 {
            return Err(RecordError::Empty);
        }
        let expected = n_symbols / 2 + (n_symbols & 1);
        if packed_bytes != expected {
            return Err(RecordError::CountMismatch { n_symbols, packed_bytes, expected });
        }
        let off = |i: usize| le_u32(blob, 16 + 4 * i);
        let first = off(0);
        if first != 0 {
            return Err(RecordError::OffsetFirst { got: first });
        }
        let monotonic = |i: usize| {
            let (prev, next) = (off(i), off(i + 1));
            if next < prev {
                Err(RecordError::OffsetsMonotonic { stream: i, prev, next })
            } else {
                Ok(())
            }
        };
        let long_enough = |i: usize| {
            let len = off(i + 1).wrapping_sub(off(i));
            if len < 4 { Err(RecordError::StreamShort { stream: i, len }) } else { Ok(()) }
        };
        match order {
            ParseOrder::Codec => {
                for i in 0..n_streams {
                    monotonic(i)?;
                    long_enough(i)?;
                }
            }
            ParseOrder::Validator => {
                for i in 0..n_streams {
                    monotonic(i)?;
                }
                for i in 0..n_streams {
                    long_enough(i)?;
                }
            }
        }
        let payload_len = u64::from(off(n_streams));
        let len = blob.len() as u64;
        let head64 = head as u64;
        if head64 + payload_len > len {
            return Err(RecordError::Truncated {
                needed: head64 + payload_len,
                available: blob.len(),
            });
        }
        let expected_len = head64 + round16_u64(payload_len);
        if len != expected_len {
            return Err(RecordError::LengthMismatch { got: blob.len(), expected: expected_len });
        }
        let limit = payload_len * 8 * (1 << 15);
        if n_symbols > limit {
            return Err(RecordError::Oversize { n_symbols, limit });
        }
        // payload_len ≤ blob.len(), so it fits in usize.
        #[allow(clippy::cast_possible_truncation)]
        let payload_len = payload_len as usize;
        let pads = (16 + 4 * (n_streams + 1)..head).chain(head + payload_len..blob.len());
        for at in pads {
            if blob[at] != 0 {
                return Err(RecordError::PadNonzero { offset: at, got: blob[at] });
            }
        }
        Ok(Record { blob, n_streams, n_symbols, head, payload_len })
    }

    /// Number of nibbles (`n_symbols`).
    #[inline]
    pub const fn n_symbols(&self) -> u64 {
        self.n_symbols
    }

    /// Bytes of packed int4 output: `ceil(n_symbols / 2)`.
    #[inline]
    pub const fn packed_bytes(&self) -> u64 {
        self.n_symbols.div_ceil(2)
    }

    /// Number of streams `N`.
    #[inline]
    pub const fn n_streams(&self) -> usize {
        self.n_streams
    }

    /// The whole record.
    #[inline]
    pub const fn blob(&self) -> &'a [u8] {
        self.blob
    }

    /// Record length in bytes (`head + round16(payload_len)`).
    #[inline]
    pub const fn len(&self) -> usize {
        self.blob.len()
    }

    /// Always false: a parsed record has a header.
    #[inline]
    pub const fn is_empty(&self) -> bool {
        false
    }

    /// Bytes before the payload.
    #[inline]
    pub const fn head_len(&self) -> usize {
        self.head
    }

    /// Payload length (sum of the stream lengths).
    #[inline]
    pub const fn payload_len(&self) -> usize {
        self.payload_len
    }

    /// The payload: all streams back to back.
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.blob[self.head..self.head + self.payload_len]
    }

    /// The payload followed by its zero padding, up to the end of the blob (for arms that
    /// read a few bytes past a stream's end; they must still cap what they consume).
    #[inline]
    pub fn payload_padded(&self) -> &'a [u8] {
        &self.blob[self.head..]
    }

    /// `offsets[i]` for `i ≤ N`, relative to the payload.
    ///
    /// # Panics
    /// If `i > N`.
    #[inline]
    pub fn offset(&self, i: usize) -> u32 {
        assert!(i <= self.n_streams, "offset index {i} out of range 0..={}", self.n_streams);
        le_u32(self.blob, 16 + 4 * i)
    }

    /// The bytes of stream `i` (at least 4).
    ///
    /// # Panics
    /// If `i >= N`.
    #[inline]
    pub fn stream(&self, i: usize) -> &'a [u8] {
        assert!(i < self.n_streams, "stream index {i} out of range 0..{}", self.n_streams);
        &self.payload()[self.offset(i) as usize..self.offset(i + 1) as usize]
    }

    /// Number of symbols in stream `i`.
    #[inline]
    pub const fn stream_symbols(&self, i: usize) -> u64 {
        stream_symbols(self.n_symbols, self.n_streams, i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_of_format() {
        assert_eq!(FORMAT_HEAD_LEN, 1056);
        assert_eq!(head_len(8), 64);
        assert_eq!(round16(0), 0);
        assert_eq!(round16(17), 32);
        assert_eq!(stream_symbols(10, 4, 1), 3);
        assert_eq!(stream_symbols(10, 4, 2), 2);
        assert_eq!(stream_symbols(10, 0, 0), 0);
        assert_eq!(max_record_len(1, 256), 1056 + round16(256 * 6));
    }
}
