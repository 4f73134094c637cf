//! `tetrad stats`: how much would these weights shrink, losslessly?
//!
//! For every quantized weight of safetensors containers and GGUF files this measures the code
//! stream a lossless coder would see — nibbles for the int4 formats (int4-row, int4-grouped,
//! decoded int4-rans256-g0 records, GGUF Q4_0/Q4_1/Q4_K/IQ4_NL/IQ4_XS/MXFP4/NVFP4), bytes for
//! int8-row and GGUF Q8_0, and the 2–6-bit codes of GGUF Q2_K/Q3_K/Q5_0/Q5_1/Q5_K/Q6_K
//! (each weight's code put together from its bit planes; sizes and codecs are of the planes
//! as stored) — and reports, per tensor and in total (the stored codes, as a coder
//! sees them: a nibble row of odd `I` counts its padding nibble):
//! - order-0 entropy `H0` (bits per symbol) and the ratio bound `symbol_bits / H0`;
//! - order-1 conditional entropy `H1 = H(s_t | s_{t−1})` over pairs of neighbouring symbols
//!   of the same row (storage order; the first symbol of a row has no context and is not
//!   counted), and its gain `H0 − H1`, which says whether a context model could help;
//! - the actual bytes of int4-rans256-g0 (one table pooled over every measured nibble tensor;
//!   the total adds the table's JSON once, as `tetrad pack` stores it), of CFS1 and of zstd
//!   level 19 on the same code bytes.
//!
//! Float tensors (2-D F32/BF16/F16) are measured as they would be after `tetrad quantize` with
//! the chosen format. Every ratio is `code bytes / compressed bytes` (above 1 means smaller).
//!
//! The measured code bytes of every tensor are held in memory until the pooled table is built
//! (about the size of the checkpoint's quantized codes); zstd level 19 is the slow part
//! (a few MB/s per core; tensors are compressed in parallel, `--no-zstd` skips it).
//!
//! [`plot`] draws the chart of a report (`--plot FILE.png|FILE.svg`).

use std::path::{Path, PathBuf};

// The chart lives in its own folder (`src/plot/`) but belongs to `stats`: it draws a Report.
#[path = "plot/mod.rs"]
pub mod plot;

use rayon::prelude::*;
use tetrad_rans::{FORMAT_SCALE_BITS, FORMAT_STREAMS, Table, encode_record_packed, max_record_len};

use crate::container::Container;
use crate::error::{Class, Refusal};
use crate::gguf;
use crate::meta::FORMAT_NAME;
use crate::quantize_container::{QuantFormat, float_values};
use crate::table_json::table_parts;

/// What one symbol of a code stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Symbols {
    /// 4-bit codes, two per byte, low nibble first.
    Nibble,
    /// 8-bit codes.
    Byte,
    /// Codes of 2, 3, 5 or 6 bits that a format splits over bit planes (GGUF Q2_K, Q3_K,
    /// Q5_0, Q5_1, Q5_K, Q6_K): [`Measured::data`] holds the planes as stored and
    /// [`Measured::split`] how they hold the codes.
    Split(u8),
}

impl Symbols {
    /// Bits per symbol.
    pub const fn bits(self) -> u32 {
        match self {
            Self::Nibble => 4,
            Self::Byte => 8,
            Self::Split(b) => b as u32,
        }
    }
    /// Alphabet size.
    pub const fn alphabet(self) -> usize {
        match self {
            Self::Nibble => 16,
            Self::Byte => 256,
            Self::Split(b) => 1 << b,
        }
    }
    /// What one symbol is called in reports: `nibble`, `byte`, `6-bit code`, ….
    pub const fn name(self) -> &'static str {
        match self {
            Self::Nibble => "nibble",
            Self::Byte => "byte",
            Self::Split(2) => "2-bit code",
            Self::Split(3) => "3-bit code",
            Self::Split(5) => "5-bit code",
            Self::Split(6) => "6-bit code",
            Self::Split(_) => "code",
        }
    }
    /// Report order: nibbles, bytes, then split codes by width.
    const fn rank(self) -> u32 {
        match self {
            Self::Nibble => 0,
            Self::Byte => 1,
            Self::Split(b) => 2 + b as u32,
        }
    }
}

/// The code stream of one tensor, ready to be measured.
#[derive(Debug, Clone)]
pub struct Measured {
    /// Tensor name.
    pub name: String,
    /// File it came from.
    pub file: String,
    /// Format of the codes (`int4-row`, `gguf:Q4_1`, …).
    pub format: String,
    /// How the format was decided: `stamp`, `resolved`, `quantize` or `gguf`.
    pub format_source: &'static str,
    /// Shape (row-major).
    pub shape: Vec<u64>,
    /// Symbol kind.
    pub symbols: Symbols,
    /// Code bytes as stored (split codes: the blocks' code planes), what the codecs compress
    /// and the ratios count.
    pub data: Vec<u8>,
    /// Bytes of `data` per row (order-1 contexts restart at each row); 0 means one row.
    pub row_bytes: usize,
    /// For split codes, how the planes hold them ([`count_measured`] unpacks them).
    pub split: Option<gguf::SplitLayout>,
}

