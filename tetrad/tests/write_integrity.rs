//! What a failed, interrupted or killed run leaves on disk, through the real binary: SIGINT
//! and SIGTERM at each stage of a run (held there by `TETRAD_TEST_HOLD`, so nothing depends on
//! timing) leave no output, no temporary file and no folder the run created, with exit 130 /
//! 143; SIGKILL never leaves a set that verifies as whole, and the next run removes what it
//! left; `verify DIR` proves a set (missing, unlisted shards; no manifest); the refusals are
//! the same class for the same situation in every command.

mod support;

use std::io::{BufRead as _, BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use support::{s, tetrad};

/// Every file under `dir` whose name carries the temporary prefix.
fn temps_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().unwrap().to_string_lossy().starts_with(".tetrad-tmp-") {
                out.push(p);
            }
        }
    }
    out
}

/// The inputs every case reads, under `root`.
fn inputs(root: &Path) {
    let ckpt = root.join("ckpt");
    tetrad::synth::write_expert_checkpoint(&ckpt, 2, 2, 32, 256, 5).unwrap();
    let (code, out, err) =
        tetrad(&["pack", "-q", "--indir", s(&ckpt), "--outdir", s(&root.join("packed"))]);
    assert_eq!(code, 0, "{out}{err}");
    let shard = ckpt.join("model-00001-of-00002.safetensors");
    let (code, out, err) =
        tetrad(&["cfs1", "pack", s(&shard), s(&root.join("c.cfse.safetensors"))]);
    assert_eq!(code, 0, "{out}{err}");
    // A float checkpoint for quantize.
    use tetrad::shard::{HeaderStyle, OutTensor, shard_bytes};
    let float = root.join("float");
    std::fs::create_dir_all(&float).unwrap();
    for k in 0..2u64 {
        let w: Vec<u8> = tetrad::synth::weights(32, 64, tetrad::synth::Dist::Laplace, k)
            .iter()
            .flat_map(|f| f.to_le_bytes())
            .collect();
        let t = [OutTensor { name: "layer.w", dtype: "F32", shape: &[32, 64], data: &w }];
        let bytes = shard_bytes(&Default::default(), &t, HeaderStyle::EscapedUnpadded).unwrap();
        std::fs::write(float.join(format!("m-{k}.safetensors")), bytes).unwrap();
    }
    let x: Vec<u8> = (0..256).flat_map(|k| (k as f32 / 64.0).to_le_bytes()).collect();
    std::fs::write(root.join("x.f32"), x).unwrap();
}

/// (name, arguments writing to `root/out`, whether `out` is a folder).
fn cases(root: &Path) -> Vec<(&'static str, Vec<String>, bool)> {
    let r = |p: &str| root.join(p).display().to_string();
    let v = |a: &[&str]| a.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
    vec![
        ("pack", v(&["pack", "-q", "--indir", &r("ckpt"), "--outdir", &r("out")]), true),
        (
            "pack int4-rans64-t1",
            v(&[
                "pack",
                "-q",
                "--codec",
                "int4-rans64-t1",
                "--indir",
                &r("ckpt"),
                "--outdir",
                &r("out"),
            ]),
            true,
        ),
        ("unpack", v(&["unpack", "-q", "--indir", &r("packed"), "--outdir", &r("out")]), true),
        ("quantize", v(&["quantize", "-q", &r("float"), &r("out")]), true),
        (
            "cfs1 pack",
            v(&["cfs1", "pack", &r("ckpt/model-00002-of-00002.safetensors"), &r("out")]),
            false,
        ),
        ("cfs1 unpack", v(&["cfs1", "unpack", &r("c.cfse.safetensors"), &r("out")]), false),
        (
            "matmul",
            v(&[
                "matmul",
                &r("ckpt"),
                "model.layers.1.mlp.experts.0.gate_proj.weight",
                "--o",
                "32",
                "--i",
                "256",
                "--x",
                &r("x.f32"),
                "--out",
                &r("out"),
            ]),
            false,
        ),
    ]
}

