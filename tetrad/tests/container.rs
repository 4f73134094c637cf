//! `Container`: stamp-gated dispatch, typed views, stamp conflicts; and `tetrad inspect`.
#![allow(clippy::cast_possible_truncation)]

use std::collections::BTreeMap;
use std::process::Command;

use tetrad::container::{Container, TensorView};
use tetrad::packed::pack::{PackOptions, pack};
use tetrad::shard::{HeaderStyle, OutTensor, shard_bytes};
use tetrad_quant::Format;
use tetrad_quant::adapter::Acts;

const W: &str = "model.layers.0.mlp.experts.1.up_proj.weight";

/// `in/`: a one-shard checkpoint of two experts' `[o, i]` int4-row weights; `packed/`: it as
/// `int4-rans256-g0` records.
fn checkpoint_and_records(
    t: &tempfile::TempDir,
    o: usize,
    i: usize,
    seed: u64,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let (input, packed) = (t.path().join("in"), t.path().join("packed"));
    tetrad::synth::write_expert_checkpoint(&input, 1, 2, o, i, seed).unwrap();
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
    (input, packed)
}

#[test]
fn records_and_dense_weights_decode_to_the_same_bytes() {
    let t = tempfile::tempdir().unwrap();
    let (input, packed) = checkpoint_and_records(&t, 32, 777, 9);

    let dense = Container::open(&input).unwrap();
    let coded = Container::open(&packed.join("out-rans-00000.safetensors")).unwrap();
    let d = dense.tensor(W, 32, 777).unwrap();
    let c = coded.tensor(W, 32, 777).unwrap();
    assert_eq!(d.format(), Format::Int4Row);
    assert_eq!(c.format(), Format::Int4Rans256G0);
    assert!(matches!(c, TensorView::Rans256 { .. }));
    let mut a = vec![0u8; d.decoded_len() as usize];
    let mut b = vec![0u8; c.decoded_len() as usize];
    d.decode_into(&mut a).unwrap();
    c.decode_into(&mut b).unwrap();
    assert_eq!(a, b);
    assert_eq!(c.decode_into(&mut b[1..]).unwrap_err().class.name(), "E_OUTPUT_LEN");

    // The record's nibble count must match the caller's [O, I].
    assert_eq!(coded.tensor(W, 32, 779).unwrap_err().class.name(), "E_COUNT_MISMATCH");
    assert_eq!(coded.tensor(W, 31, 777).unwrap_err().class.name(), "E_SCALE_COUNT");
    assert_eq!(coded.tensor("nope", 1, 1).unwrap_err().class.name(), "E_TENSOR_MISSING");
    // Unstamped U8 weights are never presumed entropy-coded: a record read without its stamp
    // resolves by byte arithmetic only, and here nothing fits.
    assert!(dense.tensor(W, 32, 100).is_err());
}

