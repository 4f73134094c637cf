//! A small, strict GGUF (v2/v3) reader: just enough to find each tensor's bytes.
//!
//! `tetrad stats` measures the quantized codes of llama.cpp checkpoints, so it needs the tensor
//! directory of a GGUF file and nothing else: metadata values are skipped (only
//! `general.alignment` is read), tensor infos are parsed and every offset and size is checked
//! against the file. No maintained GGUF crate on crates.io was a clear fit (the one published
//! under the name is a small utility without a strict-reader contract), so this is written from
//! the format description: little-endian; `"GGUF"`, version `u32`, tensor count `u64`, metadata
//! count `u64`; metadata `key: string, type: u32, value`; tensor infos
//! `name: string, n_dims: u32, dims: u64 × n_dims, type: u32, offset: u64`; tensor data after
//! the infos, aligned to `general.alignment` (default 32), offsets relative to its start.
//!
//! Hostile input: every length is checked against the bytes that remain before anything is
//! allocated (a string of `n` bytes needs `n` bytes left, a list of `n` items at least `n`
//! bytes), nested arrays are limited in depth, element counts and byte sizes use checked
//! arithmetic, so a malformed file is a [`GgufError`], never a panic or a huge allocation.

use crate::error::{Class, Classified};

/// Why a GGUF file was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GgufError {
    /// The file ends before a field.
    #[error("truncated at byte {at}: needed {need} more bytes, {have} left")]
    Truncated {
        /// Offset of the field.
        at: u64,
        /// Bytes the field needs.
        need: u64,
        /// Bytes left.
        have: u64,
    },
    /// A declared count of items that the rest of the file cannot hold, even at the least
    /// bytes an item can take (class `E_GGUF_TRUNCATED`, like any other short file).
    #[error("truncated at byte {at}: {count} {what} need at least {each} bytes each, {have} left")]
    Count {
        /// Offset of the first item.
        at: u64,
        /// What is counted (`metadata entries`, `tensor infos`, `array items`).
        what: &'static str,
        /// The count declared.
        count: u64,
        /// The fewest bytes one item takes.
        each: u64,
        /// Bytes left.
        have: u64,
    },
    /// Not a GGUF file.
    #[error("bad magic {got:#010x}, expected 0x46554747 (\"GGUF\")")]
    Magic {
        /// The first four bytes, little-endian.
        got: u32,
    },
    /// A version this reader does not know.
    #[error("GGUF version {got}, expected 2 or 3")]
    Version {
        /// Version found.
        got: u32,
    },
    /// A big-endian GGUF file (its version field reads byte-swapped); only little-endian
    /// files are read. Class `E_GGUF_VERSION`, like any version this reader cannot take.
    #[error(
        "big-endian GGUF (version {version}; the field reads {got:#x} little-endian): tetrad reads little-endian GGUF only"
    )]
    BigEndian {
        /// The version, read big-endian.
        version: u32,
        /// The field as read little-endian.
        got: u32,
    },
    /// A metadata value type outside the specification.
    #[error("metadata value type {got} at byte {at}, expected 0..=12")]
    ValueType {
        /// Type found.
        got: u32,
        /// Offset.
        at: u64,
    },
    /// Arrays nested deeper than the reader allows.
    #[error("metadata arrays nested {got} deep, at most {max} allowed")]
    Nesting {
        /// Depth found.
        got: u32,
        /// Depth allowed.
        max: u32,
    },
    /// `general.alignment` is zero or not a power of two.
    #[error("general.alignment is {got}, expected a nonzero power of two (u32)")]
    Alignment {
        /// Value found.
        got: u64,
    },
    /// `general.alignment` is not a u32 (value type 4). Class `E_GGUF_ALIGNMENT`.
    #[error("general.alignment has value type {got}, expected 4 (UINT32)")]
    AlignmentType {
        /// The value type found.
        got: u32,
    },
    /// `general.alignment` given twice: which value the writer padded by is unknown, and
    /// the wrong one reads every tensor from the wrong bytes.
    #[error("general.alignment appears twice (second at byte {at})")]
    DuplicateAlignment {
        /// Offset of the second key.
        at: u64,
    },
    /// Two tensors with one name: a reader cannot tell which one a name means.
    #[error("tensors {first} and {index} have the same name")]
    DuplicateTensor {
        /// The later tensor's index.
        index: u64,
        /// The earlier one's.
        first: u64,
    },
    /// A tensor name that is not UTF-8 (the format's strings are UTF-8).
    #[error("tensor {index}: name is not UTF-8")]
    Utf8 {
        /// Tensor index.
        index: u64,
    },
    /// A tensor with more dimensions than GGML allows.
    #[error("tensor {index} has {got} dimensions, at most 4")]
    Dims {
        /// Tensor index.
        index: u64,
        /// Dimensions found.
        got: u32,
    },
    /// A count or size overflows.
    #[error("tensor {index}: {what} overflows u64")]
    Overflow {
        /// Tensor index.
        index: u64,
        /// What overflows: the element count, the byte size, or offset + size.
        what: &'static str,
    },
    /// A tensor's row length is not a multiple of its block size.
    #[error("tensor {index}: row of {ne0} elements is not a multiple of the {block}-element block")]
    Block {
        /// Tensor index.
        index: u64,
        /// Row length.
        ne0: u64,
        /// Block size of its type.
        block: u64,
    },
    /// A tensor's data lies outside the data section or is misaligned.
    #[error(
        "tensor {index}: data [{begin}, {end}) outside the {len}-byte data section or misaligned"
    )]
    Range {
        /// Tensor index.
        index: u64,
        /// Start, relative to the data section.
        begin: u64,
        /// End (exclusive).
        end: u64,
        /// Data section size.
        len: u64,
    },
}

