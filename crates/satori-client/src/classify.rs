//! Reading Satori tool results: success or tool error, and index states.
//!
//! Satori tools answer non-ok situations (`not_ready`, `not_indexed`,
//! `requires_reindex`, ...) with `isError: false` and a JSON envelope whose
//! `status` says what happened, so "did the call succeed" needs both the MCP
//! flag and the envelope. These helpers work on the `CallToolResult` as JSON
//! so that they apply equally to results that came from elsewhere.

use serde_json::{Map, Value};

/// Outcome of a `tools/call` from an automation point of view.
#[derive(Debug, Clone, PartialEq)]
pub enum Classification {
    Ok,
    ToolError(ToolError),
}

/// What a caller needs to report a tool error.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError {
    /// The envelope `status`, or `"error"` for an `isError` result without one.
    pub status: String,
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

/// Decide whether a `CallToolResult` (as JSON) is a success.
pub fn classify(result: &Value) -> Classification {
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    let env = envelope(result);
    let status = env
        .as_ref()
        .and_then(|e| e.get("status"))
        .and_then(Value::as_str);

    let failed = is_error || status.is_some_and(|s| s != "ok");
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
            // An `isError` result whose envelope still says ok is an error all the same.
            Some(s) if s != "ok" => s.to_owned(),
            _ => "error".to_owned(),
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

/// The top-level `state` of a `manage_index status` envelope.
pub fn index_state(result: &Value) -> Option<String> {
    envelope(result)?
        .get("state")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// States in which an index is complete and searchable.
pub const SUCCESS_STATES: &[&str] = &["indexed", "sync_completed"];

/// Whether a status result ends the wait. Everything except `indexing` does:
/// a result with no `state` at all (an error envelope, a server that does not
/// report one) is terminal too, because polling it again cannot make progress.
pub fn is_terminal(result: &Value) -> bool {
    index_state(result).as_deref() != Some("indexing")
}

/// Whether a terminal status result means the index was built successfully.
pub fn is_index_success(result: &Value) -> bool {
    classify(result) == Classification::Ok
        && index_state(result).is_some_and(|s| SUCCESS_STATES.contains(&s.as_str()))
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

    fn tool_error(status: &str, reason: Option<&str>, hint: Option<Value>) -> Classification {
        Classification::ToolError(ToolError {
            status: status.into(),
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
            tool_error("not_ready", Some("indexing"), Some(hint.clone())),
        );
        check(
            "structuredContent wins over text",
            json!({"content":[{"type":"text","text":"{\"status\":\"ok\"}"}],
                   "structuredContent":{"status":"requires_reindex","reason":"fingerprint_mismatch"}}),
            tool_error("requires_reindex", Some("fingerprint_mismatch"), None),
        );
        check(
            "isError with ok envelope",
            text_result(json!({"status":"ok"}), true),
            tool_error("error", None, None),
        );
        check(
            "isError plain text keeps the text as message",
            json!({"content":[{"type":"text","text":"boom"}],"isError":true}),
            Classification::ToolError(ToolError {
                status: "error".into(),
                reason: None,
                hint_status: None,
                message: Some("boom".into()),
            }),
        );
        check(
            "envelope message is surfaced",
            text_result(json!({"status":"blocked","message":"nope"}), false),
            Classification::ToolError(ToolError {
                status: "blocked".into(),
                reason: None,
                hint_status: None,
                message: Some("nope".into()),
            }),
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
