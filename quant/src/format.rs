//! The weight-format registry: one enum for every row of `docs/FORMATS.md`.
//!
//! Ordinals are never written to disk (names are); they exist for compatibility with the C
//! engine's integer format ids. The engine we are compatible with once had two formats claim
//! the same ordinal in one week because its id was a plain integer with no registry; here a
//! single `const` table, [`REGISTRY`], holds every row — ordinal, canonical name, status, the
//! weight-byte and scale formulas (as data *and* as the text the docs print) and the value
//! rule — and tests prove that ordinals and names are unique and that `docs/FORMATS.md` lists
//! exactly the same rows.
//!
//! # Claiming an ordinal
//! A new public format takes [`NEXT_FREE_ORDINAL`] (then the next one up) in the same commit
//! that adds its row here and in `docs/FORMATS.md`. Ordinals at or above
//! [`PRIVATE_ORDINAL_START`] are a private block for work in progress and are never published.
//! An ordinal, once published, is never reused, even if its format is withdrawn.
//!
//! # Formulas
//! Every byte formula is evaluated with checked `u64` arithmetic: a shape whose byte count
//! does not fit in `u64` yields [`FormulaError::Overflow`], never a panic or a wrapped value.

use core::fmt;

/// Every weight format tetrad knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Format {
    /// Ordinal 0: raw little-endian f32.
    F32,
    /// Ordinal 1: one i8 per weight, one f32 scale per row.
    Int8Row,
    /// Ordinal 2: one nibble per weight (offset 8), one f32 scale per row.
    Int4Row,
    /// Ordinal 3: one 2-bit crumb per weight (offset 2), one f32 scale per row.
    Int2Row,
    /// Ordinal 4: int4 nibbles with one f32 scale per `gs` columns of a row.
    Int4Grouped,
    /// Ordinal 5: 3-bit values in 24-byte groups of 64, one f32 scale per group.
    Int3G64,
    /// Ordinal 6: the E8 lattice codebook format (recognised, refused by the kernels).
    E8Iq3Lattice,
    /// Ordinal 7: OCP MXFP4, e2m1 nibbles with one UE8M0 byte scale per 32 inputs.
    Mxfp4,
    /// Ordinal 8: OCP FP8 E4M3FN bytes with one f32 scale per 128×128 block.
    Fp8E4m3B128,
    /// No ordinal: the entropy-coded int4-row record (stamp-gated; `docs/int4-rans256-g0.md`).
    Int4Rans256G0,
    /// No ordinal: tetrad's own entropy-coded int4-row blob (stamp-gated;
    /// `docs/int4-rans64-t1.md`).
    Int4Rans64T1,
}

/// The next public ordinal a new format may claim.
pub const NEXT_FREE_ORDINAL: u8 = 9;

/// Ordinals at or above this value are private (work in progress, never published).
pub const PRIVATE_ORDINAL_START: u8 = 100;

/// The group sizes `resolve` tries for `int4-grouped`, finest first.
pub const GROUP_SIZE_CANDIDATES: [u32; 8] = [16, 32, 48, 64, 96, 128, 192, 256];

/// How tetrad treats a format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Status {
    /// tetrad reads and writes its values.
    Supported,
    /// Its byte signature is recognised so that it is never misread; its values are refused.
    Refused,
    /// Recognised only through a stamp (never from byte arithmetic); decodes to another format.
    StampGated,
}

impl Status {
    /// The word `docs/FORMATS.md` prints in its status column.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Supported => "supported",
            Self::Refused => "recognised, refused",
            Self::StampGated => "stamp-gated",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How many weight bytes a `[O, I]` tensor of a format occupies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WeightRule {
    /// `O · ceil(I / cols) · bytes`: each row is `ceil(I / cols)` units of `bytes` bytes.
    Units {
        /// Columns (inputs) one unit covers.
        cols: u32,
        /// Bytes one unit occupies.
        bytes: u32,
    },
    /// Depends on the data (an entropy-coded record); no formula.
    DataDependent,
}

/// How many scale elements a `[O, I]` tensor of a format carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ScaleCount {
    /// No scales at all.
    None,
    /// One per row: `O`.
    PerRow,
    /// One per `gs` columns of a row, groups restarting at each row: `O · ceil(I / gs)`.
    PerGroup {
        /// The fixed group size.
        gs: u32,
    },
    /// Like [`ScaleCount::PerGroup`] with a group size that is not stored but inferred
    /// (see [`GROUP_SIZE_CANDIDATES`]).
    PerInferredGroup,
    /// One per `rows × cols` block: `ceil(O / rows) · ceil(I / cols)`.
    Blocks {
        /// Block height.
        rows: u32,
        /// Block width.
        cols: u32,
    },
    /// Exactly one element whatever the shape (the E8 format's 4-byte tag).
    Tag,
}

