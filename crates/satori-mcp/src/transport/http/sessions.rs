//! The shared server's sessions: rmcp's in-memory session manager under a cap and an idle
//! expiry, with each session's [`MessagePolicy`] and the count of its answers still streaming.
//!
//! rmcp's `LocalSessionManager` keeps every session it ever made: a session whose worker
//! ended at its keep-alive stays in its map (and answers `has_session` with true), so a
//! client that loops on `initialize` grows the server until it cannot allocate. Here a
//! session lives while it is used: one with no request in flight and no stream open for
//! [`Limits::session_idle`] is closed through rmcp (its worker, its handler and its map
//! entry go), and so, after a quarter of that, is one that never made a request after its
//! handshake. At [`Limits::max_sessions`] a new session takes the place of the longest-idle
//! session that made no request; when every session has, the new one is refused with a
//! `Retry-After` (see [`Sessions::admit`]). Memory freed by a sweep is handed back to the
//! system (glibc keeps freed pages otherwise).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures_core::Stream;
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker, SessionConfig,
};
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};

use super::options::Limits;
use crate::transport::policy::{MessagePolicy, Verdict};

/// The live sessions of one shared server.
pub(crate) struct Sessions {
    inner: LocalSessionManager,
    limits: Limits,
    live: Mutex<HashMap<SessionId, Entry>>,
}

/// What the server keeps of one session besides rmcp's worker.
struct Entry {
    /// The protocol edge of this session (its requests in flight).
    policy: MessagePolicy,
    /// When a request last came or a stream last ended.
    last_active: Instant,
    /// Answers and streams of this session still open.
    open: usize,
    /// The client made a request after its handshake.
    used: bool,
}

impl Entry {
    fn idle_for(&self, now: Instant) -> Option<Duration> {
        (self.open == 0).then(|| now.saturating_duration_since(self.last_active))
    }
}

impl Sessions {
    pub fn new(limits: Limits) -> Sessions {
        let mut config = SessionConfig::default();
        // The sweep decides when a session is idle: rmcp's keep-alive would close one
        // whose client holds a stream open and is merely quiet, and leave its entry behind.
        config.keep_alive = None;
        // `initialize` is handed over right after the session is made.
        config.init_timeout = Some(Duration::from_secs(10));
        let mut inner = LocalSessionManager::default();
        inner.session_config = config;
        Sessions {
            inner,
            limits,
            live: Mutex::new(HashMap::new()),
        }
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Entry>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How many sessions are live.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.live().len()
    }

    /// Whether no session is live.
    pub fn is_empty(&self) -> bool {
        self.live().is_empty()
    }

    /// How long a session may stay idle: a quarter of the limit for one that never made a
    /// request after its handshake.
    fn expiry(&self, used: bool) -> Duration {
        if used {
            self.limits.session_idle
        } else {
            (self.limits.session_idle / 4).max(Duration::from_secs(1))
        }
    }

    /// Makes room for one more session: below the cap there is room; at it, the
    /// longest-idle session that made no request since its handshake is closed. `Err` is
    /// how long until a session is expected to expire, when none can give way.
    pub async fn admit(&self) -> Result<(), Duration> {
        let victim = {
            let live = self.live();
            if live.len() < self.limits.max_sessions {
                return Ok(());
            }
            let now = Instant::now();
            let victim = live
                .iter()
                .filter(|(_, e)| !e.used)
                .filter_map(|(id, e)| e.idle_for(now).map(|idle| (idle, id)))
                .max_by_key(|(idle, _)| *idle)
                .map(|(_, id)| id.clone());
            match victim {
                Some(id) => id,
                None => {
                    let soonest = live
                        .values()
                        .filter_map(|e| {
                            e.idle_for(now)
                                .map(|idle| self.expiry(e.used).saturating_sub(idle))
                        })
                        .min()
                        .unwrap_or(self.limits.session_idle);
                    return Err(soonest.max(Duration::from_secs(1)));
                }
            }
        };
        self.close(&victim).await;
        Ok(())
    }

    /// A message of session `id`, through its policy; `None` when there is no such session.
    pub fn receive(&self, id: &SessionId, bytes: &[u8]) -> Option<Verdict> {
        let mut live = self.live();
        let entry = live.get_mut(id)?;
        entry.last_active = Instant::now();
        let verdict = entry.policy.receive(bytes);
        if let Verdict::Message(JsonRpcMessage::Request(_)) = &verdict {
            entry.used = true;
        }
        Some(verdict)
    }

    /// An answer or a stream of session `id` opens; false when there is no such session.
    pub fn opened(&self, id: &SessionId) -> bool {
        let mut live = self.live();
        let Some(entry) = live.get_mut(id) else {
            return false;
        };
        entry.open += 1;
        entry.last_active = Instant::now();
        true
    }

