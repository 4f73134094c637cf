//! `tetrad pack`: the `int4-rans256-g0` writer (see [`crate::rans256::pack`]).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::rans256::pack::{EXPERT_PATTERN, PackOptions, pack};

/// Options of `tetrad pack`.
#[derive(Debug, Args)]
#[command(after_help = "\
Selects the U8 int4-row weights of every *.safetensors file in --indir (by default the routed
expert MLP weights, the reference tool's pattern), builds one frequency table pooled over all of
them, encodes each weight as an int4-rans256-g0 record (checked by decoding it back before
anything is written), and writes out-rans-NNNNN.safetensors shards (record, then its .qs scales)
and repack-manifest.json, last, as the completion marker.

Examples:
  tetrad pack --indir ckpt/ --outdir packed/
  tetrad pack --indir ckpt/ --outdir packed/ --layers 20,55 --threads 2
  tetrad pack --indir dense/ --outdir packed/ --select '\\.weight$'   # every U8 .weight with F32 .qs")]
pub struct PackArgs {
    /// Directory of input *.safetensors shards (int4-row weights `X` as U8 with `X.qs` F32 scales).
    #[arg(long)]
    pub indir: PathBuf,
    /// Output directory (created if missing).
    #[arg(long)]
    pub outdir: PathBuf,
    /// Only pack these layers (comma list of N in `model.layers.N.`).
    #[arg(long, value_delimiter = ',')]
    pub layers: Option<Vec<u64>>,
    /// Select tensors by this regex instead of the expert pattern.
    #[arg(long, value_name = "REGEX", default_value = None, help = format!("Select tensors by this regex instead of the expert pattern {EXPERT_PATTERN:?}"))]
    pub select: Option<String>,
    /// Replace existing output (out-rans-*.safetensors, repack-manifest.json) in --outdir.
    #[arg(long)]
    pub force: bool,
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

/// Runs `tetrad pack`.
pub fn run(args: &PackArgs) -> ExitCode {
    let opts = PackOptions {
        indir: args.indir.clone(),
        outdir: args.outdir.clone(),
        layers: args.layers.clone(),
        select: args.select.clone(),
        force: args.force,
        threads: args.threads.map(usize::from),
        quiet: args.quiet,
    };
    let report = match pack(&opts) {
        Ok(r) => r,
        Err(r) => {
            if args.json {
                println!(
                    "{}",
                    serde_json::json!({"refused": {"class": r.class, "detail": r.detail}})
                );
                return ExitCode::from(super::EXIT_FAILURE);
            }
            return super::refused(&r);
        }
    };
    if args.json {
        let shards: Vec<_> = report
            .shards
            .iter()
            .map(|(file, source, w, bytes)| serde_json::json!({"file": file, "source": source, "weight_tensors": w, "bytes": bytes}))
            .collect();
        println!(
            "{}",
            serde_json::json!({
                "shards": shards,
                "records": report.records,
                "original_bytes": report.original_bytes,
                "record_bytes": report.record_bytes,
                "ratio": report.ratio(),
                "table_crc32": report.table_crc32,
                "removed": report.removed,
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
    println!("wrote repack-manifest.json (table crc32 {})", report.table_crc32);
    println!("{}", report.ratio_line());
    ExitCode::SUCCESS
}
