//! `pack` reads its input's `colibri.fmt` stamps: a selected weight stamped anything but
//! `int4-row` (int8-row, int2-row, an already entropy-coded record, an unknown name) is refused
//! by name before anything is written, malformed or conflicting stamps are refused as the
//! container rules say, and unstamped or `int4-row`-stamped weights pack as before. And `pack`
//! says what it leaves out: every input tensor that is neither a selected weight nor its `.qs`
//! is counted in the text report and listed in `--json` (unpack will not restore them).
#![allow(clippy::cast_possible_truncation)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tetrad::json::sorted_string_map;
use tetrad::packed::pack::{Codec, LeftOutReason, PackOptions, pack, pack_with};
use tetrad::shard::{HeaderStyle, OutTensor, shard_bytes};
use tetrad::synth::{Dist, int4_rows, weights};

mod support;
use support::{opts, s, tetrad};

const O: usize = 16;
const I: usize = 256;

fn read_all(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut m = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        m.insert(p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap());
    }
    m
}

fn expert(layer: usize, e: usize, proj: &str) -> String {
    format!("model.layers.{layer}.mlp.experts.{e}.{proj}_proj.weight")
}

/// An owned tensor: (name, dtype, shape, bytes).
type T = (String, &'static str, Vec<u64>, Vec<u8>);

/// The expert weights of one layer as int4-row U8 `[O, I/2]` with F32 `.qs`.
fn int4_experts(layer: usize) -> Vec<T> {
    let mut ts = Vec::new();
    for (k, proj) in ["down", "gate", "up"].into_iter().enumerate() {
        let n = expert(layer, 0, proj);
        let (codes, scales) = int4_rows(O, I, Dist::Laplace, (layer * 10 + k) as u64);
        let qs: Vec<u8> = scales.iter().flat_map(|f| f.to_le_bytes()).collect();
        ts.push((n.clone(), "U8", vec![O as u64, (I / 2) as u64], codes));
        ts.push((format!("{n}.qs"), "F32", vec![O as u64], qs));
    }
    ts
}

/// A `colibri.fmt` value stamping each tensor.
fn stamps(pairs: &[(&str, &str)]) -> String {
    sorted_string_map(pairs.iter().copied(), ", ", ": ")
}

fn write_shard(path: &Path, meta: &[(&str, &str)], ts: &[T]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let meta: BTreeMap<String, String> =
        meta.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    let out: Vec<OutTensor<'_>> = ts
        .iter()
        .map(|(n, d, sh, b)| OutTensor { name: n, dtype: d, shape: sh, data: b })
        .collect();
    std::fs::write(path, shard_bytes(&meta, &out, HeaderStyle::EscapedUnpadded).unwrap()).unwrap();
}

/// A two-shard int4-row checkpoint of only expert weights; every weight of shard `k` is
/// stamped `stamp[k]` (none if `None`).
fn int4_checkpoint(dir: &Path, stamp: [Option<&str>; 2]) -> PathBuf {
    for (layer, st) in stamp.into_iter().enumerate() {
        let ts = int4_experts(layer);
        let names: Vec<String> =
            ts.iter().filter(|t| !t.0.ends_with(".qs")).map(|t| t.0.clone()).collect();
        let value = st.map(|f| stamps(&names.iter().map(|n| (n.as_str(), f)).collect::<Vec<_>>()));
        let meta: Vec<(&str, &str)> =
            value.as_deref().map(|v| ("colibri.fmt", v)).into_iter().collect();
        write_shard(&dir.join(format!("model-{:05}-of-00002.safetensors", layer + 1)), &meta, &ts);
    }
    dir.to_owned()
}

/// Runs `tetrad pack` and expects a refusal of `class` naming `shard`, `tensor` and `stamp`,
/// with nothing written: `outdir` holds exactly what it held before.
fn expect_refused(indir: &Path, outdir: &Path, extra: &[&str], class: &str, names: &[&str]) {
    let before = outdir.exists().then(|| read_all(outdir));
    let mut args = vec!["pack", "--indir", s(indir), "--outdir", s(outdir), "--quiet"];
    args.extend_from_slice(extra);
    let (code, out, err) = tetrad(&args);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.starts_with(&format!("REFUSED {class}: ")), "{out}");
    for n in names {
        assert!(out.contains(n), "names {n}: {out}");
    }
    assert_eq!(outdir.exists().then(|| read_all(outdir)), before, "nothing written or removed");
    args.push("--json");
    let (code, out, _) = tetrad(&args);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["refused"]["class"], class, "{out}");
}

