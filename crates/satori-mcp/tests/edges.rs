//! Protocol edges real clients hit: messages before `initialize`, lines that are not JSON, a
//! `tools/call` without a name, `logging/setLevel` with the server's diagnostics sent as
//! `notifications/message`, lines that cannot be parsed (invalid UTF-8, too deep, too long)
//! and reused in-flight ids, invalid requests answered with their ids, and protocol-version
//! negotiation through rmcp's own client. Each runs in memory over a duplex pipe (the server
//! on its stdio framing) and then against the built `satori` binary; the protocol edges
//! (`edges`, `bad_lines`, `invalid_requests`) also run over Streamable HTTP, on a loopback
//! port and on a unix socket, from the same cases: every transport hands its messages to the
//! same policy.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ClientConfig, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use rmcp::{RoleClient, ServiceExt};
use satori_mcp::transport::LineTransport;
use satori_mcp::{Service, Session};
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};

mod support;

use support::http;

const WAIT: Duration = Duration::from_secs(60);

/// A server in this process on its stdio framing, reached through the other end of a pipe.
fn in_memory(home: &Path) -> tokio::io::DuplexStream {
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let server = Session::new(&Service::new(support::config(home)).unwrap());
    tokio::spawn(async move {
        let (r, w) = tokio::io::split(server_io);
        if let Ok(running) = server.serve(LineTransport::new(r, w)).await {
            let _ = running.waiting().await;
        }
    });
    client_io
}

