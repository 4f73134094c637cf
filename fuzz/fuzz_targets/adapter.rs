//! The fused decode-then-matmul adapter against decode-then-dense: for a record (valid, or a
//! valid one with a few byte mutations) and a shape, `Rans256Matrix::new` either refuses by
//! name or builds; then on every available kernel arm (each with one decode arm, chosen by the
//! input in turn, so every pair is reached across inputs) the fused product equals
//! the dense int4-row product of the decoded bytes bit for bit (f32 and int8 activations), or
//! the record is refused by checked decode — and then `y` is all zeros, never partial products.
//! A row count `S` that does not match the activations is refused by name (up to `usize::MAX`).
//! The same int4-row bytes, CFS1-coded and mutated the same way, go through `Cfs1Matrix` with
//! the same contract (fused == decode-then-dense bit for bit, or a named refusal with `y`
//! all zeros). Both also multiply through `matmul_scratch` with small input-chosen buffers
//! (tiles of a row or a few, a few output rows per kernel call): the same bits, or the same
//! refusal with `y` all zeros.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use tetrad_fuzz::{
    cyclic_byte, lcg_activations, rotating_arm, same_bits, table_from_hist, to_codable,
};
use tetrad_quant::Format;
use tetrad_quant::adapter::{Acts, AdapterError, Cfs1Matrix, Rans256Matrix};
use tetrad_quant::kernels::QuantizedActs;
use tetrad_quant::kernels::{Matrix, Scales, matmul_q8_with, matmul_with, quantize_activations};
use tetrad_rans::{Arm, encode_record_packed, max_record_len};

#[derive(Debug, Arbitrary)]
struct Input {
    o: u8,
    i: u16,
    s: u8,
    hist: [u16; 16],
    codes: Vec<u8>,
    /// (position, xor) byte mutations of the encoded record.
    mutations: Vec<(u16, u8)>,
    /// Shape lie: added to `i` when building the matrix.
    lie: i8,
    x_seed: u32,
    /// `matmul_scratch` with small buffers: weight scratch bytes beyond one row, output rows
    /// per kernel call (bit 7: int8 activations).
    scratch: (u16, u8),
}

/// The weight and output scratch `matmul_scratch` gets from `(extra, rows)`: one row of
/// `stride` bytes plus up to about three more (tiles of a row or a few, ending mid-row), and
/// `S` floats per kernel output row.
fn scratch(stride: usize, s: usize, (extra, rows): (u16, u8)) -> (Vec<u8>, Vec<f32>) {
    let wlen = stride.max(1) + usize::from(extra) % (3 * stride + 64);
    (vec![0u8; wlen], vec![0f32; (usize::from(rows % 4) + 1) * s])
}

