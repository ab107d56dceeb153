//! The server's diagnostics: every line still goes to stderr exactly as before, and once a
//! client has chosen a level with `logging/setLevel` the same event also reaches it as an
//! MCP `notifications/message` when its level is at or above the chosen one.
//!
//! Each session has its own level and client ([`SessionLog`]): what a session's requests
//! raise goes to that session only. What the process raises on its own (builds ending, the
//! watcher's syncs, stray stdout bytes) goes through [`Log`] to every session that asked;
//! an event about one codebase ([`Log::emit_about`]) only to the sessions whose client's
//! roots hold it, so a confined client never learns of codebases outside its roots.
//!
//! A request may also carry its own level (`_meta["io.modelcontextprotocol/logLevel"]`, the
//! 2026-07-28 way, where `logging/setLevel` is gone): the events raised while that request
//! runs are then sent at that level instead of the session's.
//!
//! Nothing is sent before the client asks: the spec leaves the default to the server, stderr
//! already carries every line, and a client that never asked should not pay tokens for a
//! telemetry event per search.
//!
//! rmcp marks the logging types deprecated (SEP-2577) although every protocol revision this
//! server speaks keeps `logging/setLevel` and `notifications/message`; hence the `allow`s.
#![allow(deprecated)]

use std::cell::RefCell;
use std::fmt;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use rmcp::RoleServer;
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::{Peer, RequestContext};
use serde_json::Value;
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

use crate::roots::ClientRoots;

/// Where the process's diagnostics go: stderr, and every session whose client asked for
/// them (each at its own level). Events raised by a session's own requests go through its
/// [`SessionLog`] instead, so one client never receives another's. Cheap to clone.
#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<Weak<Inner>>>>);

/// One session's diagnostics: stderr, and its own client once it sets a level. Cheap to
/// clone; clones share the level and the client.
#[derive(Clone)]
pub struct SessionLog(Arc<Inner>);

struct Inner {
    /// The lowest rank sent to the client, or [`OFF`] until it sets a level.
    threshold: AtomicU8Off,
    /// Feeds the task that sends notifications, in order, through the client's peer.
    to_client: Mutex<Option<UnboundedSender<LoggingMessageNotificationParam>>>,
    /// The session's client roots, which events about a codebase must be inside.
    roots: Arc<ClientRoots>,
}

const OFF: u8 = u8::MAX;

/// An `AtomicU8` that starts at [`OFF`].
struct AtomicU8Off(AtomicU8);

impl Default for AtomicU8Off {
    fn default() -> Self {
        AtomicU8Off(AtomicU8::new(OFF))
    }
}

/// The severities the server emits (a subset of the spec's RFC 5424 levels).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Debug,
    Warning,
    Error,
}

impl Level {
    fn to_mcp(self) -> LoggingLevel {
        match self {
            Level::Debug => LoggingLevel::Debug,
            Level::Warning => LoggingLevel::Warning,
            Level::Error => LoggingLevel::Error,
        }
    }
}

/// Severity order of RFC 5424, as the spec uses it.
fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// Where diagnostics go: [`Log`] (the process's, to every session that asked) or a
/// [`SessionLog`] (one session's).
pub trait Diagnostics {
    /// Sends the event (`data`, built only when some client wants it) from `logger` at
    /// `level`, without a stderr line: for an event whose line the configuration turned off.
    fn notify(&self, level: Level, logger: &'static str, data: impl FnOnce() -> Value);

    /// Writes `line` to stderr and sends the event as [`Diagnostics::notify`] does.
    fn emit(
        &self,
        level: Level,
        logger: &'static str,
        line: fmt::Arguments<'_>,
        data: impl FnOnce() -> Value,
    ) {
        write_line(line);
        self.notify(level, logger, data);
    }
}

impl Log {
    /// The log of a new session whose client allows `roots`, which process-wide events reach
    /// too.
    pub(crate) fn session(&self, roots: Arc<ClientRoots>) -> SessionLog {
        let inner = Arc::new(Inner {
            threshold: AtomicU8Off::default(),
            to_client: Mutex::default(),
            roots,
        });
        let mut sessions = self.0.lock().unwrap_or_else(|p| p.into_inner());
        sessions.retain(|s| s.strong_count() > 0);
        sessions.push(Arc::downgrade(&inner));
        SessionLog(inner)
    }

