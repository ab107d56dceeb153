//! Satori's engine: discover the files of a codebase, cut them into syntax-aware chunks,
//! index them for lexical and dense retrieval, and answer ranked searches.
//!
//! This crate knows nothing of MCP, JSON-RPC, command lines, terminals or Node. It never
//! prints: progress is reported through callbacks and partial failures come back as data.

pub mod chunk;
pub mod dense;
pub mod embed;
pub mod engine;
pub mod error;
pub mod lang;
pub mod layout;
pub mod search;
pub mod state;
pub mod store;
pub mod util;
pub mod walk;

pub use error::{Error, Result};
