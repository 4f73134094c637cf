//! `tetrad unpack` holds a packed directory to its manifest as `verify` does and writes all or
//! nothing, for both codecs a manifest can name:
//! - a shard whose bytes differ from the manifest's (a flipped `.qs` byte, trailing bytes, two
//!   shards swapped by name) is refused with verify's class (`E_SHARD_DIGEST_MISMATCH`), and
//!   so are a wrong or missing record / original digest (`E_DIGEST_MISMATCH`,
//!   `E_DIGEST_MISSING`) and a shard the manifest does not list (`E_DIGEST_MISSING`);
//! - the directory must hold what the manifest lists: a missing shard or a shard that is a
//!   directory is `E_SHARD_MALFORMED`; two shards restoring to one name are
//!   `E_MANIFEST_MALFORMED`, in `verify` too (it said TRUST);
//! - any refusal leaves the output directory as it was: no restored shard, no temporary file,
//!   existing outputs untouched even with `--force`.
#![allow(clippy::cast_possible_truncation)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use tetrad::packed::manifest::parse_digests;
use tetrad::shard::{HeaderStyle, OutTensor, ShardHeader, shard_bytes};
use tetrad::synth::{Dist, int4_rows};

mod support;
use support::{s, tetrad};

const CODECS: [&str; 2] = ["int4-rans256-g0", "int4-rans64-t1"];
const OUT0: &str = "out-rans-00000.safetensors";
const OUT1: &str = "out-rans-00001.safetensors";
const SRC0: &str = "model-00001-of-00002.safetensors";
const SRC1: &str = "model-00002-of-00002.safetensors";
const MANIFEST: &str = "repack-manifest.json";

/// An edit of the manifest's JSON.
type Edit<'a> = Box<dyn Fn(&mut Value) + 'a>;

fn weight(layer: usize, proj: &str) -> String {
    format!("model.layers.{layer}.mlp.experts.0.{proj}_proj.weight")
}

/// Two shards of only expert weights (U8 `[O, I/2]`) and their F32 `.qs`: exactly what unpack
/// writes back, so restored files equal these byte for byte. The shards differ in size.
fn checkpoint(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for (layer, src) in [SRC0, SRC1].into_iter().enumerate() {
        let (o, i) = (24 + 8 * layer, 64);
        let mut owned: Vec<(String, &str, Vec<u64>, Vec<u8>)> = Vec::new();
        for (k, proj) in ["down", "gate", "up"].into_iter().enumerate() {
            let dist = [Dist::Gaussian, Dist::Laplace, Dist::StudentT][k];
            let (codes, scales) = int4_rows(o, i, dist, (layer * 10 + k) as u64);
            let qs: Vec<u8> = scales.iter().flat_map(|f| f.to_le_bytes()).collect();
            owned.push((weight(layer, proj), "U8", vec![o as u64, (i / 2) as u64], codes));
            owned.push((format!("{}.qs", weight(layer, proj)), "F32", vec![o as u64], qs));
        }
        let tensors: Vec<OutTensor<'_>> = owned
            .iter()
            .map(|(n, d, sh, b)| OutTensor { name: n, dtype: d, shape: sh, data: b })
            .collect();
        let bytes = shard_bytes(&BTreeMap::new(), &tensors, HeaderStyle::EscapedUnpadded).unwrap();
        std::fs::write(dir.join(src), bytes).unwrap();
    }
}

/// A checkpoint and its packed form (`codec`) in a temporary directory.
struct Case {
    _t: tempfile::TempDir,
    input: PathBuf,
    packed: PathBuf,
    out: PathBuf,
}

fn packed(codec: &str) -> Case {
    let t = tempfile::tempdir().unwrap();
    let (input, packed, out) =
        (t.path().join("in"), t.path().join("packed"), t.path().join("restored"));
    checkpoint(&input);
    let (code, o, e) = tetrad(&[
        "pack",
        "--indir",
        s(&input),
        "--outdir",
        s(&packed),
        "--codec",
        codec,
        "--quiet",
    ]);
    assert_eq!(code, 0, "{o}{e}");
    Case { _t: t, input, packed, out }
}

impl Case {
    fn shard(&self, name: &str) -> PathBuf {
        self.packed.join(name)
    }