/// The built binary over a fresh home.
fn spawn_satori(home: &Path, stderr: Stdio) -> tokio::process::Child {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_satori"))
        .env("SATORI_HOME", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

/// A client speaking raw JSON-RPC, so it can send what no SDK would: lines on stdio, or one
/// POST per message over Streamable HTTP.
struct Raw {
    wire: Wire,
    /// Messages read while waiting for another one.
    seen: Vec<Value>,
}

enum Wire {
    Lines {
        read: Box<dyn AsyncBufRead + Unpin + Send>,
        write: Box<dyn AsyncWrite + Unpin + Send>,
    },
    /// Each message is POSTed on its own connection by a task of its own (so requests can be
    /// in flight together); the answers arrive on `inbox`. An answer that carries no
    /// message arrives as `{"httpStatus": N, "text": ...}`.
    Http {
        addr: http::Addr,
        session: std::sync::Arc<std::sync::Mutex<Option<String>>>,
        inbox: tokio::sync::mpsc::UnboundedReceiver<Value>,
        outbox: tokio::sync::mpsc::UnboundedSender<Value>,
    },
}

impl Raw {
    fn new(
        read: impl tokio::io::AsyncRead + Unpin + Send + 'static,
        write: impl AsyncWrite + Unpin + Send + 'static,
    ) -> Raw {
        Raw {
            wire: Wire::Lines {
                read: Box::new(BufReader::new(read)),
                write: Box::new(write),
            },
            seen: Vec::new(),
        }
    }

    fn http(addr: http::Addr) -> Raw {
        let (outbox, inbox) = tokio::sync::mpsc::unbounded_channel();
        Raw {
            wire: Wire::Http {
                addr,
                session: Default::default(),
                inbox,
                outbox,
            },
            seen: Vec::new(),
        }
    }

    async fn send(&mut self, line: &str) {
        self.send_bytes(line.as_bytes()).await;
    }

    async fn send_bytes(&mut self, line: &[u8]) {
        match &mut self.wire {
            Wire::Lines { write, .. } => {
                write.write_all(line).await.unwrap();
                write.write_all(b"\n").await.unwrap();
                write.flush().await.unwrap();
            }
            Wire::Http {
                addr,
                session,
                outbox,
                ..
            } => {
                // Lines written together are messages sent together.
                for message in line.split(|b| *b == b'\n').filter(|m| !m.is_empty()) {
                    let (addr, session, outbox) = (addr.clone(), session.clone(), outbox.clone());
                    let body = bytes::Bytes::copy_from_slice(message);
                    tokio::spawn(async move {
                        let id = session.lock().unwrap().clone();
                        let r = http::send(&addr, http::post(id.as_deref(), body)).await;
                        if let Some(s) = r.header("mcp-session-id") {
                            *session.lock().unwrap() = Some(s.to_string());
                        }
                        let messages = r.messages();
                        if messages.is_empty() && r.status != 202 {
                            let _ = outbox.send(json!({"httpStatus": r.status, "text": r.text()}));
                        }
                        for m in messages {
                            let _ = outbox.send(m);
                        }
                    });
                }
            }
        }
    }

    /// The next message the server sends.
    async fn next(&mut self, what: &str) -> Value {
        match &mut self.wire {
            Wire::Lines { read, .. } => {
                let mut line = String::new();
                let n = tokio::time::timeout(WAIT, read.read_line(&mut line))
                    .await
                    .unwrap_or_else(|_| panic!("no {what} within {WAIT:?}; seen {:?}", self.seen))
                    .unwrap();
                assert!(n > 0, "the server closed its output waiting for {what}");
                serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not a JSON message on the wire ({e}): {line:?}"))
            }
            Wire::Http { inbox, .. } => tokio::time::timeout(WAIT, inbox.recv())
                .await
                .unwrap_or_else(|_| panic!("no {what} within {WAIT:?}; seen {:?}", self.seen))
                .expect("the inbox stays open"),
        }
    }

    async fn send_json(&mut self, v: Value) {
        self.send(&v.to_string()).await;
    }

    /// The first message (already seen or still to come) that `pred` accepts. Every line
    /// the server writes must be one JSON message.
    async fn wait(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.seen.iter().position(&pred) {
            return self.seen.remove(i);
        }
        loop {
            let v = self.next(what).await;
            if pred(&v) {
                return v;
            }
            self.seen.push(v);
        }
    }

    async fn request(&mut self, id: Value, method: &str, params: Value) -> Value {
        self.send_json(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let want = id.clone();
        self.wait(&format!("answer to {id}"), move |m| m["id"] == want)
            .await
    }

    async fn parse_error(&mut self) -> Value {
        self.wait("parse error", |m| m["error"]["code"] == -32700)
            .await
    }

    async fn initialize(&mut self, version: &str) -> Value {
        let r = self
            .request(
                json!("init"),
                "initialize",
                json!({"protocolVersion": version, "capabilities": {},
                       "clientInfo": {"name": "edges", "version": "1"}}),
            )
            .await;
        self.send_json(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        r
    }

    async fn call(&mut self, id: u32, tool: &str, args: Value) -> Value {
        let r = self
            .request(
                json!(id),
                "tools/call",
                json!({"name": tool, "arguments": args}),
            )
            .await;
        assert!(r.get("result").is_some(), "{tool} failed: {r}");
        r["result"].clone()
    }
}

/// Before `initialize`: a notification is ignored, a garbage line gets `-32700`, a request
/// gets an error; then the handshake and calls work. After it: a garbage line and a nameless
/// call are each answered and the next request is served.
async fn edges(c: &mut Raw) {
    c.send_json(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    c.send_json(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}),
    )
    .await;
    c.send("this is not JSON").await;
    let e = c.parse_error().await;
    assert_eq!(e.get("id"), Some(&Value::Null), "{e}");
    let early = c.request(json!("early"), "tools/list", json!({})).await;
    assert_error(&early, -32600, "initialize");
    let pong = c.request(json!("ping"), "ping", json!({})).await;
    assert_eq!(pong["result"], json!({}), "{pong}");

    let init = c.initialize("2025-11-25").await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    assert_eq!(
        init["result"]["capabilities"]["logging"],
        json!({}),
        "{init}"
    );

    c.send("{\"jsonrpc\": \"2.0\", \"id\": 5, \"method\"").await;
    c.parse_error().await;
    let tools = c.request(json!(1), "tools/list", json!({})).await;
    assert_eq!(
        tools["result"]["tools"].as_array().unwrap().len(),
        6,
        "{tools}"
    );

    let nameless = c.request(json!(2), "tools/call", json!({})).await;
    assert_error(&nameless, -32602, "name");
    let nameless = c
        .request(json!(3), "tools/call", json!({"arguments": {}}))
        .await;
    assert_eq!(nameless["error"]["code"], -32602, "{nameless}");
    let no_params = c.request_without_params(json!(4), "tools/call").await;
    assert_eq!(no_params["error"]["code"], -32602, "{no_params}");

    let listed = c.call(5, "list_codebases", json!({})).await;
    assert_eq!(listed["isError"], false, "{listed}");
    c.assert_no_log_notification("before logging/setLevel");
}

/// `answer` is a JSON-RPC error with `code` whose message mentions `says`.
#[track_caller]
fn assert_error(answer: &Value, code: i64, says: &str) {
    assert_eq!(answer["error"]["code"], code, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(says), "{answer}");
}

impl Raw {
    /// The next `notifications/message` of the telemetry logger.
    async fn telemetry_note(&mut self) -> Value {
        self.wait("telemetry notification", |m| {
            m["method"] == "notifications/message" && m["params"]["logger"] == "telemetry"
        })
        .await
    }

    /// No log notification arrived among the messages read so far (`when` says which).
    #[track_caller]
    fn assert_no_log_notification(&self, when: &str) {
        assert!(
            self.seen
                .iter()
                .all(|m| m["method"] != "notifications/message"),
            "a log notification {when}: {:?}",
            self.seen
        );
    }

    async fn request_without_params(&mut self, id: Value, method: &str) -> Value {
        self.send_json(json!({"jsonrpc": "2.0", "id": id, "method": method}))
            .await;
        let want = id.clone();
        self.wait("answer", move |m| m["id"] == want).await
    }
}

#[tokio::test]
async fn edges_in_memory() {
    let home = tempfile::tempdir().unwrap();
    let (r, w) = tokio::io::split(in_memory(home.path()));
    edges(&mut Raw::new(r, w)).await;
}

#[tokio::test]
async fn edges_real_process() {
    let home = tempfile::tempdir().unwrap();
    let mut child = spawn_satori(home.path(), Stdio::null());
    let mut c = Raw::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
    edges(&mut c).await;
    drop(c);
    let out = child.wait_with_output().await.unwrap();
    assert!(out.status.success(), "{out:?}");
}

/// The same protocol edges over Streamable HTTP, a fresh session each, on a loopback port
/// and on a unix socket.
#[tokio::test]
async fn edges_over_http() {
    let home = tempfile::tempdir().unwrap();
    let mut listens = vec![satori_mcp::transport::http::Listen::Tcp(
        "127.0.0.1:0".parse().unwrap(),
    )];
    if cfg!(unix) {
        listens.push(satori_mcp::transport::http::Listen::Unix(
            home.path().join("edges.sock"),
        ));
    }
    for listen in listens {
        let (addr, _stop) = http::serve(home.path(), listen, Default::default()).await;
        edges(&mut Raw::http(addr.clone())).await;
        bad_lines(&mut Raw::http(addr.clone())).await;
        invalid_requests(&mut Raw::http(addr)).await;
    }
}

/// Lines that cannot be read as a message: each gets an error (with the id when the line
/// names one before the damage) and the next request is served; so are requests reusing the
/// id of one still in flight.
async fn bad_lines(c: &mut Raw) {
    c.initialize("2025-11-25").await;
    let call = |id: u32, args: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"list_codebases","arguments":{args}}}}}"#
        )
        .into_bytes()
    };
    let deep = format!(r#"{{"x":{}{}}}"#, "[".repeat(129), "]".repeat(129));
    let mut invalid_utf8 = call(12, r#"{"x":"?"}"#);
    let at = invalid_utf8.iter().position(|&b| b == b'?').unwrap();
    invalid_utf8[at] = 0xff;
    let mut too_long = call(14, r#"{"x":""}"#);
    too_long.splice(too_long.len() - 4..too_long.len() - 4, vec![b'a'; 16 << 20]);
    let mut too_long_garbage = vec![b'z'; (16 << 20) + 1];
    too_long_garbage[0] = b'{';
    let cases: Vec<(&str, Vec<u8>, i64, Value)> = vec![
        (
            "not JSON",
            b"this is not JSON".to_vec(),
            -32700,
            Value::Null,
        ),
        ("cut short", call(11, "{").to_vec(), -32700, json!(11)),
        ("invalid UTF-8", invalid_utf8, -32700, json!(12)),
        ("nested 129 deep", call(13, &deep), -32700, json!(13)),
        ("over 16 MiB", too_long, -32600, json!(14)),
        ("over 16 MiB, no id", too_long_garbage, -32600, Value::Null),
    ];
    for (what, line, code, id) in cases {
        c.send_bytes(&line).await;
        let want = id.clone();
        let e = c
            .wait(what, move |m| m.get("error").is_some() && m["id"] == want)
            .await;
        assert_eq!(e["error"]["code"], code, "{what}: {e}");
        assert_eq!(e.get("id"), Some(&id), "{what}: {e}");
        if code == -32600 {
            assert_error(&e, code, "16777216 bytes");
        }
        let pong = c.request(json!(what), "ping", json!({})).await;
        assert_eq!(pong["result"], json!({}), "after {what}: {pong}");
    }

    // The same id many times in one write: every line is answered once, by its result or by
    // the duplicate-id error, however many of them arrive while one is in flight.
    let copies = 20;
    let mut burst = Vec::new();
    for _ in 0..copies {
        burst.extend(call(50, "{}"));
        burst.push(b'\n');
    }
    c.send_bytes(&burst).await;
    let (mut results, mut refused) = (0, 0);
    while results + refused < copies {
        let m = c.wait("an answer to a reused id", |m| m["id"] == 50).await;
        if m.get("result").is_some() {
            results += 1;
        } else {
            // The refusal carries the id it refuses, as every answer to a readable id does.
            assert_error(&m, -32600, "id 50 is already used by a request in flight");
            refused += 1;
        }
    }
    assert!(results >= 1, "{results} results, {refused} refusals");
    let pong = c.request(json!(50), "ping", json!({})).await;
    assert_eq!(pong["result"], json!({}), "id 50 is free again: {pong}");
}

#[tokio::test]
async fn bad_lines_in_memory() {
    let home = tempfile::tempdir().unwrap();
    let (r, w) = tokio::io::split(in_memory(home.path()));
    bad_lines(&mut Raw::new(r, w)).await;
}

#[tokio::test]
async fn bad_lines_real_process() {
    let home = tempfile::tempdir().unwrap();
    let mut child = spawn_satori(home.path(), Stdio::null());
    let mut c = Raw::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
    bad_lines(&mut c).await;
    drop(c);
    let out = child.wait_with_output().await.unwrap();
    assert!(out.status.success(), "{out:?}");
}

/// JSON that is no request is answered `-32600` with the request's id whenever the id can
/// be read (whatever else is wrong, and even an id no integer type of the server holds), and
/// with `"id": null` only when there is no id to read.
async fn invalid_requests(c: &mut Raw) {
    c.initialize("2025-11-25").await;
    let cases: &[(&str, &str, Value)] = &[
        (
            "method is a number",
            r#"{"jsonrpc":"2.0","id":21,"method":7}"#,
            json!(21),
        ),
        (
            "no jsonrpc",
            r#"{"id":22,"method":"tools/list"}"#,
            json!(22),
        ),
        (
            "jsonrpc 1.0",
            r#"{"jsonrpc":"1.0","id":"twenty-three","method":"ping"}"#,
            json!("twenty-three"),
        ),
        ("no method", r#"{"jsonrpc":"2.0","id":24}"#, json!(24)),
        (
            "a fractional id",
            r#"{"jsonrpc":"2.0","id":25.5,"method":"ping"}"#,
            json!(25.5),
        ),
        (
            "an id beyond 64-bit signed integers",
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}"#,
            json!(u64::MAX),
        ),
        (
            "a null id",
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            Value::Null,
        ),
        (
            "an object id",
            r#"{"jsonrpc":"2.0","id":{"n":26},"method":"ping"}"#,
            Value::Null,
        ),
        (
            "a batch",
            r#"[{"jsonrpc":"2.0","id":27,"method":"ping"}]"#,
            Value::Null,
        ),
    ];
    for (what, line, id) in cases {
        c.send(line).await;
        let want = id.clone();
        let e = c
            .wait(what, move |m| m.get("error").is_some() && m["id"] == want)
            .await;
        assert_eq!(e["error"]["code"], -32600, "{what}: {e}");
        assert_eq!(e.get("id"), Some(id), "{what}: {e}");
        let pong = c.request(json!(what), "ping", json!({})).await;
        assert_eq!(pong["result"], json!({}), "after {what}: {pong}");
    }
}

#[tokio::test]
async fn invalid_requests_in_memory() {
    let home = tempfile::tempdir().unwrap();
    let (r, w) = tokio::io::split(in_memory(home.path()));
    invalid_requests(&mut Raw::new(r, w)).await;
}

#[tokio::test]
async fn invalid_requests_real_process() {
    let home = tempfile::tempdir().unwrap();
    let mut child = spawn_satori(home.path(), Stdio::null());
    let mut c = Raw::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
    invalid_requests(&mut c).await;
    drop(c);
    let out = child.wait_with_output().await.unwrap();
    assert!(out.status.success(), "{out:?}");
}

/// Most clients download the tool list at the start of every session, and some put all of
/// it in front of a model: its size has a budget. Before the output schemas shared their
/// definitions, the answer was 70,488 bytes, 55,612 of them `outputSchema`.
const TOOLS_LIST_BUDGET: usize = 64_000;

#[tokio::test]
async fn tools_list_fits_its_size_budget() {
    let home = tempfile::tempdir().unwrap();
    let mut child = spawn_satori(home.path(), Stdio::null());
    let mut c = Raw::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
    c.initialize("2025-11-25").await;
    let list = c.request(json!("list"), "tools/list", json!({})).await;
    // The server writes compact JSON in the order it was built, which parsing keeps.
    let bytes = list.to_string().len();
    let tools = list["result"]["tools"].as_array().unwrap();
    let part = |key: &str| -> usize {
        tools
            .iter()
            .filter_map(|t| t.get(key))
            .map(|s| s.to_string().len())
            .sum()
    };
    let (output, input) = (part("outputSchema"), part("inputSchema"));
    assert!(
        bytes <= TOOLS_LIST_BUDGET,
        "tools/list answers with {bytes} bytes ({output} outputSchema, {input} inputSchema); \
         the budget is {TOOLS_LIST_BUDGET}"
    );
    drop(c);
    let _ = child.wait().await;
}

/// The message and query limits are stated in the README with their values.
#[test]
fn limits_are_documented() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let line = satori_mcp::transport::MAX_LINE_BYTES;
    let query = satori_protocol::tools::search_codebase::QUERY_MAX_CHARS;
    for needle in [
        format!("at most 16 MiB ({line} bytes)"),
        format!("A search query is at most {query} characters"),
    ] {
        assert!(
            readme.replace('\n', " ").contains(&needle),
            "README.md must say {needle:?}"
        );
    }
}

fn tiny_repo() -> tempfile::TempDir {
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(repo.path().join("src")).unwrap();
    std::fs::write(
        repo.path().join("src/lib.rs"),
        "/// Parses one `Name: value` header line.\npub fn parse_header(line: &str) -> Option<(&str, &str)> {\n    line.split_once(':')\n}\n",
    )
    .unwrap();
    repo
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap()
}

/// Indexes `path` and waits until the build is over (request ids 1 to 99).
async fn index(c: &mut Raw, path: &str) {
    let created = c
        .call(1, "manage_index", json!({"action": "create", "path": path}))
        .await;
    assert_eq!(created["structuredContent"]["status"], "ok", "{created}");
    for id in 2..100 {
        let s = c
            .call(
                id,
                "manage_index",
                json!({"action": "status", "path": path}),
            )
            .await;
        if support::build_over(&s) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("indexing did not finish");
}

/// Telemetry reaches the client only at or above the level it chose: nothing before
/// `logging/setLevel`, nothing at `error`, the event itself (as structured data) at `debug`.
/// Returns the data of the one telemetry notification.
async fn logging(c: &mut Raw, repo: &Path) -> Value {
    let init = c.initialize("2025-06-18").await;
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
    let path = repo.to_string_lossy().into_owned();
    index(c, &path).await;
    let search = |q: &str| json!({"path": path, "query": q, "limit": 1});
    c.call(100, "search_codebase", search("a")).await;
    let set = c
        .request(json!(101), "logging/setLevel", json!({"level": "error"}))
        .await;
    assert_eq!(set["result"], json!({}), "{set}");
    c.call(102, "search_codebase", search("bb")).await;
    let set = c
        .request(json!(103), "logging/setLevel", json!({"level": "debug"}))
        .await;
    assert_eq!(set["result"], json!({}), "{set}");
    c.call(104, "search_codebase", search("parse_header")).await;
    let note = c.telemetry_note().await;
    assert_eq!(note["params"]["level"], "debug", "{note}");
    let data = note["params"]["data"].clone();
    assert_eq!(data["event"], "search_executed", "{note}");
    // Notifications keep their order, so an event of an earlier search would have come first.
    assert_eq!(data["query_length"], "parse_header".len(), "{note}");
    c.assert_no_log_notification("besides the one awaited");
    data
}

/// A request may carry its own level in `_meta` (the 2026-07-28 way, without
/// `logging/setLevel`): its events are sent at that level, and only its own.
#[tokio::test]
async fn request_log_level_in_memory() {
    let home = tempfile::tempdir().unwrap();
    let repo = tiny_repo();
    let (r, w) = tokio::io::split(in_memory(&canonical(home.path())));
    let c = &mut Raw::new(r, w);
    c.initialize("2025-11-25").await;
    let path = canonical(repo.path()).to_string_lossy().into_owned();
    index(c, &path).await;
    let search = |q: &str, level: &str| {
        json!({"name": "search_codebase", "arguments": {"path": path, "query": q, "limit": 1},
               "_meta": {"io.modelcontextprotocol/logLevel": level}})
    };
    let quiet = c
        .request(json!(100), "tools/call", search("a", "error"))
        .await;
    assert!(quiet.get("result").is_some(), "{quiet}");
    let loud = c
        .request(json!(101), "tools/call", search("parse_header", "debug"))
        .await;
    assert!(loud.get("result").is_some(), "{loud}");
    let note = c.telemetry_note().await;
    assert_eq!(note["params"]["level"], "debug", "{note}");
    assert_eq!(
        note["params"]["data"]["query_length"],
        "parse_header".len(),
        "{note}"
    );
    // A plain call afterwards is answered with no event: the session never set a level.
    c.call(
        102,
        "search_codebase",
        json!({"path": path, "query": "bb", "limit": 1}),
    )
    .await;
    c.request(json!(103), "ping", json!({})).await;
    c.assert_no_log_notification("besides the one awaited");
}

#[tokio::test]
async fn logging_in_memory() {
    let home = tempfile::tempdir().unwrap();
    let repo = tiny_repo();
    let (r, w) = tokio::io::split(in_memory(&canonical(home.path())));
    logging(&mut Raw::new(r, w), &canonical(repo.path())).await;
}

/// The same through the binary. By default stderr keeps every `[TELEMETRY]` line as before:
/// one per search, the same event the client received. `SATORI_TELEMETRY=off` (what the Node
/// API sets) drops the lines and still sends the client its event.
#[tokio::test]
async fn logging_real_process() {
    async fn check(telemetry: Option<&str>, lines: usize) {
        let home = tempfile::tempdir().unwrap();
        let repo = tiny_repo();
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_satori"));
        command
            .env("SATORI_HOME", canonical(home.path()))
            .env_remove("SATORI_TELEMETRY")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(value) = telemetry {
            command.env("SATORI_TELEMETRY", value);
        }
        let mut child = command.spawn().unwrap();
        let mut c = Raw::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
        let sent = logging(&mut c, &canonical(repo.path())).await;
        drop(c);
        let out = child.wait_with_output().await.unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        let events: Vec<Value> = stderr
            .lines()
            .filter_map(|l| l.strip_prefix("[TELEMETRY] "))
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(events.len(), lines, "{telemetry:?}: {stderr}");
        if let Some(last) = events.last() {
            assert_eq!(*last, sent, "{stderr}");
        }
    }
    for (telemetry, lines) in [(None, 3), (Some("stderr"), 3), (Some("off"), 0)] {
        check(telemetry, lines).await;
    }
}

/// `initialize` with each version a client may ask for, through rmcp's client: the server
/// answers with the client's version when it has an `initialize` handshake for it, else with
/// its own latest such version (2026-07-28 dropped `initialize` for `server/discover`; a
/// client that asks for it there gets 2025-11-25). Then a tool call works.
const ASKED_AND_NEGOTIATED: [(ProtocolVersion, ProtocolVersion); 3] = [
    (ProtocolVersion::V_2025_06_18, ProtocolVersion::V_2025_06_18),
    (ProtocolVersion::V_2025_11_25, ProtocolVersion::V_2025_11_25),
    (ProtocolVersion::V_2026_07_28, ProtocolVersion::V_2025_11_25),
];

async fn list_codebases_works<S: rmcp::Service<RoleClient>>(
    client: &rmcp::service::RunningService<RoleClient, S>,
) {
    let r = client
        .call_tool(CallToolRequestParams::new("list_codebases"))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(false), "{r:?}");
}

async fn versions<T, E, A>(connect: impl Fn() -> T)
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    for (asked, negotiated) in ASKED_AND_NEGOTIATED {
        let client = ClientConfig::default()
            .with_protocol_version(asked.clone())
            .serve(connect())
            .await
            .unwrap();
        let info = client.peer_info().unwrap();
        assert_eq!(info.protocol_version, negotiated, "asked {asked}");
        list_codebases_works(&client).await;
        client.cancel().await.unwrap();
    }
    // A 2026-07-28 client proper: `server/discover`, then requests that carry their own
    // protocol version; no `initialize` at all.
    let client = ClientConfig::default()
        .serve_with_lifecycle(
            connect(),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .unwrap();
    assert_eq!(
        client.peer_info().unwrap().protocol_version,
        ProtocolVersion::V_2026_07_28
    );
    list_codebases_works(&client).await;
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn protocol_versions_in_memory() {
    let home = tempfile::tempdir().unwrap();
    versions(|| in_memory(home.path())).await;
}

/// A spawned server as an rmcp client transport (its stdout, its stdin); the child is
/// killed when the transport's halves are dropped with it.
struct ChildIo {
    _child: tokio::process::Child,
    out: tokio::process::ChildStdout,
    inp: tokio::process::ChildStdin,
}

impl tokio::io::AsyncRead for ChildIo {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.out).poll_read(cx, buf)
    }
}