impl Classified for GgufError {
    fn class_of(&self) -> Class {
        self.class()
    }
}

impl GgufError {
    /// Stable machine-readable class name.
    pub const fn class(&self) -> Class {
        match self {
            Self::Truncated { .. } | Self::Count { .. } => Class::GgufTruncated,
            Self::Magic { .. } => Class::GgufMagic,
            Self::Version { .. } | Self::BigEndian { .. } => Class::GgufVersion,
            Self::ValueType { .. } => Class::GgufValueType,
            Self::Nesting { .. } => Class::GgufNesting,
            Self::Alignment { .. } | Self::AlignmentType { .. } => Class::GgufAlignment,
            Self::DuplicateAlignment { .. } | Self::DuplicateTensor { .. } => Class::GgufDuplicate,
            Self::Utf8 { .. } => Class::GgufUtf8,
            Self::Dims { .. } => Class::GgufDims,
            Self::Overflow { .. } => Class::GgufOverflow,
            Self::Block { .. } => Class::GgufBlock,
            Self::Range { .. } => Class::GgufRange,
        }
    }
}

/// The GGUF magic, little-endian.
pub const MAGIC: u32 = 0x4655_4747;
/// Deepest metadata array nesting accepted.
pub const MAX_NESTING: u32 = 8;

/// One tensor of a GGUF file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GgufTensor {
    /// Name (lossy UTF-8).
    pub name: String,
    /// Dimensions as stored: `dims[0]` is the row length (fastest-varying).
    pub dims: Vec<u64>,
    /// GGML type id.
    pub ggml_type: u32,
    /// Byte range in the file, when the type's size is known (`None` for unknown types).
    pub range: Option<(u64, u64)>,
}

impl GgufTensor {
    /// The type's name (`Q4_0`, …) or `type N`.
    pub fn type_name(&self) -> String {
        type_info(self.ggml_type).map_or_else(|| format!("type {}", self.ggml_type), |t| t.0.into())
    }

    /// Shape in row-major order (safetensors/numpy: the row length last).
    pub fn shape(&self) -> Vec<u64> {
        self.dims.iter().rev().copied().collect()
    }
}

