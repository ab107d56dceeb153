//! What a call hands back to JavaScript: a plain object that is either the MCP result or a
//! failure with the CLI's stable error token.
//!
//! The addon never rejects a promise with a bare message: a failure needs a `code` (the token
//! `satori-cli` prints, so scripts and Node programs branch on the same words), the envelope
//! of a tool error, and the guard-recovery report. Rust builds that object; the package's
//! JavaScript turns `{ok: false}` into an `Error` carrying those properties. Keeping the
//! mapping here, pure, lets every case be tested without Node.

use satori_client::{
    Attempts, Classification, ClientError, ErrorCode, classify, envelope, index_state,
    is_index_success,
};
use serde_json::{Map, Value, json};

/// The stable error tokens, from `satori-client`'s one table (the CLI prints the same).
pub const E_USAGE: &str = ErrorCode::Usage.token();
pub const E_TOOL_ERROR: &str = ErrorCode::ToolError.token();

/// The token a client-library error is reported under: the CLI's (see
/// `satori_client::ErrorCode::of_client_error`).
pub fn token_of(error: &ClientError) -> &'static str {
    ErrorCode::of_client_error(error).token()
}

/// A success: `value` is what the promise resolves to.
pub fn ok(value: Value, attempts: &Attempts) -> Value {
    json!({ "ok": true, "value": value, "recovery": attempts })
}

/// A failure that never reached a tool answer.
pub fn failure(code: &str, message: String, attempts: Option<&Attempts>) -> Value {
    json!({ "ok": false, "code": code, "message": message, "recovery": attempts })
}

/// A client-library error, with the JSON-RPC error's `code` and `data` kept when the server
/// answered with one.
pub fn client_failure(error: &ClientError, attempts: &Attempts) -> Value {
    let mut outcome = failure(token_of(error), error.to_string(), Some(attempts));
    if let ClientError::Rpc { code, data, .. } = error.decisive() {
        outcome["rpcCode"] = json!(code);
        if let Some(data) = data {
            outcome["rpcData"] = data.clone();
        }
    }
    outcome
}

/// A `tools/call` result: a success unless it is `isError` or its envelope's `status` is
/// not `ok` (the CLI's exit 1), in which case the failure carries the whole result, the
/// envelope and the fields a caller branches on.
pub fn tool_result(tool: &str, result: Value, attempts: &Attempts) -> Value {
    let Classification::ToolError(error) = classify(&result) else {
        return ok(result, attempts);
    };
    let mut message = format!("{E_TOOL_ERROR} {tool}: status={}", error.status);
    if let Some(reason) = &error.reason {
        message.push_str(&format!(" reason={reason}"));
    }
    if let Some(text) = &error.message {
        message.push_str(&format!(": {text}"));
    }
    let mut outcome = failure(E_TOOL_ERROR, message, Some(attempts));
    let fields = [
        ("status", Some(json!(error.status.to_string()))),
        ("reason", error.reason.map(Value::String)),
        ("hintStatus", error.hint_status),
        ("envelope", envelope(&result).map(Value::Object)),
        ("result", Some(result)),
    ];
    let object: &mut Map<String, Value> = outcome.as_object_mut().expect("failure is an object");
    for (key, value) in fields {
        if let Some(value) = value {
            object.insert(key.to_owned(), value);
        }
    }
    outcome
}

