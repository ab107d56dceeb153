//! `manage_index`: create (background), reindex (background, with preflight), sync
//! (foreground), status, clear.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rmcp::model::CallToolResult;
use serde_json::{Map, Value, json};

use satori_core::Error as CoreError;
use satori_core::engine::{IndexOptions, Preflight};
use satori_core::state::{CodebaseState, IndexState};
use satori_protocol::{MANAGE_INDEX, ManageAction, ManageIndexParams};

use super::{canonical_or_normal, require_absolute};
use crate::server::{Ctx, envelope};
use crate::wire::{self, manage_hint, put};

/// Builder of one `manage_index` envelope.
struct Env {
    action: ManageAction,
    path: String,
    status: &'static str,
    state: Option<&'static str>,
    reason: Option<String>,
    message: String,
    warnings: Vec<String>,
    hints: Map<String, Value>,
    extra: Map<String, Value>,
}

impl Env {
    fn new(
        action: ManageAction,
        path: &str,
        status: &'static str,
        message: impl Into<String>,
    ) -> Env {
        Env {
            action,
            path: path.to_string(),
            status,
            state: None,
            reason: None,
            message: message.into(),
            warnings: Vec::new(),
            hints: Map::new(),
            extra: Map::new(),
        }
    }

    fn state(mut self, s: &'static str) -> Self {
        self.state = Some(s);
        self
    }

    fn reason(mut self, r: impl Into<String>) -> Self {
        self.reason = Some(r.into());
        self
    }

    fn hint(mut self, name: &str, action: &str) -> Self {
        self.hints
            .insert(name.to_string(), manage_hint(action, &self.path));
        self
    }

    fn hint_value(mut self, name: &str, value: Value) -> Self {
        self.hints.insert(name.to_string(), value);
        self
    }

    fn extra(mut self, key: &str, value: Value) -> Self {
        self.extra.insert(key.to_string(), value);
        self
    }

    fn status(mut self, s: &'static str) -> Self {
        self.status = s;
        self
    }

    fn warn(mut self, w: impl Into<String>) -> Self {
        self.warnings.push(w.into());
        self
    }

    fn done(self, is_error: bool) -> CallToolResult {
        let mut v = json!({
            "tool": MANAGE_INDEX,
            "version": 1,
            "action": self.action.as_str(),
            "path": self.path,
            "status": self.status,
        });
        put(&mut v, "state", self.state);
        put(&mut v, "reason", self.reason);
        put(&mut v, "message", &self.message);
        put(&mut v, "humanText", &self.message);
        put(&mut v, "warnings", wire::warnings(self.warnings));
        if !self.hints.is_empty() {
            put(&mut v, "hints", Value::Object(self.hints));
        }
        if let Some(obj) = v.as_object_mut() {
            obj.extend(self.extra);
        }
        envelope(v, is_error)
    }
}

pub(crate) fn handle(ctx: &Ctx, p: ManageIndexParams) -> CallToolResult {
    let abs = match require_absolute(MANAGE_INDEX, &p.path) {
        Ok(a) => a,
        Err(r) => return r,
    };
    let shown = wire::display(&abs);
    match p.action {
        ManageAction::Create => create(ctx, &p, &abs, &shown),
        ManageAction::Reindex => reindex(ctx, &p, &abs, &shown),
        ManageAction::Sync => sync(ctx, &abs, &shown),
        ManageAction::Status => status(ctx, &abs, &shown),
        ManageAction::Clear => clear(ctx, &abs, &shown),
    }
}

/// Validates that the path is an existing directory and returns its canonical form.
fn existing_dir(action: ManageAction, abs: &Path, shown: &str) -> Result<PathBuf, CallToolResult> {
    satori_core::engine::Engine::canonical_root(abs).map_err(|e| {
        let (reason, msg) = match e {
            CoreError::NotFound(_) => ("path_not_found", format!("Path '{shown}' does not exist.")),
            CoreError::NotADirectory(_) => (
                "not_a_directory",
                format!("Path '{shown}' is not a directory; give the codebase root directory."),
            ),
            other => ("io_error", format!("Cannot resolve '{shown}': {other}")),
        };
        Env::new(action, shown, "error", msg)
            .reason(reason)
            .done(true)
    })
}

fn engine_error(action: ManageAction, shown: &str, e: &CoreError) -> CallToolResult {
    match e {
        CoreError::Busy(_) => Env::new(
            action,
            shown,
            "not_ready",
            format!("Another process is building the index of '{shown}' right now; poll status until it finishes."),
        )
        .state("indexing")
        .reason("indexing")
        .hint("status", "status")
        .done(false),
        other => Env::new(action, shown, "error", format!("{other}"))
            .reason("engine_error")
            .done(true),
    }
}

