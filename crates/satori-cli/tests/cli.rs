//! End-to-end tests of the `satori-cli` binary against a scriptable fake MCP
//! server (`tests/fake_servers/mcp_fake.py`, selected via SATORI_SERVER_BIN),
//! which serves the contract's tools (from `satori_protocol`) plus two of its own.
//!
//! The contract under test is what a script sees: the exit status, stdout
//! (always exactly one JSON document) and the stable `E_*` tokens on stderr.
//! Each case is snapshotted as `{exitCode, stdout, stderrTokens}`.

use std::time::{Duration, Instant};

use assert_cmd::Command;
use serde_json::{Value, json};

#[path = "fake_servers/fake.rs"]
mod fake;
use fake::{TOOLS_FILE_ENV, fake_server, protocol_tools, tools_file};

/// One invocation of the CLI.
#[derive(Default)]
struct Case<'a> {
    args: &'a [&'a str],
    scenario: &'static str,
    env: &'static [(&'static str, &'static str)],
    stdin: Option<&'static str>,
}

/// What came out of it.
struct Run {
    code: i32,
    stdout: Value,
    stderr: Vec<u8>,
}

impl Run {
    fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    fn tokens(&self) -> Vec<String> {
        self.stderr_text()
            .lines()
            .filter(|l| l.starts_with("E_"))
            .map(str::to_owned)
            .collect()
    }
}

fn run(case: &Case, extra_env: &[(&str, String)]) -> Run {
    let mut cmd = Command::cargo_bin("satori-cli").expect("satori-cli is built");
    cmd.args(case.args)
        // The developer's own settings must not leak into the contract cases.
        .env_remove("SATORI_CLI_GUARD_RECOVERY")
        .env_remove("SATORI_CLI_STDOUT_GUARD")
        // The fake is a stdio server: these are the cases of a server started for the call
        // (the per-user server is tested with the real one, tests/e2e/tests/daemon.rs).
        .env("SATORI_DAEMON", "off")
        .env("SATORI_SERVER_BIN", fake_server())
        .env(TOOLS_FILE_ENV, tools_file())
        .env("FAKE_SCENARIO", case.scenario)
        .timeout(Duration::from_secs(60));
    for (k, v) in case.env {
        cmd.env(k, v);
    }
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    cmd.write_stdin(case.stdin.unwrap_or(""));
    collect(cmd)
}

/// Run a prepared command and check the one invariant of every run: stdout
/// is exactly one JSON document.
fn collect(mut cmd: Command) -> Run {
    let output = cmd.output().expect("run satori-cli");
    let code = output
        .status
        .code()
        .expect("exited normally, not by a signal");

    // stdout must be exactly one JSON document, whatever happened.
    let mut docs = serde_json::Deserializer::from_slice(&output.stdout).into_iter::<Value>();
    let stdout = match docs.next() {
        Some(Ok(doc)) => doc,
        other => panic!(
            "stdout is not a JSON document ({other:?}): {:?}",
            String::from_utf8_lossy(&output.stdout)
        ),
    };
    assert!(
        docs.next().is_none(),
        "stdout holds more than one JSON document"
    );
    Run {
        code,
        stdout,
        stderr: output.stderr,
    }
}

/// Run a case and snapshot the part of the outcome that is the contract.
fn check(name: &str, case: Case) -> Run {
    let outcome = run(&case, &[]);
    let summary = json!({
        "exitCode": outcome.code,
        "stdout": outcome.stdout,
        "stderrTokens": outcome.tokens(),
    });
    insta::assert_json_snapshot!(name, summary);
    outcome
}

