//! Kernel tests: every arm against the scalar reference (bit-exact on the int8-activation path,
//! within the documented tolerance on the f32 path), the scalar reference against an f64 oracle,
//! extreme codes, refusals, row splitting, forced arms, and quantize → dequantize consistency.
//!
//! `TETRAD_REQUIRE_ISA=avx2,…` turns "arm unavailable on this machine" from a printed skip into
//! a failure (CI sets it per runner).
#![allow(clippy::cast_possible_truncation, clippy::cast_precision_loss, clippy::cast_sign_loss)]
#![allow(clippy::cast_possible_wrap)]

use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tetrad_quant::isa::{self, Isa};
use tetrad_quant::kernels::{self, KernelError, Matrix, Scales};
use tetrad_quant::{Format, quantize, scalar};

/// A generated weight tensor (owned buffers for a [`Matrix`]).
struct Tensor {
    format: Format,
    o: usize,
    i: usize,
    gs: usize,
    w: Vec<u8>,
    sf: Vec<f32>,
    se: Vec<u8>,
}

impl Tensor {
    fn matrix(&self) -> Matrix<'_> {
        let scales = match self.format {
            Format::F32 => Scales::None,
            Format::Mxfp4 => Scales::Ue8m0(&self.se),
            _ => Scales::F32(&self.sf),
        };
        Matrix::new(self.format, &self.w, scales, self.o, self.i, self.gs).unwrap()
    }
}

const FORMATS: [(Format, usize); 10] = [
    (Format::F32, 0),
    (Format::Int8Row, 0),
    (Format::Int4Row, 0),
    (Format::Int2Row, 0),
    (Format::Int4Grouped, 16),
    (Format::Int4Grouped, 32),
    (Format::Int4Grouped, 48),
    (Format::Int3G64, 0),
    (Format::Mxfp4, 0),
    (Format::Fp8E4m3B128, 0),
];

/// Bytes of row `o` of format with `I = i`.
fn stride(format: Format, i: usize) -> usize {
    match format {
        Format::F32 => 4 * i,
        Format::Int8Row | Format::Fp8E4m3B128 => i,
        Format::Int4Row | Format::Int4Grouped | Format::Mxfp4 => i.div_ceil(2),
        Format::Int2Row => i.div_ceil(4),
        Format::Int3G64 => i.div_ceil(64) * 24,
        _ => unreachable!(),
    }
}

/// Extreme bytes mixed into every generated weight buffer.
fn extreme_byte(format: Format, rng: &mut StdRng) -> u8 {
    let pick = |v: &[u8], rng: &mut StdRng| v[rng.random_range(0..v.len())];
    match format {
        Format::Int8Row => pick(&[0x80, 0x7F, 0x81, 0x00, 0xFF], rng), // -128, 127, -127, 0, -1
        Format::Int4Row | Format::Int4Grouped | Format::Mxfp4 => {
            pick(&[0x00, 0xFF, 0x0F, 0xF0, 0x88, 0x77], rng)
        }
        Format::Int2Row | Format::Int3G64 => pick(&[0x00, 0xFF, 0x55, 0xAA], rng),
        // zero, max, -zero, -max, subnormals, smallest normal, NaN codes
        Format::Fp8E4m3B128 => {
            pick(&[0x00, 0x7E, 0x80, 0xFE, 0x01, 0x07, 0x81, 0x87, 0x08, 0x7F, 0xFF], rng)
        }
        _ => 0,
    }
}

/// Generates a tensor; `extreme` is the probability of an extreme byte; `nan_ok` allows fp8 NaN
/// codes and non-finite-free extreme scales.
fn gen_tensor(
    format: Format,
    gs: usize,
    o: usize,
    i: usize,
    rng: &mut StdRng,
    extreme: f64,
    nan_ok: bool,
) -> Tensor {
    let nb = o * stride(format, i);
    let mut w: Vec<u8> = (0..nb).map(|_| rng.random()).collect();
    if format == Format::F32 {
        for c in w.chunks_exact_mut(4) {
            let v: f32 = rng.random_range(-2.0..2.0);
            c.copy_from_slice(&v.to_le_bytes());
        }
    } else {
        for b in &mut w {
            if rng.random_bool(extreme) {
                *b = extreme_byte(format, rng);
            }
            if !nan_ok && format == Format::Fp8E4m3B128 && *b & 0x7F == 0x7F {
                *b &= 0xFE;
            }
        }
    }
    let gl = match format {
        Format::Int4Grouped => gs,
        Format::Int3G64 => 64,
        Format::Mxfp4 => 32,
        Format::Fp8E4m3B128 => 128,
        _ => i.max(1),
    };
    let groups = i.div_ceil(gl);
    let ns = match format {
        Format::F32 | Format::Mxfp4 => 0,
        Format::Int8Row | Format::Int4Row | Format::Int2Row => o,
        Format::Fp8E4m3B128 => o.div_ceil(128) * groups,
        _ => o * groups,
    };
    let sf = (0..ns)
        .map(|_| if rng.random_bool(extreme / 4.0) { 0.0 } else { rng.random_range(1e-3f32..2.0) })
        .collect();
    let se = if format == Format::Mxfp4 {
        (0..o * groups)
            .map(|_| {
                if rng.random_bool(extreme) {
                    // 0 (zero scale), 1 (subnormal half scale), 254 only when overflow is allowed
                    [0u8, 1, 2, if nan_ok { 254 } else { 140 }][rng.random_range(0..4)]
                } else {
                    rng.random_range(110..140)
                }
            })
            .collect()
    } else {
        Vec::new()
    };
    Tensor { format, o, i, gs: gs.max(1), w, sf, se }
}

fn gen_x(s: usize, i: usize, rng: &mut StdRng) -> Vec<f32> {
    (0..s * i)
        .map(|_| if rng.random_bool(0.05) { 0.0 } else { rng.random_range(-1.0f32..1.0) })
        .collect()
}

/// Exact result (f64) and Σ|terms| of one output.
fn oracle(m: &Matrix<'_>, x: &[f32], si: usize, o: usize) -> (f64, f64) {
    let (ni, gl) = (m.i(), m.group_len());
    let (mut y, mut abs) = (0.0f64, 0.0f64);
    for i in 0..ni {
        let w = if m.format() == Format::F32 {
            f64::from(scalar::code_value(m, o, i))
        } else {
            f64::from(scalar::code_value(m, o, i)) * f64::from(scalar::group_scale(m, o, i / gl))
        };
        let t = w * f64::from(x[si * ni + i]);
        y += t;
        abs += t.abs();
    }
    (y, abs)
}

/// Every output's oracle for the f32 path, `y` order: `Some((want, tol))` (the exact result and
/// the documented tolerance; `want` NaN: the output must be NaN), or `None` where partial sums
/// may overflow (±inf, or NaN from inf − inf, depending on the order).
fn f32_oracle(m: &Matrix<'_>, x: &[f32], s: usize) -> Vec<Option<(f64, f64)>> {
    let max_scale: Vec<f64> = (0..m.o())
        .map(|o| {
            (0..m.groups_per_row())
                .map(|g| f64::from(scalar::group_scale(m, o, g)).abs())
                .fold(0.0, f64::max)
        })
        .collect();
    let mut out = Vec::with_capacity(s * m.o());
    for si in 0..s {
        for (o, &ms) in max_scale.iter().enumerate() {
            let (want, abs) = oracle(m, x, si, o);
            let tol = kernels::f32_tolerance_scaled(m.i(), abs, ms);
            let skip = !want.is_nan() && 2.0 * abs + tol > f64::from(f32::MAX);
            out.push(if skip { None } else { Some((want, tol)) });
        }
    }
    out
}

/// Checks an f32-path result `y` against [`f32_oracle`]'s `want`.
fn check_f32_with(want: &[Option<(f64, f64)>], m: &Matrix<'_>, y: &[f32], what: &str) {
    for (k, (w, &got)) in want.iter().zip(y).enumerate() {
        let Some((want, tol)) = *w else { continue };
        let (si, o) = (k / m.o(), k % m.o());
        let ctx = || {
            format!(
                "{what}: {:?} O={} I={} s={si} o={o}: got {got}, want {want}",
                m.format(),
                m.o(),
                m.i()
            )
        };
        if want.is_nan() {
            assert!(got.is_nan(), "{}", ctx());
        } else {
            assert!((f64::from(got) - want).abs() <= tol, "{} (tol {tol})", ctx());
        }
    }
}

/// Checks an f32-path result against the oracle with the documented tolerance.
fn check_f32(m: &Matrix<'_>, x: &[f32], s: usize, y: &[f32], what: &str) {
    check_f32_with(&f32_oracle(m, x, s), m, y, what);
}

