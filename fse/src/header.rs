//! The CFS1 framing: magic, mode, `rawlen`, and (mode 1) the frequency table and the two
//! initial states. Parsing here is the decoder's header stage: it runs the framing checks in
//! the normative order and hands the payload stage a blob whose fixed-size parts are known to
//! be present and sane, so that stage only has renormalisation bytes left to worry about.

use crate::error::DecodeError;

/// ASCII `CFS1`, the first four bytes of every blob.
pub const MAGIC: [u8; 4] = *b"CFS1";
/// Bytes of the common header: magic, mode, `rawlen`.
pub const HEADER_LEN: usize = 9;
/// Bytes of header plus the sixteen u16 frequencies (where a mode-1 payload starts).
pub const TABLE_END: usize = HEADER_LEN + 32;
/// Smallest mode-1 blob: header, table and the two u32 initial states.
pub const MIN_RANS_LEN: usize = TABLE_END + 8;

/// How the payload of a blob is coded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Mode {
    /// Mode 0: the input bytes verbatim.
    Raw,
    /// Mode 1: two interleaved nibble rANS states over a 4096-slot table.
    Rans,
}

impl Mode {
    /// The mode byte written at offset 4.
    #[must_use]
    pub const fn byte(self) -> u8 {
        match self {
            Self::Raw => 0,
            Self::Rans => 1,
        }
    }
}

/// What the header of a blob says, read without decoding the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Header {
    /// Raw or rANS.
    pub mode: Mode,
    /// Number of bytes the blob decodes to.
    pub rawlen: u32,
}

impl Header {
    /// Reads the header of `blob` and runs every framing check that needs no output buffer:
    /// `E_SHORT`, `E_MAGIC`, `E_RAW_LENGTH`, `E_MODE`, `E_EMPTY_RANS`, `E_SHORT_RANS`,
    /// `E_FREQ_SUM` and `E_STATE_RANGE`, in that order. It does not look at the payload, so a
    /// blob it accepts can still be refused by `decode_into` with `E_CAPACITY` (the only
    /// header-stage check that needs the caller's buffer) or a payload-stage refusal.
    ///
    /// # Errors
    /// The first framing refusal, as above.
    pub fn parse(blob: &[u8]) -> Result<Self, DecodeError> {
        parse(blob, None).map(|p| p.header)
    }

    /// [`rawlen`](Self::rawlen) as a `usize`.
    #[must_use]
    pub const fn len(&self) -> usize {
        self.rawlen as usize
    }

    /// True when the blob decodes to nothing.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.rawlen == 0
    }
}

/// A header that passed every header-stage check.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Parsed {
    pub(crate) header: Header,
    /// Mode 1 only (zeros for mode 0): the table, sum checked.
    pub(crate) freq: [u16; 16],
    /// Mode 1 only: initial states A and B, both `>= L`.
    pub(crate) states: (u32, u32),
}

pub(crate) fn read_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The header stage in the normative order (`docs/cfs1.md` §5.1); `capacity` is `None` for
/// [`Header::parse`], which skips only the `E_CAPACITY` check.
pub(crate) fn parse(blob: &[u8], capacity: Option<usize>) -> Result<Parsed, DecodeError> {
    let len = blob.len();
    if len < HEADER_LEN {
        return Err(DecodeError::Short { len });
    }
    let found = [blob[0], blob[1], blob[2], blob[3]];
    if found != MAGIC {
        return Err(DecodeError::Magic { found });
    }
    let mode = blob[4];
    let rawlen = read_u32(blob, 5);
    if let Some(capacity) = capacity {
        // rawlen < 2^32 always fits a u64; a usize capacity always fits a u64 too.
        if u64::from(rawlen) > capacity as u64 {
            return Err(DecodeError::Capacity { rawlen, capacity });
        }
    }
    let mut parsed =
        Parsed { header: Header { mode: Mode::Raw, rawlen }, freq: [0; 16], states: (0, 0) };
    match mode {
        0 => {
            let expected = HEADER_LEN as u64 + u64::from(rawlen);
            if len as u64 != expected {
                return Err(DecodeError::RawLength { len, expected });
            }
            Ok(parsed)
        }
        1 => {
            if rawlen == 0 {
                return Err(DecodeError::EmptyRans);
            }
            if len < MIN_RANS_LEN {
                return Err(DecodeError::ShortRans { len });
            }
            let mut sum = 0u32;
            for (i, f) in parsed.freq.iter_mut().enumerate() {
                let at = HEADER_LEN + 2 * i;
                *f = u16::from_le_bytes([blob[at], blob[at + 1]]);
                sum += u32::from(*f);
            }
            if sum != crate::M {
                return Err(DecodeError::FreqSum { sum });
            }
            let a = read_u32(blob, TABLE_END);
            let b = read_u32(blob, TABLE_END + 4);
            if a < crate::L {
                return Err(DecodeError::StateRange { which: 'A', state: a });
            }
            if b < crate::L {
                return Err(DecodeError::StateRange { which: 'B', state: b });
            }
            parsed.header.mode = Mode::Rans;
            parsed.states = (a, b);
            Ok(parsed)
        }
        mode => Err(DecodeError::Mode { mode }),
    }
}
