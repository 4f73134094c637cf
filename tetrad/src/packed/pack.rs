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
use super::{MANIFEST_NAME, out_shard_name};
use crate::error::{Class, Refusal};
use crate::json::sorted_string_map;
use crate::meta::{FORMAT_NAME, STAMP_KEY, TABLE_KEY};
use crate::output::Outputs;
use crate::shard::{HeaderStyle, OutTensor, header_bytes};
use crate::shardset::{Loc, ShardSet};
use crate::table_json::{self, table_parts};

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
/// wider than the numbered names pack writes ([`crate::packed::is_out_shard_name`]).
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
        Err(e) => return Err(Refusal::new(Class::Io, format!("{}: {e}", outdir.display()))),
    };
    for e in rd {
        let e = e.map_err(|e| Refusal::new(Class::Io, format!("{}: {e}", outdir.display())))?;
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
        stamps.ingest(&s.basename(), value).map_err(|e| Refusal::of(&e, e.to_string()))?;
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
        None => (Class::StampUnknown, "which is not a registered format name"),
        Some(Format::Int4Rans256G0 | Format::Int4Rans64T1) => (
            Class::StampNotInt4Row,
            "it is already entropy-coded (tetrad unpack restores int4-row)",
        ),
        Some(_) => (Class::StampNotInt4Row, "pack codes int4-row bytes only"),
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
        return Err(Refusal::new(Class::GeometryNoScales, format!("{name}: no {qs_name} tensor")));
    };
    let qbytes = qe.len();
    if qe.dtype != "F32" || qbytes == 0 || qbytes % 4 != 0 {
        return Err(Refusal::new(
            Class::GeometryNotPerRow,
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
                Class::GeometryNotPerRow,
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
            Class::GeometryNotPerRow,
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
        32 => refuse(Class::GeometryG64, "this is int4 with 64-weight groups, not per-row"),
        64 => refuse(
            Class::GeometryAmbiguous,
            "per-row with 128 inputs or 128-weight groups cannot be told apart",
        ),
        r if r < 64 => refuse(Class::GeometryNotPerRow, "too few bytes per scale for per-row int4"),
        _ => Ok(qs),
    }
}

/// Runs `pack` with the default codec, `int4-rans256-g0`. All or nothing
/// ([`crate::output`]): every shard and the manifest are staged, and renamed into place only
/// when the whole run succeeded, the manifest (the completion marker) last; existing output
/// replaced under `force` is removed at that moment, its manifest first. On any refusal or
/// I/O error nothing new is left in `outdir`, the old output is untouched, and an `outdir`
/// this run created is removed again.
pub fn pack(opts: &PackOptions) -> Result<PackReport, Refusal> {
    pack_with(opts, Codec::Rans256G0)
}

/// Runs `pack` writing `codec`; otherwise as [`pack`].
pub fn pack_with(opts: &PackOptions, codec: Codec) -> Result<PackReport, Refusal> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.threads.unwrap_or(0))
        .build()
        .map_err(|e| Refusal::new(Class::Internal, format!("thread pool: {e}")))?;
    pool.install(|| pack_in_pool(opts, codec))
}

/// The selection of a pack run: every input shard opened, every selected weight checked by
/// the stamp and geometry guards, grouped by the input shard that owns it (the output shards,
/// in order).
struct Plan {
    pattern: String,
    re: Regex,
    set: ShardSet,
    by_shard: BTreeMap<usize, Vec<Selected>>,
}

