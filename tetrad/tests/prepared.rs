//! `PreparedTensor`: for every format a container holds (dense f32, int8-row, int4-row;
//! `int4-rans256-g0` records, `int4-rans64-t1` blobs of several chunks, CFS1 blobs) and every
//! available kernel arm, `matmul`, `matmul_rows` over row bands, `matmul_threads`,
//! `matmul_par` and `TensorView::matmul` all equal the dense kernel on the decoded bytes, bit
//! for bit; a corrupt source is refused with the outputs all zeros.
#![allow(clippy::cast_possible_truncation)]

use std::collections::BTreeMap;
use std::path::Path;

use tetrad::container::{Container, TensorView};
use tetrad::packed::pack::{PackOptions, pack};
use tetrad::prepared::PreparedTensor;
use tetrad::shard::{HeaderStyle, OutTensor, shard_bytes};
use tetrad_quant::adapter::Acts;
use tetrad_quant::isa::Isa;
use tetrad_quant::kernels::{Matrix, Scales, matmul_q8_with, matmul_with, quantize_activations};
use tetrad_quant::{Format, KernelError};

const W: &str = "model.layers.0.mlp.experts.1.down_proj.weight";
const O: usize = 96;
const I: usize = 1001;
/// The `int4-rans64-t1` tensor: 4 KiB chunks, 500-byte rows (chunks end inside rows).
const O64: usize = 40;
const I64: usize = 1000;

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Every container of the test, and the tensors in it: `(dir or file, name, o, i)`.
struct Fixture {
    _t: tempfile::TempDir,
    tensors: Vec<(std::path::PathBuf, String, usize, usize)>,
}

fn fixture() -> Fixture {
    let t = tempfile::tempdir().unwrap();
    let (input, packed, cfs) = (t.path().join("in"), t.path().join("packed"), t.path().join("cfs"));
    tetrad::synth::write_expert_checkpoint(&input, 1, 2, O, I, 4).unwrap();
    pack(&PackOptions {
        indir: input.clone(),
        outdir: packed.clone(),
        layers: None,
        select: None,
        force: false,
        threads: Some(1),
        quiet: true,
    })
    .unwrap();
    std::fs::create_dir_all(&cfs).unwrap();
    for e in std::fs::read_dir(&input).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "safetensors") {
            tetrad::cfse::pack(&p, &cfs.join(p.file_name().unwrap()), &|_| {}).unwrap();
        }
    }
    // Dense formats with other scale dtypes, and a multi-chunk int4-rans64-t1 blob.
    let bytes = |n: usize, seed: usize| -> Vec<u8> {
        (0..n).map(|k| ((k * 2_654_435_761 + seed * 97) >> 7) as u8).collect()
    };
    let f32w: Vec<f32> = (0..8 * 64).map(|k| ((k as f32) * 0.013).sin()).collect();
    let f32w = f32_bytes(&f32w);
    let i8w = bytes(24 * 200, 1);
    let bf16 = |v: f32| (v.to_bits() >> 16) as u16;
    let i8s: Vec<u8> = (0..24).flat_map(|r| bf16(0.01 + r as f32 * 1e-3).to_le_bytes()).collect();
    let i4w = bytes(20 * 150, 2);
    let i4s: Vec<u8> = (0..20).flat_map(|_| [0x1E, 0x20]).collect(); // f16 0.00903…
    let packed64 = tetrad::synth::int4_bytes(O64 * I64 / 2, 9);
    let blob = tetrad::rans64::encode_verified("r64", &packed64, 12).unwrap();
    let s64: Vec<f32> = (0..O64).map(|r| 0.02 + r as f32 * 1e-3).collect();
    let s64 = f32_bytes(&s64);
    let ts = [
        OutTensor { name: "f32w", dtype: "F32", shape: &[8, 64], data: &f32w },
        OutTensor { name: "i8w", dtype: "I8", shape: &[24, 200], data: &i8w },
        OutTensor { name: "i8w.qs", dtype: "BF16", shape: &[24], data: &i8s },
        OutTensor { name: "i4w", dtype: "U8", shape: &[20, 150], data: &i4w },
        OutTensor { name: "i4w.qs", dtype: "F16", shape: &[20], data: &i4s },
        OutTensor { name: "r64", dtype: "U8", shape: &[blob.len() as u64], data: &blob },
        OutTensor { name: "r64.qs", dtype: "F32", shape: &[O64 as u64], data: &s64 },
    ];
    let stamps = r#"{"i8w": "int8-row", "i4w": "int4-row", "r64": "int4-rans64-t1"}"#;
    let meta: BTreeMap<String, String> = [("colibri.fmt".to_owned(), stamps.to_owned())].into();
    let own = t.path().join("own.safetensors");
    std::fs::write(&own, shard_bytes(&meta, &ts, HeaderStyle::EscapedUnpadded).unwrap()).unwrap();
    let tensors = vec![
        (input, W.to_owned(), O, I),
        (packed, W.to_owned(), O, I),
        (cfs, W.to_owned(), O, I),
        (own.clone(), "f32w".to_owned(), 8, 64),
        (own.clone(), "i8w".to_owned(), 24, 200),
        (own.clone(), "i4w".to_owned(), 20, 300),
        (own, "r64".to_owned(), O64, I64),
    ];
    Fixture { _t: t, tensors }
}

