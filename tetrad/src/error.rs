//! Refusals: why a command or an engine call of this crate declined its input.
//!
//! Every refusal has a *class*, the spec's `E_*` name that scripts and the reference tools
//! match on, and a *detail* that names the file, shard or tensor and the numbers found against
//! those expected. [`Refusal`] is that pair; its `Display` is `E_CLASS: detail`, the line the
//! command prints after `REFUSED ` and the `{"refused": {"class", "detail"}}` of `--json`.
//!
//! The class is a [`Class`], not a string: one variant per class this crate refuses with,
//! each listed once in the table below together with its wire name, from which
//! [`Class::name`], [`Class::from_name`] and [`Class::ALL`] are generated — a misspelt class
//! does not compile. The codec and kernel crates (`tetrad-rans`, `tetrad-fse`,
//! `tetrad-quant`) have their own typed errors, each with a `class()` generated from its own
//! variants; a refusal that passes one of them on keeps that crate's class as
//! [`Class::Codec`], which only [`Class::of`] builds, from such a typed error, so no class
//! name is ever written in this crate outside the table.
//!
//! Why a class and a text, and not an enum with a variant per situation and typed fields: a
//! refusal's context is the path, shard and tensor it concerns, already written into the
//! detail where it happens (`out-rans-00000.safetensors: w: record too large …`), and its
//! users — the command's report, `--json`, the C ABI's last-error, Python's `Refused` — need
//! exactly the class to branch on and the text to show. Code that must tell situations apart
//! matches on [`Refusal::class`].

use std::fmt;