/// The element type of a format's scales (the sibling `X.qs` tensor).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ScaleElem {
    /// No scale tensor.
    None,
    /// Little-endian f32, 4 bytes.
    F32,
    /// One UE8M0 exponent byte (`2^(e−127)`), 1 byte.
    Ue8m0,
    /// A 4-byte tag (one "float" that is a format signature, not a scale).
    Tag,
}

impl ScaleElem {
    /// Bytes per element.
    pub const fn bytes(self) -> u64 {
        match self {
            Self::None => 0,
            Self::F32 | Self::Tag => 4,
            Self::Ue8m0 => 1,
        }
    }
}

/// A format's scales: how many, of which element type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ScaleRule {
    /// How many elements.
    pub count: ScaleCount,
    /// Their type.
    pub elem: ScaleElem,
}

/// Why a formula could not be evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormulaError {
    /// The result does not fit in `u64`.
    #[error("shape [{o}, {i}] overflows u64 in the byte formula")]
    Overflow {
        /// Rows.
        o: u64,
        /// Columns.
        i: u64,
    },
    /// The format's weight bytes depend on the data (no formula).
    #[error("weight bytes are data-dependent")]
    DataDependent,
    /// The format's scale count needs a group size and none (or zero) was given.
    #[error("a group size is required, got none or 0")]
    GroupSizeRequired,
}

impl FormulaError {
    /// Stable machine-readable class name of this error.
    pub const fn class(&self) -> &'static str {
        match self {
            Self::Overflow { .. } => "E_FORMULA_OVERFLOW",
            Self::DataDependent => "E_FORMULA_DATA_DEPENDENT",
            Self::GroupSizeRequired => "E_FORMULA_GROUP_SIZE",
        }
    }
}

/// One registry row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FormatInfo {
    /// The format.
    pub format: Format,
    /// The public ordinal, if it has one.
    pub ordinal: Option<u8>,
    /// The canonical name (what stamps and docs say).
    pub name: &'static str,
    /// How tetrad treats it.
    pub status: Status,
    /// Weight-byte formula.
    pub weight: WeightRule,
    /// Scale formula.
    pub scales: ScaleRule,
    /// The weight-byte formula as `docs/FORMATS.md` prints it.
    pub weight_text: &'static str,
    /// The scale formula (count, then element type) as `docs/FORMATS.md` prints it.
    pub scale_text: &'static str,
    /// The value of `W[o, i]`, as `docs/FORMATS.md` prints it.
    pub value_rule: &'static str,
}

const fn units(cols: u32, bytes: u32) -> WeightRule {
    WeightRule::Units { cols, bytes }
}

const fn scales(count: ScaleCount, elem: ScaleElem) -> ScaleRule {
    ScaleRule { count, elem }
}