/// A parsed GGUF directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gguf {
    /// Version (2 or 3).
    pub version: u32,
    /// Data alignment.
    pub alignment: u64,
    /// Start of the data section in the file.
    pub data_start: u64,
    /// Tensors in file order.
    pub tensors: Vec<GgufTensor>,
}

/// `(name, elements per block, bytes per block)` of the GGML types whose size is known.
pub fn type_info(t: u32) -> Option<(&'static str, u64, u64)> {
    Some(match t {
        0 => ("F32", 1, 4),
        1 => ("F16", 1, 2),
        2 => ("Q4_0", 32, 18),
        3 => ("Q4_1", 32, 20),
        6 => ("Q5_0", 32, 22),
        7 => ("Q5_1", 32, 24),
        8 => ("Q8_0", 32, 34),
        9 => ("Q8_1", 32, 36),
        10 => ("Q2_K", 256, 84),
        11 => ("Q3_K", 256, 110),
        12 => ("Q4_K", 256, 144),
        13 => ("Q5_K", 256, 176),
        14 => ("Q6_K", 256, 210),
        15 => ("Q8_K", 256, 292),
        16 => ("IQ2_XXS", 256, 66),
        17 => ("IQ2_XS", 256, 74),
        18 => ("IQ3_XXS", 256, 98),
        19 => ("IQ1_S", 256, 50),
        20 => ("IQ4_NL", 32, 18),
        21 => ("IQ3_S", 256, 110),
        22 => ("IQ2_S", 256, 82),
        23 => ("IQ4_XS", 256, 136),
        24 => ("I8", 1, 1),
        25 => ("I16", 1, 2),
        26 => ("I32", 1, 4),
        27 => ("I64", 1, 8),
        28 => ("F64", 1, 8),
        29 => ("IQ1_M", 256, 56),
        30 => ("BF16", 1, 2),
        34 => ("TQ1_0", 256, 54),
        35 => ("TQ2_0", 256, 66),
        39 => ("MXFP4", 32, 17),
        40 => ("NVFP4", 64, 36),
        41 => ("Q1_0", 128, 18),
        _ => return None,
    })
}

struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: u64) -> Result<&'a [u8], GgufError> {
        let have = (self.b.len() - self.pos) as u64;
        if n > have {
            return Err(GgufError::Truncated { at: self.pos as u64, need: n, have });
        }
        // n ≤ have, which fits usize.
        #[allow(clippy::cast_possible_truncation)]
        let n = n as usize;
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn u32(&mut self) -> Result<u32, GgufError> {
        let s = self.take(4)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
    fn u64(&mut self) -> Result<u64, GgufError> {
        let s = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        Ok(u64::from_le_bytes(a))
    }
    fn string(&mut self) -> Result<&'a [u8], GgufError> {
        let n = self.u64()?;
        self.take(n)
    }
    fn remaining(&self) -> u64 {
        (self.b.len() - self.pos) as u64
    }
}

/// Fixed size of a scalar metadata type, `None` for string/array.
fn scalar_size(t: u32) -> Option<u64> {
    Some(match t {
        0 | 1 | 7 => 1,
        2 | 3 => 2,
        4..=6 => 4,
        10..=12 => 8,
        _ => return None,
    })
}

