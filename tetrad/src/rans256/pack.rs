//! `pack`: int4-row weights of a safetensors checkpoint → `int4-rans256-g0` shards.
//!
//! The writer of `docs/int4-rans256-g0.md` §5, byte-compatible with the reference tool:
//! selection (the expert pattern by default, or any regex), the geometry guard, one pooled
//! table for the whole container, every record decoded and compared before its shard is
//! written, shards named and ordered as the spec says, stamps, and the manifest written last
//! as the completion marker. Records are encoded in parallel (rayon); each record depends only
//! on its bytes and the pooled table, so the output is byte-identical for any thread count.
//!
//! [`pack_with`] and [`Codec::Rans64T1`] write tetrad's own `int4-rans64-t1` instead
//! (`tetrad pack --codec int4-rans64-t1`): the same selection, geometry guard, shard layout,
//! stamps and manifest, but each weight becomes a self-contained blob (its chunks carry their
//! own models, so no pooled table is written), checked by decoding it back, and the manifest
//! also records the sha256 of every original weight (see [`crate::rans64`]).
//!
//! Input stamps: the `colibri.fmt` stamps of every input shard are ingested with the container
//! rules ([`tetrad_quant::stamp::StampSet`], as [`crate::container::Container::open`] does: a
//! malformed value, a tensor stamped two ways, more than 4096 names are refused naming the
//! shard). A selected weight must be unstamped (read as int4-row, as the reference tool does,
//! and checked by the geometry guard) or stamped `int4-row`; any other stamp is refused by name
//! before anything is written (`E_STAMP_NOT_INT4_ROW`, or `E_STAMP_UNKNOWN` for a name that is
//! not a registered format): a stamped tensor is never read as another format, so int8-row or
//! int2-row bytes, and records that are already entropy-coded, are never coded as int4.
//!
//! What is left out: the output holds only the selected weights and their `.qs` scales (the
//! spec's container: "non-expert tensors are not copied"), so [`PackReport::left_out`] lists
//! every other tensor of the input — name, shard, dtype and why — for the report to say so.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use regex::Regex;
use sha2::{Digest as _, Sha256};
use tetrad_quant::Format;
use tetrad_quant::stamp::StampSet;
use tetrad_rans::{
    FORMAT_SCALE_BITS, Record, Table, decode_record, encode_record_packed, max_record_len,
};

use super::manifest::{Manifest, ShardEntry};
use super::{
    FORMAT_NAME, MANIFEST_NAME, Refusal, STAMP_KEY, TABLE_KEY, out_shard_name, table_parts,
};
use crate::io::write_atomic;
use crate::json::sorted_string_map;
use crate::shard::{HeaderStyle, OutTensor, header_bytes};
use crate::shardset::{Loc, ShardSet};
use crate::table_json;

/// The reference tool's selection: routed-expert MLP weights.
pub const EXPERT_PATTERN: &str =
    r"^model\.layers\.(\d+)\.mlp\.experts\.(\d+)\.(gate|up|down)_proj\.weight$";

/// The codec `pack` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Codec {
    /// `int4-rans256-g0`, the reference tool's format (the default).
    #[default]
    Rans256G0,
    /// `int4-rans64-t1`, tetrad's own chunked SIMD-first format.
    Rans64T1,
}

impl Codec {
    /// Every codec.
    pub const ALL: [Codec; 2] = [Codec::Rans256G0, Codec::Rans64T1];

    /// The format name (what stamps and the manifest say).
    pub const fn name(self) -> &'static str {
        match self {
            Codec::Rans256G0 => FORMAT_NAME,
            Codec::Rans64T1 => crate::rans64::FORMAT_NAME,
        }
    }

    /// The codec with this format name.
    pub fn from_name(name: &str) -> Option<Codec> {
        Codec::ALL.into_iter().find(|c| c.name() == name)
    }
}

