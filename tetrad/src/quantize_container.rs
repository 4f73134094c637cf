//! `tetrad quantize`: float safetensors → a colibrì-style quantized container.
//!
//! A float checkpoint (F32, BF16 or F16 tensors) becomes a container every other tetrad tool
//! reads: each selected 2-D float tensor `X` of shape `[O, I]` is replaced by its codes `X`
//! (dtype `U8`, shape `[O, row_bytes]`) followed by its scales `X.qs` (dtype `F32`, one per
//! row, group or fp8 block; `U8` UE8M0 exponents for mxfp4), produced by the reference
//! quantizers of [`tetrad_quant::quantize`]
//! (the spec's bytes, not a fast path). Everything else — 1-D tensors, integer tensors,
//! unselected tensors — is copied byte for byte, in header order. Each output shard stamps
//! what it wrote in `__metadata__["colibri.fmt"]` (sorted keys, `", "`/`": "` separators),
//! merged with any stamps the input already carried, because `I` is not recorded in the file
//! and the stamp is what lets readers tell int4 from int8 codes of the same byte count.
//!
//! Input is one shard file or a directory of `*.safetensors` shards; output is always a
//! directory holding one shard per input shard, under the same file name (what `tetrad pack
//! --indir` takes). A run is all or nothing: each shard is built in memory (one at a time) and
//! written to a temporary file beside its destination; the temporary files are renamed only
//! once every shard succeeded, and a refusal removes them (and an output directory the run
//! created).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use regex::Regex;
use tetrad_quant::format::GROUP_SIZE_CANDIDATES;
use tetrad_quant::quantize::{
    QuantizeError, quantize_fp8_e4m3_b128, quantize_int2_row, quantize_int3_g64,
    quantize_int4_grouped, quantize_int4_row, quantize_int8_row, quantize_mxfp4,
};

use crate::container::StoredScales;
use crate::error::{Class, Refusal};
use crate::json::sorted_string_map;
use crate::meta::{STAMP_KEY, stamp_map};
use crate::shard::{HeaderStyle, OutTensor, shard_bytes};
use crate::shardset::{Shard, shards_of};

/// A format `tetrad quantize` can write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuantFormat {
    /// `int4-row`: nibbles `q + 8`, one scale per row.
    Int4Row,
    /// `int4-grouped`: nibbles, one scale per `gs` columns of a row.
    Int4Grouped(usize),
    /// `int8-row`: one i8 per weight, one scale per row.
    Int8Row,
    /// `int2-row`: crumbs `q + 2`, one scale per row.
    Int2Row,
    /// `int3-g64`: 24-byte groups of 64 values, one scale per group.
    Int3G64,
    /// `mxfp4`: e2m1 nibbles, one UE8M0 exponent byte per 32 columns of a row.
    Mxfp4,
    /// `fp8-e4m3-b128`: E4M3FN bytes, one f32 scale per 128 × 128 block.
    Fp8E4m3B128,
}

/// One tensor's quantized bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct Quantized {
    /// The codes, `O · row_bytes` bytes.
    pub codes: Vec<u8>,
    /// Bytes of a code row.
    pub row_bytes: usize,
    /// The scales as stored in `X.qs` (little-endian f32, or UE8M0 bytes for mxfp4).
    pub scales: Vec<u8>,
    /// The dtype of `X.qs`: `F32`, or `U8` for mxfp4.
    pub scale_dtype: &'static str,
    /// Number of scales (the shape of `X.qs`).
    pub scale_count: usize,
}

impl QuantFormat {
    /// Parses `int4-row`, `int4-grouped:GS`, `int8-row`, `int2-row`, `int3-g64`, `mxfp4` or
    /// `fp8-e4m3-b128`. GS must be
    /// one of the group sizes readers detect from the scale count
    /// ([`GROUP_SIZE_CANDIDATES`]).
    pub fn parse(s: &str) -> Result<Self, String> {
        Ok(match s {
            "int4-row" => Self::Int4Row,
            "int8-row" => Self::Int8Row,
            "int2-row" => Self::Int2Row,
            "int3-g64" => Self::Int3G64,
            "mxfp4" => Self::Mxfp4,
            "fp8-e4m3-b128" => Self::Fp8E4m3B128,
            _ => match s.strip_prefix("int4-grouped:") {
                Some(gs) => match gs.parse::<u32>() {
                    Ok(g) if GROUP_SIZE_CANDIDATES.contains(&g) => Self::Int4Grouped(g as usize),
                    _ => {
                        return Err(format!(
                            "group size {gs:?} is not one readers can detect: {GROUP_SIZE_CANDIDATES:?}"
                        ));
                    }
                },
                None => {
                    return Err(format!(
                        "unknown format {s:?}, expected int4-row, int4-grouped:GS, int8-row, int2-row, int3-g64, mxfp4 or fp8-e4m3-b128"
                    ));
                }
            },
        })
    }

