//! Decode-then-matmul over compressed weights: multiply with entropy-coded int4-row bytes
//! without ever materialising the dense int4 matrix.
//!
//! One adapter, [`FusedMatrix`], over a small tile-decoder trait ([`TileSource`]) that each
//! codec implements:
//! - [`Rans256Matrix`]: an `int4-rans256-g0` record and its table ([`RecordTiles`]), one
//!   sequential decode;
//! - [`Cfs1Matrix`]: a CFS1 blob of int4-row bytes (the `cfse_pack` container codes every
//!   tensor as one blob; [`Cfs1Tiles`], `adapter_cfs1.rs`), one sequential decode;
//! - [`Rans64Matrix`](crate::adapter_rans64::Rans64Matrix): an `int4-rans64-t1` blob
//!   (`Rans64Tiles`, `adapter_rans64.rs`), independent chunks, so a row band decodes from the
//!   chunk holding its first byte.
//!
//! A matrix is the source (borrowed bytes), the per-row scales and `[O, I]`; it exists only
//! once every check passed (the codec's framing, its decoded length `== O · ceil(I/2)`, `O`
//! scales, and for `int4-rans64-t1` every chunk's check, verified once there). A multiply
//! ([`FusedMatrix::matmul_band`] and the entry points built on it) runs one tile loop for
//! every codec: the source decodes the next piece of int4 bytes into a weight scratch of
//! about [`TILE_BYTES`] (or [`BATCH_TILE_BYTES`] for f32 batches), so it is decoded into
//! L1/L2 and consumed from there; every whole row in it goes to the int4-row kernel of the
//! chosen arm (a few rows per call, as the output scratch holds), and a partial row left at
//! the end is moved to the front for the next piece. Decoded weights never reach DRAM.
//!
//! Row bands: rows `r0..r1` alone ([`FusedMatrix::matmul_band`]) decode from the latest point
//! at or before row `r0`'s first byte where the source can start ([`TileSource::open`]): the
//! matrix's first byte for the sequential codecs (so a band needs the decode of every row
//! before it), the first byte of the chunk holding it for `int4-rans64-t1`; the bytes before
//! `r0` are decoded and dropped. [`FusedMatrix::row_split`] says which.
//!
//! Exactness: each output `y[s, o]` is the int4-row kernel's dot product of row `o`, computed
//! by the same arm over the same bytes in the same order as dense [`crate::kernels::matmul`]
//! on the decoded matrix, so the results are bit-identical to it (a test proves it per arm).
//!
//! Integrity: seals are only known once the bytes they cover have been decoded (a record's
//! 256 seals, a CFS1 blob's seal, after the last byte; a chunk's with its last byte), so on
//! any decode error the output is zero-filled before the error is returned: a corrupted
//! source never leaves partial products behind. A band that ends before the last row does not
//! check the seals of what it did not decode to the end (see each codec's module docs).
//!
//! Threads: a record's 256 streams are interleaved across every row and a CFS1 blob is one
//! serial stream, so neither splits into row bands cheaply; the `tetrad` crate's threaded
//! matmul pipelines them instead (one thread decodes tile `k + 1` while another multiplies
//! tile `k`, see `tetrad::adapter`). `int4-rans64-t1` bands split across threads directly.

use core::ops::Range;

use tetrad_rans::{DecodeError, RecordError};

use crate::Format;
use crate::isa::Isa;

#[path = "adapter_cfs1.rs"]
mod cfs1;
#[path = "adapter_rans256.rs"]
mod rans256;
use crate::kernels::{
    KernelError, Matrix, QuantizedActs, Scales, matmul_q8_rows_with, matmul_rows_with,
};
pub use cfs1::{Cfs1Matrix, Cfs1Tiles};
pub use rans256::{RecordDecoder, RecordTiles};

/// Target int4 bytes per tile (a little under a 32 KiB L1 data cache).
pub const TILE_BYTES: usize = 24 * 1024;

/// Target int4 bytes per tile for f32 activations at `S ≥ 2` (an L2-resident tile): the batch
/// kernels set up per call (the 256-bit arms copy the activations into L1-sized chunk
/// buffers), which a 24 KiB tile of a few rows does not amortize.
pub const BATCH_TILE_BYTES: usize = 96 * 1024;

/// The tile budget the allocating entry points use for `acts`: [`BATCH_TILE_BYTES`] for f32
/// activations at `S ≥ 2`, else [`TILE_BYTES`].
pub const fn tile_bytes(acts: &Acts<'_>) -> usize {
    match acts {
        Acts::F32 { s, .. } if *s >= 2 => BATCH_TILE_BYTES,
        _ => TILE_BYTES,
    }
}