    /// [`Diagnostics::emit`] for an event about the codebase at `root`: stderr, and only
    /// the sessions whose client's roots hold `root` now (a session still waiting for its
    /// roots is not told).
    pub fn emit_about(
        &self,
        root: &Path,
        level: Level,
        logger: &'static str,
        line: fmt::Arguments<'_>,
        data: impl FnOnce() -> Value,
    ) {
        write_line(line);
        self.send_where(level, logger, data, |session| {
            session.roots.allows_now(root)
        });
    }

    /// Sends the event to every session that asked for `level` and that `to` accepts.
    fn send_where(
        &self,
        level: Level,
        logger: &'static str,
        data: impl FnOnce() -> Value,
        to: impl Fn(&Inner) -> bool,
    ) {
        let level = level.to_mcp();
        let mut data = Lazy::new(data);
        if for_request(level, logger, &mut data) {
            return;
        }
        let sessions: Vec<Arc<Inner>> = {
            let sessions = self.0.lock().unwrap_or_else(|p| p.into_inner());
            sessions.iter().filter_map(Weak::upgrade).collect()
        };
        for session in sessions.iter().filter(|s| to(s)) {
            session.send(level, logger, &mut data);
        }
    }

    /// Makes this the log of the process, for diagnostics raised outside any request
    /// (the stdout guard's drain thread). The first call wins.
    pub fn install_for_process(&self) {
        let _ = PROCESS.set(self.clone());
    }
}

impl Diagnostics for Log {
    /// Sends the event (`data`, built only when some client wants it) from `logger` to every
    /// session that asked for `level`.
    fn notify(&self, level: Level, logger: &'static str, data: impl FnOnce() -> Value) {
        self.send_where(level, logger, data, |_| true);
    }
}

impl SessionLog {
    /// Sends events at `level` or above to the client behind `peer` from now on.
    /// Must run inside the runtime (it starts the sending task once).
    pub fn set_level(&self, level: LoggingLevel, peer: &Peer<RoleServer>) {
        let mut to_client = self.0.to_client.lock().unwrap_or_else(|p| p.into_inner());
        if to_client.as_ref().is_none_or(UnboundedSender::is_closed) {
            let (tx, mut rx) = unbounded_channel::<LoggingMessageNotificationParam>();
            let peer = peer.clone();
            tokio::spawn(async move {
                while let Some(event) = rx.recv().await {
                    if peer.notify_logging_message(event).await.is_err() {
                        // The session is over; later events stay on stderr only.
                        return;
                    }
                }
            });
            *to_client = Some(tx);
        }
        self.0.threshold.0.store(rank(level), Ordering::Relaxed);
    }
}

impl Diagnostics for SessionLog {
    /// Sends the event (`data`, built only when wanted) from `logger` to this session's
    /// client when it asked for `level` (or to the request running on this thread, when
    /// that request asked for a level of its own).
    fn notify(&self, level: Level, logger: &'static str, data: impl FnOnce() -> Value) {
        let level = level.to_mcp();
        let mut data = Lazy::new(data);
        if !for_request(level, logger, &mut data) {
            self.0.send(level, logger, &mut data);
        }
    }
}

impl Inner {
    /// Queues the event for this session's client, if it asked for `level`.
    fn send(
        &self,
        level: LoggingLevel,
        logger: &'static str,
        data: &mut Lazy<impl FnOnce() -> Value>,
    ) {
        if rank(level) < self.threshold.0.load(Ordering::Relaxed) {
            return;
        }
        let to_client = self.to_client.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(tx) = to_client.as_ref() {
            let _ = tx
                .send(LoggingMessageNotificationParam::new(level, data.get()).with_logger(logger));
        }
    }
}

/// An event's data, built the first time some client wants it and cloned for the next.
struct Lazy<F> {
    build: Option<F>,
    value: Option<Value>,
}

impl<F: FnOnce() -> Value> Lazy<F> {
    fn new(build: F) -> Self {
        Lazy {
            build: Some(build),
            value: None,
        }
    }