/// What to pack.
#[derive(Debug, Clone)]
pub struct PackOptions {
    /// Input directory.
    pub indir: PathBuf,
    /// Output directory (created if missing).
    pub outdir: PathBuf,
    /// Only these layer numbers (`model.layers.N.` in the name), if given.
    pub layers: Option<Vec<u64>>,
    /// Selection regex (default [`EXPERT_PATTERN`]).
    pub select: Option<String>,
    /// Replace existing output.
    pub force: bool,
    /// Worker threads (None = all cores).
    pub threads: Option<usize>,
    /// No progress bar.
    pub quiet: bool,
}

/// What `pack` wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct PackReport {
    /// Output shards: (file name, source basename, weight tensors, file bytes).
    pub shards: Vec<(String, String, u64, u64)>,
    /// Number of records written.
    pub records: u64,
    /// Total bytes of the original int4 weights.
    pub original_bytes: u64,
    /// Total bytes of the records (framing included).
    pub record_bytes: u64,
    /// CRC-32 hex of the table (empty for `int4-rans64-t1`, which has none).
    pub table_crc32: String,
    /// The codec written.
    pub codec: Codec,
    /// Existing output removed because of `--force`.
    pub removed: Vec<String>,
    /// Tensors in the input shards (every header entry, duplicates included).
    pub input_tensors: u64,
    /// Every input tensor that is not in the output (neither a selected weight nor the `.qs`
    /// of one), in shard order, then by name. `unpack` cannot restore them.
    pub left_out: Vec<LeftOut>,
    /// The input shards' `__metadata__` keys, sorted, each once. The output's metadata is the
    /// container's own (`colibri.fmt` stamps of the records, the table), so none of them is
    /// kept, and `unpack` cannot restore them.
    pub dropped_metadata: Vec<String>,
}

/// Why an input tensor is not in `pack`'s output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum LeftOutReason {
    /// Its name does not match the selection (norms, attention, embeddings, the `.qs` of a
    /// weight that is not selected, …).
    NotSelected,
    /// Its name matches the selection, but its dtype is not U8.
    NotU8,
    /// Its name matches the selection, but its layer is not among `--layers`.
    OtherLayer,
    /// A later shard (in sorted order) holds a tensor of the same name, which is the one used.
    Shadowed,
}

impl LeftOutReason {
    /// Stable machine-readable name (`--json`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::NotSelected => "not_selected",
            Self::NotU8 => "not_u8",
            Self::OtherLayer => "other_layer",
            Self::Shadowed => "shadowed",
        }
    }

    /// Words for the text report.
    pub const fn describe(self) -> &'static str {
        match self {
            Self::NotSelected => "not selected",
            Self::NotU8 => "selected by name but not U8",
            Self::OtherLayer => "in other layers",
            Self::Shadowed => "shadowed by a later shard",
        }
    }
}

/// An input tensor that `pack` did not write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    /// Tensor name.
    pub tensor: String,
    /// Basename of the input shard holding it.
    pub shard: String,
    /// Its dtype.
    pub dtype: String,
    /// Why it was not written.
    pub reason: LeftOutReason,
}

impl PackReport {
    /// `record_bytes / original_bytes`.
    pub fn ratio(&self) -> f64 {
        if self.original_bytes == 0 {
            0.0
        } else {
            self.record_bytes as f64 / self.original_bytes as f64
        }
    }

    /// One line on the tensors left out, if any: how many, why, and that unpack will not
    /// restore them.
    pub fn left_out_line(&self) -> Option<String> {
        let first = self.left_out.first()?;
        let mut counts: BTreeMap<LeftOutReason, usize> = BTreeMap::new();
        for l in &self.left_out {
            *counts.entry(l.reason).or_default() += 1;
        }
        let why: Vec<String> =
            counts.iter().map(|(r, n)| format!("{n} {}", r.describe())).collect();
        Some(format!(
            "left out {} of {} input tensor(s) ({}): pack does not copy them and unpack will not \
             restore them (--json lists each), e.g. {} in {}",
            self.left_out.len(),
            self.input_tensors,
            why.join(", "),
            first.tensor,
            first.shard
        ))
    }

