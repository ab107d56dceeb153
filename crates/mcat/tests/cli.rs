//! mcat end to end, as a shell user runs it: the real binary against real servers.
//!
//! The third-party server is `@modelcontextprotocol/server-everything` from npm (its bin is
//! `MCAT_TEST_EVERYTHING`, or installed once into the target directory), over
//! stdio through `mcat proxy up` and over Streamable HTTP. A small fake stdio server
//! (`fixtures/paged_server.py`) covers what server-everything does not: paged lists and a
//! server without resources or prompts; a fake HTTP server (`fixtures/unruly_server.py`)
//! answers out of order, with other requests' ids, or never.
//!
//! Most of them drive the proxy, which exists on Unix only (see `crates/mcp-client/src/proxy/mod.rs`).
#![cfg(unix)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// What one mcat command did.
#[derive(Debug)]
struct Out {
    code: i32,
    json: Value,
    stdout: Vec<u8>,
    stderr: String,
}

fn mcat_with(args: &[&str], stdin: Option<&str>) -> Out {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcat"));
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("mcat runs");
    {
        let mut input = child.stdin.take().unwrap();
        if let Some(s) = stdin {
            input.write_all(s.as_bytes()).unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        json: serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn mcat(args: &[&str]) -> Out {
    mcat_with(args, None)
}

/// Runs mcat commands at the same time. One still running after `limit` is killed and
/// reads as exit code -1: a command that hangs fails the test instead of hanging it.
fn mcat_at_once(commands: &[Vec<String>], limit: Duration) -> Vec<Out> {
    let deadline = Instant::now() + limit;
    let runs: Vec<_> = commands
        .iter()
        .map(|args| {
            let mut child = Command::new(env!("CARGO_BIN_EXE_mcat"))
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("mcat runs");
            let drain = |mut r: Box<dyn Read + Send>| {
                std::thread::spawn(move || {
                    let mut bytes = Vec::new();
                    let _ = r.read_to_end(&mut bytes);
                    bytes
                })
            };
            let stdout = drain(Box::new(child.stdout.take().unwrap()));
            let stderr = drain(Box::new(child.stderr.take().unwrap()));
            (child, stdout, stderr)
        })
        .collect();
    runs.into_iter()
        .map(|(mut child, stdout, stderr)| {
            let code = loop {
                if let Some(status) = child.try_wait().unwrap() {
                    break status.code().unwrap_or(-1);
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    break -1;
                }
                std::thread::sleep(Duration::from_millis(20));
            };
            let stdout = stdout.join().unwrap();
            Out {
                code,
                json: serde_json::from_slice(&stdout).unwrap_or(Value::Null),
                stdout,
                stderr: String::from_utf8_lossy(&stderr.join().unwrap()).into_owned(),
            }
        })
        .collect()
}

/// Tool calls at the same time on one session, as (tool, ARGS, the text of its answer):
/// each must get its own answer.
fn check_concurrent_calls(session: &str, calls: &[(&str, String, String)]) {
    let commands: Vec<Vec<String>> = calls
        .iter()
        .map(|(tool, args, _)| {
            ["tool", "call", tool, "-i", args, "-s", session]
                .map(str::to_owned)
                .to_vec()
        })
        .collect();
    let outs = mcat_at_once(&commands, Duration::from_secs(30));
    for ((tool, args, want), out) in calls.iter().zip(&outs) {
        assert_eq!(out.code, 0, "{tool} {args}: {out:?}");
        assert_eq!(
            &text_of(&out.json["result"]),
            want,
            "{tool} {args}: {out:?}"
        );
    }
}

/// Runs a command that must succeed; its `result`.
fn ok(args: &[&str]) -> Value {
    let out = mcat(args);
    assert_eq!(out.code, 0, "mcat {args:?} failed: {out:?}");
    assert_eq!(out.json["ok"], true, "{out:?}");
    out.json["result"].clone()
}

/// Runs a command that must fail with `code` and an error containing `needle`.
fn check_fails(args: &[&str], code: i32, needle: &str) {
    let out = mcat(args);
    assert_eq!(out.code, code, "mcat {args:?}: {out:?}");
    assert_eq!(out.json["ok"], false, "mcat {args:?}: {out:?}");
    let error = out.json["error"].as_str().unwrap_or_default();
    assert!(
        error.contains(needle),
        "mcat {args:?}: error {error:?} lacks {needle:?}"
    );
    // stdout is one JSON object and nothing else.
    assert_eq!(
        out.stdout.iter().filter(|b| **b == b'\n').count(),
        1,
        "{out:?}"
    );
}

/// The server-everything bin: `MCAT_TEST_EVERYTHING`, or installed from npm once into the
/// target directory (a fresh checkout's `cargo test` needs only Node and npm).
fn everything() -> PathBuf {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(bin) = std::env::var_os("MCAT_TEST_EVERYTHING") {
            return PathBuf::from(bin);
        }
        let prefix = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcat-server-everything");
        let bin = prefix.join("node_modules/.bin/mcp-server-everything");
        if !bin.exists() {
            let status = Command::new("npm")
                .args(["install", "--no-audit", "--no-fund", "--silent", "--prefix"])
                .arg(&prefix)
                .arg("@modelcontextprotocol/server-everything@2026.8.31")
                .status()
                .expect("npm runs (mcat's tests install @modelcontextprotocol/server-everything with it)");
            assert!(status.success(), "npm could not install @modelcontextprotocol/server-everything");
        }
        bin
    })
    .clone()
}

/// A proxy that is stopped when the test ends, however it ends.
struct Proxy {
    endpoint: String,
}

impl Proxy {
    fn up(dir: &Path, name: &str, command: &[&str]) -> (Proxy, Value) {
        let endpoint = format!("unix://{}", dir.join(format!("{name}.sock")).display());
        let mut args = vec!["proxy", "up", endpoint.as_str(), "--"];
        args.extend_from_slice(command);
        let result = ok(&args);
        (Proxy { endpoint }, result)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = mcat(&["proxy", "down", &self.endpoint]);
    }
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_stdio_server_behind_the_proxy_serves_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let bin = everything();
    let (proxy, up) = Proxy::up(dir.path(), "ev", &[bin.to_str().unwrap(), "stdio"]);
    let ep = proxy.endpoint.clone();
    assert!(up["pid"].as_u64().unwrap() > 0);
    let status = ok(&["proxy", "status", &ep]);
    assert_eq!(status["alive"], true);
    assert_eq!(status["command"], bin.to_str().unwrap());

    let sess = dir.path().join("s.json");
    let s = sess.to_str().unwrap();
    // The proxy's control file and its socket are not places for a session file.
    for own in ["ev.json", "ev.sock"] {
        let own = dir.path().join(own);
        check_fails(
            &["init", &ep, "-o", own.to_str().unwrap()],
            2,
            "the proxy's own file",
        );
    }
    assert_eq!(ok(&["proxy", "status", &ep])["alive"], true);
    // The proxy initialized its server itself and takes no token.
    check_fails(
        &["init", &ep, "-o", s, "--elicit", "decline"],
        2,
        "--elicit is not for an mcat proxy",
    );
    check_fails(
        &["init", &ep, "-o", s, "-k", "env://MCAT_TEST_NO_TOKEN"],
        2,
        "-k/--key-ref is not for an mcat proxy",
    );
    let init = ok(&["init", &ep, "-o", s]);
    assert_eq!(init["protocol_version"], "2025-11-25");
    let file: Value = serde_json::from_slice(&std::fs::read(&sess).unwrap()).unwrap();
    assert_eq!(file["version"], 1);
    assert_eq!(file["transport"], "unix");
    assert_eq!(file["session_mode"], "stateful");
    assert!(file["server_capabilities"]["resources"].is_object());

    // Tools: list, a call, a tool error, structured content, an image.
    let tools = ok(&["tool", "list", "-s", s]);
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"echo") && names.contains(&"get-sum"),
        "{names:?}"
    );
    let sum = ok(&["tool", "call", "get-sum", "-i", "{a: 2, b: 3}", "-s", s]);
    assert_eq!(text_of(&sum), "The sum of 2 and 3 is 5.");
    let bad = ok(&["tool", "call", "get-sum", "-i", "{a: 'x', b: 1}", "-s", s]);
    assert_eq!(bad["isError"], true, "{bad}");
    let structured = ok(&[
        "tool",
        "call",
        "get-structured-content",
        "-i",
        "{location: 'New York'}",
        "-s",
        s,
    ]);
    assert!(
        structured["structuredContent"]["temperature"].is_number(),
        "{structured}"
    );
    let image = ok(&["tool", "call", "get-tiny-image", "-s", s]);
    assert!(
        image["content"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "image" && c["data"].is_string())
    );
    // ARGS from stdin and from a file.
    let out = mcat_with(
        &["tool", "call", "echo", "-i", "@-", "-s", s],
        Some("{message: 'from stdin'}"),
    );
    assert_eq!(text_of(&out.json["result"]), "Echo: from stdin");
    let args_file = dir.path().join("args.json5");
    std::fs::write(&args_file, "{message: 'from a file',}").unwrap();
    let from_file = ok(&[
        "tool",
        "call",
        "echo",
        "-i",
        &format!("@{}", args_file.display()),
        "-s",
        s,
    ]);
    assert_eq!(text_of(&from_file), "Echo: from a file");

    // Resources: list, templates, text and blob, -o FILE and -o -.
    let resources = ok(&["resource", "list", "-s", s]);
    assert!(!resources["resources"].as_array().unwrap().is_empty());
    let templates = ok(&["resource", "list-template", "-s", s]);
    assert!(
        templates["resourceTemplates"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["uriTemplate"].as_str().unwrap().contains("{resourceId}"))
    );
    let blob_uri = "demo://resource/dynamic/blob/7";
    let raw = ok(&["resource", "read", blob_uri, "-s", s]);
    let b64 = raw["contents"][0]["blob"].as_str().unwrap().to_owned();
    let target = dir.path().join("blob.bin");
    let saved = ok(&[
        "resource",
        "read",
        blob_uri,
        "-s",
        s,
        "-o",
        target.to_str().unwrap(),
    ]);
    let written = std::fs::read(&target).unwrap();
    assert_eq!(saved["bytes"], written.len());
    use base64::Engine;
    let expected = base64::engine::general_purpose::STANDARD
        .decode(&b64)
        .unwrap();
    // The blob names the time it was made: compare its fixed prefix.
    assert_eq!(&written[..20], &expected[..20]);
    let piped = mcat(&[
        "resource",
        "read",
        "demo://resource/dynamic/text/3",
        "-s",
        s,
        "-o",
        "-",
    ]);
    assert_eq!(piped.code, 0);
    assert!(
        String::from_utf8_lossy(&piped.stdout)
            .starts_with("Resource 3: This is a plaintext resource")
    );

    // Prompts, with arguments that must be strings.
    let prompts = ok(&["prompt", "list", "-s", s]);
    assert!(
        prompts["prompts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "args-prompt")
    );
    let got = ok(&[
        "prompt",
        "get",
        "args-prompt",
        "-i",
        "{city: 'Oslo'}",
        "-s",
        s,
    ]);
    assert!(
        got["messages"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("Oslo")
    );
    assert_eq!(got["session_id"], file["session_id"]);
    check_fails(
        &["prompt", "get", "args-prompt", "-i", "{city: 3}", "-s", s],
        2,
        "must be strings",
    );
    // The server's own error about a prompt named like a session is not an expired session.
    let missing = mcat(&["prompt", "get", "my-session", "-s", s]);
    let e = missing.json["error"].as_str().unwrap_or_default();
    assert_eq!(missing.code, 1, "{missing:?}");
    assert!(e.contains("my-session") && !e.contains("expired"), "{e}");

    // Concurrent commands share the one server without mixing up answers.
    let echoes: Vec<_> = (0..8)
        .map(|i| {
            (
                "echo",
                format!("{{message: 'm{i}'}}"),
                format!("Echo: m{i}"),
            )
        })
        .collect();
    check_concurrent_calls(s, &echoes);

    // The server dies: the proxy is reported dead, and commands say so.
    let pid = status["child_pid"].as_u64().unwrap();
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let st = ok(&["proxy", "status", &ep]);
        if st["alive"] == false {
            assert_eq!(st["stale"], true);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the proxy outlived its server: {st}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    check_fails(&["tool", "list", "-s", s], 1, "is not running");
    let down = ok(&["proxy", "down", &ep]);
    assert_eq!(down["socket"], ep.trim_start_matches("unix://"));
    assert!(!dir.path().join("ev.json").exists() && !dir.path().join("ev.sock").exists());
    check_fails(&["proxy", "status", &ep], 1, "no proxy");
}

#[test]
fn a_session_outlives_the_process_but_not_the_proxy() {
    let dir = tempfile::tempdir().unwrap();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/paged_server.py"
    );
    let sess = dir.path().join("s.json");
    let s = sess.to_str().unwrap();
    let ep;
    {
        let (proxy, _) = Proxy::up(dir.path(), "paged", &["python3", script]);
        ep = proxy.endpoint.clone();
        ok(&["init", &ep, "-o", s]);
        // Every page, in order, as one list; or one page from a cursor.
        let all = ok(&["tool", "list", "-s", s]);
        let names: Vec<&str> = all["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(
            names,
            ["tool0", "tool1", "tool2", "tool3", "tool4", "count"]
        );
        let page = ok(&["tool", "list", "-s", s, "--cursor", "2"]);
        assert_eq!(page["nextCursor"], "4");
        assert_eq!(page["tools"].as_array().unwrap().len(), 2);
        // Capabilities the server did not advertise are refused before any request.
        check_fails(
            &["resource", "list", "-s", s],
            1,
            "server does not advertise resources capability",
        );
        check_fails(
            &["prompt", "list", "-s", s],
            1,
            "server does not advertise prompts capability",
        );
        // One server behind every command: its call count goes on across processes.
        let first: u64 = text_of(&ok(&["tool", "call", "count", "-s", s]))
            .parse()
            .unwrap();
        let second: u64 = text_of(&ok(&["tool", "call", "count", "-s", s]))
            .parse()
            .unwrap();
        assert_eq!(second, first + 1);
        // A call that runs out of time is cancelled at the server, under the id the server
        // knows it by (the proxy's, not the command's).
        check_fails(
            &["tool", "call", "silent", "--timeout", "1", "-s", s],
            1,
            "did not answer tools/call within 1 s (the request was cancelled)",
        );
        let seen: Value =
            serde_json::from_str(&text_of(&ok(&["tool", "call", "cancelled", "-s", s]))).unwrap();
        assert_eq!(seen["silent"].as_array().unwrap().len(), 1, "{seen}");
        assert_eq!(seen["cancelled"], seen["silent"], "{seen}");
        // A second proxy on the same socket is refused while the first runs.
        let again = mcat(&["proxy", "up", &ep, "--", "python3", script]);
        assert_eq!(again.code, 1);
        assert!(
            again.json["error"]
                .as_str()
                .unwrap()
                .contains("already runs"),
            "{again:?}"
        );
    }
    // A new proxy does not know the old session.
    let (_proxy, _) = Proxy::up(dir.path(), "paged", &["python3", script]);
    check_fails(&["tool", "list", "-s", s], 1, "session expired");
    // --reinit opens a new session, writes it to the session file and goes on.
    let old: Value = serde_json::from_slice(&std::fs::read(&sess).unwrap()).unwrap();
    ok(&["--reinit", "tool", "list", "-s", s]);
    let new: Value = serde_json::from_slice(&std::fs::read(&sess).unwrap()).unwrap();
    assert_ne!(new["session_id"], old["session_id"]);
    ok(&["tool", "list", "-s", s]);
}

/// A free TCP port on loopback.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn streamable_http_sessions_are_reused_across_processes() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let _server = Killed(
        Command::new(everything())
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let url = format!("http://localhost:{port}/mcp");
    let sess = dir.path().join("h.json");
    let s = sess.to_str().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let init = loop {
        let out = mcat(&["init", &url, "-o", s]);
        if out.code == 0 {
            break out.json["result"].clone();
        }
        assert!(
            Instant::now() < deadline,
            "server-everything never answered: {out:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let sid = init["session_id"]
        .as_str()
        .expect("a stateful server")
        .to_owned();
    let file: Value = serde_json::from_slice(&std::fs::read(&sess).unwrap()).unwrap();
    assert_eq!(file["transport"], "http");
    assert_eq!(file["session_id"], sid.as_str());
    let echo = ok(&[
        "tool",
        "call",
        "echo",
        "-i",
        "{message: 'over http'}",
        "-s",
        s,
    ]);
    assert_eq!(text_of(&echo), "Echo: over http");
    let read = ok(&[
        "resource",
        "read",
        "demo://resource/dynamic/text/1",
        "-s",
        s,
    ]);
    assert!(
        read["contents"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Resource 1")
    );
    let got = ok(&["prompt", "get", "simple-prompt", "-s", s]);
    assert_eq!(got["session_id"], sid.as_str());
    // Processes sharing the session share the server's answer streams, which it keys by
    // request id: each gets its own answer, none hangs. The calls take a second, so they
    // are all in flight at once.
    let overlapping: Vec<_> = (1..=4)
        .map(|steps| {
            (
                "trigger-long-running-operation",
                format!("{{duration: 1, steps: {steps}}}"),
                format!("Long running operation completed. Duration: 1 seconds, Steps: {steps}."),
            )
        })
        .collect();
    check_concurrent_calls(s, &overlapping);
    // The session id in the file never changed: no command initialised again.
    let after: Value = serde_json::from_slice(&std::fs::read(&sess).unwrap()).unwrap();
    assert_eq!(after["session_id"], sid.as_str());
    // An unknown session id is the server's 404.
    let mut stale = after.clone();
    stale["session_id"] = json!("not-a-session");
    let stale_path = dir.path().join("stale.json");
    std::fs::write(&stale_path, serde_json::to_vec(&stale).unwrap()).unwrap();
    check_fails(
        &["tool", "list", "-s", stale_path.to_str().unwrap()],
        1,
        "session expired",
    );

    // Elicitation: the server offers its asking tools only to a session that declared it,
    // and a tool call gets the answer the session chose while the call is in flight.
    let names = |sess: &str| -> Vec<String> {
        ok(&["tool", "list", "-s", sess])["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(!names(s).contains(&"trigger-elicitation-request".to_owned()));
    for (policy, answer) in [
        // Its form requires a name with no default: nobody can fill it in, so decline.
        ("accept-defaults", "User declined"),
        ("decline", "User declined"),
        ("cancel", "User cancelled"),
    ] {
        let sess = dir.path().join(format!("{policy}.json"));
        let sess = sess.to_str().unwrap();
        ok(&["init", &url, "-o", sess, "--elicit", policy]);
        let file: Value = serde_json::from_slice(&std::fs::read(sess).unwrap()).unwrap();
        assert_eq!(file["elicit"], policy);
        assert!(names(sess).contains(&"trigger-elicitation-request".to_owned()));
        let asked = ok(&["tool", "call", "trigger-elicitation-request", "-s", sess]);
        assert!(text_of(&asked).contains(answer), "{policy}: {asked}");
    }
    check_fails(
        &["init", &url, "-o", s, "--elicit", "maybe"],
        2,
        "unknown --elicit 'maybe'",
    );
}

#[test]
fn bad_input_is_a_specific_error_with_the_right_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name).display().to_string();
    let corrupt = d("corrupt.json");
    std::fs::write(&corrupt, "{not json").unwrap();
    let wrong_version = d("v9.json");
    std::fs::write(
        &wrong_version,
        r#"{"version":9,"transport":"http","endpoint":"http://localhost:1/mcp","session_id":null,"session_mode":"stateless","protocol_version":"2025-11-25"}"#,
    )
    .unwrap();
    let no_resources = d("nores.json");
    std::fs::write(
        &no_resources,
        r#"{"version":1,"transport":"http","endpoint":"http://localhost:1/mcp","session_id":null,"session_mode":"stateless","protocol_version":"2025-11-25","server_capabilities":{"tools":{}}}"#,
    )
    .unwrap();
    let out = d("s.json");
    let sock = format!("unix://{}", d("none.sock"));
    let cases: &[(&[&str], i32, &str)] = &[
        (
            &["init", "ftp://example.com/mcp", "-o", &out],
            2,
            "unknown scheme 'ftp://'",
        ),
        (
            &["init", "example.com/mcp", "-o", &out],
            2,
            "no scheme given",
        ),
        (
            &["init", "unix://relative.sock", "-o", &out],
            2,
            "absolute path",
        ),
        (
            &[
                "init",
                "http://localhost:1/mcp",
                "-o",
                &out,
                "-k",
                "s3://bucket/key",
            ],
            2,
            "invalid KEY_REF 's3://bucket/key'",
        ),
        (
            &[
                "init",
                "http://localhost:1/mcp",
                "-o",
                &out,
                "-k",
                "env://1X",
            ],
            2,
            "not a variable name",
        ),
        (
            &[
                "init",
                "http://localhost:1/mcp",
                "-o",
                &out,
                "-k",
                ".env://file",
            ],
            2,
            "':VAR'",
        ),
        (
            &["init", "http://localhost:1/mcp", "-o", &out],
            1,
            "initialize to http://localhost:1/mcp failed",
        ),
        // A socket with no proxy may still have a server of its own; here nothing listens.
        (&["init", &sock, "-o", &out], 1, "nothing listens on"),
        (
            &["init", &sock, "-o", &out, "--elicit", "decline"],
            1,
            "nothing listens on",
        ),
        (
            &["tool", "list", "-s", &d("missing.json")],
            1,
            "does not exist: create it with mcat init",
        ),
        (
            &["tool", "list", "-s", &corrupt],
            1,
            "is not a valid session file",
        ),
        (
            &["tool", "list", "-s", &wrong_version],
            1,
            "version 9 is not 1",
        ),
        (
            &["resource", "list", "-s", &no_resources],
            1,
            "server does not advertise resources capability",
        ),
        (
            &["prompt", "get", "p", "-s", &no_resources],
            1,
            "server does not advertise prompts capability",
        ),
        (
            &["tool", "call", "echo", "-i", "{a:", "-s", &no_resources],
            2,
            "not valid JSON5",
        ),
        (
            &["tool", "call", "echo", "-i", "[1, 2]", "-s", &no_resources],
            2,
            "must be a JSON object",
        ),
        (
            &[
                "tool",
                "call",
                "echo",
                "-i",
                "@/no/such/args.json",
                "-s",
                &no_resources,
            ],
            1,
            "cannot read ARGS from",
        ),
        (
            &["proxy", "up", "http://localhost/mcp", "--", "true"],
            2,
            "unix:///path.sock endpoint",
        ),
        (
            &["proxy", "up", &sock],
            2,
            "needs the stdio server's command",
        ),
        (&["proxy", "status", &sock], 1, "no proxy on"),
        (&["proxy", "down", &sock], 1, "no proxy on"),
        (
            &["--log", "net", "tool", "list", "-s", &corrupt],
            2,
            "unknown log domain 'net'",
        ),
        (&["tool", "frobnicate"], 2, "unrecognized subcommand"),
        (&["tool", "list"], 2, "--session"),
        (&["tool"], 2, "a command is missing"),
        (&[], 2, "a command is missing"),
    ];
    for (args, code, needle) in cases {
        check_fails(args, *code, needle);
    }
    // Help is for a person (stderr); the version is data like any other answer.
    let help = mcat(&["tool", "call", "--help"]);
    assert_eq!(help.code, 0);
    assert!(help.stdout.is_empty(), "{help:?}");
    assert!(help.stderr.contains("Usage: mcat tool call"), "{help:?}");
    assert_eq!(ok(&["--version"])["name"], "mcat");
}

#[test]
fn a_locked_session_file_fails_fast() {
    let dir = tempfile::tempdir().unwrap();
    let sess = dir.path().join("s.json");
    let lock = std::fs::File::create(dir.path().join("s.json.lock")).unwrap();
    lock.lock().unwrap();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/paged_server.py"
    );
    let (proxy, _) = Proxy::up(dir.path(), "p", &["python3", script]);
    let started = Instant::now();
    check_fails(
        &["init", &proxy.endpoint, "-o", sess.to_str().unwrap()],
        1,
        "is locked by another mcat command",
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    lock.unlock().unwrap();
    ok(&["init", &proxy.endpoint, "-o", sess.to_str().unwrap()]);
}

#[test]
fn a_server_that_cannot_start_is_reported_by_proxy_up() {
    let dir = tempfile::tempdir().unwrap();
    let ep = format!("unix://{}", dir.path().join("x.sock").display());
    let out = mcat(&["proxy", "up", &ep, "--", "/no/such/server"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.json["error"]
            .as_str()
            .unwrap()
            .contains("stopped before it was ready"),
        "{out:?}"
    );
    assert!(out.stderr.is_empty() || !out.stderr.contains('{'));
}

/// The fake HTTP server of `fixtures/unruly_server.py`, stopped when dropped.
struct Unruly {
    _server: Killed,
    port: u16,
}

impl Unruly {
    fn start() -> Unruly {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/unruly_server.py"
        );
        let mut child = Command::new("python3")
            .arg(script)
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the fake server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().expect("the server prints its port");
        Unruly {
            _server: Killed(child),
            port,
        }
    }

    /// The notifications the server was sent.
    fn received(&self) -> Vec<Value> {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        write!(s, "GET /received HTTP/1.0\r\nhost: 127.0.0.1\r\n\r\n").unwrap();
        let mut raw = String::new();
        s.read_to_string(&mut raw).unwrap();
        let body = raw.split("\r\n\r\n").nth(1).unwrap_or_default();
        serde_json::from_str(body).unwrap_or_default()
    }
}

#[test]
fn an_answer_is_ours_only_by_its_id_and_a_silent_server_times_out() {
    let server = Unruly::start();
    let dir = tempfile::tempdir().unwrap();
    let sess = dir.path().join("s.json");
    let s = sess.to_str().unwrap();
    ok(&[
        "init",
        &format!("http://127.0.0.1:{}/mcp", server.port),
        "-o",
        s,
    ]);

    // Answers to other requests come first on the stream: ours is the one with our id.
    assert_eq!(text_of(&ok(&["tool", "call", "crossed", "-s", s])), "yours");
    // The only answer carries another id: an error, never that answer reported as ours.
    check_fails(
        &["tool", "call", "misdirected", "-s", s],
        1,
        "with the answer to another request (id \"someone-else\"",
    );

    // A server that never answers: the command fails after --timeout and cancels the request.
    let started = Instant::now();
    check_fails(
        &["tool", "call", "silent", "--timeout", "1", "-s", s],
        1,
        "did not answer tools/call within 1 s (the request was cancelled)",
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    let cancels: Vec<Value> = server
        .received()
        .into_iter()
        .filter(|n| n["method"] == "notifications/cancelled")
        .collect();
    assert_eq!(cancels.len(), 1, "{cancels:?}");
    let id = cancels[0]["params"]["requestId"]
        .as_str()
        .unwrap_or_default();
    assert!(id.starts_with("mcat-") && id.len() == 21, "{id}");
    // Each request has an id of its own.
    let out = mcat(&["--log", "mcp", "tool", "list", "-s", s]);
    let again = mcat(&["--log", "mcp", "tool", "list", "-s", s]);
    let id_of = |o: &Out| {
        o.stderr
            .split_whitespace()
            .find(|w| w.starts_with("\"mcat-"))
            .map(|w| w.trim_end_matches(',').to_owned())
    };
    assert!(id_of(&out).is_some(), "{out:?}");
    assert_ne!(id_of(&out), id_of(&again));
    check_fails(
        &["tool", "call", "silent", "--timeout", "soon", "-s", s],
        2,
        "invalid value 'soon' for '--timeout <SECONDS>'",
    );
}
