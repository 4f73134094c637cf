//! Nothing lost on failure, nothing overwritten by surprise: every command that writes a file
//! (`cfs1 pack`, `cfs1 unpack`, `matmul --out`, `stats --plot`, `quantize`) refuses an output
//! that is one of its inputs (`E_OUTPUT_IS_INPUT`, even with `--force`) and an existing output
//! without `--force` (`E_OUTPUT_EXISTS`), before doing the work; `quantize` over several
//! shards is all or nothing, and its refusals name the shard file.
#![allow(clippy::cast_possible_truncation)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tetrad::shard::{HeaderStyle, OutTensor, shard_bytes};

mod support;
use support::{s, tetrad};

/// Runs `args`, expects exit 1 with `REFUSED <class>: …`, and returns the line.
fn refused(args: &[&str], class: &str) -> String {
    let (code, out, _) = tetrad(args);
    assert_eq!(code, 1, "{args:?}: {out}");
    assert!(out.starts_with(&format!("REFUSED {class}: ")), "{args:?}: want {class}: {out}");
    out
}

fn ok(args: &[&str]) -> String {
    let (code, out, _) = tetrad(args);
    assert_eq!(code, 0, "{args:?}: {out}");
    out
}

/// Deterministic float values in [-1, 1).
fn values(n: usize, seed: u32) -> Vec<f32> {
    (0..n as u32)
        .map(|k| {
            let x = k.wrapping_mul(2_654_435_761).wrapping_add(seed.wrapping_mul(40_503)) >> 8;
            (x % 2001) as f32 / 1000.0 - 1.0
        })
        .collect()
}

/// Writes a shard of F32 tensors `(name, [o, i], values)`.
fn float_shard(path: &Path, tensors: &[(&str, [u64; 2], Vec<f32>)]) {
    let bytes: Vec<Vec<u8>> =
        tensors.iter().map(|t| t.2.iter().flat_map(|v| v.to_le_bytes()).collect()).collect();
    let out: Vec<OutTensor<'_>> = tensors
        .iter()
        .zip(&bytes)
        .map(|(t, b)| OutTensor { name: t.0, dtype: "F32", shape: &t.1, data: b })
        .collect();
    let meta: BTreeMap<String, String> = BTreeMap::new();
    std::fs::write(path, shard_bytes(&meta, &out, HeaderStyle::EscapedUnpadded).unwrap()).unwrap();
}

