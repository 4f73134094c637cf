//! libtetrad as C and Python see it.
//!
//! - `header_declares_exactly_the_exports`: `include/tetrad.h` declares exactly the symbols the
//!   shared library exports (`nm -D`), with the C types of the Rust signatures.
//! - `c_program_static_and_shared`: `capi/tests/c/abi_test.c` and the examples of
//!   `docs/ENGINE.md` (`capi/tests/c/example_*.c`), compiled by `cc` against the header and
//!   linked with `libtetrad.a` and with `libtetrad.so`: round trips, refusals, prepared matmul
//!   against the results of the Rust API, written here.
//! - `python_bridge`: `capi/tests/python/test_bridge.py` loads the library copied as
//!   `librans_c.so` and checks colibrì's bridge against vectors made here with `tetrad_rans`.
//!
//! The libraries are built by a nested `cargo build --profile test -p tetrad-capi` (cargo does
//! not build a cdylib/staticlib-only crate for its integration tests), which reuses this
//! test's own dependency builds.
#![allow(clippy::cast_possible_truncation)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::{Value, json};
use tetrad_engine::container::{Container, TensorView};
use tetrad_engine::packed::pack::{Codec, PackOptions, pack_with};
use tetrad_quant::adapter::Acts;
use tetrad_quant::kernels::quantize_activations;
use tetrad_rans::{Arm, Nibbles, ParseOrder, Record, Table, encode_record};

const SRC_DIR: &str = env!("CARGO_MANIFEST_DIR");

/// The directory holding `libtetrad.so` and `libtetrad.a`, built once per test process.
fn lib_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        // <target>/<profile dir>/deps/abi-<hash>
        let exe = std::env::current_exe().unwrap();
        let profile_dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
        let target = profile_dir.parent().unwrap().to_path_buf();
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let st = Command::new(cargo)
            .args(["build", "--profile", "test", "-p", "tetrad-capi", "--target-dir"])
            .arg(&target)
            .current_dir(SRC_DIR)
            .status()
            .unwrap();
        assert!(st.success(), "building libtetrad failed");
        let so = profile_dir.join(SHARED);
        assert!(so.is_file(), "{} missing", so.display());
        profile_dir
    })
}

#[cfg(target_os = "macos")]
const SHARED: &str = "libtetrad.dylib";
#[cfg(not(target_os = "macos"))]
const SHARED: &str = "libtetrad.so";

fn repo() -> PathBuf {
    Path::new(SRC_DIR).parent().unwrap().to_path_buf()
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{cmd:?} failed ({}):\n{text}", out.status);
    text
}

// ---- the header against the exports ------------------------------------------------------

