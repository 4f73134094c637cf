//! The public kernel API: `y[s, o] = Σ_i x[s, i] · W[o, i]` for every registry format that has
//! a value rule, over borrowed views, on the best (or a forced) instruction-set arm.
//!
//! A [`Matrix`] is a validated view of one weight tensor (format, weight bytes, scales, `[O, I]`,
//! group size): building it checks every length and refuses what the spec refuses by name
//! (`e8-iq3-lattice`, fp8 with UE8M0 block scales, a UE8M0 byte of 255). Build it once at load
//! time and reuse it; the kernels then only check the activation and output shapes.
//!
//! Two accumulation modes, chosen explicitly by the caller:
//! - **f32 activations** ([`matmul`], [`matmul_rows`], [`matmul_with`], [`matmul_rows_with`]):
//!   weights are dequantized in registers; arms agree with the scalar reference within the
//!   tolerance of `docs/kernels.md`.
//! - **int8 activations** ([`quantize_activations`] then [`matmul_q8`], …): integer formats and
//!   mxfp4; exact i32 dot products per scale group, then the scale; bit-exact across arms.
//!
//! Row-range variants compute output rows `rows` only, writing `S × rows.len()` values, so a
//! caller can split the rows of one matrix over threads. The `*_with` variants force one arm
//! ([`Isa`]); forcing an arm that is not available is [`KernelError::Unavailable`]
//! (`E_PATH_UNAVAILABLE`), never a silent downgrade. The normative definitions (value rules,
//! summation order) live in [`crate::scalar`].

use core::ops::Range;

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
use crate::arch::x86_64 as x86;
use crate::format::Format;
use crate::isa::{self, Isa};
use crate::scalar;

/// Largest `I` accepted on the int8-activation path: keeps every i32 dot product exact
/// (`2^17 · 128 · 127 < 2^31`).
pub const MAX_I_Q8: usize = 1 << 17;

/// The scales of a weight tensor, as stored.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scales<'a> {
    /// No scales (`f32` weights).
    None,
    /// f32 scales (every format but mxfp4).
    F32(&'a [f32]),
    /// One-byte UE8M0 scales `2^(e−127)` (mxfp4).
    Ue8m0(&'a [u8]),
}

impl Scales<'_> {
    const fn kind(&self) -> &'static str {
        match self {
            Self::None => "none",
            Self::F32(_) => "f32",
            Self::Ue8m0(_) => "ue8m0",
        }
    }
}

