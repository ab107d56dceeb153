//! Command-line grammar of the fixed surface, parsed by clap (derive).
//!
//! The grammar is partly dynamic: any word that is not a reserved command is
//! a tool name, and in wrapper mode the flags after it come from that tool's
//! `inputSchema`, known only after `tools/list`. clap therefore takes a tool
//! name as an external subcommand and keeps the rest verbatim in
//! [`Command::Wrapper`] for the schema-driven stage (`wrapper`, clap's
//! builder API), except that `--args-json`/`--args-file` (raw arguments) are
//! picked out here, so raw arguments are read and checked before any server
//! starts.
//!
//! Global flags go before the command; for the reserved commands, which take
//! no tool flags, they are also accepted after it. After a tool name in
//! wrapper mode every flag is the tool's (`search_codebase --debug` is the
//! tool's `debug`).
//!
//! clap never prints or exits here: its errors become [`Failure`]s with our
//! own messages (see [`usage_error`]), so usage errors keep exit 2, the
//! `E_USAGE` token and the one JSON error document.

use std::path::PathBuf;
use std::time::Duration;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Args, Parser, Subcommand, ValueEnum};
use satori_client::GuardRecovery;

use crate::exit::ErrorCode;
use crate::report::Failure;

pub const DEFAULT_STARTUP_TIMEOUT_MS: u64 = 180_000;
pub const DEFAULT_CALL_TIMEOUT_MS: u64 = 600_000;

/// Where a human summary goes in addition to the JSON on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
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
    /// `--endpoint`: a shared server to talk to; `None` defers to `SATORI_ENDPOINT`.
    pub endpoint: Option<String>,
    /// `--endpoint-fallback`; `false` defers to `SATORI_ENDPOINT_FALLBACK`.
    pub endpoint_fallback: bool,
    /// `--no-daemon`: a server for this call only, not the per-user one (as
    /// `SATORI_DAEMON=off`).
    pub no_daemon: bool,
}

impl Default for Globals {
    fn default() -> Self {
        Globals {
            startup_timeout: Duration::from_millis(DEFAULT_STARTUP_TIMEOUT_MS),
            call_timeout: Duration::from_millis(DEFAULT_CALL_TIMEOUT_MS),
            format: Format::Json,
            debug: false,
            guard_recovery: None,
            endpoint: None,
            endpoint_fallback: false,
            no_daemon: false,
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
    /// `satori-cli daemon status`: the per-user servers of this home.
    DaemonStatus,
    /// `satori-cli daemon stop`: ends them.
    DaemonStop,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    pub globals: Globals,
    pub command: Command,
}

/// The fixed surface, as clap sees it. Help and version are our own JSON
/// documents, so clap's generated ones are switched off.
#[derive(Debug, Parser)]
#[command(
    name = "satori-cli",
    no_binary_name = true,
    disable_help_flag = true,
    disable_version_flag = true,
    disable_help_subcommand = true,
    allow_external_subcommands = true,
    args_override_self = true
)]
struct Cli {
    #[command(flatten)]
    globals: GlobalArgs,
    /// The usual alias of `help`.
    #[arg(short = 'h', long = "help")]
    help: bool,
    /// The usual alias of `version`.
    #[arg(short = 'V', long = "version")]
    version: bool,
    #[command(subcommand)]
    command: Option<Reserved>,
}

/// The global flags; `help.rs` documents them.
#[derive(Debug, Args)]
struct GlobalArgs {
    #[arg(long, global = true, value_name = "ms", value_parser = millis)]
    startup_timeout_ms: Option<Duration>,
    #[arg(long, global = true, value_name = "ms", value_parser = millis)]
    call_timeout_ms: Option<Duration>,
    #[arg(long, global = true, value_name = "json|text")]
    format: Option<Format>,
    #[arg(long, global = true)]
    debug: bool,
    #[arg(long, global = true, value_name = "auto|never")]
    guard_recovery: Option<GuardRecovery>,
    #[arg(long, global = true, value_name = "url")]
    endpoint: Option<String>,
    #[arg(long, global = true)]
    endpoint_fallback: bool,
    #[arg(long, global = true)]
    no_daemon: bool,
}

