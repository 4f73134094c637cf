//! `tetrad resolve`: the format-inference probe, for users debugging a container.
//!
//! Given what a reader knows about one tensor — `[O, I]` from the model config, the weight and
//! scale byte counts from the container, and the tensor's stamp if it has one — it runs exactly
//! the inference every tetrad reader runs ([`tetrad_quant::resolve()`]) and prints the verdict:
//! the format name (and group size), or `REFUSED <CLASS>: <detail>` with the numbers that
//! explain the refusal. Exit status 0 resolved, 1 refused, 2 usage (clap's).

use std::process::ExitCode;

use clap::Args;
use serde_json::json;
use tetrad_quant::{ResolveError, Resolved, resolve};

use super::EXIT_FAILURE;
use crate::error::Class;

/// Arguments of `tetrad resolve`.
#[derive(Debug, Clone, Args)]
#[command(after_help = "\
Examples:
  # GLM o_proj [6144, 16384], int8-sized weights, 4·O scale bytes: int8-row unless stamped
  tetrad resolve --o 6144 --i 16384 --weight-bytes 100663296 --scale-bytes 24576
  tetrad resolve --o 6144 --i 16384 --weight-bytes 100663296 --scale-bytes 24576 \\
      --stamp fp8-e4m3-b128
  # int4 with one f32 scale per 64 inputs
  tetrad resolve --o 4096 --i 4096 --weight-bytes 8388608 --scale-bytes 1048576 --json

Prints the format (`int4-grouped gs=64`) and exits 0, or `REFUSED <CLASS>: <detail>` and
exits 1. The rules are in docs/FORMATS.md.")]
pub struct ResolveArgs {
    /// Output rows `O` of the weight matrix (from the model config).
    #[arg(long = "o", value_name = "O")]
    pub o: u64,
    /// Inputs per row `I` of the weight matrix (from the model config).
    #[arg(long = "i", value_name = "I")]
    pub i: u64,
    /// Byte count of the weight tensor.
    #[arg(long, value_name = "NB")]
    pub weight_bytes: u64,
    /// Byte count of the scale tensor (`X.qs`; 0 if there is none).
    #[arg(long, value_name = "NS")]
    pub scale_bytes: u64,
    /// The tensor's stamp (its format name in `colibri.fmt`), if it has one.
    #[arg(long, value_name = "NAME")]
    pub stamp: Option<String>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Runs `tetrad resolve`: prints the verdict to stdout; exit 0 resolved, 1 refused.
pub fn run(args: &ResolveArgs) -> ExitCode {
    let verdict =
        resolve(args.o, args.i, args.weight_bytes, args.scale_bytes, args.stamp.as_deref());
    let text = if args.json { json_report(args, &verdict) } else { text_report(&verdict) };
    println!("{text}");
    match verdict {
        Ok(_) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(EXIT_FAILURE),
    }
}

/// `int4-grouped gs=64`, or `REFUSED <CLASS>: <detail>`.
pub fn text_report(verdict: &Result<Resolved, ResolveError>) -> String {
    match verdict {
        Ok(r) => r.to_string(),
        Err(e) => format!("REFUSED {}: {e}", Class::of(&e)),
    }
}

/// One JSON object with the inputs and the verdict.
pub fn json_report(args: &ResolveArgs, verdict: &Result<Resolved, ResolveError>) -> String {
    let input = json!({
        "o": args.o,
        "i": args.i,
        "weight_bytes": args.weight_bytes,
        "scale_bytes": args.scale_bytes,
        "stamp": args.stamp,
    });
    let v = match verdict {
        Ok(r) => json!({
            "resolved": true,
            "format": r.format.name(),
            "ordinal": r.format.ordinal(),
            "status": r.format.status().as_str(),
            "group_size": r.group_size,
            "input": input,
        }),
        Err(e) => json!({
            "resolved": false,
            "refused": {"class": Class::of(&e), "detail": e.to_string()},
            "input": input,
        }),
    };
    v.to_string()
}
