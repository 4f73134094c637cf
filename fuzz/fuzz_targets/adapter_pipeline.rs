//! The two-thread paths of `tetrad::adapter` (`matmul` for `int4-rans256-g0` records, the
//! decode/multiply pipeline or, for rows of whole rounds at small batches, the split of the
//! record's streams; `matmul_cfs1` for CFS1 blobs, the pipeline) against the single-threaded
//! path. Both engage only when a matrix spans more than one tile, so the shapes here are
//! chosen for it: one to four rows a tile, two to four tiles (the last often partial). Most
//! inputs use small tiles (`matmul_tiled`, 32–287 bytes: rows of 7–287 bytes), which reach the
//! same code a hundred times faster; one in eight uses the real 24 KiB tile (`TILE_BYTES`,
//! rows of 4–24 KiB) through `matmul` itself; and flag bit 7 (not with the real tile) makes
//! rows of one or two whole rounds (128 or 256 bytes), which the record's stream split takes. The record (or blob) is valid
//! or carries a few byte mutations anywhere, so decode errors land in any tile. On 2 and 3
//! threads the result equals the single-threaded one exactly — the same `Ok` and the same bits,
//! or the same named refusal with `y` all zeros — and the single-threaded result agrees with a
//! checked decode of the whole matrix (it refuses exactly when that decode does, with the same
//! error).
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use tetrad_fuzz::{cyclic_byte, lcg_activations, same_bits, table_from_hist, to_codable};
use tetrad_quant::adapter::{Acts, AdapterError, Cfs1Matrix, Rans256Matrix, TILE_BYTES};
use tetrad_quant::isa::Isa;
use tetrad_quant::kernels::quantize_activations;
use tetrad_rans::{Arm, encode_record_packed, max_record_len};

#[derive(Debug, Arbitrary)]
struct Input {
    /// Rows per tile (`% 4 + 1`), row length within the range that gives it (low byte) and a
    /// small tile's budget (high byte), rows in all.
    shape: (u8, u16, u8),
    /// Bit 0: an odd `I` (a padding nibble per row); bit 1: int8 activations; bits 2–3: `S − 1`;
    /// bits 4–6 all set: the real 24 KiB tile; else bit 7: rows of whole rounds.
    flags: u8,
    hist: [u16; 16],
    codes: Vec<u8>,
    /// (position, xor) byte mutations of the encoded record and of the CFS1 blob.
    mutations: Vec<(u32, u8)>,
    /// Kernel ISA and decode arm, among the available ones.
    arms: (u8, u8),
    x_seed: u32,
}