#[test]
fn quantized_int8_row_and_int2_row_checkpoints_are_refused_for_both_codecs() {
    let t = tempfile::tempdir().unwrap();
    let f32dir = t.path().join("f32");
    let ts: Vec<T> = ["down", "gate", "up"]
        .into_iter()
        .enumerate()
        .map(|(k, proj)| {
            let w = weights(O, I, Dist::Gaussian, k as u64);
            let b = w.iter().flat_map(|f| f.to_le_bytes()).collect();
            (expert(0, 0, proj), "F32", vec![O as u64, I as u64], b)
        })
        .collect();
    write_shard(&f32dir.join("model.safetensors"), &[], &ts);
    for fmt in ["int8-row", "int2-row"] {
        let q = t.path().join(fmt);
        let (code, out, err) = tetrad(&["quantize", "-q", "--format", fmt, s(&f32dir), s(&q)]);
        assert_eq!(code, 0, "{out}{err}");
        let stamp = format!("\"{fmt}\"");
        let names = ["model.safetensors", "model.layers.0.mlp.experts.0.down_proj.weight", &stamp];
        for codec in ["int4-rans256-g0", "int4-rans64-t1"] {
            let o = t.path().join(format!("{fmt}-{codec}"));
            expect_refused(&q, &o, &["--codec", codec], "E_STAMP_NOT_INT4_ROW", &names);
            assert!(!o.exists(), "the output directory is not even created");
        }
    }
}

#[test]
fn every_non_int4_row_stamp_is_refused_and_old_output_is_kept() {
    let t = tempfile::tempdir().unwrap();
    // An earlier pack output that a refused --force run must leave alone.
    let good = int4_checkpoint(&t.path().join("good"), [None, None]);
    let out = t.path().join("out");
    pack(&opts(&good, &out)).unwrap();
    for stamp in ["int8-row", "int2-row", "int4-grouped", "mxfp4", "f32"] {
        let input = int4_checkpoint(&t.path().join(stamp), [None, Some(stamp)]);
        expect_refused(
            &input,
            &out,
            &["--force"],
            "E_STAMP_NOT_INT4_ROW",
            &[
                "model-00002-of-00002.safetensors",
                "model.layers.1.mlp.experts.0.down_proj.weight",
                &format!("\"{stamp}\""),
                "expected int4-row or no stamp",
            ],
        );
    }
    let input = int4_checkpoint(&t.path().join("unknown"), [Some("int4_row"), None]);
    expect_refused(
        &input,
        &out,
        &["--force"],
        "E_STAMP_UNKNOWN",
        &["model-00001-of-00002.safetensors", "\"int4_row\"", "not a registered format"],
    );
}

#[test]
fn already_coded_inputs_are_refused() {
    let t = tempfile::tempdir().unwrap();
    let input = int4_checkpoint(&t.path().join("in"), [None, None]);
    for (codec, stamp) in
        [(Codec::Rans256G0, "\"int4-rans256-g0\""), (Codec::Rans64T1, "\"int4-rans64-t1\"")]
    {
        let packed = t.path().join(codec.name());
        pack_with(&opts(&input, &packed), codec).unwrap();
        for again in ["int4-rans256-g0", "int4-rans64-t1"] {
            let o = t.path().join(format!("{}-again-{again}", codec.name()));
            expect_refused(
                &packed,
                &o,
                &["--codec", again],
                "E_STAMP_NOT_INT4_ROW",
                &[
                    "out-rans-00000.safetensors",
                    "model.layers.0.mlp.experts.0.down_proj.weight",
                    stamp,
                    "already entropy-coded",
                ],
            );
        }
        let e = pack(&opts(&packed, &t.path().join("lib"))).unwrap_err();
        assert_eq!(e.class.name(), "E_STAMP_NOT_INT4_ROW", "{e}");
    }
}

#[test]
fn int4_row_stamped_and_unstamped_inputs_pack_identically() {
    let t = tempfile::tempdir().unwrap();
    let plain = int4_checkpoint(&t.path().join("plain"), [None, None]);
    let stamped = int4_checkpoint(&t.path().join("stamped"), [Some("int4-row"), Some("int4-row")]);
    for codec in Codec::ALL {
        let (a, b) = (
            t.path().join(format!("a-{}", codec.name())),
            t.path().join(format!("b-{}", codec.name())),
        );
        assert_eq!(pack_with(&opts(&plain, &a), codec).unwrap().records, 6);
        assert_eq!(pack_with(&opts(&stamped, &b), codec).unwrap().records, 6);
        assert_eq!(read_all(&a), read_all(&b), "{}", codec.name());
    }
}

