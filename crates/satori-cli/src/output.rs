//! The only module that writes to stdout or stderr.
//!
//! stdout receives exactly one JSON document per run, written by [`emit`].
//! Everything for humans goes to stderr; each of our writes there starts on a
//! fresh line even when the server's forwarded stderr stopped mid-line, so the
//! error tokens are always at the start of a line. Write errors are ignored on
//! purpose: a closed pipe (`satori-cli ... | head -c1`) must not turn into a
//! panic or a different exit status, and there is nowhere left to report it.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use crate::report::Report;
use satori_client::take_stderr_mid_line;

/// Write one line to stderr.
pub fn stderr_line(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{}{line}", line_break_if_needed());
    let _ = err.flush();
}

/// Write to stderr without a newline (used to redraw a progress line).
pub fn stderr_raw(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{}{text}", line_break_if_needed());
    let _ = err.flush();
}

/// A newline when the server's forwarded stderr ended mid-line, else nothing.
fn line_break_if_needed() -> &'static str {
    if take_stderr_mid_line() { "\n" } else { "" }
}

/// A diagnostic line, printed only with `--debug`.
pub fn debug(enabled: bool, message: &str) {
    if enabled {
        stderr_line(&format!("satori-cli: debug: {message}"));
    }
}

/// Finish the run: stderr lines first (they explain the document), then the
/// single stdout document; returns the exit code to hand back to `main`.
#[allow(clippy::disallowed_methods)] // The CLI's one writer to stdout: the JSON document.
pub fn emit(report: &Report) -> ExitCode {
    for line in &report.stderr {
        stderr_line(line);
    }
    let out = std::io::stdout();
    // Pretty for people reading a terminal, compact for pipes.
    let text = if out.is_terminal() {
        serde_json::to_string_pretty(&report.stdout)
    } else {
        serde_json::to_string(&report.stdout)
    };
    // Serializing a `Value` cannot fail; the fallback keeps this panic-free.
    let text = text.unwrap_or_else(|_| "null".to_owned());
    let mut out = out.lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
    report.exit.into()
}