/// Why a kernel call was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KernelError {
    /// `e8-iq3-lattice` is recognised but has no kernel (the spec refuses it by name).
    #[error("e8-iq3-lattice weights have no kernel (recognised and refused)")]
    E8Lattice,
    /// A format that is not a dense weight layout (e.g. the entropy-coded `int4-rans256-g0`,
    /// which must be decoded to int4-row first).
    #[error("format {format:?} has no dense kernel, expected a format with a value rule")]
    NotDense {
        /// The format given.
        format: Format,
    },
    /// fp8-e4m3-b128 with one-byte UE8M0 block scales (refused by name in the spec).
    #[error("fp8 with ue8m0 scales is not supported, expected f32 block scales")]
    Fp8Ue8m0Scales,
    /// A UE8M0 scale byte of 255 (NaN), refused at load (spec DECISION).
    #[error("ue8m0 scale byte at index {index} is 255 (nan), expected 0..=254")]
    Ue8m0Nan {
        /// Index of the first offending scale byte.
        index: usize,
    },
    /// The scales are of the wrong kind for the format.
    #[error("scales are {got}, expected {expected}")]
    ScaleKind {
        /// Kind the format needs (`"f32"`, `"ue8m0"`, `"none"`).
        expected: &'static str,
        /// Kind given.
        got: &'static str,
    },
    /// A buffer does not have the length the shape demands.
    #[error("{what} has {got} elements, expected {expected}")]
    Length {
        /// Which buffer (`"weights"`, `"scales"`, `"x"`, `"y"`, …).
        what: &'static str,
        /// Length the shape demands.
        expected: usize,
        /// Length given.
        got: usize,
    },
    /// A size computed from the shape overflows `usize`.
    #[error("shape [{o}, {i}] overflows usize")]
    Overflow {
        /// Rows.
        o: usize,
        /// Columns.
        i: usize,
    },
    /// int4-grouped with group size 0.
    #[error("group size must be at least 1, got 0")]
    GroupSize,
    /// A row range outside `0..O`.
    #[error("row range {start}..{end} is not within 0..{o}")]
    RowRange {
        /// Range start.
        start: usize,
        /// Range end.
        end: usize,
        /// Rows of the matrix.
        o: usize,
    },
    /// int8 activations requested for a format without integer codes (`f32`, fp8).
    #[error("format {format:?} has no int8-activation kernel, expected an integer format or mxfp4")]
    Mode {
        /// The format given.
        format: Format,
    },
    /// `I` too large for exact i32 dot products on the int8-activation path.
    #[error("{i} inputs per row, expected at most {max} on the int8-activation path")]
    TooWide {
        /// Inputs per row.
        i: usize,
        /// [`MAX_I_Q8`].
        max: usize,
    },
    /// An activation is NaN or infinite and cannot be quantized to int8.
    #[error("activation at flat index {index} is not finite")]
    NonFiniteActivation {
        /// Flat index `s · I + i` of the first offending value.
        index: usize,
    },
    /// The forced arm is not available (not built, not supported by this CPU, or disabled by
    /// its selftest).
    #[error("kernel arm {isa} is not available on this machine")]
    Unavailable {
        /// The arm asked for.
        isa: Isa,
    },
}

impl KernelError {
    /// Stable machine-readable class name of this error.
    pub const fn class(&self) -> &'static str {
        match self {
            Self::E8Lattice => "E_E8_NO_KERNEL",
            Self::NotDense { .. } => "E_KERNEL_FORMAT",
            Self::Fp8Ue8m0Scales => "E_FP8_UE8M0_SCALES",
            Self::Ue8m0Nan { .. } => "E_UE8M0_NAN",
            Self::ScaleKind { .. } => "E_KERNEL_SCALE_KIND",
            Self::Length { .. } => "E_KERNEL_LENGTH",
            Self::Overflow { .. } => "E_KERNEL_OVERFLOW",
            Self::GroupSize => "E_KERNEL_GROUP_SIZE",
            Self::RowRange { .. } => "E_KERNEL_ROW_RANGE",
            Self::Mode { .. } => "E_KERNEL_MODE",
            Self::TooWide { .. } => "E_KERNEL_TOO_WIDE",
            Self::NonFiniteActivation { .. } => "E_KERNEL_NONFINITE_ACTIVATION",
            Self::Unavailable { .. } => "E_PATH_UNAVAILABLE",
        }
    }
}

fn check_len(what: &'static str, expected: usize, got: usize) -> Result<(), KernelError> {
    if expected == got { Ok(()) } else { Err(KernelError::Length { what, expected, got }) }
}

/// Columns per scale group (at least 1) and bytes per row of `format` with `I = i`.
fn layout(format: Format, i: usize, gs: usize) -> Result<(usize, usize), KernelError> {
    let ovf = KernelError::Overflow { o: 1, i };
    let (gl, stride) = match format {
        Format::F32 => (i, i.checked_mul(4).ok_or(ovf)?),
        Format::Int8Row => (i, i),
        Format::Fp8E4m3B128 => (128, i),
        Format::Int4Row => (i, i.div_ceil(2)),
        Format::Int2Row => (i, i.div_ceil(4)),
        Format::Int4Grouped => {
            if gs == 0 {
                return Err(KernelError::GroupSize);
            }
            (gs, i.div_ceil(2))
        }
        Format::Int3G64 => (64, i.div_ceil(64).checked_mul(24).ok_or(ovf)?),
        Format::Mxfp4 => (32, i.div_ceil(2)),
        Format::E8Iq3Lattice => return Err(KernelError::E8Lattice),
        _ => return Err(KernelError::NotDense { format }),
    };
    Ok((gl.max(1), stride))
}