fuzz_target!(|inp: Input| {
    let o = usize::from(inp.o % 24) + 1;
    let i = usize::from(inp.i % 700) + 1;
    let s = usize::from(inp.s % 3) + 1;
    let stride = i.div_ceil(2);
    let table = table_from_hist(14, &inp.hist);
    let nibbles = to_codable(&table, &inp.codes);
    if nibbles.is_empty() {
        return;
    }
    let packed: Vec<u8> = (0..o * stride).map(|k| cyclic_byte(&nibbles, k)).collect();
    let scales: Vec<f32> = (0..o).map(|r| 0.01 + r as f32 * 1e-3).collect();
    let i_claim = (i as i64 + i64::from(inp.lie % 3)).max(1) as usize;
    let x = lcg_activations(inp.x_seed, s * i_claim);
    let mut q = vec![0i8; s * i_claim];
    let mut qs = vec![0f32; s];
    let xq = quantize_activations(&x, s, i_claim, &mut q, &mut qs).expect("finite activations");
    cfs1(&packed, &inp.mutations, &scales, o, i_claim, s, &x, &xq, inp.scratch);

    let mut blob = vec![0u8; max_record_len(2 * packed.len(), 256)];
    let n = encode_record_packed(&table, &packed, &mut blob).expect("codable nibbles encode");
    blob.truncate(n);
    for &(at, x) in inp.mutations.iter().take(4) {
        let at = usize::from(at) % blob.len();
        blob[at] ^= x;
    }
    let m = match Rans256Matrix::new(&blob, &table, &scales, o, i_claim) {
        Ok(m) => m,
        Err(e) => {
            assert!(e.class().starts_with("E_"), "{e}");
            return;
        }
    };
    // A row count that does not match `x` is refused by name before anything is sized by it
    // (an `S` near `usize::MAX` once panicked on an overflow); `y` is zero-filled.
    let lie = usize::MAX >> (inp.x_seed % 63);
    if lie != s {
        let mut y = vec![f32::NAN; s * o];
        let e = m.matmul_with(
            tetrad_quant::isa::Isa::Scalar,
            Arm::Scalar,
            Acts::F32 { x: &x, s: lie },
            &mut y,
        );
        assert!(e.expect_err("S does not match x").class().starts_with("E_KERNEL"));
        assert!(y.iter().all(|&v| v == 0.0));
    }
    let mut dense_bytes = vec![0u8; m.dense_len()];
    let decoded = m.decode_into(Arm::Scalar, &mut dense_bytes);
    let arms: Vec<Arm> = Arm::ALL.iter().copied().filter(|a| a.is_available()).collect();
    for (k, isa) in tetrad_quant::isa::available().enumerate() {
        let arm = rotating_arm(&arms, k, inp.x_seed);
        let mut y = vec![f32::NAN; s * o];
        let mut yq = vec![f32::NAN; s * o];
        let r = m.matmul_with(isa, arm, Acts::F32 { x: &x, s }, &mut y);
        let rq = m.matmul_with(isa, arm, Acts::Q8(&xq), &mut yq);
        match &decoded {
            Err(e) => {
                assert!(matches!(e, AdapterError::Decode(_)), "{e}");
                assert_eq!(r, Err(*e), "{isa:?} {arm:?}");
                assert_eq!(rq, Err(*e));
                assert!(y.iter().chain(&yq).all(|&v| v == 0.0), "no partial output");
            }
            Ok(()) => {
                r.expect("decodable record multiplies");
                rq.expect("decodable record multiplies");
                let dm =
                    Matrix::new(Format::Int4Row, &dense_bytes, Scales::F32(&scales), o, i_claim, 0)
                        .expect("same shape");
                let mut want = vec![0f32; s * o];
                matmul_with(isa, &dm, &x, s, &mut want).expect("dense");
                assert!(same_bits(&y, &want), "{isa:?} {arm:?}");
                let mut want_q = vec![0f32; s * o];
                matmul_q8_with(isa, &dm, &xq, &mut want_q).expect("dense q8");
                assert!(same_bits(&yq, &want_q), "q8 {isa:?} {arm:?}");
            }
        }
    }
    // Small scratch on one kernel arm and one decode arm (chosen by the input): tiles of a row
    // or a few, the same bits as the allocating path (or the same refusal, `y` all zeros).
    let isas: Vec<_> = tetrad_quant::isa::available().collect();
    let (extra, rows) = inp.scratch;
    let isa = isas[usize::from(extra) % isas.len()];
    let arm = arms[usize::from(rows) % arms.len()];
    let acts = if rows & 0x80 != 0 { Acts::Q8(&xq) } else { Acts::F32 { x: &x, s } };
    let mut want = vec![0f32; s * o];
    let r_want = m.matmul_with(isa, arm, acts, &mut want);
    let (mut wbuf, mut ybuf) = scratch(stride, s, inp.scratch);
    let mut y = vec![f32::NAN; s * o];
    let r = m.matmul_scratch(isa, arm, acts, &mut y, &mut wbuf, &mut ybuf);
    assert_eq!(r, r_want, "scratch {} / {} {isa:?} {arm:?}", wbuf.len(), ybuf.len());
    assert!(same_bits(&y, &want), "scratch {} / {} {isa:?} {arm:?}", wbuf.len(), ybuf.len());
});