    /// `tetrad unpack --indir packed --outdir restored` and `extra`: (exit code, stdout).
    fn unpack(&self, extra: &[&str]) -> (i32, String) {
        let mut args = vec!["unpack", "--indir", s(&self.packed), "--outdir", s(&self.out)];
        // A set without its manifest is refused as a whole unless asked for shard by shard;
        // the cases below check what each shard then meets.
        if !self.packed.join(MANIFEST).exists() {
            args.push("--without-manifest");
        }
        args.extend_from_slice(extra);
        let (code, out, err) = tetrad(&args);
        (code, out + &err)
    }

    /// `tetrad verify` on the given shards of the packed directory: (exit code, stdout).
    fn verify(&self, shards: &[&str]) -> (i32, String) {
        let paths: Vec<PathBuf> = shards.iter().map(|n| self.shard(n)).collect();
        let mut args = vec!["verify"];
        args.extend(paths.iter().map(|p| s(p)));
        let (code, out, _) = tetrad(&args);
        (code, out)
    }

    fn edit_manifest(&self, edit: impl FnOnce(&mut Value)) {
        let p = self.packed.join(MANIFEST);
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        edit(&mut v);
        std::fs::write(&p, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    }

    /// Unpack must refuse with `class`, naming `shard`, and leave no output directory.
    fn assert_refused(&self, class: &str, shard: &str) -> String {
        let (code, out) = self.unpack(&[]);
        assert_eq!(code, 1, "{out}");
        assert!(out.starts_with(&format!("REFUSED {class}: ")), "want {class}: {out}");
        assert!(out.contains(shard), "the refusal names {shard}: {out}");
        assert!(!self.out.exists(), "nothing written: {:?}", listing(&self.out));
        out
    }
}

/// The names in `dir` (hidden ones too), sorted; empty when `dir` does not exist.
fn listing(dir: &Path) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut v: Vec<String> =
        rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// Where tensor `t`'s data lies in a shard file.
fn data_range(file: &[u8], t: &str) -> std::ops::Range<usize> {
    let h = ShardHeader::parse(file, file.len() as u64).unwrap();
    let e = h.tensor(t).unwrap();
    let at = (h.data_start + e.begin) as usize;
    at..at + e.len() as usize
}

fn xor_byte(path: &Path, at: usize) {
    let mut b = std::fs::read(path).unwrap();
    b[at] ^= 0x01;
    std::fs::write(path, b).unwrap();
}

#[test]
fn a_flipped_scale_byte_is_refused_as_verify_refuses_it() {
    for codec in CODECS {
        let c = packed(codec);
        let p = c.shard(OUT0);
        let file = std::fs::read(&p).unwrap();
        let qs = data_range(&file, &format!("{}.qs", weight(0, "up")));
        assert_eq!(qs.end, file.len(), "the last tensor is a .qs");
        xor_byte(&p, qs.end - 5);
        let (code, out) = c.verify(&[OUT0]);
        assert_eq!(code, 1, "{out}");
        assert!(out.contains(&format!("REFUSE {OUT0} - E_SHARD_DIGEST_MISMATCH: ")), "{out}");
        let out = c.assert_refused("E_SHARD_DIGEST_MISMATCH", OUT0);
        assert!(out.contains(&format!("{OUT0}: file sha256 ")), "{codec}: {out}");
    }
}

#[test]
fn trailing_bytes_are_refused() {
    for codec in CODECS {
        let c = packed(codec);
        let p = c.shard(OUT1);
        let mut file = std::fs::read(&p).unwrap();
        let len = file.len();
        file.extend_from_slice(&[0u8; 16]);
        std::fs::write(&p, &file).unwrap();
        let want = format!("the file is {} bytes, manifest says {len}", len + 16);
        let (code, out) = c.verify(&[OUT1]);
        assert_eq!(code, 1, "{out}");
        assert!(out.contains(&format!("REFUSE {OUT1} - E_SHARD_DIGEST_MISMATCH: ")), "{out}");
        let out = c.assert_refused("E_SHARD_DIGEST_MISMATCH", &want);
        assert!(out.contains(&want), "{codec}: {out}");
    }
}

#[test]
fn swapped_shards_are_refused() {
    for codec in CODECS {
        let c = packed(codec);
        let tmp = c.shard("swap.tmp");
        std::fs::rename(c.shard(OUT0), &tmp).unwrap();
        std::fs::rename(c.shard(OUT1), c.shard(OUT0)).unwrap();
        std::fs::rename(&tmp, c.shard(OUT1)).unwrap();
        c.assert_refused("E_SHARD_DIGEST_MISMATCH", OUT0);
    }
}

#[test]
fn record_and_original_digests_are_held_as_verify_holds_them() {
    let w = weight(0, "gate");
    for codec in CODECS {
        let c = packed(codec);
        let good = std::fs::read_to_string(c.packed.join(MANIFEST)).unwrap();
        let restore = || std::fs::write(c.packed.join(MANIFEST), &good).unwrap();
        let mut cases: Vec<(&str, &str, Edit<'_>)> = vec![
            (
                "E_DIGEST_MISMATCH",
                "record sha256 ",
                Box::new(|v: &mut Value| v["shards"][0]["records"][&w] = "00".repeat(32).into()),
            ),
            (
                "E_DIGEST_MISSING",
                "has no digest for this record",
                Box::new(|v: &mut Value| {
                    v["shards"][0]["records"].as_object_mut().unwrap().remove(&w);
                }),
            ),
        ];
        if codec == "int4-rans64-t1" {
            cases.push((
                "E_DIGEST_MISSING",
                "has no digest of this tensor's original bytes",
                Box::new(|v: &mut Value| {
                    v["shards"][0]["originals"].as_object_mut().unwrap().remove(&w);
                }),
            ));
        }
        for (class, detail, edit) in cases {
            restore();
            c.edit_manifest(edit);
            let (code, out) = c.verify(&[OUT0]);
            assert_eq!(code, 1, "{out}");
            assert!(out.contains(&format!("REFUSE {OUT0} {w} {class}: ")), "{out}");
            let out = c.assert_refused(class, &format!("{OUT0} {w}: "));
            assert!(out.contains(detail), "{codec} {class}: {out}");
        }
        restore();
        c.edit_manifest(|v| {
            v["shards"][1].as_object_mut().unwrap().remove("sha256");
        });
        let out = c.assert_refused("E_DIGEST_MISSING", OUT1);
        assert!(out.contains("has no sha256 for this shard"), "{out}");
        restore();
        let (code, out) = c.unpack(&[]);
        assert_eq!(code, 0, "the genuine manifest passes: {out}");
    }
}

#[test]
fn a_shard_the_manifest_does_not_list_is_refused() {
    for codec in CODECS {
        let c = packed(codec);
        let extra = "out-rans-00002.safetensors";
        std::fs::copy(c.shard(OUT1), c.shard(extra)).unwrap();
        let (code, out) = c.verify(&[extra]);
        assert_eq!(code, 1, "{out}");
        assert!(out.contains(&format!("REFUSE {extra} - E_DIGEST_MISSING: ")), "{out}");
        let out = c.assert_refused("E_SHARD_UNLISTED", extra);
        assert!(out.contains("not listed in repack-manifest.json"), "{out}");
    }
}

#[test]
fn a_listed_shard_that_is_missing_is_refused() {
    for codec in CODECS {
        let c = packed(codec);
        std::fs::remove_file(c.shard(OUT1)).unwrap();
        let out = c.assert_refused("E_SHARD_MISSING", OUT1);
        assert!(out.contains("listed in repack-manifest.json but missing"), "{out}");
    }
}

#[test]
fn a_shard_that_is_a_directory_is_refused() {
    let c = packed(CODECS[0]);
    std::fs::remove_file(c.shard(OUT1)).unwrap();
    std::fs::create_dir(c.shard(OUT1)).unwrap();
    let out = c.assert_refused("E_SHARD_MALFORMED", OUT1);
    assert!(out.contains("is a directory"), "{out}");
    // Without a manifest too: an out-rans entry that is a directory is never skipped.
    let c = packed(CODECS[1]);
    std::fs::remove_file(c.packed.join(MANIFEST)).unwrap();
    let first = c.packed.with_file_name("first");
    let (code, out, _) =
        tetrad(&["unpack", "--without-manifest", "--indir", s(&c.packed), "--outdir", s(&first)]);
    assert_eq!(code, 0, "{out}");
    std::fs::create_dir(c.shard("out-rans-00007.safetensors")).unwrap();
    c.assert_refused("E_SHARD_MALFORMED", "out-rans-00007.safetensors");
}

#[test]
fn an_indir_that_is_not_a_directory_is_refused() {
    let c = packed(CODECS[0]);
    let out = c.packed.with_file_name("restored");
    for (indir, says) in [
        (c.shard(OUT0), "not a directory (--indir is the directory `tetrad pack` wrote)"),
        (c.packed.join("absent"), "No such file or directory"),
    ] {
        let (code, text, _) = tetrad(&["unpack", "--indir", s(&indir), "--outdir", s(&out)]);
        assert_eq!(code, 1, "{text}");
        assert!(text.starts_with(&format!("REFUSED E_IO: {}: ", indir.display())), "{text}");
        assert!(text.contains(says), "{text}");
        assert!(!out.exists());
    }
}

#[test]
fn an_unreadable_manifest_is_refused() {
    let c = packed(CODECS[0]);
    std::fs::remove_file(c.packed.join(MANIFEST)).unwrap();
    std::fs::create_dir(c.packed.join(MANIFEST)).unwrap();
    let (code, out) = c.verify(&[OUT0]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("E_MANIFEST_MALFORMED"), "{out}");
    c.assert_refused("E_MANIFEST_MALFORMED", MANIFEST);
}

/// Two shards restoring to one name: unpack refuses the manifest (it would write one over the
/// other); verify, which restores nothing, trusts it as the spec's validator does. A file
/// listed twice is malformed for both.
#[test]
fn two_shards_restoring_to_one_name_are_refused_by_unpack() {
    let c = packed(CODECS[0]);
    let good = std::fs::read_to_string(c.packed.join(MANIFEST)).unwrap();
    let edits: [(&str, Edit<'_>); 3] = [
        ("same source", Box::new(|v: &mut Value| v["shards"][1]["source"] = SRC0.into())),
        (
            "a source equal to a sourceless shard's own name",
            Box::new(|v: &mut Value| {
                v["shards"][1].as_object_mut().unwrap().remove("source");
                v["shards"][0]["source"] = OUT1.into();
            }),
        ),
        (
            "a file listed twice",
            Box::new(|v: &mut Value| {
                let mut twin = v["shards"][0].clone();
                twin["source"] = "other.safetensors".into();
                v["shards"].as_array_mut().unwrap().push(twin);
            }),
        ),
    ];
    for (what, edit) in edits {
        std::fs::write(c.packed.join(MANIFEST), &good).unwrap();
        c.edit_manifest(edit);
        let text = std::fs::read_to_string(c.packed.join(MANIFEST)).unwrap();
        let listed_twice = what == "a file listed twice";
        let parsed = parse_digests(&text);
        assert_eq!(parsed.is_err(), listed_twice, "{what}");
        if let Ok(d) = parsed {
            assert!(d.check_restore_names().is_err(), "{what}");
        }
        let (code, out) = c.verify(&[OUT0, OUT1]);
        if listed_twice {
            assert_eq!(code, 1, "{what}: {out}");
            assert_eq!(out.matches(" - E_MANIFEST_MALFORMED: ").count(), 2, "{what}: {out}");
        } else {
            assert_eq!(code, 0, "{what}: {out}");
        }
        c.assert_refused("E_MANIFEST_MALFORMED", MANIFEST);
    }
    // Names that are not plain file names are malformed too (they would leave --outdir).
    for bad in ["../up.safetensors", "/tmp/abs.safetensors", "sub/x.safetensors", "", ".", ".."] {
        std::fs::write(c.packed.join(MANIFEST), &good).unwrap();
        c.edit_manifest(|v| v["shards"][0]["source"] = bad.into());
        c.assert_refused("E_MANIFEST_MALFORMED", "plain file name");
        std::fs::write(c.packed.join(MANIFEST), &good).unwrap();
        c.edit_manifest(|v| v["shards"][0]["file"] = bad.into());
        let (code, out) = c.verify(&[OUT0]);
        assert_eq!(code, 1, "{bad:?}: {out}");
        assert!(out.contains(" - E_MANIFEST_MALFORMED: "), "{bad:?}: {out}");
    }
    let ok = parse_digests(&good).unwrap();
    assert_eq!(ok.output_name(OUT1), SRC1);
    assert_eq!(ok.sizes[OUT0], std::fs::metadata(c.shard(OUT0)).unwrap().len());
}

#[test]
fn a_refusal_writes_nothing_and_keeps_existing_outputs() {
    for codec in CODECS {
        for with_manifest in [true, false] {
            let c = packed(codec);
            if !with_manifest {
                std::fs::remove_file(c.packed.join(MANIFEST)).unwrap();
            }
            // The second shard (decoded last) is damaged inside its last record.
            let p = c.shard(OUT1);
            let good = std::fs::read(&p).unwrap();
            let r = data_range(&good, &weight(1, "up"));
            xor_byte(&p, r.start + r.len() * 2 / 3);
            let what = format!("{codec}, manifest {with_manifest}");
            let (code, out) = c.verify(&[OUT1]);
            assert_eq!(code, 1, "{what}: {out}");

            // A new output directory: not even created.
            let (code, out) = c.unpack(&[]);
            assert_eq!(code, 1, "{what}: {out}");
            assert!(out.starts_with("REFUSED E_"), "{what}: {out}");
            assert!(out.contains(OUT1), "{what}: {out}");
            assert!(!c.out.exists(), "{what}: {:?}", listing(&c.out));

            // An existing one, with --force: exactly as it was, no temporary file left.
            let names = if with_manifest { [SRC0, SRC1] } else { [OUT0, OUT1] };
            std::fs::create_dir_all(&c.out).unwrap();
            std::fs::write(c.out.join(names[0]), b"old").unwrap();
            std::fs::write(c.out.join("keep.txt"), b"mine").unwrap();
            let before = listing(&c.out);
            let (code, out) = c.unpack(&["--force"]);
            assert_eq!(code, 1, "{what}: {out}");
            assert_eq!(listing(&c.out), before, "{what}");
            assert_eq!(std::fs::read(c.out.join(names[0])).unwrap(), b"old", "{what}");

            // Repaired: both shards restored byte for byte, the old file replaced.
            std::fs::write(&p, &good).unwrap();
            let (code, out) = c.unpack(&["--force"]);
            assert_eq!(code, 0, "{what}: {out}");
            if with_manifest {
                for src in [SRC0, SRC1] {
                    let (a, b) = (c.out.join(src), c.input.join(src));
                    assert_eq!(std::fs::read(a).unwrap(), std::fs::read(b).unwrap(), "{src}");
                }
            }
            let mut want = vec![names[0].to_owned(), names[1].to_owned(), "keep.txt".to_owned()];
            want.sort();
            assert_eq!(listing(&c.out), want, "{what}");
        }
    }
}

#[test]
fn an_output_that_is_an_input_is_refused_even_with_force() {
    let c = packed(CODECS[1]);
    c.edit_manifest(|v| v["shards"][1]["source"] = OUT1.into());
    let before = std::fs::read(c.shard(OUT1)).unwrap();
    let (code, out, _) =
        tetrad(&["unpack", "--indir", s(&c.packed), "--outdir", s(&c.packed), "--force"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.starts_with("REFUSED E_OUTPUT_IS_INPUT: "), "{out}");
    assert_eq!(std::fs::read(c.shard(OUT1)).unwrap(), before);
    assert!(!c.packed.join(SRC0).exists(), "all or nothing");
}

/// The spec's validator compares the file's sha256, not its recorded size: a manifest whose
/// `bytes` is off beside a matching sha256 is trusted by verify (it was refused) and unpacked.
#[test]
fn a_wrong_recorded_size_beside_a_matching_sha256_is_trusted() {
    for codec in CODECS {
        let c = packed(codec);
        c.edit_manifest(|v| {
            let b = v["shards"][1]["bytes"].as_u64().unwrap();
            v["shards"][1]["bytes"] = (b + 1).into();
        });
        let (code, out) = c.verify(&[OUT0, OUT1]);
        assert_eq!(code, 0, "{codec}: {out}");
        assert!(out.trim_end().ends_with("RESULT: TRUST"), "{codec}: {out}");
        let (code, out) = c.unpack(&[]);
        assert_eq!(code, 0, "{codec}: {out}");
    }
}
