//! Strict framing check on the server's stdout.
//!
//! rmcp's line transport silently skips lines that are not JSON (other SDKs do
//! the same). For a shell client that is the wrong policy: a server that
//! prints `Starting...` on stdout is broken, and the user must hear about it
//! as a protocol failure rather than get a result that happens to survive the
//! noise. [`StrictStdout`] sits between the child's stdout and the rmcp
//! transport, releases only complete lines that look like JSON-RPC messages,
//! and on the first violation records what it saw and fails the read, which
//! makes rmcp close the connection.

use std::collections::BTreeMap;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};

use serde::de::IgnoredAny;
use tokio::io::{AsyncRead, ReadBuf};

/// How much of an offending line to quote in the error message.
const QUOTE_LIMIT: usize = 160;

/// Shared record of the first framing violation, readable after the transport
/// has given up.
#[derive(Debug, Clone, Default)]
pub(crate) struct Violation(Arc<Mutex<Option<String>>>);

impl Violation {
    pub(crate) fn get(&self) -> Option<String> {
        self.0.lock().map(|v| v.clone()).unwrap_or_default()
    }

    fn set(&self, message: String) {
        if let Ok(mut slot) = self.0.lock()
            && slot.is_none()
        {
            *slot = Some(message);
        }
    }
}

/// An [`AsyncRead`] adapter that only lets well-formed JSON-RPC lines through.
pub(crate) struct StrictStdout<R> {
    inner: R,
    /// Bytes read from the child but not yet part of a validated line.
    pending: Vec<u8>,
    /// Prefix of `pending` already searched for a newline.
    scanned: usize,
    /// A validated line being handed to the reader, and how much of it was.
    ready: Vec<u8>,
    ready_pos: usize,
    max_line: usize,
    eof: bool,
    violation: Violation,
}

impl<R> StrictStdout<R> {
    pub(crate) fn new(inner: R, max_line: usize, violation: Violation) -> Self {
        StrictStdout {
            inner,
            pending: Vec::new(),
            scanned: 0,
            ready: Vec::new(),
            ready_pos: 0,
            max_line,
            eof: false,
            violation,
        }
    }

    fn fail(&self, message: String) -> io::Error {
        self.violation.set(message.clone());
        io::Error::new(io::ErrorKind::InvalidData, message)
    }
}

/// Why a line is not a protocol message, or `None` when it is acceptable.
/// Blank lines are tolerated because the transport skips them harmlessly.
fn check_line(line: &[u8]) -> Option<String> {
    let trimmed = line.trim_ascii();
    if trimmed.is_empty() {
        return None;
    }
    // Parsing into a map of ignored values checks "is a JSON object" without
    // building the (possibly large) message twice.
    match serde_json::from_slice::<BTreeMap<String, IgnoredAny>>(trimmed) {
        Ok(fields) if fields.contains_key("jsonrpc") => None,
        Ok(_) => Some(format!(
            "server wrote a JSON object without \"jsonrpc\" on stdout: {}",
            quote(trimmed)
        )),
        Err(_) => Some(format!(
            "server wrote non-protocol output on stdout: {}",
            quote(trimmed)
        )),
    }
}

fn quote(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut cut: String = text.chars().take(QUOTE_LIMIT).collect();
    if cut.len() < text.len() {
        cut.push_str("...");
    }
    format!("{cut:?}")
}

