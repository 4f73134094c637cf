//! Decode-then-matmul over a CFS1 blob of int4-row bytes: [`Cfs1Matrix`].
//!
//! The `cfse_pack` container (CFS1) stores every tensor as one blob: two rANS states over one
//! sequential byte stream, with raw fallback. An int4-row weight `W[O, I]` becomes one blob of
//! `O · ceil(I/2)` bytes. A [`Cfs1Matrix`] is that blob (borrowed), checked once — header stage,
//! `rawlen == O · ceil(I/2)`, `O` scales — and then multiplied without ever materialising the
//! dense matrix: [`tetrad_fse::Decoder`] decodes the next tile of whole rows (about
//! [`TILE_BYTES`](super::TILE_BYTES), so it stays in L1/L2) and the tile goes straight to the
//! int4-row kernel, exactly as for [`Rans256Matrix`](super::Rans256Matrix).
//!
//! Exactness: each tile is the kernel's input for rows `r0..r1` of the dense matrix, with the
//! same activations and arm, so `y` is bit-identical to dense int4-row matmul on the decoded
//! bytes (tested per arm).
//!
//! Integrity: the blob's seal is only known when its last byte is decoded, i.e. with the last
//! tile; a truncated or damaged payload may fail earlier. On any error `y` is zero-filled
//! before returning, so a corrupted blob never leaves products behind (raw-mode blobs carry no
//! integrity check at all — the format's, not the adapter's, limit).
//!
//! Threads: a CFS1 blob is one serial stream, so rows cannot be split across threads without
//! decoding everything before them; the `tetrad` crate pipelines decode (one thread) and
//! multiply (another) instead, as for records.

use core::ops::Range;

use tetrad_fse::{DecodeTable, Decoder, Header};

use super::{Acts, AdapterError, Int4Rows, multiply_rows};
use crate::isa::Isa;
use crate::kernels::KernelError;

/// A CFS1 blob viewed as an int4-row weight matrix `W[O, I]` with per-row scales.
#[derive(Debug, Clone, Copy)]
pub struct Cfs1Matrix<'a> {
    blob: &'a [u8],
    header: Header,
    scales: &'a [f32],
    o: usize,
    i: usize,
    stride: usize,
}

impl<'a> Cfs1Matrix<'a> {
    /// Checks `blob` as the `[o, i]` int4-row matrix with per-row `scales`: the blob's header
    /// stage (every framing refusal of the CFS1 decoder), `rawlen == o · ceil(i/2)`
    /// (`E_RAWLEN_MISMATCH`) and `scales.len() == o` (`E_SCALE_COUNT`).
    ///
    /// # Errors
    /// The first failed check, as above.
    pub fn new(
        blob: &'a [u8],
        scales: &'a [f32],
        o: usize,
        i: usize,
    ) -> Result<Self, AdapterError> {
        let header = Header::parse(blob)?;
        let stride = i.div_ceil(2);
        let expected =
            (o as u64).checked_mul(stride as u64).ok_or(AdapterError::Overflow { o, i })?;
        if u64::from(header.rawlen) != expected {
            return Err(AdapterError::RawLen { got: header.rawlen, expected, o, i });
        }
        if scales.len() != o {
            return Err(AdapterError::ScaleCount { got: scales.len(), expected: o });
        }
        Ok(Self { blob, header, scales, o, i, stride })
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

    /// Packed int4 bytes the blob decodes to, `O · ceil(I/2)` (its `rawlen`).
    pub const fn dense_len(&self) -> usize {
        self.header.len()
    }

    /// The blob's header (mode: raw or rANS).
    pub const fn header(&self) -> Header {
        self.header
    }

    /// The per-row scales.
    pub const fn scales(&self) -> &'a [f32] {
        self.scales
    }

    /// Rows per tile for a tile budget of `bytes` (at least 1, at most `O`).
    pub const fn tile_rows(&self, bytes: usize) -> usize {
        let r = bytes / if self.stride == 0 { 1 } else { self.stride };
        if r == 0 {
            1
        } else if r > self.o {
            self.o
        } else {
            r
        }
    }

