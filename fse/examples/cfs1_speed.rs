//! Quick decode/encode timer for development (thread on-CPU time, best of 8) (the numbers of record come from the criterion
//! bench `cargo bench -p tetrad-benches --bench cfs1`). `cargo run --release --example
//! cfs1_speed -p tetrad-fse [MiB]`.
#![allow(missing_docs, clippy::cast_possible_truncation)]

use rand::{Rng, SeedableRng, rngs::StdRng};
use rand_distr::{Distribution, Normal};

/// On-CPU time of this thread in seconds (Linux `schedstat`), so that time spent waiting in
/// the run queue of a shared machine does not count.
fn cpu_s() -> f64 {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
    s.split_whitespace().next().unwrap().parse::<u64>().unwrap() as f64 / 1e9
}

struct Instant(f64);
impl Instant {
    fn now() -> Self {
        Self(cpu_s())
    }
    fn elapsed(&self) -> std::time::Duration {
        std::time::Duration::from_secs_f64(cpu_s() - self.0)
    }
}

fn main() {
    let mib: usize = std::env::args().nth(1).map_or(1, |s| s.parse().unwrap());
    let n = mib << 20;
    let n = n.max(1);
    let mut rng = StdRng::seed_from_u64(7);
    let unit = Normal::new(0.0f32, 1.0).unwrap();
    let mut src = vec![0u8; n];
    let mut scale = 1.0f32;
    for (i, b) in src.iter_mut().enumerate() {
        if i % 2048 == 0 {
            scale = 1.2 + 1.3 * rng.random::<f32>();
        }
        let mut q = || ((unit.sample(&mut rng) * scale).round().clamp(-7.0, 7.0) + 8.0) as u8;
        *b = q() | q() << 4;
    }
    let mut blob = vec![0u8; tetrad_fse::max_encoded_len(n)];
    let mut out = vec![0u8; n];
    let mut best_e = f64::MAX;
    let mut best_d = f64::MAX;
    let mut best_c = f64::MAX;
    let mut len = 0;
    // Interleave short rounds of encode, decode and a calibration chain and keep each one's
    // minimum, so that a quiet moment on a shared machine counts for all three.
    for _ in 0..8 {
        let t = Instant::now();
        len = tetrad_fse::encode_into(&src, &mut blob).unwrap();
        best_e = best_e.min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        tetrad_fse::decode_into(&blob[..len], &mut out).unwrap();
        best_d = best_d.min(t.elapsed().as_secs_f64());
        // A chain of dependent xor + 64-bit multiply (1 + 3 cycles on Zen 3/4) gives the
        // clock this process actually gets.
        let t = Instant::now();
        let mut x = std::hint::black_box(3u64);
        for _ in 0..50_000_000u32 {
            x = x.wrapping_mul(x ^ 0x9E37_79B9_7F4A_7C15);
        }
        std::hint::black_box(x);
        best_c = best_c.min(t.elapsed().as_secs_f64());
    }
    assert_eq!(out, src);
    let ghz = 4.0 * 5e7 / best_c / 1e9;
    println!(
        "effective clock {ghz:.2} GHz; decode {:.1} cycles/pair, encode {:.1} cycles/pair",
        best_d * ghz * 1e9 / n as f64,
        best_e * ghz * 1e9 / n as f64
    );
    let nib = 2.0 * n as f64 / 1e9;
    println!(
        "{mib} MiB ratio {:.4}  encode {:.3} G nib/s  decode {:.3} G nib/s",
        n as f64 / len as f64,
        nib / best_e,
        nib / best_d
    );
}
