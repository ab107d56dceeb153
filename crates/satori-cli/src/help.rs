//! `help` and `version`: machine-readable on stdout, human text on stderr.
//!
//! [`help`] is the one description of the CLI contract: `satori-cli help`
//! prints it, and the README's CLI section is rendered from it by
//! [`contract_markdown`] (a test fails when the two drift).

use serde_json::{Value, json};

use crate::args::{DEFAULT_CALL_TIMEOUT_MS, DEFAULT_STARTUP_TIMEOUT_MS};
use crate::exit::{ErrorCode, ExitStatus};
use crate::report::ATTEMPTS_META_KEY;
use satori_client::{
    ENDPOINT_ENV, ENDPOINT_FALLBACK_ENV, ENDPOINT_TOKEN_ENV, GUARD_RECOVERY_ENV, PROTOCOL_VERSION,
    SERVER_BIN_ENV, STDOUT_GUARD_ENV,
};
use satori_protocol::env::{DAEMON as DAEMON_ENV, DAEMON_IDLE_SECS as DAEMON_IDLE_SECS_ENV};

pub const NAME: &str = "satori-cli";
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Markers around the generated CLI section of the README.
pub const README_START: &str = "<!-- CLI_START -->";
pub const README_END: &str = "<!-- CLI_END -->";

pub fn version() -> Value {
    json!({"name": NAME, "version": VERSION, "protocolVersion": PROTOCOL_VERSION})
}

fn exit_codes() -> Value {
    let row = |status: ExitStatus, meaning: &str, codes: &[ErrorCode]| {
        json!({
            "code": status as u8,
            "meaning": meaning,
            "tokens": codes.iter().map(|c| c.token()).collect::<Vec<_>>(),
        })
    };
    json!([
        row(
            ExitStatus::Success,
            "success; for manage_index create|reindex: the index is complete and searchable (state indexed or sync_completed)",
            &[]
        ),
        row(
            ExitStatus::ToolError,
            "the tool answered with a failure: isError, an envelope whose status is not ok (not_indexed, not_ready, requires_reindex, or one this client does not know), an index build that ended in a state that is not searchable (indexfailed, requires_reindex, not_indexed, or one this client does not know), or a JSON-RPC error",
            &[ErrorCode::ToolError]
        ),
        row(
            ExitStatus::Usage,
            "usage error: bad JSON, unknown command, tool or flag, missing required wrapper flag, a schema the wrapper cannot express, server executable not found; E_AUTH: the shared server at the endpoint refused the connection (HTTP 401 or 403) because SATORI_ENDPOINT_TOKEN is unset or is not its token (the message says whether a token was sent)",
            &[
                ErrorCode::Usage,
                ErrorCode::SchemaUnsupported,
                ErrorCode::Auth
            ]
        ),
        row(
            ExitStatus::Transport,
            "startup timeout, call timeout, transport or protocol failure (the server printed garbage on stdout, died, or could not be started)",
            &[
                ErrorCode::StartupTimeout,
                ErrorCode::CallTimeout,
                ErrorCode::ProtocolFailure
            ]
        ),
        row(
            ExitStatus::Interrupted,
            "SIGINT or SIGTERM; the server child was killed first",
            &[ErrorCode::Interrupted]
        ),
    ])
}

