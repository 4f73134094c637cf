//! Fused decode-and-multiply over an `int4-rans64-t1` blob of int4-row bytes:
//! [`Rans64Matrix`].
//!
//! `int4-rans64-t1` (`tetrad_rans::rans64`) cuts a tensor's packed int4 bytes into independent
//! chunks (1 MiB by default), each with its own model and seal. A [`Rans64Matrix`] is such a
//! blob (borrowed), checked once — header and chunk index (`Blob::parse`), every chunk's
//! check (`Blob::verify_checks`, version 2), `n_bytes == O · ceil(I/2)`, `O` scales — and
//! multiplied without ever materialising the dense matrix:
//! [`ChunkDecoder::decode_next`] decodes the next piece of the current chunk (a multiple of 64
//! bytes, or the rest of the chunk) into a scratch buffer of about
//! [`TILE_BYTES`](crate::adapter::TILE_BYTES), every whole row in it goes straight to the
//! int4-row kernel, and the partial row at the end is moved to the front for the next piece.
//! Decoded weights stay in L1/L2; rows may straddle chunk boundaries.
//!
//! Row bands: because chunks are independent, rows `r0..r1` can be multiplied alone
//! ([`Rans64Matrix::matmul_band`]): decoding starts at the chunk holding row `r0`'s first
//! byte (the bytes before it in that chunk are decoded and dropped) and stops once row
//! `r1 - 1` is complete. That is what lets the `tetrad` crate split a matmul across threads.
//!
//! Half-bands: one chunk decodes as four vector chains, too few to hide their latency on the
//! AVX-512 arms, which decode two chunks at once about 1.7× as fast. So on an arm with a
//! paired kernel (`Arm::has_paired_kernel`) and a scratch of two tiles, a band that crosses a
//! chunk boundary is cut at the first row starting at or after the boundary nearest its
//! middle, and the two half-bands advance in lockstep, each in its half of the scratch, their
//! pieces decoded together by `ChunkDecoder::decode_next_pair`. The second half starts at (or
//! less than a row after) a chunk's first byte, so no chunk is decoded that the whole band
//! would not decode, and errors still come out in chunk order (the second half's are held
//! until the first half has finished).
//!
//! Exactness: each row's outputs come from the int4-row kernel of the chosen arm over the
//! same bytes and activations as dense [`crate::kernels::matmul`] on the decoded matrix, so
//! `y` is bit-identical to it (tested per arm).
//!
//! Integrity: a damaged chunk (version 2) is refused with `E_CHECKSUM` when the matrix is
//! built, before anything is multiplied; the checks are verified there once, not on every
//! multiply (the borrowed bytes cannot change while the matrix lives), so a band opens a
//! chunk by parsing its head alone. A chunk's seal is checked by the call that decodes its
//! last byte. A full
//! multiply (band `0..O`) decodes every chunk to its end, so every seal is checked; a band
//! that ends inside a chunk does not see that chunk's seal, but the band holding the chunk's
//! last byte decodes the whole chunk, so a set of bands covering `0..O` checks every seal. On
//! any error the output is zero-filled before returning: a corrupted blob never leaves
//! products behind.

use core::ops::Range;

use tetrad_rans::rans64::{self, Arm, Blob, ChunkDecoder};

use crate::Format;
use crate::adapter::Acts;
use crate::isa::Isa;
use crate::kernels::{KernelError, Matrix, Scales, matmul_q8_rows_with, matmul_rows_with};

/// Bytes the weight scratch needs beyond one row: the largest partial piece a decode may
/// leave behind the last whole row is below one row, and a piece is a multiple of 64 bytes.
pub const SCRATCH_SLACK: usize = rans64::LANES;

/// Why an `int4-rans64-t1` matrix could not be built or multiplied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Rans64AdapterError {
    /// The blob was refused (header, index and chunk checks at construction; a chunk's head,
    /// body or seal while multiplying, after which the output was zero-filled).
    #[error("int4-rans64-t1: {0}")]
    Blob(rans64::Error),
    /// The blob decodes to a different number of bytes than `[O, I]` int4-row needs.
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
    /// The scratch buffers cannot hold one row plus a decode piece (or one row's outputs).
    #[error("scratch holds {got} bytes, at least {needed} needed")]
    Scratch {
        /// Minimum needed.
        needed: usize,
        /// Given.
        got: usize,
    },
    /// The kernel refused (shapes, or an unavailable arm).
    #[error("kernel: {0}")]
    Kernel(KernelError),
}