#[derive(Debug, Subcommand)]
enum Reserved {
    Tools {
        #[command(subcommand)]
        command: Option<ToolsCommand>,
    },
    Tool {
        #[command(subcommand)]
        command: Option<ToolCommand>,
    },
    Daemon {
        #[command(subcommand)]
        command: Option<DaemonCommand>,
    },
    Help,
    Version,
    /// Any other word is a tool name; the words after it are the tool's.
    #[command(external_subcommand)]
    Wrapper(Vec<String>),
}

#[derive(Debug, Subcommand)]
enum ToolsCommand {
    List,
}

#[derive(Debug, Subcommand)]
enum DaemonCommand {
    Status,
    Stop,
}

#[derive(Debug, Subcommand)]
enum ToolCommand {
    Call(CallArgs),
}

#[derive(Debug, Args)]
struct CallArgs {
    tool: Option<String>,
    /// `--args-json`, possibly repeated (refused after parsing, with our message).
    #[arg(long = "args-json", value_name = "json", allow_hyphen_values = true)]
    args_json: Vec<String>,
    #[arg(long = "args-file", value_name = "path", allow_hyphen_values = true)]
    args_file: Vec<PathBuf>,
    /// Tool flags and stray words, collected to be refused with a pointer to
    /// wrapper mode rather than a bare "unknown flag".
    #[arg(allow_hyphen_values = true, num_args = 0.., hide = true)]
    rest: Vec<String>,
}

/// Parse the arguments after the program name.
pub fn parse(args: &[String]) -> Result<Invocation, Failure> {
    let cli = Cli::try_parse_from(args).map_err(|e| usage_error(&e, args))?;
    let globals = cli.globals.resolve();
    let command = match (cli.command, cli.help, cli.version) {
        (None, true, _) => Command::Help,
        (None, false, true) => Command::Version,
        (None, false, false) => return Err(usage("missing command; run 'satori-cli help'")),
        // `--help tools list` and the like: the alias is the command.
        (Some(command), true, _) | (Some(command), false, true) => {
            let word = match command {
                Reserved::Wrapper(words) => words.into_iter().next().unwrap_or_default(),
                Reserved::Tools { .. } => "tools".to_owned(),
                Reserved::Tool { .. } => "tool".to_owned(),
                Reserved::Daemon { .. } => "daemon".to_owned(),
                Reserved::Help => "help".to_owned(),
                Reserved::Version => "version".to_owned(),
            };
            return Err(usage(&format!("unexpected argument '{word}'")));
        }
        (Some(Reserved::Help), ..) => Command::Help,
        (Some(Reserved::Version), ..) => Command::Version,
        (Some(Reserved::Tools { command }), ..) => match command {
            Some(ToolsCommand::List) => Command::ToolsList,
            None => return Err(usage("missing subcommand; expected 'tools list'")),
        },
        (Some(Reserved::Daemon { command }), ..) => match command {
            Some(DaemonCommand::Status) => Command::DaemonStatus,
            Some(DaemonCommand::Stop) => Command::DaemonStop,
            None => {
                return Err(usage(
                    "missing subcommand; expected 'daemon status' or 'daemon stop'",
                ));
            }
        },
        (Some(Reserved::Tool { command }), ..) => match command {
            Some(ToolCommand::Call(call)) => call.into_command()?,
            None => return Err(usage("missing subcommand; expected 'tool call <tool>'")),
        },
        (Some(Reserved::Wrapper(words)), ..) => wrapper(words)?,
    };
    Ok(Invocation { globals, command })
}

