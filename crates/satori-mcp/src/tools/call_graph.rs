//! `call_graph`: the callers and callees of a symbol, read from the call graph stored with
//! the index's published generation after the same gate and freshness check as a search.
//! A handle whose file or id the graph no longer knows answers `not_found` with a search to
//! refresh it; a language without call rules answers `unsupported` with an outline instead.

use rmcp::model::CallToolResult;

use satori_core::Language;
use satori_core::graph::GraphStatus;
use satori_core::graph::{self, Direction as CoreDirection, EdgeKind as CoreEdgeKind, GraphQuery};
use satori_protocol::call_graph::LIMIT_MAX;
use satori_protocol::envelope::{
    CallGraphEnvelope, CallSite, EdgeKind, FreshnessDecision, FreshnessMode, GraphEdge, GraphNode,
    Hint, NavHints, Span, Status, reasons, sorted_warnings,
};
use satori_protocol::{CALL_GRAPH, CallGraphParams, Direction, ManageAction};

use super::gate::{Verb, gate};
use super::navigation::{FileProblem, codebase_file, language_name, name_in_label, search_words};
use super::{invalid_field, reply, require_absolute};
use crate::freshness::ensure_fresh;
use crate::session::Session;
use crate::syncs::Caller;
use crate::to_proto::{self, display, manage_hint};

/// How the gate's messages name a graph walk.
const WALKS: Verb = Verb {
    verb: "draw call graphs",
    done: "used",
};

