//! `manage_index`: create (background), reindex (background, with preflight), sync
//! (foreground), status, clear.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rmcp::model::CallToolResult;
use serde_json::json;

use satori_core::Error as CoreError;
use satori_core::{
    CodebaseState, IndexOptions, IndexState as CoreIndexState, Preflight as CorePreflight,
};
use satori_protocol::envelope::{
    Compatibility, Hint, IndexState, ManageIndexEnvelope, ManageStats, Preflight,
    PreflightConfidence, PreflightOutcome, ReindexReason, Status, reasons, sorted_warnings,
    warnings,
};
use satori_protocol::{MANAGE_INDEX, ManageAction, ManageIndexParams, SEARCH_CODEBASE};

use super::gate::{Stop, Verb, inside_roots};
use super::{canonical_or_normal, reply, require_absolute};
use crate::service::Service;
use crate::session::Session;
use crate::syncs::{Caller, SyncFailure};
use crate::to_proto::{self, display, manage_hint};

/// One `manage_index` answer under construction, and whether it is an error result.
struct Env {
    envelope: ManageIndexEnvelope,
    is_error: bool,
}

impl Env {
    fn new(action: ManageAction, path: &str, status: Status, message: impl Into<String>) -> Env {
        Env {
            envelope: ManageIndexEnvelope::new(action, path, status, message),
            is_error: false,
        }
    }

    /// The answer of a gate that stopped the action (the client's roots).
    fn stopped(action: ManageAction, path: &str, stop: Stop) -> Env {
        let mut env = Env::new(action, path, stop.status, stop.message);
        env.envelope.reason = stop.reason.map(str::to_owned);
        env.is_error = stop.is_error;
        env
    }

    /// Marks the answer as a failed call (`isError: true`).
    fn error(mut self) -> Self {
        self.is_error = true;
        self
    }

    fn state(mut self, state: IndexState) -> Self {
        self.envelope.state = Some(state);
        self
    }

    fn status(mut self, status: Status) -> Self {
        self.envelope.status = status;
        self
    }

    fn reason(mut self, reason: &str) -> Self {
        self.envelope.reason = Some(reason.to_owned());
        self
    }

    /// Adds the `manage_index` call `action` on this path as the hint of the same name.
    fn hint(mut self, action: ManageAction) -> Self {
        let hint = Some(manage_hint(action, &self.envelope.path));
        let hints = &mut self.envelope.hints;
        match action {
            ManageAction::Create => hints.create = hint,
            ManageAction::Reindex => hints.reindex = hint,
            ManageAction::Sync => hints.sync = hint,
            ManageAction::Status => hints.status = hint,
            ManageAction::Clear => hints.clear = hint,
        }
        self
    }

    fn warn(mut self, warning: &str) -> Self {
        self.envelope.warnings.push(warning.to_owned());
        self
    }

    /// Appends a note to the message (and to the human text, which repeats it).
    fn note(mut self, note: &str) -> Self {
        let text = format!("{} Note: {note}", self.envelope.message);
        self.envelope.human_text.clone_from(&text);
        self.envelope.message = text;
        self
    }

    fn with(mut self, f: impl FnOnce(&mut ManageIndexEnvelope)) -> Self {
        f(&mut self.envelope);
        self
    }

    fn done(mut self) -> CallToolResult {
        self.envelope.warnings = sorted_warnings(std::mem::take(&mut self.envelope.warnings));
        reply(&self.envelope, self.is_error)
    }
}

/// How the refusal of the client's roots names each action.
fn verb(action: ManageAction) -> Verb {
    let (verb, done) = match action {
        ManageAction::Create | ManageAction::Reindex | ManageAction::Sync => ("index", "indexed"),
        ManageAction::Status => ("report on indexes", "reported on"),
        ManageAction::Clear => ("clear indexes", "cleared"),
    };
    Verb { verb, done }
}

