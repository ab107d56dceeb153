//! The JSON contract of stdout and the exit codes, in one place: `{"ok":true}`,
//! `{"ok":true,"result":...}` or `{"ok":false,"error":"..."}`, exit 0 on success, 2 on a
//! usage error, 1 on any other failure. The only other bytes mcat writes to stdout are those
//! of `resource read -o -`, which asked for them.

use std::io::Write;

use serde_json::{Value, json};

use mcp_client::Error;

/// Exit code of a success.
pub const EXIT_OK: i32 = 0;
/// Exit code of a runtime failure: network, server, auth, files, locks.
pub const EXIT_FAILURE: i32 = 1;
/// Exit code of a usage error: the command line itself is wrong.
pub const EXIT_USAGE: i32 = 2;

/// What a command produced.
#[derive(Debug)]
pub enum Outcome {
    /// `{"ok":true}`.
    Done,
    /// `{"ok":true,"result":...}`.
    Result(Value),
    /// Raw bytes for stdout (`resource read -o -`).
    Bytes(Vec<u8>),
}

/// The exit code of an error.
pub fn exit_code(e: &Error) -> i32 {
    match e {
        Error::Usage(_) => EXIT_USAGE,
        _ => EXIT_FAILURE,
    }
}

/// The JSON line of an outcome or an error.
pub fn render(outcome: &Result<Outcome, Error>) -> Vec<u8> {
    let value = match outcome {
        Ok(Outcome::Done) => json!({"ok": true}),
        Ok(Outcome::Result(r)) => json!({"ok": true, "result": r}),
        Ok(Outcome::Bytes(b)) => return b.clone(),
        Err(e) => json!({"ok": false, "error": e.to_string()}),
    };
    let mut line = serde_json::to_vec(&value).unwrap_or_default();
    line.push(b'\n');
    line
}

/// Writes the outcome to stdout and returns the exit code.
pub fn emit(outcome: Result<Outcome, Error>) -> i32 {
    let code = match &outcome {
        Ok(_) => EXIT_OK,
        Err(e) => exit_code(e),
    };
    #[allow(clippy::disallowed_methods)] // stdout is the result channel: this is its one writer.
    let mut out = std::io::stdout().lock();
    // A closed stdout (a pipe whose reader left) cannot be reported anywhere better.
    let _ = out.write_all(&render(&outcome));
    let _ = out.flush();
    code
}
