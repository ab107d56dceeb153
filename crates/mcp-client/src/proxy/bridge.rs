//! The bridge process behind `proxy up`: it runs the stdio server, answers `initialize` for
//! every HTTP session with the server's own handshake result, and passes every other
//! JSON-RPC message through unchanged, giving each forwarded request an id of its own so
//! concurrent clients never receive each other's answers. A client's
//! `notifications/cancelled` names the client's id: it reaches the server with the server's
//! id for that request, or not at all when the request is no longer in flight.
//!
//! The HTTP side is Streamable HTTP as a stateful server speaks it, on a Unix socket: `POST`
//! carries one message and gets one JSON answer (or `202` for a notification), sessions are
//! named by `Mcp-Session-Id` (an unknown one gets `404`), `DELETE` ends a session and `GET`
//! (a server-to-client stream) is not offered (`405`). Requests the server sends to its
//! client get a plain answer (`ping`, an empty `roots/list`) or "not supported"; its
//! notifications have no client to go to and are dropped.

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixListener;
use tokio::process::{Child, ChildStdin};
use tokio::sync::oneshot;

use super::now_ms;
use super::unix::{CONTROL_VERSION, Control, rfc3339};
use crate::http::PROTOCOL_VERSION;
use crate::random;

/// Largest request body accepted.
const MAX_BODY: usize = 32 << 20;

/// A request as its client names it: the HTTP session (empty without one) and the JSON of
/// the client's id.
type ClientKey = (String, String);

struct Bridge {
    stdin: tokio::sync::Mutex<ChildStdin>,
    /// Requests sent to the server and not yet answered, by the id the server knows.
    pending: Mutex<HashMap<i64, (oneshot::Sender<Value>, ClientKey)>>,
    /// The same requests by their client's name for them.
    inflight: Mutex<HashMap<ClientKey, i64>>,
    next_id: AtomicI64,
    init: Mutex<Value>,
    sessions: Mutex<HashSet<String>>,
    dead: AtomicBool,
}

impl Bridge {
    async fn write(&self, msg: &Value) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(msg).unwrap_or_default();
        line.push(b'\n');
        let mut stdin = self.stdin.lock().await;
        stdin.write_all(&line).await?;
        stdin.flush().await
    }

    /// Sends `msg` (a request of `session`) under a fresh id and waits for the server's
    /// answer, which is returned with the caller's id put back.
    async fn forward(&self, mut msg: Value, session: Option<&str>) -> Option<Value> {
        let original = msg.get("id").cloned().unwrap_or(Value::Null);
        let key = (session.unwrap_or_default().to_owned(), original.to_string());
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().ok()?.insert(id, (tx, key.clone()));
        self.inflight.lock().ok()?.insert(key, id);
        msg["id"] = json!(id);
        if self.dead.load(Ordering::Relaxed) || self.write(&msg).await.is_err() {
            self.settle(id);
            return None;
        }
        let mut answer = rx.await.ok()?;
        answer["id"] = original;
        Some(answer)
    }

    /// Forgets request `id`; its waiting sender, if any.
    fn settle(&self, id: i64) -> Option<oneshot::Sender<Value>> {
        let (tx, key) = self.pending.lock().ok()?.remove(&id)?;
        if let Ok(mut inflight) = self.inflight.lock()
            && inflight.get(&key) == Some(&id)
        {
            inflight.remove(&key);
        }
        Some(tx)
    }

    /// A client's `notifications/cancelled` with the server's id of the request in place
    /// of the client's; `None` when that request is not in flight (answered already, or
    /// never sent here), since any id passed on unchanged could name another request.
    fn cancellation(&self, mut msg: Value, session: Option<&str>) -> Option<Value> {
        let client_id = msg.pointer("/params/requestId")?.to_string();
        let key = (session.unwrap_or_default().to_owned(), client_id);
        let id = *self.inflight.lock().ok()?.get(&key)?;
        // The server need not answer a cancelled request: nothing waits for it any more.
        self.settle(id);
        msg["params"]["requestId"] = json!(id);
        Some(msg)
    }

    /// Reads the server's stdout until it ends.
    async fn read(self: Arc<Self>, stdout: tokio::process::ChildStdout) {
        let mut lines = BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                note("mcat proxy: the server wrote a line that is not JSON-RPC".into());
                continue;
            };
            let is_answer = msg.get("method").is_none()
                && (msg.get("result").is_some() || msg.get("error").is_some());
            if is_answer {
                if let Some(id) = msg.get("id").and_then(Value::as_i64)
                    && let Some(tx) = self.settle(id)
                {
                    let _ = tx.send(msg);
                }
            } else if let (Some(method), Some(id)) = (msg.get("method"), msg.get("id")) {
                let answer = match method.as_str() {
                    Some("ping") => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
                    Some("roots/list") => {
                        json!({"jsonrpc": "2.0", "id": id, "result": {"roots": []}})
                    }
                    _ => rpc_error(
                        id.clone(),
                        -32601,
                        &format!("{method} is not supported through the mcat proxy"),
                    ),
                };
                let _ = self.write(&answer).await;
            }
        }
        self.dead.store(true, Ordering::Relaxed);
        // Dropping the senders fails every request still waiting.
        if let Ok(mut p) = self.pending.lock() {
            p.clear();
        }
        if let Ok(mut inflight) = self.inflight.lock() {
            inflight.clear();
        }
    }
}