/// A tensor `stats` did not measure, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// Tensor name.
    pub name: String,
    /// File.
    pub file: String,
    /// Why.
    pub reason: String,
}

/// Symbol and neighbour-pair counts of a stream.
///
/// The pair table has `alphabet²` cells (65,536 for bytes: 512 KiB), so a per-tensor
/// `Counts` is kept [`compact`](Self::compact): its order-1 numbers computed, its table
/// dropped. Otherwise a file of many tiny byte tensors cost half a megabyte each (10,000
/// Q8_0 tensors in a 449 KB GGUF: 2.9 GB). Pooled totals keep the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Counts {
    /// Symbol histogram (`alphabet` entries).
    pub hist: Vec<u64>,
    /// Pair counts `pairs[prev · alphabet + cur]` within rows (empty once compacted).
    pub pairs: Vec<u64>,
    /// `(entropy1, pair total)` of a compacted `Counts`.
    order1: Option<(f64, u64)>,
}

impl Counts {
    fn zero(s: Symbols) -> Self {
        let a = s.alphabet();
        Self { hist: vec![0; a], pairs: vec![0; a * a], order1: None }
    }
    /// Adds `o`'s counts (both with their pair tables).
    fn add(&mut self, o: &Self) {
        debug_assert!(self.order1.is_none() && o.order1.is_none(), "pooling compacted counts");
        self.hist.iter_mut().zip(&o.hist).for_each(|(a, b)| *a += b);
        self.pairs.iter_mut().zip(&o.pairs).for_each(|(a, b)| *a += b);
    }
    /// The order-1 numbers computed and the pair table dropped.
    #[must_use]
    pub fn compact(self) -> Self {
        let order1 = Some((self.entropy1(), self.pair_total()));
        Self { hist: self.hist, pairs: Vec::new(), order1 }
    }
    /// Symbols counted.
    pub fn symbols(&self) -> u64 {
        self.hist.iter().sum()
    }
    /// Neighbour pairs counted.
    pub fn pair_total(&self) -> u64 {
        self.order1.map_or_else(|| self.pairs.iter().sum(), |(_, n)| n)
    }
    /// Order-0 entropy in bits per symbol (0 for an empty stream).
    pub fn entropy0(&self) -> f64 {
        entropy(&self.hist)
    }
    /// Order-1 conditional entropy in bits per symbol over the counted pairs.
    pub fn entropy1(&self) -> f64 {
        if let Some((h, _)) = self.order1 {
            return h;
        }
        let a = self.hist.len();
        let total: u64 = self.pairs.iter().sum();
        if total == 0 {
            return 0.0;
        }
        let mut h = 0.0;
        for prev in self.pairs.chunks_exact(a) {
            let row: u64 = prev.iter().sum();
            for &c in prev.iter().filter(|&&c| c > 0) {
                h -= c as f64 * (c as f64 / row as f64).log2();
            }
        }
        h / total as f64
    }
}

/// Order-0 entropy of a histogram, bits per symbol.
pub fn entropy(hist: &[u64]) -> f64 {
    let n: u64 = hist.iter().sum();
    if n == 0 {
        return 0.0;
    }
    let h: f64 =
        hist.iter().filter(|&&c| c > 0).map(|&c| c as f64 / n as f64).map(|p| -p * p.log2()).sum();
    h + 0.0 // a constant stream sums to -0.0: print 0
}

/// The rows of `data`, `row_bytes` each (one row when 0 or longer than the data).
fn rows_of(data: &[u8], row_bytes: usize) -> std::slice::Chunks<'_, u8> {
    data.chunks(if row_bytes == 0 || row_bytes >= data.len() {
        data.len().max(1)
    } else {
        row_bytes
    })
}

impl Counts {
    /// Counts one row's symbols and neighbour pairs (the first symbol has no context). Split
    /// codes are counted one per byte, already unpacked.
    fn count_row(&mut self, symbols: Symbols, row: &[u8]) {
        let a = symbols.alphabet();
        let mut prev: Option<usize> = None;
        let mut push = |s: usize| {
            self.hist[s] += 1;
            if let Some(p) = prev {
                self.pairs[p * a + s] += 1;
            }
            prev = Some(s);
        };
        for &b in row {
            match symbols {
                Symbols::Nibble => {
                    push(usize::from(b & 15));
                    push(usize::from(b >> 4));
                }
                Symbols::Byte | Symbols::Split(_) => push(usize::from(b)),
            }
        }
    }
}