    /// A fresh incremental decoder over the blob, its table built in `table`.
    ///
    /// # Errors
    /// None in practice (the header was checked by [`new`](Self::new)); kept fallible so a
    /// caller never unwraps.
    pub fn decoder<'t>(&self, table: &'t mut DecodeTable) -> Result<Decoder<'t, 'a>, AdapterError> {
        Ok(Decoder::new(table, self.blob)?)
    }

    /// Decodes the whole matrix into `out` (exactly [`dense_len`](Self::dense_len) bytes),
    /// checked (seal included). On a payload error `out` is zero-filled.
    ///
    /// # Errors
    /// `E_LENGTH` for a wrong-sized `out`; the decoder's payload refusals.
    pub fn decode_into(&self, out: &mut [u8]) -> Result<(), AdapterError> {
        if out.len() != self.dense_len() {
            return Err(AdapterError::Kernel(KernelError::Length {
                what: "out",
                expected: self.dense_len(),
                got: out.len(),
            }));
        }
        tetrad_fse::decode_into(self.blob, out)?;
        Ok(())
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
        multiply_rows(isa, acts, self.scales, self.o, self.i, tile, rows, ytile, y)
    }

    /// `y = acts · Wᵀ` (`y` is `S × O`) on kernel arm `isa`, decoding tile by tile into `wbuf`
    /// (at least one row) with `ybuf` (`S` floats per tile row) as the kernel's output and
    /// `table` as the decoder's table — no allocation. On error `y` is zero-filled.
    ///
    /// # Errors
    /// `y` or the scratch buffers of the wrong size, the kernel's refusals, and the decoder's
    /// payload refusals (`E_TRUNCATED`, `E_LEFTOVER`, `E_FINAL_STATE`).
    pub fn matmul_scratch(
        &self,
        isa: Isa,
        acts: Acts<'_>,
        y: &mut [f32],
        wbuf: &mut [u8],
        ybuf: &mut [f32],
        table: &mut DecodeTable,
    ) -> Result<(), AdapterError> {
        let r = self.matmul_tiles(isa, acts, y, wbuf, ybuf, table);
        if r.is_err() {
            y.fill(0.0);
        }
        r
    }

    fn matmul_tiles(
        &self,
        isa: Isa,
        acts: Acts<'_>,
        y: &mut [f32],
        wbuf: &mut [u8],
        ybuf: &mut [f32],
        table: &mut DecodeTable,
    ) -> Result<(), AdapterError> {
        let mut dec = self.decoder(table)?;
        let geometry = Int4Rows { scales: self.scales, o: self.o, i: self.i, stride: self.stride };
        geometry.run_tiles(isa, acts, y, wbuf, ybuf, |tile| {
            dec.decode_next(tile)?;
            Ok(())
        })?;
        // rawlen == O · stride (checked by `new`) and the tiles cover O rows, so the last
        // `decode_next` produced the last byte and checked the seal.
        debug_assert!(dec.is_finished());
        Ok(())
    }

    /// [`matmul_scratch`](Self::matmul_scratch) with f32 activations on the best kernel arm,
    /// allocating tile buffers of about [`tile_bytes`](super::tile_bytes) and the table.
    ///
    /// # Errors
    /// As [`matmul_scratch`](Self::matmul_scratch).
    #[cfg(feature = "std")]
    pub fn matmul(&self, x: &[f32], s: usize, y: &mut [f32]) -> Result<(), AdapterError> {
        self.matmul_with(crate::isa::best(), Acts::F32 { x, s }, y)
    }

    /// As [`matmul`](Self::matmul) on a forced kernel arm and either activation kind.
    ///
    /// # Errors
    /// As [`matmul_scratch`](Self::matmul_scratch).
    #[cfg(feature = "std")]
    pub fn matmul_with(&self, isa: Isa, acts: Acts<'_>, y: &mut [f32]) -> Result<(), AdapterError> {
        // Shapes before scratch: `S` then fits `y`, so the scratch (`t ≤ O` rows) does too.
        if let Err(e) = super::check_shapes(&acts, self.o, self.i, y) {
            y.fill(0.0);
            return Err(e);
        }
        let t = self.tile_rows(super::tile_bytes(&acts));
        let mut wbuf = std::vec![0u8; t * self.stride];
        let mut ybuf = std::vec![0f32; t * acts.s()];
        let mut table = std::boxed::Box::new(DecodeTable::new());
        self.matmul_scratch(isa, acts, y, &mut wbuf, &mut ybuf, &mut table)
    }
}
