//! In-process kernel comparisons that criterion's one-bench-after-another runs cannot make on
//! a machine whose core speed changes in phases (a shared virtual machine, where the same binary
//! can run int4-row q8 at rates 1.7 × apart from one minute to the next).
//!
//! - `pair`: mxfp4 vs int4-row q8 (512 × 1024, S = 1, L2-resident), 20 calls of each
//!   alternately, 300 times, per arm: the median and quartiles of the per-round ratio.
//! - `align`: int4-row and int8-row q8 (512 × 1024) with the activation codes at 0, 16, 32 and
//!   48 bytes past a 64-byte boundary: best of 3000 calls each.
//! - `groups`: int4-row beside int4-grouped with gs 32, 64, 128, 256 and mxfp4 (512 × 1024,
//!   S = 1), q8 and f32, per arm: best of 2000 calls each.
//!
//! `cargo run --release -p tetrad-benches --example kernels_paired -- pair|align|groups|groups-long|groups-at O I`
#![allow(missing_docs, clippy::cast_possible_truncation, clippy::cast_precision_loss)]

use std::hint::black_box;
use std::time::Instant;

use tetrad_quant::format::Format;
use tetrad_quant::isa::{self, Isa};
use tetrad_quant::kernels::{self, Matrix, QuantizedActs, Scales};

const O: usize = 512;
const I: usize = 1024;

fn lcg(seed: u64) -> impl FnMut() -> u8 {
    let mut s = seed;
    move || {
        s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (s >> 56) as u8
    }
}

fn acts() -> Vec<f32> {
    (0..I).map(|k| ((k * 7919) % 1000) as f32 / 500.0 - 1.0).collect()
}

/// Quantizes the activations into `store` at `off` bytes past a 64-byte boundary.
fn quantized<'a>(
    x: &[f32],
    store: &'a mut [i8],
    off: usize,
    qs: &'a mut [f32; 1],
) -> QuantizedActs<'a> {
    let skip = (64 - store.as_ptr() as usize % 64) % 64 + off;
    kernels::quantize_activations(x, 1, I, &mut store[skip..skip + I], qs).expect("shape")
}

fn pair() {
    let mut rnd = lcg(0x1234_5678);
    let w4: Vec<u8> = (0..O * I / 2).map(|_| rnd()).collect();
    let wm: Vec<u8> = (0..O * I / 2).map(|_| rnd()).collect();
    let sc = vec![0.01f32; O];
    let se: Vec<u8> = (0..O * I / 32).map(|k| 120 + (k % 10) as u8).collect();
    let m4 = Matrix::new(Format::Int4Row, &w4, Scales::F32(&sc), O, I, 0).expect("shape");
    let mm = Matrix::new(Format::Mxfp4, &wm, Scales::Ue8m0(&se), O, I, 32).expect("shape");
    let x = acts();
    let (mut store, mut qs) = (vec![0i8; I + 128], [0f32; 1]);
    let xq = quantized(&x, &mut store, 0, &mut qs);
    let mut y = vec![0f32; O];
    for arm in isa::available().filter(|a| *a != Isa::Scalar) {
        let (mut ratio, mut r4, mut rm) = (vec![], vec![], vec![]);
        for _ in 0..300 {
            let mut time = |m: &Matrix<'_>| {
                let t = Instant::now();
                for _ in 0..20 {
                    kernels::matmul_q8_with(arm, m, black_box(&xq), &mut y).expect("arm");
                }
                t.elapsed().as_secs_f64()
            };
            let (t4, tm) = (time(&m4), time(&mm));
            ratio.push(t4 / tm);
            r4.push((20 * O * I) as f64 / t4 / 1e9);
            rm.push((20 * O * I) as f64 / tm / 1e9);
        }
        let q = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            format!("{:.3} [{:.3}, {:.3}]", v[v.len() / 2], v[v.len() / 4], v[3 * v.len() / 4])
        };
        println!(
            "{arm}: mxfp4 / int4-row {}; int4-row {} G w/s; mxfp4 {} G w/s",
            q(&mut ratio),
            q(&mut r4),
            q(&mut rm)
        );
    }
}