/// Counts symbols and within-row neighbour pairs of a code stream (split codes: one code per
/// byte; [`count_measured`] unpacks a stream's planes).
pub fn count(symbols: Symbols, data: &[u8], row_bytes: usize) -> Counts {
    let mut c = Counts::zero(symbols);
    for row in rows_of(data, row_bytes) {
        c.count_row(symbols, row);
    }
    c
}

/// [`count`] of a measured stream; split codes are unpacked from the stored planes one row at
/// a time, so only the planes are ever held whole.
pub fn count_measured(m: &Measured) -> Counts {
    let Some(layout) = m.split else {
        return count(m.symbols, &m.data, m.row_bytes);
    };
    let mut c = Counts::zero(m.symbols);
    let mut codes = Vec::new();
    for row in rows_of(&m.data, m.row_bytes) {
        codes.clear();
        layout.unpack(row, &mut codes);
        c.count_row(m.symbols, &codes);
    }
    c
}

/// Every number of one tensor (or of the total).
#[derive(Debug, Clone)]
pub struct TensorStats {
    /// The stream measured (its data is dropped after measuring).
    pub name: String,
    /// File.
    pub file: String,
    /// Format.
    pub format: String,
    /// How the format was decided.
    pub format_source: &'static str,
    /// Shape.
    pub shape: Vec<u64>,
    /// Symbol kind.
    pub symbols: Symbols,
    /// Code bytes.
    pub bytes: u64,
    /// Counts.
    pub counts: Counts,
    /// int4-rans256-g0 record bytes (nibble streams; `None` if the table could not be built).
    pub rans256_bytes: Option<u64>,
    /// CFS1 blob bytes.
    pub cfs1_bytes: Option<u64>,
    /// `int4-rans64-t1` blob bytes, tetrad's own format (nibble streams; per-chunk tables and
    /// all framing included).
    pub rans64_bytes: Option<u64>,
    /// zstd level 19 frame bytes (`None` when skipped).
    pub zstd19_bytes: Option<u64>,
}

/// Totals over the tensors of one symbol kind.
#[derive(Debug, Clone)]
pub struct Total {
    /// Symbol kind.
    pub symbols: Symbols,
    /// Tensors.
    pub tensors: u64,
    /// Code bytes.
    pub bytes: u64,
    /// Pooled counts.
    pub counts: Counts,
    /// Symbol-weighted mean of the per-tensor order-0 entropies.
    pub entropy_bits_per_tensor: f64,
    /// Records plus the pooled table's JSON (nibbles only).
    pub rans256_bytes: Option<u64>,
    /// Table JSON bytes included in `rans256_bytes`.
    pub rans256_table_bytes: Option<u64>,
    /// Sum of the CFS1 blobs.
    pub cfs1_bytes: Option<u64>,
    /// Sum of the `int4-rans64-t1` blobs (nibbles only).
    pub rans64_bytes: Option<u64>,
    /// Sum of the zstd-19 frames.
    pub zstd19_bytes: Option<u64>,
}

/// The whole report.
#[derive(Debug, Clone)]
pub struct Report {
    /// Measured tensors, in input order.
    pub tensors: Vec<TensorStats>,
    /// Tensors not measured.
    pub skipped: Vec<Skipped>,
    /// Total over nibble streams.
    pub nibbles: Option<Total>,
    /// Total over byte streams.
    pub bytes: Option<Total>,
    /// Totals over split-code streams, one per code width present (increasing).
    pub split: Vec<Total>,
}

/// Options of [`collect`] and [`measure`].
#[derive(Debug, Clone, Copy)]
pub struct StatsOptions {
    /// Format float tensors are quantized to before measuring.
    pub quantize: QuantFormat,
    /// Compute zstd level 19 sizes (slow).
    pub zstd: bool,
}

/// Whether `path` names a GGUF file: by its `.gguf` extension or its magic.
pub(crate) fn is_gguf(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("gguf"))
        || crate::io::open_input(path)
            .and_then(|mut f| {
                let mut m = [0u8; 4];
                std::io::Read::read_exact(&mut f, &mut m).map(|()| m)
            })
            .is_ok_and(|m| u32::from_le_bytes(m) == gguf::MAGIC)
}