/// `name → [return type, parameter types…]`, C spelling, from the header.
fn header_decls() -> BTreeMap<String, Vec<String>> {
    let text = std::fs::read_to_string(repo().join("include/tetrad.h")).unwrap();
    // Drop comments, preprocessor lines and the C++ guard.
    let mut code = String::new();
    let mut rest = text.as_str();
    while let Some(a) = rest.find("/*") {
        code.push_str(&rest[..a]);
        let b = rest[a..].find("*/").unwrap();
        rest = &rest[a + b + 2..];
    }
    code.push_str(rest);
    let mut clean = String::new();
    let mut continued = false;
    for line in code.lines() {
        let t = line.trim();
        if continued || t.starts_with('#') {
            continued = t.ends_with('\\');
            continue;
        }
        if t == "extern \"C\" {" || t == "}" {
            continue;
        }
        clean.push_str(line);
        clean.push('\n');
    }
    let mut decls = BTreeMap::new();
    for stmt in clean.split(';') {
        let s = stmt.split_whitespace().collect::<Vec<_>>().join(" ");
        if s.is_empty() || s.starts_with("typedef") {
            continue;
        }
        let open = s.find('(').unwrap_or_else(|| panic!("not a function: {s}"));
        let head = &s[..open];
        let name_at = head.rfind(|c: char| !(c.is_alphanumeric() || c == '_')).map_or(0, |p| p + 1);
        let name = head[name_at..].to_owned();
        let ret = norm(&head[..name_at]);
        let params = &s[open + 1..s.rfind(')').unwrap()];
        let mut types = vec![ret];
        if params.trim() != "void" {
            for p in params.split(',') {
                let p = p.trim();
                let at = p.rfind(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap();
                types.push(norm(&p[..=at]));
            }
        }
        assert!(decls.insert(name.clone(), types).is_none(), "{name} declared twice");
    }
    decls
}

/// A C type with canonical spacing (`const uint8_t *`, `tetrad_container **`).
fn norm(t: &str) -> String {
    let t = t.replace('*', " * ");
    let words: Vec<&str> = t.split_whitespace().collect();
    words.join(" ").replace("* *", "**")
}

/// The C spelling of a Rust FFI type of this crate.
fn c_type(rust: &str) -> String {
    let r = rust.split_whitespace().collect::<Vec<_>>().join(" ");
    if let Some(inner) = r.strip_prefix("*const ") {
        return norm(&format!("const {} *", c_type(inner)));
    }
    if let Some(inner) = r.strip_prefix("*mut ") {
        return norm(&format!("{} *", c_type(inner)));
    }
    match r.trim_start_matches("std::ffi::").trim_start_matches("core::ffi::") {
        "" | "()" => "void",
        "u8" => "uint8_t",
        "i8" => "int8_t",
        "u16" => "uint16_t",
        "u32" => "uint32_t",
        "i32" => "int32_t",
        "u64" => "uint64_t",
        "i64" => "int64_t",
        "usize" => "size_t",
        "f32" => "float",
        "c_char" => "char",
        "TetradContainer" => "tetrad_container",
        "TetradTensor" => "tetrad_tensor",
        other => panic!("no C spelling for Rust type {other:?}"),
    }
    .to_owned()
}

/// `name → [return type, parameter types…]` of every `extern "C" fn` in `capi/src`.
fn rust_exports() -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(Path::new(SRC_DIR).join("src")).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        let mut rest = text.as_str();
        while let Some(at) = rest.find("extern \"C\" fn ") {
            let sig_start = at + "extern \"C\" fn ".len();
            let body = rest[sig_start..].find('{').unwrap() + sig_start;
            let sig = rest[sig_start..body].split_whitespace().collect::<Vec<_>>().join(" ");
            rest = &rest[body..];
            let open = sig.find('(').unwrap();
            let name = sig[..open].to_owned();
            let close = sig.rfind(')').unwrap();
            let ret = sig[close + 1..].trim().strip_prefix("->").unwrap_or("").trim().to_owned();
            let mut types = vec![c_type(&ret)];
            for p in sig[open + 1..close].split(',') {
                let p = p.trim();
                if p.is_empty() {
                    continue;
                }
                let (_, ty) = p.split_once(':').unwrap();
                types.push(c_type(ty));
            }
            out.insert(name, types);
        }
    }
    out
}

#[test]
fn header_declares_exactly_the_exports() {
    let header = header_decls();
    let rust = rust_exports();
    assert!(header.len() >= 20, "{} declarations", header.len());
    assert_eq!(
        header.keys().collect::<Vec<_>>(),
        rust.keys().collect::<Vec<_>>(),
        "the header and capi/src declare different functions"
    );
    for (name, types) in &header {
        assert_eq!(types, &rust[name], "{name}: header (left) and Rust (right) signatures differ");
    }
    let nm = run(Command::new("nm").args(["-D", "--defined-only"]).arg(lib_dir().join(SHARED)));
    let mut exported: Vec<String> = nm
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3 && f[1] == "T").then(|| f[2].to_owned())
        })
        .collect();
    exported.sort();
    assert_eq!(
        exported,
        header.keys().cloned().collect::<Vec<_>>(),
        "libtetrad exports (left) differ from the header's declarations (right)"
    );
    for name in ["rc_record_encode", "rc_record_bound", "rc_record_parse", "rc_record_decode"] {
        assert!(header.contains_key(name), "{name}");
    }
    assert!(header.contains_key("rc_stream_decode_checked") && header.contains_key("rc_err_name"));
    assert!(header.contains_key("rc_path_name"));
}

// ---- fixtures for the C program ------------------------------------------------------------

const W: &str = "model.layers.0.mlp.experts.1.up_proj.weight";

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|f| f.to_le_bytes()).collect()
}

/// Peaked int4 bytes (most nibbles near 8), deterministic.
fn int4_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let nib =
                |v: u64| [8u8, 8, 8, 7, 9, 8, 6, 10, 8, 7, 9, 5, 11, 8, 0, 15][(v & 15) as usize];
            nib(x) | (nib(x >> 8) << 4)
        })
        .collect()
}

