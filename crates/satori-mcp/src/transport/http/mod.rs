//! One long-running `satori` for many clients: MCP's Streamable HTTP transport on a TCP
//! address (`--http 127.0.0.1:PORT`) or a unix socket (`--socket PATH`).
//!
//! rmcp's `StreamableHttpService` speaks the transport (JSON and SSE answers, the `Host`
//! check against DNS rebinding on loopback); each session is a [`Session`] over this
//! process's one [`Service`], so every client has its own roots and log level while the
//! engine, the watcher and the background syncs are the service's and outlive them. Around
//! it:
//! - `options`: the command line, and the rule that a listener other machines can reach
//!   needs a token;
//! - `front`: the checks on every request (token, `Origin`, `Host`), the body read under
//!   limits, and every message through the session's `MessagePolicy`, the protocol edge
//!   stdio has too; `DELETE`, the session cap's 503 and SSE resumption;
//! - `sessions`: the sessions under a cap and an idle expiry, and their memory returned;
//! - `listen`: binding, the accept loop (a cap on connections, a back-off when descriptors
//!   run out) and each connection's timeouts.

mod front;
mod lifecycle;
mod listen;
mod options;
mod sessions;

use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

pub use options::{HttpOptions, Limits, Listen, parse_args};

use crate::transport::MAX_LINE_BYTES;
use crate::{Service, Session};
use front::Front;
use sessions::Sessions;

/// Serves `service` at `opts.listen` until `stop` resolves; `ready` is called with the
/// address bound (for `--http 127.0.0.1:0`).
pub async fn serve(
    service: Arc<Service>,
    opts: HttpOptions,
    stop: impl Future<Output = ()>,
    ready: impl FnOnce(&str),
) -> anyhow::Result<()> {
    let cancel = CancellationToken::new();
    let tcp = matches!(opts.listen, Listen::Tcp(_));
    let mut config = StreamableHttpServerConfig::default()
        .with_sse_keep_alive(Some(Duration::from_secs(15)))
        .with_max_request_body_bytes(MAX_LINE_BYTES)
        .with_cancellation_token(cancel.clone());
    // rmcp admits loopback host names, which stops DNS rebinding on a loopback listener. A
    // socket's requests carry whatever host their client wrote, and only users who can open
    // the socket reach it; a listener other machines reach has a token (see `options`).
    match &opts.listen {
        Listen::Tcp(addr) if addr.ip().is_loopback() => {}
        _ => config = config.disable_allowed_hosts(),
    }
    let sessions = Arc::new(Sessions::new(opts.limits));
    let for_sessions = Arc::clone(&service);
    let front = Arc::new(Front {
        mcp: StreamableHttpService::new(
            move || Ok(Session::new(&for_sessions)),
            Arc::clone(&sessions),
            config,
        ),
        sessions: Arc::clone(&sessions),
        token: opts.token.as_deref().map(Arc::from),
        tcp,
    });
    let sweeper = tokio::spawn(sweep(
        Arc::clone(&sessions),
        opts.limits.session_idle,
        cancel.clone(),
    ));
    let cap = listen::connection_cap();
    let attendance = service.attend();
    let socket = match &opts.listen {
        Listen::Unix(path) => Some(path.clone()),
        Listen::Tcp(_) => None,
    };
    let unneeded = lifecycle::idle_exit(
        Arc::clone(&sessions),
        Arc::clone(&service),
        opts.idle_exit,
        socket,
    );
    let stop = async move {
        tokio::select! {
            () = stop => {}
            () = unneeded => {}
        }
    };
    let mut pid_file = None;
    let ready = |at: &str| -> anyhow::Result<()> {
        if let Some(path) = &opts.pid_file {
            pid_file = Some(lifecycle::PidFile::write(path, at)?);
        }
        if let Some(fd) = opts.start_lock_fd {
            lifecycle::release_start_lock(fd);
        }
        ready(at);
        Ok(())
    };
    tokio::pin!(stop);
    match &opts.listen {
        Listen::Tcp(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| anyhow::anyhow!("cannot listen on {addr}: {e}"))?;
            ready(&format!("http://{}/mcp", listener.local_addr()?))?;
            let listener = &listener;
            let accept = move || async move {
                let (stream, _) = listener.accept().await?;
                // An answer is written in pieces (an SSE priming event, then the message):
                // with Nagle's algorithm on, the second waits for the client's delayed ACK,
                // 40 ms on Linux, on every request.
                let _ = stream.set_nodelay(true);
                Ok(stream)
            };
            let serve = move |s, c| listen::serve_connection(s, Arc::clone(&front), c);
            listen::accept_loop(accept, serve, cap, stop.as_mut()).await;
        }
        Listen::Unix(path) => {
            #[cfg(unix)]
            {
                listen::clear_socket_path(path)?;
                let listener = tokio::net::UnixListener::bind(path)
                    .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", path.display()))?;
                // Only this user may connect.
                use std::os::unix::fs::PermissionsExt;
                let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
                ready(&format!("unix://{}", path.display()))?;
                let listener = &listener;
                let accept = move || async move { Ok(listener.accept().await?.0) };
                let serve = move |s, c| listen::serve_connection(s, Arc::clone(&front), c);
                listen::accept_loop(accept, serve, cap, stop.as_mut()).await;
                listen::remove_socket(path);
            }
            #[cfg(not(unix))]
            anyhow::bail!(
                "--socket {}: unix sockets need a unix system",
                path.display()
            );
        }
    }
    cancel.cancel();
    sweeper.abort();
    drop(pid_file);
    sessions.close_all().await;
    if let Some(last) = attendance.leave() {
        let handed_off = service.hand_off_builds();
        drop(last.background);
        service.shutdown(crate::SHUTDOWN_GRACE).await;
        if handed_off {
            service.settle_builds(crate::SHUTDOWN_GRACE).await;
        }
    }
    Ok(())
}

/// Closes idle sessions as they expire, and returns their memory.
async fn sweep(sessions: Arc<Sessions>, idle: Duration, cancel: CancellationToken) {
    // Often enough that a session outlives its expiry by a small share of it.
    let every = (idle / 8).clamp(Duration::from_millis(250), Duration::from_secs(5));
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = cancel.cancelled() => return,
        }
        if sessions.sweep().await > 0 {
            crate::memory::return_memory();
        }
    }
}

/// The checks in front of the transport on a request made of `data` (the fuzz target
/// `http_front`, crates/satori-fuzz): lines `Name: value` as headers, the first line as the
/// command line of `satori` when it splits into arguments. A request is refused or passed,
/// and never both without the right token and let through.
#[doc(hidden)]
pub fn fuzz_front(data: &[u8]) {
    let mut lines = data.split(|b| *b == b'\n');
    if let Some(first) = lines.next() {
        let args: Vec<String> = String::from_utf8_lossy(first)
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        let _ = parse_args(&args);
    }
    let mut req = http::Request::new(());
    for line in lines {
        let Some(colon) = line.iter().position(|b| *b == b':') else {
            continue;
        };
        let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(&line[..colon]),
            http::HeaderValue::from_bytes(line[colon + 1..].trim_ascii()),
        ) else {
            continue;
        };
        req.headers_mut().append(name, value);
    }
    let token = "fuzz-token";
    for tcp in [true, false] {
        let refused = front::refuse(&req, Some(token), tcp);
        let has_token = req
            .headers()
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("Bearer ") && v.contains(token));
        if refused.is_none() {
            assert!(has_token, "a request without the token was let through");
        }
        let _ = front::refuse(&req, None, tcp);
    }
}