fn align() {
    let mut rnd = lcg(0x1234_5678);
    let x = acts();
    for (format, stride) in [(Format::Int4Row, I / 2), (Format::Int8Row, I)] {
        // int8 code 0x80 (-128) is fine for the kernels; keep the data like the benches'.
        let w: Vec<u8> = (0..O * stride).map(|_| rnd()).collect();
        let sc = vec![0.01f32; O];
        let m = Matrix::new(format, &w, Scales::F32(&sc), O, I, 0).expect("shape");
        for off in [0, 16, 32, 48] {
            let (mut store, mut qs) = (vec![0i8; I + 128], [0f32; 1]);
            let xq = quantized(&x, &mut store, off, &mut qs);
            let mut y = vec![0f32; O];
            let arm = isa::best();
            let mut best = f64::MAX;
            for _ in 0..3000 {
                let t = Instant::now();
                kernels::matmul_q8_with(arm, &m, black_box(&xq), &mut y).expect("arm");
                best = best.min(t.elapsed().as_secs_f64());
            }
            println!(
                "{format:?} q8 {arm}: codes at {off:2} mod 64: {:.1} G w/s (best of 3000)",
                (O * I) as f64 / best / 1e9
            );
        }
    }
}

fn groups(o: usize, i: usize) {
    let mut rnd = lcg(0x1234_5678);
    let w: Vec<u8> = (0..o * i / 2).map(|_| rnd()).collect();
    let x: Vec<f32> = (0..i).map(|k| ((k * 7919) % 1000) as f32 / 500.0 - 1.0).collect();
    let (mut q, mut qs) = (vec![0i8; i], [0f32; 1]);
    let xq = kernels::quantize_activations(&x, 1, i, &mut q, &mut qs).expect("shape");
    let mut y = vec![0f32; o];
    let time = |arm: Isa, m: &Matrix<'_>, y: &mut [f32]| {
        let (mut bq, mut bf) = (f64::MAX, f64::MAX);
        for _ in 0..2000 {
            let t = Instant::now();
            kernels::matmul_q8_with(arm, m, black_box(&xq), y).expect("arm");
            bq = bq.min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            kernels::matmul_with(arm, m, black_box(&x), 1, y).expect("arm");
            bf = bf.min(t.elapsed().as_secs_f64());
        }
        let g = |b: f64| (o * i) as f64 / b / 1e9;
        (g(bq), g(bf))
    };
    println!("{o} × {i}, S = 1, best of 2000 calls, G weights/s:");
    for arm in isa::available().filter(|a| *a != Isa::Scalar) {
        for gs in [0, 32, 64, 128, 256] {
            let sc = vec![0.01f32; if gs == 0 { o } else { o * i.div_ceil(gs) }];
            let format = if gs == 0 { Format::Int4Row } else { Format::Int4Grouped };
            let m = Matrix::new(format, &w, Scales::F32(&sc), o, i, gs).expect("shape");
            let (q8, f32) = time(arm, &m, &mut y);
            println!("{arm} {format:?} gs {gs}: q8 {q8:.1} G w/s, f32 {f32:.1} G w/s");
        }
        let se: Vec<u8> = (0..o * i / 32).map(|k| 120 + (k % 10) as u8).collect();
        let m = Matrix::new(Format::Mxfp4, &w, Scales::Ue8m0(&se), o, i, 32).expect("shape");
        let (q8, f32) = time(arm, &m, &mut y);
        println!("{arm} Mxfp4 gs 32: q8 {q8:.1} G w/s, f32 {f32:.1} G w/s");
    }
}

fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("pair") => pair(),
        Some("align") => align(),
        Some("groups") => groups(O, I),
        // Rows longer than the f32 path's de-interleave buffer (8192 columns).
        Some("groups-long") => groups(32, 16384),
        Some("groups-at") => {
            let arg = |k: usize| std::env::args().nth(k).and_then(|v| v.parse().ok());
            match (arg(2), arg(3)) {
                (Some(o), Some(i)) => groups(o, i),
                _ => eprintln!("usage: kernels_paired groups-at O I"),
            }
        }
        _ => eprintln!("usage: kernels_paired pair|align|groups|groups-long|groups-at O I"),
    }
}
