//! `tetrad stats`: entropy and codec sizes of quantized weights (see [`crate::stats`]).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::{Value, json};

use crate::error::{Class, Refusal};
use crate::quantize_container::QuantFormat;
use crate::stats::plot::PlotFormat;
use crate::stats::{
    Report, StatsOptions, Symbols, TensorStats, Total, collect, measure_with_progress, ratio,
    ratio_bound, verdict,
};

/// Options of `tetrad stats`.
#[derive(Debug, Args)]
#[command(after_help = "\
PATHs are safetensors shards, GGUF files, or directories of either (a directory's
*.safetensors are one container). Measured: int4-row, int4-grouped and int4-rans256-g0
(decoded) nibbles, int8-row bytes, GGUF Q4_0/Q4_1/Q4_K/IQ4_NL/IQ4_XS/MXFP4/NVFP4 nibbles,
Q8_0 bytes and the 2-6-bit codes of Q2_K/Q3_K/Q5_0/Q5_1/Q5_K/Q6_K; 2-D float tensors as
they would be after `tetrad quantize --format FORMAT`. Ratios are code bytes / compressed
bytes. int4-rans256-g0 uses one table pooled over every nibble tensor
(the total includes the table's JSON). zstd level 19 is slow (a few MB/s per core); --no-zstd
skips it.
--plot writes the chart (histogram, per-tensor bits/weight) as PNG or SVG, by extension,
atomically; an existing file is refused (E_OUTPUT_EXISTS, checked before anything is measured)
unless --force, and one of the PATHs always (E_OUTPUT_IS_INPUT).
The --json schema and the chart are described in docs/CLI.md.

Examples:
  tetrad stats model.safetensors
  tetrad stats --per-tensor --quantize int4-grouped:64 ckpt/
  tetrad stats --json SmolLM2-135M-Instruct.Q4_1.gguf
  tetrad stats --plot chart.png q/
  tetrad stats --no-zstd --plot chart.svg model.gguf")]
pub struct StatsArgs {
    /// Print one line per tensor (always included in --json).
    #[arg(long)]
    pub per_tensor: bool,
    /// Format float tensors are measured in: int4-row, int4-grouped:GS, int8-row, mxfp4 or
    /// fp8-e4m3-b128.
    #[arg(long, value_parser = parse_measurable, default_value = "int4-row")]
    pub quantize: QuantFormat,
    /// Write a chart (nibble histogram, per-tensor bits/weight) to this file: PNG or SVG,
    /// chosen by the extension (.png or .svg).
    #[arg(long, value_name = "FILE.png|FILE.svg", value_parser = parse_plot_path)]
    pub plot: Option<PathBuf>,
    /// Replace the --plot file if it exists (never an input).
    #[arg(long)]
    pub force: bool,
    /// Skip zstd level 19 (its fields become null).
    #[arg(long)]
    pub no_zstd: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// No progress bar (it is drawn on stderr only when stderr is a terminal).
    #[arg(long, short)]
    pub quiet: bool,
    /// Files or directories.
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
}

/// Accepts a chart path whose extension names a format (a usage error, exit 2, otherwise).
fn parse_plot_path(s: &str) -> Result<PathBuf, String> {
    let p = PathBuf::from(s);
    PlotFormat::from_path(&p).map(|_| p).map_err(|e| format!("{s}: {e}"))
}

fn parse_measurable(s: &str) -> Result<QuantFormat, String> {
    let f = QuantFormat::parse(s)?;
    match f {
        QuantFormat::Int4Row
        | QuantFormat::Int4Grouped(_)
        | QuantFormat::Int8Row
        | QuantFormat::Mxfp4
        | QuantFormat::Fp8E4m3B128 => Ok(f),
        _ => Err(format!(
            "{s}: stats measures int4-row, int4-grouped:GS, int8-row, mxfp4 or fp8-e4m3-b128 codes"
        )),
    }
}

/// H1, `None` when no neighbour pair was counted (rows of one symbol, an empty stream).
fn order1(c: &crate::stats::Counts) -> Option<f64> {
    (c.pair_total() > 0).then(|| c.entropy1())
}

fn tensor_json(t: &TensorStats) -> Value {
    let n = t.counts.symbols();
    let (h0, h1) = (t.counts.entropy0(), order1(&t.counts));
    json!({
        "name": t.name,
        "file": t.file,
        "format": t.format,
        "format_source": t.format_source,
        "shape": t.shape,
        "symbols": t.symbols.name(),
        "nibbles": (t.symbols == Symbols::Nibble).then_some(n),
        "weights": n,
        "bytes": t.bytes,
        "entropy_bits": (n > 0).then_some(h0),
        "entropy_bits_order1": h1,
        "order1_gain_bits": h1.map(|h1| h0 - h1),
        "ratio_bound": ratio_bound(t.symbols, h0),
        "rans256_bytes": t.rans256_bytes,
        "rans256_ratio": ratio(t.bytes, t.rans256_bytes),
        "cfs1_bytes": t.cfs1_bytes,
        "cfs1_ratio": ratio(t.bytes, t.cfs1_bytes),
        "rans64_bytes": t.rans64_bytes,
        "rans64_ratio": ratio(t.bytes, t.rans64_bytes),
        "zstd19_bytes": t.zstd19_bytes,
        "zstd19_ratio": ratio(t.bytes, t.zstd19_bytes),
    })
}

/// The total's JSON: the per-tensor fields (`name` = "total", `file` and `shape` null,
/// `format` the tensors' common format or "mixed") plus the pooled numbers.
fn total_json(t: &Total, tensors: &[TensorStats]) -> Value {
    let n = t.counts.symbols();
    let (h0, h1) = (t.counts.entropy0(), order1(&t.counts));
    let mut formats = tensors.iter().filter(|x| x.symbols == t.symbols).map(|x| &x.format);
    let first = formats.next();
    let format = match first {
        Some(f) if formats.all(|g| g == f) => f.as_str(),
        Some(_) => "mixed",
        None => "none",
    };
    json!({
        "name": "total",
        "file": null,
        "format": format,
        "shape": null,
        "symbols": t.symbols.name(),
        "tensors": t.tensors,
        "nibbles": (t.symbols == Symbols::Nibble).then_some(n),
        "weights": n,
        "bytes": t.bytes,
        "entropy_bits": (n > 0).then_some(h0),
        "entropy_bits_pooled": (n > 0).then_some(h0),
        "entropy_bits_per_tensor": (n > 0).then_some(t.entropy_bits_per_tensor),
        "entropy_bits_order1": h1,
        "order1_gain_bits": h1.map(|h1| h0 - h1),
        "ratio_bound": ratio_bound(t.symbols, h0),
        "rans256_bytes": t.rans256_bytes,
        "rans256_table_bytes": t.rans256_table_bytes,
        "rans256_ratio": ratio(t.bytes, t.rans256_bytes),
        "cfs1_bytes": t.cfs1_bytes,
        "cfs1_ratio": ratio(t.bytes, t.cfs1_bytes),
        "rans64_bytes": t.rans64_bytes,
        "rans64_ratio": ratio(t.bytes, t.rans64_bytes),
        "zstd19_bytes": t.zstd19_bytes,
        "zstd19_ratio": ratio(t.bytes, t.zstd19_bytes),
        "verdict": verdict(t),
    })
}

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "-".into(), |v| v.to_string())
}

