//! The CFS1 (`cfse_pack`) container: every tensor of a safetensors file as one CFS1 blob
//! (`docs/cfs1.md`, "The container").
//!
//! The output header keeps each tensor's name, dtype and shape; `data_offsets` cover the
//! compressed blobs, laid out in the input's data-offset order (ties keep header order);
//! `__metadata__` is replaced by `{"cfse":"1"}`; names and dtypes are written raw and the
//! header is padded with spaces to a multiple of 8 bytes (a name that would need JSON escaping
//! is refused). Tensors are compressed and decompressed in parallel (rayon); each blob depends
//! only on its tensor, so output is identical for any thread count.
//!
//! Reading a container trusts nothing: header offsets must stay inside the data section and
//! must not overlap, each blob's `rawlen` must equal the byte size its dtype and shape
//! declare, and every blob is decoded with the checked CFS1 decoder (raw blobs carry no
//! integrity check; rANS blobs are sealed).

use std::collections::BTreeMap;
use std::path::Path;

#[cfg(feature = "parallel")]
use rayon::prelude::*;

use crate::error::{Class, Refusal};
use crate::io::map_file;

use crate::shard::{
    HeaderStyle, OutTensor, ShardHeader, TensorEntry, TensorSpec, declared_bytes, header_bytes_for,
    shard_bytes,
};

/// Per-tensor outcome: name, original bytes, blob bytes, mode byte (0 raw, 1 rANS).
pub type TensorReport = (String, u64, u64, u8);

fn io(path: &Path, e: &std::io::Error) -> Refusal {
    Refusal::new(Class::Io, format!("{}: {e}", path.display()))
}

/// A read file with its parsed header.
struct Input {
    bytes: crate::io::Mapped,
    header: ShardHeader,
}

impl Input {
    fn open(path: &Path, strict: bool) -> Result<Self, Refusal> {
        let bytes = map_file(path).map_err(|e| io(path, &e))?;
        let header = ShardHeader::parse(&bytes, bytes.len() as u64)
            .and_then(|h| if strict { h.check_strict_any_dtype().map(|()| h) } else { Ok(h) })
            .map_err(|e| Refusal::new(Class::ShardMalformed, format!("{}: {e}", path.display())))?;
        Ok(Self { bytes, header })
    }

    fn data(&self, t: &TensorEntry) -> &[u8] {
        let a = usize::try_from(self.header.data_start + t.begin).expect("inside the mapped file");
        &self.bytes[a..a + usize::try_from(t.len()).expect("inside the mapped file")]
    }

    /// Tensors in data-offset order, ties in header order.
    fn by_offset(&self) -> Vec<&TensorEntry> {
        let mut v: Vec<&TensorEntry> = self.header.tensors.iter().collect();
        v.sort_by_key(|t| t.begin); // stable: ties keep header order
        v
    }
}

/// Compresses one tensor and proves the blob decodes back to it.
pub fn compress_checked(name: &str, src: &[u8]) -> Result<Vec<u8>, Refusal> {
    let mut blob = vec![0u8; tetrad_fse::max_encoded_len(src.len())];
    let n = tetrad_fse::encode_into(src, &mut blob)
        .map_err(|e| Refusal::of(&e, format!("{name}: {e}")))?;
    blob.truncate(n);
    let mut back = vec![0u8; src.len()];
    let m = tetrad_fse::decode_into(&blob, &mut back).map_err(|e| {
        Refusal::new(Class::Roundtrip, format!("{name}: own blob does not decode: {e}"))
    })?;
    if m != src.len() || back != src {
        return Err(Refusal::new(
            Class::Roundtrip,
            format!("{name}: blob decodes to different bytes"),
        ));
    }
    Ok(blob)
}

/// Runs a collection's items on rayon's threads with the `parallel` feature, in order on this
/// thread without it.
trait IntoTasks: Sized {
    #[cfg(feature = "parallel")]
    type Tasks: ParallelIterator;
    #[cfg(not(feature = "parallel"))]
    type Tasks: Iterator;
    fn into_tasks(self) -> Self::Tasks;
}

#[cfg(feature = "parallel")]
impl<I: IntoParallelIterator> IntoTasks for I {
    type Tasks = I::Iter;
    fn into_tasks(self) -> Self::Tasks {
        self.into_par_iter()
    }
}

#[cfg(not(feature = "parallel"))]
impl<I: IntoIterator> IntoTasks for I {
    type Tasks = I::IntoIter;
    fn into_tasks(self) -> Self::Tasks {
        self.into_iter()
    }
}

