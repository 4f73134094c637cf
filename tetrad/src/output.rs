//! The write discipline every command that writes files shares: all of a run's outputs appear
//! together, whole and synced, or none of them does.
//!
//! A run collects its outputs in one [`Outputs`]. [`Outputs::stage`] writes a file's bytes to
//! an unnamed temporary file in the destination's folder (Linux `O_TMPFILE`; where the file
//! system has none, a hidden `.tetrad-tmp-<pid>-<random>` file) and syncs it.
//! [`Outputs::commit`] then, and only then, removes what the run replaces (a stale completion
//! marker first), gives each staged file its name in staging order — so a completion marker
//! staged last appears last — and syncs the folders. Dropped uncommitted (a refusal, an I/O
//! error such as ENOSPC, a panic), an `Outputs` removes every temporary file and every folder
//! the run created.
//!
//! Signals: the CLI calls [`exit_on_signals`]; SIGINT, SIGTERM or SIGHUP then removes what the
//! runs in progress staged and the folders they created, and exits 130 / 143 / 129. A commit in progress is
//! finished first (the renames take microseconds), so a signal never leaves half a set.
//!
//! A killed run (SIGKILL, power loss) leaves no temporary file where `O_TMPFILE` works: the
//! kernel frees an unnamed file with its last descriptor. Elsewhere, and in the instant
//! between naming a file and renaming it over the one it replaces, a `.tetrad-tmp-<pid>-…`
//! name can stay behind; [`sweep_stale`] (which every writing command runs on its output
//! folder first) removes those whose process is gone and says which. A set killed between its
//! files' renames lacks its completion marker (pack's manifest, renamed last), so it never
//! verifies as whole.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The prefix of every named temporary file tetrad writes.
pub const TEMP_PREFIX: &str = ".tetrad-tmp-";

/// At most this many unnamed staged files held open by one run (each holds a descriptor until
/// its commit); past it, named temporary files, which hold none.
const MAX_UNNAMED: usize = 256;

/// The temporary files and created folders of every run in progress in this process, for the
/// signal handler to remove. The lock is held while a named temporary file is created and
/// registered, and for the whole of a commit, so the handler sees a consistent state.
struct Live {
    temps: Vec<PathBuf>,
    /// Folders created, outermost first.
    dirs: Vec<PathBuf>,
    /// Whether a commit has completed in this process (a signal after it leaves whole outputs).
    committed: bool,
}

static LIVE: Mutex<Live> =
    Mutex::new(Live { temps: Vec::new(), dirs: Vec::new(), committed: false });

fn live() -> MutexGuard<'static, Live> {
    LIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A file written and synced, not yet under its name.
#[derive(Debug)]
enum Body {
    /// An unnamed `O_TMPFILE` file, linked in at commit.
    #[cfg(target_os = "linux")]
    Unnamed(File),
    /// A hidden named temporary file, renamed at commit.
    Named(PathBuf),
}

#[derive(Debug)]
struct StagedFile {
    dest: PathBuf,
    body: Body,
}

/// The outputs of one run: staged, then committed together (see the module docs).
#[derive(Debug, Default)]
pub struct Outputs {
    staged: Vec<StagedFile>,
    retire: Vec<PathBuf>,
    /// Folders this run created, outermost first.
    dirs: Vec<PathBuf>,
    committed: bool,
}

impl Outputs {
    /// An empty set of outputs.
    pub fn new() -> Self {
        Self::default()
    }

    /// Creates `dir` and its missing parents; those that were new are removed again (if empty)
    /// unless the run commits.
    pub fn create_dir(&mut self, dir: &Path) -> io::Result<()> {
        let mut live = live();
        let mut made: Vec<PathBuf> = dir
            .ancestors()
            .take_while(|d| !d.as_os_str().is_empty() && std::fs::symlink_metadata(d).is_err())
            .map(Path::to_path_buf)
            .collect();
        made.reverse();
        std::fs::create_dir_all(dir)?;
        live.dirs.extend(made.iter().cloned());
        self.dirs.extend(made);
        Ok(())
    }

