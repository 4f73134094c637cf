//! The fused `int4-rans64-t1` adapter (`Rans64Matrix`) against decode-then-dense, on blobs
//! of several 4 KiB chunks (coded, and raw where rows of uniform bytes fill one), intact or
//! damaged by byte mutations whose chunk checks are then rewritten or not (one input bit):
//!
//! - `Rans64Matrix::new` refuses by name, or builds;
//! - the whole product, on every available kernel arm (each with one decode arm, chosen by the
//!   input in turn, so every pair is reached across inputs), f32 and int8 activations, equals dense int4-row matmul on the scalar decode bit for bit, or — where
//!   the scalar decode refuses the blob — is the same refusal with `y` all zeros;
//! - row bands with fuzzer-chosen scratch sizes (one row plus slack upwards, so pieces end
//!   mid-row and, on the AVX-512 decode arms, bands split into two half-bands): a band whose
//!   bytes lie in chunks that decode alone equals those rows of the dense product bit for bit;
//!   a band touching a refused chunk either refuses by name with its output all zeros or
//!   succeeds (a band ending inside a chunk does not see that chunk's seal, by design);
//! - `tetrad::rans64::matmul` on 2 and 3 threads (row bands) gives the single-threaded result
//!   exactly, refusal included.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use tetrad_fuzz::{
    assert_class, cyclic_byte, reseal_rans64, rotating_arm, table_from_hist, to_codable,
};
use tetrad_quant::Format;
use tetrad_quant::adapter::Acts;
use tetrad_quant::adapter_rans64::{Rans64Matrix, SCRATCH_SLACK};
use tetrad_quant::isa::Isa;
use tetrad_quant::kernels::{Matrix, Scales, matmul_q8_with, matmul_with, quantize_activations};
use tetrad_rans::rans64::{self, Arm};