/// `TensorView::matmul`, the engine's one call: the record's product is the dense tensor's bit
/// for bit on every thread count; wrong shapes and a corrupt record are named refusals, the
/// corrupt record's output all zeros.
#[test]
fn tensor_views_multiply_whatever_their_format() {
    let t = tempfile::tempdir().unwrap();
    let (input, packed) = checkpoint_and_records(&t, 96, 777, 4);
    let (o, i, s) = (96usize, 777usize, 3usize);
    let x: Vec<f32> = (0..s * i).map(|k| ((k * 37 % 101) as f32 - 50.0) / 25.0).collect();
    let isa = tetrad_quant::isa::best();
    let dense = Container::open(&input).unwrap();
    let coded = Container::open(&packed).unwrap();
    let d = dense.tensor(W, o as u64, i as u64).unwrap();
    let c = coded.tensor(W, o as u64, i as u64).unwrap();
    assert_eq!(d.shape(), (96, 777));
    let mut yd = vec![f32::NAN; s * o];
    assert_eq!(d.matmul(W, isa, &x, s, &mut yd, 1).unwrap(), "int4-row");
    for threads in [1, 2, 3] {
        let mut yc = vec![f32::NAN; s * o];
        let how = c.matmul(W, isa, &x, s, &mut yc, threads).unwrap();
        assert_eq!(how, "int4-rans256-g0 (fused decode + int4-row kernel)");
        assert_eq!(
            yc.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            yd.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "{threads} threads"
        );
        let mut yb = vec![0f32; s * o];
        assert_eq!(d.matmul(W, isa, &x, s, &mut yb, threads).unwrap(), "int4-row");
        assert_eq!(yb, yd, "dense in {threads} bands");
    }
    // int8-quantized activations: exact integer dot products, the record's equal to dense.
    let (mut q, mut sx) = (vec![0i8; s * i], vec![0f32; s]);
    let xq = tetrad_quant::kernels::quantize_activations(&x, s, i, &mut q, &mut sx).unwrap();
    let mut yq = vec![f32::NAN; s * o];
    d.matmul_acts(W, isa, Acts::Q8(&xq), &mut yq, 1).unwrap();
    for threads in [1, 2, 3] {
        let mut yc = vec![f32::NAN; s * o];
        c.matmul_acts(W, isa, Acts::Q8(&xq), &mut yc, threads).unwrap();
        assert_eq!(yc, yq, "q8, {threads} threads");
        d.matmul_acts(W, isa, Acts::Q8(&xq), &mut yc, threads).unwrap();
        assert_eq!(yc, yq, "q8 dense in {threads} bands");
    }
    // Shapes: y one short, x one short — refused by name, for both kinds of view.
    for v in [&d, &c] {
        let mut short = vec![0f32; s * o - 1];
        let e = v.matmul(W, isa, &x, s, &mut short, 2).unwrap_err();
        assert_eq!(e.class.name(), "E_KERNEL_LENGTH", "{e}");
        assert!(e.detail.starts_with(&format!("{W}: ")), "{e}");
        assert!(e.detail.ends_with("y has 287 elements, expected 288"), "{e}");
        let mut y = vec![0f32; s * o];
        let e = v.matmul(W, isa, &x[1..], s, &mut y, 1).unwrap_err();
        assert_eq!(e.class.name(), "E_KERNEL_LENGTH", "{e}");
    }
    // A format without an int8 path (plain f32 weights) refuses int8 activations by name.
    let f: Vec<u8> = (0..6u32).flat_map(|k| (k as f32).to_le_bytes()).collect();
    let ts = [OutTensor { name: "w", dtype: "F32", shape: &[3, 2], data: &f }];
    let plain = t.path().join("plain.safetensors");
    std::fs::write(
        &plain,
        shard_bytes(&BTreeMap::new(), &ts, HeaderStyle::EscapedUnpadded).unwrap(),
    )
    .unwrap();
    let pc = Container::open(&plain).unwrap();
    let pv = pc.tensor("w", 3, 2).unwrap();
    let (mut q2, mut s2) = (vec![0i8; 2], vec![0f32; 1]);
    let xq2 =
        tetrad_quant::kernels::quantize_activations(&[1.0, 2.0], 1, 2, &mut q2, &mut s2).unwrap();
    let mut y3 = vec![0f32; 3];
    let e = pv.matmul_acts("w", isa, Acts::Q8(&xq2), &mut y3, 2).unwrap_err();
    assert!(e.class.name().starts_with("E_") && e.detail.starts_with("w: "), "{e}");
    assert_eq!(pv.matmul("w", isa, &[1.0, 2.0], 1, &mut y3, 2).unwrap(), "f32");
    assert_eq!(y3, [2.0, 8.0, 14.0]);
    // A corrupt record: a named decoder refusal and nothing partial in y.
    let shard = packed.join("out-rans-00000.safetensors");
    let mut bytes = std::fs::read(&shard).unwrap();
    let h = tetrad::shard::ShardHeader::parse(&bytes, bytes.len() as u64).unwrap();
    let e = h.tensor(W).unwrap();
    let at = (h.data_start + e.begin) as usize + (e.len() as usize) / 2;
    bytes[at] ^= 0x5A;
    std::fs::write(&shard, &bytes).unwrap();
    let coded = Container::open(&packed).unwrap();
    let c = coded.tensor(W, o as u64, i as u64).unwrap();
    let mut y = vec![f32::NAN; s * o];
    let e = c.matmul(W, isa, &x, s, &mut y, 2).unwrap_err();
    assert!(e.class.name().starts_with("E_"), "{e}");
    assert!(y.iter().all(|&v| v == 0.0), "{e}");
}

