//! Decode-then-matmul over a CFS1 blob of int4-row bytes: [`Cfs1Matrix`].
//!
//! The `cfse_pack` container (CFS1) stores every tensor as one blob: two rANS states over one
//! sequential byte stream, with raw fallback. An int4-row weight `W[O, I]` becomes one blob of
//! `O · ceil(I/2)` bytes. A [`Cfs1Matrix`] is that blob (borrowed), checked once — header stage,
//! `rawlen == O · ceil(I/2)`, `O` scales — and then multiplied without ever materialising the
//! dense matrix: [`tetrad_fse::Decoder`] decodes the next tile of whole rows (about
//! [`TILE_BYTES`](super::TILE_BYTES), so it stays in L1/L2) and the tile goes straight to the
//! int4-row kernel, through the same tile loop as every [`FusedMatrix`].
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
//! Threads: a CFS1 blob is one serial stream, so a row band decodes every row before it; the
//! `tetrad` crate pipelines decode (one thread) and multiply (another) instead, as for
//! records. The decoder's table (16 KiB, [`DecodeTable`]) is the source's
//! [`Work`](super::TileSource::Work): built per multiply, in memory the caller owns.

use tetrad_fse::{DecodeTable, Decoder, Header};

use super::{AdapterError, FusedMatrix, TileDecoder, TileSource};
use crate::kernels::KernelError;

/// A CFS1 blob viewed as an int4-row weight matrix `W[O, I]` with per-row scales.
pub type Cfs1Matrix<'a> = FusedMatrix<'a, Cfs1Tiles<'a>>;

/// A checked CFS1 blob: the [`TileSource`] of [`Cfs1Matrix`]. One serial stream, so decoding
/// starts at byte 0 only; one decoder, so its arm is `()`.
#[derive(Debug, Clone, Copy)]
pub struct Cfs1Tiles<'a> {
    blob: &'a [u8],
    header: Header,
}

impl<'a> Cfs1Tiles<'a> {
    /// Runs the header stage on `blob` (every framing refusal of the CFS1 decoder).
    ///
    /// # Errors
    /// As above.
    pub fn parse(blob: &'a [u8]) -> Result<Self, AdapterError> {
        Ok(Self { blob, header: Header::parse(blob)? })
    }

    /// The blob's header (mode: raw or rANS).
    pub const fn header(&self) -> Header {
        self.header
    }

    /// The coded bytes.
    pub const fn blob(&self) -> &'a [u8] {
        self.blob
    }
}

/// A CFS1 decoder as a [`TileDecoder`].
#[derive(Debug)]
pub struct Cfs1Decoder<'w>(Decoder<'w, 'w>);

impl TileDecoder for Cfs1Decoder<'_> {
    fn position(&self) -> usize {
        self.0.position()
    }

    fn piece(&mut self, room: usize, want: usize) -> Result<usize, AdapterError> {
        Ok(room.min(want))
    }

    fn decode(&mut self, out: &mut [u8]) -> Result<(), AdapterError> {
        self.0.decode_next(out)?;
        Ok(())
    }

    fn finish(&self) -> Result<(), AdapterError> {
        // The last `decode` produced the last byte (rawlen == O · stride, checked when the
        // matrix was built) and checked the seal.
        debug_assert!(self.0.is_finished());
        Ok(())
    }
}

impl<'a> TileSource for Cfs1Tiles<'a> {
    type Arm = ();
    type Work = DecodeTable;
    type Decoder<'w>
        = Cfs1Decoder<'w>
    where
        Self: 'w;

    const SLACK: usize = 0;

    fn best_arm() {}

    fn check_len(&self, o: usize, i: usize) -> Result<(), AdapterError> {
        let (_, expected) = super::int4_len(o, i)?;
        let got = self.header.rawlen;
        if u64::from(got) != expected {
            return Err(AdapterError::RawLen { got, expected, o, i });
        }
        Ok(())
    }

    fn split_bytes(&self) -> Option<usize> {
        None
    }

    fn open<'w>(
        &'w self,
        _arm: (),
        work: &'w mut DecodeTable,
        _byte: usize,
    ) -> Result<Cfs1Decoder<'w>, AdapterError> {
        Ok(Cfs1Decoder(Decoder::new(work, self.blob)?))
    }

    fn decode_into(&self, _arm: (), out: &mut [u8]) -> Result<(), AdapterError> {
        if out.len() != self.header.len() {
            return Err(AdapterError::Kernel(KernelError::Length {
                what: "out",
                expected: self.header.len(),
                got: out.len(),
            }));
        }
        tetrad_fse::decode_into(self.blob, out)?;
        Ok(())
    }
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
        Self::from_source(Cfs1Tiles::parse(blob)?, scales, o, i)
    }

    /// The blob's header (mode: raw or rANS).
    pub const fn header(&self) -> Header {
        self.source.header
    }
}
