//! Connections of a shared server: binding (a unix socket replaces only a socket left by a
//! dead server), the accept loop under a cap on open connections, and each connection's
//! limits: its request head within [`HEAD_TIMEOUT`] (which also closes a keep-alive
//! connection idle that long) and no write stalled past [`WRITE_STALL`] (a client that
//! never reads its answers does not hold a connection, or the stream it was sent, for good).
//!
//! At the cap, or when the process runs out of descriptors, the oldest connection with no
//! request in progress (one still sending its head, or idle between requests) is closed to
//! make room: a crowd of silent or trickling connections cannot keep a real client waiting
//! behind them. When every connection is busy with a request, the loop waits for one to end,
//! and out of descriptors it backs off instead of spinning on the error.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::front::Front;

/// How long a request head may take to arrive, and a keep-alive connection may stay idle.
pub(crate) const HEAD_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a write may wait on a client that reads nothing.
pub(crate) const WRITE_STALL: Duration = Duration::from_secs(30);
/// How long the accept loop rests when the process is out of descriptors.
const EXHAUSTED_BACKOFF: Duration = Duration::from_millis(100);
/// Open connections at most (fewer when the descriptor limit is lower).
const MAX_CONNECTIONS: usize = 4096;
/// Descriptors kept for everything but connections (index files, the watcher, logs): an
/// eighth of the limit, at most this many.
const RESERVED_DESCRIPTORS: u64 = 256;

/// Raises the soft limit on open descriptors to the hard one (a shared server holds a
/// descriptor per connection), and returns how many connections to keep open at once.
pub(crate) fn connection_cap() -> usize {
    let limit = raise_descriptor_limit();
    let room = limit
        .saturating_sub((limit / 8).min(RESERVED_DESCRIPTORS))
        .max(16);
    usize::try_from(room)
        .unwrap_or(usize::MAX)
        .min(MAX_CONNECTIONS)
}

#[cfg(unix)]
fn raise_descriptor_limit() -> u64 {
    // SAFETY: getrlimit and setrlimit only read and write the struct passed.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 1024;
        }
        let want = lim.rlim_max.min(1 << 20);
        if lim.rlim_cur < want {
            let raised = libc::rlimit {
                rlim_cur: want,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                return want as u64;
            }
        }
        lim.rlim_cur as u64
    }
}

#[cfg(not(unix))]
fn raise_descriptor_limit() -> u64 {
    MAX_CONNECTIONS as u64 + RESERVED_DESCRIPTORS
}

/// Prepares `path` for a new socket: nothing there, or a socket no server answers on (left
/// by one that died), which is removed. Anything else is refused and left as it is.
#[cfg(unix)]
pub(crate) fn clear_socket_path(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => anyhow::bail!("--socket {}: {e}", path.display()),
    };
    let kind = meta.file_type();
    if !kind.is_socket() {
        let what = if kind.is_symlink() {
            "a symbolic link"
        } else if kind.is_dir() {
            "a directory"
        } else if kind.is_file() {
            "a regular file"
        } else {
            "not a socket"
        };
        anyhow::bail!(
            "--socket {}: the path is {what}, not a socket left by a server; it was left as it is (choose another path, or remove it yourself)",
            path.display()
        );
    }
    if std::os::unix::net::UnixStream::connect(path).is_ok() {
        anyhow::bail!("{} is in use by a running server", path.display());
    }
    std::fs::remove_file(path).map_err(|e| anyhow::anyhow!("--socket {}: {e}", path.display()))
}

/// Removes the socket this server made at `path`, if it is still a socket.
#[cfg(unix)]
pub(crate) fn remove_socket(path: &Path) {
    use std::os::unix::fs::FileTypeExt;
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket()) {
        let _ = std::fs::remove_file(path);
    }
}