/// The checkpoint in four forms: int4-row, int4-rans256-g0, int4-rans64-t1, CFS1.
fn containers(root: &Path, o: usize, i: usize) -> Vec<PathBuf> {
    let plain = root.join("plain");
    let shards = tetrad_engine::synth::write_expert_checkpoint(&plain, 1, 2, o, i, 46).unwrap();
    let mut out = vec![plain.clone()];
    for (codec, dir) in [(Codec::Rans256G0, "rans256"), (Codec::Rans64T1, "rans64")] {
        let outdir = root.join(dir);
        pack_with(
            &PackOptions {
                indir: plain.clone(),
                outdir: outdir.clone(),
                layers: None,
                select: None,
                force: false,
                threads: Some(1),
                quiet: true,
            },
            codec,
        )
        .unwrap();
        out.push(outdir);
    }
    let cfs = root.join("cfs1.safetensors");
    tetrad_engine::cfse::pack(&shards[0], &cfs, &|_| {}).unwrap();
    out.push(cfs);
    out
}

/// A copy of the one-shard container `dir` with one byte of `W`'s stored bytes flipped
/// (`at` bytes past its middle, inside the payload).
fn corrupt_copy(dir: &Path, to: &Path, (o, i): (u64, u64), at: usize) -> PathBuf {
    let c = Container::open(dir).unwrap();
    let stored: Vec<u8> = match c.tensor(W, o, i) {
        Ok(TensorView::Rans256 { record, .. }) => record.blob().to_vec(),
        Ok(TensorView::Rans64 { blob, .. }) => blob.bytes().to_vec(),
        other => panic!("{other:?}"),
    };
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let mut bytes = std::fs::read(&p).unwrap();
        if let Some(pos) = bytes.windows(stored.len()).position(|w| w == stored) {
            bytes[pos + stored.len() / 2 + at] ^= 0x5A;
        }
        std::fs::write(to.join(p.file_name().unwrap()), bytes).unwrap();
    }
    to.to_path_buf()
}

fn class_of<T>(r: Result<T, tetrad_engine::error::Refusal>) -> String {
    r.map_or_else(|e| e.class.name().to_owned(), |_| "OK".to_owned())
}

