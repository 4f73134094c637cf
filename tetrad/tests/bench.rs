//! `tetrad bench --json`: the documented schema (docs/CLI.md), on a tiny input so the test
//! stays fast. No speed is asserted (speed targets are criterion's job).

use std::process::Command;

use serde_json::Value;

fn bench(args: &[&str]) -> (Option<i32>, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_tetrad")).arg("bench").args(args).output().unwrap();
    (o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned())
}

#[test]
fn json_schema_of_all() {
    let (code, out) = bench(&["--json", "--mib", "1", "all"]);
    assert_eq!(code, Some(0), "{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let m = &v["machine"];
    for k in
        ["cpu", "cores", "rustc", "date", "arch", "profile", "rans_arms", "kernel_isas", "libzstd"]
    {
        assert!(m.get(k).is_some(), "machine.{k} missing");
    }
    assert!(m["cores"].as_u64().unwrap() >= 1);
    let results = v["results"].as_array().unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for r in results {
        let what = r["what"].as_str().unwrap();
        assert!(r["arm"].is_string() && r["threads"].as_u64().unwrap() >= 1, "{r}");
        assert!(r["bytes"].as_u64().unwrap() > 0, "{r}");
        assert!(r["runs"].as_u64().unwrap() >= 5, "{r}");
        let rate = match what {
            "decode" | "encode" => {
                assert!(r["codec"].is_string(), "{r}");
                if r["codec"] == "zstd" {
                    assert!(r["level"].is_u64() && r["zstd"].is_string(), "{r}");
                }
                "gnib_per_s"
            }
            // The headline's pair, timed alternately.
            "paired" => {
                assert!(r["zstd"].is_string() && r["version"].is_u64(), "{r}");
                assert!(r["zstd_gnib_per_s"].as_f64().unwrap() > 0.0, "{r}");
                "gnib_per_s"
            }
            "read_bandwidth" => "gbytes_per_s",
            "kernel" => {
                assert!(r["format"].is_string() && r["batch"].is_u64(), "{r}");
                assert!(matches!(r["resident"].as_str(), Some("l2" | "dram")), "{r}");
                "gweights_per_s"
            }
            "adapter" => {
                assert!(
                    matches!(
                        r["format"].as_str(),
                        Some("int4-rans256-g0" | "int4-rans64-t1" | "cfs1")
                    ),
                    "{r}"
                );
                assert!(r["decode_arm"].is_string() && r["batch"].is_u64(), "{r}");
                assert!(matches!(r["mode"].as_str(), Some("f32" | "q8")), "{r}");
                // One-thread records carry the adapter's batch-1 and batch-16 ratios and the times behind them.
                let ratios = ["of_decode", "of_dense", "decode_median_s", "dense_median_s"];
                if r["threads"] == 1 {
                    assert!(ratios.iter().all(|k| r[k].as_f64().unwrap() > 0.0), "{r}");
                } else {
                    assert!(ratios.iter().all(|k| r.get(k).is_none()), "{r}");
                }
                "gweights_per_s"
            }
            other => panic!("unexpected what {other}"),
        };
        assert!(r[rate].as_f64().unwrap() > 0.0, "{r}");
        seen.insert((what.to_owned(), r["codec"].as_str().unwrap_or("").to_owned()));
    }
    for (w, c) in [
        ("decode", "int4-rans256-g0"),
        ("encode", "int4-rans256-g0"),
        ("decode", "cfs1"),
        ("encode", "int4-rans64-t1"),
        ("decode", "int4-rans64-t1"),
        ("decode", "zstd"),
        ("read_bandwidth", ""),
        ("kernel", ""),
        ("adapter", ""),
    ] {
        assert!(seen.contains(&(w.to_owned(), c.to_owned())), "no {w} {c} in {seen:?}");
    }
    // Every codec × batch × mode × threads combination of the adapters, once.
    type Combo = (String, u64, String, u64);
    let adapter: std::collections::BTreeSet<Combo> = results
        .iter()
        .filter(|r| r["what"] == "adapter")
        .map(|r| {
            let format = r["format"].as_str().unwrap().to_owned();
            let mode = r["mode"].as_str().unwrap().to_owned();
            (format, r["batch"].as_u64().unwrap(), mode, r["threads"].as_u64().unwrap())
        })
        .collect();
    let want: std::collections::BTreeSet<Combo> = ["int4-rans256-g0", "int4-rans64-t1", "cfs1"]
        .into_iter()
        .flat_map(|f| [1, 16].map(move |b| (f, b)))
        .flat_map(|(f, b)| ["f32", "q8"].map(move |m| (f, b, m)))
        .flat_map(|(f, b, m)| [1, 2].map(move |t| (f.to_owned(), b, m.to_owned(), t)))
        .collect();
    assert_eq!(adapter, want);
    assert_eq!(results.iter().filter(|r| r["what"] == "adapter").count(), want.len());
    // zstd at every setting, and the headline against the fastest-decoding and the smallest
    // frame, naming libzstd's version.
    let levels: std::collections::BTreeSet<&str> = results
        .iter()
        .filter(|r| r["what"] == "decode" && r["codec"] == "zstd")
        .map(|r| r["zstd"].as_str().unwrap())
        .collect();
    assert_eq!(levels, ["-1", "-3", "-19", "-22", "-19 --long"].into_iter().collect());
    let h = &v["headline"];
    assert_eq!(h["codec"], "int4-rans64-t1", "{h}");
    assert_eq!(h["libzstd"], m["libzstd"], "{h}");
    let zstd_decodes: Vec<&Value> =
        results.iter().filter(|r| r["what"] == "decode" && r["codec"] == "zstd").collect();
    let fastest = zstd_decodes
        .iter()
        .max_by(|a, b| {
            a["gnib_per_s"].as_f64().unwrap().total_cmp(&b["gnib_per_s"].as_f64().unwrap())
        })
        .unwrap();
    assert_eq!(h["fastest_zstd"]["zstd"], fastest["zstd"], "{h}");
    let smallest = zstd_decodes.iter().map(|r| r["compressed_bytes"].as_u64().unwrap()).min();
    assert_eq!(h["smallest_zstd"]["compressed_bytes"].as_u64(), smallest, "{h}");
    let ratio = h["fastest_zstd"]["speed_ratio"].as_f64().unwrap();
    let want_ratio = h["gnib_per_s"].as_f64().unwrap() / fastest["gnib_per_s"].as_f64().unwrap();
    assert!((ratio - want_ratio).abs() <= 1e-9 * want_ratio, "{h}");
    // The same pair timed alternately: the headline's arm against the fastest zstd frame.
    let p = &h["paired"];
    assert_eq!(p["zstd"], fastest["zstd"], "{h}");
    assert_eq!(p["arm"], h["arm"], "{h}");
    let ratio = p["speed_ratio"].as_f64().unwrap();
    let want_ratio = p["gnib_per_s"].as_f64().unwrap() / p["zstd_gnib_per_s"].as_f64().unwrap();
    assert!((ratio - want_ratio).abs() <= 1e-9 * want_ratio, "{h}");
}

#[test]
fn forced_arm_and_refusals() {
    let (code, out) = bench(&["--json", "--mib", "1", "--isa", "scalar-bf", "codecs"]);
    assert_eq!(code, Some(0), "{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let decodes: Vec<&Value> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["what"] == "decode" && r["codec"] == "int4-rans256-g0")
        .collect();
    assert_eq!(decodes.len(), 1);
    assert_eq!(decodes[0]["arm"], "scalar-bf");
    // int4-rans64-t1 has no arm of that name: its decode is skipped, and said so.
    let results = v["results"].as_array().unwrap();
    assert!(!results.iter().any(|r| r["what"] == "decode" && r["codec"] == "int4-rans64-t1"));
    let skipped = v["unavailable"].as_array().unwrap();
    assert!(
        skipped.iter().any(|u| u["what"] == "decode" && u["codec"] == "int4-rans64-t1"),
        "{skipped:?}"
    );
    // Its encode (which the decodes need) runs on another arm, and says which.
    let enc = skipped
        .iter()
        .find(|u| u["what"] == "encode" && u["codec"] == "int4-rans64-t1")
        .expect("the encode's arm is named");
    let reason = enc["reason"].as_str().unwrap();
    assert!(reason.starts_with("int4-rans64-t1 has no encode arm named \"scalar-bf\"; ran on "));
    let (code, out) = bench(&["--isa", "no-such-arm", "codecs"]);
    assert_eq!(code, Some(2), "an unknown arm name is a usage error");
    assert!(out.starts_with("REFUSED E_ARM_UNKNOWN:"), "{out}");
    let (code, out) = bench(&["--mib", "1", "--isa", "scalar", "adapter"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("adapter int4-rans256-g0 [scalar x1 batch 1 f32]"), "{out}");
    assert!(out.contains("x the standalone decode's speed"), "{out}");
    assert!(out.contains("adapter int4-rans64-t1 [scalar x1 batch 16 q8]"), "{out}");
    assert!(out.contains("adapter cfs1 [scalar x2 batch 16 f32]"), "{out}");
    let (code, _) = bench(&["--runs", "2", "codecs"]);
    assert_eq!(code, Some(2), "fewer than 5 runs is a usage error");
}

#[test]
fn raw_input_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("raw.bin");
    std::fs::write(&p, tetrad::synth::int4_bytes(64 << 10, 5)).unwrap();
    let (code, out) = bench(&["--json", "--input", p.to_str().unwrap(), "codecs"]);
    assert_eq!(code, Some(0), "{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(v["results"].as_array().unwrap().iter().all(|r| r["bytes"] == 64 << 10));
}

/// `--input` containers: an unstamped int4-row checkpoint (what `pack` reads), the same packed
/// as int4-rans64-t1 (decoded), and a safetensors file under another name (recognised by its
/// header, not benchmarked as raw bytes): all give exactly its int4 weights' bytes.
#[test]
fn container_inputs_give_their_int4_weights() {
    use std::collections::BTreeMap;
    use tetrad::shard::{HeaderStyle, OutTensor, shard_bytes};
    let dir = tempfile::tempdir().unwrap();
    let (o, row) = (64u64, 512u64);
    let codes = tetrad::synth::int4_bytes(64 * 512, 9);
    let scales = vec![0u8; 4 * 64];
    let t = [
        OutTensor { name: "w.weight", dtype: "U8", shape: &[o, row], data: &codes },
        OutTensor { name: "w.weight.qs", dtype: "F32", shape: &[o], data: &scales },
    ];
    let ckpt = dir.path().join("ckpt");
    std::fs::create_dir(&ckpt).unwrap();
    let shard = shard_bytes(&BTreeMap::new(), &t, HeaderStyle::EscapedUnpadded).unwrap();
    std::fs::write(ckpt.join("m.safetensors"), &shard).unwrap();
    let renamed = dir.path().join("m.bin");
    std::fs::write(&renamed, &shard).unwrap();
    let packed = dir.path().join("packed");
    let o2 = Command::new(env!("CARGO_BIN_EXE_tetrad"))
        .args(["pack", "-q", "--select", ".*", "--codec", "int4-rans64-t1", "--indir"])
        .arg(&ckpt)
        .arg("--outdir")
        .arg(&packed)
        .output()
        .unwrap();
    assert!(o2.status.success(), "{}", String::from_utf8_lossy(&o2.stdout));
    for input in [&ckpt, &packed, &renamed] {
        let (code, out) = bench(&["--json", "--input", input.to_str().unwrap(), "codecs"]);
        assert_eq!(code, Some(0), "{}: {out}", input.display());
        let v: Value = serde_json::from_str(&out).unwrap();
        let results = v["results"].as_array().unwrap();
        assert!(results.iter().all(|r| r["bytes"] == o * row), "{}: {out}", input.display());
    }
}