/// Progress of a long call: told the input bytes handled as each tensor is done (called from
/// worker threads).
pub type Tick<'a> = &'a (dyn Fn(u64) + Sync);

fn blobs_of<'a>(
    input: &'a Input,
    tick: Tick<'_>,
) -> Result<Vec<(&'a TensorEntry, Vec<u8>)>, Refusal> {
    input
        .by_offset()
        .into_tasks()
        .map(|t| {
            let r = compress_checked(&t.name, input.data(t)).map(|b| (t, b));
            tick(t.len());
            r
        })
        .collect()
}

fn report_of(blobs: &[(&TensorEntry, Vec<u8>)]) -> Vec<TensorReport> {
    blobs.iter().map(|(t, b)| (t.name.clone(), t.len(), b.len() as u64, b[4])).collect()
}

/// What `pack` and `cert` report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackReport {
    /// Each tensor's outcome, in container order.
    pub tensors: Vec<TensorReport>,
    /// The input's `__metadata__` keys the container does not keep (its metadata is
    /// `{"cfse":"1"}` by the format), sorted: a `colibri.fmt` stamp among them does not come
    /// back through `unpack`.
    pub dropped_metadata: Vec<String>,
}

/// The container bytes of `input` (every tensor round-trip checked first).
pub fn pack_bytes(input: &Path, tick: Tick<'_>) -> Result<(Vec<u8>, PackReport), Refusal> {
    let inp = Input::open(input, true)?;
    let dropped_metadata =
        inp.header.metadata.as_ref().map_or_else(Vec::new, |m| m.keys().cloned().collect());
    let blobs = blobs_of(&inp, tick)?;
    let tensors: Vec<OutTensor<'_>> = blobs
        .iter()
        .map(|(t, b)| OutTensor { name: &t.name, dtype: &t.dtype, shape: &t.shape, data: b })
        .collect();
    let meta: BTreeMap<String, String> = [("cfse".to_owned(), "1".to_owned())].into();
    let bytes = shard_bytes(&meta, &tensors, HeaderStyle::RawPadded8)
        .map_err(|e| Refusal::new(Class::NameUnsupported, format!("{}: {e}", input.display())))?;
    Ok((bytes, PackReport { tensors: report_of(&blobs), dropped_metadata }))
}

/// `cfs1 pack IN OUT`: writes the container atomically; nothing is written if any tensor fails.
pub fn pack(input: &Path, output: &Path, tick: Tick<'_>) -> Result<PackReport, Refusal> {
    let (bytes, report) = pack_bytes(input, tick)?;
    crate::output::write_bytes(output, &bytes)
        .map_err(|e| Refusal::new(Class::Io, e.to_string()))?;
    Ok(report)
}

/// `cfs1 cert IN`: the in-memory round trip of every tensor, and the container `pack` would
/// write built in memory (so a name `pack` refuses is refused here too); writes nothing.
pub fn cert(input: &Path) -> Result<PackReport, Refusal> {
    pack_bytes(input, &|_| {}).map(|(_, report)| report)
}

/// Decodes every tensor of a container, checking everything a hostile file could lie about.
/// Declared output decoded at once, at most (one tensor larger than this is decoded alone).
pub const BATCH_BYTES: u64 = 256 << 20;

/// Opens a container and checks everything that needs no decoding (see [`check_blobs`]).
/// Returns the input and each tensor's declared size.
fn open_container(container: &Path) -> Result<(Input, Vec<u64>), Refusal> {
    let c = Input::open(container, false)?;
    let sizes = check_blobs(container, &c.header, |t| c.data(t))?;
    Ok((c, sizes))
}

/// True when a shard header carries the CFS1 container's `{"cfse": "1"}` metadata.
pub fn is_cfse(header: &ShardHeader) -> bool {
    header.metadata.as_ref().and_then(|m| m.get("cfse")).map(String::as_str) == Some("1")
}

