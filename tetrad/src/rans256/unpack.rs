//! `unpack`: `int4-rans256-g0` shards back to int4-row shards, byte-exact.
//!
//! Every stamped record is decoded with checked decode (every stream's seal) against the
//! shard's own table; the weight comes back as `U8 [O, ceil(I/2)]` when the row count `O` is
//! known from its `X.qs` (F32, one scale per row) and divides the byte count, else as a 1-D
//! `U8` tensor; `.qs` and any other tensor are copied unchanged, in the shard's order; the
//! stamps and the table are removed from the metadata. Output shards take the name of the
//! input shard they came from when a manifest records it, else keep their own name; each is
//! written atomically, and a failure leaves no partial file.
//!
//! Tensors stamped `int4-rans64-t1` are decoded the same way (their blob carries its own
//! models, so no table is needed; best arm, all cores, every chunk's seal checked), and when
//! the manifest records the sha256 of the original (`originals`), the decoded bytes must match
//! it (`E_ORIGINAL_DIGEST_MISMATCH`) before anything is written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tetrad_rans::{Record, decode_record};

use sha2::{Digest as _, Sha256};

use super::manifest::parse_digests;
use super::{
    FORMAT_NAME, MANIFEST_NAME, Refusal, STAMP_KEY, TABLE_KEY, is_out_shard_name, table_from_parts,
};
use crate::rans64::FORMAT_NAME as RANS64_NAME;
use crate::shard::{HeaderStyle, OutTensor, shard_bytes};
use crate::shardset::{Shard, list_shards};
use crate::table_json;

/// What `unpack` wrote: (input shard, output shard, records decoded, bytes written).
pub type UnpackReport = Vec<(String, String, u64, u64)>;

/// Unpacks every `out-rans-*.safetensors` shard of `indir` into `outdir`.
pub fn unpack(indir: &Path, outdir: &Path, force: bool) -> Result<UnpackReport, Refusal> {
    let shards: Vec<PathBuf> = list_shards(indir)?
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| is_out_shard_name(&n.to_string_lossy())))
        .collect();
    if shards.is_empty() {
        return Err(Refusal::new(
            "E_NO_INPUT",
            format!("no out-rans-*.safetensors shards in {}", indir.display()),
        ));
    }
    let mut originals = BTreeMap::new();
    let sources: BTreeMap<String, String> = match std::fs::read_to_string(indir.join(MANIFEST_NAME))
    {
        Ok(text) => {
            let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                Refusal::new("E_MANIFEST_MALFORMED", format!("{MANIFEST_NAME}: {e}"))
            })?;
            originals = parse_digests(&text)
                .map_err(|e| Refusal::new("E_MANIFEST_MALFORMED", format!("{MANIFEST_NAME}: {e}")))?
                .originals;
            v["shards"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| {
                    Some((s["file"].as_str()?.to_owned(), s["source"].as_str()?.to_owned()))
                })
                .collect()
        }
        Err(_) => BTreeMap::new(),
    };
    let mut plan = Vec::new();
    for p in &shards {
        let base = p.file_name().expect("listed file").to_string_lossy().into_owned();
        let out_name = sources.get(&base).cloned().unwrap_or_else(|| base.clone());
        if out_name.contains('/') || out_name.contains('\\') || out_name.starts_with('.') {
            return Err(Refusal::new(
                "E_MANIFEST_MALFORMED",
                format!("source name {out_name:?} is not a plain file name"),
            ));
        }
        let out = outdir.join(&out_name);
        if out.exists() && !force {
            return Err(Refusal::new(
                "E_OUTPUT_EXISTS",
                format!("{} exists; use --force to replace it", out.display()),
            ));
        }
        plan.push((p.clone(), base, out_name, out));
    }
    std::fs::create_dir_all(outdir)
        .map_err(|e| Refusal::new("E_IO", format!("{}: {e}", outdir.display())))?;
    let mut report = Vec::new();
    for (path, base, out_name, out) in plan {
        let (bytes, records) = unpack_shard_checked(&path, originals.get(&base))?;
        crate::io::write_bytes_atomic(&out, &bytes)
            .map_err(|e| Refusal::new("E_IO", format!("writing {}: {e}", out.display())))?;
        report.push((base, out_name, records, bytes.len() as u64));
    }
    Ok(report)
}

/// The int4-row shard bytes of one `int4-rans256-g0` (or `int4-rans64-t1`) shard, and the
/// number of records decoded.
pub fn unpack_shard(path: &Path) -> Result<(Vec<u8>, u64), Refusal> {
    unpack_shard_checked(path, None)
}

