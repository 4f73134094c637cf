//! Errors of the CFS1 codec: one enum per stage, one variant per refusal class.
//!
//! The decoder's refusals are the ones `docs/cfs1.md` §5 lists, in the order the decoder
//! checks them; each maps to exactly one variant and its spec class name is available as
//! [`DecodeError::class`]. The encoder can only refuse for reasons of the caller's making (an
//! output buffer below [`max_encoded_len`](crate::max_encoded_len), an input too long
//! for the 32-bit `rawlen` field): every input that fits is encodable, because raw mode
//! always is. Errors are small `Copy` values without allocation so they work in `no_std`.

use thiserror::Error;

/// Why a blob could not be decoded (`decode_into`, `Header::parse`).
///
/// Variants are listed in the order the decoder checks them; for a blob with several faults
/// the first one in this order is reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// `E_SHORT`: the blob is shorter than the 9-byte header.
    #[error("blob is {len} bytes, expected at least 9 (the header)")]
    Short {
        /// Length of the blob.
        len: usize,
    },
    /// `E_MAGIC`: the first four bytes are not ASCII `CFS1`.
    #[error("magic is {found:02x?}, expected \"CFS1\" (43 46 53 31)")]
    Magic {
        /// The four bytes found.
        found: [u8; 4],
    },
    /// `E_CAPACITY`: the header's `rawlen` is larger than the caller's output buffer.
    #[error("rawlen is {rawlen} bytes, expected at most the output capacity {capacity}")]
    Capacity {
        /// `rawlen` from the header.
        rawlen: u32,
        /// Length of the caller's output buffer.
        capacity: usize,
    },
    /// `E_RAW_LENGTH`: a mode-0 blob whose length is not exactly `9 + rawlen`.
    #[error("raw blob is {len} bytes, expected 9 + rawlen = {expected}")]
    RawLength {
        /// Length of the blob.
        len: usize,
        /// `9 + rawlen`.
        expected: u64,
    },
    /// `E_MODE`: the mode byte is neither 0 (raw) nor 1 (rANS).
    #[error("mode byte is {mode}, expected 0 (raw) or 1 (rans)")]
    Mode {
        /// The mode byte found.
        mode: u8,
    },
    /// `E_EMPTY_RANS`: a mode-1 blob with `rawlen == 0` (the encoder writes raw for n = 0).
    #[error("rans blob has rawlen 0, expected at least 1 (empty input is always raw)")]
    EmptyRans,
    /// `E_SHORT_RANS`: a mode-1 blob shorter than header + table + both states (49 bytes).
    #[error("rans blob is {len} bytes, expected at least 49 (header, table, two states)")]
    ShortRans {
        /// Length of the blob.
        len: usize,
    },
    /// `E_FREQ_SUM`: the sixteen frequencies do not sum to 4096.
    #[error("frequencies sum to {sum}, expected 4096")]
    FreqSum {
        /// The sum found.
        sum: u32,
    },
    /// `E_STATE_RANGE`: an initial state is below `L = 2^23`.
    #[error("initial state {which} is {state:#x}, expected at least 0x800000")]
    StateRange {
        /// `'A'` or `'B'`.
        which: char,
        /// The state read.
        state: u32,
    },
    /// `E_TRUNCATED`: a renormalisation needed a byte after the end of the blob.
    #[error("payload ran out while decoding output byte {at}, expected more renormalisation bytes")]
    Truncated {
        /// Index of the output byte being decoded.
        at: usize,
    },
    /// `E_LEFTOVER`: all pairs decoded but payload bytes remain (seal, part 1).
    #[error("{unread} payload bytes left after the last pair, expected 0")]
    Leftover {
        /// Unread bytes.
        unread: usize,
    },
    /// `E_FINAL_STATE`: all pairs decoded but a state is not back at `L` (seal, part 2).
    #[error("final states are {a:#x} and {b:#x}, expected both 0x800000")]
    FinalState {
        /// Final state A.
        a: u32,
        /// Final state B.
        b: u32,
    },
}

impl DecodeError {
    /// The spec's refusal class of this error (`"E_TRUNCATED"`, …).
    #[must_use]
    pub const fn class(&self) -> &'static str {
        match self {
            Self::Short { .. } => "E_SHORT",
            Self::Magic { .. } => "E_MAGIC",
            Self::Capacity { .. } => "E_CAPACITY",
            Self::RawLength { .. } => "E_RAW_LENGTH",
            Self::Mode { .. } => "E_MODE",
            Self::EmptyRans => "E_EMPTY_RANS",
            Self::ShortRans { .. } => "E_SHORT_RANS",
            Self::FreqSum { .. } => "E_FREQ_SUM",
            Self::StateRange { .. } => "E_STATE_RANGE",
            Self::Truncated { .. } => "E_TRUNCATED",
            Self::Leftover { .. } => "E_LEFTOVER",
            Self::FinalState { .. } => "E_FINAL_STATE",
        }
    }

    /// True for the payload-stage refusals (`E_TRUNCATED`, `E_LEFTOVER`, `E_FINAL_STATE`),
    /// the only ones raised after the decoder has started writing; `decode_into` then
    /// zeroes `dst[..rawlen]` before returning (see the crate docs, "What the decoder writes").
    #[must_use]
    pub const fn is_payload(&self) -> bool {
        matches!(self, Self::Truncated { .. } | Self::Leftover { .. } | Self::FinalState { .. })
    }
}

/// Why an input could not be encoded (`encode_into`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// `E_DST_TOO_SMALL`: the output buffer is below `max_encoded_len(src.len())`.
    #[error("output buffer is {available} bytes, expected at least {needed} (max_encoded_len)")]
    DstTooSmall {
        /// `max_encoded_len(src.len())`.
        needed: usize,
        /// Length of the caller's output buffer.
        available: usize,
    },
    /// `E_INPUT_TOO_LARGE`: the input does not fit the 32-bit `rawlen` field.
    #[error("input is {len} bytes, expected at most 4294967295 (u32 rawlen)")]
    InputTooLarge {
        /// Length of the input.
        len: usize,
    },
}

impl EncodeError {
    /// The class name of this error (`"E_DST_TOO_SMALL"`, `"E_INPUT_TOO_LARGE"`).
    #[must_use]
    pub const fn class(&self) -> &'static str {
        match self {
            Self::DstTooSmall { .. } => "E_DST_TOO_SMALL",
            Self::InputTooLarge { .. } => "E_INPUT_TOO_LARGE",
        }
    }
}
