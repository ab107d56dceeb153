//! What a long-running (`mcp` mode) server does between requests: watch the indexed
//! codebases and sync one soon after its files change, and re-check every indexed codebase
//! now and then to catch what the watcher missed (events lost to an overflow, a filesystem
//! that reports none, edits made while no server ran).
//!
//! A change matters when the walker would see it: the engine's [`PathFilter`] decides, so
//! `.git/`, dependency directories and ignored files never cause a sync. An edit of a root
//! `.gitignore`/`.satoriignore` does, and that sync reconciles the index with the new rules.
//! Changes are debounced per codebase: the sync starts once the codebase has been quiet for
//! the debounce, or at the latest [`MAX_DEBOUNCES`] debounces after the first change of a
//! burst, so a tree that never stops changing is still synced. Syncs go through
//! [`Syncs`](crate::syncs::Syncs), so a search arriving meanwhile joins the same sync, and a
//! search between the change and the sync syncs first (the root is marked dirty).
//!
//! A change is delivered to every watched codebase whose root holds it: codebases can nest,
//! and an edit under an inner root changes the outer codebase too. When the watcher reports
//! that it lost events (the kernel's queue overflowed) every codebase may have changed, and
//! each is synced by a walk. A root that is removed takes its watch with it: it is looked
//! for again every [`ROOT_POLL`] (and by the periodic re-check), and once it is back it is
//! watched again and synced by a walk.
//!
//! A codebase is synced only when it is searchable here: not while it is being indexed, not
//! when it failed or requires a reindex.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use notify::event::{EventKind, ModifyKind};
use notify::{RecursiveMode, Watcher as _};
use satori_core::{Engine, IndexState, PathFilter};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio::time::Instant;

use crate::jobs::Jobs;
use crate::logging::{Diagnostics, Level, Log};
use crate::syncs::Syncs;

/// A burst of changes delays its sync by at most this many debounce periods.
const MAX_DEBOUNCES: u32 = 4;

/// How often a removed root is looked for, to watch it again once it is back.
const ROOT_POLL: Duration = Duration::from_millis(500);

/// What the watcher reports to the background task.
#[derive(Debug, PartialEq)]
enum Notice {
    /// Something at this path changed.
    Changed(PathBuf),
    /// Events were lost: anything under any watched root may have changed.
    Rescan,
}

/// The notices one report of the watcher gives.
fn notices(ev: notify::Result<notify::Event>) -> Vec<Notice> {
    match ev {
        Ok(ev) if ev.need_rescan() => vec![Notice::Rescan],
        Ok(ev) if changes_content(&ev.kind) => ev.paths.into_iter().map(Notice::Changed).collect(),
        Ok(_) => Vec::new(),
        // The backend failed to read its events: what they said is unknown.
        Err(_) => vec![Notice::Rescan],
    }
}