/// Skips one metadata value of type `t`; returns its u32 value when it is a u32 (type 4).
fn skip_value(c: &mut Cursor<'_>, t: u32, depth: u32) -> Result<Option<u64>, GgufError> {
    let at = c.pos as u64;
    match t {
        4 => Ok(Some(u64::from(c.u32()?))),
        8 => c.string().map(|_| None),
        9 => {
            if depth >= MAX_NESTING {
                return Err(GgufError::Nesting { got: depth + 1, max: MAX_NESTING });
            }
            let et = c.u32()?;
            let n = c.u64()?;
            if let Some(sz) = scalar_size(et) {
                let need = n.checked_mul(sz).ok_or(GgufError::Count {
                    at: c.pos as u64,
                    what: "array items",
                    count: n,
                    each: sz,
                    have: c.remaining(),
                })?;
                c.take(need)?;
            } else if et == 8 || et == 9 {
                // Each item takes at least 8 bytes (a length or an array header).
                if n > c.remaining() / 8 {
                    return Err(GgufError::Count {
                        at: c.pos as u64,
                        what: "array items",
                        count: n,
                        each: 8,
                        have: c.remaining(),
                    });
                }
                for _ in 0..n {
                    skip_value(c, et, depth + 1)?;
                }
            } else {
                return Err(GgufError::ValueType { got: et, at });
            }
            Ok(None)
        }
        _ => match scalar_size(t) {
            Some(sz) => c.take(sz).map(|_| None),
            None => Err(GgufError::ValueType { got: t, at }),
        },
    }
}

/// Parses the GGUF directory of `bytes` (the whole file).
pub fn parse(bytes: &[u8]) -> Result<Gguf, GgufError> {
    let mut c = Cursor { b: bytes, pos: 0 };
    let magic = c.u32()?;
    if magic != MAGIC {
        return Err(GgufError::Magic { got: magic });
    }
    let version = c.u32()?;
    if !(2..=3).contains(&version) {
        let swapped = version.swap_bytes();
        if (2..=3).contains(&swapped) {
            return Err(GgufError::BigEndian { version: swapped, got: version });
        }
        return Err(GgufError::Version { got: version });
    }
    let n_tensors = c.u64()?;
    let n_kv = c.u64()?;
    // A KV takes at least 8 (key length) + 4 (type) + 1 bytes.
    if n_kv > c.remaining() / 13 {
        return Err(GgufError::Count {
            at: c.pos as u64,
            what: "metadata entries",
            count: n_kv,
            each: 13,
            have: c.remaining(),
        });
    }
    let mut alignment = 32u64;
    let mut alignment_seen = false;
    for _ in 0..n_kv {
        let at = c.pos as u64;
        let key = c.string()?;
        let t = c.u32()?;
        let v = skip_value(&mut c, t, 0)?;
        if key == b"general.alignment" {
            if alignment_seen {
                return Err(GgufError::DuplicateAlignment { at });
            }
            alignment_seen = true;
            match v {
                Some(a) if a.is_power_of_two() => alignment = a,
                Some(a) => return Err(GgufError::Alignment { got: a }),
                None => return Err(GgufError::AlignmentType { got: t }),
            }
        }
    }
    // A tensor info takes at least 8 + 4 + 4 + 8 bytes.
    if n_tensors > c.remaining() / 24 {
        return Err(GgufError::Count {
            at: c.pos as u64,
            what: "tensor infos",
            count: n_tensors,
            each: 24,
            have: c.remaining(),
        });
    }
    let mut raw = Vec::new();
    let mut names: std::collections::HashMap<String, u64> = std::collections::HashMap::new();
    for index in 0..n_tensors {
        let name =
            std::str::from_utf8(c.string()?).map_err(|_| GgufError::Utf8 { index })?.to_owned();
        if let Some(&first) = names.get(&name) {
            return Err(GgufError::DuplicateTensor { index, first });
        }
        names.insert(name.clone(), index);
        let nd = c.u32()?;
        if nd > 4 {
            return Err(GgufError::Dims { index, got: nd });
        }
        let mut dims = Vec::with_capacity(4);
        for _ in 0..nd {
            dims.push(c.u64()?);
        }
        let ggml_type = c.u32()?;
        let offset = c.u64()?;
        raw.push((name, dims, ggml_type, offset));
    }
    let end_of_infos = c.pos as u64;
    let data_start = end_of_infos
        .div_ceil(alignment)
        .checked_mul(alignment)
        .ok_or(GgufError::Alignment { got: alignment })?;
    let file_len = bytes.len() as u64;
    let data_len = file_len.saturating_sub(data_start);
    let mut tensors = Vec::with_capacity(raw.len());
    for (index, (name, dims, ggml_type, offset)) in raw.into_iter().enumerate() {
        let index = index as u64;
        let range = match type_info(ggml_type) {
            None => None,
            Some((_, block, size)) => {
                let ovf = |what| GgufError::Overflow { index, what };
                let n = dims
                    .iter()
                    .try_fold(1u64, |a, &d| a.checked_mul(d))
                    .ok_or(ovf("element count"))?;
                let ne0 = dims.first().copied().unwrap_or(1);
                if ne0 % block != 0 {
                    return Err(GgufError::Block { index, ne0, block });
                }
                let len = (n / block).checked_mul(size).ok_or(ovf("byte size"))?;
                let end = offset.checked_add(len).ok_or(ovf("data offset + byte size"))?;
                if end > data_len || offset % alignment != 0 || data_start > file_len {
                    return Err(GgufError::Range { index, begin: offset, end, len: data_len });
                }
                Some((data_start + offset, data_start + end))
            }
        };
        tensors.push(GgufTensor { name, dims, ggml_type, range });
    }
    Ok(Gguf { version, alignment, data_start, tensors })
}