fn start(
    ctx: &Ctx,
    action: ManageAction,
    root: &Path,
    shown: &str,
    opts: IndexOptions,
    what: &str,
) -> CallToolResult {
    match ctx.engine.start_index(root, opts) {
        Ok(job) => {
            ctx.jobs.spawn(job);
            Env::new(
                action,
                shown,
                "ok",
                format!("{what} of '{shown}' started in the background. Poll manage_index status until state is \"indexed\"."),
            )
            .state("indexing")
            .hint("status", "status")
            .extra("progress", json!({"percentage": 0, "phase": "scanning", "filesDone": 0, "filesTotal": 0, "chunks": 0}))
            .done(false)
        }
        Err(e) => engine_error(action, shown, &e),
    }
}

fn create(ctx: &Ctx, p: &ManageIndexParams, abs: &Path, shown_in: &str) -> CallToolResult {
    let root = match existing_dir(ManageAction::Create, abs, shown_in) {
        Ok(r) => r,
        Err(r) => return r,
    };
    let shown = wire::display(&root);
    let current = match ctx.engine.state(&root) {
        Ok(s) => s,
        Err(e) => return engine_error(ManageAction::Create, &shown, &e),
    };
    if let Some(st) = &current
        && !p.force()
    {
        match st.state {
            IndexState::Indexing => {
                return status_envelope(ctx, ManageAction::Create, &root, &shown, st)
                    .warn("INDEXING_ALREADY_RUNNING")
                    .done(false);
            }
            IndexState::Indexed | IndexState::SyncCompleted
                if ctx.engine.check_fingerprint(&root).ok().flatten().is_none() =>
            {
                return Env::new(
                        ManageAction::Create,
                        &shown,
                        "ok",
                        format!("'{shown}' is already indexed ({} files, {} chunks). Search it, run sync to pick up changes, or create with force=true to rebuild.", st.files, st.chunks),
                    )
                    .state(st.state.id())
                    .warn("ALREADY_INDEXED")
                    .hint("status", "status")
                    .hint("sync", "sync")
                    .hint_value("search", wire::hint(satori_protocol::SEARCH_CODEBASE, json!({"path": shown, "query": "<what you are looking for>"})))
                    .done(false);
            }
            _ => {}
        }
    }
    let opts = IndexOptions {
        custom_extensions: p.custom_extensions().to_vec(),
        ignore_patterns: p.ignore_patterns().to_vec(),
    };
    start(ctx, ManageAction::Create, &root, &shown, opts, "Indexing")
}

fn reindex(ctx: &Ctx, p: &ManageIndexParams, abs: &Path, shown_in: &str) -> CallToolResult {
    let root = match existing_dir(ManageAction::Reindex, abs, shown_in) {
        Ok(r) => r,
        Err(r) => return r,
    };
    let shown = wire::display(&root);
    let st = match ctx.engine.state(&root) {
        Ok(Some(st)) => st,
        Ok(None) => return not_indexed(ManageAction::Reindex, &shown),
        Err(e) => return engine_error(ManageAction::Reindex, &shown, &e),
    };
    if st.state == IndexState::Indexing {
        return status_envelope(ctx, ManageAction::Reindex, &root, &shown, &st)
            .warn("INDEXING_ALREADY_RUNNING")
            .done(false);
    }
    let mut warnings = Vec::new();
    let outcome = match ctx.engine.preflight(&root) {
        Ok(Preflight::IgnoreOnly) => "reindex_unnecessary_ignore_only",
        Ok(Preflight::ReindexRequired) => "reindex_required",
        Err(_) => {
            warnings.push("REINDEX_PREFLIGHT_UNKNOWN".to_string());
            "unknown"
        }
    };
    if outcome == "reindex_unnecessary_ignore_only" && !p.allow_unnecessary_reindex() {
        return Env::new(
            ManageAction::Reindex,
            &shown,
            "blocked",
            "Only ignore rules changed since the last index; run sync to apply them (much cheaper), or pass allowUnnecessaryReindex=true to rebuild anyway.",
        )
        .state(st.state.id())
        .reason("unnecessary_reindex_ignore_only")
        .warn("REINDEX_UNNECESSARY_IGNORE_ONLY")
        .hint("sync", "sync")
        .extra("preflight", json!({"outcome": outcome, "confidence": "high"}))
        .done(false);
    }
    let opts = IndexOptions {
        custom_extensions: st.custom_extensions.clone(),
        ignore_patterns: st.ignore_patterns.clone(),
    };
    let mut r = start(ctx, ManageAction::Reindex, &root, &shown, opts, "Rebuild");
    if let Some(v) = r.structured_content.as_mut() {
        put(
            v,
            "preflight",
            json!({"outcome": outcome, "confidence": if outcome == "unknown" {"low"} else {"high"}}),
        );
        if let Some(w) = wire::warnings(warnings) {
            put(v, "warnings", w);
        }
        let text = v.to_string();
        r.content = vec![rmcp::model::ContentBlock::text(text)];
    }
    r
}