/// Starts `tetrad ARGS` held at `point`, and returns it once it says it is held there.
#[allow(clippy::zombie_processes)] // returned to the caller, which waits for it
fn held(args: &[String], point: &str) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tetrad"))
        .args(args)
        .env("TETRAD_TEST_HOLD", point)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        // Blocks until the run prints a line or ends: no timing involved.
        if err.read_line(&mut line).unwrap() == 0 {
            let status = child.wait().unwrap();
            panic!("{args:?} ended ({status}) without holding at {point}: {seen}");
        }
        seen.push_str(&line);
        if line.contains(&format!("holding at {point}")) {
            child.stderr = Some(err.into_inner());
            return (child, seen);
        }
    }
}

fn signal(child: &Child, sig: &str) {
    let ok =
        Command::new("kill").arg(format!("-{sig}")).arg(child.id().to_string()).status().unwrap();
    assert!(ok.success());
}

/// Waits for the child: (exit code, the rest of its stderr).
fn finish(mut child: Child) -> (Option<i32>, String) {
    let mut rest = String::new();
    child.stderr.take().unwrap().read_to_string(&mut rest).unwrap();
    (child.wait().unwrap().code(), rest)
}

#[test]
fn sigint_and_sigterm_leave_nothing_at_every_stage() {
    let t = tempfile::tempdir().unwrap();
    inputs(t.path());
    let out = t.path().join("out");
    for (name, args, _) in cases(t.path()) {
        for point in ["staged", "commit"] {
            for (sig, code) in [("INT", 130), ("TERM", 143), ("HUP", 129)] {
                let what = format!("{name}, SIG{sig} at {point}");
                let (child, _) = held(&args, point);
                signal(&child, sig);
                let (got, err) = finish(child);
                assert_eq!(got, Some(code), "{what}: {err}");
                assert!(err.contains(&format!("interrupted by SIG{sig}")), "{what}: {err}");
                assert!(!out.exists(), "{what}: {} exists", out.display());
                assert!(temps_under(t.path()).is_empty(), "{what}: {:?}", temps_under(t.path()));
            }
        }
        // The same command, uninterrupted, succeeds (the cases are valid runs).
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, o, e) = tetrad(&a);
        assert_eq!(code, 0, "{name}: {o}{e}");
        if out.is_dir() {
            std::fs::remove_dir_all(&out).unwrap();
        } else {
            std::fs::remove_file(&out).unwrap();
        }
    }
}

