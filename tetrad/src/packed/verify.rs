//! `verify`: the validator of `docs/int4-rans256-g0.md` §6 — TRUST or REFUSE, never crash.
//!
//! For each shard, in order: the header (`E_SHARD_MALFORMED`), the stamps
//! (`E_STAMP_MISSING`, `E_STAMP_MALFORMED`), the table (`E_TABLE_MISSING` and the table
//! classes), the manifest next to the shard if there is one (`E_MANIFEST_MALFORMED`, see
//! [`super::manifest`] for what that covers; `E_DIGEST_MISSING`; `E_SHARD_DIGEST_MISMATCH` for
//! a size or sha256 that differs from the manifest's — after which checking continues); then
//! every tensor stamped `int4-rans256-g0`, in sorted order: present (`E_STAMP_DANGLING`), U8
//! (`E_STAMP_DTYPE`), its record digest (`E_DIGEST_MISSING` / `E_DIGEST_MISMATCH`), the record
//! framing in the validator's order and the checked decode of every stream (their classes),
//! and finally re-encoding the decoded nibbles with the shard's table, which must reproduce
//! the blob byte for byte (`E_REENCODE_MISMATCH`). A panic anywhere is caught and reported as
//! `E_INTERNAL`.
//!
//! Tensors stamped `int4-rans64-t1` (written by `tetrad pack --codec int4-rans64-t1`) are
//! checked in the same pass: present, U8, their blob digest against the manifest's
//! `records`, then the blob decoded (best arm, chunks in parallel, every chunk's seal; see
//! [`crate::rans64::decode_hash`]), its byte count a whole number of rows of its `.qs`
//! (`E_COUNT_MISMATCH`), and the sha256 of the decoded bytes against the manifest's
//! `originals` (`E_DIGEST_MISSING` / `E_ORIGINAL_DIGEST_MISMATCH`). No table is needed (each
//! chunk carries its model), so a shard of only such tensors has no table key. There is no
//! re-encode proof for this format: its seal and the two digests are the check.
//!
//! The manifest checks ([`shard_digests`], [`ShardDigests::check_file`],
//! [`ShardDigests::check_record`], [`check_original`]) are public: `unpack` runs the same ones,
//! so it refuses what `verify` refuses about a shard's integrity, with the same classes.
//!
//! Memory stays bounded by the record, not by what a hostile header claims: a record's
//! decoded size can legally be up to 2^17 times its length (the `E_OVERSIZE` bound), so
//! records that would decode to more than [`FULL_REENCODE_LIMIT`] bytes are decoded in
//! fixed-size chunks and checked without a literal re-encode, reaching the same verdict: the
//! encoder keeps its state in `[L, 2^31)`, and a stream whose initial state lies there and
//! that passes checked decode (consumed exactly, final state `L`) stays in `[L, 2^31)` at every
//! step, where decoding is a bijection — so it is the unique encoder output for its symbols,
//! and the framing around the streams is fully determined by the parse checks. A stream
//! starting in `[2^31, 2^32)` passes checked decode but is never an encoder's output
//! (`E_REENCODE_MISMATCH`). An odd `n_symbols` can never re-encode (2 × packed_bytes nibbles
//! are re-encoded): `E_SYMBOL_UNCODABLE` when `freq[0] == 0`, `E_REENCODE_MISMATCH`
//! otherwise, decided without materialising anything.

use std::collections::BTreeMap;
use std::path::Path;

use sha2::{Digest as _, Sha256};
use tetrad_rans::{Arm, Decoder, ParseOrder, Record, Table, encode_record_packed, max_record_len};

use super::MANIFEST_NAME;
use super::manifest::{Digests, read_manifest};
use crate::error::Class;
use crate::io::map_file;
use crate::meta::{FORMAT_NAME, STAMP_KEY, TABLE_KEY, stamp_map};
use crate::rans64::FORMAT_NAME as RANS64_NAME;
use crate::shard::ShardHeader;
use crate::table_json;
use crate::table_json::table_from_parts;

