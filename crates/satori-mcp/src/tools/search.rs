//! `search_codebase`: gates (tracked, indexing, fingerprint), freshness (sync-on-read), the
//! engine search, and the grouped / raw envelope with navigation hints and telemetry.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rmcp::model::CallToolResult;
use serde_json::{Value, json};

use satori_core::search::{self as core_search, Hit, SearchOutcome, SearchRequest};
use satori_core::state::IndexState;
use satori_core::util::{iso8601, now_ms};
use satori_protocol::{
    GroupBy, RankingMode, ResultMode, SEARCH_CODEBASE, Scope, SearchCodebaseParams,
};

use super::{canonical_or_normal, manage_index, require_absolute};
use crate::server::{Ctx, envelope};
use crate::wire::{self, manage_hint, put, read_hint};

/// Changed-file boost applies only to small working-tree changes.
const MAX_CHANGED_FOR_BOOST: usize = 50;

pub(crate) fn handle(ctx: &Ctx, p: SearchCodebaseParams) -> CallToolResult {
    let started = Instant::now();
    let abs = match require_absolute(SEARCH_CODEBASE, &p.path) {
        Ok(a) => a,
        Err(r) => return r,
    };
    let target = canonical_or_normal(&abs);
    let base = |status: &str| {
        json!({
            "status": status,
            "path": p.path,
            "query": p.query,
            "scope": p.scope.as_str(),
            "groupBy": p.group_by.as_str(),
            "resultMode": p.result_mode.as_str(),
            "limit": p.limit,
        })
    };
    let found = match ctx.engine.find_root(&target) {
        Ok(f) => f,
        Err(e) => {
            return envelope(
                json!({"status": "error", "path": p.path, "message": e.to_string()}),
                true,
            );
        }
    };
    let Some((root, st)) = found else {
        let mut v = base("not_indexed");
        put(&mut v, "reason", "not_indexed");
        put(&mut v, "freshnessDecision", Value::Null);
        put(&mut v, "results", json!([]));
        put(
            &mut v,
            "message",
            format!(
                "'{}' is not inside an indexed codebase. Index it first with manage_index create.",
                p.path
            ),
        );
        put(
            &mut v,
            "hints",
            json!({"create": manage_hint("create", &p.path)}),
        );
        return envelope(v, false);
    };
    let root_shown = wire::display(&root);
    let mut warnings = Vec::new();
    let searchable_while_indexing =
        st.state == IndexState::Indexing && st.searchable_during_indexing;
    if st.state == IndexState::Indexing && !searchable_while_indexing {
        let pct = ctx
            .jobs
            .view(&root)
            .map_or(st.percentage, |v| v.progress.percentage);
        let mut v = base("not_ready");
        put(&mut v, "reason", "indexing");
        put(
            &mut v,
            "freshnessDecision",
            json!({"mode": "skipped_indexing"}),
        );
        put(&mut v, "results", json!([]));
        put(
            &mut v,
            "message",
            format!(
                "'{root_shown}' is being indexed ({pct:.0}%). Poll manage_index status, then search again."
            ),
        );
        put(
            &mut v,
            "hints",
            json!({"status": manage_hint("status", &root_shown)}),
        );
        return envelope(v, false);
    }
    if st.state == IndexState::IndexFailed {
        let mut v = base("not_indexed");
        put(&mut v, "reason", "indexfailed");
        put(&mut v, "freshnessDecision", Value::Null);
        put(&mut v, "results", json!([]));
        put(
            &mut v,
            "message",
            format!(
                "Indexing '{root_shown}' failed: {}. Run manage_index create with force=true.",
                st.error_message.as_deref().unwrap_or("unknown error")
            ),
        );
        put(
            &mut v,
            "hints",
            json!({"create": wire::hint(satori_protocol::MANAGE_INDEX, json!({"action": "create", "path": root_shown, "force": true}))}),
        );
        return envelope(v, false);
    }
    if let Ok(Some(reason)) = ctx.engine.check_fingerprint(&root) {
        let mut v = base("requires_reindex");
        put(&mut v, "reason", "requires_reindex");
        put(
            &mut v,
            "freshnessDecision",
            json!({"mode": "skipped_requires_reindex"}),
        );
        put(&mut v, "results", json!([]));
        put(
            &mut v,
            "message",
            format!(
                "The index of '{root_shown}' must be rebuilt ({}) before it can be searched.",
                reason.id()
            ),
        );
        put(
            &mut v,
            "hints",
            json!({"reindex": manage_hint("reindex", &root_shown)}),
        );
        put(
            &mut v,
            "compatibility",
            manage_index::compatibility(ctx, &root, reason.id()),
        );
        return envelope(v, false);
    }

    let freshness = if searchable_while_indexing {
        warnings.push("REINDEX_IN_PROGRESS".to_string());
        json!({"mode": "skipped_indexing"})
    } else {
        ensure_fresh(ctx, &root, st.last_sync_ms, &mut warnings)
    };

    let path_prefix = target
        .strip_prefix(&root)
        .ok()
        .map(satori_core::walk::to_slash)
        .filter(|s| !s.is_empty());
    let changed = (p.ranking_mode == RankingMode::AutoChangedFirst)
        .then(|| ctx.changed_cache.get(&root))
        .flatten()
        .filter(|c| !c.is_empty() && c.len() <= MAX_CHANGED_FOR_BOOST);
    let req = SearchRequest {
        query: p.query.clone(),
        scope: match p.scope {
            Scope::Runtime => core_search::Scope::Runtime,
            Scope::Mixed => core_search::Scope::Mixed,
            Scope::Docs => core_search::Scope::Docs,
        },
        result_mode: match p.result_mode {
            ResultMode::Grouped => core_search::ResultMode::Grouped,
            ResultMode::Raw => core_search::ResultMode::Raw,
        },
        group_by: match p.group_by {
            GroupBy::Symbol => core_search::GroupBy::Symbol,
            GroupBy::File => core_search::GroupBy::File,
        },
        limit: p.limit as usize,
        debug: p.debug,
        changed_files: changed,
        path_prefix,
    };
    let outcome = match ctx.engine.search(&root, &req) {
        Ok(o) => o,
        Err(e) => {
            let mut v = base("error");
            put(&mut v, "reason", "search_failed");
            put(&mut v, "freshnessDecision", freshness);
            put(&mut v, "results", json!([]));
            put(
                &mut v,
                "message",
                format!(
                    "Search failed: {e}. If the index is damaged, rebuild it with manage_index reindex."
                ),
            );
            put(
                &mut v,
                "hints",
                json!({"reindex": manage_hint("reindex", &root_shown)}),
            );
            telemetry(ctx, &p, &root, None, started, Some(&e.to_string()));
            return envelope(v, true);
        }
    };
    warnings.extend(outcome.warnings.iter().cloned());
    let results: Vec<Value> = outcome
        .hits
        .iter()
        .map(|h| match p.result_mode {
            ResultMode::Grouped => group_result(&root, h, p.debug),
            ResultMode::Raw => chunk_result(h, p.debug),
        })
        .collect();
    let mut v = base("ok");
    put(&mut v, "freshnessDecision", freshness);
    put(&mut v, "results", results);
    put(&mut v, "warnings", wire::warnings(warnings));
    let mut hints = serde_json::Map::new();
    if let Some(noise) = &outcome.noise {
        hints.insert(
            "noiseMitigation".into(),
            json!({
                "version": 1,
                "reason": "top_results_noise_dominant",
                "topK": noise.top_k,
                "ratios": noise.ratios.iter().map(|(k, r)| (k.clone(), json!((r * 100.0).round() / 100.0))).collect::<serde_json::Map<_, _>>(),
                "recommendedScope": "runtime",
                "suggestedIgnorePatterns": noise.suggested_ignore_patterns,
                "nextStep": format!("Add the patterns that fit to {root_shown}/.satoriignore, then run manage_index sync."),
                "sync": manage_hint("sync", &root_shown),
            }),
        );
    }
    if p.debug {
        hints.insert(
            "debugSearch".into(),
            serde_json::to_value(&outcome.diagnostics).unwrap_or(Value::Null),
        );
    }
    if outcome.hits.is_empty() {
        put(
            &mut v,
            "message",
            "No results. Try other words, an identifier, scope=\"mixed\", or fewer operators.",
        );
    }
    if !hints.is_empty() {
        put(&mut v, "hints", Value::Object(hints));
    }
    telemetry(ctx, &p, &root, Some(&outcome), started, None);
    envelope(v, false)
}

