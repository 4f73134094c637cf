//! Named refusals of `int4-rans64-t1`.
//!
//! One decode enum ([`Error`]) covers the blob header, the chunk index, a chunk's head and
//! the chunk's coded body, because a caller handles them alike (refuse the tensor, print the
//! class). Each variant is one refusal class of `docs/int4-rans64-t1.md`; `err.class()` gives
//! the name. Chunk-level errors carry the chunk index so a tool can say where it broke.

use super::decode::Arm;

/// Why a blob (or one of its chunks) was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The blob does not start with `T4R1`.
    #[error("blob magic is {got:02x?}, expected \"T4R1\"")]
    Magic {
        /// The first four bytes (zero-padded when the blob is shorter).
        got: [u8; 4],
    },
    /// Unknown format version.
    #[error("blob version {got}, expected 1, 2 or 3")]
    Version {
        /// The version byte.
        got: u8,
    },
    /// Chunk shift outside `12..=26`.
    #[error("chunk shift {got} out of range, expected 12..=26")]
    ChunkShift {
        /// The shift byte.
        got: u8,
    },
    /// The reserved header field is not zero.
    #[error("reserved header field is {got:#06x}, expected 0")]
    Reserved {
        /// The reserved u16.
        got: u16,
    },
    /// The declared byte count exceeds `2^48`.
    #[error("blob declares {got} packed bytes, more than the limit 2^48")]
    TooLarge {
        /// The declared byte count.
        got: u64,
    },
    /// The blob ends before the header, the index or the chunks it declares.
    #[error("blob is truncated: {got} bytes, at least {needed} needed")]
    Truncated {
        /// Bytes present.
        got: u64,
        /// Bytes the header and index require.
        needed: u64,
    },
    /// Bytes follow the last chunk.
    #[error("blob has {extra} bytes after its last chunk")]
    Trailing {
        /// The surplus.
        extra: u64,
    },
    /// A chunk's stored size is larger than its raw size, or too small for a coded head.
    #[error(
        "chunk {chunk} stores {got} bytes for {raw} raw bytes (expected == raw for a raw chunk, or 304..raw for a coded one; 288..raw in version 3)"
    )]
    ChunkSize {
        /// Chunk index.
        chunk: usize,
        /// Stored size from the index.
        got: u32,
        /// Raw (decoded) size of the chunk.
        raw: u32,
    },
    /// A chunk's stored bytes do not match the check the index records for them (version 2):
    /// the chunk was damaged after it was written.
    #[error(
        "chunk {chunk} check is {got:#018x}, the blob records {expected:#018x}: the chunk is damaged"
    )]
    Checksum {
        /// Chunk index.
        chunk: usize,
        /// The check recorded in the blob.
        expected: u64,
        /// The check of the stored bytes.
        got: u64,
    },
    /// A chunk's frequencies are not a model: one exceeds 4095 or they do not sum to 4096
    /// (version 3: they do not sum to 256).
    #[error(
        "chunk {chunk} frequency table sums to {sum} with maximum {max}, expected sum M and each below M (M = 4096; 256 in version 3)"
    )]
    Table {
        /// Chunk index.
        chunk: usize,
        /// Sum of the 16 frequencies.
        sum: u32,
        /// Largest frequency.
        max: u16,
    },
    /// A chunk's way lengths do not add up to its stored size.
    #[error("chunk {chunk} way streams hold {got} bytes, the chunk has {expected} after its head")]
    WayLengths {
        /// Chunk index.
        chunk: usize,
        /// `2 · Σ words` declared.
        got: u64,
        /// Bytes after the chunk head.
        expected: u64,
    },
    /// An initial state is below `L` (`2^16`; `2^8` in version 3).
    #[error(
        "chunk {chunk} lane {lane} starts in state {got:#x}, expected at least L (0x10000; 0x100 in version 3)"
    )]
    StateRange {
        /// Chunk index.
        chunk: usize,
        /// Lane index.
        lane: u8,
        /// The state.
        got: u32,
    },
    /// A way's stream ran out of words (version 3: bytes) during decode.
    #[error("chunk {chunk} way {way} stream ran out of refills")]
    Overrun {
        /// Chunk index.
        chunk: usize,
        /// Way index.
        way: u8,
    },
    /// After the last symbol a way's stream still holds words (version 3: bytes).
    #[error(
        "chunk {chunk} way {way} has {left} words (bytes in version 3) left after the last symbol"
    )]
    Leftover {
        /// Chunk index.
        chunk: usize,
        /// Way index.
        way: u8,
        /// Unread words (version 3: bytes).
        left: u32,
    },
    /// After the last symbol a state is not back at `L` (the seal is broken).
    #[error(
        "chunk {chunk} lane {lane} ends in state {got:#x}, expected L (0x10000; 0x100 in version 3)"
    )]
    FinalState {
        /// Chunk index.
        chunk: usize,
        /// Lane index.
        lane: u8,
        /// The final state.
        got: u32,
    },
    /// The output buffer does not have the blob's byte count (tetrad's own class).
    #[error("output buffer has {got} bytes, expected {expected}")]
    OutputLength {
        /// Bytes given.
        got: u64,
        /// Bytes the blob (or chunk) decodes to.
        expected: u64,
    },
    /// A chunk index past the last chunk was asked for (tetrad's own class).
    #[error("chunk {chunk} does not exist, the blob has {chunks}")]
    NoSuchChunk {
        /// The index asked for.
        chunk: usize,
        /// Chunks in the blob.
        chunks: usize,
    },
    /// A forced arm cannot run here (`E_PATH_UNAVAILABLE`): never a silent downgrade.
    #[error("decode arm {arm} is not available on this machine")]
    Unavailable {
        /// The arm asked for.
        arm: Arm,
    },
}

