//! The decode driver of `benches/insn-count.sh`, which counts the guest instructions a decode
//! executes under `qemu-aarch64` (no timing: an emulator's clock says nothing about a CPU).
//!
//! - `prepare INPUT OUT_DIR`: not counted. `INPUT` is a file of packed int4 bytes or
//!   `synth:BYTES` (`tetrad::synth::int4_bytes`, the generator of `tetrad bench`, seed 1).
//!   Writes `OUT_DIR/n` (the byte count), `v2.blob` (`int4-rans64-t1` version 2,
//!   `encode_v2_into`), `v3.blob` (version 3, the default encoder) and `zstd-1.zst`,
//!   `zstd-3.zst`, `zstd-19.zst` (libzstd through the `zstd` crate), each of the whole input.
//! - `decode CODEC FILE N [dry]`: counted. Reads `FILE`, allocates `N` output
//!   bytes and, for `CODEC` = `rans64:ARM` (an `int4-rans64-t1` arm name, e.g. `rans64:neon`),
//!   checks that the arm is available (its first-use selftest) and decodes with
//!   `rans64::decode_with`, or for `zstd` creates a decompression context and decodes the
//!   frame into the buffer; `check` computes `rans64::chunk_check` over the whole file (the
//!   check every chunk's stored bytes pass before a decode). With `dry` it does all of that except the decode call, so the
//!   difference of the two counts is the decode alone.
//!
//! `cargo run --release -p tetrad-benches --example insn_count -- prepare synth:4194304 dir`
#![allow(missing_docs)]

use std::fs;
use std::path::Path;
use std::process::ExitCode;

use tetrad_rans::rans64::{self, Arm};

/// zstd levels written by `prepare` (the levels `tetrad bench codecs` decodes fastest).
const ZSTD_LEVELS: [i32; 3] = [1, 3, 19];

fn prepare(input: &str, dir: &Path) -> Result<(), String> {
    let src = match input.strip_prefix("synth:") {
        Some(n) => tetrad::synth::int4_bytes(n.parse().map_err(|e| format!("{input}: {e}"))?, 1),
        None => fs::read(input).map_err(|e| format!("{input}: {e}"))?,
    };
    fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let write = |name: &str, bytes: &[u8]| {
        fs::write(dir.join(name), bytes).map_err(|e| format!("{name}: {e}"))
    };
    write("n", src.len().to_string().as_bytes())?;
    let shift = rans64::DEFAULT_CHUNK_SHIFT;
    let mut blob = vec![0u8; rans64::max_encoded_len(src.len(), shift)];
    let len = rans64::encode_v2_into(&src, shift, &mut blob).map_err(|e| e.to_string())?;
    write("v2.blob", &blob[..len])?;
    let len = rans64::encode_v3_into(&src, shift, &mut blob).map_err(|e| e.to_string())?;
    write("v3.blob", &blob[..len])?;
    for level in ZSTD_LEVELS {
        let frame = zstd::bulk::compress(&src, level).map_err(|e| e.to_string())?;
        write(&format!("zstd-{level}.zst"), &frame)?;
    }
    Ok(())
}

fn decode(codec: &str, file: &str, n: &str, dry: bool) -> Result<(), String> {
    let blob = fs::read(file).map_err(|e| format!("{file}: {e}"))?;
    let n: usize = n.parse().map_err(|e| format!("{n}: {e}"))?;
    let mut out = vec![0u8; n];
    if let Some(name) = codec.strip_prefix("rans64:") {
        let arm = Arm::from_name(name).ok_or_else(|| format!("no arm {name}"))?;
        if !arm.is_available() {
            return Err(format!("arm {name} is not available here"));
        }
        if !dry {
            rans64::decode_with(arm, &blob, &mut out).map_err(|e| e.to_string())?;
        }
    } else if codec == "check" {
        // The chunk check over the file's bytes: the part of a decode that verifies each
        // chunk's stored bytes before decoding them, on the form this CPU runs.
        if !dry {
            let check = rans64::chunk_check(&blob);
            out.iter_mut().for_each(|o| *o = check.to_le_bytes()[0]);
        }
    } else if codec == "zstd" {
        let mut ctx = zstd::bulk::Decompressor::new().map_err(|e| e.to_string())?;
        if !dry {
            let got = ctx.decompress_to_buffer(&blob, &mut out).map_err(|e| e.to_string())?;
            if got != n {
                return Err(format!("zstd decoded {got} bytes, expected {n}"));
            }
        }
    } else {
        return Err(format!("unknown codec {codec}"));
    }
    // The output's first and last bytes as the exit's witness, so the decode is not elided.
    println!("{} {}", out.first().copied().unwrap_or(0), out.last().copied().unwrap_or(0));
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match args.as_slice() {
        ["prepare", input, dir] => prepare(input, Path::new(dir)),
        ["decode", codec, file, n] => decode(codec, file, n, false),
        ["decode", codec, file, n, "dry"] => decode(codec, file, n, true),
        _ => Err("usage: insn_count prepare INPUT OUT_DIR | decode CODEC FILE N [dry]".into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("insn_count: {e}");
            ExitCode::FAILURE
        }
    }
}