#[test]
fn contract_cases() {
    let cases: Vec<(&str, Case)> = vec![
        (
            "version",
            Case {
                args: &["version"],
                ..Case::default()
            },
        ),
        (
            "call_ok_inline_args",
            Case {
                args: &[
                    "tool",
                    "call",
                    "search_codebase",
                    "--args-json",
                    r#"{"path":"/repo","query":"auth"}"#,
                ],
                scenario: "ok",
                ..Case::default()
            },
        ),
        (
            "call_ok_args_from_stdin",
            Case {
                args: &["tool", "call", "list_codebases", "--args-json", "@-"],
                scenario: "ok",
                stdin: Some(r#"{"verbose": true}"#),
                ..Case::default()
            },
        ),
        (
            "call_is_error",
            Case {
                args: &["tool", "call", "search_codebase", "--args-json", "{}"],
                scenario: "tool_error",
                ..Case::default()
            },
        ),
        (
            "envelope_not_ready",
            Case {
                args: &[
                    "tool",
                    "call",
                    "search_codebase",
                    "--args-json",
                    r#"{"path":"/repo","query":"q"}"#,
                ],
                scenario: "envelope",
                env: &[("FAKE_STATUS", "not_ready")],
                ..Case::default()
            },
        ),
        (
            "envelope_not_indexed",
            Case {
                args: &[
                    "tool",
                    "call",
                    "search_codebase",
                    "--args-json",
                    r#"{"path":"/repo","query":"q"}"#,
                ],
                scenario: "envelope",
                env: &[("FAKE_STATUS", "not_indexed")],
                ..Case::default()
            },
        ),
        (
            "envelope_requires_reindex",
            Case {
                args: &[
                    "tool",
                    "call",
                    "search_codebase",
                    "--args-json",
                    r#"{"path":"/repo","query":"q"}"#,
                ],
                scenario: "envelope",
                env: &[("FAKE_STATUS", "requires_reindex")],
                ..Case::default()
            },
        ),
        (
            "garbage_before_initialize",
            Case {
                args: &["tools", "list"],
                scenario: "garbage_init",
                ..Case::default()
            },
        ),
        (
            "garbage_before_call_result",
            Case {
                args: &["tool", "call", "list_codebases"],
                scenario: "garbage_call",
                ..Case::default()
            },
        ),
        (
            "server_dies_during_call",
            Case {
                args: &["tool", "call", "list_codebases"],
                scenario: "die_call",
                ..Case::default()
            },
        ),
        (
            "call_timeout",
            Case {
                args: &["--call-timeout-ms", "400", "tool", "call", "list_codebases"],
                scenario: "hang_call",
                ..Case::default()
            },
        ),
        (
            "index_create_waits_until_indexed",
            Case {
                args: &[
                    "tool",
                    "call",
                    "manage_index",
                    "--args-json",
                    r#"{"action":"create","path":"/repo"}"#,
                ],
                scenario: "index",
                env: &[("FAKE_POLLS", "3"), ("FAKE_INDEX_END", "indexed")],
                ..Case::default()
            },
        ),
        (
            // A synced index is searchable and finished, like an indexed one.
            "index_create_ends_sync_completed",
            Case {
                args: &[
                    "tool",
                    "call",
                    "manage_index",
                    "--args-json",
                    r#"{"action":"create","path":"/repo"}"#,
                ],
                scenario: "index",
                env: &[("FAKE_POLLS", "2"), ("FAKE_INDEX_END", "sync_completed")],
                ..Case::default()
            },
        ),
        (
            // A state this client does not know ends the wait, as a failure.
            "index_create_ends_in_an_unknown_state",
            Case {
                args: &[
                    "tool",
                    "call",
                    "manage_index",
                    "--args-json",
                    r#"{"action":"create","path":"/repo"}"#,
                ],
                scenario: "index",
                env: &[("FAKE_POLLS", "1"), ("FAKE_INDEX_END", "compacting")],
                ..Case::default()
            },
        ),
        (
            "index_reindex_ends_indexfailed",
            Case {
                args: &[
                    "tool",
                    "call",
                    "manage_index",
                    "--args-json",
                    r#"{"action":"reindex","path":"/repo"}"#,
                ],
                scenario: "index",
                env: &[("FAKE_POLLS", "2"), ("FAKE_INDEX_END", "indexfailed")],
                ..Case::default()
            },
        ),
        (
            "index_wait_times_out",
            Case {
                args: &[
                    "--call-timeout-ms",
                    "1200",
                    "tool",
                    "call",
                    "manage_index",
                    "--args-json",
                    r#"{"action":"create","path":"/repo"}"#,
                ],
                scenario: "index",
                env: &[("FAKE_POLLS", "1000")],
                ..Case::default()
            },
        ),
        (
            "index_status_is_not_waited_for",
            Case {
                args: &[
                    "tool",
                    "call",
                    "manage_index",
                    "--args-json",
                    r#"{"action":"status","path":"/repo"}"#,
                ],
                scenario: "index",
                env: &[("FAKE_POLLS", "5")],
                ..Case::default()
            },
        ),
        (
            "index_create_ends_requires_reindex",
            Case {
                args: &[
                    "tool",
                    "call",
                    "manage_index",
                    "--args-json",
                    r#"{"action":"create","path":"/repo"}"#,
                ],
                scenario: "index",
                env: &[("FAKE_POLLS", "1"), ("FAKE_INDEX_END", "requires_reindex")],
                ..Case::default()
            },
        ),
        (
            "index_reindex_ends_not_indexed",
            Case {
                args: &[
                    "tool",
                    "call",
                    "manage_index",
                    "--args-json",
                    r#"{"action":"reindex","path":"/repo"}"#,
                ],
                scenario: "index",
                env: &[("FAKE_POLLS", "1"), ("FAKE_INDEX_END", "not_indexed")],
                ..Case::default()
            },
        ),
        (
            // A refused kick-off started nothing: there is no build to wait for.
            "index_kickoff_refused_is_not_waited_for",
            Case {
                args: &[
                    "tool",
                    "call",
                    "manage_index",
                    "--args-json",
                    r#"{"action":"reindex","path":"/repo"}"#,
                ],
                scenario: "envelope",
                env: &[("FAKE_STATUS", "requires_reindex")],
                ..Case::default()
            },
        ),
        (
            // The server's last words lack a newline; our token still starts a line.
            "server_dies_mid_stderr_line",
            Case {
                args: &["tool", "call", "list_codebases"],
                scenario: "die_call_mid_line",
                ..Case::default()
            },
        ),
        (
            "usage_bad_json",
            Case {
                args: &["tool", "call", "search_codebase", "--args-json", "{nope"],
                ..Case::default()
            },
        ),
        (
            "usage_args_not_an_object",
            Case {
                args: &["tool", "call", "search_codebase", "--args-json", "[1]"],
                ..Case::default()
            },
        ),
        (
            "usage_args_file_missing",
            Case {
                args: &[
                    "tool",
                    "call",
                    "search_codebase",
                    "--args-file",
                    "no/such/args.json",
                ],
                ..Case::default()
            },
        ),
        (
            "usage_unknown_flag",
            Case {
                args: &["--frobnicate", "tools", "list"],
                ..Case::default()
            },
        ),
        (
            "usage_missing_tool_name",
            Case {
                args: &["tool", "call"],
                ..Case::default()
            },
        ),
        (
            "usage_no_command",
            Case {
                args: &[],
                ..Case::default()
            },
        ),
        (
            "usage_server_not_found",
            Case {
                args: &["tools", "list"],
                env: &[("SATORI_SERVER_BIN", "no/such/satori")],
                ..Case::default()
            },
        ),
    ];
    for (name, case) in cases {
        check(name, case);
    }
}

/// `tools list` prints the server's `tools/list` result as it came: the
/// contract's tools with their schemas, then the fake's own two.
#[test]
fn tools_list_is_the_server_s_list() {
    let outcome = run(
        &Case {
            args: &["tools", "list"],
            scenario: "ok",
            ..Case::default()
        },
        &[],
    );
    assert_eq!(outcome.code, 0, "{}", outcome.stderr_text());
    assert_eq!(outcome.tokens(), Vec::<String>::new());
    let listed = outcome.stdout["tools"].as_array().expect("a tools array");
    let contract = protocol_tools();
    assert_eq!(listed[..contract.len()], contract[..]);
    let extra: Vec<&str> = listed[contract.len()..]
        .iter()
        .map(|t| t["name"].as_str().expect("a name"))
        .collect();
    assert_eq!(extra, ["fancy", "strict"]);
    assert_eq!(
        outcome.stdout.as_object().map(|o| o.len()),
        Some(1),
        "nothing but the tools: {}",
        outcome.stdout
    );
}

#[test]
fn help_is_json_on_stdout_and_text_on_stderr() {
    let outcome = run(
        &Case {
            args: &["help"],
            ..Case::default()
        },
        &[],
    );
    assert_eq!(outcome.code, 0);
    assert_eq!(outcome.stdout["name"], "satori-cli");
    let commands = outcome.stdout["commands"]
        .as_array()
        .expect("commands listed");
    assert!(
        commands
            .iter()
            .any(|c| c["usage"] == "satori-cli tools list")
    );
    assert!(outcome.stderr_text().contains("usage:"));
}

#[test]
fn noisy_server_stderr_is_forwarded_byte_for_byte_and_stdout_stays_clean() {
    let outcome = run(
        &Case {
            args: &["tool", "call", "list_codebases", "--args-json", "{}"],
            scenario: "noisy",
            ..Case::default()
        },
        &[],
    );
    assert_eq!(outcome.code, 0, "{}", outcome.stderr_text());
    assert_eq!(outcome.stdout["content"][0]["type"], "text");
    let stderr = &outcome.stderr;
    let contains = |needle: &[u8]| stderr.windows(needle.len()).any(|w| w == needle);
    assert!(contains(b"noise: starting up\n"));
    assert!(
        contains(b"raw bytes \xff\xfe kept as-is\n"),
        "non-UTF-8 bytes were altered"
    );
    assert!(contains(b"noise: calling list_codebases\n"));
    // 200 000 bytes is far more than a pipe buffer: it only arrives if stderr
    // is drained while the handshake is going on.
    assert!(contains(&[b'x'; 200_000]));
}

/// `--format text` adds a human summary on stderr and changes nothing else:
/// the same stdout document and exit status as `--format json`.
#[test]
fn text_format_adds_a_summary_on_stderr_only() {
    let search = satori_protocol::tools()
        .iter()
        .find(|t| t.name == "search_codebase")
        .expect("search_codebase is a tool");
    let first_line = search.description.lines().next().unwrap_or("");
    let search_line = format!("  search_codebase  {first_line}");
    let count_line = format!("{} tools:", protocol_tools().len() + 2);
    let cases: [(&[&str], &[&str]); 3] = [
        (
            &["tools", "list"],
            &[count_line.as_str(), search_line.as_str()],
        ),
        (
            &["tool", "call", "list_codebases"],
            &["2 codebases tracked."],
        ),
        (&["read_file", "--path", "/a"], &["2 codebases tracked."]),
    ];
    for (args, summary) in cases {
        let outcome = |format: &str| {
            let args = [&["--format", format], args].concat();
            run(
                &Case {
                    args: &args,
                    scenario: "ok",
                    env: &[("FAKE_HUMAN_TEXT", "2 codebases tracked.")],
                    ..Case::default()
                },
                &[],
            )
        };
        let (json, text) = (outcome("json"), outcome("text"));
        assert_eq!((json.code, text.code), (0, 0), "{args:?}");
        assert_eq!(json.stdout, text.stdout, "{args:?}");
        for line in summary {
            let has = |run: &Run| run.stderr_text().lines().any(|l| l == *line);
            assert!(
                has(&text),
                "{args:?}: {line:?} missing in {}",
                text.stderr_text()
            );
            assert!(!has(&json), "{args:?}: {line:?} in json format");
        }
    }
}

/// What a dying server wrote to stderr reaches ours intact, and our error
/// line still starts a line of its own when the server stopped mid-line.
#[test]
fn a_dying_server_s_last_words_reach_stderr_before_the_token() {
    let cases = [
        ("die_call", "fatal: giving up\nE_PROTOCOL_FAILURE: "),
        (
            "die_call_mid_line",
            "fatal: giving up without a newline\nE_PROTOCOL_FAILURE: ",
        ),
    ];
    for (scenario, want) in cases {
        let outcome = run(
            &Case {
                args: &["tool", "call", "list_codebases"],
                scenario,
                ..Case::default()
            },
            &[],
        );
        assert_eq!(outcome.code, 3, "{scenario}");
        let stderr = outcome.stderr_text();
        assert!(stderr.contains(want), "{scenario}: {stderr:?}");
    }
}

/// The child always gets `SATORI_RUN_MODE=cli`, even when our own
/// environment says otherwise (the fake refuses to start in any other mode).
#[test]
fn the_server_runs_in_cli_mode_whatever_our_environment_says() {
    // The fixture's refusal is what makes this test able to fail.
    let refused = std::process::Command::new(fake_server())
        .env("SATORI_RUN_MODE", "mcp")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run the fake directly");
    assert_eq!(refused.status.code(), Some(9));

    let outcome = run(
        &Case {
            args: &["tools", "list"],
            scenario: "ok",
            env: &[("SATORI_RUN_MODE", "mcp")],
            ..Case::default()
        },
        &[],
    );
    assert_eq!(outcome.code, 0, "{}", outcome.stderr_text());
}

/// One request as the fake logged it (FAKE_REQUEST_LOG).
struct Request {
    pid: u64,
    ms: f64,
    /// `method`, or `tools/call <tool> [<action>]`.
    what: String,
}

fn requests(log: &std::path::Path) -> Vec<Request> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|line| {
            let r: Value = serde_json::from_str(line).expect("request log line");
            let mut what = r["method"].as_str().unwrap_or("?").to_owned();
            for key in ["tool", "action"] {
                if let Some(v) = r[key].as_str() {
                    what = format!("{what} {v}");
                }
            }
            Request {
                pid: r["pid"].as_u64().expect("pid"),
                ms: r["ms"].as_f64().expect("ms"),
                what,
            }
        })
        .collect()
}

