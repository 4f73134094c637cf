//! A directory (or list) of safetensors shards, memory-mapped and indexed by tensor name.
//!
//! Multi-file checkpoints spread tensors over shards (`model-00001-of-00004.safetensors`, …),
//! and a quantized weight's scales (`X.qs`) may live in another shard than `X`. A [`ShardSet`]
//! maps every shard, parses every header with the strict reader checks, and indexes all tensor
//! names; a name present in several shards maps to the last of them in sorted path order
//! (the reference tools' rule).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{Class, Refusal};
use crate::io::{Mapped, map_file};
use crate::shard::{ShardHeader, TensorEntry};

/// One opened shard.
#[derive(Debug)]
pub struct Shard {
    /// Path as opened.
    pub path: PathBuf,
    /// The file's bytes.
    pub bytes: Mapped,
    /// Its parsed header.
    pub header: ShardHeader,
}

impl Shard {
    /// Opens and parses one shard (strict checks).
    pub fn open(path: &Path) -> Result<Self, Refusal> {
        let bytes = map_file(path).map_err(|e| io_refusal(path, &e))?;
        let header = ShardHeader::parse(&bytes, bytes.len() as u64)
            .and_then(|h| h.check_strict().map(|()| h))
            .map_err(|e| Refusal::new(Class::ShardMalformed, format!("{}: {e}", path.display())))?;
        Ok(Self { path: path.to_owned(), bytes, header })
    }

    /// The data bytes of a tensor of this shard.
    pub fn data(&self, t: &TensorEntry) -> &[u8] {
        // Offsets were checked against the data section when the header was parsed.
        let at = usize::try_from(self.header.data_start + t.begin).expect("mapped file offset");
        &self.bytes[at..at + usize::try_from(t.len()).expect("mapped length")]
    }

    /// The file name (without directory).
    pub fn basename(&self) -> String {
        self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    }
}

/// A failure to read `path`: `E_IO` naming the path.
fn io_refusal(path: &Path, e: &std::io::Error) -> Refusal {
    Refusal::new(Class::Io, format!("{}: {e}", path.display()))
}

/// The non-hidden `*.safetensors` files of a directory, sorted by path.
pub fn list_shards(dir: &Path) -> Result<Vec<PathBuf>, Refusal> {
    let rd = std::fs::read_dir(dir).map_err(|e| io_refusal(dir, &e))?;
    let mut out = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| io_refusal(dir, &e))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || !name.ends_with(".safetensors") {
            continue;
        }
        if entry.file_type().map_err(|e| io_refusal(&entry.path(), &e))?.is_dir() {
            continue;
        }
        out.push(entry.path());
    }
    out.sort();
    Ok(out)
}

/// The shard files a command-line path stands for: a directory is its [`list_shards`] (none
/// is `E_NO_INPUT`), anything else is itself (opening it says what is wrong with it).
pub fn shards_of(path: &Path) -> Result<Vec<PathBuf>, Refusal> {
    if !path.is_dir() {
        return Ok(vec![path.to_owned()]);
    }
    let paths = list_shards(path)?;
    if paths.is_empty() {
        return Err(Refusal::new(
            Class::NoInput,
            format!("no *.safetensors files in {}", path.display()),
        ));
    }
    Ok(paths)
}

/// Where a tensor lives: shard index and entry index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loc {
    /// Index into [`ShardSet::shards`].
    pub shard: usize,
    /// Index into that shard's header tensors.
    pub entry: usize,
}

/// Shards indexed by tensor name.
#[derive(Debug)]
pub struct ShardSet {
    /// The shards, sorted by path.
    pub shards: Vec<Shard>,
    /// Tensor name → location (last shard wins).
    pub index: BTreeMap<String, Loc>,
}

impl ShardSet {
    /// Opens every shard of `dir` (see [`shards_of`]).
    pub fn open_dir(dir: &Path) -> Result<Self, Refusal> {
        Self::open_files(&shards_of(dir)?)
    }

    /// Opens the given shard files (indexed in the order given).
    pub fn open_files(paths: &[PathBuf]) -> Result<Self, Refusal> {
        let shards = paths.iter().map(|p| Shard::open(p)).collect::<Result<Vec<_>, _>>()?;
        let mut index = BTreeMap::new();
        for (si, s) in shards.iter().enumerate() {
            for (ei, t) in s.header.tensors.iter().enumerate() {
                index.insert(t.name.clone(), Loc { shard: si, entry: ei });
            }
        }
        Ok(Self { shards, index })
    }

    /// The entry of a location.
    pub fn entry(&self, loc: Loc) -> &TensorEntry {
        &self.shards[loc.shard].header.tensors[loc.entry]
    }

    /// The data of a location.
    pub fn data(&self, loc: Loc) -> &[u8] {
        let s = &self.shards[loc.shard];
        s.data(&s.header.tensors[loc.entry])
    }

    /// Looks a tensor up by name.
    pub fn get(&self, name: &str) -> Option<(Loc, &TensorEntry)> {
        self.index.get(name).map(|&l| (l, self.entry(l)))
    }
}
