//! What the int4-rans64-t1 test binaries share: the arms to compare and Gaussian int4 data.

use rand::{SeedableRng, rngs::StdRng};
use rand_distr::{Distribution, Normal};
use tetrad_rans::rans64::Arm;

/// The arms to compare: every available one. `TETRAD_REQUIRE_ISA` (comma-separated arm
/// names) turns an unavailable listed arm into a failure instead of a skip.
pub(crate) fn arms() -> Vec<Arm> {
    let required = std::env::var("TETRAD_REQUIRE_ISA").unwrap_or_default();
    let mut v = Vec::new();
    for &arm in Arm::ALL {
        if arm.is_available() {
            v.push(arm);
        } else {
            let name = arm.name();
            assert!(
                !required.split(',').any(|r| r.trim() == name),
                "TETRAD_REQUIRE_ISA requires {name}, which is not available here"
            );
            eprintln!("rans64: arm {name} not available here, skipped");
        }
    }
    v
}

/// Per-row int4 of Gaussian weights (absmax scaling, round half away), packed low first.
pub(crate) fn gaussian_int4(n: usize, row: usize, seed: u64) -> Vec<u8> {
    let mut rng = StdRng::seed_from_u64(seed);
    let normal = Normal::new(0.0f32, 1.0).unwrap();
    let mut out = vec![0u8; n];
    for r in out.chunks_mut(row.max(1)) {
        let vals: Vec<f32> = (0..2 * r.len()).map(|_| normal.sample(&mut rng)).collect();
        let amax = vals.iter().fold(1e-9f32, |a, v| a.max(v.abs()));
        let q = |v: f32| ((v / amax * 7.0).round() as i32 + 8).clamp(0, 15) as u8;
        for (i, b) in r.iter_mut().enumerate() {
            *b = q(vals[2 * i]) | (q(vals[2 * i + 1]) << 4);
        }
    }
    out
}
