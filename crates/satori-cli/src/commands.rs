//! Running a parsed command against the server.
//!
//! Everything that can be checked without the server (arguments, the server
//! path) is checked first, so a usage error never starts a process.

use std::io::{IsTerminal, Read};
use std::time::{Duration, Instant};

use satori_protocol::envelope::Status;
use serde_json::{Map, Value};

use crate::args::{ArgsSource, Command, Format, Globals, Invocation};
use crate::exit::ErrorCode;
use crate::help;
use crate::output::{self, debug};
use crate::progress::Progress;
use crate::report::{Failure, Report};
use crate::wrapper;
use satori_client::flags::ToolFlags;
use satori_client::{
    Classification, Client, Daemon, ENDPOINT_ENV, ENDPOINT_FALLBACK_ENV, GUARD_RECOVERY_ENV,
    GuardRecovery, SpawnOptions, Wire, classify, envelope, first_text, index_state,
    is_index_success, resolve_server_bin, starts_index_build, status, wait_for_index,
};

/// How often a waiting `manage_index create|reindex` polls `status`.
const POLL_EVERY: Duration = Duration::from_millis(500);

/// Resolve the arguments of `tool call` into a JSON object. Runs before the
/// async part because it may block on stdin.
pub fn load_args(source: &ArgsSource) -> Result<Map<String, Value>, Failure> {
    let (text, origin) = match source {
        ArgsSource::Empty => return Ok(Map::new()),
        ArgsSource::Inline(json) => (json.clone(), "--args-json".to_owned()),
        ArgsSource::Stdin => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| usage(format!("cannot read --args-json @- from stdin: {e}")))?;
            (text, "--args-json @- (stdin)".to_owned())
        }
        ArgsSource::File(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| usage(format!("cannot read --args-file {}: {e}", path.display())))?;
            (text, format!("--args-file {}", path.display()))
        }
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(usage(format!(
            "{origin} must be a JSON object, got {}",
            kind(&other)
        ))),
        Err(e) => Err(usage(format!("{origin} is not valid JSON: {e}"))),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn usage(message: String) -> Failure {
    Failure::new(ErrorCode::Usage, message)
}

/// What `execute` needs beyond the parsed command line.
pub enum Prepared {
    /// Answered without a server.
    Done(Report),
    /// Needs the server.
    Remote(Remote),
}

pub enum Remote {
    ToolsList,
    Call {
        tool: String,
        args: Map<String, Value>,
    },
    /// Wrapper mode: the flags become arguments once the schema is known.
    Wrapper {
        tool: String,
        flags: Vec<String>,
    },
    ToolHelp {
        tool: String,
    },
}

impl Remote {
    /// The path a search call is about, as given: the server it is sent to opens that
    /// index while the handshake runs. Read from the raw flags in wrapper mode (before the
    /// schema turns them into arguments), so it is only a hint.
    pub fn search_path(&self) -> Option<String> {
        match self {
            Remote::Call { tool, args } if tool == SEARCH_TOOL => {
                args.get("path").and_then(Value::as_str).map(str::to_owned)
            }
            Remote::Wrapper { tool, flags } if tool == SEARCH_TOOL => flags
                .iter()
                .enumerate()
                .find_map(|(i, f)| match f.strip_prefix("--path") {
                    Some("") => flags.get(i + 1).cloned(),
                    Some(rest) => rest.strip_prefix('=').map(str::to_owned),
                    None => None,
                }),
            _ => None,
        }
    }
}

/// The tool whose calls are worth an early index open.
const SEARCH_TOOL: &str = "search_codebase";

/// Everything that can fail without a server, done synchronously.
pub fn prepare(invocation: &Invocation) -> Prepared {
    match &invocation.command {
        Command::Help => {
            output::stderr_line(&help::help_text());
            Prepared::Done(Report::success(help::help()))
        }
        Command::Version => Prepared::Done(Report::success(help::version())),
        Command::ToolsList => Prepared::Remote(Remote::ToolsList),
        Command::ToolCall { tool, args } => match load_args(args) {
            Ok(args) => Prepared::Remote(Remote::Call {
                tool: tool.clone(),
                args,
            }),
            Err(failure) => Prepared::Done(Report::failure(failure)),
        },
        Command::Wrapper { tool, flags } => Prepared::Remote(Remote::Wrapper {
            tool: tool.clone(),
            flags: flags.clone(),
        }),
        Command::ToolHelp { tool } => Prepared::Remote(Remote::ToolHelp { tool: tool.clone() }),
        Command::DaemonStatus => Prepared::Done(crate::daemon_cmd::status(&invocation.globals)),
        Command::DaemonStop => Prepared::Done(crate::daemon_cmd::stop()),
    }
}

