//! One shared `satori --http` (and `--socket`) serving `satori-cli --endpoint` calls and,
//! at the same time, two clients of the official MCP Python SDK
//! (`crates/satori-mcp/tests/python/sdk_http.py`) and one of the TypeScript SDK
//! (`crates/satori-mcp/tests/node/sdk_http.mjs`): the CLI indexes and searches through it,
//! the SDK clients search the same engine, the token is required, a page of a foreign origin
//! is refused, SIGTERM stops the server cleanly, and an endpoint where nothing answers is an
//! error that says how to start the server. On a unix socket: mode 0600, the same protocol,
//! a second server on a live socket refused, the socket removed on exit. A listener other
//! machines can reach needs a token, and a socket path holding anything but a dead server's
//! socket is refused and left intact; the Python SDK closes its session without an error.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use satori_e2e::{binary, json_output, small_repo, start_shared};
use serde_json::Value;

const TOKEN: &str = "token-of-the-shared-server-test";

/// A `satori` started with `args`, and the address it printed once it listened.
fn start(home: &Path, args: &[&str]) -> (Child, String) {
    start_shared(home, args, &[("SATORI_SHARED_TEST_TOKEN", TOKEN)])
}

fn stop(mut server: Child) {
    #[cfg(unix)]
    {
        unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
        assert!(server.wait().unwrap().success());
    }
    #[cfg(not(unix))]
    {
        let _ = server.kill();
        let _ = server.wait();
    }
}

/// Runs a client script that must succeed; the JSON of the last line it printed.
fn last_json_line(cmd: &mut Command) -> Value {
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap()).unwrap()
}

/// `satori-cli` with `env`; its exit code and its stdout, which must be one JSON document.
fn cli(env: &[(&str, &str)], args: &[&str]) -> (Output, Value) {
    let mut cmd = Command::new(binary("satori-cli"));
    // No server executable is found or started: a shared server answers.
    cmd.env("SATORI_SERVER_BIN", "/nonexistent/satori")
        .args(args);
    json_output(&mut cmd, env)
}

