//! Background index builds of this process: one per codebase, with live progress and a
//! cancel flag. Other processes see progress through the state file instead. When the
//! session ends first, each build still running is handed to a detached `satori` process
//! (`handoff`) that finishes it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use satori_core::{HandOff, IndexJob, Progress};

use crate::logging::{Level, Log};

/// Live view of a running build.
#[derive(Debug, Clone)]
pub struct JobView {
    pub progress: Progress,
}

struct Running {
    cancel: Option<Arc<AtomicBool>>,
    /// Set before `cancel` by a clear: the build stops without recording a failure.
    discard: Arc<AtomicBool>,
    handoff: HandOff,
    progress: Option<Progress>,
}

/// The builds running in this process.
#[derive(Clone)]
pub struct Jobs {
    running: Arc<Mutex<HashMap<PathBuf, Running>>>,
    /// Where a failed build is reported.
    log: Log,
    /// Told when a build ends (the set of indexed codebases may have changed).
    ended: Arc<tokio::sync::Notify>,
}

impl Jobs {
    pub fn new(log: Log, ended: Arc<tokio::sync::Notify>) -> Jobs {
        Jobs {
            running: Arc::default(),
            log,
            ended,
        }
    }

    /// Runs `job` on a blocking thread; progress is kept here until it ends.
    pub fn spawn(&self, job: IndexJob) {
        let root = job.root().to_path_buf();
        {
            let mut map = self.lock();
            map.insert(
                root.clone(),
                Running {
                    cancel: Some(job.cancel_flag()),
                    discard: job.discard_flag(),
                    handoff: job.handoff(),
                    progress: None,
                },
            );
        }
        let jobs = self.clone();
        let discarded = job.discard_flag();
        tokio::task::spawn_blocking(move || {
            let progress_root = root.clone();
            let progress_jobs = jobs.clone();
            let result = job.run(move |p| {
                if let Some(r) = progress_jobs.lock().get_mut(&progress_root) {
                    r.progress = Some(p.clone());
                }
            });
            // A build stopped for a clear did not fail: its index was removed on purpose.
            let cleared = matches!(result, Err(satori_core::Error::Cancelled))
                && discarded.load(Ordering::Relaxed);
            if let Err(e) = &result
                && !cleared
            {
                jobs.log.emit_about(
                    &root,
                    Level::Error,
                    "index",
                    format_args!("satori: indexing '{}' failed: {e}", root.display()),
                    || {
                        serde_json::json!({
                            "event": "index_failed",
                            "codebase": root.display().to_string(),
                            "error": e.to_string(),
                        })
                    },
                );
            }
            jobs.lock().remove(&root);
            jobs.ended.notify_one();
        });
    }

    /// The live progress of a build of `root` in this process.
    pub fn view(&self, root: &Path) -> Option<JobView> {
        self.lock().get(root).map(|r| JobView {
            progress: r.progress.clone().unwrap_or_else(Progress::starting),
        })
    }

    /// Asks the build of `root` to stop because its index is about to be removed (a clear):
    /// it stops without recording a failure; true if one was running here.
    pub fn cancel_to_clear(&self, root: &Path) -> bool {
        if let Some(r) = self.lock().get(root) {
            r.discard.store(true, Ordering::Relaxed);
        }
        self.cancel(root)
    }

    /// Asks the build of `root` to stop; true if one was running here.
    pub fn cancel(&self, root: &Path) -> bool {
        match self.lock().get(root).and_then(|r| r.cancel.clone()) {
            Some(flag) => {
                flag.store(true, Ordering::Relaxed);
                true
            }
            None => false,
        }
    }

    /// Hands every build still running to a detached process started from `exe` (see
    /// `handoff`), and stops it here. Returns the codebases handed off; a build whose process
    /// cannot be started stays here and ends with this process, as before.
    pub fn hand_off(&self, exe: &Path) -> Vec<PathBuf> {
        let running: Vec<(PathBuf, HandOff)> = self
            .lock()
            .iter()
            .map(|(root, r)| (root.clone(), r.handoff.clone()))
            .collect();
        let mut handed = Vec::new();
        for (root, handoff) in running {
            let started = crate::handoff::spawn(exe, &root).and_then(|()| {
                handoff
                    .hand_off()
                    .map_err(|e| std::io::Error::other(e.to_string()))
            });
            match started {
                Ok(()) => handed.push(root),
                Err(e) => self.log.emit_about(
                    &root,
                    Level::Error,
                    "index",
                    format_args!(
                        "satori: the build of '{}' cannot go on after this session: {e}",
                        root.display()
                    ),
                    || {
                        serde_json::json!({
                            "event": "handoff_failed",
                            "codebase": root.display().to_string(),
                            "error": e.to_string(),
                        })
                    },
                ),
            }
        }
        handed
    }

    /// Waits up to `grace` for the builds of this process to end.
    pub async fn settle(&self, grace: std::time::Duration) {
        let deadline = tokio::time::Instant::now() + grace;
        while !self.lock().is_empty() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    pub fn is_running(&self, root: &Path) -> bool {
        self.lock().contains_key(root)
    }

    /// Whether any build runs in this process.
    pub fn any_running(&self) -> bool {
        !self.lock().is_empty()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Running>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }
}