    /// Writes a file that will be `dest` once the run commits: `write` fills a temporary file
    /// in `dest`'s folder, which is then flushed, given the permissions a plain
    /// `File::create` would give `dest` (an existing file's own, else rw-r--r--) and synced.
    /// An error names `dest`, never the temporary file.
    pub fn stage<E: From<io::Error>>(
        &mut self,
        dest: &Path,
        write: impl FnOnce(&mut dyn Write) -> Result<(), E>,
    ) -> Result<(), E> {
        let dir = match dest.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let unnamed_open = self.staged.iter().filter(|s| !matches!(s.body, Body::Named(_))).count();
        let (mut file, body) =
            open_temp(dir, unnamed_open < MAX_UNNAMED).map_err(|e| naming(dest, &e))?;
        // Registered before the first byte is written, so a refusal from `write` removes it.
        let index = self.staged.len();
        self.staged.push(StagedFile { dest: dest.to_owned(), body });
        let result = (|| {
            {
                let mut w = io::BufWriter::with_capacity(1 << 20, Sink { file: &mut file, dest });
                write(&mut w)?;
                w.flush().map_err(|e| naming(dest, &e))?;
            }
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let mode =
                    std::fs::metadata(dest).map_or(0o644, |m| m.permissions().mode() & 0o7777);
                file.set_permissions(std::fs::Permissions::from_mode(mode))
                    .map_err(|e| naming(dest, &e))?;
            }
            file.sync_all().map_err(|e| naming(dest, &e))?;
            Ok(())
        })();
        if let Err(e) = result {
            let gone = self.staged.remove(index);
            discard(gone.body);
            return Err(e);
        }
        if index == 0 {
            hold("staged");
        }
        Ok(())
    }

    /// Removes `path` at commit, before any staged file is renamed (an old completion marker
    /// first, then the files it vouched for, in the order given). A missing file is fine.
    pub fn retire(&mut self, path: &Path) {
        self.retire.push(path.to_owned());
    }

    /// Puts every staged file in place, in staging order, after removing what
    /// [`retire`](Self::retire) named, and syncs the folders. Should a step fail, the files
    /// this commit had already created are removed again; files it replaced cannot be
    /// restored, and the error names them.
    pub fn commit(mut self) -> io::Result<()> {
        hold("commit");
        let mut live = live();
        let last = self.staged.len().saturating_sub(1);
        let mut created: Vec<PathBuf> = Vec::new();
        let mut replaced: Vec<String> = Vec::new();
        let mut folders: Vec<PathBuf> = (self.staged.iter().map(|s| &s.dest))
            .chain(&self.retire)
            .map(|p| p.parent().map_or_else(PathBuf::new, Path::to_path_buf))
            .collect();
        folders.sort();
        folders.dedup();
        let mut pending = std::mem::take(&mut self.staged).into_iter().enumerate();
        let result = (|| {
            for p in &self.retire {
                match std::fs::remove_file(p) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => {
                        return Err(io::Error::new(
                            e.kind(),
                            format!("removing {}: {e}", p.display()),
                        ));
                    }
                    _ => {}
                }
            }
            for (k, s) in pending.by_ref() {
                if k == last && k > 0 {
                    hold("marker");
                }
                let existed = std::fs::symlink_metadata(&s.dest).is_ok();
                let dest = s.dest.clone();
                place(s, &mut live).map_err(|e| {
                    let also = if replaced.is_empty() {
                        String::new()
                    } else {
                        format!("; already replaced: {}", replaced.join(", "))
                    };
                    io::Error::new(e.kind(), format!("{}: {e}{also}", dest.display()))
                })?;
                if existed {
                    replaced.push(dest.display().to_string());
                } else {
                    created.push(dest);
                }
            }
            for d in &folders {
                sync_dir(d)?;
            }
            Ok(())
        })();
        match result {
            Ok(()) => {
                // The folders stay: they hold the outputs now.
                live.dirs.retain(|d| !self.dirs.contains(d));
                self.dirs.clear();
                self.committed = true;
                live.committed = true;
                Ok(())
            }
            Err(e) => {
                for p in &created {
                    let _ = std::fs::remove_file(p);
                }
                // The files not reached are discarded here: the lock is held.
                for (_, s) in pending {
                    discard_locked(s.body, &mut live);
                }
                Err(e)
            }
        }
    }
}