/// Writes the cases file the C program reads and the files it names.
fn write_cases(root: &Path) -> PathBuf {
    let (o, i, s) = (48usize, 200usize, 3usize);
    let mut cases = String::new();
    let mut files = 0usize;
    let mut file = |bytes: &[u8]| {
        files += 1;
        let p = root.join(format!("f{files}.bin"));
        std::fs::write(&p, bytes).unwrap();
        p.display().to_string()
    };
    let x: Vec<f32> = (0..s * i).map(|k| ((k * 37 % 101) as f32 - 50.0) / 17.0).collect();
    let xf = file(&f32_bytes(&x));
    let conts = containers(root, o, i);
    let isa = tetrad_quant::isa::best();
    for c in &conts {
        let cont = Container::open(c).unwrap();
        let view = cont.tensor(W, o as u64, i as u64).unwrap();
        let mut dec = vec![0u8; view.decoded_len() as usize];
        view.decode_into(&mut dec).unwrap();
        let mut y = vec![0f32; s * o];
        view.matmul_acts(W, isa, Acts::F32 { x: &x, s }, &mut y, 2).unwrap();
        let (mut q, mut sc) = (vec![0i8; s * i], vec![0f32; s]);
        let acts = quantize_activations(&x, s, i, &mut q, &mut sc).unwrap();
        let mut y8 = vec![0f32; s * o];
        view.matmul_acts(W, isa, Acts::Q8(&acts), &mut y8, 1).unwrap();
        let q_bytes: Vec<u8> = q.iter().map(|&v| v as u8).collect();
        writeln!(
            cases,
            "tensor {} {W} {o} {i} {} {s} {xf} {} {} {} {} {}",
            c.display(),
            view.format().name(),
            file(&f32_bytes(&y)),
            file(&f32_bytes(&y8)),
            file(&dec),
            file(&q_bytes),
            file(&f32_bytes(&sc)),
        )
        .unwrap();
        // Refusals at prepare: a missing tensor, a shape the bytes do not give.
        for (name, oo, ii) in [("no.such.tensor", o, i), (W, o + 1, i), (W, o, i + 64)] {
            let class = class_of(cont.tensor(name, oo as u64, ii as u64));
            assert_ne!(class, "OK", "{name} [{oo}, {ii}]");
            writeln!(cases, "prepare_refused {} {name} {oo} {ii} {class}", c.display()).unwrap();
        }
    }
    // Corrupt records and blobs: prepared (framing intact), refused when decoded or multiplied.
    for (k, (c, at)) in [(&conts[1], 7usize), (&conts[2], 40)].into_iter().enumerate() {
        let bad = corrupt_copy(c, &root.join(format!("bad{k}")), (o as u64, i as u64), at);
        let cont = Container::open(&bad).unwrap();
        let view = cont.tensor(W, o as u64, i as u64).unwrap();
        let mut dec = vec![0u8; view.decoded_len() as usize];
        let class = class_of(view.decode_into(&mut dec));
        let mut y = vec![0f32; s * o];
        let mclass = class_of(view.matmul_acts(W, isa, Acts::F32 { x: &x, s }, &mut y, 1));
        assert_ne!(class, "OK");
        assert_ne!(mclass, "OK");
        writeln!(cases, "corrupt {} {W} {o} {i} {class} {mclass}", bad.display()).unwrap();
    }
    // Containers that do not open.
    for (path, what) in [(root.join("missing"), "missing"), (root.join("f1.bin"), "not a shard")] {
        let class = class_of(Container::open(&path));
        assert_ne!(class, "OK", "{what}");
        writeln!(cases, "open_refused {} {class}", path.display()).unwrap();
    }
    // The codecs on buffers: encodes equal the Rust bytes; corruptions refused alike.
    for (k, n) in [1usize, 255, 4096, 70_001].into_iter().enumerate() {
        let src = int4_bytes(n, k as u64);
        let mut blob = vec![0u8; tetrad_fse::max_encoded_len(n)];
        let len = tetrad_fse::encode_into(&src, &mut blob).unwrap();
        blob.truncate(len);
        writeln!(cases, "cfs1 {} {}", file(&src), file(&blob)).unwrap();
        let mut out = vec![0u8; n];
        let short = tetrad_fse::decode_into(&blob[..len - 1], &mut out).unwrap_err();
        writeln!(cases, "cfs1_refused {} {n} {}", file(&blob[..len - 1]), short.class()).unwrap();
        let cap = tetrad_fse::decode_into(&blob, &mut out[..n - 1]).unwrap_err();
        writeln!(cases, "cfs1_refused {} {} {}", file(&blob), n - 1, cap.class()).unwrap();
        for shift in [12u8, 20] {
            let mut b64 = vec![0u8; tetrad_rans::rans64::max_encoded_len(n, shift)];
            let len = tetrad_rans::rans64::encode_into(&src, shift, &mut b64).unwrap();
            b64.truncate(len);
            writeln!(cases, "rans64 {} {shift} {}", file(&src), file(&b64)).unwrap();
        }
        let mut b64 = vec![0u8; tetrad_rans::rans64::max_encoded_len(n, 12)];
        let len = tetrad_rans::rans64::encode_into(&src, 12, &mut b64).unwrap();
        let mut bad = b64[..len].to_vec();
        let at = bad.len() - 1;
        bad[at] ^= 0x21;
        let class = tetrad_rans::rans64::decode_into(&bad, &mut out)
            .map_or_else(|e| e.class().to_owned(), |()| "OK".to_owned());
        writeln!(cases, "rans64_refused {} {n} {class}", file(&bad)).unwrap();
        let class = tetrad_rans::rans64::decode_into(&b64[..len], &mut out[..n - 1])
            .map_or_else(|e| e.class().to_owned(), |()| "OK".to_owned());
        writeln!(cases, "rans64_refused {} {} {class}", file(&b64[..len]), n - 1).unwrap();
    }
    let p = root.join("cases.txt");
    std::fs::write(&p, cases).unwrap();
    p
}

fn cc() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".to_owned())
}