    /// One line naming the input `__metadata__` keys the output does not keep, if any.
    pub fn dropped_metadata_line(&self) -> Option<String> {
        if self.dropped_metadata.is_empty() {
            return None;
        }
        Some(format!(
            "not kept: the input's __metadata__ ({}); the packed shards carry only their own \
             stamps{}, and unpack will not restore it",
            self.dropped_metadata.join(", "),
            if self.codec == Codec::Rans256G0 { " and table" } else { "" }
        ))
    }

    /// The reference tool's final line.
    pub fn ratio_line(&self) -> String {
        let r = self.ratio();
        format!(
            "[ratio] record/original: {r:.4} ({:.2}% reduction incl. framing)",
            (1.0 - r) * 100.0
        )
    }
}

/// A selected weight: its location and its scales' location.
#[derive(Debug, Clone)]
struct Selected {
    name: String,
    weight: Loc,
    scales: Loc,
}

/// Whether `name` is one the spec counts as existing output: `out-rans-*.safetensors` (any
/// middle, so `out-rans-junk.safetensors` too: refused without `--force`, deleted with it),
/// wider than the numbered names pack writes ([`crate::rans256::is_out_shard_name`]).
fn is_existing_output_name(name: &str) -> bool {
    name.len() >= "out-rans-.safetensors".len()
        && name.starts_with("out-rans-")
        && name.ends_with(".safetensors")
}

/// Existing output in `outdir`: (shard names, manifest present).
fn existing_output(outdir: &Path) -> Result<(Vec<String>, bool), Refusal> {
    let mut shards = Vec::new();
    let mut manifest = false;
    let rd = match std::fs::read_dir(outdir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((shards, false)),
        Err(e) => return Err(Refusal::new("E_IO", format!("{}: {e}", outdir.display()))),
    };
    for e in rd {
        let e = e.map_err(|e| Refusal::new("E_IO", format!("{}: {e}", outdir.display())))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if name == MANIFEST_NAME {
            manifest = true;
        } else if is_existing_output_name(&name) {
            shards.push(name);
        }
    }
    shards.sort();
    Ok((shards, manifest))
}

fn layer_of(name: &str) -> Option<u64> {
    let rest = name.split("layers.").nth(1)?;
    rest.split('.').next()?.parse().ok()
}

/// The stamps of every input shard, ingested with the container rules (as
/// [`crate::container::Container::open`] does).
fn input_stamps(set: &ShardSet) -> Result<StampSet, Refusal> {
    let mut stamps = StampSet::new();
    for s in &set.shards {
        let value = s.header.metadata.as_ref().and_then(|m| m.get(STAMP_KEY)).map(String::as_str);
        stamps.ingest(&s.basename(), value).map_err(|e| Refusal::new(e.class(), e.to_string()))?;
    }
    Ok(stamps)
}

/// The stamp guard: a selected weight is packed as int4-row bytes, so it must be unstamped or
/// stamped `int4-row`; a stamped tensor is never read as another format.
fn stamp_guard(set: &ShardSet, stamps: &StampSet, name: &str, weight: Loc) -> Result<(), Refusal> {
    let Some(stamp) = stamps.get(name) else { return Ok(()) };
    let format = Format::from_name(stamp);
    if format == Some(Format::Int4Row) {
        return Ok(());
    }
    let (class, why) = match format {
        None => ("E_STAMP_UNKNOWN", "which is not a registered format name"),
        Some(Format::Int4Rans256G0 | Format::Int4Rans64T1) => (
            "E_STAMP_NOT_INT4_ROW",
            "it is already entropy-coded (tetrad unpack restores int4-row)",
        ),
        Some(_) => ("E_STAMP_NOT_INT4_ROW", "pack codes int4-row bytes only"),
    };
    Err(Refusal::new(
        class,
        format!(
            "{}: {name} is stamped {stamp:?} in {STAMP_KEY}, expected int4-row or no stamp: {why}",
            set.shards[weight.shard].basename()
        ),
    ))
}