#[test]
fn the_cli_and_two_sdk_clients_share_one_server() {
    let home = tempfile::tempdir().unwrap();
    let repo_dir = tempfile::tempdir().unwrap();
    small_repo(repo_dir.path());
    let repo = repo_dir.path().canonicalize().unwrap();
    let repo_s = repo.to_str().unwrap();
    let (server, url) = start(
        home.path(),
        &[
            "--http",
            "127.0.0.1:0",
            "--token-env",
            "SATORI_SHARED_TEST_TOKEN",
        ],
    );
    let with_token = [("SATORI_ENDPOINT_TOKEN", TOKEN)];

    // The CLI indexes through the shared server and searches it.
    let (out, doc) = cli(
        &with_token,
        &[
            "--endpoint",
            &url,
            "manage_index",
            "--action",
            "create",
            "--path",
            repo_s,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{doc}");
    assert_eq!(doc["structuredContent"]["state"], "indexed", "{doc}");
    let env = [
        ("SATORI_ENDPOINT", url.as_str()),
        ("SATORI_ENDPOINT_TOKEN", TOKEN),
    ];
    let (out, doc) = cli(
        &env,
        &[
            "search_codebase",
            "--path",
            repo_s,
            "--query",
            "retry_with_backoff",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{doc}");
    assert_eq!(
        doc["structuredContent"]["results"][0]["file"], "src/retry.py",
        "{doc}"
    );

    // Two SDK clients on the same server meanwhile (skipped where the SDK is missing,
    // never under CI).
    let python = std::env::var("SATORI_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let has_sdk = Command::new(&python)
        .args(["-c", "import mcp"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        has_sdk || std::env::var_os("CI").is_none(),
        "{python} cannot import mcp"
    );
    if has_sdk {
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../crates/satori-mcp/tests/python/sdk_http.py");
        let other = tempfile::tempdir().unwrap();
        let other_repo = other.path().canonicalize().unwrap();
        std::fs::create_dir_all(other_repo.join("app")).unwrap();
        std::fs::write(
            other_repo.join("app/router.py"),
            "class Router:\n    def route_request(self, request):\n        return request\n",
        )
        .unwrap();
        let out = Command::new(&python)
            .args(["-W", "ignore"])
            .arg(script)
            .args([url.as_str(), TOKEN])
            .arg(&other_repo)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        // The SDK ends its session with DELETE and reads anything but 200 as a failure.
        assert!(!stderr.contains("Session termination failed"), "{stderr}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let seen: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
        assert_eq!(seen["second"][0], "app/router.py", "{seen}");
        // The SDK client's list shows the codebase the CLI indexed: one engine.
        assert!(seen["listed"].as_str().unwrap().contains(repo_s), "{seen}");
    }

    // A client of the TypeScript SDK on the same server finds what the CLI indexed
    // (skipped where the SDK is not installed, never under CI: `.ci/run` installs it).
    let node_sdk = std::env::var_os("SATORI_TEST_NODE_SDK");
    assert!(
        node_sdk.is_some() || std::env::var_os("CI").is_none(),
        "SATORI_TEST_NODE_SDK is not set"
    );
    if let Some(sdk) = node_sdk {
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../crates/satori-mcp/tests/node/sdk_http.mjs");
        let seen = last_json_line(Command::new("node").arg(script).arg(&sdk).args([
            url.as_str(),
            TOKEN,
            repo_s,
        ]));
        assert_eq!(seen["session"], true, "{seen}");
        assert_eq!(seen["tools"].as_array().unwrap().len(), 6, "{seen}");
        assert_eq!(seen["found"][0], "src/retry.py", "{seen}");
        assert!(seen["listed"].as_str().unwrap().contains(repo_s), "{seen}");
    }

    // Without the token the server refuses, and the CLI says what failed; a server that
    // answers and refuses is never bypassed, even where a fallback was asked for.
    let (out, doc) = cli(&[], &["--endpoint", &url, "list_codebases"]);
    assert_eq!(out.status.code(), Some(2), "{doc}");
    assert_eq!(doc["error"]["code"], "E_AUTH", "{doc}");
    let satori = binary("satori");
    let fallback_env = [
        ("SATORI_SERVER_BIN", satori.to_str().unwrap()),
        ("SATORI_HOME", home.path().to_str().unwrap()),
    ];
    let (out, doc) = cli(
        &fallback_env,
        &["--endpoint", &url, "--endpoint-fallback", "list_codebases"],
    );
    assert_eq!(out.status.code(), Some(2), "{doc}");
    assert_eq!(doc["error"]["code"], "E_AUTH", "{doc}");
    // A page of a foreign origin is refused even with the token.
    let status = raw_post(
        &url,
        &[
            ("Origin", "http://evil.example"),
            ("Authorization", &format!("Bearer {TOKEN}")),
        ],
    );
    assert!(status.starts_with("HTTP/1.1 403"), "{status}");
    stop(server);

    // Nothing answers any more: the error says how to start the server.
    let (out, doc) = cli(&with_token, &["--endpoint", &url, "list_codebases"]);
    assert_eq!(out.status.code(), Some(3), "{doc}");
    let message = doc["error"]["message"].as_str().unwrap();
    assert!(message.contains("satori --http"), "{message}");
    let (out, doc) = cli(&[], &["--endpoint", "ftp://x", "list_codebases"]);
    assert_eq!(out.status.code(), Some(2), "{doc}");

    // Where the caller asked for it, the call starts a server of its own instead (on the
    // same home: it knows the codebase indexed through the shared one), and says so.
    for (extra_env, extra_flag) in [
        (None, Some("--endpoint-fallback")),
        (Some(("SATORI_ENDPOINT_FALLBACK", "1")), None),
    ] {
        let mut env = fallback_env.to_vec();
        env.extend(extra_env);
        let mut args = vec!["--endpoint", url.as_str()];
        args.extend(extra_flag);
        args.push("list_codebases");
        let (out, doc) = cli(&env, &args);
        assert_eq!(out.status.code(), Some(0), "{doc}");
        assert!(doc.to_string().contains(repo_s), "{doc}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("started a server for this call"),
            "{stderr}"
        );
    }
    let mut env = fallback_env.to_vec();
    env.push(("SATORI_ENDPOINT_FALLBACK", "yes"));
    let (out, doc) = cli(&env, &["--endpoint", &url, "list_codebases"]);
    assert_eq!(out.status.code(), Some(2), "{doc}");
    assert!(
        doc["error"]["message"]
            .as_str()
            .unwrap()
            .contains("SATORI_ENDPOINT_FALLBACK"),
        "{doc}"
    );
}

/// The status line of a bare `initialize` POSTed to `url` (`http://host:port/mcp`) with
/// `headers`.
fn raw_post(url: &str, headers: &[(&str, &str)]) -> String {
    use std::io::{Read, Write};
    let authority = url
        .strip_prefix("http://")
        .and_then(|r| r.split('/').next())
        .unwrap();
    let mut conn = std::net::TcpStream::connect(authority).unwrap();
    let mut extra = String::new();
    for (k, v) in headers {
        extra.push_str(&format!("{k}: {v}\r\n"));
    }
    let body = INITIALIZE;
    write!(
        conn,
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    let _ = conn.read_to_string(&mut answer);
    answer.lines().next().unwrap_or_default().to_string()
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;

#[cfg(unix)]
#[test]
fn the_cli_reaches_a_server_on_a_unix_socket() {
    let home = tempfile::tempdir().unwrap();
    let repo_dir = tempfile::tempdir().unwrap();
    small_repo(repo_dir.path());
    let repo = repo_dir.path().canonicalize().unwrap();
    let sock = home.path().join("satori.sock");
    let (server, at) = start(home.path(), &["--socket", sock.to_str().unwrap()]);
    assert_eq!(at, format!("unix://{}", sock.display()));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let (out, doc) = cli(
        &[],
        &[
            "--endpoint",
            &at,
            "manage_index",
            "--action",
            "create",
            "--path",
            repo.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{doc}");
    let (out, doc) = cli(&[], &["--endpoint", &at, "list_codebases"]);
    assert_eq!(out.status.code(), Some(0), "{doc}");

    // A second server on the live socket is refused.
    let second = Command::new(binary("satori"))
        .arg("--socket")
        .arg(&sock)
        .env("SATORI_HOME", home.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(second.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&second.stderr).contains("in use by a running server"));
    stop(server);
    assert!(!sock.exists(), "the socket is removed on exit");
}

/// A listener other machines can reach is refused without a token, naming the flags that
/// give one; a socket path that holds anything but a socket left by a dead server is refused
/// and left as it was.
#[test]
fn unsafe_listeners_are_refused() {
    let home = tempfile::tempdir().unwrap();
    let satori = |args: &[&std::ffi::OsStr]| {
        Command::new(binary("satori"))
            .args(args)
            .env("SATORI_HOME", home.path())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let out = satori(&["--http".as_ref(), "0.0.0.0:0".as_ref()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--token-env NAME or --token-file PATH"),
        "{stderr}"
    );
    #[cfg(unix)]
    {
        let file = home.path().join("notes.txt");
        std::fs::write(&file, "precious").unwrap();
        let dir = home.path().join("a-directory");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("inside"), "kept").unwrap();
        let link = home.path().join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        for (path, what) in [
            (&file, "a regular file"),
            (&dir, "a directory"),
            (&link, "a symbolic link"),
        ] {
            let out = satori(&["--socket".as_ref(), path.as_os_str()]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{stderr}");
            assert!(stderr.contains(what), "{stderr}");
        }
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "precious");
        assert_eq!(std::fs::read_to_string(dir.join("inside")).unwrap(), "kept");
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }
}