/// The CFS1 adapter on the same bytes: CFS1-coded, mutated like the record, then
/// `Cfs1Matrix` refuses by name, or multiplies bit-identically to dense on the decoded bytes,
/// or refuses at decode with `y` all zeros.
#[allow(clippy::too_many_arguments)]
fn cfs1(
    packed: &[u8],
    mutations: &[(u16, u8)],
    scales: &[f32],
    o: usize,
    i: usize,
    s: usize,
    x: &[f32],
    xq: &QuantizedActs<'_>,
    small: (u16, u8),
) {
    let mut blob = vec![0u8; tetrad_fse::max_encoded_len(packed.len())];
    let n = tetrad_fse::encode_into(packed, &mut blob).expect("bound-sized buffer");
    blob.truncate(n);
    for &(at, v) in mutations.iter().take(4) {
        let at = usize::from(at) % blob.len();
        blob[at] ^= v;
    }
    let m = match Cfs1Matrix::new(&blob, scales, o, i) {
        Ok(m) => m,
        Err(e) => {
            assert!(e.class().starts_with("E_"), "{e}");
            return;
        }
    };
    let mut dense_bytes = vec![0x77u8; m.dense_len()];
    let decoded = m.decode_into((), &mut dense_bytes);
    for isa in tetrad_quant::isa::available() {
        let mut y = vec![f32::NAN; s * o];
        let mut yq = vec![f32::NAN; s * o];
        let r = m.matmul_with(isa, (), Acts::F32 { x, s }, &mut y);
        let rq = m.matmul_with(isa, (), Acts::Q8(xq), &mut yq);
        match &decoded {
            Err(e) => {
                assert!(matches!(e, AdapterError::Cfs1(d) if d.is_payload()), "{e}");
                assert!(dense_bytes.iter().all(|&b| b == 0), "decode_into zeroes on error");
                assert_eq!(r, Err(*e), "cfs1 {isa:?}");
                assert_eq!(rq, Err(*e));
                assert!(y.iter().chain(&yq).all(|&v| v.to_bits() == 0), "no partial output");
            }
            Ok(()) => {
                r.expect("decodable blob multiplies");
                rq.expect("decodable blob multiplies");
                let dm = Matrix::new(Format::Int4Row, &dense_bytes, Scales::F32(scales), o, i, 0)
                    .expect("same shape");
                let mut want = vec![0f32; s * o];
                matmul_with(isa, &dm, x, s, &mut want).expect("dense");
                assert!(same_bits(&y, &want), "cfs1 {isa:?}");
                let mut want_q = vec![0f32; s * o];
                matmul_q8_with(isa, &dm, xq, &mut want_q).expect("dense q8");
                assert!(same_bits(&yq, &want_q), "cfs1 q8 {isa:?}");
            }
        }
    }
    // Small scratch, as for the record.
    let isas: Vec<_> = tetrad_quant::isa::available().collect();
    let isa = isas[usize::from(small.0) % isas.len()];
    let acts = if small.1 & 0x80 != 0 { Acts::Q8(xq) } else { Acts::F32 { x, s } };
    let mut want = vec![0f32; s * o];
    let r_want = m.matmul_with(isa, (), acts, &mut want);
    let (mut wbuf, mut ybuf) = scratch(i.div_ceil(2), s, small);
    let mut y = vec![f32::NAN; s * o];
    let mut table = tetrad_fse::DecodeTable::new();
    let r = m.matmul_band_work(isa, (), acts, 0..m.o(), &mut y, &mut wbuf, &mut ybuf, &mut table);
    assert_eq!(r, r_want, "cfs1 scratch {} / {} {isa:?}", wbuf.len(), ybuf.len());
    assert!(same_bits(&y, &want), "cfs1 scratch {} / {} {isa:?}", wbuf.len(), ybuf.len());
}
