//! One handler per tool. Each parses its arguments through the contract (which yields the
//! one-line invalid-arguments error), asks the engine, and answers with an envelope type of
//! `satori-protocol`, filled through `to_proto`.

mod call_graph;
mod file_outline;
mod gate;
mod lines;
mod list_codebases;
mod manage_index;
mod navigation;
mod read_file;
mod search;
mod source;

use std::path::{Path, PathBuf};

use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use satori_protocol::{InvalidArguments, ToolParams};
use serde::Serialize;

use crate::session::Session;
use crate::syncs::Caller;

/// Routes a validated tool name to its handler.
/// `caller` carries the request's cancellation and progress channel to the handlers that
/// do long work.
pub(crate) fn dispatch(
    session: &Session,
    name: &str,
    args: Option<&JsonObject>,
    caller: &Caller,
) -> CallToolResult {
    match name {
        satori_protocol::LIST_CODEBASES => {
            with_args(name, args, |p| list_codebases::handle(session, p))
        }
        satori_protocol::MANAGE_INDEX => {
            with_args(name, args, |p| manage_index::handle(session, p, caller))
        }
        satori_protocol::SEARCH_CODEBASE => {
            with_args(name, args, |p| search::handle(session, p, caller))
        }
        satori_protocol::FILE_OUTLINE => {
            with_args(name, args, |p| file_outline::handle(session, p))
        }
        satori_protocol::CALL_GRAPH => {
            with_args(name, args, |p| call_graph::handle(session, p, caller))
        }
        satori_protocol::READ_FILE => with_args(name, args, |p| read_file::handle(session, p)),
        _ => text(format!("Error: unknown tool '{name}'."), true),
    }
}

fn with_args<P: ToolParams>(
    name: &str,
    args: Option<&JsonObject>,
    f: impl FnOnce(P) -> CallToolResult,
) -> CallToolResult {
    match satori_protocol::parse_tool_args::<P>(name, args) {
        Ok(p) => f(p),
        Err(e) => invalid(e),
    }
}

/// A result whose `structuredContent` is `answer` (and whose text is its JSON). The envelope
/// types serialize infallibly (string keys, finite numbers); should that ever break, the
/// caller gets an error result naming the tool's answer instead of a panic.
pub(crate) fn reply<T: Serialize>(answer: &T, is_error: bool) -> CallToolResult {
    match serde_json::to_value(answer) {
        Ok(value) => envelope(value, is_error),
        Err(e) => text(format!("Error: cannot encode the answer: {e}"), true),
    }
}

/// A result whose text is the JSON of `value`, also given as `structuredContent`.
pub(crate) fn envelope(value: serde_json::Value, is_error: bool) -> CallToolResult {
    // Compact: agents read this text as tokens, and indentation is a third of them.
    let text = value.to_string();
    let mut r = if is_error {
        CallToolResult::error(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::success(vec![ContentBlock::text(text)])
    };
    r.structured_content = Some(value);
    r
}

/// A plain-text result.
pub(crate) fn text(text: impl Into<String>, is_error: bool) -> CallToolResult {
    let block = ContentBlock::text(text.into());
    if is_error {
        CallToolResult::error(vec![block])
    } else {
        CallToolResult::success(vec![block])
    }
}

/// The one-line invalid-arguments result.
pub(crate) fn invalid(e: InvalidArguments) -> CallToolResult {
    text(e.to_string(), true)
}

/// The one-line invalid-arguments result for a problem found by a handler.
pub(crate) fn invalid_field(tool: &str, field: &str, problem: &str) -> CallToolResult {
    text(
        format!("Error: Invalid arguments for '{tool}'. {field}: {problem}"),
        true,
    )
}

/// Checks that `path` is absolute; the contract requires it so answers never depend on the
/// server's working directory.
pub(crate) fn require_absolute(tool: &str, path: &str) -> Result<PathBuf, CallToolResult> {
    let p = Path::new(path);
    if p.is_absolute() {
        Ok(normalize(p))
    } else {
        Err(invalid_field(
            tool,
            "path",
            &format!("must be an absolute path, got '{path}'"),
        ))
    }
}

/// Resolves `.`/`..` lexically and drops a trailing separator (without touching the disk).
pub(crate) fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The canonical form of an existing path, else its normalized form (a deleted directory can
/// still be tracked).
pub(crate) fn canonical_or_normal(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| normalize(p))
}
