//! Helpers the CLI integration tests share (`mod support;` in each test file; each file uses
//! some of them).
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

use tetrad::packed::pack::PackOptions;

/// Runs the built `tetrad` binary: (exit status, stdout, stderr).
pub(crate) fn tetrad(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tetrad")).args(args).output().expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A path as a command-line argument.
pub(crate) fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `pack` options for `indir` → `outdir`: the default selection, one thread, quiet.
pub(crate) fn opts(indir: &Path, outdir: &Path) -> PackOptions {
    PackOptions {
        indir: indir.to_owned(),
        outdir: outdir.to_owned(),
        layers: None,
        select: None,
        force: false,
        threads: Some(1),
        quiet: true,
    }
}
