//! File plumbing shared by every command: memory-mapped inputs, and the checks an output path
//! passes before anything is written (how outputs are written is [`crate::output`]).
//!
//! Inputs are memory-mapped so that multi-gigabyte shards cost no copy and no heap.

#![allow(unsafe_code)] // memmap2::Mmap::map is unsafe; the contract is documented on `map_file`.

use std::fs::File;
use std::path::Path;

use crate::error::{Class, Refusal};

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

/// A zeroed buffer of `n` bytes, or `None` where the allocator refuses it — so that a size
/// declared by an input (a decoded tensor's byte count) that this machine cannot hold becomes
/// a named refusal instead of an abort.
pub fn try_zeroed(n: usize) -> Option<Vec<u8>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).ok()?;
    v.resize(n, 0);
    Some(v)
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
) -> Result<(), Refusal> {
    for input in inputs {
        let input = input.as_ref();
        if same_file(output, input) {
            let what = if output == input {
                "is also an input".to_owned()
            } else {
                format!("is the same file as the input {}", input.display())
            };
            return Err(Refusal::new(
                Class::OutputIsInput,
                format!(
                    "{} {what}; writing it would replace the input (choose another output path)",
                    output.display()
                ),
            ));
        }
    }
    if output.is_dir() {
        return Err(Refusal::new(
            Class::OutputIsDir,
            format!("{} is a directory; the output is a file", output.display()),
        ));
    }
    if !force && std::fs::symlink_metadata(output).is_ok() {
        return Err(Refusal::new(
            Class::OutputExists,
            format!("{} exists (pass --force to replace it)", output.display()),
        ));
    }
    Ok(())
}

/// Refuses an output folder path that exists and is not a folder (`E_OUTPUT_NOT_DIR`), before
/// any work: a file where a command writes a set of files.
pub fn check_output_dir(dir: &Path) -> Result<(), Refusal> {
    if dir.exists() && !dir.is_dir() {
        return Err(Refusal::new(
            Class::OutputNotDir,
            format!("{} is not a directory; the output is a folder to write into", dir.display()),
        ));
    }
    Ok(())
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
        let class = |r: Result<(), Refusal>| r.map_err(|e| e.class);
        assert_eq!(class(check_output(&a, [&a], true)), Err(Class::OutputIsInput));
        assert_eq!(class(check_output(&dotted, [&a], true)), Err(Class::OutputIsInput));
        #[cfg(unix)]
        {
            let hard = dir.path().join("hard.bin");
            std::fs::hard_link(&a, &hard).unwrap();
            assert_eq!(class(check_output(&hard, [&a], true)), Err(Class::OutputIsInput));
            let soft = dir.path().join("soft.bin");
            std::os::unix::fs::symlink(&a, &soft).unwrap();
            assert_eq!(class(check_output(&soft, [&a], true)), Err(Class::OutputIsInput));
            let dangling = dir.path().join("dangling.bin");
            std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
            assert_eq!(class(check_output(&dangling, [&a], false)), Err(Class::OutputExists));
        }
        assert_eq!(class(check_output(&other, [&a], false)), Err(Class::OutputExists));
        assert_eq!(class(check_output(&other, [&a], true)), Ok(()));
        assert_eq!(class(check_output(dir.path(), [&a], true)), Err(Class::OutputIsDir));
        let new = dir.path().join("new.bin");
        assert_eq!(class(check_output(&new, [&a], false)), Ok(()));
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
}
