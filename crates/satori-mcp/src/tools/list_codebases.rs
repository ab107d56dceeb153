//! `list_codebases`: the tracked codebases by state, as fixed plain-text sections. A client
//! that declares roots sees only the codebases inside them, and nothing of the others.

use rmcp::model::CallToolResult;
use satori_core::{IndexState, ReindexReason};
use satori_protocol::ListCodebasesParams;

use super::gate::{Verb, inside_roots};
use super::text;
use crate::session::Session;
use crate::to_proto::display;

/// How the refusal of the client's roots names a listing.
const LISTS: Verb = Verb {
    verb: "list codebases",
    done: "listed",
};

pub(crate) fn handle(session: &Session, _params: ListCodebasesParams) -> CallToolResult {
    let service = session.service();
    let states = match service.engine.states() {
        Ok(s) => s,
        Err(e) => return text(format!("Error: cannot read the index states: {e}"), true),
    };
    // Each codebase passes the same judgement as an action on its root would.
    let states: Vec<_> = states
        .into_iter()
        .filter(|(root, _)| inside_roots(session, &display(root), root, LISTS).is_ok())
        .collect();
    if states.is_empty() {
        // The same answer whether or not codebases exist outside the roots: a confined
        // session learns nothing of them, not even how many there are.
        return text(
            match session.roots().boundary() {
                Some(boundary) => format!(
                    "No indexed codebase is inside the roots the client allows ({}).",
                    boundary.boundary()
                ),
                None => "No codebases are indexed yet. Index one with manage_index {\"action\":\"create\",\"path\":\"/absolute/path\"}.".to_owned(),
            },
            false,
        );
    }
    let mut ready = Vec::new();
    let mut indexing = Vec::new();
    let mut reindex = Vec::new();
    let mut failed = Vec::new();
    for (root, st) in &states {
        let path = root.to_string_lossy();
        match st.state {
            IndexState::Indexed | IndexState::SyncCompleted => ready.push(format!(
                "- {path} ({} files, {} chunks)",
                st.files, st.chunks
            )),
            IndexState::Indexing => {
                let pct = service
                    .jobs
                    .view(root)
                    .map_or(st.percentage, |v| v.progress.percentage);
                indexing.push(format!("- {path} ({pct:.0}%)"))
            }
            IndexState::RequiresReindex => reindex.push(format!(
                "- {path} ({})",
                st.reason.unwrap_or(ReindexReason::FingerprintMismatch).id()
            )),
            IndexState::IndexFailed => failed.push(format!(
                "- {path} ({})",
                st.error_message.as_deref().unwrap_or("unknown error")
            )),
        }
    }
    let mut out = String::new();
    for (title, items) in [
        ("Ready", ready),
        ("Indexing", indexing),
        ("Requires Reindex", reindex),
        ("Failed", failed),
    ] {
        if items.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!("## {title}\n"));
        for i in items {
            out.push_str(&i);
            out.push('\n');
        }
    }
    text(out.trim_end().to_string(), false)
}