/// What each command sends: `tools/list` exactly once per invocation (the
/// schema cache), and an index wait polls `status` on the very server that
/// got the kick-off, every 500 ms.
#[test]
fn requests_sent_per_invocation() {
    const HANDSHAKE: [&str; 2] = ["initialize", "notifications/initialized"];
    let index_wait = [
        "tools/list",
        "tools/call manage_index create",
        "tools/call manage_index status",
        "tools/call manage_index status",
        "tools/call manage_index status",
    ];
    let cases: [(&[&str], &str, &[&str]); 5] = [
        (&["tools", "list"], "ok", &["tools/list"]),
        (
            &["tool", "call", "list_codebases"],
            "ok",
            &["tools/list", "tools/call list_codebases"],
        ),
        (
            &["read_file", "--path", "/a"],
            "ok",
            &["tools/list", "tools/call read_file"],
        ),
        (&["read_file", "--help"], "ok", &["tools/list"]),
        (
            &["manage_index", "--action", "create", "--path", "/repo"],
            "index",
            &index_wait,
        ),
    ];
    for (args, scenario, want) in cases {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("requests");
        let outcome = run(
            &Case {
                args,
                scenario,
                env: &[("FAKE_POLLS", "2")],
                ..Case::default()
            },
            &[("FAKE_REQUEST_LOG", log.to_string_lossy().into_owned())],
        );
        assert_eq!(outcome.code, 0, "{args:?}: {}", outcome.stderr_text());
        let seen = requests(&log);
        let what: Vec<&str> = seen.iter().map(|r| r.what.as_str()).collect();
        assert_eq!(what, [&HANDSHAKE[..], want].concat(), "{args:?}");
        assert!(
            seen.iter().all(|r| r.pid == seen[0].pid),
            "{args:?}: requests went to more than one server"
        );
        let polls: Vec<f64> = seen
            .iter()
            .filter(|r| r.what.ends_with(" status"))
            .map(|r| r.ms)
            .collect();
        for gap in polls.windows(2).map(|w| w[1] - w[0]) {
            assert!(
                (490.0..2000.0).contains(&gap),
                "{args:?}: status polls {gap:.0} ms apart, want every 500 ms"
            );
        }
    }
}