#[test]
fn malformed_and_conflicting_stamps_are_refused_naming_the_shard() {
    let t = tempfile::tempdir().unwrap();
    let w = expert(0, 0, "down");
    let cases: [(&str, String, &str, &[&str]); 4] = [
        ("notjson", "not json".into(), "E_STAMP_MALFORMED", &["model-00002-of-00002.safetensors"]),
        (
            "nonstring",
            format!("{{\"{w}\": 4}}"),
            "E_STAMP_MALFORMED",
            &["model-00002-of-00002.safetensors"],
        ),
        // Shard 2 claims shard 1's tensor with another format than shard 1 does.
        (
            "conflict",
            stamps(&[(&w, "int8-row")]),
            "E_STAMP_CONFLICT",
            &[&w, "\"int4-row\"", "\"int8-row\""],
        ),
        // A stamp in another shard than the tensor still applies to it.
        ("elsewhere", stamps(&[(&w, "int8-row")]), "E_STAMP_NOT_INT4_ROW", &[&w, "\"int8-row\""]),
    ];
    for (dir, value, class, names) in cases {
        let input = t.path().join(dir);
        let first = if dir == "conflict" { Some("int4-row") } else { None };
        int4_checkpoint(&input, [first, None]);
        let shard2 = input.join("model-00002-of-00002.safetensors");
        write_shard(&shard2, &[("colibri.fmt", &value)], &int4_experts(1));
        expect_refused(&input, &t.path().join(format!("{dir}-out")), &[], class, names);
    }
}

#[test]
fn stamps_of_tensors_that_are_not_selected_do_not_matter() {
    let t = tempfile::tempdir().unwrap();
    let input = int4_checkpoint(&t.path().join("in"), [None, None]);
    // An int8-row attention weight beside the experts: not selected, so its stamp is fine,
    // and it is reported as left out.
    let q = "model.layers.0.self_attn.q_proj.weight";
    let mut ts = int4_experts(0);
    ts.push((q.into(), "U8", vec![4, 8], vec![1u8; 32]));
    ts.push((format!("{q}.qs"), "F32", vec![4], vec![0u8; 16]));
    let value = stamps(&[(q, "int8-row")]);
    write_shard(&input.join("model-00001-of-00002.safetensors"), &[("colibri.fmt", &value)], &ts);
    let r = pack(&opts(&input, &t.path().join("out"))).unwrap();
    assert_eq!(r.records, 6);
    let left: Vec<&str> = r.left_out.iter().map(|l| l.tensor.as_str()).collect();
    assert_eq!(left, [q, &format!("{q}.qs")]);
}

