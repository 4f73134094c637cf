//! `tetrad quantize`: the bytes written match an independent computation of the spec's
//! quantizers (docs/FORMATS.md "Quantizers"), other tensors are copied, stamps are written.
#![allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_possible_wrap)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use tetrad::quantize_container::{QuantFormat, QuantizeOptions, quantize_path};
use tetrad::shard::{HeaderStyle, OutTensor, shard_bytes};
use tetrad::shardset::ShardSet;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tetrad"))
}

/// Deterministic weights with ties (±0.5 steps), zeros and a zero row.
fn weights(o: usize, i: usize, seed: u32) -> Vec<f32> {
    (0..o * i)
        .map(|k| {
            let r = k / i;
            if r == 1 {
                return 0.0;
            }
            let x = (k as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) >> 8;
            let v = (x % 2001) as f32 / 1000.0 - 1.0;
            if k % 7 == 0 { 0.5 } else { v }
        })
        .collect()
}

fn f32_bytes(w: &[f32]) -> Vec<u8> {
    w.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn bf16_bytes(w: &[f32]) -> Vec<u8> {
    w.iter().flat_map(|v| ((v.to_bits() >> 16) as u16).to_le_bytes()).collect()
}

fn bf16_back(w: &[f32]) -> Vec<f32> {
    w.iter().map(|v| f32::from_bits(v.to_bits() & 0xFFFF_0000)).collect()
}

/// Writes a float checkpoint: F32 [4, 9], BF16 [3, 130], a 1-D F32, an I32 tensor.
fn write_input(path: &Path) -> BTreeMap<&'static str, (Vec<f32>, usize, usize)> {
    let a = weights(4, 9, 1);
    let b = weights(3, 130, 2);
    let bias = [1.0f32, -2.0, 3.0];
    let ids: Vec<u8> = [1i32, 2, 3].iter().flat_map(|v| v.to_le_bytes()).collect();
    let (ab, bb, biasb) = (f32_bytes(&a), bf16_bytes(&b), f32_bytes(&bias));
    let meta: BTreeMap<String, String> = [("note".to_owned(), "kept".to_owned())].into();
    let t = [
        OutTensor { name: "layer.a.weight", dtype: "F32", shape: &[4, 9], data: &ab },
        OutTensor { name: "layer.b.weight", dtype: "BF16", shape: &[3, 130], data: &bb },
        OutTensor { name: "layer.a.bias", dtype: "F32", shape: &[3], data: &biasb },
        OutTensor { name: "ids", dtype: "I32", shape: &[3], data: &ids },
    ];
    std::fs::write(path, shard_bytes(&meta, &t, HeaderStyle::EscapedUnpadded).unwrap()).unwrap();
    [("layer.a.weight", (a, 4, 9)), ("layer.b.weight", (bf16_back(&b), 3, 130))].into()
}

/// The spec's quantizer, written independently: per group `s = max(max|w|/qmax, 1e-8)`,
/// `q = round_half_even(w / s)` clamped to ±qmax. Returns (q per weight, scales).
fn reference(w: &[f32], o: usize, i: usize, gs: usize, qmax: f32) -> (Vec<i32>, Vec<f32>) {
    let groups = i.div_ceil(gs);
    let mut q = vec![0; o * i];
    let mut scales = Vec::new();
    for r in 0..o {
        for g in 0..groups {
            let cols = g * gs..((g + 1) * gs).min(i);
            let amax = cols.clone().map(|c| w[r * i + c].abs()).fold(0.0f32, f32::max);
            let s = (amax / qmax).max(1e-8);
            scales.push(s);
            for c in cols {
                q[r * i + c] = (w[r * i + c] / s).clamp(-qmax, qmax).round_ties_even() as i32;
            }
        }
    }
    (q, scales)
}

fn pack_nibbles(q: &[i32], o: usize, i: usize) -> Vec<u8> {
    let stride = i.div_ceil(2);
    let mut out = vec![0x88u8; o * stride];
    for r in 0..o {
        for c in 0..i {
            let n = (q[r * i + c] + 8) as u8;
            let b = &mut out[r * stride + c / 2];
            *b = if c % 2 == 0 { (*b & 0xF0) | n } else { (*b & 0x0F) | (n << 4) };
        }
    }
    out
}