/// A validated view of one weight matrix `W[O, I]`.
#[derive(Debug, Clone, Copy)]
pub struct Matrix<'a> {
    format: Format,
    weights: &'a [u8],
    scales: Scales<'a>,
    o: usize,
    i: usize,
    gl: usize,
    groups: usize,
    stride: usize,
    /// Set by [`Matrix::with_nan_codes_checked`]: fp8 weights without a NaN code.
    fp8_nan_free: bool,
}

impl<'a> Matrix<'a> {
    /// Validates a weight tensor. `gs` is the group size of `int4-grouped` (≥ 1) and is ignored
    /// by every other format. Scales: `F32` with the registry's count for every format but
    /// `f32` (`None`, or an empty `F32`) and mxfp4 (`Ue8m0`, one byte per 32 inputs of a row).
    pub fn new(
        format: Format,
        weights: &'a [u8],
        scales: Scales<'a>,
        o: usize,
        i: usize,
        gs: usize,
    ) -> Result<Self, KernelError> {
        let ovf = KernelError::Overflow { o, i };
        let mul = |a: usize, b: usize| a.checked_mul(b).ok_or(ovf);
        let (gl, stride) = layout(format, i, gs)?;
        let groups = i.div_ceil(gl);
        check_len("weights", mul(o, stride)?, weights.len())?;
        let nscales = match format {
            Format::F32 => 0,
            Format::Int8Row | Format::Int4Row | Format::Int2Row => o,
            Format::Fp8E4m3B128 => mul(o.div_ceil(128), i.div_ceil(128))?,
            _ => mul(o, groups)?,
        };
        match (format, scales) {
            (Format::F32, Scales::None) => {}
            (Format::F32, Scales::F32(s)) => check_len("scales", 0, s.len())?,
            (Format::F32, other) => {
                return Err(KernelError::ScaleKind { expected: "none", got: other.kind() });
            }
            (Format::Mxfp4, Scales::Ue8m0(e)) => {
                check_len("scales", nscales, e.len())?;
                if let Some(index) = e.iter().position(|&b| b == 255) {
                    return Err(KernelError::Ue8m0Nan { index });
                }
            }
            (Format::Mxfp4, other) => {
                return Err(KernelError::ScaleKind { expected: "ue8m0", got: other.kind() });
            }
            (Format::Fp8E4m3B128, Scales::Ue8m0(_)) => return Err(KernelError::Fp8Ue8m0Scales),
            (_, Scales::F32(s)) => check_len("scales", nscales, s.len())?,
            (_, other) => {
                return Err(KernelError::ScaleKind { expected: "f32", got: other.kind() });
            }
        }
        Ok(Self { format, weights, scales, o, i, gl, groups, stride, fp8_nan_free: false })
    }

    /// Scans fp8-e4m3-b128 weights once for NaN codes (`|b| = 0x7F`) and, when there are
    /// none, records it in the returned view: the fused fp8 kernels then skip their
    /// per-block NaN probes. Results are the same bits either way; the gain is the probes'
    /// share of a multiply (about 12 % of the AVX2 GEMV in cache: `tetrad bench kernels`, mode
    /// `f32-checked`), so it pays for a matrix multiplied many times (an engine's weights), not
    /// for one product (the scan reads every byte once). Other formats, and fp8 weights holding a NaN code, come back
    /// unchanged.
    #[must_use]
    pub fn with_nan_codes_checked(mut self) -> Self {
        if self.format == Format::Fp8E4m3B128 {
            // Branch-free per chunk (it vectorises): (b & 0x7F) + 1 has bit 7 set exactly
            // for a NaN code.
            let nan = |c: &[u8]| c.iter().fold(0u8, |a, &b| a | ((b & 0x7F) + 1)) & 0x80 != 0;
            self.fp8_nan_free = !self.weights.chunks(4096).any(nan);
        }
        self
    }