#[derive(Debug, Arbitrary)]
struct Input {
    o: u8,
    i: u16,
    s: u8,
    hist: [u16; 16],
    codes: Vec<u8>,
    /// Rows (from the top) filled with uniform bytes, which code as raw chunks.
    raw_rows: u8,
    /// (position, xor) byte mutations of the encoded blob.
    mutations: Vec<(u16, u8)>,
    /// Rewrite the chunk checks after the mutations (else the damage must stop at `new`).
    reseal: bool,
    /// Shape lie: added to `i` when building the matrix (an odd `I` has the stride of `I + 1`).
    lie: i8,
    /// Row bands: (first row, last row, scratch bytes beyond the minimum, output rows per call).
    bands: Vec<(u8, u8, u16, u8)>,
    x_seed: u32,
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

fuzz_target!(|inp: Input| {
    let o = usize::from(inp.o % 40) + 1;
    let i = usize::from(inp.i % 600) + 1;
    let s = usize::from(inp.s % 3) + 1;
    let stride = i.div_ceil(2);
    let table = table_from_hist(14, &inp.hist);
    let nibbles = to_codable(&table, &inp.codes);
    if nibbles.is_empty() {
        return;
    }
    let mut st = inp.x_seed | 1;
    let mut next = move || {
        st ^= st << 13;
        st ^= st >> 17;
        st ^= st << 5;
        st
    };
    let raw_rows = usize::from(inp.raw_rows) % (o + 1);
    let packed: Vec<u8> = (0..o * stride)
        .map(|k| {
            if k < raw_rows * stride {
                return next() as u8;
            }
            cyclic_byte(&nibbles, k)
        })
        .collect();
    let scales: Vec<f32> = (0..o).map(|r| 0.01 + r as f32 * 1e-3).collect();
    let mut blob = vec![0u8; rans64::max_encoded_len(packed.len(), rans64::MIN_CHUNK_SHIFT)];
    let n = rans64::encode_into(&packed, rans64::MIN_CHUNK_SHIFT, &mut blob).expect("encodes");
    blob.truncate(n);
    for &(at, v) in inp.mutations.iter().take(4) {
        let at = usize::from(at) % blob.len();
        blob[at] ^= v;
    }
    if inp.reseal {
        reseal_rans64(&mut blob);
    }
    let i_claim = (i as i64 + i64::from(inp.lie % 3)).max(1) as usize;
    let m = match Rans64Matrix::new(&blob, &scales, o, i_claim) {
        Ok(m) => m,
        Err(e) => {
            assert_class(e.class());
            return;
        }
    };

    let x: Vec<f32> =
        (0..s * i_claim).map(|_| (next() >> 8) as f32 / (1u32 << 24) as f32 - 0.5).collect();
    let mut q = vec![0i8; s * i_claim];
    let mut qs = vec![0f32; s];
    let xq = quantize_activations(&x, s, i_claim, &mut q, &mut qs).expect("finite activations");

    // The truth: the whole blob decoded by the scalar reference, and chunk by chunk (the bytes
    // of every chunk that decodes alone; what a refused chunk left behind is never compared).
    let mut whole = vec![0u8; m.dense_len()];
    let decoded = m.decode_into(Arm::Scalar, &mut whole);
    let parsed = m.blob();
    let mut by_chunk = vec![0u8; m.dense_len()];
    let chunk_ok: Vec<bool> = (0..parsed.n_chunks())
        .map(|c| {
            let r = parsed.chunk_range(c);
            let out = &mut by_chunk[r.start as usize..r.end as usize];
            rans64::decode_chunk_with(Arm::Scalar, parsed, c, out).is_ok()
        })
        .collect();
    assert_eq!(decoded.is_ok(), chunk_ok.iter().all(|&ok| ok), "whole vs chunk by chunk");
    if decoded.is_ok() {
        assert_eq!(whole, by_chunk, "chunk-by-chunk decode differs from the whole");
    }
    let dense = Matrix::new(Format::Int4Row, &by_chunk, Scales::F32(&scales), o, i_claim, 0)
        .expect("same shape");
    let isas: Vec<Isa> = tetrad_quant::isa::available().collect();
    let arms: Vec<Arm> = Arm::ALL.iter().copied().filter(|a| a.is_available()).collect();
    let mut want = Vec::new();
    let mut want_q = Vec::new();
    for &isa in &isas {
        let mut w = vec![0f32; s * o];
        matmul_with(isa, &dense, &x, s, &mut w).expect("dense");
        want.push(w);
        let mut w = vec![0f32; s * o];
        matmul_q8_with(isa, &dense, &xq, &mut w).expect("dense q8");
        want_q.push(w);
    }

    for (k, &isa) in isas.iter().enumerate() {
        let arm = rotating_arm(&arms, k, inp.x_seed);
        let mut y = vec![f32::NAN; s * o];
        let mut yq = vec![f32::NAN; s * o];
        let r = m.matmul_with(isa, arm, Acts::F32 { x: &x, s }, &mut y);
        let rq = m.matmul_with(isa, arm, Acts::Q8(&xq), &mut yq);
        match &decoded {
            Err(e) => {
                assert_eq!(r.as_ref().err(), Some(e), "{isa:?} {arm}");
                assert_eq!(rq.as_ref().err(), Some(e), "q8 {isa:?} {arm}");
                assert!(y.iter().chain(&yq).all(|&v| v.to_bits() == 0), "partial output");
            }
            Ok(()) => {
                r.expect("decodable blob multiplies");
                rq.expect("decodable blob multiplies");
                assert_eq!(bits(&y), bits(&want[k]), "{isa:?} {arm}");
                assert_eq!(bits(&yq), bits(&want_q[k]), "q8 {isa:?} {arm}");
            }
        }
    }

    // Row bands on threads (the `tetrad` crate's split for `tetrad matmul --threads`): the
    // single-threaded result exactly, refusal included (then `y` is all zeros either way).
    let isa = isas[usize::from(inp.o) % isas.len()];
    let arm = arms[usize::from(inp.s) % arms.len()];
    let mut single = vec![f32::NAN; s * o];
    let r_single = m.matmul_with(isa, arm, Acts::F32 { x: &x, s }, &mut single);
    for threads in [2, 3] {
        let mut y = vec![f32::NAN; s * o];
        let r = tetrad::rans64::matmul(&m, isa, arm, Acts::F32 { x: &x, s }, &mut y, threads);
        assert_eq!(r, r_single, "{threads} threads {isa:?} {arm}");
        assert_eq!(bits(&y), bits(&single), "{threads} threads {isa:?} {arm}");
    }

    for (b, &(a, z, extra, per_call)) in inp.bands.iter().take(3).enumerate() {
        let (r0, r1) = {
            let (a, z) = (usize::from(a) % (o + 1), usize::from(z) % (o + 1));
            (a.min(z), a.max(z))
        };
        let k = (b + usize::from(per_call)) % isas.len();
        let (isa, arm) = (isas[k], arms[(b + usize::from(extra)) % arms.len()]);
        let n = r1 - r0;
        let wlen = stride + SCRATCH_SLACK + usize::from(extra) % (3 * stride + 256);
        let rows_per_call = usize::from(per_call % 4) + 1;
        let mut wbuf = vec![0u8; wlen];
        let mut ybuf = vec![0f32; rows_per_call * s];
        let q8 = per_call & 0x80 != 0;
        let acts = if q8 { Acts::Q8(&xq) } else { Acts::F32 { x: &x, s } };
        let mut yband = vec![f32::NAN; s * n];
        let r = m.matmul_band(isa, arm, acts, r0..r1, &mut yband, &mut wbuf, &mut ybuf);
        // The chunks holding the band's bytes.
        let (lo, hi) = ((r0 * stride) as u64, (r1 * stride) as u64);
        let clean = n == 0
            || (0..parsed.n_chunks()).all(|c| {
                let cr = parsed.chunk_range(c);
                cr.end <= lo || cr.start >= hi || chunk_ok[c]
            });
        let what = format!("band {r0}..{r1} scratch {wlen}/{rows_per_call} {isa:?} {arm} q8={q8}");
        match r {
            Err(e) => {
                assert!(!clean, "{what}: refused ({e}) though its chunks decode");
                assert_class(e.class());
                assert!(yband.iter().all(|&v| v.to_bits() == 0), "{what}: partial output");
            }
            Ok(()) if clean => {
                let w = if q8 { &want_q[k] } else { &want[k] };
                for si in 0..s {
                    assert_eq!(
                        bits(&yband[si * n..(si + 1) * n]),
                        bits(&w[si * o + r0..si * o + r1]),
                        "{what}"
                    );
                }
            }
            Ok(()) => {}
        }
    }
});