/// The background work of a server; it stops when this is dropped.
pub struct Background {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Background {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A codebase being watched (or only re-checked, without a watcher).
struct Root {
    /// `None` until the rules could be read; every change then counts.
    filter: Option<PathFilter>,
    /// When the first change of the current burst arrived, and when the burst's sync is due.
    burst: Option<(Instant, Instant)>,
    /// The root directory that is watched (device and inode), to tell when it was
    /// replaced; `None` when unknown.
    identity: Option<(u64, u64)>,
    /// The root went away, and its watch with it: it is looked for every [`ROOT_POLL`].
    lost: bool,
}

/// The device and inode of the directory at `root`, when there is one.
fn identity(root: &Path) -> Option<(u64, u64)> {
    let m = std::fs::metadata(root).ok().filter(|m| m.is_dir())?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some((m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = m;
        Some((0, 0))
    }
}

/// What the background work reaches of the service: handles on the same engine, builds,
/// syncs and log. Not the service itself, which holds the background work: the task would
/// keep its own owner alive.
#[derive(Clone)]
pub(crate) struct Handles {
    pub engine: Arc<Engine>,
    pub jobs: Jobs,
    pub syncs: Arc<Syncs>,
    pub log: Log,
    /// Signalled when the set of indexed codebases may have changed.
    pub roots_changed: Arc<tokio::sync::Notify>,
}

/// Starts the watcher (debouncing changes by `debounce`) and the periodic re-check (every
/// `every`) over `handles`; `None` when neither is on (always in `cli` mode).
pub(crate) fn start(
    handles: Handles,
    debounce: Option<Duration>,
    every: Option<Duration>,
) -> Option<Background> {
    if debounce.is_none() && every.is_none() {
        return None;
    }
    let (tx, rx) = unbounded_channel();
    let watcher = match debounce {
        None => None,
        Some(_) => {
            let made = notify::recommended_watcher(move |ev: notify::Result<notify::Event>| {
                for notice in notices(ev) {
                    let _ = tx.send(notice);
                }
            });
            match made {
                Ok(w) => Some(Arc::new(Mutex::new(w))),
                Err(e) => {
                    handles.log.emit(
                        Level::Warning,
                        "watcher",
                        format_args!("satori: file watching is unavailable ({e}); codebases are re-checked periodically and before searches"),
                        || serde_json::json!({"event": "watcher_unavailable", "error": e.to_string()}),
                    );
                    None
                }
            }
        }
    };
    let task = tokio::spawn(run(handles, watcher, rx, debounce, every));
    Some(Background { task })
}

/// Event kinds that can change what is indexed. Opening or reading a file does not (a
/// write first shows up as `Access(Open)`), nor do permission or time changes alone.
fn changes_content(kind: &EventKind) -> bool {
    match kind {
        EventKind::Create(_) | EventKind::Remove(_) | EventKind::Any => true,
        EventKind::Modify(ModifyKind::Metadata(_)) => false,
        EventKind::Modify(_) => true,
        EventKind::Access(_) | EventKind::Other => false,
    }
}

type SharedWatcher = Arc<Mutex<notify::RecommendedWatcher>>;

async fn run(
    handles: Handles,
    watcher: Option<SharedWatcher>,
    mut events: UnboundedReceiver<Notice>,
    debounce: Option<Duration>,
    every: Option<Duration>,
) {
    let mut roots: HashMap<PathBuf, Root> = HashMap::new();
    refresh(&handles, watcher.as_ref(), &mut roots).await;
    // Without a watcher nothing sends events: the channel is closed from the start.
    let mut listening = watcher.is_some();
    let mut recheck_at = every.map(|d| Instant::now() + d);
    // Far enough never to fire; `sleep_until` needs some instant.
    let never = Instant::now() + Duration::from_secs(365 * 24 * 3600);
    loop {
        let next_burst = roots.values().filter_map(|r| r.burst.map(|b| b.1)).min();
        let poll_at = roots
            .values()
            .any(|r| r.lost)
            .then(|| Instant::now() + ROOT_POLL);
        let wake = next_burst
            .into_iter()
            .chain(recheck_at)
            .chain(poll_at)
            .min()
            .unwrap_or(never);
        tokio::select! {
            ev = events.recv(), if listening => match (ev, debounce) {
                (Some(Notice::Changed(path)), Some(debounce)) => {
                    // The root itself was removed or moved away: its watch is gone, even if
                    // a directory is already back in its place (with the same inode, maybe).
                    if let Some(entry) = roots.get_mut(&path) {
                        entry.lost = true;
                        check_roots(&handles, watcher.as_ref(), &mut roots, debounce).await;
                    }
                    on_change(&handles, &mut roots, &path, debounce);
                }
                (Some(Notice::Rescan), Some(debounce)) => {
                    handles.log.emit(
                        Level::Warning,
                        "watcher",
                        format_args!("satori: the file watcher lost events; every watched codebase is synced"),
                        || serde_json::json!({"event": "watcher_rescan"}),
                    );
                    for (root, entry) in roots.iter_mut() {
                        handles.syncs.mark_dirty(root, None);
                        arm(entry, debounce);
                    }
                }
                (Some(_), None) => {}
                (None, _) => listening = false,
            },
            _ = handles.roots_changed.notified() => {
                refresh(&handles, watcher.as_ref(), &mut roots).await;
            }
            _ = tokio::time::sleep_until(wake) => {
                let now = Instant::now();
                let due: Vec<PathBuf> = roots
                    .iter_mut()
                    .filter(|(_, r)| r.burst.is_some_and(|b| b.1 <= now))
                    .map(|(root, r)| {
                        r.burst = None;
                        root.clone()
                    })
                    .collect();
                for root in due {
                    sync_if_searchable(&handles, &root);
                }
                if let (Some(debounce), true) = (debounce, roots.values().any(|r| r.lost)) {
                    check_roots(&handles, watcher.as_ref(), &mut roots, debounce).await;
                }
                if let (Some(at), Some(every)) = (recheck_at, every)
                    && at <= now
                {
                    refresh(&handles, watcher.as_ref(), &mut roots).await;
                    if let Some(debounce) = debounce {
                        check_roots(&handles, watcher.as_ref(), &mut roots, debounce).await;
                    }
                    for root in roots.keys() {
                        sync_if_searchable(&handles, root);
                    }
                    recheck_at = Some(now + every);
                }
            }
        }
    }
}

/// Routes one changed path to every codebase whose root holds it (codebases can nest).
fn on_change(
    handles: &Handles,
    roots: &mut HashMap<PathBuf, Root>,
    path: &Path,
    debounce: Duration,
) {
    for (root, entry) in roots.iter_mut().filter(|(root, _)| path.starts_with(root)) {
        on_change_in(handles, root, entry, path, debounce);
    }
}

/// Notes a change at `path` under `root`: marks it dirty and (re)arms its burst, unless the
/// codebase's rules ignore the path.
fn on_change_in(handles: &Handles, root: &Path, entry: &mut Root, path: &Path, debounce: Duration) {
    let control = entry
        .filter
        .as_ref()
        .is_some_and(|f| f.is_ignore_control(path));
    if let Some(f) = &entry.filter
        && !f.is_relevant(path)
    {
        return;
    }
    if control {
        // New ignore rules decide which later changes matter.
        entry.filter = handles.engine.path_filter(root).ok();
    }
    // A change of the rules is applied by a walk; any other can be layered by path.
    handles.syncs.mark_dirty(root, (!control).then_some(path));
    arm(entry, debounce);
}

/// Starts or extends the burst of changes of a codebase.
fn arm(entry: &mut Root, debounce: Duration) {
    let now = Instant::now();
    let first = entry.burst.map_or(now, |b| b.0);
    let due = (now + debounce).min(first + debounce * MAX_DEBOUNCES);
    entry.burst = Some((first, due));
}

/// Starts a background sync of `root` when it is searchable in this process's view.
fn sync_if_searchable(handles: &Handles, root: &Path) {
    if handles.jobs.is_running(root) {
        return;
    }
    let searchable = matches!(
        handles.engine.state(root),
        Ok(Some(st)) if matches!(st.state, IndexState::Indexed | IndexState::SyncCompleted)
    );
    if !searchable || !root.is_dir() {
        return;
    }
    if !matches!(handles.engine.check_fingerprint(root), Ok(None)) {
        return;
    }
    handles.syncs.sync_in_background(root);
}

/// Brings the set of watched roots in line with the indexed codebases: new ones are
/// watched, cleared ones dropped.
async fn refresh(
    handles: &Handles,
    watcher: Option<&SharedWatcher>,
    roots: &mut HashMap<PathBuf, Root>,
) {
    let wanted: Vec<PathBuf> = match handles.engine.states() {
        Ok(states) => states
            .into_iter()
            // A watched root that went away stays, to be watched again once it is back
            // (see `check_roots`).
            .filter(|(root, st)| {
                matches!(st.state, IndexState::Indexed | IndexState::SyncCompleted)
                    && (root.is_dir() || roots.contains_key(root))
            })
            .map(|(root, _)| root)
            .collect(),
        Err(_) => return,
    };
    let gone: Vec<PathBuf> = roots
        .keys()
        .filter(|r| !wanted.contains(r))
        .cloned()
        .collect();
    let new: Vec<PathBuf> = wanted
        .into_iter()
        .filter(|r| !roots.contains_key(r))
        .collect();
    for root in &gone {
        roots.remove(root);
    }
    for root in &new {
        roots.insert(
            root.clone(),
            Root {
                filter: handles.engine.path_filter(root).ok(),
                burst: None,
                identity: identity(root),
                lost: false,
            },
        );
    }
    let Some(watcher) = watcher else { return };
    if gone.is_empty() && new.is_empty() {
        return;
    }
    // Adding a recursive watch walks the tree: keep it off the async workers.
    let watcher = Arc::clone(watcher);
    let log = handles.log.clone();
    let _ = tokio::task::spawn_blocking(move || {
        let mut w = watcher.lock().unwrap_or_else(|p| p.into_inner());
        for root in gone {
            let _ = w.unwatch(&root);
        }
        for root in new {
            if let Err(e) = w.watch(&root, RecursiveMode::Recursive) {
                log.emit_about(
                    &root,
                    Level::Warning,
                    "watcher",
                    format_args!(
                        "satori: cannot watch '{}' ({e}); it is re-checked periodically and before searches",
                        root.display()
                    ),
                    || serde_json::json!({"event": "watch_failed", "codebase": root.display().to_string(), "error": e.to_string()}),
                );
            }
        }
    })
    .await;
}

/// Notices roots that went away (their watch went with them) and roots that are back or
/// were replaced by another directory: those are watched again and synced by a walk, since
/// nothing reported what changed meanwhile.
async fn check_roots(
    handles: &Handles,
    watcher: Option<&SharedWatcher>,
    roots: &mut HashMap<PathBuf, Root>,
    debounce: Duration,
) {
    let mut back = Vec::new();
    for (root, entry) in roots.iter_mut() {
        match identity(root) {
            None => entry.lost = true,
            Some(now) if entry.lost || entry.identity != Some(now) => {
                entry.lost = false;
                entry.identity = Some(now);
                entry.filter = handles.engine.path_filter(root).ok();
                handles.syncs.mark_dirty(root, None);
                arm(entry, debounce);
                back.push(root.clone());
            }
            Some(_) => {}
        }
    }
    let Some(watcher) = watcher else { return };
    if back.is_empty() {
        return;
    }
    let watcher = Arc::clone(watcher);
    let log = handles.log.clone();
    let _ = tokio::task::spawn_blocking(move || {
        let mut w = watcher.lock().unwrap_or_else(|p| p.into_inner());
        for root in back {
            // The old watch may linger (a directory moved away keeps its inode watched).
            let _ = w.unwatch(&root);
            if let Err(e) = w.watch(&root, RecursiveMode::Recursive) {
                log.emit_about(
                    &root,
                    Level::Warning,
                    "watcher",
                    format_args!(
                        "satori: cannot watch '{}' again ({e}); it is re-checked periodically and before searches",
                        root.display()
                    ),
                    || serde_json::json!({"event": "watch_failed", "codebase": root.display().to_string(), "error": e.to_string()}),
                );
            }
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{CreateKind, Flag};

    /// What the watcher's reports become: an overflow of the kernel's queue (a `Rescan`
    /// flag) or a failure of the backend means every root must be walked, never nothing.
    #[test]
    fn lost_events_become_a_rescan() {
        let p = PathBuf::from("/r/a.rs");
        let cases: Vec<(notify::Result<notify::Event>, Vec<Notice>)> = vec![
            (
                Ok(notify::Event::new(EventKind::Other).set_flag(Flag::Rescan)),
                vec![Notice::Rescan],
            ),
            (
                Err(notify::Error::generic("queue read failed")),
                vec![Notice::Rescan],
            ),
            (
                Ok(notify::Event::new(EventKind::Create(CreateKind::File)).add_path(p.clone())),
                vec![Notice::Changed(p.clone())],
            ),
            (
                Ok(
                    notify::Event::new(EventKind::Access(notify::event::AccessKind::Any))
                        .add_path(p.clone()),
                ),
                vec![],
            ),
        ];
        for (ev, want) in cases {
            let shown = format!("{ev:?}");
            assert_eq!(notices(ev), want, "{shown}");
        }
    }
}