/// Asserts that `matmul_rows_with` over each range `a..b` of `ranges` (those within `0..O`)
/// gives the same rows of the full product `y` (`S × O`), bit for bit.
fn assert_row_ranges_match(
    arm: Isa,
    m: &Matrix<'_>,
    x: &[f32],
    s: usize,
    y: &[f32],
    ranges: &[(usize, usize)],
    what: &str,
) {
    let (o, bits) = (m.o(), |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>());
    for &(a, b) in ranges {
        if a > b || b > o {
            continue;
        }
        let mut part = vec![0f32; s * (b - a)];
        kernels::matmul_rows_with(arm, m, x, s, a..b, &mut part).unwrap();
        for k in 0..s {
            let (got, full) = (&part[k * (b - a)..(k + 1) * (b - a)], &y[k * o + a..k * o + b]);
            assert_eq!(bits(got), bits(full), "{arm} {what} O={o} I={} S={s} rows {a}..{b}", m.i());
        }
    }
}

/// Runs every check of one arm (and the scalar reference) on one tensor and batch.
fn check_arm(isa: Isa, t: &Tensor, s: usize, rng: &mut StdRng) {
    let arms = if isa == Isa::Scalar { vec![isa] } else { vec![Isa::Scalar, isa] };
    check_arms(&arms, t, s, rng);
}

const SWEEP_I: [usize; 21] =
    [1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 7168];

fn sweep(isa: Isa) {
    let mut rng = StdRng::seed_from_u64(0x5eed_0000 + isa as u64);
    for (format, gs) in FORMATS {
        for i in SWEEP_I {
            for s in [1, 2, 4, 16] {
                let o = if i >= 1024 { 2 } else { 3 };
                let t = gen_tensor(format, gs, o, i, &mut rng, 0.1, true);
                check_arm(isa, &t, s, &mut rng);
            }
        }
        // fp8: more than one 128-row block, partial last block in both directions
        let t = gen_tensor(format, gs, 131, 200, &mut rng, 0.1, true);
        check_arm(isa, &t, 2, &mut rng);
    }
}

/// Whether `TETRAD_REQUIRE_ISA` names `isa`. The variable is shared with tetrad-rans's decode
/// arms (one CI step runs both crates' tests): each crate enforces the names it knows, and
/// [`required_arm_names_are_known`] rejects a name that neither crate knows.
fn required(isa: Isa) -> bool {
    std::env::var("TETRAD_REQUIRE_ISA")
        .map(|v| v.split(',').any(|n| n.trim() == isa.name()))
        .unwrap_or(false)
}

/// Every name in `TETRAD_REQUIRE_ISA` is a kernel arm of this crate or a decode arm of
/// tetrad-rans (`int4-rans256-g0` or `int4-rans64-t1`), so a misspelt name cannot silently
/// require nothing.
#[test]
fn required_arm_names_are_known() {
    let Ok(v) = std::env::var("TETRAD_REQUIRE_ISA") else { return };
    for name in v.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        assert!(
            Isa::from_name(name).is_some()
                || tetrad_rans::Arm::from_name(name).is_some()
                || tetrad_rans::rans64::Arm::from_name(name).is_some(),
            "TETRAD_REQUIRE_ISA names {name:?}, an arm of neither tetrad-quant nor tetrad-rans"
        );
    }
}

macro_rules! isa_test {
    ($name:ident, $isa:expr) => {
        #[test]
        fn $name() {
            let isa: Isa = $isa;
            // Built and supported by the CPU but unavailable means its selftest disabled it.
            assert!(
                !(isa.is_implemented() && isa.cpu_supports()) || isa.is_available(),
                "kernel arm {isa} is supported here but failed its first-use selftest"
            );
            if !isa.is_available() {
                assert!(!required(isa), "TETRAD_REQUIRE_ISA requires arm {isa}, which is not available here");
                eprintln!("SKIPPED: kernel arm {isa} is not available on this machine (not built or no CPU support)");
                return;
            }
            sweep(isa);
        }
    };
}

isa_test!(arm_scalar, Isa::Scalar);
isa_test!(arm_avx2, Isa::Avx2);
isa_test!(arm_avx512, Isa::Avx512);
isa_test!(arm_avx512_vnni, Isa::Avx512Vnni);
isa_test!(arm_avx_vnni, Isa::AvxVnni);
isa_test!(arm_neon, Isa::Neon);
isa_test!(arm_neon_dot, Isa::NeonDot);
isa_test!(arm_neon_i8mm, Isa::NeonI8mm);

/// Small shapes on every available arm, sized for Miri (`.ci/miri-tests`: run with the AVX-512
/// and AVX-VNNI target features, so the AVX2, AVX-VNNI and both AVX-512 arms execute under Miri, which checks every
/// load, masked tail and pointer offset of the kernels). Natively it is a quick smoke test.
#[test]
fn miri_small_shapes_every_arm() {
    let mut rng = StdRng::seed_from_u64(0x313e);
    let mut ran = 0;
    for (format, gs) in FORMATS {
        for i in [3, 64, 129] {
            let t = gen_tensor(format, gs, 2, i, &mut rng, 0.2, true);
            check_arm_all(&t, 2, &mut rng);
            ran += 1;
        }
    }
    assert_eq!(ran, FORMATS.len() * 3);
    for name in ["avx2", "avx-vnni", "avx512", "avx512-vnni"] {
        let arm = Isa::from_name(name).unwrap();
        assert!(!required(arm) || arm.is_available(), "TETRAD_REQUIRE_ISA requires {name}");
    }
}

#[test]
fn best_is_available_and_forcing_unavailable_is_refused() {
    assert!(isa::best().is_available());
    let m = Matrix::new(Format::Int8Row, &[1, 2], Scales::F32(&[1.0]), 1, 2, 0).unwrap();
    for arm in isa::ALL {
        let mut y = [0f32; 1];
        let r = kernels::matmul_with(arm, &m, &[1.0, 1.0], 1, &mut y);
        if arm.is_available() {
            assert_eq!(r, Ok(()));
            assert_eq!(y[0], 3.0);
        } else {
            let e = r.unwrap_err();
            assert_eq!(e, KernelError::Unavailable { isa: arm });
            assert_eq!(e.class(), "E_PATH_UNAVAILABLE");
        }
    }
}

#[test]
fn row_ranges_compose_to_the_full_product() {
    let mut rng = StdRng::seed_from_u64(7);
    for (format, gs) in FORMATS {
        let t = gen_tensor(format, gs, 37, 129, &mut rng, 0.05, false);
        let m = t.matrix();
        let s = 3;
        let x = gen_x(s, m.i(), &mut rng);
        for arm in isa::available() {
            let mut full = vec![0f32; s * m.o()];
            kernels::matmul_with(arm, &m, &x, s, &mut full).unwrap();
            for (a, b) in [(0, 10), (10, 11), (11, 37), (5, 5)] {
                let mut part = vec![0f32; s * (b - a)];
                kernels::matmul_rows_with(arm, &m, &x, s, a..b, &mut part).unwrap();
                for si in 0..s {
                    assert_eq!(
                        part[si * (b - a)..(si + 1) * (b - a)],
                        full[si * m.o() + a..si * m.o() + b]
                    );
                }
            }
        }
    }
}

#[test]
fn hand_computed_values() {
    // int4-row, I = 3 (odd: the high nibble of byte 1 is padding and must be ignored).
    let w = [0x0F, 0xF8]; // nibbles 15, 0, 8, pad 15
    let m = Matrix::new(Format::Int4Row, &w, Scales::F32(&[0.5]), 1, 3, 0).unwrap();
    let mut y = [0f32];
    for arm in isa::available() {
        kernels::matmul_with(arm, &m, &[1.0, 2.0, 100.0], 1, &mut y).unwrap();
        assert_eq!(y[0], (7.0 * 1.0 + -8.0 * 2.0) * 0.5, "{arm}");
    }
    // mxfp4: nibble 0x7 = 6.0, 0xF = -6.0; scale 2^(128-127) = 2.
    let m = Matrix::new(Format::Mxfp4, &[0xF7], Scales::Ue8m0(&[128]), 1, 2, 0).unwrap();
    for arm in isa::available() {
        kernels::matmul_with(arm, &m, &[1.0, 0.5], 1, &mut y).unwrap();
        assert_eq!(y[0], (6.0 - 3.0) * 2.0, "{arm}");
    }
    // fp8: 0x38 = 1.0, 0xFE = -448, 0x01 = 2^-9; block scale 0.25.
    let m = Matrix::new(Format::Fp8E4m3B128, &[0x38, 0xFE, 0x01], Scales::F32(&[0.25]), 1, 3, 0)
        .unwrap();
    for arm in isa::available() {
        kernels::matmul_with(arm, &m, &[1.0, 1.0, 512.0], 1, &mut y).unwrap();
        assert_eq!(y[0], (1.0 - 448.0 + 1.0) * 0.25, "{arm}");
    }
    // int3-g64: every u = 7 (value 3), I = 5.
    let mut w3 = [0u8; 24];
    w3[..16].fill(0xFF);
    w3[16..].fill(0xFF);
    let m = Matrix::new(Format::Int3G64, &w3, Scales::F32(&[2.0]), 1, 5, 0).unwrap();
    for arm in isa::available() {
        kernels::matmul_with(arm, &m, &[1.0; 5], 1, &mut y).unwrap();
        assert_eq!(y[0], 30.0, "{arm}");
    }
}

