//! `int4-rans64-t1` in containers, end to end through the `tetrad` binary and the library:
//! pack (`--codec int4-rans64-t1`) → verify → unpack restores the original shard files byte
//! for byte; a corrupted blob makes verify exit 1 naming the tensor and the class; a tensor
//! stamped `int4-rans64-t1` is only ever read as that format (and nothing else is read as
//! it); matmul on it equals dense matmul on the original, for any thread count.
#![allow(clippy::cast_possible_truncation)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tetrad::container::{Container, TensorView};
use tetrad::packed::manifest::parse_digests;
use tetrad::packed::pack::{Codec, PackOptions, pack_with};
use tetrad::shard::{HeaderStyle, OutTensor, ShardHeader, shard_bytes};
use tetrad::synth::{Dist, int4_rows};
use tetrad_quant::Format;

mod support;
use support::{s, tetrad};

const RANS64: &str = "int4-rans64-t1";

fn name(layer: usize, e: usize, proj: &str) -> String {
    format!("model.layers.{layer}.mlp.experts.{e}.{proj}_proj.weight")
}

/// Two shards of only expert weights (U8 `[O, ceil(I/2)]`) and their F32 `.qs`, no metadata:
/// exactly what unpack writes back, so the restored files must equal these byte for byte.
/// `I` is odd and rows are large enough that 1 MiB chunks hold partial rows.
fn checkpoint(dir: &Path, o: usize, i: usize) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir).unwrap();
    let mut paths = Vec::new();
    for layer in 0..2 {
        let mut owned: Vec<(String, &str, Vec<u64>, Vec<u8>)> = Vec::new();
        for e in 0..2 {
            for (k, proj) in ["down", "gate", "up"].into_iter().enumerate() {
                let n = name(layer, e, proj);
                let dist = [Dist::Gaussian, Dist::Laplace, Dist::StudentT][k];
                let (codes, scales) = int4_rows(o, i, dist, (layer * 100 + e * 10 + k) as u64);
                let qs: Vec<u8> = scales.iter().flat_map(|f| f.to_le_bytes()).collect();
                owned.push((n.clone(), "U8", vec![o as u64, i.div_ceil(2) as u64], codes));
                owned.push((format!("{n}.qs"), "F32", vec![o as u64], qs));
            }
        }
        let tensors: Vec<OutTensor<'_>> = owned
            .iter()
            .map(|(n, d, s, b)| OutTensor { name: n, dtype: d, shape: s, data: b })
            .collect();
        let bytes = shard_bytes(&BTreeMap::new(), &tensors, HeaderStyle::EscapedUnpadded).unwrap();
        let p = dir.join(format!("model-{:05}-of-00002.safetensors", layer + 1));
        std::fs::write(&p, bytes).unwrap();
        paths.push(p);
    }
    paths
}

fn read_all(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut m = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        m.insert(p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap());
    }
    m
}