/// The recovery policy: the flag, else `SATORI_CLI_GUARD_RECOVERY`, else never.
pub fn guard_recovery(
    flag: Option<GuardRecovery>,
    env_value: Option<String>,
) -> Result<GuardRecovery, Failure> {
    if let Some(policy) = flag {
        return Ok(policy);
    }
    match env_value.filter(|v| !v.is_empty()) {
        None => Ok(GuardRecovery::Never),
        Some(value) => value
            .parse()
            .map_err(|e| usage(format!("{GUARD_RECOVERY_ENV} {e}"))),
    }
}

/// Whether to start a server when nothing answers at the endpoint: the flag, else
/// `SATORI_ENDPOINT_FALLBACK` (`1` or `0`), else no.
pub fn endpoint_fallback(flag: bool, env_value: Option<String>) -> Result<bool, Failure> {
    if flag {
        return Ok(true);
    }
    match env_value.as_deref().map(str::trim) {
        None | Some("") | Some("0") => Ok(false),
        Some("1") => Ok(true),
        Some(other) => Err(usage(format!(
            "{ENDPOINT_FALLBACK_ENV} must be 1 or 0, not {other:?}"
        ))),
    }
}

/// Run a command that needs the server. The client is shut down (child
/// reaped, stderr drained) before this returns, on every path.
pub async fn execute(globals: &Globals, remote: Remote) -> Report {
    let policy = match guard_recovery(
        globals.guard_recovery,
        std::env::var(GUARD_RECOVERY_ENV).ok(),
    ) {
        Ok(policy) => policy,
        Err(failure) => return Report::failure(failure),
    };
    let endpoint = match globals
        .endpoint
        .clone()
        .or_else(|| std::env::var(ENDPOINT_ENV).ok())
        .filter(|e| !e.trim().is_empty())
    {
        None => None,
        Some(e) => match satori_client::Endpoint::parse(e.trim()) {
            Ok(ep) => Some(ep),
            Err(err) => return Report::failure(usage(err.to_string())),
        },
    };
    let fallback = match endpoint_fallback(
        globals.endpoint_fallback,
        std::env::var(ENDPOINT_FALLBACK_ENV).ok(),
    ) {
        Ok(fallback) => fallback,
        Err(failure) => return Report::failure(failure),
    };
    // A shared server needs no executable here, unless the call may fall back to a child.
    let server_bin = match &endpoint {
        Some(_) if !fallback => std::path::PathBuf::new(),
        _ => match resolve_server_bin() {
            Ok(path) => path,
            Err(e) => return Report::failure(Failure::from_client(&e)),
        },
    };
    debug(
        globals.debug,
        &match &endpoint {
            Some(ep) => format!("shared server: {}; guard recovery: {policy}", ep.shown()),
            None => format!(
                "server executable: {}; guard recovery: {policy}",
                server_bin.display()
            ),
        },
    );

    // With no endpoint, the per-user server (see satori_client::daemon), unless it is off.
    let daemon = match &endpoint {
        Some(_) => None,
        None => match Daemon::from_env(&server_bin, globals.no_daemon) {
            Err(message) => return Report::failure(usage(message)),
            Ok(Ok(daemon)) => Some(daemon),
            Ok(Err(off)) => {
                debug(
                    globals.debug,
                    &format!("no per-user server ({off}): a server for this call"),
                );
                None
            }
        },
    };
    let mut options = SpawnOptions::new(server_bin);
    options.daemon = daemon;
    options.endpoint = endpoint;
    options.endpoint_fallback = fallback;
    options.startup_timeout = globals.startup_timeout;
    options.client_name = help::NAME.to_owned();
    options.client_version = help::VERSION.to_owned();
    options.guard_recovery = policy;
    if let Some(path) = remote.search_path() {
        options
            .env
            .push((satori_protocol::env::PREOPEN.to_owned(), path));
    }

    let mut client = Client::new(options);
    let report = run_remote(globals, &mut client, remote).await;
    let attempts = client.attempts().clone();
    let starts_daemon = client.starts_daemon();
    let started = client.shutdown().await;
    match started {
        Some(Ok(pid)) if starts_daemon => debug(
            globals.debug,
            &format!("started the per-user server (pid {pid}) for the calls that follow"),
        ),
        Some(Err(why)) => output::stderr_line(&format!(
            "satori-cli: the per-user server could not be started ({why}); calls run in servers of their own until it can"
        )),
        _ => {}
    }
    if let Some(why) = &attempts.daemon_recovery {
        output::stderr_line(&format!(
            "[DAEMON_RECOVERY] {why}; the call ran in a server of its own"
        ));
    }
    if globals.debug || attempts.guard_recovery_attempted {
        output::stderr_line(&format!(
            "[GUARD_RECOVERY] {}",
            serde_json::to_string(&attempts).unwrap_or_default()
        ));
    }
    match policy {
        GuardRecovery::Auto => report.with_attempts(&attempts),
        GuardRecovery::Never => report,
    }
}