/// The registry, in enum order (`REGISTRY[f as usize].format == f`; a test proves it).
pub const REGISTRY: [FormatInfo; 11] = [
    FormatInfo {
        format: Format::F32,
        ordinal: Some(0),
        name: "f32",
        status: Status::Supported,
        weight: units(1, 4),
        scales: scales(ScaleCount::None, ScaleElem::None),
        weight_text: "4·O·I",
        scale_text: "none",
        value_rule: "raw f32",
    },
    FormatInfo {
        format: Format::Int8Row,
        ordinal: Some(1),
        name: "int8-row",
        status: Status::Supported,
        weight: units(1, 1),
        scales: scales(ScaleCount::PerRow, ScaleElem::F32),
        weight_text: "O·I",
        scale_text: "O f32",
        value_rule: "q[o,i] · s[o]",
    },
    FormatInfo {
        format: Format::Int4Row,
        ordinal: Some(2),
        name: "int4-row",
        status: Status::Supported,
        weight: units(2, 1),
        scales: scales(ScaleCount::PerRow, ScaleElem::F32),
        weight_text: "O·ceil(I/2)",
        scale_text: "O f32",
        value_rule: "(nib(o,i) − 8) · s[o]",
    },
    FormatInfo {
        format: Format::Int2Row,
        ordinal: Some(3),
        name: "int2-row",
        status: Status::Supported,
        weight: units(4, 1),
        scales: scales(ScaleCount::PerRow, ScaleElem::F32),
        weight_text: "O·ceil(I/4)",
        scale_text: "O f32",
        value_rule: "(crumb(o,i) − 2) · s[o]",
    },
    FormatInfo {
        format: Format::Int4Grouped,
        ordinal: Some(4),
        name: "int4-grouped",
        status: Status::Supported,
        weight: units(2, 1),
        scales: scales(ScaleCount::PerInferredGroup, ScaleElem::F32),
        weight_text: "O·ceil(I/2)",
        scale_text: "O·ceil(I/gs) f32",
        value_rule: "(nib − 8) · s[o, i/gs]",
    },
    FormatInfo {
        format: Format::Int3G64,
        ordinal: Some(5),
        name: "int3-g64",
        status: Status::Supported,
        weight: units(64, 24),
        scales: scales(ScaleCount::PerGroup { gs: 64 }, ScaleElem::F32),
        weight_text: "O·ceil(I/64)·24",
        scale_text: "O·ceil(I/64) f32",
        value_rule: "(u3 − 4) · s[o, i/64]",
    },
    FormatInfo {
        format: Format::E8Iq3Lattice,
        ordinal: Some(6),
        name: "e8-iq3-lattice",
        status: Status::Refused,
        weight: units(256, 98),
        scales: scales(ScaleCount::Tag, ScaleElem::Tag),
        weight_text: "O·ceil(I/256)·98",
        scale_text: "1 tag",
        value_rule: "lattice code",
    },
    FormatInfo {
        format: Format::Mxfp4,
        ordinal: Some(7),
        name: "mxfp4",
        status: Status::Supported,
        weight: units(2, 1),
        scales: scales(ScaleCount::PerGroup { gs: 32 }, ScaleElem::Ue8m0),
        weight_text: "O·ceil(I/2)",
        scale_text: "O·ceil(I/32) ue8m0",
        value_rule: "e2m1(nib) · 2^(e−127)",
    },
    FormatInfo {
        format: Format::Fp8E4m3B128,
        ordinal: Some(8),
        name: "fp8-e4m3-b128",
        status: Status::Supported,
        weight: units(1, 1),
        scales: scales(ScaleCount::Blocks { rows: 128, cols: 128 }, ScaleElem::F32),
        weight_text: "O·I",
        scale_text: "ceil(O/128)·ceil(I/128) f32",
        value_rule: "e4m3(b) · s[o/128, i/128]",
    },
    FormatInfo {
        format: Format::Int4Rans256G0,
        ordinal: None,
        name: "int4-rans256-g0",
        status: Status::StampGated,
        weight: WeightRule::DataDependent,
        scales: scales(ScaleCount::PerRow, ScaleElem::F32),
        weight_text: "data-dependent",
        scale_text: "O f32",
        value_rule: "decodes losslessly to the int4-row bytes",
    },
    FormatInfo {
        format: Format::Int4Rans64T1,
        ordinal: None,
        name: "int4-rans64-t1",
        status: Status::StampGated,
        weight: WeightRule::DataDependent,
        scales: scales(ScaleCount::PerRow, ScaleElem::F32),
        weight_text: "data-dependent",
        scale_text: "O f32",
        value_rule: "decodes losslessly to the int4-row bytes",
    },
];

/// `ceil(a / b)` for `b > 0` (no overflow: the result never exceeds `a`).
const fn ceil_div(a: u64, b: u64) -> u64 {
    a / b + !a.is_multiple_of(b) as u64
}