/// The inputs of `paths`: files as given, directories expanded to their `*.gguf` files (one
/// entry each) and, if they hold `*.safetensors`, the directory itself (one container).
pub fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>, Refusal> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let rd = std::fs::read_dir(p)
                .map_err(|e| Refusal::new(Class::Io, format!("{}: {e}", p.display())))?;
            let mut ggufs = Vec::new();
            let mut has_st = false;
            for e in rd {
                let e = e.map_err(|e| Refusal::new(Class::Io, format!("{}: {e}", p.display())))?;
                let n = e.file_name().to_string_lossy().into_owned();
                if n.starts_with('.') {
                    continue;
                }
                has_st |= n.ends_with(".safetensors");
                if n.to_ascii_lowercase().ends_with(".gguf") {
                    ggufs.push(e.path());
                }
            }
            ggufs.sort();
            if has_st {
                out.push(p.clone());
            }
            if ggufs.is_empty() && !has_st {
                return Err(Refusal::new(
                    Class::NoInput,
                    format!("no *.safetensors or *.gguf files in {}", p.display()),
                ));
            }
            out.extend(ggufs);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// Why a float tensor of `shape` is not measured as a matrix, if it is not one: not 2-D, or
/// 2-D with no elements.
fn not_a_matrix(shape: &[u64]) -> Option<&'static str> {
    if shape.len() != 2 {
        Some("not a 2-D float matrix")
    } else if shape.contains(&0) {
        Some("an empty matrix, nothing to measure")
    } else {
        None
    }
}

fn quantized(
    opts: &StatsOptions,
    name: &str,
    file: &str,
    dtype: &str,
    shape: &[u64],
    data: &[u8],
) -> Result<Measured, String> {
    let fmt = opts.quantize;
    let [o, i] = shape else { return Err("not 2-D".into()) };
    let (o, i) = (
        usize::try_from(*o).map_err(|e| e.to_string())?,
        usize::try_from(*i).map_err(|e| e.to_string())?,
    );
    let w = float_values(dtype, data).ok_or("not a float tensor")?;
    let q = fmt.quantize(&w, o, i).map_err(|e| e.to_string())?;
    // What `tetrad quantize` keeps as floats is not measured as codes either.
    if fmt.spec_infers() {
        crate::quantize_container::portable(
            fmt.stamp_for_columns(i as u64),
            o as u64,
            i as u64,
            q.codes.len(),
            q.scales.len(),
        )
        .map_err(|why| format!("tetrad quantize keeps it as {dtype}: {why}"))?;
    }
    let (codes, row_bytes) = (q.codes, q.row_bytes);
    Ok(Measured {
        name: name.to_owned(),
        file: file.to_owned(),
        format: fmt.to_string(),
        format_source: "quantize",
        shape: shape.to_vec(),
        symbols: if fmt.is_nibbles() { Symbols::Nibble } else { Symbols::Byte },
        data: codes,
        row_bytes,
        split: None,
    })
}

/// The bytes a CFS1 container's blob decodes to (checked). The container's open has checked
/// the blob's header stage and that its `rawlen` is what the entry's dtype and shape declare.
fn cfs1_bytes(
    set: &crate::shardset::ShardSet,
    loc: crate::shardset::Loc,
) -> Result<Vec<u8>, Refusal> {
    let (blob, name) = (set.data(loc), &set.entry(loc).name);
    let refuse = |class, d: String| Refusal::new(class, format!("{name}: {d}"));
    crate::cfse::decode_growing(blob).map_err(|e| {
        e.map_or_else(
            || refuse(Class::TooLarge, "no memory for its bytes".into()),
            |e| refuse(Class::of(&e), e.to_string()),
        )
    })
}

/// How a resolved format's codes are measured, or `None` when they are not.
fn measured_as(f: tetrad_quant::Format) -> Option<(String, Symbols)> {
    use tetrad_quant::Format;
    Some(match f {
        Format::Int4Row | Format::Int4Grouped => (f.name().to_owned(), Symbols::Nibble),
        Format::Int4Rans256G0 => (format!("{FORMAT_NAME} (decoded int4-row)"), Symbols::Nibble),
        Format::Int4Rans64T1 => {
            (format!("{} (decoded int4-row)", crate::rans64::FORMAT_NAME), Symbols::Nibble)
        }
        Format::Int8Row => ("int8-row".to_owned(), Symbols::Byte),
        _ => return None,
    })
}