    fn get(&mut self) -> Value {
        if let Some(build) = self.build.take() {
            self.value = Some(build());
        }
        self.value.clone().unwrap_or(Value::Null)
    }
}

/// A request that asked for a level of its own decides for the events raised while it runs
/// on this thread: true when one is running (the event went to its client or was below its
/// level), false when the session's or the process's level decides.
fn for_request(
    level: LoggingLevel,
    logger: &'static str,
    data: &mut Lazy<impl FnOnce() -> Value>,
) -> bool {
    let target = REQUEST.with_borrow(|r| r.as_ref().map(|r| r.wants(level).then(|| r.target())));
    match target {
        Some(Some((peer, runtime))) => {
            let event = LoggingMessageNotificationParam::new(level, data.get()).with_logger(logger);
            runtime.spawn(async move {
                let _ = peer.notify_logging_message(event).await;
            });
            true
        }
        Some(None) => true,
        None => false,
    }
}

static PROCESS: OnceLock<Log> = OnceLock::new();

thread_local! {
    /// The level of the request running on this thread, when it asked for one.
    static REQUEST: RefCell<Option<RequestLog>> = const { RefCell::new(None) };
}

/// The level one request asked for, and the client to send its events to.
pub struct RequestLog {
    threshold: u8,
    peer: Peer<RoleServer>,
    runtime: tokio::runtime::Handle,
}

/// Clears the thread's request level when the request's work ends.
pub struct RequestLogScope(());

impl RequestLog {
    /// The level `context`'s request carries in its `_meta`, if any. Call inside the runtime.
    pub fn asked_by(context: &RequestContext<RoleServer>) -> Option<RequestLog> {
        let level = context.meta.log_level()?;
        Some(RequestLog {
            threshold: rank(level),
            peer: context.peer.clone(),
            runtime: tokio::runtime::Handle::current(),
        })
    }

    /// Makes this the level of the events raised on this thread until the scope ends.
    pub fn enter(self) -> RequestLogScope {
        REQUEST.set(Some(self));
        RequestLogScope(())
    }

    fn wants(&self, level: LoggingLevel) -> bool {
        rank(level) >= self.threshold
    }

    fn target(&self) -> (Peer<RoleServer>, tokio::runtime::Handle) {
        (self.peer.clone(), self.runtime.clone())
    }
}

impl Drop for RequestLogScope {
    fn drop(&mut self) {
        REQUEST.set(None);
    }
}

/// [`Log::emit`] on the process's log, or stderr alone when no server runs.
pub fn emit_for_process(
    level: Level,
    logger: &'static str,
    line: fmt::Arguments<'_>,
    data: impl FnOnce() -> Value,
) {
    match PROCESS.get() {
        Some(log) => log.emit(level, logger, line, data),
        None => write_line(line),
    }
}

/// Writes one line to stderr in a single write: stderr is unbuffered, and formatting
/// straight into it costs a system call per piece (dozens for a JSON event), each one
/// relayed by a client that reads our stderr.
fn write_line(line: fmt::Arguments<'_>) {
    let mut text = line.to_string();
    text.push('\n');
    let _ = std::io::stderr().write_all(text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A session of `log` confined to `root`, listening at every level, and the receiver its
    /// events arrive on.
    fn listening(
        log: &Log,
        root: &str,
    ) -> (
        SessionLog,
        tokio::sync::mpsc::UnboundedReceiver<LoggingMessageNotificationParam>,
    ) {
        let roots = Arc::new(ClientRoots::default());
        roots.set(Ok((vec![PathBuf::from(root)], Vec::new())));
        let session = log.session(roots);
        let (tx, rx) = unbounded_channel();
        *session.0.to_client.lock().unwrap() = Some(tx);
        session.0.threshold.0.store(0, Ordering::Relaxed);
        (session, rx)
    }

    #[test]
    fn events_about_a_codebase_reach_only_the_sessions_whose_roots_hold_it() {
        let log = Log::default();
        let (_a, mut a) = listening(&log, "/srv/a");
        let (_b, mut b) = listening(&log, "/srv/b");
        log.emit_about(
            Path::new("/srv/b"),
            Level::Error,
            "index",
            format_args!("satori: a test event about /srv/b"),
            || serde_json::json!({"codebase": "/srv/b"}),
        );
        assert!(
            a.try_recv().is_err(),
            "a session confined to /srv/a heard of /srv/b"
        );
        assert_eq!(b.try_recv().unwrap().data["codebase"], "/srv/b");
        // An event about no codebase reaches both.
        log.notify(Level::Warning, "watcher", || serde_json::json!({}));
        assert!(a.try_recv().is_ok() && b.try_recv().is_ok());
    }
}
