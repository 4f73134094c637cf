//! `tetrad matmul` on a CFS1 (`cfse_pack`) container and the threaded CFS1 adapter: the fused
//! path equals dense int4-row matmul bit for bit, 1 and 2 threads agree, corrupt blobs write
//! nothing, formats other than int4-row are refused by name.
#![allow(clippy::cast_possible_truncation)]

use std::path::{Path, PathBuf};
use std::process::Command;

use tetrad::container::{Container, TensorView};
use tetrad_quant::adapter::{Acts, Cfs1Matrix};
use tetrad_quant::isa::{self, Isa};

const W: &str = "model.layers.0.mlp.experts.1.down_proj.weight";
const O: usize = 96;
const I: usize = 1001;

fn tetrad(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tetrad")).args(args).output().expect("runs");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A dense int4-row expert checkpoint, the same checkpoint with every shard CFS1-packed, and
/// `S × I` activations.
fn setup(t: &Path, s_rows: usize) -> (PathBuf, PathBuf, PathBuf) {
    let (input, cfs) = (t.join("in"), t.join("cfs"));
    tetrad::synth::write_expert_checkpoint(&input, 1, 2, O, I, 4).unwrap();
    std::fs::create_dir_all(&cfs).unwrap();
    let mut n = 0;
    for e in std::fs::read_dir(&input).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "safetensors") {
            tetrad::cfse::pack(&p, &cfs.join(p.file_name().unwrap()), &|_| {}).unwrap();
            n += 1;
        }
    }
    assert!(n > 0);
    let x: Vec<u8> =
        (0..s_rows * I).flat_map(|k| ((k as f32 * 0.37).sin()).to_le_bytes()).collect();
    let xp = t.join("x.f32");
    std::fs::write(&xp, x).unwrap();
    (input, cfs, xp)
}

fn matmul(dir: &Path, xp: &Path, out: &Path, threads: &str, i: &str) -> (i32, String) {
    let o = O.to_string();
    tetrad(&[
        "matmul",
        s(dir),
        W,
        "--o",
        &o,
        "--i",
        i,
        "--x",
        s(xp),
        "--out",
        s(out),
        "--threads",
        threads,
        "--json",
    ])
}

#[test]
fn cfs1_container_equals_dense_and_threads_agree() {
    let t = tempfile::tempdir().unwrap();
    for s_rows in [1usize, 3, 16] {
        let (input, cfs, xp) = setup(&t.path().join(format!("s{s_rows}")), s_rows);
        let c = Container::open(&cfs).unwrap();
        let view = c.tensor(W, O as u64, I as u64).unwrap();
        assert!(matches!(view, TensorView::Cfs1Int4Row { .. }), "{view:?}");
        let mut outs = Vec::new();
        for (dir, threads) in [(&input, "1"), (&cfs, "1"), (&cfs, "2")] {
            let out = t.path().join(format!(
                "y-{s_rows}-{}-{threads}.f32",
                dir.file_name().unwrap().to_string_lossy()
            ));
            let (code, text) = matmul(dir, &xp, &out, threads, &I.to_string());
            assert_eq!(code, 0, "{text}");
            if dir == &cfs {
                assert!(text.contains("CFS1"), "{text}");
            }
            let y = std::fs::read(&out).unwrap();
            assert_eq!(y.len(), 4 * s_rows * O);
            outs.push(y);
        }
        assert!(
            outs.iter().all(|y| y == &outs[0]),
            "dense, CFS1 with 1 and 2 threads agree bit for bit (S = {s_rows})"
        );
        let v: Vec<f32> =
            outs[0].chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
        assert!(v.iter().any(|&y| y != 0.0) && v.iter().all(|y| y.is_finite()));
    }
}

#[test]
fn cfs1_refusals_write_nothing() {
    let t = tempfile::tempdir().unwrap();
    let (_, cfs, xp) = setup(t.path(), 2);
    let out = t.path().join("y.f32");
    // Wrong I: rawlen does not fit O · ceil(I/2).
    let (code, text) = matmul(&cfs, &xp, &out, "1", "1003");
    assert_eq!(code, 1);
    assert!(text.contains("E_SHAPE") || text.contains("E_RAWLEN_MISMATCH"), "{text}");
    assert!(!out.exists());
    // A corrupted payload byte of W's blob: refused by the decoder (seal or truncation), no
    // output file, with either thread count.
    let shard = std::fs::read_dir(&cfs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let b = std::fs::read(p).unwrap();
            let h = tetrad::shard::ShardHeader::parse(&b, b.len() as u64).unwrap();
            h.tensor(W).is_some()
        })
        .unwrap();
    let mut bytes = std::fs::read(&shard).unwrap();
    let h = tetrad::shard::ShardHeader::parse(&bytes, bytes.len() as u64).unwrap();
    let e = h.tensor(W).unwrap();
    let at = (h.data_start + e.begin) as usize;
    assert_eq!(&bytes[at..at + 5], b"CFS1\x01", "W is a mode-1 blob");
    bytes[at + 49 + 1000] ^= 0x5A;
    std::fs::write(&shard, &bytes).unwrap();
    for threads in ["1", "2"] {
        let (code, text) = matmul(&cfs, &xp, &out, threads, &I.to_string());
        assert_eq!(code, 1, "{text}");
        assert!(
            ["E_FINAL_STATE", "E_LEFTOVER", "E_TRUNCATED"].iter().any(|c| text.contains(c)),
            "{text}"
        );
        assert!(!out.exists(), "threads {threads}: a refused matmul wrote {}", out.display());
    }
}