/// Everything about a CFS1 container that needs no decoding: the `cfse` metadata, blobs
/// inside the data section (checked by the header parser) and not overlapping,
/// and each blob's header stage passed with a `rawlen` equal to the byte size its dtype and
/// shape declare (a dtype this reader does not know declares nothing: its blob's `rawlen`
/// stands). `data` returns a tensor's blob. Returns each tensor's declared size, in
/// header order. `tetrad::container` opens CFS1 shards through this check.
pub fn check_blobs<'a>(
    container: &Path,
    header: &ShardHeader,
    data: impl Fn(&TensorEntry) -> &'a [u8],
) -> Result<Vec<u64>, Refusal> {
    let refuse = |class, d: String| Refusal::new(class, format!("{}: {d}", container.display()));
    if !is_cfse(header) {
        return Err(refuse(
            Class::NotCfse,
            "no {\"cfse\": \"1\"} metadata: not a CFS1 container".into(),
        ));
    }
    let mut spans: Vec<&TensorEntry> = header.tensors.iter().collect();
    spans.sort_by_key(|t| (t.begin, t.end));
    for w in spans.windows(2) {
        if w[1].begin < w[0].end {
            return Err(refuse(
                Class::ShardMalformed,
                format!("blobs of {:?} and {:?} overlap", w[0].name, w[1].name),
            ));
        }
    }
    let mut sizes = Vec::with_capacity(header.tensors.len());
    for t in &header.tensors {
        let tref = |class, d: String| {
            Refusal::new(class, format!("{} {}: {d}", container.display(), t.name))
        };
        let declared =
            declared_bytes(&t.dtype, &t.shape).map_err(|why| tref(Class::ShardMalformed, why))?;
        let h =
            tetrad_fse::Header::parse(data(t)).map_err(|e| tref(Class::of(&e), e.to_string()))?;
        // A dtype this reader does not know declares nothing to hold the blob to: its bytes
        // are whatever the blob holds (the writer carries any dtype).
        let want = declared.unwrap_or(u64::from(h.rawlen));
        if u64::from(h.rawlen) != want {
            return Err(tref(
                Class::ShardMalformed,
                format!("blob holds {} bytes but {} {:?} needs {want}", h.rawlen, t.dtype, t.shape),
            ));
        }
        sizes.push(want);
    }
    Ok(sizes)
}

/// Output the growing decode asks for at a time.
const PIECE: usize = 1 << 20;

/// Decodes a CFS1 blob (checked) into a buffer that grows with the output actually decoded,
/// never sized up front by the blob's `rawlen`: a hostile 150-byte blob claiming 4 GiB is
/// refused after its first piece (it made `cfs1 unpack` allocate and zero 4 GiB before
/// refusing it), while a genuine one — CFS1 compresses runs of one nibble a thousandfold, so
/// no size bound on `rawlen` holds — decodes in full. The classes are `decode_into`'s
/// for a buffer of exactly `rawlen` bytes. `Err(None)`: memory for the output was refused.
pub fn decode_growing(blob: &[u8]) -> Result<Vec<u8>, Option<tetrad_fse::DecodeError>> {
    let mut table = tetrad_fse::DecodeTable::new();
    let mut dec = tetrad_fse::Decoder::new(&mut table, blob).map_err(Some)?;
    let rawlen = dec.header().rawlen as usize;
    let mut out: Vec<u8> = Vec::new();
    while !dec.is_finished() {
        let at = out.len();
        let piece = PIECE.min(rawlen - at);
        if out.capacity() < at + piece {
            let want = (2 * out.capacity()).clamp(at + piece, rawlen.max(at + piece));
            out.try_reserve_exact(want - at).map_err(|_| None)?;
        }
        out.resize(at + piece, 0);
        let n = dec.decode_next(&mut out[at..]).map_err(Some)?;
        out.truncate(at + n);
    }
    Ok(out)
}

/// Decodes every tensor (checked) and hands `(index, bytes)` to `sink` in header order. Tensors
/// are decoded in parallel in batches of at most [`BATCH_BYTES`] of declared output, so memory
/// stays bounded by the batch (or by the one largest tensor), never by the whole file's claims.
fn decode_each(
    container: &Path,
    c: &Input,
    sizes: &[u64],
    tick: Tick<'_>,
    mut sink: impl FnMut(usize, Vec<u8>) -> Result<(), Refusal>,
) -> Result<(), Refusal> {
    let mut k = 0;
    while k < sizes.len() {
        let mut end = k + 1;
        let mut total = sizes[k];
        while end < sizes.len() && total + sizes[end] <= BATCH_BYTES {
            total += sizes[end];
            end += 1;
        }
        let decoded = (k..end)
            .into_tasks()
            .map(|j| {
                let t = &c.header.tensors[j];
                tick(t.len());
                decode_growing(c.data(t)).map_err(|e| {
                    let at = format!("{} {}", container.display(), t.name);
                    e.map_or_else(
                        || Refusal::new(Class::TooLarge, format!("{at}: no memory for its bytes")),
                        |e| Refusal::of(&e, format!("{at}: {e}")),
                    )
                })
            })
            .collect::<Result<Vec<_>, Refusal>>()?;
        for (j, out) in (k..end).zip(decoded) {
            sink(j, out)?;
        }
        k = end;
    }
    Ok(())
}

