//! [`Container`]: the library entry point for engines — open a checkpoint (one shard or a
//! directory of shards), ask for a tensor by name with the `[O, I]` the model config gives,
//! and get a typed view whose format was decided by TRUST-VERIFY-REFUSE.
//!
//! Opening ingests every shard's `colibri.fmt` stamps with the container rules (a tensor
//! stamped two different ways anywhere is refused, naming both claims; agreeing duplicates
//! collapse; at most 4096 names). [`Container::tensor`] dispatches on the stamp first: a
//! tensor stamped `int4-rans256-g0` is parsed as a record (with its shard's table) and nothing
//! else; any other tensor goes through byte-arithmetic inference (`tetrad_quant::resolve`),
//! with its stamp, if any, verified against the bytes. An unstamped U8 tensor is never
//! presumed entropy-coded.
//!
//! CFS1 (`cfse_pack`) shards — `{"cfse": "1"}` metadata, every tensor one CFS1 blob — open
//! too, through the CFS1 container checks (`cfse::check_blobs`: blobs in bounds and not
//! overlapping, each blob's header valid with `rawlen` equal to its declared size) instead of
//! the strict size check a plain shard gets. A tensor of such a shard is resolved by byte
//! arithmetic on its declared (decoded) size; an int4-row weight becomes
//! [`TensorView::Cfs1Int4Row`] (its `.qs` scales decoded, checked, when the view is made;
//! the weights decoded tile by tile by whoever multiplies). Other formats in a CFS1 container
//! are refused by name (`E_CFS1_FORMAT`): unpack the container first.
//!
//! A tensor stamped `int4-rans64-t1` (tetrad's own format, `tetrad pack --codec
//! int4-rans64-t1`) is dispatched on its stamp the same way: it must be U8 with `O` F32-like
//! scales, its blob's header and chunk index must parse, and it must decode to exactly
//! `O · ceil(I/2)` bytes; it becomes [`TensorView::Rans64`], never a dense view.

use std::path::Path;

use tetrad_quant::format::ScaleElem;
use tetrad_quant::stamp::StampSet;
use tetrad_quant::{Format, Resolved, resolve};
use tetrad_rans::{Record, Table, decode_record};

use crate::error::{Class, Refusal};
use crate::meta::{FORMAT_NAME, STAMP_KEY, TABLE_KEY};
use crate::shard::ShardHeader;
use crate::shardset::{Loc, Shard, ShardSet, shards_of};
use crate::table_json;
use crate::table_json::table_from_parts;

/// An opened checkpoint.
#[derive(Debug)]
pub struct Container {
    set: ShardSet,
    stamps: StampSet,
}

/// Scales of a tensor as stored (`X.qs`), with their dtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoredScales<'a> {
    /// dtype string (`F32`, `BF16`, `F16`, or `U8` for UE8M0).
    pub dtype: &'a str,
    /// Raw bytes.
    pub bytes: &'a [u8],
}

impl StoredScales<'_> {
    /// The scale bytes as the resolver counts them: f32 bytes after widening, raw for U8.
    pub fn resolve_bytes(&self) -> u64 {
        match self.dtype {
            "BF16" | "F16" => 2 * self.bytes.len() as u64,
            _ => self.bytes.len() as u64,
        }
    }

    /// The scales widened to f32 (`None` for U8 UE8M0 scales or an unknown dtype).
    pub fn to_f32(&self) -> Option<Vec<f32>> {
        match self.dtype {
            "F32" => Some(
                self.bytes
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
            ),
            "BF16" => Some(
                self.bytes
                    .chunks_exact(2)
                    .map(|c| f32::from_bits(u32::from(u16::from_le_bytes([c[0], c[1]])) << 16))
                    .collect(),
            ),
            "F16" => Some(
                self.bytes
                    .chunks_exact(2)
                    .map(|c| f16_to_f32(u16::from_le_bytes([c[0], c[1]])))
                    .collect(),
            ),
            _ => None,
        }
    }
}