/// A one-tensor float shard, `[o, i]`.
fn simple(path: &Path, o: u64, i: u64, seed: u32) {
    float_shard(path, &[("w.weight", [o, i], values((o * i) as usize, seed))]);
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Every entry of `dir`, sorted (to see stray temporary files).
fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn cfs1_pack_and_unpack_refuse_their_input_and_an_existing_output() {
    let t = tempfile::tempdir().unwrap();
    let input = t.path().join("model.safetensors");
    simple(&input, 8, 64, 1);
    let original = std::fs::read(&input).unwrap();
    // The reported bug: `cfs1 pack X X` replaced X by its container (exit 0).
    for extra in [&[][..], &["--force"][..]] {
        let mut args = vec!["cfs1", "pack", s(&input), s(&input)];
        args.extend(extra);
        let line = refused(&args, "E_OUTPUT_IS_INPUT");
        assert!(line.contains(s(&input)), "names the file: {line}");
        assert_eq!(std::fs::read(&input).unwrap(), original, "{extra:?}: input untouched");
    }
    // The same file under another name: `./`, a hard link, a symbolic link.
    let dotted = t.path().join(".").join("model.safetensors");
    refused(&["cfs1", "pack", "--force", s(&input), s(&dotted)], "E_OUTPUT_IS_INPUT");
    #[cfg(unix)]
    {
        let hard = t.path().join("hard.safetensors");
        std::fs::hard_link(&input, &hard).unwrap();
        let line = refused(&["cfs1", "pack", "--force", s(&input), s(&hard)], "E_OUTPUT_IS_INPUT");
        assert!(line.contains(s(&hard)) && line.contains(s(&input)), "{line}");
        let soft = t.path().join("soft.safetensors");
        std::os::unix::fs::symlink(&input, &soft).unwrap();
        refused(&["cfs1", "pack", "--force", s(&input), s(&soft)], "E_OUTPUT_IS_INPUT");
        std::fs::remove_file(&hard).unwrap();
        std::fs::remove_file(&soft).unwrap();
    }
    assert_eq!(std::fs::read(&input).unwrap(), original);
    // An existing output: refused without --force (untouched), replaced with it.
    let packed = t.path().join("model.cfse.safetensors");
    std::fs::write(&packed, b"keep me").unwrap();
    let line = refused(&["cfs1", "pack", s(&input), s(&packed)], "E_OUTPUT_EXISTS");
    assert!(line.contains(s(&packed)) && line.contains("--force"), "{line}");
    assert_eq!(std::fs::read(&packed).unwrap(), b"keep me");
    let (code, json, _) = tetrad(&["cfs1", "pack", "--json", s(&input), s(&packed)]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["refused"]["class"], "E_OUTPUT_EXISTS", "{json}");
    ok(&["cfs1", "pack", "--force", s(&input), s(&packed)]);
    let container = std::fs::read(&packed).unwrap();
    assert_ne!(container, b"keep me");
    // A directory is no output file, --force or not.
    let dir = t.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    refused(&["cfs1", "pack", "--force", s(&input), s(&dir)], "E_OUTPUT_IS_DIR");
    // unpack: the same rules.
    for extra in [&[][..], &["--force"][..]] {
        let mut args = vec!["cfs1", "unpack", s(&packed), s(&packed)];
        args.extend(extra);
        refused(&args, "E_OUTPUT_IS_INPUT");
        assert_eq!(std::fs::read(&packed).unwrap(), container, "{extra:?}: container untouched");
    }
    let restored = t.path().join("restored.safetensors");
    ok(&["cfs1", "unpack", s(&packed), s(&restored)]);
    let first = std::fs::read(&restored).unwrap();
    std::fs::write(&restored, b"older").unwrap();
    refused(&["cfs1", "unpack", s(&packed), s(&restored)], "E_OUTPUT_EXISTS");
    assert_eq!(std::fs::read(&restored).unwrap(), b"older");
    ok(&["cfs1", "unpack", "--force", s(&packed), s(&restored)]);
    assert_eq!(std::fs::read(&restored).unwrap(), first);
    assert!(!entries(t.path()).iter().any(|n| n.starts_with(".tetrad-tmp")), "no temp left");
}

#[test]
fn matmul_out_refuses_inputs_and_an_existing_file() {
    const W: &str = "model.layers.0.mlp.experts.1.down_proj.weight";
    let t = tempfile::tempdir().unwrap();
    let container = t.path().join("ckpt");
    tetrad::synth::write_expert_checkpoint(&container, 1, 2, 16, 64, 4).unwrap();
    let shard = tetrad::shardset::list_shards(&container).unwrap().remove(0);
    let shard_bytes = std::fs::read(&shard).unwrap();
    let x = t.path().join("x.f32");
    let xb: Vec<u8> = values(2 * 64, 9).iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(&x, &xb).unwrap();
    let run = |out: &Path, force: bool| {
        let mut a = vec!["matmul", s(&container), W, "--o", "16", "--i", "64", "--x", s(&x)];
        a.extend(["--out", s(out)]);
        if force {
            a.push("--force");
        }
        a.into_iter().map(str::to_owned).collect::<Vec<_>>()
    };
    for force in [false, true] {
        // --out = --x, and --out = a shard of the container directory.
        let a = run(&x, force);
        let line = refused(&refs(&a), "E_OUTPUT_IS_INPUT");
        assert!(line.contains(s(&x)), "{line}");
        assert_eq!(std::fs::read(&x).unwrap(), xb);
        let a = run(&shard, force);
        refused(&refs(&a), "E_OUTPUT_IS_INPUT");
        assert_eq!(std::fs::read(&shard).unwrap(), shard_bytes);
    }
    // The container given as a file is an input too.
    let mut a = vec!["matmul", s(&shard), W, "--o", "16", "--i", "64", "--x", s(&x)];
    a.extend(["--out", s(&shard), "--force"]);
    refused(&a, "E_OUTPUT_IS_INPUT");
    assert_eq!(std::fs::read(&shard).unwrap(), shard_bytes);
    // An existing --out: refused (untouched) without --force, replaced with it.
    let y = t.path().join("y.f32");
    std::fs::write(&y, b"old").unwrap();
    let line = refused(&refs(&run(&y, false)), "E_OUTPUT_EXISTS");
    assert!(line.contains(s(&y)) && line.contains("--force"), "{line}");
    assert_eq!(std::fs::read(&y).unwrap(), b"old");
    let (code, json, _) = tetrad(&[&refs(&run(&y, false))[..], &["--json"]].concat());
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["refused"]["class"], "E_OUTPUT_EXISTS", "{json}");
    ok(&refs(&run(&y, true)));
    assert_eq!(std::fs::read(&y).unwrap().len(), 4 * 2 * 16);
    let fresh = t.path().join("fresh.f32");
    ok(&refs(&run(&fresh, false)));
    assert_eq!(std::fs::read(&fresh).unwrap(), std::fs::read(&y).unwrap());
}