    /// The registry name stamped in `colibri.fmt` (`int4-grouped` without its group size,
    /// which readers recover from the scale count).
    pub fn stamp_name(self) -> &'static str {
        match self {
            Self::Int4Row => "int4-row",
            Self::Int4Grouped(_) => "int4-grouped",
            Self::Int8Row => "int8-row",
            Self::Int2Row => "int2-row",
            Self::Int3G64 => "int3-g64",
            Self::Mxfp4 => "mxfp4",
            Self::Fp8E4m3B128 => "fp8-e4m3-b128",
        }
    }

    /// The stamp a tensor of `i` columns gets: an `int4-grouped` tensor with one group per
    /// row is `int4-row` (the same bytes).
    pub fn stamp_for_columns(self, i: u64) -> &'static str {
        match self {
            Self::Int4Grouped(gs) if i <= gs as u64 => "int4-row",
            f => f.stamp_name(),
        }
    }

    /// True for the formats whose codes are nibbles (int4-row, int4-grouped, mxfp4).
    pub fn is_nibbles(self) -> bool {
        matches!(self, Self::Int4Row | Self::Int4Grouped(_) | Self::Mxfp4)
    }

    /// True where the shared spec's byte arithmetic can infer the format. mxfp4 it never
    /// infers (its one-byte scales fit none of its steps): a reader that follows the spec to
    /// the letter refuses an mxfp4 tensor, stamped or not, and only a stamp-trusting reader
    /// (tetrad) reads it. It is written anyway when asked for, and said so.
    pub fn spec_infers(self) -> bool {
        self != Self::Mxfp4
    }

    /// The codes and scales of `w[O, I]`.
    pub fn quantize(self, w: &[f32], o: usize, i: usize) -> Result<Quantized, QuantizeError> {
        let ovf = QuantizeError::Overflow { o, i };
        let (row_bytes, scale_count) = match self {
            Self::Int4Row => (i.div_ceil(2), o),
            Self::Int4Grouped(gs) => {
                (i.div_ceil(2), o.checked_mul(i.div_ceil(gs.max(1))).ok_or(ovf)?)
            }
            Self::Int8Row => (i, o),
            Self::Int2Row => (i.div_ceil(4), o),
            Self::Int3G64 => (
                i.div_ceil(64).checked_mul(tetrad_quant::quantize::INT3_GROUP_BYTES).ok_or(ovf)?,
                o.checked_mul(i.div_ceil(64)).ok_or(ovf)?,
            ),
            Self::Mxfp4 => (i.div_ceil(2), o.checked_mul(i.div_ceil(32)).ok_or(ovf)?),
            Self::Fp8E4m3B128 => (i, o.div_ceil(128).checked_mul(i.div_ceil(128)).ok_or(ovf)?),
        };
        let mut codes = vec![0u8; o.checked_mul(row_bytes).ok_or(ovf)?];
        if self == Self::Mxfp4 {
            let mut scales = vec![0u8; scale_count];
            quantize_mxfp4(w, o, i, &mut codes, &mut scales)?;
            return Ok(Quantized { codes, row_bytes, scales, scale_dtype: "U8", scale_count });
        }
        let mut scales = vec![0f32; scale_count];
        match self {
            Self::Int4Row => quantize_int4_row(w, o, i, &mut codes, &mut scales)?,
            Self::Int4Grouped(gs) => quantize_int4_grouped(w, o, i, gs, &mut codes, &mut scales)?,
            Self::Int8Row => quantize_int8_row(w, o, i, &mut codes, &mut scales)?,
            Self::Int2Row => quantize_int2_row(w, o, i, &mut codes, &mut scales)?,
            Self::Int3G64 => quantize_int3_g64(w, o, i, &mut codes, &mut scales)?,
            Self::Fp8E4m3B128 => quantize_fp8_e4m3_b128(w, o, i, &mut codes, &mut scales)?,
            Self::Mxfp4 => unreachable!("handled above"),
        }
        Ok(Quantized {
            codes,
            row_bytes,
            scales: scales.iter().flat_map(|s| s.to_le_bytes()).collect(),
            scale_dtype: "F32",
            scale_count,
        })
    }
}

