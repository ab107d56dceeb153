//! The shared server: the `satori` binary started with `--http 127.0.0.1:0` and a bearer token
//! from a key reference serves two clients of the official MCP Python SDK at once (one
//! indexes while the other waits, both search), refuses a request without the token and one
//! from a foreign browser origin, and stops cleanly on SIGTERM.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

#[test]
fn two_sdk_clients_share_one_server() {
    let python = match support::python_with_sdk() {
        Ok(python) => python,
        Err(skipped) => {
            assert!(std::env::var_os("CI").is_none(), "{skipped}");
            #[allow(clippy::print_stderr)]
            {
                eprintln!("{skipped}");
            }
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
    let token = "token-for-this-test-only";
    let mut server = Command::new(env!("CARGO_BIN_EXE_satori"))
        .args([
            "--http",
            "127.0.0.1:0",
            "--token-env",
            "SATORI_TEST_HTTP_TOKEN",
        ])
        .env("SATORI_HOME", home.path())
        .env("SATORI_TEST_HTTP_TOKEN", token)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(server.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let url = line
        .trim()
        .strip_prefix("satori: serving MCP at ")
        .unwrap_or_else(|| panic!("unexpected first line: {line}"))
        .to_string();
    std::thread::spawn(move || {
        // Keep draining the server's log.
        let mut sink = String::new();
        while stderr.read_line(&mut sink).is_ok_and(|n| n > 0) {
            sink.clear();
        }
    });

    let out = Command::new(&python)
        .args(["-W", "ignore"])
        .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/sdk_http.py"))
        .args([url.as_str(), token])
        .arg(&root)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(seen["state"], "indexed", "{seen}");
    assert_eq!(seen["first"][0], "app/router.py", "{seen}");
    assert_eq!(seen["second"][0], "app/router.py", "{seen}");
    assert_eq!(seen["tools"], 6, "{seen}");
    assert_eq!(seen["withoutToken"], 401, "{seen}");

    // A page of a foreign origin is refused even with the token.
    let origin = Command::new(&python)
        .args([
            "-c",
            "import sys, urllib.request as u\nr = u.Request(sys.argv[1], data=b'{}', headers={'Origin': 'http://evil.example', 'Authorization': 'Bearer ' + sys.argv[2], 'content-type': 'application/json'})\ntry:\n    u.urlopen(r)\n    print(200)\nexcept Exception as e:\n    print(e.code)",
            url.as_str(),
            token,
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&origin.stdout).trim(), "403");

    // SIGTERM ends it with status 0.
    #[cfg(unix)]
    {
        unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
        let status = server.wait().unwrap();
        assert!(status.success(), "{status:?}");
    }
    #[cfg(not(unix))]
    {
        let _ = server.kill();
    }
}

/// `--socket PATH`: the same transport on a unix socket only this user can open.
#[cfg(unix)]
#[test]
fn a_unix_socket_serves_the_same_protocol() {
    use std::io::{Read, Write};
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let sock = home.path().join("satori.sock");
    let mut server = Command::new(env!("CARGO_BIN_EXE_satori"))
        .arg("--socket")
        .arg(&sock)
        .env("SATORI_HOME", home.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(server.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert!(line.contains("serving MCP at unix://"), "{line}");
    let mode = std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
    let mut conn = std::os::unix::net::UnixStream::connect(&sock).unwrap();
    write!(
        conn,
        "POST /mcp HTTP/1.1\r\nHost: satori\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    conn.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    // The answer is an SSE stream: read until the result arrives.
    while !String::from_utf8_lossy(&answer).contains("serverInfo") {
        let n = conn.read(&mut buf).unwrap();
        assert!(n > 0, "{}", String::from_utf8_lossy(&answer));
        answer.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&answer);
    assert!(
        text.starts_with("HTTP/1.1 200") && text.contains("mcp-session-id"),
        "{text}"
    );

    // A second server on the same live socket is refused.
    let second = Command::new(env!("CARGO_BIN_EXE_satori"))
        .arg("--socket")
        .arg(&sock)
        .env("SATORI_HOME", home.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(second.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&second.stderr).contains("in use by a running server"));

    unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
    assert!(server.wait().unwrap().success());
    assert!(!sock.exists(), "the socket is removed on exit");
}