impl Drop for Outputs {
    fn drop(&mut self) {
        for s in std::mem::take(&mut self.staged) {
            discard(s.body);
        }
        let mut live = live();
        for d in self.dirs.iter().rev() {
            // Only an empty folder is removed; anything else stays as it is.
            let _ = std::fs::remove_dir(d);
        }
        live.dirs.retain(|d| !self.dirs.contains(d));
    }
}

/// Writes `path` alone under the discipline: staged, synced, renamed.
pub fn write_file<E: From<io::Error>>(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> Result<(), E>,
) -> Result<(), E> {
    let mut out = Outputs::new();
    out.stage(path, write)?;
    out.commit()?;
    Ok(())
}

/// Writes `bytes` to `path` under the discipline.
pub fn write_bytes(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_file(path, |w| w.write_all(bytes))
}

/// An I/O error's message once it names the destination.
#[derive(Debug)]
struct Named(String);

impl std::fmt::Display for Named {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Named {}

/// Checks, before the work that produces it, that a file can be staged beside `dest`: its
/// folder exists, is a folder and is writable. A long run then does not end in an I/O error
/// that loses its result.
pub fn check_writable(dest: &Path) -> io::Result<()> {
    let dir = match dest.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let (_, body) = open_temp(dir, true).map_err(|e| naming(dest, &e))?;
    discard(body);
    Ok(())
}

/// `e` with `dest` named (once) and no temporary path in its message.
fn naming(dest: &Path, e: &io::Error) -> io::Error {
    if e.get_ref().is_some_and(|inner| inner.is::<Named>()) {
        return io::Error::new(e.kind(), Named(e.to_string()));
    }
    let plain = e
        .raw_os_error()
        .map_or_else(|| e.to_string(), |c| io::Error::from_raw_os_error(c).to_string());
    io::Error::new(e.kind(), Named(format!("writing {}: {plain}", dest.display())))
}

/// A new temporary file in `dir`: unnamed where the file system supports it, else named and
/// registered for the signal handler.
fn open_temp(dir: &Path, unnamed: bool) -> io::Result<(File, Body)> {
    #[cfg(target_os = "linux")]
    if unnamed && !force_named(dir) {
        use rustix::fs::{Mode, OFlags};
        match rustix::fs::openat(
            rustix::fs::CWD,
            dir,
            OFlags::WRONLY | OFlags::TMPFILE | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        ) {
            Ok(fd) => {
                // Two descriptors of one open file: one to write through, one kept to link it.
                let file = File::from(fd);
                let body = Body::Unnamed(file.try_clone()?);
                return Ok((file, body));
            }
            // No O_TMPFILE on this file system (or kernel): a named file instead.
            Err(e)
                if [
                    rustix::io::Errno::OPNOTSUPP,
                    rustix::io::Errno::ISDIR,
                    rustix::io::Errno::INVAL,
                ]
                .contains(&e) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let mut live = live();
    let (file, path) = named_temp(dir)?;
    live.temps.push(path.clone());
    Ok((file, Body::Named(path)))
}

/// A hidden, exclusively created file `.tetrad-tmp-<pid>-<random>` in `dir`.
fn named_temp(dir: &Path) -> io::Result<(File, PathBuf)> {
    let prefix = format!("{TEMP_PREFIX}{}-", std::process::id());
    let (file, path) =
        tempfile::Builder::new().prefix(&prefix).tempfile_in(dir)?.keep().map_err(|e| e.error)?;
    Ok((file, path))
}

/// Removes a staged file that will not be committed.
fn discard(body: Body) {
    discard_locked(body, &mut live());
}

/// [`discard`] for a caller that holds the registry lock.
fn discard_locked(body: Body, live: &mut Live) {
    match body {
        #[cfg(target_os = "linux")]
        Body::Unnamed(_) => {} // freed with its descriptor
        Body::Named(path) => {
            let _ = std::fs::remove_file(&path);
            live.temps.retain(|p| *p != path);
        }
    }
}

/// Gives a staged file its name (the caller holds the registry lock).
fn place(s: StagedFile, live: &mut Live) -> io::Result<()> {
    match s.body {
        #[cfg(target_os = "linux")]
        Body::Unnamed(file) => {
            use std::os::fd::AsRawFd;
            let proc_path = format!("/proc/self/fd/{}", file.as_raw_fd());
            let link = |to: &Path| {
                rustix::fs::linkat(
                    rustix::fs::CWD,
                    proc_path.as_str(),
                    rustix::fs::CWD,
                    to,
                    rustix::fs::AtFlags::SYMLINK_FOLLOW,
                )
            };
            if std::fs::symlink_metadata(&s.dest).is_err() {
                match link(&s.dest) {
                    Ok(()) => return Ok(()),
                    Err(rustix::io::Errno::EXIST) => {} // appeared meanwhile: replace it below
                    Err(e) => return Err(e.into()),
                }
            }
            // Replacing a file: link under a temporary name, then rename over it (atomic).
            let dir =
                s.dest.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
            let tmp = dir.join(format!(
                "{TEMP_PREFIX}{}-{}",
                std::process::id(),
                s.dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
            ));
            let _ = std::fs::remove_file(&tmp);
            link(&tmp)?;
            live.temps.push(tmp.clone());
            let r = std::fs::rename(&tmp, &s.dest);
            if r.is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
            live.temps.retain(|p| *p != tmp);
            r
        }
        Body::Named(path) => {
            let r = std::fs::rename(&path, &s.dest);
            if r.is_err() {
                let _ = std::fs::remove_file(&path);
            }
            live.temps.retain(|p| *p != path);
            r
        }
    }
}

/// Syncs a folder, so that the names given in it survive a power loss.
fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
        File::open(dir)?.sync_all()?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Removes, from `dir`, the named temporary files of tetrad runs that are no longer running
/// (their process is gone: killed, or the machine lost power), and returns their names.
/// Files of a run still in progress (another tetrad writing into the same folder) stay.
pub fn sweep_stale(dir: &Path) -> io::Result<Vec<String>> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e)
            if e.kind() == io::ErrorKind::NotFound || e.kind() == io::ErrorKind::NotADirectory =>
        {
            return Ok(Vec::new());
        }
        Err(e) => return Err(e),
    };
    let mut removed = Vec::new();
    for entry in rd {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(TEMP_PREFIX) else { continue };
        if !entry.file_type()?.is_file() {
            continue;
        }
        // `<pid>-…` since this naming; older names carry no pid and belong to no live run.
        let owner = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
        if owner.is_some_and(owner_is_running) {
            continue;
        }
        std::fs::remove_file(entry.path())?;
        removed.push(name);
    }
    removed.sort();
    Ok(removed)
}