/// Records that decode to more than this many bytes are checked chunk by chunk (see the
/// module docs).
pub const FULL_REENCODE_LIMIT: u64 = 256 << 20;

/// Chunk size of the bounded-memory decode.
const CHUNK: usize = 1 << 20;

/// One refusal line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refuse {
    /// Shard basename.
    pub shard: String,
    /// Tensor name, if the refusal concerns one.
    pub tensor: Option<String>,
    /// Refusal class.
    pub class: Class,
    /// Detail.
    pub detail: String,
}

impl std::fmt::Display for Refuse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "REFUSE {} {} {}: {}",
            self.shard,
            self.tensor.as_deref().unwrap_or("-"),
            self.class,
            self.detail
        )
    }
}

/// What one shard came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardVerdict {
    /// Shard basename.
    pub shard: String,
    /// Refusals, in detection order.
    pub refusals: Vec<Refuse>,
    /// Stamped tensors checked and trusted.
    pub trusted: u64,
    /// Stamped tensors in the shard.
    pub stamped: u64,
    /// Notes (not errors), e.g. "no manifest".
    pub notes: Vec<String>,
    /// Table CRC, if the table was read.
    pub table_crc32: Option<String>,
}

impl ShardVerdict {
    /// The verdict on a path that named no shard to check (an empty or unreadable
    /// directory): one refusal, nothing verified.
    pub fn refused(path: &Path, class: Class, detail: impl Into<String>) -> Self {
        let shard = path.display().to_string();
        Self {
            refusals: vec![Refuse {
                shard: shard.clone(),
                tensor: None,
                class,
                detail: detail.into(),
            }],
            shard,
            trusted: 0,
            stamped: 0,
            notes: Vec::new(),
            table_crc32: None,
        }
    }

    /// The `[trust] …` summary line.
    pub fn summary(&self) -> String {
        let crc =
            self.table_crc32.as_deref().map(|c| format!(", table crc32 {c}")).unwrap_or_default();
        if self.refusals.is_empty() {
            format!(
                "[trust] {}: TRUST ({}/{} record(s) verified{crc})",
                self.shard, self.trusted, self.stamped
            )
        } else {
            format!(
                "[trust] {}: REFUSE ({} refusal(s); {}/{} record(s) verified{crc})",
                self.shard,
                self.refusals.len(),
                self.trusted,
                self.stamped
            )
        }
    }
}

struct Ctx {
    verdict: ShardVerdict,
}

impl Ctx {
    fn refuse(&mut self, tensor: Option<&str>, class: Class, detail: impl Into<String>) {
        self.verdict.refusals.push(Refuse {
            shard: self.verdict.shard.clone(),
            tensor: tensor.map(str::to_owned),
            class,
            detail: detail.into(),
        });
    }
}

/// Verifies one shard. `max_tensors` caps the stamped tensors checked (in sorted order).
pub fn verify_shard(path: &Path, max_tensors: Option<u64>) -> ShardVerdict {
    let shard = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    let mut ctx = Ctx {
        verdict: ShardVerdict {
            shard,
            refusals: Vec::new(),
            trusted: 0,
            stamped: 0,
            notes: Vec::new(),
            table_crc32: None,
        },
    };
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        verify_into(&mut ctx, path, max_tensors)
    }));
    if outcome.is_err() {
        ctx.refuse(
            None,
            Class::Internal,
            "the validator hit an unexpected condition (please report this file)",
        );
    }
    ctx.verdict
}