    /// Whether [`Matrix::with_nan_codes_checked`] found fp8 weights free of NaN codes
    /// (`false` for every view it did not check, and for every other format).
    pub const fn fp8_nan_free(&self) -> bool {
        self.fp8_nan_free
    }

    /// The format.
    pub const fn format(&self) -> Format {
        self.format
    }
    /// Output rows `O`.
    pub const fn o(&self) -> usize {
        self.o
    }
    /// Inputs per row `I`.
    pub const fn i(&self) -> usize {
        self.i
    }
    /// The weight bytes.
    pub const fn weights(&self) -> &'a [u8] {
        self.weights
    }
    /// The scales.
    pub const fn scales(&self) -> Scales<'a> {
        self.scales
    }
    /// Columns per scale group along a row: `I` for the row formats and `f32` (at least 1),
    /// `gs` for int4-grouped, 64 for int3-g64, 32 for mxfp4, 128 for fp8-e4m3-b128.
    pub const fn group_len(&self) -> usize {
        self.gl
    }
    /// Scale groups per row, `ceil(I / group_len)`.
    pub const fn groups_per_row(&self) -> usize {
        self.groups
    }
    /// Bytes per weight row.
    pub const fn row_stride(&self) -> usize {
        self.stride
    }
    /// The weight bytes of row `o`.
    ///
    /// # Panics
    /// If `o ≥ O`.
    pub fn row_bytes(&self, o: usize) -> &'a [u8] {
        &self.weights[o * self.stride..(o + 1) * self.stride]
    }
    /// Index into the scales of group `g` of row `o`.
    pub const fn scale_index(&self, o: usize, g: usize) -> usize {
        match self.format {
            Format::Int8Row | Format::Int4Row | Format::Int2Row => o,
            Format::Fp8E4m3B128 => (o / 128) * self.groups + g,
            _ => o * self.groups + g,
        }
    }
    /// Whether the int8-activation path exists for this format.
    pub const fn has_q8(&self) -> bool {
        !matches!(self.format, Format::F32 | Format::Fp8E4m3B128)
    }
}

/// Activations quantized to int8 per row (`q = round_half_even(x / sx)`, `sx = max|x| / 127`),
/// borrowed from caller buffers. Build with [`quantize_activations`].
#[derive(Debug, Clone, Copy)]
pub struct QuantizedActs<'a> {
    q: &'a [i8],
    scale: &'a [f32],
    s: usize,
    i: usize,
}

impl<'a> QuantizedActs<'a> {
    /// Activation rows `S`.
    pub const fn s(&self) -> usize {
        self.s
    }
    /// Inputs per row `I`.
    pub const fn i(&self) -> usize {
        self.i
    }
    /// Row `s`: its `I` codes in `[−127, 127]` and its scale.
    ///
    /// # Panics
    /// If `s ≥ S`.
    pub fn row(&self, s: usize) -> (&'a [i8], f32) {
        (&self.q[s * self.i..(s + 1) * self.i], self.scale[s])
    }
}

/// Quantizes `S` activation rows of `I` values (`x`, `S × I`) into `q` (`S × I` codes) and
/// `scales` (`S` values): `sx = max|x| / 127`; `q = round_half_even(x / sx)` clamped to
/// `[−127, 127]` (never −128, so `maddubs`-style products cannot saturate); all zero if `sx == 0`.
pub fn quantize_activations<'a>(
    x: &[f32],
    s: usize,
    i: usize,
    q: &'a mut [i8],
    scales: &'a mut [f32],
) -> Result<QuantizedActs<'a>, KernelError> {
    let n = s.checked_mul(i).ok_or(KernelError::Overflow { o: s, i })?;
    check_len("x", n, x.len())?;
    check_len("q", n, q.len())?;
    check_len("activation scales", s, scales.len())?;
    if let Some(index) = x.iter().position(|v| !v.is_finite()) {
        return Err(KernelError::NonFiniteActivation { index });
    }
    for si in 0..s {
        let xs = &x[si * i..(si + 1) * i];
        let amax = xs.iter().fold(0.0f32, |m, v| if v.abs() > m { v.abs() } else { m });
        let sx = amax / 127.0;
        scales[si] = sx;
        for (d, &v) in q[si * i..(si + 1) * i].iter_mut().zip(xs) {
            *d = if sx == 0.0 {
                0
            } else {
                #[allow(clippy::cast_possible_truncation)] // in [-127, 127]
                let c = crate::quantize::quantize_value(v, sx, 127.0) as i8;
                c
            };
        }
    }
    Ok(QuantizedActs { q, scale: scales, s, i })
}

