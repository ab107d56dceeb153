//! One long-running `satori` for many clients: MCP's Streamable HTTP transport on a loopback
//! TCP address (`--http 127.0.0.1:PORT`) or a unix socket (`--socket PATH`).
//!
//! rmcp's `StreamableHttpService` speaks the transport (sessions with `Mcp-Session-Id`, JSON
//! and SSE answers, DELETE ending a session, the `Host` check against DNS rebinding, a body
//! limit); each session it opens is a [`Session`] over this process's one [`Service`], so every
//! client has its own roots and log level while the engine, the watcher and the background
//! syncs are the service's and outlive them. In front of it this module adds what a server
//! reachable by other local programs needs: an `Origin` check (a page in a browser must not
//! drive it), and an optional bearer token read from a key reference, never from the command
//! line.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::{Service, Session};

/// Where the shared server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

/// How the server is reached and who may call it.
#[derive(Clone)]
pub struct HttpOptions {
    pub listen: Listen,
    /// The bearer token every request must carry, read from a key reference.
    pub token: Option<String>,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("listen", &self.listen)
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .finish()
    }
}

/// The command line of a shared server: `--http ADDR` or `--socket PATH`, and
/// `--token-env NAME` or `--token-file PATH`. `Ok(None)` when neither `--http` nor `--socket`
/// is given (the stdio server).
pub fn parse_args(args: &[String]) -> Result<Option<HttpOptions>, String> {
    let mut listen = None;
    let mut token = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match arg.as_str() {
            "--http" => {
                let v = value("--http")?;
                let addr: SocketAddr = v.parse().map_err(|_| {
                    format!("--http {v}: expected an address and port, such as 127.0.0.1:7700")
                })?;
                set_once(&mut listen, Listen::Tcp(addr))?;
            }
            "--socket" => set_once(&mut listen, Listen::Unix(PathBuf::from(value("--socket")?)))?,
            "--token-env" => {
                let name = value("--token-env")?;
                let t = std::env::var(&name)
                    .ok()
                    .filter(|t| !t.trim().is_empty())
                    .ok_or_else(|| format!("--token-env {name}: the variable is unset or empty"))?;
                set_once(&mut token, t.trim().to_string())?;
            }
            "--token-file" => {
                let path = value("--token-file")?;
                let t = read_token_file(&path)?;
                if t.is_empty() {
                    return Err(format!("--token-file {path}: the file is empty"));
                }
                set_once(&mut token, t)?;
            }
            "--token" => {
                return Err(
                    "--token is not accepted: a token on the command line is visible to every user of the machine; use --token-env NAME or --token-file PATH".into(),
                );
            }
            other => {
                return Err(format!(
                    "unknown argument '{other}'; usage: satori [--http ADDR | --socket PATH] [--token-env NAME | --token-file PATH]"
                ));
            }
        }
    }
    match listen {
        None if token.is_some() => {
            Err("--token-env and --token-file need --http or --socket".into())
        }
        None => Ok(None),
        Some(listen) => Ok(Some(HttpOptions { listen, token })),
    }
}

/// The most a token file may hold. A token is a line; the cap keeps a path that never ends
/// (`/dev/zero`, a pipe nobody closes) from filling memory before the server starts.
const TOKEN_FILE_MAX_BYTES: u64 = 64 * 1024;

/// The token in the file at `path`, trimmed.
fn read_token_file(path: &str) -> Result<String, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| format!("--token-file {path}: {e}"))?;
    let mut bytes = Vec::new();
    file.take(TOKEN_FILE_MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("--token-file {path}: {e}"))?;
    if bytes.len() as u64 > TOKEN_FILE_MAX_BYTES {
        return Err(format!(
            "--token-file {path}: the file is larger than {} KiB; a token file holds one token",
            TOKEN_FILE_MAX_BYTES / 1024
        ));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("--token-file {path}: the file is not UTF-8 text"))?;
    Ok(text.trim().to_string())
}