#[test]
fn refusals_have_their_classes() {
    let e = |r: Result<Matrix<'_>, KernelError>| r.unwrap_err().class();
    assert_eq!(
        e(Matrix::new(Format::E8Iq3Lattice, &[0; 98], Scales::F32(&[1.0]), 1, 256, 0)),
        "E_E8_NO_KERNEL"
    );
    assert_eq!(
        e(Matrix::new(Format::Int4Rans256G0, &[0; 4], Scales::F32(&[1.0]), 1, 8, 0)),
        "E_KERNEL_FORMAT"
    );
    assert_eq!(
        e(Matrix::new(Format::Fp8E4m3B128, &[0; 4], Scales::Ue8m0(&[127]), 1, 4, 0)),
        "E_FP8_UE8M0_SCALES"
    );
    assert_eq!(
        Matrix::new(Format::Mxfp4, &[0; 32], Scales::Ue8m0(&[127, 255]), 1, 64, 0).unwrap_err(),
        KernelError::Ue8m0Nan { index: 1 }
    );
    assert_eq!(
        e(Matrix::new(Format::Mxfp4, &[0; 16], Scales::F32(&[1.0]), 1, 32, 0)),
        "E_KERNEL_SCALE_KIND"
    );
    assert_eq!(
        e(Matrix::new(Format::Int4Row, &[0; 3], Scales::F32(&[1.0]), 1, 8, 0)),
        "E_KERNEL_LENGTH"
    );
    assert_eq!(
        e(Matrix::new(Format::Int4Row, &[0; 4], Scales::F32(&[1.0, 2.0]), 1, 8, 0)),
        "E_KERNEL_LENGTH"
    );
    assert_eq!(
        e(Matrix::new(Format::Int4Grouped, &[0; 4], Scales::F32(&[1.0]), 1, 8, 0)),
        "E_KERNEL_GROUP_SIZE"
    );
    assert_eq!(
        e(Matrix::new(Format::F32, &[], Scales::None, usize::MAX, usize::MAX / 2, 0)),
        "E_KERNEL_OVERFLOW"
    );
    let m = Matrix::new(Format::Int8Row, &[1, 2, 3, 4], Scales::F32(&[1.0, 1.0]), 2, 2, 0).unwrap();
    let mut y = [0f32; 2];
    let c = kernels::matmul_rows(&m, &[1.0, 1.0], 1, 1..3, &mut y[..2]).unwrap_err();
    assert_eq!(c.class(), "E_KERNEL_ROW_RANGE");
    assert_eq!(kernels::matmul(&m, &[1.0], 1, &mut y).unwrap_err().class(), "E_KERNEL_LENGTH");
    assert_eq!(
        kernels::matmul(&m, &[1.0, 1.0], 1, &mut y[..1]).unwrap_err().class(),
        "E_KERNEL_LENGTH"
    );
    let (mut q, mut qs) = ([0i8; 2], [0f32; 1]);
    assert_eq!(
        kernels::quantize_activations(&[f32::NAN, 1.0], 1, 2, &mut q, &mut qs).unwrap_err(),
        KernelError::NonFiniteActivation { index: 0 }
    );
    let xq = kernels::quantize_activations(&[1.0, -1.0], 1, 2, &mut q, &mut qs).unwrap();
    let f = Matrix::new(Format::Fp8E4m3B128, &[0; 4], Scales::F32(&[1.0]), 2, 2, 0).unwrap();
    assert_eq!(kernels::matmul_q8(&f, &xq, &mut y).unwrap_err().class(), "E_KERNEL_MODE");
    let wide = vec![0u8; kernels::MAX_I_Q8 + 1];
    let mw = Matrix::new(Format::Int8Row, &wide, Scales::F32(&[1.0]), 1, wide.len(), 0).unwrap();
    let (mut q2, mut qs2) = (vec![0i8; wide.len()], [0f32; 1]);
    let xw = vec![0.5f32; wide.len()];
    let xq2 = kernels::quantize_activations(&xw, 1, wide.len(), &mut q2, &mut qs2).unwrap();
    assert_eq!(
        kernels::matmul_q8(&mw, &xq2, &mut y[..1]).unwrap_err().class(),
        "E_KERNEL_TOO_WIDE"
    );
}

#[test]
fn activation_quantization_rule() {
    let (mut q, mut s) = ([0i8; 5], [0f32; 1]);
    let xq = kernels::quantize_activations(&[2.54, -2.54, 0.01, 1.27, 0.0], 1, 5, &mut q, &mut s)
        .unwrap();
    let (codes, sx) = xq.row(0);
    assert_eq!(sx, 2.54 / 127.0);
    assert_eq!(codes, [127, -127, 0, 64, 0]); // 1.27 / 0.02 = 63.5 rounds to even 64
    let (mut q, mut s) = ([0i8; 2], [0f32; 1]);
    let xq = kernels::quantize_activations(&[0.0, -0.0], 1, 2, &mut q, &mut s).unwrap();
    assert_eq!(xq.row(0), (&[0i8, 0][..], 0.0));
}

