//! Fused decode-and-multiply over an `int4-rans64-t1` blob of int4-row bytes:
//! [`Rans64Matrix`], the [`FusedMatrix`] over [`Rans64Tiles`].
//!
//! `int4-rans64-t1` (`tetrad_rans::rans64`) cuts a tensor's packed int4 bytes into independent
//! chunks (1 MiB by default), each with its own model and seal. A [`Rans64Matrix`] is such a
//! blob (borrowed), checked once — header and chunk index (`Blob::parse`), every chunk's
//! check (`Blob::verify_checks`, version 2), `n_bytes == O · ceil(I/2)`, `O` scales — and
//! multiplied without ever materialising the dense matrix, through the tile loop every
//! [`FusedMatrix`] shares: [`ChunkDecoder::decode_next`] decodes the next piece of the current chunk (a multiple of 64
//! bytes, or the rest of the chunk) into a scratch buffer of about
//! [`TILE_BYTES`](crate::adapter::TILE_BYTES), every whole row in it goes straight to the
//! int4-row kernel, and the partial row at the end is moved to the front for the next piece.
//! Decoded weights stay in L1/L2; rows may straddle chunk boundaries.
//!
//! Row bands: because chunks are independent, rows `r0..r1` can be multiplied alone
//! ([`FusedMatrix::matmul_band`]): decoding starts at the chunk holding row `r0`'s first
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
//! products behind. Errors are [`AdapterError`]s (the blob's own as [`AdapterError::Blob`]).

use tetrad_rans::rans64::{self, Arm, Blob, ChunkDecoder};

use crate::adapter::{AdapterError, FusedMatrix, TileDecoder, TileSource};

/// Bytes the weight scratch needs beyond one row: the largest partial piece a decode may
/// leave behind the last whole row is below one row, and a piece is a multiple of 64 bytes.
pub const SCRATCH_SLACK: usize = rans64::LANES;

/// An `int4-rans64-t1` blob viewed as an int4-row weight matrix `W[O, I]` with per-row scales.
pub type Rans64Matrix<'a> = FusedMatrix<'a, Rans64Tiles<'a>>;

/// A parsed `int4-rans64-t1` blob whose chunk checks were verified: the [`TileSource`] of
/// [`Rans64Matrix`]. Decoding can start at any chunk's first byte.
#[derive(Debug, Clone, Copy)]
pub struct Rans64Tiles<'a> {
    blob: Blob<'a>,
}

impl<'a> Rans64Tiles<'a> {
    /// A parsed blob, its chunk checks verified here unless they already were
    /// (`Blob::verify_checks`): `E_CHECKSUM` for a damaged chunk (version 2).
    ///
    /// # Errors
    /// As above.
    pub fn new(blob: Blob<'a>) -> Result<Self, AdapterError> {
        Ok(Self { blob: blob.verify_checks()? })
    }

    /// The parsed blob.
    pub const fn blob(&self) -> &Blob<'a> {
        &self.blob
    }
}

/// A chunk-by-chunk decoder from some chunk on, as a [`TileDecoder`]: pieces are multiples
/// of 64 bytes or a chunk's rest; the next chunk is opened when one is spent.
#[derive(Debug)]
pub struct Rans64Decoder<'a> {
    blob: Blob<'a>,
    arm: Arm,
    chunk: usize,
    dec: ChunkDecoder<'a>,
    position: usize,
}

impl TileDecoder for Rans64Decoder<'_> {
    fn position(&self) -> usize {
        self.position
    }

    fn piece(&mut self, room: usize, want: usize) -> Result<usize, AdapterError> {
        if self.dec.remaining() == 0 {
            self.chunk += 1;
            self.dec = ChunkDecoder::new_with(self.blob.chunk(self.chunk)?, self.arm)?;
        }
        let rem = self.dec.remaining();
        let space = room.min(want.next_multiple_of(rans64::LANES));
        Ok(if rem <= space { rem } else { space / rans64::LANES * rans64::LANES })
    }

    fn decode(&mut self, out: &mut [u8]) -> Result<(), AdapterError> {
        self.dec.decode_next(out)?;
        self.position += out.len();
        Ok(())
    }

    fn finish(&self) -> Result<(), AdapterError> {
        // Every chunk's seal was checked by the piece that reached its end; the band that
        // reaches the last row decodes the last chunk to its end.
        debug_assert_eq!(self.dec.remaining(), 0);
        Ok(())
    }
}

impl<'a> TileSource for Rans64Tiles<'a> {
    type Arm = Arm;
    type Work = ();
    type Decoder<'w>
        = Rans64Decoder<'a>
    where
        Self: 'w;

    const SLACK: usize = SCRATCH_SLACK;

    fn best_arm() -> Arm {
        Arm::best()
    }

    fn check_len(&self, o: usize, i: usize) -> Result<(), AdapterError> {
        let (_, expected) = crate::adapter::int4_len(o, i)?;
        let got = self.blob.n_bytes();
        if got != expected {
            return Err(AdapterError::ByteCount { got, expected, o, i });
        }
        Ok(())
    }

    fn split_bytes(&self) -> Option<usize> {
        Some(1usize << self.blob.chunk_shift())
    }

    fn open<'w>(
        &'w self,
        arm: Arm,
        _work: &'w mut (),
        byte: usize,
    ) -> Result<Rans64Decoder<'a>, AdapterError> {
        let shift = u32::from(self.blob.chunk_shift());
        let chunk = byte >> shift;
        let dec = ChunkDecoder::new_with(self.blob.chunk(chunk)?, arm)?;
        Ok(Rans64Decoder { blob: self.blob, arm, chunk, dec, position: chunk << shift })
    }

    fn decode_into(&self, arm: Arm, out: &mut [u8]) -> Result<(), AdapterError> {
        rans64::decode_with(arm, self.blob.bytes(), out)?;
        Ok(())
    }

    /// One chunk decodes as four vector chains, too few to hide their latency on the AVX-512
    /// arms, which decode two chunks at once about 1.7× as fast: the chunk boundary nearest
    /// the band's middle byte, on an arm with a paired kernel.
    fn pair_split(&self, arm: Arm, start: usize, end: usize) -> Option<usize> {
        if !arm.has_paired_kernel() {
            return None;
        }
        let chunk = 1usize << self.blob.chunk_shift();
        let middle = start + (end - start) / 2;
        let below = middle / chunk * chunk;
        let nearest = if middle - below <= chunk / 2 { below } else { below + chunk };
        [nearest, below, below + chunk].into_iter().find(|&b| start < b && b < end)
    }

    fn decode_pair(
        a: &mut Rans64Decoder<'a>,
        out_a: &mut [u8],
        b: &mut Rans64Decoder<'a>,
        out_b: &mut [u8],
    ) -> (Result<(), AdapterError>, Result<(), AdapterError>) {
        let (got_a, got_b) = ChunkDecoder::decode_next_pair(&mut a.dec, out_a, &mut b.dec, out_b);
        if got_a.is_ok() {
            a.position += out_a.len();
        }
        if got_b.is_ok() {
            b.position += out_b.len();
        }
        (got_a.map_err(Into::into), got_b.map_err(Into::into))
    }
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
    ) -> Result<Self, AdapterError> {
        // The cheap checks first: the chunk checks are a pass over the blob.
        let unverified = Self::from_source(Rans64Tiles { blob: Blob::parse(blob)? }, scales, o, i)?;
        Self::from_source(Rans64Tiles::new(unverified.source.blob)?, scales, o, i)
    }

    /// The parsed blob.
    pub const fn blob(&self) -> &Blob<'a> {
        &self.source.blob
    }
}