/// The codes of a quantized weight in a CFS1 container, decoded, read as a plain shard's are:
/// O the stored rows, I what a row's bytes hold under the stamp (if any, else one code per
/// byte), the format resolved from the decoded byte counts; the stored shape is reported. `Ok(Err(why))`: not measured.
fn cfs1_codes(
    set: &crate::shardset::ShardSet,
    loc: crate::shardset::Loc,
    stamp: Option<&str>,
) -> Result<Result<Measured, String>, Refusal> {
    let e = set.entry(loc);
    let name = &e.name;
    let data = cfs1_bytes(set, loc)?;
    let o = e.shape.first().copied().unwrap_or(0);
    let cols = (data.len() as u64).checked_div(o).unwrap_or(0);
    let i = match stamp {
        Some("int4-row" | "int4-grouped" | "mxfp4") => 2 * cols,
        Some("int2-row") => 4 * cols,
        Some("int3-g64") => cols / 24 * 64,
        _ => cols,
    };
    let ns = match set.get(&format!("{name}.qs")) {
        None => 0,
        Some((ql, q)) => {
            let n = if crate::cfse::is_cfse(&set.shards[ql.shard].header) {
                tetrad_fse::Header::parse(set.data(ql))
                    .map(|h| u64::from(h.rawlen))
                    .map_err(|err| Refusal::of(&err, format!("{name}.qs: {err}")))?
            } else {
                q.len()
            };
            if matches!(q.dtype.as_str(), "BF16" | "F16") { 2 * n } else { n }
        }
    };
    let r = tetrad_quant::resolve(o, i, data.len() as u64, ns, stamp)
        .map_err(|err| Refusal::of(&err, format!("{name}: {err}")))?;
    let Some((format, symbols)) = measured_as(r.format) else {
        return Ok(Err(format!("format {} is not measured", r.format.name())));
    };
    let row_bytes = usize::try_from(cols).unwrap_or(0);
    Ok(Ok(Measured {
        name: name.clone(),
        file: String::new(),
        format,
        format_source: if stamp.is_some() { "stamp" } else { "resolved" },
        shape: e.shape.clone(),
        symbols,
        data,
        row_bytes,
        split: None,
    }))
}

/// Reads the code streams of one safetensors container (file or directory). The tensors of a
/// CFS1 container (`tetrad cfs1 pack`) are measured as the bytes their blobs decode to; such a
/// container keeps no stamps, so its codes are read as unstamped ones are.
pub fn collect_safetensors(
    path: &Path,
    opts: &StatsOptions,
) -> Result<(Vec<Measured>, Vec<Skipped>), Refusal> {
    let c = Container::open(path)?;
    let set = c.shards();
    let mut measured = Vec::new();
    let mut skipped = Vec::new();
    for (name, &loc) in &set.index {
        let e = set.entry(loc);
        let file = set.shards[loc.shard].basename();
        let skip = |reason: String| Skipped { name: name.clone(), file: file.clone(), reason };
        if name.ends_with(".qs") && set.get(&name[..name.len() - 3]).is_some() {
            continue; // scales of a measured weight
        }
        let stamp = c.stamps().get(name);
        let cfs1 = crate::cfse::is_cfse(&set.shards[loc.shard].header);
        if matches!(e.dtype.as_str(), "F32" | "BF16" | "F16") && stamp.is_none() {
            if let Some(why) = not_a_matrix(&e.shape) {
                skipped.push(skip(format!("{} {:?}: {why}", e.dtype, e.shape)));
                continue;
            }
            let decoded;
            let data = if cfs1 {
                decoded = match cfs1_bytes(set, loc) {
                    Ok(d) => d,
                    Err(r) => {
                        skipped.push(skip(format!("REFUSED {}: {}", r.class, r.detail)));
                        continue;
                    }
                };
                &decoded[..]
            } else {
                set.data(loc)
            };
            match quantized(opts, name, &file, &e.dtype, &e.shape, data) {
                Ok(m) => measured.push(m),
                Err(why) => skipped.push(skip(format!("cannot quantize: {why}"))),
            }
            continue;
        }
        if e.dtype != "U8" {
            skipped.push(skip(format!("{} tensor, not quantized codes", e.dtype)));
            continue;
        }
        let has_scales = set.get(&format!("{name}.qs")).is_some();
        if stamp.is_none() && !has_scales {
            skipped.push(skip("U8 without .qs scales or a stamp: not a quantized weight".into()));
            continue;
        }
        if cfs1 {
            match cfs1_codes(set, loc, stamp) {
                Ok(Ok(m)) => measured.push(Measured { name: name.clone(), file, ..m }),
                Ok(Err(why)) => skipped.push(skip(why)),
                Err(r) => skipped.push(skip(format!("REFUSED {}: {}", r.class, r.detail))),
            }
            continue;
        }
        let mut o = e.shape.first().copied().unwrap_or(0);
        let cols = e.len().checked_div(o).unwrap_or(0);
        let mut shape = e.shape.clone();
        // An entropy-coded weight is a 1-D blob: its rows are the scales' count (one per
        // int4-row row) and its columns follow from the packed size its header records.
        let coded_packed_bytes = match stamp {
            Some(FORMAT_NAME) => Some(
                tetrad_rans::Record::parse(set.data(loc))
                    .map(|r| r.packed_bytes())
                    .map_err(|err| Refusal::of(&err, format!("{name}: {err}"))),
            ),
            Some(crate::rans64::FORMAT_NAME) => Some(
                tetrad_rans::rans64::Blob::parse(set.data(loc))
                    .map(|b| b.n_bytes())
                    .map_err(|err| Refusal::of(&err, format!("{name}: {err}"))),
            ),
            _ => None,
        };
        let view = if let Some(packed) = coded_packed_bytes {
            let packed = packed?;
            o = set
                .get(&format!("{name}.qs"))
                .and_then(|(_, qs)| qs.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d)))
                .unwrap_or(0);
            let i = 2 * packed.checked_div(o).unwrap_or(0);
            shape = vec![o, i];
            c.tensor(name, o, i)
        } else {
            // The file does not record I: a stamp says how many codes a row's bytes hold (the
            // largest I they fit; I and I − 1 give the same codes); unstamped codes are read
            // as [O, bytes per row] (what `tetrad inspect` does).
            let i = match stamp {
                Some("int4-row" | "int4-grouped" | "mxfp4") => 2 * cols,
                Some("int2-row") => 4 * cols,
                Some("int3-g64") => cols / 24 * 64,
                _ => cols,
            };
            c.tensor(name, o, i)
        };
        let view = match view {
            Ok(v) => v,
            Err(r) => {
                skipped.push(skip(format!("REFUSED {}: {}", r.class, r.detail)));
                continue;
            }
        };
        let Some((format, symbols)) = measured_as(view.format()) else {
            skipped.push(skip(format!("format {} is not measured", view.format().name())));
            continue;
        };
        let Ok(len) = usize::try_from(view.decoded_len()) else {
            skipped.push(skip("too large".into()));
            continue;
        };
        let mut data = vec![0u8; len];
        view.decode_into(&mut data)?;
        let row_bytes = match usize::try_from(o) {
            Ok(o) if o > 0 => len / o,
            _ => 0,
        };
        measured.push(Measured {
            name: name.clone(),
            file,
            format,
            format_source: if stamp.is_some() { "stamp" } else { "resolved" },
            shape,
            symbols,
            data,
            row_bytes,
            split: None,
        });
    }
    Ok((measured, skipped))
}

