//! Command-line grammar.
//!
//! Hand-written because the grammar is partly dynamic: any word that is not a
//! reserved command is a tool name, and in wrapper mode the flags after it
//! come from that tool's `inputSchema`, known only after `tools/list`. Parsing
//! therefore stops at the tool name and keeps the rest verbatim in
//! [`Command::Wrapper`] for the schema-driven stage.
//!
//! Global flags go before the command; for the reserved commands, which take
//! no tool flags, they are also accepted after it. After a tool name in
//! wrapper mode every flag is the tool's (`search_codebase --debug` is the
//! tool's `debug`), except `--args-json`/`--args-file`, which select raw
//! arguments and then admit no tool flag beside them.

use std::path::PathBuf;
use std::time::Duration;

use satori_client::GuardRecovery;

use crate::exit::ErrorCode;
use crate::report::Failure;

pub const DEFAULT_STARTUP_TIMEOUT_MS: u64 = 180_000;
pub const DEFAULT_CALL_TIMEOUT_MS: u64 = 600_000;

/// Where a human summary goes in addition to the JSON on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// stdout JSON only.
    Json,
    /// stdout JSON, plus a human summary on stderr.
    Text,
}

/// Flags that apply to every command.
#[derive(Debug, Clone, PartialEq)]
pub struct Globals {
    pub startup_timeout: Duration,
    pub call_timeout: Duration,
    pub format: Format,
    pub debug: bool,
    /// `--guard-recovery`; `None` defers to the environment variable.
    pub guard_recovery: Option<GuardRecovery>,
}

impl Default for Globals {
    fn default() -> Self {
        Globals {
            startup_timeout: Duration::from_millis(DEFAULT_STARTUP_TIMEOUT_MS),
            call_timeout: Duration::from_millis(DEFAULT_CALL_TIMEOUT_MS),
            format: Format::Json,
            debug: false,
            guard_recovery: None,
        }
    }
}

/// Where `tool call` takes its arguments from.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgsSource {
    /// No arguments given: call with `{}`.
    Empty,
    /// `--args-json '<json>'`
    Inline(String),
    /// `--args-json @-`
    Stdin,
    /// `--args-file <path>`
    File(PathBuf),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Help,
    Version,
    ToolsList,
    ToolCall {
        tool: String,
        args: ArgsSource,
    },
    /// `satori-cli <tool> [flags...]`: flags are interpreted against the schema later.
    Wrapper {
        tool: String,
        flags: Vec<String>,
    },
    /// `satori-cli <tool> --help`: the tool's flags, from its schema.
    ToolHelp {
        tool: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    pub globals: Globals,
    pub command: Command,
}

/// Parse the arguments after the program name.
pub fn parse(args: &[String]) -> Result<Invocation, Failure> {
    let mut globals = Globals::default();
    let mut rest = Cursor { args, pos: 0 };

    // Leading global flags; `--help` / `--version` are accepted as the usual aliases.
    let word = loop {
        let Some(token) = rest.next() else {
            return Err(usage("missing command; run 'satori-cli help'"));
        };
        match token {
            "--help" | "-h" => break "help",
            "--version" | "-V" => break "version",
            t if t.starts_with('-') => parse_global(t, &mut rest, &mut globals)?,
            t => break t,
        }
    };

    let command = match word {
        "help" => {
            only_globals(&mut rest, &mut globals)?;
            Command::Help
        }
        "version" => {
            only_globals(&mut rest, &mut globals)?;
            Command::Version
        }
        "tools" => match rest.next() {
            Some("list") => {
                only_globals(&mut rest, &mut globals)?;
                Command::ToolsList
            }
            Some(other) => {
                return Err(usage(&format!(
                    "unknown subcommand 'tools {other}'; expected 'tools list'"
                )));
            }
            None => return Err(usage("missing subcommand; expected 'tools list'")),
        },
        "tool" => match rest.next() {
            Some("call") => parse_tool_call(&mut rest, &mut globals)?,
            Some(other) => {
                return Err(usage(&format!(
                    "unknown subcommand 'tool {other}'; expected 'tool call <tool>'"
                )));
            }
            None => return Err(usage("missing subcommand; expected 'tool call <tool>'")),
        },
        tool => parse_wrapper(tool, rest.remaining())?,
    };
    Ok(Invocation { globals, command })
}

