//! Decode-then-matmul over an `int4-rans256-g0` record: [`Rans256Matrix`](super::Rans256Matrix).
//!
//! The record's 256 streams are interleaved across every row, so its [`TileSource`],
//! [`RecordTiles`], decodes from byte 0 only: a row band decodes (and drops) every row before
//! it, and the `tetrad` crate pipelines decode and multiply instead of splitting rows. The
//! record's seals are known only once its last symbol is decoded, i.e. with the last tile;
//! the shared tile loop zero-fills the output on any error before returning it.

use tetrad_rans::{Arm, Decoder, Record, Table};

use super::{AdapterError, Rans256Matrix, TileDecoder, TileSource, int4_len};

/// An `int4-rans256-g0` record and its table: the [`TileSource`] of [`Rans256Matrix`]. The
/// record's 256 streams are interleaved across every row, so decoding starts at byte 0 only.
#[derive(Debug, Clone, Copy)]
pub struct RecordTiles<'a> {
    record: Record<'a>,
    table: &'a Table,
}

impl<'a> RecordTiles<'a> {
    /// A parsed record (`Record::parse` checked its framing) and the table it was coded with.
    pub const fn new(record: Record<'a>, table: &'a Table) -> Self {
        Self { record, table }
    }

    /// The parsed, checked record.
    pub const fn record(&self) -> &Record<'a> {
        &self.record
    }

    /// The record's checked decode table.
    pub const fn table(&self) -> &'a Table {
        self.table
    }

    /// A fresh checked decoder over the record.
    ///
    /// # Errors
    /// An unavailable arm (`E_PATH_UNAVAILABLE`).
    pub fn decoder(&self, arm: Arm) -> Result<Decoder<'a, 'a>, AdapterError> {
        Ok(Decoder::new(arm, self.table, self.record)?)
    }
}

/// A record decoder as a [`TileDecoder`].
#[derive(Debug)]
pub struct RecordDecoder<'a>(Decoder<'a, 'a>);

impl TileDecoder for RecordDecoder<'_> {
    fn position(&self) -> usize {
        // At most the matrix's length, which fits a `usize` (`int4_len`).
        usize::try_from(self.0.decoded_bytes()).unwrap_or(usize::MAX)
    }

    fn piece(&mut self, room: usize, want: usize) -> Result<usize, AdapterError> {
        Ok(room.min(want))
    }

    fn decode(&mut self, out: &mut [u8]) -> Result<(), AdapterError> {
        Ok(self.0.decode_next(out)?)
    }

    fn finish(&self) -> Result<(), AdapterError> {
        Ok(self.0.finish()?)
    }
}

impl<'a> TileSource for RecordTiles<'a> {
    type Arm = Arm;
    type Work = ();
    type Decoder<'w>
        = RecordDecoder<'a>
    where
        Self: 'w;

    const SLACK: usize = 0;

    fn best_arm() -> Arm {
        Arm::best()
    }

    fn check_len(&self, o: usize, i: usize) -> Result<(), AdapterError> {
        let (_, n) = int4_len(o, i)?;
        let expected = n.checked_mul(2).ok_or(AdapterError::Overflow { o, i })?;
        let got = self.record.n_symbols();
        if got != expected {
            return Err(AdapterError::NSymbols { got, expected, o, i });
        }
        Ok(())
    }

    fn split_bytes(&self) -> Option<usize> {
        None
    }

    fn open<'w>(
        &'w self,
        arm: Arm,
        _work: &'w mut (),
        _byte: usize,
    ) -> Result<RecordDecoder<'a>, AdapterError> {
        Ok(RecordDecoder(self.decoder(arm)?))
    }

    fn decode_into(&self, arm: Arm, out: &mut [u8]) -> Result<(), AdapterError> {
        tetrad_rans::decode_record_with(arm, self.table, &self.record, out)?;
        Ok(())
    }
}

impl<'a> Rans256Matrix<'a> {
    /// Parses and checks a record as the `[o, i]` int4-row matrix with per-row `scales`: the
    /// record's framing, `n_symbols == 2 · o · ceil(i/2)` (`E_COUNT_MISMATCH`) and
    /// `scales.len() == o` (`E_SCALE_COUNT`).
    ///
    /// # Errors
    /// The first failed check, as above.
    pub fn new(
        blob: &'a [u8],
        table: &'a Table,
        scales: &'a [f32],
        o: usize,
        i: usize,
    ) -> Result<Self, AdapterError> {
        let record = Record::parse(blob).map_err(AdapterError::Record)?;
        Self::from_source(RecordTiles::new(record, table), scales, o, i)
    }

    /// The record's checked decode table.
    pub const fn table(&self) -> &'a Table {
        self.source.table
    }

    /// The parsed, checked record.
    pub const fn record(&self) -> &Record<'a> {
        &self.source.record
    }

    /// A fresh checked decoder over the record.
    ///
    /// # Errors
    /// An unavailable arm (`E_PATH_UNAVAILABLE`).
    pub fn decoder(&self, arm: Arm) -> Result<Decoder<'a, 'a>, AdapterError> {
        self.source.decoder(arm)
    }
}