#[test]
fn index_progress_is_reported_on_stderr() {
    let outcome = run(
        &Case {
            args: &[
                "tool",
                "call",
                "manage_index",
                "--args-json",
                r#"{"action":"create","path":"/repo"}"#,
            ],
            scenario: "index",
            env: &[("FAKE_POLLS", "3")],
            ..Case::default()
        },
        &[],
    );
    assert_eq!(outcome.code, 0);
    let stderr = outcome.stderr_text();
    for line in [
        "indexing 25% (250/1000 files) phase=chunking",
        "indexing 50% (500/1000 files) phase=chunking",
        "indexing 75% (750/1000 files) phase=chunking",
    ] {
        assert!(
            stderr.lines().any(|l| l == line),
            "missing {line:?} in {stderr}"
        );
    }
}

#[test]
fn args_file_is_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("args.json");
    std::fs::write(&file, r#"{"path":"/from-file","query":"q"}"#).expect("write args");
    let file = file.to_string_lossy().into_owned();
    let outcome = run(
        &Case {
            args: &["tool", "call", "search_codebase", "--args-file", &file],
            scenario: "ok",
            ..Case::default()
        },
        &[],
    );
    assert_eq!(outcome.code, 0);
    let text = outcome.stdout["content"][0]["text"]
        .as_str()
        .expect("text content");
    let envelope: Value = serde_json::from_str(text).expect("envelope");
    assert_eq!(envelope["args"]["path"], "/from-file");
}

