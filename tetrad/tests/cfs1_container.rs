//! The CFS1 container tools end to end, raw-fallback tensors, and hostile containers.
#![allow(clippy::cast_possible_truncation)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use tetrad::shard::{HeaderStyle, OutTensor, ShardHeader, shard_bytes};

mod support;
use support::{s, tetrad};

/// A model file: int4 weights (compressible), random bytes (raw fallback), an empty tensor
/// and an F32 tensor, with data laid out in an order different from the header order.
fn model(dir: &Path) -> std::path::PathBuf {
    let (codes, _) = tetrad::synth::int4_rows(64, 512, tetrad::synth::Dist::Gaussian, 3);
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let random: Vec<u8> = (0..5000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    let f: Vec<u8> = (0..100u32).flat_map(|k| (k as f32 * 0.25).to_le_bytes()).collect();
    let ts = [
        OutTensor { name: "w", dtype: "U8", shape: &[64, 256], data: &codes },
        OutTensor { name: "noise", dtype: "U8", shape: &[5000], data: &random },
        OutTensor { name: "empty", dtype: "F32", shape: &[0], data: &[] },
        OutTensor { name: "f", dtype: "F32", shape: &[100], data: &f },
    ];
    let bytes = shard_bytes(
        &[("format".to_owned(), "pt".to_owned())].into(),
        &ts,
        HeaderStyle::EscapedUnpadded,
    )
    .unwrap();
    let p = dir.join("model.safetensors");
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn pack_verify_cert_unpack_round_trip() {
    let t = tempfile::tempdir().unwrap();
    let input = model(t.path());
    let packed = t.path().join("model.cfse.safetensors");
    let (code, out, err) = tetrad(&["cfs1", "pack", s(&input), s(&packed)]);
    assert_eq!(code, 0, "{out}");
    // The input's metadata is named as left behind (no stamp among it: no stamp warning).
    assert_eq!(
        err,
        "note: the input's __metadata__ (format) is not kept: a CFS1 container's metadata is \
         {\"cfse\":\"1\"}\n"
    );
    assert!(out.contains("pack noise: 5000 -> 5009 bytes (raw)"), "{out}");
    assert!(out.contains("pack w: 16384 -> "), "{out}");
    assert!(out.contains("(rans)"), "{out}");

    let bytes = std::fs::read(&packed).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    assert_eq!(n % 8, 0, "header padded to 8");
    let text = std::str::from_utf8(&bytes[8..8 + n]).unwrap();
    assert!(text.starts_with("{\"__metadata__\":{\"cfse\":\"1\"},\"w\":{\"dtype\":\"U8\",\"shape\":[64,256],\"data_offsets\":[0,"), "{text}");
    let h = ShardHeader::parse(&bytes, bytes.len() as u64).unwrap();
    let order: Vec<&str> = h.tensors.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(order, ["w", "noise", "empty", "f"], "input data-offset order");

    let (code, out, _) = tetrad(&["cfs1", "verify", s(&input), s(&packed)]);
    assert_eq!(code, 0, "{out}");
    // The container alone: every blob decoded and checked; the raw ones counted apart.
    let (code, out, _) = tetrad(&["cfs1", "check", s(&packed), "--json"]);
    assert_eq!(code, 0, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!((v["tensors"].as_u64(), v["bytes"].as_u64()), (Some(4), Some(16384 + 5000 + 400)));
    assert_eq!(v["rans"].as_u64().unwrap() + v["raw"].as_u64().unwrap(), 4);
    assert!(v["raw"].as_u64().unwrap() >= 1 && v["rans"].as_u64().unwrap() >= 1, "{v}");
    let (code, out, _) = tetrad(&["cfs1", "check", s(&packed)]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.starts_with("[check] 4 tensor(s), 21784 bytes decoded: ") && out.ends_with(": OK\n")
    );
    // `tetrad verify` (the int4-rans256-g0 validator) refuses it as the spec says, and points
    // to the check that applies.
    let (code, out, _) = tetrad(&["verify", s(&packed)]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("E_STAMP_MISSING") && out.contains("`tetrad cfs1 check`"), "{out}");
    let (code, out, _) = tetrad(&["cfs1", "cert", s(&input), "--json"]);
    assert_eq!(code, 0, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["ratio"].as_f64().unwrap() > 0.5 && v["ratio"].as_f64().unwrap() < 1.0);
    assert_eq!(v["dropped_metadata"], serde_json::json!(["format"]));

    let restored = t.path().join("restored.safetensors");
    let (code, out, _) = tetrad(&["cfs1", "unpack", s(&packed), s(&restored)]);
    assert_eq!(code, 0, "{out}");
    let a = std::fs::read(&input).unwrap();
    let b = std::fs::read(&restored).unwrap();
    let ha = ShardHeader::parse(&a, a.len() as u64).unwrap();
    let hb = ShardHeader::parse(&b, b.len() as u64).unwrap();
    for ta in &ha.tensors {
        let tb = hb.tensor(&ta.name).unwrap();
        assert_eq!((&ta.dtype, &ta.shape), (&tb.dtype, &tb.shape));
        let da = &a[(ha.data_start + ta.begin) as usize..(ha.data_start + ta.end) as usize];
        let db = &b[(hb.data_start + tb.begin) as usize..(hb.data_start + tb.end) as usize];
        assert_eq!(da, db, "{}", ta.name);
    }
}

/// A stamped file: pack says the stamp does not come back, and indeed `unpack` restores the
/// tensors without it (the container format replaces `__metadata__`).
#[test]
fn pack_names_the_stamps_it_leaves_behind() {
    let t = tempfile::tempdir().unwrap();
    let (codes, _) = tetrad::synth::int4_rows(4, 64, tetrad::synth::Dist::Gaussian, 5);
    let qs: Vec<u8> = (0..4u32).flat_map(|_| 0.5f32.to_le_bytes()).collect();
    let ts = [
        OutTensor { name: "w", dtype: "U8", shape: &[4, 32], data: &codes },
        OutTensor { name: "w.qs", dtype: "F32", shape: &[4], data: &qs },
    ];
    let meta: BTreeMap<String, String> = [
        ("colibri.fmt".to_owned(), "{\"w\": \"int4-row\"}".to_owned()),
        ("format".to_owned(), "pt".to_owned()),
    ]
    .into();
    let input = t.path().join("stamped.safetensors");
    std::fs::write(&input, shard_bytes(&meta, &ts, HeaderStyle::EscapedUnpadded).unwrap()).unwrap();
    let packed = t.path().join("stamped.cfse.safetensors");
    let (code, out, err) = tetrad(&["cfs1", "pack", s(&input), s(&packed)]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.starts_with("note: the input's __metadata__ (colibri.fmt, format) is not kept: "),
        "{err}"
    );
    assert!(err.contains("its colibri.fmt stamps do not come back through `cfs1 unpack`"), "{err}");
    let restored = t.path().join("restored.safetensors");
    let (code, out, _) = tetrad(&["cfs1", "unpack", s(&packed), s(&restored)]);
    assert_eq!(code, 0, "{out}");
    let b = std::fs::read(&restored).unwrap();
    assert_eq!(ShardHeader::parse(&b, b.len() as u64).unwrap().metadata, None);
}

#[test]
fn hostile_containers_are_refused_without_output() {
    let t = tempfile::tempdir().unwrap();
    let input = model(t.path());
    let packed = t.path().join("c.safetensors");
    assert_eq!(tetrad(&["cfs1", "pack", s(&input), s(&packed)]).0, 0);
    let good = std::fs::read(&packed).unwrap();
    let n = u64::from_le_bytes(good[..8].try_into().unwrap()) as usize;
    let header = std::str::from_utf8(&good[8..8 + n]).unwrap().to_owned();
    // Offsets are relative to the data section, so a header of another length is fine.
    let with_header = |h: &str| {
        let mut v = (h.len() as u64).to_le_bytes().to_vec();
        v.extend_from_slice(h.as_bytes());
        v.extend_from_slice(&good[8 + n..]);
        v
    };
    let first_end: u64 = {
        let h = ShardHeader::parse(&good, good.len() as u64).unwrap();
        h.tensor("w").unwrap().end
    };
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("truncated", good[..good.len() - 3].to_vec()),
        ("header length lie", {
            let mut g = good.clone();
            g[..8].copy_from_slice(&(good.len() as u64 * 2).to_le_bytes());
            g
        }),
        ("huge header claim", {
            let mut g = good.clone();
            g[..8].copy_from_slice(&(600u64 << 20).to_le_bytes());
            g
        }),
        ("bad json", with_header(&header.replacen('{', "[", 1))),
        (
            "overlap",
            with_header(&header.replacen(
                &format!("\"data_offsets\":[{first_end},"),
                &format!("\"data_offsets\":[{},", first_end - 4),
                1,
            )),
        ),
        (
            "out of range",
            with_header(&header.replacen(
                &format!("\"data_offsets\":[0,{first_end}]"),
                "\"data_offsets\":[0,99999999]",
                1,
            )),
        ),
        ("shape lie", with_header(&header.replacen("\"shape\":[64,256]", "\"shape\":[64,255]", 1))),
        ("not cfse", with_header(&header.replacen("\"cfse\":\"1\"", "\"cfse\":\"2\"", 1))),
        ("payload flip", {
            let mut g = good.clone();
            let k = 8 + n + 60;
            g[k] ^= 0x40;
            g
        }),
    ];
    for (what, bytes) in cases {
        std::fs::write(&packed, &bytes).unwrap();
        let out_path = t.path().join("out.safetensors");
        let (code, out, _) = tetrad(&["cfs1", "unpack", s(&packed), s(&out_path)]);
        assert_eq!(code, 1, "{what}: {out}");
        assert!(out.starts_with("REFUSED E_"), "{what}: {out}");
        assert!(!out_path.exists(), "{what}: no output on failure");
        let (code, _, _) = tetrad(&["cfs1", "verify", s(&input), s(&packed)]);
        assert_eq!(code, 1, "{what}");
        let (code, out, _) = tetrad(&["cfs1", "check", s(&packed)]);
        assert_eq!(code, 1, "{what}: {out}");
        assert!(out.starts_with("REFUSED E_"), "{what}: {out}");
    }
    // A plain shard is not a container.
    let (code, out, _) = tetrad(&["cfs1", "check", s(&input)]);
    assert_eq!((code, out.starts_with("REFUSED E_NOT_CFSE")), (1, true), "{out}");
}

#[test]
fn names_that_need_escaping_are_refused_and_nothing_is_written() {
    let t = tempfile::tempdir().unwrap();
    let ts = [OutTensor { name: "we\"ird", dtype: "U8", shape: &[4], data: &[1, 2, 3, 4] }];
    let p = t.path().join("m.safetensors");
    std::fs::write(&p, shard_bytes(&BTreeMap::new(), &ts, HeaderStyle::EscapedUnpadded).unwrap())
        .unwrap();
    let out = t.path().join("o.safetensors");
    let (code, text, _) = tetrad(&["cfs1", "pack", s(&p), s(&out)]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("escaping"), "{text}");
    assert!(!out.exists());
    assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 1, "no temp file left");
    // `cert` certifies what `pack` would write: the same refusal (it printed a ratio).
    let (code, text, _) = tetrad(&["cfs1", "cert", s(&p)]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("E_NAME_UNSUPPORTED") && text.contains("escaping"), "{text}");
}

/// `inspect` shows a CFS1 container's blobs (it refused the file: its data_offsets cover
/// blobs, not the declared bytes), and `stats` measures the tensors the blobs decode to, with
/// the same numbers as the original file (it skipped them, reading I from the blob size).
#[test]
fn inspect_and_stats_read_cfs1_containers() {
    let dir = tempfile::tempdir().unwrap();
    // A float matrix (measured after quantizing) and unstamped int8-sized codes with scales.
    let w: Vec<u8> = (0..64 * 96u32)
        .flat_map(|k| ((k.wrapping_mul(2_654_435_761) >> 20) as f32 / 700.0 - 2.0).to_le_bytes())
        .collect();
    let (codes, _) = tetrad::synth::int4_rows(32, 256, tetrad::synth::Dist::Gaussian, 5);
    let qs: Vec<u8> = (0..32).flat_map(|k| (k as f32 + 1.0).to_le_bytes()).collect();
    let ts = [
        OutTensor { name: "a.weight", dtype: "F32", shape: &[64, 96], data: &w },
        OutTensor { name: "b.weight", dtype: "U8", shape: &[32, 128], data: &codes },
        OutTensor { name: "b.weight.qs", dtype: "F32", shape: &[32], data: &qs },
    ];
    let input = dir.path().join("m.safetensors");
    std::fs::write(
        &input,
        shard_bytes(&BTreeMap::new(), &ts, HeaderStyle::EscapedUnpadded).unwrap(),
    )
    .unwrap();
    let packed = dir.path().join("c.safetensors");
    assert_eq!(tetrad(&["cfs1", "pack", s(&input), s(&packed)]).0, 0);

    let (code, text, _) = tetrad(&["inspect", s(&packed)]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("metadata cfse: 1"), "{text}");
    assert!(text.contains("b.weight U8 [32, 128]"), "{text}");
    assert!(text.contains("CFS1 rANS blob of 4096 bytes"), "{text}");
    assert!(text.contains("b.weight.qs F32 [32]"), "{text}");
    // A directory stands for its shards.
    let (code, text2, _) = tetrad(&["inspect", s(dir.path())]);
    assert_eq!(code, 0, "{text2}");
    assert!(text2.contains("c.safetensors") && text2.contains("m.safetensors"), "{text2}");

    let measure = |p: &Path| {
        let (code, out, _) = tetrad(&["stats", "--json", "--per-tensor", "--no-zstd", s(p)]);
        assert_eq!(code, 0, "{out}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["skipped"].as_array().unwrap().len(), 0, "{out}");
        let mut t = v["tensors"].as_array().unwrap().clone();
        for x in &mut t {
            x.as_object_mut().unwrap().remove("file");
        }
        t
    };
    let (plain, cfs1) = (measure(&input), measure(&packed));
    assert_eq!(plain.len(), 2);
    assert_eq!(plain, cfs1);
}

/// A 153-byte container whose one tensor claims 2^32 − 1 bytes (a mode-1 blob with that
/// `rawlen` and no payload) is refused at its first output byte without sizing anything by the
/// claim: `cfs1 unpack` allocated and zeroed 4 GiB (17 s) before refusing it. Run under a 1 GiB
/// address-space limit, where that allocation aborts.
#[cfg(target_os = "linux")]
#[test]
fn a_blob_claiming_4_gib_is_refused_without_allocating_it() {
    let blob = |rawlen: u32| {
        [
            &b"CFS1"[..],
            &[1],
            &rawlen.to_le_bytes(),
            // freq: 0x800 for symbols 0 and 1, 0 elsewhere; states xA = xB = 2^23 (= L).
            &[0x00, 0x08, 0x00, 0x08],
            &[0; 28],
            &0x0080_0000u32.to_le_bytes(),
            &0x0080_0000u32.to_le_bytes(),
        ]
        .concat()
    };
    let t = tempfile::tempdir().unwrap();
    let meta: BTreeMap<String, String> = [("cfse".to_owned(), "1".to_owned())].into();
    // A U8 vector (unpack; verify decodes the same way) and an F32 matrix (stats quantizes it): 4 GiB each.
    let (bytes_u8, bytes_f32) = (blob(u32::MAX), blob(8 * 134_217_727 * 4));
    let (shape_u8, shape_f32) = ([u64::from(u32::MAX)], [8u64, 134_217_727]);
    let u8_file = t.path().join("u8.safetensors");
    let ts = [OutTensor { name: "t", dtype: "U8", shape: &shape_u8, data: &bytes_u8 }];
    std::fs::write(&u8_file, shard_bytes(&meta, &ts, HeaderStyle::RawPadded8).unwrap()).unwrap();
    let f32_file = t.path().join("f32.safetensors");
    let ts = [OutTensor { name: "w", dtype: "F32", shape: &shape_f32, data: &bytes_f32 }];
    std::fs::write(&f32_file, shard_bytes(&meta, &ts, HeaderStyle::RawPadded8).unwrap()).unwrap();
    let out = t.path().join("o.safetensors");
    for args in [
        vec!["cfs1", "unpack", s(&u8_file), s(&out)],
        vec!["stats", "--json", "--no-zstd", s(&f32_file)],
    ] {
        let o = Command::new("sh")
            .arg("-c")
            .arg("ulimit -v 1048576; exec \"$0\" \"$@\"")
            .arg(env!("CARGO_BIN_EXE_tetrad"))
            .args(&args)
            .output()
            .unwrap();
        let text =
            String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
        assert!(o.status.code().is_some(), "{args:?} was killed: {text}");
        assert!(text.contains("E_TRUNCATED"), "{args:?}: {text}");
    }
    assert!(!out.exists());
}

/// "Every tensor's raw bytes (whatever its dtype) become one CFS1 blob": the newer
/// safetensors dtypes (sub-byte `F4`, `F6_*`, `C64`) are sized by their bits, a dtype tetrad
/// does not know is carried at its `data_offsets` (both were refused as malformed), and a
/// known dtype whose shape does not match its bytes is still refused.
#[test]
fn any_dtype_is_carried() {
    let t = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..120u32).map(|k| (k * 37 % 11) as u8).collect();
    let ts = [
        OutTensor { name: "f4", dtype: "F4", shape: &[2, 120], data: &data },
        OutTensor { name: "f6", dtype: "F6_E2M3", shape: &[160], data: &data },
        OutTensor { name: "c64", dtype: "C64", shape: &[3, 5], data: &data },
        OutTensor { name: "q7", dtype: "Q7", shape: &[7], data: &data },
    ];
    let p = t.path().join("m.safetensors");
    std::fs::write(&p, shard_bytes(&BTreeMap::new(), &ts, HeaderStyle::EscapedUnpadded).unwrap())
        .unwrap();
    let (c, u) = (t.path().join("c.safetensors"), t.path().join("u.safetensors"));
    let (code, text, _) = tetrad(&["cfs1", "pack", s(&p), s(&c)]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(tetrad(&["cfs1", "verify", s(&p), s(&c)]).0, 0);
    assert_eq!(tetrad(&["cfs1", "unpack", s(&c), s(&u)]).0, 0);
    let back = ShardHeader::parse(&std::fs::read(&u).unwrap(), u64::MAX).unwrap();
    let dtypes: Vec<&str> = back.tensors.iter().map(|t| t.dtype.as_str()).collect();
    assert_eq!(dtypes, ["F4", "F6_E2M3", "C64", "Q7"]);
    let (code, text, _) = tetrad(&["inspect", s(&c)]);
    assert_eq!(code, 0, "{text}");
    // F6 × 161 is not whole bytes; F4 [2, 121] is 121 bytes, not 120: refused.
    for (dtype, shape) in [("F6_E2M3", &[161u64][..]), ("F4", &[2, 121][..])] {
        let ts = [OutTensor { name: "x", dtype, shape, data: &data }];
        std::fs::write(
            &p,
            shard_bytes(&BTreeMap::new(), &ts, HeaderStyle::EscapedUnpadded).unwrap(),
        )
        .unwrap();
        let (code, text, _) = tetrad(&["cfs1", "pack", s(&p), s(&t.path().join("x.safetensors"))]);
        assert_eq!(code, 1, "{dtype}: {text}");
        assert!(text.contains("E_SHARD_MALFORMED"), "{text}");
    }
}