/// Why a compressed matrix could not be built or multiplied (every codec's adapter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AdapterError {
    /// The record's framing was refused.
    #[error("record: {0}")]
    Record(RecordError),
    /// The record decodes to a different number of nibbles than `[O, I]` int4-row needs.
    #[error("record holds {got} nibbles, [{o}, {i}] int4-row needs 2·O·ceil(I/2) = {expected}")]
    NSymbols {
        /// Nibbles in the record.
        got: u64,
        /// `2 · O · ceil(I/2)`.
        expected: u64,
        /// Rows.
        o: usize,
        /// Columns.
        i: usize,
    },
    /// A CFS1 blob decodes to a different number of bytes than `[O, I]` int4-row needs.
    #[error("cfs1 blob holds {got} bytes, [{o}, {i}] int4-row needs O·ceil(I/2) = {expected}")]
    RawLen {
        /// `rawlen` of the blob.
        got: u32,
        /// `O · ceil(I/2)`.
        expected: u64,
        /// Rows.
        o: usize,
        /// Columns.
        i: usize,
    },
    /// An `int4-rans64-t1` blob decodes to a different number of bytes than `[O, I]`
    /// int4-row needs.
    #[error("blob holds {got} bytes, [{o}, {i}] int4-row needs O·ceil(I/2) = {expected}")]
    ByteCount {
        /// `n_bytes` of the blob.
        got: u64,
        /// `O · ceil(I/2)`.
        expected: u64,
        /// Rows.
        o: usize,
        /// Columns.
        i: usize,
    },
    /// The CFS1 decoder refused the blob (header stage at construction, payload stage or
    /// seal while multiplying; the output was zero-filled).
    #[error("cfs1: {0}")]
    Cfs1(tetrad_fse::DecodeError),
    /// The `int4-rans64-t1` blob was refused (header, index and chunk checks at
    /// construction; a chunk's head, body or seal while multiplying, after which the output
    /// was zero-filled).
    #[error("int4-rans64-t1: {0}")]
    Blob(tetrad_rans::rans64::Error),
    /// Not one scale per row.
    #[error("{got} scales for {expected} rows")]
    ScaleCount {
        /// Scales given.
        got: usize,
        /// `O`.
        expected: usize,
    },
    /// `[O, I]` (or `S × O`) overflows.
    #[error("shape [{o}, {i}] overflows")]
    Overflow {
        /// Rows.
        o: usize,
        /// Columns.
        i: usize,
    },
    /// A row band outside `0..O`.
    #[error("row band {start}..{end} is not inside 0..{o}")]
    Band {
        /// First row asked for.
        start: usize,
        /// End of the band asked for.
        end: usize,
        /// Rows `O`.
        o: usize,
    },
    /// The scratch buffers cannot hold one row (plus the source's slack) or one row's
    /// outputs.
    #[error("scratch holds {got} bytes, a tile needs at least {needed}")]
    Scratch {
        /// Minimum needed.
        needed: usize,
        /// Given.
        got: usize,
    },
    /// Checked record decode refused a stream (the output was zero-filled).
    #[error("decode: {0}")]
    Decode(DecodeError),
    /// The kernel refused (shapes, or an unavailable arm).
    #[error("kernel: {0}")]
    Kernel(KernelError),
}

impl AdapterError {
    /// The refusal class: the underlying stage's where there is one, else the adapter's own.
    pub fn class(&self) -> &'static str {
        match self {
            Self::Record(e) => e.class(),
            Self::Cfs1(e) => e.class(),
            Self::Blob(e) => e.class(),
            Self::Decode(e) => e.class(),
            Self::Kernel(e) => e.class(),
            Self::NSymbols { .. } | Self::ByteCount { .. } => "E_COUNT_MISMATCH",
            Self::RawLen { .. } => "E_RAWLEN_MISMATCH",
            Self::ScaleCount { .. } => "E_SCALE_COUNT",
            Self::Overflow { .. } => "E_ADAPTER_OVERFLOW",
            Self::Band { .. } => "E_BAND",
            Self::Scratch { .. } => "E_SCRATCH",
        }
    }
}

impl From<KernelError> for AdapterError {
    fn from(e: KernelError) -> Self {
        Self::Kernel(e)
    }
}

impl From<tetrad_fse::DecodeError> for AdapterError {
    fn from(e: tetrad_fse::DecodeError) -> Self {
        Self::Cfs1(e)
    }
}

impl From<DecodeError> for AdapterError {
    fn from(e: DecodeError) -> Self {
        Self::Decode(e)
    }
}

impl From<tetrad_rans::rans64::Error> for AdapterError {
    fn from(e: tetrad_rans::rans64::Error) -> Self {
        Self::Blob(e)
    }
}