impl GlobalArgs {
    fn resolve(self) -> Globals {
        let defaults = Globals::default();
        Globals {
            startup_timeout: self.startup_timeout_ms.unwrap_or(defaults.startup_timeout),
            call_timeout: self.call_timeout_ms.unwrap_or(defaults.call_timeout),
            format: self.format.unwrap_or(defaults.format),
            debug: self.debug,
            guard_recovery: self.guard_recovery,
            endpoint: self.endpoint,
            endpoint_fallback: self.endpoint_fallback,
            no_daemon: self.no_daemon,
        }
    }
}

impl CallArgs {
    fn into_command(self) -> Result<Command, Failure> {
        let Some(tool) = self.tool else {
            return Err(usage(
                "missing tool name; expected 'tool call <tool> --args-json <json>'",
            ));
        };
        if let Some(first) = self.rest.first() {
            return Err(usage(&if first.starts_with('-') {
                let name = first.split_once('=').map_or(first.as_str(), |(n, _)| n);
                format!(
                    "'tool call' takes the tool arguments from --args-json or --args-file, \
                     not flags like '{name}'; for flags use wrapper mode: \
                     satori-cli {tool} {name} ..."
                )
            } else {
                format!("unexpected argument '{first}'")
            }));
        }
        let args = one_source(self.args_json, self.args_file)?;
        Ok(Command::ToolCall { tool, args })
    }
}

/// The single arguments source of a command, if any.
fn one_source(json: Vec<String>, files: Vec<PathBuf>) -> Result<ArgsSource, Failure> {
    let mut sources: Vec<ArgsSource> = json
        .into_iter()
        .map(|text| match text.as_str() {
            "@-" => ArgsSource::Stdin,
            _ => ArgsSource::Inline(text),
        })
        .chain(files.into_iter().map(ArgsSource::File))
        .collect();
    if sources.len() > 1 {
        return Err(usage(
            "give the tool arguments once: one --args-json or one --args-file",
        ));
    }
    Ok(sources.pop().unwrap_or(ArgsSource::Empty))
}

/// `satori-cli <tool> ...`: tool flags for the schema stage, or raw arguments
/// (`--args-json`/`--args-file`), never both. `words` starts with the tool name.
fn wrapper(words: Vec<String>) -> Result<Command, Failure> {
    let mut words = words.into_iter();
    let tool = words.next().unwrap_or_default();
    let flags: Vec<String> = words.collect();
    if let [only] = flags.as_slice()
        && matches!(only.as_str(), "--help" | "-h")
    {
        return Ok(Command::ToolHelp { tool });
    }
    // The tool's own flags are known only from its schema, so this is a scan
    // for the two raw-argument flags rather than a clap parse: clap cannot
    // collect unknown flags interleaved with known ones (a positional that
    // takes hyphenated words swallows every word after it).
    let mut json = Vec::new();
    let mut files = Vec::new();
    let mut tool_flags = Vec::new();
    let mut words = flags.iter();
    while let Some(word) = words.next() {
        let (name, inline) = word
            .split_once('=')
            .map_or((word.as_str(), None), |(n, v)| (n, Some(v)));
        let sink = match name {
            "--args-json" => &mut json,
            "--args-file" => &mut files,
            _ => {
                tool_flags.push(word);
                continue;
            }
        };
        match inline.or_else(|| words.next().map(String::as_str)) {
            Some(value) => sink.push(value.to_owned()),
            None => return Err(usage(&format!("{name} needs a value"))),
        }
    }
    if json.is_empty() && files.is_empty() {
        return Ok(Command::Wrapper { tool, flags });
    }
    let args = one_source(json, files.into_iter().map(PathBuf::from).collect())?;
    match tool_flags.first() {
        None => Ok(Command::ToolCall { tool, args }),
        Some(flag) => Err(usage(&format!(
            "'{flag}' cannot be combined with --args-json/--args-file: give the arguments \
             either as tool flags or as one JSON object (global flags go before the tool name)"
        ))),
    }
}

