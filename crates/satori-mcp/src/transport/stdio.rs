//! The stdio framing between a client and rmcp: newline-delimited JSON-RPC both ways. It
//! takes the place of rmcp's `AsyncRwTransport`; what becomes of each message (parse errors,
//! requests before `initialize`, reused ids) is the transport-neutral [`super::policy`].
//!
//! Reads are cancel-safe (rmcp cancels `receive` in its `select!`): a line being read and an
//! answer owed to the client survive a cancelled call. A line is never buffered past
//! [`MAX_LINE_BYTES`]. Output is serialized into one reused buffer and written whole, so a
//! cancelled write is finished by the next writer instead of leaving half a line on the wire.

use std::io;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

use super::policy::{self, MessagePolicy, Owed, SentId, Verdict, peek_id};

/// The longest line read as one message (rmcp's default too); longer lines are refused
/// without being buffered.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Newline-delimited JSON-RPC over a reader and a writer, for rmcp's server.
pub struct LineTransport<R, W> {
    read: BufReader<R>,
    /// The line being read; a read cancelled by rmcp's `select!` resumes it.
    line: Vec<u8>,
    /// Skipping the rest of a line that was too long.
    discarding: bool,
    out: Arc<Mutex<Option<Out<W>>>>,
    /// An answer this transport owes the client. It stays here until the writer holds its
    /// bytes, so a cancelled `receive` cannot lose it.
    owed: Option<Owed>,
    policy: MessagePolicy,
    /// Called once when the client's input ends (or fails): rmcp then waits for answers in
    /// flight, and the server decides how long work in flight may take.
    on_eof: Option<Box<dyn FnOnce() + Send + Sync>>,
}

/// The write half with its staging buffer. Bytes of a message are staged whole, then
/// written; `done` records progress so a cancelled write is finished by the next writer
/// instead of leaving half a line on the wire.
struct Out<W> {
    w: W,
    buf: Vec<u8>,
    done: usize,
}

impl<W: AsyncWrite + Unpin> Out<W> {
    /// Writes whatever is staged and flushes.
    async fn settle(&mut self) -> io::Result<()> {
        while self.done < self.buf.len() {
            let n = self.w.write(&self.buf[self.done..]).await?;
            if n == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            self.done += n;
        }
        self.w.flush().await
    }

    /// Stages one line written by `encode` into the buffer. Call after `settle`, so nothing
    /// is pending; if encoding fails the buffer is left empty.
    fn stage(
        &mut self,
        encode: impl FnOnce(&mut Vec<u8>) -> serde_json::Result<()>,
    ) -> io::Result<()> {
        self.done = 0;
        if let Err(e) = encode(&mut self.buf) {
            self.buf.clear();
            return Err(e.into());
        }
        self.buf.push(b'\n');
        Ok(())
    }

    async fn write_message(&mut self, msg: &ServerJsonRpcMessage) -> io::Result<()> {
        if self.done < self.buf.len() {
            self.settle().await?;
        }
        self.stage(|buf| policy::encode(msg, buf))?;
        self.settle().await
    }
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    pub fn new(read: R, write: W) -> Self {
        LineTransport {
            read: BufReader::new(read),
            line: Vec::new(),
            discarding: false,
            out: Arc::new(Mutex::new(Some(Out {
                w: write,
                buf: Vec::new(),
                done: 0,
            }))),
            owed: None,
            policy: MessagePolicy::new(),
            on_eof: None,
        }
    }

    /// Calls `f` once when the client's input ends.
    pub fn on_eof(mut self, f: impl FnOnce() + Send + Sync + 'static) -> Self {
        self.on_eof = Some(Box::new(f));
        self
    }

    fn input_ended(&mut self) {
        if let Some(f) = self.on_eof.take() {
            f();
        }
    }

    /// Writes the owed answer. Cancel-safe: the answer leaves `owed` only once staged.
    async fn pay(&mut self) -> io::Result<()> {
        let out = Arc::clone(&self.out);
        let mut guard = out.lock().await;
        let out = guard.as_mut().ok_or(io::ErrorKind::NotConnected)?;
        if out.done < out.buf.len() {
            out.settle().await?;
        }
        if let Some(owed) = self.owed.take() {
            out.stage(|buf| owed.encode(buf))?;
        }
        out.settle().await
    }