fn check_rows(m: &Matrix<'_>, rows: &Range<usize>) -> Result<(), KernelError> {
    if rows.start > rows.end || rows.end > m.o {
        return Err(KernelError::RowRange { start: rows.start, end: rows.end, o: m.o });
    }
    Ok(())
}

fn check_f32_shapes(
    m: &Matrix<'_>,
    x: &[f32],
    s: usize,
    rows: &Range<usize>,
    y: &[f32],
) -> Result<(), KernelError> {
    check_rows(m, rows)?;
    let ovf = KernelError::Overflow { o: s, i: m.i };
    check_len("x", s.checked_mul(m.i).ok_or(ovf)?, x.len())?;
    check_len("y", s.checked_mul(rows.len()).ok_or(ovf)?, y.len())
}

fn check_q8_shapes(
    m: &Matrix<'_>,
    xq: &QuantizedActs<'_>,
    rows: &Range<usize>,
    y: &[f32],
) -> Result<(), KernelError> {
    if !m.has_q8() {
        return Err(KernelError::Mode { format: m.format });
    }
    if m.i > MAX_I_Q8 {
        return Err(KernelError::TooWide { i: m.i, max: MAX_I_Q8 });
    }
    check_rows(m, rows)?;
    check_len("quantized activation row length", m.i, xq.i)?;
    let ovf = KernelError::Overflow { o: xq.s, i: m.i };
    check_len("y", xq.s.checked_mul(rows.len()).ok_or(ovf)?, y.len())
}

/// Runs one arm without the availability check; `false` if the arm is not built for this target
/// or the CPU lacks its features.
fn run_f32(
    isa: Isa,
    m: &Matrix<'_>,
    x: &[f32],
    s: usize,
    rows: Range<usize>,
    y: &mut [f32],
) -> bool {
    match isa {
        Isa::Scalar => {
            scalar::matmul_f32_rows(m, x, s, rows, y);
            true
        }
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        Isa::Avx2 => x86::matmul_f32_rows::<x86::Avx2<x86::avx2::Plain>>(m, x, s, rows, y),
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        Isa::AvxVnni => x86::matmul_f32_rows::<x86::Avx2<x86::avx2::Vnni>>(m, x, s, rows, y),
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        Isa::Neon => crate::arch::aarch64::neon::matmul_f32_rows(m, x, s, rows, y),
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        Isa::NeonDot => crate::arch::aarch64::dotprod::matmul_f32_rows(m, x, s, rows, y),
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        Isa::NeonI8mm => crate::arch::aarch64::i8mm::matmul_f32_rows(m, x, s, rows, y),
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        Isa::Avx512 => x86::matmul_f32_rows::<x86::Avx512<x86::avx512::Plain>>(m, x, s, rows, y),
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        Isa::Avx512Vnni => x86::matmul_f32_rows::<x86::Avx512<x86::avx512::Vnni>>(m, x, s, rows, y),
        _ => false,
    }
}

