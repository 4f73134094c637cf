//! Fault injection for every command that writes: the disk fills after N bytes (ENOSPC from
//! the staged file's writer), with unnamed (`O_TMPFILE`) and named temporary files. Whatever
//! N, the command refuses with `E_IO` naming its output (never a temporary name), leaves no
//! temporary file, removes the output folder it created, and leaves an existing output (under
//! `--force`) exactly as it was.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::error::Class;
use crate::output::faults::Faults;

/// Every file under `dir` (relative path → bytes), hidden ones included.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(p.strip_prefix(dir).unwrap().to_path_buf(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

fn temp_names(dir: &Path) -> Vec<PathBuf> {
    snapshot(dir)
        .into_keys()
        .filter(|p| p.to_string_lossy().contains(crate::output::TEMP_PREFIX))
        .collect()
}

/// One command under test: prepares its inputs in `root` and returns the argument list that
/// writes to `root/out` (a folder or a file).
struct Case {
    name: &'static str,
    /// Whether `out` is a folder the command creates.
    out_is_dir: bool,
    args: fn(&Path) -> Vec<String>,
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn expert_checkpoint(root: &Path) -> PathBuf {
    let dir = root.join("ckpt");
    if !dir.exists() {
        crate::synth::write_expert_checkpoint(&dir, 2, 2, 32, 256, 11).unwrap();
    }
    dir
}

fn packed(root: &Path) -> PathBuf {
    let dir = root.join("packed");
    if !dir.exists() {
        let ckpt = expert_checkpoint(root);
        let opts = crate::packed::pack::PackOptions {
            indir: ckpt,
            outdir: dir.clone(),
            layers: None,
            select: None,
            force: false,
            threads: Some(1),
            quiet: true,
        };
        crate::packed::pack::pack(&opts).unwrap();
    }
    dir
}

fn float_checkpoint(root: &Path) -> PathBuf {
    use crate::shard::{HeaderStyle, OutTensor, shard_bytes};
    let dir = root.join("float");
    if !dir.exists() {
        std::fs::create_dir_all(&dir).unwrap();
        for k in 0..2u64 {
            let w: Vec<u8> = crate::synth::weights(64, 128, crate::synth::Dist::Gaussian, k)
                .iter()
                .flat_map(|f| f.to_le_bytes())
                .collect();
            let t = [OutTensor { name: "layer.w", dtype: "F32", shape: &[64, 128], data: &w }];
            let bytes = shard_bytes(&BTreeMap::new(), &t, HeaderStyle::EscapedUnpadded).unwrap();
            std::fs::write(dir.join(format!("m-{k}.safetensors")), bytes).unwrap();
        }
    }
    dir
}

const CASES: &[Case] = &[
    Case {
        name: "pack",
        out_is_dir: true,
        args: |r| {
            let c = expert_checkpoint(r);
            vec![
                "pack".into(),
                "-q".into(),
                "--indir".into(),
                s(&c),
                "--outdir".into(),
                s(&r.join("out")),
            ]
        },
    },
    Case {
        name: "pack --codec int4-rans64-t1",
        out_is_dir: true,
        args: |r| {
            let c = expert_checkpoint(r);
            vec![
                "pack".into(),
                "-q".into(),
                "--codec".into(),
                "int4-rans64-t1".into(),
                "--indir".into(),
                s(&c),
                "--outdir".into(),
                s(&r.join("out")),
            ]
        },
    },
    Case {
        name: "unpack",
        out_is_dir: true,
        args: |r| {
            let p = packed(r);
            vec![
                "unpack".into(),
                "-q".into(),
                "--indir".into(),
                s(&p),
                "--outdir".into(),
                s(&r.join("out")),
            ]
        },
    },
    Case {
        name: "quantize",
        out_is_dir: true,
        args: |r| {
            let f = float_checkpoint(r);
            vec!["quantize".into(), "-q".into(), s(&f), s(&r.join("out"))]
        },
    },
    Case {
        name: "cfs1 pack",
        out_is_dir: false,
        args: |r| {
            let c = expert_checkpoint(r).join("model-00001-of-00002.safetensors");
            vec!["cfs1".into(), "pack".into(), s(&c), s(&r.join("out"))]
        },
    },
    Case {
        name: "cfs1 unpack",
        out_is_dir: false,
        args: |r| {
            let c = expert_checkpoint(r).join("model-00001-of-00002.safetensors");
            let cfse = r.join("c.cfse.safetensors");
            if !cfse.exists() {
                crate::cfse::pack(&c, &cfse, &|_| {}).unwrap();
            }
            vec!["cfs1".into(), "unpack".into(), s(&cfse), s(&r.join("out"))]
        },
    },
    Case {
        name: "matmul --out",
        out_is_dir: false,
        args: |r| {
            let c = expert_checkpoint(r);
            let x = r.join("x.f32");
            let xb: Vec<u8> = (0..2 * 256).flat_map(|k| (k as f32 / 100.0).to_le_bytes()).collect();
            std::fs::write(&x, xb).unwrap();
            vec![
                "matmul".into(),
                s(&c),
                "model.layers.0.mlp.experts.1.up_proj.weight".into(),
                "--o".into(),
                "32".into(),
                "--i".into(),
                "256".into(),
                "--x".into(),
                s(&x),
                "--out".into(),
                s(&r.join("out")),
            ]
        },
    },
    Case {
        name: "stats --plot",
        out_is_dir: false,
        args: |r| {
            let c = expert_checkpoint(r);
            vec![
                "stats".into(),
                "-q".into(),
                "--no-zstd".into(),
                s(&c),
                "--plot".into(),
                s(&r.join("out.svg")),
            ]
        },
    },
];

fn run(args: &[String]) -> ExitCode {
    crate::cli::run_from(std::iter::once("tetrad".to_owned()).chain(args.iter().cloned()))
}

/// The output path a case writes (stats writes `out.svg`).
fn out_of(root: &Path, case: &Case) -> PathBuf {
    if case.name == "stats --plot" { root.join("out.svg") } else { root.join("out") }
}

#[test]
fn every_writing_command_leaves_nothing_when_the_disk_fills() {
    for case in CASES {
        for named in [false, true] {
            let root = tempfile::tempdir().unwrap();
            let args = (case.args)(root.path());
            let out = out_of(root.path(), case);
            // A clean run, to learn how many bytes the command writes.
            let faults = Faults::new(root.path(), named);
            assert_eq!(run(&args), ExitCode::SUCCESS, "{}: clean run", case.name);
            drop(faults);
            let written: usize = if case.out_is_dir {
                snapshot(&out).values().map(Vec::len).sum()
            } else {
                std::fs::read(&out).unwrap().len()
            };
            assert!(written > 0);
            assert!(
                temp_names(root.path()).is_empty(),
                "{}: a clean run leaves no temp",
                case.name
            );
            let before_force = snapshot(root.path());
            for budget in [0, 1, 4096, written as u64 / 2, written as u64 - 1]
                .into_iter()
                .filter(|&b| b < written as u64)
            {
                // Fresh output: the run creates it (a folder), and must remove it again.
                if case.out_is_dir {
                    std::fs::remove_dir_all(&out).unwrap();
                } else {
                    std::fs::remove_file(&out).unwrap();
                }
                let faults = Faults::new(root.path(), named);
                faults.disk_full_after(budget);
                let code = run(&args);
                drop(faults);
                let what =
                    format!("{} (named temps: {named}, disk full after {budget} B)", case.name);
                assert_eq!(code, ExitCode::from(1), "{what}");
                assert!(!out.exists(), "{what}: the output must not appear");
                assert!(temp_names(root.path()).is_empty(), "{what}: temporary files left");
                // Existing output replaced under --force: untouched by a failed run.
                assert_eq!(run(&args), ExitCode::SUCCESS, "{what}: rerun");
                let before = snapshot(root.path());
                let mut forced = args.clone();
                forced.push("--force".into());
                let faults = Faults::new(root.path(), named);
                faults.disk_full_after(budget);
                let code = run(&forced);
                drop(faults);
                assert_eq!(code, ExitCode::from(1), "{what} --force");
                assert_eq!(snapshot(root.path()), before, "{what} --force: old output changed");
            }
            // And once more whole, which must give the same bytes as the first clean run.
            assert_eq!(snapshot(root.path()), before_force, "{}: deterministic", case.name);
        }
    }
}

#[test]
fn an_enospc_refusal_names_the_output_and_no_temporary_file() {
    let root = tempfile::tempdir().unwrap();
    let ckpt = expert_checkpoint(root.path());
    let out = root.path().join("packed");
    let opts = crate::packed::pack::PackOptions {
        indir: ckpt,
        outdir: out.clone(),
        layers: None,
        select: None,
        force: false,
        threads: Some(1),
        quiet: true,
    };
    for named in [false, true] {
        let faults = Faults::new(root.path(), named);
        faults.disk_full_after(100);
        let r = crate::packed::pack::pack(&opts).unwrap_err();
        drop(faults);
        assert_eq!(r.class, Class::Io);
        assert!(r.detail.contains("No space left on device"), "{}", r.detail);
        assert!(
            r.detail.contains(&out.join("out-rans-00000.safetensors").display().to_string()),
            "{}",
            r.detail
        );
        assert!(!r.detail.contains(crate::output::TEMP_PREFIX), "{}", r.detail);
        assert!(!out.exists());
    }
}