#[test]
fn cfs1_non_int4_row_tensor_is_refused_by_name() {
    // An int8-row weight [4, 64] with f32 scales, CFS1-packed: it resolves (int8-row) but a
    // CFS1 container can only be multiplied in place for int4-row weights.
    let t = tempfile::tempdir().unwrap();
    let w: Vec<u8> = (0..256u32).map(|k| (k * 37 % 251) as u8).collect();
    let qs: Vec<u8> = [0.5f32, 0.25, 1.0, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    let tensors = [
        tetrad::shard::OutTensor { name: "w", dtype: "U8", shape: &[4, 64], data: &w },
        tetrad::shard::OutTensor { name: "w.qs", dtype: "F32", shape: &[4], data: &qs },
    ];
    let plain = tetrad::shard::shard_bytes(
        &std::collections::BTreeMap::new(),
        &tensors,
        tetrad::shard::HeaderStyle::EscapedUnpadded,
    )
    .unwrap();
    let (inp, out) = (t.path().join("int8.safetensors"), t.path().join("int8.cfs.safetensors"));
    std::fs::write(&inp, plain).unwrap();
    tetrad::cfse::pack(&inp, &out, &|_| {}).unwrap();
    assert!(matches!(
        Container::open(&inp).unwrap().tensor("w", 4, 64).unwrap(),
        TensorView::Dense { .. }
    ));
    let e = Container::open(&out).unwrap().tensor("w", 4, 64).unwrap_err();
    assert_eq!(e.class.name(), "E_CFS1_FORMAT", "{e:?}");
    assert!(e.detail.contains("int8-row") && e.detail.contains("unpack"), "{e:?}");
}

/// The library pipeline: many tiles (2 KiB rows), 1 and 2 threads bit-identical to the
/// single-threaded adapter, f32 and several S; a damaged blob zero-fills y on both paths.
#[test]
fn cfs1_pipeline_threads_agree_and_zero_fill() {
    let (o, i) = (200usize, 4096usize);
    let (codes, scales) = tetrad::synth::int4_rows(o, i, tetrad::synth::Dist::Laplace, 3);
    let mut blob = vec![0u8; tetrad_fse::max_encoded_len(codes.len())];
    let n = tetrad_fse::encode_into(&codes, &mut blob).unwrap();
    blob.truncate(n);
    let m = Cfs1Matrix::new(&blob, &scales, o, i).unwrap();
    let isa: Isa = isa::best();
    for s_rows in [1usize, 3, 16] {
        let x: Vec<f32> = (0..s_rows * i).map(|k| ((k as f32) * 0.013).cos()).collect();
        let mut want = vec![0f32; s_rows * o];
        m.matmul_with(isa, (), Acts::F32 { x: &x, s: s_rows }, &mut want).unwrap();
        for threads in [1usize, 2, 3] {
            let mut y = vec![f32::NAN; s_rows * o];
            tetrad::adapter::matmul_cfs1(&m, isa, Acts::F32 { x: &x, s: s_rows }, &mut y, threads)
                .unwrap();
            assert_eq!(
                y.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                "S={s_rows} threads={threads}"
            );
        }
    }
    for at in [60usize, n / 2, n - 3] {
        let mut bad = blob.clone();
        bad[at] ^= 0x81;
        let m = Cfs1Matrix::new(&bad, &scales, o, i).unwrap();
        let x = vec![1.0f32; 16 * i];
        for threads in [1usize, 2] {
            let mut y = vec![5.0f32; 16 * o];
            let e =
                tetrad::adapter::matmul_cfs1(&m, isa, Acts::F32 { x: &x, s: 16 }, &mut y, threads)
                    .unwrap_err();
            assert!(e.class().starts_with("E_"), "{e}");
            assert!(y.iter().all(|&v| v.to_bits() == 0), "threads {threads}: y zero-filled");
        }
    }
}