impl Rans64AdapterError {
    /// The refusal class (that of the underlying stage where there is one).
    pub const fn class(&self) -> &'static str {
        match self {
            Self::Blob(e) => blob_class(e),
            Self::ByteCount { .. } => "E_COUNT_MISMATCH",
            Self::ScaleCount { .. } => "E_SCALE_COUNT",
            Self::Overflow { .. } => "E_ADAPTER_OVERFLOW",
            Self::Band { .. } => "E_BAND",
            Self::Scratch { .. } => "E_SCRATCH",
            Self::Kernel(e) => e.class(),
        }
    }
}

/// `rans64::Error::class` is not `const`; this mirrors it for the `const` `class` above.
const fn blob_class(e: &rans64::Error) -> &'static str {
    match e {
        rans64::Error::Magic { .. } => "E_MAGIC",
        rans64::Error::Version { .. } => "E_VERSION",
        rans64::Error::ChunkShift { .. } => "E_CHUNK_SHIFT",
        rans64::Error::Reserved { .. } => "E_RESERVED",
        rans64::Error::TooLarge { .. } => "E_TOO_LARGE",
        rans64::Error::Truncated { .. } => "E_TRUNCATED",
        rans64::Error::Trailing { .. } => "E_TRAILING",
        rans64::Error::ChunkSize { .. } => "E_CHUNK_SIZE",
        rans64::Error::Checksum { .. } => "E_CHECKSUM",
        rans64::Error::Table { .. } => "E_TABLE",
        rans64::Error::WayLengths { .. } => "E_WAY_LENGTHS",
        rans64::Error::StateRange { .. } => "E_STATE_RANGE",
        rans64::Error::Overrun { .. } => "E_OVERRUN",
        rans64::Error::Leftover { .. } => "E_LEFTOVER",
        rans64::Error::FinalState { .. } => "E_FINAL_STATE",
        rans64::Error::OutputLength { .. } => "E_OUTPUT_LENGTH",
        rans64::Error::NoSuchChunk { .. } => "E_NO_SUCH_CHUNK",
        rans64::Error::Unavailable { .. } => "E_PATH_UNAVAILABLE",
        _ => "E_RANS64",
    }
}

impl From<rans64::Error> for Rans64AdapterError {
    fn from(e: rans64::Error) -> Self {
        Self::Blob(e)
    }
}

impl From<KernelError> for Rans64AdapterError {
    fn from(e: KernelError) -> Self {
        Self::Kernel(e)
    }
}

/// An `int4-rans64-t1` blob viewed as an int4-row weight matrix `W[O, I]` with per-row scales.
#[derive(Debug, Clone, Copy)]
pub struct Rans64Matrix<'a> {
    blob: Blob<'a>,
    scales: &'a [f32],
    o: usize,
    i: usize,
    stride: usize,
}

impl<'a> Rans64Matrix<'a> {
    /// Checks `blob` as the `[o, i]` int4-row matrix with per-row `scales`: the blob's header
    /// and chunk index (every refusal of `Blob::parse`), `n_bytes == o · ceil(i/2)`
    /// (`E_COUNT_MISMATCH`), `scales.len() == o` (`E_SCALE_COUNT`), then every chunk's check
    /// (`E_CHECKSUM`; one pass over the blob, version 2 only), which multiplies then do not
    /// repeat.
    ///
    /// # Errors
    /// The first failed check, as above.
    pub fn new(
        blob: &'a [u8],
        scales: &'a [f32],
        o: usize,
        i: usize,
    ) -> Result<Self, Rans64AdapterError> {
        let blob = Blob::parse(blob)?;
        let stride = i.div_ceil(2);
        let expected =
            (o as u64).checked_mul(stride as u64).ok_or(Rans64AdapterError::Overflow { o, i })?;
        if blob.n_bytes() != expected {
            return Err(Rans64AdapterError::ByteCount { got: blob.n_bytes(), expected, o, i });
        }
        if scales.len() != o {
            return Err(Rans64AdapterError::ScaleCount { got: scales.len(), expected: o });
        }
        let blob = blob.verify_checks()?;
        Ok(Self { blob, scales, o, i, stride })
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

    /// Packed int4 bytes the blob decodes to, `O · ceil(I/2)`.
    pub const fn dense_len(&self) -> usize {
        self.o * self.stride
    }

    /// The parsed blob.
    pub const fn blob(&self) -> &Blob<'a> {
        &self.blob
    }

