//! `tetrad bench`: codec, kernel and memory throughput on this machine, beside zstd.
//!
//! Every measurement is the median of `--runs` (≥ 5) timed runs after one untimed warm-up run,
//! on one thread unless the result says otherwise. The data is generated realistic per-row
//! int4 ([`crate::synth::int4_bytes`], `--mib` MiB of packed bytes, so twice as many
//! nibbles) or the int4 weights of `--input`. The read bandwidth is a STREAM-like sum over a
//! `u64` array of 8 × `--mib` MiB (so it is DRAM-resident for the default size). Kernels run
//! every format with a value rule, every available ISA, f32 and (integer formats, mxfp4) int8
//! activations, on a 256 × 1024 matrix (L2-resident but for f32 weights) and on a
//! 14 336-column one of 2 × `--mib` MiB, each beside a read of the same weight bytes. The
//! adapter group multiplies through the fused decode-then-matmul adapter on a record of a
//! 2 × `--mib` MiB int4-row matrix (batch 1 and 16, f32 and int8 activations; 1 thread and the
//! 2-thread decode/multiply pipeline), beside the record's standalone decode and dense int4-row
//! at the same batch. zstd runs on the same bytes at several settings (`-1`, `-3`, `-19`,
//! `-22`, `-19 --long`): the headline compares the fastest `int4-rans64-t1` decode with the
//! zstd frame that decodes fastest, at that frame's size, and with the smallest frame, naming
//! the libzstd version linked in. The JSON schema is documented in `docs/CLI.md`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, ValueEnum};
use rayon::prelude::*;
use serde_json::{Value, json};
use tetrad_quant::{Format, Isa, Matrix, Scales};
use tetrad_rans::{
    Arm, FORMAT_SCALE_BITS, FORMAT_STREAMS, Record, Table, decode_record_with,
    encode_record_packed, max_record_len,
};

use crate::error::{Class, Refusal};
use crate::stats::{Measured, StatsOptions, Symbols, collect};

/// Which group of measurements to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Which {
    /// int4-rans256-g0, CFS1, int4-rans64-t1 and zstd (-1, -3, -19, -22, -19 --long)
    /// encode/decode.
    Codecs,
    /// matmul kernels: every format, ISA and accumulation mode, L2- and DRAM-resident.
    Kernels,
    /// The fused decode-then-matmul adapter over an int4-rans256-g0 record, beside its
    /// standalone decode and dense int4-row.
    Adapter,
    /// Everything available, plus the read bandwidth.
    All,
}

/// Options of `tetrad bench`.
#[derive(Debug, Args)]
#[command(after_help = "\
--isa forces one arm: a rANS decode arm (scalar, avx2, avx512, avx512-vbmi, neon; int4-rans256-g0 also scalar-bf)
or a kernel ISA (scalar, avx2, …);
an unavailable arm is a refusal, never a silent downgrade. Without it every available arm runs.
--input takes a safetensors container (file or directory: its int4 weights, decoded if
entropy-coded; unstamped U8 codes with per-row scales are read as packed int4-row, as pack
reads them), a GGUF file (its 4-bit blocks' nibbles) or a raw file of packed int4 bytes. The --json schema is in docs/CLI.md.

Examples:
  tetrad bench
  tetrad bench --json codecs
  tetrad bench --isa scalar-bf --input packed/ codecs")]
pub struct BenchArgs {
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Force one arm (rANS decode arm or kernel ISA).
    #[arg(long, value_name = "ARM")]
    pub isa: Option<String>,
    /// A container or a raw file of packed int4 bytes instead of generated data.
    #[arg(long)]
    pub input: Option<PathBuf>,
    /// MiB of generated packed int4 (default 32 = 64 Mi nibbles).
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub mib: u32,
    /// Timed runs per measurement (the median is reported).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(5..=1000))]
    pub runs: u32,
    /// What to measure.
    #[arg(value_enum, default_value_t = Which::All)]
    pub what: Which,
}

/// One warm-up, then the median of `runs` timed calls, in seconds.
fn median_secs(runs: u32, mut f: impl FnMut()) -> f64 {
    f();
    let mut t: Vec<f64> = (0..runs)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

/// [`median_secs`] of a fallible call: its time, or the first error any run returned.
fn median_secs_ok<E>(runs: u32, mut f: impl FnMut() -> Result<(), E>) -> Result<f64, E> {
    let mut err = None;
    let t = median_secs(runs, || {
        if let Err(e) = f() {
            err.get_or_insert(e);
        }
    });
    err.map_or(Ok(t), Err)
}

fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines()
        .find(|l| l.starts_with("model name") || l.starts_with("Model"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned())
}

fn cpu_flags() -> Vec<&'static str> {
    let mut v = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        for (f, on) in [
            ("sse4.2", std::arch::is_x86_feature_detected!("sse4.2")),
            ("avx2", std::arch::is_x86_feature_detected!("avx2")),
            ("fma", std::arch::is_x86_feature_detected!("fma")),
            ("f16c", std::arch::is_x86_feature_detected!("f16c")),
            ("bmi2", std::arch::is_x86_feature_detected!("bmi2")),
            ("avx512f", std::arch::is_x86_feature_detected!("avx512f")),
            ("avx512bw", std::arch::is_x86_feature_detected!("avx512bw")),
            ("avx512dq", std::arch::is_x86_feature_detected!("avx512dq")),
            ("avx512vl", std::arch::is_x86_feature_detected!("avx512vl")),
            ("avx512vnni", std::arch::is_x86_feature_detected!("avx512vnni")),
            ("avx512vbmi", std::arch::is_x86_feature_detected!("avx512vbmi")),
            ("avx512vbmi2", std::arch::is_x86_feature_detected!("avx512vbmi2")),
            ("avx512cd", std::arch::is_x86_feature_detected!("avx512cd")),
            ("avxvnni", std::arch::is_x86_feature_detected!("avxvnni")),
        ] {
            if on {
                v.push(f);
            }
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        for (f, on) in [
            ("neon", std::arch::is_aarch64_feature_detected!("neon")),
            ("dotprod", std::arch::is_aarch64_feature_detected!("dotprod")),
            ("i8mm", std::arch::is_aarch64_feature_detected!("i8mm")),
        ] {
            if on {
                v.push(f);
            }
        }
    }
    v
}

/// `YYYY-MM-DDTHH:MM:SSZ` of now (civil-from-days, proleptic Gregorian).
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem / 60 % 60, rem % 60)
}

