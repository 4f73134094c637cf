//! Conventions every command shares (docs/CLI.md): a usage error a flag's value causes (a
//! regex that does not compile, an unknown arm name) exits 2 like clap's own; with `--json`,
//! a refusal is printed as `{"refused": {"class", "detail"}}`, never as plain text.

use std::path::Path;
use std::process::Command;

fn tetrad(args: &[&str]) -> (Option<i32>, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_tetrad")).args(args).output().unwrap();
    (o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned())
}

#[test]
fn usage_errors_in_flag_values_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let out = dir.path().join("out");
    let (code, text) =
        tetrad(&["pack", "--indir", d, "--outdir", out.to_str().unwrap(), "--select", "("]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.starts_with("REFUSED E_USAGE: --select"), "{text}");
    let y = dir.path().join("y.f32");
    let (code, text) = tetrad(&[
        "matmul",
        d,
        "w",
        "--o",
        "1",
        "--i",
        "1",
        "--x",
        d,
        "--out",
        y.to_str().unwrap(),
        "--isa",
        "no-such",
    ]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.starts_with("REFUSED E_USAGE: "), "{text}");
    let (code, text) = tetrad(&["quantize", "--only", "(", d, out.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{text}");
    // A verify that would check nothing cannot say TRUST.
    let (code, text) = tetrad(&["verify", "--max-tensors", "0", d]);
    assert_eq!(code, Some(2), "{text}");
}

#[test]
fn json_refusals_are_json() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.safetensors");
    let missing = missing.to_str().unwrap();
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();
    let runs: [&[&str]; 5] = [
        &["stats", "--json", missing],
        &["quantize", "--json", missing, out],
        &["bench", "--json", "--input", missing, "codecs"],
        &["inspect", "--json", missing],
        &["cfs1", "--json", "pack", missing, out],
    ];
    for args in runs {
        let (code, text) = tetrad(args);
        assert_eq!(code, Some(1), "{args:?}: {text}");
        let v: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{args:?}: {e}: {text}"));
        let refused = if v.is_array() { &v[0]["refused"] } else { &v["refused"] };
        assert!(refused["class"].as_str().is_some_and(|c| c.starts_with("E_")), "{args:?}: {v}");
        assert!(refused["detail"].is_string(), "{args:?}: {v}");
    }
}

/// A FIFO (or device) where a shard, checkpoint or activation file is expected is refused at
/// once, naming it: opening a FIFO blocks until a writer appears, so every command that read
/// one hung (pack, quantize, stats, bench, inspect, verify, matmul).
#[cfg(unix)]
#[test]
fn a_fifo_input_is_refused_not_waited_on() {
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap().to_owned();
    let fifo = dir.path().join("model.safetensors");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let f = fifo.to_str().unwrap().to_owned();
    let out = dir.path().join("out").to_str().unwrap().to_owned();
    let y = dir.path().join("y.f32").to_str().unwrap().to_owned();
    let runs: [Vec<&str>; 8] = [
        vec!["pack", "--indir", &d, "--outdir", &out],
        vec!["quantize", &f, &out],
        vec!["stats", &f],
        vec!["stats", &d],
        vec!["bench", "--input", &f],
        vec!["inspect", &d],
        vec!["verify", &d],
        vec!["matmul", &d, "w", "--o", "1", "--i", "1", "--x", &f, "--out", &y],
    ];
    for args in runs {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tetrad"))
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let start = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if start.elapsed() > Duration::from_secs(60) {
                child.kill().unwrap();
                panic!("{args:?} hung on a FIFO");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let o = child.wait_with_output().unwrap();
        let text =
            String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
        assert_eq!(status.code(), Some(1), "{args:?}: {text}");
        assert!(text.contains("not a regular file"), "{args:?}: {text}");
    }
}

/// An empty directory where a checkpoint directory is expected is `E_NO_INPUT` naming the
/// directory, in every command that reads one (verify and inspect report it as that
/// argument's verdict and still exit 1).
#[test]
fn an_empty_directory_is_no_input() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let e = empty.to_str().unwrap().to_owned();
    let x = dir.path().join("x.f32");
    std::fs::write(&x, 1f32.to_le_bytes()).unwrap();
    let x = x.to_str().unwrap().to_owned();
    let out = dir.path().join("out").to_str().unwrap().to_owned();
    let y = dir.path().join("y.f32").to_str().unwrap().to_owned();
    let runs: [Vec<&str>; 7] = [
        vec!["inspect", &e],
        vec!["verify", &e],
        vec!["stats", &e],
        vec!["quantize", &e, &out],
        vec!["pack", "--indir", &e, "--outdir", &out],
        vec!["matmul", &e, "w", "--o", "1", "--i", "1", "--x", &x, "--out", &y],
        vec!["bench", "--input", &e],
    ];
    for args in runs {
        let (code, text) = tetrad(&args);
        assert_eq!(code, Some(1), "{args:?}: {text}");
        assert!(text.contains("E_NO_INPUT") && text.contains(&e), "{args:?}: {text}");
    }
    assert!(!Path::new(&out).exists() && !Path::new(&y).exists());
}