    /// Reads one line into `self.line`, never buffering more than [`MAX_LINE_BYTES`].
    /// Cancel-safe: bytes move from the reader's buffer to `self.line` with no await between.
    async fn read_line(&mut self) -> LineRead {
        loop {
            let (used, step) = {
                let available = match self.read.fill_buf().await {
                    Ok(a) => a,
                    Err(e) => return LineRead::Io(e),
                };
                if available.is_empty() {
                    return LineRead::Eof;
                }
                let newline = available.iter().position(|&b| b == b'\n');
                let take = newline.map_or(available.len(), |i| i + 1);
                let step = if self.discarding {
                    if newline.is_some() {
                        self.discarding = false;
                    }
                    None
                } else if self.line.len() + take > MAX_LINE_BYTES {
                    let id = peek_id(&self.line);
                    self.line.clear();
                    self.discarding = newline.is_none();
                    Some(LineRead::TooLong(id))
                } else {
                    self.line.extend_from_slice(&available[..take]);
                    newline.map(|_| LineRead::Line)
                };
                (take, step)
            };
            self.read.consume(used);
            if let Some(step) = step {
                return step;
            }
        }
    }
}

/// What one read of a line found.
enum LineRead {
    /// A whole line (with its `\n`) is in `line`.
    Line,
    /// The line exceeded [`MAX_LINE_BYTES`] and was dropped; the id its start names, if any.
    TooLong(Option<SentId>),
    Eof,
    Io(io::Error),
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = io::Result<()>> + Send + 'static {
        self.policy.note_sent(&item);
        let out = Arc::clone(&self.out);
        async move {
            let mut guard = out.lock().await;
            let out = guard.as_mut().ok_or(io::ErrorKind::NotConnected)?;
            out.write_message(&item).await
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        self.policy.reading();
        loop {
            if self.owed.is_some() && self.pay().await.is_err() {
                self.input_ended();
                return None;
            }
            match self.read_line().await {
                LineRead::Line => {}
                LineRead::TooLong(id) => {
                    self.owed = Some(policy::too_long(
                        id,
                        &format!("{MAX_LINE_BYTES} bytes (16 MiB)"),
                    ));
                    continue;
                }
                LineRead::Eof => {
                    self.input_ended();
                    return None;
                }
                LineRead::Io(e) => {
                    let _ = std::io::Write::write_all(
                        &mut std::io::stderr(),
                        format!("satori: reading the client failed: {e}\n").as_bytes(),
                    );
                    self.input_ended();
                    return None;
                }
            }
            let verdict = self
                .policy
                .receive(self.line.strip_suffix(b"\n").unwrap_or(&self.line));
            self.line.clear();
            match verdict {
                Verdict::Message(msg) => return Some(msg),
                Verdict::Answer(answer) => self.owed = Some(answer),
                Verdict::Skip => {}
            }
        }
    }

    async fn close(&mut self) -> io::Result<()> {
        let mut guard = self.out.lock().await;
        if let Some(mut out) = guard.take() {
            out.settle().await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{JsonRpcMessage, RequestId, ServerResult};
    use serde_json::Value;

    /// The transport between a pipe's two ends, with rmcp's place taken by the test: what
    /// `receive` hands over is what rmcp would run.
    #[tokio::test]
    async fn a_reused_id_in_flight_is_refused_until_answered_or_cancelled() {
        use tokio::io::AsyncBufReadExt;
        let (client, server) = tokio::io::duplex(1 << 16);
        let (sr, sw) = tokio::io::split(server);
        let mut t = LineTransport::new(sr, sw);
        t.policy = MessagePolicy::open();
        let (cr, mut cw) = tokio::io::split(client);
        let mut answers = BufReader::new(cr).lines();
        let ping = |id: u32| format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n");
        let handed = |m: Option<ClientJsonRpcMessage>| match m {
            Some(JsonRpcMessage::Request(r)) => r.id,
            other => panic!("expected a request, got {other:?}"),
        };
        let n = RequestId::Number;

        cw.write_all(ping(1).as_bytes()).await.unwrap();
        assert_eq!(handed(t.receive().await), n(1));
        cw.write_all((ping(1) + &ping(2)).as_bytes()).await.unwrap();
        assert_eq!(handed(t.receive().await), n(2));
        let refusal: Value =
            serde_json::from_str(&answers.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(refusal["error"]["code"], -32600, "{refusal}");
        assert_eq!(refusal["id"], 1, "{refusal}");
        assert_eq!(
            refusal["error"]["message"],
            "Invalid request: id 1 is already used by a request in flight"
        );

        // Once answered, the id may be used again.
        t.send(ServerJsonRpcMessage::response(
            ServerResult::empty(()),
            n(1),
        ))
        .await
        .unwrap();
        let answer = answers.next_line().await.unwrap().unwrap();
        assert!(answer.contains("\"id\":1"), "{answer}");
        cw.write_all(ping(1).as_bytes()).await.unwrap();
        assert_eq!(handed(t.receive().await), n(1));

        // A cancelled request is never answered (rmcp drops the answer): its id is free.
        let cancel = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":2}}\n";
        cw.write_all((cancel.to_string() + &ping(2)).as_bytes())
            .await
            .unwrap();
        assert!(matches!(
            t.receive().await,
            Some(JsonRpcMessage::Notification(_))
        ));
        assert_eq!(handed(t.receive().await), n(2));
    }
}