/// The GGML types whose codes are one nibble a weight, packed two to a byte in a `qs` field:
/// Q4_0 (`d`, `qs[16]`), Q4_1 (`d`, `m`, `qs[16]`), Q4_K (`d`, `dmin`, `scales[12]`,
/// `qs[128]`), IQ4_NL (`d`, `qs[16]`: indices into a fixed non-linear table), IQ4_XS (`d`,
/// `scales_h`, `scales_l[4]`, `qs[128]`), MXFP4 (`e`, a UE8M0 exponent, `qs[16]`: e2m1 codes)
/// and NVFP4 (64 weights: four UE4M3 scales, `qs[32]`: e2m1 codes) — as `(type, block bytes,
/// offset of qs, qs bytes)`.
const NIBBLE_TYPES: [(u32, usize, usize, usize); 7] = [
    (2, 18, 2, 16),
    (3, 20, 4, 16),
    (12, 144, 16, 128),
    (20, 18, 2, 16),
    (23, 136, 8, 128),
    (39, 17, 1, 16),
    (40, 36, 4, 32),
];

/// The nibble bytes of a nibble-type tensor's blocks (Q4_0, Q4_1, Q4_K, IQ4_NL, IQ4_XS,
/// MXFP4, NVFP4), or the i8 code bytes of a Q8_0 tensor, concatenated in storage order;
/// `None` for other types ([`split_codes`] reads the 2–6-bit ones). `data` is the tensor's
/// bytes (a whole number of blocks, as [`parse`] checked).
pub fn code_bytes(ggml_type: u32, data: &[u8]) -> Option<Vec<u8>> {
    // (block bytes, offset of the codes in the block, code bytes per block)
    let (bs, off, n) = match NIBBLE_TYPES.iter().find(|t| t.0 == ggml_type) {
        Some(&(_, bs, off, n)) => (bs, off, n),
        None if ggml_type == 8 => (34, 2, 32),
        None => return None,
    };
    Some(block_fields(data, bs, off, n))
}

/// Bytes `offset .. offset + len` of every `block`-byte block of `data`, concatenated.
fn block_fields(data: &[u8], block: usize, offset: usize, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() / block * len);
    for b in data.chunks_exact(block) {
        out.extend_from_slice(&b[offset..offset + len]);
    }
    out
}

/// True when [`code_bytes`] yields nibbles (Q4_0, Q4_1, Q4_K, IQ4_NL, IQ4_XS, MXFP4, NVFP4),
/// false for bytes (Q8_0).
pub fn is_nibble_type(ggml_type: u32) -> bool {
    NIBBLE_TYPES.iter().any(|t| t.0 == ggml_type)
}

