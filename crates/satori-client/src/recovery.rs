//! Guard recovery: when to retry a failed request with the server's stdout
//! guard turned off, and what to report about it.
//!
//! A server whose stdout guard is broken (an older build, a wrapper script, a
//! misconfigured environment) can corrupt or swallow protocol bytes. The
//! escape hatch is `SATORI_CLI_STDOUT_GUARD=off`. This module decides, from
//! the failure alone, whether one retry with that setting is safe:
//!
//! - only failures where no parseable answer arrived (garbage on stdout, the
//!   stream broke, a timeout) are retried; an answer of any kind (`isError`,
//!   a non-ok envelope, a JSON-RPC error) is the server speaking, and a retry
//!   could only repeat it;
//! - a request that may have a side effect (`manage_index`) is retried only if
//!   it failed before it was sent, i.e. while connecting;
//! - a failure that a different guard cannot fix (no executable, exec refused)
//!   is not retried;
//! - once the guard is off there is nothing left to try.
//!
//! The client applies the decision (see `Client`); keeping it a pure function
//! lets the whole matrix be tested without processes.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::ClientError;
use crate::guard_mode::RECOVERY_GUARD_MODE;

/// Environment variable that selects the CLI's recovery policy.
pub const GUARD_RECOVERY_ENV: &str = satori_protocol::env::CLI_GUARD_RECOVERY;

/// Whether a client may retry once with the stdout guard off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GuardRecovery {
    /// Retry once, for the failures [`should_retry`] allows.
    Auto,
    /// Never retry.
    #[default]
    Never,
}

impl FromStr for GuardRecovery {
    type Err = String;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value {
            "auto" => Ok(GuardRecovery::Auto),
            "never" => Ok(GuardRecovery::Never),
            other => Err(format!("must be 'auto' or 'never', not '{other}'")),
        }
    }
}

impl fmt::Display for GuardRecovery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            GuardRecovery::Auto => "auto",
            GuardRecovery::Never => "never",
        })
    }
}

/// Where in the life of a request the failure happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage<'a> {
    /// Starting the server and the `initialize` handshake: no request was sent.
    Connect,
    /// `tools/list`: read-only.
    ListTools,
    /// `tools/call` of the named tool, after it was sent.
    Call(&'a str),
}

/// Tools whose calls change state; a retry after dispatch could repeat the
/// change (a second build, a second clear).
const SIDE_EFFECT_TOOLS: &[&str] = &[satori_protocol::MANAGE_INDEX];

/// The retry decision. `guard_mode` is the mode the failed attempt ran with.
pub fn should_retry(
    policy: GuardRecovery,
    guard_mode: &str,
    stage: Stage<'_>,
    error: &ClientError,
) -> bool {
    if policy == GuardRecovery::Never || guard_mode == RECOVERY_GUARD_MODE {
        return false;
    }
    let guard_could_cause_it = matches!(
        error,
        ClientError::Protocol(_) | ClientError::StartupTimeout(_) | ClientError::CallTimeout { .. }
    );
    if !guard_could_cause_it {
        return false;
    }
    match stage {
        Stage::Connect | Stage::ListTools => true,
        Stage::Call(tool) => !SIDE_EFFECT_TOOLS.contains(&tool),
    }
}

/// What happened to the stdout guard over a client's life; serialized with
/// the field names of the contract.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Attempts {
    /// Server processes started (1, or 2 after a recovery retry).
    pub attempt_count: u32,
    /// A retry with the guard off was made.
    pub guard_recovery_attempted: bool,
    /// That retry produced an answer.
    pub guard_recovery_succeeded: bool,
    /// The guard mode of the current (or last) server process.
    pub effective_guard_mode: String,
    /// Why the call left the per-user server it was attached to (or could not attach to)
    /// for a server process of its own, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub daemon_recovery: Option<String>,
}

impl Attempts {
    pub(crate) fn new(initial_mode: String) -> Attempts {
        Attempts {
            attempt_count: 0,
            guard_recovery_attempted: false,
            guard_recovery_succeeded: false,
            effective_guard_mode: initial_mode,
            daemon_recovery: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn check(policy: GuardRecovery, mode: &str, stage: Stage<'_>, error: ClientError, want: bool) {
        assert_eq!(
            should_retry(policy, mode, stage, &error),
            want,
            "{policy} guard={mode} {stage:?} {error}"
        );
    }

    fn protocol() -> ClientError {
        ClientError::Protocol("server printed non-protocol output on stdout".into())
    }

    #[test]
    fn retry_matrix() {
        use GuardRecovery::{Auto, Never};
        let call_timeout = || ClientError::CallTimeout {
            what: "tools/call x".into(),
            timeout: Duration::from_millis(5),
        };
        let rpc = || ClientError::Rpc {
            code: -32602,
            message: "unknown tool".into(),
            data: None,
        };
        // Retried: transport-class failures before any answer.
        check(Auto, "drop", Stage::Connect, protocol(), true);
        check(
            Auto,
            "drop",
            Stage::Connect,
            ClientError::StartupTimeout(Duration::ZERO),
            true,
        );
        check(Auto, "redirect", Stage::ListTools, protocol(), true);
        check(
            Auto,
            "drop",
            Stage::Call("search_codebase"),
            protocol(),
            true,
        );
        check(Auto, "drop", Stage::Call("read_file"), call_timeout(), true);
        // manage_index: only before dispatch.
        check(Auto, "drop", Stage::Connect, protocol(), true);
        check(Auto, "drop", Stage::Call("manage_index"), protocol(), false);
        check(
            Auto,
            "drop",
            Stage::Call("manage_index"),
            call_timeout(),
            false,
        );
        // An answer is never retried.
        check(Auto, "drop", Stage::Call("search_codebase"), rpc(), false);
        check(Auto, "drop", Stage::ListTools, rpc(), false);
        // Failures a guard cannot cause.
        check(
            Auto,
            "drop",
            Stage::Connect,
            ClientError::ServerNotFound("x".into()),
            false,
        );
        check(
            Auto,
            "drop",
            Stage::Connect,
            ClientError::Spawn {
                path: "x".into(),
                source: std::io::Error::other("exec format error"),
            },
            false,
        );
        check(
            Auto,
            "drop",
            Stage::Call("search_codebase"),
            ClientError::Closed,
            false,
        );
        // Nothing left to try, or not allowed to.
        check(Auto, "off", Stage::Connect, protocol(), false);
        check(Never, "drop", Stage::Connect, protocol(), false);
        check(
            Never,
            "drop",
            Stage::Call("search_codebase"),
            protocol(),
            false,
        );
    }

    #[test]
    fn policy_parses_from_its_two_words_only() {
        assert_eq!("auto".parse(), Ok(GuardRecovery::Auto));
        assert_eq!("never".parse(), Ok(GuardRecovery::Never));
        let err = "Auto".parse::<GuardRecovery>().expect_err("case matters");
        assert_eq!(err, "must be 'auto' or 'never', not 'Auto'");
    }

    #[test]
    fn attempts_serialize_with_contract_names() {
        let attempts = Attempts {
            attempt_count: 2,
            guard_recovery_attempted: true,
            guard_recovery_succeeded: true,
            effective_guard_mode: "off".into(),
            daemon_recovery: None,
        };
        assert_eq!(
            serde_json::to_value(&attempts).expect("serialize"),
            serde_json::json!({"attemptCount":2,"guardRecoveryAttempted":true,
                "guardRecoverySucceeded":true,"effectiveGuardMode":"off"})
        );
    }
}