/// How to multiply one tile: f32 activations or int8-quantized ones.
#[derive(Debug, Clone, Copy)]
pub enum Acts<'x> {
    /// `S × I` f32 activations.
    F32 {
        /// The activations.
        x: &'x [f32],
        /// Rows `S`.
        s: usize,
    },
    /// int8-quantized activations (exact integer dot products).
    Q8(&'x QuantizedActs<'x>),
}

impl Acts<'_> {
    /// Activation rows `S`.
    pub const fn s(&self) -> usize {
        match self {
            Self::F32 { s, .. } => *s,
            Self::Q8(q) => q.s(),
        }
    }

    /// Refuses activations that are not `S × i`: f32 `x` must hold exactly `S · i` values,
    /// int8 rows must be `i` long. The adapters check this before they size anything by `S`.
    ///
    /// # Errors
    /// `KernelError::Length` (`"x"`), or `KernelError::Overflow` when `S · i` overflows.
    pub fn check(&self, i: usize) -> Result<(), KernelError> {
        let (what, expected, got) = match self {
            Self::F32 { x, s } => {
                let n = s.checked_mul(i).ok_or(KernelError::Overflow { o: *s, i })?;
                ("x", n, x.len())
            }
            Self::Q8(q) => ("quantized activation row length", i, q.i()),
        };
        if expected == got { Ok(()) } else { Err(KernelError::Length { what, expected, got }) }
    }
}

/// A codec's side of a [`FusedMatrix`]: the coded bytes of `O · ceil(I/2)` int4-row bytes,
/// and how to decode them forward from a point where decoding can start.
///
/// Implemented by [`RecordTiles`] (`int4-rans256-g0`), [`Cfs1Tiles`] (CFS1) and
/// [`Rans64Tiles`](crate::adapter_rans64::Rans64Tiles) (`int4-rans64-t1`).
pub trait TileSource {
    /// The codec's decode arm (`()` for a codec with one decoder).
    type Arm: Copy + core::fmt::Debug + Send + Sync;
    /// Working memory a decoder borrows, owned by the caller (the CFS1 decode table; `()`
    /// for the others).
    type Work: Default + Send;
    /// A decoder positioned in the int4 bytes.
    type Decoder<'w>: TileDecoder + Send
    where
        Self: 'w;

    /// Bytes the weight scratch needs beyond one row: the largest piece a decoder may leave
    /// behind the last whole row is less than one row plus this.
    const SLACK: usize;

    /// This machine's best decode arm.
    fn best_arm() -> Self::Arm;

    /// Refuses an `[o, i]` int4-row matrix whose `O · ceil(I/2)` bytes are not what the
    /// source decodes to (`E_COUNT_MISMATCH`, `E_RAWLEN_MISMATCH`, or `E_ADAPTER_OVERFLOW`).
    ///
    /// # Errors
    /// As above.
    fn check_len(&self, o: usize, i: usize) -> Result<(), AdapterError>;

    /// Bytes between two points where decoding can start (`None`: only at byte 0).
    fn split_bytes(&self) -> Option<usize>;

    /// A decoder at the latest point at or before byte `byte` where decoding can start (its
    /// [`position`](TileDecoder::position)), on arm `arm`, its working memory in `work`.
    ///
    /// # Errors
    /// An unavailable arm; a refusal of the coded bytes there.
    fn open<'w>(
        &'w self,
        arm: Self::Arm,
        work: &'w mut Self::Work,
        byte: usize,
    ) -> Result<Self::Decoder<'w>, AdapterError>;

    /// Decodes everything into `out` (exactly the decoded length), every seal checked.
    ///
    /// # Errors
    /// A wrong-sized `out`; the decoder's refusals.
    fn decode_into(&self, arm: Self::Arm, out: &mut [u8]) -> Result<(), AdapterError>;

    /// Where a band of bytes `start..end` splits into two halves decoded in lockstep by
    /// [`decode_pair`](Self::decode_pair): a byte strictly inside it where decoding can start,
    /// when `arm` decodes two places at once faster than one after the other. `None` (the
    /// default): never.
    fn pair_split(&self, arm: Self::Arm, start: usize, end: usize) -> Option<usize> {
        let _ = (arm, start, end);
        None
    }

    /// Decodes the next `out_a.len()` bytes of `a` and `out_b.len()` bytes of `b` (each a
    /// length [`TileDecoder::piece`] gave): the same results as two `decode` calls.
    ///
    /// # Errors
    /// Each decoder's own, separately.
    fn decode_pair(
        a: &mut Self::Decoder<'_>,
        out_a: &mut [u8],
        b: &mut Self::Decoder<'_>,
        out_b: &mut [u8],
    ) -> (Result<(), AdapterError>, Result<(), AdapterError>) {
        (a.decode(out_a), b.decode(out_b))
    }
}

/// A decoder over a [`TileSource`]'s bytes, decoding forward in pieces.
pub trait TileDecoder {
    /// The byte of the matrix the next piece starts at.
    fn position(&self) -> usize;

