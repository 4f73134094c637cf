//! pack / verify / unpack end to end on small checkpoints built here, and every refusal class
//! of the writer and the validator.
#![allow(clippy::cast_possible_truncation, clippy::type_complexity)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tetrad::packed::manifest::parse_digests;
use tetrad::packed::pack::{PackOptions, pack};
use tetrad::packed::verify::verify_shard;
use tetrad::shard::{HeaderStyle, OutTensor, ShardHeader, shard_bytes};
use tetrad::shardset::ShardSet;

mod support;
use support::{opts, s, tetrad};

fn checkpoint(dir: &Path) {
    tetrad::synth::write_expert_checkpoint(dir, 2, 2, 48, 1001, 11).unwrap();
}

fn read_all(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut m = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        m.insert(p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap());
    }
    m
}

/// Rewrites a shard: `edit` gets (metadata, tensors as owned (name, dtype, shape, data)).
type Owned = (String, String, Vec<u64>, Vec<u8>);
fn rewrite(path: &Path, edit: impl FnOnce(&mut BTreeMap<String, String>, &mut Vec<Owned>)) {
    let bytes = std::fs::read(path).unwrap();
    let h = ShardHeader::parse(&bytes, bytes.len() as u64).unwrap();
    let mut meta = h.metadata.clone().unwrap_or_default();
    let mut ts: Vec<Owned> = h
        .tensors
        .iter()
        .map(|t| {
            let a = (h.data_start + t.begin) as usize;
            (
                t.name.clone(),
                t.dtype.clone(),
                t.shape.clone(),
                bytes[a..a + t.len() as usize].to_vec(),
            )
        })
        .collect();
    edit(&mut meta, &mut ts);
    let out: Vec<OutTensor<'_>> = ts
        .iter()
        .map(|(n, d, sh, b)| OutTensor { name: n, dtype: d, shape: sh, data: b })
        .collect();
    std::fs::write(path, shard_bytes(&meta, &out, HeaderStyle::EscapedUnpadded).unwrap()).unwrap();
}

