//! `tetrad unpack`: `int4-rans256-g0` shards back to int4-row shards (see
//! [`crate::packed::unpack`]).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::packed::unpack::{UnpackOptions, unpack};

/// Options of `tetrad unpack`.
#[derive(Debug, Args)]
#[command(after_help = "\
Decodes every record of the out-rans-*.safetensors shards in --indir (checked: every stream's
seal) and writes int4-row shards to --outdir: each weight as U8 [O, ceil(I/2)] (O from its .qs),
its .qs unchanged, stamps removed. Output files take the source names recorded in
repack-manifest.json when there is one.

The set must be provably whole, as `tetrad verify DIR` requires: every shard the manifest lists
present (E_SHARD_MISSING), every out-rans shard listed (E_SHARD_UNLISTED), and a manifest at
all (E_MANIFEST_MISSING; --without-manifest unpacks the shards present anyway). Each shard is
checked against the manifest as verify checks it (size and sha256 of the file, record digests,
the originals of int4-rans64-t1 tensors); two shards restoring to one name are refused.

All or nothing: the outputs are staged and renamed into place only when every shard was
checked and decoded; any refusal (REFUSED <CLASS>: <shard> ..., exit 1), I/O error or
interruption leaves --outdir as it was. pack keeps only the weights it selected and their
scales, so an existing shard holding tensors the set does not carry (the original
checkpoint) is never replaced, even with --force (E_OUTPUT_FULLER).

Example:
  tetrad unpack --indir packed/ --outdir restored/")]
pub struct UnpackArgs {
    /// Directory holding out-rans-*.safetensors (and usually repack-manifest.json).
    #[arg(long)]
    pub indir: PathBuf,
    /// Output directory (created if missing).
    #[arg(long)]
    pub outdir: PathBuf,
    /// Replace existing output files (never one holding tensors the set does not carry).
    #[arg(long)]
    pub force: bool,
    /// Unpack the shards present although there is no repack-manifest.json to prove the set
    /// whole (each shard is still checked record by record).
    #[arg(long)]
    pub without_manifest: bool,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `tetrad unpack`.
pub fn run(args: &UnpackArgs) -> ExitCode {
    super::sweep(&args.outdir);
    let opts = UnpackOptions {
        force: args.force,
        without_manifest: args.without_manifest,
        quiet: args.quiet || args.json,
    };
    match unpack(&args.indir, &args.outdir, &opts) {
        Ok(report) => {
            if args.json {
                let v: Vec<_> = report
                    .iter()
                    .map(|(i, o, n, b)| serde_json::json!({"input": i, "output": o, "records": n, "bytes": b}))
                    .collect();
                println!("{}", serde_json::json!({"shards": v}));
            } else {
                for (i, o, n, b) in &report {
                    println!("wrote {o} <- {i}: {n} record(s) decoded, {b} bytes");
                }
            }
            ExitCode::SUCCESS
        }
        Err(r) => super::refused_as(&r, args.json),
    }
}