/// The geometry guard: the weight must be per-row int4 with one F32 scale per row.
fn geometry_guard(set: &ShardSet, name: &str, weight: Loc) -> Result<Loc, Refusal> {
    let qs_name = format!("{name}.qs");
    let Some((qs, qe)) = set.get(&qs_name) else {
        return Err(Refusal::new("E_GEOMETRY_NO_SCALES", format!("{name}: no {qs_name} tensor")));
    };
    let qbytes = qe.len();
    if qe.dtype != "F32" || qbytes == 0 || qbytes % 4 != 0 {
        return Err(Refusal::new(
            "E_GEOMETRY_NOT_PER_ROW",
            format!(
                "{name}: scales {qs_name} are {} with {qbytes} bytes, expected F32 with a nonzero multiple of 4",
                qe.dtype
            ),
        ));
    }
    let scale_rows = qbytes / 4;
    let w = set.entry(weight);
    let wbytes = w.len();
    if let [o, _] = w.shape[..] {
        if scale_rows != o {
            return Err(Refusal::new(
                "E_GEOMETRY_NOT_PER_ROW",
                format!(
                    "{name}: weight {:?} has {o} rows but {qs_name} holds {scale_rows} scales",
                    w.shape
                ),
            ));
        }
        return Ok(qs);
    }
    if !wbytes.is_multiple_of(scale_rows) {
        return Err(Refusal::new(
            "E_GEOMETRY_NOT_PER_ROW",
            format!(
                "{name}: {wbytes} weight bytes are not a whole number of rows for {scale_rows} scales"
            ),
        ));
    }
    let ratio = wbytes / scale_rows;
    let refuse = |class, why: &str| {
        Err(Refusal::new(
            class,
            format!(
                "{name}: {wbytes} weight bytes / {scale_rows} scales = {ratio} bytes per scale: {why}"
            ),
        ))
    };
    match ratio {
        32 => refuse("E_GEOMETRY_G64", "this is int4 with 64-weight groups, not per-row"),
        64 => refuse(
            "E_GEOMETRY_AMBIGUOUS",
            "per-row with 128 inputs or 128-weight groups cannot be told apart",
        ),
        r if r < 64 => refuse("E_GEOMETRY_NOT_PER_ROW", "too few bytes per scale for per-row int4"),
        _ => Ok(qs),
    }
}

/// Runs `pack` with the default codec, `int4-rans256-g0`. On any refusal nothing new is left
/// in `outdir` (outputs are written to temporary files and renamed; the manifest, written
/// last, marks completion).
pub fn pack(opts: &PackOptions) -> Result<PackReport, Refusal> {
    pack_with(opts, Codec::Rans256G0)
}

/// Runs `pack` writing `codec`; otherwise as [`pack`].
pub fn pack_with(opts: &PackOptions, codec: Codec) -> Result<PackReport, Refusal> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.threads.unwrap_or(0))
        .build()
        .map_err(|e| Refusal::new("E_INTERNAL", format!("thread pool: {e}")))?;
    pool.install(|| pack_in_pool(opts, codec))
}