fn verify_into(ctx: &mut Ctx, path: &Path, max_tensors: Option<u64>) {
    let bytes = match map_file(path) {
        Ok(b) => b,
        Err(e) => {
            return ctx.refuse(
                None,
                Class::ShardMalformed,
                format!("cannot read {}: {e}", path.display()),
            );
        }
    };
    let header = match ShardHeader::parse(&bytes, bytes.len() as u64) {
        Ok(h) => h,
        Err(e) => return ctx.refuse(None, Class::ShardMalformed, e.to_string()),
    };
    let meta = header.metadata.clone().unwrap_or_default();
    let Some(fmt_text) = meta.get(STAMP_KEY) else {
        let hint = if crate::cfse::is_cfse(&header) {
            ": this is a CFS1 container ({\"cfse\":\"1\"}), which `tetrad cfs1 check` verifies"
        } else {
            ""
        };
        return ctx.refuse(
            None,
            Class::StampMissing,
            format!("no {STAMP_KEY} in __metadata__{hint}"),
        );
    };
    let stamps = match stamp_map(fmt_text) {
        Ok(s) => s,
        Err((class, why)) => return ctx.refuse(None, class, why),
    };
    let stamped: Vec<(&String, bool)> = stamps
        .iter()
        .filter_map(|(n, f)| match f.as_str() {
            FORMAT_NAME => Some((n, false)),
            RANS64_NAME => Some((n, true)),
            _ => None,
        })
        .collect();
    if stamped.is_empty() {
        // Say what the stamps do name: a quantized (dense) container is checked elsewhere.
        let mut named: BTreeMap<&str, usize> = BTreeMap::new();
        for f in stamps.values() {
            *named.entry(f.as_str()).or_default() += 1;
        }
        let hint = if named.is_empty() {
            String::new()
        } else {
            let list: Vec<String> = named.iter().map(|(f, n)| format!("{n} {f}")).collect();
            format!(
                " (its stamps name {}: `tetrad inspect` checks dense stamps against their bytes)",
                list.join(", ")
            )
        };
        return ctx.refuse(
            None,
            Class::StampMissing,
            format!("no tensor is stamped {FORMAT_NAME:?} or {RANS64_NAME:?}{hint}"),
        );
    }
    // The shared table: needed (and checked) only for int4-rans256-g0 records.
    let table = if stamped.iter().any(|&(_, r64)| !r64) {
        let Some(table_text) = meta.get(TABLE_KEY) else {
            return ctx.refuse(
                None,
                Class::TableMissing,
                format!("no {TABLE_KEY} in __metadata__"),
            );
        };
        let parts = match table_json::parse(table_text) {
            Ok(p) => p,
            Err(e) => return ctx.refuse(None, Class::of(&e), e.to_string()),
        };
        ctx.verdict.table_crc32 =
            Some(format!("{:08x}", crc32fast::hash(&table_json::slot_bytes(&parts.slots))));
        match table_from_parts(&parts) {
            Ok(t) => Some(t),
            Err(e) => return ctx.refuse(None, Class::of(&e), e.to_string()),
        }
    } else {
        None
    };

    // The manifest next to the shard, if any.
    let manifest = match read_manifest(path.parent().unwrap_or(Path::new(""))) {
        Ok(m) => m,
        Err(why) => return ctx.refuse(None, Class::ManifestMalformed, why),
    };
    let digests = match &manifest {
        None => {
            ctx.verdict
                .notes
                .push(format!("note: no {MANIFEST_NAME} next to the shard: digests not checked"));
            None
        }
        Some(m) => match shard_digests(m, &ctx.verdict.shard) {
            Ok(d) => {
                if let Err((class, why)) = d.check_file(&bytes) {
                    ctx.refuse(None, class, why);
                }
                Some(d)
            }
            Err((class, why)) => return ctx.refuse(None, class, why),
        },
    };

    ctx.verdict.stamped = stamped.len() as u64;
    let limit = max_tensors.unwrap_or(u64::MAX);
    for (k, (name, is_rans64)) in stamped.into_iter().enumerate() {
        if k as u64 >= limit {
            ctx.verdict.notes.push(format!(
                "note: --max-tensors {limit}: {} stamped tensor(s) not checked",
                ctx.verdict.stamped - limit
            ));
            break;
        }
        let Some(entry) = header.tensor(name) else {
            ctx.refuse(Some(name), Class::StampDangling, "stamped but absent from the shard");
            continue;
        };
        if entry.dtype != "U8" {
            ctx.refuse(
                Some(name),
                Class::StampDtype,
                format!("dtype {}, expected U8", entry.dtype),
            );
            continue;
        }
        let at = usize::try_from(header.data_start + entry.begin).expect("inside the mapped file");
        let blob = &bytes[at..at + usize::try_from(entry.len()).expect("inside the mapped file")];
        if let Some(d) = &digests
            && let Err((class, why)) = d.check_record(name, blob)
        {
            ctx.refuse(Some(name), class, why);
            continue;
        }
        let verdict = if is_rans64 {
            let rows = header
                .tensor(&format!("{name}.qs"))
                .filter(|q| q.dtype == "F32" && q.len() % 4 == 0 && !q.is_empty())
                .map(|q| q.len() / 4);
            let want = digests.as_ref().map(|d| d.original(name));
            check_rans64(blob, rows, want)
        } else {
            match &table {
                Some(table) => check_record(table, blob),
                None => Err((Class::TableMissing, format!("no {TABLE_KEY} in __metadata__"))),
            }
        };
        match verdict {
            Ok(()) => ctx.verdict.trusted += 1,
            Err((class, detail)) => ctx.refuse(Some(name), class, detail),
        }
    }
}