/// Whether process `pid` exists (this process included).
fn owner_is_running(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    #[cfg(unix)]
    {
        let Ok(pid) = i32::try_from(pid) else { return false };
        let Some(pid) = rustix::process::Pid::from_raw(pid) else { return false };
        // EPERM: it exists, owned by another user.
        !matches!(rustix::process::test_kill_process(pid), Err(rustix::io::Errno::SRCH))
    }
    #[cfg(not(unix))]
    true
}

/// The line a command prints (to stderr) after [`sweep_stale`] removed files, if it did.
pub fn swept_line(dir: &Path, removed: &[String]) -> Option<String> {
    let first = removed.first()?;
    let more =
        if removed.len() > 1 { format!(" and {} more", removed.len() - 1) } else { String::new() };
    Some(format!(
        "tetrad: removed {} temporary file(s) an interrupted run left in {} ({first}{more})",
        removed.len(),
        dir.display()
    ))
}

/// Installs the SIGINT / SIGTERM / SIGHUP handling of the command line (see the module docs):
/// the runs' staged files and created folders are removed, then the process exits 128 + the
/// signal's number (130, 143, 129).
#[cfg(all(unix, feature = "cli"))]
pub fn exit_on_signals() -> io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    std::thread::Builder::new().name("tetrad-signals".into()).spawn(move || {
        let Some(signal) = signals.forever().next() else { return };
        // Waits for a commit in progress; held until exit, so no run stages anything more.
        let live = live();
        let mut removed = 0usize;
        for p in &live.temps {
            removed += usize::from(std::fs::remove_file(p).is_ok());
        }
        for d in live.dirs.iter().rev() {
            let _ = std::fs::remove_dir(d);
        }
        let name = match signal {
            SIGINT => "SIGINT",
            SIGTERM => "SIGTERM",
            _ => "SIGHUP",
        };
        let what = if live.committed {
            "after its outputs were complete".to_owned()
        } else {
            "before its outputs were complete: nothing of this run was kept".to_owned()
        };
        let also = if removed > 0 {
            format!(" ({removed} temporary file(s) removed)")
        } else {
            String::new()
        };
        let _ = writeln!(io::stderr(), "\ntetrad: interrupted by {name} {what}{also}");
        std::process::exit(128 + signal);
    })?;
    Ok(())
}