    /// The per-row scales.
    pub const fn scales(&self) -> &'a [f32] {
        self.scales
    }

    /// Decodes the whole matrix into `out` (`O · ceil(I/2)` bytes) on a forced arm.
    ///
    /// # Errors
    /// The blob's refusal (or `E_PATH_UNAVAILABLE`).
    pub fn decode_into(&self, arm: Arm, out: &mut [u8]) -> Result<(), Rans64AdapterError> {
        rans64::decode_with(arm, self.blob.bytes(), out)?;
        Ok(())
    }

    /// Weight scratch bytes a tile budget of `bytes` turns into: at least one row plus
    /// [`SCRATCH_SLACK`].
    pub const fn scratch_len(&self, bytes: usize) -> usize {
        let min = self.stride + SCRATCH_SLACK;
        if bytes < min { min } else { bytes }
    }

    /// `y = acts · Wᵀ` (`y` is `S × O`), decoding piece by piece into `wbuf` (at least one row
    /// plus [`SCRATCH_SLACK`] bytes) and multiplying on arm `isa` (decode on `arm`); `ybuf`
    /// holds the kernel's outputs (at least `S` floats). On error `y` is zero-filled.
    ///
    /// # Errors
    /// Shapes, scratch sizes, the blob's refusals, the kernel's refusals.
    #[allow(clippy::too_many_arguments)] // the two scratch buffers are what makes it no_std
    pub fn matmul_scratch(
        &self,
        isa: Isa,
        arm: Arm,
        acts: Acts<'_>,
        y: &mut [f32],
        wbuf: &mut [u8],
        ybuf: &mut [f32],
    ) -> Result<(), Rans64AdapterError> {
        self.matmul_band(isa, arm, acts, 0..self.o, y, wbuf, ybuf)
    }

    /// Rows `rows` of `y = acts · Wᵀ` into `yband` (`S × rows.len()`, row-major by activation
    /// row: `yband[s · n + (o − rows.start)]`), decoding only from the chunk holding the band's
    /// first byte (see the module docs for which seals a band checks). On error `yband` is
    /// zero-filled.
    ///
    /// # Errors
    /// As [`matmul_scratch`](Self::matmul_scratch), and `E_BAND` for rows outside `0..O`.
    #[allow(clippy::too_many_arguments)] // the band and the two scratch buffers
    pub fn matmul_band(
        &self,
        isa: Isa,
        arm: Arm,
        acts: Acts<'_>,
        rows: Range<usize>,
        yband: &mut [f32],
        wbuf: &mut [u8],
        ybuf: &mut [f32],
    ) -> Result<(), Rans64AdapterError> {
        let r = self.band_inner(isa, arm, acts, rows, yband, wbuf, ybuf);
        if r.is_err() {
            yband.fill(0.0);
        }
        r
    }

    #[allow(clippy::too_many_arguments)]
    fn band_inner(
        &self,
        isa: Isa,
        arm: Arm,
        acts: Acts<'_>,
        rows: Range<usize>,
        yband: &mut [f32],
        wbuf: &mut [u8],
        ybuf: &mut [f32],
    ) -> Result<(), Rans64AdapterError> {
        let (o, i, stride) = (self.o, self.i, self.stride);
        if rows.start > rows.end || rows.end > o {
            return Err(Rans64AdapterError::Band { start: rows.start, end: rows.end, o });
        }
        acts.check(i)?;
        let s = acts.s();
        let n = rows.len();
        let want_y = s.checked_mul(n).ok_or(Rans64AdapterError::Overflow { o, i })?;
        if yband.len() != want_y {
            return Err(
                KernelError::Length { what: "y", expected: want_y, got: yband.len() }.into()
            );
        }
        if n == 0 {
            return Ok(());
        }
        if stride == 0 {
            // `I = 0`: empty rows, no chunks to decode; the kernel still gives each output
            // (its scale times an empty sum), exactly as dense matmul does.
            let per_call = ybuf.len().checked_div(s).unwrap_or(usize::MAX).max(1);
            if ybuf.len() < s {
                return Err(Rans64AdapterError::Scratch { needed: 4 * s, got: 4 * ybuf.len() });
            }
            let mut r0 = rows.start;
            while r0 < rows.end {
                let r1 = rows.end.min(r0.saturating_add(per_call));
                self.multiply(isa, acts, &[], r0..r1, &rows, ybuf, yband)?;
                r0 = r1;
            }
            return Ok(());
        }
        let need_w = stride + SCRATCH_SLACK;
        if wbuf.len() < need_w || ybuf.len() < s {
            return Err(Rans64AdapterError::Scratch {
                needed: need_w.max(4 * s),
                got: wbuf.len().min(4 * ybuf.len()),
            });
        }
        // Rows per kernel call that `ybuf` holds.
        let per_call = ybuf.len().checked_div(s).unwrap_or(usize::MAX).max(1);
        let out = Out { isa, acts, band: &rows, per_call };
        let Some(mid) = self.pair_split(arm, &rows, wbuf.len()) else {
            return Cursor::start(self, arm, rows.clone(), wbuf)?
                .run(self, arm, &out, wbuf, ybuf, yband);
        };
        // Two half-bands in lockstep, each in its half of the scratch, their common rounds
        // through the paired decode kernel. Errors in chunk order: the first half's chunks
        // all come before the second's, so an error of the second half is held until the
        // first half has finished cleanly.
        let (wa, wb) = wbuf.split_at_mut(wbuf.len() / 2);
        let mut a = Cursor::start(self, arm, rows.start..mid, wa)?;
        let mut b = Cursor::start(self, arm, mid..rows.end, wb);
        while !a.done() {
            let ra = a.piece(self, arm, wa)?;
            let rb = match &mut b {
                Ok(bc) if !bc.done() => match bc.piece(self, arm, wb) {
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
                    let (got_a, got_b) = ChunkDecoder::decode_next_pair(
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
                        Err(e) => b = Err(e.into()),
                    }
                }
                _ => a.dec.decode_next(&mut wa[ra.clone()])?,
            }
            a.decoded(ra.len());
            a.multiply(self, &out, wa, ybuf, yband)?;
        }
        b?.run(self, arm, &out, wb, ybuf, yband)
    }

    /// Where [`band_inner`](Self::band_inner) splits `rows` into two half-bands decoded in
    /// lockstep: at the first row starting at or after the chunk boundary nearest the band's
    /// middle byte, when `arm` has a paired kernel, the band crosses a chunk boundary and
    /// each half of a `wlen`-byte scratch holds a row plus [`SCRATCH_SLACK`]. The second half
    /// then starts at (or less than a row after) a chunk's first byte: it decodes no chunk
    /// the whole band would not, and drops less than a row.
    fn pair_split(&self, arm: Arm, rows: &Range<usize>, wlen: usize) -> Option<usize> {
        if !arm.has_paired_kernel() || wlen / 2 < self.stride + SCRATCH_SLACK {
            return None;
        }
        let chunk = 1usize << self.blob.chunk_shift();
        let (start, end) = (rows.start * self.stride, rows.end * self.stride);
        let middle = start + (end - start) / 2;
        let below = middle / chunk * chunk;
        let nearest = if middle - below <= chunk / 2 { below } else { below + chunk };
        let boundary =
            [nearest, below, below + chunk].into_iter().find(|&b| start < b && b < end)?;
        let mid = boundary.div_ceil(self.stride);
        (rows.start < mid && mid < rows.end).then_some(mid)
    }

    /// Rows `r` (decoded in `tile`) through the int4-row kernel into `ybuf`, then scattered
    /// into the band's outputs.
    #[allow(clippy::too_many_arguments)]
    fn multiply(
        &self,
        isa: Isa,
        acts: Acts<'_>,
        tile: &[u8],
        r: Range<usize>,
        band: &Range<usize>,
        ybuf: &mut [f32],
        yband: &mut [f32],
    ) -> Result<(), Rans64AdapterError> {
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

    /// [`matmul_scratch`](Self::matmul_scratch) with f32 activations on the best arms,
    /// allocating scratch of about [`tile_bytes`](crate::adapter::tile_bytes).
    ///
    /// # Errors
    /// As [`matmul_scratch`](Self::matmul_scratch).
    #[cfg(feature = "std")]
    pub fn matmul(&self, x: &[f32], s: usize, y: &mut [f32]) -> Result<(), Rans64AdapterError> {
        self.matmul_with(crate::isa::best(), Arm::best(), Acts::F32 { x, s }, y)
    }

    /// As [`matmul`](Self::matmul) on forced arms and either activation kind.
    ///
    /// # Errors
    /// As [`matmul_scratch`](Self::matmul_scratch).
    #[cfg(feature = "std")]
    pub fn matmul_with(
        &self,
        isa: Isa,
        arm: Arm,
        acts: Acts<'_>,
        y: &mut [f32],
    ) -> Result<(), Rans64AdapterError> {
        let rows = match self.band_with(isa, arm, acts, 0..self.o) {
            Ok(rows) => rows,
            Err(e) => {
                y.fill(0.0);
                return Err(e);
            }
        };
        if y.len() != rows.len() {
            y.fill(0.0);
            return Err(
                KernelError::Length { what: "y", expected: rows.len(), got: y.len() }.into()
            );
        }
        y.copy_from_slice(&rows);
        Ok(())
    }

    /// Rows `rows` of the product as a fresh `S × rows.len()` buffer (allocating scratch).
    ///
    /// # Errors
    /// As [`matmul_band`](Self::matmul_band).
    #[cfg(feature = "std")]
    pub fn band_with(
        &self,
        isa: Isa,
        arm: Arm,
        acts: Acts<'_>,
        rows: Range<usize>,
    ) -> Result<std::vec::Vec<f32>, Rans64AdapterError> {
        // The band first: nothing is allocated for rows outside the matrix.
        if rows.start > rows.end || rows.end > self.o {
            let (start, end, o) = (rows.start, rows.end, self.o);
            return Err(Rans64AdapterError::Band { start, end, o });
        }
        let s = acts.s();
        let n = rows.len();
        let tile = crate::adapter::tile_bytes(&acts);
        let tile_rows = (tile / self.stride.max(1)).clamp(1, n.max(1));
        // One tile per half-band where the band will be split in two (`band_inner`): the arm
        // decodes two chunks at once and the band crosses a chunk boundary.
        let tile_len = self.scratch_len(tile_rows * self.stride + SCRATCH_SLACK);
        let halves = if self.pair_split(arm, &rows, 2 * tile_len).is_some() { 2 } else { 1 };
        // The activations before anything sized by `S`: with `I ≥ 1`, `S ≤ x.len()`.
        acts.check(self.i)?;
        let overflow = Rans64AdapterError::Overflow { o: self.o, i: self.i };
        let len = s.checked_mul(n).ok_or(overflow)?;
        // With `I = 0` nothing bounds `S`: an output too large to allocate is refused.
        let mut y = std::vec::Vec::new();
        y.try_reserve_exact(len).map_err(|_| overflow)?;
        y.resize(len, 0f32);
        let mut wbuf = std::vec![0u8; halves * tile_len];
        // At most `len` (`tile_rows ≤ n`); nothing for an empty band.
        let mut ybuf = std::vec![0f32; if n == 0 { 0 } else { s.max(1) * tile_rows }];
        self.matmul_band(isa, arm, acts, rows, &mut y, &mut wbuf, &mut ybuf)?;
        Ok(y)
    }
}