/// Whether an accept failed for want of descriptors or memory: the listener stays readable,
/// so trying again at once would spin.
fn exhausted(e: &io::Error) -> bool {
    #[cfg(unix)]
    {
        matches!(
            e.raw_os_error(),
            Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
        )
    }
    #[cfg(not(unix))]
    {
        // WSAEMFILE, WSAENOBUFS.
        matches!(e.raw_os_error(), Some(10024 | 10055))
    }
}

/// The open connections, for choosing one to close at the cap.
#[derive(Default)]
pub(crate) struct Conns {
    open: std::sync::Mutex<std::collections::BTreeMap<u64, Conn>>,
    next: std::sync::atomic::AtomicU64,
    /// Signalled when a connection ends.
    ended: tokio::sync::Notify,
}

/// One open connection as the loop sees it: how many of its requests are in progress (from
/// the head read to the answer's last byte), and how to close it.
#[derive(Clone, Default)]
pub(crate) struct Conn {
    pub active: Arc<std::sync::atomic::AtomicUsize>,
    /// Requests begun on it, ever: a connection that never finished a request head is
    /// closed before an idle one that served requests.
    pub begun: Arc<std::sync::atomic::AtomicUsize>,
    pub close: Arc<tokio::sync::Notify>,
}

impl Conns {
    fn open(&self) -> std::sync::MutexGuard<'_, std::collections::BTreeMap<u64, Conn>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn len(&self) -> usize {
        self.open().len()
    }

    fn add(&self) -> (u64, Conn) {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let conn = Conn::default();
        self.open().insert(id, conn.clone());
        (id, conn)
    }

    fn remove(&self, id: u64) {
        self.open().remove(&id);
        self.ended.notify_waiters();
    }

    /// Closes the oldest connection with no request in progress, first among those that
    /// never finished a request head; false when every one has a request in progress.
    fn close_oldest_idle(&self) -> bool {
        use std::sync::atomic::Ordering::SeqCst;
        let mut open = self.open();
        let idle = |c: &Conn| c.active.load(SeqCst) == 0;
        let idle = open
            .iter()
            .find(|(_, c)| idle(c) && c.begun.load(SeqCst) == 0)
            .or_else(|| open.iter().find(|(_, c)| idle(c)))
            .map(|(id, _)| *id);
        match idle.and_then(|id| open.remove(&id)) {
            Some(conn) => {
                conn.close.notify_one();
                true
            }
            None => false,
        }
    }
}

/// Accepts connections with `accept` and hands each to `serve` with its [`Conn`], keeping at
/// most `cap` open, until `stop` resolves.
pub(crate) async fn accept_loop<S, A, F, V, G>(
    mut accept: A,
    serve: V,
    cap: usize,
    mut stop: Pin<&mut impl Future<Output = ()>>,
) where
    A: FnMut() -> F,
    F: Future<Output = io::Result<S>>,
    V: Fn(S, Conn) -> G,
    G: Future<Output = ()> + Send + 'static,
{
    let conns = Arc::new(Conns::default());
    let mut warned = false;
    loop {
        // At the cap, an idle connection makes room; when none is idle, wait for one to end
        // (new connections wait in the listen backlog meanwhile).
        while conns.len() >= cap && !conns.close_oldest_idle() {
            tokio::select! {
                _ = conns.ended.notified() => {}
                _ = tokio::time::sleep(EXHAUSTED_BACKOFF) => {}
                _ = stop.as_mut() => return,
            }
        }
        let accepted = tokio::select! {
            a = accept() => a,
            _ = stop.as_mut() => return,
        };
        match accepted {
            Ok(stream) => {
                warned = false;
                let (id, conn) = conns.add();
                let served = serve(stream, conn);
                let conns = Arc::clone(&conns);
                tokio::spawn(async move {
                    served.await;
                    conns.remove(id);
                });
            }
            Err(e) if exhausted(&e) => {
                // Out of descriptors: an idle connection gives its own back, or the loop rests.
                if conns.close_oldest_idle() {
                    continue;
                }
                if !warned {
                    use std::io::Write;
                    let _ = writeln!(
                        std::io::stderr(),
                        "satori: cannot accept a connection ({e}); trying again every {} ms",
                        EXHAUSTED_BACKOFF.as_millis()
                    );
                    warned = true;
                }
                tokio::select! {
                    _ = tokio::time::sleep(EXHAUSTED_BACKOFF) => {}
                    _ = stop.as_mut() => return,
                }
            }
            // A connection reset before it was accepted, and the like: the next one.
            Err(_) => {}
        }
    }
}