/// Stops here, forever, when the environment variable `TETRAD_TEST_HOLD` names `point`
/// (`staged`: the run's first file is staged; `commit`: everything is staged, nothing
/// renamed; `marker`: every file but the last, the completion marker, is in place). The
/// interruption tests send their signals to a run held there, so that what they test does not
/// depend on timing. Unset, this does nothing.
fn hold(point: &str) {
    if std::env::var_os("TETRAD_TEST_HOLD").is_some_and(|v| v == point) {
        let _ = writeln!(io::stderr(), "tetrad: holding at {point} (TETRAD_TEST_HOLD)");
        loop {
            std::thread::park();
        }
    }
}

/// The staged file as its writer sees it: errors name the destination; in this crate's tests
/// the disk can fill after a byte budget ([`faults`]).
struct Sink<'a> {
    file: &'a mut File,
    dest: &'a Path,
}

impl Write for Sink<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        #[cfg(test)]
        faults::charge(self.dest, buf.len()).map_err(|e| naming(self.dest, &e))?;
        self.file.write(buf).map_err(|e| naming(self.dest, &e))
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file.flush().map_err(|e| naming(self.dest, &e))
    }
}

#[cfg(not(test))]
const fn force_named(_dir: &Path) -> bool {
    false
}

#[cfg(test)]
fn force_named(dir: &Path) -> bool {
    faults::named_in(dir)
}

/// Fault injection for this crate's tests: a disk that fills after N bytes, and named
/// temporary files where `O_TMPFILE` would be used — for outputs under one folder only, so
/// that tests running beside it are not touched.
#[cfg(test)]
pub(crate) mod faults {
    use std::path::{Path, PathBuf};
    use std::sync::{Mutex, MutexGuard, PoisonError};

    struct Settings {
        root: Option<PathBuf>,
        budget: Option<u64>,
        named: bool,
    }

    static SETTINGS: Mutex<Settings> =
        Mutex::new(Settings { root: None, budget: None, named: false });
    static SERIAL: Mutex<()> = Mutex::new(());

    fn settings() -> MutexGuard<'static, Settings> {
        SETTINGS.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The fault settings of one test, for outputs under `root`; cleared on drop.
    pub(crate) struct Faults {
        _serial: MutexGuard<'static, ()>,
    }

    impl Faults {
        /// No disk limit; named temporary files under `root` when `named`.
        pub(crate) fn new(root: &Path, named: bool) -> Self {
            let guard = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
            *settings() = Settings { root: Some(root.to_owned()), budget: None, named };
            Self { _serial: guard }
        }

        /// ENOSPC once `bytes` more bytes have been written under the root (used by the
        /// commands' fault tests, which need the `cli` feature).
        #[cfg_attr(not(feature = "cli"), allow(dead_code))]
        pub(crate) fn disk_full_after(&self, bytes: u64) {
            settings().budget = Some(bytes);
        }
    }

    impl Drop for Faults {
        fn drop(&mut self) {
            *settings() = Settings { root: None, budget: None, named: false };
        }
    }

    pub(super) fn named_in(dir: &Path) -> bool {
        let s = settings();
        s.named && s.root.as_ref().is_some_and(|r| dir.starts_with(r))
    }

