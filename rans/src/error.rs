//! The named refusals of the codec, one small `Copy` enum per stage.
//!
//! Every refusal class of `docs/int4-rans256-g0.md` (`E_TRUNCATED`, `E_STREAM_LEFTOVER`, …) maps
//! to exactly one variant of exactly one enum here, and `err.class()` returns that name, so a
//! container tool can print the same `REFUSED <CLASS>` line the reference tools print. A few
//! classes are tetrad's own (they name failures the reference reports as a Python exception or
//! that only exist in tetrad's API, such as a wrong output buffer length); they are marked as
//! such. Errors carry what was found and what was expected, never a `Vec`.

use crate::decode::Arm;

/// Why a frequency table was refused (validation or construction from a histogram).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TableError {
    /// Scale bits outside `1..=15`.
    #[error("table scale bits {got} out of range, expected 1..=15")]
    Scale {
        /// The scale bits given.
        got: u32,
    },
    /// `start[symbol]` is not the exclusive prefix sum of `freq`.
    #[error("table start[{symbol}] is {got}, expected the prefix sum {expected}")]
    Start {
        /// The symbol whose start is wrong.
        symbol: u8,
        /// The start given.
        got: u32,
        /// The running prefix sum of the frequencies before `symbol`.
        expected: u64,
    },
    /// The frequencies do not sum to `M = 2^scale_bits`.
    #[error("table frequencies sum to {got}, expected M = {expected}")]
    FreqSum {
        /// The sum of the frequencies.
        got: u64,
        /// `M`.
        expected: u32,
    },
    /// A slot holds a value above 15 or a symbol whose band does not contain the slot.
    #[error("table slot {slot} holds {got}, expected symbol {expected}")]
    Slot {
        /// The slot index.
        slot: usize,
        /// The value stored in the slot.
        got: u16,
        /// The symbol whose band `[start, start + freq)` contains the slot.
        expected: u8,
    },
    /// The slot array does not have exactly `M` entries (`E_TABLE_MALFORMED`, as the JSON table
    /// parse names a wrong slot length).
    #[error("table slot array has {got} entries, expected M = {expected}")]
    SlotCount {
        /// Entries given.
        got: usize,
        /// `M`.
        expected: usize,
    },
    /// Building from a histogram: more symbols are present than the table has slots
    /// (tetrad's class `E_TABLE_SYMBOLS`; the reference raises `ValueError`).
    #[error("histogram has {present} present symbols, more than M = {m} slots")]
    TooManySymbols {
        /// Number of symbols with a nonzero count.
        present: u32,
        /// `M`.
        m: u32,
    },
    /// Building from a histogram whose counts are all zero (tetrad's class `E_TABLE_EMPTY`).
    #[error("histogram is empty, expected at least one nonzero count")]
    EmptyHistogram,
}

impl TableError {
    /// The refusal class name (`E_TABLE_SCALE`, …).
    pub const fn class(&self) -> &'static str {
        match self {
            Self::Scale { .. } => "E_TABLE_SCALE",
            Self::Start { .. } => "E_TABLE_START",
            Self::FreqSum { .. } => "E_TABLE_FREQ_SUM",
            Self::Slot { .. } => "E_TABLE_SLOT",
            Self::SlotCount { .. } => "E_TABLE_MALFORMED",
            Self::TooManySymbols { .. } => "E_TABLE_SYMBOLS",
            Self::EmptyHistogram => "E_TABLE_EMPTY",
        }
    }
}

/// Why a single rANS stream failed checked decode (the seal was broken).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StreamError {
    /// Fewer than 4 bytes: there is no initial state.
    #[error("stream has {len} bytes, expected at least 4")]
    Underrun {
        /// Stream length in bytes.
        len: usize,
    },
    /// The initial state is below `L = 2^23`.
    #[error("stream initial state {state:#x}, expected at least 0x800000")]
    StateRange {
        /// The big-endian state read from the first 4 bytes.
        state: u32,
    },
    /// Decoding the expected symbol count left bytes unread.
    #[error("stream has {left} bytes left after its last symbol, expected 0")]
    Leftover {
        /// Unread bytes.
        left: usize,
    },
    /// The final state is not exactly `L`.
    #[error("stream final state {state:#x}, expected 0x800000")]
    FinalState {
        /// The state after the last symbol.
        state: u32,
    },
}