fn rustc_version() -> Option<String> {
    let out = std::process::Command::new("rustc").arg("--version").output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn machine() -> Value {
    json!({
        "cpu": cpu_model(),
        "cores": std::thread::available_parallelism().map_or(1, |n| n.get()),
        "arch": std::env::consts::ARCH,
        "os": std::env::consts::OS,
        "cpu_features": cpu_flags(),
        "rustc": rustc_version(),
        "rustc_note": "the rustc on PATH when the bench ran; rust-toolchain.toml pins the build",
        "profile": if cfg!(debug_assertions) { "debug" } else { "release" },
        "tetrad": env!("CARGO_PKG_VERSION"),
        "libzstd": libzstd_version(),
        "date": utc_now(),
        "rans_arms": Arm::ALL.iter().filter(|a| a.is_available()).map(|a| a.name()).collect::<Vec<_>>(),
        "kernel_isas": tetrad_quant::isa::available().map(Isa::name).collect::<Vec<_>>(),
    })
}

fn gnib(bytes: usize, secs: f64) -> f64 {
    2.0 * bytes as f64 / secs / 1e9
}

/// A container rather than raw bytes: a directory, or a file named `*.safetensors` /
/// `*.gguf` or starting like one (a safetensors header length then `{`, or the GGUF magic).
fn is_container(p: &Path) -> bool {
    if p.is_dir() {
        return true;
    }
    let named = |ext: &str| p.extension().is_some_and(|e| e.eq_ignore_ascii_case(ext));
    if named("safetensors") || named("gguf") {
        return true;
    }
    let mut head = [0u8; 9];
    let read =
        crate::io::open_input(p).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head));
    read.is_ok() && (head[..4] == *b"GGUF" || (head[8] == b'{' && head[4..8] == [0; 4]))
}

fn input_bytes(args: &BenchArgs) -> Result<(Vec<u8>, String), Refusal> {
    let Some(p) = &args.input else {
        let bytes = usize::try_from(args.mib).unwrap_or(1) << 20;
        return Ok((
            crate::synth::int4_bytes(bytes, 2026),
            format!("generated per-row int4, {} MiB", args.mib),
        ));
    };
    if is_container(p) {
        let opts =
            StatsOptions { quantize: crate::quantize_container::QuantFormat::Int4Row, zstd: false };
        let (m, _) = collect(std::slice::from_ref(p), &opts)?;
        // Nibble codes (stamped or resolved int4, decoded if entropy-coded, GGUF 4-bit
        // blocks' nibbles, floats quantized to int4-row), and unstamped U8 codes with per-row
        // scales, which byte counts cannot tell from int8-row: `pack` reads those as packed
        // int4-row, and so does this.
        let int4 = |m: &Measured| {
            m.symbols == Symbols::Nibble
                || (m.format_source == "resolved" && m.format == "int8-row")
        };
        let data: Vec<u8> = m.into_iter().filter(int4).flat_map(|m| m.data).collect();
        if data.is_empty() {
            return Err(Refusal::new(
                Class::NoInput,
                format!("{} holds no int4 weights", p.display()),
            ));
        }
        Ok((data, format!("int4 weights of {}", p.display())))
    } else {
        let data = crate::io::read_input(p)
            .map_err(|e| Refusal::new(Class::Io, format!("{}: {e}", p.display())))?;
        if data.is_empty() {
            return Err(Refusal::new(Class::NoInput, format!("{} is empty", p.display())));
        }
        Ok((data, format!("raw packed int4 bytes of {}", p.display())))
    }
}

