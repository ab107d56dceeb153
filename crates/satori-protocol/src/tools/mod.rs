//! The tools, one module each: its name, title, description, parameter types and the
//! parameter rules a schema cannot express. The registry that lists them is `registry`.

pub mod call_graph;
pub mod file_outline;
pub mod list_codebases;
pub mod manage_index;
pub mod read_file;
pub mod search_codebase;
