//! Reading Satori tool results: success or tool error, and index states.
//!
//! Satori tools answer non-ok situations (`not_ready`, `not_indexed`,
//! `requires_reindex`, ...) with `isError: false` and a JSON envelope whose
//! `status` says what happened, so "did the call succeed" needs both the MCP
//! flag and the envelope. The envelope's `status` and `state` are read into
//! the contract's enums ([`Status`], [`IndexState`]); a value this client
//! does not know (a newer server) is kept as [`Wire::Unknown`] and never
//! counts as success. These helpers work on the `CallToolResult` as JSON so
//! that they apply equally to results that came from elsewhere.

use std::fmt;

use satori_protocol::envelope::{IndexState, Status};
use serde_json::{Map, Value};

/// A value of one of the contract's closed sets as a client reads it: one it
/// knows, or one added to the contract after this client was built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wire<T> {
    Known(T),
    /// Kept verbatim for messages; callers treat it as "not success".
    Unknown(String),
}

impl<T> Wire<T> {
    fn read(text: &str, known: impl Fn(&str) -> Option<T>) -> Wire<T> {
        known(text).map_or_else(|| Wire::Unknown(text.to_owned()), Wire::Known)
    }
}

impl<T: fmt::Display> fmt::Display for Wire<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Wire::Known(value) => value.fmt(f),
            Wire::Unknown(text) => f.write_str(text),
        }
    }
}

/// Outcome of a `tools/call` from an automation point of view.
#[derive(Debug, Clone, PartialEq)]
pub enum Classification {
    Ok,
    ToolError(ToolError),
}

/// What a caller needs to report a tool error.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError {
    /// The envelope `status`, or [`Status::Error`] for an `isError` result
    /// without a non-ok one.
    pub status: Wire<Status>,
    /// The envelope `reason`, when present.
    pub reason: Option<String>,
    /// `hints.status`: the call that shows progress or state, when present.
    pub hint_status: Option<Value>,
    /// A human-readable explanation (`message`, `humanText`, or plain text content).
    pub message: Option<String>,
}

/// The JSON envelope of a tool result: `structuredContent` when it is an
/// object, otherwise `content[0].text` when that parses as a JSON object.
pub fn envelope(result: &Value) -> Option<Map<String, Value>> {
    if let Some(Value::Object(map)) = result.get("structuredContent") {
        return Some(map.clone());
    }
    match serde_json::from_str::<Value>(first_text(result)?) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    }
}

/// `content[0].text`, if the first content block is text.
pub fn first_text(result: &Value) -> Option<&str> {
    result.get("content")?.get(0)?.get("text")?.as_str()
}

/// The envelope's top-level `status`, when it has one.
pub fn status(result: &Value) -> Option<Wire<Status>> {
    status_of(&envelope(result)?)
}

fn status_of(envelope: &Map<String, Value>) -> Option<Wire<Status>> {
    let text = envelope.get("status")?.as_str()?;
    Some(Wire::read(text, Status::from_wire))
}

