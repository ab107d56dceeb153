//! A client library for any MCP server: it knows MCP and its transports, never what a
//! server's tools mean.
//!
//! - [`stdio`]: a stdio server spawned as a child process (owned, killed and reaped on every
//!   path), with rmcp's client over its pipes: handshake, tools, resources and prompts under
//!   timeouts, a strict check of the server's stdout, its stderr copied to ours.
//! - [`http`]: one exchange at a time over Streamable HTTP, on TCP or on a Unix socket (a
//!   [`proxy`]'s, or any server's that serves Streamable HTTP there) ([`Conn`]): the
//!   handshake, single requests on a stored session, the server's own requests answered
//!   meanwhile (`ping`, elicitation by a chosen policy), cancellation after a timeout, and
//!   the `DELETE` that ends a session.
//! - [`client`]: session reuse through a session file ([`session`]): [`init`] writes it,
//!   [`Client`] resumes it, refreshing an OAuth token ([`auth`], stored at a [`keyref`])
//!   when the server refuses it.
//! - [`proxy`]: a detached bridge that keeps a stdio server running and serves it on a Unix
//!   socket, so many short-lived processes share one warm server.
//!
//! State is only in files the caller names, written atomically under locks that fail fast
//! ([`files`]). Diagnostics go through [`log`], never to stdout.

pub mod auth;
pub mod client;
mod error;
pub mod files;
pub mod http;
pub mod keyref;
pub mod log;
pub mod proxy;
mod random;
pub mod session;
pub mod stdio;

pub use client::{Client, Options, init};
pub use error::{Error, Result};
pub use http::{ClientInfo, Conn, Elicit, Endpoint, Handshake};
pub use keyref::KeyRef;
pub use session::Session;
pub use stdio::{Spawn, StdioClient};
