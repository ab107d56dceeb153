//! Index build progress on stderr while `manage_index create|reindex` waits.
//!
//! On a terminal one line is redrawn in place; otherwise (logs, CI) a plain
//! line is printed whenever the text changes, so a ten-minute build does not
//! produce a line every poll.

use serde_json::Value;

use crate::output;
use satori_client::envelope;

pub struct Progress {
    on_terminal: bool,
    last: Option<String>,
}

impl Progress {
    pub fn new(on_terminal: bool) -> Progress {
        Progress {
            on_terminal,
            last: None,
        }
    }

    /// Show the state carried by one `manage_index status` result.
    pub fn update(&mut self, result: &Value) {
        let Some(line) = describe(result) else {
            return;
        };
        if self.last.as_deref() == Some(line.as_str()) {
            return;
        }
        if self.on_terminal {
            // \r + "erase line" redraws in place without scrolling.
            output::stderr_raw(&format!("\r\x1b[2K{line}"));
        } else {
            output::stderr_line(&line);
        }
        self.last = Some(line);
    }

    /// End the redrawn line so later output starts on a fresh one.
    pub fn finish(&mut self) {
        if self.on_terminal && self.last.take().is_some() {
            output::stderr_raw("\n");
        }
    }
}

/// `indexing 42% (420/1000 files) phase=chunking`, leaving out what the
/// server did not report; `None` when the result is not an indexing state.
pub fn describe(result: &Value) -> Option<String> {
    let env = envelope(result)?;
    if env.get("state").and_then(Value::as_str) != Some("indexing") {
        return None;
    }
    let progress = env.get("progress");
    let get = |key: &str| progress.and_then(|p| p.get(key));
    let mut line = String::from("indexing");
    if let Some(pct) = get("percentage").and_then(Value::as_f64) {
        if pct.fract() == 0.0 {
            line.push_str(&format!(" {pct:.0}%"));
        } else {
            line.push_str(&format!(" {pct:.1}%"));
        }
    }
    if let (Some(done), Some(total)) = (
        get("filesDone").and_then(Value::as_u64),
        get("filesTotal").and_then(Value::as_u64),
    ) {
        line.push_str(&format!(" ({done}/{total} files)"));
    }
    if let Some(phase) = get("phase").and_then(Value::as_str) {
        line.push_str(&format!(" phase={phase}"));
    }
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn status(env: Value) -> Value {
        json!({"content":[{"type":"text","text":env.to_string()}],"isError":false})
    }

    #[test]
    fn progress_lines() {
        let cases = [
            (
                json!({"state":"indexing","progress":{"percentage":42,"filesDone":420,"filesTotal":1000,"phase":"chunking"}}),
                Some("indexing 42% (420/1000 files) phase=chunking"),
            ),
            (
                json!({"state":"indexing","progress":{"percentage":12.5}}),
                Some("indexing 12.5%"),
            ),
            (json!({"state":"indexing"}), Some("indexing")),
            (json!({"state":"indexed"}), None),
        ];
        for (env, want) in cases {
            assert_eq!(describe(&status(env.clone())).as_deref(), want, "{env}");
        }
    }
}