#[test]
fn pack_verify_unpack_round_trip_is_byte_exact() {
    let t = tempfile::tempdir().unwrap();
    let (input, packed, restored) =
        (t.path().join("in"), t.path().join("packed"), t.path().join("restored"));
    checkpoint(&input);
    let (code, out, err) =
        tetrad(&["pack", "--indir", s(&input), "--outdir", s(&packed), "--quiet"]);
    assert_eq!(code, 0, "{out}{err}");
    let last = out.lines().last().unwrap();
    assert!(last.starts_with("[ratio] record/original: 0."), "{last}");
    assert!(last.ends_with("% reduction incl. framing)"), "{last}");
    let files = read_all(&packed);
    assert_eq!(
        files.keys().collect::<Vec<_>>(),
        ["out-rans-00000.safetensors", "out-rans-00001.safetensors", "repack-manifest.json"]
    );
    // Shard layout: metadata first, records then their .qs, sorted by name, no expert-free tensors.
    let sh = &files["out-rans-00000.safetensors"];
    let h = ShardHeader::parse(sh, sh.len() as u64).unwrap();
    let names: Vec<&str> = h.tensors.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names.len(), 12);
    assert_eq!(names[0], "model.layers.0.mlp.experts.0.down_proj.weight");
    assert_eq!(names[1], "model.layers.0.mlp.experts.0.down_proj.weight.qs");
    assert!(!names.iter().any(|n| n.contains("layernorm")));
    let meta = h.metadata.unwrap();
    assert_eq!(meta.keys().collect::<Vec<_>>(), ["colibri.fmt", "colibri.int4-rans256-g0.table"]);
    assert!(
        meta["colibri.fmt"].starts_with(
            "{\"model.layers.0.mlp.experts.0.down_proj.weight\": \"int4-rans256-g0\", "
        )
    );
    let hl = u64::from_le_bytes(sh[..8].try_into().unwrap()) as usize;
    assert!(
        std::str::from_utf8(&sh[8..8 + hl])
            .unwrap()
            .starts_with("{\"__metadata__\":{\"colibri.fmt\":\"{\\\"model.")
    );
    assert!(sh[8 + hl - 1] == b'}', "no header padding");
    let manifest = std::str::from_utf8(&files["repack-manifest.json"]).unwrap();
    assert!(manifest.starts_with(
        "{\n \"format\": \"int4-rans256-g0\",\n \"n_shards\": 2,\n \"n_weight_tensors\": 12,"
    ));
    assert!(!manifest.ends_with('\n'));
    let d = parse_digests(manifest).unwrap();
    assert_eq!(d.shards["out-rans-00001.safetensors"].1.len(), 6);

    let (code, out, _) = tetrad(&[
        "verify",
        s(&packed.join("out-rans-00000.safetensors")),
        s(&packed.join("out-rans-00001.safetensors")),
    ]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.lines().last().unwrap(), "RESULT: TRUST");
    assert_eq!(out.matches("[trust]").count(), 2);
    // The directory stands for its shards, in order; the manifest is not a shard.
    let (code, dir_out, _) = tetrad(&["verify", s(&packed)]);
    assert_eq!(code, 0, "{dir_out}");
    assert_eq!(dir_out, out);
    let empty = t.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let (code, out, _) = tetrad(&["verify", s(&packed), s(&empty)]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(out.matches("TRUST (").count(), 2, "{out}");
    assert!(
        out.lines().any(|l| l.starts_with(&format!(
            "REFUSE {} - E_NO_INPUT: no *.safetensors files in {}",
            empty.display(),
            empty.display()
        ))),
        "{out}"
    );
    assert_eq!(out.lines().last().unwrap(), "RESULT: REFUSE (1 refusal(s))");

    let (code, out, err) = tetrad(&["unpack", "--indir", s(&packed), "--outdir", s(&restored)]);
    assert_eq!(code, 0, "{out}{err}");
    let orig = ShardSet::open_dir(&input).unwrap();
    let back = ShardSet::open_dir(&restored).unwrap();
    assert_eq!(back.shards.len(), 2);
    assert_eq!(back.shards[0].basename(), "model-00001-of-00002.safetensors");
    let mut compared = 0;
    for (name, &loc) in &back.index {
        let (oloc, oe) = orig.get(name).unwrap();
        let be = back.entry(loc);
        assert_eq!(back.data(loc), orig.data(oloc), "{name}");
        assert_eq!((&be.dtype, &be.shape), (&oe.dtype, &oe.shape), "{name}");
        compared += 1;
    }
    assert_eq!(compared, 24);
    let rh = &back.shards[0].header;
    assert!(rh.metadata.is_none(), "stamps removed");
}

#[test]
fn output_is_deterministic_across_runs_and_threads() {
    let t = tempfile::tempdir().unwrap();
    let input = t.path().join("in");
    checkpoint(&input);
    let mut outs = Vec::new();
    for (k, threads) in [Some(1), Some(2), None].into_iter().enumerate() {
        let o = t.path().join(format!("out{k}"));
        pack(&PackOptions { threads, ..opts(&input, &o) }).unwrap();
        outs.push(read_all(&o));
    }
    assert_eq!(outs[0], outs[1]);
    assert_eq!(outs[0], outs[2]);
}

