//! `unpack`: `int4-rans256-g0` shards back to int4-row shards, byte-exact.
//!
//! Every stamped record is decoded with checked decode (every stream's seal) against the
//! shard's own table; the weight comes back as `U8 [O, ceil(I/2)]` when the row count `O` is
//! known from its `X.qs` (F32, one scale per row) and divides the byte count, else as a 1-D
//! `U8` tensor; `.qs` and any other tensor are copied unchanged, in the shard's order; the
//! stamps and the table are removed from the metadata.
//!
//! Tensors stamped `int4-rans64-t1` are decoded the same way (their blob carries its own
//! models, so no table is needed; best arm, all cores, every chunk's seal checked).
//!
//! What is unpacked, and under which names: the set [`super::set::read_set`] reads — the
//! `out-rans-*.safetensors` entries of the input directory and every file
//! `repack-manifest.json` lists. A set that is not provably whole is refused as `verify DIR`
//! refuses it (`E_SHARD_MISSING`, `E_SHARD_UNLISTED`, and `E_MANIFEST_MISSING` unless
//! [`UnpackOptions::without_manifest`]); each shard must be a regular file
//! (`E_SHARD_MALFORMED` for a directory). With a manifest, every shard is held to it as `verify` holds it, by the same
//! code ([`super::verify::shard_digests`] and its checks), after the header, stamps and table:
//! an entry with a sha256 (`E_DIGEST_MISSING`), the file's sha256
//! (`E_SHARD_DIGEST_MISMATCH`), each record's digest (`E_DIGEST_MISMATCH`) and, for
//! `int4-rans64-t1`, the sha256 of the decoded bytes against `originals`
//! (`E_ORIGINAL_DIGEST_MISMATCH`). A digest the manifest lacks (`E_DIGEST_MISSING` for a
//! tensor) is refused after the shard's other tensors were checked, so that damage is named
//! first. The manifest itself is read by the same code as `verify`'s (`E_MANIFEST_MALFORMED`),
//! and unpack also refuses a source that is not a plain file name and two shards restoring to
//! one name (`Digests::check_restore_names`). Output shards take the name of the input shard
//! they came from (`source`), else keep their own name.
//!
//! All or nothing: every output name is checked first (`E_OUTPUT_EXISTS` without `--force`,
//! `E_OUTPUT_IS_DIR`, `E_OUTPUT_IS_INPUT` even with it: [`crate::io::check_output`]); then every
//! shard is checked, decoded and staged in the output directory ([`crate::output`]); only when
//! all succeeded are they renamed into place. On any refusal the staged files are deleted and
//! existing outputs are untouched (an output directory this run created is removed again).
//! An existing shard that holds tensors its restored version lacks is never replaced, even
//! with `--force` (`E_OUTPUT_FULLER`): that is the original checkpoint, and pack left those
//! tensors out.

use std::path::{Path, PathBuf};

use tetrad_rans::{Record, decode_record};

use sha2::{Digest as _, Sha256};

use super::MANIFEST_NAME;
use super::manifest::Digests;
use super::set::read_set;
use super::verify::{check_original, shard_digests};
use crate::error::{Class, Refusal};
use crate::io::check_output;
use crate::meta::{FORMAT_NAME, STAMP_KEY, TABLE_KEY, stamp_map};
use crate::output::Outputs;
use crate::rans64::FORMAT_NAME as RANS64_NAME;
use crate::shard::{HeaderStyle, OutTensor, shard_bytes};
use crate::shardset::Shard;
use crate::table_json;
use crate::table_json::table_from_parts;

/// What `unpack` wrote: (input shard, output shard, records decoded, bytes written).
pub type UnpackReport = Vec<(String, String, u64, u64)>;

/// How to unpack.
#[derive(Debug, Clone, Default)]
pub struct UnpackOptions {
    /// Replace existing output files.
    pub force: bool,
    /// Unpack the shards present although no manifest proves the set whole
    /// (`E_MANIFEST_MISSING` otherwise).
    pub without_manifest: bool,
    /// No progress bar.
    pub quiet: bool,
}

