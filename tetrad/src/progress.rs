//! Progress bars on stderr for long work: drawn only when stderr is a terminal and the user
//! did not ask for `--quiet`, so logs and pipes stay clean.
//!
//! Without the `cli` feature (an engine's build) there is no terminal to draw on: [`bytes`]
//! returns a bar that counts nothing, so the library's long calls need no feature gate of
//! their own.

#[cfg(feature = "cli")]
use std::io::IsTerminal as _;

#[cfg(feature = "cli")]
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress bar: indicatif's with the `cli` feature.
#[cfg(feature = "cli")]
pub type Bar = ProgressBar;

/// A progress bar that draws nothing (the build has no `cli` feature).
#[cfg(not(feature = "cli"))]
#[derive(Debug)]
pub struct Bar;

#[cfg(not(feature = "cli"))]
impl Bar {
    /// Counts `n` more (nothing to draw).
    pub fn inc(&self, _n: u64) {}
    /// Ends the bar (nothing to clear).
    pub fn finish_and_clear(&self) {}
}

/// A bar that draws nothing (the build has no `cli` feature).
#[cfg(not(feature = "cli"))]
pub fn bytes(_total: u64, _what: &str, _quiet: bool) -> Bar {
    Bar
}

/// A byte-count progress bar titled `what`, hidden when `quiet` or stderr is not a terminal.
#[cfg(feature = "cli")]
pub fn bytes(total: u64, what: &str, quiet: bool) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(total), target(quiet));
    bar.set_style(
        ProgressStyle::with_template(
            "{msg:>10} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} ({bytes_per_sec}, eta {eta})",
        )
        .expect("valid template"),
    );
    bar.set_message(what.to_owned());
    bar
}

#[cfg(feature = "cli")]
fn target(quiet: bool) -> ProgressDrawTarget {
    if quiet || !std::io::stderr().is_terminal() {
        ProgressDrawTarget::hidden()
    } else {
        ProgressDrawTarget::stderr()
    }
}