#[test]
fn existing_output_is_refused_unless_forced() {
    let t = tempfile::tempdir().unwrap();
    let (input, packed) = (t.path().join("in"), t.path().join("packed"));
    checkpoint(&input);
    pack(&opts(&input, &packed)).unwrap();
    let (code, out, _) = tetrad(&["pack", "--indir", s(&input), "--outdir", s(&packed)]);
    assert_eq!(code, 1);
    assert!(out.starts_with("REFUSED E_OUTPUT_EXISTS: "), "{out}");
    std::fs::remove_file(packed.join("repack-manifest.json")).unwrap();
    let (code, out, _) = tetrad(&["pack", "--indir", s(&input), "--outdir", s(&packed)]);
    assert_eq!(code, 1);
    assert!(out.contains("likely an interrupted run"), "{out}");
    let (code, out, _) = tetrad(&[
        "pack",
        "--indir",
        s(&input),
        "--outdir",
        s(&packed),
        "--force",
        "--threads",
        "2",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(packed.join("repack-manifest.json").exists());
    // The spec's existing output is any `out-rans-*.safetensors`, not only the numbered names
    // pack writes: a stray one is refused, and deleted by --force.
    let fresh = t.path().join("fresh");
    std::fs::create_dir(&fresh).unwrap();
    let junk = fresh.join("out-rans-junk.safetensors");
    std::fs::write(&junk, b"x").unwrap();
    std::fs::write(fresh.join("out-rans.safetensors"), b"kept: not out-rans-*").unwrap();
    let (code, out, _) = tetrad(&["pack", "--indir", s(&input), "--outdir", s(&fresh)]);
    assert_eq!(code, 1);
    assert!(out.contains("likely an interrupted run"), "{out}");
    let (code, out, _) = tetrad(&["pack", "--indir", s(&input), "--outdir", s(&fresh), "--force"]);
    assert_eq!(code, 0, "{out}");
    assert!(!junk.exists());
    assert!(fresh.join("out-rans.safetensors").exists());
}

#[test]
fn layers_and_select_choose_tensors() {
    let t = tempfile::tempdir().unwrap();
    let input = t.path().join("in");
    checkpoint(&input);
    let r =
        pack(&PackOptions { layers: Some(vec![1]), ..opts(&input, &t.path().join("a")) }).unwrap();
    assert_eq!(r.records, 6);
    assert_eq!(r.shards.len(), 1);
    assert_eq!(r.shards[0].0, "out-rans-00000.safetensors");
    assert_eq!(r.shards[0].1, "model-00002-of-00002.safetensors");
    let r = pack(&PackOptions {
        select: Some(r"experts\.1\.up_proj\.weight$".into()),
        ..opts(&input, &t.path().join("b"))
    })
    .unwrap();
    assert_eq!(r.records, 2);
    let e = pack(&PackOptions { layers: Some(vec![7]), ..opts(&input, &t.path().join("c")) })
        .unwrap_err();
    assert_eq!(e.class.name(), "E_SELECTION_EMPTY");
    let (code, _, _) = tetrad(&[
        "pack",
        "--indir",
        s(&input),
        "--outdir",
        s(&t.path().join("d")),
        "--threads",
        "0",
    ]);
    assert_eq!(code, 2, "usage error");
}

/// A one-tensor checkpoint with the given weight and scales (dtype, byte count).
fn one(dir: &Path, wshape: &[u64], wbytes: usize, qs: Option<(&str, usize)>) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let name = "model.layers.3.mlp.experts.0.up_proj.weight";
    let w = vec![0x98u8; wbytes];
    let qname = format!("{name}.qs");
    let qdata = vec![0u8; qs.map_or(0, |q| q.1)];
    let qshape = [qs.map_or(0, |(d, n)| n as u64 / tetrad::shard::dtype_size(d).unwrap())];
    let mut ts = vec![OutTensor { name, dtype: "U8", shape: wshape, data: &w }];
    if let Some((d, _)) = qs {
        ts.push(OutTensor { name: &qname, dtype: d, shape: &qshape, data: &qdata });
    }
    let bytes = shard_bytes(&BTreeMap::new(), &ts, HeaderStyle::EscapedUnpadded);
    std::fs::write(dir.join("m.safetensors"), bytes.unwrap()).unwrap();
    dir.to_owned()
}

#[test]
fn every_geometry_refusal_class() {
    let t = tempfile::tempdir().unwrap();
    let cases: [(&str, &[u64], usize, Option<(&str, usize)>, &str); 8] = [
        ("noqs", &[4, 64], 256, None, "E_GEOMETRY_NO_SCALES"),
        ("f16", &[4, 64], 256, Some(("F16", 8)), "E_GEOMETRY_NOT_PER_ROW"),
        ("oddqs", &[4, 64], 256, Some(("U8", 6)), "E_GEOMETRY_NOT_PER_ROW"),
        ("rows", &[4, 64], 256, Some(("F32", 12)), "E_GEOMETRY_NOT_PER_ROW"),
        ("g64", &[256], 256, Some(("F32", 32)), "E_GEOMETRY_G64"),
        ("amb", &[256], 256, Some(("F32", 16)), "E_GEOMETRY_AMBIGUOUS"),
        ("few", &[256], 256, Some(("F32", 64)), "E_GEOMETRY_NOT_PER_ROW"),
        ("frac", &[250], 250, Some(("F32", 12)), "E_GEOMETRY_NOT_PER_ROW"),
    ];
    for (dir, shape, nb, qs, class) in cases {
        let input = one(&t.path().join(dir), shape, nb, qs);
        let out = t.path().join(format!("{dir}-out"));
        let (code, stdout, _) = tetrad(&["pack", "--indir", s(&input), "--outdir", s(&out)]);
        assert_eq!(code, 1, "{dir}: {stdout}");
        assert!(stdout.starts_with(&format!("REFUSED {class}: ")), "{dir}: {stdout}");
        assert!(
            stdout.contains("model.layers.3.mlp.experts.0.up_proj.weight"),
            "names the tensor: {stdout}"
        );
        assert!(!out.join("repack-manifest.json").exists());
    }
    // 1-D weights with more than 64 bytes per scale pass the guard.
    let input = one(&t.path().join("ok1d"), &[512], 512, Some(("F32", 16)));
    assert_eq!(pack(&opts(&input, &t.path().join("ok1d-out"))).unwrap().records, 1);
}

struct Packed {
    _t: tempfile::TempDir,
    dir: PathBuf,
    shard: PathBuf,
}

fn packed() -> Packed {
    let t = tempfile::tempdir().unwrap();
    let (input, dir) = (t.path().join("in"), t.path().join("packed"));
    tetrad::synth::write_expert_checkpoint(&input, 1, 1, 16, 512, 5).unwrap();
    pack(&opts(&input, &dir)).unwrap();
    let shard = dir.join("out-rans-00000.safetensors");
    Packed { _t: t, dir, shard }
}

fn classes(p: &Path) -> Vec<&'static str> {
    verify_shard(p, None).refusals.iter().map(|r| r.class.name()).collect()
}

