//! `tetrad matmul`: multiply activations with a tensor of a container, whatever its format.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use tetrad_quant::adapter::{Acts, Cfs1Matrix, Rans256Matrix};
use tetrad_quant::adapter_rans64::Rans64Matrix;
use tetrad_quant::isa::{self, Isa};
use tetrad_quant::kernels::{Matrix, Scales, matmul_rows_with};
use tetrad_rans::Arm;

use crate::container::{Container, TensorView};
use crate::rans256::Refusal;

/// One thread's row band and its outputs (`S × band` floats).
type Band = (std::ops::Range<usize>, Result<Vec<f32>, Refusal>);

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
Use it to sanity-check a container against a reference.

Examples:
  tetrad matmul packed/ model.layers.3.mlp.experts.7.up_proj.weight --o 1408 --i 2048 \\
      --x x.f32 --out y.f32
  tetrad matmul model/ lm_head.weight --o 32000 --i 4096 --x x.f32 --out y.f32 --isa scalar")]
pub struct MatmulArgs {
    /// Container: a shard file or a directory of shards.
    pub container: PathBuf,
    /// Tensor name.
    pub tensor: String,
    /// Output rows O of the weight matrix.
    #[arg(long)]
    pub o: u64,
    /// Inputs per row I of the weight matrix.
    #[arg(long)]
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
    /// Threads (dense and int4-rans64-t1: row bands; other compressed: decode/multiply pipeline).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: u16,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

fn refuse(class: &'static str, detail: impl Into<String>) -> Refusal {
    Refusal::new(class, detail)
}

/// The product; `Err` is the named refusal.
pub fn compute(args: &MatmulArgs) -> Result<(Vec<f32>, usize, Isa, &'static str), Refusal> {
    let isa = match &args.isa {
        None => isa::best(),
        Some(name) => {
            let a = Isa::from_name(name)
                .ok_or_else(|| refuse("E_USAGE", format!("unknown arm {name:?}")))?;
            if !a.is_available() {
                return Err(refuse(
                    "E_PATH_UNAVAILABLE",
                    format!("arm {name} is not available on this CPU or build"),
                ));
            }
            a
        }
    };
    let (o, i) = (
        usize::try_from(args.o).map_err(|_| refuse("E_USAGE", "--o too large"))?,
        usize::try_from(args.i).map_err(|_| refuse("E_USAGE", "--i too large"))?,
    );
    let xb = crate::io::read_input(&args.x)
        .map_err(|e| refuse("E_IO", format!("{}: {e}", args.x.display())))?;
    let row = i
        .checked_mul(4)
        .filter(|&r| r > 0)
        .ok_or_else(|| refuse("E_USAGE", "--i must be at least 1"))?;
    if xb.is_empty() || xb.len() % row != 0 {
        return Err(refuse(
            "E_SHAPE",
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
    let mut y = vec![0f32; s * o];
    let name = &args.tensor;
    let kerr = |e: tetrad_quant::KernelError| refuse(e.class(), format!("{name}: {e}"));
    let threads = usize::from(args.threads);
    let how = match view {
        TensorView::Rans256 { record, table, scales, .. } => {
            let sc = scales
                .to_f32()
                .ok_or_else(|| refuse("E_SCALE_DTYPE", format!("{name}.qs is {}", scales.dtype)))?;
            let m = Rans256Matrix::new(record.blob(), &table, &sc, o, i)
                .map_err(|e| refuse(e.class(), format!("{name}: {e}")))?;
            crate::adapter::matmul(&m, isa, Arm::best(), Acts::F32 { x: &x, s }, &mut y, threads)
                .map_err(|e| refuse(e.class(), format!("{name}: {e}")))?;
            "int4-rans256-g0 (fused decode + int4-row kernel)"
        }
        TensorView::Rans64 { blob, scales, .. } => {
            let sc = scales
                .to_f32()
                .ok_or_else(|| refuse("E_SCALE_DTYPE", format!("{name}.qs is {}", scales.dtype)))?;
            let m = Rans64Matrix::new(blob.bytes(), &sc, o, i)
                .map_err(|e| refuse(e.class(), format!("{name}: {e}")))?;
            let arm = tetrad_rans::rans64::Arm::best();
            crate::rans64::matmul(&m, isa, arm, Acts::F32 { x: &x, s }, &mut y, threads)
                .map_err(|e| refuse(e.class(), format!("{name}: {e}")))?;
            "int4-rans64-t1 (fused decode + int4-row kernel)"
        }
        TensorView::Cfs1Int4Row { blob, scales, .. } => {
            let m = Cfs1Matrix::new(blob, &scales, o, i)
                .map_err(|e| refuse(e.class(), format!("{name}: {e}")))?;
            crate::adapter::matmul_cfs1(&m, isa, Acts::F32 { x: &x, s }, &mut y, threads)
                .map_err(|e| refuse(e.class(), format!("{name}: {e}")))?;
            "int4-row in CFS1 (fused decode + int4-row kernel)"
        }
        TensorView::Dense { resolved, weights, scales, .. } => {
            let widened = scales.and_then(|s| s.to_f32());
            let sc = match (&scales, &widened) {
                (None, _) => Scales::None,
                (Some(_), Some(f)) => Scales::F32(f),
                (Some(st), None) => Scales::Ue8m0(st.bytes),
            };
            let gs = resolved.group_size.map_or(0, |g| g as usize);
            let m = Matrix::new(resolved.format, weights, sc, o, i, gs).map_err(kerr)?;
            let band = o.div_ceil(threads).max(1);
            let parts: Vec<Band> = std::thread::scope(|sc| {
                let handles: Vec<_> = (0..o)
                    .step_by(band)
                    .map(|r0| {
                        let rows = r0..(r0 + band).min(o);
                        let (m, x) = (&m, &x);
                        let h = sc.spawn({
                            let rows = rows.clone();
                            move || {
                                let mut yb = vec![0f32; s * rows.len()];
                                matmul_rows_with(isa, m, x, s, rows, &mut yb)
                                    .map(|()| yb)
                                    .map_err(kerr)
                            }
                        });
                        (rows, h)
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|(r, h)| (r, h.join().expect("kernel thread panicked")))
                    .collect()
            });
            for (rows, part) in parts {
                let part = part?;
                let n = rows.len();
                for si in 0..s {
                    y[si * o + rows.start..si * o + rows.end]
                        .copy_from_slice(&part[si * n..(si + 1) * n]);
                }
            }
            resolved.format.name()
        }
    };
    Ok((y, s, isa, how))
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
    let result = check_out(args).and_then(|()| compute(args)).and_then(|(y, s, isa, how)| {
        let bytes: Vec<u8> = y.iter().flat_map(|v| v.to_le_bytes()).collect();
        crate::io::write_bytes_atomic(&args.out, &bytes)
            .map_err(|e| refuse("E_IO", format!("{}: {e}", args.out.display())))?;
        Ok((s, isa, how))
    });
    match result {
        Ok((s, isa, how)) => {
            if args.json {
                println!(
                    "{}",
                    serde_json::json!({"tensor": args.tensor, "format": how, "s": s, "o": args.o, "i": args.i, "isa": isa.name(), "out": args.out})
                );
            } else {
                println!(
                    "{}: [{s}, {}] x [{}, {}]^T -> {} ({how}, arm {})",
                    args.tensor,
                    args.i,
                    args.o,
                    args.i,
                    args.out.display(),
                    isa.name()
                );
            }
            ExitCode::SUCCESS
        }
        Err(r) => super::refused_as(&r, args.json),
    }
}