/// A process is gone when /proc has no entry for it, or only a zombie's.
#[cfg(target_os = "linux")]
fn is_running(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .chars()
                .next();
            !matches!(state, Some('Z') | Some('X'))
        }
        Err(_) => false,
    }
}

#[cfg(target_os = "linux")]
#[test]
fn startup_timeout_kills_the_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("pid");
    // A loaded machine can take longer than the 500 ms budget just to start
    // Python; a shell records the pid first and then becomes the fake (exec
    // keeps the pid), so the server is known even if it never got going.
    let server = dir.path().join("satori");
    std::fs::write(
        &server,
        format!(
            "#!/bin/sh\necho $$ > \"$FAKE_PID_FILE\"\nexec '{}' \"$@\"\n",
            fake_server().display()
        ),
    )
    .expect("write the server wrapper");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&server, std::fs::Permissions::from_mode(0o755))
            .expect("chmod the server wrapper");
    }
    let started = Instant::now();
    let outcome = run(
        &Case {
            args: &["--startup-timeout-ms", "500", "tools", "list"],
            scenario: "silent_init",
            ..Case::default()
        },
        &[
            ("FAKE_PID_FILE", pid_file.to_string_lossy().into_owned()),
            ("SATORI_SERVER_BIN", server.to_string_lossy().into_owned()),
        ],
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
    insta::assert_json_snapshot!(
        "startup_timeout",
        json!({"exitCode": outcome.code, "stdout": outcome.stdout, "stderrTokens": outcome.tokens()})
    );
    let pid = std::fs::read_to_string(&pid_file).expect("fake wrote its pid");
    assert!(!is_running(pid.trim()), "server {pid} outlived satori-cli");
}

#[cfg(target_os = "linux")]
#[test]
fn call_timeout_kills_the_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("pid");
    let outcome = run(
        &Case {
            args: &["--call-timeout-ms", "300", "tool", "call", "list_codebases"],
            scenario: "hang_call",
            ..Case::default()
        },
        &[("FAKE_PID_FILE", pid_file.to_string_lossy().into_owned())],
    );
    assert_eq!(outcome.code, 3);
    let pid = std::fs::read_to_string(&pid_file).expect("fake wrote its pid");
    assert!(!is_running(pid.trim()), "server {pid} outlived satori-cli");
}