fn codecs(
    args: &BenchArgs,
    forced: &Forced,
    out: &mut Vec<Value>,
    unavailable: &mut Vec<Value>,
) -> Result<(), Refusal> {
    let (data, source) = input_bytes(args)?;
    let n = data.len();
    let runs = args.runs;
    let hist = crate::synth::nibble_histogram(&data);
    let table = Table::from_histogram(FORMAT_SCALE_BITS, &hist)
        .map_err(|e| Refusal::of(&e, e.to_string()))?;
    let mut blob = vec![0u8; max_record_len(2 * n, FORMAT_STREAMS)];
    let mut len = 0;
    let t =
        median_secs_ok(runs, || encode_record_packed(&table, &data, &mut blob).map(|l| len = l))
            .map_err(|e| Refusal::of(&e, e.to_string()))?;
    let base = |what: &str, codec: &str, arm: &str, secs: f64, out_bytes: usize| {
        json!({"what": what, "codec": codec, "arm": arm, "threads": 1, "bytes": n,
               "compressed_bytes": out_bytes, "gnib_per_s": gnib(n, secs), "median_s": secs,
               "runs": runs, "input": source})
    };
    out.push(base("encode", "int4-rans256-g0", "scalar", t, len));
    let record = Record::parse(&blob[..len]).map_err(|e| Refusal::of(&e, e.to_string()))?;
    let mut back = vec![0u8; n];
    let arms: Vec<Arm> = match (forced.arm, &args.isa) {
        (Some(a), _) => vec![a],
        // --isa names an arm int4-rans256-g0 does not have.
        (None, Some(name)) => {
            unavailable.push(skipped("decode", "int4-rans256-g0", name, None));
            Vec::new()
        }
        (None, None) => Arm::ALL.iter().copied().filter(|a| a.is_available()).collect(),
    };
    for a in arms {
        let t = median_secs_ok(runs, || decode_record_with(a, &table, &record, &mut back))
            .map_err(|e| Refusal::of(&e, e.to_string()))?;
        if back != data {
            return Err(Refusal::new(
                Class::Roundtrip,
                format!("{a} decode differs from the input"),
            ));
        }
        out.push(base("decode", "int4-rans256-g0", a.name(), t, len));
    }
    // CFS1.
    let mut cblob = vec![0u8; tetrad_fse::max_encoded_len(n)];
    let mut clen = 0;
    let t = median_secs(runs, || {
        clen = tetrad_fse::encode_into(&data, &mut cblob).unwrap_or(0);
    });
    if clen == 0 {
        return Err(Refusal::new(Class::Cfs1, "CFS1 encode failed".to_owned()));
    }
    out.push(base("encode", "cfs1", "scalar", t, clen));
    let mut ok = true;
    let t = median_secs(runs, || {
        ok &= tetrad_fse::decode_into(&cblob[..clen], &mut back).is_ok_and(|m| m == n);
    });
    if !ok || back != data {
        return Err(Refusal::new(
            Class::Roundtrip,
            "CFS1 decode differs from the input".to_owned(),
        ));
    }
    out.push(base("decode", "cfs1", "scalar", t, clen));
    // int4-rans64-t1 (tetrad's own format): the version the encoder writes (3), then version 2
    // (what readers that predate version 3 need). Each: encode, then every available decode
    // arm (or the one `--isa` names, when this format has an arm of that name); the records
    // say which version in `"version"`.
    use tetrad_rans::rans64;
    let shift = rans64::DEFAULT_CHUNK_SHIFT;
    let mut rblob = vec![0u8; rans64::max_encoded_len(n, shift)];
    let tagged = |r: Value, version: u8| {
        let mut r = r;
        r["version"] = json!(version);
        r
    };
    let arms64: Vec<rans64::Arm> = match (forced.arm64, &args.isa) {
        (Some(a), _) => vec![a],
        // --isa names an arm only int4-rans256-g0 has (such as scalar-bf).
        (None, Some(name)) => {
            unavailable.push(skipped("decode", rans64::FORMAT_NAME, name, None));
            Vec::new()
        }
        (None, None) => rans64::Arm::ALL.iter().copied().filter(|a| a.is_available()).collect(),
    };
    let mut decode_rows = |blob: &[u8], version: u8, out: &mut Vec<Value>| {
        for &a in &arms64 {
            let t = median_secs_ok(runs, || rans64::decode_with(a, blob, &mut back))
                .map_err(|e| Refusal::of(&e, e.to_string()))?;
            if back != data {
                return Err(Refusal::new(
                    Class::Roundtrip,
                    format!("{} version {version} {a} decode differs", rans64::FORMAT_NAME),
                ));
            }
            out.push(tagged(base("decode", rans64::FORMAT_NAME, a.name(), t, blob.len()), version));
        }
        Ok(())
    };
    // Version 3: one (scalar) encoder.
    let mut rlen = 0;
    let t =
        median_secs_ok(runs, || rans64::encode_into(&data, shift, &mut rblob).map(|l| rlen = l))
            .map_err(|e| Refusal::of(&e, e.to_string()))?;
    out.push(tagged(
        base("encode", rans64::FORMAT_NAME, "scalar", t, rlen),
        rans64::DEFAULT_VERSION,
    ));
    decode_rows(&rblob[..rlen], rans64::DEFAULT_VERSION, out)?;
    let blob3 = rblob[..rlen].to_vec();
    // Version 2: every arm that has an encode kernel here (scalar, AVX2), or only the forced
    // one when it has; they write the same bytes.
    let encode_arms: Vec<rans64::Arm> = match forced.arm64 {
        Some(a) if a.can_encode() => vec![a],
        Some(a) => {
            let best = rans64::Arm::best_encoder();
            unavailable.push(skipped("encode", rans64::FORMAT_NAME, a.name(), Some(best.name())));
            vec![best]
        }
        None => match &args.isa {
            // --isa names an arm this format does not have: encode (needed for the decodes)
            // on the best encoder, and say so.
            Some(name) => {
                let best = rans64::Arm::best_encoder();
                unavailable.push(skipped("encode", rans64::FORMAT_NAME, name, Some(best.name())));
                vec![best]
            }
            None => rans64::Arm::ALL.iter().copied().filter(|a| a.can_encode()).collect(),
        },
    };
    for a in encode_arms {
        let t = median_secs_ok(runs, || {
            rans64::encode_v2_with(a, &data, shift, &mut rblob).map(|l| rlen = l)
        })
        .map_err(|e| Refusal::of(&e, e.to_string()))?;
        out.push(tagged(base("encode", rans64::FORMAT_NAME, a.name(), t, rlen), rans64::VERSION_2));
    }
    decode_rows(&rblob[..rlen], rans64::VERSION_2, out)?;
    let frames = zstd_reference(&data, runs, &base, out)?;
    paired_with_zstd(&data, runs, &blob3, &frames, out)
}