/// Where a band's outputs go: the arm, the activations, the band (rows of `yband`) and the
/// rows per kernel call that the output scratch holds.
struct Out<'x, 'b> {
    isa: Isa,
    acts: Acts<'x>,
    band: &'b Range<usize>,
    per_call: usize,
}

/// One band's (or half-band's) progress through its chunks: the decoder of the current
/// chunk, the rows still to multiply, and what its weight scratch holds (`buf[head..fill]`:
/// decoded, not yet multiplied bytes, `buf[fill]` being absolute byte `decoded_to`).
struct Cursor<'a> {
    dec: ChunkDecoder<'a>,
    chunk: usize,
    next_row: usize,
    rows_end: usize,
    end: usize,
    head: usize,
    fill: usize,
    pending_lead: usize,
    decoded_to: usize,
}

impl<'a> Cursor<'a> {
    /// Opens the chunk holding row `rows.start`'s first byte and drops the chunk's bytes
    /// before it: whole 64-byte rounds decoded into `buf`, the rest (the lead) decoded with
    /// the first piece and skipped there.
    fn start(
        m: &Rans64Matrix<'a>,
        arm: Arm,
        rows: Range<usize>,
        buf: &mut [u8],
    ) -> Result<Self, Rans64AdapterError> {
        let shift = u32::from(m.blob.chunk_shift());
        let start = rows.start * m.stride;
        let chunk = start >> shift;
        let mut dec = ChunkDecoder::new_with(m.blob.chunk(chunk)?, arm)?;
        let mut skip = start - (chunk << shift);
        let lead = skip % rans64::LANES;
        skip -= lead;
        while skip > 0 {
            let take = skip.min(buf.len() / rans64::LANES * rans64::LANES);
            dec.decode_next(&mut buf[..take])?;
            skip -= take;
        }
        Ok(Cursor {
            dec,
            chunk,
            next_row: rows.start,
            rows_end: rows.end,
            end: rows.end * m.stride,
            head: 0,
            fill: 0,
            pending_lead: lead,
            decoded_to: start - lead,
        })
    }