fn set_once<T>(slot: &mut Option<T>, v: T) -> Result<(), String> {
    if slot.is_some() {
        return Err("--http/--socket and --token-env/--token-file may each be given once".into());
    }
    *slot = Some(v);
    Ok(())
}

type Body = BoxBody<Bytes, Infallible>;

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(text.to_string())).boxed());
    *r.status_mut() = status;
    r
}

/// The checks in front of the transport: the bearer token, and that a request sent by a
/// browser page comes from a loopback origin.
fn refuse<B>(req: &Request<B>, token: Option<&str>) -> Option<Response<Body>> {
    if let Some(origin) = req.headers().get(http::header::ORIGIN) {
        let ok = origin.to_str().ok().is_some_and(loopback_origin);
        if !ok {
            return Some(plain(
                StatusCode::FORBIDDEN,
                "Origin not allowed: this server answers pages of loopback origins only",
            ));
        }
    }
    if let Some(token) = token {
        let given = req
            .headers()
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if !given.is_some_and(|g| constant_time_eq(g.trim().as_bytes(), token.as_bytes())) {
            let mut r = plain(StatusCode::UNAUTHORIZED, "a bearer token is required");
            r.headers_mut().insert(
                http::header::WWW_AUTHENTICATE,
                http::HeaderValue::from_static("Bearer"),
            );
            return Some(r);
        }
    }
    None
}

/// The checks in front of the transport on a request made of `data` (the fuzz target
/// `http_front`, crates/satori-fuzz): lines `Name: value` as headers, the first line as the
/// command line of `satori` when it splits into arguments. A request is refused or passed,
/// and never both with the wrong token and let through.
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
    let mut req = Request::new(());
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
    let refused = refuse(&req, Some(token));
    let has_token = req
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("Bearer ") && v.contains(token));
    if refused.is_none() {
        assert!(has_token, "a request without the token was let through");
    }
    let _ = refuse(&req, None);
}

/// `http(s)://localhost|127.x.x.x|[::1][:port]`.
fn loopback_origin(origin: &str) -> bool {
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let host = match rest.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => rest.split(':').next().unwrap_or(""),
    };
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Serves `service` at `opts.listen` until `stop` resolves; `ready` is called with the
/// address bound (for `--http 127.0.0.1:0`).
pub async fn serve(
    service: Arc<Service>,
    opts: HttpOptions,
    stop: impl Future<Output = ()>,
    ready: impl FnOnce(&str),
) -> anyhow::Result<()> {
    let cancel = CancellationToken::new();
    let mut config = StreamableHttpServerConfig::default()
        .with_sse_keep_alive(Some(std::time::Duration::from_secs(15)))
        .with_cancellation_token(cancel.clone());
    let for_sessions = Arc::clone(&service);
    let mcp = StreamableHttpService::new(
        move || Ok(Session::new(&for_sessions)),
        Arc::new(LocalSessionManager::default()),
        {
            // The Host check admits loopback names; a socket's requests carry whatever
            // host their client wrote, and only users who can open the socket reach it.
            if matches!(opts.listen, Listen::Unix(_)) {
                config = config.disable_allowed_hosts();
            }
            config
        },
    );
    let token: Option<Arc<str>> = opts.token.as_deref().map(Arc::from);
    let handle = move |req: Request<hyper::body::Incoming>| {
        let (mcp, token) = (mcp.clone(), token.clone());
        async move {
            if let Some(r) = refuse(&req, token.as_deref()) {
                return Ok::<_, Infallible>(r);
            }
            Ok(mcp.handle(req).await)
        }
    };
    let attendance = service.attend();
    tokio::pin!(stop);
    match &opts.listen {
        Listen::Tcp(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| anyhow::anyhow!("cannot listen on {addr}: {e}"))?;
            ready(&format!("http://{}/mcp", listener.local_addr()?));
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((stream, _)) = accepted else { continue };
                        // An answer is written in pieces (an SSE priming event, then the
                        // message): with Nagle's algorithm on, the second waits for the
                        // client's delayed ACK, 40 ms on Linux, on every request.
                        let _ = stream.set_nodelay(true);
                        spawn_connection(TokioIo::new(stream), handle.clone());
                    }
                    _ = &mut stop => break,
                }
            }
        }
        Listen::Unix(path) => {
            #[cfg(unix)]
            {
                // A socket left by a server that died is replaced; a live one is not.
                if std::os::unix::net::UnixStream::connect(path).is_ok() {
                    anyhow::bail!("{} is in use by a running server", path.display());
                }
                let _ = std::fs::remove_file(path);
                let listener = tokio::net::UnixListener::bind(path)
                    .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", path.display()))?;
                // Only this user may connect.
                use std::os::unix::fs::PermissionsExt;
                let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
                ready(&format!("unix://{}", path.display()));
                loop {
                    tokio::select! {
                        accepted = listener.accept() => {
                            let Ok((stream, _)) = accepted else { continue };
                            spawn_connection(TokioIo::new(stream), handle.clone());
                        }
                        _ = &mut stop => break,
                    }
                }
                let _ = std::fs::remove_file(path);
            }
            #[cfg(not(unix))]
            anyhow::bail!(
                "--socket {}: unix sockets need a unix system",
                path.display()
            );
        }
    }
    cancel.cancel();
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