impl AsyncWrite for ChildIo {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.inp).poll_write(cx, buf)
    }
    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inp).poll_flush(cx)
    }
    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inp).poll_shutdown(cx)
    }
}

#[tokio::test]
async fn protocol_versions_real_process() {
    let home = tempfile::tempdir().unwrap();
    versions(|| {
        let mut child = spawn_satori(home.path(), Stdio::null());
        let out = child.stdout.take().unwrap();
        let inp = child.stdin.take().unwrap();
        ChildIo {
            _child: child,
            out,
            inp,
        }
    })
    .await;
}

/// The official MCP Python SDK (a third-party client) initializes, lists the tools, sets a
/// log level, calls a tool, and navigates an indexed repository (search, outline, callers
/// two steps out, open_symbol) with its output-schema validation on. Runs when `python3` (or
/// `$SATORI_TEST_PYTHON`) can import `mcp` (CI installs it); skipped with a message otherwise.
#[test]
fn python_sdk_client() {
    let python = match support::python_with_sdk() {
        Ok(python) => python,
        Err(skipped) => {
            eprintln!("{skipped}");
            return;
        }
    };
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path().canonicalize().unwrap();
    support::write(
        &root,
        "app/router.py",
        "class Router:\n    def route_request(self, request):\n        return request\n",
    );
    support::write(
        &root,
        "app/server.py",
        "from app.router import Router\n\n\ndef serve(request):\n    return Router().route_request(request)\n\n\ndef main():\n    serve(None)\n",
    );
    let seen = support::run_sdk_script(&python, "sdk_client.py", &[root.as_os_str()], home.path());
    // The SDK asks for its own latest version; the server echoes it or answers its latest.
    assert!(
        ["2025-06-18", "2025-11-25"].contains(&seen["protocolVersion"].as_str().unwrap()),
        "{seen}"
    );
    assert_eq!(seen["logging"], true, "{seen}");
    assert_eq!(
        seen["tools"],
        json!([
            "list_codebases",
            "manage_index",
            "search_codebase",
            "file_outline",
            "call_graph",
            "read_file"
        ]),
        "{seen}"
    );
    assert_eq!(seen["isError"], false, "{seen}");
    // The SDK validated every structured answer against its outputSchema on the way.
    assert_eq!(
        seen["navigation"],
        json!({
            "state": "indexed",
            "symbol": "class Router",
            "outline": ["class Router", "def route_request(self, request)"],
            "graphStatus": "ok",
            "callers": ["def main()", "def serve(request)"],
            "opened": {"startLine": 1, "endLine": 3, "totalLines": 3},
        }),
        "{seen}"
    );
    assert!(
        seen["text"].as_str().unwrap().contains("No codebases"),
        "{seen}"
    );
}

