//! The clients at a shared server's front door, as real processes: `satori-cli --endpoint`
//! against a real `satori --http`/`--socket` started with `--token-env` reports a missing or
//! wrong token as `E_AUTH` (exit 2) naming `SATORI_ENDPOINT_TOKEN`, never retried with the
//! guard off nor bypassed by `--endpoint-fallback`; it ends the MCP session it opened with an
//! HTTP `DELETE`, whatever the server answers to it (shown on a loopback fake that speaks the
//! Streamable HTTP handshake and records what it is sent: the real server's answer to a
//! `DELETE` is no proof that one came); and `mcat` attaches to `satori --socket`, which is no
//! mcat proxy, with and without a token.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Output};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use satori_e2e::{binary, json_output, start_shared};
use serde_json::{Value, json};

const TOKEN: &str = "token-of-the-front-door-test";
const TOKEN_VAR: &str = "SATORI_FRONT_DOOR_TEST_TOKEN";

/// A `satori` started with `args`, and the address it printed once it listened.
fn start(home: &Path, args: &[&str]) -> (Child, String) {
    start_shared(home, args, &[(TOKEN_VAR, TOKEN)])
}

fn stop(mut server: Child) {
    let _ = server.kill();
    let _ = server.wait();
}

/// `satori-cli` with `env` (and none of the caller's endpoint variables); its exit code and
/// its stdout, which must be one JSON document.
fn cli(env: &[(&str, &str)], args: &[&str]) -> (Output, Value) {
    let mut cmd = Command::new(binary("satori-cli"));
    cmd.env("SATORI_SERVER_BIN", "/nonexistent/satori")
        .env_remove("SATORI_ENDPOINT")
        .env_remove("SATORI_ENDPOINT_TOKEN")
        .env_remove("SATORI_ENDPOINT_FALLBACK")
        .env_remove("SATORI_CLI_GUARD_RECOVERY")
        .args(args);
    json_output(&mut cmd, env)
}

/// A refused call: `E_AUTH`, exit 2, a message that names `SATORI_ENDPOINT_TOKEN` and says
/// whether a token was sent, the token on stderr, and no retry with the guard off.
fn check_refused(what: &str, env: &[(&str, &str)], args: &[&str], token_sent: bool) {
    let (out, doc) = cli(env, args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{what}: {doc}\n{stderr}");
    assert_eq!(doc["error"]["code"], "E_AUTH", "{what}: {doc}");
    let message = doc["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("SATORI_ENDPOINT_TOKEN"),
        "{what}: {message}"
    );
    let says = if token_sent {
        "was sent and is not the one it accepts"
    } else {
        "no bearer token was sent"
    };
    assert!(message.contains(says), "{what}: {message}");
    assert!(!message.contains("mcat"), "{what}: {message}");
    assert!(
        stderr.lines().any(|l| l.starts_with("E_AUTH")),
        "{what}: {stderr}"
    );
    // Under --guard-recovery auto the error carries the record: one attempt, no retry.
    if args.contains(&"auto") {
        let record = &doc["error"]["guardRecovery"];
        assert_eq!(record["attemptCount"], 1, "{what}: {doc}");
        assert_eq!(record["guardRecoveryAttempted"], false, "{what}: {doc}");
    }
    assert!(!stderr.contains("[GUARD_RECOVERY]"), "{what}: {stderr}");
}

#[test]
fn a_refused_token_is_an_auth_failure_that_names_the_variable() {
    let home = tempfile::tempdir().unwrap();
    let (http, url) = start(
        home.path(),
        &["--http", "127.0.0.1:0", "--token-env", TOKEN_VAR],
    );
    let sock = home.path().join("satori.sock");
    let (unix, at) = start(
        home.path(),
        &["--socket", sock.to_str().unwrap(), "--token-env", TOKEN_VAR],
    );
    let satori = binary("satori");
    let satori = satori.to_str().unwrap();
    let home_s = home.path().to_str().unwrap();
    for endpoint in [url.as_str(), at.as_str()] {
        let ask = |extra: &[&'static str]| {
            let mut args = vec!["--endpoint", endpoint];
            args.extend_from_slice(extra);
            args.push("list_codebases");
            args
        };
        check_refused(
            &format!("{endpoint} without a token"),
            &[],
            &ask(&[]),
            false,
        );
        check_refused(
            &format!("{endpoint} with an empty token"),
            &[("SATORI_ENDPOINT_TOKEN", " ")],
            &ask(&[]),
            false,
        );
        check_refused(
            &format!("{endpoint} with a wrong token"),
            &[("SATORI_ENDPOINT_TOKEN", "not-the-token")],
            &ask(&[]),
            true,
        );
        // Guard recovery asked for: a shared server's guard is not ours, so no retry.
        check_refused(
            &format!("{endpoint} with --guard-recovery auto"),
            &[],
            &ask(&["--guard-recovery", "auto"]),
            false,
        );
        // A server that answers and refuses is never bypassed.
        check_refused(
            &format!("{endpoint} with --endpoint-fallback"),
            &[("SATORI_SERVER_BIN", satori), ("SATORI_HOME", home_s)],
            &ask(&["--endpoint-fallback"]),
            false,
        );
        let (out, doc) = cli(&[("SATORI_ENDPOINT_TOKEN", TOKEN)], &ask(&[]));
        assert_eq!(
            out.status.code(),
            Some(0),
            "{endpoint} with the token: {doc}"
        );
    }
    stop(http);
    stop(unix);
}

/// What the fake server answers to a `DELETE`.
#[derive(Debug, Clone, Copy)]
enum OnDelete {
    Status(u16),
    /// Holds the connection open without an answer.
    Silence,
}

/// One request the fake server received: the HTTP method, its `Mcp-Session-Id`, and the
/// JSON-RPC method of its body.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    http: String,
    session: Option<String>,
    rpc: Option<String>,
}

