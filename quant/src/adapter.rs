//! Decode-then-matmul over compressed weights: multiply with an `int4-rans256-g0` record
//! without ever materialising the dense int4 matrix.
//!
//! A [`Rans256Matrix`] is a parsed record (borrowed bytes), its table, the per-row scales and
//! `[O, I]`; it exists only once every check passed (record framing, `n_symbols ==
//! 2 · O · ceil(I/2)`, `O` scales). [`Rans256Matrix::matmul`] walks the record with the
//! incremental checked decoder in tiles of whole rows (about [`TILE_BYTES`] of int4, or
//! [`BATCH_TILE_BYTES`] for f32 batches, so a tile is decoded into L1/L2 and consumed from there) and hands each tile to the int4-row kernel of
//! the chosen arm; the tile's outputs are scattered into `y`. Decoded weights never reach DRAM.
//!
//! Exactness: each output `y[s, o]` is the int4-row kernel's dot product of row `o`, computed
//! by the same arm over the same bytes in the same order as dense [`crate::kernels::matmul`] on
//! the decoded matrix, so the results are bit-identical to it (a test proves it per arm).
//!
//! Integrity: stream seals are only known once the whole record has been decoded, so on any
//! decode error `y` is zero-filled before the error is returned: a corrupted record never
//! leaves partial products behind.
//!
//! CFS1: [`Cfs1Matrix`] is the same adapter over a CFS1 blob of int4-row bytes (the
//! `cfse_pack` container codes every tensor as one blob): the blob is one sequential stream,
//! decoded piece by piece with [`tetrad_fse::Decoder`] into the same tiles and multiplied by the
//! same kernel call, so it has the same exactness and zero-fill contracts. See
//! `adapter_cfs1.rs`.
//!
//! Threads: the record's 256 streams are interleaved across every row, so a row band cannot be
//! decoded without decoding all bands before it. The `tetrad` crate's threaded matmul therefore
//! pipelines instead of splitting: one thread decodes tile `k + 1` while another multiplies
//! tile `k` (see `tetrad::adapter`).

use core::ops::Range;

use tetrad_rans::{Arm, DecodeError, Decoder, Record, RecordError, Table};

use crate::Format;
use crate::isa::Isa;

#[path = "adapter_cfs1.rs"]
mod cfs1;
use crate::kernels::{
    KernelError, Matrix, QuantizedActs, Scales, matmul_q8_rows_with, matmul_rows_with,
};
pub use cfs1::Cfs1Matrix;

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

/// Why a compressed matrix could not be built or multiplied.
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
    /// The CFS1 decoder refused the blob (header stage at construction, payload stage or
    /// seal while multiplying; the output was zero-filled).
    #[error("cfs1: {0}")]
    Cfs1(tetrad_fse::DecodeError),
    /// Not one scale per row.
    #[error("{got} scales for {expected} rows")]
    ScaleCount {
        /// Scales given.
        got: usize,
        /// `O`.
        expected: usize,
    },
    /// `[O, I]` overflows.
    #[error("shape [{o}, {i}] overflows")]
    Overflow {
        /// Rows.
        o: usize,
        /// Columns.
        i: usize,
    },
    /// The scratch buffers cannot hold one row (or its outputs).
    #[error("scratch holds {got} bytes, a tile needs at least {needed}")]
    Scratch {
        /// Minimum needed.
        needed: usize,
        /// Given.
        got: usize,
    },
    /// Checked decode refused a stream (the output was zero-filled).
    #[error("decode: {0}")]
    Decode(DecodeError),
    /// The kernel refused (shapes, or an unavailable arm).
    #[error("kernel: {0}")]
    Kernel(KernelError),
}

impl AdapterError {
    /// The refusal class (that of the underlying stage where there is one).
    pub const fn class(&self) -> &'static str {
        match self {
            Self::Record(e) => e.class(),
            Self::NSymbols { .. } => "E_COUNT_MISMATCH",
            Self::RawLen { .. } => "E_RAWLEN_MISMATCH",
            Self::Cfs1(e) => e.class(),
            Self::ScaleCount { .. } => "E_SCALE_COUNT",
            Self::Overflow { .. } => "E_ADAPTER_OVERFLOW",
            Self::Scratch { .. } => "E_SCRATCH",
            Self::Decode(e) => e.class(),
            Self::Kernel(e) => e.class(),
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

/// An `int4-rans256-g0` record viewed as an int4-row weight matrix `W[O, I]`.
#[derive(Debug, Clone, Copy)]
pub struct Rans256Matrix<'a> {
    record: Record<'a>,
    table: &'a Table,
    scales: &'a [f32],
    o: usize,
    i: usize,
    stride: usize,
}

impl<'a> Rans256Matrix<'a> {
    /// Parses and checks a record as the `[o, i]` int4-row matrix with per-row `scales`.
    pub fn new(
        blob: &'a [u8],
        table: &'a Table,
        scales: &'a [f32],
        o: usize,
        i: usize,
    ) -> Result<Self, AdapterError> {
        let record = Record::parse(blob).map_err(AdapterError::Record)?;
        let stride = i.div_ceil(2);
        let expected = (o as u64)
            .checked_mul(stride as u64)
            .and_then(|b| b.checked_mul(2))
            .ok_or(AdapterError::Overflow { o, i })?;
        if record.n_symbols() != expected {
            return Err(AdapterError::NSymbols { got: record.n_symbols(), expected, o, i });
        }
        if scales.len() != o {
            return Err(AdapterError::ScaleCount { got: scales.len(), expected: o });
        }
        Ok(Self { record, table, scales, o, i, stride })
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

    /// Packed int4 bytes the record decodes to, `O · ceil(I/2)`.
    pub const fn dense_len(&self) -> usize {
        self.o * self.stride
    }

    /// The per-row scales.
    pub const fn scales(&self) -> &'a [f32] {
        self.scales
    }