    /// Every row multiplied.
    fn done(&self) -> bool {
        self.next_row >= self.rows_end
    }

    /// Moves the partial row left over to the front of `buf`, opens the next chunk if the
    /// current one is spent, and returns where in `buf` the next piece goes: a multiple of
    /// 64 bytes or the chunk's rest, no more than the band still needs (rounded up to 64).
    fn piece(
        &mut self,
        m: &Rans64Matrix<'a>,
        arm: Arm,
        buf: &mut [u8],
    ) -> Result<Range<usize>, Rans64AdapterError> {
        if self.head > 0 {
            buf.copy_within(self.head..self.fill, 0);
            self.fill -= self.head;
            self.head = 0;
        }
        if self.dec.remaining() == 0 {
            self.chunk += 1;
            self.dec = ChunkDecoder::new_with(m.blob.chunk(self.chunk)?, arm)?;
        }
        let rem = self.dec.remaining();
        let space = buf.len() - self.fill;
        let need = (self.end - self.decoded_to).next_multiple_of(rans64::LANES);
        let take = if rem <= space.min(need) {
            rem
        } else {
            space.min(need) / rans64::LANES * rans64::LANES
        };
        Ok(self.fill..self.fill + take)
    }

    /// Records a decoded piece of `take` bytes. The first piece is at least 64 bytes (or the
    /// chunk's rest, which extends past the band's first byte), so it covers the lead.
    fn decoded(&mut self, take: usize) {
        self.fill += take;
        self.decoded_to += take;
        self.head += self.pending_lead;
        self.pending_lead = 0;
    }

