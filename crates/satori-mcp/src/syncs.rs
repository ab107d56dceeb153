//! The syncs of this process, one in flight per codebase: a search, the watcher or the
//! periodic reconciliation that wants a root synced joins the sync already running for it
//! instead of starting a second one; whoever joined is told so (`coalesced`).
//!
//! A sync runs on a thread of its own. Callers wait for it and can stop waiting when their
//! own request is cancelled; the sync itself is cancelled only when nobody is waiting for it
//! any more (or the process is shutting down), so one client's cancellation never takes a
//! fresh index away from another. Progress of the rebuild goes to every waiter that asked
//! for it.
//!
//! The watcher marks roots *dirty* here; a sync clears the mark when it starts, so edits
//! made while it runs leave the root dirty for the next one, which starts as soon as the
//! running one has published. The watcher also records *which* paths changed, each until a
//! sync that began after its change has succeeded: those are the changes a search layers
//! over the published generation (`Engine::layer_changes`) instead of waiting for the
//! sync.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use satori_core::{Engine, Error, LAYER_MAX_FILES, Progress, SyncControl, SyncSummary};
use tokio::sync::mpsc::UnboundedSender;

/// How long a waiter sleeps between looks at its own cancel flag.
const WAIT_SLICE: Duration = Duration::from_millis(25);

/// What one caller brings to a sync: its cancel flag and, when its client asked for
/// progress, where to send it.
#[derive(Default, Clone)]
pub(crate) struct Caller {
    pub cancel: Arc<AtomicBool>,
    pub progress: Option<UnboundedSender<Progress>>,
}

impl Caller {
    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }
}

/// How a caller's sync went.
pub(crate) struct Joined {
    /// True when the caller joined a sync someone else had started.
    pub coalesced: bool,
    /// Edits the watcher had seen for the root when the sync started.
    pub edits: u64,
    pub result: Result<SyncSummary, SyncFailure>,
}

/// Why a sync gave no summary.
#[derive(Debug, Clone)]
pub(crate) enum SyncFailure {
    /// The caller's request, or the process, stopped it (or stopped waiting for it).
    Cancelled,
    /// Another process is building or syncing the index.
    Busy,
    /// The index was cleared (by another call or process) while the sync ran.
    Missing,
    /// The engine failed; the message says why.
    Failed(String),
}

struct Flight {
    cancel: Arc<AtomicBool>,
    /// Callers still waiting; at zero the sync is cancelled. Background syncs count as one.
    waiters: Mutex<usize>,
    outcome: Mutex<Option<Result<SyncSummary, SyncFailure>>>,
    done: Condvar,
    listeners: Mutex<Vec<UnboundedSender<Progress>>>,
    edits: u64,
    /// The change counter when the sync started: it saw every change up to this one.
    seen: u64,
}

/// The changes the watcher saw under one root that no finished sync has seen yet.
#[derive(Default)]
struct Pending {
    /// Changed paths, each with the number of its latest change.
    paths: HashMap<PathBuf, u64>,
    /// The latest change only a walk can apply (ignore rules, too many paths), if any.
    needs_walk: Option<u64>,
}

#[derive(Default)]
struct Inner {
    flights: HashMap<PathBuf, Arc<Flight>>,
    /// Roots with edits the watcher saw since their last sync started, and how many.
    dirty: HashMap<PathBuf, u64>,
    pending: HashMap<PathBuf, Pending>,
    /// When the watcher last saw a change under each root.
    last_change: HashMap<PathBuf, Instant>,
    /// Numbers every change the watcher reports, across roots.
    changes: u64,
    /// Set once the process is shutting down: no new syncs start.
    closing: bool,
}

/// The syncs of this process.
pub(crate) struct Syncs {
    engine: Arc<Engine>,
    inner: Mutex<Inner>,
    /// Signalled whenever a flight ends (shutdown waits on it).
    idle: Condvar,
}

impl Syncs {
    pub fn new(engine: Arc<Engine>) -> Syncs {
        Syncs {
            engine,
            inner: Mutex::default(),
            idle: Condvar::new(),
        }
    }