    /// The length of the next piece, given `room` bytes of scratch (at least the source's
    /// [`SLACK`](TileSource::SLACK) plus one) and `want` more bytes wanted (at least 1, at most
    /// what is left): at least 1, at most `room`, at most `want` rounded up to the codec's
    /// piece granularity.
    ///
    /// # Errors
    /// A refusal of the coded bytes met on the way (a chunk's head).
    fn piece(&mut self, room: usize, want: usize) -> Result<usize, AdapterError>;

    /// Decodes the next `out.len()` bytes (a length [`piece`](Self::piece) gave).
    ///
    /// # Errors
    /// The decoder's refusals.
    fn decode(&mut self, out: &mut [u8]) -> Result<(), AdapterError>;

    /// After the last byte of the matrix was decoded: every seal not checked yet.
    ///
    /// # Errors
    /// A seal that does not hold, or bytes left undecoded.
    fn finish(&self) -> Result<(), AdapterError>;
}

/// An entropy-coded int4-row weight matrix `W[O, I]` with per-row scales, multiplied by
/// decoding tiles into cache and feeding them to the int4-row kernel (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct FusedMatrix<'a, S> {
    pub(crate) source: S,
    scales: &'a [f32],
    o: usize,
    i: usize,
    stride: usize,
}

/// An `int4-rans256-g0` record viewed as an int4-row weight matrix `W[O, I]`.
pub type Rans256Matrix<'a> = FusedMatrix<'a, RecordTiles<'a>>;

/// Bytes of one int4 row of `i` columns, and `O · ceil(I/2)` as a `u64` (`E_ADAPTER_OVERFLOW`).
pub(crate) fn int4_len(o: usize, i: usize) -> Result<(usize, u64), AdapterError> {
    let stride = i.div_ceil(2);
    let n = (o as u64).checked_mul(stride as u64).ok_or(AdapterError::Overflow { o, i })?;
    // The decoded matrix must also be addressable here.
    usize::try_from(n).map_err(|_| AdapterError::Overflow { o, i })?;
    Ok((stride, n))
}

impl<'a, S: TileSource> FusedMatrix<'a, S> {
    /// A matrix over a checked `source` as the `[o, i]` int4-row matrix with per-row
    /// `scales`: the source's decoded length (`TileSource::check_len`) and `scales.len() ==
    /// o` (`E_SCALE_COUNT`) are checked, nothing else is repeated — so a source checked once
    /// (a record parsed, an `int4-rans64-t1` blob's chunk checks verified) can be given new
    /// scales, or re-borrowed, for free.
    ///
    /// # Errors
    /// The first failed check, as above.
    pub fn from_source(
        source: S,
        scales: &'a [f32],
        o: usize,
        i: usize,
    ) -> Result<Self, AdapterError> {
        source.check_len(o, i)?;
        if scales.len() != o {
            return Err(AdapterError::ScaleCount { got: scales.len(), expected: o });
        }
        Ok(Self { source, scales, o, i, stride: i.div_ceil(2) })
    }

    /// Rows `O`.
    pub const fn o(&self) -> usize {
        self.o
    }

    /// Columns `I`.
    pub const fn i(&self) -> usize {
        self.i
    }

    /// Bytes of one int4 row, `ceil(I/2)`.
    pub const fn row_bytes(&self) -> usize {
        self.stride
    }

    /// Packed int4 bytes the source decodes to, `O · ceil(I/2)`.
    pub const fn dense_len(&self) -> usize {
        self.o * self.stride
    }