/// Serves HTTP/1.1 on one connection through `front`, under the connection's limits, until
/// it ends or the accept loop closes it (`conn.close`).
pub(crate) async fn serve_connection<S>(stream: S, front: Arc<Front>, conn: Conn)
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let io = TokioIo::new(WriteDeadline::new(stream, WRITE_STALL));
    let (active, begun) = (Arc::clone(&conn.active), Arc::clone(&conn.begun));
    let service = hyper::service::service_fn(move |req| {
        begun.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let busy = Busy::new(&active);
        let front = Arc::clone(&front);
        async move {
            let answer = front.handle(req).await;
            Ok::<_, Infallible>(answer.map(|body| {
                http_body_util::BodyExt::boxed(Tracked {
                    inner: body,
                    _busy: busy,
                })
            }))
        }
    });
    let served = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .serve_connection(io, service);
    // Dropping the connection closes its socket.
    tokio::select! {
        _ = served => {}
        _ = conn.close.notified() => {}
    }
}

/// A request in progress on a connection, from its head to its answer's last byte.
struct Busy(Arc<std::sync::atomic::AtomicUsize>);

impl Busy {
    fn new(active: &Arc<std::sync::atomic::AtomicUsize>) -> Busy {
        active.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Busy(Arc::clone(active))
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// An answer's body that keeps its request counted in progress until hyper drops it.
struct Tracked {
    inner: super::front::Body,
    _busy: Busy,
}

impl hyper::body::Body for Tracked {
    type Data = bytes::Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<bytes::Bytes>, Infallible>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// A stream whose writes fail once one has waited [`WRITE_STALL`] on a client that does not
/// read: hyper then closes the connection and drops the answer it was writing.
pub(crate) struct WriteDeadline<S> {
    io: S,
    limit: Duration,
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S> WriteDeadline<S> {
    pub fn new(io: S, limit: Duration) -> Self {
        WriteDeadline {
            io,
            limit,
            stalled: None,
        }
    }

    fn pending<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        let limit = self.limit;
        let sleep = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client has read nothing for too long",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn settle<T>(&mut self, cx: &mut Context<'_>, p: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        match p {
            Poll::Ready(r) => {
                self.stalled = None;
                Poll::Ready(r)
            }
            Poll::Pending => self.pending(cx),
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteDeadline<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteDeadline<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let p = Pin::new(&mut self.io).poll_write(cx, buf);
        self.settle(cx, p)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let p = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.settle(cx, p)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let p = Pin::new(&mut self.io).poll_flush(cx);
        self.settle(cx, p)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::AsyncWriteExt;

    /// The accept loop over an accept that fails `failures` times for want of descriptors,
    /// then yields one connection, then waits; run for `window`: (tries, served).
    async fn accept_for(failures: usize, window: Duration) -> (usize, usize) {
        let tries = Arc::new(AtomicUsize::new(0));
        let served = Arc::new(AtomicUsize::new(0));
        let accept = {
            let tries = Arc::clone(&tries);
            move || {
                let n = tries.fetch_add(1, Ordering::SeqCst);
                async move {
                    if n < failures {
                        let emfile = if cfg!(unix) { 24 } else { 10024 };
                        Err(io::Error::from_raw_os_error(emfile))
                    } else if n == failures {
                        Ok(tokio::io::duplex(8).0)
                    } else {
                        std::future::pending().await
                    }
                }
            }
        };
        let serve = {
            let served = Arc::clone(&served);
            move |_conn, _: Conn| {
                served.fetch_add(1, Ordering::SeqCst);
                async {}
            }
        };
        let stop = tokio::time::sleep(window);
        tokio::pin!(stop);
        accept_loop(accept, serve, 4, stop.as_mut()).await;
        (tries.load(Ordering::SeqCst), served.load(Ordering::SeqCst))
    }

    /// Out of descriptors, the loop rests between tries instead of spinning on the error,
    /// and accepts again once it can.
    #[tokio::test]
    async fn the_accept_loop_backs_off_when_descriptors_run_out() {
        // Five failures at 100 ms each outlast 300 ms: a loop that spins would have reached
        // the connection at once.
        let (tries, served) = accept_for(5, Duration::from_millis(300)).await;
        assert!(tries <= 4, "{tries} tries");
        assert_eq!(served, 0);
        let (_, served) = accept_for(5, Duration::from_millis(1500)).await;
        assert_eq!(served, 1, "it accepts again");
    }

    /// At the cap the oldest connection with no request in progress is closed for the
    /// newcomer, one that never finished a request head before one that served requests;
    /// one serving a request is never closed.
    #[tokio::test]
    async fn at_the_cap_the_oldest_idle_connection_makes_room() {
        let conns = Conns::default();
        let (_, busy) = conns.add();
        let (_, served) = conns.add();
        let (_, silent) = conns.add();
        let (_, later) = conns.add();
        busy.active.store(1, Ordering::SeqCst);
        served.begun.store(3, Ordering::SeqCst);
        #[track_caller]
        fn closed(c: &Conn) -> bool {
            futures_executor_poll(c.close.notified())
        }
        for (expect, left) in [(&silent, 3), (&later, 2), (&served, 1)] {
            assert!(conns.close_oldest_idle());
            assert_eq!(conns.len(), left);
            assert!(closed(expect));
        }
        assert!(!closed(&busy));
        assert!(!conns.close_oldest_idle(), "the one left is busy");
    }

    /// Whether `f` is ready at its first poll.
    fn futures_executor_poll<F: Future>(f: F) -> bool {
        let mut f = std::pin::pin!(f);
        let waker = std::task::Waker::noop();
        f.as_mut().poll(&mut Context::from_waker(waker)).is_ready()
    }

    /// A write to a peer that reads nothing fails after the limit instead of waiting forever.
    #[tokio::test]
    async fn a_write_nobody_reads_fails_at_the_limit() {
        let (ours, _theirs) = tokio::io::duplex(64);
        let mut w = WriteDeadline::new(ours, Duration::from_millis(200));
        let err = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                if let Err(e) = w.write_all(&[0u8; 1024]).await {
                    return e;
                }
            }
        })
        .await
        .expect("the stalled write gave up");
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
    }

    #[cfg(unix)]
    #[test]
    fn only_a_dead_servers_socket_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        #[track_caller]
        fn check(path: &Path, want: Result<(), &str>, left: bool) {
            let got = clear_socket_path(path).map_err(|e| e.to_string());
            match (&got, want) {
                (Ok(()), Ok(())) => {}
                (Err(e), Err(w)) => assert!(e.contains(w), "{e}"),
                _ => panic!("{}: {got:?}", path.display()),
            }
            assert_eq!(
                std::fs::symlink_metadata(path).is_ok(),
                left,
                "{}",
                path.display()
            );
        }
        let file = dir.path().join("file");
        std::fs::write(&file, "keep me").unwrap();
        check(&file, Err("is a regular file"), true);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");
        let sub = dir.path().join("dir");
        std::fs::create_dir(&sub).unwrap();
        check(&sub, Err("is a directory"), true);
        let dead = dir.path().join("dead.sock");
        drop(std::os::unix::net::UnixListener::bind(&dead).unwrap());
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&dead, &link).unwrap();
        check(&link, Err("is a symbolic link"), true);
        check(&dead, Ok(()), false);
        let live = dir.path().join("live.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&live).unwrap();
        check(&live, Err("in use by a running server"), true);
        check(&dir.path().join("absent"), Ok(()), false);
    }
}