    /// Notes that the watcher saw a change under `root`: at `path`, or (`None`) one only a
    /// walk of the tree can apply.
    pub fn mark_dirty(&self, root: &Path, path: Option<&Path>) {
        let mut inner = self.lock();
        *inner.dirty.entry(root.to_path_buf()).or_insert(0) += 1;
        inner.changes += 1;
        inner.last_change.insert(root.to_path_buf(), Instant::now());
        let n = inner.changes;
        let pending = inner.pending.entry(root.to_path_buf()).or_default();
        match path {
            Some(p) if pending.paths.len() < LAYER_MAX_FILES || pending.paths.contains_key(p) => {
                pending.paths.insert(p.to_path_buf(), n);
            }
            _ => pending.needs_walk = Some(n),
        }
    }

    /// The paths changed under `root` that no finished sync has seen, and a number that
    /// changes whenever they do; `None` when there are none or a walk is needed.
    pub fn layerable(&self, root: &Path) -> Option<(Vec<PathBuf>, u64)> {
        let inner = self.lock();
        let pending = inner.pending.get(root)?;
        let version = pending.paths.values().copied().max()?;
        if pending.needs_walk.is_some() {
            return None;
        }
        let mut paths: Vec<PathBuf> = pending.paths.keys().cloned().collect();
        paths.sort();
        Some((paths, version))
    }

    /// Whether the watcher saw a change under `root` less than `window` ago.
    pub fn changed_within(&self, root: &Path, window: Duration) -> bool {
        self.lock()
            .last_change
            .get(root)
            .is_some_and(|t| t.elapsed() < window)
    }

    /// Whether the watcher saw changes under `root` since its last sync started.
    pub fn is_dirty(&self, root: &Path) -> bool {
        self.lock().dirty.contains_key(root)
    }

    /// Whether a sync of `root` is running in this process.
    pub fn in_flight(&self, root: &Path) -> bool {
        self.lock().flights.contains_key(root)
    }

    /// Whether a sync of any codebase is in flight.
    pub fn any_in_flight(&self) -> bool {
        !self.lock().flights.is_empty()
    }

    /// Syncs `root`, joining the sync in flight when there is one, and waits for it (or for
    /// the caller's cancellation).
    pub fn sync(self: &Arc<Self>, root: &Path, caller: &Caller) -> Joined {
        let mut coalesced = false;
        loop {
            let Some((flight, joined)) = self.join_or_start(root, caller.progress.clone()) else {
                return Joined {
                    coalesced,
                    edits: 0,
                    result: Err(SyncFailure::Cancelled),
                };
            };
            // What counts is the attempt that gave the result.
            coalesced = joined;
            let result = flight.wait(caller);
            // The sync joined was cancelled by the callers who left it, not by this one:
            // this caller still wants a fresh index, so it starts over.
            if matches!(result, Err(SyncFailure::Cancelled))
                && !caller.cancelled()
                && !self.lock().closing
            {
                continue;
            }
            return Joined {
                coalesced,
                edits: flight.edits,
                result,
            };
        }
    }

    /// Starts a sync of `root` nobody waits for (the watcher's, the periodic one), unless
    /// one is in flight already. Returns at once.
    pub fn sync_in_background(self: &Arc<Self>, root: &Path) {
        let _ = self.join_or_start(root, None);
    }

    /// Cancels every sync in flight without waiting; new syncs may still start.
    pub fn cancel_all(&self) {
        for f in self.lock().flights.values() {
            f.cancel.store(true, Ordering::Relaxed);
        }
    }

    /// Cancels the sync of `root` in flight, if any, and waits up to `patience` for it to
    /// stop (a clear must not race a sync of the index it removes).
    pub fn cancel(&self, root: &Path, patience: Duration) {
        let deadline = Instant::now() + patience;
        let mut inner = self.lock();
        if let Some(f) = inner.flights.get(root) {
            f.cancel.store(true, Ordering::Relaxed);
        }
        while inner.flights.contains_key(root) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            inner = match self.idle.wait_timeout(inner, left) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
    }

    /// Cancels every sync in flight and refuses new ones; waits up to `grace` for the
    /// running ones to reach their next safe point, so none is cut off mid-write.
    pub fn shutdown(&self, grace: Duration) {
        let deadline = Instant::now() + grace;
        let mut inner = self.lock();
        inner.closing = true;
        for f in inner.flights.values() {
            f.cancel.store(true, Ordering::Relaxed);
        }
        while !inner.flights.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            inner = match self.idle.wait_timeout(inner, left) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
    }

