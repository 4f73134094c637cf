//! The threaded adapters with any tile size (`tetrad::adapter::matmul_tiled`,
//! `matmul_cfs1_tiled`): a row's product does not depend on the tile that holds it, so every
//! tile size — one row, a row and a byte, several rows, the whole matrix, more — on 1 to 3
//! threads gives the single-threaded adapter's bits, on every kernel arm and decode arm, with
//! f32 and int8 activations; a damaged record or blob is the same named refusal with `y`
//! zero-filled. Records run both two-thread paths: rows of whole rounds (`I = 256`, `768`)
//! split the streams at small batches, other shapes (`I = 67`) and f32 batches above 4
//! pipeline.
#![allow(clippy::cast_possible_truncation)]

use tetrad_quant::adapter::{Acts, AdapterError, Cfs1Matrix, Rans256Matrix};
use tetrad_quant::isa::{self, Isa};
use tetrad_quant::kernels::quantize_activations;
use tetrad_rans::{Arm, Nibbles};
use tetrad_rans::{FORMAT_SCALE_BITS, FORMAT_STREAMS, Table, encode_record, max_record_len};

const O: usize = 37;
const I: usize = 67; // odd: a padding nibble per row
const STRIDE: usize = I.div_ceil(2);

fn bits(y: &[f32]) -> Vec<u32> {
    y.iter().map(|v| v.to_bits()).collect()
}

/// Tile budgets in bytes for rows of `stride` bytes: below a row, one row, a row and a byte,
/// several rows, the matrix, more.
fn tile_sizes(o: usize, stride: usize) -> [usize; 7] {
    [1, stride, stride + 1, 3 * stride, 10 * stride - 1, o * stride, usize::MAX]
}

fn data(o: usize, i: usize) -> (Vec<u8>, Vec<f32>, Table) {
    let (codes, scales) = tetrad::synth::int4_rows(o, i, tetrad::synth::Dist::Laplace, 5);
    let table =
        Table::from_histogram(FORMAT_SCALE_BITS, &tetrad::synth::nibble_histogram(&codes)).unwrap();
    (codes, scales, table)
}

/// Each activation kind for rows of `i`: f32 with S = 1, 3 and 5, int8 with S = 2.
fn each_acts(i: usize, mut f: impl FnMut(Acts<'_>, usize, &str)) {
    let x: Vec<f32> = (0..5 * i).map(|k| ((k as f32) * 0.29).sin()).collect();
    f(Acts::F32 { x: &x[..i], s: 1 }, 1, "f32 S=1");
    f(Acts::F32 { x: &x[..3 * i], s: 3 }, 3, "f32 S=3");
    f(Acts::F32 { x: &x, s: 5 }, 5, "f32 S=5");
    let (mut q, mut qs) = (vec![0i8; 2 * i], vec![0f32; 2]);
    let xq = quantize_activations(&x[..2 * i], 2, i, &mut q, &mut qs).unwrap();
    f(Acts::Q8(&xq), 2, "int8 S=2");
}

/// `run(y, threads, tile)` on every tile size and 1–3 threads: `want`'s bits, or `want`'s
/// refusal with `y` all zeros.
fn agree(
    what: &str,
    (o, stride, s): (usize, usize, usize),
    want: &Result<Vec<u32>, AdapterError>,
    run: impl Fn(&mut [f32], usize, usize) -> Result<(), AdapterError>,
) {
    for tile in tile_sizes(o, stride) {
        for threads in 1..=3 {
            let mut y = vec![f32::NAN; s * o];
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

/// A record of `[o, i]` in `n` streams, intact and damaged near the end and near the start
/// of its payload, through [`agree`] on every arm.
fn record_case(o: usize, i: usize, n: usize) {
    let (codes, scales, table) = data(o, i);
    let mut record = vec![0u8; max_record_len(2 * codes.len(), n)];
    let nibbles = Nibbles::Packed(&codes);
    let len = encode_record(&table, nibbles, n, &mut record).unwrap();
    record.truncate(len);
    // Damage in the payload (the header's checks are not the adapter's business here): near
    // its end (the last streams) and near its start (the first).
    let payload = tetrad_rans::Record::parse_streams(&record, n).unwrap().payload().len();
    let head = len - payload;
    let mut late = record.clone();
    late[len - 1 - payload / 8] ^= 0x24;
    let mut early = record.clone();
    early[head + payload / 8] ^= 0x42;
    for blob in [&record, &late, &early] {
        let m = Rans256Matrix::new(blob, &table, &scales, o, i).unwrap();
        for isa in isa::available() {
            for arm in Arm::ALL.iter().copied().filter(|a| a.is_available()) {
                each_acts(i, |acts, s, kind| {
                    let mut y = vec![0f32; s * o];
                    let want = m.matmul_with(isa, arm, acts, &mut y).map(|()| bits(&y));
                    let what = format!("record [{o}, {i}] N={n} {isa:?} {arm:?} {kind}");
                    if blob != &record {
                        assert!(want.is_err(), "{what}: the damage is refused");
                    }
                    agree(&what, (o, i.div_ceil(2), s), &want, |y, threads, tile| {
                        tetrad::adapter::matmul_tiled(&m, isa, arm, acts, y, threads, tile)
                    });
                });
            }
        }
    }
}

#[test]
fn record_tiles_of_any_size_give_the_same_bits() {
    record_case(O, I, FORMAT_STREAMS);
}

#[test]
fn record_streams_split_over_threads_give_the_same_bits() {
    // Rows of whole rounds (128 pairs, 128 bytes a round): one round a row, and three.
    record_case(O, 256, FORMAT_STREAMS);
    record_case(5, 768, FORMAT_STREAMS);
}

#[test]
fn cfs1_tiles_of_any_size_give_the_same_bits() {
    let (codes, scales, _) = data(O, I);
    let mut blob = vec![0u8; tetrad_fse::max_encoded_len(codes.len())];
    let n = tetrad_fse::encode_into(&codes, &mut blob).unwrap();
    blob.truncate(n);
    let mut damaged = blob.clone();
    damaged[n / 2] ^= 0x81;
    for b in [&blob, &damaged] {
        let m = Cfs1Matrix::new(b, &scales, O, I).unwrap();
        for isa in isa::available() {
            let isa: Isa = isa;
            each_acts(I, |acts, s, kind| {
                let mut y = vec![0f32; s * O];
                let want = m.matmul_with(isa, (), acts, &mut y).map(|()| bits(&y));
                let what = format!("cfs1 {isa:?} {kind}");
                if b == &damaged {
                    assert!(want.is_err(), "{what}: the damage is refused");
                }
                agree(&what, (O, STRIDE, s), &want, |y, threads, tile| {
                    tetrad::adapter::matmul_cfs1_tiled(&m, isa, acts, y, threads, tile)
                });
            });
        }
    }
}