    /// Every whole row now in `buf`, in kernel calls of at most `out.per_call` rows.
    fn multiply(
        &mut self,
        m: &Rans64Matrix<'a>,
        out: &Out<'_, '_>,
        buf: &[u8],
        ybuf: &mut [f32],
        yband: &mut [f32],
    ) -> Result<(), Rans64AdapterError> {
        let stride = m.stride;
        let mut whole = ((self.fill - self.head) / stride).min(self.rows_end - self.next_row);
        while whole > 0 {
            let k = whole.min(out.per_call);
            let tile = &buf[self.head..self.head + k * stride];
            let r = self.next_row..self.next_row + k;
            m.multiply(out.isa, out.acts, tile, r, out.band, ybuf, yband)?;
            self.head += k * stride;
            self.next_row += k;
            whole -= k;
        }
        Ok(())
    }

    /// Decodes and multiplies piece by piece until every row is done.
    fn run(
        mut self,
        m: &Rans64Matrix<'a>,
        arm: Arm,
        out: &Out<'_, '_>,
        buf: &mut [u8],
        ybuf: &mut [f32],
        yband: &mut [f32],
    ) -> Result<(), Rans64AdapterError> {
        while !self.done() {
            let r = self.piece(m, arm, buf)?;
            let take = r.len();
            self.dec.decode_next(&mut buf[r])?;
            self.decoded(take);
            self.multiply(m, out, buf, ybuf, yband)?;
        }
        Ok(())
    }
}
