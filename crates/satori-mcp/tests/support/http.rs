//! A raw Streamable HTTP client for the server's tests, able to send what no SDK would: one
//! connection per request (TCP or a unix socket) through hyper's client, the answer of a
//! POST read as JSON or as SSE events; and a shared server run in this process.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use satori_mcp::Service;
use satori_mcp::transport::http::{HttpOptions, Limits, Listen};
use serde_json::Value;

/// Where a shared server listens.
#[derive(Debug, Clone)]
pub enum Addr {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

impl Addr {
    /// The address a server printed (`http://HOST:PORT/mcp` or `unix://PATH`).
    pub fn parse(printed: &str) -> Addr {
        if let Some(path) = printed.strip_prefix("unix://") {
            return Addr::Unix(PathBuf::from(path));
        }
        let rest = printed.strip_prefix("http://").expect(printed);
        Addr::Tcp(rest.trim_end_matches("/mcp").parse().expect(printed))
    }
}

/// A server's answer, read whole.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The JSON-RPC messages of the answer: the body when it is JSON, the data of each SSE
    /// event that holds one when it is a stream.
    pub fn messages(&self) -> Vec<Value> {
        let sse = self
            .header("content-type")
            .is_some_and(|t| t.starts_with("text/event-stream"));
        if !sse {
            return serde_json::from_slice(&self.body).into_iter().collect();
        }
        self.events()
            .into_iter()
            .filter_map(|(_, data)| serde_json::from_str(&data).ok())
            .collect()
    }

    /// The SSE events of the answer: (id, data).
    pub fn events(&self) -> Vec<(Option<String>, String)> {
        let text = self.text();
        let mut events = Vec::new();
        for block in text.split("\n\n") {
            let mut id = None;
            let mut data = Vec::new();
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id:") {
                    id = Some(v.trim().to_string());
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push(v.strip_prefix(' ').unwrap_or(v).to_string());
                }
            }
            if id.is_some() || !data.is_empty() {
                events.push((id, data.join("\n")));
            }
        }
        events
    }
}

/// Sends `req` on a connection of its own and reads the whole answer (within `within`).
pub async fn send_within(addr: &Addr, req: http::Request<Full<Bytes>>, within: Duration) -> Reply {
    tokio::time::timeout(within, exchange(addr, req, None))
        .await
        .unwrap_or_else(|_| panic!("no whole answer within {within:?}"))
}

/// Sends `req` and reads its answer for `window` (a stream that stays open is cut there).
pub async fn read_for(addr: &Addr, req: http::Request<Full<Bytes>>, window: Duration) -> Reply {
    exchange(addr, req, Some(window)).await
}

async fn exchange(addr: &Addr, req: http::Request<Full<Bytes>>, window: Option<Duration>) -> Reply {
    {
        let mut sender = match addr {
            Addr::Tcp(a) => handshake(tokio::net::TcpStream::connect(a).await.unwrap()).await,
            #[cfg(unix)]
            Addr::Unix(p) => handshake(tokio::net::UnixStream::connect(p).await.unwrap()).await,
            #[cfg(not(unix))]
            Addr::Unix(_) => unreachable!("unix sockets need a unix system"),
        };
        let resp = sender.send_request(req).await.unwrap();
        let (parts, mut body) = resp.into_parts();
        let mut got = Vec::new();
        let deadline = window.map(|w| tokio::time::Instant::now() + w);
        loop {
            let frame = match deadline {
                Some(d) => match tokio::time::timeout_at(d, body.frame()).await {
                    Ok(f) => f,
                    Err(_) => break,
                },
                None => body.frame().await,
            };
            match frame {
                Some(Ok(f)) => {
                    if let Ok(data) = f.into_data() {
                        got.extend_from_slice(&data);
                    }
                }
                _ => break,
            }
        }
        Reply {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body: Bytes::from(got),
        }
    }
}

/// An HTTP/1.1 client connection over `stream`, driven by a task of its own.
async fn handshake<S>(stream: S) -> hyper::client::conn::http1::SendRequest<Full<Bytes>>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    sender
}

pub async fn send(addr: &Addr, req: http::Request<Full<Bytes>>) -> Reply {
    send_within(addr, req, Duration::from_secs(120)).await
}

/// A request as an MCP client writes it: `Host`, the accepted types, the session's id.
pub fn request(method: http::Method, session: Option<&str>) -> http::request::Builder {
    let mut b = http::Request::builder()
        .method(method)
        .uri("/mcp")
        .header("host", "localhost")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    if let Some(s) = session {
        b = b.header("mcp-session-id", s);
    }
    b
}

/// A POST of `body` in session `session`.
pub fn post(session: Option<&str>, body: impl Into<Bytes>) -> http::Request<Full<Bytes>> {
    request(http::Method::POST, session)
        .body(Full::new(body.into()))
        .unwrap()
}

/// An `initialize` of protocol 2025-11-25 and its `initialized` notification; the session id.
pub async fn open_session(addr: &Addr) -> String {
    open_session_with(addr, serde_json::json!({})).await
}

/// [`open_session`] of a client with `capabilities`.
pub async fn open_session_with(addr: &Addr, capabilities: Value) -> String {
    let init = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": capabilities,
                   "clientInfo": {"name": "http-test", "version": "1"}}});
    let r = send(addr, post(None, init.to_string())).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let session = r
        .header("mcp-session-id")
        .expect("a session id")
        .to_string();
    let done = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let r = send(addr, post(Some(&session), done.to_string())).await;
    assert_eq!(r.status, 202, "{}", r.text());
    session
}

/// A shared server over `home` run in this process at `listen`, until the returned sender is
/// dropped or fired.
pub async fn serve(
    home: &Path,
    listen: Listen,
    limits: Limits,
) -> (Addr, tokio::sync::oneshot::Sender<()>) {
    let service = Service::new(super::config(home)).unwrap();
    let opts = HttpOptions {
        listen,
        token: None,
        limits,
        idle_exit: None,
        pid_file: None,
        start_lock_fd: None,
    };
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (at_tx, at_rx) = tokio::sync::oneshot::channel::<String>();
    tokio::spawn(async move {
        let stop = async move {
            let _ = stop_rx.await;
        };
        satori_mcp::transport::http::serve(service, opts, stop, move |at| {
            let _ = at_tx.send(at.to_string());
        })
        .await
        .unwrap();
    });
    let at = at_rx.await.expect("the server listens");
    (Addr::parse(&at), stop_tx)
}

/// A loopback server over `home` with the default limits.
pub async fn serve_tcp(home: &Path) -> (Addr, tokio::sync::oneshot::Sender<()>) {
    serve(
        home,
        Listen::Tcp("127.0.0.1:0".parse().unwrap()),
        Limits::default(),
    )
    .await
}
