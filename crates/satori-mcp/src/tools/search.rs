//! `search_codebase`: gates (client roots, tracked, indexing, fingerprint), the freshness
//! decision of `freshness` (sync-on-read, joined with the sync in flight, forced by the
//! watcher's edits), the engine search, and the grouped / raw envelope with navigation hints
//! and telemetry.

use std::path::Path;
use std::time::{Duration, Instant};

use rmcp::model::CallToolResult;
use serde_json::json;

use satori_core::search::SearchOutcome;
use satori_protocol::envelope::{
    FreshnessDecision, FreshnessMode, SearchEnvelope, SearchHints, Status, reasons,
    sorted_warnings, warnings as warning_codes,
};
use satori_protocol::{
    ManageAction, RankingMode, ResultMode, SEARCH_CODEBASE, SearchCodebaseParams,
};

use super::gate::{Verb, gate};
use super::{reply, require_absolute};
use crate::changed::CHANGED_WAIT;
use crate::config::RunMode;
use crate::freshness::ensure_fresh;
use crate::session::Session;
use crate::syncs::Caller;
use crate::to_proto::{self, display, manage_hint};

/// How the gate's messages name a search.
const SEARCHES: Verb = Verb {
    verb: "search",
    done: "searched",
};

pub(crate) fn handle(
    session: &Session,
    p: SearchCodebaseParams,
    caller: &Caller,
) -> CallToolResult {
    let service = session.service();
    let started = Instant::now();
    let abs = match require_absolute(SEARCH_CODEBASE, &p.path) {
        Ok(a) => a,
        Err(r) => return r,
    };
    // Every answer echoes the effective request; the gates below fill in why they stopped.
    let answer = |status: Status, reason: Option<&str>, message: String| SearchEnvelope {
        status,
        path: p.path.clone(),
        codebase_root: None,
        query: p.query.clone(),
        scope: p.scope,
        group_by: p.group_by,
        result_mode: p.result_mode,
        limit: p.limit,
        reason: reason.map(str::to_owned),
        freshness_decision: None,
        results: Vec::new(),
        warnings: Vec::new(),
        message: Some(message),
        hints: SearchHints::default(),
        compatibility: None,
    };
    // Forcing a reranker the server lacks is the caller's mistake: say so before any work.
    if p.use_reranker == Some(true) && service.engine.reranker().is_none() {
        let v = answer(
            Status::Error,
            Some(reasons::RERANKER_UNAVAILABLE),
            "useReranker is true, but this server has no reranker: set VOYAGEAI_API_KEY in the server's environment (VoyageAI's rerank API; VOYAGEAI_RERANKER_MODEL picks the model) or SATORI_RERANKER=local (on this machine), or omit useReranker."
                .to_owned(),
        );
        return reply(&v, true);
    }
    let t = match gate(session, &p.path, &abs, SEARCHES) {
        Ok(t) => t,
        Err(stop) => {
            let mut v = answer(stop.status, stop.reason, stop.message);
            v.freshness_decision = match stop.status {
                Status::NotReady => Some(FreshnessDecision::new(FreshnessMode::SkippedIndexing)),
                Status::RequiresReindex => Some(FreshnessDecision::new(
                    FreshnessMode::SkippedRequiresReindex,
                )),
                _ => None,
            };
            v.hints.create = stop.create;
            v.hints.status = stop.status_hint;
            v.hints.reindex = stop.reindex;
            v.compatibility = stop.compatibility;
            return reply(&v, stop.is_error);
        }
    };
    let root = t.root;
    let root_shown = display(&root);
    // From here on the codebase is known: every answer names the root its files are under.
    let answer = |status: Status, reason: Option<&str>, message: String| SearchEnvelope {
        codebase_root: Some(root_shown.clone()),
        ..answer(status, reason, message)
    };
    let mut warnings = Vec::new();
    let searchable_while_indexing = t.searchable_while_indexing;

    // A sync of this process rebuilding shows as `indexing`: a search joins it instead; a
    // sync of another process is no reindex either: the search keeps its freshness checks.
    let freshness = if searchable_while_indexing
        && !t.state.syncing
        && !service.syncs.in_flight(&root)
    {
        warnings.push(warning_codes::REINDEX_IN_PROGRESS.to_owned());
        FreshnessDecision::new(FreshnessMode::SkippedIndexing)
    } else {
        match ensure_fresh(service, &root, t.state.last_sync_ms, caller, &mut warnings) {
            Some(f) => f,
            None => {
                // Nobody may read this answer (a cancelled request gets none), but a
                // shutdown can still deliver it.
                let v = answer(
                    Status::Error,
                    Some(reasons::CANCELLED),
                    format!(
                        "The search was cancelled while '{root_shown}' was being synced; the previous index stays in use. Search again."
                    ),
                );
                return reply(&v, true);
            }
        }
    };

    // The engine decides which lists are small enough to boost (`Weights::changed_max_files`).
    // Asking git spawns a process: on a first search it runs while the index opens instead
    // of before, and a search waits for it only briefly. The open's own errors are answered
    // by the search below.
    let changed = if p.ranking_mode == RankingMode::AutoChangedFirst {
        service.changed_cache.get(&root, Duration::ZERO);
        let _ = service.engine.generation(&root);
        service.changed_cache.get(&root, CHANGED_WAIT)
    } else {
        None
    };
    let req = to_proto::search_request(&p, changed, t.prefix);
    let outcome = match service.engine.search(&root, &req) {
        Ok(o) => o,
        Err(e @ satori_core::Error::Damaged { .. }) => {
            // Recorded as requires_reindex by the engine: answer as the gate would have.
            let mut v = answer(
                Status::RequiresReindex,
                Some(reasons::REQUIRES_REINDEX),
                format!(
                    "The index of '{root_shown}' must be rebuilt ({e}) before it can be searched."
                ),
            );
            v.freshness_decision = Some(freshness);
            v.hints.reindex = Some(manage_hint(ManageAction::Reindex, &root_shown));
            v.compatibility = Some(to_proto::incompatible(
                service.engine.fingerprint(),
                t.state.fingerprint.as_ref(),
                satori_protocol::envelope::ReindexReason::IndexDamaged,
            ));
            telemetry(session, &p, &root, None, started, Some(&e.to_string()));
            return reply(&v, false);
        }
        Err(satori_core::Error::IndexMissing(_)) => {
            // Cleared (by another call or process) between the gate and the search.
            let mut v = answer(
                Status::NotIndexed,
                Some(reasons::NOT_INDEXED),
                format!(
                    "'{root_shown}' has no index any more (it was cleared while this search ran). Index it again with manage_index create."
                ),
            );
            v.hints.create = Some(manage_hint(ManageAction::Create, &root_shown));
            telemetry(session, &p, &root, None, started, Some("index cleared"));
            return reply(&v, false);
        }
        Err(e) => {
            let mut v = answer(
                Status::Error,
                Some(reasons::SEARCH_FAILED),
                format!(
                    "Search failed: {e}. If the index is damaged, rebuild it with manage_index reindex."
                ),
            );
            v.freshness_decision = Some(freshness);
            v.hints.reindex = Some(manage_hint(ManageAction::Reindex, &root_shown));
            telemetry(session, &p, &root, None, started, Some(&e.to_string()));
            return reply(&v, true);
        }
    };
    warnings.extend(outcome.warnings.iter().cloned());
    let mut v = answer(
        Status::Ok,
        None,
        "No results. Try other words, an identifier, scope=\"mixed\", or fewer operators."
            .to_owned(),
    );
    if !outcome.hits.is_empty() {
        v.message = None;
    }
    v.freshness_decision = Some(freshness);
    v.results = outcome
        .hits
        .iter()
        .map(|h| match p.result_mode {
            ResultMode::Grouped => to_proto::group_result(&root, h),
            ResultMode::Raw => to_proto::chunk_result(h),
        })
        .collect();
    v.warnings = sorted_warnings(warnings);
    v.hints.noise_mitigation = outcome
        .noise
        .as_ref()
        .map(|noise| to_proto::noise_mitigation(noise, &root_shown));
    v.hints.debug_search = p
        .debug
        .then(|| to_proto::search_debug(&outcome.diagnostics));
    telemetry(session, &p, &root, Some(&outcome), started, None);
    reply(&v, false)
}