fn expected_codes(fmt: QuantFormat, w: &[f32], o: usize, i: usize) -> (Vec<u8>, Vec<f32>) {
    match fmt {
        QuantFormat::Int4Row => {
            let (q, s) = reference(w, o, i, i, 7.0);
            (pack_nibbles(&q, o, i), s)
        }
        QuantFormat::Int4Grouped(gs) => {
            let (q, s) = reference(w, o, i, gs, 7.0);
            (pack_nibbles(&q, o, i), s)
        }
        QuantFormat::Int8Row => {
            let (q, s) = reference(w, o, i, i, 127.0);
            (q.iter().map(|&v| v as i8 as u8).collect(), s)
        }
        QuantFormat::Int2Row => {
            let (q, s) = reference(w, o, i, i, 1.0);
            let stride = i.div_ceil(4);
            let mut out = vec![0u8; o * stride];
            for r in 0..o {
                for c in 0..i {
                    out[r * stride + c / 4] |= ((q[r * i + c] + 2) as u8) << (2 * (c % 4));
                }
            }
            (out, s)
        }
        QuantFormat::Int3G64 => {
            let (q, s) = reference(w, o, i, 64, 3.0);
            let stride = i.div_ceil(64) * 24;
            let mut out = vec![0u8; o * stride];
            for r in 0..o {
                for c in 0..i {
                    let u = (q[r * i + c] + 4) as u8;
                    let g = r * stride + (c / 64) * 24;
                    let k = c % 64;
                    out[g + k / 4] |= (u & 3) << (2 * (k % 4));
                    out[g + 16 + k / 8] |= (u >> 2) << (k % 8);
                }
            }
            (out, s)
        }
        other => unreachable!("{other}: see mxfp4_and_fp8_match_the_independent_quantizer"),
    }
}

/// The test input quantized with one `--format` spec, in a temporary directory.
struct Quantized {
    fmt: QuantFormat,
    /// Kept so the directory lives as long as the paths below.
    dir: tempfile::TempDir,
    input: PathBuf,
    src: BTreeMap<&'static str, (Vec<f32>, usize, usize)>,
    out: PathBuf,
    set: ShardSet,
}

/// Writes [`write_input`]'s container and quantizes it with `spec` (both weights quantized).
fn quantized(spec: &str) -> Quantized {
    let fmt = QuantFormat::parse(spec).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("model.safetensors");
    let src = write_input(&input);
    let out = dir.path().join("q");
    let opts = QuantizeOptions { format: fmt, only: None, force: false, quiet: true };
    let report = quantize_path(&input, &out, &opts).unwrap();
    assert_eq!(report.tensors.iter().filter(|t| t.quantized).count(), 2, "{spec}");
    let set = ShardSet::open_dir(&out).unwrap();
    Quantized { fmt, dir, input, src, out, set }
}