fn run_q8(
    isa: Isa,
    m: &Matrix<'_>,
    xq: &QuantizedActs<'_>,
    rows: Range<usize>,
    y: &mut [f32],
) -> bool {
    match isa {
        Isa::Scalar => {
            scalar::matmul_q8_rows(m, xq, rows, y);
            true
        }
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        Isa::Avx2 => x86::matmul_q8_rows::<x86::Avx2<x86::avx2::Plain>>(m, xq, rows, y),
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        Isa::AvxVnni => x86::matmul_q8_rows::<x86::Avx2<x86::avx2::Vnni>>(m, xq, rows, y),
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        Isa::Neon => crate::arch::aarch64::neon::matmul_q8_rows(m, xq, rows, y),
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        Isa::NeonDot => crate::arch::aarch64::dotprod::matmul_q8_rows(m, xq, rows, y),
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        Isa::NeonI8mm => crate::arch::aarch64::i8mm::matmul_q8_rows(m, xq, rows, y),
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        Isa::Avx512 => x86::matmul_q8_rows::<x86::Avx512<x86::avx512::Plain>>(m, xq, rows, y),
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        Isa::Avx512Vnni => x86::matmul_q8_rows::<x86::Avx512<x86::avx512::Vnni>>(m, xq, rows, y),
        _ => false,
    }
}

/// `y = x · Wᵀ` with f32 activations on the best arm: `x` is `S × I`, `y` is `S × O`.
pub fn matmul(m: &Matrix<'_>, x: &[f32], s: usize, y: &mut [f32]) -> Result<(), KernelError> {
    matmul_rows_with(isa::best(), m, x, s, 0..m.o, y)
}

/// As [`matmul`], output rows `rows` only: `y` is `S × rows.len()`,
/// `y[s · rows.len() + (o − rows.start)]`.
pub fn matmul_rows(
    m: &Matrix<'_>,
    x: &[f32],
    s: usize,
    rows: Range<usize>,
    y: &mut [f32],
) -> Result<(), KernelError> {
    matmul_rows_with(isa::best(), m, x, s, rows, y)
}

/// As [`matmul`] on a forced arm; [`KernelError::Unavailable`] if the arm is not available.
pub fn matmul_with(
    isa: Isa,
    m: &Matrix<'_>,
    x: &[f32],
    s: usize,
    y: &mut [f32],
) -> Result<(), KernelError> {
    matmul_rows_with(isa, m, x, s, 0..m.o, y)
}

/// As [`matmul_rows`] on a forced arm; [`KernelError::Unavailable`] if the arm is not available.
pub fn matmul_rows_with(
    isa: Isa,
    m: &Matrix<'_>,
    x: &[f32],
    s: usize,
    rows: Range<usize>,
    y: &mut [f32],
) -> Result<(), KernelError> {
    check_f32_shapes(m, x, s, &rows, y)?;
    if !isa.is_available() || !run_f32(isa, m, x, s, rows, y) {
        return Err(KernelError::Unavailable { isa });
    }
    Ok(())
}

/// `y = xq · Wᵀ` with int8 activations on the best arm (integer formats and mxfp4): `y` is
/// `S × O`. Bit-exact across arms.
pub fn matmul_q8(m: &Matrix<'_>, xq: &QuantizedActs<'_>, y: &mut [f32]) -> Result<(), KernelError> {
    matmul_q8_rows_with(isa::best(), m, xq, 0..m.o, y)
}

/// As [`matmul_q8`], output rows `rows` only (layout as [`matmul_rows`]).
pub fn matmul_q8_rows(
    m: &Matrix<'_>,
    xq: &QuantizedActs<'_>,
    rows: Range<usize>,
    y: &mut [f32],
) -> Result<(), KernelError> {
    matmul_q8_rows_with(isa::best(), m, xq, rows, y)
}

/// As [`matmul_q8`] on a forced arm.
pub fn matmul_q8_with(
    isa: Isa,
    m: &Matrix<'_>,
    xq: &QuantizedActs<'_>,
    y: &mut [f32],
) -> Result<(), KernelError> {
    matmul_q8_rows_with(isa, m, xq, 0..m.o, y)
}