impl<R: AsyncRead + Unpin> AsyncRead for StrictStdout<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.ready_pos < this.ready.len() {
                let chunk = &this.ready[this.ready_pos..];
                let n = chunk.len().min(buf.remaining());
                buf.put_slice(&chunk[..n]);
                this.ready_pos += n;
                return Poll::Ready(Ok(()));
            }
            if let Some(message) = this.violation.get() {
                return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, message)));
            }

            if let Some(offset) = this.pending[this.scanned..]
                .iter()
                .position(|b| *b == b'\n')
            {
                let end = this.scanned + offset + 1;
                let line: Vec<u8> = this.pending.drain(..end).collect();
                this.scanned = 0;
                if let Some(problem) = check_line(&line) {
                    return Poll::Ready(Err(this.fail(problem)));
                }
                this.ready = line;
                this.ready_pos = 0;
                continue;
            }
            this.scanned = this.pending.len();

            if this.pending.len() > this.max_line {
                let problem = format!(
                    "server wrote a stdout line longer than {} bytes",
                    this.max_line
                );
                return Poll::Ready(Err(this.fail(problem)));
            }

            if this.eof {
                // A trailing fragment without newline can never become a message.
                if !this.pending.trim_ascii().is_empty() {
                    let problem = check_line(&this.pending).unwrap_or_else(|| {
                        format!(
                            "server closed stdout in the middle of a message: {}",
                            quote(&this.pending)
                        )
                    });
                    this.pending.clear();
                    return Poll::Ready(Err(this.fail(problem)));
                }
                return Poll::Ready(Ok(()));
            }

            let mut scratch = [0u8; 8192];
            let mut read = ReadBuf::new(&mut scratch);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
            if read.filled().is_empty() {
                this.eof = true;
            } else {
                this.pending.extend_from_slice(read.filled());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    /// Feed `input` through the guard; return what came out and the violation.
    fn run(input: &[u8]) -> (Vec<u8>, Option<String>) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let violation = Violation::default();
        let mut guard = StrictStdout::new(input, 64, violation.clone());
        let mut out = Vec::new();
        let _ = rt.block_on(guard.read_to_end(&mut out));
        (out, violation.get())
    }

    /// One framing case: the bytes the server writes, whether the first valid
    /// message gets through before the stream stops, and the expected
    /// violation (a fragment of its message), if any.
    struct Case {
        name: &'static str,
        input: Vec<u8>,
        message_first: bool,
        violation: Option<&'static str>,
    }

    #[test]
    fn framing_cases() {
        let ok = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
        let line = |parts: &[&[u8]]| parts.concat();
        let cases = [
            Case {
                name: "valid line passes",
                input: line(&[ok, b"\n"]),
                message_first: true,
                violation: None,
            },
            Case {
                name: "blank lines pass",
                input: b"\n  \r\n".to_vec(),
                message_first: false,
                violation: None,
            },
            Case {
                name: "garbage before a message stops the stream",
                input: line(&[b"Starting the server...\n", ok, b"\n"]),
                message_first: false,
                violation: Some("non-protocol output on stdout: \"Starting the server...\""),
            },
            Case {
                name: "garbage after a message lets the message through",
                input: line(&[ok, b"\noops\n"]),
                message_first: true,
                violation: Some("\"oops\""),
            },
            Case {
                name: "object without jsonrpc",
                input: b"{\"log\":1}\n".to_vec(),
                message_first: false,
                violation: Some("without \"jsonrpc\""),
            },
            Case {
                name: "unterminated fragment at eof",
                input: b"{\"jsonrpc\"".to_vec(),
                message_first: false,
                violation: Some("non-protocol output"),
            },
            Case {
                name: "overlong line",
                input: vec![b'a'; 200],
                message_first: false,
                violation: Some("longer than 64 bytes"),
            },
        ];
        for case in cases {
            let (out, violation) = run(&case.input);
            let name = case.name;
            match case.violation {
                None => {
                    assert_eq!(out, case.input, "{name}");
                    assert_eq!(violation, None, "{name}");
                }
                Some(fragment) => {
                    let v = violation.unwrap_or_else(|| panic!("{name}: no violation"));
                    assert!(v.contains(fragment), "{name}: {v}");
                    if case.message_first {
                        assert_eq!(out, line(&[ok, b"\n"]), "{name}");
                    } else {
                        assert!(out.is_empty(), "{name}: leaked {out:?}");
                    }
                }
            }
        }
    }
}