/// IEEE half → single, exact (every f16 is an f32).
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from((h >> 10) & 0x1F);
    let man = u32::from(h & 0x3FF);
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: m · 2^-24, exact in f32.
            let v = m as f32 * f32::from_bits(0x3380_0000); // 2^-24
            return if sign != 0 { -v } else { v };
        }
        (31, 0) => sign | 0x7F80_0000,
        (31, m) => sign | 0x7FC0_0000 | (m << 13),
        (e, m) => sign | ((e + 112) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

/// A tensor whose format has been decided.
#[derive(Debug)]
pub enum TensorView<'a> {
    /// A dense registry format: weights and scales as stored.
    Dense {
        /// The resolved format (and group size).
        resolved: Resolved,
        /// Weight bytes.
        weights: &'a [u8],
        /// Scales (`X.qs`), if the tensor has them.
        scales: Option<StoredScales<'a>>,
        /// Rows.
        o: u64,
        /// Columns.
        i: u64,
    },
    /// An `int4-rans256-g0` record: decodes losslessly to int4-row bytes.
    Rans256 {
        /// The parsed record.
        record: Record<'a>,
        /// Its shard's table.
        table: Box<Table>,
        /// Per-row scales (as int4-row).
        scales: StoredScales<'a>,
        /// Rows.
        o: u64,
        /// Columns.
        i: u64,
    },
    /// An `int4-rans64-t1` blob: decodes losslessly to int4-row bytes.
    Rans64 {
        /// The blob (header and chunk index checked; `n_bytes == O · ceil(I/2)`).
        blob: tetrad_rans::rans64::Blob<'a>,
        /// Per-row scales (as int4-row).
        scales: StoredScales<'a>,
        /// Rows.
        o: u64,
        /// Columns.
        i: u64,
    },
    /// An int4-row weight stored as one CFS1 blob (a `cfse_pack` container): decodes
    /// losslessly to the int4-row bytes.
    Cfs1Int4Row {
        /// The blob (header checked).
        blob: &'a [u8],
        /// Per-row scales, decoded from the `.qs` blob and widened to f32.
        scales: Vec<f32>,
        /// Rows.
        o: u64,
        /// Columns.
        i: u64,
    },
}

impl TensorView<'_> {
    /// The format of the view (for a CFS1 blob: the format it decodes to, int4-row).
    pub fn format(&self) -> Format {
        match self {
            Self::Dense { resolved, .. } => resolved.format,
            Self::Rans256 { .. } => Format::Int4Rans256G0,
            Self::Rans64 { .. } => Format::Int4Rans64T1,
            Self::Cfs1Int4Row { .. } => Format::Int4Row,
        }
    }

    /// `[O, I]`, as the caller asked for it.
    pub fn shape(&self) -> (u64, u64) {
        match self {
            Self::Dense { o, i, .. }
            | Self::Rans256 { o, i, .. }
            | Self::Rans64 { o, i, .. }
            | Self::Cfs1Int4Row { o, i, .. } => (*o, *i),
        }
    }

    /// Bytes [`decode_into`](Self::decode_into) writes: the dense weight bytes (int4-row bytes
    /// for a record).
    pub fn decoded_len(&self) -> u64 {
        match self {
            Self::Dense { weights, .. } => weights.len() as u64,
            Self::Rans256 { record, .. } => record.packed_bytes(),
            Self::Rans64 { blob, .. } => blob.n_bytes(),
            Self::Cfs1Int4Row { o, i, .. } => o * i.div_ceil(2),
        }
    }

    /// Writes the dense weight bytes into `out` (exactly [`decoded_len`](Self::decoded_len)
    /// bytes): a copy for dense formats, a checked decode for records.
    pub fn decode_into(&self, out: &mut [u8]) -> Result<(), Refusal> {
        if out.len() as u64 != self.decoded_len() {
            return Err(Refusal::new(
                Class::OutputLen,
                format!("output holds {} bytes, expected {}", out.len(), self.decoded_len()),
            ));
        }
        match self {
            Self::Dense { weights, .. } => out.copy_from_slice(weights),
            Self::Rans256 { record, table, .. } => {
                decode_record(table, record, out).map_err(|e| Refusal::of(&e, e.to_string()))?;
            }
            Self::Rans64 { blob, .. } => {
                tetrad_rans::rans64::decode_threads(
                    blob.bytes(),
                    out,
                    crate::rans64::default_threads(),
                )
                .map_err(|e| Refusal::of(&e, e.to_string()))?;
            }
            Self::Cfs1Int4Row { blob, .. } => {
                tetrad_fse::decode_into(blob, out).map_err(|e| Refusal::of(&e, e.to_string()))?;
            }
        }
        Ok(())
    }
}