const FAKE_SESSION: &str = "fake-session-7";

/// A loopback Streamable HTTP server with one tool list and sessions: `initialize` opens
/// [`FAKE_SESSION`], every other request must carry it, notifications get 202, a GET 405
/// (no stream of its own), and a `DELETE` as `on_delete` says. Records every request before
/// answering it. Its URL and the record.
fn fake_server(on_delete: OnDelete) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            let record = record.clone();
            std::thread::spawn(move || serve_one(conn, on_delete, &record));
        }
    });
    (url, seen)
}

/// Answers one request on `conn` (the client opens a connection per request).
fn serve_one(conn: TcpStream, on_delete: OnDelete, record: &Mutex<Vec<Seen>>) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let http = line
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned();
    let (mut length, mut session) = (0usize, None);
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').unwrap_or((&line, ""));
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().unwrap_or(0),
            "mcp-session-id" => session = Some(value.trim().to_owned()),
            _ => {}
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let rpc = message["method"].as_str().map(str::to_owned);
    record.lock().unwrap().push(Seen {
        http: http.clone(),
        session: session.clone(),
        rpc: rpc.clone(),
    });
    let known = session.as_deref() == Some(FAKE_SESSION);
    let id = message["id"].clone();
    let (status, body) = match (http.as_str(), rpc.as_deref()) {
        ("POST", Some("initialize")) => (
            200,
            json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "fake", "version": "0"},
            }})
            .to_string(),
        ),
        ("POST" | "DELETE", _) if !known => (
            400,
            json!({"jsonrpc": "2.0", "id": null, "error": {
                "code": -32000, "message": "Bad Request: No valid session ID provided"}})
            .to_string(),
        ),
        ("POST", Some(_)) if id.is_null() => (202, String::new()),
        ("POST", Some("tools/list")) => (
            200,
            json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [{
                "name": "echo", "inputSchema": {"type": "object"}}]}})
            .to_string(),
        ),
        ("DELETE", _) => match on_delete {
            OnDelete::Status(status) => (status, String::new()),
            OnDelete::Silence => {
                std::thread::sleep(Duration::from_secs(60));
                return;
            }
        },
        _ => (405, String::new()),
    };
    let mut conn = reader.into_inner();
    let _ = write!(
        conn,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nMcp-Session-Id: {FAKE_SESSION}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

#[test]
fn a_call_on_an_endpoint_ends_its_session() {
    // The call's result and exit code are the same whatever the DELETE gets: done (200), a
    // session already gone (404), a server that ends none (405), or no answer at all.
    let check = |on_delete: OnDelete| {
        let (url, seen) = fake_server(on_delete);
        let started = Instant::now();
        let (out, doc) = cli(&[], &["--endpoint", &url, "tools", "list"]);
        let took = started.elapsed();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{on_delete:?}: {doc}\n{stderr}");
        assert_eq!(doc["tools"][0]["name"], "echo", "{on_delete:?}: {doc}");
        assert!(
            took < Duration::from_secs(10),
            "{on_delete:?}: the call took {took:?}"
        );
        let seen = seen.lock().unwrap().clone();
        let deletes: Vec<_> = seen.iter().filter(|s| s.http == "DELETE").collect();
        assert_eq!(
            deletes,
            [&Seen {
                http: "DELETE".into(),
                session: Some(FAKE_SESSION.into()),
                rpc: None,
            }],
            "{on_delete:?}: {seen:?}"
        );
        // The session is ended last, after every request of the call.
        assert_eq!(
            seen.last().unwrap().http,
            "DELETE",
            "{on_delete:?}: {seen:?}"
        );
    };
    for on_delete in [
        OnDelete::Status(200),
        OnDelete::Status(404),
        OnDelete::Status(405),
        OnDelete::Silence,
    ] {
        check(on_delete);
    }
}

/// `mcat` with `env`; its exit code and its one JSON object.
fn mcat(env: &[(&str, &str)], args: &[&str]) -> (i32, Value) {
    let mut cmd = Command::new(binary("mcat"));
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "mcat {args:?}: stdout is not one JSON object ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), doc)
}

#[cfg(unix)]
#[test]
fn mcat_attaches_to_satori_on_a_unix_socket() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("session.json");
    let s = session.to_str().unwrap();
    // One server without a token, one with.
    let plain = home.path().join("plain.sock");
    let (open_server, open_at) = start(home.path(), &["--socket", plain.to_str().unwrap()]);
    let guarded = home.path().join("guarded.sock");
    let (token_server, token_at) = start(
        home.path(),
        &[
            "--socket",
            guarded.to_str().unwrap(),
            "--token-env",
            TOKEN_VAR,
        ],
    );
    let with_token = [(TOKEN_VAR, TOKEN)];
    let key_ref = format!("env://{TOKEN_VAR}");
    for (at, env, init_extra) in [
        (&open_at, &[][..], &[][..]),
        (&token_at, &with_token[..], &["-k", key_ref.as_str()][..]),
    ] {
        let mut init = vec!["init", at.as_str(), "-o", s];
        init.extend_from_slice(init_extra);
        let (code, doc) = mcat(env, &init);
        assert_eq!(code, 0, "{at}: {doc}");
        assert_eq!(doc["ok"], true, "{at}: {doc}");
        let file: Value = serde_json::from_slice(&std::fs::read(&session).unwrap()).unwrap();
        assert_eq!(file["transport"], "unix", "{file}");
        assert_eq!(file["server_info"]["name"], "satori", "{file}");
        assert!(file.get("proxy_control_file").is_none(), "{file}");

        let (code, doc) = mcat(env, &["tool", "list", "-s", s]);
        assert_eq!(code, 0, "{at}: {doc}");
        let names: Vec<&str> = doc["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert!(names.contains(&"search_codebase"), "{at}: {names:?}");
        let (code, doc) = mcat(env, &["tool", "call", "list_codebases", "-s", s]);
        assert_eq!(code, 0, "{at}: {doc}");
        assert_ne!(doc["result"]["isError"], true, "{at}: {doc}");
    }
    // Without the token the guarded server refuses, and mcat says so.
    let (code, doc) = mcat(&[], &["init", &token_at, "-o", s]);
    assert_eq!(code, 1, "{doc}");
    assert!(
        doc["error"]
            .as_str()
            .unwrap()
            .contains("requires authorization"),
        "{doc}"
    );
    stop(open_server);
    stop(token_server);
}
