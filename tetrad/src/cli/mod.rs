//! The `tetrad` command line: argument parsing and dispatch to one module per command.
//!
//! Conventions shared by every command: exit status 0 on success, 1 on a refusal or failure,
//! 2 on a usage error (clap's own); reports go to stdout (`--json` for machines), progress and
//! diagnostics to stderr.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::error::{Class, Refusal};

pub mod bench;
pub mod cfs1;
pub mod demo;
pub mod inspect;
pub mod matmul;
pub mod pack;
pub mod quantize;
pub mod resolve;
pub mod stats;
pub mod unpack;
pub mod verify;

/// Lossless entropy codecs for 4-bit quantized LLM weights.
#[derive(Debug, Parser)]
#[command(name = "tetrad", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Every `tetrad` command.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show what tetrad does on generated, realistic int4 weights (no files needed).
    Demo(demo::DemoArgs),
    /// Entropy-code the int4-row weights of a checkpoint (int4-rans256-g0 or int4-rans64-t1).
    Pack(pack::PackArgs),
    /// Validate packed shards (int4-rans256-g0 or int4-rans64-t1): TRUST or REFUSE, record by record.
    Verify(verify::VerifyArgs),
    /// Decode packed shards back to the original int4-row shards, checked byte for byte.
    Unpack(unpack::UnpackArgs),
    /// CFS1 containers: every tensor of a safetensors file as one CFS1 blob.
    Cfs1(cfs1::Cfs1Args),
    /// Show a shard's header, metadata, stamps and each tensor's format.
    Inspect(inspect::InspectArgs),
    /// Multiply f32 activations with a container's tensor, whatever its format.
    Matmul(matmul::MatmulArgs),
    /// Probe format inference: which format do these byte counts (and stamp) resolve to?
    Resolve(resolve::ResolveArgs),
    /// Quantize float safetensors (F32/BF16/F16) to one registry format, stamped.
    Quantize(quantize::QuantizeArgs),
    /// Entropy, bounds and codec sizes of quantized weights (safetensors and GGUF).
    Stats(stats::StatsArgs),
    /// Throughput of the codecs (beside zstd), the kernels and memory reads on this machine.
    Bench(bench::BenchArgs),
}

/// Exit status of a refusal or failure.
pub const EXIT_FAILURE: u8 = 1;

/// Exit status of a usage error (clap's own, and a flag value clap cannot check, such as a
/// regex that does not compile or an unknown arm name).
pub const EXIT_USAGE: u8 = 2;

/// A tensor name (or other text from a file) made safe for line-oriented output: control
/// characters (a newline would split a report line) are written as `\u{..}` escapes.
pub fn printable(name: &str) -> std::borrow::Cow<'_, str> {
    if name.chars().any(char::is_control) {
        name.chars()
            .map(|c| if c.is_control() { c.escape_unicode().to_string() } else { c.to_string() })
            .collect::<String>()
            .into()
    } else {
        name.into()
    }
}

/// Exit status when the reader of the output went away (`tetrad inspect … | head`): what a
/// Unix tool killed by `SIGPIPE` reports (128 + 13).
pub const EXIT_BROKEN_PIPE: u8 = 141;

/// The message of the panic `println!`/`eprintln!` raise when writing the stream fails (its
/// reader has gone, the disk behind it is full), or `None` for any other panic.
fn print_failure(payload: &(dyn std::any::Any + Send)) -> Option<&str> {
    let msg = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())?;
    msg.starts_with("failed printing to std").then_some(msg)
}

/// The kind of the OS error that a print failure's message ends with (`… (os error 32)`).
fn os_error_kind(msg: &str) -> Option<std::io::ErrorKind> {
    let code = msg.strip_suffix(')')?.rsplit_once("(os error ")?.1.parse().ok()?;
    Some(std::io::Error::from_raw_os_error(code).kind())
}

/// Parses the process arguments and runs the chosen command. Output that cannot be written
/// is not a crash: when the reader goes away (`… | head`) the command stops quietly with
/// [`EXIT_BROKEN_PIPE`], like any Unix tool, and any other write error (a full disk behind
/// `> file`) is one line on stderr and exit 1 — no panic message, no backtrace, and the
/// unwinding runs the destructors that remove temporary files.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    #[cfg(unix)]
    if let Err(e) = crate::output::exit_on_signals() {
        eprintln!(
            "tetrad: cannot handle SIGINT/SIGTERM ({e}); an interrupted run may leave temporary files"
        );
    }
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if print_failure(info.payload()).is_none() {
            hook(info);
        }
    }));
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(cli))) {
        Ok(code) => code,
        Err(payload) => match print_failure(&*payload) {
            Some(msg) if os_error_kind(msg) == Some(std::io::ErrorKind::BrokenPipe) => {
                ExitCode::from(EXIT_BROKEN_PIPE)
            }
            Some(msg) => {
                use std::io::Write as _;
                let _ = writeln!(std::io::stderr(), "tetrad: {msg}");
                ExitCode::from(EXIT_FAILURE)
            }
            None => std::panic::resume_unwind(payload),
        },
    }
}

