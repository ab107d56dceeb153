//! Entry point of `satori-cli`; all behaviour lives in the library.

use std::process::ExitCode;

fn main() -> ExitCode {
    satori_cli::run(std::env::args_os())
}