/// quantize → dequantize: every weight comes back within half a step, codes never use the most
/// negative value, and the kernel of the quantized matrix approximates the f32 product.
#[test]
fn quantize_then_dequantize_is_consistent() {
    let mut rng = StdRng::seed_from_u64(11);
    let (o, i) = (4usize, 200usize);
    let w: Vec<f32> = (0..o * i).map(|_| rng.random_range(-3.0f32..3.0)).collect();
    for (format, gs, qmax) in [
        (Format::Int8Row, 0, 127.0),
        (Format::Int4Row, 0, 7.0),
        (Format::Int4Grouped, 32, 7.0),
        (Format::Int2Row, 0, 1.0),
        (Format::Int3G64, 0, 3.0),
    ] {
        let groups = match format {
            Format::Int4Grouped => i.div_ceil(gs),
            Format::Int3G64 => i.div_ceil(64),
            _ => 1,
        };
        let mut codes = vec![0u8; o * stride(format, i)];
        let mut sc = vec![0f32; o * groups];
        match format {
            Format::Int8Row => quantize::quantize_int8_row(&w, o, i, &mut codes, &mut sc),
            Format::Int4Row => quantize::quantize_int4_row(&w, o, i, &mut codes, &mut sc),
            Format::Int4Grouped => {
                quantize::quantize_int4_grouped(&w, o, i, gs, &mut codes, &mut sc)
            }
            Format::Int2Row => quantize::quantize_int2_row(&w, o, i, &mut codes, &mut sc),
            _ => quantize::quantize_int3_g64(&w, o, i, &mut codes, &mut sc),
        }
        .unwrap();
        let m = Matrix::new(format, &codes, Scales::F32(&sc), o, i, gs).unwrap();
        let mut row = vec![0f32; i];
        for r in 0..o {
            scalar::dequantize_row(&m, r, &mut row);
            for (c, (&d, &orig)) in row.iter().zip(&w[r * i..]).enumerate() {
                let s = scalar::group_scale(&m, r, c / m.group_len());
                assert!(
                    (d - orig).abs() <= s * 0.5 * (1.0 + 1e-5),
                    "{format:?} r={r} c={c}: {d} vs {orig}"
                );
                let code = scalar::code_i8(&m, r, c).unwrap();
                assert!(f32::from(code).abs() <= qmax, "{format:?}: code {code} outside ±{qmax}");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Every available arm equals the scalar reference (q8 bit-exact, f32 within tolerance) on
    /// random small shapes, with extreme codes mixed in at a high rate.
    #[test]
    fn arms_match_scalar_on_random_shapes(
        fi in 0usize..FORMATS.len(),
        o in 1usize..6,
        i in 1usize..300,
        s in 1usize..5,
        extreme in prop_oneof![Just(0.0f64), Just(0.3), Just(1.0)],
        seed in any::<u64>(),
    ) {
        let mut rng = StdRng::seed_from_u64(seed);
        let (format, gs) = FORMATS[fi];
        let t = gen_tensor(format, gs, o, i, &mut rng, extreme, true);
        for arm in isa::available() {
            check_arm(arm, &t, s, &mut rng);
        }
    }

    /// Odd group sizes (not a multiple of the SIMD width) for int4-grouped.
    #[test]
    fn odd_group_sizes(gs in 1usize..70, i in 1usize..200, seed in any::<u64>()) {
        let mut rng = StdRng::seed_from_u64(seed);
        let t = gen_tensor(Format::Int4Grouped, gs, 2, i, &mut rng, 0.2, true);
        for arm in isa::available() {
            check_arm(arm, &t, 2, &mut rng);
        }
    }
}

/// The available arms, after asserting that no arm the CPU supports was disabled by its
/// first-use selftest (so a test below cannot pass by silently running fewer arms).
fn checked_arms() -> Vec<Isa> {
    for arm in isa::ALL {
        assert!(
            !(arm.is_implemented() && arm.cpu_supports()) || arm.is_available(),
            "kernel arm {arm} is supported here but failed its first-use selftest"
        );
    }
    isa::available().collect()
}

/// int4-grouped with group lengths that are multiples of 32 — 128 is the common GPTQ/AWQ
/// setting — which the AVX-512 arms run on their 16-rows-per-band kernel, adding a group's
/// 32-column subgroup sums exactly before its epilogue: every arm against the scalar reference
/// (bit-exact on the int8 path), on single rows, full and partial bands of 16 rows, partial
/// last groups and rows longer than the kernel's 16 384-column chunk; 96 (not a divisor of the
/// chunk) and 16 384 (one group per chunk) at the edges of which group lengths it takes.
#[test]
fn int4_grouped_multiples_of_32_every_arm() {
    let mut rng = StdRng::seed_from_u64(0x6464);
    for arm in checked_arms() {
        for gs in [64, 96, 128, 256, 8192, 16384] {
            for i in [
                1, 31, 33, 64, 65, 127, 128, 129, 255, 256, 257, 1000, 7168, 8192, 8193, 16384,
                16500,
            ] {
                for (o, s) in [(1, 1), (17, 2), (33, 1), (5, 16)] {
                    let t = gen_tensor(Format::Int4Grouped, gs, o, i, &mut rng, 0.2, true);
                    check_arm(arm, &t, s, &mut rng);
                }
            }
        }
    }
}

/// fp8 without NaN codes, so that every output is a number (with NaN codes allowed, almost
/// every long row holds one and the sweep checks mostly NaN propagation): every shape of the
/// sweep, both decode paths of the AVX-512 arms (activations de-interleaved and scaled by 2⁸
/// in a stack buffer while `S-tile × I` fits it; the plain path beyond), extreme codes at a
/// high rate (subnormals, ±448, ±0).
#[test]
fn fp8_without_nan_codes_every_arm() {
    let mut rng = StdRng::seed_from_u64(0xf8f8);
    for arm in checked_arms() {
        for i in SWEEP_I.iter().copied().chain([1000, 2047, 2048, 2049, 4096, 8192, 8193]) {
            for s in [1, 2, 3, 4, 16] {
                let o = if i >= 1024 { 2 } else { 3 };
                let t = gen_tensor(Format::Fp8E4m3B128, 0, o, i, &mut rng, 0.3, false);
                check_arm(arm, &t, s, &mut rng);
            }
        }
        let t = gen_tensor(Format::Fp8E4m3B128, 0, 131, 300, &mut rng, 1.0, false);
        check_arm(arm, &t, 1, &mut rng);
    }
}

/// One NaN code (`0x7F` or `0xFF`) anywhere in an fp8 row makes that row's outputs NaN and
/// leaves the other rows alone, on every arm and decode path (full and partial 128-blocks,
/// first and last byte).
#[test]
fn fp8_nan_code_anywhere_makes_its_row_nan() {
    let mut rng = StdRng::seed_from_u64(0x7f7f);
    for i in [1, 2, 31, 32, 33, 127, 128, 129, 300, 1024, 5000] {
        for pos in [0, i / 2, i - 1] {
            for code in [0x7F, 0xFF] {
                let mut t = gen_tensor(Format::Fp8E4m3B128, 0, 3, i, &mut rng, 0.2, false);
                t.w[i + pos] = code; // row 1
                let m = t.matrix();
                for s in [1, 2, 5] {
                    let x = gen_x(s, i, &mut rng);
                    for arm in checked_arms() {
                        let mut y = vec![0f32; s * 3];
                        kernels::matmul_with(arm, &m, &x, s, &mut y).unwrap();
                        for si in 0..s {
                            assert!(y[si * 3 + 1].is_nan(), "{arm} I={i} pos={pos} code={code:#x}");
                            assert!(!y[si * 3].is_nan() && !y[si * 3 + 2].is_nan(), "{arm}");
                        }
                        check_f32(&m, &x, s, &y, arm.name());
                    }
                }
            }
        }
    }
}

/// `Matrix::with_nan_codes_checked`: fp8 weights without a NaN code are marked and every arm
/// gives the same bits with and without the mark (one activation row and batches, full and
/// partial 128-blocks, bands crossing a 128-row scale block); one NaN code anywhere leaves the
/// mark off, so its row stays NaN; other formats are never marked.
#[test]
fn fp8_nan_free_mark_changes_no_bits() {
    let mut rng = StdRng::seed_from_u64(0x0f8c);
    for (o, i) in [(1, 1), (3, 127), (9, 300), (17, 1024), (137, 257)] {
        let t = gen_tensor(Format::Fp8E4m3B128, 0, o, i, &mut rng, 0.3, false); // no NaN code
        let plain = t.matrix();
        assert!(!plain.fp8_nan_free());
        let checked = plain.with_nan_codes_checked();
        assert!(checked.fp8_nan_free(), "O={o} I={i}");
        for s in [1, 2, 3, 16] {
            let x = gen_x(s, i, &mut rng);
            for arm in checked_arms() {
                let (mut y, mut yc) = (vec![0f32; s * o], vec![0f32; s * o]);
                kernels::matmul_with(arm, &plain, &x, s, &mut y).unwrap();
                kernels::matmul_with(arm, &checked, &x, s, &mut yc).unwrap();
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&y), bits(&yc), "{arm} O={o} I={i} S={s}");
                check_f32(&checked, &x, s, &yc, arm.name());
            }
        }
        // One NaN code (first byte, a middle one, the last byte) keeps the mark off.
        for pos in [0, (o / 2) * i + i / 2, o * i - 1] {
            let mut tn = gen_tensor(Format::Fp8E4m3B128, 0, o, i, &mut rng, 0.3, false);
            tn.w[pos] = if pos % 2 == 0 { 0xFF } else { 0x7F };
            let m = tn.matrix().with_nan_codes_checked();
            assert!(!m.fp8_nan_free(), "O={o} I={i} pos={pos}");
            let x = gen_x(1, i, &mut rng);
            for arm in checked_arms() {
                let mut y = vec![0f32; o];
                kernels::matmul_with(arm, &m, &x, 1, &mut y).unwrap();
                assert!(y[pos / i].is_nan(), "{arm} O={o} I={i} pos={pos}");
            }
        }
    }
    for format in [Format::Int8Row, Format::Int4Row] {
        let t = gen_tensor(format, 0, 3, 64, &mut rng, 0.3, false);
        assert!(!t.matrix().with_nan_codes_checked().fp8_nan_free(), "{format:?}");
    }
}

/// int4-row and fp8 with f32 activations at small batches (the 256-bit arms take 8, 4 or 2
/// activation rows per pass over column chunks of `4096 / T`, in row blocks of about 1 MiB of
/// weights): widths around the chunks' edges (512, 1024, 2048 columns) with and without a
/// partial last block (32 columns for int4, 128 for fp8), a partial block alone in the last
/// chunk, batches that split into every pass size, rows over several row blocks, fp8 with a NaN
/// code in one row (a full block or the partial one); every arm within tolerance of the
/// oracle, only that row NaN, and row ranges bit-identical to the same rows of the full
/// product.
#[test]
fn f32_small_batches_every_arm() {
    let mut rng = StdRng::seed_from_u64(0x5b16);
    for format in [Format::Int4Row, Format::Fp8E4m3B128] {
        for (o, i) in [
            (1, 1),
            (3, 31),
            (9, 511),
            (5, 512),
            (7, 513),
            (8, 517),
            (4, 1024),
            (6, 1055),
            (3, 2048),
            (2, 2081),
            (3, 4133),
            (20, 140_001),
        ] {
            let mut t = gen_tensor(format, 0, o, i, &mut rng, 0.3, false);
            let nan_row = (format == Format::Fp8E4m3B128 && i > 1).then(|| {
                let (r, c) = (o / 2, if i % 2 == 0 { i / 3 } else { i - 1 });
                t.w[r * i + c] = 0xFF;
                r
            });
            let m = t.matrix();
            for s in [2, 3, 5, 8, 9, 13, 16] {
                if i > 10_000 && s != 16 && s != 9 {
                    continue;
                }
                let x = gen_x(s, i, &mut rng);
                for arm in checked_arms() {
                    let mut y = vec![0f32; s * o];
                    kernels::matmul_with(arm, &m, &x, s, &mut y).unwrap();
                    check_f32(&m, &x, s, &y, arm.name());
                    if let Some(r) = nan_row {
                        let nans = (0..s * o).filter(|&k| y[k].is_nan());
                        assert!(nans.map(|k| k % o).all(|k| k == r), "{arm} O={o} I={i} S={s}");
                        assert!((0..s).all(|si| y[si * o + r].is_nan()), "{arm} O={o} I={i}");
                    }
                    let what = format!("{format:?}");
                    assert_row_ranges_match(arm, &m, &x, s, &y, &[(o / 3, o - o / 4)], &what);
                }
            }
        }
    }
}

/// The fp8 one-activation-row kernels (bands of 8 rows on the 256-bit arms): a single band, a
/// partial band, full + partial bands, partial last blocks, bands that cross a 128-row scale
/// block, and one NaN code placed in a full block or in the partial block of one row of a band
/// (only that row turns NaN). Every arm within tolerance of the oracle, and every row range's
/// result identical, bit for bit, to the same rows of the full product.
#[test]
fn fp8_band8_edges_every_arm() {
    let mut rng = StdRng::seed_from_u64(0xf8b8);
    for (o, i) in
        [(1, 1), (7, 127), (8, 128), (9, 129), (17, 300), (16, 1024), (3, 1000), (137, 257)]
    {
        for nan in [None, Some((o / 2, i / 3)), Some((o - 1, i - 1)), Some((0, 130.min(i - 1)))] {
            let mut t = gen_tensor(Format::Fp8E4m3B128, 0, o, i, &mut rng, 0.3, false);
            if let Some((r, c)) = nan {
                t.w[r * i + c] = if c % 2 == 0 { 0x7F } else { 0xFF };
            }
            let m = t.matrix();
            let x = gen_x(1, i, &mut rng);
            for arm in checked_arms() {
                let mut y = vec![0f32; o];
                kernels::matmul_with(arm, &m, &x, 1, &mut y).unwrap();
                check_f32(&m, &x, 1, &y, arm.name());
                if let Some((r, _)) = nan {
                    assert!(y[r].is_nan(), "{arm} O={o} I={i} row {r}");
                    assert_eq!(y.iter().filter(|v| v.is_nan()).count(), 1, "{arm} O={o} I={i}");
                }
                let ranges = [(0, o), (1, o), (o / 2, o), (123, 131), (120, 137), (127, 128)];
                assert_row_ranges_match(arm, &m, &x, 1, &y, &ranges, "fp8");
            }
        }
    }
}

/// The AVX2 arm's two fp8 decodes (straight to f32 bits against `x · 2¹²⁰` where every
/// `|x| < 2⁸`, switched off by `isa::set_fp8_bits_decode(false)`; through f16 against `x · 2⁸`)
/// give the same bits: one activation row (bands of 8 rows) and batches (passes of 2, 4, 8;
/// S = 3 ends on the band kernel), NaN codes in one row of some bands, activations with
/// subnormals and the largest f32 below 256 (and, last, 256 itself: the f16 route both times);
/// rows of 16 384 and more columns at one activation row; every arm, within tolerance too. (Other tests may run meanwhile with either decode: both
/// give the same bits.)
#[test]
fn fp8_bits_and_f16_decodes_agree_every_arm() {
    let mut rng = StdRng::seed_from_u64(0xf8de);
    let below_256 = f32::from_bits(0x437F_FFFF);
    // The last two: I at and past the AVX2 band's once-per-call scaled copy (16 384 values;
    // longer rows scale each block per band), one activation row.
    for (o, i) in [(8, 128), (16, 1024), (13, 300), (24, 257), (9, 129), (9, 16_384), (9, 16_513)] {
        let mut t = gen_tensor(Format::Fp8E4m3B128, 0, o, i, &mut rng, 0.3, false);
        // A NaN code in row 3 of every second band, in every 128-column block.
        for r in (3..o).step_by(16) {
            for c in (0..i).step_by(128) {
                t.w[r * i + c] = if c % 256 == 0 { 0xFF } else { 0x7F };
            }
        }
        let m = t.matrix();
        let batches: &[usize] = if i > 4096 { &[1] } else { &[1, 2, 3, 4, 8, 16] };
        for &s in batches {
            for big in [None, Some(below_256), Some(-below_256), Some(256.0)] {
                let mut x = gen_x(s, i, &mut rng);
                for v in x.iter_mut().step_by(5) {
                    *v *= 1e-40; // subnormal (or zero)
                }
                if let Some(b) = big {
                    x[(s - 1) * i + i / 2] = b;
                }
                for arm in checked_arms() {
                    let (mut y, mut yf) = (vec![0f32; s * o], vec![0f32; s * o]);
                    kernels::matmul_with(arm, &m, &x, s, &mut y).unwrap();
                    isa::set_fp8_bits_decode(false);
                    let r = kernels::matmul_with(arm, &m, &x, s, &mut yf);
                    isa::set_fp8_bits_decode(true);
                    r.unwrap();
                    check_f32(&m, &x, s, &y, arm.name());
                    let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&y), bits(&yf), "{arm} O={o} I={i} S={s} big {big:?}");
                }
            }
        }
    }
}