/// Parses `args` (the program name first, as in `std::env::args`) and runs the command, in
/// this process: what `tetrad ARGS…` does, for tests and embedders. A usage error is printed
/// and returns exit status 2.
pub fn run_from<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    match Cli::try_parse_from(args) {
        Ok(cli) => run(cli),
        Err(e) => {
            let _ = e.print();
            ExitCode::from(if e.use_stderr() { EXIT_USAGE } else { 0 })
        }
    }
}

fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Demo(args) => report(demo::run(&args)),
        Command::Pack(args) => pack::run(&args),
        Command::Verify(args) => verify::run(&args),
        Command::Unpack(args) => unpack::run(&args),
        Command::Cfs1(args) => cfs1::run(&args),
        Command::Inspect(args) => inspect::run(&args),
        Command::Matmul(args) => matmul::run(&args),
        Command::Resolve(args) => resolve::run(&args),
        Command::Quantize(args) => quantize::run(&args),
        Command::Stats(args) => stats::run(&args),
        Command::Bench(args) => bench::run(&args),
    }
}

/// Removes the temporary files that interrupted runs left in the output folder `dir`
/// ([`crate::output::sweep_stale`]) and says so on stderr. Every command that writes runs it
/// before it writes.
pub fn sweep(dir: &std::path::Path) {
    match crate::output::sweep_stale(dir) {
        Ok(removed) => {
            if let Some(line) = crate::output::swept_line(dir, &removed) {
                eprintln!("{line}");
            }
        }
        Err(e) => eprintln!("tetrad: cannot clean {}: {e}", dir.display()),
    }
}

/// [`sweep`] on the folder of the output file `file`.
pub fn sweep_beside(file: &std::path::Path) {
    match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => sweep(d),
        _ => sweep(std::path::Path::new(".")),
    }
}

/// Exit status of a command that reports failure as a [`CliError`].
pub fn report(result: Result<(), CliError>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tetrad: {e}");
            ExitCode::from(EXIT_FAILURE)
        }
    }
}

/// Classes that are usage errors (a flag value clap cannot check): exit status 2.
const USAGE_CLASSES: &[Class] = &[Class::Usage, Class::ArmUnknown];

/// The exit status of a refusal: 2 for a usage error, 1 otherwise.
pub fn exit_status(r: &Refusal) -> ExitCode {
    let usage = USAGE_CLASSES.contains(&r.class);
    ExitCode::from(if usage { EXIT_USAGE } else { EXIT_FAILURE })
}

/// Prints a refusal the way the reference tools do (`REFUSED <CLASS>: <detail>`) and returns
/// its exit status (1; 2 for a usage error).
pub fn refused(r: &Refusal) -> ExitCode {
    println!("REFUSED {}: {}", r.class, r.detail);
    exit_status(r)
}

/// [`refused`], or with `json` the refusal as `{"refused": {"class", "detail"}}` on stdout
/// (what every `--json` command prints instead of its report).
pub fn refused_as(r: &Refusal, json: bool) -> ExitCode {
    if json {
        println!("{}", serde_json::json!({"refused": {"class": r.class, "detail": r.detail}}));
        exit_status(r)
    } else {
        refused(r)
    }
}

/// A command's failure that is not a refusal report (`demo`'s self-checks): printed as
/// `tetrad: <message>` on stderr, exit status 1.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CliError {
    /// A step was refused by the library.
    #[error("{command}: {step}: {refusal}")]
    Refused {
        /// The command (`demo`).
        command: &'static str,
        /// The step that was refused.
        step: &'static str,
        /// The refusal.
        refusal: Refusal,
    },
    /// A step failed with another crate's error (a codec's, the file system's), as it words it.
    #[error("{command}: {step}: {why}")]
    Failed {
        /// The command.
        command: &'static str,
        /// The step that failed.
        step: &'static str,
        /// The error, as it displays.
        why: String,
    },
    /// A check of the command's own results found a difference.
    #[error("{command}: {what}")]
    Check {
        /// The command.
        command: &'static str,
        /// What differs.
        what: String,
    },
}