    /// The flight of `root` with this caller counted in, and whether it was already running.
    /// `None` once the process is closing.
    fn join_or_start(
        self: &Arc<Self>,
        root: &Path,
        progress: Option<UnboundedSender<Progress>>,
    ) -> Option<(Arc<Flight>, bool)> {
        let mut inner = self.lock();
        if inner.closing {
            return None;
        }
        if let Some(f) = inner.flights.get(root) {
            let f = Arc::clone(f);
            *f.waiters.lock().unwrap_or_else(|p| p.into_inner()) += 1;
            if let Some(tx) = progress {
                f.listeners
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(tx);
            }
            return Some((f, true));
        }
        let edits = inner.dirty.remove(root).unwrap_or(0);
        let seen = inner.changes;
        let flight = Arc::new(Flight {
            cancel: Arc::new(AtomicBool::new(false)),
            waiters: Mutex::new(1),
            outcome: Mutex::new(None),
            done: Condvar::new(),
            listeners: Mutex::new(progress.into_iter().collect()),
            edits,
            seen,
        });
        inner
            .flights
            .insert(root.to_path_buf(), Arc::clone(&flight));
        drop(inner);
        let syncs = Arc::clone(self);
        let root_owned = root.to_path_buf();
        let runner = Arc::clone(&flight);
        let spawned = std::thread::Builder::new()
            .name("satori-sync".into())
            .spawn(move || syncs.run(&root_owned, &runner));
        if let Err(e) = spawned {
            self.finish(
                root,
                &flight,
                Err(SyncFailure::Failed(format!("cannot start the sync: {e}"))),
            );
        }
        Some((flight, false))
    }

    fn run(self: &Arc<Self>, root: &Path, flight: &Arc<Flight>) {
        let listeners = Arc::clone(flight);
        let ctl = SyncControl {
            cancel: Some(Arc::clone(&flight.cancel)),
            on_progress: Some(Box::new(move |p: &Progress| {
                let mut l = listeners
                    .listeners
                    .lock()
                    .unwrap_or_else(|p| p.into_inner());
                // A waiter that left has dropped its receiver: forget it.
                l.retain(|tx| tx.send(p.clone()).is_ok());
            })),
        };
        let result = match self.engine.sync(root, &ctl) {
            Ok(s) => Ok(s),
            Err(Error::Cancelled) => Err(SyncFailure::Cancelled),
            Err(Error::Busy(_)) => Err(SyncFailure::Busy),
            Err(Error::IndexMissing(_)) => Err(SyncFailure::Missing),
            Err(e) => Err(SyncFailure::Failed(e.to_string())),
        };
        // A sync that could only layer (another process held the index) wrote nothing: it
        // is not started again at once, which would only spin while that process works.
        let written = matches!(&result, Ok(s) if !s.layered);
        self.finish(root, flight, result);
        // Changes made while it ran are only layered: the next sync writes them down.
        if written && self.is_dirty(root) {
            self.sync_in_background(root);
        }
    }

    fn finish(&self, root: &Path, flight: &Flight, result: Result<SyncSummary, SyncFailure>) {
        let mut inner = self.lock();
        inner.flights.remove(root);
        let written = matches!(&result, Ok(s) if !s.layered);
        if written && let Some(pending) = inner.pending.get_mut(root) {
            pending.paths.retain(|_, n| *n > flight.seen);
            if pending.needs_walk.is_some_and(|n| n <= flight.seen) {
                pending.needs_walk = None;
            }
            if pending.paths.is_empty() && pending.needs_walk.is_none() {
                inner.pending.remove(root);
            }
        }
        if !written {
            // The tree may still be ahead of the index: the next search syncs again.
            *inner.dirty.entry(root.to_path_buf()).or_insert(0) += flight.edits.max(1);
        }
        *flight.outcome.lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
        flight.done.notify_all();
        self.idle.notify_all();
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Flight {
    /// Waits for the outcome, or until the caller's request is cancelled.
    fn wait(&self, caller: &Caller) -> Result<SyncSummary, SyncFailure> {
        let mut outcome = self.outcome.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(r) = outcome.as_ref() {
                return r.clone();
            }
            if caller.cancelled() {
                drop(outcome);
                self.leave();
                return Err(SyncFailure::Cancelled);
            }
            outcome = match self.done.wait_timeout(outcome, WAIT_SLICE) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
    }

    /// A waiter stops waiting; the last one to leave cancels the sync.
    fn leave(&self) {
        let mut w = self.waiters.lock().unwrap_or_else(|p| p.into_inner());
        *w = w.saturating_sub(1);
        if *w == 0 {
            self.cancel.store(true, Ordering::Relaxed);
        }
    }
}