/// The dense kernel's `y` on arm `isa` for the view's decoded bytes (compressed formats: as
/// int4-row with their scales), or the kernel's refusal class.
fn dense_want(v: &TensorView<'_>, isa: Isa, acts: Acts<'_>) -> Result<Vec<f32>, &'static str> {
    let (o, i) = v.shape();
    let (o, i) = (o as usize, i as usize);
    let mut decoded = vec![0u8; v.decoded_len() as usize];
    v.decode_into(&mut decoded).unwrap();
    let widened;
    let (format, scales, gs) = match v {
        TensorView::Dense { resolved, scales, .. } => {
            widened = scales.and_then(|s| s.to_f32());
            let sc = match (scales, &widened) {
                (None, _) => Scales::None,
                (Some(_), Some(f)) => Scales::F32(f),
                (Some(st), None) => Scales::Ue8m0(st.bytes),
            };
            (resolved.format, sc, resolved.group_size.map_or(0, |g| g as usize))
        }
        TensorView::Rans256 { scales, .. } | TensorView::Rans64 { scales, .. } => {
            widened = scales.to_f32();
            (Format::Int4Row, Scales::F32(widened.as_deref().unwrap()), 0)
        }
        TensorView::Cfs1Int4Row { scales, .. } => (Format::Int4Row, Scales::F32(scales), 0),
    };
    let m = Matrix::new(format, &decoded, scales, o, i, gs).unwrap();
    let mut y = vec![0f32; acts.s() * o];
    let r: Result<(), KernelError> = match acts {
        Acts::F32 { x, s } => matmul_with(isa, &m, x, s, &mut y),
        Acts::Q8(q) => matmul_q8_with(isa, &m, q, &mut y),
    };
    r.map(|()| y).map_err(|e| e.class())
}

/// Every way of multiplying a prepared tensor gives `want` (or its refusal class).
fn check_prepared(
    p: &PreparedTensor<'_>,
    acts: Acts<'_>,
    want: &Result<Vec<f32>, &'static str>,
    what: &str,
) {
    let (o, _) = p.shape();
    let s = acts.s();
    let want_bits = want.as_ref().map(|y| bits(y)).map_err(|c| *c);
    let mut y = vec![f32::NAN; s * o];
    let got = p.matmul(acts, &mut y).map(|()| bits(&y)).map_err(|e| e.class.name());
    assert_eq!(got, want_bits, "matmul {what}");
    // Twice: the held scratch gives the same bits again.
    let got = p.matmul(acts, &mut y).map(|()| bits(&y)).map_err(|e| e.class.name());
    assert_eq!(got, want_bits, "matmul again {what}");
    for threads in [2, 3] {
        let mut y = vec![f32::NAN; s * o];
        let got =
            p.matmul_threads(acts, &mut y, threads).map(|()| bits(&y)).map_err(|e| e.class.name());
        assert_eq!(got, want_bits, "matmul_threads {threads} {what}");
    }
    let mut y = vec![f32::NAN; s * o];
    let got = p.matmul_par(acts, &mut y).map(|()| bits(&y)).map_err(|e| e.class.name());
    assert_eq!(got, want_bits, "matmul_par {what}");
    let Ok(want) = want else { return };
    // Row bands, at split points and elsewhere, each with its own scratch.
    let split = p.row_split().unwrap_or(o);
    let cuts = [0, 1, split.min(o), o / 3, o / 2 + 1, o - 1, o];
    let mut scratch = p.scratch();
    for a in 0..cuts.len() {
        for b in a..cuts.len() {
            let (r0, r1) = (cuts[a], cuts[b]);
            if r0 > r1 {
                continue;
            }
            let n = r1 - r0;
            let mut yb = vec![f32::NAN; s * n];
            p.matmul_rows(r0..r1, acts, &mut yb, &mut scratch).unwrap();
            for si in 0..s {
                assert_eq!(
                    bits(&yb[si * n..(si + 1) * n]),
                    bits(&want[si * o + r0..si * o + r1]),
                    "band {r0}..{r1} {what}"
                );
            }
        }
    }
}