    /// The record's checked decode table.
    pub const fn table(&self) -> &'a Table {
        self.table
    }

    /// The parsed, checked record.
    pub const fn record(&self) -> &Record<'a> {
        &self.record
    }

    /// Rows per tile for a tile budget of `bytes`.
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

    /// A fresh checked decoder over the record.
    pub fn decoder(&self, arm: Arm) -> Result<Decoder<'a, 'a>, AdapterError> {
        Ok(Decoder::new(arm, self.table, self.record)?)
    }

    /// Decodes the whole matrix into `out` (`O · ceil(I/2)` bytes), checked.
    pub fn decode_into(&self, arm: Arm, out: &mut [u8]) -> Result<(), AdapterError> {
        tetrad_rans::decode_record_with(arm, self.table, &self.record, out)?;
        Ok(())
    }

    /// Multiplies the int4 rows `rows` held (already decoded) in `tile` into `y`
    /// (`S × O`), using `ytile` (at least `S · rows.len()` floats) as the kernel's output.
    pub fn multiply_tile(
        &self,
        isa: Isa,
        acts: Acts<'_>,
        tile: &[u8],
        rows: Range<usize>,
        ytile: &mut [f32],
        y: &mut [f32],
    ) -> Result<(), AdapterError> {
        multiply_rows(isa, acts, self.scales, self.o, self.i, tile, rows, ytile, y)
    }

    /// `y = acts · Wᵀ` (`y` is `S × O`), decoding tile by tile into `wbuf` and multiplying on
    /// arm `isa` (record decode on `arm`). `wbuf` must hold at least one row, `ybuf` `S` floats
    /// per row of a tile. On error `y` is zero-filled.
    #[allow(clippy::too_many_arguments)] // the two scratch buffers are what makes it no_std
    pub fn matmul_scratch(
        &self,
        isa: Isa,
        arm: Arm,
        acts: Acts<'_>,
        y: &mut [f32],
        wbuf: &mut [u8],
        ybuf: &mut [f32],
    ) -> Result<(), AdapterError> {
        let r = self.matmul_tiles(isa, arm, acts, y, wbuf, ybuf);
        if r.is_err() {
            y.fill(0.0);
        }
        r
    }

    fn matmul_tiles(
        &self,
        isa: Isa,
        arm: Arm,
        acts: Acts<'_>,
        y: &mut [f32],
        wbuf: &mut [u8],
        ybuf: &mut [f32],
    ) -> Result<(), AdapterError> {
        let mut dec = self.decoder(arm)?;
        let geometry = Int4Rows { scales: self.scales, o: self.o, i: self.i, stride: self.stride };
        geometry.run_tiles(isa, acts, y, wbuf, ybuf, |tile| Ok(dec.decode_next(tile)?))?;
        dec.finish()?;
        Ok(())
    }

    /// [`matmul_scratch`](Self::matmul_scratch) with f32 activations on the best arms,
    /// allocating tile buffers of about [`tile_bytes`].
    #[cfg(feature = "std")]
    pub fn matmul(&self, x: &[f32], s: usize, y: &mut [f32]) -> Result<(), AdapterError> {
        self.matmul_with(crate::isa::best(), Arm::best(), Acts::F32 { x, s }, y)
    }

    /// As [`matmul`](Self::matmul) on forced arms and either activation kind.
    #[cfg(feature = "std")]
    pub fn matmul_with(
        &self,
        isa: Isa,
        arm: Arm,
        acts: Acts<'_>,
        y: &mut [f32],
    ) -> Result<(), AdapterError> {
        // Shapes before scratch: `S` then fits `y`, so the scratch (`t ≤ O` rows) does too.
        if let Err(e) = check_shapes(&acts, self.o, self.i, y) {
            y.fill(0.0);
            return Err(e);
        }
        let t = self.tile_rows(tile_bytes(&acts));
        let mut wbuf = std::vec![0u8; t * self.stride];
        let mut ybuf = std::vec![0f32; t * acts.s()];
        self.matmul_scratch(isa, arm, acts, y, &mut wbuf, &mut ybuf)
    }
}