async fn run_remote(globals: &Globals, client: &mut Client, remote: Remote) -> Report {
    let started = Instant::now();
    if let Err(e) = client.connect().await {
        return Report::failure(Failure::from_client(&e));
    }
    if client.fell_back_to_child() {
        output::stderr_line(&format!(
            "satori-cli: no shared server answers at {}; started a server for this call (--endpoint-fallback)",
            client
                .options()
                .endpoint
                .as_ref()
                .map_or_else(String::new, |e| e.shown())
        ));
    }
    if globals.debug
        && let Some(daemon) = &client.options().daemon
        && (client.attached() || client.starts_daemon())
    {
        debug(
            true,
            &if client.attached() {
                format!(
                    "attached to the per-user server at {} in {} ms",
                    daemon.socket().display(),
                    started.elapsed().as_millis()
                )
            } else {
                format!(
                    "no per-user server answers at {}: this call runs in a server of its own and starts it",
                    daemon.socket().display()
                )
            },
        );
    } else if globals.debug {
        let pid = client
            .pid()
            .map_or_else(|| "?".to_owned(), |p| p.to_string());
        let info = client
            .server_info()
            .map(Value::to_string)
            .unwrap_or_default();
        debug(
            true,
            &format!(
                "server pid {pid} ready in {} ms: {info}",
                started.elapsed().as_millis()
            ),
        );
    }

    let tools = match client.list_tools(globals.call_timeout).await {
        Ok(tools) => tools,
        Err(e) => return Report::failure(Failure::from_client(&e)),
    };
    let (tool, args) = match remote {
        Remote::ToolsList => {
            if globals.format == Format::Text {
                summarize_tools(&tools);
            }
            return Report::success(tools);
        }
        Remote::Call { tool, args } => {
            if let Err(failure) = find_tool(&tools, &tool) {
                return Report::failure(failure);
            }
            (tool, args)
        }
        Remote::Wrapper { tool, flags } => {
            let parsed = find_tool(&tools, &tool).and_then(|entry| {
                ToolFlags::from_tool(entry)
                    .and_then(|spec| wrapper::arguments(&spec, &flags))
                    .map_err(|e| Failure::from_client(&e))
            });
            match parsed {
                Ok(args) => (tool, args),
                Err(failure) => return Report::failure(failure),
            }
        }
        Remote::ToolHelp { tool } => {
            let spec = find_tool(&tools, &tool).and_then(|entry| {
                ToolFlags::from_tool(entry).map_err(|e| Failure::from_client(&e))
            });
            return match spec {
                Ok(spec) => Report::success(spec.describe()),
                Err(failure) => Report::failure(failure),
            };
        }
    };
    debug(
        globals.debug,
        &format!("calling {tool} with {}", Value::Object(args.clone())),
    );
    call(globals, client, &tool, args).await
}

/// The `tools/list` entry of `name`; an unknown name is a usage error that
/// lists the ones that exist.
fn find_tool<'a>(tools: &'a Value, name: &str) -> Result<&'a Value, Failure> {
    let list = tools
        .get("tools")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if let Some(tool) = list
        .iter()
        .find(|t| t.get("name").and_then(Value::as_str) == Some(name))
    {
        return Ok(tool);
    }
    let names: Vec<&str> = list
        .iter()
        .filter_map(|t| t.get("name").and_then(Value::as_str))
        .collect();
    Err(usage(format!(
        "unknown command or tool '{name}'; commands: tools, tool, help, version; tools: {}",
        names.join(", ")
    )))
}