/// The GGML types `stats` measures, as the reason of a skipped GGUF tensor ends.
const GGUF_MEASURED: &str = "(measured: Q4_0, Q4_1, Q4_K, IQ4_NL, IQ4_XS, MXFP4, NVFP4 nibbles; \
                             Q8_0 bytes; Q2_K, Q3_K, Q5_0, Q5_1, Q5_K, Q6_K codes)";

/// Reads the code streams of one GGUF file.
pub fn collect_gguf(
    path: &Path,
    opts: &StatsOptions,
) -> Result<(Vec<Measured>, Vec<Skipped>), Refusal> {
    let bytes = crate::io::map_file(path)
        .map_err(|e| Refusal::new(Class::Io, format!("{}: {e}", path.display())))?;
    let g = gguf::parse(&bytes).map_err(|e| Refusal::of(&e, format!("{}: {e}", path.display())))?;
    let file = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut measured = Vec::new();
    let mut skipped = Vec::new();
    for t in &g.tensors {
        let skip = |reason: String| Skipped { name: t.name.clone(), file: file.clone(), reason };
        let Some((a, b)) = t.range else {
            skipped.push(skip(format!(
                "GGML {}: a type whose block size tetrad does not know, not measured",
                t.type_name()
            )));
            continue;
        };
        // parse() checked the range against the file.
        #[allow(clippy::cast_possible_truncation)]
        let data = &bytes[a as usize..b as usize];
        let ne0 = t.dims.first().copied().unwrap_or(1);
        match t.ggml_type {
            0 | 1 | 30 => {
                let dtype = match t.ggml_type {
                    0 => "F32",
                    1 => "F16",
                    _ => "BF16",
                };
                let shape = t.shape();
                if let Some(why) = not_a_matrix(&shape) {
                    skipped.push(skip(format!("{dtype} {shape:?}: {why}")));
                    continue;
                }
                match quantized(opts, &t.name, &file, dtype, &shape, data) {
                    Ok(m) => measured.push(m),
                    Err(why) => skipped.push(skip(format!("cannot quantize: {why}"))),
                }
            }
            ty => {
                let measure = |symbols, data, row_bytes: u64, split| Measured {
                    name: t.name.clone(),
                    file: file.clone(),
                    format: format!("gguf:{}", t.type_name()),
                    format_source: "gguf",
                    shape: t.shape(),
                    symbols,
                    data,
                    row_bytes: usize::try_from(row_bytes).unwrap_or(0),
                    split,
                };
                if let Some(codes) = gguf::code_bytes(ty, data) {
                    measured.push(if gguf::is_nibble_type(ty) {
                        measure(Symbols::Nibble, codes, ne0 / 2, None)
                    } else {
                        measure(Symbols::Byte, codes, ne0, None)
                    });
                } else if let Some(layout) = gguf::SplitLayout::of(ty) {
                    #[allow(clippy::cast_possible_truncation)] // 2, 3, 5 or 6
                    let symbols = Symbols::Split(layout.bits as u8);
                    // ne0 is a whole number of blocks (parse checked).
                    let row = ne0 / layout.weights * layout.planes as u64;
                    let planes = layout.planes_of(data);
                    measured.push(measure(symbols, planes, row, Some(layout)));
                } else {
                    let blocked = gguf::type_info(ty).is_some_and(|(_, block, _)| block > 1);
                    let what = if blocked {
                        "a block format whose codes stats does not read"
                    } else {
                        "not a quantized type"
                    };
                    skipped.push(skip(format!("GGML {}: {what} {GGUF_MEASURED}", t.type_name())));
                }
            }
        }
    }
    Ok((measured, skipped))
}