/// rmcp's client talking to the server, with lines of the test slipped in between its
/// messages: `to_server` is where the server reads, `from_server` where it writes. Returns
/// the connected client and the way to slip a line in.
async fn rmcp_client_with_extra_lines(
    mut to_server: impl AsyncWrite + Unpin + Send + 'static,
    from_server: impl tokio::io::AsyncRead + Unpin + Send + 'static,
) -> (
    rmcp::service::RunningService<RoleClient, ClientConfig>,
    tokio::sync::mpsc::UnboundedSender<String>,
) {
    // Before the client's `initialize`: a notification the handshake used to die on.
    to_server
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await
        .unwrap();
    let (client_out, relay_in) = tokio::io::duplex(1 << 16);
    let (extra, mut extra_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        let mut client_lines = BufReader::new(relay_in).lines();
        loop {
            let line = tokio::select! {
                l = client_lines.next_line() => match l { Ok(Some(l)) => l, _ => return },
                l = extra_rx.recv() => match l { Some(l) => l, None => return },
            };
            if to_server
                .write_all(format!("{line}\n").as_bytes())
                .await
                .is_err()
                || to_server.flush().await.is_err()
            {
                return;
            }
        }
    });
    let client = ClientConfig::default()
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
        .serve((from_server, client_out))
        .await
        .expect("initialize after a notification sent before it");
    (client, extra)
}

