//! File plumbing shared by every command: memory-mapped inputs and atomic outputs.
//!
//! Outputs are written to a temporary file in the destination directory, flushed to disk and
//! renamed over the final name, so a failure (or a kill) never leaves a partial file under a
//! name a user or another tool would trust. Inputs are memory-mapped so that multi-gigabyte
//! shards cost no copy and no heap.

#![allow(unsafe_code)] // memmap2::Mmap::map is unsafe; the contract is documented on `map_file`.

use std::fs::File;
use std::io::Write;
use std::path::Path;

/// A read-only view of a whole file.
#[derive(Debug)]
pub enum Mapped {
    /// A memory map of a non-empty file.
    Map(memmap2::Mmap),
    /// An empty file (cannot be mapped).
    Empty,
}

impl std::ops::Deref for Mapped {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Self::Map(m) => m,
            Self::Empty => &[],
        }
    }
}

/// Maps `path` read-only.
///
/// Like every tool that memory-maps its inputs, tetrad requires that input files are not
/// truncated or rewritten while it runs; a concurrent writer could change the bytes under a
/// decoder (every decoder is bounds-checked, so the worst case is a wrong refusal, but a
/// truncation can raise SIGBUS).
pub fn map_file(path: &Path) -> std::io::Result<Mapped> {
    let file = File::open(path)?;
    if file.metadata()?.len() == 0 {
        return Ok(Mapped::Empty);
    }
    // SAFETY: the map is read-only and private to this process; the file-not-modified
    // contract is documented above (it cannot be enforced by any mmap-based reader).
    let map = unsafe { memmap2::Mmap::map(&file)? };
    Ok(Mapped::Map(map))
}

/// Writes `path` atomically: `write` fills a temporary file in the same directory, which is
/// synced and renamed over `path` only if `write` succeeds.
pub fn write_atomic<E: From<std::io::Error>>(
    path: &Path,
    write: impl FnOnce(&mut std::io::BufWriter<&mut File>) -> Result<(), E>,
) -> Result<(), E> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new().prefix(".tetrad-tmp-").tempfile_in(dir)?;
    {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, tmp.as_file_mut());
        write(&mut w)?;
        w.flush()?;
    }
    // The temporary file is created 0600; the result should carry the permissions a plain
    // `File::create` would give it: an existing file's own, else rw-r--r--.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).map_or(0o644, |m| m.permissions().mode() & 0o7777);
        tmp.as_file().set_permissions(std::fs::Permissions::from_mode(mode))?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| E::from(e.error))?;
    Ok(())
}

/// A zeroed buffer of `n` bytes, or `None` where the allocator refuses it — so that a size
/// declared by an input (a decoded tensor's byte count) that this machine cannot hold becomes
/// a named refusal instead of an abort.
pub fn try_zeroed(n: usize) -> Option<Vec<u8>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).ok()?;
    v.resize(n, 0);
    Some(v)
}

/// Writes `bytes` to `path` atomically.
pub fn write_bytes_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic(path, |w| w.write_all(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn try_zeroed_refuses_what_cannot_be_allocated() {
        assert_eq!(try_zeroed(5).unwrap(), [0u8; 5]);
        assert!(try_zeroed(usize::MAX / 2).is_none());
    }

    #[cfg(unix)]
    #[test]
    fn atomic_write_gives_ordinary_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("new.bin");
        write_bytes_atomic(&p, b"x").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode(&p), 0o644, "a new file is rw-r--r--, not the temp file's 0600");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_bytes_atomic(&p, b"y").unwrap();
        assert_eq!(mode(&p), 0o640, "an existing file keeps its mode");
        assert_eq!(std::fs::read(&p).unwrap(), b"y");
    }

    #[test]
    fn atomic_write_leaves_nothing_on_failure() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.bin");
        write_bytes_atomic(&p, b"hello").unwrap();
        assert_eq!(&*map_file(&p).unwrap(), b"hello");
        let r: std::io::Result<()> = write_atomic(&p, |w| {
            w.write_all(b"partial")?;
            Err(std::io::Error::other("boom"))
        });
        assert!(r.is_err());
        assert_eq!(std::fs::read(&p).unwrap(), b"hello", "old file untouched");
        let names: Vec<_> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1, "no temp file left behind: {names:?}");
        let empty = dir.path().join("empty");
        std::fs::write(&empty, b"").unwrap();
        assert!(map_file(&empty).unwrap().is_empty());
    }
}