/// The int8-row f32 band kernel (bands of 8 rows on every x86 SIMD arm, each band against
/// every activation row): single rows, partial bands, full + partial bands, partial last
/// 32-column blocks, extreme codes (−128, 127), S = 1, 2, 3, 16. Every arm within tolerance of
/// the oracle, and every row range's result identical, bit for bit, to the same rows of the
/// full product.
#[test]
fn int8_row_f32_bands_every_arm() {
    let mut rng = StdRng::seed_from_u64(0x1b8f);
    for (o, i) in
        [(1, 1), (7, 31), (8, 32), (9, 33), (17, 300), (16, 1024), (3, 1000), (23, 65), (2, 7)]
    {
        let t = gen_tensor(Format::Int8Row, 0, o, i, &mut rng, 0.3, true);
        let m = t.matrix();
        for s in [1, 2, 3, 16] {
            let x = gen_x(s, i, &mut rng);
            for arm in checked_arms() {
                let mut y = vec![0f32; s * o];
                kernels::matmul_with(arm, &m, &x, s, &mut y).unwrap();
                check_f32(&m, &x, s, &y, arm.name());
                let ranges = [(0, o), (1, o), (o / 2, o), (8, 17), (9, 23)];
                assert_row_ranges_match(arm, &m, &x, s, &y, &ranges, "int8-row");
            }
        }
    }
}

/// int4-grouped (gs 32 to 1024) and mxfp4 with f32 activations through the AVX2 arm's grouped
/// kernels: the 8-row bands (one activation row; S = 3 ends on it after the row kernel's pair),
/// the small-batch passes (S = 4, 13 = 8 + 4 + 1, 16; gs dividing 512) and the row kernel
/// (pairs, gs 1024): single rows, partial bands, full + partial bands, partial last blocks
/// and groups, extreme codes and scales (mxfp4 e = 0, 1, 2; zero f32 scales), subnormal
/// activations. Every arm within tolerance of the oracle, and every row range's result
/// identical, bit for bit, to the same rows of the full product.
#[test]
fn grouped_nibble_f32_bands_every_arm() {
    let mut rng = StdRng::seed_from_u64(0x9b8f);
    let shapes = [(1, 1), (7, 31), (8, 32), (9, 33), (17, 300), (16, 1024), (3, 1000), (23, 65)];
    for (format, gs) in [
        (Format::Mxfp4, 32),
        (Format::Int4Grouped, 32),
        (Format::Int4Grouped, 64),
        (Format::Int4Grouped, 128),
        (Format::Int4Grouped, 256),
        (Format::Int4Grouped, 1024),
    ] {
        for (o, i) in shapes {
            let t = gen_tensor(
                format,
                if format == Format::Mxfp4 { 0 } else { gs },
                o,
                i,
                &mut rng,
                0.3,
                false,
            );
            let m = t.matrix();
            for s in [1, 3, 4, 13, 16] {
                let mut x = gen_x(s, i, &mut rng);
                for v in x.iter_mut().step_by(11) {
                    *v *= 1e-39; // subnormal (or zero)
                }
                for arm in checked_arms() {
                    let mut y = vec![0f32; s * o];
                    kernels::matmul_with(arm, &m, &x, s, &mut y).unwrap();
                    check_f32(&m, &x, s, &y, arm.name());
                    let ranges = [(0, o), (1, o), (o / 2, o), (8, 17), (9, 23)];
                    let what = format!("{format:?} gs {gs}");
                    assert_row_ranges_match(arm, &m, &x, s, &y, &ranges, &what);
                }
            }
        }
    }
}