#[test]
fn every_format_matches_the_independent_quantizer() {
    for spec in
        ["int4-row", "int4-grouped:16", "int4-grouped:32", "int8-row", "int2-row", "int3-g64"]
    {
        let Quantized { fmt, dir: _dir, input, src, out, set } = quantized(spec);
        let inset = ShardSet::open_files(std::slice::from_ref(&input)).unwrap();
        for (name, (w, o, i)) in &src {
            let (want_codes, want_scales) = expected_codes(fmt, w, *o, *i);
            let (loc, e) = set.get(name).unwrap();
            assert_eq!(e.dtype, "U8");
            assert_eq!(e.shape, vec![*o as u64, (want_codes.len() / o) as u64], "{spec} {name}");
            assert_eq!(set.data(loc), &want_codes[..], "{spec} {name} codes");
            let (qloc, qe) = set.get(&format!("{name}.qs")).unwrap();
            assert_eq!(qe.dtype, "F32");
            assert_eq!(set.data(qloc), &f32_bytes(&want_scales)[..], "{spec} {name} scales");
        }
        for name in ["layer.a.bias", "ids"] {
            let (a, ea) = set.get(name).unwrap();
            let (b, eb) = inset.get(name).unwrap();
            assert_eq!((set.data(a), &ea.dtype, &ea.shape), (inset.data(b), &eb.dtype, &eb.shape));
        }
        let meta = set.shards[0].header.metadata.clone().unwrap();
        let stamp = fmt.stamp_name();
        // A grouped format with one group per row (I = 9 ≤ GS) is int4-row, stamped so.
        let stamp_a = fmt.stamp_for_columns(9);
        assert_eq!(
            meta["colibri.fmt"],
            format!(r#"{{"layer.a.weight": "{stamp_a}", "layer.b.weight": "{stamp}"}}"#)
        );
        assert_eq!(meta["note"], "kept");
        // Every int4/int8 output resolves to the stamped format through the Container.
        let c = tetrad::container::Container::open(&out).unwrap();
        let v = c.tensor("layer.a.weight", 4, 9).unwrap();
        assert_eq!(v.format().name(), stamp_a, "{spec}");
        let v = c.tensor("layer.b.weight", 3, 130).unwrap();
        assert_eq!(v.format().name(), stamp, "{spec}");
    }
}

/// The value nearest `a` among `values` (index = code magnitude), ties to the even index,
/// by brute force: the independent rounding the mxfp4 and fp8 quantizers must match.
fn nearest_code(values: &[f64], a: f64) -> usize {
    let mut best = 0;
    for k in 1..values.len() {
        let (d, db) = ((values[k] - a).abs(), (values[best] - a).abs());
        if d < db || (d == db && k % 2 == 0) {
            best = k;
        }
    }
    best
}

/// mxfp4 by the OCP MX rule, computed independently: e = floor(log2(max|w|)) − 2 + 127 per 32
/// columns (127 for an all-zero group), codes the nearest e2m1 value of w / 2^(e−127).
fn expected_mxfp4(w: &[f32], o: usize, i: usize) -> (Vec<u8>, Vec<u8>) {
    let grid = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
    let (stride, groups) = (i.div_ceil(2), i.div_ceil(32));
    let (mut codes, mut scales) = (vec![0u8; o * stride], vec![0u8; o * groups]);
    for r in 0..o {
        for g in 0..groups {
            let cols = g * 32..(g * 32 + 32).min(i);
            let amax = cols.clone().map(|c| f64::from(w[r * i + c]).abs()).fold(0.0, f64::max);
            let e =
                if amax == 0.0 { 127 } else { (amax.log2().floor() as i32 + 125).clamp(1, 254) };
            scales[r * groups + g] = e as u8;
            for c in cols {
                let v = f64::from(w[r * i + c]) / 2f64.powi(e - 127);
                let k = nearest_code(&grid, v.abs().min(6.0)) as u8;
                let nib = if k != 0 && v < 0.0 { k | 8 } else { k };
                codes[r * stride + c / 2] |= if c % 2 == 0 { nib } else { nib << 4 };
            }
        }
    }
    (codes, scales)
}

/// fp8-e4m3-b128 computed independently: s = max|w| / 448 per 128 × 128 block (floor 1e-8),
/// each byte the nearest E4M3FN value of w / s (ties to the even code, saturating at 448).
fn expected_fp8(w: &[f32], o: usize, i: usize) -> (Vec<u8>, Vec<f32>) {
    let vals: Vec<f64> = (0u32..127)
        .map(|c| {
            let (e, m) = ((c >> 3) as i32, f64::from(c & 7));
            if e == 0 { m * 2f64.powi(-9) } else { (1.0 + m / 8.0) * 2f64.powi(e - 7) }
        })
        .collect();
    let bi = i.div_ceil(128);
    let mut scales = vec![0f32; o.div_ceil(128) * bi];
    for (b, s) in scales.iter_mut().enumerate() {
        let mut amax = 0f32;
        for r in (b / bi) * 128..((b / bi) * 128 + 128).min(o) {
            for c in (b % bi) * 128..((b % bi) * 128 + 128).min(i) {
                amax = amax.max(w[r * i + c].abs());
            }
        }
        *s = (amax / 448.0).max(1e-8);
    }
    let codes = (0..o * i)
        .map(|k| {
            let (r, c) = (k / i, k % i);
            let v = w[k] / scales[(r / 128) * bi + c / 128];
            let code = nearest_code(&vals, f64::from(v.abs()).min(448.0)) as u8;
            if code != 0 && v < 0.0 { code | 0x80 } else { code }
        })
        .collect();
    (codes, scales)
}

/// `--format mxfp4` and `--format fp8-e4m3-b128`: the bytes of an independent computation,
/// mxfp4 scales stored as U8 exponents, stamps written, the Container reads each tensor as its
/// format and multiplies with it.
#[test]
fn mxfp4_and_fp8_match_the_independent_quantizer() {
    for spec in ["mxfp4", "fp8-e4m3-b128"] {
        let Quantized { fmt, dir: _dir, src, out, set, .. } = quantized(spec);
        for (name, (w, o, i)) in &src {
            let (want_codes, want_scales, scale_dtype) = if fmt == QuantFormat::Mxfp4 {
                let (c, s) = expected_mxfp4(w, *o, *i);
                (c, s, "U8")
            } else {
                let (c, s) = expected_fp8(w, *o, *i);
                (c, f32_bytes(&s), "F32")
            };
            let (loc, e) = set.get(name).unwrap();
            assert_eq!((e.dtype.as_str(), e.shape[0]), ("U8", *o as u64), "{spec} {name}");
            assert_eq!(set.data(loc), &want_codes[..], "{spec} {name} codes");
            let (qloc, qe) = set.get(&format!("{name}.qs")).unwrap();
            assert_eq!(qe.dtype, scale_dtype, "{spec} {name}");
            assert_eq!(set.data(qloc), &want_scales[..], "{spec} {name} scales");
        }
        let meta = set.shards[0].header.metadata.clone().unwrap();
        assert_eq!(
            meta["colibri.fmt"],
            format!(r#"{{"layer.a.weight": "{spec}", "layer.b.weight": "{spec}"}}"#)
        );
        // `tetrad verify` (entropy-coded records) says what the stamps name instead.
        let o = bin().arg("verify").arg(&out).output().unwrap();
        let text = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(1), "{text}");
        assert!(text.contains(&format!("E_STAMP_MISSING: no tensor is stamped \"int4-rans256-g0\" or \"int4-rans64-t1\" (its stamps name 2 {spec}: `tetrad inspect` checks")), "{text}");
        let c = tetrad::container::Container::open(&out).unwrap();
        for (name, (w, o, i)) in &src {
            let v = c.tensor(name, *o as u64, *i as u64).unwrap();
            assert_eq!(v.format().name(), spec);
            // The product with the quantized weights is close to the float one.
            let x: Vec<f32> = (0..*i).map(|k| ((k as f32) * 0.7).cos()).collect();
            let mut y = vec![0f32; *o];
            v.matmul(name, tetrad_quant::isa::Isa::Scalar, &x, 1, &mut y, 1).unwrap();
            for r in 0..*o {
                let exact: f32 = (0..*i).map(|k| w[r * i + k] * x[k]).sum();
                let mag: f32 = (0..*i).map(|k| (w[r * i + k] * x[k]).abs()).sum();
                assert!((y[r] - exact).abs() <= 0.2 * mag + 1e-6, "{spec} {name} row {r}");
            }
        }
    }
}

#[test]
fn only_regex_selects_and_refusals_leave_output_alone() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("model.safetensors");
    write_input(&input);
    let out = dir.path().join("q");
    let opts = QuantizeOptions {
        format: QuantFormat::Int4Row,
        only: Some(regex::Regex::new(r"\.b\.").unwrap()),
        force: false,
        quiet: true,
    };
    let r = quantize_path(&input, &out, &opts).unwrap();
    let q: Vec<&str> = r.tensors.iter().filter(|t| t.quantized).map(|t| t.name.as_str()).collect();
    assert_eq!(q, ["layer.b.weight"]);
    let set = ShardSet::open_dir(&out).unwrap();
    assert_eq!(set.get("layer.a.weight").unwrap().1.dtype, "F32");
    assert!(set.get("layer.a.weight.qs").is_none());
    // Existing output: refused without --force, replaced with it.
    let before = std::fs::read(out.join("model.safetensors")).unwrap();
    let err = quantize_path(&input, &out, &opts).unwrap_err();
    assert_eq!(err.class.name(), "E_OUTPUT_EXISTS");
    assert_eq!(std::fs::read(out.join("model.safetensors")).unwrap(), before);
    quantize_path(&input, &out, &QuantizeOptions { force: true, ..opts }).unwrap();
}