/// The int4-row side of a compressed matrix: per-row scales and `[O, I]` (`stride =
/// ceil(I/2)` bytes a row), and the tile loop every adapter shares.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Int4Rows<'a> {
    pub(crate) scales: &'a [f32],
    pub(crate) o: usize,
    pub(crate) i: usize,
    pub(crate) stride: usize,
}

impl Int4Rows<'_> {
    /// The tile loop: checks `y` (`S × O`) and the scratch sizes, then for each tile of whole
    /// rows (as many as `wbuf` and `ybuf` hold) has `decode_next` fill it with the next rows'
    /// int4 bytes and multiplies it on arm `isa`, in row order. Does not zero `y` on error and
    /// checks no seal after the last tile: the caller does both.
    pub(crate) fn run_tiles(
        &self,
        isa: Isa,
        acts: Acts<'_>,
        y: &mut [f32],
        wbuf: &mut [u8],
        ybuf: &mut [f32],
        mut decode_next: impl FnMut(&mut [u8]) -> Result<(), AdapterError>,
    ) -> Result<(), AdapterError> {
        check_shapes(&acts, self.o, self.i, y)?;
        let t = scratch_rows(self.o, self.stride, acts.s(), wbuf, ybuf)?;
        let mut r0 = 0;
        while r0 < self.o {
            let r1 = (r0 + t).min(self.o);
            let tile = &mut wbuf[..(r1 - r0) * self.stride];
            decode_next(tile)?;
            multiply_rows(isa, acts, self.scales, self.o, self.i, tile, r0..r1, ybuf, y)?;
            r0 = r1;
        }
        Ok(())
    }
}

/// Refuses activations that are not `S × I` and a `y` that is not `S × O`.
pub(crate) fn check_shapes(
    acts: &Acts<'_>,
    o: usize,
    i: usize,
    y: &[f32],
) -> Result<(), AdapterError> {
    acts.check(i)?;
    check_y(acts.s(), o, i, y)
}

/// Refuses a `y` that is not `S × O`.
fn check_y(s: usize, o: usize, i: usize, y: &[f32]) -> Result<(), AdapterError> {
    let want_y = s.checked_mul(o).ok_or(AdapterError::Overflow { o, i })?;
    if y.len() != want_y {
        return Err(AdapterError::Kernel(KernelError::Length {
            what: "y",
            expected: want_y,
            got: y.len(),
        }));
    }
    Ok(())
}

/// Rows per tile that both scratch buffers hold (`E_SCRATCH` if not even one).
fn scratch_rows(
    o: usize,
    stride: usize,
    s: usize,
    wbuf: &[u8],
    ybuf: &[f32],
) -> Result<usize, AdapterError> {
    // A zero-column matrix (`I = 0`) has empty rows: any scratch holds them.
    let by_w = wbuf.len().checked_div(stride).unwrap_or(usize::MAX);
    let by_y = ybuf.len().checked_div(s).unwrap_or(usize::MAX);
    let t = by_w.min(by_y).min(o);
    if t == 0 && o > 0 {
        return Err(AdapterError::Scratch {
            needed: stride.max(s * 4),
            got: wbuf.len().min(ybuf.len() * 4),
        });
    }
    Ok(t)
}

/// One tile through the int4-row kernel: rows `rows` of an `[o, i]` matrix, decoded into
/// `tile`, multiplied on arm `isa` into `ytile` (`S · rows.len()` floats used), then scattered
/// into `y` (`S × O`). The kernel sees exactly the rows and activations dense matmul would, so
/// each output is bit-identical to dense matmul on the same arm.
#[allow(clippy::too_many_arguments)] // the tile's geometry, spelled out
pub(crate) fn multiply_rows(
    isa: Isa,
    acts: Acts<'_>,
    scales: &[f32],
    o: usize,
    i: usize,
    tile: &[u8],
    rows: Range<usize>,
    ytile: &mut [f32],
    y: &mut [f32],
) -> Result<(), AdapterError> {
    let n = rows.len();
    let s = acts.s();
    let m = Matrix::new(Format::Int4Row, tile, Scales::F32(&scales[rows.clone()]), n, i, 0)?;
    let yt = &mut ytile[..s * n];
    match acts {
        Acts::F32 { x, s } => matmul_rows_with(isa, &m, x, s, 0..n, yt)?,
        Acts::Q8(q) => matmul_q8_rows_with(isa, &m, q, 0..n, yt)?,
    }
    for si in 0..s {
        y[si * o + rows.start..si * o + rows.end].copy_from_slice(&yt[si * n..(si + 1) * n]);
    }
    Ok(())
}
