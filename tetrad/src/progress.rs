//! Progress bars on stderr for long work: drawn only when stderr is a terminal and the user
//! did not ask for `--quiet`, so logs and pipes stay clean.

use std::io::IsTerminal as _;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A byte-count progress bar titled `what`, hidden when `quiet` or stderr is not a terminal.
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

fn target(quiet: bool) -> ProgressDrawTarget {
    if quiet || !std::io::stderr().is_terminal() {
        ProgressDrawTarget::hidden()
    } else {
        ProgressDrawTarget::stderr()
    }
}
