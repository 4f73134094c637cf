//! The threaded adapters with any tile size (`tetrad::adapter::matmul_tiled`,
//! `matmul_cfs1_tiled`): a row's product does not depend on the tile that holds it, so every
//! tile size — one row, a row and a byte, several rows, the whole matrix, more — on 1 to 3
//! threads gives the single-threaded adapter's bits, on every kernel arm and decode arm, with
//! f32 and int8 activations; a damaged record or blob is the same named refusal with `y`
//! zero-filled.
#![allow(clippy::cast_possible_truncation)]

use tetrad_quant::adapter::{Acts, AdapterError, Cfs1Matrix, Rans256Matrix};
use tetrad_quant::isa::{self, Isa};
use tetrad_quant::kernels::quantize_activations;
use tetrad_rans::{
    Arm, FORMAT_SCALE_BITS, FORMAT_STREAMS, Table, encode_record_packed, max_record_len,
};

const O: usize = 37;
const I: usize = 67; // odd: a padding nibble per row
const STRIDE: usize = I.div_ceil(2);

fn bits(y: &[f32]) -> Vec<u32> {
    y.iter().map(|v| v.to_bits()).collect()
}

/// Tile budgets in bytes: below a row, one row, a row and a byte, several rows, the matrix, more.
fn tile_sizes() -> [usize; 7] {
    [1, STRIDE, STRIDE + 1, 3 * STRIDE, 10 * STRIDE - 1, O * STRIDE, usize::MAX]
}

fn data() -> (Vec<u8>, Vec<f32>, Table) {
    let (codes, scales) = tetrad::synth::int4_rows(O, I, tetrad::synth::Dist::Laplace, 5);
    let table =
        Table::from_histogram(FORMAT_SCALE_BITS, &tetrad::synth::nibble_histogram(&codes)).unwrap();
    (codes, scales, table)
}

/// Each activation kind: f32 with S = 1 and 3, int8 with S = 2.
fn each_acts(mut f: impl FnMut(Acts<'_>, usize, &str)) {
    let x: Vec<f32> = (0..3 * I).map(|k| ((k as f32) * 0.29).sin()).collect();
    f(Acts::F32 { x: &x[..I], s: 1 }, 1, "f32 S=1");
    f(Acts::F32 { x: &x, s: 3 }, 3, "f32 S=3");
    let (mut q, mut qs) = (vec![0i8; 2 * I], vec![0f32; 2]);
    let xq = quantize_activations(&x[..2 * I], 2, I, &mut q, &mut qs).unwrap();
    f(Acts::Q8(&xq), 2, "int8 S=2");
}

/// `run(y, threads, tile)` on every tile size and 1–3 threads: `want`'s bits, or `want`'s
/// refusal with `y` all zeros.
fn agree(
    what: &str,
    s: usize,
    want: &Result<Vec<u32>, AdapterError>,
    run: impl Fn(&mut [f32], usize, usize) -> Result<(), AdapterError>,
) {
    for tile in tile_sizes() {
        for threads in 1..=3 {
            let mut y = vec![f32::NAN; s * O];
            let got = run(&mut y, threads, tile).map(|()| bits(&y));
            match want {
                Ok(w) => assert_eq!(got.as_ref(), Ok(w), "{what}: tile {tile}, {threads} threads"),
                Err(e) => {
                    assert_eq!(got, Err(*e), "{what}: tile {tile}, {threads} threads");
                    assert!(y.iter().all(|v| v.to_bits() == 0), "{what}: y zero-filled");
                }
            }
        }
    }
}

#[test]
fn record_tiles_of_any_size_give_the_same_bits() {
    let (codes, scales, table) = data();
    let mut record = vec![0u8; max_record_len(2 * codes.len(), FORMAT_STREAMS)];
    let n = encode_record_packed(&table, &codes, &mut record).unwrap();
    record.truncate(n);
    let mut damaged = record.clone();
    damaged[n - 40] ^= 0x24;
    for blob in [&record, &damaged] {
        let m = Rans256Matrix::new(blob, &table, &scales, O, I).unwrap();
        for isa in isa::available() {
            for arm in Arm::ALL.iter().copied().filter(|a| a.is_available()) {
                each_acts(|acts, s, kind| {
                    let mut y = vec![0f32; s * O];
                    let want = m.matmul_with(isa, arm, acts, &mut y).map(|()| bits(&y));
                    let what = format!("record {isa:?} {arm:?} {kind}");
                    if blob == &damaged {
                        assert!(want.is_err(), "{what}: the damage is refused");
                    }
                    agree(&what, s, &want, |y, threads, tile| {
                        tetrad::adapter::matmul_tiled(&m, isa, arm, acts, y, threads, tile)
                    });
                });
            }
        }
    }
}

#[test]
fn cfs1_tiles_of_any_size_give_the_same_bits() {
    let (codes, scales, _) = data();
    let mut blob = vec![0u8; tetrad_fse::max_compressed_len(codes.len())];
    let n = tetrad_fse::compress_into(&codes, &mut blob).unwrap();
    blob.truncate(n);
    let mut damaged = blob.clone();
    damaged[n / 2] ^= 0x81;
    for b in [&blob, &damaged] {
        let m = Cfs1Matrix::new(b, &scales, O, I).unwrap();
        for isa in isa::available() {
            let isa: Isa = isa;
            each_acts(|acts, s, kind| {
                let mut y = vec![0f32; s * O];
                let want = m.matmul_with(isa, acts, &mut y).map(|()| bits(&y));
                let what = format!("cfs1 {isa:?} {kind}");
                if b == &damaged {
                    assert!(want.is_err(), "{what}: the damage is refused");
                }
                agree(&what, s, &want, |y, threads, tile| {
                    tetrad::adapter::matmul_cfs1_tiled(&m, isa, acts, y, threads, tile)
                });
            });
        }
    }
}