#[test]
fn cli_quantize_json_and_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("model.safetensors");
    write_input(&input);
    let out = dir.path().join("q");
    let o = bin()
        .args(["quantize", "--json", "--format", "int4-grouped:32"])
        .arg(&input)
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["format"], "int4-grouped:32");
    assert_eq!(v["stamp"], "int4-grouped");
    assert_eq!(v["quantized"], 2);
    assert_eq!(v["copied"], 2);
    // Each tensor's stamp is what the file says: [4, 9] has one group of 32 per row, so it is
    // stamped int4-row (the same bytes); [3, 130] is int4-grouped; copied tensors have none.
    let stamps: Vec<(&str, &serde_json::Value)> = v["tensors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap(), &t["stamp"]))
        .collect();
    let want = serde_json::json!({"layer.a.weight": "int4-row", "layer.b.weight": "int4-grouped"});
    for (name, stamp) in stamps {
        assert_eq!(stamp, want.get(name).unwrap_or(&serde_json::Value::Null), "{name}");
    }
    let o = bin()
        .args(["quantize", "-q", "--format", "int4-grouped:32"])
        .arg(&input)
        .arg(dir.path().join("q-text"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("2 tensor(s) quantized to int4-grouped:32 (stamped \"int4-grouped\"; 1 with one group per row stamped \"int4-row\"), 2 copied"),
        "{text}"
    );
    for bad in ["int5-row", "int4-grouped:7", "int4-grouped:0"] {
        let o = bin().args(["quantize", "--format", bad]).arg(&input).arg(&out).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad}");
    }
    // 130 columns in groups of 128 (2 groups) would be read back as groups of 96: refused.
    let o = bin()
        .args(["quantize", "--format", "int4-grouped:128", "--only", "layer.b"])
        .arg(&input)
        .arg(dir.path().join("q2"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("REFUSED E_QUANT_AMBIGUOUS:"));
    assert!(!dir.path().join("q2").join("model.safetensors").exists());
    let o = bin().args(["quantize"]).arg(&input).arg(&out).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("REFUSED E_OUTPUT_EXISTS:"));
}

