//! [`TensorView::matmul`]: multiply activations with a container's tensor, whatever its
//! format — the one call an engine needs after [`Container::tensor`](crate::container::Container::tensor).
//!
//! The view already says what the tensor is (its stamp verified, or byte arithmetic); this
//! prepares it ([`TensorView::prepare`]: every check once, see [`crate::prepared`]) and
//! multiplies, exactly as `tetrad matmul` does (it calls this):
//! - a dense registry format: [`tetrad_quant::kernels`] on a `Matrix` of the stored bytes
//!   (BF16/F16 scales widened to f32, UE8M0 bytes as they are), `threads` row bands;
//! - `int4-rans256-g0`: the fused adapter (`Rans256Matrix`), decoded tile by tile into the
//!   int4-row kernel, with `threads ≥ 2` splitting streams or pipelining decode and multiply
//!   ([`crate::adapter::matmul`]);
//! - `int4-rans64-t1`: `Rans64Matrix`, row bands of independent chunks across `threads`
//!   ([`crate::rans64::matmul`]);
//! - int4-row in a CFS1 container: `Cfs1Matrix` ([`crate::adapter::matmul_cfs1`]).
//!
//! An engine that multiplies the same tensor many times prepares it once instead
//! ([`Container::prepare`](crate::container::Container::prepare)).
//!
//! Every compressed path is bit-identical to dense int4-row on the decoded bytes (same arm),
//! and a corrupt record or blob is refused with `y` all zeros: nothing partial is left behind.
//! Refusals name the tensor and keep the kernel's or decoder's class (`E_SHAPE`,
//! `E_FINAL_STATE`, …).

use tetrad_quant::adapter::Acts;
use tetrad_quant::isa::Isa;

use crate::container::TensorView;
use crate::error::Refusal;

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
        let p = self.prepare(name)?.on_isa(isa);
        p.matmul_threads(acts, y, threads.max(1))?;
        Ok(p.how())
    }
}