fn pack64(input: &Path, packed: &Path) {
    let (code, out, err) =
        tetrad(&["pack", "--indir", s(input), "--outdir", s(packed), "--codec", RANS64, "--quiet"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("wrote repack-manifest.json (int4-rans64-t1)"), "{out}");
}

/// Where tensor `t`'s data lies in a shard file.
fn data_range(file: &[u8], t: &str) -> std::ops::Range<usize> {
    let h = ShardHeader::parse(file, file.len() as u64).unwrap();
    let e = h.tensor(t).unwrap();
    let at = (h.data_start + e.begin) as usize;
    at..at + e.len() as usize
}

#[test]
fn pack_verify_unpack_round_trip_is_byte_exact() {
    let t = tempfile::tempdir().unwrap();
    let (input, packed, restored) =
        (t.path().join("in"), t.path().join("packed"), t.path().join("restored"));
    checkpoint(&input, 700, 3001);
    pack64(&input, &packed);
    let files = read_all(&packed);
    assert_eq!(
        files.keys().collect::<Vec<_>>(),
        ["out-rans-00000.safetensors", "out-rans-00001.safetensors", "repack-manifest.json"]
    );
    let sh = &files["out-rans-00000.safetensors"];
    let h = ShardHeader::parse(sh, sh.len() as u64).unwrap();
    let meta = h.metadata.clone().unwrap();
    assert_eq!(meta.keys().collect::<Vec<_>>(), ["colibri.fmt"], "no shared table");
    assert!(meta["colibri.fmt"].contains(&format!("\"{}\": \"{RANS64}\"", name(0, 0, "down"))));
    // Every weight is a blob that is smaller than the original and parses.
    let orig = read_all(&input);
    let o0 = &orig["model-00001-of-00002.safetensors"];
    let w = name(0, 1, "up");
    let blob = &sh[data_range(sh, &w)];
    assert_eq!(&blob[..4], b"T4R1");
    assert!(blob.len() < data_range(o0, &w).len());
    let manifest = std::str::from_utf8(&files["repack-manifest.json"]).unwrap();
    assert!(manifest.starts_with("{\n \"format\": \"int4-rans64-t1\",\n \"n_shards\": 2,"));
    assert!(!manifest.contains("table_crc32"));
    let d = parse_digests(manifest).unwrap();
    assert_eq!(d.format.as_deref(), Some(RANS64));
    assert_eq!(d.originals["out-rans-00000.safetensors"].len(), 6);
    assert_eq!(d.shards["out-rans-00001.safetensors"].1.len(), 6);

    let shards =
        [packed.join("out-rans-00000.safetensors"), packed.join("out-rans-00001.safetensors")];
    // inspect reads the blob's header (it once guessed an I from the blob's byte count).
    let (code, out, _) = tetrad(&["inspect", s(&shards[0])]);
    assert_eq!(code, 0, "{out}");
    let want = format!(
        "{RANS64} (stamped): {} int4-row bytes in 2 chunk(s) of 2^20, version {}",
        700 * 1501,
        tetrad_rans::rans64::DEFAULT_VERSION
    );
    assert_eq!(out.matches(&want).count(), 6, "{out}");
    let (code, out, _) = tetrad(&["verify", s(&shards[0]), s(&shards[1])]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.lines().last().unwrap(), "RESULT: TRUST");
    assert_eq!(out.matches("(6/6 record(s) verified)").count(), 2, "{out}");

    let (code, out, err) = tetrad(&["unpack", "--indir", s(&packed), "--outdir", s(&restored)]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(read_all(&restored), orig, "restored shards equal the originals byte for byte");
}

#[test]
fn library_pack_matches_the_cli_and_is_deterministic() {
    let t = tempfile::tempdir().unwrap();
    let input = t.path().join("in");
    checkpoint(&input, 40, 1001);
    pack64(&input, &t.path().join("cli"));
    for threads in [1, 2] {
        let out = t.path().join(format!("lib{threads}"));
        let r = pack_with(
            &PackOptions {
                indir: input.clone(),
                outdir: out.clone(),
                layers: None,
                select: None,
                force: false,
                threads: Some(threads),
                quiet: true,
            },
            Codec::Rans64T1,
        )
        .unwrap();
        assert_eq!((r.codec, r.records), (Codec::Rans64T1, 12));
        assert!(r.ratio() < 1.0, "{}", r.ratio());
        assert_eq!(read_all(&out), read_all(&t.path().join("cli")));
    }
    assert_eq!(Codec::from_name("int4-rans256-g0"), Some(Codec::Rans256G0));
    assert_eq!(Codec::from_name("zstd"), None);
    let (code, _, err) = tetrad(&[
        "pack",
        "--indir",
        s(&input),
        "--outdir",
        s(&t.path().join("x")),
        "--codec",
        "zstd",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown codec \"zstd\""), "{err}");
}

#[test]
fn corrupted_blob_is_refused_naming_tensor_and_class() {
    let t = tempfile::tempdir().unwrap();
    let (input, packed) = (t.path().join("in"), t.path().join("packed"));
    checkpoint(&input, 64, 999);
    pack64(&input, &packed);
    let shard = packed.join("out-rans-00000.safetensors");
    let good = std::fs::read(&shard).unwrap();
    let w = name(0, 1, "gate");
    let r = data_range(&good, &w);
    let mut bad = good.clone();
    let k = r.start + r.len() * 2 / 3; // inside a way's word stream
    bad[k] ^= 0x11;
    std::fs::write(&shard, &bad).unwrap();

    // With the manifest: the digests catch it first.
    let (code, out, _) = tetrad(&["verify", s(&shard)]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("REFUSE out-rans-00000.safetensors - E_SHARD_DIGEST_MISMATCH"), "{out}");
    assert!(out.contains(&format!("REFUSE out-rans-00000.safetensors {w} E_DIGEST_MISMATCH")));
    assert!(out.contains("5/6 record(s) verified"), "{out}");

    // Without it: the decoder refuses by its own class (the chunk's check, before decoding).
    std::fs::remove_file(packed.join("repack-manifest.json")).unwrap();
    let (code, out, _) = tetrad(&["verify", "--json", s(&shard)]);
    assert_eq!(code, 1, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let refusals = v["shards"][0]["refusals"].as_array().unwrap();
    assert_eq!(refusals.len(), 1, "{out}");
    assert_eq!(refusals[0]["tensor"], w.as_str());
    let class = refusals[0]["class"].as_str().unwrap();
    assert!(class == "E_CHECKSUM", "{class}: {}", refusals[0]["detail"]);
    // unpack refuses too, and writes nothing.
    let restored = t.path().join("restored");
    let (code, out, _) =
        tetrad(&["unpack", "--without-manifest", "--indir", s(&packed), "--outdir", s(&restored)]);
    assert_eq!(code, 1);
    assert!(out.starts_with(&format!("REFUSED {class}: ")), "{out}");
    assert!(out.contains(&w), "{out}");
    assert!(!restored.join("out-rans-00000.safetensors").exists());

    // A blob that decodes (a flipped byte in a raw chunk would) but to other bytes is caught
    // by the originals digest: simulate with a manifest whose original digest is wrong.
    std::fs::write(&shard, &good).unwrap();
    let m = tetrad::packed::manifest::Manifest {
        format: RANS64,
        shards: vec![tetrad::packed::manifest::ShardEntry {
            bytes: good.len() as u64,
            file: "out-rans-00000.safetensors".into(),
            originals: [(w.clone(), "00".repeat(32))].into(),
            records: [(w.clone(), sha256(&good[r.clone()]))].into(),
            sha256: sha256(&good),
            source: "model-00001-of-00002.safetensors".into(),
            weight_tensors: 6,
        }],
        table_crc32: None,
    };
    std::fs::write(packed.join("repack-manifest.json"), m.to_json()).unwrap();
    let (code, out, _) = tetrad(&["verify", s(&shard)]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains(&format!("{w} E_ORIGINAL_DIGEST_MISMATCH")), "{out}");
    // The other five tensors have no digest in this manifest: named, not trusted.
    assert_eq!(out.matches("E_DIGEST_MISSING").count(), 5, "{out}");
    // This manifest lists the first shard only: the set is that shard alone.
    std::fs::remove_file(packed.join("out-rans-00001.safetensors")).unwrap();
    let (code, out, _) = tetrad(&["unpack", "--indir", s(&packed), "--outdir", s(&restored)]);
    assert_eq!(code, 1);
    assert!(out.starts_with("REFUSED E_ORIGINAL_DIGEST_MISMATCH: "), "{out}");
    assert!(!restored.join("model-00001-of-00002.safetensors").exists());
}

fn sha256(b: &[u8]) -> String {
    use sha2::Digest as _;
    format!("{:x}", sha2::Sha256::digest(b))
}

/// Rewrites one shard's stamps (`colibri.fmt`) and optionally swaps a tensor's data.
fn restamp(path: &Path, stamps: &str, swap: Option<(&str, Vec<u8>)>) {
    let bytes = std::fs::read(path).unwrap();
    let h = ShardHeader::parse(&bytes, bytes.len() as u64).unwrap();
    let mut meta = h.metadata.clone().unwrap_or_default();
    meta.insert("colibri.fmt".into(), stamps.into());
    let owned: Vec<(String, String, Vec<u64>, Vec<u8>)> = h
        .tensors
        .iter()
        .map(|t| {
            let at = (h.data_start + t.begin) as usize;
            let mut data = bytes[at..at + t.len() as usize].to_vec();
            let mut shape = t.shape.clone();
            if let Some((n, d)) = &swap
                && *n == t.name
            {
                data = d.clone();
                shape = vec![data.len() as u64];
            }
            (t.name.clone(), t.dtype.clone(), shape, data)
        })
        .collect();
    let ts: Vec<OutTensor<'_>> = owned
        .iter()
        .map(|(n, d, s, b)| OutTensor { name: n, dtype: d, shape: s, data: b })
        .collect();
    std::fs::write(path, shard_bytes(&meta, &ts, HeaderStyle::EscapedUnpadded).unwrap()).unwrap();
}

#[test]
fn a_stamped_rans64_tensor_is_never_read_as_another_format() {
    let t = tempfile::tempdir().unwrap();
    let (input, packed) = (t.path().join("in"), t.path().join("packed"));
    let (o, i) = (32u64, 200u64);
    checkpoint(&input, o as usize, i as usize);
    pack64(&input, &packed);
    let w = name(0, 0, "down");
    let c = Container::open(&packed).unwrap();
    let v = c.tensor(&w, o, i).unwrap();
    assert!(matches!(v, TensorView::Rans64 { .. }), "{v:?}");
    assert_eq!(v.format(), Format::Int4Rans64T1);
    assert_eq!(v.decoded_len(), o * i.div_ceil(2));
    let mut back = vec![0u8; (o * i.div_ceil(2)) as usize];
    v.decode_into(&mut back).unwrap();
    let orig = Container::open(&input).unwrap();
    let TensorView::Dense { weights, resolved, .. } = orig.tensor(&w, o, i).unwrap() else {
        panic!("the original is dense")
    };
    assert_eq!(resolved.format, Format::Int4Row);
    assert_eq!(back, weights);
    // Wrong shapes are refused by name, before any decode.
    assert_eq!(c.tensor(&w, o, i + 2).unwrap_err().class.name(), "E_COUNT_MISMATCH");
    assert_eq!(c.tensor(&w, o + 1, i).unwrap_err().class.name(), "E_SCALE_COUNT");

    let shard = packed.join("out-rans-00000.safetensors");
    let stamps = |f: &str| format!("{{\"{w}\": \"{f}\"}}");
    // The blob stamped as the compat format: parsed as a record, refused, not misread.
    restamp(&shard, &stamps("int4-rans256-g0"), None);
    let e = Container::open(&packed).unwrap().tensor(&w, o, i).unwrap_err();
    assert_ne!(e.class.name(), "E_STAMP_MISMATCH", "dispatched on the stamp: {e}");
    // The blob stamped int4-row: its bytes are not int4-row's, refused by byte arithmetic.
    restamp(&shard, &stamps("int4-row"), None);
    let e = Container::open(&packed).unwrap().tensor(&w, o, i).unwrap_err();
    assert!(e.class.name().starts_with("E_"), "{e}");
    // Unstamped, a blob is never presumed entropy-coded: whatever the bytes resolve to, it is
    // not int4-rans64-t1.
    restamp(&shard, "{}", None);
    if let Ok(v) = Container::open(&packed).unwrap().tensor(&w, o, i) {
        assert_ne!(v.format(), Format::Int4Rans64T1);
    }
    // Plain int4-row bytes stamped int4-rans64-t1: refused as a blob (bad magic), never read as
    // int4-row.
    restamp(&shard, &stamps(RANS64), Some((&w, weights.to_vec())));
    let e = Container::open(&packed).unwrap().tensor(&w, o, i).unwrap_err();
    assert_eq!(e.class.name(), "E_MAGIC", "{e}");
    // verify refuses the swapped tensor too (its digest no longer matches the manifest).
    let (code, out, _) = tetrad(&["verify", s(&shard)]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains(&format!("{w} E_DIGEST_MISMATCH")), "{out}");
}

#[test]
fn matmul_on_rans64_equals_dense_for_any_thread_count() {
    let t = tempfile::tempdir().unwrap();
    let (input, packed) = (t.path().join("in"), t.path().join("packed"));
    let (o, i) = (700usize, 3001usize); // 1501-byte rows: chunks end inside rows
    checkpoint(&input, o, i);
    pack64(&input, &packed);
    let w = name(1, 1, "gate");
    for s_rows in [1usize, 3] {
        let x: Vec<u8> =
            (0..s_rows * i).flat_map(|k| ((k as f32 * 0.37).sin()).to_le_bytes()).collect();
        let xp = t.path().join(format!("x{s_rows}.f32"));
        std::fs::write(&xp, x).unwrap();
        let mut outs = Vec::new();
        for (dir, threads) in [(&input, "1"), (&packed, "1"), (&packed, "2"), (&packed, "5")] {
            let out = t.path().join(format!(
                "y-{s_rows}-{}-{threads}.f32",
                dir.file_name().unwrap().to_string_lossy()
            ));
            let (code, text, err) = tetrad(&[
                "matmul",
                s(dir),
                &w,
                "--o",
                &o.to_string(),
                "--i",
                &i.to_string(),
                "--x",
                s(&xp),
                "--out",
                s(&out),
                "--threads",
                threads,
            ]);
            assert_eq!(code, 0, "{text}{err}");
            if dir == &packed {
                assert!(text.contains("int4-rans64-t1 (fused decode + int4-row kernel)"), "{text}");
            }
            let y = std::fs::read(&out).unwrap();
            assert_eq!(y.len(), 4 * s_rows * o);
            outs.push(y);
        }
        assert!(outs.iter().all(|y| y == &outs[0]), "dense == rans64 at 1, 2, 5 threads");
        assert!(outs[0].iter().any(|&b| b != 0));
    }
    // A corrupt blob writes nothing.
    let shard = packed.join("out-rans-00001.safetensors");
    let mut bytes = std::fs::read(&shard).unwrap();
    let r = data_range(&bytes, &w);
    bytes[r.start + r.len() / 2] ^= 0x40;
    std::fs::write(&shard, &bytes).unwrap();
    let out = t.path().join("y-bad.f32");
    let (code, text, err) = tetrad(&[
        "matmul",
        s(&packed),
        &w,
        "--o",
        &o.to_string(),
        "--i",
        &i.to_string(),
        "--x",
        s(&t.path().join("x1.f32")),
        "--out",
        s(&out),
        "--threads",
        "2",
    ]);
    assert_eq!(code, 1, "{text}{err}");
    assert!(!out.exists());
}