impl std::fmt::Display for QuantFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Int4Grouped(gs) => write!(f, "int4-grouped:{gs}"),
            other => f.write_str(other.stamp_name()),
        }
    }
}

/// The f32 values of a float tensor (`F32`, `BF16`, `F16`), or `None` for any other dtype.
pub fn float_values(dtype: &str, bytes: &[u8]) -> Option<Vec<f32>> {
    matches!(dtype, "F32" | "BF16" | "F16")
        .then(|| StoredScales { dtype, bytes }.to_f32())
        .flatten()
}

/// What happened to one input tensor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorAction {
    /// Tensor name.
    pub name: String,
    /// Shard it came from (file name).
    pub shard: String,
    /// Its dtype and shape in the input.
    pub dtype: String,
    /// Its shape in the input.
    pub shape: Vec<u64>,
    /// True when quantized (`X` + `X.qs` written), false when copied.
    pub quantized: bool,
    /// The stamp written for a quantized tensor (an int4-grouped tensor with one group per
    /// row is stamped `int4-row`); `None` when copied.
    pub stamp: Option<&'static str>,
    /// Why a selected tensor was copied rather than quantized: its shape is a collision
    /// (see `portable`); `None` otherwise.
    pub kept: Option<String>,
}

/// The result of [`quantize_path`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuantizeReport {
    /// `(input path, output path, output bytes)` per shard.
    pub shards: Vec<(PathBuf, PathBuf, u64)>,
    /// Every input tensor, in order.
    pub tensors: Vec<TensorAction>,
}

/// Options of [`quantize_path`].
#[derive(Debug, Clone)]
pub struct QuantizeOptions {
    /// Format to write.
    pub format: QuantFormat,
    /// Only quantize 2-D float tensors whose name matches (others are copied).
    pub only: Option<Regex>,
    /// Replace output shards that already exist.
    pub force: bool,
    /// No progress bar.
    pub quiet: bool,
}

/// Whether a tensor is quantized: 2-D, float, non-empty, selected, not itself a `.qs`.
fn selected(name: &str, dtype: &str, shape: &[u64], only: Option<&Regex>) -> bool {
    matches!(dtype, "F32" | "BF16" | "F16")
        && matches!(shape, [o, i] if *o > 0 && *i > 0)
        && !name.ends_with(".qs")
        && only.is_none_or(|r| r.is_match(name))
}

/// The stamp of one quantized tensor, checked by resolving it the way every reader will: an
/// `int4-grouped` tensor with a single group per row is stamped `int4-row` (the same bytes),
/// and a group size the scale count would resolve to another group size is refused.
fn stamp_for(
    fmt: QuantFormat,
    file: &str,
    name: &str,
    o: u64,
    i: u64,
    codes: usize,
    scale_bytes: usize,
) -> Result<&'static str, Refusal> {
    let stamp = fmt.stamp_for_columns(i);
    let r = tetrad_quant::resolve(o, i, codes as u64, scale_bytes as u64, Some(stamp)).map_err(
        |e| Refusal::of(&e, format!("{file}: {name}: {fmt} output does not resolve: {e}")),
    )?;
    let same_group = match fmt {
        QuantFormat::Int4Grouped(gs) if stamp == "int4-grouped" => {
            r.group_size.and_then(|g| usize::try_from(g).ok()) == Some(gs)
        }
        _ => true,
    };
    if r.format.name() != stamp || !same_group {
        return Err(Refusal::new(
            Class::QuantAmbiguous,
            format!(
                "{file}: {name} [{o}, {i}]: {fmt} would be read back as {r} (readers infer the group size from the scale count); choose another group size"
            ),
        ));
    }
    Ok(stamp)
}