impl Container {
    /// Opens a shard file or every `*.safetensors` of a directory (plain shards with the
    /// strict reader checks, CFS1 shards with the CFS1 container checks).
    pub fn open(path: &Path) -> Result<Self, Refusal> {
        let paths = shards_of(path)?;
        let shards = paths.iter().map(|p| open_shard(p)).collect::<Result<Vec<_>, _>>()?;
        let mut index = std::collections::BTreeMap::new();
        for (si, s) in shards.iter().enumerate() {
            for (ei, t) in s.header.tensors.iter().enumerate() {
                index.insert(t.name.clone(), Loc { shard: si, entry: ei });
            }
        }
        let set = ShardSet { shards, index };
        let mut stamps = StampSet::new();
        for s in &set.shards {
            let value =
                s.header.metadata.as_ref().and_then(|m| m.get(STAMP_KEY)).map(String::as_str);
            stamps.ingest(&s.basename(), value).map_err(|e| Refusal::of(&e, e.to_string()))?;
        }
        Ok(Self { set, stamps })
    }

    /// The shards and their index.
    pub fn shards(&self) -> &ShardSet {
        &self.set
    }

    /// The container's stamps.
    pub fn stamps(&self) -> &StampSet {
        &self.stamps
    }

    /// Tensor names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.set.index.keys().map(String::as_str)
    }

    fn scales(&self, name: &str) -> Option<StoredScales<'_>> {
        let (loc, e) = self.set.get(&format!("{name}.qs"))?;
        Some(StoredScales { dtype: &e.dtype, bytes: self.set.data(loc) })
    }

    /// The tensor `name` of a `[o, i]` weight matrix, its format decided by its stamp (verified)
    /// or by byte arithmetic.
    pub fn tensor(&self, name: &str, o: u64, i: u64) -> Result<TensorView<'_>, Refusal> {
        let (loc, _) = self.set.get(name).ok_or_else(|| {
            Refusal::new(Class::TensorMissing, format!("no tensor {name:?} in the container"))
        })?;
        let weights = self.set.data(loc);
        let scales = self.scales(name);
        let ns = scales.map_or(0, |s| s.resolve_bytes());
        let stamp = self.stamps.get(name);
        if crate::cfse::is_cfse(&self.set.shards[loc.shard].header) {
            return self.cfs1(name, loc, o, i, stamp);
        }
        if stamp == Some(FORMAT_NAME) {
            return self.rans256(name, loc, o, i, scales);
        }
        if stamp == Some(crate::rans64::FORMAT_NAME) {
            return self.rans64(name, loc, o, i, scales);
        }
        // An unstamped F32 tensor without scales whose shape is exactly [O, I] is plain f32
        // weights: its dtype says what byte counts cannot (the registry's f32 has no byte
        // formula of its own, so it otherwise resolves only through a stamp).
        let entry = self.set.entry(loc);
        let plain_f32 = stamp.is_none()
            && scales.is_none()
            && entry.dtype == "F32"
            && entry.shape.as_slice() == [o, i];
        let stamp = if plain_f32 { Some("f32") } else { stamp };
        let resolved = resolve(o, i, weights.len() as u64, ns, stamp)
            .map_err(|e| Refusal::of(&e, format!("{name}: {e}")))?;
        // Byte counts cannot see the scales' dtype: MXFP4 scales are UE8M0 bytes, every other
        // scaled format's are floats.
        if let Some(sc) = scales {
            let want = resolved.format.info().scales.elem;
            let fits = match want {
                ScaleElem::Ue8m0 => sc.dtype == "U8",
                ScaleElem::F32 => matches!(sc.dtype, "F32" | "BF16" | "F16"),
                _ => true,
            };
            if !fits {
                return Err(Refusal::new(
                    Class::ScaleDtype,
                    format!(
                        "{name}: resolved {resolved}, whose scales are {want:?}, but {name}.qs is {}",
                        sc.dtype
                    ),
                ));
            }
        }
        Ok(TensorView::Dense { resolved, weights, scales, o, i })
    }

    /// A tensor of a CFS1 shard: resolved on its declared size, int4-row only.
    fn cfs1<'a>(
        &'a self,
        name: &str,
        loc: Loc,
        o: u64,
        i: u64,
        stamp: Option<&str>,
    ) -> Result<TensorView<'a>, Refusal> {
        let refuse = |class, d: String| Refusal::new(class, format!("{name}: {d}"));
        let blob = self.set.data(loc);
        // The open checks passed the header stage and rawlen == declared size.
        let rawlen = |b: &[u8]| {
            tetrad_fse::Header::parse(b)
                .map(|h| u64::from(h.rawlen))
                .map_err(|e| refuse(Class::of(&e), e.to_string()))
        };
        let n = rawlen(blob)?;
        let qs = self.set.get(&format!("{name}.qs"));
        let (ns, qs_dtype) = match qs {
            None => (0, None),
            Some((ql, qe)) => {
                let bytes = if crate::cfse::is_cfse(&self.set.shards[ql.shard].header) {
                    rawlen(self.set.data(ql))?
                } else {
                    qe.len()
                };
                let widened = match qe.dtype.as_str() {
                    "BF16" | "F16" => 2 * bytes,
                    _ => bytes,
                };
                (widened, Some(qe.dtype.as_str()))
            }
        };
        let resolved =
            resolve(o, i, n, ns, stamp).map_err(|e| refuse(Class::of(&e), e.to_string()))?;
        if resolved.format != Format::Int4Row {
            return Err(refuse(
                Class::Cfs1Format,
                format!(
                    "resolved {resolved} inside a CFS1 container; only int4-row weights are \
                     multiplied from CFS1 blobs (unpack the container first: tetrad cfs1 unpack)"
                ),
            ));
        }
        let (Some((ql, _)), Some(dtype)) = (qs, qs_dtype) else {
            return Err(refuse(Class::GeometryNoScales, "no .qs scales".into()));
        };
        let raw = self.set.data(ql);
        let decoded;
        let bytes = if crate::cfse::is_cfse(&self.set.shards[ql.shard].header) {
            // Resolved int4-row: O scales, so this is 2·O or 4·O bytes.
            decoded = crate::cfse::decode_growing(raw).map_err(|e| {
                e.map_or_else(
                    || refuse(Class::TooLarge, format!("{name}.qs: no memory for its bytes")),
                    |e| refuse(Class::of(&e), format!("{name}.qs: {e}")),
                )
            })?;
            &decoded[..]
        } else {
            raw
        };
        let scales = StoredScales { dtype, bytes }
            .to_f32()
            .ok_or_else(|| refuse(Class::ScaleDtype, format!("{name}.qs is {dtype}")))?;
        Ok(TensorView::Cfs1Int4Row { blob, scales, o, i })
    }

    fn rans64<'a>(
        &'a self,
        name: &str,
        loc: Loc,
        o: u64,
        i: u64,
        scales: Option<StoredScales<'a>>,
    ) -> Result<TensorView<'a>, Refusal> {
        let fmt = crate::rans64::FORMAT_NAME;
        let refuse = |class, d: String| Refusal::new(class, format!("{name}: {d}"));
        let entry = self.set.entry(loc);
        if entry.dtype != "U8" {
            return Err(refuse(
                Class::StampDtype,
                format!("stamped {fmt} but dtype {}", entry.dtype),
            ));
        }
        let scales =
            scales.ok_or_else(|| refuse(Class::GeometryNoScales, "no .qs scales".into()))?;
        resolve(o, i, entry.len(), scales.resolve_bytes(), Some(fmt))
            .map_err(|e| refuse(Class::of(&e), e.to_string()))?;
        let blob = tetrad_rans::rans64::Blob::parse(self.set.data(loc))
            .map_err(|e| refuse(Class::of(&e), e.to_string()))?;
        let want = o.checked_mul(i.div_ceil(2));
        if Some(blob.n_bytes()) != want {
            return Err(refuse(
                Class::CountMismatch,
                format!(
                    "blob holds {} bytes, [{o}, {i}] int4-row needs O·ceil(I/2) = {}",
                    blob.n_bytes(),
                    want.map_or_else(|| "overflow".to_owned(), |w| w.to_string())
                ),
            ));
        }
        Ok(TensorView::Rans64 { blob, scales, o, i })
    }

    fn rans256<'a>(
        &'a self,
        name: &str,
        loc: Loc,
        o: u64,
        i: u64,
        scales: Option<StoredScales<'a>>,
    ) -> Result<TensorView<'a>, Refusal> {
        let refuse = |class, d: String| Refusal::new(class, format!("{name}: {d}"));
        let entry = self.set.entry(loc);
        if entry.dtype != "U8" {
            return Err(refuse(
                Class::StampDtype,
                format!("stamped {FORMAT_NAME} but dtype {}", entry.dtype),
            ));
        }
        let scales =
            scales.ok_or_else(|| refuse(Class::GeometryNoScales, "no .qs scales".into()))?;
        resolve(o, i, entry.len(), scales.resolve_bytes(), Some(FORMAT_NAME))
            .map_err(|e| refuse(Class::of(&e), e.to_string()))?;
        let shard = &self.set.shards[loc.shard];
        let text =
            shard.header.metadata.as_ref().and_then(|m| m.get(TABLE_KEY)).ok_or_else(|| {
                refuse(
                    Class::TableMissing,
                    format!("shard {} has no {TABLE_KEY}", shard.basename()),
                )
            })?;
        let parts = table_json::parse(text).map_err(|e| refuse(Class::of(&e), e.to_string()))?;
        let table =
            Box::new(table_from_parts(&parts).map_err(|e| refuse(Class::of(&e), e.to_string()))?);
        let record =
            Record::parse(self.set.data(loc)).map_err(|e| refuse(Class::of(&e), e.to_string()))?;
        let want = o.checked_mul(i.div_ceil(2)).and_then(|b| b.checked_mul(2));
        if Some(record.n_symbols()) != want {
            return Err(refuse(
                Class::CountMismatch,
                format!(
                    "record holds {} nibbles, [{o}, {i}] int4-row needs 2·O·ceil(I/2) = {}",
                    record.n_symbols(),
                    want.map_or_else(|| "overflow".to_owned(), |w| w.to_string())
                ),
            ));
        }
        Ok(TensorView::Rans256 { record, table, scales, o, i })
    }
}

/// Opens one shard: a CFS1 shard (`{"cfse": "1"}`) with the CFS1 container checks, any other
/// with the strict reader checks.
pub fn open_shard(path: &Path) -> Result<Shard, Refusal> {
    let bytes = crate::io::map_file(path)
        .map_err(|e| Refusal::new(Class::Io, format!("{}: {e}", path.display())))?;
    let malformed = |e: crate::shard::ShardError| {
        Refusal::new(Class::ShardMalformed, format!("{}: {e}", path.display()))
    };
    let header = ShardHeader::parse(&bytes, bytes.len() as u64).map_err(malformed)?;
    let shard = Shard { path: path.to_owned(), bytes, header };
    if crate::cfse::is_cfse(&shard.header) {
        crate::cfse::check_blobs(path, &shard.header, |t| shard.data(t))?;
    } else {
        shard.header.check_strict().map_err(malformed)?;
    }
    Ok(shard)
}