/// One `[TELEMETRY] {json}` line on stderr per search (unless `SATORI_TELEMETRY=off`), and
/// the same event to a client that set a log level.
fn telemetry(
    session: &Session,
    p: &SearchCodebaseParams,
    root: &Path,
    outcome: Option<&SearchOutcome>,
    started: Instant,
    error: Option<&str>,
) {
    let d = outcome.map(|o| &o.diagnostics);
    let mut ev = json!({
        "event": "search_executed",
        "tool_name": SEARCH_CODEBASE,
        "profile": "local_embedded",
        "run_mode": match session.service().config.run_mode { RunMode::Mcp => "mcp", RunMode::Cli => "cli" },
        "codebase": display(root),
        "query_length": p.query.chars().count(),
        "query_kind": d.map(|d| to_proto::query_kind(d.query_kind).as_str()),
        "retrieval_mode": d.map(|d| to_proto::retrieval_mode(d.retrieval_mode).as_str()),
        "limit_requested": p.limit,
        "scope": p.scope.as_str(),
        "result_mode": p.result_mode.as_str(),
        "results_before_filter": d.map(|d| d.candidates),
        "results_after_filter": d.map(|d| d.after_filters),
        "results_returned": outcome.map(|o| o.hits.len()),
        "rerank": d.and_then(|d| d.rerank.as_ref()).map(|r| json!({
            "reranker": r.reranker,
            "decision": r.decision,
            "candidates": r.candidates,
            "latency_ms": (r.millis * 100.0).round() / 100.0,
            "failure_phase": r.failure_phase,
        })),
        "latency_ms": (started.elapsed().as_secs_f64() * 1000.0 * 100.0).round() / 100.0,
    });
    if let Some(error) = error {
        ev["error"] = json!(error);
    }
    use crate::logging::Diagnostics;
    let level = crate::logging::Level::Debug;
    if session.service().config.telemetry_stderr {
        session
            .log()
            .emit(level, "telemetry", format_args!("[TELEMETRY] {ev}"), || {
                ev.clone()
            });
    } else {
        session.log().notify(level, "telemetry", || ev);
    }
}