/// The codes of a tensor whose weights are 2, 3, 5 or 6 bits wide, split over bit planes in
/// each block (see [`split_codes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitCodes {
    /// Bits per code.
    pub bits: u32,
    /// The blocks' code planes as stored (every field that holds code bits, in block order;
    /// scales, minimums and `d` left out), concatenated: what a general-purpose compressor of
    /// the codes would see.
    pub stored: Vec<u8>,
    /// One code per weight, in weight order, each in `0 .. 2^bits` (the stored value before
    /// its offset is subtracted: Q6_K's `q` where the weight is `d·scale·(q − 32)`).
    pub codes: Vec<u8>,
}

/// `(type, bits, block bytes, offset and length of the code planes)` of the split types. Each
/// type's code fields are adjacent in its block, so the planes are one slice. Block layouts
/// (256 weights unless said):
/// - Q2_K (2 bits): `scales[16]`, `qs[64]`, `d`, `dmin`;
/// - Q3_K (3 bits): `hmask[32]`, `qs[64]`, `scales[12]`, `d`;
/// - Q5_0 / Q5_1 (5 bits, 32 weights): `d` (and `m`), `qh[4]`, `qs[16]`;
/// - Q5_K (5 bits): `d`, `dmin`, `scales[12]`, `qh[32]`, `qs[128]`;
/// - Q6_K (6 bits): `ql[128]`, `qh[64]`, `scales[16]`, `d`.
const SPLIT_TYPES: [(u32, u32, usize, usize, usize); 6] = [
    (10, 2, 84, 16, 64),
    (11, 3, 110, 0, 96),
    (6, 5, 22, 2, 20),
    (7, 5, 24, 4, 20),
    (13, 5, 176, 16, 160),
    (14, 6, 210, 0, 192),
];

/// Where a split type's codes are and how they are put together: a block's code planes are
/// `planes` bytes at `offset` of its `block` bytes, and [`Self::unpack`] turns planes into
/// codes. `tetrad stats` keeps only the planes of a tensor and unpacks them row by row as it
/// counts (a code a byte would cost 1.3–4 × the planes' memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitLayout {
    /// GGML type id.
    pub ggml_type: u32,
    /// Bits per code.
    pub bits: u32,
    /// Weights per block.
    pub weights: u64,
    /// Bytes per block.
    pub block: usize,
    /// Offset of the code planes in a block.
    pub offset: usize,
    /// Bytes of code planes per block.
    pub planes: usize,
}

impl SplitLayout {
    /// The layout of a Q2_K, Q3_K, Q5_0, Q5_1, Q5_K or Q6_K tensor; `None` for other types.
    pub fn of(ggml_type: u32) -> Option<Self> {
        let &(_, bits, block, offset, planes) = SPLIT_TYPES.iter().find(|t| t.0 == ggml_type)?;
        let weights = planes as u64 * 8 / u64::from(bits);
        Some(Self { ggml_type, bits, weights, block, offset, planes })
    }

    /// The code planes of whole blocks (`data`, as [`parse`] checked), concatenated.
    pub fn planes_of(&self, data: &[u8]) -> Vec<u8> {
        block_fields(data, self.block, self.offset, self.planes)
    }

    /// Appends the codes of whole blocks' planes (`planes`: a multiple of [`Self::planes`]
    /// bytes, as [`Self::planes_of`] gives; a trailing partial block is ignored), in weight
    /// order.
    pub fn unpack(&self, planes: &[u8], out: &mut Vec<u8>) {
        for p in planes.chunks_exact(self.planes) {
            unpack_planes(self.ggml_type, p, out);
        }
    }
}