fn pack_in_pool(opts: &PackOptions, codec: Codec) -> Result<PackReport, Refusal> {
    let pattern = opts.select.as_deref().unwrap_or(EXPERT_PATTERN);
    let re = Regex::new(pattern).map_err(|e| Refusal::new("E_USAGE", format!("--select: {e}")))?;

    let (old_shards, old_manifest) = existing_output(&opts.outdir)?;
    if !opts.force && (!old_shards.is_empty() || old_manifest) {
        let detail = if old_manifest {
            format!(
                "{} already holds a pack output ({} shard(s) and {MANIFEST_NAME}); use --force to replace it",
                opts.outdir.display(),
                old_shards.len()
            )
        } else {
            format!(
                "{} holds {} out-rans shard(s) but no {MANIFEST_NAME}: likely an interrupted run; use --force to replace them",
                opts.outdir.display(),
                old_shards.len()
            )
        };
        return Err(Refusal::new("E_OUTPUT_EXISTS", detail));
    }

    let set = ShardSet::open_dir(&opts.indir)?;
    let stamps = input_stamps(&set)?;
    // Selection, grouped by the shard that owns each weight (index order = sorted names).
    let mut by_shard: BTreeMap<usize, Vec<Selected>> = BTreeMap::new();
    for (name, &loc) in &set.index {
        if !re.is_match(name) || set.entry(loc).dtype != "U8" {
            continue;
        }
        if let Some(layers) = &opts.layers
            && !layer_of(name).is_some_and(|l| layers.contains(&l))
        {
            continue;
        }
        stamp_guard(&set, &stamps, name, loc)?;
        let scales = geometry_guard(&set, name, loc)?;
        if set.entry(loc).is_empty() {
            return Err(Refusal::new("E_EMPTY", format!("{name}: the weight has no bytes")));
        }
        by_shard.entry(loc.shard).or_default().push(Selected {
            name: name.clone(),
            weight: loc,
            scales,
        });
    }
    if by_shard.is_empty() {
        return Err(Refusal::new(
            "E_SELECTION_EMPTY",
            format!(
                "no U8 tensor of {} matches {pattern:?}{}",
                opts.indir.display(),
                if opts.layers.is_some() { " in the selected layers" } else { "" }
            ),
        ));
    }
    let all: Vec<&Selected> = by_shard.values().flatten().collect();
    let left_out = left_out(&set, &all, &re, opts.layers.as_deref());
    let input_tensors = set.shards.iter().map(|s| s.header.tensors.len() as u64).sum();
    let original_bytes: u64 = all.iter().map(|s| set.entry(s.weight).len()).sum();

    // One table pooled over every selected tensor (int4-rans256-g0 only).
    let pooled = match codec {
        Codec::Rans256G0 => Some(pooled_table(&set, &all)?),
        Codec::Rans64T1 => None,
    };

    // Clear old output only once the input is known to be packable.
    let mut removed = Vec::new();
    if opts.force {
        for name in
            old_shards.iter().map(String::as_str).chain(old_manifest.then_some(MANIFEST_NAME))
        {
            let p = opts.outdir.join(name);
            std::fs::remove_file(&p)
                .map_err(|e| Refusal::new("E_IO", format!("removing {}: {e}", p.display())))?;
            removed.push(name.to_owned());
        }
    }
    std::fs::create_dir_all(&opts.outdir)
        .map_err(|e| Refusal::new("E_IO", format!("{}: {e}", opts.outdir.display())))?;

    let bar = crate::progress::bytes(original_bytes, "pack", opts.quiet);
    let mut entries = Vec::new();
    let mut record_bytes = 0u64;
    for (k, (&shard_idx, selected)) in by_shard.iter().enumerate() {
        let records: Vec<Vec<u8>> = selected
            .par_iter()
            .map(|s| {
                let data = set.data(s.weight);
                let r = match &pooled {
                    Some((table, _, _)) => encode_verified(table, &s.name, data),
                    None => crate::rans64::encode_verified(
                        &s.name,
                        data,
                        tetrad_rans::rans64::DEFAULT_CHUNK_SHIFT,
                    ),
                };
                bar.inc(set.entry(s.weight).len());
                r
            })
            .collect::<Result<_, _>>()?;
        let stamps =
            sorted_string_map(selected.iter().map(|s| (s.name.as_str(), codec.name())), ", ", ": ");
        let mut metadata: BTreeMap<String, String> = [(STAMP_KEY.to_owned(), stamps)].into();
        if let Some((_, table_json, _)) = &pooled {
            metadata.insert(TABLE_KEY.to_owned(), table_json.clone());
        }
        let originals = match codec {
            Codec::Rans256G0 => BTreeMap::new(),
            Codec::Rans64T1 => selected
                .par_iter()
                .map(|s| (s.name.clone(), format!("{:x}", Sha256::digest(set.data(s.weight)))))
                .collect(),
        };
        let entry =
            write_shard(opts, k, &set, shard_idx, selected, &records, &metadata, originals)?;
        record_bytes += records.iter().map(|r| r.len() as u64).sum::<u64>();
        entries.push(entry);
    }
    bar.finish_and_clear();
    let table_crc32 = pooled.as_ref().map(|(_, _, crc)| crc.clone());
    let manifest =
        Manifest { format: codec.name(), shards: entries, table_crc32: table_crc32.clone() };
    crate::io::write_bytes_atomic(&opts.outdir.join(MANIFEST_NAME), manifest.to_json().as_bytes())
        .map_err(|e| Refusal::new("E_IO", format!("writing {MANIFEST_NAME}: {e}")))?;
    Ok(PackReport {
        shards: manifest
            .shards
            .iter()
            .map(|s| (s.file.clone(), s.source.clone(), s.weight_tensors, s.bytes))
            .collect(),
        records: all.len() as u64,
        original_bytes,
        record_bytes,
        table_crc32: table_crc32.unwrap_or_default(),
        codec,
        removed,
        input_tensors,
        left_out,
        dropped_metadata: dropped_metadata(&set),
    })
}

