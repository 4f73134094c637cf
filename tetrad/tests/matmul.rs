//! `tetrad matmul` and the threaded adapter: compressed == dense bit for bit, threads agree,
//! corrupt records write nothing.
#![allow(clippy::cast_possible_truncation)]

use std::path::Path;
use std::process::Command;

use tetrad::packed::pack::{PackOptions, pack};

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

/// `tetrad matmul DIR W --o O --i I --x X --out OUT --threads N EXTRA…`.
fn matmul(dir: &Path, x: &Path, out: &Path, threads: &str, extra: &[&str]) -> (i32, String) {
    let (o, i) = (O.to_string(), I.to_string());
    let mut args =
        vec!["matmul", s(dir), W, "--o", &o, "--i", &i, "--x", s(x), "--out", s(out), "--threads"];
    args.push(threads);
    args.extend_from_slice(extra);
    tetrad(&args)
}

fn setup(t: &Path, s_rows: usize) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    let (input, packed) = (t.join("in"), t.join("packed"));
    tetrad::synth::write_expert_checkpoint(&input, 1, 2, O, I, 4).unwrap();
    pack(&PackOptions {
        indir: input.clone(),
        outdir: packed.clone(),
        layers: None,
        select: None,
        force: false,
        threads: Some(2),
        quiet: true,
    })
    .unwrap();
    let x: Vec<u8> =
        (0..s_rows * I).flat_map(|k| ((k as f32 * 0.37).sin()).to_le_bytes()).collect();
    let xp = t.join("x.f32");
    std::fs::write(&xp, x).unwrap();
    (input, packed, xp)
}

#[test]
fn compressed_equals_dense_and_threads_agree() {
    let t = tempfile::tempdir().unwrap();
    for s_rows in [1usize, 3, 16] {
        let (input, packed, xp) = setup(&t.path().join(format!("s{s_rows}")), s_rows);
        let mut outs = Vec::new();
        for (dir, threads) in [(&input, "1"), (&packed, "1"), (&packed, "2"), (&input, "2")] {
            let out = t.path().join(format!(
                "y-{s_rows}-{}-{threads}.f32",
                dir.file_name().unwrap().to_string_lossy()
            ));
            let (code, text) = matmul(dir, &xp, &out, threads, &[]);
            assert_eq!(code, 0, "{text}");
            let y = std::fs::read(&out).unwrap();
            assert_eq!(y.len(), 4 * s_rows * O);
            outs.push(y);
        }
        assert!(
            outs.iter().all(|y| y == &outs[0]),
            "dense, compressed, 1 and 2 threads agree bit for bit (S = {s_rows})"
        );
        let v: Vec<f32> =
            outs[0].chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
        assert!(v.iter().any(|&y| y != 0.0) && v.iter().all(|y| y.is_finite()));
    }
}