async fn call(
    globals: &Globals,
    client: &mut Client,
    tool: &str,
    args: Map<String, Value>,
) -> Report {
    let waits = starts_index_build(tool, &args);
    let arg_path = args.get("path").and_then(Value::as_str).map(str::to_owned);

    let started = Instant::now();
    let result = match client.call_tool(tool, args, globals.call_timeout).await {
        Ok(result) => result,
        Err(e) => return Report::failure(Failure::from_client(&e)),
    };
    debug(
        globals.debug,
        &format!("{tool} answered in {} ms", started.elapsed().as_millis()),
    );

    if let Classification::ToolError(error) = classify(&result) {
        summarize_call(globals, &result);
        return Report::tool_error(result, &error, None);
    }
    if !waits {
        summarize_call(globals, &result);
        return Report::success(result);
    }

    // The server may have normalized the path; poll the one it reports.
    let path = envelope(&result)
        .and_then(|e| e.get("path").and_then(Value::as_str).map(str::to_owned))
        .or(arg_path);
    let Some(path) = path else {
        return Report::failure(usage(
            "manage_index create|reindex needs a 'path' argument to wait for".to_owned(),
        ));
    };
    debug(globals.debug, &format!("waiting for the index of {path}"));
    let mut progress = Progress::new(std::io::stderr().is_terminal());
    let waited = wait_for_index(client, &path, POLL_EVERY, globals.call_timeout, |status| {
        progress.update(status)
    })
    .await;
    progress.finish();
    let last = match waited {
        Ok(last) => last,
        Err(e) => return Report::failure(Failure::from_client(&e)),
    };

    summarize_call(globals, &last);
    if is_index_success(&last) {
        return Report::success(last);
    }
    let state = index_state(&last).map_or_else(|| "unknown".to_owned(), |s| s.to_string());
    let error = match classify(&last) {
        Classification::ToolError(error) => error,
        // status ok, but the build ended in a state that is not searchable.
        Classification::Ok => {
            let env = envelope(&last).unwrap_or_default();
            let text = |key: &str| env.get(key).and_then(Value::as_str).map(str::to_owned);
            satori_client::ToolError {
                status: status(&last).unwrap_or(Wire::Known(Status::Error)),
                reason: text("reason"),
                hint_status: None,
                message: text("message").or_else(|| text("humanText")),
            }
        }
    };
    Report::tool_error(last, &error, Some(&state))
}

/// `--format text`: the tool's own human text, on stderr.
fn summarize_call(globals: &Globals, result: &Value) {
    if globals.format != Format::Text {
        return;
    }
    let env = envelope(result);
    let human = env
        .as_ref()
        .and_then(|e| e.get("humanText").or_else(|| e.get("message")))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| match env {
            Some(_) => None,
            None => first_text(result).map(str::to_owned),
        });
    output::stderr_line(human.as_deref().unwrap_or("(the result has no text)"));
}

fn summarize_tools(tools: &Value) {
    let list = tools
        .get("tools")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    output::stderr_line(&format!("{} tools:", list.len()));
    for tool in &list {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or("?");
        let description = tool
            .get("description")
            .and_then(Value::as_str)
            .and_then(|d| d.lines().next())
            .unwrap_or("");
        output::stderr_line(&format!("  {name}  {description}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[track_caller]
    fn check(remote: Remote, expected: Option<&str>) {
        assert_eq!(remote.search_path().as_deref(), expected);
    }

    #[test]
    fn search_path_hint() {
        let wrapper = |tool: &str, flags: &[&str]| Remote::Wrapper {
            tool: tool.to_owned(),
            flags: flags.iter().map(|f| f.to_string()).collect(),
        };
        let call = |tool: &str, args: Value| Remote::Call {
            tool: tool.to_owned(),
            args: args.as_object().unwrap().clone(),
        };
        check(
            wrapper("search_codebase", &["--query=x", "--path", "/r"]),
            Some("/r"),
        );
        check(
            wrapper("search_codebase", &["--path=/r", "--query", "x"]),
            Some("/r"),
        );
        check(wrapper("search_codebase", &["--path"]), None);
        check(wrapper("search_codebase", &["--pathological", "x"]), None);
        check(wrapper("read_file", &["--path", "/r/a.rs"]), None);
        check(
            call("search_codebase", json!({"path": "/r", "query": "x"})),
            Some("/r"),
        );
        check(call("search_codebase", json!({"path": 3})), None);
        check(call("manage_index", json!({"path": "/r"})), None);
        check(Remote::ToolsList, None);
    }
}