struct Cursor<'a> {
    args: &'a [String],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn next(&mut self) -> Option<&'a str> {
        let token = self.args.get(self.pos)?;
        self.pos += 1;
        Some(token.as_str())
    }

    fn remaining(&self) -> &'a [String] {
        &self.args[self.pos.min(self.args.len())..]
    }
}

/// Split `--flag=value` into its parts; `--flag` gives no inline value.
fn split_flag(token: &str) -> (&str, Option<&str>) {
    match token.split_once('=') {
        Some((name, value)) => (name, Some(value)),
        None => (token, None),
    }
}

/// The value of a flag: inline after `=`, or the next argument.
fn flag_value<'a>(
    name: &str,
    inline: Option<&'a str>,
    rest: &mut Cursor<'a>,
) -> Result<&'a str, Failure> {
    inline
        .or_else(|| rest.next())
        .ok_or_else(|| usage(&format!("{name} needs a value")))
}

fn parse_global<'a>(
    token: &'a str,
    rest: &mut Cursor<'a>,
    globals: &mut Globals,
) -> Result<(), Failure> {
    let (name, inline) = split_flag(token);
    match name {
        "--startup-timeout-ms" => {
            globals.startup_timeout = parse_millis(name, flag_value(name, inline, rest)?)?;
        }
        "--call-timeout-ms" => {
            globals.call_timeout = parse_millis(name, flag_value(name, inline, rest)?)?;
        }
        "--format" => {
            globals.format = match flag_value(name, inline, rest)? {
                "json" => Format::Json,
                "text" => Format::Text,
                other => {
                    return Err(usage(&format!(
                        "--format must be 'json' or 'text', not '{other}'"
                    )));
                }
            };
        }
        "--debug" if inline.is_none() => globals.debug = true,
        "--guard-recovery" => {
            let value = flag_value(name, inline, rest)?;
            globals.guard_recovery = Some(
                value
                    .parse()
                    .map_err(|e| usage(&format!("--guard-recovery {e}")))?,
            );
        }
        _ => return Err(usage(&format!("unknown flag '{name}'"))),
    }
    Ok(())
}

