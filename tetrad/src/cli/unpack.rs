//! `tetrad unpack`: `int4-rans256-g0` shards back to int4-row shards (see
//! [`crate::rans256::unpack`]).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::rans256::unpack::unpack;

/// Options of `tetrad unpack`.
#[derive(Debug, Args)]
#[command(after_help = "\
Decodes every record of the out-rans-*.safetensors shards in --indir (checked: every stream's
seal) and writes int4-row shards to --outdir: each weight as U8 [O, ceil(I/2)] (O from its .qs),
its .qs unchanged, stamps removed. Output files take the source names recorded in
repack-manifest.json when there is one.

With a manifest, every shard it lists must be present, every out-rans shard must be listed,
and each is checked against it as verify checks it (size and sha256 of the file, record
digests, the originals of int4-rans64-t1 tensors); two shards restoring to one name are
refused. All or nothing: the outputs are written to temporary files and renamed into place
only when every shard was checked and decoded; any refusal (REFUSED <CLASS>: <shard> ...,
exit 1) leaves --outdir as it was.

Example:
  tetrad unpack --indir packed/ --outdir restored/")]
pub struct UnpackArgs {
    /// Directory holding out-rans-*.safetensors (and usually repack-manifest.json).
    #[arg(long)]
    pub indir: PathBuf,
    /// Output directory (created if missing).
    #[arg(long)]
    pub outdir: PathBuf,
    /// Replace existing output files.
    #[arg(long)]
    pub force: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `tetrad unpack`.
pub fn run(args: &UnpackArgs) -> ExitCode {
    match unpack(&args.indir, &args.outdir, args.force) {
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