const W: &str = "model.layers.0.mlp.experts.0.gate_proj.weight";

#[test]
fn verify_refuses_malformed_shards() {
    let p = packed();
    let good = std::fs::read(&p.shard).unwrap();
    std::fs::remove_file(p.dir.join("repack-manifest.json")).unwrap();
    assert!(classes(&p.shard).is_empty());
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("truncated", good[..good.len() / 2].to_vec()),
        ("tiny", good[..5].to_vec()),
        ("header lie", {
            let mut g = good.clone();
            g[..8].copy_from_slice(&(good.len() as u64).to_le_bytes());
            g
        }),
        ("huge claim", {
            let mut g = good.clone();
            g[..8].copy_from_slice(&(513u64 << 20).to_le_bytes());
            g
        }),
        ("bad json", {
            let mut g = good.clone();
            g[8] = b'[';
            g
        }),
        // The header's `__metadata__` key twice (the first one empty: a reader keeping the
        // first would see no stamps at all), the header's length adjusted.
        ("metadata twice", {
            let n = u64::from_le_bytes(good[..8].try_into().unwrap()) as usize;
            let text = std::str::from_utf8(&good[8..8 + n]).unwrap();
            let text = text.replacen('{', "{\"__metadata__\":{},", 1);
            let mut g = (text.len() as u64).to_le_bytes().to_vec();
            g.extend_from_slice(text.as_bytes());
            g.extend_from_slice(&good[8 + n..]);
            g
        }),
    ];
    for (what, bytes) in cases {
        std::fs::write(&p.shard, &bytes).unwrap();
        assert_eq!(classes(&p.shard), ["E_SHARD_MALFORMED"], "{what}");
    }
    assert_eq!(classes(&p.dir.join("absent.safetensors")), ["E_SHARD_MALFORMED"]);
}