/// Compiles `sources` against the header, once with the static and once with the shared
/// library, and returns the two executables.
fn build_c(out: &Path, stem: &str, sources: &[PathBuf]) -> [PathBuf; 2] {
    let lib = lib_dir();
    let flags = ["-std=c99", "-O1", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-pthread"];
    let include = repo().join("include");
    let stat = out.join(format!("{stem}_static"));
    run(Command::new(cc())
        .args(flags)
        .arg("-I")
        .arg(&include)
        .args(sources)
        .arg(lib.join("libtetrad.a"))
        .args(["-lpthread", "-ldl", "-lm"])
        .args(if cfg!(target_os = "linux") { &["-lrt"][..] } else { &[][..] })
        .arg("-o")
        .arg(&stat));
    let shared = out.join(format!("{stem}_shared"));
    run(Command::new(cc())
        .args(flags)
        .arg("-I")
        .arg(&include)
        .args(sources)
        .arg("-L")
        .arg(lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .args(["-ltetrad", "-o"])
        .arg(&shared));
    [stat, shared]
}

#[test]
fn c_program_static_and_shared() {
    let t = tempfile::tempdir().unwrap();
    let cases = write_cases(t.path());
    let c_dir = Path::new(SRC_DIR).join("tests/c");
    for exe in build_c(t.path(), "abi_test", &[c_dir.join("abi_test.c")]) {
        let out = run(Command::new(&exe).arg(&cases));
        assert!(out.contains("abi_test: all"), "{}: {out}", exe.display());
        // The checks ran: every case line was reported.
        let n = std::fs::read_to_string(&cases).unwrap().lines().count();
        assert!(out.contains(&format!("{n} cases")), "{out}");
    }
    // The examples docs/ENGINE.md shows.
    let plain = t.path().join("plain");
    for (stem, args) in [
        (
            "example_matmul",
            vec![plain.display().to_string(), W.to_owned(), "48".to_owned(), "200".to_owned()],
        ),
        ("example_codecs", vec![]),
        ("example_bridge", vec![]),
    ] {
        let src = c_dir.join(format!("{stem}.c"));
        let doc = std::fs::read_to_string(repo().join("docs/ENGINE.md")).unwrap();
        let code = std::fs::read_to_string(&src).unwrap();
        assert!(
            doc.contains(code.trim()),
            "docs/ENGINE.md does not show {} verbatim",
            src.display()
        );
        for exe in build_c(t.path(), stem, std::slice::from_ref(&src)) {
            let out = run(Command::new(&exe).args(&args));
            assert!(out.contains("ok"), "{}: {out}", exe.display());
        }
    }
}

// ---- vectors for the Python bridge test ----------------------------------------------------

fn hex(b: &[u8]) -> String {
    b.iter().fold(String::new(), |mut s, v| {
        let _ = write!(s, "{v:02x}");
        s
    })
}

fn table_json(t: &Table) -> Value {
    json!({
        "scale_bits": t.scale_bits(),
        "freq": t.freq().to_vec(),
        "start": t.start().to_vec(),
        "slots": t.slots_u16().collect::<Vec<u16>>(),
    })
}

fn encode(t: &Table, nib: &[u8]) -> Vec<u8> {
    let mut buf = vec![0u8; tetrad_rans::max_record_len(nib.len(), 256)];
    let len = encode_record(t, Nibbles::Unpacked(nib), 256, &mut buf).unwrap();
    buf.truncate(len);
    buf
}

fn nibbles(n: usize, seed: u64, t: &Table) -> Vec<u8> {
    let bytes = int4_bytes(n.div_ceil(2), seed);
    let mut v: Vec<u8> = bytes.iter().flat_map(|b| [b & 15, b >> 4]).take(n).collect();
    for x in &mut v {
        if !t.codable(*x) {
            *x = 8;
        }
    }
    v
}

/// What the spec's plain decoder writes for a parsed record, packed (stream by stream with
/// `decode_stream`).
fn plain_packed(t: &Table, blob: &[u8]) -> Vec<u8> {
    let r = Record::parse(blob).unwrap();
    let n = r.n_symbols() as usize;
    let off =
        |i: usize| u32::from_le_bytes(blob[16 + 4 * i..20 + 4 * i].try_into().unwrap()) as usize;
    let payload = r.payload();
    let mut nib = vec![0u8; n];
    for i in 0..256 {
        let count = (i..n).step_by(256).count();
        let mut sym = vec![0u8; count];
        tetrad_rans::decode_stream(t, &payload[off(i)..off(i + 1)], &mut sym).unwrap();
        for (k, s) in sym.into_iter().enumerate() {
            nib[i + 256 * k] = s;
        }
    }
    nib.chunks(2).map(|c| c[0] | (c.get(1).copied().unwrap_or(0) << 4)).collect()
}

fn parse_class(blob: &[u8]) -> String {
    Record::parse_streams_in_order(blob, 256, ParseOrder::Codec)
        .map_or_else(|e| e.class().to_owned(), |_| "OK".to_owned())
}

fn set_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn set_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

fn get_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn vectors() -> Value {
    let mut hist = [0u64; 16];
    for (s, h) in hist.iter_mut().enumerate() {
        *h = [1, 2, 4, 9, 20, 60, 200, 900, 2000, 900, 200, 60, 20, 9, 4, 2][s];
    }
    let t14 = Table::from_histogram(14, &hist).unwrap();
    // A small table with absent symbols (0 and 15) and rare ones.
    let mut f10 = [0u32; 16];
    for (s, f) in f10.iter_mut().enumerate().take(15).skip(1) {
        *f = if s == 8 { 1024 - 13 * 3 - 1 } else { 3 };
    }
    f10[14] = 4;
    let t10 = Table::from_freq(10, &f10).unwrap();
    let mut encodes = Vec::new();
    let mut decodes = Vec::new();
    for (t, tj) in [(&t14, table_json(&t14)), (&t10, table_json(&t10))] {
        for (k, n) in [1usize, 2, 7, 255, 256, 257, 511, 512, 1000, 4097, 20_000, 20_001]
            .into_iter()
            .enumerate()
        {
            let nib = nibbles(n, k as u64 + 1, t);
            let rec = encode(t, &nib);
            let r = Record::parse(&rec).unwrap();
            let mut packed = vec![0u8; r.packed_bytes() as usize];
            tetrad_rans::decode_record_with(Arm::Scalar, t, &r, &mut packed).unwrap();
            assert_eq!(packed, plain_packed(t, &rec));
            encodes.push(json!({
                "table": tj, "nibbles": hex(&nib), "record": hex(&rec),
                "bound": rec.len(), "n_symbols": n, "packed_bytes": r.packed_bytes(),
            }));
            decodes.push(json!({
                "table": tj, "record": hex(&rec), "packed": hex(&packed), "rc": "OK",
            }));
        }
    }
    // Records whose streams break the seal: the bridge decodes them as the plain decoder does.
    let base_nib = nibbles(5001, 99, &t14);
    let base = encode(&t14, &base_nib);
    let head = 1056usize;
    for (what, stream, byte, xor) in [
        ("payload byte", 3usize, 6usize, 0x40u8),
        ("state below L", 7, 0, 0xFF),
        ("last byte", 255, usize::MAX, 0x01),
    ] {
        let mut b = base.clone();
        let (a, e) = (get_u32(&b, 16 + 4 * stream) as usize, get_u32(&b, 20 + 4 * stream) as usize);
        let at = head + if byte == usize::MAX { e - 1 } else { a + byte };
        if what == "state below L" {
            b[at] = 0;
        } else {
            b[at] ^= xor;
        }
        assert_eq!(parse_class(&b), "OK", "{what}");
        let r = Record::parse(&b).unwrap();
        let mut out = vec![0u8; r.packed_bytes() as usize];
        let checked = tetrad_rans::decode_record_with(Arm::Scalar, &t14, &r, &mut out);
        assert!(checked.is_err(), "{what}: the checked decode refuses");
        decodes.push(json!({
            "table": table_json(&t14), "record": hex(&b), "packed": hex(&plain_packed(&t14, &b)),
            "rc": "OK", "what": what,
        }));
    }
    // Parse refusals, one per class (and both truncation and padding sites).
    let payload_len = get_u32(&base, 16 + 4 * 256) as usize;
    let mut parses: Vec<(String, Vec<u8>)> = Vec::new();
    let mut push = |what: &str, b: Vec<u8>| parses.push((what.to_owned(), b));
    push("valid", base.clone());
    push("header truncated", base[..head - 1].to_vec());
    push("empty", {
        let mut b = base.clone();
        set_u64(&mut b, 0, 0);
        b
    });
    push("count mismatch", {
        let mut b = base.clone();
        set_u64(&mut b, 8, 2502);
        b
    });
    push("oversize", {
        let mut b = base.clone();
        let n = (payload_len as u64) * 8 * (1 << 15) + 2;
        set_u64(&mut b, 0, n);
        set_u64(&mut b, 8, n / 2);
        b
    });
    push("offset first", {
        let mut b = base.clone();
        set_u32(&mut b, 16, 1);
        b
    });
    push("offsets monotonic", {
        let mut b = base.clone();
        let v = get_u32(&b, 16 + 4 * 4);
        set_u32(&mut b, 16 + 4 * 5, v - 1);
        b
    });
    push("stream short", {
        let mut b = base.clone();
        let v = get_u32(&b, 16 + 4 * 4);
        set_u32(&mut b, 16 + 4 * 5, v + 2);
        b
    });
    push("payload truncated", base[..head + payload_len - 1].to_vec());
    push("length mismatch", {
        let mut b = base.clone();
        b.extend_from_slice(&[0; 16]);
        b
    });
    push("header pad", {
        let mut b = base.clone();
        b[head - 1] = 1;
        b
    });
    if !payload_len.is_multiple_of(16) {
        push("payload pad", {
            let mut b = base.clone();
            let last = b.len() - 1;
            b[last] = 1;
            b
        });
    }
    let parses: Vec<Value> = parses
        .into_iter()
        .map(|(what, b)| {
            let rc = parse_class(&b);
            let counts = Record::parse(&b).ok().map(|r| (r.n_symbols(), r.packed_bytes()));
            json!({"what": what, "record": hex(&b), "rc": rc,
                   "n_symbols": counts.map(|c| c.0), "packed_bytes": counts.map(|c| c.1)})
        })
        .collect();
    let parse_classes: std::collections::BTreeSet<&str> =
        parses.iter().map(|p| p["rc"].as_str().unwrap()).collect();
    for c in [
        "OK",
        "E_TRUNCATED",
        "E_EMPTY",
        "E_COUNT_MISMATCH",
        "E_OVERSIZE",
        "E_OFFSET_FIRST",
        "E_OFFSETS_MONOTONIC",
        "E_STREAM_SHORT",
        "E_LENGTH_MISMATCH",
        "E_PAD_NONZERO",
    ] {
        assert!(parse_classes.contains(c), "no parse case gives {c}");
    }
    // Broken tables, with the class tetrad's table validation gives.
    let mut tables = Vec::new();
    let tj = table_json(&t14);
    type Edit = Box<dyn Fn(&mut Value)>;
    let variants: Vec<(&str, Edit)> = vec![
        ("scale 0", Box::new(|v: &mut Value| v["scale_bits"] = json!(0))),
        ("scale 16", Box::new(|v: &mut Value| v["scale_bits"] = json!(16))),
        (
            "start",
            Box::new(|v: &mut Value| v["start"][5] = json!(v["start"][5].as_u64().unwrap() + 1)),
        ),
        (
            "freq sum",
            Box::new(|v: &mut Value| {
                v["freq"][15] = json!(v["freq"][15].as_u64().unwrap() + 1);
            }),
        ),
        (
            "slot",
            Box::new(|v: &mut Value| {
                let s = v["slots"][100].as_u64().unwrap();
                v["slots"][100] = json!((s + 1) % 16);
            }),
        ),
        ("slot value 16", Box::new(|v: &mut Value| v["slots"][0] = json!(16))),
    ];
    for (what, f) in variants {
        let mut v = tj.clone();
        f(&mut v);
        let arr = |k: &str| -> [u32; 16] {
            let a: Vec<u32> =
                v[k].as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u32).collect();
            a.try_into().unwrap()
        };
        let sb = v["scale_bits"].as_u64().unwrap() as u32;
        let slots: Vec<u16> =
            v["slots"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u16).collect();
        let class = if (1..=15).contains(&sb) {
            Table::from_parts(sb, &arr("freq"), &arr("start"), &slots)
                .map_or_else(|e| e.class().to_owned(), |_| "OK".to_owned())
        } else {
            "E_TABLE_SCALE".to_owned()
        };
        assert_ne!(class, "OK", "{what}");
        tables.push(json!({"what": what, "table": v, "rc": class}));
    }
    // Streams for the checked decode.
    let mut streams = Vec::new();
    let payload = &base[head..head + payload_len];
    for i in [0usize, 1, 136, 255] {
        let (a, e) = (get_u32(&base, 16 + 4 * i) as usize, get_u32(&base, 20 + 4 * i) as usize);
        let s = &payload[a..e];
        let n = (i..5001).step_by(256).count();
        let mut cases: Vec<(&str, Vec<u8>, usize)> = vec![
            ("valid", s.to_vec(), n),
            ("underrun", s[..3].to_vec(), n),
            ("extra byte", [s, &[0x77]].concat(), n),
            ("one symbol more", s.to_vec(), n + 1),
            ("one symbol less", s.to_vec(), n - 1),
        ];
        let mut low = s.to_vec();
        low[0] = 0;
        low[1] = 0;
        cases.push(("state below L", low, n));
        let mut flip = s.to_vec();
        flip[5] ^= 0x10;
        cases.push(("flipped byte", flip, n));
        for (what, bytes, n) in cases {
            let mut out = vec![0u8; n];
            let rc = tetrad_rans::decode_stream_checked(&t14, &bytes, &mut out)
                .map_or_else(|e| e.class().to_owned(), |()| "OK".to_owned());
            streams.push(json!({"what": what, "stream": hex(&bytes), "n": n, "rc": rc,
                                "nibbles": (rc == "OK").then(|| hex(&out))}));
        }
    }
    // Encode refusals.
    let mut refusals = Vec::new();
    let nib = nibbles(3000, 5, &t10);
    let mut buf = vec![0u8; 100];
    let scratch = encode_record(&t10, Nibbles::Unpacked(&nib), 256, &mut buf).unwrap_err();
    refusals.push(json!({"what": "small output", "table": table_json(&t10), "nibbles": hex(&nib), "cap": 100, "rc": scratch.class()}));
    let mut bad = nib.clone();
    bad[1234] = 0; // absent from t10
    let mut buf = vec![0u8; tetrad_rans::max_record_len(3000, 256)];
    let unc = encode_record(&t10, Nibbles::Unpacked(&bad), 256, &mut buf).unwrap_err();
    refusals.push(json!({"what": "freq 0 symbol", "table": table_json(&t10), "nibbles": hex(&bad), "cap": buf.len(), "rc": unc.class()}));
    let mut bad = nib.clone();
    bad[7] = 16;
    let unc = encode_record(&t10, Nibbles::Unpacked(&bad), 256, &mut buf).unwrap_err();
    refusals.push(json!({"what": "value 16", "table": table_json(&t10), "nibbles": hex(&bad), "cap": buf.len(), "rc": unc.class()}));
    let empty = encode_record(&t10, Nibbles::Unpacked(&[]), 256, &mut buf).unwrap_err();
    refusals.push(json!({"what": "empty", "table": table_json(&t10), "nibbles": "", "cap": buf.len(), "rc": empty.class()}));

    let paths: Vec<Value> = [
        ("scalar", vec![Arm::Scalar]),
        ("scalar_bf", vec![Arm::ScalarBranchFree]),
        ("neon", vec![Arm::Neon]),
        ("avx512", vec![Arm::Avx512Vbmi, Arm::Avx512]),
    ]
    .into_iter()
    .enumerate()
    .map(|(k, (name, arms))| {
        json!({"path": k, "name": name, "available": arms.iter().any(|a| a.is_available())})
    })
    .collect();
    json!({
        "encodes": encodes, "decodes": decodes, "parses": parses, "tables": tables,
        "streams": streams, "encode_refusals": refusals, "paths": paths,
    })
}

#[test]
fn python_bridge() {
    let t = tempfile::tempdir().unwrap();
    let v = t.path().join("vectors.json");
    std::fs::write(&v, serde_json::to_vec(&vectors()).unwrap()).unwrap();
    let script = Path::new(SRC_DIR).join("tests/python/test_bridge.py");
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let out = run(Command::new(python)
        .arg(&script)
        .arg(lib_dir().join(SHARED))
        .arg(&v)
        .env_remove("RANS_PATH")
        .env_remove("RANS_AVX512")
        .env_remove("RANS_NEON"));
    assert!(out.contains("OK"), "{out}");
    assert!(!out.contains("skipped"), "{out}");
}