pub fn help() -> Value {
    json!({
        "name": NAME,
        "version": VERSION,
        "protocolVersion": PROTOCOL_VERSION,
        "description": "Shell client of the satori MCP server: stdout is exactly one JSON document, stderr is for people.",
        "commands": [
            {"usage": "satori-cli tools list", "description": "Print the server's tools/list result."},
            {"usage": "satori-cli tool call <tool> [--args-json '<json>' | --args-json @- | --args-file <path>]",
             "description": "Call a tool with a JSON object of arguments (default {}; @- reads stdin); print the tools/call result."},
            {"usage": "satori-cli <tool> [flags]",
             "description": "Wrapper mode: the arguments as flags derived from the tool's live inputSchema (see wrapperFlags)."},
            {"usage": "satori-cli <tool> --args-json '<json>' | --args-file <path>",
             "description": "Wrapper mode with raw arguments: no tool flags beside them, required properties not enforced."},
            {"usage": "satori-cli <tool> --help", "description": "Print the tool's flags as JSON."},
            {"usage": "satori-cli daemon status", "description": "Print the per-user servers of this home (pid, version, executable, whether each answers) and which one this caller attaches to; starts nothing."},
            {"usage": "satori-cli daemon stop", "description": "Stop the per-user servers of this home; a server that is building hands the build to a detached process first, so the build finishes."},
            {"usage": "satori-cli help", "description": "Print this document."},
            {"usage": "satori-cli version", "description": "Print name, version and MCP protocol version."}
        ],
        "reservedWords": ["tools", "tool", "daemon", "help", "version"],
        "globalFlags": [
            {"flag": "--startup-timeout-ms", "value": "<ms>", "default": DEFAULT_STARTUP_TIMEOUT_MS,
             "description": "Budget for starting the server and the MCP handshake."},
            {"flag": "--call-timeout-ms", "value": "<ms>", "default": DEFAULT_CALL_TIMEOUT_MS,
             "description": "Budget for each request; also the whole wait of manage_index create|reindex."},
            {"flag": "--format", "value": "json|text", "default": "json",
             "description": "text adds a human summary on stderr; stdout stays JSON."},
            {"flag": "--guard-recovery", "value": "auto|never", "default": "never",
             "description": format!("auto: after a transport or protocol failure, retry once with {STDOUT_GUARD_ENV}=off (see guardRecovery); overrides {GUARD_RECOVERY_ENV}.")},
            {"flag": "--debug", "description": "Diagnostics on stderr: server path, pid, timings, the arguments sent, the recovery record."},
            {"flag": "--endpoint", "value": "<url>",
             "description": format!("Talk to a running shared server (satori --http ADDR: http://ADDR/mcp; satori --socket PATH: unix:///PATH) instead of starting one; overrides {ENDPOINT_ENV}. When nothing answers there, the error says how to start it; when the server refuses the call for its token, the error is E_AUTH and names {ENDPOINT_TOKEN_ENV}. The MCP session the call opened is ended (HTTP DELETE) when the call is done.")},
            {"flag": "--no-daemon",
             "description": format!("Start a server for this call only instead of attaching to the per-user server (as {DAEMON_ENV}=off).")},
            {"flag": "--endpoint-fallback",
             "description": format!("When nothing answers at the endpoint (connection refused, no socket), start a server for this call as if no endpoint had been given, and say so on stderr; a server that answers and refuses (a wrong token) is never bypassed. Overrides {ENDPOINT_FALLBACK_ENV}.")}
        ],
        "globalFlagPlacement": "Global flags go before the command; after tools list, tool call, daemon status|stop, help and version they are accepted too. After a tool name (wrapper mode) every flag is the tool's.",
        "environment": [
            {"name": SERVER_BIN_ENV, "description": "Path of the satori server executable; default: the satori next to satori-cli (symlinks resolved)."},
            {"name": GUARD_RECOVERY_ENV, "description": "auto or never: the default of --guard-recovery; an invalid value is a usage error."},
            {"name": STDOUT_GUARD_ENV, "description": "Passed to the server: drop (its default in cli mode), redirect or off."},
            {"name": ENDPOINT_ENV, "description": "The default of --endpoint."},
            {"name": ENDPOINT_FALLBACK_ENV, "description": "1 or 0: the default of --endpoint-fallback; another value is a usage error."},
            {"name": DAEMON_ENV, "description": "on (default where unix sockets exist) or off: with no endpoint, attach to the per-user server (see daemon), or start a server for each call; another value is a usage error."},
            {"name": DAEMON_IDLE_SECS_ENV, "description": "Seconds the per-user server stays with no session and no build before it exits (1 to 86400, default 900); read when a client starts it."},
            {"name": ENDPOINT_TOKEN_ENV, "description": "The bearer token of the shared server, when it was started with --token-env or --token-file; when the server refuses the call for its token (missing or wrong), the call fails with E_AUTH, exit 2."}
        ],
        "output": {
            "stdout": "Exactly one JSON document: the tools/list result, the tools/call result (for manage_index create|reindex: the final status), a tool's flags, or {\"error\": {\"code\": <token>, \"message\": ...}}. Pretty-printed on a terminal, one line otherwise.",
            "stderr": "The stderr of a server started for the call byte for byte (the per-user server's goes to its log), index progress, the --format text summary, and one line per error starting with its token. For a tool error: E_TOOL_ERROR status=<s> reason=<r> [state=<state>] [hints.status=<json>].",
            "closedStdout": "If the reader of stdout has gone away, the document is lost and the exit code is unchanged."
        },
        "exitCodes": exit_codes(),
        "daemon": [
            "with no --endpoint, a call attaches to the per-user server on a unix socket under $SATORI_HOME/run (mode 0600, directory 0700); it keeps the index open, the model loaded and the tree watched between calls",
            "when none answers, the call runs in a server of its own, as with SATORI_DAEMON=off, and starts the per-user server for the calls that follow once it is done (or after 300 ms, for a long call): detached, in its own process group, its stderr in a log file beside the socket",
            "a call attaches only to a server of its own version and executable, started with the same values of every environment variable that changes what the server does (home, embedding provider and keys, Milvus address, ranking weights, read limits); any other environment gets a server of its own",
            "two calls starting it at once end with one server (a lock, which the new server holds until it listens); a socket nobody listens on is replaced; a socket that answers and is not such a server is left as it is, and the call runs in a server of its own",
            "a newer build of the server asks an older one of the same home to exit once its calls and builds are done; a server exits by itself after SATORI_DAEMON_IDLE_SECS with no session and no build",
            "when the per-user server cannot be reached, or fails a request without answering (it died, the stream broke), the call runs once in a server of its own and a [DAEMON_RECOVERY] line on stderr says why (with --guard-recovery auto, the recovery record's daemonRecovery too); a manage_index call that may have been sent is not repeated",
            "SATORI_DAEMON=off, --no-daemon, SATORI_TELEMETRY=stderr (the per-user server's stderr is its log: telemetry lines reach the caller only from a server of its own), a platform without unix sockets or a home whose socket path would be too long: a server for each call, as before"
        ],
        "indexWait": "manage_index with action create or reindex polls manage_index status on the same server every 500 ms until the state is not indexing (a state this client does not know ends the wait too), within --call-timeout-ms; progress goes to stderr (a progress bar redrawn in place on a terminal, a line per change otherwise). Exit 0 only when the index ends searchable: indexed, or sync_completed (the state after a sync, just as finished).",
        "wrapperFlags": [
            "string, number, integer and boolean properties are one flag each; --name value or --name=value; the last occurrence wins",
            "a boolean flag alone means true; --name=false or --name false sets false",
            "enums accept exactly their listed values",
            "arrays of primitives: repeat the flag; the order given is kept",
            "objects: --<name>-json '<json object>'",
            "spellings: start_line, start-line and (for camelCase) result-mode, resultMode are the same flag",
            "values are converted to the property's type; ranges and lengths are checked by the server",
            "required properties are enforced in wrapper mode only; --args-json/--args-file bypass them",
            "oneOf, anyOf, allOf, $ref, patternProperties, objects inside objects and arrays of non-primitives make a property unsupported: using it, or its being required, fails with E_SCHEMA_UNSUPPORTED: <tool>.<property> ... use --args-json/--args-file",
            "tool flags and --args-json/--args-file do not mix (exit 2)"
        ],
        "guardRecovery": [
            format!("one retry with {STDOUT_GUARD_ENV}=off, only after a failure with no parseable answer: garbage on stdout, a broken stream, a startup or call timeout"),
            "never after an answer: isError, any envelope status (not_ready, requires_reindex, not_indexed, ...), a JSON-RPC error; never for usage errors",
            "never on a shared server (--endpoint): its stdout guard is not this client's to turn off (a server started by --endpoint-fallback is)",
            "manage_index is retried only when the failure happened while connecting, before the request was sent",
            "after a successful recovery the guard stays off for the rest of the run (sticky)",
            format!("with auto, results carry _meta[\"{ATTEMPTS_META_KEY}\"] and errors carry error.guardRecovery: {{attemptCount, guardRecoveryAttempted, guardRecoverySucceeded, effectiveGuardMode}}; a [GUARD_RECOVERY] line on stderr reports every retry"),
            "when both attempts fail: one combined error naming both attempts and their guard modes, with error.attempts; the exit code is the second attempt's"
        ]
    })
}