pub(crate) fn handle(session: &Session, p: ManageIndexParams, caller: &Caller) -> CallToolResult {
    let service = session.service();
    let abs = match require_absolute(MANAGE_INDEX, &p.path) {
        Ok(a) => a,
        Err(r) => return r,
    };
    let shown = display(&abs);
    // The client's roots come first, for every action: nothing outside them is created,
    // rebuilt, synced, reported on or cleared, and whether anything is there is not told
    // either (a missing directory is refused like an existing one).
    if let Err(stop) = inside_roots(session, &shown, &abs, verb(p.action)) {
        return Env::stopped(p.action, &shown, stop).done();
    }
    match p.action {
        ManageAction::Create => create(service, &p, &abs, &shown),
        ManageAction::Reindex => reindex(service, &p, &abs, &shown),
        ManageAction::Sync => sync(service, &abs, &shown, caller),
        ManageAction::Status => status(service, &abs, &shown),
        ManageAction::Clear => clear(service, &abs, &shown),
    }
    .done()
}

/// Validates that the path is an existing directory and returns its canonical form.
fn existing_dir(action: ManageAction, abs: &Path, shown: &str) -> Result<PathBuf, Env> {
    satori_core::Engine::canonical_root(abs).map_err(|e| {
        let (reason, msg) = match e {
            CoreError::NotFound(_) => (
                reasons::PATH_NOT_FOUND,
                format!("Path '{shown}' does not exist."),
            ),
            CoreError::NotADirectory(_) => (
                reasons::NOT_A_DIRECTORY,
                format!("Path '{shown}' is not a directory; give the codebase root directory."),
            ),
            other => (
                reasons::IO_ERROR,
                format!("Cannot resolve '{shown}': {other}"),
            ),
        };
        Env::new(action, shown, Status::Error, msg)
            .reason(reason)
            .error()
    })
}

/// The `blocked` answer for a directory the policy refuses to track. It names the rule and,
/// deliberately, offers no hint: there is no next step that would index this directory.
fn refused_root(service: &Service, action: ManageAction, root: &Path, shown: &str) -> Option<Env> {
    let refusal = service.engine.refuse_root(root)?;
    Some(
        Env::new(
            action,
            shown,
            Status::Blocked,
            format!(
                "Satori does not index '{shown}': {refusal}. Give the root directory of a project."
            ),
        )
        .reason(reasons::ROOT_REFUSED)
        .warn(&format!("{}:{}", warnings::ROOT_REFUSED, refusal.id())),
    )
}

fn engine_error(action: ManageAction, shown: &str, e: &CoreError) -> Env {
    match e {
        CoreError::Busy(_) => Env::new(
            action,
            shown,
            Status::NotReady,
            format!("Another process is building the index of '{shown}' right now; poll status until it finishes."),
        )
        .state(IndexState::Indexing)
        .reason(reasons::INDEXING)
        .hint(ManageAction::Status),
        // Cleared (by another call or process) while this one ran.
        CoreError::IndexMissing(_) => not_indexed(action, shown),
        other => Env::new(action, shown, Status::Error, format!("{other}"))
            .reason(reasons::ENGINE_ERROR)
            .error(),
    }
}

fn start(
    service: &Service,
    action: ManageAction,
    root: &Path,
    shown: &str,
    opts: IndexOptions,
    what: &str,
) -> Env {
    // A build replaces whatever a sync of this process (the watcher's, a search's) would
    // publish: stop that sync rather than answer that the index is busy.
    service.syncs.cancel(root, Duration::from_secs(30));
    match service.engine.start_index(root, opts) {
        Ok(job) => {
            service.jobs.spawn(job);
            Env::new(
                action,
                shown,
                Status::Ok,
                format!("{what} of '{shown}' started in the background. Poll manage_index status while state is \"indexing\"; \"indexed\" or \"sync_completed\" means it is ready."),
            )
            .state(IndexState::Indexing)
            .hint(ManageAction::Status)
            .with(|e| {
                e.progress = Some(satori_protocol::envelope::Progress {
                    percentage: 0.0,
                    phase: "scanning".to_owned(),
                    files_done: 0,
                    files_total: 0,
                    chunks: 0,
                });
            })
        }
        Err(e) => engine_error(action, shown, &e),
    }
}

/// How long `create` keeps trying when the writer lock is taken but no build is recorded
/// yet (another process between taking the lock and recording `indexing`, or a `clear`).
const CREATE_BUSY_WAIT: Duration = Duration::from_secs(10);