#[test]
fn left_out_tensors_are_counted_listed_and_explained() {
    let t = tempfile::tempdir().unwrap();
    let input = t.path().join("in");
    // Shard 1: layer 0 experts, a norm, an expert-named F32 tensor, and a copy of a layer-1
    // weight that shard 2 shadows. Shard 2: layer 1 experts.
    let norm = "model.layers.0.input_layernorm.weight";
    let f32w = expert(0, 1, "up");
    let shadowed = expert(1, 0, "gate");
    let mut ts = int4_experts(0);
    ts.push((norm.into(), "F32", vec![4], vec![0u8; 16]));
    ts.push((f32w.clone(), "F32", vec![2, 2], vec![0u8; 16]));
    ts.push((shadowed.clone(), "U8", vec![1, 4], vec![0x88; 4]));
    write_shard(&input.join("model-00001-of-00002.safetensors"), &[], &ts);
    write_shard(&input.join("model-00002-of-00002.safetensors"), &[], &int4_experts(1));

    let out = t.path().join("out");
    let (code, stdout, err) =
        tetrad(&["pack", "--indir", s(&input), "--outdir", s(&out), "--quiet"]);
    assert_eq!(code, 0, "{stdout}{err}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines.last().unwrap().starts_with("[ratio] "), "the ratio line stays last: {stdout}");
    let line = lines[lines.len() - 2];
    assert_eq!(
        line,
        "left out 3 of 15 input tensor(s) (1 not selected, 1 selected by name but not U8, \
         1 shadowed by a later shard): pack does not copy them and unpack will not restore them \
         (--json lists each), e.g. model.layers.0.input_layernorm.weight in \
         model-00001-of-00002.safetensors"
    );

    let out2 = t.path().join("out2");
    let (code, stdout, _) =
        tetrad(&["pack", "--indir", s(&input), "--outdir", s(&out2), "--json", "--layers", "1"]);
    assert_eq!(code, 0, "{stdout}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["input_tensors"], 15);
    let got: Vec<(String, String, String, String)> = v["left_out"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            let f = |k: &str| l[k].as_str().unwrap().to_owned();
            (f("tensor"), f("shard"), f("dtype"), f("reason"))
        })
        .collect();
    let sh1 = "model-00001-of-00002.safetensors";
    let mut want: Vec<(String, String, String, String)> = int4_experts(0)
        .into_iter()
        .map(|(n, d, _, _)| {
            let reason = if n.ends_with(".qs") { "not_selected" } else { "other_layer" };
            (n, sh1.into(), d.into(), reason.into())
        })
        .collect();
    want.push((norm.into(), sh1.into(), "F32".into(), "not_selected".into()));
    want.push((f32w, sh1.into(), "F32".into(), "not_u8".into()));
    want.push((shadowed, sh1.into(), "U8".into(), "shadowed".into()));
    want.sort();
    assert_eq!(got, want);

    // The library report says the same, and unpack does not bring them back.
    let r = pack(&PackOptions { layers: Some(vec![1]), ..opts(&input, &t.path().join("lib")) })
        .unwrap();
    assert_eq!(r.left_out.len(), 9);
    assert_eq!(r.left_out.iter().filter(|l| l.reason == LeftOutReason::OtherLayer).count(), 3);
    let restored = t.path().join("restored");
    let (code, o, e) = tetrad(&["unpack", "--indir", s(&out), "--outdir", s(&restored)]);
    assert_eq!(code, 0, "{o}{e}");
    let back = tetrad::shardset::ShardSet::open_dir(&restored).unwrap();
    assert!(back.get(norm).is_none() && back.index.len() == 12, "left-out tensors stay out");
}

#[test]
fn nothing_left_out_means_no_line_and_an_empty_list() {
    let t = tempfile::tempdir().unwrap();
    let input = int4_checkpoint(&t.path().join("in"), [None, None]);
    let (code, out, _) =
        tetrad(&["pack", "--indir", s(&input), "--outdir", s(&t.path().join("a")), "--quiet"]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("left out"), "{out}");
    let (code, out, _) =
        tetrad(&["pack", "--indir", s(&input), "--outdir", s(&t.path().join("b")), "--json"]);
    assert_eq!(code, 0, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["left_out"], serde_json::json!([]));
    assert_eq!(v["input_tensors"], 12);
    assert_eq!(v["dropped_metadata"], serde_json::json!([]));
    assert!(!out.contains("not kept"), "no metadata, no line: {out}");
}

/// The input's `__metadata__` is not carried into the packed container (its metadata is its
/// own stamps and table): the report names every key, once, sorted, in text and JSON, and
/// unpack's output has none of them.
#[test]
fn dropped_metadata_is_named() {
    let t = tempfile::tempdir().unwrap();
    let input = int4_checkpoint(&t.path().join("in"), [None, None]);
    let w = expert(0, 0, "gate");
    let value = stamps(&[(&w, "int4-row")]);
    write_shard(
        &input.join("model-00001-of-00002.safetensors"),
        &[("format", "pt"), ("colibri.fmt", &value)],
        &int4_experts(0),
    );
    write_shard(
        &input.join("model-00002-of-00002.safetensors"),
        &[("format", "pt"), ("origin", "test")],
        &int4_experts(1),
    );
    let out = t.path().join("out");
    let (code, stdout, err) =
        tetrad(&["pack", "--indir", s(&input), "--outdir", s(&out), "--quiet"]);
    assert_eq!(code, 0, "{stdout}{err}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[lines.len() - 2],
        "not kept: the input's __metadata__ (colibri.fmt, format, origin); the packed shards \
         carry only their own stamps and table, and unpack will not restore it"
    );
    let (code, stdout, _) = tetrad(&[
        "pack",
        "--indir",
        s(&input),
        "--outdir",
        s(&t.path().join("out2")),
        "--json",
        "--codec",
        "int4-rans64-t1",
    ]);
    assert_eq!(code, 0, "{stdout}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["dropped_metadata"], serde_json::json!(["colibri.fmt", "format", "origin"]));
    let restored = t.path().join("restored");
    let (code, o, e) = tetrad(&["unpack", "--indir", s(&out), "--outdir", s(&restored)]);
    assert_eq!(code, 0, "{o}{e}");
    for shard in tetrad::shardset::ShardSet::open_dir(&restored).unwrap().shards {
        let meta = shard.header.metadata.unwrap_or_default();
        assert!(!meta.contains_key("format") && !meta.contains_key("origin"), "{meta:?}");
    }
}

#[test]
fn help_says_what_is_left_out_and_which_stamps_are_refused() {
    let (code, out, _) = tetrad(&["pack", "--help"]);
    assert_eq!(code, 0);
    for needle in [
        "LEFT OUT",
        "tetrad unpack will not restore it",
        "E_STAMP_NOT_INT4_ROW",
        "E_STAMP_UNKNOWN",
        "unstamped or stamped int4-row",
    ] {
        assert!(out.contains(needle), "{needle}: {out}");
    }
}