/// Unpacks every shard of `indir` (see the module docs) into `outdir`, all or nothing.
pub fn unpack(indir: &Path, outdir: &Path, opts: &UnpackOptions) -> Result<UnpackReport, Refusal> {
    match std::fs::metadata(indir) {
        Err(e) => return Err(Refusal::new(Class::Io, format!("{}: {e}", indir.display()))),
        Ok(m) if !m.is_dir() => {
            return Err(Refusal::new(
                Class::Io,
                format!(
                    "{}: not a directory (--indir is the directory `tetrad pack` wrote)",
                    indir.display()
                ),
            ));
        }
        Ok(_) => {}
    }
    let set = read_set(indir)?;
    if let Some(first) =
        set.refusals.iter().find(|r| !(opts.without_manifest && r.class == Class::ManifestMissing))
    {
        return Err(first.clone());
    }
    let manifest = set.manifest;
    let names = set.shards;
    check_shard_files(indir, &names)?;
    if names.is_empty() {
        return Err(Refusal::new(
            Class::NoInput,
            format!("no out-rans-*.safetensors shards in {}", indir.display()),
        ));
    }
    let mut inputs: Vec<PathBuf> = names.iter().map(|n| indir.join(n)).collect();
    if manifest.is_some() {
        inputs.push(indir.join(MANIFEST_NAME));
    }
    crate::io::check_output_dir(outdir)?;
    // (input shard, output name, output path)
    let mut plan = Vec::with_capacity(names.len());
    for base in names {
        let out_name = manifest.as_ref().map_or(base.as_str(), |m| m.output_name(&base)).to_owned();
        let out = outdir.join(&out_name);
        check_output(&out, &inputs, opts.force)?;
        plan.push((base, out_name, out));
    }
    let total: u64 = inputs.iter().filter_map(|p| std::fs::metadata(p).ok()).map(|m| m.len()).sum();
    let bar = crate::progress::bytes(total, "unpack", opts.quiet);
    let mut outputs = Outputs::new();
    outputs
        .create_dir(outdir)
        .map_err(|e| Refusal::new(Class::Io, format!("{}: {e}", outdir.display())))?;
    let mut report = Vec::with_capacity(plan.len());
    for (base, out_name, out) in plan {
        // On a refusal, `outputs` is dropped: its temporary files go, and so does an output
        // folder this run created.
        let input = indir.join(&base);
        let (bytes, records) = unpack_shard_checked(&input, manifest.as_ref())?;
        keeps_what_it_replaces(&out, &bytes)?;
        outputs
            .stage(&out, |w| w.write_all(&bytes))
            .map_err(|e| Refusal::new(Class::Io, e.to_string()))?;
        bar.inc(std::fs::metadata(&input).map_or(0, |m| m.len()));
        report.push((base, out_name, records, bytes.len() as u64));
    }
    outputs.commit().map_err(|e| Refusal::new(Class::Io, e.to_string()))?;
    bar.finish_and_clear();
    Ok(report)
}

/// Refuses to replace an existing safetensors file that holds tensors the restored shard
/// `bytes` lacks (`E_OUTPUT_FULLER`): `pack` writes only the weights it selected and their
/// scales, so unpacking over the original checkpoint with `--force` would drop every tensor
/// pack left out. A file that is not a readable shard is replaced as `--force` says.
fn keeps_what_it_replaces(out: &Path, bytes: &[u8]) -> Result<(), Refusal> {
    let Ok(existing) = Shard::open(out) else { return Ok(()) };
    let Ok(restored) = crate::shard::ShardHeader::parse(bytes, bytes.len() as u64) else {
        return Ok(());
    };
    let lost: Vec<&str> = existing
        .header
        .tensors
        .iter()
        .map(|t| t.name.as_str())
        .filter(|n| restored.tensor(n).is_none())
        .collect();
    let Some(first) = lost.first() else { return Ok(()) };
    Err(Refusal::new(
        Class::OutputFuller,
        format!(
            "{} holds {} tensor(s) the packed set does not carry (pack left them out), e.g. \
             {first}: replacing it would lose them; unpack into another folder",
            out.display(),
            lost.len()
        ),
    ))
}

/// Each shard to unpack must be a regular file (or a link to one): `E_SHARD_MALFORMED` names
/// one that is a directory or cannot be read.
fn check_shard_files(indir: &Path, names: &[String]) -> Result<(), Refusal> {
    for name in names {
        let path = indir.join(name);
        let why = match std::fs::metadata(&path) {
            Ok(md) if md.is_file() => continue,
            Ok(md) if md.is_dir() => "is a directory, not a shard file".to_owned(),
            Ok(_) => "is not a regular file".to_owned(),
            Err(e) => format!("cannot be read: {e}"),
        };
        return Err(Refusal::new(Class::ShardMalformed, format!("{}: {why}", path.display())));
    }
    Ok(())
}

/// The int4-row shard bytes of one `int4-rans256-g0` (or `int4-rans64-t1`) shard, and the
/// number of records decoded. No manifest is consulted.
pub fn unpack_shard(path: &Path) -> Result<(Vec<u8>, u64), Refusal> {
    unpack_shard_checked(path, None)
}

