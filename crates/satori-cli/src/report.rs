//! What a command produced: the stdout document, the exit status, and the
//! stderr lines that go with them.
//!
//! Commands build a [`Report`] instead of writing anything, so stdout is
//! written exactly once, at the end, by the output module, whatever path the
//! command took.

use serde_json::{Value, json};

use crate::exit::{ErrorCode, Exit, ExitStatus};
use satori_client::{Attempts, ClientError, RECOVERY_GUARD_MODE, ToolError};

/// The `_meta` key under which results carry the guard-recovery record.
pub const ATTEMPTS_META_KEY: &str = "satori/guardRecovery";

/// A failure that is not a tool result: usage, transport, timeouts.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub code: ErrorCode,
    pub message: String,
    /// Extra machine-readable detail for the JSON error object.
    pub detail: Option<Value>,
}

impl Failure {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
            detail: None,
        }
    }

    pub fn from_client(error: &ClientError) -> Failure {
        let code = ErrorCode::of_client_error(error);
        let detail = match error {
            ClientError::Rpc {
                code,
                message,
                data,
                ..
            } => Some(json!({"rpc": {"code": code, "message": message, "data": data}})),
            ClientError::RecoveryFailed {
                first_mode,
                first,
                second,
            } => {
                let attempt = |mode: &str, error: &ClientError| {
                    json!({
                        "guardMode": mode,
                        "code": ErrorCode::of_client_error(error).token(),
                        "message": error.to_string(),
                    })
                };
                Some(json!({"attempts": [
                    attempt(first_mode, first),
                    attempt(RECOVERY_GUARD_MODE, second),
                ]}))
            }
            _ => None,
        };
        Failure {
            code,
            message: error.to_string(),
            detail,
        }
    }
}

/// The complete result of one invocation.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub stdout: Value,
    pub exit: ExitStatus,
    /// Lines for stderr, each starting with a stable token where it is an error.
    pub stderr: Vec<String>,
    /// stdout is our `{"error": ...}` object rather than a server result.
    pub is_failure: bool,
}

impl Report {
    pub fn success(stdout: Value) -> Report {
        Report {
            stdout,
            exit: ExitStatus::Success,
            stderr: Vec::new(),
            is_failure: false,
        }
    }

    /// Record the guard-recovery attempts in the stdout document: under
    /// `error.guardRecovery` in an error object, under `_meta` (the MCP
    /// place for client metadata) in a result.
    pub fn with_attempts(mut self, attempts: &Attempts) -> Report {
        let record = serde_json::to_value(attempts).unwrap_or(Value::Null);
        let slot = if self.is_failure {
            self.stdout.get_mut("error")
        } else {
            if let Value::Object(doc) = &mut self.stdout {
                doc.entry("_meta").or_insert_with(|| json!({}));
            }
            self.stdout.get_mut("_meta")
        };
        // A result that is not an object, or has a non-object `_meta`, is
        // passed through untouched rather than rewritten.
        if let Some(Value::Object(obj)) = slot {
            let key = if self.is_failure {
                "guardRecovery"
            } else {
                ATTEMPTS_META_KEY
            };
            obj.insert(key.to_owned(), record);
        }
        self
    }

    /// A tool answered with a failure: its result still goes to stdout.
    pub fn tool_error(stdout: Value, error: &ToolError, state: Option<&str>) -> Report {
        let mut line = format!(
            "{} status={}",
            ErrorCode::ToolError.token(),
            field(&error.status.to_string())
        );
        if let Some(reason) = &error.reason {
            line.push_str(&format!(" reason={}", field(reason)));
        }
        if let Some(state) = state {
            line.push_str(&format!(" state={}", field(state)));
        }
        if let Some(hint) = &error.hint_status {
            line.push_str(&format!(" hints.status={hint}"));
        }
        let mut stderr = vec![line];
        if let Some(message) = &error.message {
            stderr.push(message.clone());
        }
        Report {
            stdout,
            exit: ErrorCode::ToolError.exit_status(),
            stderr,
            is_failure: false,
        }
    }

    pub fn failure(failure: Failure) -> Report {
        let mut error = json!({"code": failure.code.token(), "message": &failure.message});
        if let (Some(Value::Object(extra)), Value::Object(obj)) = (failure.detail, &mut error) {
            obj.extend(extra);
        }
        let stderr = if failure.code == ErrorCode::ToolError {
            // Keep the `status=` shape of tool errors so one grep handles both.
            vec![
                format!("{} status=error reason=rpc_error", failure.code.token()),
                failure.message,
            ]
        } else {
            vec![format!("{}: {}", failure.code.token(), failure.message)]
        };
        Report {
            stdout: json!({ "error": error }),
            exit: failure.code.exit_status(),
            stderr,
            is_failure: true,
        }
    }
}

/// A `key=value` value: bare when it is a simple word, JSON-quoted otherwise,
/// so the line stays splittable on spaces.
fn field(value: &str) -> String {
    let simple = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | ':'));
    if simple {
        value.to_owned()
    } else {
        Value::from(value).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use satori_client::Wire;
    use satori_protocol::envelope::Status;

    #[test]
    fn tool_error_line_format() {
        let error = ToolError {
            status: Wire::Known(Status::NotReady),
            reason: Some("still indexing".into()),
            hint_status: Some(json!({"tool":"manage_index","args":{"action":"status"}})),
            message: Some("wait".into()),
        };
        let report = Report::tool_error(json!({}), &error, Some("indexing"));
        assert_eq!(
            report.stderr,
            vec![
                r#"E_TOOL_ERROR status=not_ready reason="still indexing" state=indexing hints.status={"tool":"manage_index","args":{"action":"status"}}"#
                    .to_owned(),
                "wait".to_owned(),
            ]
        );
        assert_eq!(report.exit, ExitStatus::ToolError);
    }

    #[test]
    fn failure_object_carries_detail() {
        let report = Report::failure(Failure::from_client(&ClientError::Rpc {
            code: -32602,
            message: "no such tool".into(),
            data: None,
        }));
        assert_eq!(
            report.stdout,
            json!({"error":{"code":"E_TOOL_ERROR","message":"server returned JSON-RPC error -32602: no such tool",
                   "rpc":{"code":-32602,"message":"no such tool","data":null}}})
        );
        assert_eq!(report.exit, ExitStatus::ToolError);
    }
}
