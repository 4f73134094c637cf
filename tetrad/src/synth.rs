//! Realistic synthetic weights: what the demo, the benchmarks and the tests compress.
//!
//! Trained LLM weight rows are roughly zero-mean and bell-shaped with heavier-than-Gaussian
//! tails; per-row int4 quantization of such rows gives a 15-symbol nibble distribution peaked
//! at code 8 with an order-0 entropy near 2.9 bits. We generate rows from a Gaussian, a Laplace
//! or a Student-t (ν = 5) distribution with a per-row spread drawn log-uniformly over one
//! decade (real matrices have rows of very different norms), seeded so every run is
//! deterministic, and quantize them with the reference quantizers of `tetrad-quant`.

use rand::{Rng, SeedableRng, rngs::StdRng};
use rand_distr::{Distribution, Normal, StudentT};

/// Shape of the weight distribution of each row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dist {
    /// Normal distribution.
    Gaussian,
    /// Laplace (double exponential): sharper peak, heavier tails.
    Laplace,
    /// Student-t with 5 degrees of freedom: heavy tails, like outlier-rich layers.
    StudentT,
}

/// `O × I` f32 weights, row-major, deterministic for a given `seed`.
pub fn weights(o: usize, i: usize, dist: Dist, seed: u64) -> Vec<f32> {
    let mut rng = StdRng::seed_from_u64(seed);
    let unit = Normal::new(0.0f32, 1.0).expect("valid normal");
    let t5 = StudentT::new(5.0f32).expect("valid student-t");
    let mut w = Vec::with_capacity(o * i);
    for _ in 0..o {
        let spread = 0.01f32 * 10f32.powf(rng.random::<f32>());
        for _ in 0..i {
            let z = match dist {
                Dist::Gaussian => unit.sample(&mut rng),
                Dist::Laplace => {
                    let u: f32 = rng.random::<f32>() - 0.5;
                    -u.signum() * (1.0 - 2.0 * u.abs()).max(f32::MIN_POSITIVE).ln()
                }
                Dist::StudentT => t5.sample(&mut rng),
            };
            w.push(z * spread);
        }
    }
    w
}

/// Per-row int4 codes (`O · ceil(I/2)` bytes) and scales (`O` floats) of synthetic weights.
pub fn int4_rows(o: usize, i: usize, dist: Dist, seed: u64) -> (Vec<u8>, Vec<f32>) {
    let w = weights(o, i, dist, seed);
    let mut codes = vec![0u8; o * i.div_ceil(2)];
    let mut scales = vec![0f32; o];
    tetrad_quant::quantize::quantize_int4_row(&w, o, i, &mut codes, &mut scales)
        .expect("synthetic weights are finite and sized by construction");
    (codes, scales)
}

/// Roughly `bytes` of packed int4-row codes with 4096-wide rows (a typical hidden size), mixing
/// Gaussian and Laplace matrices half and half.
pub fn int4_bytes(bytes: usize, seed: u64) -> Vec<u8> {
    const I: usize = 4096;
    let rows = bytes.div_ceil(I / 2).max(1);
    let half = rows.div_ceil(2);
    let (mut a, _) = int4_rows(half, I, Dist::Gaussian, seed);
    let (b, _) = int4_rows(rows - half, I, Dist::Laplace, seed ^ 0x9E37_79B9_7F4A_7C15);
    a.extend_from_slice(&b);
    a.truncate(bytes);
    a
}

/// Counts of each nibble value (low and high nibble of every byte).
pub fn nibble_histogram(bytes: &[u8]) -> [u64; 16] {
    let mut h = [0u64; 16];
    for &b in bytes {
        h[usize::from(b & 0xF)] += 1;
        h[usize::from(b >> 4)] += 1;
    }
    h
}

/// Order-0 Shannon entropy of a histogram, in bits per symbol.
pub fn entropy_bits(h: &[u64]) -> f64 {
    let total: u64 = h.iter().sum();
    if total == 0 {
        return 0.0;
    }
    #[allow(clippy::cast_precision_loss)]
    let t = total as f64;
    h.iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            #[allow(clippy::cast_precision_loss)]
            let p = c as f64 / t;
            -p * p.log2()
        })
        .sum()
}

/// Writes a small MoE-style int4-row checkpoint into `dir`: `shards` files
/// `model-0000k-of-0000n.safetensors`, each holding `experts` routed experts of one layer
/// (gate/up/down `U8 [o, ceil(i/2)]` with `F32 [o]` scales in `X.qs`) and a dense F32 tensor
/// that `pack` must leave alone. Deterministic for a given `seed`.
pub fn write_expert_checkpoint(
    dir: &std::path::Path,
    shards: usize,
    experts: usize,
    o: usize,
    i: usize,
    seed: u64,
) -> std::io::Result<Vec<std::path::PathBuf>> {
    use crate::shard::{HeaderStyle, OutTensor, shard_bytes};
    std::fs::create_dir_all(dir)?;
    let mut paths = Vec::new();
    for layer in 0..shards {
        let mut owned: Vec<(String, &'static str, Vec<u64>, Vec<u8>)> = Vec::new();
        for e in 0..experts {
            for (k, proj) in ["gate", "up", "down"].iter().enumerate() {
                let name = format!("model.layers.{layer}.mlp.experts.{e}.{proj}_proj.weight");
                let dist = [Dist::Gaussian, Dist::Laplace, Dist::StudentT][k];
                let s =
                    seed ^ ((layer * 1000 + e * 10 + k) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                let (codes, scales) = int4_rows(o, i, dist, s);
                let qs: Vec<u8> = scales.iter().flat_map(|f| f.to_le_bytes()).collect();
                owned.push((name.clone(), "U8", vec![o as u64, i.div_ceil(2) as u64], codes));
                owned.push((format!("{name}.qs"), "F32", vec![o as u64], qs));
            }
        }
        let norm: Vec<u8> =
            (0..64u32).flat_map(|k| (1.0f32 + k as f32 / 64.0).to_le_bytes()).collect();
        owned.push((format!("model.layers.{layer}.input_layernorm.weight"), "F32", vec![64], norm));
        let tensors: Vec<OutTensor<'_>> = owned
            .iter()
            .map(|(n, d, s, b)| OutTensor { name: n, dtype: d, shape: s, data: b })
            .collect();
        let meta = [("format".to_owned(), "pt".to_owned())].into();
        let bytes = shard_bytes(&meta, &tensors, HeaderStyle::EscapedUnpadded)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        let p = dir.join(format!("model-{:05}-of-{shards:05}.safetensors", layer + 1));
        crate::output::write_bytes(&p, &bytes)?;
        paths.push(p);
    }
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_realistic() {
        let a = int4_bytes(1 << 16, 7);
        assert_eq!(a, int4_bytes(1 << 16, 7));
        assert_ne!(a, int4_bytes(1 << 16, 8));
        let h = nibble_histogram(&a);
        assert_eq!(h[0], 0, "symmetric quantizers never emit nibble 0");
        let e = entropy_bits(&h);
        assert!((2.0..3.6).contains(&e), "entropy {e} bits is not weight-like");
        assert!(h[8] > h[1] && h[8] > h[15], "peak must be at code 8: {h:?}");
    }
}