/// Whether a reader that follows the colibrì engine's format spec (docs/FORMATS.md) to the letter reads the stamped
/// bytes as the stamped format; if not, what it reads instead. tetrad's own readers settle
/// collision shapes by the stamp (docs/FORMATS.md, "With a stamp"), the spec's do not: an
/// int4-row `[O, 1]` has int8-row's byte counts, an int4-row `[1, 196]` carries the E8 tag,
/// int2-row `[O, 2]` is int4-row's bytes, int3-g64 `[O, 48]` int4-row's. `tetrad quantize`
/// writes such a tensor's floats unchanged instead (a safe copy every reader takes by dtype),
/// so that nothing it writes is read differently, or refused, by another implementation.
pub(crate) fn portable(
    stamp: &str,
    o: u64,
    i: u64,
    codes: usize,
    scale_bytes: usize,
) -> Result<(), String> {
    match tetrad_quant::resolve::resolve_literal(
        o,
        i,
        codes as u64,
        scale_bytes as u64,
        Some(stamp),
    ) {
        Ok(_) => Ok(()),
        Err(e) => Err(format!(
            "as {stamp} its bytes collide with another layout, and a reader that follows the spec literally refuses it ({}: {e})",
            Class::of(&e)
        )),
    }
}

/// Builds the quantized bytes of one shard and what it did to each tensor.
pub fn quantize_shard(
    shard: &Shard,
    opts: &QuantizeOptions,
) -> Result<(Vec<u8>, Vec<TensorAction>), Refusal> {
    let file = shard.basename();
    let names: std::collections::BTreeSet<&str> =
        shard.header.tensors.iter().map(|t| t.name.as_str()).collect();
    let mut stamps: BTreeMap<String, String> = BTreeMap::new();
    let mut metadata = shard.header.metadata.clone().unwrap_or_default();
    if let Some(old) = metadata.remove(STAMP_KEY) {
        stamps = stamp_map(&old)
            .map_err(|(class, why)| Refusal::new(class, format!("{file}: {why}")))?;
    }
    struct Built {
        codes: Vec<u8>,
        code_shape: [u64; 2],
        scales: Vec<u8>,
        scale_shape: [u64; 1],
        scale_dtype: &'static str,
        qs_name: String,
    }
    let mut built: Vec<Option<Built>> = Vec::with_capacity(shard.header.tensors.len());
    let mut actions = Vec::with_capacity(shard.header.tensors.len());
    for t in &shard.header.tensors {
        let q = selected(&t.name, &t.dtype, &t.shape, opts.only.as_ref());
        actions.push(TensorAction {
            name: t.name.clone(),
            shard: file.clone(),
            dtype: t.dtype.clone(),
            shape: t.shape.clone(),
            quantized: q,
            stamp: None,
            kept: None,
        });
        if !q {
            built.push(None);
            continue;
        }
        let qs_name = format!("{}.qs", t.name);
        if names.contains(qs_name.as_str()) {
            return Err(Refusal::new(
                Class::NameCollision,
                format!("{file}: {} would write {qs_name}, which the input already has", t.name),
            ));
        }
        let (o, i) = (t.shape[0], t.shape[1]);
        let too_big = || {
            Refusal::new(
                Class::QuantOverflow,
                format!("{file}: {}: shape {:?} too large", t.name, t.shape),
            )
        };
        let (ou, iu) = (
            usize::try_from(o).map_err(|_| too_big())?,
            usize::try_from(i).map_err(|_| too_big())?,
        );
        let w = float_values(&t.dtype, shard.data(t)).ok_or_else(too_big)?;
        let q = opts
            .format
            .quantize(&w, ou, iu)
            .map_err(|e| Refusal::of(&e, format!("{file}: {}: {e}", t.name)))?;
        let stamp = stamp_for(opts.format, &file, &t.name, o, i, q.codes.len(), q.scales.len())?;
        if opts.format.spec_infers()
            && let Err(why) = portable(stamp, o, i, q.codes.len(), q.scales.len())
        {
            if let Some(a) = actions.last_mut() {
                a.quantized = false;
                a.kept = Some(why);
            }
            built.push(None);
            continue;
        }
        stamps.insert(t.name.clone(), stamp.to_owned());
        if let Some(a) = actions.last_mut() {
            a.stamp = Some(stamp);
        }
        built.push(Some(Built {
            code_shape: [o, q.row_bytes as u64],
            scale_shape: [q.scale_count as u64],
            scale_dtype: q.scale_dtype,
            scales: q.scales,
            codes: q.codes,
            qs_name,
        }));
    }
    if !stamps.is_empty() {
        metadata.insert(
            STAMP_KEY.to_owned(),
            sorted_string_map(stamps.iter().map(|(k, v)| (k.as_str(), v.as_str())), ", ", ": "),
        );
    }
    let mut out = Vec::with_capacity(built.len() + actions.iter().filter(|a| a.quantized).count());
    for (t, b) in shard.header.tensors.iter().zip(&built) {
        match b {
            None => out.push(OutTensor {
                name: &t.name,
                dtype: &t.dtype,
                shape: &t.shape,
                data: shard.data(t),
            }),
            Some(b) => {
                out.push(OutTensor {
                    name: &t.name,
                    dtype: "U8",
                    shape: &b.code_shape,
                    data: &b.codes,
                });
                out.push(OutTensor {
                    name: &b.qs_name,
                    dtype: b.scale_dtype,
                    shape: &b.scale_shape,
                    data: &b.scales,
                });
            }
        }
    }
    let bytes = shard_bytes(&metadata, &out, HeaderStyle::EscapedUnpadded)
        .map_err(|e| Refusal::new(Class::Internal, format!("{file}: {e}")))?;
    Ok((bytes, actions))
}