impl Plan {
    /// Reads and checks the input of `opts` (nothing is written).
    fn new(opts: &PackOptions) -> Result<Self, Refusal> {
        let pattern = opts.select.as_deref().unwrap_or(EXPERT_PATTERN).to_owned();
        let re = Regex::new(&pattern)
            .map_err(|e| Refusal::new(Class::Usage, format!("--select: {e}")))?;
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
                return Err(Refusal::new(Class::Empty, format!("{name}: the weight has no bytes")));
            }
            by_shard.entry(loc.shard).or_default().push(Selected {
                name: name.clone(),
                weight: loc,
                scales,
            });
        }
        if by_shard.is_empty() {
            let hint = if opts.select.is_none() {
                " (the default selection, the routed-expert pattern); choose the weights with \
                 --select REGEX, e.g. --select '\\.weight$' for every U8 .weight with F32 .qs scales"
            } else {
                ""
            };
            return Err(Refusal::new(
                Class::SelectionEmpty,
                format!(
                    "no U8 tensor of {} matches {pattern:?}{}{hint}",
                    opts.indir.display(),
                    if opts.layers.is_some() { " in the selected layers" } else { "" }
                ),
            ));
        }
        Ok(Self { pattern, re, set, by_shard })
    }

    /// The output shards: (number k, index of the input shard, its selected weights).
    fn outputs(&self) -> impl Iterator<Item = (usize, usize, &[Selected])> {
        self.by_shard.iter().enumerate().map(|(k, (&i, sel))| (k, i, sel.as_slice()))
    }

    /// The input shards' basenames named in `shards` must each own selected weights.
    fn check_named(&self, shards: &[String]) -> Result<(), Refusal> {
        for name in shards {
            if !self.outputs().any(|(_, i, _)| self.set.shards[i].basename() == *name) {
                return Err(Refusal::new(
                    Class::NoInput,
                    format!(
                        "{name}: not an input shard of {} with weights matching {:?}",
                        self.set.shards.first().map_or_else(String::new, |s| s
                            .path
                            .parent()
                            .map(|p| p.display().to_string())
                            .unwrap_or_default()),
                        self.pattern
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The nibble histogram of the selected weights (of the input shards named in `only`, if
    /// given), the pooled table's input.
    fn histogram(&self, only: Option<&[String]>) -> [u64; 16] {
        let all: Vec<&Selected> = self
            .outputs()
            .filter(|(_, i, _)| only.is_none_or(|o| o.contains(&self.set.shards[*i].basename())))
            .flat_map(|(_, _, sel)| sel)
            .collect();
        all.par_iter().map(|s| crate::synth::nibble_histogram(self.set.data(s.weight))).reduce(
            || [0u64; 16],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                a
            },
        )
    }
}

/// The pooled `int4-rans256-g0` table of a nibble histogram, as `pack` builds it: the table,
/// its JSON (as stored in every shard) and its CRC-32 hex (as the manifest records it).
pub fn pooled_table(hist: &[u64; 16]) -> Result<(Table, String, String), Refusal> {
    let table = Table::from_histogram(FORMAT_SCALE_BITS, hist)
        .map_err(|e| Refusal::of(&e, format!("pooled histogram {hist:?}: {e}")))?;
    let parts = table_parts(&table);
    let table_json = table_json::to_json(&parts);
    let table_crc32 = format!("{:08x}", crc32fast::hash(&table_json::slot_bytes(&parts.slots)));
    Ok((table, table_json, table_crc32))
}

/// The nibble histogram `pack` pools its table from: every weight `opts` selects (in the
/// input shards named in `shards`, by basename, if given). Summing the histograms of disjoint
/// shard lists gives the whole checkpoint's, so a pack spread over workers builds the same
/// table ([`pooled_table`]).
pub fn histogram(opts: &PackOptions, shards: Option<&[String]>) -> Result<[u64; 16], Refusal> {
    let plan = Plan::new(opts)?;
    if let Some(names) = shards {
        plan.check_named(names)?;
    }
    Ok(plan.histogram(shards))
}

fn pack_in_pool(opts: &PackOptions, codec: Codec) -> Result<PackReport, Refusal> {
    crate::io::check_output_dir(&opts.outdir)?;
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
        return Err(Refusal::new(Class::OutputExists, detail));
    }

    let plan = Plan::new(opts)?;
    let all: Vec<&Selected> = plan.by_shard.values().flatten().collect();
    let left_out = left_out(&plan.set, &all, &plan.re, opts.layers.as_deref());
    let input_tensors = plan.set.shards.iter().map(|s| s.header.tensors.len() as u64).sum();
    let original_bytes: u64 = all.iter().map(|s| plan.set.entry(s.weight).len()).sum();

    // One table pooled over every selected tensor (int4-rans256-g0 only).
    let pooled = match codec {
        Codec::Rans256G0 => Some(pooled_table(&plan.histogram(None))?),
        Codec::Rans64T1 => None,
    };

    // Old output is removed at the commit, once the new set is staged whole: its manifest
    // first, so that no mix of old and new shards ever passes for a set.
    let mut outputs = Outputs::new();
    let mut removed = Vec::new();
    if opts.force {
        for name in old_manifest
            .then_some(MANIFEST_NAME)
            .into_iter()
            .chain(old_shards.iter().map(String::as_str))
        {
            outputs.retire(&opts.outdir.join(name));
            removed.push(name.to_owned());
        }
        // The notes of a pack in parts that never got its manifest go with its shards.
        for entry in std::fs::read_dir(&opts.outdir).into_iter().flatten().flatten() {
            if entry.file_name().to_string_lossy().starts_with(PART_PREFIX) {
                outputs.retire(&entry.path());
            }
        }
    }
    outputs
        .create_dir(&opts.outdir)
        .map_err(|e| Refusal::new(Class::Io, format!("{}: {e}", opts.outdir.display())))?;

    let bar = crate::progress::bytes(original_bytes, "pack", opts.quiet);
    let mut entries = Vec::new();
    let mut record_bytes = 0u64;
    for (k, shard_idx, selected) in plan.outputs() {
        let (entry, bytes) = stage_packed_shard(
            &mut outputs,
            opts,
            &plan.set,
            (k, shard_idx, selected),
            codec,
            pooled.as_ref().map(|(t, j, _)| (t, j.as_str())),
            &|n| bar.inc(n),
        )?;
        record_bytes += bytes;
        entries.push(entry);
    }
    bar.finish_and_clear();
    let table_crc32 = pooled.as_ref().map(|(_, _, crc)| crc.clone());
    let manifest =
        Manifest { format: codec.name(), shards: entries, table_crc32: table_crc32.clone() };
    // The completion marker, staged last and so renamed last.
    outputs
        .stage(&opts.outdir.join(MANIFEST_NAME), |w| w.write_all(manifest.to_json().as_bytes()))
        .map_err(|e| Refusal::new(Class::Io, e.to_string()))?;
    outputs.commit().map_err(|e| Refusal::new(Class::Io, e.to_string()))?;
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
        dropped_metadata: dropped_metadata(&plan.set),
    })
}

/// Encodes the weights of one output shard (each checked by decoding it back) and stages the
/// shard; returns its manifest entry and its record bytes. `pooled` is the table and its JSON
/// for `int4-rans256-g0`.
fn stage_packed_shard(
    outputs: &mut Outputs,
    opts: &PackOptions,
    set: &ShardSet,
    (k, shard_idx, selected): (usize, usize, &[Selected]),
    codec: Codec,
    pooled: Option<(&Table, &str)>,
    tick: &(dyn Fn(u64) + Sync),
) -> Result<(ShardEntry, u64), Refusal> {
    let records: Vec<Vec<u8>> = selected
        .par_iter()
        .map(|s| {
            let data = set.data(s.weight);
            let r = match pooled {
                Some((table, _)) => encode_verified(table, &s.name, data),
                None => crate::rans64::encode_verified(
                    &s.name,
                    data,
                    tetrad_rans::rans64::DEFAULT_CHUNK_SHIFT,
                ),
            };
            tick(set.entry(s.weight).len());
            r
        })
        .collect::<Result<_, _>>()?;
    let stamps =
        sorted_string_map(selected.iter().map(|s| (s.name.as_str(), codec.name())), ", ", ": ");
    let mut metadata: BTreeMap<String, String> = [(STAMP_KEY.to_owned(), stamps)].into();
    if let Some((_, table_json)) = pooled {
        metadata.insert(TABLE_KEY.to_owned(), table_json.to_owned());
    }
    let originals = match codec {
        Codec::Rans256G0 => BTreeMap::new(),
        Codec::Rans64T1 => selected
            .par_iter()
            .map(|s| (s.name.clone(), format!("{:x}", Sha256::digest(set.data(s.weight)))))
            .collect(),
    };
    let entry =
        stage_shard(outputs, opts, k, set, shard_idx, selected, &records, &metadata, originals)?;
    Ok((entry, records.iter().map(|r| r.len() as u64).sum()))
}

/// Name of the note a partial pack ([`pack_part`]) leaves beside output shard `k` of `n`: its
/// manifest entry, for [`write_manifest`].
fn part_name(k: usize, n: usize) -> String {
    format!("{PART_PREFIX}{k:05}-of-{n:05}.json")
}

/// The prefix of a part note's name.
const PART_PREFIX: &str = ".tetrad-part-";

/// Packs only the input shards named in `shards` (basenames) of the checkpoint `opts`
/// selects, into `opts.outdir`, with the pooled table `table_json` (`int4-rans256-g0`, the
/// JSON [`pooled_table`] gives for the whole checkpoint's [`histogram`]; `None` for
/// `int4-rans64-t1`). Each output shard gets the name and bytes the whole `pack` gives it;
/// beside it a hidden note keeps its manifest entry until [`write_manifest`] writes the
/// manifest. So workers can pack a checkpoint's shards independently, into one folder, and a
/// last step completes the set; until then the folder holds no manifest and does not verify
/// as whole. Returns the output shard names written. All or nothing for this call's shards.
pub fn pack_part(
    opts: &PackOptions,
    codec: Codec,
    table_json: Option<&str>,
    shards: &[String],
) -> Result<Vec<String>, Refusal> {
    crate::io::check_output_dir(&opts.outdir)?;
    let plan = Plan::new(opts)?;
    plan.check_named(shards)?;
    let pooled = match (codec, table_json) {
        (Codec::Rans256G0, Some(text)) => {
            let parts = table_json::parse(text).map_err(|e| Refusal::of(&e, e.to_string()))?;
            Some((
                table_json::table_from_parts(&parts).map_err(|e| Refusal::of(&e, e.to_string()))?,
                text,
            ))
        }
        (Codec::Rans256G0, None) => {
            return Err(Refusal::new(
                Class::Usage,
                "int4-rans256-g0 shards packed apart need the pooled table of the whole checkpoint",
            ));
        }
        (Codec::Rans64T1, _) => None,
    };
    let n = plan.by_shard.len();
    let mut outputs = Outputs::new();
    outputs
        .create_dir(&opts.outdir)
        .map_err(|e| Refusal::new(Class::Io, format!("{}: {e}", opts.outdir.display())))?;
    let mut written = Vec::new();
    for (k, shard_idx, selected) in plan.outputs() {
        if !shards.contains(&plan.set.shards[shard_idx].basename()) {
            continue;
        }
        let file = out_shard_name(k);
        let path = opts.outdir.join(&file);
        if !opts.force && std::fs::symlink_metadata(&path).is_ok() {
            return Err(Refusal::new(
                Class::OutputExists,
                format!("{} exists (force to replace it)", path.display()),
            ));
        }
        let (entry, _) = stage_packed_shard(
            &mut outputs,
            opts,
            &plan.set,
            (k, shard_idx, selected),
            codec,
            pooled.as_ref().map(|(t, j)| (t, *j)),
            &|_| {},
        )?;
        let crc = pooled.as_ref().map(|(t, _)| {
            let parts = table_parts(t);
            format!("{:08x}", crc32fast::hash(&table_json::slot_bytes(&parts.slots)))
        });
        let note = Manifest { format: codec.name(), shards: vec![entry], table_crc32: crc };
        outputs
            .stage(&opts.outdir.join(part_name(k, n)), |w| w.write_all(note.to_json().as_bytes()))
            .map_err(|e| Refusal::new(Class::Io, e.to_string()))?;
        written.push(file);
    }
    outputs.commit().map_err(|e| Refusal::new(Class::Io, e.to_string()))?;
    Ok(written)
}

/// Completes a set packed by [`pack_part`] calls: every part of the set must be there
/// (`E_SHARD_MISSING`), each shard must still be the bytes its note records
/// (`E_SHARD_DIGEST_MISMATCH`) and all parts must agree on the codec and table
/// (`E_MANIFEST_MALFORMED`); then the manifest is written — the same bytes a whole `pack`
/// writes — and the notes are removed.
pub fn write_manifest(outdir: &Path) -> Result<Manifest, Refusal> {
    let rd = std::fs::read_dir(outdir)
        .map_err(|e| Refusal::new(Class::Io, format!("{}: {e}", outdir.display())))?;
    let mut notes: BTreeMap<usize, (usize, PathBuf)> = BTreeMap::new();
    for entry in rd {
        let entry =
            entry.map_err(|e| Refusal::new(Class::Io, format!("{}: {e}", outdir.display())))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(PART_PREFIX).and_then(|r| r.strip_suffix(".json"))
        else {
            continue;
        };
        let Some((k, n)) = rest.split_once("-of-") else { continue };
        let (Ok(k), Ok(n)) = (k.parse::<usize>(), n.parse::<usize>()) else { continue };
        notes.insert(k, (n, entry.path()));
    }
    let Some(&(n, _)) = notes.values().next() else {
        return Err(Refusal::new(
            Class::NoInput,
            format!(
                "{}: no shard packed apart (pack_part) waits for its manifest",
                outdir.display()
            ),
        ));
    };
    let mut format = None;
    let mut crc: Option<Option<String>> = None;
    let mut shards = Vec::with_capacity(n);
    for k in 0..n {
        let Some((nk, path)) = notes.get(&k) else {
            return Err(Refusal::new(
                Class::ShardMissing,
                format!(
                    "{}: part {k} of {n} ({}) was not packed",
                    outdir.display(),
                    out_shard_name(k)
                ),
            ));
        };
        let malformed = |why: String| {
            Refusal::new(Class::ManifestMalformed, format!("{}: {why}", path.display()))
        };
        if *nk != n {
            return Err(malformed(format!("part of a set of {nk}, others of {n}")));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| Refusal::new(Class::Io, format!("{}: {e}", path.display())))?;
        let (f, c, entry) = parse_note(&text).map_err(malformed)?;
        if format.is_some_and(|g| g != f) || crc.as_ref().is_some_and(|g| *g != c) {
            return Err(malformed("its codec or table differs from the other parts'".into()));
        }
        format = Some(f);
        crc = Some(c);
        let shard = outdir.join(&entry.file);
        let bytes = crate::io::map_file(&shard)
            .map_err(|e| Refusal::new(Class::ShardMissing, format!("{}: {e}", shard.display())))?;
        if format!("{:x}", Sha256::digest(&*bytes)) != entry.sha256 {
            return Err(Refusal::new(
                Class::ShardDigestMismatch,
                format!(
                    "{}: not the bytes packed (sha256 differs from its part note)",
                    shard.display()
                ),
            ));
        }
        shards.push(entry);
    }
    let manifest = Manifest { format: format.expect("n > 0"), shards, table_crc32: crc.flatten() };
    let mut outputs = Outputs::new();
    for (_, path) in notes.values() {
        outputs.retire(path);
    }
    outputs
        .stage(&outdir.join(MANIFEST_NAME), |w| w.write_all(manifest.to_json().as_bytes()))
        .map_err(|e| Refusal::new(Class::Io, e.to_string()))?;
    outputs.commit().map_err(|e| Refusal::new(Class::Io, e.to_string()))?;
    Ok(manifest)
}

/// A part note: (codec name, table CRC, the shard's entry).
fn parse_note(text: &str) -> Result<(&'static str, Option<String>, ShardEntry), String> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let format =
        v["format"].as_str().and_then(Codec::from_name).ok_or("no known \"format\"")?.name();
    let crc = v["table_crc32"].as_str().map(str::to_owned);
    let s = &v["shards"][0];
    let text_of = |k: &str| s[k].as_str().map(str::to_owned).ok_or(format!("no \"{k}\""));
    let map_of = |k: &str| -> BTreeMap<String, String> {
        s[k].as_object()
            .map(|m| {
                m.iter().filter_map(|(a, b)| Some((a.clone(), b.as_str()?.to_owned()))).collect()
            })
            .unwrap_or_default()
    };
    let entry = ShardEntry {
        bytes: s["bytes"].as_u64().ok_or("no \"bytes\"")?,
        file: text_of("file")?,
        originals: map_of("originals"),
        records: map_of("records"),
        sha256: text_of("sha256")?,
        source: text_of("source")?,
        weight_tensors: s["weight_tensors"].as_u64().ok_or("no \"weight_tensors\"")?,
    };
    if !super::manifest::is_plain_file_name(&entry.file) {
        return Err(format!("file {:?} is not a plain file name", entry.file));
    }
    Ok((format, crc, entry))
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

/// Stages output shard `k` (records, then their `.qs` scales) and returns its manifest entry.
#[allow(clippy::too_many_arguments)] // one shard's worth of inputs
fn stage_shard(
    outputs: &mut Outputs,
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
        .map_err(|e| Refusal::new(Class::Internal, e.to_string()))?;
    let file = out_shard_name(k);
    let path = opts.outdir.join(&file);
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    outputs
        .stage(&path, |w| -> Result<(), std::io::Error> {
            for chunk in std::iter::once(&header[..]).chain(tensors.iter().map(|t| t.data)) {
                w.write_all(chunk)?;
                hasher.update(chunk);
                size += chunk.len() as u64;
            }
            Ok(())
        })
        .map_err(|e| Refusal::new(Class::Io, e.to_string()))?;
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
        .map_err(|e| Refusal::of(&e, format!("{name}: {e}")))?;
    blob.truncate(len);
    let record = Record::parse(&blob).map_err(|e| {
        Refusal::new(Class::Internal, format!("{name}: own record does not parse: {e}"))
    })?;
    let mut back = vec![0u8; packed.len()];
    decode_record(table, &record, &mut back).map_err(|e| {
        Refusal::new(Class::Internal, format!("{name}: own record does not decode: {e}"))
    })?;
    if back != packed {
        return Err(Refusal::new(
            Class::Internal,
            format!("{name}: record decodes to different bytes"),
        ));
    }
    Ok(blob)
}