/// Decide whether a `CallToolResult` (as JSON) is a success: not `isError`,
/// and a `status`, if there is one, of `ok`. A result that is not an
/// envelope (plain text, a JSON array) succeeds unless it is `isError`.
pub fn classify(result: &Value) -> Classification {
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    let env = envelope(result);
    let status = env.as_ref().and_then(status_of);

    let failed = is_error
        || status
            .as_ref()
            .is_some_and(|s| *s != Wire::Known(Status::Ok));
    if !failed {
        return Classification::Ok;
    }

    let field = |name: &str| {
        env.as_ref()
            .and_then(|e| e.get(name))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let message = field("message")
        .or_else(|| field("humanText"))
        .or_else(|| match env {
            // The text *is* the envelope; repeating it as a message adds nothing.
            Some(_) => None,
            None => first_text(result).map(str::to_owned),
        });
    Classification::ToolError(ToolError {
        status: match status {
            // An `isError` result whose envelope still says ok (or says
            // nothing) is an error all the same.
            Some(Wire::Known(Status::Ok)) | None => Wire::Known(Status::Error),
            Some(other) => other,
        },
        reason: field("reason"),
        hint_status: env
            .as_ref()
            .and_then(|e| e.get("hints"))
            .and_then(|h| h.get("status"))
            .cloned(),
        message,
    })
}

/// The top-level `state` of a `manage_index` envelope, when it has one.
pub fn index_state(result: &Value) -> Option<Wire<IndexState>> {
    let text = envelope(result)?.get("state")?.as_str()?.to_owned();
    Some(Wire::read(&text, IndexState::from_wire))
}

/// Whether a status result ends the wait: every known state but `indexing`.
/// A state this client does not know ends it too, as does a result with no
/// `state` at all (an error envelope, a server that does not report one):
/// polling again could not be trusted to make progress.
pub fn is_terminal(result: &Value) -> bool {
    match index_state(result) {
        Some(Wire::Known(state)) => state.is_terminal(),
        Some(Wire::Unknown(_)) | None => true,
    }
}

/// Whether a terminal status result means the index is complete: an ok
/// envelope in a searchable state (`indexed`, or `sync_completed` after a
/// sync, which is just as finished).
pub fn is_index_success(result: &Value) -> bool {
    classify(result) == Classification::Ok
        && matches!(index_state(result), Some(Wire::Known(state)) if state.is_searchable())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text_result(envelope: Value, is_error: bool) -> Value {
        json!({"content":[{"type":"text","text": envelope.to_string()}], "isError": is_error})
    }

    fn check(name: &str, result: Value, want: Classification) {
        assert_eq!(classify(&result), want, "{name}");
    }

    fn known(status: Status) -> Wire<Status> {
        Wire::Known(status)
    }

    fn tool_error(
        status: Wire<Status>,
        reason: Option<&str>,
        hint: Option<Value>,
    ) -> Classification {
        Classification::ToolError(ToolError {
            status,
            reason: reason.map(Into::into),
            hint_status: hint,
            message: None,
        })
    }

    #[test]
    fn classification_table() {
        let hint = json!({"tool":"manage_index","args":{"action":"status","path":"/r"}});
        check(
            "ok envelope in text",
            text_result(json!({"status":"ok"}), false),
            Classification::Ok,
        );
        check(
            "plain text is a success",
            json!({"content":[{"type":"text","text":"repo-a\nrepo-b"}]}),
            Classification::Ok,
        );
        check(
            "json array text is not an envelope",
            json!({"content":[{"type":"text","text":"[1,2]"}]}),
            Classification::Ok,
        );
        check(
            "not_ready with hint",
            text_result(
                json!({"status":"not_ready","reason":"indexing","hints":{"status":hint}}),
                false,
            ),
            tool_error(
                known(Status::NotReady),
                Some("indexing"),
                Some(hint.clone()),
            ),
        );
        check(
            "structuredContent wins over text",
            json!({"content":[{"type":"text","text":"{\"status\":\"ok\"}"}],
                   "structuredContent":{"status":"requires_reindex","reason":"fingerprint_mismatch"}}),
            tool_error(
                known(Status::RequiresReindex),
                Some("fingerprint_mismatch"),
                None,
            ),
        );
        check(
            "isError with ok envelope",
            text_result(json!({"status":"ok"}), true),
            tool_error(known(Status::Error), None, None),
        );
        check(
            "isError plain text keeps the text as message",
            json!({"content":[{"type":"text","text":"boom"}],"isError":true}),
            Classification::ToolError(ToolError {
                status: known(Status::Error),
                reason: None,
                hint_status: None,
                message: Some("boom".into()),
            }),
        );
        check(
            "envelope message is surfaced",
            text_result(json!({"status":"blocked","message":"nope"}), false),
            Classification::ToolError(ToolError {
                status: known(Status::Blocked),
                reason: None,
                hint_status: None,
                message: Some("nope".into()),
            }),
        );
    }

    /// A status or state from a newer server is never taken for success.
    #[test]
    fn unknown_values_are_not_success() {
        check(
            "unknown status",
            text_result(json!({"status":"throttled","reason":"busy"}), false),
            tool_error(Wire::Unknown("throttled".into()), Some("busy"), None),
        );
        let result = text_result(json!({"status":"ok","state":"compacting"}), false);
        assert_eq!(
            index_state(&result),
            Some(Wire::Unknown("compacting".into()))
        );
        assert!(is_terminal(&result));
        assert!(!is_index_success(&result));
        assert_eq!(
            Wire::<Status>::Unknown("throttled".into()).to_string(),
            "throttled"
        );
        assert_eq!(
            Wire::Known(IndexState::SyncCompleted).to_string(),
            "sync_completed"
        );
    }

    #[test]
    fn index_states() {
        let cases = [
            (json!({"status":"ok","state":"indexing"}), false, false),
            (json!({"status":"ok","state":"indexed"}), true, true),
            (json!({"status":"ok","state":"sync_completed"}), true, true),
            (json!({"status":"ok","state":"indexfailed"}), true, false),
            (
                json!({"status":"not_indexed","state":"not_indexed"}),
                true,
                false,
            ),
            (json!({"status":"error"}), true, false),
        ];
        for (env, terminal, success) in cases {
            let result = text_result(env.clone(), false);
            assert_eq!(is_terminal(&result), terminal, "{env}");
            assert_eq!(is_index_success(&result), success, "{env}");
        }
    }
}
