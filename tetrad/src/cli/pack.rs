//! `tetrad pack`: the `int4-rans256-g0` writer (see [`crate::packed::pack`]), or with
//! `--codec int4-rans64-t1` the writer of tetrad's own format (see [`crate::rans64`]).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::packed::pack::{Codec, PackOptions, pack_with};

/// Options of `tetrad pack`.
#[derive(Debug, Args)]
#[command(after_help = "\
Selects the U8 int4-row weights of every *.safetensors file in --indir (by default the routed
expert MLP weights, the reference tool's pattern), builds one frequency table pooled over all of
them, encodes each weight as an int4-rans256-g0 record (checked by decoding it back before
anything is written), and writes out-rans-NNNNN.safetensors shards (record, then its .qs scales)
and repack-manifest.json, last, as the completion marker.

Only the selected weights and their .qs scales are written. Every other tensor of the input
(norms, attention, embeddings, the router, other layers, non-U8 tensors, a name shadowed by a
later shard) is LEFT OUT: it is not copied, and tetrad unpack will not restore it; keep the
original files for it. The report counts them; --json lists each (tensor, shard, dtype,
reason). The input's __metadata__ (e.g. {\"format\": \"pt\"}) is not kept either: the packed
shards carry only their own stamps and table; the report names the keys (--json:
dropped_metadata).

Stamps: a selected weight must be unstamped (its bytes are taken as packed int4-row, one F32
scale per row, checked by the geometry guard) or stamped int4-row in colibri.fmt. Any other
stamp is refused by name before anything is written: E_STAMP_NOT_INT4_ROW (int8-row, int2-row,
int4-grouped, ..., or a tensor already coded as int4-rans256-g0 / int4-rans64-t1: unpack it
first), E_STAMP_UNKNOWN (not a registered format name). A malformed colibri.fmt, a tensor
stamped two ways, or more than 4096 stamped names is refused too (E_STAMP_MALFORMED,
E_STAMP_CONFLICT, E_STAMP_CAP).

--codec int4-rans64-t1 writes tetrad's own format instead: each weight becomes a self-contained
chunked blob (its own models, no pooled table), stamped int4-rans64-t1, checked by decoding it
back; the manifest says \"format\": \"int4-rans64-t1\" and also records the sha256 of every
original weight, which verify and unpack check after decoding. The default stays
int4-rans256-g0, the reference tools' format.

The expert pattern (the default selection; --select replaces it):
  ^model\\.layers\\.(\\d+)\\.mlp\\.experts\\.(\\d+)\\.(gate|up|down)_proj\\.weight$

Examples:
  tetrad pack --indir ckpt/ --outdir packed/
  tetrad pack --indir ckpt/ --outdir packed/ --layers 20,55 --threads 2
  tetrad pack --indir dense/ --outdir packed/ --select '\\.weight$'   # every U8 .weight with F32 .qs
  tetrad pack --indir ckpt/ --outdir packed64/ --codec int4-rans64-t1")]
pub struct PackArgs {
    /// Directory of input *.safetensors shards (int4-row weights `X` as U8 with `X.qs` F32
    /// scales; unstamped or stamped int4-row).
    #[arg(long)]
    pub indir: PathBuf,
    /// Output directory (created if missing).
    #[arg(long)]
    pub outdir: PathBuf,
    /// Only pack these layers (comma list of N in `model.layers.N.`).
    #[arg(long, value_delimiter = ',')]
    pub layers: Option<Vec<u64>>,
    /// Select tensors by this regex instead of the expert pattern (below).
    #[arg(long, value_name = "REGEX")]
    pub select: Option<String>,
    /// Replace existing output (out-rans-*.safetensors, repack-manifest.json) in --outdir.
    #[arg(long)]
    pub force: bool,
    /// Codec to write: int4-rans256-g0 (the reference tools' format) or int4-rans64-t1
    /// (tetrad's own, faster to decode).
    #[arg(long, default_value = "int4-rans256-g0", value_parser = parse_codec)]
    pub codec: Codec,
    /// Worker threads (default: all cores). Output is identical for any value.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

fn parse_codec(s: &str) -> Result<Codec, String> {
    Codec::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = Codec::ALL.iter().map(|c| c.name()).collect();
        format!("unknown codec {s:?}, expected one of {}", names.join(", "))
    })
}

/// Runs `tetrad pack`.
pub fn run(args: &PackArgs) -> ExitCode {
    let opts = PackOptions {
        indir: args.indir.clone(),
        outdir: args.outdir.clone(),
        layers: args.layers.clone(),
        select: args.select.clone(),
        force: args.force,
        threads: args.threads.map(usize::from),
        quiet: args.quiet || args.json,
    };
    super::sweep(&args.outdir);
    let report = match pack_with(&opts, args.codec) {
        Ok(r) => r,
        Err(r) => return super::refused_as(&r, args.json),
    };
    if args.json {
        let shards: Vec<_> = report
            .shards
            .iter()
            .map(|(file, source, w, bytes)| serde_json::json!({"file": file, "source": source, "weight_tensors": w, "bytes": bytes}))
            .collect();
        let left_out: Vec<_> = report
            .left_out
            .iter()
            .map(|l| serde_json::json!({"tensor": l.tensor, "shard": l.shard, "dtype": l.dtype, "reason": l.reason.as_str()}))
            .collect();
        println!(
            "{}",
            serde_json::json!({
                "shards": shards,
                "records": report.records,
                "original_bytes": report.original_bytes,
                "record_bytes": report.record_bytes,
                "ratio": report.ratio(),
                "codec": report.codec.name(),
                "table_crc32": (report.codec == Codec::Rans256G0).then_some(&report.table_crc32),
                "removed": report.removed,
                "input_tensors": report.input_tensors,
                "left_out": left_out,
                "dropped_metadata": report.dropped_metadata,
            })
        );
        return ExitCode::SUCCESS;
    }
    for name in &report.removed {
        println!("removed {name} (--force)");
    }
    for (file, source, w, bytes) in &report.shards {
        println!("wrote {file} <- {source}: {w} record(s), {bytes} bytes");
    }
    match report.codec {
        Codec::Rans256G0 => {
            println!("wrote repack-manifest.json (table crc32 {})", report.table_crc32);
        }
        Codec::Rans64T1 => println!("wrote repack-manifest.json ({})", report.codec.name()),
    }
    if let Some(line) = report.dropped_metadata_line() {
        println!("{line}");
    }
    if let Some(line) = report.left_out_line() {
        println!("{line}");
    }
    println!("{}", report.ratio_line());
    ExitCode::SUCCESS
}