fuzz_target!(|inp: Input| {
    let (t_sel, len_sel, o_sel) = inp.shape;
    let t = usize::from(t_sel % 4) + 1;
    let real_tile = inp.flags >> 4 & 7 == 7;
    let whole_rounds = !real_tile && inp.flags & 0x80 != 0;
    let (tile, stride) = if whole_rounds {
        // One or two rounds of the record's 128 stream pairs a row, t rows a tile.
        let stride = 128 * (1 + usize::from(len_sel) % 2);
        (t * stride, stride)
    } else {
        let tile = if real_tile { TILE_BYTES } else { 32 + usize::from(len_sel >> 8) };
        // A row of `stride` bytes puts `tile / stride` = t rows in a tile.
        let (lo, hi) = (tile / (t + 1) + 1, tile / t);
        (tile, lo + usize::from(len_sel) % (hi - lo + 1))
    };
    let i = 2 * stride - usize::from(inp.flags & 1);
    let o = t + 1 + usize::from(o_sel) % (2 * t + 1);
    let s = usize::from(inp.flags >> 2 & 3) + 1;
    let table = table_from_hist(14, &inp.hist);
    let nibbles = to_codable(&table, &inp.codes);
    if nibbles.is_empty() {
        return;
    }
    // Rows cycle through the input's nibbles (an odd row's padding nibble too: the kernels
    // meet it with a zero activation).
    let packed: Vec<u8> = (0..o * stride).map(|k| cyclic_byte(&nibbles, k)).collect();
    let scales: Vec<f32> = (0..o).map(|r| 0.02 - r as f32 * 1e-3).collect();
    let x = lcg_activations(inp.x_seed, s * i);
    let (mut q, mut qs) = (vec![0i8; s * i], vec![0f32; s]);
    let xq = quantize_activations(&x, s, i, &mut q, &mut qs).expect("finite activations");
    let acts = if inp.flags & 2 != 0 { Acts::Q8(&xq) } else { Acts::F32 { x: &x, s } };
    let isas: Vec<Isa> = tetrad_quant::isa::available().collect();
    let arms: Vec<Arm> = Arm::ALL.iter().copied().filter(|a| a.is_available()).collect();
    let isa = isas[usize::from(inp.arms.0) % isas.len()];
    let arm = arms[usize::from(inp.arms.1) % arms.len()];

    // int4-rans256-g0.
    let mut blob = vec![0u8; max_record_len(2 * packed.len(), 256)];
    let n = encode_record_packed(&table, &packed, &mut blob).expect("codable nibbles encode");
    blob.truncate(n);
    mutate(&mut blob, &inp.mutations);
    match Rans256Matrix::new(&blob, &table, &scales, o, i) {
        Err(e) => assert!(e.class().starts_with("E_"), "{e}"),
        Ok(m) => {
            assert!(m.o() > m.tile_rows(tile), "the shape spans several tiles");
            let mut dense = vec![0u8; m.dense_len()];
            let decoded = m.decode_into(arm, &mut dense);
            agree("record", s * o, decoded, |y, threads| {
                if real_tile {
                    tetrad::adapter::matmul(&m, isa, arm, acts, y, threads)
                } else {
                    tetrad::adapter::matmul_tiled(&m, isa, arm, acts, y, threads, tile)
                }
            });
        }
    }

    // CFS1, the same bytes.
    let mut blob = vec![0u8; tetrad_fse::max_encoded_len(packed.len())];
    let n = tetrad_fse::encode_into(&packed, &mut blob).expect("bound-sized buffer");
    blob.truncate(n);
    mutate(&mut blob, &inp.mutations);
    match Cfs1Matrix::new(&blob, &scales, o, i) {
        Err(e) => assert!(e.class().starts_with("E_"), "{e}"),
        Ok(m) => {
            assert!(m.o() > m.tile_rows(tile), "the shape spans several tiles");
            let mut dense = vec![0u8; m.dense_len()];
            let decoded = m.decode_into((), &mut dense);
            agree("cfs1", s * o, decoded, |y, threads| {
                if real_tile {
                    tetrad::adapter::matmul_cfs1(&m, isa, acts, y, threads)
                } else {
                    tetrad::adapter::matmul_cfs1_tiled(&m, isa, acts, y, threads, tile)
                }
            });
        }
    }
});

/// Up to 4 byte mutations, anywhere in the blob.
fn mutate(blob: &mut [u8], mutations: &[(u32, u8)]) {
    for &(at, v) in mutations.iter().take(4) {
        let at = at as usize % blob.len();
        blob[at] ^= v;
    }
}

/// `run(y, threads)` on 1, 2 and 3 threads: one result and the same bits, `y` all zeros on a
/// refusal; the single-threaded result refuses exactly when `decoded` (the whole matrix's
/// checked decode) did, with the same error.
fn agree(
    what: &str,
    len: usize,
    decoded: Result<(), AdapterError>,
    run: impl Fn(&mut [f32], usize) -> Result<(), AdapterError>,
) {
    let mut y1 = vec![f32::NAN; len];
    let r1 = run(&mut y1, 1);
    match decoded {
        Ok(()) => r1.unwrap_or_else(|e| panic!("{what}: decodable, yet refused: {e}")),
        Err(e) => assert_eq!(r1, Err(e), "{what}: single-threaded vs decode"),
    }
    if r1.is_err() {
        assert!(y1.iter().all(|v| v.to_bits() == 0), "{what}: no partial output");
    }
    for threads in [2, 3] {
        let mut y = vec![f32::NAN; len];
        let r = run(&mut y, threads);
        assert_eq!(r, r1, "{what}: {threads} threads");
        assert!(same_bits(&y, &y1), "{what}: {threads} threads");
    }
}