/// The short human version of [`help`], for stderr.
pub fn help_text() -> String {
    format!(
        "{NAME} {VERSION}: call the satori MCP tools from the shell\n\
         \n\
         usage:\n  \
           satori-cli tools list\n  \
           satori-cli tool call <tool> --args-json '<json>' | --args-json @- | --args-file <path>\n  \
           satori-cli <tool> [--flag value ...]      (flags from the tool's schema)\n  \
           satori-cli <tool> --help\n  \
           satori-cli daemon status | stop\n  \
           satori-cli help | version\n\
         \n\
         global flags (before the command): --startup-timeout-ms <ms> --call-timeout-ms <ms>\n  \
           --format json|text --guard-recovery auto|never --no-daemon --debug\n\
         stdout carries one JSON document; exit codes: 0 ok, 1 tool error, 2 usage, 3 transport"
    )
}

/// The README's CLI section, rendered from [`help`], between the markers.
pub fn contract_markdown() -> String {
    let h = help();
    let mut out = String::new();
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    // Prose outside code spans: `<tool>` would otherwise be taken for an HTML tag.
    let prose_of = |v: &Value| {
        v.as_str()
            .unwrap_or_default()
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let push = |out: &mut String, line: &str| {
        out.push_str(line);
        out.push('\n');
    };
    push(&mut out, README_START);
    push(
        &mut out,
        "<!-- Generated from `satori-cli help`; edit crates/satori-cli/src/help.rs. -->",
    );
    push(&mut out, "");
    push(&mut out, "| command | what it does |");
    push(&mut out, "|---|---|");
    for c in h["commands"].as_array().into_iter().flatten() {
        push(
            &mut out,
            &format!(
                "| `{}` | {} |",
                cell(&text(&c["usage"])),
                cell(&prose_of(&c["description"]))
            ),
        );
    }
    push(&mut out, "");
    push(&mut out, "| global flag | default | meaning |");
    push(&mut out, "|---|---|---|");
    for f in h["globalFlags"].as_array().into_iter().flatten() {
        let flag = match f["value"].as_str() {
            Some(v) => format!("{} {v}", text(&f["flag"])),
            None => text(&f["flag"]),
        };
        let default = match &f["default"] {
            Value::Null => String::new(),
            Value::String(s) => format!("`{s}`"),
            other => format!("`{other}`"),
        };
        push(
            &mut out,
            &format!(
                "| `{}` | {default} | {} |",
                cell(&flag),
                cell(&prose_of(&f["description"]))
            ),
        );
    }
    push(&mut out, "");
    push(&mut out, &prose_of(&h["globalFlagPlacement"]));
    push(&mut out, "");
    push(&mut out, "| exit | meaning | stderr tokens |");
    push(&mut out, "|---|---|---|");
    for e in h["exitCodes"].as_array().into_iter().flatten() {
        let tokens: Vec<String> = e["tokens"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| format!("`{}`", text(t)))
            .collect();
        push(
            &mut out,
            &format!(
                "| {} | {} | {} |",
                e["code"],
                cell(&prose_of(&e["meaning"])),
                tokens.join(", ")
            ),
        );
    }
    push(&mut out, "");
    for (key, title) in [("stdout", "stdout"), ("stderr", "stderr")] {
        push(
            &mut out,
            &format!("**{title}:** {}", prose_of(&h["output"][key])),
        );
        push(&mut out, "");
    }
    push(&mut out, &prose_of(&h["output"]["closedStdout"]));
    push(&mut out, "");
    push(
        &mut out,
        &format!("**Index wait:** {}", prose_of(&h["indexWait"])),
    );
    push(&mut out, "");
    for (key, title) in [
        ("daemon", "Per-user server"),
        ("wrapperFlags", "Wrapper flags"),
        ("guardRecovery", "Guard recovery"),
    ] {
        push(&mut out, &format!("**{title}:**"));
        push(&mut out, "");
        for rule in h[key].as_array().into_iter().flatten() {
            push(&mut out, &format!("- {}", prose_of(rule)));
        }
        push(&mut out, "");
    }
    push(&mut out, "| environment | meaning |");
    push(&mut out, "|---|---|");
    for e in h["environment"].as_array().into_iter().flatten() {
        push(
            &mut out,
            &format!(
                "| `{}` | {} |",
                text(&e["name"]),
                cell(&prose_of(&e["description"]))
            ),
        );
    }
    push(&mut out, README_END);
    out
}

/// Escape what would break a table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

/// Replace the marked CLI section of `readme` with `rendered`; `None` when
/// the markers are missing.
pub fn replace_contract_section(readme: &str, rendered: &str) -> Option<String> {
    let start = readme.find(README_START)?;
    let end = start + readme[start..].find(README_END)? + README_END.len();
    let end = if readme[end..].starts_with('\n') {
        end + 1
    } else {
        end
    };
    Some(format!(
        "{}{}{}",
        &readme[..start],
        rendered,
        &readme[end..]
    ))
}