/// Sync-on-read: when the last check of the tree is older than the threshold, bring the
/// index up to date before searching.
fn ensure_fresh(
    ctx: &Ctx,
    root: &Path,
    last_sync_ms: Option<u64>,
    warnings: &mut Vec<String>,
) -> Value {
    let now = now_ms();
    let threshold = ctx.config.sync_threshold_ms;
    let age = last_sync_ms.map(|t| now.saturating_sub(t));
    if let Some(age) = age
        && age < threshold
    {
        return json!({
            "mode": "skipped_recent",
            "checkedAt": iso8601(now),
            "thresholdMs": threshold,
            "lastSyncAt": last_sync_ms.map(iso8601),
            "ageMs": age,
        });
    }
    let started = Instant::now();
    match ctx.engine.sync(root) {
        Ok(s) => json!({
            "mode": "synced",
            "checkedAt": iso8601(now),
            "thresholdMs": threshold,
            "lastSyncAt": last_sync_ms.map(iso8601),
            "stats": {"added": s.added, "removed": s.removed, "modified": s.modified},
            "durationMs": started.elapsed().as_millis() as u64,
        }),
        Err(satori_core::Error::Busy(_)) => json!({"mode": "coalesced", "checkedAt": iso8601(now)}),
        Err(e) => {
            warnings.push("FRESHNESS_SYNC_FAILED".to_string());
            json!({"mode": "sync_failed", "checkedAt": iso8601(now), "errorMessage": e.to_string()})
        }
    }
}

