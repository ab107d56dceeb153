//! Wrapper mode's command line: the flags after the tool name, parsed by a
//! clap command built at run time (clap's builder API) from the tool's live
//! `inputSchema`.
//!
//! Which flags a tool has, and how flags become its arguments object, is
//! `satori_client::flags`; this module only lets clap split the words into
//! flags and values. Every spelling is its own clap argument, so the
//! spelling typed is known for messages, and clap's value indices give the
//! command-line order back (the last occurrence of a property wins, arrays
//! keep their order).

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Arg, ArgAction, Command, value_parser};
use satori_client::ClientError;
use satori_client::flags::{Takes, ToolFlags};
use serde_json::{Map, Value};

/// The arguments object for `flags` (the words after the tool name).
pub fn arguments(tool: &ToolFlags, flags: &[String]) -> Result<Map<String, Value>, ClientError> {
    let spellings = tool.spellings();
    let mut command = Command::new(tool.tool().to_owned())
        .no_binary_name(true)
        .disable_help_flag(true)
        .disable_version_flag(true);
    for spelling in &spellings {
        let arg = Arg::new(spelling.name.clone())
            .long(spelling.name.clone())
            .action(ArgAction::Append)
            .value_parser(value_parser!(String));
        command = command.arg(match spelling.takes {
            // A value is the next word whatever it looks like: a query may start with `-`.
            Takes::Value | Takes::Repeated => arg.num_args(1).allow_hyphen_values(true),
            // Bare means true; the explicit value keeps the occurrence's position.
            Takes::OptionalValue => arg.num_args(0..=1).default_missing_value("true"),
        });
    }
    let matches = command
        .try_get_matches_from(flags)
        .map_err(|e| refusal(tool, &e))?;

    let mut given: Vec<(usize, &str, &str)> = Vec::new();
    for spelling in &spellings {
        let id = spelling.name.as_str();
        if let (Some(indices), Some(values)) =
            (matches.indices_of(id), matches.get_many::<String>(id))
        {
            given.extend(
                indices
                    .zip(values)
                    .map(|(index, value)| (index, id, value.as_str())),
            );
        }
    }
    given.sort_by_key(|(index, ..)| *index);
    tool.arguments(
        given
            .into_iter()
            .map(|(_, name, value)| (name, Some(value))),
    )
}

