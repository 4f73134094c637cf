//! `tetrad inspect`: what is in a shard — header, metadata, stamps, and each tensor's format.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use tetrad_quant::resolve;
use tetrad_rans::Record;

use crate::error::{Class, Refusal};
use crate::meta::{FORMAT_NAME, STAMP_KEY, TABLE_KEY};
use crate::shard::TensorEntry;
use crate::shardset::Shard;

/// Options of `tetrad inspect`.
#[derive(Debug, Args)]
#[command(after_help = "\
For every shard: its size and header, the metadata keys (stamps counted, the int4-rans256-g0
table summarised), and one line per tensor: dtype, shape, bytes and format. A stamped tensor
shows its stamp, verified against the bytes; an unstamped quantized tensor `X` (with scales
in `X.qs`) shows the formats byte arithmetic gives for each I its stored row of C columns
allows (C; 2C − 1 or 2C for nibbles; 4C − 3 … 4C for crumbs; a last int3-g64 group) — the
file does not record I, so pass the model's real [O, I] to `tetrad resolve` when it matters.
A CFS1 container (`tetrad cfs1 pack`) shows each tensor's blob: raw or rANS, and its size
against the bytes it decodes to (the blobs' framing is checked, not decoded). A directory
stands for its *.safetensors files, in name order, then its *.gguf files.

A GGUF file (by its magic or a .gguf name) shows its version, alignment and data offset, and
one line per tensor: GGML type, shape (row-major), bytes, offset, and what `tetrad stats`
measures in it (nibbles, bytes, 2-6-bit codes, floats after quantizing, or nothing); every
offset and size is checked against the file (E_GGUF_* on a malformed one).

Examples:
  tetrad inspect model-00001-of-00004.safetensors
  tetrad inspect checkpoint/
  tetrad inspect --json packed/out-rans-00000.safetensors
  tetrad inspect SmolLM2-135M-Instruct.Q4_1.gguf")]
pub struct InspectArgs {
    /// Shards or GGUF files to inspect (a directory: its *.safetensors and *.gguf files).
    #[arg(required = true, value_name = "SHARD|DIR|GGUF")]
    pub shards: Vec<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Ascending values as runs: `5`, `5 or 6`, `5 … 9`, joined by `, `.
fn ranges(values: &[u64]) -> String {
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for &v in values {
        match runs.last_mut() {
            Some((_, hi)) if hi.checked_add(1) == Some(v) => *hi = v,
            _ => runs.push((v, v)),
        }
    }
    let text: Vec<String> = runs
        .iter()
        .map(|&(lo, hi)| match hi - lo {
            0 => format!("{lo}"),
            1 => format!("{lo} or {hi}"),
            _ => format!("{lo} … {hi}"),
        })
        .collect();
    text.join(", ")
}

/// The format line of one tensor.
fn describe(
    shard: &Shard,
    stamps: &serde_json::Map<String, serde_json::Value>,
    t: &TensorEntry,
) -> String {
    if crate::cfse::is_cfse(&shard.header) {
        // The open checked every blob's header stage and its rawlen against dtype × shape.
        return match tetrad_fse::Header::parse(shard.data(t)) {
            Ok(h) => format!(
                "CFS1 {} blob of {} bytes, {:.4} of them",
                match h.mode {
                    tetrad_fse::Mode::Raw => "raw",
                    tetrad_fse::Mode::Rans => "rANS",
                    _ => "unknown-mode",
                },
                h.rawlen,
                t.len() as f64 / f64::from(h.rawlen.max(1))
            ),
            Err(e) => format!("CFS1 blob REFUSED {}: {e}", Class::of(&e)),
        };
    }
    let stamp = stamps.get(&t.name).and_then(|v| v.as_str());
    if stamp == Some(FORMAT_NAME) {
        return match Record::parse(shard.data(t)) {
            Ok(r) => format!(
                "{FORMAT_NAME} (stamped): {} nibbles, {:.4} of int4-row",
                r.n_symbols(),
                t.len() as f64 / r.packed_bytes().max(1) as f64
            ),
            Err(e) => format!("{FORMAT_NAME} (stamped) REFUSED {}: {e}", Class::of(&e)),
        };
    }
    let rans64 = crate::rans64::FORMAT_NAME;
    if stamp == Some(rans64) {
        // Header and chunk index only (the chunks' checks and seals are `verify`'s job).
        return match tetrad_rans::rans64::Blob::parse(shard.data(t)) {
            Ok(b) => format!(
                "{rans64} (stamped): {} int4-row bytes in {} chunk(s) of 2^{}, version {}, {:.4} of int4-row",
                b.n_bytes(),
                b.n_chunks(),
                b.chunk_shift(),
                b.version(),
                t.len() as f64 / b.n_bytes().max(1) as f64
            ),
            Err(e) => format!("{rans64} (stamped) REFUSED {}: {e}", Class::of(&e)),
        };
    }
    if let Some(base) = t.name.strip_suffix(".qs")
        && shard.header.tensor(base).is_some()
    {
        return format!("scales of {base}");
    }
    let qs = shard.header.tensor(&format!("{}.qs", t.name));
    if stamp.is_none() && qs.is_none() && t.dtype != "U8" && t.dtype != "I8" {
        // A float (or other) tensor with neither scales nor a stamp is no quantized weight.
        return "-".to_owned();
    }
    let ns = qs.map_or(0, |q| match q.dtype.as_str() {
        "BF16" | "F16" => 2 * q.len(),
        _ => q.len(),
    });
    let (o, c) = match t.shape[..] {
        [o, c] => (o, c),
        _ => match qs {
            Some(q) if q.dtype == "F32" && q.len() >= 4 => {
                (q.len() / 4, t.len() / (q.len() / 4).max(1))
            }
            _ => return stamp.map_or_else(|| "-".to_owned(), |s| format!("{s} (stamped)")),
        },
    };
    let nb = t.len();
    // The file does not record I, only C stored columns: a row holds I = C values at one per
    // column, I = 2C − 1 or 2C (4C − 3 … 4C) at two (four) per byte, the last byte's padding
    // hiding which, and, in int3-g64's 24-byte groups of 64 values, any I in the last group.
    let mut cands = std::collections::BTreeSet::new();
    cands.insert(c);
    if t.dtype != "F32" {
        for k in [2, 4] {
            let top = c.saturating_mul(k);
            cands.extend(top.saturating_sub(k - 1).max(1)..=top);
        }
        if c % 24 == 0
            && let Some(top) = (c / 24).checked_mul(64)
        {
            cands.extend(top.saturating_sub(63).max(1)..=top);
        }
    }
    // Each reading with the I values that give it, in order of its smallest I.
    let mut by_reading: Vec<(String, Vec<u64>)> = Vec::new();
    for i in cands {
        let Ok(r) = resolve(o, i, nb, ns, stamp) else { continue };
        let r = r.to_string();
        match by_reading.iter_mut().find(|(s, _)| *s == r) {
            Some((_, is)) => is.push(i),
            None => by_reading.push((r, vec![i])),
        }
    }
    let readings: Vec<String> =
        by_reading.iter().map(|(r, is)| format!("{r} if I = {}", ranges(is))).collect();
    if !readings.is_empty() {
        let s = if stamp.is_some() { " (stamped, verified)" } else { "" };
        let head = if readings.len() == 1 { "one reading" } else { "readings" };
        return format!("{head}{s}; O = {o}, I not stored: {}", readings.join(" | "));
    }
    match (stamp, resolve(o, c, nb, ns, stamp)) {
        (_, Err(e)) => format!("REFUSED {}: {e}", Class::of(&e)),
        (Some(s), Ok(_)) => format!("{s} (stamped)"),
        (None, Ok(r)) => r.to_string(),
    }
}

/// What `tetrad stats` measures in a GGUF tensor.
fn gguf_measured(t: &crate::gguf::GgufTensor) -> String {
    match (crate::gguf::code_bits(t.ggml_type), t.ggml_type) {
        (Some(4), _) => "nibbles".into(),
        (Some(8), _) => "bytes".into(),
        (Some(b), _) => format!("{b}-bit codes"),
        (None, 0 | 1 | 30) if t.dims.len() == 2 => "floats: measured after quantizing".into(),
        (None, 0 | 1 | 30) => "floats, not a matrix: not measured".into(),
        (None, _) if t.range.is_none() => "a type tetrad does not know: not measured".into(),
        (None, _) => "not measured".into(),
    }
}

/// `tetrad inspect` of one GGUF file: its directory, or the refusal; `Err` when refused.
fn inspect_gguf(path: &std::path::Path, json: bool) -> Result<serde_json::Value, Refusal> {
    let bytes = crate::io::map_file(path)
        .map_err(|e| Refusal::new(Class::Io, format!("{}: {e}", path.display())))?;
    let g = crate::gguf::parse(&bytes)
        .map_err(|e| Refusal::of(&e, format!("{}: {e}", path.display())))?;
    if !json {
        println!(
            "== {} ({} bytes, GGUF v{}, alignment {}, data at byte {}, {} tensor(s))",
            path.display(),
            bytes.len(),
            g.version,
            g.alignment,
            g.data_start,
            g.tensors.len()
        );
        for t in &g.tensors {
            let place = t.range.map_or_else(
                || "size unknown".to_owned(),
                |(a, b)| format!("{} bytes at {a}", b - a),
            );
            let (name, ty) = (super::printable(&t.name), t.type_name());
            println!("  {name} {ty} {:?} {place}: {}", t.shape(), gguf_measured(t));
        }
        return Ok(serde_json::Value::Null);
    }
    Ok(serde_json::json!({
        "shard": path,
        "bytes": bytes.len(),
        "gguf": {"version": g.version, "alignment": g.alignment, "data_start": g.data_start},
        "tensors": g.tensors.iter().map(|t| serde_json::json!({
            "name": t.name, "ggml_type": t.ggml_type, "type": t.type_name(), "shape": t.shape(),
            "bytes": t.range.map(|(a, b)| b - a), "offset": t.range.map(|r| r.0),
            "stats": gguf_measured(t),
        })).collect::<Vec<_>>(),
    }))
}

/// Runs `tetrad inspect`.
pub fn run(args: &InspectArgs) -> ExitCode {
    let mut failed = false;
    let mut out = Vec::new();
    // Each argument's files (a directory's *.safetensors, then its *.gguf), or why there are
    // none.
    let mut paths: Vec<(PathBuf, Option<Refusal>)> = Vec::new();
    for path in &args.shards {
        match crate::stats::expand(std::slice::from_ref(path)) {
            Ok(entries) => {
                for p in entries {
                    match crate::shardset::shards_of(&p) {
                        Ok(v) => paths.extend(v.into_iter().map(|p| (p, None))),
                        Err(e) => paths.push((p, Some(Refusal::new(e.class, e.detail)))),
                    }
                }
            }
            Err(e) => paths.push((path.clone(), Some(e))),
        }
    }
    // A file that could not be read: its refusal, in the output's form.
    let refused = |path: &PathBuf, e: &Refusal, out: &mut Vec<serde_json::Value>| {
        if args.json {
            out.push(serde_json::json!({"shard": path, "refused": {"class": e.class, "detail": e.detail}}));
        } else {
            println!("REFUSED {}: {}", e.class, e.detail);
        }
    };
    for (path, listed) in &paths {
        if listed.is_none() && path.is_file() && crate::stats::is_gguf(path) {
            match inspect_gguf(path, args.json) {
                Ok(v) if args.json => out.push(v),
                Ok(_) => {}
                Err(e) => {
                    failed = true;
                    refused(path, &e, &mut out);
                }
            }
            continue;
        }
        let opened = match listed {
            Some(r) => Err(r.clone()),
            None => crate::container::open_shard(path),
        };
        let shard = match opened {
            Ok(s) => s,
            Err(e) => {
                failed = true;
                refused(path, &e, &mut out);
                continue;
            }
        };
        let meta = shard.header.metadata.clone().unwrap_or_default();
        // A refused stamp map (malformed, or a tensor stamped two ways) shows as refused and
        // stamps nothing.
        let stamp_map = meta.get(STAMP_KEY).map(|s| crate::meta::stamp_map(s));
        let stamps: serde_json::Map<String, serde_json::Value> = match &stamp_map {
            Some(Ok(m)) => {
                m.iter().map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone()))).collect()
            }
            _ => serde_json::Map::new(),
        };
        let tensors: Vec<(String, &TensorEntry)> =
            shard.header.tensors.iter().map(|t| (describe(&shard, &stamps, t), t)).collect();
        if args.json {
            let meta_json: serde_json::Map<String, serde_json::Value> = meta
                .iter()
                .map(|(k, v)| {
                    let summary =
                        if let (true, Some(Err((class, why)))) = (k == STAMP_KEY, &stamp_map) {
                            serde_json::json!({"refused": {"class": class, "detail": why}})
                        } else if k == TABLE_KEY {
                            crate::table_json::parse(v).map_or_else(
                                |e| serde_json::json!({"refused": {"class": Class::of(&e), "detail": e.to_string()}}),
                                |p| serde_json::json!({"scale_bits": p.scale_bits, "freq": p.freq}),
                            )
                        } else {
                            serde_json::Value::String(v.clone())
                        };
                    (k.clone(), summary)
                })
                .collect();
            out.push(serde_json::json!({
                "shard": path,
                "bytes": shard.bytes.len(),
                "header_bytes": shard.header.data_start - 8,
                "metadata": meta_json,
                "tensors": tensors.iter().map(|(f, t)| serde_json::json!({
                    "name": t.name, "dtype": t.dtype, "shape": t.shape, "bytes": t.len(),
                    "stamp": stamps.get(&t.name), "format": f,
                })).collect::<Vec<_>>(),
            }));
            continue;
        }
        println!(
            "== {} ({} bytes, header {} bytes, {} tensor(s))",
            path.display(),
            shard.bytes.len(),
            shard.header.data_start - 8,
            shard.header.tensors.len()
        );
        for (k, v) in &meta {
            if let (true, Some(Err((class, why)))) = (k == STAMP_KEY, &stamp_map) {
                println!("  metadata {k}: REFUSED {class}: {why}");
            } else if k == STAMP_KEY {
                println!("  metadata {k}: {} stamp(s)", stamps.len());
            } else if k == TABLE_KEY {
                match crate::table_json::parse(v) {
                    Ok(p) => println!(
                        "  metadata {k}: scale_bits {}, crc32 {:08x}, freq {:?}",
                        p.scale_bits,
                        crc32fast::hash(&crate::table_json::slot_bytes(&p.slots)),
                        p.freq
                    ),
                    Err(e) => println!("  metadata {k}: REFUSED {}: {e}", Class::of(&e)),
                }
            } else {
                let short: String = v.chars().take(80).collect();
                println!(
                    "  metadata {}: {}{}",
                    super::printable(k),
                    super::printable(&short),
                    if v.chars().count() > 80 { "…" } else { "" }
                );
            }
        }
        for (f, t) in &tensors {
            let (name, dtype) = (super::printable(&t.name), super::printable(&t.dtype));
            println!("  {name} {dtype} {:?} {} bytes: {f}", t.shape, t.len());
        }
    }
    if args.json {
        println!("{}", serde_json::Value::Array(out));
    }
    if failed { ExitCode::from(super::EXIT_FAILURE) } else { ExitCode::SUCCESS }
}