#[test]
fn stats_plot_refuses_inputs_and_an_existing_file_before_measuring() {
    let t = tempfile::tempdir().unwrap();
    let input = t.path().join("model.safetensors");
    simple(&input, 8, 64, 2);
    let chart = t.path().join("chart.svg");
    std::fs::write(&chart, b"<svg/>").unwrap();
    let line = refused(&["stats", "--no-zstd", "--plot", s(&chart), s(&input)], "E_OUTPUT_EXISTS");
    assert!(line.contains(s(&chart)) && line.contains("--force"), "{line}");
    assert_eq!(line.lines().count(), 1, "nothing measured or printed first: {line}");
    assert_eq!(std::fs::read(&chart).unwrap(), b"<svg/>");
    ok(&["stats", "--no-zstd", "--force", "--plot", s(&chart), s(&input)]);
    assert!(std::fs::read(&chart).unwrap().len() > 100, "replaced by the chart");
    ok(&["stats", "--no-zstd", "--plot", s(&t.path().join("new.png")), s(&input)]);
    // An input that happens to carry a chart extension.
    let odd = t.path().join("odd.svg");
    std::fs::copy(&input, &odd).unwrap();
    let before = std::fs::read(&odd).unwrap();
    let line = refused(
        &["stats", "--no-zstd", "--force", "--plot", s(&odd), s(&input), s(&odd)],
        "E_OUTPUT_IS_INPUT",
    );
    assert!(line.contains(s(&odd)), "{line}");
    assert_eq!(std::fs::read(&odd).unwrap(), before);
    // A shard of an input directory, reached through a symbolic link named like a chart.
    #[cfg(unix)]
    {
        let dir = t.path().join("ckpt");
        std::fs::create_dir(&dir).unwrap();
        let shard = dir.join("a.safetensors");
        simple(&shard, 4, 32, 3);
        let link = t.path().join("link.png");
        std::os::unix::fs::symlink(&shard, &link).unwrap();
        let before = std::fs::read(&shard).unwrap();
        refused(
            &["stats", "--no-zstd", "--force", "--plot", s(&link), s(&dir)],
            "E_OUTPUT_IS_INPUT",
        );
        assert_eq!(std::fs::read(&shard).unwrap(), before);
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    }
}