    /// An answer or a stream of session `id` ended (sent whole, or dropped by its client);
    /// `request` is no longer in flight.
    pub fn ended(&self, id: &SessionId, request: Option<&RequestId>) {
        let mut live = self.live();
        if let Some(entry) = live.get_mut(id) {
            entry.open = entry.open.saturating_sub(1);
            entry.last_active = Instant::now();
            if let Some(request) = request {
                entry.policy.finished(request);
            }
        }
    }

    /// Ends session `id` (a client's `DELETE`); false when there is no such session.
    pub async fn end(&self, id: &SessionId) -> bool {
        if self.live().remove(id).is_none() {
            return false;
        }
        let _ = self.inner.close_session(id).await;
        true
    }

    async fn close(&self, id: &SessionId) {
        self.live().remove(id);
        let _ = self.inner.close_session(id).await;
    }

    /// Closes every session idle past its expiry; how many were closed.
    pub async fn sweep(&self) -> usize {
        let expired: Vec<SessionId> = {
            let now = Instant::now();
            let mut live = self.live();
            let expired: Vec<SessionId> = live
                .iter()
                .filter(|(_, e)| {
                    e.idle_for(now)
                        .is_some_and(|idle| idle >= self.expiry(e.used))
                })
                .map(|(id, _)| id.clone())
                .collect();
            for id in &expired {
                live.remove(id);
            }
            if live.is_empty() {
                live.shrink_to_fit();
            }
            expired
        };
        for id in &expired {
            let _ = self.inner.close_session(id).await;
        }
        expired.len()
    }

    /// Closes every session (the server stops).
    pub async fn close_all(&self) {
        let all: Vec<SessionId> = self.live().drain().map(|(id, _)| id).collect();
        for id in &all {
            let _ = self.inner.close_session(id).await;
        }
    }
}

impl SessionManager for Sessions {
    type Error = LocalSessionManagerError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.inner.create_session().await?;
        self.live().insert(
            id.clone(),
            Entry {
                // rmcp answers `initialize` before the session's id reaches its client, so
                // every message that names the id comes after the handshake.
                policy: MessagePolicy::open(),
                last_active: Instant::now(),
                open: 0,
                used: false,
            },
        );
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.live().contains_key(id))
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.live().remove(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.resume(id, last_event_id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_sessions: usize, idle_secs: u64) -> Limits {
        Limits {
            max_sessions,
            session_idle: Duration::from_secs(idle_secs),
        }
    }

    const PING: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;

    /// At the cap, the longest-idle session that made no request gives way; when every
    /// session has made one, the next is refused until one expires.
    #[tokio::test]
    async fn the_cap_evicts_unused_sessions_first_then_refuses() {
        let s = Sessions::new(limits(2, 60));
        let (a, _ta) = s.create_session().await.unwrap();
        let (b, _tb) = s.create_session().await.unwrap();
        // `a` made a request: it is never evicted for a newcomer.
        assert!(s.receive(&a, PING).is_some());
        s.admit().await.unwrap();
        assert!(!s.live().contains_key(&b), "the unused session gave way");
        assert!(s.live().contains_key(&a));
        let (c, _tc) = s.create_session().await.unwrap();
        assert!(s.receive(&c, PING).is_some());
        let wait = s.admit().await.unwrap_err();
        assert!(
            wait > Duration::from_secs(50) && wait <= Duration::from_secs(60),
            "{wait:?}"
        );
        assert_eq!(s.len(), 2);
    }

    /// A session with a stream open is never idle; one without expires and is gone from
    /// the manager (rmcp's own map included), so it no longer counts.
    #[tokio::test]
    async fn idle_sessions_expire_and_open_ones_stay() {
        let s = Sessions::new(limits(8, 1));
        let (open, _t1) = s.create_session().await.unwrap();
        let (idle, _t2) = s.create_session().await.unwrap();
        assert!(s.opened(&open));
        tokio::time::sleep(Duration::from_millis(1100)).await;
        assert_eq!(s.sweep().await, 1);
        assert!(s.has_session(&open).await.unwrap());
        assert!(!s.has_session(&idle).await.unwrap());
        assert!(!s.inner.sessions.read().await.contains_key(&idle));
        s.ended(&open, None);
        tokio::time::sleep(Duration::from_millis(1100)).await;
        assert_eq!(s.sweep().await, 1);
        assert_eq!(s.len(), 0);
        assert!(s.inner.sessions.read().await.is_empty());
    }

    /// A request id stays in flight until its answer ends, then may be used again.
    #[tokio::test]
    async fn an_id_is_in_flight_until_its_answer_ends() {
        let s = Sessions::new(limits(8, 60));
        let (id, _t) = s.create_session().await.unwrap();
        assert!(matches!(s.receive(&id, PING), Some(Verdict::Message(_))));
        assert!(matches!(s.receive(&id, PING), Some(Verdict::Answer(_))));
        s.ended(&id, Some(&RequestId::Number(1)));
        assert!(matches!(s.receive(&id, PING), Some(Verdict::Message(_))));
        assert!(
            s.receive(&SessionId::from("nobody".to_string()), PING)
                .is_none()
        );
        assert!(s.end(&id).await);
        assert!(!s.end(&id).await);
    }
}
