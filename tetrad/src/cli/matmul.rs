//! `tetrad matmul`: multiply activations with a tensor of a container, whatever its format.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use tetrad_quant::adapter::Acts;
use tetrad_quant::isa::{self, Isa};
use tetrad_quant::kernels::quantize_activations;

use crate::container::Container;
use crate::error::{Class, Refusal};

/// Options of `tetrad matmul`.
#[derive(Debug, Args)]
#[command(after_help = "\
Reads S × I little-endian f32 activations from --x (S = file size / 4I), multiplies them with
the tensor (y[s, o] = Σ_i x[s, i] · W[o, i]) and writes S × O little-endian f32 to --out.
The tensor's format is decided by its stamp (verified) or by byte arithmetic from --o/--i;
int4-rans256-g0 records, int4-rans64-t1 blobs (row bands across --threads), and int4-row
weights in a CFS1 (cfse_pack) container, are decoded tile by tile straight into the int4-row
kernel (checked: a corrupt record or blob writes nothing). An existing --out is refused
(E_OUTPUT_EXISTS) unless --force, and an --out that is an input (--x, the container or one of
its shards) always (E_OUTPUT_IS_INPUT).
--acts int8 quantizes each activation row to int8 first (the kernels' exact integer mode;
integer and compressed formats only). Use it to sanity-check a container against a reference.

Examples:
  tetrad matmul packed/ model.layers.3.mlp.experts.7.up_proj.weight --o 1408 --i 2048 \\
      --x x.f32 --out y.f32
  tetrad matmul model/ lm_head.weight --o 32000 --i 4096 --x x.f32 --out y.f32 --isa scalar")]
pub struct MatmulArgs {
    /// Container: a shard file or a directory of shards.
    pub container: PathBuf,
    /// Tensor name.
    pub tensor: String,
    /// Output rows O of the weight matrix (1 to 2^31).
    #[arg(long, value_parser = dimension)]
    pub o: u64,
    /// Inputs per row I of the weight matrix (1 to 2^31).
    #[arg(long, value_parser = dimension)]
    pub i: u64,
    /// Activations: S × I little-endian f32.
    #[arg(long)]
    pub x: PathBuf,
    /// Output: S × O little-endian f32 (written atomically).
    #[arg(long)]
    pub out: PathBuf,
    /// Replace --out if it exists (never an input).
    #[arg(long)]
    pub force: bool,
    /// Force a kernel arm (scalar, avx2, avx512, …); refused if this CPU lacks it.
    #[arg(long)]
    pub isa: Option<String>,
    /// Threads (dense and int4-rans64-t1: row bands; int4-rans256-g0: its streams split at small
    /// batches, else, like CFS1, a decode/multiply pipeline).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: u16,
    /// Activations as given (`f32`), or quantized per row to int8 first (`int8`: exact
    /// integer dot products, the kernels' second mode; integer and compressed formats only).
    #[arg(long, value_enum, default_value_t = ActsKind::F32)]
    pub acts: ActsKind,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `--acts`: how the activations meet the weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ActsKind {
    /// f32 activations, weights dequantized in registers.
    F32,
    /// Activations quantized per row to int8 (`sx = max|x| / 127`, round half to even), exact
    /// i32 dot products.
    Int8,
}

fn refuse(class: Class, detail: impl Into<String>) -> Refusal {
    Refusal::new(class, detail)
}

/// The product; `Err` is the named refusal.
pub fn compute(args: &MatmulArgs) -> Result<(Vec<f32>, usize, Isa, &'static str), Refusal> {
    let isa = match &args.isa {
        None => isa::best(),
        Some(name) => {
            let a = Isa::from_name(name)
                .ok_or_else(|| refuse(Class::Usage, format!("unknown arm {name:?}")))?;
            if !a.is_available() {
                return Err(refuse(
                    Class::PathUnavailable,
                    format!("arm {name} is not available on this CPU or build"),
                ));
            }
            a
        }
    };
    let (o, i) = (
        usize::try_from(args.o).map_err(|_| refuse(Class::Usage, "--o too large"))?,
        usize::try_from(args.i).map_err(|_| refuse(Class::Usage, "--i too large"))?,
    );
    let xb = crate::io::read_input(&args.x)
        .map_err(|e| refuse(Class::Io, format!("{}: {e}", args.x.display())))?;
    let row = i
        .checked_mul(4)
        .filter(|&r| r > 0)
        .ok_or_else(|| refuse(Class::Usage, "--i must be at least 1"))?;
    if xb.is_empty() || xb.len() % row != 0 {
        return Err(refuse(
            Class::Shape,
            format!(
                "{} holds {} bytes, not a nonzero multiple of 4·I = {row}",
                args.x.display(),
                xb.len()
            ),
        ));
    }
    let s = xb.len() / row;
    let x: Vec<f32> =
        xb.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    let c = Container::open(&args.container)?;
    let view = c.tensor(&args.tensor, args.o, args.i)?;
    let outputs = s
        .checked_mul(o)
        .ok_or_else(|| refuse(Class::Shape, format!("S × O = {s} × {o} outputs overflow")))?;
    let mut y = vec![0f32; outputs];
    let threads = usize::from(args.threads);
    // Checked once, then multiplied (the kernel refuses an unavailable `--isa` by name).
    let w = view.into_prepared(&args.tensor)?.on_isa(isa);
    match args.acts {
        ActsKind::F32 => w.matmul_threads(Acts::F32 { x: &x, s }, &mut y, threads)?,
        ActsKind::Int8 => {
            let (mut q, mut sx) = (vec![0i8; x.len()], vec![0f32; s]);
            let xq = quantize_activations(&x, s, i, &mut q, &mut sx)
                .map_err(|e| refuse(Class::of(&e), format!("{}: {e}", args.x.display())))?;
            w.matmul_threads(Acts::Q8(&xq), &mut y, threads)?;
        }
    }
    Ok((y, s, isa, w.how()))
}

/// The largest `--o` / `--i`: far beyond any weight matrix, small enough that no product of
/// sizes derived from it (bytes per activation row, S × O outputs) overflows unnoticed.
const MAX_DIMENSION: u64 = 1 << 31;

/// A matrix dimension: a whole number from 1 to [`MAX_DIMENSION`]; a usage error names which
/// bound it breaks ("too large" for a value that would overflow, not "at least 1").
fn dimension(text: &str) -> Result<u64, String> {
    let digits = text.trim_start_matches('+');
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return match digits.parse::<u64>() {
            Ok(0) => Err("must be at least 1".into()),
            Ok(v) if v <= MAX_DIMENSION => Ok(v),
            _ => Err(format!("too large: at most {MAX_DIMENSION} (2^31)")),
        };
    }
    Err(format!("{text:?} is not a whole number"))
}