/// [`unpack_shard`], holding the shard to `manifest` (the digests of the manifest next to it)
/// when given, as `verify` does: the shard's entry, its sha256, each record's digest
/// and each `int4-rans64-t1` tensor's decoded bytes against `originals` (see the module docs).
pub fn unpack_shard_checked(
    path: &Path,
    manifest: Option<&Digests>,
) -> Result<(Vec<u8>, u64), Refusal> {
    let shard = Shard::open(path)?;
    let base = shard.basename();
    let meta = shard.header.metadata.clone().unwrap_or_default();
    let refuse = |class, detail: String| Refusal::new(class, format!("{base}: {detail}"));
    let fmt = meta
        .get(STAMP_KEY)
        .ok_or_else(|| refuse(Class::StampMissing, format!("no {STAMP_KEY}")))?;
    let stamps = stamp_map(fmt).map_err(|(class, why)| refuse(class, why))?;
    let coded = |f: &str| f == FORMAT_NAME || f == RANS64_NAME;
    // The shared table: only int4-rans256-g0 records need it.
    let table = if stamps.values().any(|f| f == FORMAT_NAME) {
        let table_text = meta
            .get(TABLE_KEY)
            .ok_or_else(|| refuse(Class::TableMissing, format!("no {TABLE_KEY}")))?;
        let parts =
            table_json::parse(table_text).map_err(|e| refuse(Class::of(&e), e.to_string()))?;
        Some(table_from_parts(&parts).map_err(|e| refuse(Class::of(&e), e.to_string()))?)
    } else {
        None
    };
    // The manifest's word on this shard, checked where verify checks it: after the table.
    let digests = manifest
        .map(|m| shard_digests(m, &base))
        .transpose()
        .map_err(|(class, why)| refuse(class, why))?;
    if let Some(d) = &digests {
        d.check_file(&shard.bytes).map_err(|(class, why)| refuse(class, why))?;
    }
    for (name, f) in &stamps {
        if coded(f) && shard.header.tensor(name).is_none() {
            return Err(refuse(Class::StampDangling, format!("{name} is stamped but absent")));
        }
    }
    // A tensor whose digest the manifest lacks: refused once every other tensor was checked,
    // so that a digest that differs (damage) is named first.
    let mut missing: Option<Refusal> = None;
    let mut decoded: Vec<(usize, Vec<u8>, Vec<u64>)> = Vec::new();
    for (k, t) in shard.header.tensors.iter().enumerate() {
        let Some(stamp) = stamps.get(&t.name).map(String::as_str).filter(|f| coded(f)) else {
            continue;
        };
        let tref =
            |class, detail: String| Refusal::new(class, format!("{base} {}: {detail}", t.name));
        if t.dtype != "U8" {
            return Err(tref(Class::StampDtype, format!("dtype {}, expected U8", t.dtype)));
        }
        let mut check = |r: Result<(), (Class, String)>| match r {
            Ok(()) => Ok(()),
            Err((Class::DigestMissing, why)) => {
                missing.get_or_insert_with(|| tref(Class::DigestMissing, why));
                Ok(())
            }
            Err((class, why)) => Err(tref(class, why)),
        };
        if let Some(d) = &digests {
            check(d.check_record(&t.name, shard.data(t)))?;
        }
        let out = if stamp == RANS64_NAME {
            let out = crate::rans64::decode_all(shard.data(t), crate::rans64::default_threads())
                .map_err(|e| tref(e.class, e.detail))?;
            if let Some(d) = &digests {
                check(check_original(&Sha256::digest(&out), d.original(&t.name)))?;
            }
            out
        } else {
            let table = table
                .as_ref()
                .ok_or_else(|| tref(Class::TableMissing, format!("no {TABLE_KEY}")))?;
            let record =
                Record::parse(shard.data(t)).map_err(|e| tref(Class::of(&e), e.to_string()))?;
            let pb = usize::try_from(record.packed_bytes())
                .map_err(|_| tref(Class::Oversize, "record too large for this machine".into()))?;
            let mut out = crate::io::try_zeroed(pb).ok_or_else(|| {
                tref(
                    Class::Oversize,
                    format!("decodes to {pb} bytes, more than this machine can allocate"),
                )
            })?;
            decode_record(table, &record, &mut out)
                .map_err(|e| tref(Class::of(&e), e.to_string()))?;
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
    if let Some(r) = missing {
        return Err(r);
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
        .map_err(|e| refuse(Class::Internal, e.to_string()))?;
    Ok((bytes, decoded.len() as u64))
}