/// A shard of many small tensors, so that `inspect` writes far more than a pipe holds.
fn many_tensors(dir: &Path) -> String {
    let names: Vec<String> = (0..4000).map(|k| format!("layer.{k}.norm.weight")).collect();
    let data = [0u8; 8];
    let ts: Vec<tetrad::shard::OutTensor<'_>> = names
        .iter()
        .map(|n| tetrad::shard::OutTensor { name: n, dtype: "F32", shape: &[2], data: &data })
        .collect();
    let bytes = tetrad::shard::shard_bytes(
        &std::collections::BTreeMap::new(),
        &ts,
        tetrad::shard::HeaderStyle::EscapedUnpadded,
    )
    .unwrap();
    let p = dir.join("many.safetensors");
    std::fs::write(&p, bytes).unwrap();
    p.to_str().unwrap().to_owned()
}

/// `tetrad inspect … | head`: the reader goes away; tetrad stops quietly with 141 (what a
/// tool killed by SIGPIPE reports), no panic message or backtrace.
#[test]
fn a_closed_output_pipe_stops_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let shard = many_tensors(dir.path());
    let mut child = Command::new(env!("CARGO_BIN_EXE_tetrad"))
        .args(["inspect", &shard])
        .env("RUST_BACKTRACE", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut first).unwrap();
    assert!(first.starts_with(b"== "), "{first:?}");
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(141), "{err}");
    assert!(err.is_empty(), "nothing on stderr: {err}");
}

/// Output that cannot be written for another reason (a full disk behind `> file`) is one
/// line on stderr and exit 1, not a panic.
#[cfg(target_os = "linux")]
#[test]
fn an_unwritable_output_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let shard = many_tensors(dir.path());
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_tetrad"))
        .args(["inspect", &shard])
        .env("RUST_BACKTRACE", "1")
        .stdout(full)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err, "tetrad: failed printing to stdout: No space left on device (os error 28)\n");
}

/// Every command's `--help` fits 100 columns (clap wraps prose, but not a literal it is given
/// whole), and the default `pack` selection is shown as the regex it is, ready to copy (it was
/// once printed Debug-escaped, every backslash doubled).
#[test]
fn help_fits_100_columns_and_shows_the_expert_pattern_verbatim() {
    let commands: &[&[&str]] = &[
        &[],
        &["demo"],
        &["pack"],
        &["verify"],
        &["unpack"],
        &["cfs1"],
        &["cfs1", "pack"],
        &["cfs1", "verify"],
        &["cfs1", "check"],
        &["cfs1", "cert"],
        &["cfs1", "unpack"],
        &["inspect"],
        &["resolve"],
        &["quantize"],
        &["stats"],
        &["matmul"],
        &["bench"],
    ];
    for args in commands {
        let o = Command::new(env!("CARGO_BIN_EXE_tetrad"))
            .args(*args)
            .arg("--help")
            .env_remove("COLUMNS")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{args:?}");
        let text = String::from_utf8(o.stdout).unwrap();
        for line in text.lines() {
            assert!(line.chars().count() <= 100, "tetrad {args:?} --help: {line:?}");
        }
    }
    let (_, text) = tetrad(&["pack", "--help"]);
    let pattern = tetrad::packed::pack::EXPERT_PATTERN;
    assert!(text.lines().any(|l| l.trim() == pattern), "{text}");
}