fn millis(value: &str) -> Result<Duration, String> {
    match value.parse::<u64>() {
        Ok(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
        _ => Err(format!(
            "must be a positive integer (milliseconds), not '{value}'"
        )),
    }
}

/// A clap error as our usage failure, worded as the contract's messages.
/// `args` are the words clap parsed (to name the command an unknown
/// subcommand was given to).
pub fn usage_error(error: &clap::Error, args: &[String]) -> Failure {
    usage(&clap_message(error, args))
}

/// The message of a clap error in our wording; clap's own rendering for the
/// kinds our grammar cannot produce.
pub fn clap_message(error: &clap::Error, args: &[String]) -> String {
    let text = |kind: ContextKind| match error.get(kind) {
        Some(ContextValue::String(s)) => s.clone(),
        _ => String::new(),
    };
    // `--format <json|text>` → `--format`.
    let flag = || {
        text(ContextKind::InvalidArg)
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .trim_end_matches("...")
            .to_owned()
    };
    match error.kind() {
        ErrorKind::UnknownArgument => {
            let arg = text(ContextKind::InvalidArg);
            if arg.starts_with('-') {
                let name = arg.split_once('=').map_or(arg.as_str(), |(n, _)| n);
                format!("unknown flag '{name}'")
            } else {
                format!("unexpected argument '{arg}'")
            }
        }
        ErrorKind::InvalidSubcommand => {
            let word = text(ContextKind::InvalidSubcommand);
            let parent = args
                .iter()
                .position(|a| *a == word)
                .and_then(|i| i.checked_sub(1))
                .map(|i| args[i].as_str());
            match parent {
                Some("tools") => {
                    format!("unknown subcommand 'tools {word}'; expected 'tools list'")
                }
                Some("tool") => {
                    format!("unknown subcommand 'tool {word}'; expected 'tool call <tool>'")
                }
                Some("daemon") => format!(
                    "unknown subcommand 'daemon {word}'; expected 'daemon status' or 'daemon stop'"
                ),
                _ => format!("unexpected argument '{word}'"),
            }
        }
        ErrorKind::InvalidValue => {
            let value = text(ContextKind::InvalidValue);
            if value.is_empty() {
                return format!("{} needs a value", flag());
            }
            let valid: Vec<String> = match error.get(ContextKind::ValidValue) {
                Some(ContextValue::Strings(values)) => {
                    values.iter().map(|v| format!("'{v}'")).collect()
                }
                _ => Vec::new(),
            };
            format!("{} must be {}, not '{value}'", flag(), valid.join(" or "))
        }
        ErrorKind::ValueValidation => match std::error::Error::source(error) {
            Some(reason) => format!("{} {reason}", flag()),
            None => rendered(error),
        },
        _ => rendered(error),
    }
}

/// clap's own one-line rendering, without its `error: ` prefix.
fn rendered(error: &clap::Error) -> String {
    let text = error.render().to_string();
    let line = text.lines().next().unwrap_or_default();
    line.strip_prefix("error: ").unwrap_or(line).to_owned()
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
            endpoint: None,
            endpoint_fallback: false,
            no_daemon: false,
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

    /// clap's own consistency checks (run in debug builds when parsing).
    #[test]
    fn clap_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn accepted_command_lines() {
        let d = Globals::default();
        let cases = [
            ("help", d.clone(), Command::Help),
            ("--help", d.clone(), Command::Help),
            ("-h", d.clone(), Command::Help),
            (
                "--debug --help",
                globals(180_000, 600_000, Format::Json, true),
                Command::Help,
            ),
            ("-V", d.clone(), Command::Version),
            ("--version", d.clone(), Command::Version),
            (
                "version --debug",
                globals(180_000, 600_000, Format::Json, true),
                Command::Version,
            ),
            ("tools list", d.clone(), Command::ToolsList),
            (
                "--debug --format text tools list --call-timeout-ms=5",
                globals(DEFAULT_STARTUP_TIMEOUT_MS, 5, Format::Text, true),
                Command::ToolsList,
            ),
            // The last occurrence of a global flag wins, before or after the command.
            (
                "--call-timeout-ms 5 tools list --call-timeout-ms 7",
                globals(DEFAULT_STARTUP_TIMEOUT_MS, 7, Format::Json, false),
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
            // Wrapper flags reach the schema stage verbatim, dashes and all.
            (
                "search_codebase --query -x --limit=2 --help",
                d.clone(),
                Command::Wrapper {
                    tool: "search_codebase".into(),
                    flags: vec![
                        "--query".into(),
                        "-x".into(),
                        "--limit=2".into(),
                        "--help".into(),
                    ],
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

    /// Whole messages: scripts and people read them, and clap's wording must
    /// not leak through unnoticed.
    #[test]
    fn rejected_command_lines() {
        let cases = [
            ("", "missing command; run 'satori-cli help'"),
            ("--bogus tools list", "unknown flag '--bogus'"),
            ("tools list --bogus=1", "unknown flag '--bogus'"),
            ("-x", "unknown flag '-x'"),
            ("tools", "missing subcommand; expected 'tools list'"),
            (
                "tools show",
                "unknown subcommand 'tools show'; expected 'tools list'",
            ),
            ("tool", "missing subcommand; expected 'tool call <tool>'"),
            (
                "tool show",
                "unknown subcommand 'tool show'; expected 'tool call <tool>'",
            ),
            (
                "tool call",
                "missing tool name; expected 'tool call <tool> --args-json <json>'",
            ),
            (
                "tool call --args-json {}",
                "missing tool name; expected 'tool call <tool> --args-json <json>'",
            ),
            ("tool call t --args-json", "--args-json needs a value"),
            ("--format", "--format needs a value"),
            (
                "tool call t --args-json {} --args-file f",
                "give the tool arguments once: one --args-json or one --args-file",
            ),
            ("tool call t extra", "unexpected argument 'extra'"),
            (
                "--call-timeout-ms 0 tools list",
                "--call-timeout-ms must be a positive integer (milliseconds), not '0'",
            ),
            (
                "--startup-timeout-ms abc tools list",
                "--startup-timeout-ms must be a positive integer (milliseconds), not 'abc'",
            ),
            (
                "--format yaml tools list",
                "--format must be 'json' or 'text', not 'yaml'",
            ),
            ("version now", "unexpected argument 'now'"),
            ("tools list now", "unexpected argument 'now'"),
            ("--help tools list", "unexpected argument 'tools'"),
            (
                "--guard-recovery sometimes tools list",
                "--guard-recovery must be 'auto' or 'never', not 'sometimes'",
            ),
            // Raw arguments and tool flags do not mix, in either mode.
            (
                "read_file --path /a --args-json {}",
                "'--path' cannot be combined with --args-json/--args-file: give the arguments \
                 either as tool flags or as one JSON object (global flags go before the tool name)",
            ),
            (
                "read_file --args-file a.json --debug",
                "'--debug' cannot be combined with --args-json/--args-file: give the arguments \
                 either as tool flags or as one JSON object (global flags go before the tool name)",
            ),
            (
                "read_file --args-json {} --args-json {}",
                "give the tool arguments once: one --args-json or one --args-file",
            ),
            ("read_file --args-json", "--args-json needs a value"),
            (
                "tool call read_file --path /a",
                "'tool call' takes the tool arguments from --args-json or --args-file, not flags \
                 like '--path'; for flags use wrapper mode: satori-cli read_file --path ...",
            ),
        ];
        for (line, want) in cases {
            let err = check(line).expect_err(line);
            assert_eq!(err, want, "{line}");
        }
    }
}