fn shard_with_stamp(path: &std::path::Path, stamp: &str) {
    let w = vec![0x88u8; 4 * 8];
    let qs = vec![0u8; 16];
    let ts = [
        OutTensor { name: "a", dtype: "U8", shape: &[4, 8], data: &w },
        OutTensor { name: "a.qs", dtype: "F32", shape: &[4], data: &qs },
    ];
    let meta: BTreeMap<String, String> =
        [("colibri.fmt".to_owned(), format!("{{\"a\": \"{stamp}\"}}"))].into();
    std::fs::write(path, shard_bytes(&meta, &ts, HeaderStyle::EscapedUnpadded).unwrap()).unwrap();
}

#[test]
fn stamps_are_trusted_verified_and_conflicts_refused() {
    let t = tempfile::tempdir().unwrap();
    shard_with_stamp(&t.path().join("a.safetensors"), "int4-row");
    let c = Container::open(&t.path().join("a.safetensors")).unwrap();
    assert_eq!(c.tensor("a", 4, 16).unwrap().format(), Format::Int4Row);
    // The stamp says int4-row; bytes read as int8-row [4, 8] disagree with it: refused.
    let e = c.tensor("a", 4, 8).unwrap_err();
    assert!(e.class.name().starts_with("E_"), "{e}");
    shard_with_stamp(&t.path().join("b.safetensors"), "int8-row");
    let e = Container::open(t.path()).unwrap_err();
    assert_eq!(e.class.name(), "E_STAMP_CONFLICT");
    assert!(e.detail.contains("int4-row") && e.detail.contains("int8-row"), "{e}");
}

#[test]
fn inspect_reports_formats() {
    let t = tempfile::tempdir().unwrap();
    let (input, packed) = (t.path().join("in"), t.path().join("packed"));
    tetrad::synth::write_expert_checkpoint(&input, 1, 1, 16, 256, 2).unwrap();
    pack(&PackOptions {
        indir: input.clone(),
        outdir: packed.clone(),
        layers: None,
        select: None,
        force: false,
        threads: None,
        quiet: true,
    })
    .unwrap();
    let run = |p: &std::path::Path| {
        let o = Command::new(env!("CARGO_BIN_EXE_tetrad")).arg("inspect").arg(p).output().unwrap();
        (o.status.code().unwrap(), String::from_utf8(o.stdout).unwrap())
    };
    let (code, out) = run(&packed.join("out-rans-00000.safetensors"));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("int4-rans256-g0 (stamped): 4096 nibbles"), "{out}");
    assert!(out.contains("metadata colibri.int4-rans256-g0.table: scale_bits 14, crc32 "), "{out}");
    let (code, out) = run(&input.join("model-00001-of-00001.safetensors"));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("readings; O = 16, I not stored: int8-row if I = 128 | int4-row if I = 255 or 256 | int2-row if I = 509 … 512"), "{out}");
    assert!(out.contains("scales of model.layers.0.mlp.experts.0.up_proj.weight"), "{out}");
    let (code, out) = run(&t.path().join("missing.safetensors"));
    assert_eq!(code, 1);
    assert!(out.starts_with("REFUSED E_IO"), "{out}");

    // A plain float matrix (no scales, no stamp) is no quantized weight: "-", not a refusal;
    // a control character in a name is escaped, so every tensor stays on its own line.
    let plain = t.path().join("plain.safetensors");
    let f = vec![0u8; 4 * 6];
    let tensors = [
        OutTensor { name: "norm\nweight", dtype: "F32", shape: &[2, 3], data: &f },
        OutTensor { name: "w", dtype: "F32", shape: &[3, 2], data: &f },
    ];
    std::fs::write(
        &plain,
        shard_bytes(&BTreeMap::new(), &tensors, HeaderStyle::EscapedUnpadded).unwrap(),
    )
    .unwrap();
    let (code, out) = run(&plain);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.lines().count(), 3, "{out}");
    assert!(out.contains("  norm\\u{a}weight F32 [2, 3] 24 bytes: -\n"), "{out}");
    assert!(out.contains("  w F32 [3, 2] 24 bytes: -\n"), "{out}");
    assert!(!out.contains("REFUSED"), "{out}");

    // 24 stored columns: I = 24 (int8-row), 47 or 48 (int4-row), 93 … 96 (int2-row) and, in
    // one int3-g64 group, every other I up to 64; stamped int3-g64, only the last.
    let w = vec![0x44u8; 8 * 24];
    let qs: Vec<u8> = (0..8).flat_map(|_| 1.0f32.to_le_bytes()).collect();
    let ts = [
        OutTensor { name: "w", dtype: "U8", shape: &[8, 24], data: &w },
        OutTensor { name: "w.qs", dtype: "F32", shape: &[8], data: &qs },
    ];
    let g = t.path().join("g.safetensors");
    std::fs::write(&g, shard_bytes(&BTreeMap::new(), &ts, HeaderStyle::EscapedUnpadded).unwrap())
        .unwrap();
    let (code, out) = run(&g);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("  w U8 [8, 24] 192 bytes: readings; O = 8, I not stored: int3-g64 if I = 1 … 23, 25 … 46, 49 … 64 | int8-row if I = 24 | int4-row if I = 47 or 48 | int2-row if I = 93 … 96\n"), "{out}");
    let meta: BTreeMap<String, String> =
        [("colibri.fmt".to_owned(), "{\"w\": \"int3-g64\"}".to_owned())].into();
    std::fs::write(&g, shard_bytes(&meta, &ts, HeaderStyle::EscapedUnpadded).unwrap()).unwrap();
    let (code, out) = run(&g);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("  w U8 [8, 24] 192 bytes: one reading (stamped, verified); O = 8, I not stored: int3-g64 if I = 1 … 64\n"), "{out}");
}