#[test]
fn an_interrupted_force_run_leaves_the_old_output_as_it_was() {
    let t = tempfile::tempdir().unwrap();
    inputs(t.path());
    let packed = t.path().join("packed");
    let before: Vec<(PathBuf, Vec<u8>)> = {
        let mut v: Vec<_> = std::fs::read_dir(&packed)
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
            .collect();
        v.sort();
        v
    };
    let args: Vec<String> = ["pack", "-q", "--force", "--select", "up_proj", "--indir"]
        .iter()
        .map(|x| (*x).to_owned())
        .chain([s(&t.path().join("ckpt")).to_owned(), "--outdir".into(), s(&packed).to_owned()])
        .collect();
    for point in ["staged", "commit"] {
        let (child, _) = held(&args, point);
        signal(&child, "INT");
        assert_eq!(finish(child).0, Some(130));
        let mut now: Vec<_> = std::fs::read_dir(&packed)
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
            .collect();
        now.sort();
        assert!(now == before, "{point}: the old set changed");
    }
    let (code, out, _) = tetrad(&["verify", s(&packed)]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn sigkill_never_leaves_a_set_that_passes_for_whole() {
    let t = tempfile::tempdir().unwrap();
    inputs(t.path());
    let ckpt = t.path().join("ckpt");
    let out = t.path().join("out");
    let args: Vec<String> = ["pack", "-q", "--indir", s(&ckpt), "--outdir", s(&out)]
        .iter()
        .map(|x| (*x).to_owned())
        .collect();
    // Killed while staging: nothing named is left but (where the file system has no unnamed
    // files) temporaries of a dead process, which the next run removes, saying so.
    let (mut child, _) = held(&args, "staged");
    child.kill().unwrap();
    child.wait().unwrap();
    let left = temps_under(t.path());
    let (code, text, _) = tetrad(&["verify", s(&out)]);
    assert_eq!(code, 1, "an empty folder is no set: {text}");
    let (code, o, e) = tetrad(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 0, "{o}{e}");
    if !left.is_empty() {
        assert!(e.contains("temporary file(s) an interrupted run left"), "{e}");
    }
    assert!(temps_under(t.path()).is_empty());
    std::fs::remove_dir_all(&out).unwrap();

    // Killed between the shards' renames and the manifest's: shards without a manifest.
    let (mut child, _) = held(&args, "marker");
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(out.join("out-rans-00000.safetensors").exists());
    assert!(!out.join("repack-manifest.json").exists());
    let (code, text, _) = tetrad(&["verify", s(&out)]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("E_MANIFEST_MISSING"), "{text}");
    assert!(text.contains("RESULT: REFUSE"), "{text}");
    let restored = t.path().join("restored");
    let (code, text, _) = tetrad(&["unpack", "--indir", s(&out), "--outdir", s(&restored)]);
    assert_eq!(code, 1);
    assert!(text.starts_with("REFUSED E_MANIFEST_MISSING: "), "{text}");
    assert!(!restored.exists());
    let (code, text, _) = tetrad(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 1);
    assert!(text.contains("likely an interrupted run"), "{text}");
    let mut forced = args.clone();
    forced.push("--force".into());
    let (code, o, e) = tetrad(&forced.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 0, "{o}{e}");
    let (code, text, _) = tetrad(&["verify", s(&out)]);
    assert_eq!(code, 0, "{text}");

    // Killed at the same point of a --force run over a whole set: the old manifest went first,
    // so the mix of shards left does not pass either.
    let (mut child, _) = held(&forced, "marker");
    child.kill().unwrap();
    child.wait().unwrap();
    let (code, text, _) = tetrad(&["verify", s(&out)]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("E_MANIFEST_MISSING"), "{text}");
}

#[test]
fn the_next_run_removes_the_temporary_files_of_dead_runs_only() {
    let t = tempfile::tempdir().unwrap();
    inputs(t.path());
    let out = t.path().join("packed");
    // A process that has ended: its pid names no live run.
    let mut gone = Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let stale = out.join(format!(".tetrad-tmp-{dead}-a1b2c3"));
    let older = out.join(".tetrad-tmp-Xy12Qz"); // a name without a pid: no live owner
    let live = out.join(format!(".tetrad-tmp-{}-running", std::process::id()));
    for p in [&stale, &older, &live] {
        std::fs::write(p, vec![7u8; 4096]).unwrap();
    }
    let ckpt = t.path().join("ckpt");
    let (code, o, e) = tetrad(&["pack", "-q", "--force", "--indir", s(&ckpt), "--outdir", s(&out)]);
    assert_eq!(code, 0, "{o}{e}");
    assert!(e.contains("removed 2 temporary file(s) an interrupted run left in"), "{e}");
    assert!(!stale.exists() && !older.exists());
    assert!(live.exists(), "a live process's file is not touched");
    std::fs::remove_file(&live).unwrap();
}

#[test]
fn verify_dir_proves_the_whole_set_and_unpack_refuses_what_it_refuses() {
    let t = tempfile::tempdir().unwrap();
    let ckpt = t.path().join("ckpt");
    tetrad::synth::write_expert_checkpoint(&ckpt, 2, 1, 16, 128, 9).unwrap();
    let packed = t.path().join("packed");
    let (code, o, e) = tetrad(&[
        "pack",
        "-q",
        "--select",
        r"\.weight$",
        "--indir",
        s(&ckpt),
        "--outdir",
        s(&packed),
    ]);
    assert_eq!(code, 0, "{o}{e}");
    let (code, text, _) = tetrad(&["verify", s(&packed)]);
    assert_eq!(code, 0, "{text}");
    assert!(text.ends_with("RESULT: TRUST\n"), "{text}");
    let restored = t.path().join("restored");
    let unpack = |extra: &[&str]| {
        let mut a = vec!["unpack", "-q", "--indir", s(&packed), "--outdir", s(&restored)];
        a.extend_from_slice(extra);
        tetrad(&a)
    };

    // A listed shard missing.
    let second = packed.join("out-rans-00001.safetensors");
    let kept = std::fs::read(&second).unwrap();
    std::fs::remove_file(&second).unwrap();
    let (code, text, _) = tetrad(&["verify", s(&packed)]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("E_SHARD_MISSING"), "{text}");
    assert!(text.contains("out-rans-00001.safetensors: listed in repack-manifest.json"), "{text}");
    assert!(text.ends_with("RESULT: REFUSE (1 refusal(s))\n"), "{text}");
    let (code, json, _) = tetrad(&["verify", "--json", s(&packed)]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["result"], "REFUSE");
    assert_eq!(v["shards"][0]["refusals"][0]["class"], "E_SHARD_MISSING");
    let (code, text, _) = unpack(&[]);
    assert_eq!(code, 1);
    assert!(text.starts_with("REFUSED E_SHARD_MISSING: "), "{text}");
    assert!(!restored.exists());
    // Named one by one, the shard present still verifies on its own (the reference
    // validator's behaviour).
    let (code, text, _) = tetrad(&["verify", s(&packed.join("out-rans-00000.safetensors"))]);
    assert_eq!(code, 0, "{text}");
    std::fs::write(&second, &kept).unwrap();

    // An unlisted shard beside the set.
    let extra = packed.join("out-rans-00002.safetensors");
    std::fs::write(&extra, &kept).unwrap();
    let (code, text, _) = tetrad(&["verify", s(&packed)]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("E_SHARD_UNLISTED"), "{text}");
    assert!(text.contains("out-rans-00002.safetensors: not listed"), "{text}");
    let (code, text, _) = unpack(&[]);
    assert_eq!(code, 1);
    assert!(text.starts_with("REFUSED E_SHARD_UNLISTED: "), "{text}");
    std::fs::remove_file(&extra).unwrap();

    // No manifest: completeness cannot be proven.
    let manifest = packed.join("repack-manifest.json");
    let m = std::fs::read(&manifest).unwrap();
    std::fs::remove_file(&manifest).unwrap();
    let (code, text, _) = tetrad(&["verify", s(&packed)]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("E_MANIFEST_MISSING"), "{text}");
    assert!(text.contains("cannot be proven"), "{text}");
    let (code, text, _) = unpack(&[]);
    assert_eq!(code, 1);
    assert!(text.starts_with("REFUSED E_MANIFEST_MISSING: "), "{text}");
    let (code, text, e) = unpack(&["--without-manifest"]);
    assert_eq!(code, 0, "{text}{e}");
    std::fs::remove_dir_all(&restored).unwrap();
    std::fs::write(&manifest, m).unwrap();

    // Unpacking over the original checkpoint (which holds tensors pack left out) is refused
    // even with --force, naming what would be lost.
    let (code, text, _) =
        tetrad(&["unpack", "-q", "--force", "--indir", s(&packed), "--outdir", s(&ckpt)]);
    assert_eq!(code, 1, "{text}");
    assert!(text.starts_with("REFUSED E_OUTPUT_FULLER: "), "{text}");
    assert!(text.contains("input_layernorm.weight"), "{text}");
    let (code, text, _) = unpack(&[]);
    assert_eq!(code, 0, "{text}");
}

#[test]
fn one_refusal_class_per_situation_across_commands() {
    let t = tempfile::tempdir().unwrap();
    inputs(t.path());
    let r = |p: &str| t.path().join(p);
    let file = r("a-file");
    std::fs::write(&file, b"x").unwrap();
    // A file where a folder is expected.
    for args in [
        vec!["pack", "--indir", s(&r("ckpt")), "--outdir", s(&file)],
        vec!["unpack", "--indir", s(&r("packed")), "--outdir", s(&file)],
        vec!["quantize", s(&r("float")), s(&file)],
    ] {
        let (code, text, _) = tetrad(&args);
        assert_eq!(code, 1, "{args:?}");
        assert!(text.starts_with("REFUSED E_OUTPUT_NOT_DIR: "), "{args:?}: {text}");
        assert!(text.contains(s(&file)), "{text}");
    }
    // A path that does not exist is E_IO, in every command that reads one.
    let nowhere = r("nowhere");
    for args in [
        vec!["verify", s(&nowhere)],
        vec!["inspect", s(&nowhere)],
        vec!["unpack", "--indir", s(&nowhere), "--outdir", s(&r("o1"))],
        vec!["pack", "--indir", s(&nowhere), "--outdir", s(&r("o2"))],
        vec!["quantize", s(&nowhere), s(&r("o3"))],
        vec!["cfs1", "pack", s(&nowhere), s(&r("o4"))],
    ] {
        let (code, text, _) = tetrad(&args);
        assert_eq!(code, 1, "{args:?}: {text}");
        assert!(text.contains("E_IO"), "{args:?}: {text}");
        assert!(!text.contains("E_SHARD_MALFORMED"), "{args:?}: {text}");
    }
    for o in ["o1", "o2", "o3", "o4"] {
        assert!(!r(o).exists(), "{o}: a refused run creates nothing");
    }
    // quantize --only matching nothing quantizes nothing: refused, nothing written.
    let (code, text, _) = tetrad(&["quantize", "--only", "^nothing$", s(&r("float")), s(&r("q"))]);
    assert_eq!(code, 1, "{text}");
    assert!(text.starts_with("REFUSED E_SELECTION_EMPTY: "), "{text}");
    assert!(text.contains("--only"), "{text}");
    assert!(!r("q").exists());
    // pack's empty default selection says how to choose.
    let (code, text, _) = tetrad(&["pack", "--indir", s(&r("float")), "--outdir", s(&r("p"))]);
    assert_eq!(code, 1);
    assert!(text.starts_with("REFUSED E_SELECTION_EMPTY: "), "{text}");
    assert!(text.contains("--select"), "{text}");
    // A dimension that overflows is "too large", a usage error.
    let (ckpt, x, y) = (r("ckpt"), r("x.f32"), r("y"));
    for (flag, value, says) in [
        ("--i", "9223372036854775807", "too large"),
        ("--o", "18446744073709551616", "too large"),
        ("--i", "0", "at least 1"),
    ] {
        let mut args = vec!["matmul", s(&ckpt), "w", "--o", "8", "--i", "8"];
        let k = args.iter().position(|a| *a == flag).unwrap();
        args[k + 1] = value;
        args.extend(["--x", s(&x), "--out", s(&y)]);
        let (code, _, err) = tetrad(&args);
        assert_eq!(code, 2, "{flag} {value}");
        assert!(err.contains(says), "{flag} {value}: {err}");
    }
    // stats --plot checks its destination before measuring.
    let (code, text, _) =
        tetrad(&["stats", "-q", s(&r("ckpt")), "--plot", s(&r("no/such/dir/p.svg"))]);
    assert_eq!(code, 1);
    assert!(text.starts_with("REFUSED E_IO: writing "), "{text}");
    assert!(text.contains("p.svg"), "{text}");
    assert!(!text.contains(".tetrad-tmp"), "{text}");
    // Every --json refusal has the documented shape.
    for args in [
        vec![
            "resolve",
            "--json",
            "--o",
            "8",
            "--i",
            "64",
            "--weight-bytes",
            "7",
            "--scale-bytes",
            "32",
        ],
        vec!["pack", "--json", "--indir", s(&r("float")), "--outdir", s(&r("p"))],
        vec!["quantize", "--json", "--only", "^x$", s(&r("float")), s(&r("q"))],
    ] {
        let (code, text, _) = tetrad(&args);
        assert_eq!(code, 1, "{args:?}: {text}");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(v["refused"]["class"].as_str().unwrap().starts_with("E_"), "{args:?}: {text}");
        assert!(v["refused"]["detail"].is_string(), "{args:?}: {text}");
    }
}
