//! Index build progress on stderr while `manage_index create|reindex` waits.
//!
//! On a terminal a progress bar is redrawn in place; otherwise (logs, CI) a
//! plain line is printed whenever the text changes, so a ten-minute build does
//! not produce a line every poll.

use serde_json::Value;

use crate::output;
use satori_client::{Wire, envelope, index_state};
use satori_protocol::envelope::IndexState;

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
        if let Some(text) = self.next(result) {
            output::stderr_raw(&text);
        }
    }

    /// End the redrawn line so later output starts on a fresh one.
    pub fn finish(&mut self) {
        if let Some(text) = self.end() {
            output::stderr_raw(&text);
        }
    }

    /// What to write for one status result; `None` when nothing changed.
    fn next(&mut self, result: &Value) -> Option<String> {
        let line = describe(result)?;
        let line = match (self.on_terminal, percentage(result)) {
            (true, Some(pct)) => format!("{} {line}", bar(pct)),
            _ => line,
        };
        if self.last.as_deref() == Some(line.as_str()) {
            return None;
        }
        self.last = Some(line.clone());
        Some(if self.on_terminal {
            // \r + "erase line" redraws in place without scrolling.
            format!("\r\x1b[2K{line}")
        } else {
            format!("{line}\n")
        })
    }

    fn end(&mut self) -> Option<String> {
        let drawn = self.last.take().is_some();
        (self.on_terminal && drawn).then(|| "\n".to_owned())
    }
}

/// Cells of the terminal progress bar.
const BAR_WIDTH: usize = 20;

/// `[#####---------------]` for 25%; out-of-range values are clamped.
fn bar(pct: f64) -> String {
    let filled = ((pct.clamp(0.0, 100.0) / 100.0) * BAR_WIDTH as f64).round() as usize;
    format!("[{}{}]", "#".repeat(filled), "-".repeat(BAR_WIDTH - filled))
}

fn percentage(result: &Value) -> Option<f64> {
    envelope(result)?
        .get("progress")?
        .get("percentage")?
        .as_f64()
}

/// `indexing 42% (420/1000 files) phase=chunking`, leaving out what the
/// server did not report; `None` when the result is not an indexing state.
pub fn describe(result: &Value) -> Option<String> {
    if index_state(result)? != Wire::Known(IndexState::Indexing) {
        return None;
    }
    let env = envelope(result)?;
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

    /// The bytes written for a sequence of status results, then the finish.
    fn written(on_terminal: bool, states: &[Value]) -> Vec<String> {
        let mut progress = Progress::new(on_terminal);
        let mut out: Vec<String> = states
            .iter()
            .filter_map(|env| progress.next(&status(env.clone())))
            .collect();
        out.extend(progress.end());
        out
    }

    #[test]
    fn terminal_gets_a_redrawn_bar_and_pipes_get_lines() {
        let at = |pct: f64| json!({"state":"indexing","progress":{"percentage":pct,"phase":"embedding"}});
        let states = [at(25.0), at(25.0), at(100.0), json!({"state":"indexed"})];
        let cases = [
            (
                true,
                vec![
                    "\r\x1b[2K[#####---------------] indexing 25% phase=embedding",
                    "\r\x1b[2K[####################] indexing 100% phase=embedding",
                    "\n",
                ],
            ),
            (
                false,
                vec![
                    "indexing 25% phase=embedding\n",
                    "indexing 100% phase=embedding\n",
                ],
            ),
        ];
        for (on_terminal, want) in cases {
            assert_eq!(
                written(on_terminal, &states),
                want,
                "terminal={on_terminal}"
            );
        }
        // Without a percentage there is nothing to draw a bar from.
        assert_eq!(
            written(true, &[json!({"state":"indexing"})]),
            ["\r\x1b[2Kindexing", "\n"]
        );
        // Nothing was drawn, so there is no line to end.
        assert!(written(true, &[json!({"state":"indexed"})]).is_empty());
    }

    #[test]
    fn bar_fills_proportionally_and_clamps() {
        let cases = [
            (0.0, "[--------------------]"),
            (12.5, "[###-----------------]"),
            (50.0, "[##########----------]"),
            (250.0, "[####################]"),
            (-3.0, "[--------------------]"),
        ];
        for (pct, want) in cases {
            assert_eq!(bar(pct), want, "{pct}");
        }
    }
}