/// int8-row, int4-row and fp8 with f32 activations above the 24 MiB streaming threshold, where
/// the kernels prefetch (int8-row: the next band; int4-row on the AVX-512 arms: the row stream,
/// through both of their f32 nibble paths — `I` past and within the de-interleaving buffer;
/// fp8 on the AVX-512 arms: the de-interleaved path's row stream): a partial last band, partial
/// last blocks, S = 1, 2. Within tolerance on every arm.
#[cfg(target_arch = "x86_64")]
#[test]
fn streaming_sized_matrices_f32_every_arm() {
    let mut rng = StdRng::seed_from_u64(0x5eed_2408);
    // 26.3, 26.3, 25.4 and 25.6 MB > 24 MiB (25.17 MB).
    for (format, o, i, batches) in [
        (Format::Int8Row, 1601, 16_400, &[1, 2][..]),
        (Format::Int4Row, 1601, 32_801, &[1, 2][..]),
        (Format::Int4Row, 6200, 8190, &[1][..]),
        // fp8 on the AVX-512 arms: one activation row de-interleaved (with its prefetch), two
        // not (16 000 columns fill the buffer once).
        (Format::Fp8E4m3B128, 1601, 16_000, &[1, 2][..]),
    ] {
        let t = gen_tensor(format, 0, o, i, &mut rng, 0.01, false);
        let m = t.matrix();
        assert!(m.weights().len() > 24 << 20);
        for &s in batches {
            let x = gen_x(s, i, &mut rng);
            for arm in checked_arms() {
                let mut y = vec![0f32; s * o];
                kernels::matmul_with(arm, &m, &x, s, &mut y).unwrap();
                check_f32(&m, &x, s, &y, arm.name());
            }
        }
    }
}

/// fp8 with activations at or beyond 2¹²⁰ (where `x · 2⁸` could overflow, so the AVX-512 arms
/// must not pre-scale them), non-finite-free, and with subnormal activations: within the
/// documented tolerance on every arm.
#[test]
fn fp8_extreme_activations() {
    let mut rng = StdRng::seed_from_u64(0xa11);
    for (i, s) in [(64, 1), (300, 1), (300, 2), (1024, 4)] {
        let mut t = gen_tensor(Format::Fp8E4m3B128, 0, 5, i, &mut rng, 0.3, false);
        let col = rng.random_range(0..i);
        for o in 0..5 {
            t.w[o * i + col] = [0x38, 0xB8, 0x01][o % 3]; // 1.0, -1.0, 2^-9: no f32 overflow
        }
        let m = t.matrix();
        for big in [f32::from_bits(0x7B80_0000), 3.0e36, -f32::MAX / 2.0, f32::MAX / 1e6] {
            let mut x = gen_x(s, i, &mut rng);
            x[rng.random_range(0..s) * i + col] = big;
            for v in x.iter_mut().step_by(7) {
                *v *= 1e-42; // subnormal (or zero)
            }
            for arm in checked_arms() {
                let mut y = vec![0f32; s * 5];
                kernels::matmul_with(arm, &m, &x, s, &mut y).unwrap();
                check_f32(&m, &x, s, &y, arm.name());
            }
        }
    }
}

/// The AVX-512 arms' mxfp4 int8 kernel in both its forms — `vpermb` lookups (where the CPU has
/// VBMI) and `vpshufb` lookups (forced with `set_vbmi_lookups(false)`) — on full and partial
/// bands, partial blocks, rows over one chunk, 4 KiB rows, extreme codes and scales: every arm
/// bit-exact to the scalar kernel. (Other tests may run meanwhile with either form: both give
/// the same bits.)
#[test]
fn mxfp4_q8_both_lookup_forms_every_arm() {
    let mut rng = StdRng::seed_from_u64(0x0b1);
    for allowed in [false, true] {
        isa::set_vbmi_lookups(allowed);
        for (o, i) in [
            (16, 128),
            (17, 1),
            (33, 33),
            (48, 129),
            (20, 1000),
            (18, 8192),
            (17, 8193),
            (17, 16385),
        ] {
            let t = gen_tensor(Format::Mxfp4, 0, o, i, &mut rng, 0.3, true);
            for s in [1, 2] {
                check_arm_all(&t, s, &mut rng);
            }
        }
    }
    isa::set_vbmi_lookups(true);
}

/// The 32-column group formats on the int8 path (mxfp4, int4-grouped `gs = 32`) with enough
/// rows for the AVX-512 arms' 16-row bands (full bands, a final partial band, a single row),
/// widths across the 128-column blocks and the 16 384-column chunks, extreme codes and scales
/// (UE8M0 0, 1, 2 and 254: zero, subnormal and overflowing products): bit-exact against the
/// scalar reference on every arm, for the whole matrix and for row ranges.
#[test]
fn q8_group32_row_bands_every_arm() {
    let mut rng = StdRng::seed_from_u64(0x1632);
    for (format, gs) in [(Format::Mxfp4, 0), (Format::Int4Grouped, 32)] {
        for (o, i) in [
            (16, 128),
            (17, 1),
            (33, 33),
            (48, 129),
            (15, 256),
            (20, 1000),
            (1, 300),
            (18, 8192),
            (17, 8193),
            (19, 9000),
            (18, 16384),
            (17, 16417),
        ] {
            let t = gen_tensor(format, gs, o, i, &mut rng, 0.3, true);
            for s in [1, 2, 3] {
                check_arm_all(&t, s, &mut rng);
            }
            let m = t.matrix();
            let s = 2;
            let x = gen_x(s, i, &mut rng);
            let (mut q, mut qs) = (vec![0i8; s * i], vec![0f32; s]);
            let xq = kernels::quantize_activations(&x, s, i, &mut q, &mut qs).unwrap();
            for arm in checked_arms() {
                let mut full = vec![0f32; s * o];
                kernels::matmul_q8_with(arm, &m, &xq, &mut full).unwrap();
                for (a, b) in
                    [(0, o), (1, o), (o / 2, o), (0, o.min(16)), (o - 1, o), (3.min(o), 3.min(o))]
                {
                    let mut part = vec![0f32; s * (b - a)];
                    kernels::matmul_q8_rows_with(arm, &m, &xq, a..b, &mut part).unwrap();
                    for si in 0..s {
                        for (k, r) in (a..b).enumerate() {
                            assert_eq!(
                                part[si * (b - a) + k].to_bits(),
                                full[si * o + r].to_bits(),
                                "{arm} {format:?} O={o} I={i} rows {a}..{b} s={si} r={r}"
                            );
                        }
                    }
                }
            }
        }
    }
}

/// [`check_arms`] on every arm (asserting that none was disabled by its selftest).
fn check_arm_all(t: &Tensor, s: usize, rng: &mut StdRng) {
    check_arms(&checked_arms(), t, s, rng);
}

/// The f32 path of every arm in `arms` within tolerance of the oracle, and the int8 path bit
/// for bit equal to the scalar kernel's, on one set of activations: the oracle and the scalar
/// int8 result computed once (under Miri they cost more than the arms' kernels).
fn check_arms(arms: &[Isa], t: &Tensor, s: usize, rng: &mut StdRng) {
    let m = t.matrix();
    let x = gen_x(s, m.i(), rng);
    let want = f32_oracle(&m, &x, s);
    let mut ya = vec![0f32; s * m.o()];
    for &arm in arms {
        kernels::matmul_with(arm, &m, &x, s, &mut ya).unwrap();
        check_f32_with(&want, &m, &ya, arm.name());
    }
    if m.has_q8() {
        let mut q = vec![0i8; s * m.i()];
        let mut qs = vec![0f32; s];
        let xq = kernels::quantize_activations(&x, s, m.i(), &mut q, &mut qs).unwrap();
        let mut ys = vec![0f32; s * m.o()];
        kernels::matmul_q8_with(Isa::Scalar, &m, &xq, &mut ys).unwrap();
        for &arm in arms.iter().filter(|a| **a != Isa::Scalar) {
            kernels::matmul_q8_with(arm, &m, &xq, &mut ya).unwrap();
            for (k, (a, b)) in ys.iter().zip(&ya).enumerate() {
                assert_eq!(
                    a.to_bits(),
                    b.to_bits(),
                    "{arm} q8 {:?} O={} I={} S={s} k={k}: {a} vs {b}",
                    m.format(),
                    m.o(),
                    m.i()
                );
            }
        }
    }
}

/// The AVX-VNNI arm is built on x86-64; on a CPU without AVX-VNNI (Zen 4, for one) forcing
/// it is `E_PATH_UNAVAILABLE` on both paths, never a downgrade; where the CPU (or Miri with the
/// feature on) has it, it is available (its selftest passed).
#[test]
fn avx_vnni_is_built_and_forcing_it_without_cpu_support_is_refused() {
    let isa = Isa::AvxVnni;
    if !cfg!(target_arch = "x86_64") {
        assert!(!isa.is_implemented() && !isa.is_available());
        return;
    }
    assert!(isa.is_implemented());
    if isa.cpu_supports() {
        assert!(isa.is_available(), "avx-vnni is supported here but failed its selftest");
        return;
    }
    assert!(!isa.is_available());
    assert_ne!(isa::best(), isa);
    let m = Matrix::new(Format::Int8Row, &[1, 2], Scales::F32(&[1.0]), 1, 2, 0).unwrap();
    let mut y = [7f32; 1];
    let e = kernels::matmul_with(isa, &m, &[1.0, 1.0], 1, &mut y).unwrap_err();
    assert_eq!(e, KernelError::Unavailable { isa });
    assert_eq!(e.class(), "E_PATH_UNAVAILABLE");
    let (mut q, mut qs) = ([0i8; 2], [0f32; 1]);
    let xq = kernels::quantize_activations(&[1.0, 1.0], 1, 2, &mut q, &mut qs).unwrap();
    let e = kernels::matmul_q8_with(isa, &m, &xq, &mut y).unwrap_err();
    assert_eq!(e, KernelError::Unavailable { isa });
    assert_eq!(y[0], 7.0, "a refused call writes nothing");
}

