//! `tetrad demo` — the README's "main job" command — run end to end on a small size: it must
//! exit 0, print every codec's line with an exact round trip, and run the container tools.

use std::process::Command;

#[test]
fn demo_runs_every_codec_and_the_container_tools() {
    let out = Command::new(env!("CARGO_BIN_EXE_tetrad"))
        .args(["demo", "--mib", "1", "--seed", "7"])
        .output()
        .expect("run tetrad demo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "demo failed: {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    for codec in ["int4-rans256-g0:", "CFS1:", "int4-rans64-t1:"] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(codec))
            .unwrap_or_else(|| panic!("no {codec} line in:\n{stdout}"));
        assert!(line.ends_with("round trip exact"), "{line}");
    }
    assert!(stdout.contains("zstd -19:"), "{stdout}");
    assert!(stdout.contains("verify: ") && !stdout.contains("REFUSE"), "{stdout}");
    assert!(stdout.contains("tensors restored byte for byte"), "{stdout}");
    assert!(stdout.contains("bit for bit"), "{stdout}");
}

#[test]
fn demo_output_sizes_are_deterministic() {
    // Same seed, same sizes (timings differ; the byte counts may not).
    let run = || {
        let out = Command::new(env!("CARGO_BIN_EXE_tetrad"))
            .args(["demo", "--mib", "1", "--seed", "3"])
            .output()
            .expect("run tetrad demo");
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| {
                l.split(" bytes = ").next().filter(|h| h.len() < l.len()).map(str::to_owned)
            })
            .collect::<Vec<_>>()
    };
    let (a, b) = (run(), run());
    assert!(a.len() >= 5, "{a:?}");
    assert_eq!(a, b);
}