/// The last status of a waited-for index build: a success only when the index ended
/// searchable (`indexed` or `sync_completed`), as `satori-cli` exits 0 only then.
pub fn index_result(tool: &str, result: Value, attempts: &Attempts) -> Value {
    if is_index_success(&result) {
        return ok(result, attempts);
    }
    let state = index_state(&result).map_or_else(|| "unknown".to_owned(), |s| s.to_string());
    let mut outcome = tool_result(tool, result.clone(), attempts);
    if outcome["ok"] == json!(true) {
        outcome = failure(
            E_TOOL_ERROR,
            format!("{E_TOOL_ERROR} {tool}: the index build ended in state {state}"),
            Some(attempts),
        );
        outcome["state"] = json!(state);
        if let Some(envelope) = envelope(&result) {
            outcome["envelope"] = Value::Object(envelope);
        }
        outcome["result"] = result;
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn attempts() -> Attempts {
        Attempts {
            attempt_count: 1,
            guard_recovery_attempted: false,
            guard_recovery_succeeded: false,
            effective_guard_mode: "drop".into(),
            daemon_recovery: None,
        }
    }

    #[test]
    fn client_errors_get_the_cli_tokens() {
        let check = |error: ClientError, want: &str| assert_eq!(token_of(&error), want, "{error}");
        check(ClientError::ServerNotFound("x".into()), E_USAGE);
        check(ClientError::InvalidFlags("x".into()), E_USAGE);
        check(
            ClientError::SchemaUnsupported("t.p".into()),
            ErrorCode::SchemaUnsupported.token(),
        );
        check(
            ClientError::StartupTimeout(Duration::ZERO),
            ErrorCode::StartupTimeout.token(),
        );
        let timeout = || ClientError::CallTimeout {
            what: "tools/call x".into(),
            timeout: Duration::ZERO,
        };
        check(timeout(), ErrorCode::CallTimeout.token());
        check(
            ClientError::Protocol("garbage".into()),
            ErrorCode::ProtocolFailure.token(),
        );
        check(ClientError::Closed, ErrorCode::ProtocolFailure.token());
        let rpc = ClientError::Rpc {
            code: -32602,
            message: "unknown tool".into(),
            data: None,
        };
        check(rpc, E_TOOL_ERROR);
        // A failed recovery is reported by its last attempt.
        let recovery = ClientError::RecoveryFailed {
            first_mode: "drop".into(),
            first: Box::new(ClientError::Protocol("garbage".into())),
            second: Box::new(timeout()),
        };
        check(recovery, ErrorCode::CallTimeout.token());
    }

    #[test]
    fn tool_results_become_successes_or_tool_errors() {
        let check = |result: Value, want: Value| {
            let got = tool_result("search_codebase", result.clone(), &attempts());
            let mut got = got.as_object().expect("object").clone();
            got.remove("recovery");
            got.remove("result");
            got.remove("value");
            assert_eq!(Value::Object(got), want, "{result}");
        };
        let text =
            |envelope: Value| json!({"content": [{"type": "text", "text": envelope.to_string()}]});
        check(
            text(json!({"status": "ok", "results": []})),
            json!({"ok": true}),
        );
        check(
            json!({"content": [{"type": "text", "text": "plain words"}]}),
            json!({"ok": true}),
        );
        check(
            text(
                json!({"status": "not_indexed", "reason": "missing", "message": "index it first",
                "hints": {"status": {"tool": "manage_index"}}}),
            ),
            json!({"ok": false, "code": E_TOOL_ERROR,
                "message": "E_TOOL_ERROR search_codebase: status=not_indexed reason=missing: index it first",
                "status": "not_indexed", "reason": "missing",
                "hintStatus": {"tool": "manage_index"},
                "envelope": {"status": "not_indexed", "reason": "missing", "message": "index it first",
                    "hints": {"status": {"tool": "manage_index"}}}}),
        );
        check(
            json!({"isError": true, "content": [{"type": "text", "text": "bad path"}]}),
            json!({"ok": false, "code": E_TOOL_ERROR,
                "message": "E_TOOL_ERROR search_codebase: status=error: bad path",
                "status": "error"}),
        );
    }

    #[test]
    fn rpc_errors_keep_their_code_and_data() {
        let error = ClientError::Rpc {
            code: -32602,
            message: "invalid arguments".into(),
            data: Some(json!({"field": "path"})),
        };
        let got = client_failure(&error, &attempts());
        assert_eq!(got["code"], E_TOOL_ERROR);
        assert_eq!(got["rpcCode"], -32602);
        assert_eq!(got["rpcData"], json!({"field": "path"}));
        assert_eq!(
            got["recovery"],
            json!({"attemptCount": 1, "guardRecoveryAttempted": false,
                "guardRecoverySucceeded": false, "effectiveGuardMode": "drop"})
        );
    }
}