#[test]
fn verify_refuses_each_metadata_class() {
    let edits: Vec<(&str, Box<dyn Fn(&mut BTreeMap<String, String>, &mut Vec<Owned>)>)> = vec![
        (
            "E_STAMP_MISSING",
            Box::new(|m, _| {
                m.remove("colibri.fmt");
            }),
        ),
        (
            "E_STAMP_MALFORMED",
            Box::new(|m, _| {
                m.insert("colibri.fmt".into(), "{\"a\": 1}".into());
            }),
        ),
        (
            "E_STAMP_MALFORMED",
            Box::new(|m, _| {
                m.insert("colibri.fmt".into(), "not json".into());
            }),
        ),
        (
            "E_STAMP_MISSING",
            Box::new(|m, _| {
                m.insert("colibri.fmt".into(), "{\"a\": \"int4-row\"}".into());
            }),
        ),
        (
            // The tensor stamped two ways in one object (a JSON parser would keep one claim).
            "E_STAMP_CONFLICT",
            Box::new(|m, _| {
                m.insert(
                    "colibri.fmt".into(),
                    format!("{{\"{W}\": \"int8-row\", \"{W}\": \"int4-rans256-g0\"}}"),
                );
            }),
        ),
        (
            "E_STAMP_CONFLICT",
            Box::new(|m, _| {
                m.insert(
                    "colibri.fmt".into(),
                    format!("{{\"{W}\": \"int4-rans256-g0\", \"{W}\": \"int8-row\"}}"),
                );
            }),
        ),
        (
            "E_TABLE_MISSING",
            Box::new(|m, _| {
                m.remove("colibri.int4-rans256-g0.table");
            }),
        ),
        (
            "E_TABLE_CRC",
            Box::new(|m, _| {
                let t = m["colibri.int4-rans256-g0.table"].clone();
                let at = t.find("\"table_crc32\": \"").unwrap() + 16;
                let mut t2 = t.clone();
                t2.replace_range(
                    at..at + 8,
                    if &t[at..at + 8] == "00000000" { "11111111" } else { "00000000" },
                );
                m.insert("colibri.int4-rans256-g0.table".into(), t2);
            }),
        ),
        (
            "E_STAMP_DANGLING",
            Box::new(|m, _| {
                m.insert(
                    "colibri.fmt".into(),
                    format!("{{\"ghost\": \"int4-rans256-g0\", \"{W}\": \"int4-rans256-g0\"}}"),
                );
            }),
        ),
        (
            "E_STAMP_DTYPE",
            Box::new(|_, ts| {
                ts.iter_mut().find(|t| t.0 == W).unwrap().1 = "I8".into();
            }),
        ),
        (
            "E_PAD_NONZERO",
            Box::new(|_, ts| {
                ts.iter_mut().find(|t| t.0 == W).unwrap().3[1050] = 1;
            }),
        ),
        (
            "E_TRUNCATED",
            Box::new(|_, ts| {
                let r = &mut ts.iter_mut().find(|t| t.0 == W).unwrap().3;
                r.truncate(100);
            }),
        ),
    ];
    for (class, edit) in edits {
        let p = packed();
        std::fs::remove_file(p.dir.join("repack-manifest.json")).unwrap();
        rewrite(&p.shard, |m, ts| edit(m, ts));
        let got = classes(&p.shard);
        assert!(got.contains(&class), "{class}: got {got:?}");
        assert_eq!(got.len(), 1, "{class}: exactly one refusal, got {got:?}");
    }
}

/// `unpack` refuses a tensor stamped two ways in one `colibri.fmt` object, whichever claim
/// comes first, and writes no shard.
#[test]
fn unpack_refuses_a_tensor_stamped_two_ways() {
    for order in [["int8-row", "int4-rans256-g0"], ["int4-rans256-g0", "int8-row"]] {
        let p = packed();
        std::fs::remove_file(p.dir.join("repack-manifest.json")).unwrap();
        rewrite(&p.shard, |m, _| {
            let [a, b] = order;
            m.insert("colibri.fmt".into(), format!("{{\"{W}\": \"{a}\", \"{W}\": \"{b}\"}}"));
        });
        let out = p.dir.parent().unwrap().join("restored");
        let (code, out_text, err) =
            tetrad(&["unpack", "--without-manifest", "--indir", s(&p.dir), "--outdir", s(&out)]);
        let err = out_text + &err;
        assert_eq!(code, 1, "{order:?}: {err}");
        assert!(err.contains("E_STAMP_CONFLICT"), "{order:?}: {err}");
        assert!(err.contains(&format!("both \"{}\" and \"{}\"", order[0], order[1])), "{err}");
        let written = std::fs::read_dir(&out).map_or(0, |d| {
            d.filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "safetensors"))
                .count()
        });
        assert_eq!(written, 0, "{order:?}: nothing written");
    }
}