/// Quantizes `input` (a shard or a directory of shards) into the directory `outdir`, all or
/// nothing: an output that is an input is refused (`E_OUTPUT_IS_INPUT`, even with `force`), an
/// existing one without `force` (`E_OUTPUT_EXISTS`), an `outdir` that is not a directory
/// (`E_OUTPUT_NOT_DIR`) and a selection that quantizes nothing (`E_SELECTION_EMPTY`), all
/// before anything is written; every shard is then quantized and staged
/// ([`crate::output`]), and the staged files are renamed only when all shards succeeded. On a
/// refusal they are removed, and so is `outdir` if this run created it.
pub fn quantize_path(
    input: &Path,
    outdir: &Path,
    opts: &QuantizeOptions,
) -> Result<QuantizeReport, Refusal> {
    let paths = shards_of(input).map_err(|e| Refusal::new(e.class, e.detail))?;
    crate::io::check_output_dir(outdir)?;
    let mut targets = Vec::with_capacity(paths.len());
    for p in &paths {
        let name = p.file_name().ok_or_else(|| {
            Refusal::new(Class::NoInput, format!("{} has no file name", p.display()))
        })?;
        let target = outdir.join(name);
        crate::io::check_output(&target, &paths, opts.force)?;
        targets.push(target);
    }
    let shards = paths
        .iter()
        .map(|p| Shard::open(p).map_err(|e| Refusal::new(e.class, e.detail)))
        .collect::<Result<Vec<_>, _>>()?;
    let selects = |s: &Shard| {
        s.header.tensors.iter().any(|t| selected(&t.name, &t.dtype, &t.shape, opts.only.as_ref()))
    };
    if !shards.iter().any(selects) {
        let which = opts
            .only
            .as_ref()
            .map_or_else(String::new, |r| format!(" whose name matches --only {:?}", r.as_str()));
        return Err(Refusal::new(
            Class::SelectionEmpty,
            format!(
                "no 2-D F32/BF16/F16 tensor of {}{which}: nothing to quantize, and the output \
                 would be an unquantized copy",
                input.display()
            ),
        ));
    }
    let mut outputs = crate::output::Outputs::new();
    outputs
        .create_dir(outdir)
        .map_err(|e| Refusal::new(Class::Io, format!("{}: {e}", outdir.display())))?;
    let total: u64 = shards.iter().map(|s| s.bytes.len() as u64).sum();
    let bar = crate::progress::bytes(total, "quantize", opts.quiet);
    let mut report = QuantizeReport { shards: Vec::new(), tensors: Vec::new() };
    for ((p, shard), target) in paths.iter().zip(&shards).zip(&targets) {
        // On a refusal `outputs` is dropped: the staged files go, then the folders this run
        // created.
        let (bytes, actions) = quantize_shard(shard, opts)?;
        outputs
            .stage(target, |w| w.write_all(&bytes))
            .map_err(|e| Refusal::new(Class::Io, e.to_string()))?;
        bar.inc(shard.bytes.len() as u64);
        report.shards.push((p.clone(), target.clone(), bytes.len() as u64));
        report.tensors.extend(actions);
    }
    outputs.commit().map_err(|e| Refusal::new(Class::Io, e.to_string()))?;
    bar.finish_and_clear();
    Ok(report)
}