/// As [`matmul_q8_rows`] on a forced arm.
pub fn matmul_q8_rows_with(
    isa: Isa,
    m: &Matrix<'_>,
    xq: &QuantizedActs<'_>,
    rows: Range<usize>,
    y: &mut [f32],
) -> Result<(), KernelError> {
    check_q8_shapes(m, xq, &rows, y)?;
    if !isa.is_available() || !run_q8(isa, m, xq, rows, y) {
        return Err(KernelError::Unavailable { isa });
    }
    Ok(())
}

/// Convenience: validate and multiply in one call (f32 activations, best arm).
#[allow(clippy::too_many_arguments)] // mirrors the registry's tensor description
pub fn matmul_raw(
    format: Format,
    weights: &[u8],
    scales: Scales<'_>,
    o: usize,
    i: usize,
    gs: usize,
    x: &[f32],
    s: usize,
    y: &mut [f32],
) -> Result<(), KernelError> {
    matmul(&Matrix::new(format, weights, scales, o, i, gs)?, x, s, y)
}

/// The f32-path tolerance of `docs/kernels.md`: an arm's result `y` is acceptable when
/// `|y − y*| ≤ f32_tolerance_scaled(I, Σ|x·W|, max_scale)` for the exact result `y*`, where
/// `max_scale` is the largest `|scale|` of the output row's groups (`1.0` for `f32` weights):
///
/// `(I + 4) · (2⁻²⁴ · Σ|x·W| + 2⁻¹⁴⁹ · max(1, max_scale))`.
///
/// The absolute term is scaled because the kernels (the scalar reference included) sum the
/// unscaled products `v · x` of a group and only then multiply by the group scale: a product
/// that is subnormal carries an absolute rounding error of up to 2⁻¹⁵⁰, which the scale
/// multiplies.
pub fn f32_tolerance_scaled(i: usize, sum_abs_terms: f64, max_scale: f64) -> f64 {
    #[allow(clippy::cast_precision_loss)] // a bound, exactness irrelevant
    let n = (i + 4) as f64;
    const U: f64 = 1.0 / 16_777_216.0; // 2^-24
    let tiny = f64::from(f32::from_bits(1)); // 2^-149
    n * (sum_abs_terms * U + tiny * max_scale.abs().max(1.0))
}

/// [`f32_tolerance_scaled`] for rows whose group scales are all at most 1 in magnitude (and
/// for `f32` weights): `(I + 4) · (2⁻²⁴ · Σ|x·W| + 2⁻¹⁴⁹)`. Larger scales need the scaled form.
pub fn f32_tolerance(i: usize, sum_abs_terms: f64) -> f64 {
    f32_tolerance_scaled(i, sum_abs_terms, 1.0)
}

// ---------------------------------------------------------------------------------------------
// First-use selftest of an arm (called once per arm by `Isa::is_available`).

/// Deterministic 64-bit LCG for the selftest data (no allocation, no dependency).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 =
            self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        #[allow(clippy::cast_possible_truncation)] // the high half
        let v = (self.0 >> 32) as u32;
        v
    }
    fn byte(&mut self) -> u8 {
        self.next().to_le_bytes()[3]
    }
    fn unit(&mut self) -> f32 {
        #[allow(clippy::cast_precision_loss)]
        let v = (self.next() >> 8) as f32 / 16_777_216.0;
        2.0 * v - 1.0
    }
}

const ST_O: usize = 5;
const ST_I: usize = 211; // odd, partial groups and blocks for every format
const ST_S: usize = 3;

