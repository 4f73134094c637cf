//! `tetrad cfs1 …`: the CFS1 (`cfse_pack`) container tools (see [`crate::cfse`]).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

use crate::cfse::{self, PackReport, TensorReport};

/// Options of `tetrad cfs1`.
#[derive(Debug, Args)]
#[command(after_help = "\
Every tensor of a safetensors file becomes one CFS1 blob (two-state nibble rANS, or raw when
that would not shrink it); names, dtypes and shapes are kept. The input's __metadata__ is not:
the container's is {\"cfse\":\"1\"} (pack and cert name the keys left behind on stderr, and in
--json as dropped_metadata), so colibri.fmt stamps do not survive pack + unpack. pack and
unpack write OUT atomically (temporary file, then rename); they refuse an OUT that is IN
(E_OUTPUT_IS_INPUT) and an existing OUT unless --force (E_OUTPUT_EXISTS). check needs no
original: it decodes every blob with every check (a rANS blob's seal; raw blobs carry no
integrity check, and are counted apart) and writes nothing.

Examples:
  tetrad cfs1 pack model.safetensors model.cfse.safetensors
  tetrad cfs1 verify model.safetensors model.cfse.safetensors
  tetrad cfs1 check model.cfse.safetensors
  tetrad cfs1 cert model.safetensors
  tetrad cfs1 unpack model.cfse.safetensors restored.safetensors")]
pub struct Cfs1Args {
    /// What to do.
    #[command(subcommand)]
    pub action: Cfs1Action,
    /// Print the report as JSON.
    #[arg(long, global = true)]
    pub json: bool,
    /// No progress bar.
    #[arg(long, short, global = true)]
    pub quiet: bool,
}

/// The CFS1 container actions.
#[derive(Debug, Subcommand)]
pub enum Cfs1Action {
    /// Compress IN into the container OUT (every tensor round-trip checked first; nothing is
    /// written if any fails).
    Pack {
        /// Input safetensors file.
        input: PathBuf,
        /// Output container.
        output: PathBuf,
        /// Replace OUT if it exists (never the input itself).
        #[arg(long)]
        force: bool,
    },
    /// Decompress every tensor of OUT and compare it, by name, with IN.
    Verify {
        /// The original safetensors file.
        input: PathBuf,
        /// The container to check.
        output: PathBuf,
    },
    /// Decode every blob of the container (checked; no original needed): each rANS blob's
    /// seal and every blob's size against its dtype and shape.
    Check {
        /// The container to check.
        container: PathBuf,
    },
    /// Round-trip every tensor of IN in memory and print the ratio; writes nothing. Refuses
    /// what `pack` would refuse.
    Cert {
        /// Input safetensors file.
        input: PathBuf,
    },
    /// Decompress the container IN back to a plain safetensors file OUT.
    Unpack {
        /// The container.
        input: PathBuf,
        /// Output safetensors file.
        output: PathBuf,
        /// Replace OUT if it exists (never the input itself).
        #[arg(long)]
        force: bool,
    },
}

fn totals(r: &[TensorReport]) -> (u64, u64) {
    (r.iter().map(|t| t.1).sum(), r.iter().map(|t| t.2).sum())
}

fn print_report(what: &str, report: &PackReport, json: bool) {
    let (r, dropped) = (&report.tensors, &report.dropped_metadata);
    let (orig, blob) = totals(r);
    let ratio = if orig == 0 { 0.0 } else { blob as f64 / orig as f64 };
    if json {
        let tensors: Vec<_> = r
            .iter()
            .map(|(n, o, b, m)| serde_json::json!({"name": n, "bytes": o, "blob_bytes": b, "mode": if *m == 0 { "raw" } else { "rans" }}))
            .collect();
        println!(
            "{}",
            serde_json::json!({"action": what, "tensors": tensors, "bytes": orig, "blob_bytes": blob, "ratio": ratio, "dropped_metadata": dropped})
        );
        return;
    }
    for (n, o, b, m) in r {
        println!("{what} {n}: {o} -> {b} bytes ({})", if *m == 0 { "raw" } else { "rans" });
    }
    println!("[{what}] {} tensor(s): {orig} -> {blob} bytes, ratio {ratio:.4}", r.len());
    if !dropped.is_empty() {
        let stamp = if dropped.iter().any(|k| k == "colibri.fmt") {
            "; its colibri.fmt stamps do not come back through `cfs1 unpack` (re-stamp the \
             restored file, or keep the original, where a stamp decides the format)"
        } else {
            ""
        };
        eprintln!(
            "note: the input's __metadata__ ({}) is not kept: a CFS1 container's metadata is \
             {{\"cfse\":\"1\"}}{stamp}",
            dropped.join(", ")
        );
    }
}

/// Runs `tetrad cfs1 …`.
pub fn run(args: &Cfs1Args) -> ExitCode {
    let quiet = args.quiet || args.json;
    let file_len = |p: &std::path::Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let (what, total) = match &args.action {
        Cfs1Action::Pack { input, .. } | Cfs1Action::Cert { input } => ("cfs1", file_len(input)),
        Cfs1Action::Verify { output, .. } => ("verify", file_len(output)),
        Cfs1Action::Check { container } => ("check", file_len(container)),
        Cfs1Action::Unpack { input, .. } => ("unpack", file_len(input)),
    };
    let bar = crate::progress::bytes(total, what, quiet);
    let tick = |n: u64| bar.inc(n);
    let result = match &args.action {
        Cfs1Action::Pack { input, output, force } => {
            super::sweep_beside(output);
            crate::io::check_output(output, [input], *force)
                .and_then(|()| cfse::pack(input, output, &tick))
                .map(|r| print_report("pack", &r, args.json))
        }
        Cfs1Action::Cert { input } => {
            cfse::cert(input).map(|r| print_report("cert", &r, args.json))
        }
        Cfs1Action::Verify { input, output } => cfse::verify(input, output, &tick).map(|n| {
            if args.json {
                println!(
                    "{}",
                    serde_json::json!({"action": "verify", "tensors": n, "result": "OK"})
                );
            } else {
                println!("[verify] {n} tensor(s) decode to the input bytes: OK");
            }
        }),
        Cfs1Action::Check { container } => cfse::check(container, &tick).map(|r| {
            if args.json {
                println!(
                    "{}",
                    serde_json::json!({"action": "check", "tensors": r.tensors, "rans": r.rans, "raw": r.raw, "bytes": r.bytes, "result": "OK"})
                );
            } else {
                println!(
                    "[check] {} tensor(s), {} bytes decoded: {} rANS blob(s) sealed, {} raw \
                     (no integrity check in the format): OK",
                    r.tensors, r.bytes, r.rans, r.raw
                );
            }
        }),
        Cfs1Action::Unpack { input, output, force } => {
            super::sweep_beside(output);
            crate::io::check_output(output, [input], *force)
                .and_then(|()| cfse::unpack(input, output, &tick))
                .map(|n| {
                    if args.json {
                        println!(
                            "{}",
                            serde_json::json!({"action": "unpack", "tensors": n, "output": output})
                        );
                    } else {
                        println!("[unpack] wrote {} ({n} tensor(s))", output.display());
                    }
                })
        }
    };
    bar.finish_and_clear();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(r) => super::refused_as(&r, args.json),
    }
}
