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

/// Opens `path` for reading, refusing anything but a regular file (symlinks followed): opening
/// a FIFO blocks until a writer appears and reading a device may never end, so a `*.safetensors`
/// that is either would hang a command instead of failing it. The kind is checked before the
/// open (which is what would block) and again on the opened handle.
pub fn open_input(path: &Path) -> std::io::Result<File> {
    let not_regular = |kind: std::fs::FileType| {
        let what = if kind.is_dir() { "a directory" } else { "a FIFO, socket or device" };
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("not a regular file (it is {what})"),
        )
    };
    let kind = std::fs::metadata(path)?.file_type();
    if !kind.is_file() {
        return Err(not_regular(kind));
    }
    let file = File::open(path)?;
    let kind = file.metadata()?.file_type();
    if !kind.is_file() {
        return Err(not_regular(kind));
    }
    Ok(file)
}

/// Reads the whole of `path`, a regular file ([`open_input`]).
pub fn read_input(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut open_input(path)?, &mut bytes)?;
    Ok(bytes)
}

/// Maps `path` (a regular file, [`open_input`]) read-only.
///
/// Like every tool that memory-maps its inputs, tetrad requires that input files are not
/// truncated or rewritten while it runs; a concurrent writer could change the bytes under a
/// decoder (every decoder is bounds-checked, so the worst case is a wrong refusal, but a
/// truncation can raise SIGBUS).
pub fn map_file(path: &Path) -> std::io::Result<Mapped> {
    let file = open_input(path)?;
    if file.metadata()?.len() == 0 {
        return Ok(Mapped::Empty);
    }
    // SAFETY: the map is read-only and private to this process; the file-not-modified
    // contract is documented above (it cannot be enforced by any mmap-based reader).
    let map = unsafe { memmap2::Mmap::map(&file)? };
    Ok(Mapped::Map(map))
}

/// Writes `path` atomically: `write` fills a temporary file in the same directory, which is
/// synced and renamed over `path` only if `write` succeeds ([`stage`], then
/// [`Staged::commit`]).
pub fn write_atomic<E: From<std::io::Error>>(
    path: &Path,
    write: impl FnOnce(&mut std::io::BufWriter<&mut File>) -> Result<(), E>,
) -> Result<(), E> {
    stage(path, write)?.commit()?;
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

// ---- Output safety ---------------------------------------------------------------------------
//
// Every command that writes a file refuses an output that is one of its inputs (whatever
// `--force` says), refuses to replace an existing output unless `--force`, and can stage
// several outputs beside their destinations so that they appear all together or not at all.

/// Whether `a` and `b` name the same existing file: the same device and inode on unix (so a
/// hard link or a symbolic link to the other is caught), the same canonical path elsewhere.
/// False when either does not exist.
pub fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
            return x.dev() == y.dev() && x.ino() == y.ino();
        }
    }
    matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
}

/// Checks, before any work, that `output` may be written by a command reading `inputs`
/// (files; a command reading a directory passes the files it reads):
/// - `E_OUTPUT_IS_INPUT`: `output` is one of `inputs` ([`same_file`]), refused even with
///   `force`: the rename would replace the input with what was computed from it;
/// - `E_OUTPUT_IS_DIR`: `output` is a directory (no file can replace it);
/// - `E_OUTPUT_EXISTS`: `output` exists (a dangling symbolic link included) and `force` is
///   false.
pub fn check_output<P: AsRef<Path>>(
    output: &Path,
    inputs: impl IntoIterator<Item = P>,
    force: bool,
) -> Result<(), crate::rans256::Refusal> {
    use crate::rans256::Refusal;
    for input in inputs {
        let input = input.as_ref();
        if same_file(output, input) {
            let what = if output == input {
                "is also an input".to_owned()
            } else {
                format!("is the same file as the input {}", input.display())
            };
            return Err(Refusal::new(
                "E_OUTPUT_IS_INPUT",
                format!(
                    "{} {what}; writing it would replace the input (choose another output path)",
                    output.display()
                ),
            ));
        }
    }
    if output.is_dir() {
        return Err(Refusal::new(
            "E_OUTPUT_IS_DIR",
            format!("{} is a directory; the output is a file", output.display()),
        ));
    }
    if !force && std::fs::symlink_metadata(output).is_ok() {
        return Err(Refusal::new(
            "E_OUTPUT_EXISTS",
            format!("{} exists (pass --force to replace it)", output.display()),
        ));
    }
    Ok(())
}

/// A temporary file, fully written and synced in its destination's directory, waiting to be
/// renamed over the destination by [`Staged::commit`]. Dropped uncommitted, it is deleted:
/// a run that writes several files stages them all and commits only when all succeeded.
#[derive(Debug)]
pub struct Staged {
    tmp: tempfile::TempPath,
    dest: std::path::PathBuf,
}

impl Staged {
    /// The path the file will have once committed.
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// Renames the file over its destination.
    pub fn commit(self) -> std::io::Result<()> {
        self.tmp.persist(&self.dest).map_err(|e| e.error)
    }
}

