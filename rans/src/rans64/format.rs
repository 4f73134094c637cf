//! Parsing a blob: the 16-byte header, the chunk index, and one chunk's head.
//!
//! `Blob::parse` checks everything that can be checked without decoding (magic, version,
//! chunk shift, reserved field, size limit, that the index (and in version 2 the check
//! table) is present, that every stored chunk size is plausible for its raw size, and that
//! the sizes add up to the blob exactly), in that order, so a truncated or padded blob is
//! refused before any output is written. `Blob::chunk` and `Blob::chunks` verify a version-2
//! chunk's check over its stored bytes and then parse its head (frequency table, way
//! lengths, initial states); the seal is checked by the decoder at the end of the chunk.
//! Every decoder gets its chunks from these two, so none decodes a byte of a damaged chunk
//! whose check fails. (`Chunk::parse` is the head parser alone, for callers that hold a
//! chunk body without its blob: it checks no check.)
//!
//! A caller that keeps a blob and decodes its chunks many times (the fused adapter decodes
//! every chunk on every multiply) verifies every check once with `Blob::verify_checks`; the
//! blob it gets back remembers that, and its `chunk`/`chunks` then parse heads without
//! recomputing checks. The bytes are borrowed immutably for the blob's whole life, so what
//! was verified cannot change underneath it. The seal is still checked on every decode.

use core::ops::Range;

use super::model::Model;
use super::model3::Model3;
use super::{CHUNK_HEAD_LEN, Error, HEADER_LEN, LANES, MAGIC, MAX_BYTES, MAX_CHUNK_SHIFT};
use super::{MIN_CHUNK_SHIFT, RANS_L, VERSION_1, VERSION_2, VERSION_3, WAYS, chunk_check};
use super::{V3_CHUNK_HEAD_LEN, V3_LANES, V3_RANS_L};

/// A parsed blob: header and index checked, chunks parsed on demand.
#[derive(Debug, Clone, Copy)]
pub struct Blob<'a> {
    bytes: &'a [u8],
    shift: u8,
    n_bytes: u64,
    n_chunks: usize,
    version: u8,
    /// Every chunk's check was verified (`verify_checks`): `open` skips it.
    checks_verified: bool,
}

/// One chunk, head parsed.
#[derive(Debug, Clone)]
pub struct Chunk<'a> {
    /// Index of the chunk in its blob.
    pub index: usize,
    /// Decoded size in bytes.
    pub raw_len: usize,
    /// Stored form.
    pub body: ChunkBody<'a>,
}

