//! `tetrad quantize`: float safetensors → quantized container (see
//! [`crate::quantize_container`]).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::quantize_container::{QuantFormat, QuantizeOptions, quantize_path};

/// Options of `tetrad quantize`.
#[derive(Debug, Args)]
#[command(after_help = "\
IN is one *.safetensors file or a directory of them (F32, BF16 or F16 tensors). OUT is a
directory (created if missing) that receives one shard per input shard, same file name.
Every selected 2-D float tensor X [O, I] becomes X (U8 codes, shape [O, row_bytes]) followed
by X.qs (F32 scales; U8 UE8M0 exponents for mxfp4) with the reference quantizers of
docs/FORMATS.md; every other tensor is copied byte for byte. A selected tensor whose quantized
bytes would collide with another format's (e.g. int4-row [O, 1] has int8-row's byte counts,
int3-g64 [O, 48] int4-row's) is copied too, and the report says so: readers that follow the
spec literally could not tell them apart. mxfp4 (per 32 columns a power-of-two scale, the OCP
MX rule; e2m1 codes) is the exception: the spec's byte arithmetic never infers it, so only a
reader that trusts the stamp (tetrad does) reads it, and a literal one refuses it.
fp8-e4m3-b128 takes one f32 scale per 128 x 128 block (max|w| / 448) and the nearest E4M3FN
byte, ties to even. Each shard stamps what it wrote in __metadata__[\"colibri.fmt\"]. A
shard is built in memory (about its input size plus the codes) and written to a temporary
file; the files are renamed into OUT only when every shard succeeded, so a refusal (named
with its shard file) writes nothing and leaves no new OUT directory. An existing output shard
is refused (E_OUTPUT_EXISTS) unless --force; an output shard that is an input always
(E_OUTPUT_IS_INPUT).

Examples:
  tetrad quantize --format int4-row model.safetensors q/
  tetrad quantize --format int4-grouped:64 --only 'mlp|attn' ckpt/ q/
  tetrad quantize --format fp8-e4m3-b128 model.safetensors q8/
  tetrad pack --indir q/ --outdir packed/ --select '\\.weight$'")]
pub struct QuantizeArgs {
    /// int4-row, int4-grouped:GS, int8-row, int2-row, int3-g64, mxfp4 or fp8-e4m3-b128.
    #[arg(long, value_parser = QuantFormat::parse, default_value = "int4-row")]
    pub format: QuantFormat,
    /// Only quantize 2-D float tensors whose name matches this regex (the rest is copied).
    #[arg(long, value_name = "REGEX")]
    pub only: Option<regex::Regex>,
    /// Replace output shards that already exist (never an input shard).
    #[arg(long)]
    pub force: bool,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Input shard or directory of shards.
    #[arg(value_name = "IN")]
    pub input: PathBuf,
    /// Output directory.
    #[arg(value_name = "OUT")]
    pub output: PathBuf,
}

/// Runs `tetrad quantize`.
pub fn run(args: &QuantizeArgs) -> ExitCode {
    let opts = QuantizeOptions {
        format: args.format,
        only: args.only.clone(),
        force: args.force,
        quiet: args.quiet || args.json,
    };
    super::sweep(&args.output);
    let report = match quantize_path(&args.input, &args.output, &opts) {
        Ok(r) => r,
        Err(r) => return super::refused_as(&r, args.json),
    };
    let quantized = report.tensors.iter().filter(|t| t.quantized).count();
    let copied = report.tensors.len() - quantized;
    let kept: Vec<_> = report.tensors.iter().filter(|t| t.kept.is_some()).collect();
    if args.json {
        let v = serde_json::json!({
            "format": args.format.to_string(),
            "stamp": args.format.stamp_name(),
            "quantized": quantized,
            "copied": copied,
            "kept_as_float": kept.len(),
            "shards": report.shards.iter().map(|(i, o, b)| serde_json::json!({
                "input": i.display().to_string(), "output": o.display().to_string(), "bytes": b,
            })).collect::<Vec<_>>(),
            "tensors": report.tensors.iter().map(|t| serde_json::json!({
                "name": t.name, "shard": t.shard, "dtype": t.dtype, "shape": t.shape,
                "action": if t.quantized { "quantized" } else { "copied" },
                "stamp": t.stamp,
                "kept": t.kept,
            })).collect::<Vec<_>>(),
        });
        println!("{v}");
    } else {
        for (i, o, b) in &report.shards {
            println!("{} -> {} ({b} bytes)", i.display(), o.display());
        }
        let stamp = args.format.stamp_name();
        let other = report.tensors.iter().filter(|t| t.stamp.is_some_and(|s| s != stamp)).count();
        // An int4-grouped tensor with one group per row is stamped int4-row (same bytes).
        let also = if other > 0 {
            format!("; {other} with one group per row stamped \"int4-row\"")
        } else {
            String::new()
        };
        println!(
            "{quantized} tensor(s) quantized to {} (stamped {stamp:?}{also}), {copied} copied",
            args.format,
        );
        for t in &kept {
            println!(
                "kept as {}: {} {:?} in {}: {}",
                t.dtype,
                crate::cli::printable(&t.name),
                t.shape,
                t.shard,
                t.kept.as_deref().unwrap_or_default()
            );
        }
    }
    ExitCode::SUCCESS
}