#[test]
fn scale_dtype_must_fit_the_resolved_format() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("m.safetensors");
    let w = vec![0x88u8; 4 * 8];
    let qs = vec![0x3Fu8; 16];
    // Byte counts say int4-row [4, 16] (16 scale bytes = 4 f32), but the scales are U8.
    let ts = [
        OutTensor { name: "a", dtype: "U8", shape: &[4, 8], data: &w },
        OutTensor { name: "a.qs", dtype: "U8", shape: &[16], data: &qs },
    ];
    std::fs::write(&p, shard_bytes(&BTreeMap::new(), &ts, HeaderStyle::EscapedUnpadded).unwrap())
        .unwrap();
    let c = Container::open(&p).unwrap();
    assert_eq!(c.tensor("a", 4, 16).unwrap_err().class.name(), "E_SCALE_DTYPE");
}

/// An unstamped F32 tensor without scales, asked for as its own shape, is plain f32 weights
/// (the dtype says so; byte counts alone resolve f32 only through a stamp); any other shape,
/// or a stamp, goes through the usual checks.
#[test]
fn plain_f32_weights_need_no_stamp() {
    let t = tempfile::tempdir().unwrap();
    let path = t.path().join("f.safetensors");
    let w: Vec<u8> = (0..15).flat_map(|k| (k as f32 * 0.25 - 1.0).to_le_bytes()).collect();
    let tensors = [OutTensor { name: "w", dtype: "F32", shape: &[3, 5], data: &w }];
    std::fs::write(
        &path,
        shard_bytes(&BTreeMap::new(), &tensors, HeaderStyle::EscapedUnpadded).unwrap(),
    )
    .unwrap();
    let c = Container::open(&path).unwrap();
    let v = c.tensor("w", 3, 5).unwrap();
    assert_eq!(v.format(), Format::F32);
    assert_eq!(v.decoded_len(), 60);
    let e = c.tensor("w", 5, 3).unwrap_err();
    assert!(e.class.name().starts_with("E_"), "{e:?}");
    assert_ne!(c.tensor("w", 1, 15).map(|v| v.format()).ok(), Some(Format::F32));
}
