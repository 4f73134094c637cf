//! `tetrad verify`: the `int4-rans256-g0` validator (see [`crate::packed::verify`]).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use crate::error::Class;
use crate::packed::set::read_set;
use crate::packed::verify::{Refuse, ShardVerdict, verify_shard};

/// Options of `tetrad verify`.
#[derive(Debug, Args)]
#[command(after_help = "\
Checks each shard without reference bytes: header, stamps, table, the manifest digests when a
repack-manifest.json sits next to the shard, and every stamped record (framing, checked decode
of all 256 streams, and re-encoding, which must reproduce the record byte for byte).
Prints `REFUSE <shard> <tensor|-> <CLASS>: <detail>` per refusal, a `[trust]` line per shard,
and `RESULT: TRUST` or `RESULT: REFUSE (n refusal(s))` last. Exit 0 all trusted, 1 any refusal.

A directory is checked as a set, then shard by shard: `tetrad verify packed/` proves a whole
packed container. Its repack-manifest.json must list exactly the out-rans shards present:
a listed shard that is missing is E_SHARD_MISSING, an out-rans shard it does not list is
E_SHARD_UNLISTED, and shards without a manifest are E_MANIFEST_MISSING (pack writes the
manifest last, so a run stopped before it, or a copy without it, cannot be proven whole).
Then every *.safetensors file of the directory (sorted; hidden files skipped) is verified; a
directory with none is E_NO_INPUT. Shards named one by one are verified each on its own, as
the reference validator does (a manifest beside them is used for their digests).

Examples:
  tetrad verify packed/
  tetrad verify packed/out-rans-*.safetensors
  tetrad verify --max-tensors 8 --json packed/out-rans-00000.safetensors")]
pub struct VerifyArgs {
    /// Shards to verify (a directory: its *.safetensors files).
    #[arg(required = true, value_name = "SHARD")]
    pub shards: Vec<PathBuf>,
    /// Check at most N stamped tensors per shard (in sorted order; N ≥ 1: a verify that checks
    /// nothing cannot say TRUST).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_tensors: Option<u64>,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// Print the verdicts as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The verdicts on a folder: first on the folder as a set ([`read_set`]: a manifest that
/// lists exactly the shards present), then on each of its `*.safetensors` files.
fn verify_dir(dir: &Path, max_tensors: Option<u64>, quiet: bool) -> Vec<ShardVerdict> {
    let mut verdicts = Vec::new();
    let set_refusals = match read_set(dir) {
        Ok(set) => set.refusals,
        Err(r) => vec![r],
    };
    if !set_refusals.is_empty() {
        let mut v =
            ShardVerdict::refused(dir, set_refusals[0].class, set_refusals[0].detail.clone());
        for r in &set_refusals[1..] {
            v.refusals.push(Refuse {
                shard: v.shard.clone(),
                tensor: None,
                class: r.class,
                detail: r.detail.clone(),
            });
        }
        verdicts.push(v);
    }
    let files = match crate::shardset::shards_of(dir) {
        Ok(v) => v,
        Err(e) if set_refusals.is_empty() => {
            verdicts.push(ShardVerdict::refused(dir, e.class, e.detail));
            return verdicts;
        }
        Err(_) => return verdicts,
    };
    let total: u64 = files.iter().filter_map(|p| std::fs::metadata(p).ok()).map(|m| m.len()).sum();
    let bar = crate::progress::bytes(total, "verify", quiet);
    for p in &files {
        verdicts.push(verify_shard(p, max_tensors));
        bar.inc(std::fs::metadata(p).map_or(0, |m| m.len()));
    }
    bar.finish_and_clear();
    verdicts
}

/// The verdicts on `paths` (shard files, and folders checked as sets): what `tetrad verify`
/// prints.
pub fn verify_paths(paths: &[PathBuf], max_tensors: Option<u64>, quiet: bool) -> Vec<ShardVerdict> {
    let mut verdicts = Vec::new();
    for path in paths {
        if path.is_dir() {
            verdicts.extend(verify_dir(path, max_tensors, quiet));
            continue;
        }
        if let Err(e) = std::fs::metadata(path) {
            verdicts.push(ShardVerdict::refused(
                path,
                Class::Io,
                format!("{}: {e}", path.display()),
            ));
            continue;
        }
        verdicts.push(verify_shard(path, max_tensors));
    }
    verdicts
}

/// The `--json` document of verdicts.
pub fn verdicts_json(verdicts: &[ShardVerdict]) -> serde_json::Value {
    let refusals: usize = verdicts.iter().map(|v| v.refusals.len()).sum();
    let shards: Vec<_> = verdicts
        .iter()
        .map(|v| {
            serde_json::json!({
                "shard": v.shard,
                "trust": v.refusals.is_empty(),
                "records_verified": v.trusted,
                "records_stamped": v.stamped,
                "table_crc32": v.table_crc32,
                "notes": v.notes,
                "refusals": v.refusals.iter().map(|r| serde_json::json!({
                    "tensor": r.tensor, "class": r.class, "detail": r.detail,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::json!({"result": if refusals == 0 { "TRUST" } else { "REFUSE" }, "refusals": refusals, "shards": shards})
}

/// Runs `tetrad verify`.
pub fn run(args: &VerifyArgs) -> ExitCode {
    let verdicts = verify_paths(&args.shards, args.max_tensors, args.quiet || args.json);
    let refusals: usize = verdicts.iter().map(|v| v.refusals.len()).sum();
    if args.json {
        println!("{}", verdicts_json(&verdicts));
    } else {
        for v in &verdicts {
            for r in &v.refusals {
                println!("{r}");
            }
            for n in &v.notes {
                println!("{n}");
            }
            println!("{}", v.summary());
        }
        if refusals == 0 {
            println!("RESULT: TRUST");
        } else {
            println!("RESULT: REFUSE ({refusals} refusal(s))");
        }
    }
    if refusals == 0 { ExitCode::SUCCESS } else { ExitCode::from(super::EXIT_FAILURE) }
}
