//! The environment of a shared server (`satori --http`, `--socket`) as a client sees it:
//! where it is, its token, and whether to start a server when nothing answers there.
//!
//! A leaf module because both the client that connects (`client`) and the error that reports
//! a refused token (`error`) name these; neither has to reach into the other for them.

/// Where a shared server is (`http://…/mcp` or `unix:///path`), when no `--endpoint` is given.
pub const ENDPOINT_ENV: &str = "SATORI_ENDPOINT";
/// The bearer token of the shared server, when it was started with one.
pub const ENDPOINT_TOKEN_ENV: &str = "SATORI_ENDPOINT_TOKEN";
/// `1` to start a server for the call when nothing answers at the endpoint (`0`: fail).
pub const ENDPOINT_FALLBACK_ENV: &str = "SATORI_ENDPOINT_FALLBACK";