/// What the manifest says about one shard file (see [`shard_digests`]).
#[derive(Debug, Clone, Copy)]
pub struct ShardDigests<'a> {
    /// sha256 hex of the whole file.
    pub sha256: &'a str,
    /// The file's size in bytes, when the manifest records it.
    pub bytes: Option<u64>,
    /// Tensor → sha256 hex of its record bytes.
    pub records: &'a BTreeMap<String, String>,
    /// Tensor → sha256 hex of its original int4-row bytes (`int4-rans64-t1`).
    pub originals: Option<&'a BTreeMap<String, String>>,
}

/// The manifest's entry for the shard file named `shard`: `E_DIGEST_MISSING` when the manifest
/// has no entry for it, or an entry without a sha256.
pub fn shard_digests<'a>(m: &'a Digests, shard: &str) -> Result<ShardDigests<'a>, (Class, String)> {
    let Some((sha, records)) = m.shards.get(shard) else {
        return Err((Class::DigestMissing, format!("{MANIFEST_NAME} has no entry for this shard")));
    };
    let Some(sha256) = sha else {
        return Err((
            Class::DigestMissing,
            format!("{MANIFEST_NAME} has no sha256 for this shard"),
        ));
    };
    Ok(ShardDigests {
        sha256,
        bytes: m.sizes.get(shard).copied(),
        records,
        originals: m.originals.get(shard),
    })
}

impl<'a> ShardDigests<'a> {
    /// The whole file against the manifest's sha256 (`E_SHARD_DIGEST_MISMATCH`), as the spec's
    /// validator compares it. The recorded size only explains a mismatch ("the file is N
    /// bytes, the manifest says M"): a wrong `bytes` beside a matching sha256 is not refused,
    /// since the spec's validator would trust that shard.
    pub fn check_file(&self, file: &[u8]) -> Result<(), (Class, String)> {
        let got = format!("{:x}", Sha256::digest(file));
        if got == self.sha256 {
            return Ok(());
        }
        let size = match self.bytes {
            Some(want) if want != file.len() as u64 => {
                format!("; the file is {} bytes, manifest says {want}", file.len())
            }
            _ => String::new(),
        };
        Err((
            Class::ShardDigestMismatch,
            format!("file sha256 {got}, manifest says {}{size}", self.sha256),
        ))
    }