/// The int8-activation path of every available SIMD arm against the scalar kernel, bit for bit,
/// for `s` random activation rows; `what` names the case in a failure.
fn assert_q8_arms_match_scalar(m: &Matrix<'_>, s: usize, rng: &mut StdRng, what: &str) {
    let (i, o) = (m.i(), m.o());
    let x = gen_x(s, i, rng);
    let (mut q, mut qs) = (vec![0i8; s * i], vec![0f32; s]);
    let xq = kernels::quantize_activations(&x, s, i, &mut q, &mut qs).unwrap();
    let mut ys = vec![0f32; s * o];
    kernels::matmul_q8_with(Isa::Scalar, m, &xq, &mut ys).unwrap();
    for arm in isa::available().filter(|a| *a != Isa::Scalar) {
        let mut ya = vec![0f32; s * o];
        kernels::matmul_q8_with(arm, m, &xq, &mut ya).unwrap();
        let same = ys.iter().zip(&ya).all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same, "{arm} q8 {what} S={s} differs from scalar");
    }
}

/// Matrices above the 24 MiB streaming threshold run every arm's prefetching int8-row and
/// int4-row q8 loops (every batch tile: S = 1, 2, 3, 4; on the AVX-512 arms S = 1 takes the
/// AVX2 band kernels, the last row of S = 3 their own), long rows and short: still bit-exact
/// to the scalar kernel.
#[cfg(target_arch = "x86_64")]
#[test]
fn streaming_sized_matrices_q8_every_arm() {
    let mut rng = StdRng::seed_from_u64(0x5eed_2400);
    // 1601 rows of 16 384 bytes: 26.2 MB > 24 MiB.
    for (format, i) in [(Format::Int8Row, 16_384), (Format::Int4Row, 32_768)] {
        let t = gen_tensor(format, 0, 1601, i, &mut rng, 0.01, false);
        let m = t.matrix();
        assert!(m.weights().len() > 24 << 20);
        for s in [1, 2, 3, 4] {
            assert_q8_arms_match_scalar(&m, s, &mut rng, &format!("{format:?} I={i}"));
        }
    }
    // Short rows (500 bytes, a partial last block): the band kernels prefetch several bands
    // ahead (at least 16 KiB), past the matrix's end at the last bands.
    let (o, i) = (52_000, 999);
    let t = gen_tensor(Format::Int4Row, 0, o, i, &mut rng, 0.01, false);
    let m = t.matrix();
    assert!(m.weights().len() > 24 << 20);
    for s in [1, 3] {
        assert_q8_arms_match_scalar(&m, s, &mut rng, &format!("Int4Row I={i}"));
    }
}

/// The band kernels (AVX-512 16 rows, AVX2 8 rows per band: mxfp4, int4-grouped `gs` 32 and
/// 128) above the 24 MiB streaming threshold, where they prefetch the next band's rows and
/// scales: rows over several 16 384-column chunks (the prefetch crosses from a chunk's last band
/// to the next chunk's first) and a partial last band; S = 1, 2. Bit-exact to the scalar kernel.
#[cfg(target_arch = "x86_64")]
#[test]
fn streaming_sized_band_kernels_q8_every_arm() {
    let mut rng = StdRng::seed_from_u64(0x5eed_2401);
    // 1609 rows (100 bands of 16 plus 9; 201 of 8 plus 1) of 16 400 bytes: 26.4 MB > 24 MiB.
    let (o, i) = (1609, 32_800);
    for (format, gs) in [(Format::Mxfp4, 0), (Format::Int4Grouped, 32), (Format::Int4Grouped, 128)]
    {
        let t = gen_tensor(format, gs, o, i, &mut rng, 0.01, false);
        let m = t.matrix();
        assert!(m.weights().len() > 24 << 20);
        for s in [1, 2] {
            assert_q8_arms_match_scalar(&m, s, &mut rng, &format!("{format:?} gs {gs}"));
        }
    }
}

/// Rows a multiple of 4 KiB long (I = 8191, 8192, 16384, 32768), which the AVX-512 band kernel
/// copies 8 blocks at a time before reading: full and partial last blocks (I = 8191), partial
/// bands, rows over one 16 384-column chunk (32768: two); mxfp4 and int4-grouped `gs` 32, 64,
/// 128, 256; S = 1, 2. Every arm bit-exact to the scalar kernel.
#[test]
fn restrided_rows_band_kernels_q8_every_arm() {
    let mut rng = StdRng::seed_from_u64(0x4096);
    for (format, gs) in [
        (Format::Mxfp4, 0),
        (Format::Int4Grouped, 32),
        (Format::Int4Grouped, 64),
        (Format::Int4Grouped, 128),
        (Format::Int4Grouped, 256),
    ] {
        for (o, i) in [(17, 8191), (33, 8192), (16, 16384), (3, 8192), (5, 32_768)] {
            let t = gen_tensor(format, gs, o, i, &mut rng, 0.01, false);
            let m = t.matrix();
            assert_eq!(m.row_bytes(0).len() % 4096, 0);
            for s in [1, 2] {
                assert_q8_arms_match_scalar(
                    &m,
                    s,
                    &mut rng,
                    &format!("{format:?} gs {gs} {o} × {i}"),
                );
            }
        }
    }
}

/// The AVX2 arms' 8-rows-per-band int8 kernels (mxfp4, int4-grouped with `gs` 32, 64, 128,
/// 256; int4-row for one activation row — S = 1 and the last row of an odd S — and int8-row)
/// at their edges, every arm bit-exact against the scalar reference: bands of 1 to 7 rows, one
/// full band, a full band plus a partial one; S = 1, 2, 4, 16; widths around the 64-column
/// block (partial last block and last group) and over the 16 384-column chunk.
#[test]
fn q8_band8_edges_every_arm() {
    let mut rng = StdRng::seed_from_u64(0x0b8d);
    for (format, gs) in [
        (Format::Int4Row, 0),
        (Format::Int8Row, 0),
        (Format::Mxfp4, 0),
        (Format::Int4Grouped, 32),
        (Format::Int4Grouped, 64),
        (Format::Int4Grouped, 128),
        (Format::Int4Grouped, 256),
    ] {
        for (o, i, s) in [
            (1, 1, 1),
            (3, 31, 2),
            (7, 63, 4),
            (8, 64, 16),
            (9, 65, 1),
            (5, 96, 2),
            (15, 127, 1),
            (16, 129, 4),
            (2, 191, 16),
            (6, 320, 2),
            (11, 1000, 1),
            (4, 8191, 2),
            (9, 8192, 1),
            (10, 8193, 2),
            (4, 16_383, 2),
            (3, 16_448, 1),
        ] {
            let t = gen_tensor(format, gs, o, i, &mut rng, 0.3, true);
            check_arm_all(&t, s, &mut rng);
        }
    }
}