impl StreamError {
    /// The refusal class name (`E_STREAM_UNDERRUN`, …).
    pub const fn class(&self) -> &'static str {
        match self {
            Self::Underrun { .. } => "E_STREAM_UNDERRUN",
            Self::StateRange { .. } => "E_STREAM_STATE_RANGE",
            Self::Leftover { .. } => "E_STREAM_LEFTOVER",
            Self::FinalState { .. } => "E_STREAM_FINAL_STATE",
        }
    }
}

/// Why a record was refused by the parser (framing, before any stream is decoded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The stream count is 0 (or above [`MAX_STREAMS`](crate::MAX_STREAMS), which tetrad's
    /// allocation-free decoder cannot hold).
    #[error("record stream count {got}, expected 1..={}", crate::MAX_STREAMS)]
    NStreams {
        /// Stream count given.
        got: usize,
    },
    /// The blob is shorter than its own framing claims.
    #[error("record truncated: needs {needed} bytes, got {available}")]
    Truncated {
        /// Bytes the framing needs (the header, or header plus payload).
        needed: u64,
        /// Bytes available.
        available: usize,
    },
    /// `n_symbols == 0`.
    #[error("record has 0 symbols, expected at least 1")]
    Empty,
    /// `packed_bytes != n_symbols/2 + (n_symbols & 1)`.
    #[error("record packed_bytes {packed_bytes}, expected {expected} for {n_symbols} symbols")]
    CountMismatch {
        /// The stored symbol count.
        n_symbols: u64,
        /// The stored packed byte count.
        packed_bytes: u64,
        /// `ceil(n_symbols / 2)`.
        expected: u64,
    },
    /// `offsets[0] != 0`.
    #[error("record offsets[0] is {got}, expected 0")]
    OffsetFirst {
        /// The stored first offset.
        got: u32,
    },
    /// `offsets[stream + 1] < offsets[stream]`.
    #[error("record offsets[{}] = {next} is below offsets[{stream}] = {prev}", stream + 1)]
    OffsetsMonotonic {
        /// The stream whose end precedes its start.
        stream: usize,
        /// `offsets[stream]`.
        prev: u32,
        /// `offsets[stream + 1]`.
        next: u32,
    },
    /// A stream shorter than 4 bytes.
    #[error("record stream {stream} has {len} bytes, expected at least 4")]
    StreamShort {
        /// The stream index.
        stream: usize,
        /// Its length.
        len: u32,
    },
    /// The blob length is not `head + round16(payload_len)`.
    #[error("record length {got}, expected {expected}")]
    LengthMismatch {
        /// Blob length.
        got: usize,
        /// `head + round16(payload_len)`.
        expected: u64,
    },
    /// More symbols than the payload could possibly encode (the decompression-bomb bound
    /// `n_symbols <= payload_len · 8 · 2^15`).
    #[error("record claims {n_symbols} symbols, more than the bound {limit} for its payload")]
    Oversize {
        /// The stored symbol count.
        n_symbols: u64,
        /// `payload_len · 8 · 2^15`.
        limit: u64,
    },
    /// A header or payload padding byte is not zero.
    #[error("record padding byte at offset {offset} is {got:#04x}, expected 0")]
    PadNonzero {
        /// Offset of the first nonzero pad byte in the blob.
        offset: usize,
        /// Its value.
        got: u8,
    },
}

impl RecordError {
    /// The refusal class name (`E_TRUNCATED`, …).
    pub const fn class(&self) -> &'static str {
        match self {
            Self::NStreams { .. } => "E_NSTREAMS",
            Self::Truncated { .. } => "E_TRUNCATED",
            Self::Empty => "E_EMPTY",
            Self::CountMismatch { .. } => "E_COUNT_MISMATCH",
            Self::OffsetFirst { .. } => "E_OFFSET_FIRST",
            Self::OffsetsMonotonic { .. } => "E_OFFSETS_MONOTONIC",
            Self::StreamShort { .. } => "E_STREAM_SHORT",
            Self::LengthMismatch { .. } => "E_LENGTH_MISMATCH",
            Self::Oversize { .. } => "E_OVERSIZE",
            Self::PadNonzero { .. } => "E_PAD_NONZERO",
        }
    }
}