/// Appends the codes of one block of a split type from its code planes, in weight order.
fn unpack_planes(ggml_type: u32, p: &[u8], out: &mut Vec<u8>) {
    match ggml_type {
        // Q2_K (`qs`): weight 128n + 32j + l is bits 2j..2j+2 of qs[32n + l].
        10 => {
            for n in 0..2 {
                for j in 0..4 {
                    out.extend((0..32).map(|l| (p[32 * n + l] >> (2 * j)) & 3));
                }
            }
        }
        // Q3_K (`hmask`, `qs`): the same two low bits from qs, the third from bit 4n + j of
        // hmask[l].
        11 => {
            let (hmask, qs) = p.split_at(32);
            for n in 0..2 {
                for j in 0..4 {
                    out.extend((0..32).map(|l| {
                        let low = (qs[32 * n + l] >> (2 * j)) & 3;
                        let high = (hmask[l] >> (4 * n + j)) & 1;
                        low | (high << 2)
                    }));
                }
            }
        }
        // Q5_0 / Q5_1 (`qh`, `qs`): weight j (< 16) is the low nibble of qs[j], weight j + 16
        // its high nibble; the fifth bit of weight k is bit k of the little-endian u32 qh.
        6 | 7 => {
            let qh = u32::from_le_bytes([p[0], p[1], p[2], p[3]]);
            let qs = &p[4..20];
            let fifth = |k: usize| u8::from((qh >> k) & 1 == 1) << 4;
            out.extend((0..16).map(|j| (qs[j] & 15) | fifth(j)));
            out.extend((0..16).map(|j| (qs[j] >> 4) | fifth(j + 16)));
        }
        // Q5_K (`qh`, `qs`): 64 weights per 32 qs bytes (low nibbles, then high nibbles); the
        // fifth bit of weight 64c + l is bit 2c of qh[l], of weight 64c + 32 + l bit 2c + 1.
        13 => {
            let (qh, qs) = p.split_at(32);
            for c in 0..4 {
                let q = &qs[32 * c..32 * c + 32];
                out.extend((0..32).map(|l| (q[l] & 15) | (((qh[l] >> (2 * c)) & 1) << 4)));
                out.extend((0..32).map(|l| (q[l] >> 4) | (((qh[l] >> (2 * c + 1)) & 1) << 4)));
            }
        }
        // Q6_K (`ql`, `qh`): per half n, weight 128n + 32k + l takes a nibble of ql (k = 0, 1:
        // low nibbles of ql[64n + l], ql[64n + 32 + l]; k = 2, 3: their high nibbles) and bits
        // 2k..2k+2 of qh[32n + l] as bits 4..6.
        14 => {
            let (ql, qh) = p.split_at(128);
            for n in 0..2 {
                for k in 0..4 {
                    out.extend((0..32).map(|l| {
                        let byte = ql[64 * n + 32 * (k % 2) + l];
                        let low = if k < 2 { byte & 15 } else { byte >> 4 };
                        low | (((qh[32 * n + l] >> (2 * k)) & 3) << 4)
                    }));
                }
            }
        }
        _ => unreachable!("not a split type: {ggml_type}"),
    }
}

/// The codes of a Q2_K, Q3_K, Q5_0, Q5_1, Q5_K or Q6_K tensor (`None` for other types):
/// their planes as stored and one code per weight. `data` is the tensor's bytes (a whole
/// number of blocks, as [`parse`] checked).
pub fn split_codes(ggml_type: u32, data: &[u8]) -> Option<SplitCodes> {
    let layout = SplitLayout::of(ggml_type)?;
    let stored = layout.planes_of(data);
    let mut codes = Vec::with_capacity(stored.len() * 8 / layout.bits as usize);
    layout.unpack(&stored, &mut codes);
    Some(SplitCodes { bits: layout.bits, stored, codes })
}

/// The width of the codes `tetrad stats` measures in a tensor of this type: 4 for the nibble
/// types, 8 for Q8_0, 2–6 for the split types; `None` for every other type.
pub fn code_bits(ggml_type: u32) -> Option<u32> {
    if is_nibble_type(ggml_type) {
        Some(4)
    } else if ggml_type == 8 {
        Some(8)
    } else {
        SplitLayout::of(ggml_type).map(|l| l.bits)
    }
}