    /// The per-row scales.
    pub const fn scales(&self) -> &'a [f32] {
        self.scales
    }

    /// The codec's side: the parsed, checked coded bytes.
    pub const fn source(&self) -> &S {
        &self.source
    }

    /// Rows per tile for a tile budget of `bytes` (at least 1, at most `O`).
    pub const fn tile_rows(&self, bytes: usize) -> usize {
        let r = match bytes.checked_div(self.stride) {
            Some(r) => r,
            None => usize::MAX, // `I = 0`: rows are empty
        };
        if r == 0 {
            1
        } else if r > self.o {
            self.o
        } else {
            r
        }
    }

    /// Rows between two points where a band decodes from without decoding anything before
    /// (`None`: only row 0, a sequential codec: a band starting at row `r` decodes and drops
    /// rows `0..r` first). For `int4-rans64-t1` a band starting at a multiple of this many
    /// rows drops less than a row.
    pub fn row_split(&self) -> Option<usize> {
        self.source.split_bytes().map(|b| b.div_ceil(self.stride.max(1)).max(1))
    }

    /// Weight scratch bytes a tile budget of `bytes` turns into: at least one row plus the
    /// source's slack.
    pub const fn scratch_len(&self, bytes: usize) -> usize {
        let min = self.stride + S::SLACK;
        if bytes < min { min } else { bytes }
    }

    /// Decodes the whole matrix into `out` (exactly [`dense_len`](Self::dense_len) bytes) on
    /// decode arm `arm`, every seal checked.
    ///
    /// # Errors
    /// A wrong-sized `out`; the decoder's refusals.
    pub fn decode_into(&self, arm: S::Arm, out: &mut [u8]) -> Result<(), AdapterError> {
        self.source.decode_into(arm, out)
    }

    /// Multiplies the int4 rows `rows` held (already decoded) in `tile` into `y` (`S × O`),
    /// using `ytile` (at least `S · rows.len()` floats) as the kernel's output.
    ///
    /// # Errors
    /// The kernel's refusals (shapes, unavailable arm).
    pub fn multiply_tile(
        &self,
        isa: Isa,
        acts: Acts<'_>,
        tile: &[u8],
        rows: Range<usize>,
        ytile: &mut [f32],
        y: &mut [f32],
    ) -> Result<(), AdapterError> {
        self.multiply(isa, acts, tile, rows, 0..self.o, ytile, y)
    }

    /// Rows `r` (decoded in `tile`) through the int4-row kernel into `ybuf`, then scattered
    /// into the outputs of band `band` (`yband` is `S × band.len()`). The kernel sees exactly
    /// the rows and activations dense matmul would, so each output is bit-identical to dense
    /// matmul on the same arm.
    #[allow(clippy::too_many_arguments)] // the tile's geometry, spelled out
    fn multiply(
        &self,
        isa: Isa,
        acts: Acts<'_>,
        tile: &[u8],
        r: Range<usize>,
        band: Range<usize>,
        ybuf: &mut [f32],
        yband: &mut [f32],
    ) -> Result<(), AdapterError> {
        let n = r.len();
        let s = acts.s();
        let m =
            Matrix::new(Format::Int4Row, tile, Scales::F32(&self.scales[r.clone()]), n, self.i, 0)?;
        let yt = &mut ybuf[..s * n];
        match acts {
            Acts::F32 { x, s } => matmul_rows_with(isa, &m, x, s, 0..n, yt)?,
            Acts::Q8(q) => matmul_q8_rows_with(isa, &m, q, 0..n, yt)?,
        }
        let w = band.len();
        let off = r.start - band.start;
        for si in 0..s {
            yband[si * w + off..si * w + off + n].copy_from_slice(&yt[si * n..(si + 1) * n]);
        }
        Ok(())
    }

    /// `y = acts · Wᵀ` (`y` is `S × O`), decoding piece by piece into `wbuf` (at least one row
    /// plus the source's [`SLACK`](TileSource::SLACK)) and multiplying on kernel arm `isa`
    /// (decode on `arm`); `ybuf` holds the kernel's outputs (at least `S` floats; a multiple
    /// of `S` floats, one row's outputs each, is used). The decoder's working memory
    /// ([`TileSource::Work`]: the CFS1 table, 16 KiB) lives on the stack; see
    /// [`matmul_band_work`](Self::matmul_band_work) to pass it in. No allocation. On error `y`
    /// is zero-filled.
    ///
    /// # Errors
    /// Shapes, scratch sizes, the decoder's refusals, the kernel's refusals.
    #[allow(clippy::too_many_arguments)] // the two scratch buffers are what makes it no_std
    pub fn matmul_scratch(
        &self,
        isa: Isa,
        arm: S::Arm,
        acts: Acts<'_>,
        y: &mut [f32],
        wbuf: &mut [u8],
        ybuf: &mut [f32],
    ) -> Result<(), AdapterError> {
        self.matmul_band(isa, arm, acts, 0..self.o, y, wbuf, ybuf)
    }

    /// Rows `rows` of `y = acts · Wᵀ` into `yband` (`S × rows.len()`, row-major by activation
    /// row: `yband[s · n + (o − rows.start)]`), with scratch as
    /// [`matmul_scratch`](Self::matmul_scratch). Decoding starts where the source can start at
    /// or before the band's first byte (see [`row_split`](Self::row_split)); the seals a band
    /// checks are those of what it decodes to the end. On error `yband` is zero-filled.
    ///
    /// # Errors
    /// As [`matmul_scratch`](Self::matmul_scratch), and `E_BAND` for rows outside `0..O`.
    #[allow(clippy::too_many_arguments)] // the band and the two scratch buffers
    pub fn matmul_band(
        &self,
        isa: Isa,
        arm: S::Arm,
        acts: Acts<'_>,
        rows: Range<usize>,
        yband: &mut [f32],
        wbuf: &mut [u8],
        ybuf: &mut [f32],
    ) -> Result<(), AdapterError> {
        let mut work = S::Work::default();
        self.matmul_band_work(isa, arm, acts, rows, yband, wbuf, ybuf, &mut work)
    }

    /// [`matmul_band`](Self::matmul_band) with the decoder's working memory in `work`.
    ///
    /// # Errors
    /// As [`matmul_band`](Self::matmul_band).
    #[allow(clippy::too_many_arguments)] // the band and the three scratch buffers
    pub fn matmul_band_work(
        &self,
        isa: Isa,
        arm: S::Arm,
        acts: Acts<'_>,
        rows: Range<usize>,
        yband: &mut [f32],
        wbuf: &mut [u8],
        ybuf: &mut [f32],
        work: &mut S::Work,
    ) -> Result<(), AdapterError> {
        let r = self.band_inner(isa, arm, acts, rows, yband, wbuf, ybuf, work);
        if r.is_err() {
            yband.fill(0.0);
        }
        r
    }

    /// Refuses a band outside `0..O`, activations that are not `S × I` and a `yband` that is
    /// not `S × rows.len()`, in that order.
    fn check_band(
        &self,
        acts: &Acts<'_>,
        rows: &Range<usize>,
        yband: &[f32],
    ) -> Result<(), AdapterError> {
        let (o, i) = (self.o, self.i);
        if rows.start > rows.end || rows.end > o {
            return Err(AdapterError::Band { start: rows.start, end: rows.end, o });
        }
        acts.check(i)?;
        let want_y = acts.s().checked_mul(rows.len()).ok_or(AdapterError::Overflow { o, i })?;
        if yband.len() != want_y {
            return Err(
                KernelError::Length { what: "y", expected: want_y, got: yband.len() }.into()
            );
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn band_inner(
        &self,
        isa: Isa,
        arm: S::Arm,
        acts: Acts<'_>,
        rows: Range<usize>,
        yband: &mut [f32],
        wbuf: &mut [u8],
        ybuf: &mut [f32],
        work: &mut S::Work,
    ) -> Result<(), AdapterError> {
        self.check_band(&acts, &rows, yband)?;
        let (s, n, stride) = (acts.s(), rows.len(), self.stride);
        if n == 0 {
            return Ok(());
        }
        let per_call = ybuf.len().checked_div(s).unwrap_or(usize::MAX).max(1);
        if stride == 0 {
            // `I = 0`: empty rows, nothing to decode; the kernel still gives each output (its
            // scale times an empty sum), exactly as dense matmul does.
            if ybuf.len() < s {
                return Err(AdapterError::Scratch { needed: 4 * s, got: 4 * ybuf.len() });
            }
            let mut r0 = rows.start;
            while r0 < rows.end {
                let r1 = rows.end.min(r0.saturating_add(per_call));
                self.multiply(isa, acts, &[], r0..r1, rows.clone(), ybuf, yband)?;
                r0 = r1;
            }
            return Ok(());
        }
        let need_w = stride + S::SLACK;
        if wbuf.len() < need_w || ybuf.len() < s {
            return Err(AdapterError::Scratch {
                needed: need_w.max(4 * s),
                got: wbuf.len().min(4 * ybuf.len()),
            });
        }
        let out = Out { isa, acts, band: rows.clone(), per_call };
        let Some(mid) = self.pair_split(arm, &rows, wbuf.len()) else {
            let mut c = Cursor::start(self, arm, work, rows.clone())?;
            c.run(self, &out, wbuf, ybuf, yband)?;
            return c.end(self);
        };
        // Two half-bands in lockstep, each in its half of the scratch, their common pieces
        // through the source's paired decode. Errors in byte order: the first half's bytes all
        // come before the second's, so an error of the second half is held until the first
        // half has finished cleanly.
        let mut work_b = S::Work::default();
        let (wa, wb) = wbuf.split_at_mut(wbuf.len() / 2);
        let mut a = Cursor::start(self, arm, work, rows.start..mid)?;
        let mut b = Cursor::start(self, arm, &mut work_b, mid..rows.end);
        while !a.done() {
            let ra = a.piece(wa)?;
            let rb = match &mut b {
                Ok(bc) if !bc.done() => match bc.piece(wb) {
                    Ok(rb) => Some(rb),
                    Err(e) => {
                        b = Err(e);
                        None
                    }
                },
                _ => None,
            };
            match (rb, &mut b) {
                (Some(rb), Ok(bc)) => {
                    let (got_a, got_b) = S::decode_pair(
                        &mut a.dec,
                        &mut wa[ra.clone()],
                        &mut bc.dec,
                        &mut wb[rb.clone()],
                    );
                    got_a?;
                    match got_b {
                        Ok(()) => {
                            bc.decoded(rb.len());
                            bc.multiply(self, &out, wb, ybuf, yband)?;
                        }
                        Err(e) => b = Err(e),
                    }
                }
                _ => a.dec.decode(&mut wa[ra.clone()])?,
            }
            a.decoded(ra.len());
            a.multiply(self, &out, wa, ybuf, yband)?;
        }
        let mut b = b?;
        b.run(self, &out, wb, ybuf, yband)?;
        b.end(self)
    }

    /// Where [`band_inner`](Self::band_inner) splits `rows` into two half-bands decoded in
    /// lockstep: at the first row starting at or after the source's split byte, when it has
    /// one and each half of a `wlen`-byte scratch holds a row plus the slack. The second half
    /// then starts at (or less than a row after) a point where decoding can start: it decodes
    /// nothing the whole band would not, and drops less than a row.
    fn pair_split(&self, arm: S::Arm, rows: &Range<usize>, wlen: usize) -> Option<usize> {
        if wlen / 2 < self.stride + S::SLACK {
            return None;
        }
        let (start, end) = (rows.start * self.stride, rows.end * self.stride);
        let boundary = self.source.pair_split(arm, start, end)?;
        let mid = boundary.div_ceil(self.stride);
        (rows.start < mid && mid < rows.end).then_some(mid)
    }

    /// `y = acts · Wᵀ` with f32 activations on the best arms, allocating scratch of about
    /// [`tile_bytes`].
    ///
    /// # Errors
    /// As [`matmul_scratch`](Self::matmul_scratch).
    #[cfg(feature = "std")]
    pub fn matmul(&self, x: &[f32], s: usize, y: &mut [f32]) -> Result<(), AdapterError> {
        self.matmul_with(crate::isa::best(), S::best_arm(), Acts::F32 { x, s }, y)
    }

    /// As [`matmul`](Self::matmul) on forced arms and either activation kind.
    ///
    /// # Errors
    /// As [`matmul_scratch`](Self::matmul_scratch).
    #[cfg(feature = "std")]
    pub fn matmul_with(
        &self,
        isa: Isa,
        arm: S::Arm,
        acts: Acts<'_>,
        y: &mut [f32],
    ) -> Result<(), AdapterError> {
        // Shapes before scratch: `S` then fits `y`, so the scratch (`t ≤ O` rows) does too.
        if let Err(e) = self.check_band(&acts, &(0..self.o), y) {
            y.fill(0.0);
            return Err(e);
        }
        let (mut wbuf, mut ybuf) = self.scratch(arm, &acts, 0..self.o);
        self.matmul_scratch(isa, arm, acts, y, &mut wbuf, &mut ybuf)
    }

    /// Rows `rows` of the product as a fresh `S × rows.len()` buffer (allocating scratch).
    ///
    /// # Errors
    /// As [`matmul_band`](Self::matmul_band).
    #[cfg(feature = "std")]
    pub fn band_with(
        &self,
        isa: Isa,
        arm: S::Arm,
        acts: Acts<'_>,
        rows: Range<usize>,
    ) -> Result<std::vec::Vec<f32>, AdapterError> {
        // The band first: nothing is allocated for rows outside the matrix.
        if rows.start > rows.end || rows.end > self.o {
            let (start, end, o) = (rows.start, rows.end, self.o);
            return Err(AdapterError::Band { start, end, o });
        }
        // The activations before anything sized by `S`: with `I ≥ 1`, `S ≤ x.len()`.
        acts.check(self.i)?;
        let overflow = AdapterError::Overflow { o: self.o, i: self.i };
        let len = acts.s().checked_mul(rows.len()).ok_or(overflow)?;
        // With `I = 0` nothing bounds `S`: an output too large to allocate is refused.
        let mut y = std::vec::Vec::new();
        y.try_reserve_exact(len).map_err(|_| overflow)?;
        y.resize(len, 0f32);
        let (mut wbuf, mut ybuf) = self.scratch(arm, &acts, rows.clone());
        self.matmul_band(isa, arm, acts, rows, &mut y, &mut wbuf, &mut ybuf)?;
        Ok(y)
    }

    /// Weight and output scratch lengths for band `rows` with `acts` (whose `S` the caller
    /// has checked against `x` or the outputs): tiles of about [`tile_bytes`], whole rows, one
    /// per half-band where the band will be split in two.
    pub fn scratch_lens(&self, arm: S::Arm, acts: &Acts<'_>, rows: Range<usize>) -> (usize, usize) {
        let n = rows.len();
        let tile_rows = (tile_bytes(acts) / self.stride.max(1)).clamp(1, n.max(1));
        let tile_len = self.scratch_len(tile_rows * self.stride + S::SLACK);
        let halves = if self.pair_split(arm, &rows, 2 * tile_len).is_some() { 2 } else { 1 };
        // At most `S · n` outputs (`tile_rows ≤ n`); nothing for an empty band.
        let ylen = if n == 0 { 0 } else { acts.s().max(1) * tile_rows };
        (halves * tile_len, ylen)
    }

    /// Fresh scratch of [`scratch_lens`](Self::scratch_lens).
    #[cfg(feature = "std")]
    fn scratch(
        &self,
        arm: S::Arm,
        acts: &Acts<'_>,
        rows: Range<usize>,
    ) -> (std::vec::Vec<u8>, std::vec::Vec<f32>) {
        let (w, y) = self.scratch_lens(arm, acts, rows);
        (std::vec![0u8; w], std::vec![0f32; y])
    }
}

/// Where a band's outputs go: the arm, the activations, the band (rows of `yband`) and the
/// rows per kernel call that the output scratch holds.
struct Out<'x> {
    isa: Isa,
    acts: Acts<'x>,
    band: Range<usize>,
    per_call: usize,
}