pub(crate) fn handle(session: &Session, p: CallGraphParams, caller: &Caller) -> CallToolResult {
    let service = session.service();
    let abs = match require_absolute(CALL_GRAPH, &p.path) {
        Ok(a) => a,
        Err(r) => return r,
    };
    let direction = p.direction.direction();
    let answer =
        |status: Status, reason: Option<&str>, message: Option<String>| CallGraphEnvelope {
            status,
            path: p.path.clone(),
            codebase_root: None,
            supported: true,
            direction,
            depth: p.depth,
            symbol_ref: p.symbol_ref.clone(),
            nodes: Vec::new(),
            edges: Vec::new(),
            notes: Vec::new(),
            truncated: false,
            freshness_decision: None,
            reason: reason.map(str::to_owned),
            message,
            warnings: Vec::new(),
            hints: NavHints::default(),
            compatibility: None,
        };
    let t = match gate(session, &p.path, &abs, WALKS) {
        Ok(t) => t,
        Err(mut stop) => {
            let hints = stop.nav_hints();
            let mut v = answer(stop.status, stop.reason, Some(stop.message));
            v.hints = hints;
            v.compatibility = stop.compatibility;
            return reply(&v, stop.is_error);
        }
    };
    let root = t.root;
    let root_shown = display(&root);
    // From here on the codebase is known: every answer names the root its files are under.
    let answer =
        |status: Status, reason: Option<&str>, message: Option<String>| CallGraphEnvelope {
            codebase_root: Some(root_shown.clone()),
            ..answer(status, reason, message)
        };
    let stale_hint = |v: &mut CallGraphEnvelope| {
        let words = p
            .symbol_ref
            .symbol_label
            .as_deref()
            .map_or_else(|| search_words(&p.symbol_ref.file), name_in_label);
        v.hints.search = Some(Hint::search_codebase(&root_shown, &words));
    };
    // The handle's file, checked as file_outline checks it: relative, inside the codebase.
    let file = match codebase_file(&root, t.prefix.as_deref(), &p.symbol_ref.file) {
        Ok(f) => f.rel,
        Err(FileProblem::Invalid(problem)) => {
            return invalid_field(CALL_GRAPH, "symbolRef.file", &problem);
        }
        Err(FileProblem::Missing) => {
            let mut v = answer(
                Status::NotFound,
                Some(reasons::FILE_NOT_FOUND),
                Some(format!(
                    "'{}' is not a file of '{root_shown}' any more (moved, renamed or deleted?): the handle is stale. Search again for a fresh one.",
                    p.symbol_ref.file
                )),
            );
            stale_hint(&mut v);
            return reply(&v, false);
        }
        Err(FileProblem::Outside(_)) => {
            let v = answer(
                Status::Blocked,
                Some(reasons::OUTSIDE_CODEBASE),
                Some(format!(
                    "'{}' leads outside '{root_shown}'; Satori reads only inside indexed codebases.",
                    p.symbol_ref.file
                )),
            );
            return reply(&v, false);
        }
    };
    let language = Language::from_path(&file).unwrap_or(Language::Text);
    if !graph::supports(language) {
        let mut v = answer(
            Status::Unsupported,
            Some(reasons::UNSUPPORTED_LANGUAGE),
            Some(format!(
                "'{file}' is {}, which has no call graph; its outline or the file itself is what there is.",
                language_name(language)
            )),
        );
        v.supported = false;
        v.hints.read_file = p
            .symbol_ref
            .span
            .map(|s| Hint::read_file(&display(&root.join(&file)), s.start_line, s.end_line));
        return reply(&v, false);
    }

    let mut warnings = Vec::new();
    let freshness = if t.searchable_while_indexing && !service.syncs.in_flight(&root) {
        FreshnessDecision::new(FreshnessMode::SkippedIndexing)
    } else {
        match ensure_fresh(service, &root, t.state.last_sync_ms, caller, &mut warnings) {
            Some(f) => f,
            None => {
                let v = answer(
                    Status::Error,
                    Some(reasons::CANCELLED),
                    Some(format!(
                        "The call graph was cancelled while '{root_shown}' was being synced. Ask again."
                    )),
                );
                return reply(&v, true);
            }
        }
    };
    let (graph, status) = match service.engine.call_graph(&root) {
        Ok(Some(g)) => g,
        Ok(None) => {
            let mut v = answer(
                Status::RequiresReindex,
                Some(reasons::CALL_GRAPH_MISSING),
                Some(format!(
                    "The index of '{root_shown}' was built before Satori recorded call graphs; rebuild it with manage_index reindex (searches keep working meanwhile)."
                )),
            );
            v.freshness_decision = Some(freshness);
            v.hints.reindex = Some(manage_hint(ManageAction::Reindex, &root_shown));
            return reply(&v, false);
        }
        Err(satori_core::Error::IndexMissing(_)) => {
            let mut v = answer(
                Status::NotIndexed,
                Some(reasons::NOT_INDEXED),
                Some(format!(
                    "'{root_shown}' has no index any more (it was cleared meanwhile). Index it again with manage_index create."
                )),
            );
            v.hints.create = Some(manage_hint(ManageAction::Create, &root_shown));
            return reply(&v, false);
        }
        Err(e) => {
            let mut v = answer(
                Status::Error,
                Some(reasons::ENGINE_ERROR),
                Some(format!(
                    "The call graph of '{root_shown}' could not be read: {e}. Rebuild it with manage_index reindex."
                )),
            );
            v.hints.reindex = Some(manage_hint(ManageAction::Reindex, &root_shown));
            return reply(&v, true);
        }
    };
    let query = GraphQuery {
        file: file.clone(),
        symbol_id: p.symbol_ref.symbol_id.clone(),
        direction: match direction {
            Direction::Callers => CoreDirection::Callers,
            Direction::Callees => CoreDirection::Callees,
            Direction::Both => CoreDirection::Both,
        },
        depth: p.depth,
        limit: p.limit.min(LIMIT_MAX) as usize,
    };
    let Some(view) = graph.query(&query) else {
        let moved = graph
            .file_of(&p.symbol_ref.symbol_id)
            .map(|other| format!(" (a symbol with this id is now in '{other}')"))
            .unwrap_or_default();
        let mut v = answer(
            Status::NotFound,
            Some(reasons::SYMBOL_NOT_FOUND),
            Some(format!(
                "'{file}' has no symbol {}{moved}: the handle is stale (the symbol was renamed, moved or deleted). Search again for a fresh one.",
                p.symbol_ref.symbol_id
            )),
        );
        v.freshness_decision = Some(freshness);
        stale_hint(&mut v);
        return reply(&v, false);
    };
    let mut v = answer(Status::Ok, None, None);
    v.freshness_decision = Some(freshness);
    v.nodes = view
        .nodes
        .iter()
        .map(|n| GraphNode {
            symbol_id: n.symbol.id.clone(),
            symbol_label: n.symbol.label.clone(),
            kind: n.symbol.kind.id().to_owned(),
            file: n.file.clone(),
            language: n.language.id().to_owned(),
            span: Span::new(n.symbol.start_line, n.symbol.end_line),
        })
        .collect();
    v.edges = view
        .edges
        .iter()
        .map(|e| GraphEdge {
            src: e.src.clone(),
            dst: e.dst.clone(),
            kind: match e.kind {
                CoreEdgeKind::Call | CoreEdgeKind::Construct => EdgeKind::Call,
            },
            site: CallSite {
                file: e.site_file.clone(),
                start_line: e.site_line,
            },
            confidence: to_proto::score(e.confidence),
        })
        .collect();
    v.notes = view.notes;
    v.truncated = view.truncated;
    if status == GraphStatus::Partial {
        v.notes.push(format!(
            "The index of '{root_shown}' predates call graphs: only files changed since are in this graph, so callers may be missing. manage_index reindex records all of them."
        ));
        v.hints.reindex = Some(manage_hint(ManageAction::Reindex, &root_shown));
    }
    v.warnings = sorted_warnings(warnings);
    reply(&v, false)
}
