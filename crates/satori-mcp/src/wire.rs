//! Conversions from engine values to the wire shapes of the tool contract, and the small
//! builders every handler shares (hints, warnings, timestamps, staleness).

use std::path::Path;

use serde_json::{Value, json};

use satori_core::layout::Fingerprint;
use satori_core::util::{iso8601, now_ms};

/// A runnable next step: `{tool, args}`.
pub fn hint(tool: &str, args: Value) -> Value {
    json!({ "tool": tool, "args": args })
}

/// `manage_index` with `action` on `path`.
pub fn manage_hint(action: &str, path: &str) -> Value {
    hint(
        satori_protocol::MANAGE_INDEX,
        json!({ "action": action, "path": path }),
    )
}

/// `read_file` of a span.
pub fn read_hint(abs_path: &str, start: u32, end: u32) -> Value {
    hint(
        satori_protocol::READ_FILE,
        json!({ "path": abs_path, "start_line": start, "end_line": end }),
    )
}

/// Sorted, de-duplicated warnings (`None` when empty, so the key is omitted).
pub fn warnings(mut w: Vec<String>) -> Option<Vec<String>> {
    w.sort();
    w.dedup();
    (!w.is_empty()).then_some(w)
}

/// The wire form of a fingerprint.
pub fn fingerprint(fp: &Fingerprint) -> Value {
    serde_json::to_value(fp).unwrap_or(Value::Null)
}

/// ISO-8601 form of epoch milliseconds.
pub fn time(ms: u64) -> String {
    iso8601(ms)
}

/// `fresh` (< 30 min), `aging` (< 24 h), `stale`, or `unknown`.
pub fn staleness(indexed_at_ms: u64) -> &'static str {
    if indexed_at_ms == 0 {
        return "unknown";
    }
    let age = now_ms().saturating_sub(indexed_at_ms);
    if age < 30 * 60 * 1000 {
        "fresh"
    } else if age < 24 * 3600 * 1000 {
        "aging"
    } else {
        "stale"
    }
}

/// A path as the user should see it in messages and hints.
pub fn display(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// Inserts `key: value` into a JSON object when `value` is not `None`/null.
pub fn put(obj: &mut Value, key: &str, value: impl serde::Serialize) {
    if let (Some(map), Ok(v)) = (obj.as_object_mut(), serde_json::to_value(value))
        && !v.is_null()
    {
        map.insert(key.to_string(), v);
    }
}