/// Why encoding was refused. Nothing is guaranteed about the output buffer's contents then.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// A symbol above 15, or one whose frequency is 0 (found before any output is written).
    #[error("symbol {symbol} at index {index} is not codable with this table (freq 0 or > 15)")]
    SymbolUncodable {
        /// Index of the first uncodable symbol (in nibbles).
        index: usize,
        /// Its value.
        symbol: u8,
    },
    /// The output buffer is too small, or the payload would not fit in u32.
    #[error("encoder needs {needed} bytes of output, got {available}")]
    Scratch {
        /// Bytes needed (a lower bound when the buffer ran out mid-stream).
        needed: u64,
        /// Bytes available (or `u32::MAX` when the payload limit was exceeded).
        available: u64,
    },
    /// The stream count is 0 or above [`MAX_STREAMS`](crate::MAX_STREAMS).
    #[error("encoder stream count {got}, expected 1..={}", crate::MAX_STREAMS)]
    NStreams {
        /// Stream count given.
        got: usize,
    },
    /// A record of 0 symbols was requested; the format refuses it on read (`E_EMPTY`).
    #[error("record of 0 symbols requested, expected at least 1")]
    Empty,
}

impl EncodeError {
    /// The refusal class name (`E_SYMBOL_UNCODABLE`, …).
    pub const fn class(&self) -> &'static str {
        match self {
            Self::SymbolUncodable { .. } => "E_SYMBOL_UNCODABLE",
            Self::Scratch { .. } => "E_SCRATCH",
            Self::NStreams { .. } => "E_NSTREAMS",
            Self::Empty => "E_EMPTY",
        }
    }
}

/// Why decoding a parsed record failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// A stream broke the seal. Reported for the lowest-numbered faulty stream, with that
    /// stream's first fault in the order `E_STREAM_STATE_RANGE`, `E_STREAM_LEFTOVER`,
    /// `E_STREAM_FINAL_STATE` (what checked-decoding each stream in turn would report).
    #[error("stream {stream}: {error}")]
    Stream {
        /// The stream index.
        stream: usize,
        /// The seal it broke.
        error: StreamError,
    },
    /// The output buffer does not have the length the call requires (tetrad's class
    /// `E_OUTPUT_LEN`).
    #[error("output buffer has {got} bytes, expected {expected}")]
    OutputLen {
        /// Bytes given.
        got: u64,
        /// Bytes required (or, for an incremental decoder, at most this many remain).
        expected: u64,
    },
    /// A forced decode arm is not available on this machine (`E_PATH_UNAVAILABLE`).
    #[error("decode arm {} is not available on this machine", arm.name())]
    Unavailable {
        /// The arm asked for.
        arm: Arm,
    },
    /// An incremental decoder was finished before all symbols were decoded (tetrad's class
    /// `E_DECODE_INCOMPLETE`).
    #[error("decoder finished after {decoded} of {expected} packed bytes")]
    Incomplete {
        /// Packed bytes decoded.
        decoded: u64,
        /// Packed bytes of the record.
        expected: u64,
    },
    /// A share of stream pairs that the record cannot give: an odd stream count (pairs
    /// straddle bytes), no pairs, or pairs past `N/2` (tetrad's class `E_SHARE_RANGE`).
    #[error("pairs {start}..{end} are not a share of a record of {n_streams} streams")]
    ShareRange {
        /// The record's stream count `N`.
        n_streams: usize,
        /// First pair asked for.
        start: usize,
        /// End of the pairs asked for.
        end: usize,
    },
}

impl DecodeError {
    /// The refusal class name; a stream fault reports its stream class.
    pub const fn class(&self) -> &'static str {
        match self {
            Self::Stream { error, .. } => error.class(),
            Self::OutputLen { .. } => "E_OUTPUT_LEN",
            Self::Unavailable { .. } => "E_PATH_UNAVAILABLE",
            Self::Incomplete { .. } => "E_DECODE_INCOMPLETE",
            Self::ShareRange { .. } => "E_SHARE_RANGE",
        }
    }
}