/// Runs the bridge until it is told to stop or its server exits. Returns the exit code.
pub fn serve(socket: &Path, command: &[String]) -> i32 {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            note(format!("mcat proxy: cannot start: {e}"));
            return 1;
        }
    };
    match runtime.block_on(run(socket.to_owned(), command.to_vec())) {
        Ok(()) => 0,
        Err(e) => {
            note(format!("mcat proxy: {e}"));
            1
        }
    }
}

async fn run(socket: PathBuf, command: Vec<String>) -> Result<(), String> {
    let (cmd, args) = command.split_first().ok_or("no command")?;
    let mut child: Child = tokio::process::Command::new(cmd)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start '{cmd}': {e}"))?;
    let child_pid = child.id().unwrap_or(0);
    let stdin = child.stdin.take().ok_or("no stdin")?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let bridge = Arc::new(Bridge {
        stdin: tokio::sync::Mutex::new(stdin),
        pending: Mutex::new(HashMap::new()),
        inflight: Mutex::new(HashMap::new()),
        next_id: AtomicI64::new(1),
        init: Mutex::new(Value::Null),
        sessions: Mutex::new(HashSet::new()),
        dead: AtomicBool::new(false),
    });
    tokio::spawn(bridge.clone().read(stdout));

    let init = bridge
        .forward(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "mcat-proxy", "version": env!("CARGO_PKG_VERSION")},
            }}),
            None,
        )
        .await
        .ok_or_else(|| format!("'{cmd}' exited before answering initialize"))?;
    if let Some(e) = init.get("error") {
        return Err(format!("'{cmd}' refused initialize: {e}"));
    }
    *bridge.init.lock().map_err(|_| "poisoned")? =
        init.get("result").cloned().unwrap_or(Value::Null);
    bridge
        .write(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await
        .map_err(|e| format!("cannot write to '{cmd}': {e}"))?;

    let _ = std::fs::remove_file(&socket);
    let listener = UnixListener::bind(&socket)
        .map_err(|e| format!("cannot listen on {}: {e}", socket.display()))?;
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600));
    }
    let started = now_ms();
    Control {
        version: CONTROL_VERSION,
        socket: socket.display().to_string(),
        pid: std::process::id(),
        child_pid,
        command: cmd.clone(),
        args: args.to_vec(),
        started_at: rfc3339(started),
        started_at_ms: started,
        nonce: random::hex(16, "the proxy's nonce").map_err(|e| e.to_string())?,
    }
    .save(&socket)
    .map_err(|e| e.to_string())?;
    note(format!(
        "mcat proxy: serving '{cmd}' (pid {child_pid}) on {}",
        socket.display()
    ));

    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| e.to_string())?;
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let bridge = bridge.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| handle(bridge.clone(), req));
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
            status = child.wait() => {
                // Leave the socket and control file: `status` reports the proxy as dead
                // instead of pretending nothing ran.
                return Err(format!("the server '{cmd}' exited ({})", status.map(|s| s.to_string()).unwrap_or_default()));
            }
            _ = term.recv() => {
                let _ = child.start_kill();
                let _ = tokio::time::timeout(Duration::from_secs(3), child.wait()).await;
                return Ok(());
            }
            _ = tokio::signal::ctrl_c() => {
                let _ = child.start_kill();
                return Ok(());
            }
        }
    }
}

