//! Satori's fuzz targets: every parser and loader that takes bytes from outside the process,
//! as one function of the bytes that must never panic (and, where a property is cheap to
//! state, must keep it). They run three ways:
//!
//! - under libFuzzer, coverage-guided, through the thin wrappers in `fuzz/fuzz_targets/`
//!   (`scripts/fuzz.sh SECONDS`, nightly Rust and cargo-fuzz; not part of every CI run);
//! - in this crate's test (`tests/targets.rs`, every CI run, stable Rust): each target on its
//!   seeds (`fuzz/corpus/<target>/`), on every input a fuzzing run found to crash it
//!   (`fuzz/regressions/<target>/`), and on a fixed number of seeded mutations of the seeds;
//! - by hand: `cargo test -p satori-fuzz` after adding a file to either folder.

use std::sync::OnceLock;

use serde_json::Value;

/// A target: its name (the folder of its seeds and regressions, and its libFuzzer binary)
/// and the function.
pub type Target = (&'static str, fn(&[u8]));

/// Every target, in the order the test runs them.
pub const TARGETS: &[Target] = &[
    ("message_policy", message_policy),
    ("tool_arguments", tool_arguments),
    ("query_operators", query_operators),
    ("schema_flags", schema_flags),
    ("state_loaders", state_loaders),
    ("http_front", http_front),
];

/// The server's JSON-RPC message policy, one message per line of `data`: what is handed to
/// rmcp, answered or dropped; every answer it writes itself is a JSON-RPC error object.
pub fn message_policy(data: &[u8]) {
    satori_mcp::transport::fuzz_message_policy(data);
}

/// Tool-argument decoding: `data` as JSON arguments, decoded and checked for every tool (the
/// one call the server makes per invocation). A valid answer round-trips through the
/// published schema's validation a second time.
pub fn tool_arguments(data: &[u8]) {
    let Ok(args) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    use satori_protocol as p;
    let _ = p::parse_tool_args_value::<p::SearchCodebaseParams>(p::search_codebase::NAME, &args);
    let _ = p::parse_tool_args_value::<p::ManageIndexParams>(p::manage_index::NAME, &args);
    let _ = p::parse_tool_args_value::<p::ReadFileParams>(p::read_file::NAME, &args);
    let _ = p::parse_tool_args_value::<p::FileOutlineParams>(p::file_outline::NAME, &args);
    let _ = p::parse_tool_args_value::<p::CallGraphParams>(p::call_graph::NAME, &args);
    let _ = p::parse_tool_args_value::<p::ListCodebasesParams>(p::list_codebases::NAME, &args);
}

/// The query-operator parser of `search_codebase` (`lang:`, `path:`, `-path:`, `must:`,
/// `exclude:` before the free text): whatever the text, the block it consumed is a prefix of
/// it, and the free text is what follows, trimmed.
pub fn query_operators(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let parsed = satori_core::search::query::parse(&text);
    let _ = parsed.can_rank_without_text();
    let chars = text.chars().count();
    assert!(parsed.prefix_block_chars <= chars, "{parsed:?}");
    let rest: String = text.chars().skip(parsed.prefix_block_chars).collect();
    assert!(rest.contains(parsed.text.as_str()), "{parsed:?}");
}

/// The flags of `satori-cli`'s wrapper mode, derived from a tool's input schema: `data` up to
/// its first newline as a tool entry (`{"name", "inputSchema"}`), else one of the real tools
/// picked by its first byte; the rest, split on newlines, as the command line's flags.
pub fn schema_flags(data: &[u8]) {
    let (head, rest) = match data.iter().position(|b| *b == b'\n') {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let tool = match serde_json::from_slice::<Value>(head) {
        Ok(entry) => entry,
        Err(_) => {
            let tools = real_tools();
            tools[head.first().map_or(0, |b| *b as usize) % tools.len()].clone()
        }
    };
    let Ok(flags) = satori_client::flags::ToolFlags::from_tool(&tool) else {
        return;
    };
    let _ = flags.describe();
    let _ = flags.spellings();
    let text = String::from_utf8_lossy(rest);
    let given: Vec<(&str, Option<&str>)> = text
        .split('\n')
        .filter(|l| !l.is_empty())
        .map(|l| match l.split_once('=') {
            Some((name, value)) => (name.trim_start_matches('-'), Some(value)),
            None => (l.trim_start_matches('-'), None),
        })
        .collect();
    if let Ok(args) = flags.arguments(given.iter().copied()) {
        // What the flags made is an arguments object the server can be sent.
        serde_json::to_vec(&args).expect("the arguments object serializes");
    }
}

/// The loaders of the home's state file and of a generation's manifest, file list and
/// file-list delta: `data` cut at 0xFF bytes into those four files.
pub fn state_loaders(data: &[u8]) {
    let mut parts = data.split(|b| *b == 0xFF);
    let mut next = || parts.next().unwrap_or(&[]);
    let (state, manifest, files, delta) = (next(), next(), next(), next());
    let dir = tempfile::tempdir().expect("a temporary folder");
    satori_core::fuzz_loaders(dir.path(), state, manifest, files, delta);
}

/// The checks in front of the Streamable HTTP transport (Origin, bearer token) on headers
/// made of `data`, and the `--http`/`--socket` command line of its first line.
pub fn http_front(data: &[u8]) {
    satori_mcp::transport::http::fuzz_front(data);
}

/// The published tool entries (`name`, `inputSchema`), as a client lists them.
fn real_tools() -> &'static [Value] {
    static TOOLS: OnceLock<Vec<Value>> = OnceLock::new();
    TOOLS.get_or_init(|| {
        satori_protocol::tools()
            .iter()
            .map(|t| serde_json::json!({"name": t.name, "inputSchema": t.input_schema}))
            .collect()
    })
}