/// Declares [`Class`]: each variant once, with its doc and its wire name.
macro_rules! classes {
    ($( $(#[doc = $doc:literal])+ $variant:ident = $name:literal, )+) => {
        /// A refusal class: the spec's `E_*` name as a type ([`Class::name`] gives the name).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum Class {
            $( $(#[doc = $doc])+ $variant, )+
            /// A class of a codec or kernel crate that is not one of this crate's, passed on with
            /// its typed error's name (built by [`Class::of`]).
            Codec(CodecClass),
        }

        impl Class {
            /// Every class of this crate's own (not the [`Class::Codec`] ones), in table order.
            pub const ALL: &[Class] = &[$(Class::$variant),+];

            /// The wire name (`E_TRUNCATED`, …).
            pub const fn name(self) -> &'static str {
                match self {
                    $(Class::$variant => $name,)+
                    Class::Codec(c) => c.0,
                }
            }
        }
    };
}

classes! {
    /// `bench --arm` names no arm of this build.
    ArmUnknown = "E_ARM_UNKNOWN",
    /// The requested arm is not available on this CPU.
    ArmUnavailable = "E_ARM_UNAVAILABLE",
    /// A CFS1 coding step failed (a bench round).
    Cfs1 = "E_CFS1",
    /// A CFS1 container's tensor is not in a format it can hold.
    Cfs1Format = "E_CFS1_FORMAT",
    /// A count (elements, records, tensors) differs from the one declared or expected.
    CountMismatch = "E_COUNT_MISMATCH",
    /// A record's sha256 differs from the manifest's.
    DigestMismatch = "E_DIGEST_MISMATCH",
    /// The manifest has no digest for a shard or record.
    DigestMissing = "E_DIGEST_MISSING",
    /// Nothing to code: an empty tensor or histogram.
    Empty = "E_EMPTY",
    /// A weight's bytes per scale fit more than one int4 geometry.
    GeometryAmbiguous = "E_GEOMETRY_AMBIGUOUS",
    /// A weight is int4 with 64-weight groups, not per-row.
    GeometryG64 = "E_GEOMETRY_G64",
    /// A weight is not int4 with one scale per row.
    GeometryNotPerRow = "E_GEOMETRY_NOT_PER_ROW",
    /// A weight has no `.qs` scales.
    GeometryNoScales = "E_GEOMETRY_NO_SCALES",
    /// GGUF: the tensor data alignment is invalid.
    GgufAlignment = "E_GGUF_ALIGNMENT",
    /// GGUF: a block-quantized tensor's size is not whole blocks.
    GgufBlock = "E_GGUF_BLOCK",
    /// GGUF: a tensor's dimensions are invalid.
    GgufDims = "E_GGUF_DIMS",
    /// GGUF: a key or tensor name appears twice.
    GgufDuplicate = "E_GGUF_DUPLICATE",
    /// GGUF: the file does not start with the magic.
    GgufMagic = "E_GGUF_MAGIC",
    /// GGUF: arrays nest deeper than allowed.
    GgufNesting = "E_GGUF_NESTING",
    /// GGUF: a size or offset overflows.
    GgufOverflow = "E_GGUF_OVERFLOW",
    /// GGUF: a tensor lies outside the data section.
    GgufRange = "E_GGUF_RANGE",
    /// GGUF: the file ends inside its header.
    GgufTruncated = "E_GGUF_TRUNCATED",
    /// GGUF: a string is not UTF-8.
    GgufUtf8 = "E_GGUF_UTF8",
    /// GGUF: a value type is unknown.
    GgufValueType = "E_GGUF_VALUE_TYPE",
    /// GGUF: a version (or byte order) this reader does not read.
    GgufVersion = "E_GGUF_VERSION",
    /// A step that cannot fail on valid state failed: a bug, not the input.
    Internal = "E_INTERNAL",
    /// A file could not be read or written.
    Io = "E_IO",
    /// A kernel's buffer lengths do not match the shape.
    KernelLength = "E_KERNEL_LENGTH",
    /// A kernel's shape overflows this machine's sizes.
    KernelOverflow = "E_KERNEL_OVERFLOW",
    /// The manifest is not the documented JSON.
    ManifestMalformed = "E_MANIFEST_MALFORMED",
    /// A container folder has no manifest.
    ManifestMissing = "E_MANIFEST_MISSING",
    /// Two outputs would have the same name.
    NameCollision = "E_NAME_COLLISION",
    /// A tensor name the container cannot hold.
    NameUnsupported = "E_NAME_UNSUPPORTED",
    /// A shard is not a CFS1 container.
    NotCfse = "E_NOT_CFSE",
    /// No input files where some were expected.
    NoInput = "E_NO_INPUT",
    /// A decoded tensor's sha256 differs from the original's in the manifest.
    OriginalDigestMismatch = "E_ORIGINAL_DIGEST_MISMATCH",
    /// The output exists and `--force` was not given.
    OutputExists = "E_OUTPUT_EXISTS",
    /// The output would hold fewer tensors than the model it replaces.
    OutputFuller = "E_OUTPUT_FULLER",
    /// The output file is a directory.
    OutputIsDir = "E_OUTPUT_IS_DIR",
    /// The output is one of the inputs.
    OutputIsInput = "E_OUTPUT_IS_INPUT",
    /// The caller's output buffer has the wrong length.
    OutputLen = "E_OUTPUT_LEN",
    /// The output folder exists and is not a directory.
    OutputNotDir = "E_OUTPUT_NOT_DIR",
    /// A record or blob is too large for this machine.
    Oversize = "E_OVERSIZE",
    /// The requested kernel path is not available for this tensor.
    PathUnavailable = "E_PATH_UNAVAILABLE",
    /// A plot file name has no known extension.
    PlotExtension = "E_PLOT_EXTENSION",
    /// A tensor's quantization cannot be decided.
    QuantAmbiguous = "E_QUANT_AMBIGUOUS",
    /// A quantized output's size overflows.
    QuantOverflow = "E_QUANT_OVERFLOW",
    /// Re-encoding the decoded record does not give its bytes back.
    ReencodeMismatch = "E_REENCODE_MISMATCH",
    /// A decode differs from what was encoded.
    Roundtrip = "E_ROUNDTRIP",
    /// The scales have a dtype the format does not use.
    ScaleDtype = "E_SCALE_DTYPE",
    /// A selection matched no tensor.
    SelectionEmpty = "E_SELECTION_EMPTY",
    /// A shape does not fit the tensor or the machine.
    Shape = "E_SHAPE",
    /// A shard's sha256 differs from the manifest's.
    ShardDigestMismatch = "E_SHARD_DIGEST_MISMATCH",
    /// A shard's header is not a valid safetensors header.
    ShardMalformed = "E_SHARD_MALFORMED",
    /// A shard listed in the manifest is absent.
    ShardMissing = "E_SHARD_MISSING",
    /// A shard beside the manifest is not listed in it.
    ShardUnlisted = "E_SHARD_UNLISTED",
    /// One tensor is stamped with two different formats.
    StampConflict = "E_STAMP_CONFLICT",
    /// A stamped tensor is absent.
    StampDangling = "E_STAMP_DANGLING",
    /// A stamped tensor has the wrong dtype.
    StampDtype = "E_STAMP_DTYPE",
    /// The stamp metadata is not a JSON object of strings.
    StampMalformed = "E_STAMP_MALFORMED",
    /// A container shard has no stamps.
    StampMissing = "E_STAMP_MISSING",
    /// A tensor stamped with a registered format that is not int4-row.
    StampNotInt4Row = "E_STAMP_NOT_INT4_ROW",
    /// A tensor stamped with a name no format registers.
    StampUnknown = "E_STAMP_UNKNOWN",
    /// The table cannot code a symbol the data needs.
    SymbolUncodable = "E_SYMBOL_UNCODABLE",
    /// The table JSON's CRC differs from its arrays'.
    TableCrc = "E_TABLE_CRC",
    /// The table's frequencies do not sum to the scale.
    TableFreqSum = "E_TABLE_FREQ_SUM",
    /// The table JSON is not the documented object.
    TableMalformed = "E_TABLE_MALFORMED",
    /// A container shard has no table.
    TableMissing = "E_TABLE_MISSING",
    /// The table's scale bits are out of range.
    TableScale = "E_TABLE_SCALE",
    /// The table's slot array disagrees with its frequencies.
    TableSlot = "E_TABLE_SLOT",
    /// The table's start array disagrees with its frequencies.
    TableStart = "E_TABLE_START",
    /// No tensor of that name.
    TensorMissing = "E_TENSOR_MISSING",
    /// Too large to hold in memory.
    TooLarge = "E_TOO_LARGE",
    /// A command-line value clap cannot check.
    Usage = "E_USAGE",
    /// A CFS1 blob does not decode to its recorded digest.
    VerifyMismatch = "E_VERIFY_MISMATCH",
    /// A zstd step failed (a bench round).
    Zstd = "E_ZSTD",
}

impl Class {
    /// The class of a typed error of this crate or of a codec or kernel crate.
    pub fn of<E: Classified + ?Sized>(e: &E) -> Self {
        e.class_of()
    }

    /// The class named `name`, among this crate's own ([`Class::ALL`]).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|c| c.name() == name)
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl serde::Serialize for Class {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// The class of a codec or kernel crate's typed error (its `class()`), as carried by
/// [`Class::Codec`]. Only [`Class::of`] makes one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CodecClass(&'static str);

/// A typed error with a refusal class.
pub trait Classified {
    /// Its refusal class.
    fn class_of(&self) -> Class;
}

impl<T: Classified + ?Sized> Classified for &T {
    fn class_of(&self) -> Class {
        (**self).class_of()
    }
}

/// The codec and kernel crates' errors: their `class()` is generated from their variants.
macro_rules! codec_errors {
    ($($t:ty),+ $(,)?) => {
        $(impl Classified for $t {
            fn class_of(&self) -> Class {
                let name = self.class();
                Class::from_name(name).unwrap_or(Class::Codec(CodecClass(name)))
            }
        })+
    };
}

codec_errors!(
    tetrad_rans::TableError,
    tetrad_rans::StreamError,
    tetrad_rans::RecordError,
    tetrad_rans::EncodeError,
    tetrad_rans::DecodeError,
    tetrad_rans::rans64::Error,
    tetrad_rans::rans64::EncodeError,
    tetrad_fse::DecodeError,
    tetrad_fse::EncodeError,
    tetrad_quant::resolve::ResolveError,
    tetrad_quant::stamp::StampError,
    tetrad_quant::stamp::StampSetError,
    tetrad_quant::stamp::VerifyError<'_>,
    tetrad_quant::adapter::AdapterError,
    tetrad_quant::format::FormulaError,
    tetrad_quant::kernels::KernelError,
    tetrad_quant::quantize::QuantizeError,
);

/// A refusal: its [`Class`] and a detail naming the file or tensor, with the numbers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{class}: {detail}")]
pub struct Refusal {
    /// Refusal class.
    pub class: Class,
    /// What and where, with the numbers.
    pub detail: String,
}

impl Refusal {
    /// A refusal of `class`.
    pub fn new(class: Class, detail: impl Into<String>) -> Self {
        Self { class, detail: detail.into() }
    }

    /// A refusal with the class of the typed error `e`, and `detail`.
    pub fn of<E: Classified + ?Sized>(e: &E, detail: impl Into<String>) -> Self {
        Self::new(Class::of(e), detail)
    }
}

impl From<std::io::Error> for Refusal {
    fn from(e: std::io::Error) -> Self {
        Self::new(Class::Io, e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::{Class, Refusal};

    /// `ShardMalformed` → `E_SHARD_MALFORMED`: the wire name follows from the variant's.
    fn screaming(variant: &str) -> String {
        let mut s = String::from("E");
        for c in variant.chars() {
            if c.is_ascii_uppercase() {
                s.push('_');
            }
            s.push(c.to_ascii_uppercase());
        }
        s
    }

    #[test]
    fn every_name_is_its_variant_in_capitals_and_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for &c in Class::ALL {
            assert_eq!(c.name(), screaming(&format!("{c:?}")), "{c:?}");
            assert!(seen.insert(c.name()), "{} twice", c.name());
            assert_eq!(Class::from_name(c.name()), Some(c));
            assert_eq!(c.to_string(), c.name());
        }
        assert!(Class::ALL.len() >= 70, "{}", Class::ALL.len());
        assert_eq!(Class::from_name("E_IO "), None);
    }

    #[test]
    fn display_is_class_colon_detail_and_codec_classes_pass_through() {
        let r = Refusal::new(Class::OutputExists, "out/a.safetensors exists");
        assert_eq!(r.to_string(), "E_OUTPUT_EXISTS: out/a.safetensors exists");
        let e = tetrad_rans::Record::parse(&[]).unwrap_err();
        let r = Refusal::of(&e, e.to_string());
        assert_eq!(r.class.name(), e.class());
        assert_eq!(matches!(r.class, Class::Codec(_)), Class::from_name(e.class()).is_none());
        assert_eq!(r.to_string(), format!("{}: {e}", e.class()));
        assert_eq!(serde_json::json!({"c": Class::Io})["c"], "E_IO");
        // A codec class that is also one of this crate's is that variant.
        let e = tetrad_rans::EncodeError::Empty;
        assert_eq!(Class::of(&e), Class::Empty);
    }
}