/// Parallel `create` calls on one path must all end with the one index: a caller that finds
/// another build running joins it (answers its `indexing` status, which a client waits on),
/// and one that finds the lock held with no build recorded yet tries again shortly.
fn create(service: &Service, p: &ManageIndexParams, abs: &Path, shown_in: &str) -> Env {
    let root = match existing_dir(ManageAction::Create, abs, shown_in) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let shown = display(&root);
    if let Some(refused) = refused_root(service, ManageAction::Create, &root, &shown) {
        return refused;
    }
    let deadline = Instant::now() + CREATE_BUSY_WAIT;
    loop {
        let env = create_once(service, p, &root, &shown);
        let busy = env.envelope.status == Status::NotReady;
        if !busy || Instant::now() >= deadline {
            return env;
        }
        // A build that recorded itself meanwhile is joined.
        if let Ok(Some(st)) = service.engine.state(&root)
            && st.state == CoreIndexState::Indexing
        {
            return status_envelope(service, ManageAction::Create, &root, &shown, &st)
                .warn(warnings::INDEXING_ALREADY_RUNNING);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One attempt at `create` on the canonical `root`.
fn create_once(service: &Service, p: &ManageIndexParams, root: &Path, shown: &str) -> Env {
    let current = match service.engine.state(root) {
        Ok(s) => s,
        Err(e) => return engine_error(ManageAction::Create, shown, &e),
    };
    if let Some(st) = &current
        && !p.force()
    {
        match st.state {
            CoreIndexState::Indexing => {
                return status_envelope(service, ManageAction::Create, root, shown, st)
                    .warn(warnings::INDEXING_ALREADY_RUNNING);
            }
            CoreIndexState::Indexed | CoreIndexState::SyncCompleted
                if service
                    .engine
                    .check_fingerprint(root)
                    .ok()
                    .flatten()
                    .is_none() =>
            {
                return Env::new(
                        ManageAction::Create,
                        shown,
                        Status::Ok,
                        format!("'{shown}' is already indexed ({} files, {} chunks). Search it, run sync to pick up changes, or create with force=true to rebuild.", st.files, st.chunks),
                    )
                    .state(to_proto::index_state(st.state))
                    .warn(warnings::ALREADY_INDEXED)
                    .hint(ManageAction::Status)
                    .hint(ManageAction::Sync)
                    .with(|e| {
                        e.hints.search = Some(Hint::new(
                            SEARCH_CODEBASE,
                            json!({"path": shown, "query": "<what you are looking for>"}),
                        ));
                    });
            }
            _ => {}
        }
    }
    let opts = IndexOptions {
        custom_extensions: p.custom_extensions().to_vec(),
        ignore_patterns: p.ignore_patterns().to_vec(),
    };
    start(service, ManageAction::Create, root, shown, opts, "Indexing")
}

fn reindex(service: &Service, p: &ManageIndexParams, abs: &Path, shown_in: &str) -> Env {
    let root = match existing_dir(ManageAction::Reindex, abs, shown_in) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let shown = display(&root);
    if let Some(refused) = refused_root(service, ManageAction::Reindex, &root, &shown) {
        return refused;
    }
    let st = match service.engine.state(&root) {
        Ok(Some(st)) => st,
        Ok(None) => return not_indexed(ManageAction::Reindex, &shown),
        Err(e) => return engine_error(ManageAction::Reindex, &shown, &e),
    };
    if st.state == CoreIndexState::Indexing {
        return status_envelope(service, ManageAction::Reindex, &root, &shown, &st)
            .warn(warnings::INDEXING_ALREADY_RUNNING);
    }
    let (outcome, confidence, warning) = match service.engine.preflight(&root) {
        Ok(CorePreflight::IgnoreOnly) => (
            PreflightOutcome::ReindexUnnecessaryIgnoreOnly,
            PreflightConfidence::High,
            None,
        ),
        Ok(CorePreflight::ReindexRequired) => (
            PreflightOutcome::ReindexRequired,
            PreflightConfidence::High,
            None,
        ),
        Err(_) => (
            PreflightOutcome::Unknown,
            PreflightConfidence::Low,
            Some(warnings::REINDEX_PREFLIGHT_UNKNOWN),
        ),
    };
    let preflight = Preflight {
        outcome,
        confidence,
        probe_failed: None,
    };
    // An index that must be rebuilt anyway (damaged, other configuration) is never blocked.
    if outcome == PreflightOutcome::ReindexUnnecessaryIgnoreOnly
        && !p.allow_unnecessary_reindex()
        && st.state != CoreIndexState::RequiresReindex
    {
        return Env::new(
            ManageAction::Reindex,
            &shown,
            Status::Blocked,
            "Only ignore rules changed since the last index; run sync to apply them (much cheaper), or pass allowUnnecessaryReindex=true to rebuild anyway.",
        )
        .state(to_proto::index_state(st.state))
        .reason(reasons::UNNECESSARY_REINDEX_IGNORE_ONLY)
        .warn(warnings::REINDEX_UNNECESSARY_IGNORE_ONLY)
        .hint(ManageAction::Sync)
        .with(|e| e.preflight = Some(preflight));
    }
    let opts = IndexOptions {
        custom_extensions: st.custom_extensions.clone(),
        ignore_patterns: st.ignore_patterns.clone(),
    };
    let mut env = start(
        service,
        ManageAction::Reindex,
        &root,
        &shown,
        opts,
        "Rebuild",
    )
    .with(|e| e.preflight = Some(preflight));
    if let Some(w) = warning {
        env = env.warn(w);
    }
    env
}

fn sync(service: &Service, abs: &Path, shown_in: &str, caller: &Caller) -> Env {
    let root = canonical_or_normal(abs);
    let shown = display(&root);
    if let Some(refused) = refused_root(service, ManageAction::Sync, &root, &shown) {
        return refused;
    }
    let st = match service.engine.state(&root) {
        Ok(Some(st)) => st,
        Ok(None) => return not_indexed(ManageAction::Sync, shown_in),
        Err(e) => return engine_error(ManageAction::Sync, &shown, &e),
    };
    match st.state {
        // A sync of this process rebuilding shows as `indexing`: that one is joined below.
        CoreIndexState::Indexing if !service.syncs.in_flight(&root) => {
            return status_envelope(service, ManageAction::Sync, &root, &shown, &st)
                .status(Status::NotReady)
                .reason(reasons::INDEXING);
        }
        CoreIndexState::IndexFailed => {
            return Env::new(
                ManageAction::Sync,
                &shown,
                Status::NotIndexed,
                "The last indexing failed; there is no index to sync. Run create with force=true.",
            )
            .state(IndexState::IndexFailed)
            .reason(reasons::INDEX_FAILED)
            .hint(ManageAction::Create);
        }
        _ => {}
    }
    if let Ok(Some(reason)) = service.engine.check_fingerprint(&root) {
        let reason = to_proto::reindex_reason(reason);
        // The check may just have recorded what is damaged.
        let recorded = service.engine.state(&root).ok().flatten().unwrap_or(st);
        let why = match (reason, &recorded.error_message) {
            (ReindexReason::IndexDamaged, Some(message)) => format!("is damaged ({message})"),
            _ => format!("was built with a different engine configuration ({reason})"),
        };
        return requires_reindex(
            service,
            ManageAction::Sync,
            &root,
            &shown,
            reason,
            format!(
                "The index of '{shown}' {why}; rebuild it with action=reindex before using it."
            ),
        );
    }
    if !root.is_dir() {
        return Env::new(
            ManageAction::Sync,
            &shown,
            Status::Error,
            format!("Path '{shown}' no longer exists; clear its index with action=clear."),
        )
        .reason(reasons::PATH_NOT_FOUND)
        .hint(ManageAction::Clear)
        .error();
    }
    // Through the syncs of this process: a sync of this codebase already running (the
    // watcher's, a search's) is joined instead of failing as busy.
    match service.syncs.sync(&root, caller).result {
        // Another process took the index between the check above and this sync: its sync
        // writes the changes down, as above.
        Ok(s) if s.layered => {
            let st = match service.engine.state(&root) {
                Ok(Some(now)) => now,
                _ => st,
            };
            status_envelope(service, ManageAction::Sync, &root, &shown, &st)
                .status(Status::NotReady)
                .reason(reasons::INDEXING)
        }
        Ok(s) => Env::new(
            ManageAction::Sync,
            &shown,
            Status::Ok,
            format!(
                "Sync complete: {} added, {} removed, {} modified.",
                s.added, s.removed, s.modified
            ),
        )
        .state(IndexState::SyncCompleted)
        .with(|e| e.stats = Some(ManageStats::Sync(to_proto::sync_run_stats(&s)))),
        Err(SyncFailure::Busy) => {
            engine_error(ManageAction::Sync, &shown, &CoreError::Busy(root.clone()))
        }
        Err(SyncFailure::Cancelled) => Env::new(
            ManageAction::Sync,
            &shown,
            Status::Error,
            "The sync was cancelled; the previous index stays in use.",
        )
        .reason(reasons::CANCELLED)
        .error(),
        // Cleared by another call while this sync ran: the documented answer of a sync
        // without an index, not an engine error.
        Err(SyncFailure::Missing) => not_indexed(ManageAction::Sync, &shown),
        Err(SyncFailure::Failed(message)) => {
            Env::new(ManageAction::Sync, &shown, Status::Error, message)
                .reason(reasons::ENGINE_ERROR)
                .error()
        }
    }
}

fn not_indexed(action: ManageAction, shown: &str) -> Env {
    Env::new(
        action,
        shown,
        Status::NotIndexed,
        format!("'{shown}' is not indexed. Create its index first."),
    )
    .state(IndexState::NotIndexed)
    .reason(reasons::NOT_INDEXED)
    .hint(ManageAction::Create)
}

/// A `requires_reindex` answer: the state, the reason code, the reindex hint and the
/// `compatibility` block, with the message of the action that found it.
fn requires_reindex(
    service: &Service,
    action: ManageAction,
    root: &Path,
    shown: &str,
    reason: ReindexReason,
    message: String,
) -> Env {
    Env::new(action, shown, Status::RequiresReindex, message)
        .state(IndexState::RequiresReindex)
        .reason(reasons::REQUIRES_REINDEX)
        .hint(ManageAction::Reindex)
        .with(|e| e.compatibility = Some(compatibility(service, root, reason)))
}

/// The `compatibility` block of a `requires_reindex` answer.
fn compatibility(service: &Service, root: &Path, reason: ReindexReason) -> Compatibility {
    let indexed = service
        .engine
        .state(root)
        .ok()
        .flatten()
        .and_then(|s| s.fingerprint);
    to_proto::incompatible(service.engine.fingerprint(), indexed.as_ref(), reason)
}

/// The envelope describing a tracked codebase's state.
fn status_envelope(
    service: &Service,
    action: ManageAction,
    root: &Path,
    shown: &str,
    st: &CodebaseState,
) -> Env {
    match st.state {
        CoreIndexState::Indexing => {
            let live = service.jobs.view(root).map(|v| v.progress);
            let progress = to_proto::progress(live.as_ref(), st);
            let pct = live.as_ref().map_or(st.percentage, |p| p.percentage);
            let mut e = Env::new(
                action,
                shown,
                Status::Ok,
                format!(
                    "Indexing '{shown}': {pct:.0}% ({}/{} files, phase {}).",
                    progress.files_done, progress.files_total, progress.phase
                ),
            )
            .state(IndexState::Indexing)
            .hint(ManageAction::Status)
            .with(|e| e.progress = Some(progress));
            if st.searchable_during_indexing {
                e = e.warn(warnings::PREVIOUS_INDEX_SEARCHABLE);
            }
            e
        }
        CoreIndexState::Indexed | CoreIndexState::SyncCompleted => {
            let mut e = Env::new(
                action,
                shown,
                Status::Ok,
                format!(
                    "'{shown}' is indexed: {} files, {} chunks.",
                    st.files, st.chunks
                ),
            )
            .state(to_proto::index_state(st.state))
            .with(|e| {
                e.stats = Some(ManageStats::Index(to_proto::index_stats(st)));
                e.compatibility = Some(to_proto::compatible(service.engine.fingerprint(), st));
            });
            if let Some(note) = &st.error_message {
                e = e.warn(warnings::LAST_REBUILD_FAILED).note(note);
            }
            if st.unreadable_files > 0 {
                let n = st.unreadable_files;
                e = e
                    .warn(&warnings::with_detail(warnings::UNREADABLE_FILES, n))
                    .note(&sampled(
                        &format!("{n} file(s) could not be read and are retried by every sync"),
                        &st.unreadable_sample,
                        n,
                    ));
            }
            if st.non_utf8_names > 0 {
                let n = st.non_utf8_names;
                e = e
                    .warn(&warnings::with_detail(warnings::NON_UTF8_NAMES, n))
                    .note(&sampled(
                        &format!("{n} file or directory name(s) are not valid UTF-8, so they are not indexed (rename them to index them)"),
                        &st.non_utf8_sample,
                        n,
                    ));
            }
            e
        }
        CoreIndexState::IndexFailed => Env::new(
            action,
            shown,
            Status::Error,
            format!(
                "Indexing '{shown}' failed: {}",
                st.error_message.as_deref().unwrap_or("unknown error")
            ),
        )
        .state(IndexState::IndexFailed)
        .reason(reasons::INDEX_FAILED)
        .hint(ManageAction::Create)
        .with(|e| e.progress = Some(to_proto::failed_progress(st))),
        CoreIndexState::RequiresReindex => {
            let reason = to_proto::recorded_reindex_reason(st);
            // A damaged index says which file is damaged.
            let why = match (reason, &st.error_message) {
                (ReindexReason::IndexDamaged, Some(message)) => message.clone(),
                _ => reason.to_string(),
            };
            requires_reindex(
                service,
                action,
                root,
                shown,
                reason,
                format!("The index of '{shown}' must be rebuilt ({why})."),
            )
        }
    }
}

/// A status note naming some of the paths it counts: `head`, the sample, and an ellipsis when
/// the count is larger than the sample.
fn sampled(head: &str, sample: &[String], count: u64) -> String {
    let more = if count > sample.len() as u64 {
        ", ..."
    } else {
        ""
    };
    format!("{head}: {}{more}.", sample.join(", "))
}

fn status(service: &Service, abs: &Path, shown_in: &str) -> Env {
    let root = canonical_or_normal(abs);
    let shown = display(&root);
    // Gate on the fingerprint and the integrity of the index first: either may move the
    // codebase to requires_reindex.
    let _ = service.engine.check_fingerprint(&root);
    let _ = service.engine.check_index(&root);
    match service.engine.state(&root) {
        Ok(Some(st)) => {
            let env = status_envelope(service, ManageAction::Status, &root, &shown, &st);
            if st.state == CoreIndexState::IndexFailed {
                env.error()
            } else {
                env
            }
        }
        Ok(None) => not_indexed(ManageAction::Status, shown_in),
        Err(e) => engine_error(ManageAction::Status, &shown, &e),
    }
}

fn clear(service: &Service, abs: &Path, shown_in: &str) -> Env {
    let root = canonical_or_normal(abs);
    let shown = display(&root);
    // A build of this process is cancelled first; it stops at its next batch, leaving its
    // record for the clear below to remove (a concurrent call reads `indexing` meanwhile, not
    // a failure).
    if service.jobs.cancel_to_clear(&root) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while service.jobs.is_running(&root) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    service.syncs.cancel(&root, Duration::from_secs(30));
    let cleared = service.engine.clear(&root);
    // The watcher stops watching what is no longer indexed.
    service.roots_changed.notify_one();
    match cleared {
        Ok(true) => Env::new(
            ManageAction::Clear,
            &shown,
            Status::Ok,
            format!("The index of '{shown}' was removed."),
        )
        .state(IndexState::NotIndexed)
        // A root that may not be tracked (cleared from an older state) is not offered again.
        .with(|e| {
            if service.engine.refuse_root(&root).is_none() {
                e.hints.create = Some(manage_hint(ManageAction::Create, &shown));
            }
        }),
        Ok(false) => Env::new(
            ManageAction::Clear,
            shown_in,
            Status::Ok,
            format!("'{shown_in}' was not indexed; nothing to clear."),
        )
        .state(IndexState::NotIndexed)
        .warn(warnings::NOTHING_TO_CLEAR),
        Err(CoreError::Busy(_)) => Env::new(
            ManageAction::Clear,
            &shown,
            Status::Blocked,
            "Another process is building this index; clear it once that build finishes.",
        )
        .state(IndexState::Indexing)
        .reason(reasons::INDEXING)
        .hint(ManageAction::Status),
        Err(e) => engine_error(ManageAction::Clear, &shown, &e),
    }
}