/// How long a `git diff` answer is reused. Spawning git costs milliseconds, more than the
/// search itself; a working tree rarely changes between the searches of one burst, and the
/// boost it feeds is a small tie-breaker.
const CHANGED_TTL: std::time::Duration = std::time::Duration::from_secs(2);

/// When a list was taken, and the list (`None`: not a git work tree, or git failed).
type ChangedEntry = (Instant, Option<Vec<String>>);

/// Recent changed-file lists per root.
#[derive(Default)]
pub(crate) struct ChangedCache {
    entries: std::sync::Mutex<HashMap<PathBuf, ChangedEntry>>,
}

impl ChangedCache {
    fn get(&self, root: &Path) -> Option<Vec<String>> {
        let now = Instant::now();
        {
            let map = self.entries.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((at, v)) = map.get(root)
                && now.duration_since(*at) < CHANGED_TTL
            {
                return v.clone();
            }
        }
        // Outside a git work tree there is nothing to ask (and no process to spawn).
        let v = if root.ancestors().any(|d| d.join(".git").exists()) {
            changed_files(root)
        } else {
            None
        };
        let mut map = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        map.insert(root.to_path_buf(), (now, v.clone()));
        v
    }
}

/// Files modified in the git working tree, relative to `root` (tracked files only).
fn changed_files(root: &Path) -> Option<Vec<String>> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["diff", "--name-only", "--relative", "HEAD", "--"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    Some(
        text.lines()
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect(),
    )
}

fn span(h: &Hit) -> Value {
    json!({"startLine": h.start_line, "endLine": h.end_line})
}

fn group_result(root: &Path, h: &Hit, debug: bool) -> Value {
    let abs: PathBuf = root.join(&h.file);
    let abs_shown = wire::display(&abs);
    let (call_graph_hint, fallback) = {
        // The call graph arrives with the navigation tools; until then every group points at
        // a runnable read of its span.
        let reason = if !h.language_has_symbols {
            "unsupported_language"
        } else if h.symbol.is_none() {
            "missing_symbol"
        } else {
            "call_graph_unavailable"
        };
        (
            json!({"supported": false, "reason": reason}),
            Some(json!({
                "message": "Call graph navigation is not available for this result; read the span directly.",
                "context": {"codebaseRoot": wire::display(root), "relativeFile": h.file, "absolutePath": abs_shown},
                "readSpan": read_hint(&abs_shown, h.start_line, h.end_line),
            })),
        )
    };
    let mut v = json!({
        "kind": "group",
        "groupId": h.group_id,
        "file": h.file,
        "span": span(h),
        "language": h.language.id(),
        "symbolId": h.symbol.as_ref().map(|s| s.id.clone()),
        "symbolLabel": h.symbol.as_ref().map(|s| s.label.clone()),
        "score": round(h.score),
        "indexedAt": (h.indexed_at_ms > 0).then(|| iso8601(h.indexed_at_ms)),
        "stalenessBucket": wire::staleness(h.indexed_at_ms),
        "collapsedChunkCount": h.collapsed_chunk_count,
        "callGraphHint": call_graph_hint,
    });
    put(&mut v, "navigationFallback", fallback);
    put(&mut v, "preview", &h.text);
    if debug {
        put(&mut v, "debug", &h.components);
    }
    v
}

fn chunk_result(h: &Hit, debug: bool) -> Value {
    let mut v = json!({
        "kind": "chunk",
        "file": h.file,
        "span": span(h),
        "language": h.language.id(),
        "content": h.text,
        "score": round(h.score),
    });
    put(&mut v, "symbolId", h.symbol.as_ref().map(|s| s.id.clone()));
    put(
        &mut v,
        "symbolLabel",
        h.symbol.as_ref().map(|s| s.label.clone()),
    );
    put(
        &mut v,
        "indexedAt",
        (h.indexed_at_ms > 0).then(|| iso8601(h.indexed_at_ms)),
    );
    put(&mut v, "stalenessBucket", wire::staleness(h.indexed_at_ms));
    if debug {
        put(&mut v, "debug", &h.components);
    }
    v
}

fn round(x: f32) -> f64 {
    (f64::from(x) * 10_000.0).round() / 10_000.0
}

/// One `[TELEMETRY] {json}` line on stderr per search.
fn telemetry(
    ctx: &Ctx,
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
        "run_mode": match ctx.config.run_mode { crate::RunMode::Mcp => "mcp", crate::RunMode::Cli => "cli" },
        "codebase": wire::display(root),
        "query_length": p.query.chars().count(),
        "query_kind": d.map(|d| d.query_kind.clone()),
        "retrieval_mode": d.map(|d| d.retrieval_mode.clone()),
        "limit_requested": p.limit,
        "scope": p.scope.as_str(),
        "result_mode": p.result_mode.as_str(),
        "results_before_filter": d.map(|d| d.candidates),
        "results_after_filter": d.map(|d| d.after_filters),
        "results_returned": outcome.map(|o| o.hits.len()),
        "latency_ms": (started.elapsed().as_secs_f64() * 1000.0 * 100.0).round() / 100.0,
    });
    put(&mut ev, "error", error);
    let _ = writeln!(std::io::stderr(), "[TELEMETRY] {ev}");
}