/// A line for the bridge's log (its stderr is the log file).
fn note(line: String) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

type Answer = Response<Full<Bytes>>;

fn answer(status: StatusCode, body: Option<&Value>) -> Answer {
    let mut r = Response::builder().status(status);
    let bytes = match body {
        Some(v) => {
            r = r.header("content-type", "application/json");
            Bytes::from(serde_json::to_vec(v).unwrap_or_default())
        }
        None => Bytes::new(),
    };
    r.body(Full::new(bytes))
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new())))
}

fn rpc_error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

async fn handle(bridge: Arc<Bridge>, req: Request<Incoming>) -> Result<Answer, Infallible> {
    let session = req
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let known = |s: &str| {
        bridge
            .sessions
            .lock()
            .map(|set| set.contains(s))
            .unwrap_or(false)
    };
    match *req.method() {
        Method::POST => {}
        Method::DELETE => {
            if let (Some(s), Ok(mut set)) = (&session, bridge.sessions.lock()) {
                set.remove(s);
            }
            return Ok(answer(StatusCode::OK, None));
        }
        _ => {
            let mut r = answer(StatusCode::METHOD_NOT_ALLOWED, None);
            r.headers_mut().insert(
                "allow",
                hyper::header::HeaderValue::from_static("POST, DELETE"),
            );
            return Ok(r);
        }
    }
    let body = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            return Ok(answer(
                StatusCode::PAYLOAD_TOO_LARGE,
                Some(&rpc_error(Value::Null, -32600, "request body too large")),
            ));
        }
    };
    let Ok(msg) = serde_json::from_slice::<Value>(&body) else {
        return Ok(answer(
            StatusCode::BAD_REQUEST,
            Some(&rpc_error(Value::Null, -32700, "parse error")),
        ));
    };
    let method = msg.get("method").and_then(Value::as_str).map(str::to_owned);
    let id = msg.get("id").cloned();
    if method.as_deref() == Some("initialize") {
        let sid = match random::hex(16, "a session id") {
            Ok(sid) => sid,
            Err(e) => {
                return Ok(answer(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    Some(&rpc_error(
                        id.unwrap_or(Value::Null),
                        -32603,
                        &e.to_string(),
                    )),
                ));
            }
        };
        if let Ok(mut set) = bridge.sessions.lock() {
            set.insert(sid.clone());
        }
        let result = bridge.init.lock().map(|v| v.clone()).unwrap_or(Value::Null);
        let body = json!({"jsonrpc": "2.0", "id": id.unwrap_or(Value::Null), "result": result});
        let mut r = answer(StatusCode::OK, Some(&body));
        if let Ok(v) = hyper::header::HeaderValue::from_str(&sid) {
            r.headers_mut().insert("mcp-session-id", v);
        }
        return Ok(r);
    }
    if let Some(s) = &session
        && !known(s)
    {
        return Ok(answer(
            StatusCode::NOT_FOUND,
            Some(&rpc_error(
                id.unwrap_or(Value::Null),
                -32001,
                "session not found",
            )),
        ));
    }
    match (method, id) {
        (Some(_), Some(id)) => match bridge.forward(msg, session.as_deref()).await {
            Some(a) => Ok(answer(StatusCode::OK, Some(&a))),
            None => Ok(answer(
                StatusCode::BAD_GATEWAY,
                Some(&rpc_error(
                    id,
                    -32603,
                    "the stdio server behind the mcat proxy has exited",
                )),
            )),
        },
        (Some(m), None) => {
            let passed = match m.as_str() {
                "notifications/initialized" => None,
                "notifications/cancelled" => bridge.cancellation(msg, session.as_deref()),
                _ => Some(msg),
            };
            if let Some(msg) = passed
                && !bridge.dead.load(Ordering::Relaxed)
            {
                let _ = bridge.write(&msg).await;
            }
            Ok(answer(StatusCode::ACCEPTED, None))
        }
        // Answers to requests the bridge never sent.
        _ => Ok(answer(StatusCode::ACCEPTED, None)),
    }
}