/// How a chunk is stored.
#[derive(Debug, Clone)]
#[non_exhaustive]
#[allow(clippy::large_enum_variant)] // no_std without alloc: no Box; the coded form is the usual one
pub enum ChunkBody<'a> {
    /// Stored as is (coding would not have made it smaller).
    Raw(&'a [u8]),
    /// rANS-coded.
    Coded {
        /// The model (validated frequencies and derived alias tables).
        model: Model,
        /// The 64 initial states (each in `[2^16, 2^32)`).
        states: [u32; LANES],
        /// The four ways' word streams (little-endian u16 words).
        ways: [&'a [u8]; WAYS],
    },
    /// rANS-coded, version 3 (16-bit states, byte renormalisation).
    Coded3 {
        /// The model (validated frequencies and derived alias tables).
        model: Model3,
        /// The 128 initial states (each in `[2^8, 2^16)`).
        states: [u16; V3_LANES],
        /// The four ways' byte streams.
        ways: [&'a [u8]; WAYS],
    },
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl<'a> Blob<'a> {
    /// Checks the header and the chunk index (refusal order: `E_MAGIC`, `E_TRUNCATED` for a
    /// short header, `E_VERSION`, `E_CHUNK_SHIFT`, `E_RESERVED`, `E_TOO_LARGE`, `E_TRUNCATED`
    /// for a short index, `E_CHUNK_SIZE` per chunk in order, then `E_TRUNCATED` / `E_TRAILING`
    /// for the total).
    pub fn parse(bytes: &'a [u8]) -> Result<Blob<'a>, Error> {
        let mut magic = [0u8; 4];
        let n = bytes.len().min(4);
        magic[..n].copy_from_slice(&bytes[..n]);
        if magic != MAGIC {
            return Err(Error::Magic { got: magic });
        }
        let len = bytes.len() as u64;
        if bytes.len() < HEADER_LEN {
            return Err(Error::Truncated { got: len, needed: HEADER_LEN as u64 });
        }
        let version = bytes[4];
        if version != VERSION_2 && version != VERSION_1 && version != VERSION_3 {
            return Err(Error::Version { got: version });
        }
        let shift = bytes[5];
        if !(MIN_CHUNK_SHIFT..=MAX_CHUNK_SHIFT).contains(&shift) {
            return Err(Error::ChunkShift { got: shift });
        }
        let reserved = u16_at(bytes, 6);
        if reserved != 0 {
            return Err(Error::Reserved { got: reserved });
        }
        let n_bytes = u64::from_le_bytes(bytes[8..16].try_into().unwrap_or([0xFF; 8]));
        if n_bytes > MAX_BYTES {
            return Err(Error::TooLarge { got: n_bytes });
        }
        let n_chunks64 = n_bytes.div_ceil(1u64 << shift);
        // Version 2: the index, then one u64 check per chunk.
        let per_chunk = if version == VERSION_1 { 4 } else { 12 };
        let index_end = HEADER_LEN as u64 + per_chunk * n_chunks64;
        if len < index_end {
            return Err(Error::Truncated { got: len, needed: index_end });
        }
        // The index is in memory, so the chunk count fits usize.
        let n_chunks = usize::try_from(n_chunks64).unwrap_or(usize::MAX);
        let blob = Blob { bytes, shift, n_bytes, n_chunks, version, checks_verified: false };
        let mut total = index_end;
        for c in 0..n_chunks {
            let stored = blob.stored_len(c);
            let raw = blob.raw_len(c);
            check_size(version, c, stored, raw)?;
            total += u64::from(stored);
        }
        if len < total {
            return Err(Error::Truncated { got: len, needed: total });
        }
        if len > total {
            return Err(Error::Trailing { extra: len - total });
        }
        Ok(blob)
    }

    /// Packed int4 bytes the blob decodes to.
    pub fn n_bytes(&self) -> u64 {
        self.n_bytes
    }

    /// The format version: 1 (no chunk checks), 2 (chunk checks) or 3 (16-bit states, checks).
    pub fn version(&self) -> u8 {
        self.version
    }

    /// The check versions 2 and 3 record for chunk `c` (`None` in version 1 or past the last
    /// chunk).
    pub fn recorded_check(&self, c: usize) -> Option<u64> {
        if self.version == VERSION_1 || c >= self.n_chunks {
            return None;
        }
        let at = HEADER_LEN + 4 * self.n_chunks + 8 * c;
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.bytes[at..at + 8]);
        Some(u64::from_le_bytes(b))
    }

    /// Verifies every chunk's check (version 2) in chunk order, once: the blob it returns
    /// opens chunks without recomputing them (`checks_verified` is then `true`). One pass
    /// over the stored bytes; a version-1 blob has nothing to verify and is returned as is
    /// (its chunks rest on their seals alone).
    ///
    /// # Errors
    /// `E_CHECKSUM` for the first chunk whose stored bytes do not match their check.
    pub fn verify_checks(mut self) -> Result<Blob<'a>, Error> {
        if self.version != VERSION_1 && !self.checks_verified {
            let mut at = self.data_start();
            for c in 0..self.n_chunks {
                let stored = self.stored_len(c) as usize;
                self.verify_check(c, &self.bytes[at..at + stored])?;
                at += stored;
            }
            self.checks_verified = true;
        }
        Ok(self)
    }

    /// Whether every chunk's check has been verified already (`verify_checks` on a
    /// version-2 blob), so that opening a chunk parses its head only.
    pub fn checks_verified(&self) -> bool {
        self.checks_verified
    }

    /// `log2` of the chunk size in raw bytes.
    pub fn chunk_shift(&self) -> u8 {
        self.shift
    }

    /// Number of chunks.
    pub fn n_chunks(&self) -> usize {
        self.n_chunks
    }

    /// The raw byte range chunk `c` decodes to (clamped to the blob's size).
    pub fn chunk_range(&self, c: usize) -> Range<u64> {
        let start = (c as u64) << self.shift;
        start.min(self.n_bytes)..((c as u64 + 1) << self.shift).min(self.n_bytes)
    }

    /// The whole blob.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    #[allow(clippy::cast_possible_truncation)] // chunks are at most 2^26 bytes
    fn raw_len(&self, c: usize) -> u32 {
        let r = self.chunk_range(c);
        (r.end - r.start) as u32
    }

    fn stored_len(&self, c: usize) -> u32 {
        u32_at(self.bytes, HEADER_LEN + 4 * c)
    }

    fn data_start(&self) -> usize {
        let per_chunk = if self.version == VERSION_1 { 4 } else { 12 };
        HEADER_LEN + per_chunk * self.n_chunks
    }

    /// `E_CHECKSUM` unless chunk `c`'s stored bytes `body` match its recorded check (none in
    /// version 1).
    fn verify_check(&self, c: usize, body: &[u8]) -> Result<(), Error> {
        if let Some(expected) = self.recorded_check(c) {
            let got = chunk_check(body);
            if got != expected {
                return Err(Error::Checksum { chunk: c, expected, got });
            }
        }
        Ok(())
    }

    /// Chunk `c` from its stored bytes: the version-2 check first (`E_CHECKSUM`, unless
    /// `verify_checks` did them all), then the head.
    fn open(&self, c: usize, body: &'a [u8]) -> Result<Chunk<'a>, Error> {
        if !self.checks_verified {
            self.verify_check(c, body)?;
        }
        Chunk::parse_version(self.version, c, body, self.raw_len(c) as usize)
    }

    /// Iterates the chunks in order (each checked and parsed on the way; a bad one is an
    /// `Err` item).
    pub fn chunks(&self) -> impl Iterator<Item = Result<Chunk<'a>, Error>> + '_ {
        self.chunks_from(0)
    }

    /// Iterates the chunks from chunk `first` on (the ones before it are skipped unopened:
    /// their checks are not computed).
    pub fn chunks_from(&self, first: usize) -> impl Iterator<Item = Result<Chunk<'a>, Error>> + '_ {
        let first = first.min(self.n_chunks);
        let mut at =
            self.data_start() + (0..first).map(|k| self.stored_len(k) as usize).sum::<usize>();
        (first..self.n_chunks).map(move |c| {
            let stored = self.stored_len(c) as usize;
            let body = &self.bytes[at..at + stored];
            at += stored;
            self.open(c, body)
        })
    }

    /// Parses chunk `c` (walks the index to find it: O(c)).
    pub fn chunk(&self, c: usize) -> Result<Chunk<'a>, Error> {
        if c >= self.n_chunks {
            return Err(Error::NoSuchChunk { chunk: c, chunks: self.n_chunks });
        }
        let at: usize =
            self.data_start() + (0..c).map(|k| self.stored_len(k) as usize).sum::<usize>();
        let stored = self.stored_len(c) as usize;
        self.open(c, &self.bytes[at..at + stored])
    }
}

#[allow(clippy::cast_possible_truncation)] // the head lengths are small constants
fn check_size(version: u8, chunk: usize, stored: u32, raw: u32) -> Result<(), Error> {
    // 304 bytes in versions 1 and 2, 288 in version 3.
    let head = if version == VERSION_3 { V3_CHUNK_HEAD_LEN } else { CHUNK_HEAD_LEN } as u32;
    let coded_ok = (head..raw).contains(&stored);
    if stored == raw || coded_ok {
        Ok(())
    } else {
        Err(Error::ChunkSize { chunk, got: stored, raw })
    }
}

impl<'a> Chunk<'a> {
    /// Parses one chunk's stored bytes of a version-1 or version-2 blob (`E_CHUNK_SIZE`,
    /// `E_TABLE`, `E_WAY_LENGTHS`, `E_STATE_RANGE`, in that order).
    pub fn parse(index: usize, body: &'a [u8], raw_len: usize) -> Result<Chunk<'a>, Error> {
        Chunk::parse_version(VERSION_2, index, body, raw_len)
    }

    /// [`Chunk::parse`] for a blob of the given `version` (1, 2 or 3; the head of a coded
    /// chunk differs in version 3).
    pub fn parse_version(
        version: u8,
        index: usize,
        body: &'a [u8],
        raw_len: usize,
    ) -> Result<Chunk<'a>, Error> {
        #[allow(clippy::cast_possible_truncation)] // sizes come from u32 index entries
        check_size(version, index, body.len() as u32, raw_len as u32)?;
        if body.len() == raw_len {
            return Ok(Chunk { index, raw_len, body: ChunkBody::Raw(body) });
        }
        if version == VERSION_3 {
            return Chunk::parse_coded3(index, body, raw_len);
        }
        let mut freq = [0u16; 16];
        for (s, f) in freq.iter_mut().enumerate() {
            *f = u16_at(body, 2 * s);
        }
        let model =
            Model::new(freq).map_err(|(sum, max)| Error::Table { chunk: index, sum, max })?;
        let mut words = [0u64; WAYS];
        for (w, n) in words.iter_mut().enumerate() {
            *n = u64::from(u32_at(body, 32 + 4 * w));
        }
        let got = 2 * words.iter().sum::<u64>();
        let expected = (body.len() - CHUNK_HEAD_LEN) as u64;
        if got != expected {
            return Err(Error::WayLengths { chunk: index, got, expected });
        }
        let mut states = [0u32; LANES];
        for (lane, st) in states.iter_mut().enumerate() {
            *st = u32_at(body, 48 + 4 * lane);
            if *st < RANS_L {
                #[allow(clippy::cast_possible_truncation)] // lane < 64
                return Err(Error::StateRange { chunk: index, lane: lane as u8, got: *st });
            }
        }
        let mut ways: [&[u8]; WAYS] = [&[]; WAYS];
        let mut at = CHUNK_HEAD_LEN;
        for w in 0..WAYS {
            // Sums were checked against the body length above, so these fit.
            #[allow(clippy::cast_possible_truncation)]
            let n = 2 * words[w] as usize;
            ways[w] = &body[at..at + n];
            at += n;
        }
        Ok(Chunk { index, raw_len, body: ChunkBody::Coded { model, states, ways } })
    }
}

impl<'a> Chunk<'a> {
    /// The head of a version-3 coded chunk (its size already checked): `E_TABLE`,
    /// `E_WAY_LENGTHS`, `E_STATE_RANGE`, in that order.
    fn parse_coded3(index: usize, body: &'a [u8], raw_len: usize) -> Result<Chunk<'a>, Error> {
        let mut freq = [0u8; 16];
        freq.copy_from_slice(&body[..16]);
        let model =
            Model3::new(freq).map_err(|(sum, max)| Error::Table { chunk: index, sum, max })?;
        let mut bytes = [0u64; WAYS];
        for (w, n) in bytes.iter_mut().enumerate() {
            *n = u64::from(u32_at(body, 16 + 4 * w));
        }
        let got = bytes.iter().sum::<u64>();
        let expected = (body.len() - V3_CHUNK_HEAD_LEN) as u64;
        if got != expected {
            return Err(Error::WayLengths { chunk: index, got, expected });
        }
        let mut states = [0u16; V3_LANES];
        for (lane, st) in states.iter_mut().enumerate() {
            *st = u16_at(body, 32 + 2 * lane);
            if u32::from(*st) < V3_RANS_L {
                #[allow(clippy::cast_possible_truncation)] // lane < 128
                return Err(Error::StateRange {
                    chunk: index,
                    lane: lane as u8,
                    got: u32::from(*st),
                });
            }
        }
        let mut ways: [&[u8]; WAYS] = [&[]; WAYS];
        let mut at = V3_CHUNK_HEAD_LEN;
        for w in 0..WAYS {
            // Sums were checked against the body length above, so these fit.
            #[allow(clippy::cast_possible_truncation)]
            let n = bytes[w] as usize;
            ways[w] = &body[at..at + n];
            at += n;
        }
        Ok(Chunk { index, raw_len, body: ChunkBody::Coded3 { model, states, ways } })
    }
}