/// Whatever ends satori-cli, the server goes with it: SIGINT and SIGTERM are
/// handled (exit 130 with an error document), and even SIGKILL, which we
/// cannot handle, takes the server down (parent-death signal).
#[cfg(target_os = "linux")]
#[test]
fn signals_kill_the_server() {
    let cases = [
        ("INT", Some(130), Some("E_INTERRUPTED")),
        ("TERM", Some(130), Some("E_INTERRUPTED")),
        ("KILL", None, None),
    ];
    for (signal, want_code, want_token) in cases {
        let dir = tempfile::tempdir().expect("tempdir");
        let pid_file = dir.path().join("pid");
        let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("satori-cli"))
            .args(["tool", "call", "list_codebases"])
            .env("SATORI_SERVER_BIN", fake_server())
            .env("SATORI_DAEMON", "off")
            .env(TOOLS_FILE_ENV, tools_file())
            .env("FAKE_SCENARIO", "hang_call")
            .env("FAKE_PID_FILE", &pid_file)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn satori-cli");
        // The fake writes its pid once it runs, i.e. after our signal handlers are in place.
        let deadline = Instant::now() + Duration::from_secs(20);
        let server_pid = loop {
            if let Ok(pid) = std::fs::read_to_string(&pid_file)
                && !pid.is_empty()
            {
                break pid;
            }
            assert!(
                Instant::now() < deadline,
                "{signal}: fake server never started"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let status = std::process::Command::new("kill")
            .args([format!("-{signal}"), child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "{signal}");
        let output = child.wait_with_output().expect("wait satori-cli");
        assert_eq!(output.status.code(), want_code, "{signal}");
        if let Some(token) = want_token {
            let doc: Value = serde_json::from_slice(&output.stdout).expect("one JSON document");
            assert_eq!(doc["error"]["code"], token, "{signal}");
        }
        // The parent-death signal is delivered asynchronously; give it a moment.
        let deadline = Instant::now() + Duration::from_secs(10);
        while is_running(server_pid.trim()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            !is_running(server_pid.trim()),
            "{signal}: server {server_pid} outlived satori-cli"
        );
    }
}

/// Timers bound waits and nothing else: with the default 180 s / 600 s
/// budgets armed, and after a timeout fired, the process exits as soon as
/// its work is done.
#[test]
fn timers_never_keep_the_process_alive() {
    let cases: [(&[&str], &str, i32); 4] = [
        (&["tools", "list"], "ok", 0),
        (
            &["manage_index", "--action", "create", "--path", "/repo"],
            "index",
            0,
        ),
        (
            &["--call-timeout-ms", "300", "tool", "call", "list_codebases"],
            "hang_call",
            3,
        ),
        (
            &["--startup-timeout-ms", "300", "tools", "list"],
            "silent_init",
            3,
        ),
    ];
    for (args, scenario, want_code) in cases {
        let started = Instant::now();
        let outcome = run(
            &Case {
                args,
                scenario,
                env: &[("FAKE_POLLS", "1")],
                ..Case::default()
            },
            &[],
        );
        let took = started.elapsed();
        assert!(took < Duration::from_secs(15), "{args:?} took {took:?}");
        assert_eq!(
            outcome.code,
            want_code,
            "{args:?}: {}",
            outcome.stderr_text()
        );
    }
}

/// Where the server is looked for, from a cwd that has nothing to do with
/// either binary: `SATORI_SERVER_BIN` unset (or empty) means the `satori`
/// next to the real location of satori-cli, symlinks resolved; if that is
/// missing, exit 2 naming the path that was tried.
#[cfg(unix)]
#[test]
fn server_is_found_next_to_satori_cli_from_any_cwd() {
    use std::path::Path;
    let exe = |dir: &Path, name: &str| dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    // Under the target directory, so that a hard link to the built binary is possible.
    let root = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
    let root = root.path().canonicalize().expect("canonical root");
    let [install, links, lonely, cwd] = ["install", "links", "lonely", "cwd"].map(|d| root.join(d));
    for dir in [&install, &links, &lonely, &cwd] {
        std::fs::create_dir(dir).expect("mkdir");
    }
    let place_cli = |dir: &Path| {
        let to = exe(dir, "satori-cli");
        let from = assert_cmd::cargo::cargo_bin("satori-cli");
        // A hard link writes nothing, so no other test's fork can hold the
        // new file open for writing when we execute it ("text file busy").
        if std::fs::hard_link(&from, &to).is_err() {
            std::fs::copy(&from, &to).expect("copy satori-cli");
        }
        to
    };
    let installed = place_cli(&install);
    std::os::unix::fs::symlink(fake_server(), exe(&install, "satori")).expect("symlink server");
    let linked = exe(&links, "satori-cli");
    std::os::unix::fs::symlink(&installed, &linked).expect("symlink cli");
    let alone = place_cli(&lonely);

    let missing = exe(&lonely, "satori");
    let missing = missing.to_string_lossy();
    let cases: [(&Path, Option<&str>, i32, Option<&str>); 4] = [
        (&installed, None, 0, None),
        (&installed, Some(""), 0, None),
        (&linked, None, 0, None),
        (&alone, None, 2, Some(&missing)),
    ];
    for (program, server_bin, want_code, want_in_message) in cases {
        let mut cmd = Command::new(program);
        cmd.args(["tools", "list"])
            .current_dir(&cwd)
            .env_remove("SATORI_SERVER_BIN")
            .env_remove("SATORI_CLI_GUARD_RECOVERY")
            .env("SATORI_DAEMON", "off")
            .env(TOOLS_FILE_ENV, tools_file())
            .env("FAKE_SCENARIO", "ok")
            .timeout(Duration::from_secs(60));
        if let Some(value) = server_bin {
            cmd.env("SATORI_SERVER_BIN", value);
        }
        let outcome = collect(cmd);
        let label = format!("{} SATORI_SERVER_BIN={server_bin:?}", program.display());
        assert_eq!(
            outcome.code,
            want_code,
            "{label}: {}",
            outcome.stderr_text()
        );
        if let Some(fragment) = want_in_message {
            assert_eq!(outcome.stdout["error"]["code"], "E_USAGE", "{label}");
            let message = outcome.stdout["error"]["message"].as_str().unwrap_or("");
            assert!(message.contains(fragment), "{label}: {message}");
            assert!(
                outcome.tokens().iter().any(|t| t.starts_with("E_USAGE: ")),
                "{label}: {:?}",
                outcome.tokens()
            );
        } else {
            assert!(outcome.stdout["tools"].is_array(), "{label}");
        }
    }
}

/// (G) Wrapper mode against the fake's schemas: flags become the arguments
/// the fake echoes back, or the command fails with exit 2 before any call.
#[test]
fn wrapper_flag_matrix() {
    let cases: Vec<(&str, &[&str])> = vec![
        (
            "wrapper_aliases_last_wins",
            &[
                "read_file",
                "--path",
                "/repo/a.rs",
                "--start_line",
                "3",
                "--start-line",
                "7",
                "--end-line=9",
            ],
        ),
        (
            "wrapper_enum_and_object_json",
            &[
                "read_file",
                "--path=/repo/a.rs",
                "--mode",
                "annotated",
                "--open-symbol-json",
                r#"{"symbolId":"sym_1"}"#,
            ],
        ),
        (
            "wrapper_arrays_keep_order",
            &[
                "fancy",
                "--tags",
                "zeta",
                "--weights",
                "2.5",
                "--tags",
                "alpha",
                "--tags",
                "zeta",
                "--weights",
                "1",
                "--level",
                "2",
                "--dry-run",
            ],
        ),
        (
            "wrapper_boolean_forms",
            &["fancy", "--dryRun", "false", "--level=3"],
        ),
        ("wrapper_no_flags_no_required", &["list_codebases"]),
        (
            "wrapper_missing_required",
            &["read_file", "--mode", "plain"],
        ),
        ("wrapper_missing_two_required", &["search_codebase"]),
        (
            "wrapper_bad_enum",
            &["read_file", "--path", "/a", "--mode", "fancy"],
        ),
        (
            "wrapper_bad_integer",
            &["read_file", "--path", "/a", "--start-line", "x"],
        ),
        (
            "wrapper_unknown_flag",
            &["read_file", "--path", "/a", "--bogus", "1"],
        ),
        (
            "wrapper_object_without_json",
            &["read_file", "--path", "/a", "--open-symbol", "x"],
        ),
        ("wrapper_unsupported_one_of", &["fancy", "--choice", "a"]),
        (
            "wrapper_unsupported_nested_object",
            &["fancy", "--nested-json", "{}"],
        ),
        (
            "wrapper_unsupported_complex_items",
            &["fancy", "--pairs", "a"],
        ),
        ("wrapper_unsupported_required", &["strict"]),
        (
            "wrapper_raw_args_bypass_required",
            &["strict", "--args-json", r#"{"spec":{"any":"thing"}}"#],
        ),
        (
            "wrapper_mixing_flags_and_args_json",
            &["read_file", "--path", "/a", "--args-json", "{}"],
        ),
        (
            "tool_call_rejects_tool_flags",
            &["tool", "call", "read_file", "--path", "/a"],
        ),
        ("wrapper_unknown_tool", &["no_such_tool", "--x", "1"]),
        ("tool_call_unknown_tool", &["tool", "call", "no_such_tool"]),
        ("wrapper_tool_help", &["fancy", "--help"]),
    ];
    for (name, args) in cases {
        check(
            name,
            Case {
                args,
                scenario: "ok",
                ..Case::default()
            },
        );
    }
}

/// (H) Guard recovery. Each case runs with a fresh spawn log, so the snapshot
/// shows how many servers were started and with which guard mode.
#[test]
fn guard_recovery_matrix() {
    struct R {
        name: &'static str,
        args: &'static [&'static str],
        scenario: &'static str,
        breaks: &'static str,
        policy_env: Option<&'static str>,
        /// Extra environment for the fake.
        env: &'static [(&'static str, &'static str)],
    }
    let auto = &["--guard-recovery", "auto"];
    let join = |a: &[&'static str], b: &[&'static str]| -> &'static [&'static str] {
        Vec::leak([a, b].concat())
    };
    let cases = [
        R {
            name: "recovery_connect_retried",
            args: join(auto, &["tools", "list"]),
            scenario: "ok",
            breaks: "init",
            policy_env: None,
            env: &[],
        },
        R {
            name: "recovery_startup_timeout_retried",
            args: join(
                &["--startup-timeout-ms", "1500", "--guard-recovery", "auto"],
                &["tools", "list"],
            ),
            scenario: "ok",
            breaks: "hang_init",
            policy_env: None,
            env: &[],
        },
        R {
            // The server died before writing anything: empty stdout.
            name: "recovery_empty_stdout_retried",
            args: join(auto, &["tools", "list"]),
            scenario: "ok",
            breaks: "die_init",
            policy_env: None,
            env: &[],
        },
        R {
            name: "recovery_unparseable_json_retried",
            args: join(auto, &["tool", "call", "list_codebases"]),
            scenario: "ok",
            breaks: "mangle_call",
            policy_env: None,
            env: &[],
        },
        R {
            name: "recovery_call_timeout_retried",
            args: join(
                &["--call-timeout-ms", "1000", "--guard-recovery", "auto"],
                &["tool", "call", "list_codebases"],
            ),
            scenario: "ok",
            breaks: "hang_call",
            policy_env: None,
            env: &[],
        },
        R {
            name: "recovery_list_retried_and_sticky_for_the_call",
            args: join(auto, &["tool", "call", "list_codebases"]),
            scenario: "ok",
            breaks: "list",
            policy_env: None,
            env: &[],
        },
        R {
            name: "recovery_call_retried",
            args: join(auto, &["read_file", "--path", "/a"]),
            scenario: "ok",
            breaks: "call",
            policy_env: None,
            env: &[],
        },
        R {
            name: "recovery_from_env",
            args: &["read_file", "--path", "/a"],
            scenario: "ok",
            breaks: "call",
            policy_env: Some("auto"),
            env: &[],
        },
        R {
            name: "recovery_flag_beats_env",
            args: &["--guard-recovery", "never", "read_file", "--path", "/a"],
            scenario: "ok",
            breaks: "call",
            policy_env: Some("auto"),
            env: &[],
        },
        R {
            name: "recovery_never_by_default",
            args: &["read_file", "--path", "/a"],
            scenario: "ok",
            breaks: "call",
            policy_env: None,
            env: &[],
        },
        R {
            name: "recovery_both_attempts_fail",
            args: join(auto, &["tool", "call", "list_codebases"]),
            scenario: "garbage_call",
            breaks: "",
            policy_env: None,
            env: &[],
        },
        R {
            name: "recovery_then_non_ok_envelope_is_not_retried_again",
            args: join(
                auto,
                &["search_codebase", "--path", "/repo", "--query", "q"],
            ),
            scenario: "envelope",
            breaks: "call",
            policy_env: None,
            env: &[],
        },
        R {
            name: "recovery_not_for_non_ok_envelope",
            args: join(
                auto,
                &["search_codebase", "--path", "/repo", "--query", "q"],
            ),
            scenario: "envelope",
            breaks: "",
            policy_env: None,
            env: &[],
        },
        R {
            name: "recovery_not_for_requires_reindex",
            args: join(
                auto,
                &["search_codebase", "--path", "/repo", "--query", "q"],
            ),
            scenario: "envelope",
            breaks: "",
            policy_env: None,
            env: &[("FAKE_STATUS", "requires_reindex")],
        },
        R {
            name: "recovery_not_for_not_indexed",
            args: join(
                auto,
                &["search_codebase", "--path", "/repo", "--query", "q"],
            ),
            scenario: "envelope",
            breaks: "",
            policy_env: None,
            env: &[("FAKE_STATUS", "not_indexed")],
        },
        R {
            name: "recovery_not_for_is_error",
            args: join(auto, &["tool", "call", "list_codebases"]),
            scenario: "tool_error",
            breaks: "",
            policy_env: None,
            env: &[],
        },
        R {
            name: "recovery_not_for_usage_errors",
            args: join(auto, &["read_file", "--bogus"]),
            scenario: "ok",
            breaks: "call",
            policy_env: None,
            env: &[],
        },
        R {
            name: "recovery_not_for_manage_index_after_dispatch",
            args: join(
                auto,
                &["manage_index", "--action", "status", "--path", "/repo"],
            ),
            scenario: "ok",
            breaks: "call",
            policy_env: None,
            env: &[],
        },
        R {
            name: "recovery_manage_index_before_dispatch",
            args: join(
                auto,
                &["manage_index", "--action", "create", "--path", "/repo"],
            ),
            scenario: "index",
            breaks: "init",
            policy_env: None,
            env: &[],
        },
        R {
            name: "recovery_bad_env_value",
            args: &["tools", "list"],
            scenario: "ok",
            breaks: "",
            policy_env: Some("always"),
            env: &[],
        },
    ];
    for case in cases {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("spawns");
        let mut env = vec![
            ("FAKE_SPAWN_LOG", log.to_string_lossy().into_owned()),
            ("FAKE_GUARD_BREAKS", case.breaks.to_owned()),
            ("FAKE_POLLS", "1".to_owned()),
        ];
        if let Some(policy) = case.policy_env {
            env.push(("SATORI_CLI_GUARD_RECOVERY", policy.to_owned()));
        }
        env.extend(case.env.iter().map(|(k, v)| (*k, (*v).to_owned())));
        let outcome = run(
            &Case {
                args: case.args,
                scenario: case.scenario,
                ..Case::default()
            },
            &env,
        );
        let spawns: Vec<String> = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect();
        let recovery_lines: Vec<String> = outcome
            .stderr_text()
            .lines()
            .filter(|l| l.starts_with("[GUARD_RECOVERY]"))
            .map(str::to_owned)
            .collect();
        insta::assert_json_snapshot!(
            case.name,
            json!({
                "exitCode": outcome.code,
                "stdout": tool_names_only(outcome.stdout.clone()),
                "stderrTokens": outcome.tokens(),
                "recoveryLines": recovery_lines,
                "serversStartedWithGuard": spawns,
            })
        );
    }
}

/// A `tools/list` result with each tool reduced to its name: what recovery
/// snapshots need to show, without repeating the contract's descriptions.
fn tool_names_only(mut stdout: Value) -> Value {
    if let Some(Value::Array(tools)) = stdout.get_mut("tools") {
        for tool in tools {
            *tool = tool["name"].clone();
        }
    }
    stdout
}

/// A reader that goes away (`satori-cli ... | head -c0`) loses the document,
/// nothing else: no panic, the outcome's own exit status, no child left.
#[cfg(target_os = "linux")]
#[test]
fn closed_stdout_pipe_is_not_a_crash() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("pid");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("satori-cli"))
        .args(["tools", "list"])
        .env("SATORI_SERVER_BIN", fake_server())
        .env("SATORI_DAEMON", "off")
        .env(TOOLS_FILE_ENV, tools_file())
        .env("FAKE_SCENARIO", "ok")
        .env("FAKE_PID_FILE", &pid_file)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn satori-cli");
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("wait satori-cli");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let pid = std::fs::read_to_string(&pid_file).expect("fake wrote its pid");
    assert!(!is_running(pid.trim()), "server {pid} outlived satori-cli");
}

#[test]
fn debug_adds_diagnostics_on_stderr_only() {
    let outcome = run(
        &Case {
            args: &["--debug", "read_file", "--path", "/a", "--start-line", "2"],
            scenario: "ok",
            ..Case::default()
        },
        &[],
    );
    assert_eq!(outcome.code, 0);
    let stderr = outcome.stderr_text();
    for needle in [
        "satori-cli: debug: server executable: ",
        "satori-cli: debug: server pid ",
        r#"satori-cli: debug: calling read_file with {"path":"/a","start_line":2}"#,
        "satori-cli: debug: read_file answered in ",
        r#"[GUARD_RECOVERY] {"attemptCount":1,"guardRecoveryAttempted":false"#,
    ] {
        assert!(stderr.contains(needle), "missing {needle:?} in {stderr}");
    }
    // Diagnostics never change the document.
    assert!(outcome.stdout.get("_meta").is_none(), "{}", outcome.stdout);
}