/// Through rmcp's client: a notification before `initialize` does not end the session, a
/// garbage line and a `tools/call` without a name are answered, and the next call is served.
async fn edges_with_rmcp(
    client: rmcp::service::RunningService<RoleClient, ClientConfig>,
    extra: tokio::sync::mpsc::UnboundedSender<String>,
) {
    extra.send("garbage that is not JSON".into()).unwrap();
    let nameless = client
        .peer()
        .send_request(rmcp::model::ClientRequest::CustomRequest(
            rmcp::model::CustomRequest::new("tools/call", Some(json!({}))),
        ))
        .await;
    match nameless {
        Err(rmcp::service::ServiceError::McpError(e)) => {
            assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS, "{e:?}")
        }
        other => panic!("a nameless tools/call must be invalid params: {other:?}"),
    }
    list_codebases_works(&client).await;
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn edges_through_rmcp_client_in_memory() {
    let home = tempfile::tempdir().unwrap();
    let (from_server, to_server) = tokio::io::split(in_memory(home.path()));
    let (client, extra) = rmcp_client_with_extra_lines(to_server, from_server).await;
    edges_with_rmcp(client, extra).await;
}

#[tokio::test]
async fn edges_through_rmcp_client_real_process() {
    let home = tempfile::tempdir().unwrap();
    let mut child = spawn_satori(home.path(), Stdio::null());
    let (client, extra) =
        rmcp_client_with_extra_lines(child.stdin.take().unwrap(), child.stdout.take().unwrap())
            .await;
    edges_with_rmcp(client, extra).await;
    let status = child.wait().await.unwrap();
    assert!(status.success(), "{status:?}");
}
