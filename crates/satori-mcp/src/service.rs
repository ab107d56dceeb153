//! One `satori` process's service: the [`Shared`] state every session uses, plus what
//! only the process as a whole decides: the background work (watcher, periodic re-check),
//! started by the first session that attends and stopped when the last one leaves, and
//! the hand-off of builds still running when it does. A [`Session`](crate::session::Session)
//! is one client's view of it.

use std::ops::Deref;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use crate::config::Config;
use crate::shared::Shared;
use crate::watch::{self, Background};

/// The process's service.
pub struct Service {
    shared: Arc<Shared>,
    /// The `satori` executable that finishes builds still running when the last session
    /// ends (see `handoff`); without it they end with the process's sessions.
    handoff: OnceLock<PathBuf>,
    /// The sessions being served and the background work they keep running.
    attending: Mutex<Attending>,
}

#[derive(Default)]
struct Attending {
    sessions: usize,
    background: Option<Background>,
}

/// A session's place in [`Service::attend`]: while any is held, the background work runs.
pub struct Attendance {
    service: Arc<Service>,
    left: bool,
}

/// What the last session to leave hands back: the background work, stopped when dropped.
pub struct LastToLeave {
    pub background: Option<Background>,
}

impl Service {
    /// A service over the engine configured by `config`. Fails when the embedding model
    /// cannot be identified (an unreadable model directory, a hub model that cannot be
    /// downloaded or verified).
    pub fn new(config: Config) -> Result<Arc<Service>, String> {
        Ok(Arc::new(Service {
            shared: Shared::new(config)?,
            handoff: OnceLock::new(),
            attending: Mutex::new(Attending::default()),
        }))
    }

    /// The state every session uses.
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Hands the builds still running when the last session ends to detached processes
    /// started from `exe` (the `satori` binary). The first call wins.
    pub fn hand_off_builds_to(&self, exe: PathBuf) {
        let _ = self.handoff.set(exe);
    }

    /// A session starts: the first one starts the background work (in `mcp` mode: the
    /// watcher and the periodic reconciliation; in `cli` mode nothing).
    pub fn attend(self: &Arc<Self>) -> Attendance {
        let mut a = self.attending.lock().unwrap_or_else(|p| p.into_inner());
        a.sessions += 1;
        if a.sessions == 1 && a.background.is_none() {
            a.background = watch::start(Arc::clone(&self.shared));
        }
        Attendance {
            service: Arc::clone(self),
            left: false,
        }
    }

    /// How many sessions are being served.
    pub fn sessions(&self) -> usize {
        self.attending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .sessions
    }

    /// Hands the builds still running to detached processes, when this service does (see
    /// [`Self::hand_off_builds_to`]); true when there were any.
    pub(crate) fn hand_off_builds(&self) -> bool {
        self.handoff
            .get()
            .is_some_and(|exe| !self.shared.jobs.hand_off(exe).is_empty())
    }

    fn leave(&self) -> Option<LastToLeave> {
        let mut a = self.attending.lock().unwrap_or_else(|p| p.into_inner());
        a.sessions = a.sessions.saturating_sub(1);
        (a.sessions == 0).then(|| LastToLeave {
            background: a.background.take(),
        })
    }
}

impl Deref for Service {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.shared
    }
}

impl Attendance {
    /// The session leaves. The last one to leave gets the background work back, to stop
    /// it in its own order (after handing builds off, before shutting syncs down).
    pub fn leave(mut self) -> Option<LastToLeave> {
        self.left = true;
        self.service.leave()
    }
}

impl Drop for Attendance {
    fn drop(&mut self) {
        if !self.left {
            drop(self.service.leave());
        }
    }
}
