//! The transports the server speaks MCP over. Each one only frames messages; what becomes
//! of a message at the protocol's edge (parse errors, requests before `initialize`, reused
//! ids, nameless calls) is [`policy`], the same on every transport.

mod policy;
mod stdio;

pub use stdio::{LineTransport, MAX_LINE_BYTES};