/// Collects every code stream of `paths` (see [`expand`]).
pub fn collect(
    paths: &[PathBuf],
    opts: &StatsOptions,
) -> Result<(Vec<Measured>, Vec<Skipped>), Refusal> {
    let mut m = Vec::new();
    let mut s = Vec::new();
    for p in expand(paths)? {
        let (a, b) = if !p.is_dir() && is_gguf(&p) {
            collect_gguf(&p, opts)?
        } else {
            collect_safetensors(&p, opts)?
        };
        m.extend(a);
        s.extend(b);
    }
    Ok((m, s))
}

fn sum_opt(it: impl Iterator<Item = Option<u64>>) -> Option<u64> {
    it.sum()
}

/// Measures the collected streams: counts, the pooled int4-rans256-g0 table and every codec.
pub fn measure(measured: Vec<Measured>, skipped: Vec<Skipped>, opts: &StatsOptions) -> Report {
    measure_with_progress(measured, skipped, opts, &|_| {})
}

/// [`measure`], calling `done(bytes)` as each tensor's codecs finish with its code bytes (from
/// the worker threads, in no particular order), for a progress bar: the codecs, zstd level 19
/// above all, are the long part.
pub fn measure_with_progress(
    measured: Vec<Measured>,
    skipped: Vec<Skipped>,
    opts: &StatsOptions,
    done: &(dyn Fn(u64) + Sync),
) -> Report {
    let counts: Vec<Counts> = measured.par_iter().map(|m| count_measured(m).compact()).collect();
    // The pooled tables, counted again per class (a table per thread, not per tensor).
    let pooled = |s: Symbols| {
        measured
            .par_iter()
            .filter(|m| m.symbols == s)
            .fold(
                || Counts::zero(s),
                |mut acc, m| {
                    acc.add(&count_measured(m));
                    acc
                },
            )
            .reduce(
                || Counts::zero(s),
                |mut a, b| {
                    a.add(&b);
                    a
                },
            )
    };
    let mut kinds: Vec<Symbols> = Vec::new();
    for m in &measured {
        if !kinds.contains(&m.symbols) {
            kinds.push(m.symbols);
        }
    }
    kinds.sort_by_key(|s| s.rank());
    let mut pooled_counts: Vec<Option<Counts>> = kinds.iter().map(|&s| Some(pooled(s))).collect();
    let mut pooled16 = [0u64; 16];
    for (m, c) in measured.iter().zip(&counts) {
        if m.symbols == Symbols::Nibble {
            pooled16.iter_mut().zip(&c.hist).for_each(|(a, b)| *a += b);
        }
    }
    let table = Table::from_histogram(FORMAT_SCALE_BITS, &pooled16).ok();
    let tensors: Vec<TensorStats> = measured
        .into_par_iter()
        .zip(counts)
        .map(|(m, counts)| {
            let rans256_bytes = match (&table, m.symbols) {
                (Some(t), Symbols::Nibble) => {
                    let mut blob = vec![0u8; max_record_len(2 * m.data.len(), FORMAT_STREAMS)];
                    encode_record_packed(t, &m.data, &mut blob).ok().map(|n| n as u64)
                }
                _ => None,
            };
            let cfs1_bytes = {
                let mut blob = vec![0u8; tetrad_fse::max_encoded_len(m.data.len())];
                tetrad_fse::encode_into(&m.data, &mut blob).ok().map(|n| n as u64)
            };
            let rans64_bytes = match m.symbols {
                Symbols::Nibble => {
                    let shift = tetrad_rans::rans64::DEFAULT_CHUNK_SHIFT;
                    let mut blob =
                        vec![0u8; tetrad_rans::rans64::max_encoded_len(m.data.len(), shift)];
                    tetrad_rans::rans64::encode_into(&m.data, shift, &mut blob)
                        .ok()
                        .map(|n| n as u64)
                }
                Symbols::Byte | Symbols::Split(_) => None,
            };
            let zstd19_bytes = opts
                .zstd
                .then(|| zstd::bulk::compress(&m.data, 19).ok().map(|v| v.len() as u64))
                .flatten();
            let bytes = m.data.len() as u64;
            done(bytes);
            TensorStats {
                name: m.name,
                file: m.file,
                format: m.format,
                format_source: m.format_source,
                shape: m.shape,
                symbols: m.symbols,
                bytes,
                counts,
                rans256_bytes,
                cfs1_bytes,
                rans64_bytes,
                zstd19_bytes,
            }
        })
        .collect();
    let table_bytes =
        table.as_ref().map(|t| crate::table_json::to_json(&table_parts(t)).len() as u64);
    let mut total = |s: Symbols| -> Option<Total> {
        let ts: Vec<&TensorStats> = tensors.iter().filter(|t| t.symbols == s).collect();
        if ts.is_empty() {
            return None;
        }
        let counts = pooled_counts[kinds.iter().position(|&k| k == s)?].take()?;
        let n = counts.symbols();
        let per_tensor = if n == 0 {
            0.0
        } else {
            ts.iter().map(|t| t.counts.symbols() as f64 * t.counts.entropy0()).sum::<f64>()
                / n as f64
        };
        let (rans256_bytes, rans256_table_bytes) = match s {
            Symbols::Nibble => (
                sum_opt(ts.iter().map(|t| t.rans256_bytes)).and_then(|r| Some(r + table_bytes?)),
                table_bytes,
            ),
            Symbols::Byte | Symbols::Split(_) => (None, None),
        };
        Some(Total {
            symbols: s,
            tensors: ts.len() as u64,
            bytes: ts.iter().map(|t| t.bytes).sum(),
            counts,
            entropy_bits_per_tensor: per_tensor,
            rans256_bytes,
            rans256_table_bytes,
            cfs1_bytes: sum_opt(ts.iter().map(|t| t.cfs1_bytes)),
            rans64_bytes: sum_opt(ts.iter().map(|t| t.rans64_bytes)),
            zstd19_bytes: sum_opt(ts.iter().map(|t| t.zstd19_bytes)),
        })
    };
    let split = kinds.iter().filter(|k| matches!(k, Symbols::Split(_))).filter_map(|&k| total(k));
    let split = split.collect();
    Report { nibbles: total(Symbols::Nibble), bytes: total(Symbols::Byte), split, tensors, skipped }
}