    /// One record's bytes against the manifest: `E_DIGEST_MISSING` when it has no digest for
    /// `tensor`, `E_DIGEST_MISMATCH` when the sha256 differs.
    pub fn check_record(&self, tensor: &str, blob: &[u8]) -> Result<(), (Class, String)> {
        let Some(want) = self.records.get(tensor) else {
            return Err((
                Class::DigestMissing,
                format!("{MANIFEST_NAME} has no digest for this record"),
            ));
        };
        let got = format!("{:x}", Sha256::digest(blob));
        if &got != want {
            return Err((
                Class::DigestMismatch,
                format!("record sha256 {got}, manifest says {want}"),
            ));
        }
        Ok(())
    }

    /// The sha256 hex of `tensor`'s original bytes, if the manifest records it.
    pub fn original(&self, tensor: &str) -> Option<&'a String> {
        self.originals.and_then(|o| o.get(tensor))
    }
}

/// The sha256 of a tensor's decoded bytes against the manifest's digest of the original:
/// `E_DIGEST_MISSING` when there is none (`want` is `None`), `E_ORIGINAL_DIGEST_MISMATCH` when
/// they differ.
pub fn check_original(
    digest: &sha2::digest::Output<Sha256>,
    want: Option<&String>,
) -> Result<(), (Class, String)> {
    let Some(want) = want else {
        return Err((
            Class::DigestMissing,
            format!("{MANIFEST_NAME} has no digest of this tensor's original bytes"),
        ));
    };
    let got = format!("{digest:x}");
    if &got == want {
        Ok(())
    } else {
        Err((
            Class::OriginalDigestMismatch,
            format!("decoded sha256 {got}, manifest says the original was {want}"),
        ))
    }
}

/// Checks one `int4-rans64-t1` blob: decode (every seal), a whole number of `rows` rows when
/// the row count is known, and — with a manifest (`want` is `Some`) — the sha256 of the
/// decoded bytes against the manifest's digest of the original.
pub fn check_rans64(
    blob: &[u8],
    rows: Option<u64>,
    want: Option<Option<&String>>,
) -> Result<(), (Class, String)> {
    let (n, digest) = crate::rans64::decode_hash(blob, crate::rans64::default_threads())
        .map_err(|e| (Class::of(&e), e.to_string()))?;
    if let Some(o) = rows
        && !n.is_multiple_of(o)
    {
        return Err((
            Class::CountMismatch,
            format!("blob decodes to {n} bytes, not a whole number of rows for {o} scales"),
        ));
    }
    match want {
        None => Ok(()),
        Some(want) => check_original(&digest.into(), want),
    }
}

/// Parse, checked decode, and the re-encode proof of one record.
pub fn check_record(table: &Table, blob: &[u8]) -> Result<(), (Class, String)> {
    check_record_with_limit(table, blob, FULL_REENCODE_LIMIT)
}