/// One band's (or half-band's) progress: its decoder, the rows still to multiply, and what its
/// weight scratch holds (`buf[head..fill]`: decoded, not yet multiplied bytes, `buf[fill]`
/// being byte `decoded_to` of the matrix; `skip` bytes before the band's first byte still to
/// drop).
struct Cursor<D> {
    dec: D,
    next_row: usize,
    rows_end: usize,
    end: usize,
    head: usize,
    fill: usize,
    skip: usize,
    decoded_to: usize,
}

impl<D: TileDecoder> Cursor<D> {
    /// Opens the source at or before row `rows.start`'s first byte.
    fn start<'w, S>(
        m: &'w FusedMatrix<'_, S>,
        arm: S::Arm,
        work: &'w mut S::Work,
        rows: Range<usize>,
    ) -> Result<Self, AdapterError>
    where
        S: TileSource<Decoder<'w> = D>,
    {
        let start = rows.start * m.stride;
        let dec = m.source.open(arm, work, start)?;
        let at = dec.position();
        debug_assert!(at <= start);
        Ok(Cursor {
            dec,
            next_row: rows.start,
            rows_end: rows.end,
            end: rows.end * m.stride,
            head: 0,
            fill: 0,
            skip: start - at,
            decoded_to: at,
        })
    }

    /// Every row multiplied.
    fn done(&self) -> bool {
        self.next_row >= self.rows_end
    }

    /// Moves the partial row left over to the front of `buf` and returns where in `buf` the
    /// next piece goes (as long as the decoder says, for the room left and the bytes the band
    /// still needs).
    fn piece(&mut self, buf: &mut [u8]) -> Result<Range<usize>, AdapterError> {
        if self.head > 0 {
            buf.copy_within(self.head..self.fill, 0);
            self.fill -= self.head;
            self.head = 0;
        }
        let take = self.dec.piece(buf.len() - self.fill, self.end - self.decoded_to)?;
        Ok(self.fill..self.fill + take)
    }

    /// Records a decoded piece of `take` bytes, dropping what lies before the band.
    fn decoded(&mut self, take: usize) {
        self.fill += take;
        self.decoded_to += take;
        let drop = self.skip.min(self.fill - self.head);
        self.head += drop;
        self.skip -= drop;
    }

    /// Every whole row now in `buf`, in kernel calls of at most `out.per_call` rows.
    fn multiply<S: TileSource>(
        &mut self,
        m: &FusedMatrix<'_, S>,
        out: &Out<'_>,
        buf: &[u8],
        ybuf: &mut [f32],
        yband: &mut [f32],
    ) -> Result<(), AdapterError> {
        let stride = m.stride;
        let mut whole = ((self.fill - self.head) / stride).min(self.rows_end - self.next_row);
        while whole > 0 {
            let k = whole.min(out.per_call);
            let tile = &buf[self.head..self.head + k * stride];
            let r = self.next_row..self.next_row + k;
            m.multiply(out.isa, out.acts, tile, r, out.band.clone(), ybuf, yband)?;
            self.head += k * stride;
            self.next_row += k;
            whole -= k;
        }
        Ok(())
    }

    /// Decodes and multiplies piece by piece until every row is done.
    fn run<S: TileSource>(
        &mut self,
        m: &FusedMatrix<'_, S>,
        out: &Out<'_>,
        buf: &mut [u8],
        ybuf: &mut [f32],
        yband: &mut [f32],
    ) -> Result<(), AdapterError> {
        while !self.done() {
            let r = self.piece(buf)?;
            let take = r.len();
            self.dec.decode(&mut buf[r])?;
            self.decoded(take);
            self.multiply(m, out, buf, ybuf, yband)?;
        }
        Ok(())
    }

    /// After the band's last row: if it was the matrix's last, the seals not checked yet.
    fn end<S: TileSource>(&self, m: &FusedMatrix<'_, S>) -> Result<(), AdapterError> {
        if self.rows_end == m.o { self.dec.finish() } else { Ok(()) }
    }
}