/// Every `__metadata__` key of the input shards, sorted, each once.
fn dropped_metadata(set: &ShardSet) -> Vec<String> {
    let keys: std::collections::BTreeSet<&String> = set
        .shards
        .iter()
        .filter_map(|s| s.header.metadata.as_ref())
        .flat_map(|m| m.keys())
        .collect();
    keys.into_iter().cloned().collect()
}

/// Every input tensor that is neither a selected weight nor the `.qs` of one, with the reason,
/// in shard order and then by name.
fn left_out(set: &ShardSet, all: &[&Selected], re: &Regex, layers: Option<&[u64]>) -> Vec<LeftOut> {
    let at = |l: Loc| (l.shard, l.entry);
    let written: std::collections::BTreeSet<(usize, usize)> =
        all.iter().flat_map(|s| [at(s.weight), at(s.scales)]).collect();
    let mut out = Vec::new();
    for (si, shard) in set.shards.iter().enumerate() {
        let basename = shard.basename();
        let mut here: Vec<LeftOut> = Vec::new();
        for (ei, t) in shard.header.tensors.iter().enumerate() {
            if written.contains(&(si, ei)) {
                continue;
            }
            let reason = if set.index.get(&t.name).map(|&l| at(l)) != Some((si, ei)) {
                LeftOutReason::Shadowed
            } else if !re.is_match(&t.name) {
                LeftOutReason::NotSelected
            } else if t.dtype != "U8" {
                LeftOutReason::NotU8
            } else if layers.is_some_and(|ls| !layer_of(&t.name).is_some_and(|l| ls.contains(&l))) {
                LeftOutReason::OtherLayer
            } else {
                // Every other indexed U8 match was selected (or refused).
                LeftOutReason::NotSelected
            };
            here.push(LeftOut {
                tensor: t.name.clone(),
                shard: basename.clone(),
                dtype: t.dtype.clone(),
                reason,
            });
        }
        here.sort_by(|a, b| a.tensor.cmp(&b.tensor));
        out.extend(here);
    }
    out
}