/// `cfs1 verify IN OUT`: decompresses every tensor of the container `output` and compares it,
/// matched by name, with `input`. Returns the number of tensors compared.
pub fn verify(input: &Path, output: &Path, tick: Tick<'_>) -> Result<usize, Refusal> {
    let inp = Input::open(input, true)?;
    let (c, sizes) = open_container(output)?;
    if c.header.tensors.len() != inp.header.tensors.len() {
        return Err(Refusal::new(
            Class::VerifyMismatch,
            format!(
                "{} holds {} tensors, {} holds {}",
                output.display(),
                c.header.tensors.len(),
                input.display(),
                inp.header.tensors.len()
            ),
        ));
    }
    for t in &c.header.tensors {
        let orig = inp.header.tensor(&t.name).ok_or_else(|| {
            Refusal::new(
                Class::VerifyMismatch,
                format!("{} is in {} but not in {}", t.name, output.display(), input.display()),
            )
        })?;
        if orig.dtype != t.dtype || orig.shape != t.shape {
            return Err(Refusal::new(
                Class::VerifyMismatch,
                format!("{}: dtype or shape differs from the input", t.name),
            ));
        }
    }
    decode_each(output, &c, &sizes, tick, |j, out| {
        let t = &c.header.tensors[j];
        let orig = inp.header.tensor(&t.name).expect("checked above");
        if inp.data(orig) != &out[..] {
            return Err(Refusal::new(
                Class::VerifyMismatch,
                format!("{}: decoded tensor differs from the input", t.name),
            ));
        }
        Ok(())
    })?;
    Ok(sizes.len())
}

/// What `cfs1 check` found: every blob decoded, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckReport {
    /// Tensors (blobs) in the container.
    pub tensors: usize,
    /// rANS blobs: decoded with every check and sealed.
    pub rans: usize,
    /// Raw blobs: framing and size checked; the format gives them no integrity check.
    pub raw: usize,
    /// Bytes the blobs decode to.
    pub bytes: u64,
}

/// `cfs1 check CONTAINER`: the container alone, without its original — the checks that need
/// no decoding ([`check_blobs`]), then every blob decoded with the checked decoder (a rANS
/// blob's seal, its exact length). A raw blob has no integrity check in the format: it is
/// counted apart, so a report never claims more than the format can prove.
pub fn check(container: &Path, tick: Tick<'_>) -> Result<CheckReport, Refusal> {
    let (c, sizes) = open_container(container)?;
    let raw = c.header.tensors.iter().filter(|t| c.data(t).get(4) == Some(&0)).count();
    decode_each(container, &c, &sizes, tick, |_, _| Ok(()))?;
    Ok(CheckReport {
        tensors: sizes.len(),
        rans: sizes.len() - raw,
        raw,
        bytes: sizes.iter().sum(),
    })
}

/// `cfs1 unpack IN OUT`: the container back to a plain safetensors file (no metadata), written
/// tensor by tensor to a temporary file that is renamed only when every blob decoded.
pub fn unpack(container: &Path, output: &Path, tick: Tick<'_>) -> Result<usize, Refusal> {
    let (c, sizes) = open_container(container)?;
    let specs: Vec<TensorSpec<'_>> = c
        .header
        .tensors
        .iter()
        .zip(&sizes)
        .map(|(t, &len)| TensorSpec { name: &t.name, dtype: &t.dtype, shape: &t.shape, len })
        .collect();
    let header = header_bytes_for(&BTreeMap::new(), &specs, HeaderStyle::EscapedUnpadded)
        .map_err(|e| Refusal::new(Class::Internal, e.to_string()))?;
    crate::output::write_file(output, |w| -> Result<(), Refusal> {
        w.write_all(&header).map_err(|e| Refusal::new(Class::Io, e.to_string()))?;
        decode_each(container, &c, &sizes, tick, |_, out| {
            w.write_all(&out).map_err(|e| Refusal::new(Class::Io, e.to_string()))
        })
    })?;
    Ok(sizes.len())
}
