//! `tetrad verify`: the `int4-rans256-g0` validator (see [`crate::rans256::verify`]).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::rans256::verify::{ShardVerdict, verify_shard};

/// Options of `tetrad verify`.
#[derive(Debug, Args)]
#[command(after_help = "\
Checks each shard without reference bytes: header, stamps, table, the manifest digests when a
repack-manifest.json sits next to the shard, and every stamped record (framing, checked decode
of all 256 streams, and re-encoding, which must reproduce the record byte for byte).
Prints `REFUSE <shard> <tensor|-> <CLASS>: <detail>` per refusal, a `[trust]` line per shard,
and `RESULT: TRUST` or `RESULT: REFUSE (n refusal(s))` last. Exit 0 all trusted, 1 any refusal.

A directory stands for its *.safetensors files (sorted; hidden files skipped), so
`tetrad verify packed/` checks a whole packed container; a directory with none is
E_NO_INPUT.

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
    /// Print the verdicts as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `tetrad verify`.
pub fn run(args: &VerifyArgs) -> ExitCode {
    let mut verdicts = Vec::new();
    for path in &args.shards {
        match crate::shardset::shards_of(path) {
            Ok(v) => verdicts.extend(v.iter().map(|p| verify_shard(p, args.max_tensors))),
            Err(e) => verdicts.push(ShardVerdict::refused(path, e.class, e.detail)),
        }
    }
    let refusals: usize = verdicts.iter().map(|v| v.refusals.len()).sum();
    if args.json {
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
        println!(
            "{}",
            serde_json::json!({"result": if refusals == 0 { "TRUST" } else { "REFUSE" }, "refusals": refusals, "shards": shards})
        );
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
