//! The freshness decision before an index answers (`search_codebase`, `call_graph`): trust
//! a recent check of the tree, or layer the changes the watcher saw over the published
//! generation, or join the sync of the codebase already in flight, or start one.

use std::path::Path;
use std::time::Instant;

use satori_core::now_ms;
use satori_protocol::envelope::{
    FreshnessDecision, FreshnessMode, SyncStats, warnings as warning_codes,
};

use crate::service::Service;
use crate::syncs::{Caller, SyncFailure};
use crate::to_proto::{self, time};

/// Freshness before searching, in this order: when the watcher saw edits since the last
/// sync, layer the changed files over the published generation and search at once while a
/// sync writes them down in the background (`synced`); when it saw changes a layer cannot
/// hold (a new directory, ignore rules, many files), join the sync of this root already in
/// flight (`coalesced`) or sync (`synced`, `reconciled_ignore_change` when ignore rules
/// changed), as when the last check of the tree is older than the threshold; else skip
/// (`skipped_recent`). The last check counts only when this process made it: the time
/// another process recorded says nothing of edits made since while no watcher of this
/// process saw them, so a process that has not checked the tree itself within the threshold
/// (every `satori-cli` call, a server just started) syncs, which for an unchanged tree is a
/// `stat` of what the last sync saw (see `Engine::checked_here`). `None` when the caller's
/// request was cancelled (or the server is closing) before the sync ended.
pub(crate) fn ensure_fresh(
    service: &Service,
    root: &Path,
    last_sync_ms: Option<u64>,
    caller: &Caller,
    warnings: &mut Vec<String>,
) -> Option<FreshnessDecision> {
    let now = now_ms();
    let threshold = service.config.sync_threshold_ms;
    let age = last_sync_ms.map(|t| now.saturating_sub(t));
    let checked = |mode| FreshnessDecision {
        checked_at: Some(time(now)),
        ..FreshnessDecision::new(mode)
    };
    let must_sync = service.syncs.in_flight(root) || service.syncs.is_dirty(root);
    let checked_here = service
        .engine
        .checked_here(root)
        .is_some_and(|t| now.saturating_sub(t) < threshold);
    if !must_sync
        && checked_here
        && let Some(age) = age
        && age < threshold
    {
        return Some(FreshnessDecision {
            threshold_ms: Some(threshold),
            last_sync_at: last_sync_ms.map(time),
            age_ms: Some(age),
            ..checked(FreshnessMode::SkippedRecent)
        });
    }
    let started = Instant::now();
    if must_sync && let Some(layered) = service.syncs.layerable(root) {
        let (paths, version) = layered;
        if let Ok(s) = service.engine.layer_changes(root, &paths, version) {
            // The watcher starts the sync once the edits pause for its debounce; a search
            // starts it only when that did not happen (it failed, or could not run).
            let debounce = service.config.watch.unwrap_or_default();
            if service.syncs.is_dirty(root) && !service.syncs.changed_within(root, debounce) {
                service.syncs.sync_in_background(root);
            }
            return Some(FreshnessDecision {
                threshold_ms: Some(threshold),
                last_sync_at: last_sync_ms.map(time),
                stats: Some(SyncStats {
                    added: s.added,
                    removed: s.removed,
                    modified: s.modified,
                }),
                duration_ms: Some(started.elapsed().as_millis() as u64),
                ..checked(FreshnessMode::Synced)
            });
        }
    }
    let joined = service.syncs.sync(root, caller);
    let edits = (joined.edits > 0).then_some(joined.edits);
    match joined.result {
        Ok(s) => Some(FreshnessDecision {
            threshold_ms: Some(threshold),
            last_sync_at: last_sync_ms.map(time),
            stats: Some(to_proto::sync_stats(&s)),
            duration_ms: Some(started.elapsed().as_millis() as u64),
            coalesced_edits: edits,
            ..checked(if joined.coalesced {
                FreshnessMode::Coalesced
            } else if s.ignore_rules_changed {
                FreshnessMode::ReconciledIgnoreChange
            } else {
                FreshnessMode::Synced
            })
        }),
        Err(SyncFailure::Cancelled) if caller.cancelled() => None,
        // The server is closing: answer from the published generation, saying so.
        Err(SyncFailure::Cancelled) => {
            warnings.push(warning_codes::FRESHNESS_SYNC_FAILED.to_owned());
            Some(FreshnessDecision {
                error_message: Some(
                    "the sync was cancelled because the server is shutting down; the previous index was searched"
                        .to_owned(),
                ),
                ..checked(FreshnessMode::SyncFailed)
            })
        }
        // Another process is building or syncing this index: its result is what the
        // search reads next; this one uses the published generation meanwhile.
        Err(SyncFailure::Busy) => Some(checked(FreshnessMode::Coalesced)),
        // Cleared while the sync ran: the search that follows finds no index and says so.
        Err(SyncFailure::Missing) => {
            warnings.push(warning_codes::FRESHNESS_SYNC_FAILED.to_owned());
            Some(FreshnessDecision {
                error_message: Some("the index was cleared while it was being synced".to_owned()),
                ..checked(FreshnessMode::SyncFailed)
            })
        }
        Err(SyncFailure::Failed(message)) => {
            warnings.push(warning_codes::FRESHNESS_SYNC_FAILED.to_owned());
            Some(FreshnessDecision {
                error_message: Some(message),
                ..checked(FreshnessMode::SyncFailed)
            })
        }
    }
}
