//! The incremental decoder: one blob decoded in caller-sized pieces, so a consumer can take
//! the output a tile at a time (the decode-then-matmul adapter keeps each tile in L1/L2 and
//! never materialises the whole tensor).
//!
//! [`Decoder::new`] runs the header stage once (every framing refusal of `docs/cfs1.md` §5.1
//! except `E_CAPACITY`, which has no meaning without a whole-output buffer) and builds the
//! decode table in a table the caller owns, so the decoder itself is a few words and the
//! crate stays allocation-free. Each [`Decoder::decode_next`] call continues the two rANS
//! states where the previous one stopped, with the same fast blocks and checked tail as
//! [`decode_into`](crate::decode_into); the piece that produces the last byte also
//! checks the seal. Because the fast and the checked step compute the same function, the
//! bytes and the error of a blob never depend on how the output is cut into pieces (a
//! property test compares every split with `decode_into`).
//!
//! Integrity is only known at the end: a blob whose seal fails has already handed out its
//! earlier pieces. A caller that must not act on unsealed data (the adapter) treats an error
//! from *any* call, including the last, as "discard everything" — the adapter zero-fills its
//! whole result. Within one call the decoder itself zeroes the bytes it wrote before an error,
//! and after an error it is poisoned: later calls return the same error and write nothing.

use crate::decode::{State, decode_run};
use crate::error::DecodeError;
use crate::header::{self, HEADER_LEN, Header, MIN_RANS_LEN, Mode};
use crate::model::DecodeTable;

/// A CFS1 blob being decoded piece by piece (see the module docs of `tetrad_fse::incremental`).
///
/// ```
/// use tetrad_fse::{encode_into, max_encoded_len, DecodeTable, Decoder};
///
/// let src: Vec<u8> = (0..5000u32).map(|i| [0x78u8, 0x87, 0x88, 0x98][(i * 7 % 4) as usize]).collect();
/// let mut blob = vec![0u8; max_encoded_len(src.len())];
/// let len = encode_into(&src, &mut blob).unwrap();
///
/// let mut table = DecodeTable::new();
/// let mut dec = Decoder::new(&mut table, &blob[..len]).unwrap();
/// let mut out = Vec::new();
/// let mut tile = [0u8; 768];
/// while !dec.is_finished() {
///     let n = dec.decode_next(&mut tile).unwrap(); // the last piece also checks the seal
///     out.extend_from_slice(&tile[..n]);
/// }
/// assert_eq!(out, src);
/// ```
#[derive(Debug)]
pub struct Decoder<'t, 'a> {
    table: &'t DecodeTable,
    blob: &'a [u8],
    header: Header,
    /// Output bytes produced so far.
    done: usize,
    state: State,
    /// The first error met; the decoder is poisoned once set.
    failed: Option<DecodeError>,
}

impl<'t, 'a> Decoder<'t, 'a> {
    /// Runs the header stage on `blob` and, for a mode-1 blob, fills `table` with its decode
    /// table (the table's previous contents do not matter).
    ///
    /// # Errors
    /// The first framing refusal, as [`Header::parse`] reports it.
    pub fn new(table: &'t mut DecodeTable, blob: &'a [u8]) -> Result<Self, DecodeError> {
        let parsed = header::parse(blob, None)?;
        if parsed.header.mode == Mode::Rans {
            table.rebuild(&parsed.freq);
        }
        let (xa, xb) = parsed.states;
        Ok(Self {
            table,
            blob,
            header: parsed.header,
            done: 0,
            state: State { p: 0, xa, xb },
            failed: None,
        })
    }

    /// The blob's header (mode and `rawlen`).
    #[must_use]
    pub const fn header(&self) -> Header {
        self.header
    }

    /// Output bytes produced so far.
    #[must_use]
    pub const fn position(&self) -> usize {
        self.done
    }

    /// Output bytes still to come (`rawlen − position`).
    #[must_use]
    pub const fn remaining(&self) -> usize {
        self.header.len() - self.done
    }

    /// True once every byte has been produced and the seal held.
    #[must_use]
    pub const fn is_finished(&self) -> bool {
        self.failed.is_none() && self.remaining() == 0
    }

    /// The error that poisoned the decoder, if any.
    #[must_use]
    pub const fn error(&self) -> Option<DecodeError> {
        self.failed
    }

    /// Decodes the next `min(out.len(), remaining())` bytes into the front of `out` and
    /// returns how many. The call that produces the last byte also checks the seal, so a
    /// successful return with [`remaining`](Self::remaining) `== 0` means the whole blob was
    /// valid. Returns `Ok(0)` once finished.
    ///
    /// # Errors
    /// A payload-stage refusal (`E_TRUNCATED`, `E_LEFTOVER`, `E_FINAL_STATE`): the bytes this
    /// call wrote are zeroed, and every later call returns the same error without writing.
    /// Bytes handed out by *earlier* calls were not sealed yet: discard them too.
    pub fn decode_next(&mut self, out: &mut [u8]) -> Result<usize, DecodeError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        let n = out.len().min(self.remaining());
        let out = &mut out[..n];
        let r = match self.header.mode {
            Mode::Raw => {
                // Header stage: a raw blob is exactly 9 + rawlen bytes.
                let at = HEADER_LEN + self.done;
                out.copy_from_slice(&self.blob[at..at + n]);
                Ok(())
            }
            Mode::Rans => {
                let payload = &self.blob[MIN_RANS_LEN..];
                decode_run(self.table, payload, out, self.done, &mut self.state).and_then(|()| {
                    if self.done + n == self.header.len() {
                        self.state.seal(payload.len())
                    } else {
                        Ok(())
                    }
                })
            }
        };
        match r {
            Ok(()) => {
                self.done += n;
                Ok(n)
            }
            Err(e) => {
                out.fill(0);
                self.failed = Some(e);
                Err(e)
            }
        }
    }
}
