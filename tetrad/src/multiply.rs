//! [`TensorView::matmul`]: multiply activations with a container's tensor, whatever its
//! format — the one call an engine needs after [`Container::tensor`](crate::container::Container::tensor).
//!
//! The view already says what the tensor is (its stamp verified, or byte arithmetic); this
//! picks the matching path, exactly as `tetrad matmul` does (it calls this):
//! - a dense registry format: [`tetrad_quant::kernels`] on a [`Matrix`] of the stored bytes
//!   (BF16/F16 scales widened to f32, UE8M0 bytes as they are), `threads` row bands;
//! - `int4-rans256-g0`: the fused adapter ([`Rans256Matrix`]), decoded tile by tile into the
//!   int4-row kernel, with `threads ≥ 2` pipelining decode and multiply
//!   ([`crate::adapter::matmul`]);
//! - `int4-rans64-t1`: [`Rans64Matrix`], row bands of independent chunks across `threads`
//!   ([`crate::rans64::matmul`]);
//! - int4-row in a CFS1 container: [`Cfs1Matrix`] ([`crate::adapter::matmul_cfs1`]).
//!
//! Every compressed path is bit-identical to dense int4-row on the decoded bytes (same arm),
//! and a corrupt record or blob is refused with `y` all zeros: nothing partial is left behind.
//! Refusals name the tensor and keep the kernel's or decoder's class (`E_SHAPE`,
//! `E_FINAL_STATE`, …).

use std::ops::Range;

use tetrad_quant::KernelError;
use tetrad_quant::adapter::{Acts, Cfs1Matrix, Rans256Matrix};
use tetrad_quant::adapter_rans64::Rans64Matrix;
use tetrad_quant::isa::Isa;
use tetrad_quant::kernels::{Matrix, Scales, matmul_q8_rows_with, matmul_rows_with};
use tetrad_rans::Arm;

use crate::container::TensorView;
use crate::error::{Class, Refusal};

/// Multiplies one row band into its `S × band` outputs.
type BandKernel<'a> = dyn Fn(Range<usize>, &mut [f32]) -> Result<(), KernelError> + Sync + 'a;

impl TensorView<'_> {
    /// `y = x · Wᵀ` for this tensor on kernel arm `isa` (the best decode arm for compressed
    /// formats): `x` is `S × I`, `y` is `S × O` (row-major, f32), `threads ≥ 1`. Returns how it
    /// was multiplied (`"int4-row"`, `"int4-rans256-g0 (fused decode + int4-row kernel)"`, …).
    /// `name` is the tensor's name, for the refusals.
    pub fn matmul(
        &self,
        name: &str,
        isa: Isa,
        x: &[f32],
        s: usize,
        y: &mut [f32],
        threads: usize,
    ) -> Result<&'static str, Refusal> {
        self.matmul_acts(name, isa, Acts::F32 { x, s }, y, threads)
    }

    /// [`matmul`](Self::matmul) with either kind of activations: f32, or int8-quantized
    /// ([`Acts::Q8`], from `tetrad_quant::kernels::quantize_activations`: exact integer dot
    /// products, for the integer formats and every compressed one; a format without an int8
    /// path, f32 or fp8, refuses them by name).
    pub fn matmul_acts(
        &self,
        name: &str,
        isa: Isa,
        acts: Acts<'_>,
        y: &mut [f32],
        threads: usize,
    ) -> Result<&'static str, Refusal> {
        let refuse =
            |class: Class, e: &dyn std::fmt::Display| Refusal::new(class, format!("{name}: {e}"));
        let (o, i) = self.shape();
        let (o, i) = (
            usize::try_from(o).map_err(|_| refuse(Class::Shape, &"O does not fit this machine"))?,
            usize::try_from(i).map_err(|_| refuse(Class::Shape, &"I does not fit this machine"))?,
        );
        let threads = threads.max(1);
        let f32_scales = |sc: &crate::container::StoredScales<'_>| {
            sc.to_f32().ok_or_else(|| {
                Refusal::new(Class::ScaleDtype, format!("{name}.qs is {}", sc.dtype))
            })
        };
        match self {
            TensorView::Rans256 { record, table, scales, .. } => {
                let sc = f32_scales(scales)?;
                let m = Rans256Matrix::new(record.blob(), table, &sc, o, i)
                    .map_err(|e| refuse(Class::of(&e), &e))?;
                crate::adapter::matmul(&m, isa, Arm::best(), acts, y, threads)
                    .map_err(|e| refuse(Class::of(&e), &e))?;
                Ok("int4-rans256-g0 (fused decode + int4-row kernel)")
            }
            TensorView::Rans64 { blob, scales, .. } => {
                let sc = f32_scales(scales)?;
                let m = Rans64Matrix::new(blob.bytes(), &sc, o, i)
                    .map_err(|e| refuse(Class::of(&e), &e))?;
                let arm = tetrad_rans::rans64::Arm::best();
                crate::rans64::matmul(&m, isa, arm, acts, y, threads)
                    .map_err(|e| refuse(Class::of(&e), &e))?;
                Ok("int4-rans64-t1 (fused decode + int4-row kernel)")
            }
            TensorView::Cfs1Int4Row { blob, scales, .. } => {
                let m =
                    Cfs1Matrix::new(blob, scales, o, i).map_err(|e| refuse(Class::of(&e), &e))?;
                crate::adapter::matmul_cfs1(&m, isa, acts, y, threads)
                    .map_err(|e| refuse(Class::of(&e), &e))?;
                Ok("int4-row in CFS1 (fused decode + int4-row kernel)")
            }
            TensorView::Dense { resolved, weights, scales, .. } => {
                let widened = scales.and_then(|s| s.to_f32());
                let sc = match (scales, &widened) {
                    (None, _) => Scales::None,
                    (Some(_), Some(f)) => Scales::F32(f),
                    (Some(st), None) => Scales::Ue8m0(st.bytes),
                };
                let gs = resolved.group_size.map_or(0, |g| g as usize);
                let kerr = |e: KernelError| refuse(Class::of(&e), &e);
                let m = Matrix::new(resolved.format, weights, sc, o, i, gs).map_err(kerr)?;
                let run = |rows: Range<usize>, y: &mut [f32]| match acts {
                    Acts::F32 { x, s } => matmul_rows_with(isa, &m, x, s, rows, y),
                    Acts::Q8(xq) => matmul_q8_rows_with(isa, &m, xq, rows, y),
                };
                if acts.s().checked_mul(o) != Some(y.len()) || acts.check(i).is_err() {
                    // The kernel's own refusal of the shapes, on the whole matrix.
                    return run(0..o, y).map_err(kerr).map(|()| resolved.format.name());
                }
                dense_bands(o, acts.s(), y, threads, &run).map_err(kerr)?;
                Ok(resolved.format.name())
            }
        }
    }
}

/// Dense `y = x · Wᵀ` in `threads` row bands: `run(rows, y_band)` multiplies one band
/// (`S × band` outputs).
fn dense_bands(
    o: usize,
    s: usize,
    y: &mut [f32],
    threads: usize,
    run: &BandKernel<'_>,
) -> Result<(), KernelError> {
    if threads <= 1 || o < 2 {
        return run(0..o, y);
    }
    crate::adapter::row_bands(o, s, y, threads, |rows| {
        let mut yb = vec![0f32; s * rows.len()];
        run(rows, &mut yb).map(|()| yb)
    })
}