fn parse_millis(name: &str, value: &str) -> Result<Duration, Failure> {
    match value.parse::<u64>() {
        Ok(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
        _ => Err(usage(&format!(
            "{name} must be a positive integer (milliseconds), not '{value}'"
        ))),
    }
}

fn only_globals(rest: &mut Cursor<'_>, globals: &mut Globals) -> Result<(), Failure> {
    while let Some(token) = rest.next() {
        if !token.starts_with('-') {
            return Err(usage(&format!("unexpected argument '{token}'")));
        }
        parse_global(token, rest, globals)?;
    }
    Ok(())
}

fn parse_tool_call(rest: &mut Cursor<'_>, globals: &mut Globals) -> Result<Command, Failure> {
    let tool = match rest.next() {
        Some(t) if !t.starts_with('-') => t.to_owned(),
        _ => {
            return Err(usage(
                "missing tool name; expected 'tool call <tool> --args-json <json>'",
            ));
        }
    };
    let mut sources = Vec::new();
    while let Some(token) = rest.next() {
        let (name, inline) = split_flag(token);
        match name {
            "--args-json" => match flag_value(name, inline, rest)? {
                "@-" => sources.push(ArgsSource::Stdin),
                json => sources.push(ArgsSource::Inline(json.to_owned())),
            },
            "--args-file" => sources.push(ArgsSource::File(PathBuf::from(flag_value(
                name, inline, rest,
            )?))),
            _ if GLOBAL_FLAGS.contains(&name) => parse_global(token, rest, globals)?,
            _ if token.starts_with('-') => {
                return Err(usage(&format!(
                    "'tool call' takes the tool arguments from --args-json or --args-file, \
                     not flags like '{name}'; for flags use wrapper mode: \
                     satori-cli {tool} {name} ..."
                )));
            }
            _ => return Err(usage(&format!("unexpected argument '{token}'"))),
        }
    }
    if sources.len() > 1 {
        return Err(usage(
            "give the tool arguments once: one --args-json or one --args-file",
        ));
    }
    let args = sources.pop().unwrap_or(ArgsSource::Empty);
    Ok(Command::ToolCall { tool, args })
}

/// The names [`parse_global`] knows.
const GLOBAL_FLAGS: &[&str] = &[
    "--startup-timeout-ms",
    "--call-timeout-ms",
    "--format",
    "--debug",
    "--guard-recovery",
];

/// `satori-cli <tool> ...`: tool flags for the schema stage, or raw arguments
/// (`--args-json`/`--args-file`), never both.
fn parse_wrapper(tool: &str, flags: &[String]) -> Result<Command, Failure> {
    if flags.len() == 1 && matches!(flags[0].as_str(), "--help" | "-h") {
        return Ok(Command::ToolHelp {
            tool: tool.to_owned(),
        });
    }
    let mut sources = Vec::new();
    let mut tool_flags = Vec::new();
    let mut rest = Cursor {
        args: flags,
        pos: 0,
    };
    while let Some(token) = rest.next() {
        let (name, inline) = split_flag(token);
        match name {
            "--args-json" => match flag_value(name, inline, &mut rest)? {
                "@-" => sources.push(ArgsSource::Stdin),
                json => sources.push(ArgsSource::Inline(json.to_owned())),
            },
            "--args-file" => sources.push(ArgsSource::File(PathBuf::from(flag_value(
                name, inline, &mut rest,
            )?))),
            _ => tool_flags.push(token),
        }
    }
    match (sources.len(), tool_flags.first()) {
        (0, _) => Ok(Command::Wrapper {
            tool: tool.to_owned(),
            flags: flags.to_vec(),
        }),
        (1, None) => Ok(Command::ToolCall {
            tool: tool.to_owned(),
            args: sources.remove(0),
        }),
        (1, Some(flag)) => Err(usage(&format!(
            "'{flag}' cannot be combined with --args-json/--args-file: give the arguments \
             either as tool flags or as one JSON object (global flags go before the tool name)"
        ))),
        _ => Err(usage(
            "give the tool arguments once: one --args-json or one --args-file",
        )),
    }
}

fn usage(message: &str) -> Failure {
    Failure::new(ErrorCode::Usage, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(line: &str) -> Result<Invocation, String> {
        let args: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        parse(&args).map_err(|f| f.message)
    }

    fn globals(startup: u64, call: u64, format: Format, debug: bool) -> Globals {
        Globals {
            startup_timeout: Duration::from_millis(startup),
            call_timeout: Duration::from_millis(call),
            format,
            debug,
            guard_recovery: None,
        }
    }

    /// Literal values, not the constants: changing a default is a contract change.
    #[test]
    fn defaults_are_the_documented_ones() {
        assert_eq!(
            Globals::default(),
            globals(180_000, 600_000, Format::Json, false)
        );
    }

    #[test]
    fn accepted_command_lines() {
        let d = Globals::default();
        let cases = [
            ("help", d.clone(), Command::Help),
            ("--help", d.clone(), Command::Help),
            ("-V", d.clone(), Command::Version),
            ("tools list", d.clone(), Command::ToolsList),
            (
                "--debug --format text tools list --call-timeout-ms=5",
                globals(DEFAULT_STARTUP_TIMEOUT_MS, 5, Format::Text, true),
                Command::ToolsList,
            ),
            (
                "--startup-timeout-ms 7 tool call t --args-json {\"a\":1}",
                globals(7, DEFAULT_CALL_TIMEOUT_MS, Format::Json, false),
                Command::ToolCall {
                    tool: "t".into(),
                    args: ArgsSource::Inline("{\"a\":1}".into()),
                },
            ),
            (
                "tool call t --args-json=@-",
                d.clone(),
                Command::ToolCall {
                    tool: "t".into(),
                    args: ArgsSource::Stdin,
                },
            ),
            (
                "tool call t --args-file a.json --debug",
                globals(
                    DEFAULT_STARTUP_TIMEOUT_MS,
                    DEFAULT_CALL_TIMEOUT_MS,
                    Format::Json,
                    true,
                ),
                Command::ToolCall {
                    tool: "t".into(),
                    args: ArgsSource::File("a.json".into()),
                },
            ),
            (
                "tool call t",
                d.clone(),
                Command::ToolCall {
                    tool: "t".into(),
                    args: ArgsSource::Empty,
                },
            ),
            (
                "--debug search_codebase --query x --debug",
                globals(
                    DEFAULT_STARTUP_TIMEOUT_MS,
                    DEFAULT_CALL_TIMEOUT_MS,
                    Format::Json,
                    true,
                ),
                Command::Wrapper {
                    tool: "search_codebase".into(),
                    flags: vec!["--query".into(), "x".into(), "--debug".into()],
                },
            ),
            (
                "--guard-recovery auto tools list",
                Globals {
                    guard_recovery: Some(GuardRecovery::Auto),
                    ..d.clone()
                },
                Command::ToolsList,
            ),
            (
                "tools list --guard-recovery=never",
                Globals {
                    guard_recovery: Some(GuardRecovery::Never),
                    ..d.clone()
                },
                Command::ToolsList,
            ),
            (
                "read_file --args-json {\"path\":\"/a\"}",
                d.clone(),
                Command::ToolCall {
                    tool: "read_file".into(),
                    args: ArgsSource::Inline("{\"path\":\"/a\"}".into()),
                },
            ),
            (
                "read_file --args-file=a.json",
                d.clone(),
                Command::ToolCall {
                    tool: "read_file".into(),
                    args: ArgsSource::File("a.json".into()),
                },
            ),
            (
                "read_file --help",
                d.clone(),
                Command::ToolHelp {
                    tool: "read_file".into(),
                },
            ),
            (
                "tool call t --args-json {} --call-timeout-ms 9",
                globals(DEFAULT_STARTUP_TIMEOUT_MS, 9, Format::Json, false),
                Command::ToolCall {
                    tool: "t".into(),
                    args: ArgsSource::Inline("{}".into()),
                },
            ),
        ];
        for (line, want_globals, want_command) in cases {
            let got = check(line).unwrap_or_else(|e| panic!("{line}: {e}"));
            assert_eq!(
                got,
                Invocation {
                    globals: want_globals,
                    command: want_command
                },
                "{line}"
            );
        }
    }

    #[test]
    fn rejected_command_lines() {
        let cases = [
            ("", "missing command"),
            ("--bogus tools list", "unknown flag '--bogus'"),
            ("tools list --bogus=1", "unknown flag '--bogus'"),
            ("tools", "expected 'tools list'"),
            ("tools show", "unknown subcommand 'tools show'"),
            ("tool call", "missing tool name"),
            ("tool call --args-json {}", "missing tool name"),
            ("tool call t --args-json", "--args-json needs a value"),
            (
                "tool call t --args-json {} --args-file f",
                "give the tool arguments once",
            ),
            ("tool call t extra", "unexpected argument 'extra'"),
            ("--call-timeout-ms 0 tools list", "positive integer"),
            ("--call-timeout-ms abc tools list", "positive integer"),
            ("--format yaml tools list", "'json' or 'text'"),
            ("version now", "unexpected argument 'now'"),
            (
                "--guard-recovery sometimes tools list",
                "must be 'auto' or 'never'",
            ),
            // Raw arguments and tool flags do not mix, in either mode.
            (
                "read_file --path /a --args-json {}",
                "'--path' cannot be combined with --args-json",
            ),
            (
                "read_file --args-file a.json --debug",
                "'--debug' cannot be combined with --args-json",
            ),
            (
                "read_file --args-json {} --args-json {}",
                "give the tool arguments once",
            ),
            (
                "tool call read_file --path /a",
                "'tool call' takes the tool arguments from --args-json",
            ),
        ];
        for (line, fragment) in cases {
            let err = check(line).expect_err(line);
            assert!(err.contains(fragment), "{line}: {err}");
        }
    }
}