/// [`check_record`] re-encoding literally only records that decode to at most `limit` bytes.
pub fn check_record_with_limit(
    table: &Table,
    blob: &[u8],
    limit: u64,
) -> Result<(), (Class, String)> {
    let record =
        Record::parse_streams_in_order(blob, tetrad_rans::FORMAT_STREAMS, ParseOrder::Validator)
            .map_err(|e| (Class::of(&e), e.to_string()))?;
    let pb = record.packed_bytes();
    let mut dec =
        Decoder::new(Arm::best(), table, record).map_err(|e| (Class::of(&e), e.to_string()))?;
    if pb <= limit {
        let mut out = vec![
            0u8;
            usize::try_from(pb)
                .map_err(|_| (Class::Internal, "record too large".to_owned()))?
        ];
        dec.decode_next(&mut out).map_err(|e| (Class::of(&e), e.to_string()))?;
        dec.finish().map_err(|e| (Class::of(&e), e.to_string()))?;
        let mut again = vec![0u8; max_record_len(out.len() * 2, tetrad_rans::FORMAT_STREAMS)];
        let len = encode_record_packed(table, &out, &mut again)
            .map_err(|e| (Class::of(&e), format!("re-encoding the decoded nibbles: {e}")))?;
        if again[..len] != *blob {
            return Err((
                Class::ReencodeMismatch,
                format!(
                    "re-encoding the {} decoded nibbles gives a different {len}-byte record (the blob has {} bytes{})",
                    2 * pb,
                    blob.len(),
                    if record.n_symbols() % 2 == 1 { "; n_symbols is odd" } else { "" }
                ),
            ));
        }
        return Ok(());
    }
    let mut buf = vec![0u8; CHUNK];
    let mut left = pb;
    while left > 0 {
        let n = usize::try_from(left.min(CHUNK as u64)).expect("≤ CHUNK");
        dec.decode_next(&mut buf[..n]).map_err(|e| (Class::of(&e), e.to_string()))?;
        left -= n as u64;
    }
    dec.finish().map_err(|e| (Class::of(&e), e.to_string()))?;
    if record.n_symbols() % 2 == 1 {
        return Err(if table.freq()[0] == 0 {
            (Class::SymbolUncodable, "n_symbols is odd: re-encoding 2 × packed_bytes nibbles needs symbol 0, which the table cannot code".to_owned())
        } else {
            (
                Class::ReencodeMismatch,
                "n_symbols is odd: re-encoding 2 × packed_bytes nibbles cannot give this record"
                    .to_owned(),
            )
        });
    }
    for k in 0..record.n_streams() {
        let st = record.stream(k);
        let x0 = u32::from_be_bytes([st[0], st[1], st[2], st[3]]);
        if x0 >= 1 << 31 {
            return Err((
                Class::ReencodeMismatch,
                format!("stream {k} starts in state {x0:#x} ≥ 2^31, which no encoder writes"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tetrad_rans::{Nibbles, encode_record};

    fn record(table: &Table, nibbles: &[u8]) -> Vec<u8> {
        let mut blob = vec![0u8; max_record_len(nibbles.len(), 256)];
        let n = encode_record(table, Nibbles::Unpacked(nibbles), 256, &mut blob).unwrap();
        blob.truncate(n);
        blob
    }

    /// The chunked path (no literal re-encode) reaches the literal path's verdict.
    #[test]
    fn chunked_and_literal_paths_agree() {
        let mut h = [0u64; 16];
        h[7] = 3;
        h[8] = 10;
        h[9] = 3;
        h[1] = 1;
        let table = Table::from_histogram(14, &h).unwrap();
        let nib =
            |n: usize| -> Vec<u8> { (0..n).map(|k| [8u8, 7, 8, 9, 8, 1][k * 7 % 6]).collect() };
        let mut blobs =
            vec![record(&table, &nib(5000)), record(&table, &nib(4999)), record(&table, &nib(512))];
        let good = blobs[0].clone();
        for k in (1056..good.len()).step_by(31) {
            let mut b = good.clone();
            b[k] ^= 0x81;
            blobs.push(b);
        }
        let mut high = good.clone();
        high[1056] |= 0x80; // stream 0's initial state ≥ 2^31
        blobs.push(high);
        let mut verdicts = BTreeMap::new();
        for b in &blobs {
            let literal = check_record_with_limit(&table, b, u64::MAX).map_err(|e| e.0);
            let chunked = check_record_with_limit(&table, b, 0).map_err(|e| e.0);
            assert_eq!(literal, chunked);
            *verdicts.entry(format!("{literal:?}")).or_insert(0) += 1;
        }
        assert_eq!(check_record(&table, &blobs[0]), Ok(()));
        assert_eq!(check_record(&table, &blobs[1]).unwrap_err().0, Class::SymbolUncodable);
        assert!(verdicts.len() >= 3, "{verdicts:?}");
    }
}