/// Extreme codes and scales on the band kernels, every arm bit-exact against the scalar
/// reference: every weight at its largest magnitude (mxfp4 ±12, int4 −8 and 7, int8 −128, 127
/// and −127) against
/// activations that quantize to ±127, so every group sum is at its bound; mxfp4 with every
/// UE8M0 byte 0, 1, 2 and 254 (zero, subnormal, smallest normal half scales, and products that
/// overflow to ±inf), int4 with zero and huge scales.
#[test]
fn q8_band_extreme_codes_and_scales_every_arm() {
    let mut rng = StdRng::seed_from_u64(0xe8e8);
    for (format, gs, bytes) in [
        (Format::Int4Row, 0, [0x00u8, 0xFF, 0x0F, 0xF0]),
        (Format::Int8Row, 0, [0x80, 0x7F, 0x81, 0x01]),
        (Format::Mxfp4, 0, [0x77u8, 0xFF, 0x7F, 0xF7]),
        (Format::Int4Grouped, 32, [0x00, 0xFF, 0x0F, 0xF0]),
        (Format::Int4Grouped, 128, [0x00, 0xFF, 0x0F, 0xF0]),
    ] {
        for (o, i) in [(9, 200), (8, 8200)] {
            let mut t = gen_tensor(format, gs, o, i, &mut rng, 0.0, true);
            for (k, b) in t.w.iter_mut().enumerate() {
                *b = bytes[(k / 7) % 4];
            }
            for scale in [0u8, 1, 2, 254] {
                t.se.iter_mut().for_each(|e| *e = scale);
                let big = [0.0f32, 1e-30, 1.0, 3.0e38][usize::from(scale % 4)];
                t.sf.iter_mut()
                    .enumerate()
                    .for_each(|(k, v)| *v = if k % 3 == 0 { big } else { 1.5 });
                for s in [1, 3] {
                    // ±1 with a few zeros: the quantized codes are ±127 and 0.
                    let x: Vec<f32> = (0..s * i)
                        .map(|k| match k % 11 {
                            0 => 0.0,
                            1 | 4 | 5 => -1.0,
                            _ => 1.0,
                        })
                        .collect();
                    let m = t.matrix();
                    let (mut q, mut qs) = (vec![0i8; s * i], vec![0f32; s]);
                    let xq = kernels::quantize_activations(&x, s, i, &mut q, &mut qs).unwrap();
                    assert!(
                        (0..s).all(|si| xq.row(si).0.iter().all(|&v| v == 0 || v.abs() == 127))
                    );
                    let mut ys = vec![0f32; s * o];
                    kernels::matmul_q8_with(Isa::Scalar, &m, &xq, &mut ys).unwrap();
                    for arm in checked_arms() {
                        let mut ya = vec![0f32; s * o];
                        kernels::matmul_q8_with(arm, &m, &xq, &mut ya).unwrap();
                        for (k, (a, b)) in ys.iter().zip(&ya).enumerate() {
                            assert_eq!(
                                a.to_bits(),
                                b.to_bits(),
                                "{arm} {format:?} gs {gs} O={o} I={i} S={s} scale {scale} k={k}: {a} vs {b}"
                            );
                        }
                    }
                }
            }
        }
    }
}

/// Row ranges on the band kernels with groups wider than 32 columns (int4-grouped gs 64, 128):
/// ranges starting and ending inside 8-row bands give the rows of the full product, every arm.
#[test]
fn q8_wide_group_row_ranges_every_arm() {
    let mut rng = StdRng::seed_from_u64(0x64_128);
    for gs in [64, 128] {
        let (o, i, s) = (21, 8300, 2);
        let t = gen_tensor(Format::Int4Grouped, gs, o, i, &mut rng, 0.2, true);
        let m = t.matrix();
        let x = gen_x(s, i, &mut rng);
        let (mut q, mut qs) = (vec![0i8; s * i], vec![0f32; s]);
        let xq = kernels::quantize_activations(&x, s, i, &mut q, &mut qs).unwrap();
        for arm in checked_arms() {
            let mut full = vec![0f32; s * o];
            kernels::matmul_q8_with(arm, &m, &xq, &mut full).unwrap();
            for (a, b) in [(0, 21), (3, 11), (7, 9), (8, 16), (13, 21), (20, 21), (5, 5)] {
                let mut part = vec![0f32; s * (b - a)];
                kernels::matmul_q8_rows_with(arm, &m, &xq, a..b, &mut part).unwrap();
                for si in 0..s {
                    for (k, r) in (a..b).enumerate() {
                        assert_eq!(
                            part[si * (b - a) + k].to_bits(),
                            full[si * o + r].to_bits(),
                            "{arm} gs {gs} rows {a}..{b} s={si} r={r}"
                        );
                    }
                }
            }
        }
    }
}

/// The band kernels' memory accesses under Miri (`.ci/miri-tests` runs the `miri_` tests, each
/// on its own line so that they run concurrently; this one, [`miri_grouped_bands_every_arm`]
/// and [`miri_f32_batches_every_arm`] split the band kernels): a full band of 8 rows plus a
/// partial one (and 16 + 1 for the AVX-512 arms), partial last blocks and groups, the scale
/// transposes' padded tails (fewer than 4 or 16 groups left), here int4-row, int8-row, fp8 and
/// mxfp4 with one activation row — the AVX2 int4-row, int8-row, fp8 and mxfp4 bands and the
/// AVX-512 int4-row and int8-row q8 bands (a full 128- or 64-column block, then a partial one)
/// with their zero-padded tail blocks among them — every arm bit-exact against the scalar
/// reference (f32 paths: within the f32 tolerance).
#[test]
fn miri_band_kernels_every_arm() {
    let mut rng = StdRng::seed_from_u64(0xb8b8);
    for (format, gs, o, i) in [
        (Format::Int4Row, 0, 9, 193),
        (Format::Int8Row, 0, 9, 97),
        (Format::Fp8E4m3B128, 0, 9, 129),
        (Format::Mxfp4, 0, 17, 97),
        (Format::Mxfp4, 0, 17, 600),
    ] {
        miri_band_case(format, gs, o, i, &mut rng);
    }
}

/// [`miri_band_kernels_every_arm`] for int4-grouped gs 32, 64 and 128.
#[test]
fn miri_grouped_bands_every_arm() {
    let mut rng = StdRng::seed_from_u64(0xb8b9);
    for (gs, i) in [(32, 161), (64, 200), (128, 300)] {
        miri_band_case(Format::Int4Grouped, gs, 17, i, &mut rng);
    }
}

/// One tensor of the Miri band tests, one activation row.
fn miri_band_case(format: Format, gs: usize, o: usize, i: usize, rng: &mut StdRng) {
    // No UE8M0 254 (nan_ok = false): Miri gives a NaN from inf − inf a random sign and payload
    // per operation, so two NaN outputs need not be bit-equal there (NaN outputs are checked
    // natively by q8_band_extreme_codes_and_scales_every_arm).
    let t = gen_tensor(format, gs, o, i, rng, 0.2, false);
    check_arm_all(&t, 1, rng);
}

/// The AVX2 f32 small-batch passes (8, 4, 1 activation rows at a batch of 13) of int4-row, fp8,
/// int4-grouped and mxfp4, and the int8-row f32 band at a batch, with a partial block (and
/// group), under Miri (see [`miri_band_kernels_every_arm`]).
#[test]
fn miri_f32_batches_every_arm() {
    let mut rng = StdRng::seed_from_u64(0xb8ba);
    for (format, gs, i) in [
        (Format::Int4Row, 0, 65),
        (Format::Fp8E4m3B128, 0, 129),
        (Format::Int8Row, 0, 33),
        (Format::Mxfp4, 0, 97),
        (Format::Int4Grouped, 64, 100),
    ] {
        let t = gen_tensor(format, gs, 3, i, &mut rng, 0.2, false);
        check_arm_all(&t, 13, &mut rng);
    }
}

/// `I = 0` (no columns): every output is `0` on every arm and batch, f32 and int8 paths.
#[test]
fn zero_columns_give_zero_outputs_every_arm() {
    for format in [Format::Int4Row, Format::Fp8E4m3B128, Format::Int8Row, Format::Mxfp4] {
        let (sf, se) = (vec![1.0f32; 3], vec![127u8; 3]);
        let scales = if format == Format::Mxfp4 { Scales::Ue8m0(&se) } else { Scales::F32(&sf) };
        let Ok(m) = Matrix::new(format, &[], scales, 3, 0, 0) else {
            continue; // I = 0 refused by the format's shape rules: nothing to compute
        };
        for s in [1, 2, 4, 8, 16] {
            for arm in checked_arms() {
                let mut y = vec![f32::NAN; 3 * s];
                kernels::matmul_with(arm, &m, &[], s, &mut y).unwrap();
                assert!(y.iter().all(|v| *v == 0.0), "{arm} {format:?} S={s}: {y:?}");
            }
        }
    }
}

/// The AVX-512 arms' f32 paths on activations de-interleaved into a 16 Ki-value stack buffer
/// (nibble formats and fp8): row lengths at and across the buffer's limits for 1, 2 and 4
/// activation rows per tile (I = 4096, 4097, 8192, 8193, 14 336, 16 384, 16 385) and batches
/// that split into tiles of 4, 2 and 1: within the documented tolerance on every arm.
#[test]
fn deinterleave_buffer_limits_f32_every_arm() {
    let mut rng = StdRng::seed_from_u64(0x0de1_ea7e);
    for (format, gs) in [
        (Format::Int4Row, 0),
        (Format::Mxfp4, 0),
        (Format::Int4Grouped, 32),
        (Format::Int4Grouped, 128),
        (Format::Fp8E4m3B128, 0),
    ] {
        for i in [4096, 4097, 8192, 8193, 14_336, 16_384, 16_385] {
            let o = 5;
            let t = gen_tensor(format, gs, o, i, &mut rng, 0.01, false);
            let m = t.matrix();
            for s in [1, 2, 3, 4, 7] {
                let x = gen_x(s, i, &mut rng);
                for arm in checked_arms() {
                    let mut y = vec![f32::NAN; s * o];
                    kernels::matmul_with(arm, &m, &x, s, &mut y).unwrap();
                    check_f32(
                        &m,
                        &x,
                        s,
                        &y,
                        &format!("{} {format:?} gs {gs} I={i} S={s}", arm.name()),
                    );
                }
            }
        }
    }
}