#[test]
fn verify_refuses_stream_corruption_and_reencode_mismatch() {
    // A flipped payload byte is caught by the stream seal.
    let p = packed();
    std::fs::remove_file(p.dir.join("repack-manifest.json")).unwrap();
    rewrite(&p.shard, |_, ts| {
        let r = &mut ts.iter_mut().find(|t| t.0 == W).unwrap().3;
        r[1056 + 40] ^= 0x10;
    });
    let got = classes(&p.shard);
    assert_eq!(got.len(), 1);
    assert!(got[0].starts_with("E_STREAM_"), "{got:?}");

    // An odd n_symbols record built by the codec itself decodes but can never re-encode.
    let p = packed();
    std::fs::remove_file(p.dir.join("repack-manifest.json")).unwrap();
    rewrite(&p.shard, |m, ts| {
        let parts = tetrad::table_json::parse(&m["colibri.int4-rans256-g0.table"]).unwrap();
        let table = tetrad::table_json::table_from_parts(&parts).unwrap();
        let nibbles: Vec<u8> = (0..1001).map(|k| [8u8, 7, 9][k % 3]).collect();
        let mut blob = vec![0u8; tetrad_rans::max_record_len(nibbles.len(), 256)];
        let n = tetrad_rans::encode_record(
            &table,
            tetrad_rans::Nibbles::Unpacked(&nibbles),
            256,
            &mut blob,
        )
        .unwrap();
        blob.truncate(n);
        let r = ts.iter_mut().find(|t| t.0 == W).unwrap();
        r.2 = vec![n as u64];
        r.3 = blob;
    });
    assert_eq!(classes(&p.shard), ["E_SYMBOL_UNCODABLE"], "freq[0] == 0 in a real table");
}

#[test]
fn verify_checks_manifest_digests() {
    let p = packed();
    assert!(classes(&p.shard).is_empty());
    let mpath = p.dir.join("repack-manifest.json");
    let manifest = std::fs::read_to_string(&mpath).unwrap();

    std::fs::write(&mpath, "{not json").unwrap();
    assert_eq!(classes(&p.shard), ["E_MANIFEST_MALFORMED"]);

    std::fs::write(&mpath, manifest.replace("out-rans-00000", "out-rans-00009")).unwrap();
    assert_eq!(classes(&p.shard), ["E_DIGEST_MISSING"]);

    let sha_at = manifest.find("   \"sha256\": \"").unwrap() + 14;
    let mut m2 = manifest.clone();
    m2.replace_range(sha_at..sha_at + 4, "0000");
    std::fs::write(&mpath, &m2).unwrap();
    assert_eq!(
        classes(&p.shard),
        ["E_SHARD_DIGEST_MISMATCH"],
        "then continues: records still fine"
    );

    let rec_at = manifest.find(&format!("\"{W}\": \"")).unwrap() + W.len() + 5;
    let mut m3 = manifest.clone();
    m3.replace_range(rec_at..rec_at + 4, "0000");
    std::fs::write(&mpath, &m3).unwrap();
    assert_eq!(classes(&p.shard), ["E_DIGEST_MISMATCH"]);

    let line_start = manifest.find(&format!("    \"{W}\"")).unwrap();
    let line_end = manifest[line_start..].find('\n').unwrap() + line_start + 1;
    let mut m4 = manifest.clone();
    m4.replace_range(line_start..line_end, "");
    std::fs::write(&mpath, &m4).unwrap();
    assert_eq!(classes(&p.shard), ["E_DIGEST_MISSING"]);

    // The CLI prints the refusal lines and the final verdict.
    std::fs::write(&mpath, &m3).unwrap();
    let (code, out, _) = tetrad(&["verify", s(&p.shard)]);
    assert_eq!(code, 1);
    assert!(
        out.lines().any(|l| l
            .starts_with(&format!("REFUSE out-rans-00000.safetensors {W} E_DIGEST_MISMATCH: "))),
        "{out}"
    );
    assert_eq!(out.lines().last().unwrap(), "RESULT: REFUSE (1 refusal(s))");
    let (code, _, _) = tetrad(&["verify"]);
    assert_eq!(code, 2);
}