/// A clap error, explained by the tool's flags where it is about them.
fn refusal(tool: &ToolFlags, error: &clap::Error) -> ClientError {
    let text = |kind: ContextKind| match error.get(kind) {
        Some(ContextValue::String(s)) => s.clone(),
        _ => String::new(),
    };
    match error.kind() {
        ErrorKind::UnknownArgument => tool.unknown_flag(&text(ContextKind::InvalidArg)),
        _ => ClientError::InvalidFlags(crate::args::clap_message(error, &[])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The fixture of `satori_client::flags`' tests: every shape of the
    /// subset and every unsupported one.
    fn check(line: &str) -> Result<Value, String> {
        let tool: Value = serde_json::from_str(include_str!(
            "../../satori-client/tests/fixtures/demo_tool.json"
        ))
        .expect("fixture is JSON");
        let flags = ToolFlags::from_tool(&tool).map_err(|e| e.to_string())?;
        let args: Vec<String> = shell_words(line);
        arguments(&flags, &args)
            .map(Value::Object)
            .map_err(|e| match e {
                ClientError::InvalidFlags(m) => format!("E_USAGE: {m}"),
                ClientError::SchemaUnsupported(m) => format!("E_SCHEMA_UNSUPPORTED: {m}"),
                other => format!("unexpected {other:?}"),
            })
    }

    /// Split on spaces, keeping single-quoted parts together (enough for these cases).
    fn shell_words(line: &str) -> Vec<String> {
        let mut words = Vec::new();
        let mut current = String::new();
        let mut quoted = false;
        let mut started = false;
        for c in line.chars() {
            match c {
                '\'' => {
                    quoted = !quoted;
                    started = true;
                }
                ' ' if !quoted => {
                    if started {
                        words.push(std::mem::take(&mut current));
                        started = false;
                    }
                }
                c => {
                    current.push(c);
                    started = true;
                }
            }
        }
        if started {
            words.push(current);
        }
        words
    }

    #[test]
    fn accepted_flag_lines() {
        let cases = [
            ("--path /r", json!({"path": "/r"})),
            ("--path=/r", json!({"path": "/r"})),
            // Aliases name one property; the last occurrence wins, in place.
            (
                "--path /r --start_line 3 --start-line 9",
                json!({"path": "/r", "start_line": 9}),
            ),
            (
                "--start-line=1 --path /r --start_line=2",
                json!({"start_line": 2, "path": "/r"}),
            ),
            (
                "--path /r --result-mode raw --resultMode grouped",
                json!({"path": "/r", "resultMode": "grouped"}),
            ),
            // Arrays keep the order given, never sorted.
            (
                "--path /r --tags zeta --tags alpha --tags zeta",
                json!({"path": "/r", "tags": ["zeta", "alpha", "zeta"]}),
            ),
            (
                "--path /r --sizes 3 --sizes=1",
                json!({"path": "/r", "sizes": [3, 1]}),
            ),
            // Booleans: bare, inline, or a following literal.
            ("--path /r --debug", json!({"path": "/r", "debug": true})),
            (
                "--debug false --path /r",
                json!({"debug": false, "path": "/r"}),
            ),
            ("--debug --path /r", json!({"debug": true, "path": "/r"})),
            (
                "--path /r --debug=false",
                json!({"path": "/r", "debug": false}),
            ),
            (
                "--debug=false --path /r --debug",
                json!({"debug": true, "path": "/r"}),
            ),
            // Numbers and typed enums.
            ("--path /r --ratio 0.5", json!({"path": "/r", "ratio": 0.5})),
            ("--path /r --ratio 2", json!({"path": "/r", "ratio": 2})),
            (
                "--path /r --ratio -1.5",
                json!({"path": "/r", "ratio": -1.5}),
            ),
            ("--path /r --level 2", json!({"path": "/r", "level": 2})),
            ("--path /r --label x", json!({"path": "/r", "label": "x"})),
            // A value may start with a dash.
            (
                "--path -weird --label --not-a-flag",
                json!({"path": "-weird", "label": "--not-a-flag"}),
            ),
            // Objects only as -json, under either spelling.
            (
                r#"--path /r --open-symbol-json '{"symbolId": "s1"}'"#,
                json!({"path": "/r", "open_symbol": {"symbolId": "s1"}}),
            ),
            (
                r#"--path /r --open_symbol-json={"symbolId":"s2"}"#,
                json!({"path": "/r", "open_symbol": {"symbolId": "s2"}}),
            ),
        ];
        for (line, want) in cases {
            assert_eq!(check(line), Ok(want), "{line}");
        }
    }

    #[test]
    fn rejected_flag_lines() {
        let cases = [
            ("", "E_USAGE: missing required flag for tool demo: --path"),
            (
                "--start-line 1",
                "E_USAGE: missing required flag for tool demo: --path",
            ),
            (
                "--path /r --bogus 1",
                "E_USAGE: unknown flag --bogus for tool demo; its flags are --path",
            ),
            ("--path", "E_USAGE: --path needs a value"),
            ("/r", "E_USAGE: unexpected argument '/r' for tool demo"),
            (
                "--path /r --start-line ten",
                "E_USAGE: --start-line expects an integer, got 'ten'",
            ),
            (
                "--path /r --ratio NaNx",
                "E_USAGE: --ratio expects a number, got 'NaNx'",
            ),
            (
                "--path /r --result-mode fancy",
                "E_USAGE: --result-mode must be one of grouped, raw, not 'fancy'",
            ),
            (
                "--path /r --level 7",
                "E_USAGE: --level must be one of 1, 2, 3, not '7'",
            ),
            (
                "--path /r --debug=maybe",
                "E_USAGE: --debug expects true or false, got 'maybe'",
            ),
            (
                "--path /r --open-symbol x",
                "E_USAGE: --open-symbol is an object: give it as --open-symbol-json '<json object>'",
            ),
            (
                "--path /r --open-symbol-json [1]",
                "E_USAGE: --open-symbol-json must be a JSON object",
            ),
            (
                "--path /r --open-symbol-json {nope",
                "E_USAGE: --open-symbol-json is not valid JSON",
            ),
            (
                "--path-json {}",
                "E_USAGE: unknown flag --path-json for tool demo: only object properties take a -json flag",
            ),
            (
                "--path /r --choice a",
                "E_SCHEMA_UNSUPPORTED: demo.choice uses oneOf; use --args-json/--args-file",
            ),
            (
                "--path /r --linked a",
                "E_SCHEMA_UNSUPPORTED: demo.linked uses $ref; use --args-json/--args-file",
            ),
            (
                "--path /r --merged a",
                "E_SCHEMA_UNSUPPORTED: demo.merged uses allOf; use --args-json/--args-file",
            ),
            (
                r#"--path /r --labels-json {}"#,
                "E_SCHEMA_UNSUPPORTED: demo.labels uses patternProperties; use --args-json/--args-file",
            ),
            (
                r#"--path /r --deep-json {}"#,
                "E_SCHEMA_UNSUPPORTED: demo.deep is an object that has a nested object inner; use --args-json/--args-file",
            ),
            (
                "--path /r --pairs a",
                "E_SCHEMA_UNSUPPORTED: demo.pairs is an array whose item schema is of type object; use --args-json/--args-file",
            ),
            (
                "--path /r --loose a",
                "E_SCHEMA_UNSUPPORTED: demo.loose has no type; use --args-json/--args-file",
            ),
        ];
        for (line, want) in cases {
            let got = check(line).expect_err(line);
            assert!(got.starts_with(want), "{line}:\n got {got}\nwant {want}");
        }
    }
}
