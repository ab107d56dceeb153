//! OAuth end to end: the real binary against a loopback authorization server written for
//! these tests (`fixtures/oauth_server.py`), which guards a small MCP endpoint.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[derive(Debug)]
struct Out {
    code: i32,
    json: Value,
    stderr: String,
}

fn mcat(args: &[&str]) -> Out {
    let out = Command::new(env!("CARGO_BIN_EXE_mcat"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("mcat runs");
    Out {
        code: out.status.code().unwrap_or(-1),
        json: serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn ok(args: &[&str]) -> Value {
    let out = mcat(args);
    assert_eq!(out.code, 0, "mcat {args:?}: {out:?}");
    out.json["result"].clone()
}

fn check_fails(args: &[&str], code: i32, needle: &str) {
    let out = mcat(args);
    assert_eq!(out.code, code, "mcat {args:?}: {out:?}");
    assert_eq!(out.json["ok"], false);
    let e = out.json["error"].as_str().unwrap_or_default();
    assert!(e.contains(needle), "mcat {args:?}: {e:?} lacks {needle:?}");
}

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// The authorization server, stopped when dropped.
struct AuthServer {
    child: Child,
    port: u16,
}

impl AuthServer {
    fn start(options: &[&str]) -> AuthServer {
        let mut child = Command::new("python3")
            .arg(fixture("oauth_server.py"))
            .args(options)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs the OAuth server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().expect("the server prints its port");
        AuthServer { child, port }
    }

    fn mcp(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// A GET on one of the server's test hooks; the JSON answer.
    fn get(&self, path: &str) -> Value {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        write!(s, "GET {path} HTTP/1.0\r\nhost: 127.0.0.1\r\n\r\n").unwrap();
        let mut raw = String::new();
        s.read_to_string(&mut raw).unwrap();
        let body = raw.split("\r\n\r\n").nth(1).unwrap_or_default();
        serde_json::from_str(body).unwrap_or(Value::Null)
    }
}

impl Drop for AuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A file holding a secret is readable by its owner only (mode 0600). Other platforms have no
/// mode bits, and mcat sets none there.
fn check_owner_only(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", path.display());
    }
    #[cfg(not(unix))]
    let _ = path;
}

fn token(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn the_device_flow_for_an_agent_starts_and_continues() {
    let server = AuthServer::start(&["--device", "--slow-down"]);
    let dir = tempfile::tempdir().unwrap();
    let tok = dir.path().join("token.json");
    let state = dir.path().join("auth-state.json");
    let (t, s) = (tok.to_str().unwrap(), state.to_str().unwrap());
    let started = Instant::now();
    let pending = ok(&["auth", "start", &server.mcp(), "-k", t, "--state", s]);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "start must not wait"
    );
    assert_eq!(pending["status"], "pending");
    assert_eq!(pending["flow"], "device_code");
    let code = pending["action"]["code"].as_str().unwrap().to_owned();
    assert!(pending["action"]["url"].as_str().unwrap().contains(&code));
    assert!(!tok.exists());
    // The state file holds the device code, for the owner only.
    check_owner_only(&state);

    // The user approves while `continue` polls (through a slow_down).
    let approver = {
        let port = server.port;
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(1500));
            let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            write!(s, "GET /approve?user_code={code} HTTP/1.0\r\n\r\n").unwrap();
            let _ = s.read_to_string(&mut String::new());
        })
    };
    let done = ok(&["auth", "continue", "--state", s, "-k", t]);
    approver.join().unwrap();
    assert_eq!(done["status"], "complete");
    assert_eq!(done["stored"], format!("json://{t}"));
    check_owner_only(&tok);
    let stored = token(&tok);
    assert!(stored["access_token"].is_string() && stored["refresh_token"].is_string());
    let stats = server.get("/stats");
    assert_eq!(stats["registrations"], 1);
    assert!(stats["device_polls"].as_u64().unwrap() >= 2);
    // Secrets of the finished flow are gone from the state file.
    let st: Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
    assert_eq!(st["state"]["status"], "complete");
    assert!(st["state"].get("device_code").is_none());
    check_fails(
        &["auth", "continue", "--state", s, "-k", t, "-o"],
        1,
        "already complete",
    );

    // The token opens the guarded server; no token is printed anywhere.
    let sess = dir.path().join("s.json");
    ok(&["init", &server.mcp(), "-k", t, "-o", sess.to_str().unwrap()]);
    let called = ok(&["tool", "call", "whoami", "-s", sess.to_str().unwrap()]);
    assert_eq!(called["content"][0]["text"], "authorized");
    let access = stored["access_token"].as_str().unwrap();
    let out = mcat(&[
        "--log",
        "auth:debug",
        "--log",
        "mcp:debug",
        "tool",
        "list",
        "-s",
        sess.to_str().unwrap(),
    ]);
    assert!(!out.stderr.contains(access));
    assert!(out.stderr.contains("tools/list to http"), "{}", out.stderr);
    assert!(!std::fs::read_to_string(&sess).unwrap().contains(access));

    // A continue that could not store its token fails before it redeems the grant, so the
    // grant still works for the continue that may overwrite.
    let again = ok(&["auth", "start", &server.mcp(), "-k", t, "--state", s, "-o"]);
    let code = again["action"]["code"].as_str().unwrap();
    server.get(&format!("/approve?user_code={code}"));
    let polls = server.get("/stats")["device_polls"].clone();
    check_fails(
        &["auth", "continue", "--state", s, "-k", t],
        1,
        "already holds a value",
    );
    assert_eq!(
        server.get("/stats")["device_polls"],
        polls,
        "the grant was not touched"
    );
    let done = ok(&["auth", "continue", "--state", s, "-k", t, "-o"]);
    assert_eq!(done["status"], "complete");
    assert_ne!(token(&tok)["access_token"], stored["access_token"]);
}

#[test]
fn a_device_code_that_expires_or_is_denied_is_reported() {
    let server = AuthServer::start(&["--device", "--device-expiry", "2"]);
    let dir = tempfile::tempdir().unwrap();
    let tok = dir.path().join("t.json");
    let state = dir.path().join("st.json");
    let (t, s) = (tok.to_str().unwrap(), state.to_str().unwrap());
    ok(&["auth", "start", &server.mcp(), "-k", t, "--state", s]);
    check_fails(&["auth", "continue", "--state", s, "-k", t], 1, "expired");
    assert!(!tok.exists());

    let denied = ok(&["auth", "start", &server.mcp(), "-k", t, "--state", s]);
    let code = denied["action"]["code"].as_str().unwrap();
    server.get(&format!("/deny?user_code={code}"));
    check_fails(&["auth", "continue", "--state", s, "-k", t], 1, "denied");
}

#[test]
fn the_code_flow_with_pkce_completes_headlessly_and_tokens_refresh() {
    let server = AuthServer::start(&["--expires-in", "1", "--rotate"]);
    let dir = tempfile::tempdir().unwrap();
    let tok = dir.path().join("t.json");
    let state = dir.path().join("st.json");
    let (t, s) = (tok.to_str().unwrap(), state.to_str().unwrap());
    let opener = format!("python3 {}", fixture("follow.py"));
    let done = ok(&[
        "auth",
        "start",
        &server.mcp(),
        "-k",
        t,
        "--state",
        s,
        "--wait",
        "--open-command",
        &opener,
    ]);
    assert_eq!(done["status"], "complete");
    let first = token(&tok);
    assert!(first["expires_at"].is_u64());

    let sess = dir.path().join("s.json");
    let ss = sess.to_str().unwrap();
    ok(&["init", &server.mcp(), "-k", t, "-o", ss]);
    std::thread::sleep(Duration::from_millis(1100));
    // An expiring token is refreshed before use, and the rotated refresh token is kept.
    ok(&["tool", "call", "whoami", "-s", ss]);
    let second = token(&tok);
    assert_ne!(second["access_token"], first["access_token"]);
    assert_ne!(second["refresh_token"], first["refresh_token"]);
    // A token the server revoked is refreshed once and the call retried.
    server.get("/revoke");
    ok(&["tool", "call", "whoami", "-s", ss]);
    assert!(server.get("/stats")["refreshes"].as_u64().unwrap() >= 2);

    // The stored token is not replaced without -o.
    check_fails(
        &["auth", "start", &server.mcp(), "-k", t, "--state", s],
        1,
        "pass -o/--overwrite",
    );
}

#[test]
fn a_refresh_without_rotation_keeps_the_refresh_token() {
    let server = AuthServer::start(&["--expires-in", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let tok = dir.path().join("t.json");
    let t = tok.to_str().unwrap();
    let state = dir.path().join("st.json");
    let opener = format!("python3 {}", fixture("follow.py"));
    ok(&[
        "auth",
        "start",
        &server.mcp(),
        "-k",
        t,
        "--state",
        state.to_str().unwrap(),
        "--wait",
        "--open-command",
        &opener,
    ]);
    let first = token(&tok);
    let sess = dir.path().join("s.json");
    std::thread::sleep(Duration::from_millis(1100));
    ok(&["init", &server.mcp(), "-k", t, "-o", sess.to_str().unwrap()]);
    let second = token(&tok);
    assert_ne!(second["access_token"], first["access_token"]);
    assert_eq!(second["refresh_token"], first["refresh_token"]);
}

#[test]
fn a_token_can_live_in_a_dotenv_file_and_logs_go_to_a_file() {
    let server = AuthServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let env_file = dir.path().join(".env");
    std::fs::write(&env_file, "# settings\nOTHER=kept\n").unwrap();
    let key = format!(".env://{}:MCP_TOKEN", env_file.display());
    let state = dir.path().join("st.json");
    let log = dir.path().join("mcat.log");
    let opener = format!("python3 {}", fixture("follow.py"));
    let done = ok(&[
        "--log",
        "auth:debug",
        "--log-file",
        log.to_str().unwrap(),
        "auth",
        "start",
        &server.mcp(),
        "-k",
        &key,
        "--state",
        state.to_str().unwrap(),
        "--wait",
        "--open-command",
        &opener,
    ]);
    assert_eq!(done["stored"], key);
    let text = std::fs::read_to_string(&env_file).unwrap();
    assert!(
        text.starts_with("# settings\nOTHER=kept\nMCP_TOKEN='{"),
        "{text}"
    );
    check_owner_only(&env_file);
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains("mcat auth info: POST") && logged.contains("[redacted]"),
        "{logged}"
    );
    let sess = dir.path().join("s.json");
    ok(&[
        "init",
        &server.mcp(),
        "-k",
        &key,
        "-o",
        sess.to_str().unwrap(),
    ]);
    ok(&["tool", "call", "whoami", "-s", sess.to_str().unwrap()]);
    // The token never reached the log.
    let stored: Value = serde_json::from_str(
        text.lines()
            .find_map(|l| l.strip_prefix("MCP_TOKEN='"))
            .unwrap()
            .trim_end_matches('\''),
    )
    .unwrap();
    assert!(!logged.contains(stored["access_token"].as_str().unwrap()));
}

#[test]
fn a_client_file_audience_goes_with_every_request() {
    let server = AuthServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let d = |n: &str| dir.path().join(n).display().to_string();
    let client = d("client.json");
    std::fs::write(&client, r#"{"audience": "api://mcat-test"}"#).unwrap();
    let opener = format!("python3 {}", fixture("follow.py"));
    let (tok, st) = (d("t.json"), d("st.json"));
    ok(&[
        "auth",
        "start",
        &server.mcp(),
        "-k",
        &tok,
        "--state",
        &st,
        "-c",
        &client,
        "--wait",
        "--open-command",
        &opener,
    ]);
    let seen = server.get("/stats")["audiences"].clone();
    assert_eq!(
        seen,
        json!([
            ["authorize", "api://mcat-test"],
            ["token", "api://mcat-test"]
        ])
    );
}

#[test]
fn a_rotated_session_id_is_followed() {
    let server = AuthServer::start(&["--rotate-session"]);
    let dir = tempfile::tempdir().unwrap();
    let d = |n: &str| dir.path().join(n).display().to_string();
    let (tok, st, sess) = (d("t.json"), d("st.json"), d("s.json"));
    let opener = format!("python3 {}", fixture("follow.py"));
    let ep = server.mcp();
    ok(&[
        "auth",
        "start",
        &ep,
        "-k",
        &tok,
        "--state",
        &st,
        "--wait",
        "--open-command",
        &opener,
    ]);
    ok(&["init", &ep, "-k", &tok, "-o", &sess]);
    let id = || -> Value {
        serde_json::from_slice::<Value>(&std::fs::read(&sess).unwrap()).unwrap()["session_id"]
            .clone()
    };
    let first = id();
    assert_eq!(
        ok(&["tool", "call", "whoami", "-s", &sess])["content"][0]["text"],
        "authorized"
    );
    let second = id();
    assert!(
        second.is_string() && second != first,
        "{first} then {second}"
    );
    // The server forgot the first id: this works only because the file followed.
    ok(&["tool", "list", "-s", &sess]);
}

#[test]
fn a_server_without_initialize_is_named_for_what_it_is() {
    let server = AuthServer::start(&["--sessionless"]);
    let dir = tempfile::tempdir().unwrap();
    let sess = dir.path().join("s.json");
    check_fails(
        &["init", &server.mcp(), "-o", sess.to_str().unwrap()],
        1,
        "sessionless MCP revision (2026-07-28 or later)",
    );
    assert!(!sess.exists());
}

#[test]
fn auth_refuses_what_it_must() {
    let plain = AuthServer::start(&[]);
    let no_s256 = AuthServer::start(&["--no-s256"]);
    let other = AuthServer::start(&["--resource", "http://127.0.0.1:1/elsewhere"]);
    let dir = tempfile::tempdir().unwrap();
    let d = |n: &str| dir.path().join(n).display().to_string();
    let (t, s) = (d("t.json"), d("st.json"));
    let corrupt = d("corrupt-state.json");
    std::fs::write(&corrupt, "{nope").unwrap();
    let client_file = d("client.json");
    std::fs::write(&client_file, r#"{"name": "x", "id": "y"}"#).unwrap();
    // A real P-256 key, which the plain server (no private_key_jwt) must not be sent.
    let key_file = d("client-key.pem");
    std::fs::write(&key_file, p256_pem()).unwrap();
    let ep = plain.mcp();
    // Each case is a command line; `{name}` stands for a server endpoint or a file above.
    let vars = [
        ("{no_s256}", no_s256.mcp()),
        ("{other}", other.mcp()),
        ("{ep}", ep.clone()),
        ("{t}", t.clone()),
        ("{s}", s.clone()),
        ("{client}", client_file.clone()),
        ("{key}", key_file.clone()),
        ("{corrupt}", corrupt.clone()),
        ("{dir}", dir.path().display().to_string()),
    ];
    let cases: &[(&str, i32, &str)] = &[
        (
            "auth start {ep} -k {t} --state {s} --client-key {key}",
            2,
            "a client key needs a client id",
        ),
        (
            "auth start {ep} -k {t} --state {s} --client-name n --client-key {key}",
            2,
            "cannot be combined with a client key",
        ),
        (
            "auth start {ep} -k {t} --state {s} --client-id i --client-key {dir}/none.pem",
            1,
            "client key file",
        ),
        (
            "auth start {ep} -k {t} --state {s} --client-id i --client-key {client}",
            2,
            "no PEM block 'BEGIN PRIVATE KEY'",
        ),
        (
            "auth start {ep} -k {t} --state {s} --client-id i --client-key {key}",
            2,
            "does not accept private_key_jwt (it accepts none, client_secret_basic)",
        ),
        ("auth start {no_s256} -k {t} --state {s}", 1, "S256"),
        (
            "auth start {other} -k {t} --state {s}",
            1,
            "refusing to get a token for another resource",
        ),
        ("auth start {ep} -k env://TOKEN --state {s}", 1, "read-only"),
        (
            "auth start unix:///tmp/x.sock -k {t} --state {s}",
            2,
            "auth is for http",
        ),
        (
            "auth start {ep} -k {t} --state {s} --client-name n --client-id i",
            2,
            "cannot be combined",
        ),
        (
            "auth start {ep} -k {t} --state {s} --client-secret env://SECRET",
            1,
            "holds no client secret",
        ),
        (
            "auth start {ep} -k {t} --state {s} --client-id i --client-secret hunter2",
            2,
            "never the secret itself",
        ),
        (
            "auth start {ep} -k {t} --state {s} -c {client}",
            2,
            "cannot be combined",
        ),
        (
            "auth start {ep} -k {t} --state {s} -c {dir}/none.json",
            1,
            "does not exist",
        ),
        (
            "auth continue --state {dir}/missing.json -k {t}",
            1,
            "begin with mcat auth start",
        ),
        (
            "auth continue --state {corrupt} -k {t}",
            1,
            "is not a valid auth state file",
        ),
        (
            "auth start {ep} -k ftp://x --state {s}",
            2,
            "invalid KEY_REF",
        ),
    ];
    for (line, code, needle) in cases {
        let args: Vec<String> = line
            .split_whitespace()
            .map(|w| vars.iter().fold(w.to_owned(), |w, (k, v)| w.replace(k, v)))
            .collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        check_fails(&args, *code, needle);
    }
    // A pasted redirect whose state is not the flow's is refused.
    let pending = ok(&["auth", "start", &ep, "-k", &t, "--state", &s]);
    let url = pending["action"]["redirect_uri"]
        .as_str()
        .unwrap()
        .to_owned();
    check_fails(
        &[
            "auth",
            "continue",
            "--state",
            &s,
            "-k",
            &t,
            "--redirect-url",
            &format!("{url}?code=abc&state=forged"),
        ],
        1,
        "does not match",
    );
}

/// A fresh P-256 private key as a PKCS#8 PEM file's text.
fn p256_pem() -> String {
    use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
    use base64::Engine;
    let rng = aws_lc_rs::rand::SystemRandom::new();
    let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let b64 = base64::engine::general_purpose::STANDARD.encode(doc.as_ref());
    format!("-----BEGIN PRIVATE KEY-----\n{b64}\n-----END PRIVATE KEY-----\n")
}
