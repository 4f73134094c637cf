//! The `tetrad` command-line tool; see `tetrad --help`.
#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    tetrad::cli::main()
}