/// Shapes whose quantized bytes collide with another format's are copied as floats, so that
/// a reader following the colibrì engine's format spec (docs/FORMATS.md) literally never refuses or misreads what
/// quantize wrote; every tensor it does quantize resolves literally to its stamp.
#[test]
fn collision_shapes_are_kept_as_floats_and_the_rest_resolves_literally() {
    let shapes: [(&str, [usize; 2]); 6] = [
        ("one_col", [3, 1]),
        ("e8_tag", [1, 196]),
        ("two_cols", [4, 2]),
        ("int3_48", [2, 48]),
        ("plain", [4, 64]),
        ("plain_odd", [1, 197]),
    ];
    let data: Vec<Vec<u8>> =
        shapes.iter().map(|(_, [o, i])| f32_bytes(&weights(*o, *i, 9))).collect();
    let tensors: Vec<[u64; 2]> = shapes.iter().map(|(_, [o, i])| [*o as u64, *i as u64]).collect();
    let t: Vec<OutTensor> = shapes
        .iter()
        .zip(&data)
        .zip(&tensors)
        .map(|(((name, _), d), s)| OutTensor { name, dtype: "F32", shape: s, data: d })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("m.safetensors");
    std::fs::write(
        &input,
        shard_bytes(&BTreeMap::new(), &t, HeaderStyle::EscapedUnpadded).unwrap(),
    )
    .unwrap();
    // (format, the tensors it must keep as floats)
    let cases: [(&str, &[&str]); 4] = [
        ("int4-row", &["one_col", "e8_tag"]),
        ("int4-grouped:16", &["one_col"]),
        ("int2-row", &["one_col", "two_cols"]),
        ("int3-g64", &["int3_48"]),
    ];
    for (k, (spec, keep)) in cases.iter().enumerate() {
        let out = dir.path().join(format!("q{k}"));
        let opts = QuantizeOptions {
            format: QuantFormat::parse(spec).unwrap(),
            only: None,
            force: false,
            quiet: true,
        };
        let report = quantize_path(&input, &out, &opts).unwrap();
        let set = ShardSet::open_dir(&out).unwrap();
        let meta = set.shards[0].header.metadata.clone().unwrap_or_default();
        let stamps: serde_json::Value = serde_json::from_str(&meta["colibri.fmt"]).unwrap();
        for (a, ((name, [o, i]), d)) in report.tensors.iter().zip(shapes.iter().zip(&data)) {
            assert_eq!(a.name, *name);
            let (loc, e) = set.get(name).unwrap();
            if keep.contains(name) {
                assert!(!a.quantized, "{spec} {name}");
                assert!(a.kept.as_deref().unwrap().contains("collide"), "{spec} {name}");
                assert_eq!((e.dtype.as_str(), set.data(loc)), ("F32", &d[..]), "{spec} {name}");
                assert!(set.get(&format!("{name}.qs")).is_none());
                assert!(stamps.get(*name).is_none(), "{spec} {name}");
                continue;
            }
            assert!(a.quantized && a.kept.is_none(), "{spec} {name}");
            let stamp = stamps[*name].as_str().unwrap();
            let (ql, _) = set.get(&format!("{name}.qs")).unwrap();
            let (nb, ns) = (set.data(loc).len() as u64, set.data(ql).len() as u64);
            let r =
                tetrad_quant::resolve::resolve_literal(*o as u64, *i as u64, nb, ns, Some(stamp));
            assert_eq!(r.map(|r| r.format.name()), Ok(stamp), "{spec} {name}");
        }
    }
    // The text report names what was kept and why.
    let o = bin()
        .args(["quantize", "-q", "--format", "int3-g64"])
        .arg(&input)
        .arg(dir.path().join("text"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{text}");
    assert!(text.contains("kept as F32: int3_48 [2, 48] in m.safetensors: as int3-g64"), "{text}");
}