/// Runs `isa` against the scalar reference on fixed pseudo-random data for every format and both
/// accumulation modes. Integer paths must agree bit for bit; f32 paths within twice the
/// documented tolerance (both results are within it of the exact value).
pub(crate) fn selftest(isa: Isa) -> bool {
    if !isa.is_implemented() || !isa.cpu_supports() {
        return false;
    }
    let mut rng = Lcg(0x7e77_4ad0_5eed_0001);
    let mut wbuf = [0u8; 4 * ST_O * ST_I];
    let mut sbuf = [0f32; ST_O * ST_I];
    let mut ebuf = [0u8; ST_O * 8];
    let mut x = [0f32; ST_S * ST_I];
    for v in &mut x {
        *v = rng.unit();
    }
    let mut qbuf = [0i8; ST_S * ST_I];
    let mut qs = [0f32; ST_S];
    let Ok(xq) = quantize_activations(&x, ST_S, ST_I, &mut qbuf, &mut qs) else { return false };
    let formats = [
        (Format::F32, 0),
        (Format::Int8Row, 0),
        (Format::Int4Row, 0),
        (Format::Int2Row, 0),
        (Format::Int4Grouped, 32),
        (Format::Int4Grouped, 48),
        (Format::Int4Grouped, 7),
        (Format::Int3G64, 0),
        (Format::Mxfp4, 0),
        (Format::Fp8E4m3B128, 0),
    ];
    for (format, gs) in formats {
        for b in &mut wbuf {
            *b = rng.byte();
        }
        if format == Format::Fp8E4m3B128 {
            for b in &mut wbuf {
                if *b & 0x7F == 0x7F {
                    *b &= 0xFE; // no NaN codes in the selftest
                }
            }
        }
        if format == Format::F32 {
            for c in wbuf.chunks_exact_mut(4) {
                c.copy_from_slice(&rng.unit().to_le_bytes());
            }
        }
        for v in &mut sbuf {
            *v = 0.01 + rng.unit().abs();
        }
        for e in &mut ebuf {
            *e = 110 + rng.byte() % 30;
        }
        let Ok((gl, stride)) = layout(format, ST_I, gs.max(1)) else { return false };
        let groups = ST_I.div_ceil(gl);
        let nw = ST_O * stride;
        let scales = match format {
            Format::F32 => Scales::None,
            Format::Mxfp4 => Scales::Ue8m0(&ebuf[..ST_O * groups]),
            Format::Fp8E4m3B128 => Scales::F32(&sbuf[..groups]),
            Format::Int8Row | Format::Int4Row | Format::Int2Row => Scales::F32(&sbuf[..ST_O]),
            _ => Scales::F32(&sbuf[..ST_O * groups]),
        };
        let Ok(m) = Matrix::new(format, &wbuf[..nw], scales, ST_O, ST_I, gs.max(1)) else {
            return false;
        };
        // f32 path
        let mut want = [0f32; ST_S * ST_O];
        let mut got = [0f32; ST_S * ST_O];
        scalar::matmul_f32_rows(&m, &x, ST_S, 0..ST_O, &mut want);
        if !run_f32(isa, &m, &x, ST_S, 0..ST_O, &mut got) {
            return false;
        }
        let mut row = [0f32; ST_I];
        for o in 0..ST_O {
            scalar::dequantize_row(&m, o, &mut row);
            let max_scale = (0..m.groups_per_row())
                .map(|g| f64::from(scalar::group_scale(&m, o, g)).abs())
                .fold(0.0, f64::max);
            for s in 0..ST_S {
                let sum_abs: f64 = row
                    .iter()
                    .zip(&x[s * ST_I..])
                    .map(|(&w, &xv)| (f64::from(w) * f64::from(xv)).abs())
                    .sum();
                let tol = 2.0 * f32_tolerance_scaled(ST_I, sum_abs, max_scale);
                let (a, b) = (want[s * ST_O + o], got[s * ST_O + o]);
                let close = (f64::from(a) - f64::from(b)).abs() <= tol;
                if !close {
                    return false;
                }
            }
        }
        // int8 path
        if m.has_q8() {
            scalar::matmul_q8_rows(&m, &xq, 0..ST_O, &mut want);
            if !run_q8(isa, &m, &xq, 0..ST_O, &mut got) {
                return false;
            }
            if want.iter().zip(&got).any(|(a, b)| a.to_bits() != b.to_bits()) {
                return false;
            }
        }
    }
    true
}