#[test]
fn prepared_equals_dense_on_the_decoded_bytes_for_every_format_and_arm() {
    let f = fixture();
    let mut seen = std::collections::BTreeSet::new();
    for (path, name, o, i) in &f.tensors {
        let c = Container::open(path).unwrap();
        let v = c.tensor(name, *o as u64, *i as u64).unwrap();
        let format = v.format();
        seen.insert(format.name());
        let mut decoded = vec![0u8; v.decoded_len() as usize];
        v.decode_into(&mut decoded).unwrap();
        for isa in tetrad_quant::isa::available() {
            let p = c.prepare(name, *o as u64, *i as u64).unwrap().with_isa(isa).unwrap();
            assert_eq!(p.format(), format);
            let mut back = vec![0u8; decoded.len()];
            p.decode_into(&mut back).unwrap();
            assert_eq!(back, decoded, "decode_into {name}");
            for s in [1usize, 3, 16] {
                let x: Vec<f32> = (0..s * i).map(|k| ((k as f32) * 0.37).sin()).collect();
                let acts = Acts::F32 { x: &x, s };
                let want = dense_want(&v, isa, acts);
                assert!(want.is_ok(), "{name} {isa:?}: {want:?}");
                let what = format!("{name} {} {isa:?} S={s} f32", format.name());
                check_prepared(&p, acts, &want, &what);
                // The per-call path, and a view prepared by borrowing, agree.
                let mut y = vec![f32::NAN; s * o];
                let how = v.matmul(name, isa, &x, s, &mut y, 1).unwrap();
                assert_eq!(how, p.how());
                assert_eq!(bits(&y), bits(want.as_ref().unwrap()), "TensorView::matmul {what}");
                let b = v.prepare(name).unwrap().with_isa(isa).unwrap();
                check_prepared(&b, acts, &want, &what);
                // int8 activations where the format has an int8 path (the kernel's refusal
                // class otherwise).
                let (mut q, mut qs) = (vec![0i8; s * i], vec![0f32; s]);
                let xq = quantize_activations(&x, s, *i, &mut q, &mut qs).unwrap();
                let acts = Acts::Q8(&xq);
                let want = dense_want(&v, isa, acts);
                check_prepared(&p, acts, &want, &format!("{name} {isa:?} S={s} q8"));
            }
        }
        // Shapes that do not match are refused by name.
        let p = c.prepare(name, *o as u64, *i as u64).unwrap();
        let x = vec![0.5f32; *i];
        let mut y = vec![0f32; o + 1];
        let e = p.matmul(Acts::F32 { x: &x, s: 1 }, &mut y).unwrap_err();
        assert_eq!(e.class.name(), "E_KERNEL_LENGTH", "{name}: {e:?}");
    }
    let want = ["f32", "int4-rans256-g0", "int4-rans64-t1", "int4-row", "int8-row"];
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), want);
}

#[test]
fn rans64_splits_at_chunk_rows_and_sequential_sources_do_not() {
    let f = fixture();
    for (path, name, o, i) in &f.tensors {
        let c = Container::open(path).unwrap();
        let p = c.prepare(name, *o as u64, *i as u64).unwrap();
        let split = p.row_split();
        match p.format() {
            // 4096-byte chunks of 500-byte rows.
            Format::Int4Rans64T1 => assert_eq!(split, Some(9), "{name}"),
            Format::Int4Rans256G0 => assert_eq!(split, None),
            Format::Int4Row if path.ends_with("cfs") => assert_eq!(split, None),
            _ => assert_eq!(split, Some(1), "{name}"),
        }
    }
}

/// Flips a byte in the middle of tensor `name`'s data in shard `path`.
fn damage(path: &Path, name: &str) {
    let mut bytes = std::fs::read(path).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    let off = &header[name]["data_offsets"];
    let (a, b) = (off[0].as_u64().unwrap() as usize, off[1].as_u64().unwrap() as usize);
    bytes[8 + n + a + (b - a) / 2] ^= 0x24;
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn corrupt_sources_are_refused_with_zeroed_outputs() {
    let f = fixture();
    let x = vec![0.5f32; 3 * I];
    let acts = Acts::F32 { x: &x, s: 3 };
    for dir in ["packed", "cfs"] {
        let (path, ..) = f.tensors.iter().find(|t| t.0.ends_with(dir)).unwrap();
        let shard = std::fs::read_dir(path)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                p.extension().is_some_and(|x| x == "safetensors")
                    && std::fs::read(p).unwrap().windows(W.len()).any(|w| w == W.as_bytes())
            })
            .unwrap();
        damage(&shard, W);
        let c = Container::open(path).unwrap();
        let p = c.prepare(W, O as u64, I as u64).unwrap();
        let mut y = vec![7f32; 3 * O];
        let e = p.matmul(acts, &mut y).unwrap_err();
        assert!(e.class.name().starts_with("E_") && e.detail.contains(W), "{dir}: {e:?}");
        assert!(y.iter().all(|&v| v.to_bits() == 0), "{dir}: y zero-filled");
        let mut y = vec![7f32; 3 * O];
        assert_eq!(p.matmul_threads(acts, &mut y, 2).unwrap_err().class, e.class);
        assert!(y.iter().all(|&v| v.to_bits() == 0), "{dir}: y zero-filled, 2 threads");
        let mut y = vec![7f32; 3 * O];
        assert!(p.matmul_par(acts, &mut y).is_err());
        assert!(y.iter().all(|&v| v.to_bits() == 0), "{dir}: y zero-filled, rayon");
    }
    // A damaged int4-rans64-t1 chunk is refused when the tensor is prepared.
    let (own, ..) = f.tensors.iter().find(|t| t.1 == "r64").unwrap();
    damage(own, "r64");
    let c = Container::open(own).unwrap();
    let e = c.prepare("r64", O64 as u64, I64 as u64).unwrap_err();
    assert_eq!(e.class.name(), "E_CHECKSUM", "{e:?}");
}