fn sync(ctx: &Ctx, abs: &Path, shown_in: &str) -> CallToolResult {
    let root = canonical_or_normal(abs);
    let shown = wire::display(&root);
    let st = match ctx.engine.state(&root) {
        Ok(Some(st)) => st,
        Ok(None) => return not_indexed(ManageAction::Sync, shown_in),
        Err(e) => return engine_error(ManageAction::Sync, &shown, &e),
    };
    match st.state {
        IndexState::Indexing => {
            return status_envelope(ctx, ManageAction::Sync, &root, &shown, &st)
                .status("not_ready")
                .reason("indexing")
                .done(false);
        }
        IndexState::IndexFailed => {
            return Env::new(
                ManageAction::Sync,
                &shown,
                "not_indexed",
                "The last indexing failed; there is no index to sync. Run create with force=true.",
            )
            .state("indexfailed")
            .reason("indexfailed")
            .hint("create", "create")
            .done(false);
        }
        _ => {}
    }
    if let Ok(Some(reason)) = ctx.engine.check_fingerprint(&root) {
        return requires_reindex(ctx, ManageAction::Sync, &root, &shown, reason.id());
    }
    if !root.is_dir() {
        return Env::new(
            ManageAction::Sync,
            &shown,
            "error",
            format!("Path '{shown}' no longer exists; clear its index with action=clear."),
        )
        .reason("path_not_found")
        .hint("clear", "clear")
        .done(true);
    }
    match ctx.engine.sync(&root) {
        Ok(s) => Env::new(
            ManageAction::Sync,
            &shown,
            "ok",
            format!("Sync complete: {} added, {} removed, {} modified.", s.added, s.removed, s.modified),
        )
        .state("sync_completed")
        .extra("stats", json!({"added": s.added, "removed": s.removed, "modified": s.modified, "rebuilt": s.rebuilt, "durationMs": s.duration_ms}))
        .done(false),
        Err(e) => engine_error(ManageAction::Sync, &shown, &e),
    }
}

fn not_indexed(action: ManageAction, shown: &str) -> CallToolResult {
    Env::new(
        action,
        shown,
        "not_indexed",
        format!("'{shown}' is not indexed. Create its index first."),
    )
    .state("not_indexed")
    .reason("not_indexed")
    .hint("create", "create")
    .done(false)
}

pub(crate) fn requires_reindex(
    ctx: &Ctx,
    action: ManageAction,
    root: &Path,
    shown: &str,
    reason: &str,
) -> CallToolResult {
    Env::new(
        action,
        shown,
        "requires_reindex",
        format!("The index of '{shown}' was built with a different engine configuration ({reason}); rebuild it with action=reindex before using it."),
    )
    .state("requires_reindex")
    .reason("requires_reindex")
    .hint("reindex", "reindex")
    .extra("compatibility", compatibility(ctx, root, reason))
    .done(false)
}

/// The `compatibility` block of a `requires_reindex` answer.
pub(crate) fn compatibility(ctx: &Ctx, root: &Path, reason: &str) -> Value {
    let indexed = ctx
        .engine
        .state(root)
        .ok()
        .flatten()
        .and_then(|s| s.fingerprint)
        .map(|f| wire::fingerprint(&f));
    let mut c = json!({
        "runtimeFingerprint": wire::fingerprint(ctx.engine.fingerprint()),
        "reindexReason": reason,
        "statusAtCheck": "requires_reindex",
    });
    put(&mut c, "indexedFingerprint", indexed);
    c
}