fn spawn_connection<I, F, Fut>(io: I, handle: F)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    F: Fn(Request<hyper::body::Incoming>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Response<Body>, Infallible>> + Send + 'static,
{
    tokio::spawn(async move {
        let _ = hyper::server::conn::http1::Builder::new()
            .serve_connection(io, hyper::service::service_fn(handle))
            .await;
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(args: &[&str], expected: &str) {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let got = match parse_args(&args) {
            Ok(o) => format!("{o:?}"),
            Err(e) => e,
        };
        assert!(got.contains(expected), "{args:?}: {got}");
    }

    #[test]
    fn command_lines() {
        check(&[], "None");
        check(&["--http", "127.0.0.1:0"], "Tcp(127.0.0.1:0)");
        check(&["--socket", "/tmp/s.sock"], "Unix(\"/tmp/s.sock\")");
        check(&["--http", "localhost"], "expected an address and port");
        check(&["--token", "abc"], "--token is not accepted");
        check(&["--http"], "--http needs a value");
        check(&["--bogus"], "unknown argument '--bogus'");
        // A file that never ends is refused at the cap rather than read into memory (found by
        // the http_front fuzz target: fuzz/regressions/http_front/).
        #[cfg(unix)]
        check(
            &["--http", "127.0.0.1:1", "--token-file", "/dev/zero"],
            "the file is larger than 64 KiB",
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "  secret-token\n").unwrap();
        let file = file.to_str().unwrap();
        check(
            &["--http", "127.0.0.1:1", "--token-file", file],
            "Tcp(127.0.0.1:1)",
        );
        std::fs::write(dir.path().join("bad"), [0xFF, 0xFE]).unwrap();
        let bad = dir.path().join("bad");
        check(
            &[
                "--http",
                "127.0.0.1:1",
                "--token-file",
                bad.to_str().unwrap(),
            ],
            "not UTF-8 text",
        );
        check(
            &[
                "--token-env",
                "SATORI_SURELY_UNSET_VARIABLE",
                "--http",
                "127.0.0.1:1",
            ],
            "the variable is unset or empty",
        );
        check(
            &["--http", "127.0.0.1:1", "--socket", "/tmp/x"],
            "each be given once",
        );
    }

    #[test]
    fn origins() {
        for (origin, ok) in [
            ("http://localhost:3000", true),
            ("http://127.0.0.1", true),
            ("https://[::1]:8443", true),
            ("http://evil.example", false),
            ("http://localhost.evil.example", false),
            ("null", false),
        ] {
            assert_eq!(loopback_origin(origin), ok, "{origin}");
        }
    }

    #[test]
    fn the_token_stays_out_of_debug() {
        let o = HttpOptions {
            listen: Listen::Tcp("127.0.0.1:1".parse().unwrap()),
            token: Some("secret-token".into()),
        };
        assert!(!format!("{o:?}").contains("secret-token"));
    }
}