/// `in/`: a.safetensors quantizes fine; b.safetensors has I = 130 (ambiguous at
/// int4-grouped:128, fine at int4-row); c.safetensors holds a NaN.
fn multishard(dir: &Path) -> PathBuf {
    let input = dir.join("in");
    std::fs::create_dir_all(&input).unwrap();
    simple(&input.join("a.safetensors"), 4, 256, 5);
    simple(&input.join("b.safetensors"), 4, 130, 6);
    let mut v = values(4 * 64, 7);
    v[3 * 64 + 5] = f32::NAN;
    float_shard(&input.join("c.safetensors"), &[("z.weight", [4, 64], v)]);
    input
}

#[test]
fn quantize_is_all_or_nothing_and_refusals_name_the_shard() {
    let t = tempfile::tempdir().unwrap();
    let input = multishard(t.path());
    // b is refused after a was quantized: nothing written, no output directory created
    // (nor its new parents).
    let out = t.path().join("new").join("q");
    let line = refused(
        &["quantize", "-q", "--format", "int4-grouped:128", s(&input), s(&out)],
        "E_QUANT_AMBIGUOUS",
    );
    assert!(line.contains("b.safetensors") && line.contains("w.weight"), "{line}");
    assert!(!t.path().join("new").exists(), "no new output directory left behind");
    // c's NaN, at int4-row (a and b pass): the same.
    let line = refused(&["quantize", "-q", s(&input), s(&out)], "E_QUANT_NONFINITE");
    assert!(line.contains("c.safetensors") && line.contains("z.weight"), "{line}");
    assert!(!t.path().join("new").exists());
    // An existing output directory stays, empty: no shard, no temporary file.
    let existing = t.path().join("existing");
    std::fs::create_dir(&existing).unwrap();
    refused(&["quantize", "-q", s(&input), s(&existing)], "E_QUANT_NONFINITE");
    assert!(entries(&existing).is_empty(), "{:?}", entries(&existing));
    // With --force over earlier outputs, a refusal leaves every one of them as it was.
    std::fs::write(existing.join("a.safetensors"), b"earlier a").unwrap();
    std::fs::write(existing.join("b.safetensors"), b"earlier b").unwrap();
    refused(&["quantize", "-q", "--force", s(&input), s(&existing)], "E_QUANT_NONFINITE");
    assert_eq!(entries(&existing), ["a.safetensors", "b.safetensors"]);
    assert_eq!(std::fs::read(existing.join("a.safetensors")).unwrap(), b"earlier a");
    // Once the input is fixed, a rerun needs no --force (nothing was left behind).
    std::fs::remove_file(input.join("c.safetensors")).unwrap();
    ok(&["quantize", "-q", s(&input), s(&out)]);
    assert_eq!(entries(&out), ["a.safetensors", "b.safetensors"]);
}

#[test]
fn quantize_refuses_an_output_shard_that_is_an_input() {
    let t = tempfile::tempdir().unwrap();
    let input = t.path().join("in");
    std::fs::create_dir(&input).unwrap();
    simple(&input.join("a.safetensors"), 4, 64, 8);
    let before = std::fs::read(input.join("a.safetensors")).unwrap();
    for extra in [&[][..], &["--force"][..]] {
        let mut args = vec!["quantize", "-q", s(&input), s(&input)];
        args.extend(extra);
        let line = refused(&args, "E_OUTPUT_IS_INPUT");
        assert!(line.contains("a.safetensors"), "{line}");
        assert_eq!(std::fs::read(input.join("a.safetensors")).unwrap(), before);
    }
    #[cfg(unix)]
    {
        let out = t.path().join("out");
        std::fs::create_dir(&out).unwrap();
        std::fs::hard_link(input.join("a.safetensors"), out.join("a.safetensors")).unwrap();
        refused(&["quantize", "-q", "--force", s(&input), s(&out)], "E_OUTPUT_IS_INPUT");
        assert_eq!(std::fs::read(out.join("a.safetensors")).unwrap(), before);
    }
    assert_eq!(entries(&input), ["a.safetensors"]);
}