/// Rebuilds a 256-stream record with stream `k` replaced by `new` (offsets and padding redone).
fn replace_stream(blob: &[u8], k: usize, new: &[u8]) -> Vec<u8> {
    let off =
        |i: usize| u32::from_le_bytes(blob[16 + 4 * i..20 + 4 * i].try_into().unwrap()) as usize;
    let payload = &blob[1056..];
    let mut streams: Vec<Vec<u8>> =
        (0..256).map(|i| payload[off(i)..off(i + 1)].to_vec()).collect();
    streams[k] = new.to_vec();
    let mut out = blob[..1056].to_vec();
    let mut at = 0u32;
    for (i, s) in streams.iter().enumerate() {
        out[16 + 4 * i..20 + 4 * i].copy_from_slice(&at.to_le_bytes());
        at += s.len() as u32;
    }
    out[16 + 4 * 256..20 + 4 * 256].copy_from_slice(&at.to_le_bytes());
    for s in &streams {
        out.extend_from_slice(s);
    }
    out.resize(1056 + (at as usize).div_ceil(16) * 16, 0);
    out
}

#[test]
fn verify_refuses_a_sealed_stream_no_encoder_writes() {
    // A stream whose first decode step refills one byte has a twin one byte shorter whose
    // initial state (≥ 2^31) already holds that byte: it decodes to the same nibbles and passes
    // every seal, but it is not the encoder's output, so re-encoding cannot reproduce it.
    let p = packed();
    std::fs::remove_file(p.dir.join("repack-manifest.json")).unwrap();
    let mut found = false;
    rewrite(&p.shard, |m, ts| {
        let parts = tetrad::table_json::parse(&m["colibri.int4-rans256-g0.table"]).unwrap();
        let t = tetrad::table_json::table_from_parts(&parts).unwrap();
        let rec = &mut ts.iter_mut().find(|x| x.0 == W).unwrap();
        let r = tetrad_rans::Record::parse(&rec.3).unwrap();
        for k in 0..256 {
            let c = r.stream(k);
            let x0c = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
            let slot = x0c & (t.m() - 1);
            let s = usize::from(t.symbol(slot as usize));
            let (f, st) = (t.freq()[s], t.start()[s]);
            let x1raw = f * (x0c >> t.scale_bits()) + slot - st;
            if x1raw >= 1 << 23 || c.len() < 6 {
                continue;
            }
            let x1 = (u64::from(x1raw) << 8) | u64::from(c[4]);
            if x1 < 1 << 23 {
                continue;
            }
            let x0 = (x1 / u64::from(f)) * u64::from(t.m()) + x1 % u64::from(f) + u64::from(st);
            let Ok(x0) = u32::try_from(x0) else { continue };
            let mut twin = x0.to_be_bytes().to_vec();
            twin.extend_from_slice(&c[5..]);
            let new = replace_stream(&rec.3, k, &twin);
            rec.2 = vec![new.len() as u64];
            rec.3 = new;
            found = true;
            break;
        }
    });
    assert!(found, "no stream with a one-byte first refill");
    assert_eq!(classes(&p.shard), ["E_REENCODE_MISMATCH"]);
    // The bounded-memory path for huge records (no literal re-encode) reaches the same verdict.
    let bytes = std::fs::read(&p.shard).unwrap();
    let h = ShardHeader::parse(&bytes, bytes.len() as u64).unwrap();
    let parts =
        tetrad::table_json::parse(&h.metadata.as_ref().unwrap()["colibri.int4-rans256-g0.table"])
            .unwrap();
    let table = tetrad::table_json::table_from_parts(&parts).unwrap();
    let e = h.tensor(W).unwrap();
    let blob = &bytes[(h.data_start + e.begin) as usize..(h.data_start + e.end) as usize];
    let chunked = tetrad::packed::verify::check_record_with_limit(&table, blob, 0);
    assert_eq!(chunked.unwrap_err().0.name(), "E_REENCODE_MISMATCH");
}