/// Refuses an `--out` that is an input (`--x`, the container file or one of its shards) or,
/// without `--force`, that exists (see [`crate::io::check_output`]).
fn check_out(args: &MatmulArgs) -> Result<(), Refusal> {
    let mut inputs = vec![args.x.clone(), args.container.clone()];
    if args.container.is_dir() {
        // The shards the container reads; a listing error is the container's to report.
        inputs.extend(crate::shardset::list_shards(&args.container).unwrap_or_default());
    }
    crate::io::check_output(&args.out, &inputs, args.force)
}

/// Runs `tetrad matmul`.
pub fn run(args: &MatmulArgs) -> ExitCode {
    super::sweep_beside(&args.out);
    let result = check_out(args).and_then(|()| compute(args)).and_then(|(y, s, isa, how)| {
        let bytes: Vec<u8> = y.iter().flat_map(|v| v.to_le_bytes()).collect();
        crate::output::write_bytes(&args.out, &bytes)
            .map_err(|e| refuse(Class::Io, e.to_string()))?;
        Ok((s, isa, how))
    });
    match result {
        Ok((s, isa, how)) => {
            if args.json {
                println!(
                    "{}",
                    serde_json::json!({"tensor": args.tensor, "format": how, "s": s, "o": args.o, "i": args.i, "isa": isa.name(), "acts": if args.acts == ActsKind::Int8 { "int8" } else { "f32" }, "out": args.out})
                );
            } else {
                println!(
                    "{}: [{s}, {}] x [{}, {}]^T -> {} ({how}, arm {}{})",
                    args.tensor,
                    args.i,
                    args.o,
                    args.i,
                    args.out.display(),
                    isa.name(),
                    if args.acts == ActsKind::Int8 { ", int8 activations" } else { "" }
                );
            }
            ExitCode::SUCCESS
        }
        Err(r) => super::refused_as(&r, args.json),
    }
}