/// The envelope describing a tracked codebase's state.
fn status_envelope(
    ctx: &Ctx,
    action: ManageAction,
    root: &Path,
    shown: &str,
    st: &CodebaseState,
) -> Env {
    match st.state {
        IndexState::Indexing => {
            let live = ctx.jobs.view(root).map(|v| v.progress);
            let (pct, phase, done, total, chunks) = match &live {
                Some(p) => (
                    p.percentage,
                    p.phase.to_string(),
                    p.files_done,
                    p.files_total,
                    p.chunks,
                ),
                None => (
                    st.percentage,
                    st.phase.clone().unwrap_or_else(|| "scanning".into()),
                    st.files_done,
                    st.files_total,
                    0,
                ),
            };
            let mut e = Env::new(
                action,
                shown,
                "ok",
                format!("Indexing '{shown}': {pct:.0}% ({done}/{total} files, phase {phase})."),
            )
            .state("indexing")
            .hint("status", "status")
            .extra("progress", json!({"percentage": (pct * 10.0).round() / 10.0, "phase": phase, "filesDone": done, "filesTotal": total, "chunks": chunks}));
            if st.searchable_during_indexing {
                e = e.warn("PREVIOUS_INDEX_SEARCHABLE");
            }
            e
        }
        IndexState::Indexed | IndexState::SyncCompleted => {
            let mut stats = json!({
                "files": st.files,
                "chunks": st.chunks,
                "indexStatus": st.index_status.clone().unwrap_or_else(|| "completed".into()),
            });
            put(&mut stats, "indexedAt", st.indexed_at_ms.map(wire::time));
            put(&mut stats, "durationMs", st.duration_ms);
            put(&mut stats, "lastSyncAt", st.last_sync_ms.map(wire::time));
            if st.state == IndexState::SyncCompleted {
                put(&mut stats, "added", st.added);
                put(&mut stats, "removed", st.removed);
                put(&mut stats, "modified", st.modified);
            }
            let mut e = Env::new(
                action,
                shown,
                "ok",
                format!("'{shown}' is indexed: {} files, {} chunks.", st.files, st.chunks),
            )
            .state(st.state.id())
            .extra("stats", stats)
            .extra("compatibility", json!({"runtimeFingerprint": wire::fingerprint(ctx.engine.fingerprint()), "indexedFingerprint": st.fingerprint.as_ref().map(wire::fingerprint), "statusAtCheck": st.state.id()}));
            if let Some(note) = &st.error_message {
                e = e.warn("LAST_REBUILD_FAILED");
                e.message = format!("{} Note: {note}", e.message);
            }
            e
        }
        IndexState::IndexFailed => Env::new(
            action,
            shown,
            "error",
            format!(
                "Indexing '{shown}' failed: {}",
                st.error_message.as_deref().unwrap_or("unknown error")
            ),
        )
        .state("indexfailed")
        .reason("indexfailed")
        .hint("create", "create")
        .extra("progress", json!({"percentage": st.percentage, "phase": st.phase.clone().unwrap_or_else(|| "failed".into()), "filesDone": st.files_done, "filesTotal": st.files_total, "chunks": 0})),
        IndexState::RequiresReindex => Env::new(
            action,
            shown,
            "requires_reindex",
            format!(
                "The index of '{shown}' must be rebuilt ({}).",
                st.reason.as_deref().unwrap_or("fingerprint_mismatch")
            ),
        )
        .state("requires_reindex")
        .reason("requires_reindex")
        .hint("reindex", "reindex")
        .extra(
            "compatibility",
            compatibility(
                ctx,
                root,
                st.reason.as_deref().unwrap_or("fingerprint_mismatch"),
            ),
        ),
    }
}

fn status(ctx: &Ctx, abs: &Path, shown_in: &str) -> CallToolResult {
    let root = canonical_or_normal(abs);
    let shown = wire::display(&root);
    // Gate on the fingerprint first: it may move the codebase to requires_reindex.
    let _ = ctx.engine.check_fingerprint(&root);
    match ctx.engine.state(&root) {
        Ok(Some(st)) => {
            let is_error = st.state == IndexState::IndexFailed;
            status_envelope(ctx, ManageAction::Status, &root, &shown, &st).done(is_error)
        }
        Ok(None) => not_indexed(ManageAction::Status, shown_in),
        Err(e) => engine_error(ManageAction::Status, &shown, &e),
    }
}

fn clear(ctx: &Ctx, abs: &Path, shown_in: &str) -> CallToolResult {
    let root = canonical_or_normal(abs);
    let shown = wire::display(&root);
    // A build of this process is cancelled first; it stops at its next batch.
    if ctx.jobs.cancel(&root) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while ctx.jobs.is_running(&root) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    match ctx.engine.clear(&root) {
        Ok(true) => Env::new(
            ManageAction::Clear,
            &shown,
            "ok",
            format!("The index of '{shown}' was removed."),
        )
        .state("not_indexed")
        .hint("create", "create")
        .done(false),
        Ok(false) => Env::new(
            ManageAction::Clear,
            shown_in,
            "ok",
            format!("'{shown_in}' was not indexed; nothing to clear."),
        )
        .state("not_indexed")
        .warn("NOTHING_TO_CLEAR")
        .done(false),
        Err(CoreError::Busy(_)) => Env::new(
            ManageAction::Clear,
            &shown,
            "blocked",
            "Another process is building this index; clear it once that build finishes.",
        )
        .state("indexing")
        .reason("indexing")
        .hint("status", "status")
        .done(false),
        Err(e) => engine_error(ManageAction::Clear, &shown, &e),
    }
}