/// [`write_atomic`] before its rename: `write` fills a temporary file beside `path`, which is
/// flushed, given the permissions a plain `File::create` would give the result (an existing
/// file's own, else rw-r--r--; the temporary file is created 0600), synced and closed, and
/// returned uncommitted (so staging many files holds no file handles open).
pub fn stage<E: From<std::io::Error>>(
    path: &Path,
    write: impl FnOnce(&mut std::io::BufWriter<&mut File>) -> Result<(), E>,
) -> Result<Staged, E> {
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
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).map_or(0o644, |m| m.permissions().mode() & 0o7777);
        tmp.as_file().set_permissions(std::fs::Permissions::from_mode(mode))?;
    }
    tmp.as_file().sync_all()?;
    Ok(Staged { tmp: tmp.into_temp_path(), dest: path.to_owned() })
}

/// The directories [`CreatedDirs::create`] made. Dropped without [`CreatedDirs::keep`], it
/// removes those that are still empty (innermost first), so a refused run leaves no new,
/// empty output directory behind.
#[derive(Debug)]
pub struct CreatedDirs {
    /// Outermost first.
    made: Vec<std::path::PathBuf>,
}

impl CreatedDirs {
    /// Creates `dir` and its missing parents (`create_dir_all`), remembering which were new.
    pub fn create(dir: &Path) -> std::io::Result<Self> {
        let mut made: Vec<std::path::PathBuf> = dir
            .ancestors()
            .take_while(|d| !d.as_os_str().is_empty() && std::fs::symlink_metadata(d).is_err())
            .map(Path::to_path_buf)
            .collect();
        made.reverse();
        std::fs::create_dir_all(dir)?;
        Ok(Self { made })
    }

    /// Keeps the directories.
    pub fn keep(mut self) {
        self.made.clear();
    }
}

impl Drop for CreatedDirs {
    fn drop(&mut self) {
        for d in self.made.iter().rev() {
            // Only an empty directory is removed; anything else stays as it is.
            let _ = std::fs::remove_dir(d);
        }
    }
}

#[cfg(test)]
mod output_safety_tests {
    use super::*;

    #[test]
    fn same_file_sees_links_and_check_output_names_each_class() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.bin");
        std::fs::write(&a, b"a").unwrap();
        let dotted = dir.path().join(".").join("a.bin");
        assert!(same_file(&a, &dotted));
        let other = dir.path().join("b.bin");
        assert!(!same_file(&a, &other), "a missing file is no file");
        std::fs::write(&other, b"a").unwrap();
        assert!(!same_file(&a, &other), "equal bytes are not the same file");
        let class = |r: Result<(), crate::rans256::Refusal>| r.map_err(|e| e.class);
        assert_eq!(class(check_output(&a, [&a], true)), Err("E_OUTPUT_IS_INPUT"));
        assert_eq!(class(check_output(&dotted, [&a], true)), Err("E_OUTPUT_IS_INPUT"));
        #[cfg(unix)]
        {
            let hard = dir.path().join("hard.bin");
            std::fs::hard_link(&a, &hard).unwrap();
            assert_eq!(class(check_output(&hard, [&a], true)), Err("E_OUTPUT_IS_INPUT"));
            let soft = dir.path().join("soft.bin");
            std::os::unix::fs::symlink(&a, &soft).unwrap();
            assert_eq!(class(check_output(&soft, [&a], true)), Err("E_OUTPUT_IS_INPUT"));
            let dangling = dir.path().join("dangling.bin");
            std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
            assert_eq!(class(check_output(&dangling, [&a], false)), Err("E_OUTPUT_EXISTS"));
        }
        assert_eq!(class(check_output(&other, [&a], false)), Err("E_OUTPUT_EXISTS"));
        assert_eq!(class(check_output(&other, [&a], true)), Ok(()));
        assert_eq!(class(check_output(dir.path(), [&a], true)), Err("E_OUTPUT_IS_DIR"));
        let new = dir.path().join("new.bin");
        assert_eq!(class(check_output(&new, [&a], false)), Ok(()));
    }

    #[test]
    fn staged_files_appear_on_commit_only_and_created_dirs_go_unless_kept() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("x").join("y");
        let made = CreatedDirs::create(&out).unwrap();
        let s = stage(&out.join("f.bin"), |w| w.write_all(b"data")).unwrap();
        assert_eq!(s.dest(), out.join("f.bin"));
        assert!(!out.join("f.bin").exists());
        drop(s);
        assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0, "temp removed on drop");
        drop(made);
        assert!(!dir.path().join("x").exists(), "both new directories removed");
        let made = CreatedDirs::create(&out).unwrap();
        stage(&out.join("f.bin"), |w| w.write_all(b"data")).unwrap().commit().unwrap();
        drop(made);
        assert_eq!(std::fs::read(out.join("f.bin")).unwrap(), b"data", "non-empty dirs stay");
        let made = CreatedDirs::create(&out).unwrap();
        drop(made);
        assert!(out.exists(), "an existing directory is never removed");
        let kept = dir.path().join("kept");
        CreatedDirs::create(&kept).unwrap().keep();
        assert!(kept.is_dir());
    }
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
