//! The server's stdout guard as a client sees it: the variable that sets it and the modes a
//! client starts with or falls back to.
//!
//! A leaf module because both the retry policy (`recovery`) and the error that reports a
//! failed retry (`error`) name these; neither has to reach into the other for them.

/// Environment variable of the server's stdout guard mode.
pub const STDOUT_GUARD_ENV: &str = satori_protocol::env::CLI_STDOUT_GUARD;

/// The guard mode a server in cli mode uses when the variable is unset.
pub const DEFAULT_GUARD_MODE: &str = "drop";

/// The guard mode a recovery retry uses.
pub const RECOVERY_GUARD_MODE: &str = "off";