/// [`unpack_shard`], checking each `int4-rans64-t1` tensor's decoded bytes against
/// `originals` (tensor → sha256 hex of the original, from the manifest) when given.
pub fn unpack_shard_checked(
    path: &Path,
    originals: Option<&BTreeMap<String, String>>,
) -> Result<(Vec<u8>, u64), Refusal> {
    let shard = Shard::open(path)?;
    let base = shard.basename();
    let meta = shard.header.metadata.clone().unwrap_or_default();
    let refuse = |class, detail: String| Refusal::new(class, format!("{base}: {detail}"));
    let fmt =
        meta.get(STAMP_KEY).ok_or_else(|| refuse("E_STAMP_MISSING", format!("no {STAMP_KEY}")))?;
    let stamps: BTreeMap<String, String> = serde_json::from_str(fmt)
        .map_err(|e| refuse("E_STAMP_MALFORMED", format!("{STAMP_KEY}: {e}")))?;
    let coded = |f: &str| f == FORMAT_NAME || f == RANS64_NAME;
    // The shared table: only int4-rans256-g0 records need it.
    let table = if stamps.values().any(|f| f == FORMAT_NAME) {
        let table_text = meta
            .get(TABLE_KEY)
            .ok_or_else(|| refuse("E_TABLE_MISSING", format!("no {TABLE_KEY}")))?;
        let parts = table_json::parse(table_text).map_err(|e| refuse(e.class(), e.to_string()))?;
        Some(table_from_parts(&parts).map_err(|e| refuse(e.class(), e.to_string()))?)
    } else {
        None
    };
    for (name, f) in &stamps {
        if coded(f) && shard.header.tensor(name).is_none() {
            return Err(refuse("E_STAMP_DANGLING", format!("{name} is stamped but absent")));
        }
    }
    let mut decoded: Vec<(usize, Vec<u8>, Vec<u64>)> = Vec::new();
    for (k, t) in shard.header.tensors.iter().enumerate() {
        let Some(stamp) = stamps.get(&t.name).map(String::as_str).filter(|f| coded(f)) else {
            continue;
        };
        let tref =
            |class, detail: String| Refusal::new(class, format!("{base} {}: {detail}", t.name));
        if t.dtype != "U8" {
            return Err(tref("E_STAMP_DTYPE", format!("dtype {}, expected U8", t.dtype)));
        }
        let out = if stamp == RANS64_NAME {
            let out = crate::rans64::decode_all(shard.data(t), crate::rans64::default_threads())
                .map_err(|e| tref(e.class, e.detail))?;
            if let Some(want) = originals.and_then(|o| o.get(&t.name)) {
                let got = crate::rans64::hex(&Sha256::digest(&out));
                if &got != want {
                    return Err(tref(
                        "E_ORIGINAL_DIGEST_MISMATCH",
                        format!("decoded sha256 {got}, manifest says the original was {want}"),
                    ));
                }
            }
            out
        } else {
            let table =
                table.as_ref().ok_or_else(|| tref("E_TABLE_MISSING", format!("no {TABLE_KEY}")))?;
            let record =
                Record::parse_format(shard.data(t)).map_err(|e| tref(e.class(), e.to_string()))?;
            let pb = usize::try_from(record.packed_bytes())
                .map_err(|_| tref("E_OVERSIZE", "record too large for this machine".into()))?;
            let mut out = crate::io::try_zeroed(pb).ok_or_else(|| {
                tref(
                    "E_OVERSIZE",
                    format!("decodes to {pb} bytes, more than this machine can allocate"),
                )
            })?;
            decode_record(table, &record, &mut out).map_err(|e| tref(e.class(), e.to_string()))?;
            out
        };
        let pb = out.len();
        let rows = shard
            .header
            .tensor(&format!("{}.qs", t.name))
            .filter(|q| q.dtype == "F32" && q.len() % 4 == 0 && !q.is_empty())
            .map(|q| q.len() / 4);
        let shape = match rows {
            Some(o) if (pb as u64).is_multiple_of(o) => vec![o, pb as u64 / o],
            _ => vec![pb as u64],
        };
        decoded.push((k, out, shape));
    }
    let mut tensors = Vec::with_capacity(shard.header.tensors.len());
    let mut next = decoded.iter().peekable();
    for (k, t) in shard.header.tensors.iter().enumerate() {
        if let Some((_, data, shape)) = next.next_if(|(dk, _, _)| *dk == k) {
            tensors.push(OutTensor { name: &t.name, dtype: "U8", shape, data });
        } else {
            tensors.push(OutTensor {
                name: &t.name,
                dtype: &t.dtype,
                shape: &t.shape,
                data: shard.data(t),
            });
        }
    }
    let mut rest = meta.clone();
    rest.remove(STAMP_KEY);
    rest.remove(TABLE_KEY);
    let bytes = shard_bytes(&rest, &tensors, HeaderStyle::EscapedUnpadded)
        .map_err(|e| refuse("E_INTERNAL", e.0))?;
    Ok((bytes, decoded.len() as u64))
}