/// The pooled table over every selected weight: the table, its JSON, its CRC-32 hex.
fn pooled_table(set: &ShardSet, all: &[&Selected]) -> Result<(Table, String, String), Refusal> {
    let hist = all.par_iter().map(|s| crate::synth::nibble_histogram(set.data(s.weight))).reduce(
        || [0u64; 16],
        |mut a, b| {
            a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
            a
        },
    );
    let table = Table::from_histogram(FORMAT_SCALE_BITS, &hist)
        .map_err(|e| Refusal::new(e.class(), format!("pooled histogram {hist:?}: {e}")))?;
    let parts = table_parts(&table);
    let table_json = table_json::to_json(&parts);
    let table_crc32 = format!("{:08x}", crc32fast::hash(&table_json::slot_bytes(&parts.slots)));
    Ok((table, table_json, table_crc32))
}

/// Writes output shard `k` (records, then their `.qs` scales) atomically and returns its
/// manifest entry.
#[allow(clippy::too_many_arguments)] // one shard's worth of inputs
fn write_shard(
    opts: &PackOptions,
    k: usize,
    set: &ShardSet,
    shard_idx: usize,
    selected: &[Selected],
    records: &[Vec<u8>],
    metadata: &BTreeMap<String, String>,
    originals: BTreeMap<String, String>,
) -> Result<ShardEntry, Refusal> {
    let shapes: Vec<[u64; 1]> = records.iter().map(|r| [r.len() as u64]).collect();
    let mut tensors = Vec::with_capacity(2 * selected.len());
    for ((s, rec), shape) in selected.iter().zip(records).zip(&shapes) {
        tensors.push(OutTensor { name: &s.name, dtype: "U8", shape, data: rec });
        let qe = set.entry(s.scales);
        tensors.push(OutTensor {
            name: &qe.name,
            dtype: &qe.dtype,
            shape: &qe.shape,
            data: set.data(s.scales),
        });
    }
    let header = header_bytes(metadata, &tensors, HeaderStyle::EscapedUnpadded)
        .map_err(|e| Refusal::new("E_INTERNAL", e.0))?;
    let file = out_shard_name(k);
    let path = opts.outdir.join(&file);
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    write_atomic(&path, |w| -> Result<(), std::io::Error> {
        for chunk in std::iter::once(&header[..]).chain(tensors.iter().map(|t| t.data)) {
            w.write_all(chunk)?;
            hasher.update(chunk);
            size += chunk.len() as u64;
        }
        Ok(())
    })
    .map_err(|e| Refusal::new("E_IO", format!("writing {}: {e}", path.display())))?;
    Ok(ShardEntry {
        bytes: size,
        file,
        originals,
        records: selected
            .iter()
            .zip(records)
            .map(|(s, r)| (s.name.clone(), format!("{:x}", Sha256::digest(r))))
            .collect(),
        sha256: format!("{:x}", hasher.finalize()),
        source: set.shards[shard_idx].basename(),
        weight_tensors: selected.len() as u64,
    })
}

/// Encodes one weight and proves the record decodes back to it before anyone sees it.
fn encode_verified(table: &Table, name: &str, packed: &[u8]) -> Result<Vec<u8>, Refusal> {
    let mut blob = vec![0u8; max_record_len(2 * packed.len(), tetrad_rans::FORMAT_STREAMS)];
    let len = encode_record_packed(table, packed, &mut blob)
        .map_err(|e| Refusal::new(e.class(), format!("{name}: {e}")))?;
    blob.truncate(len);
    let record = Record::parse(&blob).map_err(|e| {
        Refusal::new("E_INTERNAL", format!("{name}: own record does not parse: {e}"))
    })?;
    let mut back = vec![0u8; packed.len()];
    decode_record(table, &record, &mut back).map_err(|e| {
        Refusal::new("E_INTERNAL", format!("{name}: own record does not decode: {e}"))
    })?;
    if back != packed {
        return Err(Refusal::new(
            "E_INTERNAL",
            format!("{name}: record decodes to different bytes"),
        ));
    }
    Ok(blob)
}