/// The headline's pair timed alternately: the fastest decode arm of the version the encoder
/// writes and the zstd frame that decoded fastest, one timed run of each per round with the
/// order swapped every round, so a slow spell of the machine falls on both; a `"paired"`
/// record with both medians and their ratio (nothing when either is missing).
fn paired_with_zstd(
    data: &[u8],
    runs: u32,
    blob: &[u8],
    frames: &[(&'static str, Vec<u8>)],
    out: &mut Vec<Value>,
) -> Result<(), Refusal> {
    use tetrad_rans::rans64;
    let speed = |r: &&Value| r["gnib_per_s"].as_f64().unwrap_or(0.0);
    let ours = out
        .iter()
        .filter(|r| r["what"] == "decode" && r["codec"] == rans64::FORMAT_NAME)
        .filter(|r| r["version"] == rans64::DEFAULT_VERSION)
        .max_by(|a, b| speed(a).total_cmp(&speed(b)))
        .and_then(|r| rans64::Arm::from_name(r["arm"].as_str()?));
    let zstd = out
        .iter()
        .filter(|r| r["what"] == "decode" && r["codec"] == "zstd")
        .max_by(|a, b| speed(a).total_cmp(&speed(b)))
        .and_then(|r| frames.iter().find(|(name, _)| r["zstd"] == *name));
    let (Some(arm), Some((name, frame))) = (ours, zstd) else { return Ok(()) };
    let n = data.len();
    let mut back = vec![0u8; n];
    let mut ok = true;
    let ours_once = |back: &mut [u8]| -> Result<f64, Refusal> {
        let s = Instant::now();
        rans64::decode_with(arm, blob, back).map_err(|e| Refusal::of(&e, e.to_string()))?;
        Ok(s.elapsed().as_secs_f64())
    };
    let zstd_once = |back: &mut [u8], ok: &mut bool| {
        let s = Instant::now();
        *ok &= zstd::bulk::decompress_to_buffer(frame, back).is_ok_and(|m| m == n);
        s.elapsed().as_secs_f64()
    };
    // One untimed run of each, then `runs` rounds.
    ours_once(&mut back)?;
    zstd_once(&mut back, &mut ok);
    let (mut ta, mut tz) = (Vec::new(), Vec::new());
    for round in 0..runs {
        if round % 2 == 0 {
            ta.push(ours_once(&mut back)?);
            tz.push(zstd_once(&mut back, &mut ok));
        } else {
            tz.push(zstd_once(&mut back, &mut ok));
            ta.push(ours_once(&mut back)?);
        }
    }
    if !ok || back != data {
        return Err(Refusal::new(Class::Roundtrip, format!("zstd {name} decode differs")));
    }
    let median = |mut t: Vec<f64>| {
        t.sort_by(f64::total_cmp);
        t[t.len() / 2]
    };
    let (a, z) = (gnib(n, median(ta)), gnib(n, median(tz)));
    out.push(json!({"what": "paired", "codec": rans64::FORMAT_NAME,
                    "version": rans64::DEFAULT_VERSION, "arm": arm.name(), "threads": 1,
                    "zstd": name,
                    "gnib_per_s": a, "zstd_gnib_per_s": z, "speed_ratio": a / z,
                    "runs": runs, "bytes": n}));
    Ok(())
}

/// The zstd frames `tetrad bench` compares against, all of the same bytes: `(name, level,
/// long-distance matching)`. The fast levels decode fastest on most int4 data; 19, 22 and 19
/// with `--long` compress smallest (which of them depends on the data). Levels 1 and 3 are
/// timed both ways; the slow levels are encoded once, untimed.
const ZSTD_FRAMES: [(&str, i32, bool); 5] = [
    ("-1", 1, false),
    ("-3", 3, false),
    ("-19", 19, false),
    ("-22", 22, false),
    ("-19 --long", 19, true),
];

/// The version of the libzstd linked into this build (`zstd -d` speed depends on it).
fn libzstd_version() -> String {
    zstd::zstd_safe::version_string().to_owned()
}

/// Encodes and decodes `data` with each of [`ZSTD_FRAMES`], pushing one decode result per
/// frame (and an encode result for the timed levels), each with `level` and `zstd` (the
/// frame's command-line form).
fn zstd_reference(
    data: &[u8],
    runs: u32,
    base: &dyn Fn(&str, &str, &str, f64, usize) -> Value,
    out: &mut Vec<Value>,
) -> Result<Vec<(&'static str, Vec<u8>)>, Refusal> {
    let n = data.len();
    let io = |e: std::io::Error| Refusal::new(Class::Zstd, e.to_string());
    let mut frames = Vec::new();
    let mut back = vec![0u8; n];
    for (name, level, long) in ZSTD_FRAMES {
        let compress = || -> std::io::Result<Vec<u8>> {
            let mut c = zstd::bulk::Compressor::new(level)?;
            if long {
                c.set_parameter(zstd::zstd_safe::CParameter::EnableLongDistanceMatching(true))?;
                c.set_parameter(zstd::zstd_safe::CParameter::WindowLog(27))?;
            }
            c.compress(data)
        };
        let z = if level <= 3 {
            let mut res = Ok(Vec::new());
            let t = median_secs(runs, || res = compress());
            let z = res.map_err(io)?;
            let mut r = base("encode", "zstd", "libzstd", t, z.len());
            r["level"] = json!(level);
            r["zstd"] = json!(name);
            out.push(r);
            z
        } else {
            compress().map_err(io)?
        };
        let mut ok = true;
        let t = median_secs(runs, || {
            ok &= zstd::bulk::decompress_to_buffer(&z, &mut back).is_ok_and(|m| m == n);
        });
        if !ok || back != data {
            return Err(Refusal::new(Class::Roundtrip, format!("zstd {name} decode differs")));
        }
        let mut r = base("decode", "zstd", "libzstd", t, z.len());
        r["level"] = json!(level);
        r["zstd"] = json!(name);
        out.push(r);
        frames.push((name, z));
    }
    Ok(frames)
}

/// The headline comparison of the codecs group: the fastest `int4-rans64-t1` decode of the
/// version the encoder writes against the zstd frame that decodes fastest (speed and size
/// both), and against the smallest zstd frame; `None` when the group did not run both.
fn zstd_headline(results: &[Value]) -> Option<Value> {
    let decodes = |codec: &'static str| {
        results.iter().filter(move |r| r["what"] == "decode" && r["codec"] == codec)
    };
    let speed = |r: &Value| r["gnib_per_s"].as_f64().unwrap_or(0.0);
    let size = |r: &Value| r["compressed_bytes"].as_f64().unwrap_or(f64::INFINITY);
    let ours = decodes(tetrad_rans::rans64::FORMAT_NAME)
        .filter(|r| r["version"] == tetrad_rans::rans64::DEFAULT_VERSION)
        .max_by(|a, b| speed(a).total_cmp(&speed(b)))?;
    let fastest = decodes("zstd").max_by(|a, b| speed(a).total_cmp(&speed(b)))?;
    let smallest = decodes("zstd").min_by(|a, b| size(a).total_cmp(&size(b)))?;
    let against = |z: &Value| {
        json!({"zstd": z["zstd"], "gnib_per_s": z["gnib_per_s"],
               "compressed_bytes": z["compressed_bytes"],
               "speed_ratio": speed(ours) / speed(z), "size_ratio": size(ours) / size(z)})
    };
    let paired = results.iter().find(|r| r["what"] == "paired").map(|p| {
        json!({"zstd": p["zstd"], "arm": p["arm"], "gnib_per_s": p["gnib_per_s"],
               "zstd_gnib_per_s": p["zstd_gnib_per_s"], "speed_ratio": p["speed_ratio"],
               "runs": p["runs"]})
    });
    Some(json!({"paired": paired,
                "codec": tetrad_rans::rans64::FORMAT_NAME, "version": ours["version"],
                "arm": ours["arm"],
                "gnib_per_s": ours["gnib_per_s"], "compressed_bytes": ours["compressed_bytes"],
                "libzstd": libzstd_version(),
                "fastest_zstd": against(fastest), "smallest_zstd": against(smallest)}))
}

fn read_bandwidth(args: &BenchArgs, out: &mut Vec<Value>) {
    let words = (usize::try_from(args.mib).unwrap_or(1) << 20) * 8 / 8;
    let buf: Vec<u64> = (0..words as u64).collect();
    let bytes = words * 8;
    let sum = |s: &[u64]| {
        let mut acc = [0u64; 4];
        for c in s.chunks_exact(4) {
            for k in 0..4 {
                acc[k] = acc[k].wrapping_add(c[k]);
            }
        }
        acc.iter().fold(0u64, |a, &b| a.wrapping_add(b))
    };
    let threads = rayon::current_num_threads();
    for th in [1, threads] {
        let t = median_secs(args.runs, || {
            let s = if th == 1 {
                sum(&buf)
            } else {
                buf.par_chunks(words.div_ceil(th).max(4)).map(sum).reduce(|| 0, u64::wrapping_add)
            };
            std::hint::black_box(s);
        });
        out.push(json!({"what": "read_bandwidth", "arm": "scalar", "threads": th, "bytes": bytes,
            "gbytes_per_s": bytes as f64 / t / 1e9, "median_s": t, "runs": args.runs}));
        if threads == 1 {
            break;
        }
    }
}

/// The formats the kernels bench measures (label, format, int4-grouped group size).
const KERNEL_FORMATS: [(&str, Format, usize); 8] = [
    ("f32", Format::F32, 0),
    ("int8-row", Format::Int8Row, 0),
    ("int4-row", Format::Int4Row, 0),
    ("int4-grouped", Format::Int4Grouped, 32),
    ("int2-row", Format::Int2Row, 0),
    ("int3-g64", Format::Int3G64, 0),
    ("mxfp4", Format::Mxfp4, 0),
    ("fp8-e4m3-b128", Format::Fp8E4m3B128, 0),
];

/// A generated weight tensor of `format` (`o × i`): int4 nibble formats get the realistic
/// per-row int4 codes of [`crate::synth::int4_rows`]; the others deterministic pseudo-random
/// codes (fp8 without NaN codes, f32 weights in [−1, 1)) and plausible scales.
fn kernel_tensor(format: Format, o: usize, i: usize, gs: usize) -> (Vec<u8>, Vec<f32>, Vec<u8>) {
    let mut st = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = move || {
        st ^= st << 13;
        st ^= st >> 7;
        st ^= st << 17;
        st
    };
    let stride = match format {
        Format::F32 => 4 * i,
        Format::Int8Row | Format::Fp8E4m3B128 => i,
        Format::Int4Row | Format::Int4Grouped | Format::Mxfp4 => i.div_ceil(2),
        Format::Int2Row => i.div_ceil(4),
        _ => i.div_ceil(64) * 24, // int3-g64
    };
    let mut w: Vec<u8> = match format {
        Format::Int4Row | Format::Int4Grouped | Format::Mxfp4 => {
            crate::synth::int4_rows(o, i, crate::synth::Dist::Laplace, 7).0
        }
        _ => (0..o * stride).map(|_| rnd().to_le_bytes()[3]).collect(),
    };
    match format {
        Format::F32 => {
            for c in w.chunks_exact_mut(4) {
                let v = (rnd() % 2000) as f32 / 1000.0 - 1.0;
                c.copy_from_slice(&v.to_le_bytes());
            }
        }
        Format::Fp8E4m3B128 => w.iter_mut().filter(|b| **b & 0x7F == 0x7F).for_each(|b| *b = 0x7E),
        _ => {}
    }
    let gl = match format {
        Format::Int4Grouped => gs,
        Format::Int3G64 => 64,
        Format::Mxfp4 => 32,
        Format::Fp8E4m3B128 => 128,
        _ => i,
    };
    let groups = i.div_ceil(gl);
    let ns = match format {
        Format::F32 | Format::Mxfp4 => 0,
        Format::Int8Row | Format::Int4Row | Format::Int2Row => o,
        Format::Fp8E4m3B128 => o.div_ceil(128) * groups,
        _ => o * groups,
    };
    let sf = (0..ns).map(|k| 0.01 + (k % 7) as f32 * 0.001).collect();
    let se = if format == Format::Mxfp4 {
        (0..o * groups).map(|k| 120 + u8::try_from(k % 16).unwrap_or(0)).collect()
    } else {
        Vec::new()
    };
    (w, sf, se)
}

/// STREAM-like single-thread read of `bytes` (four u64 accumulators).
fn read_sum(bytes: &[u8]) -> u64 {
    let mut a = [0u64; 4];
    for c in bytes.chunks_exact(32) {
        for (k, acc) in a.iter_mut().enumerate() {
            let word: [u8; 8] = c[8 * k..8 * k + 8].try_into().unwrap_or_default();
            *acc = acc.wrapping_add(u64::from_le_bytes(word));
        }
    }
    a.iter().fold(0, |s, v| s.wrapping_add(*v))
}

/// Columns of the kernel group's L2-resident matrix (256 rows).
const L2_COLS: usize = 1024;

/// Columns of the kernel group's DRAM matrix: the row length of a 7B model's MLP
/// (4096 × 14 336) and of the criterion bench. Short rows stream at a lower fraction of the
/// read (1024 columns: about 0.8 for int4-row q8 against about 0.9).
const DRAM_COLS: usize = 14_336;

/// Every format × every available (or the forced) ISA × accumulation mode (`f32`; `q8` where
/// the format has integer codes) × residency (`l2`: 256 × 1024; `dram`: [`DRAM_COLS`]
/// columns, 2 × `--mib` MiB of weights), batch 1 (and 8 when L2-resident), one thread; on the
/// DRAM matrix also 2 threads (rows split with the row-range API) on the best or forced ISA.
/// Each record carries the single-thread read rate of the same weight bytes, measured just
/// before it.
fn kernels(args: &BenchArgs, isa: Option<Isa>, out: &mut Vec<Value>) -> Result<(), Refusal> {
    use tetrad_quant::kernels::{matmul_q8_rows_with, matmul_rows_with, quantize_activations};
    let isas: Vec<Isa> = match isa {
        Some(i) => vec![i],
        None => tetrad_quant::isa::available().collect(),
    };
    let threaded = isa.unwrap_or_else(tetrad_quant::isa::best);
    let kerr = |e: tetrad_quant::KernelError| Refusal::of(&e, e.to_string());
    for (label, format, gs) in KERNEL_FORMATS {
        let bpw = match format {
            Format::F32 => 4.0,
            Format::Int8Row | Format::Fp8E4m3B128 => 1.0,
            Format::Int4Row | Format::Int4Grouped | Format::Mxfp4 => 0.5,
            Format::Int2Row => 0.25,
            _ => 24.0 / 64.0,
        };
        let row_bytes = |i: usize| match format {
            Format::F32 => 4 * i,
            Format::Int8Row | Format::Fp8E4m3B128 => i,
            Format::Int4Row | Format::Int4Grouped | Format::Mxfp4 => i / 2,
            Format::Int2Row => i / 4,
            _ => i / 64 * 24,
        };
        let mib = usize::try_from(args.mib).unwrap_or(1);
        let big_o = ((mib << 20) * 2 / row_bytes(DRAM_COLS)).max(256);
        for (resident, o, i) in [("l2", 256usize, L2_COLS), ("dram", big_o, DRAM_COLS)] {
            let (w, sf, se) = kernel_tensor(format, o, i, gs);
            let scales = match format {
                Format::F32 => Scales::None,
                Format::Mxfp4 => Scales::Ue8m0(&se),
                _ => Scales::F32(&sf),
            };
            let m = Matrix::new(format, &w, scales, o, i, gs).map_err(kerr)?;
            // fp8 also as an engine would hold it: checked once for NaN codes (none here), so
            // the kernels skip their per-block probes (mode "f32-checked").
            let mc = m.with_nan_codes_checked();
            let read_s = median_secs(args.runs, || {
                std::hint::black_box(read_sum(std::hint::black_box(&w)));
            });
            let read_gbs = w.len() as f64 / read_s / 1e9;
            let batches: &[usize] = if resident == "l2" { &[1, 8] } else { &[1] };
            for &batch in batches {
                let x: Vec<f32> = (0..batch * i).map(|k| ((k % 17) as f32 - 8.0) * 0.1).collect();
                let mut q = vec![0i8; batch * i];
                let mut qs = vec![0f32; batch];
                let xq = quantize_activations(&x, batch, i, &mut q, &mut qs).map_err(kerr)?;
                let mut y = vec![0f32; batch * o];
                let modes: &[&str] = if m.has_q8() {
                    &["f32", "q8"]
                } else if mc.fp8_nan_free() {
                    &["f32", "f32-checked"]
                } else {
                    &["f32"]
                };
                for &mode in modes {
                    let mut runs: Vec<(Isa, usize)> = isas.iter().map(|&a| (a, 1)).collect();
                    if resident == "dram" && batch == 1 {
                        runs.push((threaded, 2));
                    }
                    let m = if mode == "f32-checked" { &mc } else { &m };
                    for (a, threads) in runs {
                        let half = o / 2;
                        let t = median_secs_ok(args.runs, || {
                            if threads == 1 {
                                if mode == "q8" {
                                    matmul_q8_rows_with(a, m, &xq, 0..o, &mut y)
                                } else {
                                    matmul_rows_with(a, m, &x, batch, 0..o, &mut y)
                                }
                            } else {
                                let (y0, y1) = y.split_at_mut(half);
                                let (x, xq) = (&x, &xq);
                                std::thread::scope(|sc| {
                                    let h = sc.spawn(move || {
                                        if mode == "q8" {
                                            matmul_q8_rows_with(a, m, xq, 0..half, y0)
                                        } else {
                                            matmul_rows_with(a, m, x, 1, 0..half, y0)
                                        }
                                    });
                                    let r1 = if mode == "q8" {
                                        matmul_q8_rows_with(a, m, xq, half..o, y1)
                                    } else {
                                        matmul_rows_with(a, m, x, 1, half..o, y1)
                                    };
                                    h.join().unwrap_or(r1).and(r1)
                                })
                            }
                        })
                        .map_err(|e| Refusal::of(&e, format!("{}: {e}", a.name())))?;
                        let gw = (o * i * batch) as f64 / t / 1e9;
                        out.push(json!({"what": "kernel", "format": label, "mode": mode,
                            "arm": a.name(), "threads": threads, "batch": batch,
                            "bytes": w.len(), "rows": o, "cols": i, "resident": resident,
                            "gweights_per_s": gw, "median_s": t, "runs": args.runs,
                            "read_gbytes_per_s": read_gbs,
                            "read_gweights_per_s": read_gbs / bpw,
                            "of_read": gw * bpw / read_gbs}));
                    }
                }
            }
        }
    }
    Ok(())
}

/// The fused decode-then-matmul adapters on an int4-row matrix of 2 × `--mib` MiB coded as one
/// `int4-rans256-g0` record, one `int4-rans64-t1` blob and one CFS1 blob: batch 1 and 16, f32
/// and int8 activations, one thread and two (`int4-rans256-g0` and CFS1: the decode/multiply
/// pipeline or the stream split; `int4-rans64-t1`: row bands). Beside them, once per codec,
/// the standalone decode and, per batch and mode, dense int4-row on the decoded bytes (one
/// thread): one-thread records carry their median times and `of_decode` / `of_dense` (the
/// fused product's speed over theirs: the batch-1 and batch-16 ratios). Every fused product is
/// checked bit for bit against the dense one (same arm, same order).
fn adapter(
    args: &BenchArgs,
    isa: Option<Isa>,
    arm: Option<Arm>,
    arm64: Option<tetrad_rans::rans64::Arm>,
    out: &mut Vec<Value>,
) -> Result<(), Refusal> {
    use tetrad_quant::adapter::{Acts, Cfs1Matrix, Rans256Matrix};
    use tetrad_quant::adapter_rans64::Rans64Matrix;
    use tetrad_quant::kernels::{matmul_q8_with, matmul_with};
    use tetrad_rans::rans64;
    let refuse = |class: Class, e: String| Refusal::new(class, e);
    let i = 1024usize;
    let o = ((usize::try_from(args.mib).unwrap_or(1) << 20) * 2 / (i / 2)).max(256);
    let (codes, _) = crate::synth::int4_rows(o, i, crate::synth::Dist::Laplace, 11);
    let scales: Vec<f32> = (0..o).map(|r| 0.01 + r as f32 * 1e-6).collect();
    let dense = Matrix::new(Format::Int4Row, &codes, Scales::F32(&scales), o, i, 0)
        .map_err(|e| refuse(Class::of(&e), e.to_string()))?;
    let isa = isa.unwrap_or_else(tetrad_quant::isa::best);
    let arm = arm.unwrap_or_else(Arm::best);
    let arm64 = arm64.unwrap_or_else(rans64::Arm::best);

    // int4-rans256-g0 record.
    let table = Table::from_histogram(FORMAT_SCALE_BITS, &crate::synth::nibble_histogram(&codes))
        .map_err(|e| refuse(Class::of(&e), e.to_string()))?;
    let mut record = vec![0u8; max_record_len(2 * codes.len(), FORMAT_STREAMS)];
    let n = encode_record_packed(&table, &codes, &mut record)
        .map_err(|e| refuse(Class::of(&e), e.to_string()))?;
    record.truncate(n);
    let m256 = Rans256Matrix::new(&record, &table, &scales, o, i)
        .map_err(|e| refuse(Class::of(&e), e.to_string()))?;
    // int4-rans64-t1 blob.
    let shift = rans64::DEFAULT_CHUNK_SHIFT;
    let mut blob64 = vec![0u8; rans64::max_encoded_len(codes.len(), shift)];
    let n = rans64::encode_into(&codes, shift, &mut blob64)
        .map_err(|e| refuse(Class::of(&e), e.to_string()))?;
    blob64.truncate(n);
    let m64 = Rans64Matrix::new(&blob64, &scales, o, i)
        .map_err(|e| refuse(Class::of(&e), e.to_string()))?;
    // CFS1 blob.
    let mut cfs1 = vec![0u8; tetrad_fse::max_encoded_len(codes.len())];
    let n = tetrad_fse::encode_into(&codes, &mut cfs1)
        .map_err(|e| refuse(Class::Cfs1, e.to_string()))?;
    cfs1.truncate(n);
    let mc =
        Cfs1Matrix::new(&cfs1, &scales, o, i).map_err(|e| refuse(Class::of(&e), e.to_string()))?;

    let codecs: [(&str, &str, usize); 3] = [
        ("int4-rans256-g0", arm.name(), record.len()),
        (rans64::FORMAT_NAME, arm64.name(), blob64.len()),
        ("cfs1", "scalar", cfs1.len()),
    ];
    let weights = (o * i) as f64;
    let mut decoded = vec![0u8; codes.len()];
    for (c, &(format, decode_arm, compressed)) in codecs.iter().enumerate() {
        let decode_s = median_secs_ok(args.runs, || match c {
            0 => m256
                .decode_into(arm, &mut decoded)
                .map_err(|e| Failed(Class::of(&e), e.to_string())),
            1 => m64
                .decode_into(arm64, &mut decoded)
                .map_err(|e| Failed(Class::of(&e), e.to_string())),
            _ => mc.decode_into((), &mut decoded).map_err(|e| Failed(Class::of(&e), e.to_string())),
        })
        .map_err(|Failed(class, e)| refuse(class, e))?;
        if decoded != codes {
            return Err(refuse(
                Class::Roundtrip,
                format!("{format} decode differs from the input"),
            ));
        }
        for batch in [1usize, 16] {
            let x: Vec<f32> = (0..batch * i).map(|k| ((k % 17) as f32 - 8.0) * 0.1).collect();
            let (mut q, mut qs) = (vec![0i8; batch * i], vec![0f32; batch]);
            for mode in ["f32", "q8"] {
                let mut want = vec![0f32; batch * o];
                let dense_s = median_secs_ok(args.runs, || {
                    with_acts(mode, &x, batch, i, &mut q, &mut qs, |a| match a {
                        Acts::F32 { x, s } => matmul_with(isa, &dense, x, s, &mut want),
                        Acts::Q8(xq) => matmul_q8_with(isa, &dense, xq, &mut want),
                    })
                })
                .map_err(|e| refuse(Class::of(&e), e.to_string()))?;
                let mut y = vec![0f32; batch * o];
                for threads in [1usize, 2] {
                    let t = median_secs_ok(args.runs, || {
                        with_acts(mode, &x, batch, i, &mut q, &mut qs, |a| match c {
                            0 => crate::adapter::matmul(&m256, isa, arm, a, &mut y, threads)
                                .map_err(|e| Failed(Class::of(&e), e.to_string())),
                            1 => crate::rans64::matmul(&m64, isa, arm64, a, &mut y, threads)
                                .map_err(|e| Failed(Class::of(&e), e.to_string())),
                            _ => crate::adapter::matmul_cfs1(&mc, isa, a, &mut y, threads)
                                .map_err(|e| Failed(Class::of(&e), e.to_string())),
                        })
                    })
                    .map_err(|Failed(class, e)| refuse(class, e))?;
                    if y.iter().map(|v| v.to_bits()).ne(want.iter().map(|v| v.to_bits())) {
                        return Err(refuse(
                            Class::Roundtrip,
                            format!(
                                "fused {format} {mode} batch {batch} x{threads} differs from \
                                 dense int4-row"
                            ),
                        ));
                    }
                    let rate = weights * batch as f64 / t / 1e9;
                    let mut r = json!({"what": "adapter", "format": format,
                        "arm": isa.name(), "decode_arm": decode_arm, "threads": threads,
                        "batch": batch, "mode": mode, "bytes": codes.len(),
                        "compressed_bytes": compressed, "rows": o, "cols": i,
                        "gweights_per_s": rate, "median_s": t, "runs": args.runs});
                    if threads == 1 {
                        // Speed ratios, i.e. the others' times over the fused product's.
                        r["decode_median_s"] = json!(decode_s);
                        r["dense_median_s"] = json!(dense_s);
                        r["of_decode"] = json!(decode_s / t);
                        r["of_dense"] = json!(dense_s / t);
                    }
                    out.push(r);
                }
            }
        }
    }
    Ok(())
}

/// A timed call that failed: its refusal class and message.
struct Failed(Class, String);

impl From<tetrad_quant::KernelError> for Failed {
    fn from(e: tetrad_quant::KernelError) -> Self {
        Failed(Class::of(&e), e.to_string())
    }
}

/// Calls `f` with `batch × i` activations `x` in `mode`: `"f32"` as they are, `"q8"` quantized
/// into `q`/`qs` first (in the timed call, as an engine would per product).
fn with_acts<E: From<tetrad_quant::KernelError>>(
    mode: &str,
    x: &[f32],
    batch: usize,
    i: usize,
    q: &mut [i8],
    qs: &mut [f32],
    f: impl FnOnce(tetrad_quant::adapter::Acts<'_>) -> Result<(), E>,
) -> Result<(), E> {
    use tetrad_quant::adapter::Acts;
    if mode == "f32" {
        return f(Acts::F32 { x, s: batch });
    }
    let xq = tetrad_quant::kernels::quantize_activations(x, batch, i, q, qs)?;
    f(Acts::Q8(&xq))
}

/// What `--isa NAME` forces, resolved once: the int4-rans256-g0 decode arm, the kernel ISA
/// and the int4-rans64-t1 decode arm of that name (each `None` where that family has no arm
/// of that name; all `None` without `--isa`).
struct Forced {
    arm: Option<Arm>,
    isa: Option<Isa>,
    arm64: Option<tetrad_rans::rans64::Arm>,
}

/// The `unavailable` entry of a decode or encode (`what`) that `--isa NAME` skips because
/// `codec` has no such arm of that name (`instead`: the arm that ran in its place, if any).
fn skipped(what: &str, codec: &str, name: &str, instead: Option<&str>) -> Value {
    let then = instead.map_or_else(|| "skipped".to_owned(), |a| format!("ran on {a} instead"));
    json!({"what": what, "codec": codec,
           "reason": format!("{codec} has no {what} arm named {name:?}; {then}")})
}

fn bench(args: &BenchArgs) -> Result<Value, Refusal> {
    let mut forced = Forced { arm: None, isa: None, arm64: None };
    if let Some(name) = &args.isa {
        forced = Forced {
            arm: Arm::from_name(name),
            isa: Isa::from_name(name),
            arm64: tetrad_rans::rans64::Arm::from_name(name),
        };
        if forced.arm.is_none() && forced.isa.is_none() && forced.arm64.is_none() {
            return Err(Refusal::new(
                Class::ArmUnknown,
                format!("{name:?} is neither a rANS decode arm nor a kernel ISA"),
            ));
        }
        if forced.arm.is_some_and(|a| !a.is_available())
            || forced.isa.is_some_and(|i| !i.is_available())
            || forced.arm64.is_some_and(|a| !a.is_available())
        {
            return Err(Refusal::new(
                Class::ArmUnavailable,
                format!("{name} is not available on this machine"),
            ));
        }
    }
    let (arm, isa) = (forced.arm, forced.isa);
    let w = args.what;
    let mut results = Vec::new();
    let mut unavailable = Vec::new();
    if matches!(w, Which::Codecs | Which::All) {
        if args.isa.is_some() && arm.is_none() && forced.arm64.is_none() {
            unavailable.push(json!({"what": "decode", "reason": "--isa names a kernel ISA, not a rANS arm; codecs skipped"}));
        } else {
            codecs(args, &forced, &mut results, &mut unavailable)?;
        }
    }
    if w == Which::All {
        read_bandwidth(args, &mut results);
    }
    if matches!(w, Which::Kernels | Which::All) {
        if args.isa.is_some() && isa.is_none() {
            unavailable.push(json!({"what": "kernel", "reason": "--isa names a rANS arm, not a kernel ISA; kernels skipped"}));
        } else {
            kernels(args, isa, &mut results)?;
        }
    }
    if matches!(w, Which::Adapter | Which::All) {
        adapter(args, isa, arm, forced.arm64, &mut results)?;
    }
    let headline = zstd_headline(&results);
    Ok(json!({"machine": machine(), "results": results, "headline": headline,
              "unavailable": unavailable}))
}

/// Runs `tetrad bench`.
pub fn run(args: &BenchArgs) -> ExitCode {
    let v = match bench(args) {
        Ok(v) => v,
        Err(r) => return super::refused_as(&r, args.json),
    };
    if args.json {
        println!("{v}");
        return ExitCode::SUCCESS;
    }
    let m = &v["machine"];
    println!(
        "machine: {} ({} cores, {}), {}, {} build, libzstd {}, {}",
        m["cpu"].as_str().unwrap_or("unknown cpu"),
        m["cores"],
        m["arch"].as_str().unwrap_or(""),
        m["rustc"].as_str().unwrap_or("rustc unknown"),
        m["profile"].as_str().unwrap_or(""),
        m["libzstd"].as_str().unwrap_or("unknown"),
        m["date"].as_str().unwrap_or("")
    );
    for r in v["results"].as_array().into_iter().flatten() {
        let what = r["what"].as_str().unwrap_or("");
        if what == "paired" {
            continue; // printed with the headline
        }
        let name = r["codec"].as_str().or(r["format"].as_str()).unwrap_or("memory");
        let level = r
            .get("zstd")
            .and_then(Value::as_str)
            .map(|z| format!(" {z}"))
            .or_else(|| r.get("version").map(|v| format!(" v{v}")))
            .unwrap_or_default();
        let extra = match (r.get("batch"), r.get("resident")) {
            (Some(b), Some(res)) => format!(
                " batch {b} {}{}",
                res.as_str().unwrap_or(""),
                r.get("mode").and_then(Value::as_str).map(|m| format!(" {m}")).unwrap_or_default()
            ),
            (Some(b), None) => format!(
                " batch {b}{}",
                r.get("mode").and_then(Value::as_str).map(|m| format!(" {m}")).unwrap_or_default()
            ),
            _ => String::new(),
        };
        let rate = if let Some(g) = r["gnib_per_s"].as_f64() {
            format!("{g:.3} G nibbles/s")
        } else if let Some(g) = r["gbytes_per_s"].as_f64() {
            format!("{g:.2} GB/s")
        } else {
            format!("{:.3} G weights/s", r["gweights_per_s"].as_f64().unwrap_or(0.0))
        };
        let size = r
            .get("of_decode")
            .and_then(Value::as_f64)
            .zip(r.get("of_dense").and_then(Value::as_f64))
            .map(|(d, n)| {
                format!(" ({d:.2} x the standalone decode's speed, {n:.2} x dense int4-row's)")
            })
            .or_else(|| {
                r.get("compressed_bytes").map(|c| format!(" ({c} of {} bytes)", r["bytes"]))
            })
            .or_else(|| {
                r.get("of_read").and_then(Value::as_f64).map(|f| {
                    format!(
                        " ({f:.2} x the read of the same bytes, {:.2} G weights/s)",
                        r["read_gweights_per_s"].as_f64().unwrap_or(0.0)
                    )
                })
            })
            .unwrap_or_default();
        println!(
            "{what:>14} {name}{level} [{} x{}{extra}]: {rate}{size}",
            r["arm"].as_str().unwrap_or(""),
            r["threads"]
        );
    }
    let h = &v["headline"];
    if !h.is_null() {
        let line = |label: &str, z: &Value| {
            println!(
                "{label:>14}: {} v{} [{}] {:.3} G nibbles/s, {} bytes = {:.2} x the speed of \
                 zstd -d on the {} frame ({:.3} G nibbles/s, libzstd {}) at {:.3} x its size \
                 ({} bytes)",
                h["codec"].as_str().unwrap_or(""),
                h["version"],
                h["arm"].as_str().unwrap_or(""),
                h["gnib_per_s"].as_f64().unwrap_or(0.0),
                h["compressed_bytes"],
                z["speed_ratio"].as_f64().unwrap_or(0.0),
                z["zstd"].as_str().unwrap_or(""),
                z["gnib_per_s"].as_f64().unwrap_or(0.0),
                h["libzstd"].as_str().unwrap_or(""),
                z["size_ratio"].as_f64().unwrap_or(0.0),
                z["compressed_bytes"]
            );
        };
        line("headline", &h["fastest_zstd"]);
        line("vs smallest", &h["smallest_zstd"]);
        let p = &h["paired"];
        if !p.is_null() {
            println!(
                "{:>14}: {} v{} [{}] {:.3} G nibbles/s and zstd -d on the {} frame {:.3} G \
                 nibbles/s, timed alternately ({} rounds): {:.2} x",
                "paired",
                h["codec"].as_str().unwrap_or(""),
                h["version"],
                p["arm"].as_str().unwrap_or(""),
                p["gnib_per_s"].as_f64().unwrap_or(0.0),
                p["zstd"].as_str().unwrap_or(""),
                p["zstd_gnib_per_s"].as_f64().unwrap_or(0.0),
                p["runs"],
                p["speed_ratio"].as_f64().unwrap_or(0.0)
            );
        }
    }
    for u in v["unavailable"].as_array().into_iter().flatten() {
        println!(
            "{:>14}: {}",
            u["what"].as_str().unwrap_or(""),
            u["reason"].as_str().unwrap_or("")
        );
    }
    ExitCode::SUCCESS
}