/// `bytes / compressed`, `None` when either is missing or zero.
pub fn ratio(bytes: u64, compressed: Option<u64>) -> Option<f64> {
    compressed.filter(|&c| c > 0 && bytes > 0).map(|c| bytes as f64 / c as f64)
}

/// `symbol_bits / H0`, `None` for a zero entropy.
pub fn ratio_bound(symbols: Symbols, h0: f64) -> Option<f64> {
    (h0 > 0.0).then(|| f64::from(symbols.bits()) / h0)
}

/// "order-1 context gains X bits", with a warning where the pairs are too few to estimate it:
/// the empirical conditional entropy of `n` pairs over `A²` cells is biased low (random bytes
/// would "gain" bits), so below ten pairs per cell the number is flagged.
fn order1_gain(t: &Total, h0: f64) -> String {
    let gain = h0 - t.counts.entropy1();
    let cells = (t.counts.hist.len() as u64).pow(2);
    let pairs: u64 = t.counts.pair_total();
    if pairs < 10 * cells {
        format!(
            "order-1 context gains {gain:.3} bits (unreliable: {pairs} symbol pairs for {cells} context cells, an estimate biased high on so little data)"
        )
    } else {
        format!("order-1 context gains {gain:.3} bits")
    }
}

/// A plain sentence on how far lossless coding can go for a total.
pub fn verdict(t: &Total) -> String {
    let h = t.counts.entropy0();
    let bits = f64::from(t.symbols.bits());
    let saving = (1.0 - h / bits) * 100.0;
    let what = t.symbols.name();
    if t.counts.symbols() == 0 {
        return format!("no {what}s to measure: the tensors are empty");
    }
    if h <= 0.0 {
        return format!(
            "every {what} is the same value: entropy 0, so only framing is left to store (no finite ratio bound)"
        );
    }
    if saving < 10.0 {
        format!(
            "these codes barely compress: the {what} entropy is {h:.3} of {bits} bits, so no order-0 lossless coder can save more than {saving:.1}% (the codes use their range almost evenly, as group-quantized codes do); {}",
            order1_gain(t, h)
        )
    } else {
        format!(
            "lossless coding can save up to {saving:.1}%: {what} entropy {h:.3} of {bits} bits (ratio bound {:.3}x); {}",
            bits / h,
            order1_gain(t, h)
        )
    }
}