impl Error {
    /// The refusal class name of `docs/int4-rans64-t1.md`.
    pub fn class(&self) -> &'static str {
        match self {
            Error::Magic { .. } => "E_MAGIC",
            Error::Version { .. } => "E_VERSION",
            Error::ChunkShift { .. } => "E_CHUNK_SHIFT",
            Error::Reserved { .. } => "E_RESERVED",
            Error::TooLarge { .. } => "E_TOO_LARGE",
            Error::Truncated { .. } => "E_TRUNCATED",
            Error::Trailing { .. } => "E_TRAILING",
            Error::ChunkSize { .. } => "E_CHUNK_SIZE",
            Error::Checksum { .. } => "E_CHECKSUM",
            Error::Table { .. } => "E_TABLE",
            Error::WayLengths { .. } => "E_WAY_LENGTHS",
            Error::StateRange { .. } => "E_STATE_RANGE",
            Error::Overrun { .. } => "E_OVERRUN",
            Error::Leftover { .. } => "E_LEFTOVER",
            Error::FinalState { .. } => "E_FINAL_STATE",
            Error::OutputLength { .. } => "E_OUTPUT_LENGTH",
            Error::NoSuchChunk { .. } => "E_NO_SUCH_CHUNK",
            Error::Unavailable { .. } => "E_PATH_UNAVAILABLE",
        }
    }
}

/// Why encoding was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// Chunk shift outside `12..=26`.
    #[error("chunk shift {got} out of range, expected 12..=26")]
    ChunkShift {
        /// The shift given.
        got: u8,
    },
    /// More than `2^48` input bytes.
    #[error("input has {got} bytes, more than the limit 2^48")]
    TooLarge {
        /// Input length.
        got: u64,
    },
    /// The output buffer is smaller than [`super::max_encoded_len`].
    #[error("output buffer has {got} bytes, max_encoded_len needs {needed}")]
    OutputTooSmall {
        /// Bytes given.
        got: usize,
        /// Bytes required.
        needed: usize,
    },
    /// A forced arm has no encode kernel in this build or cannot run here
    /// (`E_PATH_UNAVAILABLE`): never a silent downgrade.
    #[error("encode arm {arm} is not available on this machine (encode kernels: scalar, avx2)")]
    Unavailable {
        /// The arm asked for.
        arm: Arm,
    },
}

impl EncodeError {
    /// The class name (tetrad's own; the format spec names decode refusals only).
    pub fn class(&self) -> &'static str {
        match self {
            EncodeError::ChunkShift { .. } => "E_CHUNK_SHIFT",
            EncodeError::TooLarge { .. } => "E_TOO_LARGE",
            EncodeError::OutputTooSmall { .. } => "E_OUTPUT_LENGTH",
            EncodeError::Unavailable { .. } => "E_PATH_UNAVAILABLE",
        }
    }
}