fn optr(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.3}x"))
}

/// Refuses, before anything is measured, a `--plot` file that is one of the inputs (a PATH,
/// or a shard of a PATH directory) or, without `--force`, that exists.
fn check_plot(plot: &std::path::Path, args: &StatsArgs) -> Result<(), Refusal> {
    let mut inputs = Vec::new();
    for p in crate::stats::expand(&args.paths)? {
        if p.is_dir() {
            inputs.extend(crate::shardset::list_shards(&p).unwrap_or_default());
        }
        inputs.push(p);
    }
    crate::io::check_output(plot, &inputs, args.force)?;
    PlotFormat::from_path(plot).map_err(|e| Refusal::new(Class::Usage, format!("--plot: {e}")))?;
    crate::output::check_writable(plot).map_err(|e| Refusal::new(Class::Io, e.to_string()))
}

/// The `--json` document of a report (float tensors measured as `quantize`): what `tetrad
/// stats --json` prints, and what other front ends (the Python package) return.
pub fn report_json(report: &Report, quantize: QuantFormat) -> Value {
    let total_json = |t: &Total| total_json(t, &report.tensors);
    let total = report.nibbles.as_ref().or(report.bytes.as_ref()).or(report.split.first());
    json!({
        "quantize": quantize.to_string(),
        "tensors": report.tensors.iter().map(tensor_json).collect::<Vec<_>>(),
        "total": total.map(total_json),
        "total_bytes": report.bytes.as_ref().filter(|_| report.nibbles.is_some()).map(total_json),
        "total_split": report.split.iter().map(total_json).collect::<Vec<_>>(),
        "skipped": report.skipped.iter().map(|s| json!({"name": s.name, "file": s.file, "reason": s.reason})).collect::<Vec<_>>(),
    })
}

