//! `tetrad stats`: every number matches an independent computation on small fixtures
//! (safetensors containers, float checkpoints and a hand-built GGUF file), and the GGUF reader
//! refuses hostile files without panicking.
#![allow(clippy::cast_possible_truncation)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;
use tetrad::shard::{HeaderStyle, OutTensor, shard_bytes};
use tetrad::synth::{Dist, int4_rows};

fn stats(args: &[&str], paths: &[&Path]) -> Value {
    let o = Command::new(env!("CARGO_BIN_EXE_tetrad"))
        .arg("stats")
        .args(args)
        .args(paths)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Independent order-0 / order-1 entropies of nibble rows.
fn entropies(rows: &[&[u8]]) -> (f64, f64, u64) {
    let mut h = [0f64; 16];
    let mut p = [[0f64; 16]; 16];
    let mut n = 0u64;
    for row in rows {
        let nib: Vec<usize> =
            row.iter().flat_map(|&b| [usize::from(b & 15), usize::from(b >> 4)]).collect();
        for (k, &s) in nib.iter().enumerate() {
            h[s] += 1.0;
            n += 1;
            if k > 0 {
                p[nib[k - 1]][s] += 1.0;
            }
        }
    }
    let h0 =
        -h.iter().filter(|&&c| c > 0.0).map(|&c| c / n as f64 * (c / n as f64).log2()).sum::<f64>();
    let pairs: f64 = p.iter().flatten().sum();
    let mut h1 = 0.0;
    for ctx in &p {
        let t: f64 = ctx.iter().sum();
        for &c in ctx.iter().filter(|&&c| c > 0.0) {
            h1 -= c / pairs * (c / t).log2();
        }
    }
    (h0, h1, n)
}

fn close(a: &Value, b: f64) {
    let a = a.as_f64().unwrap();
    assert!((a - b).abs() < 1e-9, "{a} vs {b}");
}

#[test]
fn int4_container_numbers_match_an_independent_computation() {
    let dir = tempfile::tempdir().unwrap();
    let (o1, i1, o2, i2) = (64usize, 256usize, 32usize, 512usize);
    let (a, _) = int4_rows(o1, i1, Dist::Laplace, 1);
    let (b, _) = int4_rows(o2, i2, Dist::Gaussian, 2);
    let sa = vec![0u8; 4 * o1];
    let sb = vec![0u8; 4 * o2];
    let stamps = r#"{"x.a": "int4-row", "x.b": "int4-row"}"#;
    let meta: BTreeMap<String, String> = [("colibri.fmt".to_owned(), stamps.to_owned())].into();
    let t = [
        OutTensor { name: "x.a", dtype: "U8", shape: &[o1 as u64, (i1 / 2) as u64], data: &a },
        OutTensor { name: "x.a.qs", dtype: "F32", shape: &[o1 as u64], data: &sa },
        OutTensor { name: "x.b", dtype: "U8", shape: &[o2 as u64, (i2 / 2) as u64], data: &b },
        OutTensor { name: "x.b.qs", dtype: "F32", shape: &[o2 as u64], data: &sb },
    ];
    let path = dir.path().join("m.safetensors");
    std::fs::write(&path, shard_bytes(&meta, &t, HeaderStyle::EscapedUnpadded).unwrap()).unwrap();
    let svg = dir.path().join("chart.svg");
    let v = stats(&["--json", "--plot", svg.to_str().unwrap()], &[&path]);
    let ts = v["tensors"].as_array().unwrap();
    assert_eq!(ts.len(), 2);
    let chart = std::fs::read_to_string(&svg).unwrap();
    assert!(chart.starts_with("<svg") && chart.trim_end().ends_with("</svg>"));
    assert_eq!(chart.matches("<title>value ").count(), 16, "a bar per nibble value");
    assert_eq!(chart.matches("<title>x.").count(), 2, "a bar per tensor");
    // The PNG chart is checked pixel by pixel in tests/stats_plot.rs.
    // Pooled table, as `tetrad pack` builds it.
    let mut hist = [0u64; 16];
    for d in [&a, &b] {
        for (x, y) in hist.iter_mut().zip(tetrad::synth::nibble_histogram(d)) {
            *x += y;
        }
    }
    let table = tetrad_rans::Table::from_histogram(tetrad_rans::FORMAT_SCALE_BITS, &hist).unwrap();
    let mut rans_total = 0;
    let mut rans64_total = 0u64;
    for (t, (data, rowb)) in ts.iter().zip([(&a, i1 / 2), (&b, i2 / 2)]) {
        let rows: Vec<&[u8]> = data.chunks(rowb).collect();
        let (h0, h1, n) = entropies(&rows);
        assert_eq!(t["format"], "int4-row");
        assert_eq!(t["format_source"], "stamp");
        assert_eq!(t["nibbles"], n);
        close(&t["entropy_bits"], h0);
        close(&t["entropy_bits_order1"], h1);
        close(&t["ratio_bound"], 4.0 / h0);
        let mut blob =
            vec![0u8; tetrad_rans::max_record_len(2 * data.len(), tetrad_rans::FORMAT_STREAMS)];
        let r = tetrad_rans::encode_record_packed(&table, data, &mut blob).unwrap() as u64;
        rans_total += r;
        assert_eq!(t["rans256_bytes"], r);
        let mut c = vec![0u8; tetrad_fse::max_encoded_len(data.len())];
        assert_eq!(t["cfs1_bytes"], tetrad_fse::encode_into(data, &mut c).unwrap() as u64);
        let shift = tetrad_rans::rans64::DEFAULT_CHUNK_SHIFT;
        let mut r64 = vec![0u8; tetrad_rans::rans64::max_encoded_len(data.len(), shift)];
        let r64 = tetrad_rans::rans64::encode_into(data, shift, &mut r64).unwrap() as u64;
        rans64_total += r64;
        assert_eq!(t["rans64_bytes"], r64);
        assert_eq!(t["zstd19_bytes"], zstd::bulk::compress(data, 19).unwrap().len() as u64);
    }
    assert_eq!(v["total"]["rans64_bytes"], rans64_total);
    let total = &v["total"];
    assert_eq!(total["format"], "int4-row");
    let rows: Vec<&[u8]> = a.chunks(i1 / 2).chain(b.chunks(i2 / 2)).collect();
    let (h0, h1, n) = entropies(&rows);
    assert_eq!(total["nibbles"], n);
    close(&total["entropy_bits_pooled"], h0);
    close(&total["entropy_bits"], h0);
    close(&total["entropy_bits_order1"], h1);
    let per: f64 = ts
        .iter()
        .map(|t| t["entropy_bits"].as_f64().unwrap() * t["nibbles"].as_f64().unwrap())
        .sum::<f64>()
        / n as f64;
    close(&total["entropy_bits_per_tensor"], per);
    let parts = tetrad::table_json::table_parts(&table);
    let table_json = tetrad::table_json::to_json(&parts).len() as u64;
    assert_eq!(total["rans256_bytes"], rans_total + table_json);
    assert!(total["verdict"].as_str().unwrap().contains("save up to"));
}

#[test]
fn float_checkpoint_is_measured_as_after_quantize() {
    let dir = tempfile::tempdir().unwrap();
    let w = tetrad::synth::weights(16, 96, Dist::Laplace, 3);
    let wb: Vec<u8> = w.iter().flat_map(|v| v.to_le_bytes()).collect();
    let t = [OutTensor { name: "w", dtype: "F32", shape: &[16, 96], data: &wb }];
    let path = dir.path().join("f.safetensors");
    std::fs::write(&path, shard_bytes(&BTreeMap::new(), &t, HeaderStyle::EscapedUnpadded).unwrap())
        .unwrap();
    let v = stats(&["--json", "--no-zstd", "--quantize", "int4-grouped:32"], &[&path]);
    let mut codes = vec![0u8; 16 * 48];
    let mut scales = vec![0f32; 16 * 3];
    tetrad_quant::quantize::quantize_int4_grouped(&w, 16, 96, 32, &mut codes, &mut scales).unwrap();
    let rows: Vec<&[u8]> = codes.chunks(48).collect();
    let (h0, h1, _) = entropies(&rows);
    let t = &v["tensors"][0];
    assert_eq!(t["format"], "int4-grouped:32");
    assert_eq!(t["format_source"], "quantize");
    close(&t["entropy_bits"], h0);
    close(&t["entropy_bits_order1"], h1);
    assert!(t["zstd19_bytes"].is_null());
}

/// A constant tensor: entropy 0 (not -0), a verdict without an infinite ratio; a stream too
/// short to estimate order-1 statistics says so.
#[test]
fn constant_and_tiny_streams_are_reported_plainly() {
    let dir = tempfile::tempdir().unwrap();
    let meta: BTreeMap<String, String> =
        [("colibri.fmt".to_owned(), r#"{"w": "int4-row"}"#.to_owned())].into();
    let scales: Vec<u8> = [0.1f32, 0.1].iter().flat_map(|v| v.to_le_bytes()).collect();
    let t = [
        OutTensor { name: "w", dtype: "U8", shape: &[2, 4], data: &[0x88; 8] },
        OutTensor { name: "w.qs", dtype: "F32", shape: &[2], data: &scales },
    ];
    let path = dir.path().join("c.safetensors");
    std::fs::write(&path, shard_bytes(&meta, &t, HeaderStyle::EscapedUnpadded).unwrap()).unwrap();
    let v = stats(&["--json", "--no-zstd"], &[&path]);
    let total = &v["total"];
    assert_eq!(total["entropy_bits"].as_f64().map(f64::is_sign_positive), Some(true), "{v}");
    let verdict = total["verdict"].as_str().unwrap();
    assert!(verdict.starts_with("every nibble is the same value: entropy 0"), "{verdict}");
    // Random-looking nibbles, 64 of them: the order-1 gain is flagged as unreliable.
    let codes: Vec<u8> = (0u32..32).map(|k| (k.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let t = [
        OutTensor { name: "w", dtype: "U8", shape: &[2, 16], data: &codes },
        OutTensor { name: "w.qs", dtype: "F32", shape: &[2], data: &scales },
    ];
    std::fs::write(&path, shard_bytes(&meta, &t, HeaderStyle::EscapedUnpadded).unwrap()).unwrap();
    let v = stats(&["--json", "--no-zstd"], &[&path]);
    let verdict = v["total"]["verdict"].as_str().unwrap();
    assert!(verdict.contains("(unreliable: 62 symbol pairs for 256 context cells"), "{verdict}");
}

/// Stamped codes of formats stats does not measure (int3-g64, int2-row) are skipped as such,
/// not misread as another format (int3-g64 was once reported as a refused int8-row).
#[test]
fn stamped_unmeasured_formats_are_named_not_misread() {
    let dir = tempfile::tempdir().unwrap();
    let w = tetrad::synth::weights(16, 200, Dist::Laplace, 4);
    let wb: Vec<u8> = w.iter().flat_map(|v| v.to_le_bytes()).collect();
    let t = [OutTensor { name: "w", dtype: "F32", shape: &[16, 200], data: &wb }];
    let path = dir.path().join("f.safetensors");
    std::fs::write(&path, shard_bytes(&BTreeMap::new(), &t, HeaderStyle::EscapedUnpadded).unwrap())
        .unwrap();
    for format in ["int3-g64", "int2-row"] {
        let q = dir.path().join(format);
        let o = Command::new(env!("CARGO_BIN_EXE_tetrad"))
            .args(["quantize", "-q", "--format", format])
            .arg(&path)
            .arg(&q)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
        let v = stats(&["--json", "--no-zstd"], &[&q]);
        let skipped = &v["skipped"][0];
        assert_eq!(skipped["name"], "w", "{v}");
        assert_eq!(skipped["reason"], format!("format {format} is not measured"), "{v}");
    }
}

/// A GGUF v3 file: three metadata values (string, u32 alignment, array of strings), a Q4_0
/// tensor [4 rows × 64] and a 1-D F32 tensor.
fn gguf_fixture() -> (Vec<u8>, Vec<u8>) {
    fn s(out: &mut Vec<u8>, v: &str) {
        out.extend((v.len() as u64).to_le_bytes());
        out.extend(v.as_bytes());
    }
    let mut f = Vec::new();
    f.extend(b"GGUF");
    f.extend(3u32.to_le_bytes());
    f.extend(2u64.to_le_bytes()); // tensors
    f.extend(3u64.to_le_bytes()); // kv
    s(&mut f, "general.name");
    f.extend(8u32.to_le_bytes());
    s(&mut f, "fixture");
    s(&mut f, "general.alignment");
    f.extend(4u32.to_le_bytes());
    f.extend(32u32.to_le_bytes());
    s(&mut f, "tokenizer.tokens");
    f.extend(9u32.to_le_bytes());
    f.extend(8u32.to_le_bytes());
    f.extend(2u64.to_le_bytes());
    s(&mut f, "a");
    s(&mut f, "bc");
    s(&mut f, "blk.0.w");
    f.extend(2u32.to_le_bytes());
    f.extend(64u64.to_le_bytes());
    f.extend(4u64.to_le_bytes());
    f.extend(2u32.to_le_bytes()); // Q4_0
    f.extend(0u64.to_le_bytes());
    s(&mut f, "norm");
    f.extend(1u32.to_le_bytes());
    f.extend(64u64.to_le_bytes());
    f.extend(0u32.to_le_bytes()); // F32
    f.extend(160u64.to_le_bytes());
    while f.len() % 32 != 0 {
        f.push(0);
    }
    let (codes, _) = int4_rows(8, 32, Dist::Laplace, 9); // 8 blocks of 16 code bytes
    let mut nibbles = Vec::new();
    for blk in codes.chunks(16) {
        f.extend(0x3C00u16.to_le_bytes()); // d = 1.0
        f.extend(blk);
        nibbles.extend(blk);
    }
    f.extend([0u8; 16]); // pad 144 → 160
    f.extend([0u8; 256]);
    (f, nibbles)
}

#[test]
fn gguf_q4_0_nibbles_are_measured() {
    let dir = tempfile::tempdir().unwrap();
    let (file, nibbles) = gguf_fixture();
    let path = dir.path().join("t.gguf");
    std::fs::write(&path, &file).unwrap();
    let g = tetrad::gguf::parse(&file).unwrap();
    assert_eq!(g.tensors.len(), 2);
    assert_eq!(g.tensors[0].shape(), vec![4, 64]);
    let v = stats(&["--json"], &[&path]);
    let t = &v["tensors"][0];
    assert_eq!(t["format"], "gguf:Q4_0");
    assert_eq!(t["nibbles"], 256);
    let rows: Vec<&[u8]> = nibbles.chunks(32).collect();
    let (h0, h1, _) = entropies(&rows);
    close(&t["entropy_bits"], h0);
    close(&t["entropy_bits_order1"], h1);
    assert_eq!(v["skipped"][0]["name"], "norm");
}

#[test]
fn hostile_gguf_is_refused_without_panic() {
    let (file, _) = gguf_fixture();
    // Every truncation is an error (never a panic).
    for n in 0..file.len() - 256 - 16 {
        assert!(tetrad::gguf::parse(&file[..n]).is_err(), "prefix {n} accepted");
    }
    // Huge counts and lengths are refused before allocating.
    for (at, v) in [(8usize, u64::MAX), (16, u64::MAX), (24, u64::MAX / 2), (16, 1 << 40)] {
        let mut f = file.clone();
        f[at..at + 8].copy_from_slice(&v.to_le_bytes());
        assert!(tetrad::gguf::parse(&f).is_err(), "count at {at} = {v} accepted");
    }
    // A count the file cannot hold is named as such (no saturated "needed" figure).
    for (at, what) in [(8usize, "tensor infos"), (16, "metadata entries")] {
        let mut f = file.clone();
        f[at..at + 8].copy_from_slice(&(1u64 << 62).to_le_bytes());
        let e = tetrad::gguf::parse(&f).unwrap_err();
        assert_eq!(e.class().name(), "E_GGUF_TRUNCATED");
        assert!(
            e.to_string().contains(&format!("4611686018427387904 {what} need at least")),
            "{e}"
        );
    }
    // Every single-byte corruption parses or refuses, and never panics.
    for k in 0..file.len().min(400) {
        let mut f = file.clone();
        f[k] ^= 0xFF;
        let _ = tetrad::gguf::parse(&f);
    }
    let mut f = file.clone();
    f[4] = 1;
    assert_eq!(tetrad::gguf::parse(&f).unwrap_err().class().name(), "E_GGUF_VERSION");
}

/// A GGUF v3 file without metadata: each tensor is (name, dims `[ne0, ne1]`, GGML type, bytes),
/// laid out at 32-byte aligned offsets.
fn gguf_file(tensors: &[(&str, [u64; 2], u32, &[u8])]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend(b"GGUF");
    f.extend(3u32.to_le_bytes());
    f.extend((tensors.len() as u64).to_le_bytes());
    f.extend(0u64.to_le_bytes());
    let mut offset = 0u64;
    for (name, dims, ty, data) in tensors {
        f.extend((name.len() as u64).to_le_bytes());
        f.extend(name.as_bytes());
        f.extend(2u32.to_le_bytes());
        dims.iter().for_each(|d| f.extend(d.to_le_bytes()));
        f.extend(ty.to_le_bytes());
        f.extend(offset.to_le_bytes());
        offset = (offset + data.len() as u64).div_ceil(32) * 32;
    }
    for (_, _, _, data) in tensors {
        while f.len() % 32 != 0 {
            f.push(0);
        }
        f.extend(*data);
    }
    f
}

/// A GGUF v3 file of metadata only: each entry is (key, value type, value bytes as stored).
fn gguf_metadata_only(kvs: &[(&str, u32, &[u8])]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend(b"GGUF");
    f.extend(3u32.to_le_bytes());
    f.extend(0u64.to_le_bytes());
    f.extend((kvs.len() as u64).to_le_bytes());
    for (key, ty, value) in kvs {
        f.extend((key.len() as u64).to_le_bytes());
        f.extend(key.as_bytes());
        f.extend(ty.to_le_bytes());
        f.extend(*value);
    }
    f
}

/// Builds `blocks` blocks of `size` bytes: `head` bytes of 0xEE (scales and mins, which must
/// not be measured) then the codes, taken in order from `codes`. Returns (blocks, codes used).
fn blocks(
    n: usize,
    size: usize,
    head: usize,
    codes: &mut impl Iterator<Item = u8>,
) -> (Vec<u8>, Vec<u8>) {
    let mut out = Vec::new();
    let mut used = Vec::new();
    for _ in 0..n {
        out.extend(std::iter::repeat_n(0xEE, head));
        let c: Vec<u8> = codes.by_ref().take(size - head).collect();
        used.extend(&c);
        out.extend(c);
    }
    (out, used)
}

/// A nibble tensor's report against its code bytes (`row_bytes` a row): counts and entropies.
fn check_nibbles(t: &Value, codes: &[u8], row_bytes: usize) {
    assert_eq!(t["symbols"], "nibble");
    assert_eq!(t["nibbles"], 2 * codes.len() as u64);
    let rows: Vec<&[u8]> = codes.chunks(row_bytes).collect();
    let (h0, h1, _) = entropies(&rows);
    close(&t["entropy_bits"], h0);
    close(&t["entropy_bits_order1"], h1);
    close(&t["order1_gain_bits"], h0 - h1);
}

#[test]
fn gguf_q4_1_q4_k_q8_0_are_measured_and_uniform_codes_are_called_incompressible() {
    let dir = tempfile::tempdir().unwrap();
    // Nibble codes that use all 16 values almost evenly (as group-quantized codes do).
    let mut nib = (0u32..).map(|k| (((k * 7) % 16) | (((k * 11 + k / 3) % 16) << 4)) as u8);
    // Q4_1: [2 rows × 64] = 4 blocks of 20 bytes (d, m, 16 code bytes).
    let (q41, c41) = blocks(4, 20, 4, &mut nib);
    // Q4_K: [2 rows × 256] = 2 blocks of 144 bytes (d, dmin, 12 scale bytes, 128 code bytes).
    let (q4k, c4k) = blocks(2, 144, 16, &mut nib);
    // Q8_0: [3 rows × 32] = 3 blocks of 34 bytes (d, 32 i8 codes), hashed into 0..32.
    let mut bytes = (0u32..).map(|k| (k.wrapping_mul(2654435761) >> 27) as u8 & 0x1F);
    let (q80, c80) = blocks(3, 34, 2, &mut bytes);
    let file = gguf_file(&[
        ("a.q4_1", [64, 2], 3, &q41),
        ("b.q4_k", [256, 2], 12, &q4k),
        ("c.q8_0", [32, 3], 8, &q80),
    ]);
    let path = dir.path().join("m.gguf");
    std::fs::write(&path, &file).unwrap();
    let svg = dir.path().join("m.svg");
    let v = stats(&["--json", "--plot", svg.to_str().unwrap()], &[&path]);
    let ts = v["tensors"].as_array().unwrap();
    assert_eq!(ts.len(), 3, "{v}");
    for (t, (format, shape, codes, row_bytes)) in ts.iter().zip([
        ("gguf:Q4_1", [2u64, 64], &c41, 32usize),
        ("gguf:Q4_K", [2, 256], &c4k, 128),
        ("gguf:Q8_0", [3, 32], &c80, 32),
    ]) {
        assert_eq!(t["format"], format);
        assert_eq!(t["format_source"], "gguf");
        assert_eq!(t["shape"], serde_json::json!(shape));
        assert_eq!(t["bytes"], codes.len() as u64, "{format}: only the code bytes");
        if format == "gguf:Q8_0" {
            assert_eq!(t["symbols"], "byte");
            assert!(t["nibbles"].is_null());
            assert_eq!(t["weights"], 96);
            let mut h = [0u64; 256];
            codes.iter().for_each(|&b| h[usize::from(b)] += 1);
            let n = codes.len() as f64;
            let h0: f64 = -h
                .iter()
                .filter(|&&c| c > 0)
                .map(|&c| c as f64 / n * (c as f64 / n).log2())
                .sum::<f64>();
            close(&t["entropy_bits"], h0);
            close(&t["ratio_bound"], 8.0 / h0);
            assert!(t["rans256_bytes"].is_null(), "rans256 codes nibbles only");
        } else {
            check_nibbles(t, codes, row_bytes);
            assert!(t["rans256_bytes"].as_u64().unwrap() > 0);
        }
        let mut c = vec![0u8; tetrad_fse::max_encoded_len(codes.len())];
        assert_eq!(t["cfs1_bytes"], tetrad_fse::encode_into(codes, &mut c).unwrap() as u64);
    }
    let total = &v["total"];
    assert_eq!(total["tensors"], 2);
    assert_eq!((&total["name"], &total["format"]), (&"total".into(), &"mixed".into()));
    assert!(total["file"].is_null() && total["shape"].is_null());
    assert_eq!(v["total_bytes"]["format"], "gguf:Q8_0");
    assert!(total["entropy_bits"].as_f64().unwrap() > 3.9, "{total}");
    let verdict = total["verdict"].as_str().unwrap();
    assert!(verdict.starts_with("these codes barely compress"), "{verdict}");
    assert_eq!(v["total_bytes"]["symbols"], "byte");
    // The plain-text report and the chart say so too.
    let o = Command::new(env!("CARGO_BIN_EXE_tetrad"))
        .args(["stats", "--no-zstd"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("these codes barely compress"), "{text}");
    let chart = std::fs::read_to_string(&svg).unwrap();
    assert!(chart.contains(">these codes barely compress: an order-0 coder saves at most"));
}

/// The tail of the reason a GGUF tensor of another type is skipped.
const MEASURED: &str = "(measured: Q4_0, Q4_1, Q4_K, IQ4_NL, IQ4_XS, MXFP4, NVFP4 nibbles; Q8_0 \
                        bytes; Q2_K, Q3_K, Q5_0, Q5_1, Q5_K, Q6_K codes)";

/// The other nibble types of llama.cpp files: IQ4_NL and IQ4_XS (indices into a non-linear
/// table) and MXFP4 (e2m1 codes under a UE8M0 exponent, gpt-oss) are measured from their
/// `qs` bytes alone; types whose codes stats does not read (IQ2_XXS, TQ2_0, Q1_0) are skipped
/// with that reason, their sizes still checked against the file.
#[test]
fn gguf_iq4_and_mxfp4_nibbles_are_measured_other_types_named() {
    let dir = tempfile::tempdir().unwrap();
    let mut nib = (0u32..).map(|k| ((k * 5 % 16) | ((k * 3 + k / 7) % 11) << 4) as u8);
    // IQ4_NL: [2 rows × 64] = 4 blocks of 18 bytes (d, 16 code bytes).
    let (nl, cnl) = blocks(4, 18, 2, &mut nib);
    // IQ4_XS: [2 rows × 256] = 2 blocks of 136 bytes (d, scales_h, scales_l[4], 128 code bytes).
    let (xs, cxs) = blocks(2, 136, 8, &mut nib);
    // MXFP4: [3 rows × 64] = 6 blocks of 17 bytes (e, 16 code bytes).
    let (mx, cmx) = blocks(6, 17, 1, &mut nib);
    let (q10, iq2, tq2) = (vec![0x11u8; 18], vec![0x22u8; 66], vec![0x33u8; 66]);
    let file = gguf_file(&[
        ("a.iq4_nl", [64, 2], 20, &nl),
        ("b.iq4_xs", [256, 2], 23, &xs),
        ("c.mxfp4", [64, 3], 39, &mx),
        ("d.q1_0", [128, 1], 41, &q10),
        ("e.iq2_xxs", [256, 1], 16, &iq2),
        ("f.tq2_0", [256, 1], 35, &tq2),
    ]);
    let path = dir.path().join("m.gguf");
    std::fs::write(&path, &file).unwrap();
    let v = stats(&["--json", "--no-zstd"], &[&path]);
    let ts = v["tensors"].as_array().unwrap();
    assert_eq!(ts.len(), 3, "{v}");
    for (t, (format, shape, codes, row_bytes)) in ts.iter().zip([
        ("gguf:IQ4_NL", [2u64, 64], &cnl, 32usize),
        ("gguf:IQ4_XS", [2, 256], &cxs, 128),
        ("gguf:MXFP4", [3, 64], &cmx, 32),
    ]) {
        assert_eq!(t["format"], format);
        assert_eq!(t["shape"], serde_json::json!(shape));
        assert_eq!(t["bytes"], codes.len() as u64, "{format}: only the code bytes");
        check_nibbles(t, codes, row_bytes);
    }
    let skipped = v["skipped"].as_array().unwrap();
    let names: Vec<&str> = skipped.iter().map(|k| k["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["d.q1_0", "e.iq2_xxs", "f.tq2_0"], "{v}");
    for (k, ty) in skipped.iter().zip(["Q1_0", "IQ2_XXS", "TQ2_0"]) {
        let reason = k["reason"].as_str().unwrap();
        let want = format!("GGML {ty}: a block format whose codes stats does not read {MEASURED}");
        assert_eq!(reason, want);
    }
    // Their sizes are known, so a file that ends inside one is refused, not skipped.
    let short = &file[..file.len() - 1];
    let e = tetrad::gguf::parse(short).unwrap_err();
    assert_eq!(e.class().name(), "E_GGUF_RANGE", "{e}");
    // A row that is not a whole number of blocks is refused by name.
    let e = tetrad::gguf::parse(&gguf_file(&[("x", [128, 2], 23, &xs)])).unwrap_err();
    assert_eq!(e.class().name(), "E_GGUF_BLOCK", "{e}");
}

/// GGUF blocks whose codes an independent reader found: `tests/data/gguf_codes.json`, written
/// by `gguf_codes.py` from gguf-py's (llama.cpp's Python package's) dequantization, with the
/// scale fields set so each float is its code. Split types (2, 3, 5, 6 bits) must give the
/// same codes in weight order; nibble types the same multiset of nibbles (stats reads their
/// `qs` bytes in storage order; ±0 of the fp4 types folded). Then `tetrad stats` measures each
/// as a tensor: counts, stored bytes and the codecs' input are those codes.
#[test]
fn gguf_codes_match_an_independent_reader() {
    let fixture: Value = serde_json::from_str(include_str!("data/gguf_codes.json")).unwrap();
    let hex = |s: &str| -> Vec<u8> {
        (0..s.len()).step_by(2).map(|k| u8::from_str_radix(&s[k..k + 2], 16).unwrap()).collect()
    };
    let mut tensors = Vec::new();
    let mut wanted = Vec::new();
    for t in fixture["tensors"].as_array().unwrap() {
        let (ty, name) = (t["type"].as_u64().unwrap() as u32, t["name"].as_str().unwrap());
        let data = hex(t["data"].as_str().unwrap());
        let ne0 = t["ne0"].as_u64().unwrap();
        let (_, block, size) = tetrad::gguf::type_info(ty).unwrap();
        assert_eq!(data.len() as u64 % size, 0, "{name}");
        let rows = data.len() as u64 / size;
        assert_eq!(ne0, block, "{name}");
        let codes: Vec<u8>;
        if let Some(want) = t["codes"].as_array() {
            let want: Vec<u8> = want.iter().map(|c| c.as_u64().unwrap() as u8).collect();
            let split = tetrad::gguf::split_codes(ty, &data).expect(name);
            assert_eq!(split.codes, want, "{name}: codes in weight order");
            assert_eq!(split.stored.len() * 8, want.len() * split.bits as usize, "{name}");
            assert!(tetrad::gguf::code_bytes(ty, &data).is_none(), "{name}");
            codes = want;
        } else {
            let want: Vec<u8> = t["nibbles_sorted"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_u64().unwrap() as u8)
                .collect();
            let qs = tetrad::gguf::code_bytes(ty, &data).expect(name);
            assert!(tetrad::gguf::is_nibble_type(ty), "{name}");
            let fp4 = matches!(name, "MXFP4" | "NVFP4");
            let fold = |n: u8| if fp4 && n == 8 { 0 } else { n };
            let mut got: Vec<u8> = qs.iter().flat_map(|&b| [fold(b & 15), fold(b >> 4)]).collect();
            got.sort_unstable();
            assert_eq!(got, want, "{name}: the qs nibbles");
            codes = qs.iter().flat_map(|&b| [b & 15, b >> 4]).collect();
        }
        tensors.push((format!("t.{name}"), [ne0, rows], ty, data));
        wanted.push((name.to_owned(), codes));
    }
    // The whole file through `tetrad stats`.
    let refs: Vec<(&str, [u64; 2], u32, &[u8])> =
        tensors.iter().map(|(n, d, t, b)| (n.as_str(), *d, *t, b.as_slice())).collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.gguf");
    std::fs::write(&path, gguf_file(&refs)).unwrap();
    let v = stats(&["--json"], &[&path]);
    assert!(v["skipped"].as_array().unwrap().is_empty(), "{v}");
    let ts = v["tensors"].as_array().unwrap();
    assert_eq!(ts.len(), wanted.len());
    for (t, (name, codes)) in ts.iter().zip(&wanted) {
        assert_eq!(t["format"], format!("gguf:{name}"));
        let bits: u32 = match name.as_str() {
            "Q2_K" => 2,
            "Q3_K" => 3,
            "Q5_0" | "Q5_1" | "Q5_K" => 5,
            "Q6_K" => 6,
            _ => 4,
        };
        let symbols = if bits == 4 { "nibble".to_owned() } else { format!("{bits}-bit code") };
        assert_eq!(t["symbols"], symbols.as_str(), "{name}");
        assert_eq!(t["weights"], codes.len() as u64, "{name}");
        assert_eq!(t["bytes"], codes.len() as u64 * u64::from(bits) / 8, "{name}: stored bytes");
        let mut h = vec![0u64; 1 << bits];
        codes.iter().for_each(|&c| h[usize::from(c)] += 1);
        let n = codes.len() as f64;
        let h0: f64 = -h
            .iter()
            .filter(|&&c| c > 0)
            .map(|&c| c as f64 / n * (c as f64 / n).log2())
            .sum::<f64>();
        close(&t["entropy_bits"], h0);
        close(&t["ratio_bound"], f64::from(bits) / h0);
        assert!(t["cfs1_bytes"].as_u64().unwrap() > 0, "{name}");
        assert!(t["zstd19_bytes"].as_u64().unwrap() > 0, "{name}");
        assert_eq!(t["rans256_bytes"].is_null(), bits != 4, "{name}");
    }
    let split = v["total_split"].as_array().unwrap();
    let kinds: Vec<&str> = split.iter().map(|t| t["symbols"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["2-bit code", "3-bit code", "5-bit code", "6-bit code"], "{v}");
    assert_eq!(split[2]["tensors"], 3);
    assert_eq!(v["total"]["symbols"], "nibble");
    // The text report has a total per kind.
    let o = Command::new(env!("CARGO_BIN_EXE_tetrad"))
        .args(["stats", "--no-zstd"])
        .arg(&path)
        .output()
        .unwrap();
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("total (3 5-bit code stream(s), 960 5-bit codes, 600 bytes):"), "{text}");
}

/// `tetrad inspect` reads GGUF files too: each tensor's type, shape, place and what `stats`
/// measures in it; a malformed file is refused by class (exit 1), in text and JSON.
#[test]
fn inspect_lists_gguf_files() {
    let dir = tempfile::tempdir().unwrap();
    let (q6k, q80, f32s) = (vec![0u8; 210], vec![0u8; 34], vec![0u8; 4 * 64]);
    let file = gguf_file(&[
        ("a", [256, 1], 14, &q6k),
        ("b", [32, 1], 8, &q80),
        ("c", [64, 1], 0, &f32s),
        ("d", [2, 2], 99, &[]),
    ]);
    let path = dir.path().join("m.bin"); // found by its magic, whatever its name
    std::fs::write(&path, &file).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_tetrad")).arg("inspect").arg(&path).output().unwrap();
    let text = String::from_utf8(o.stdout).unwrap();
    assert_eq!(o.status.code(), Some(0), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].ends_with("(736 bytes, GGUF v3, alignment 32, data at byte 192, 4 tensor(s))"),
        "{text}"
    );
    assert_eq!(lines[1], "  a Q6_K [1, 256] 210 bytes at 192: 6-bit codes");
    assert_eq!(lines[2], "  b Q8_0 [1, 32] 34 bytes at 416: bytes");
    assert_eq!(lines[3], "  c F32 [1, 64] 256 bytes at 480: floats: measured after quantizing");
    assert_eq!(
        lines[4],
        "  d type 99 [2, 2] size unknown: a type tetrad does not know: not measured"
    );
    let o = Command::new(env!("CARGO_BIN_EXE_tetrad"))
        .args(["inspect", "--json"])
        .arg(&path)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["gguf"]["version"], 3);
    assert_eq!(v[0]["tensors"][0]["type"], "Q6_K");
    assert_eq!(v[0]["tensors"][0]["ggml_type"], 14);
    assert_eq!(v[0]["tensors"][0]["offset"], 192);
    assert_eq!(v[0]["tensors"][3]["bytes"], Value::Null);
    // A directory: its shards, then its GGUF files.
    let d = dir.path().join("d");
    std::fs::create_dir(&d).unwrap();
    std::fs::write(d.join("z.gguf"), &file).unwrap();
    let t = [OutTensor { name: "n", dtype: "F32", shape: &[1], data: &[0; 4] }];
    let shard = shard_bytes(&BTreeMap::new(), &t, HeaderStyle::EscapedUnpadded).unwrap();
    std::fs::write(d.join("a.safetensors"), shard).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_tetrad")).arg("inspect").arg(&d).output().unwrap();
    let text = String::from_utf8(o.stdout).unwrap();
    let heads: Vec<&str> = text.lines().filter(|l| l.starts_with("==")).collect();
    assert_eq!(heads.len(), 2, "{text}");
    assert!(heads[0].contains("a.safetensors"), "{text}");
    assert!(heads[1].contains("z.gguf (736 bytes, GGUF v3"), "{text}");
    // Cut inside the last sized tensor: refused by class, exit 1.
    std::fs::write(&path, &file[..700]).unwrap();
    for json in [false, true] {
        let mut c = Command::new(env!("CARGO_BIN_EXE_tetrad"));
        c.arg("inspect");
        if json {
            c.arg("--json");
        }
        let o = c.arg(&path).output().unwrap();
        let text = String::from_utf8(o.stdout).unwrap();
        assert_eq!(o.status.code(), Some(1), "{text}");
        assert!(text.contains("E_GGUF_RANGE"), "{text}");
    }
}

/// f32 → IEEE binary16 for values that are exact in it (normal range or zero), written here
/// independently of the crate's converters.
fn f16_bits(v: f32) -> u16 {
    if v == 0.0 {
        return 0;
    }
    let b = v.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xFF) as i32 - 127 + 15;
    assert!((1..31).contains(&exp), "{v} is not a normal f16");
    assert_eq!(b & 0x1FFF, 0, "{v} is not exact in f16");
    sign | ((exp as u16) << 10) | ((b >> 13) & 0x3FF) as u16
}

#[test]
fn half_precision_floats_are_measured_as_after_quantize() {
    let dir = tempfile::tempdir().unwrap();
    let (o, i) = (16usize, 96usize);
    // Multiples of 1/8 in [-1.75, 1.75]: exact in both f16 and bf16.
    let w: Vec<f32> = (0..o * i).map(|k| ((k * 37 + k / 7) % 29) as f32 / 8.0 - 1.75).collect();
    let bf16: Vec<u8> = w.iter().flat_map(|v| ((v.to_bits() >> 16) as u16).to_le_bytes()).collect();
    let f16: Vec<u8> = w.iter().flat_map(|&v| f16_bits(v).to_le_bytes()).collect();
    let mut codes = vec![0u8; o * i / 2];
    let mut scales = vec![0f32; o];
    tetrad_quant::quantize::quantize_int4_row(&w, o, i, &mut codes, &mut scales).unwrap();
    let rows: Vec<&[u8]> = codes.chunks(i / 2).collect();
    let (h0, h1, n) = entropies(&rows);

    let shape = [o as u64, i as u64];
    let t = [
        OutTensor { name: "h.bf16", dtype: "BF16", shape: &shape, data: &bf16 },
        OutTensor { name: "h.f16", dtype: "F16", shape: &shape, data: &f16 },
    ];
    let st = dir.path().join("h.safetensors");
    std::fs::write(&st, shard_bytes(&BTreeMap::new(), &t, HeaderStyle::EscapedUnpadded).unwrap())
        .unwrap();
    let gg = dir.path().join("h.gguf");
    std::fs::write(&gg, gguf_file(&[("h.gguf_f16", [i as u64, o as u64], 1, &f16)])).unwrap();
    let v = stats(&["--json", "--no-zstd"], &[&st, &gg]);
    let ts = v["tensors"].as_array().unwrap();
    assert_eq!(ts.len(), 3, "{v}");
    for t in ts {
        assert_eq!(t["format"], "int4-row", "{t}");
        assert_eq!(t["format_source"], "quantize");
        assert_eq!(t["shape"], serde_json::json!(shape));
        assert_eq!(t["nibbles"], n);
        close(&t["entropy_bits"], h0);
        close(&t["entropy_bits_order1"], h1);
        let mut c = vec![0u8; tetrad_fse::max_encoded_len(codes.len())];
        assert_eq!(t["cfs1_bytes"], tetrad_fse::encode_into(&codes, &mut c).unwrap() as u64);
    }
    assert_eq!(ts[2]["file"], "h.gguf");
}

#[test]
fn directories_packed_records_and_unstamped_codes() {
    let dir = tempfile::tempdir().unwrap();
    let (o, i) = (32usize, 256usize);
    let (a, _) = int4_rows(o, i, Dist::Laplace, 5);
    let s = vec![0u8; 4 * o];
    let shape = [o as u64, (i / 2) as u64];
    let meta: BTreeMap<String, String> =
        [("colibri.fmt".to_owned(), r#"{"w.a": "int4-row"}"#.to_owned())].into();
    let t = [
        OutTensor { name: "w.a", dtype: "U8", shape: &shape, data: &a },
        OutTensor { name: "w.a.qs", dtype: "F32", shape: &[o as u64], data: &s },
    ];
    let q = dir.path().join("q");
    std::fs::create_dir(&q).unwrap();
    std::fs::write(
        q.join("model.safetensors"),
        shard_bytes(&meta, &t, HeaderStyle::EscapedUnpadded).unwrap(),
    )
    .unwrap();
    // A directory of a shard and a GGUF file: both are read (the container first).
    let (gguf, _) = gguf_fixture();
    std::fs::write(q.join("t.gguf"), &gguf).unwrap();
    let v = stats(&["--json", "--no-zstd"], &[&q]);
    let names: Vec<&str> =
        v["tensors"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["w.a", "blk.0.w"]);
    let plain = &v["tensors"][0];

    // Packed into int4-rans256-g0 records: the decoded nibbles are measured, same numbers.
    let p = dir.path().join("p");
    let o = Command::new(env!("CARGO_BIN_EXE_tetrad"))
        .args(["pack", "-q", "--select", ".*", "--indir"])
        .arg(&q)
        .arg("--outdir")
        .arg(&p)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    let v = stats(&["--json", "--no-zstd"], &[&p]);
    let packed = &v["tensors"][0];
    assert_eq!(packed["name"], "w.a");
    assert_eq!(packed["format"], "int4-rans256-g0 (decoded int4-row)");
    assert_eq!(packed["format_source"], "stamp");
    assert_eq!(packed["shape"], serde_json::json!([32, 256]), "rows from the scales");
    for k in ["nibbles", "bytes", "entropy_bits", "entropy_bits_order1", "rans256_bytes"] {
        assert_eq!(packed[k], plain[k], "{k}");
    }
    // Packed into int4-rans64-t1 blobs: the same (it once skipped them all, E_SCALE_COUNT).
    let p64 = dir.path().join("p64");
    let o = Command::new(env!("CARGO_BIN_EXE_tetrad"))
        .args(["pack", "-q", "--select", ".*", "--codec", "int4-rans64-t1", "--indir"])
        .arg(&q)
        .arg("--outdir")
        .arg(&p64)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    let v = stats(&["--json", "--no-zstd"], &[&p64]);
    assert_eq!(v["skipped"].as_array().map(Vec::len), Some(0), "{v}");
    let packed = &v["tensors"][0];
    assert_eq!(packed["format"], "int4-rans64-t1 (decoded int4-row)");
    assert_eq!(packed["format_source"], "stamp");
    assert_eq!(packed["shape"], serde_json::json!([32, 256]), "rows from the scales");
    for k in ["nibbles", "bytes", "entropy_bits", "entropy_bits_order1", "rans64_bytes"] {
        assert_eq!(packed[k], plain[k], "{k}");
    }

    // Unstamped U8 codes with per-row scales: the format is resolved from the byte counts.
    let t = [
        OutTensor { name: "u", dtype: "U8", shape: &shape, data: &a },
        OutTensor { name: "u.qs", dtype: "F32", shape: &[32], data: &s },
        OutTensor { name: "bare", dtype: "U8", shape: &[4], data: &[1, 2, 3, 4] },
    ];
    let u = dir.path().join("u.safetensors");
    std::fs::write(&u, shard_bytes(&BTreeMap::new(), &t, HeaderStyle::EscapedUnpadded).unwrap())
        .unwrap();
    let v = stats(&["--json", "--no-zstd"], &[&u]);
    assert_eq!(v["tensors"][0]["format_source"], "resolved");
    assert_eq!(v["skipped"][0]["name"], "bare");
    // --per-tensor lists every measured and skipped tensor in plain text.
    let o = Command::new(env!("CARGO_BIN_EXE_tetrad"))
        .args(["stats", "--no-zstd", "--per-tensor"])
        .arg(&u)
        .output()
        .unwrap();
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.starts_with("u [u.safetensors] "), "{text}");
    assert!(text.contains("skipped bare [u.safetensors]: "), "{text}");

    // A directory with nothing to read is refused.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_tetrad")).arg("stats").arg(&empty).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("REFUSED E_NO_INPUT:"));
}

/// Memory follows the code bytes, not the tensor count: each byte tensor's 256 × 256 pair
/// table (512 KiB) was kept until the end, so 4,000 one-block Q8_0 tensors (a 200 KB file)
/// needed 2 GiB. Under a 1 GiB address-space limit the report must come out, with the pooled
/// numbers equal to one tensor holding all the codes.
#[cfg(target_os = "linux")]
#[test]
fn many_small_byte_tensors_do_not_cost_a_pair_table_each() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = (0u32..).map(|k| (k.wrapping_mul(2654435761) >> 25) as u8);
    let (q80, _) = blocks(4000, 34, 2, &mut bytes);
    let names: Vec<String> = (0..4000).map(|k| format!("t{k:04}")).collect();
    let tensors: Vec<(&str, [u64; 2], u32, &[u8])> =
        names.iter().zip(q80.chunks(34)).map(|(n, b)| (n.as_str(), [32, 1], 8, b)).collect();
    let path = dir.path().join("m.gguf");
    std::fs::write(&path, gguf_file(&tensors)).unwrap();
    let o = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1048576; exec \"$0\" stats --json --no-zstd \"$1\"")
        .arg(env!("CARGO_BIN_EXE_tetrad"))
        .arg(&path)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["tensors"].as_array().unwrap().len(), 4000);
    assert_eq!((&v["total"]["tensors"], &v["total"]["bytes"]), (&4000.into(), &(4000 * 32).into()));
}

/// Ambiguous GGUF files are refused, as the reference reader (gguf-py) refuses them: a second
/// `general.alignment` (the last one won, reading every tensor 32 bytes off when the writer
/// padded by the first), two tensors with one name, a name that is not UTF-8 (it was replaced
/// lossily, so distinct names could collide).
#[test]
fn ambiguous_gguf_files_are_refused() {
    let codes = [0x11u8; 18];
    let file = gguf_file(&[("a", [32, 1], 2, &codes), ("a", [32, 1], 2, &codes)]);
    assert_eq!(tetrad::gguf::parse(&file).unwrap_err().class().name(), "E_GGUF_DUPLICATE");
    let mut file = gguf_file(&[("\u{e9}", [32, 1], 2, &codes)]);
    let at = file.iter().position(|&b| b == 0xC3).unwrap();
    file[at] = 0xFF; // é's lead byte → not UTF-8
    assert_eq!(tetrad::gguf::parse(&file).unwrap_err().class().name(), "E_GGUF_UTF8");
    // Two general.alignment keys (u32, type 4): 64 then 32.
    let mut f = gguf_metadata_only(&[
        ("general.alignment", 4, &64u32.to_le_bytes()),
        ("general.alignment", 4, &32u32.to_le_bytes()),
    ]);
    assert_eq!(tetrad::gguf::parse(&f).unwrap_err().class().name(), "E_GGUF_DUPLICATE");
    f[8 + 8..8 + 16].copy_from_slice(&1u64.to_le_bytes()); // one key: fine
    assert!(tetrad::gguf::parse(&f[..f.len() - 33]).is_ok());
}

/// Floats are measured "after `tetrad quantize`": a shape quantize keeps as floats (its codes
/// would collide with another format's bytes) is skipped with that reason, not measured.
#[test]
fn shapes_quantize_keeps_as_floats_are_not_measured() {
    let dir = tempfile::tempdir().unwrap();
    let a: Vec<u8> = (0..5u32).flat_map(|k| (k as f32 - 2.0).to_le_bytes()).collect();
    let b: Vec<u8> = (0..256u32).flat_map(|k| ((k % 13) as f32 - 6.0).to_le_bytes()).collect();
    let ts = [
        OutTensor { name: "one_col", dtype: "F32", shape: &[5, 1], data: &a },
        OutTensor { name: "plain", dtype: "F32", shape: &[4, 64], data: &b },
    ];
    let path = dir.path().join("m.safetensors");
    std::fs::write(
        &path,
        shard_bytes(&BTreeMap::new(), &ts, HeaderStyle::EscapedUnpadded).unwrap(),
    )
    .unwrap();
    let v = stats(&["--json", "--no-zstd"], &[&path]);
    let measured: Vec<&str> =
        v["tensors"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(measured, ["plain"]);
    let skipped = &v["skipped"][0];
    assert_eq!(skipped["name"], "one_col");
    assert!(skipped["reason"].as_str().unwrap().contains("quantize keeps it as F32"), "{skipped}");
}

/// What cannot be computed is null: a matrix of one column quantized to int8-row has no
/// neighbouring pair in any row, so no order-1 entropy (it printed 0 and a gain of H0).
#[test]
fn order1_of_rows_of_one_symbol_is_null() {
    let dir = tempfile::tempdir().unwrap();
    let a: Vec<u8> = (0..6u32).flat_map(|k| (k as f32 - 2.5).to_le_bytes()).collect();
    let ts = [OutTensor { name: "col", dtype: "F32", shape: &[6, 1], data: &a }];
    let path = dir.path().join("m.safetensors");
    std::fs::write(
        &path,
        shard_bytes(&BTreeMap::new(), &ts, HeaderStyle::EscapedUnpadded).unwrap(),
    )
    .unwrap();
    let v = stats(&["--json", "--no-zstd", "--quantize", "int8-row"], &[&path]);
    let t = &v["tensors"][0];
    assert_eq!(t["name"], "col", "{v}");
    assert!(t["entropy_bits"].as_f64().is_some(), "{t}");
    assert!(t["entropy_bits_order1"].is_null() && t["order1_gain_bits"].is_null(), "{t}");
    assert!(v["total"]["entropy_bits_order1"].is_null(), "{v}");
}

/// GGUF refusals and skips say what is wrong (an independent check against gguf-py found the
/// old messages misleading): a big-endian file is named as such, not as a strange version; an
/// alignment of the wrong type names the type (it said "is 0"); an offset that overflows is
/// blamed on the offset (it blamed the element count); an empty float matrix is called empty
/// (it was "not 2-D"); I8/I16/I32/I64/F64 have a layout (it said "no known layout") and are
/// skipped as types stats does not measure.
#[test]
fn gguf_messages_name_the_actual_problem() {
    let codes = [0x11u8; 18];
    // Big-endian: the version field is byte-swapped.
    let mut f = gguf_file(&[("a", [32, 1], 2, &codes)]);
    f[4..8].copy_from_slice(&3u32.to_be_bytes());
    let e = tetrad::gguf::parse(&f).unwrap_err();
    assert_eq!(e.class().name(), "E_GGUF_VERSION");
    assert!(e.to_string().starts_with("big-endian GGUF (version 3;"), "{e}");
    f[4..8].copy_from_slice(&7u32.to_le_bytes());
    assert_eq!(tetrad::gguf::parse(&f).unwrap_err().to_string(), "GGUF version 7, expected 2 or 3");
    // general.alignment as a string (type 8).
    // A GGUF string: its u64 length, then the bytes.
    let f = gguf_metadata_only(&[("general.alignment", 8, &[2, 0, 0, 0, 0, 0, 0, 0, b'6', b'4'])]);
    let e = tetrad::gguf::parse(&f).unwrap_err();
    assert_eq!(e.class().name(), "E_GGUF_ALIGNMENT");
    assert_eq!(e.to_string(), "general.alignment has value type 8, expected 4 (UINT32)");
    // A data offset that overflows u64 with the tensor's size (the offset is the last field of
    // the tensor info, 8 bytes before the infos end).
    let mut f = gguf_file(&[("a", [32, 1], 2, &codes)]);
    let infos_end = 24 + 8 + 1 + 4 + 16 + 4 + 8;
    f[infos_end - 8..infos_end].copy_from_slice(&(u64::MAX - 1).to_le_bytes());
    let e = tetrad::gguf::parse(&f).unwrap_err();
    assert_eq!(e.class().name(), "E_GGUF_OVERFLOW");
    assert_eq!(e.to_string(), "tensor 0: data offset + byte size overflows u64");
    let mut f = gguf_file(&[("a", [1 << 40, 1 << 40], 0, &codes)]);
    f.truncate(f.len() - codes.len());
    assert_eq!(
        tetrad::gguf::parse(&f).unwrap_err().to_string(),
        "tensor 0: element count overflows u64"
    );
    let mut f = gguf_file(&[("a", [1 << 31, 1 << 31], 0, &codes)]);
    f.truncate(f.len() - codes.len());
    assert_eq!(
        tetrad::gguf::parse(&f).unwrap_err().to_string(),
        "tensor 0: byte size overflows u64"
    );
    // Skips: an empty F32 matrix, an I32 and an F64 tensor.
    let dir = tempfile::tempdir().unwrap();
    let (q8, _) = blocks(1, 34, 2, &mut (0u8..).cycle());
    let ints = [7u8; 16];
    let path = dir.path().join("m.gguf");
    std::fs::write(
        &path,
        gguf_file(&[
            ("empty", [0, 4], 0, &[]),
            ("i", [4, 1], 26, &ints),
            ("d", [2, 1], 28, &ints),
            ("q", [32, 1], 8, &q8),
        ]),
    )
    .unwrap();
    let v = stats(&["--json", "--no-zstd"], &[&path]);
    let reasons: Vec<(String, String)> = v["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap().into(), s["reason"].as_str().unwrap().into()))
        .collect();
    assert_eq!(
        reasons,
        [
            ("empty".into(), "F32 [4, 0]: an empty matrix, nothing to measure".into()),
            ("i".into(), format!("GGML I32: not a quantized type {MEASURED}")),
            ("d".into(), format!("GGML F64: not a quantized type {MEASURED}")),
        ]
    );
    assert_eq!(v["tensors"][0]["name"], "q");
}

/// The progress hook sees every tensor once, with its code bytes, and the report is the one
/// `measure` gives; `--quiet` is accepted (a pipe draws no bar either way).
#[test]
fn measure_reports_progress_per_tensor() {
    use std::sync::Mutex;
    use tetrad::stats::{Measured, StatsOptions, Symbols, measure, measure_with_progress};
    let ms: Vec<Measured> = (0..5u8)
        .map(|k| Measured {
            name: format!("t{k}"),
            file: "f".into(),
            format: "int4-row".into(),
            format_source: "stamp",
            shape: vec![2, 10 + u64::from(k)],
            symbols: if k == 4 { Symbols::Byte } else { Symbols::Nibble },
            data: (0..2 * (10 + usize::from(k))).map(|j| (j * 37 + usize::from(k)) as u8).collect(),
            row_bytes: 10 + usize::from(k),
            split: None,
        })
        .collect();
    let opts =
        StatsOptions { quantize: tetrad::quantize_container::QuantFormat::Int4Row, zstd: true };
    let seen = Mutex::new(Vec::new());
    let report = measure_with_progress(ms.clone(), Vec::new(), &opts, &|n| {
        seen.lock().unwrap().push(n);
    });
    let mut seen = seen.into_inner().unwrap();
    seen.sort_unstable();
    assert_eq!(seen, [20, 22, 24, 26, 28]);
    let plain = measure(ms, Vec::new(), &opts);
    assert_eq!(format!("{:?}", report.tensors), format!("{:?}", plain.tensors));

    let t = tempfile::tempdir().unwrap();
    let (codes, scales) = int4_rows(4, 64, Dist::Gaussian, 9);
    let qs: Vec<u8> = scales.iter().flat_map(|s| s.to_le_bytes()).collect();
    let p = t.path().join("m.safetensors");
    let ts = [
        OutTensor { name: "w", dtype: "U8", shape: &[4, 32], data: &codes },
        OutTensor { name: "w.qs", dtype: "F32", shape: &[4], data: &qs },
    ];
    std::fs::write(&p, shard_bytes(&BTreeMap::new(), &ts, HeaderStyle::EscapedUnpadded).unwrap())
        .unwrap();
    let v = stats(&["--json", "--quiet", "--no-zstd"], &[&p]);
    assert_eq!(v["total"]["bytes"], 128);
}
