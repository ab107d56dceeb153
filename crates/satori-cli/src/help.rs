//! `help` and `version`: machine-readable on stdout, human text on stderr.

use serde_json::{Value, json};

use crate::args::{DEFAULT_CALL_TIMEOUT_MS, DEFAULT_STARTUP_TIMEOUT_MS};
use satori_client::{PROTOCOL_VERSION, SERVER_BIN_ENV};

pub const NAME: &str = "satori-cli";
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

pub fn version() -> Value {
    json!({"name": NAME, "version": VERSION, "protocolVersion": PROTOCOL_VERSION})
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
             "description": "Call a tool with a JSON object of arguments (default {}); print the tools/call result."},
            {"usage": "satori-cli <tool> [flags]", "description": "Wrapper mode: arguments as flags derived from the tool's inputSchema."},
            {"usage": "satori-cli help", "description": "Print this document."},
            {"usage": "satori-cli version", "description": "Print name, version and MCP protocol version."}
        ],
        "globalFlags": [
            {"flag": "--startup-timeout-ms", "value": "<ms>", "default": DEFAULT_STARTUP_TIMEOUT_MS,
             "description": "Budget for starting the server and the MCP handshake."},
            {"flag": "--call-timeout-ms", "value": "<ms>", "default": DEFAULT_CALL_TIMEOUT_MS,
             "description": "Budget for each request; also the minimum wait for manage_index create|reindex."},
            {"flag": "--format", "value": "json|text", "default": "json",
             "description": "text adds a human summary on stderr; stdout stays JSON."},
            {"flag": "--debug", "description": "Diagnostics on stderr."}
        ],
        "environment": [
            {"name": SERVER_BIN_ENV, "description": "Path of the satori server executable; default: 'satori' next to satori-cli."}
        ],
        "exitCodes": {
            "0": "success",
            "1": "tool error: isError, an envelope status other than ok, or an index build that did not complete",
            "2": "usage error",
            "3": "startup timeout, call timeout, transport or protocol failure",
            "130": "interrupted"
        },
        "errorTokens": ["E_USAGE", "E_SCHEMA_UNSUPPORTED", "E_PROTOCOL_FAILURE", "E_STARTUP_TIMEOUT", "E_CALL_TIMEOUT", "E_TOOL_ERROR"]
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
           satori-cli help | version\n\
         \n\
         global flags: --startup-timeout-ms <ms> --call-timeout-ms <ms> --format json|text --debug\n\
         stdout carries one JSON document; exit codes: 0 ok, 1 tool error, 2 usage, 3 transport"
    )
}
