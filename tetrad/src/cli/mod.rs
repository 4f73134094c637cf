//! The `tetrad` command line: argument parsing and dispatch to one module per command.
//!
//! Conventions shared by every command: exit status 0 on success, 1 on a refusal or failure,
//! 2 on a usage error (clap's own); reports go to stdout (`--json` for machines), progress and
//! diagnostics to stderr.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub mod demo;

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
}

/// Exit status of a refusal or failure.
pub const EXIT_FAILURE: u8 = 1;

/// Parses the process arguments and runs the chosen command.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => demo::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tetrad: {e}");
            ExitCode::from(EXIT_FAILURE)
        }
    }
}

/// A command's failure, already worded for the user.
#[derive(Debug)]
pub struct CliError(pub String);

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CliError {}