/// `--acts int8`: the record and the dense tensor give the same bits on 1 and 2 threads, close
/// to the f32 product (int8 activations round each value by at most half a step); f32 weights
/// have no int8 path and refuse it by name.
#[test]
fn int8_activations_compressed_equals_dense() {
    let t = tempfile::tempdir().unwrap();
    let (input, packed, xp) = setup(t.path(), 3);
    let run = |dir: &Path, threads: &str, acts: &str, name: &str| {
        let out = t.path().join(name);
        let (code, text) = matmul(dir, &xp, &out, threads, &["--acts", acts, "--json"]);
        assert_eq!(code, 0, "{text}");
        assert!(text.contains(&format!("\"acts\":\"{acts}\"")), "{text}");
        let y = std::fs::read(&out).unwrap();
        y.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect::<Vec<_>>()
    };
    let dense = run(&input, "1", "int8", "d1");
    assert_eq!(run(&packed, "1", "int8", "p1"), dense);
    assert_eq!(run(&packed, "2", "int8", "p2"), dense);
    assert_eq!(run(&input, "2", "int8", "d2"), dense);
    let exact = run(&input, "1", "f32", "f1");
    assert_ne!(exact, dense, "int8 activations are a different (rounded) product");
    for (a, b) in exact.iter().zip(&dense) {
        assert!((a - b).abs() <= 0.05 * a.abs().max(1.0), "{a} vs {b}");
    }
    // f32 weights: no int8 path.
    let f: Vec<u8> = (0..6u32).flat_map(|k| (k as f32).to_le_bytes()).collect();
    let ts = [tetrad::shard::OutTensor { name: "w", dtype: "F32", shape: &[3, 2], data: &f }];
    let plain = t.path().join("plain.safetensors");
    let bytes = tetrad::shard::shard_bytes(
        &std::collections::BTreeMap::new(),
        &ts,
        tetrad::shard::HeaderStyle::EscapedUnpadded,
    )
    .unwrap();
    std::fs::write(&plain, bytes).unwrap();
    let x2 = t.path().join("x2.f32");
    std::fs::write(&x2, [1f32, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>())
        .unwrap();
    let out = t.path().join("yf");
    let (code, text) = tetrad(&[
        "matmul",
        s(&plain),
        "w",
        "--o",
        "3",
        "--i",
        "2",
        "--x",
        s(&x2),
        "--out",
        s(&out),
        "--acts",
        "int8",
    ]);
    assert_eq!(code, 1, "{text}");
    assert!(text.starts_with("REFUSED E_") && text.contains(": w: "), "{text}");
    assert!(!out.exists());
}

#[test]
fn refusals_write_nothing() {
    let t = tempfile::tempdir().unwrap();
    let (_, packed, xp) = setup(t.path(), 2);
    let o = O.to_string();
    let i = I.to_string();
    let out = t.path().join("y.f32");
    // Wrong I: the record's nibble count does not fit.
    let (code, text) = tetrad(&[
        "matmul",
        s(&packed),
        W,
        "--o",
        &o,
        "--i",
        "1003",
        "--x",
        s(&xp),
        "--out",
        s(&out),
    ]);
    assert_eq!(code, 1);
    assert!(
        text.starts_with("REFUSED E_SHAPE") || text.starts_with("REFUSED E_COUNT_MISMATCH"),
        "{text}"
    );
    // Activations that are not a whole number of rows.
    let bad = t.path().join("bad.f32");
    std::fs::write(&bad, [0u8; 12]).unwrap();
    let (code, text) =
        tetrad(&["matmul", s(&packed), W, "--o", &o, "--i", &i, "--x", s(&bad), "--out", s(&out)]);
    assert_eq!(code, 1);
    assert!(text.starts_with("REFUSED E_SHAPE"), "{text}");
    // A corrupted record: refused by checked decode, no output file.
    let shard = packed.join("out-rans-00000.safetensors");
    let mut bytes = std::fs::read(&shard).unwrap();
    let h = tetrad::shard::ShardHeader::parse(&bytes, bytes.len() as u64).unwrap();
    let e = h.tensor(W).unwrap();
    let at = (h.data_start + e.begin) as usize + 1056 + 300;
    bytes[at] ^= 0x5A;
    std::fs::write(&shard, &bytes).unwrap();
    for threads in ["1", "2"] {
        let (code, text) = matmul(&packed, &xp, &out, threads, &[]);
        assert_eq!(code, 1, "{text}");
        assert!(
            text.starts_with("REFUSED E_STREAM_") || text.starts_with("REFUSED E_DECODE"),
            "{text}"
        );
        assert!(!out.exists());
    }
    // Forcing an arm this CPU lacks is refused, never downgraded.
    if let Some(missing) = tetrad_quant::isa::ALL.iter().find(|a| !a.is_available()) {
        let (code, text) = tetrad(&[
            "matmul",
            s(&packed),
            W,
            "--o",
            &o,
            "--i",
            &i,
            "--x",
            s(&xp),
            "--out",
            s(&out),
            "--isa",
            missing.name(),
        ]);
        assert_eq!(code, 1);
        assert!(text.starts_with("REFUSED E_PATH_UNAVAILABLE"), "{text}");
    }
}
