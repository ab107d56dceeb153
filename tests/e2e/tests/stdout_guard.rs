//! The real `satori` process: a tool that writes stray bytes to fd 1 (a test-only hook of
//! debug builds, `SATORI_TEST_STRAY_STDOUT`) must leave the protocol stream intact in every
//! guard mode that protects it, and each mode must say on stderr what it did.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

use satori_e2e::binary;
use serde_json::{Value, json};

struct Run {
    stdout_lines: Vec<String>,
    stderr: String,
    /// The `tools/call` response, if one parsed.
    call: Option<Value>,
}

fn run(env: &[(&str, &str)]) -> Run {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(binary("satori"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("SATORI_HOME", home.path())
        .env("SATORI_TEST_STRAY_STDOUT", "STRAY-LINE-FROM-A-DEPENDENCY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut stderr_pipe = child.stderr.take().unwrap();
    let stderr_thread = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr_pipe.read_to_string(&mut s);
        s
    });
    let send = |stdin: &mut std::process::ChildStdin, v: Value| {
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    };
    let mut lines = Vec::new();
    let mut read_until_id = |id: u64, lines: &mut Vec<String>| -> Option<Value> {
        loop {
            let mut line = String::new();
            if stdout.read_line(&mut line).unwrap() == 0 {
                return None;
            }
            let line = line.trim_end_matches('\n').to_string();
            lines.push(line.clone());
            if let Ok(v) = serde_json::from_str::<Value>(&line)
                && v["id"] == id
            {
                return Some(v);
            }
            if line.contains(&format!("\"id\":{id}")) {
                return None;
            }
        }
    };
    send(
        &mut stdin,
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"0"}}}),
    );
    let init = read_until_id(1, &mut lines);
    assert!(init.is_some(), "no initialize response: {lines:?}");
    send(
        &mut stdin,
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
    );
    send(
        &mut stdin,
        json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_codebases","arguments":{}}}),
    );
    let call = read_until_id(2, &mut lines);
    drop(stdin);
    let mut rest = String::new();
    let _ = stdout.read_to_string(&mut rest);
    lines.extend(rest.lines().map(str::to_string));
    let _ = child.wait();
    Run {
        stdout_lines: lines,
        stderr: stderr_thread.join().unwrap(),
        call,
    }
}

#[track_caller]
fn assert_protocol_only(r: &Run) {
    for line in &r.stdout_lines {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|_| {
            panic!(
                "non-protocol bytes on stdout: {line:?}\nstderr: {}",
                r.stderr
            )
        });
        assert_eq!(v["jsonrpc"], "2.0", "{line}");
    }
    let call = r.call.as_ref().expect("the tool call answered");
    assert!(call["result"]["content"][0]["text"].is_string(), "{call}");
}

#[test]
fn drop_mode_discards_stray_bytes_and_says_so() {
    let r = run(&[("SATORI_RUN_MODE", "cli")]);
    assert_protocol_only(&r);
    assert!(
        r.stderr.contains("[STDOUT_BLOCKED] dropped len="),
        "{}",
        r.stderr
    );
    assert!(
        !r.stderr.contains("STRAY-LINE"),
        "drop mode must not echo the bytes"
    );
}

#[test]
fn redirect_mode_sends_stray_bytes_to_stderr() {
    let r = run(&[
        ("SATORI_RUN_MODE", "cli"),
        ("SATORI_CLI_STDOUT_GUARD", "redirect"),
    ]);
    assert_protocol_only(&r);
    assert!(
        r.stderr.contains("STRAY-LINE-FROM-A-DEPENDENCY"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("PARTIAL-NO-NEWLINE"), "{}", r.stderr);
}

#[test]
fn mcp_mode_redirects_by_default() {
    let r = run(&[("SATORI_RUN_MODE", "mcp")]);
    assert_protocol_only(&r);
    assert!(
        r.stderr.contains("STRAY-LINE-FROM-A-DEPENDENCY"),
        "{}",
        r.stderr
    );
}

#[test]
fn off_mode_announces_itself_and_leaves_stdout_unguarded() {
    let r = run(&[
        ("SATORI_RUN_MODE", "cli"),
        ("SATORI_CLI_STDOUT_GUARD", "off"),
    ]);
    assert_eq!(
        r.stderr
            .matches("[STDOUT_GUARD_DISABLED] SATORI_CLI_STDOUT_GUARD=off")
            .count(),
        1,
        "{}",
        r.stderr
    );
    // Without the guard the stray line reaches stdout: this is what the guard prevents.
    assert!(
        r.stdout_lines.iter().any(|l| l.contains("STRAY-LINE")),
        "{:?}",
        r.stdout_lines
    );
}

#[test]
fn bad_configuration_fails_fast_with_a_clear_error() {
    let out = Command::new(binary("satori"))
        .env("SATORI_RUN_MODE", "cli")
        .env("SATORI_CLI_STDOUT_GUARD", "sideways")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("SATORI_CLI_STDOUT_GUARD='sideways'"), "{err}");
}