impl Format {
    /// Every format, in registry order.
    pub const ALL: [Format; 11] = [
        Format::F32,
        Format::Int8Row,
        Format::Int4Row,
        Format::Int2Row,
        Format::Int4Grouped,
        Format::Int3G64,
        Format::E8Iq3Lattice,
        Format::Mxfp4,
        Format::Fp8E4m3B128,
        Format::Int4Rans256G0,
        Format::Int4Rans64T1,
    ];

    /// This format's registry row.
    pub const fn info(self) -> &'static FormatInfo {
        &REGISTRY[self as usize]
    }

    /// The canonical name (what stamps say).
    pub const fn name(self) -> &'static str {
        self.info().name
    }

    /// The public ordinal, if the format has one.
    pub const fn ordinal(self) -> Option<u8> {
        self.info().ordinal
    }

    /// How tetrad treats the format.
    pub const fn status(self) -> Status {
        self.info().status
    }

    /// The format with this canonical name (exact, case-sensitive), if any.
    pub fn from_name(name: &str) -> Option<Format> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The format with this ordinal, if any.
    pub fn from_ordinal(ordinal: u8) -> Option<Format> {
        Self::ALL.into_iter().find(|f| f.ordinal() == Some(ordinal))
    }

    /// Weight bytes of a `[o, i]` tensor in this format.
    ///
    /// # Errors
    /// [`FormulaError::DataDependent`] for the entropy-coded formats (`int4-rans256-g0`,
    /// `int4-rans64-t1`); [`FormulaError::Overflow`] if the
    /// count does not fit in `u64`.
    pub const fn weight_bytes(self, o: u64, i: u64) -> Result<u64, FormulaError> {
        match self.info().weight {
            WeightRule::DataDependent => Err(FormulaError::DataDependent),
            WeightRule::Units { cols, bytes } => {
                let per_row = match ceil_div(i, cols as u64).checked_mul(bytes as u64) {
                    Some(v) => v,
                    None => return Err(FormulaError::Overflow { o, i }),
                };
                match o.checked_mul(per_row) {
                    Some(v) => Ok(v),
                    None => Err(FormulaError::Overflow { o, i }),
                }
            }
        }
    }

    /// Number of scale elements of a `[o, i]` tensor in this format. `gs` is used only by
    /// `int4-grouped` (whose group size is not part of the format) and ignored otherwise.
    ///
    /// # Errors
    /// [`FormulaError::GroupSizeRequired`] for `int4-grouped` without a nonzero `gs`;
    /// [`FormulaError::Overflow`] if the count does not fit in `u64`.
    pub const fn scale_count(self, o: u64, i: u64, gs: Option<u32>) -> Result<u64, FormulaError> {
        let r = match self.info().scales.count {
            ScaleCount::None => Some(0),
            ScaleCount::PerRow => Some(o),
            ScaleCount::Tag => Some(1),
            ScaleCount::PerGroup { gs } => o.checked_mul(ceil_div(i, gs as u64)),
            ScaleCount::PerInferredGroup => match gs {
                Some(g) if g > 0 => o.checked_mul(ceil_div(i, g as u64)),
                _ => return Err(FormulaError::GroupSizeRequired),
            },
            ScaleCount::Blocks { rows, cols } => {
                ceil_div(o, rows as u64).checked_mul(ceil_div(i, cols as u64))
            }
        };
        match r {
            Some(v) => Ok(v),
            None => Err(FormulaError::Overflow { o, i }),
        }
    }

    /// Scale bytes (`X.qs` byte count) of a `[o, i]` tensor: count × element size.
    ///
    /// # Errors
    /// As [`Format::scale_count`].
    pub const fn scale_bytes(self, o: u64, i: u64, gs: Option<u32>) -> Result<u64, FormulaError> {
        let n = match self.scale_count(o, i, gs) {
            Ok(n) => n,
            Err(e) => return Err(e),
        };
        match n.checked_mul(self.info().scales.elem.bytes()) {
            Some(v) => Ok(v),
            None => Err(FormulaError::Overflow { o, i }),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