    pub(super) fn charge(dest: &Path, n: usize) -> std::io::Result<()> {
        let mut s = settings();
        if !s.root.as_ref().is_some_and(|r| dest.starts_with(r)) {
            return Ok(());
        }
        match s.budget {
            None => Ok(()),
            Some(b) if b >= n as u64 => {
                s.budget = Some(b - n as u64);
                Ok(())
            }
            Some(_) => {
                s.budget = Some(0);
                Err(std::io::Error::from_raw_os_error(28)) // ENOSPC
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::faults::Faults;
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn staged_files_appear_together_on_commit_and_only_then() {
        for named in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let _f = Faults::new(dir.path(), named);
            let out = dir.path().join("x").join("y");
            let mut o = Outputs::new();
            o.create_dir(&out).unwrap();
            o.stage(&out.join("a"), |w| w.write_all(b"one")).unwrap();
            o.stage(&out.join("b"), |w| w.write_all(b"two")).unwrap();
            let visible = names(&out);
            assert_eq!(visible.len(), usize::from(named) * 2, "named {named}: {visible:?}");
            assert!(visible.iter().all(|n| n.starts_with(TEMP_PREFIX)));
            o.commit().unwrap();
            assert_eq!(names(&out), ["a", "b"]);
            assert_eq!(std::fs::read(out.join("b")).unwrap(), b"two");
            // Dropped uncommitted: nothing new stays, and the folders it created go.
            let fresh = dir.path().join("z");
            let mut o = Outputs::new();
            o.create_dir(&fresh.join("w")).unwrap();
            o.stage(&fresh.join("w").join("c"), |w| w.write_all(b"three")).unwrap();
            drop(o);
            assert!(!fresh.exists(), "named {named}");
        }
    }

    #[test]
    fn a_failed_commit_removes_what_it_created_and_every_temporary_file() {
        for named in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let _f = Faults::new(dir.path(), named);
            // A non-empty folder where the second file goes: its rename fails.
            std::fs::create_dir(dir.path().join("b")).unwrap();
            std::fs::write(dir.path().join("b").join("keep"), b"k").unwrap();
            let mut o = Outputs::new();
            for n in ["a", "b", "c"] {
                o.stage(&dir.path().join(n), |w| w.write_all(n.as_bytes())).unwrap();
            }
            let e = o.commit().unwrap_err();
            assert!(e.to_string().contains(&dir.path().join("b").display().to_string()), "{e}");
            assert_eq!(names(dir.path()), ["b"], "named {named}");
            assert!(live().temps.iter().all(|p| !p.starts_with(dir.path())));
        }
    }

    #[test]
    fn retired_files_go_first_and_replaced_files_keep_their_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        write_bytes(&p, b"old").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode(&p), 0o644, "a new file is rw-r--r--");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_bytes(&p, b"new").unwrap();
        assert_eq!((std::fs::read(&p).unwrap(), mode(&p)), (b"new".to_vec(), 0o640));
        std::fs::write(dir.path().join("marker"), b"m").unwrap();
        let mut o = Outputs::new();
        o.retire(&dir.path().join("marker"));
        o.retire(&dir.path().join("absent"));
        o.stage(&dir.path().join("g"), |w| w.write_all(b"g")).unwrap();
        o.commit().unwrap();
        assert_eq!(names(dir.path()), ["f", "g"]);
    }

    #[test]
    fn the_sweep_removes_dead_runs_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let mine = dir.path().join(format!("{TEMP_PREFIX}{}-x", std::process::id()));
        let old = dir.path().join(format!("{TEMP_PREFIX}AbC123"));
        // A pid past the kernel's limit (2^22) names no process.
        let dead = dir.path().join(format!("{TEMP_PREFIX}{}-y", (1u32 << 22) + 17));
        for p in [&mine, &old, &dead] {
            std::fs::write(p, b"x").unwrap();
        }
        std::fs::write(dir.path().join("data"), b"d").unwrap();
        let removed = sweep_stale(dir.path()).unwrap();
        assert_eq!(removed.len(), 2, "{removed:?}");
        assert!(mine.exists() && !old.exists() && !dead.exists());
        let line = swept_line(dir.path(), &removed).unwrap();
        assert!(
            line.contains("removed 2 temporary file(s)") && line.contains("and 1 more"),
            "{line}"
        );
        assert!(sweep_stale(&dir.path().join("missing")).unwrap().is_empty());
        assert!(swept_line(dir.path(), &[]).is_none());
    }

    #[test]
    fn check_writable_refuses_a_missing_folder_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        check_writable(&dir.path().join("ok.svg")).unwrap();
        assert!(names(dir.path()).is_empty());
        let e = check_writable(&dir.path().join("no").join("p.svg")).unwrap_err();
        assert!(e.to_string().contains("p.svg") && !e.to_string().contains(TEMP_PREFIX), "{e}");
    }
}