/// Runs `tetrad stats`.
pub fn run(args: &StatsArgs) -> ExitCode {
    let opts = StatsOptions { quantize: args.quantize, zstd: !args.no_zstd };
    if let Some(p) = &args.plot {
        super::sweep_beside(p);
        if let Err(r) = check_plot(p, args) {
            return super::refused_as(&r, args.json);
        }
    }
    let (measured, skipped) = match collect(&args.paths, &opts) {
        Ok(v) => v,
        Err(r) => return super::refused_as(&r, args.json),
    };
    let total: u64 = measured.iter().map(|m| m.data.len() as u64).sum();
    let bar = crate::progress::bytes(total, "measuring", args.quiet);
    let report = measure_with_progress(measured, skipped, &opts, &|n| bar.inc(n));
    bar.finish_and_clear();
    if let Some(p) = &args.plot
        && let Err(e) = crate::stats::plot::write(&report, p)
    {
        let r = Refusal::new(Class::Io, e.to_string());
        return super::refused_as(&r, args.json);
    }
    if args.json {
        println!("{}", report_json(&report, args.quantize));
        return ExitCode::SUCCESS;
    }
    if args.per_tensor {
        for t in &report.tensors {
            let h0 = t.counts.entropy0();
            println!(
                "{} [{}] {} {:?}: {} {}s, H0 {:.4} H1 {:.4} bits, bound {}, rans256 {} cfs1 {} rans64 {} zstd19 {}",
                t.name,
                t.file,
                t.format,
                t.shape,
                t.counts.symbols(),
                t.symbols.name(),
                h0,
                t.counts.entropy1(),
                optr(ratio_bound(t.symbols, h0)),
                optr(ratio(t.bytes, t.rans256_bytes)),
                optr(ratio(t.bytes, t.cfs1_bytes)),
                optr(ratio(t.bytes, t.rans64_bytes)),
                optr(ratio(t.bytes, t.zstd19_bytes)),
            );
        }
        for s in &report.skipped {
            println!("skipped {} [{}]: {}", s.name, s.file, s.reason);
        }
    }
    for t in [&report.nibbles, &report.bytes].into_iter().flatten().chain(&report.split) {
        let (h0, h1) = (t.counts.entropy0(), t.counts.entropy1());
        println!(
            "total ({} {} stream(s), {} {}s, {} bytes):",
            t.tensors,
            t.symbols.name(),
            t.counts.symbols(),
            t.symbols.name(),
            t.bytes
        );
        println!(
            "  entropy: {h0:.4} bits pooled, {:.4} per tensor (weighted), order-1 {h1:.4} (gain {:.4})",
            t.entropy_bits_per_tensor,
            h0 - h1
        );
        println!("  ratio bound {}", optr(ratio_bound(t.symbols, h0)));
        if t.symbols == Symbols::Nibble {
            println!(
                "  int4-rans256-g0 {} bytes ({}, pooled table {} bytes incl.)",
                opt(t.rans256_bytes),
                optr(ratio(t.bytes, t.rans256_bytes)),
                opt(t.rans256_table_bytes)
            );
        }
        println!("  CFS1 {} bytes ({})", opt(t.cfs1_bytes), optr(ratio(t.bytes, t.cfs1_bytes)));
        if t.symbols == Symbols::Nibble {
            println!(
                "  int4-rans64-t1 {} bytes ({}, tetrad's own format)",
                opt(t.rans64_bytes),
                optr(ratio(t.bytes, t.rans64_bytes))
            );
        }
        println!(
            "  zstd -19 {} bytes ({})",
            opt(t.zstd19_bytes),
            optr(ratio(t.bytes, t.zstd19_bytes))
        );
        println!("  {}", verdict(t));
    }
    if report.tensors.is_empty() {
        println!("no quantized weights measured ({} tensor(s) skipped)", report.skipped.len());
    } else if !args.per_tensor && !report.skipped.is_empty() {
        println!("{} tensor(s) skipped (--per-tensor lists them)", report.skipped.len());
    }
    ExitCode::SUCCESS
}
