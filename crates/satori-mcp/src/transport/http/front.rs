//! What every HTTP request meets before rmcp's Streamable HTTP service: the checks on who is
//! asking (bearer token, `Origin`, `Host`), the body read whole under a size cap, a time limit
//! and a rate floor, and each JSON-RPC message through the session's [`MessagePolicy`], the
//! same protocol edge as stdio's. The front also owns what rmcp answers wrongly or not at all:
//! `DELETE` of a session (200, or 404 for an unknown one), the cap on sessions (503 with
//! `Retry-After`), a resumed stream starting after its `Last-Event-ID` (rmcp replays that
//! event too), and a body that cannot be read (400, where rmcp answers 500).

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::{Frame, SizeHint};
use rmcp::model::{ClientRequest, JsonRpcMessage, RequestId};
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::SessionId;

use super::sessions::Sessions;
use crate::Session;
use crate::transport::MAX_LINE_BYTES;
use crate::transport::policy::{self, MessagePolicy, Owed, Verdict};

pub(crate) type Body = BoxBody<Bytes, Infallible>;

/// How long the first byte of a body, and each later one, may keep the server waiting.
const BODY_STALL: Duration = Duration::from_secs(10);
/// Past [`BODY_STALL`], a body must keep arriving at this many bytes a second on average.
const BODY_RATE_FLOOR: u64 = 16 * 1024;

const SESSION_HEADER: &str = "mcp-session-id";
const LAST_EVENT_HEADER: &str = "last-event-id";

/// The front of one shared server.
pub(crate) struct Front {
    pub mcp: StreamableHttpService<Session, Sessions>,
    pub sessions: Arc<Sessions>,
    pub token: Option<Arc<str>>,
    /// Requests over TCP must name a host (HTTP/1.1); a socket's clients may leave it out.
    pub tcp: bool,
}

impl Front {
    pub async fn handle(&self, req: Request<hyper::body::Incoming>) -> Response<Body> {
        if let Some(r) = refuse(&req, self.token.as_deref(), self.tcp) {
            return r;
        }
        match *req.method() {
            Method::POST => self.post(req).await,
            Method::GET => self.get(req).await,
            Method::DELETE => self.delete(req).await,
            _ => self.mcp.handle(req).await,
        }
    }

    async fn post(&self, req: Request<hyper::body::Incoming>) -> Response<Body> {
        let (parts, body) = req.into_parts();
        let bytes = match read_body(body).await {
            Ok(b) => b,
            Err(r) => return r,
        };
        let session = session_of(&parts.headers);
        let json = is_json(&parts.headers);
        let forward = move |bytes: Bytes| Request::from_parts(parts, Full::new(bytes));
        // A body that is not JSON is rmcp's to refuse (415), before any message is read.
        if !json {
            return self.mcp.handle(forward(bytes)).await;
        }
        let verdict = match &session {
            Some(id) => match self.sessions.receive(id, &bytes) {
                Some(v) => v,
                None => return plain(StatusCode::NOT_FOUND, "Not Found: Session not found"),
            },
            // Without a session the message must open one: a fresh policy answers anything
            // else as a request before `initialize`, like stdio's.
            None => MessagePolicy::new().receive(&bytes),
        };
        let msg = match verdict {
            Verdict::Skip => return status_only(StatusCode::ACCEPTED),
            Verdict::Answer(owed) => return rpc_error(&owed),
            Verdict::Message(msg) => msg,
        };
        let request_id = match &msg {
            JsonRpcMessage::Request(r) => {
                if session.is_none() {
                    match r.request {
                        ClientRequest::InitializeRequest(_) => {
                            if let Err(wait) = self.sessions.admit().await {
                                return busy(wait);
                            }
                        }
                        // A ping is answered before a session exists too, as on stdio.
                        ClientRequest::PingRequest(_) => return pong(&r.id),
                        _ => {}
                    }
                }
                Some(r.id.clone())
            }
            _ => None,
        };
        let Some(id) = session else {
            return self.mcp.handle(forward(bytes)).await;
        };
        self.sessions.opened(&id);
        self.answer_in(id, request_id, forward(bytes)).await
    }

    /// rmcp's answer to `req` in session `id` (counted open with [`Sessions::opened`]),
    /// which tells the session when it ends and that `request` is no longer in flight.
    async fn answer_in<B>(
        &self,
        id: SessionId,
        request: Option<RequestId>,
        req: Request<B>,
    ) -> Response<Body>
    where
        B: hyper::body::Body + Send + 'static,
        B::Error: std::fmt::Display,
    {
        let guard = StreamGuard {
            sessions: Arc::clone(&self.sessions),
            session: id,
            request,
        };
        let answer = self.mcp.handle(req).await;
        answer.map(|b| {
            Guarded {
                inner: b,
                _guard: guard,
            }
            .boxed()
        })
    }

    async fn get(&self, req: Request<hyper::body::Incoming>) -> Response<Body> {
        let Some(id) = session_of(req.headers()) else {
            return self.mcp.handle(req).await;
        };
        let (mut parts, body) = req.into_parts();
        // rmcp replays from the event it is given; the client has that one already.
        if let Some(last) = parts.headers.get(LAST_EVENT_HEADER) {
            match last.to_str().ok().and_then(next_event_id) {
                Some(next) => {
                    parts.headers.insert(
                        LAST_EVENT_HEADER,
                        HeaderValue::from_str(&next).expect("digits and a slash"),
                    );
                }
                None => {
                    return plain(
                        StatusCode::BAD_REQUEST,
                        "Bad Request: Last-Event-ID is not an event id of this server",
                    );
                }
            }
        }
        if !self.sessions.opened(&id) {
            return plain(StatusCode::NOT_FOUND, "Not Found: Session not found");
        }
        self.answer_in(id, None, Request::from_parts(parts, body))
            .await
    }

    async fn delete(&self, req: Request<hyper::body::Incoming>) -> Response<Body> {
        let Some(id) = session_of(req.headers()) else {
            return plain(
                StatusCode::BAD_REQUEST,
                "Bad Request: DELETE ends a session named by Mcp-Session-Id",
            );
        };
        if self.sessions.end(&id).await {
            status_only(StatusCode::OK)
        } else {
            plain(StatusCode::NOT_FOUND, "Not Found: Session not found")
        }
    }
}

/// The event after `last` in rmcp's numbering (`INDEX` or `INDEX/STREAM`).
fn next_event_id(last: &str) -> Option<String> {
    let (index, stream) = match last.split_once('/') {
        Some((i, s)) => (i, Some(s.parse::<u64>().ok()?)),
        None => (last, None),
    };
    let next = index.parse::<usize>().ok()?.checked_add(1)?;
    Some(match stream {
        Some(s) => format!("{next}/{s}"),
        None => next.to_string(),
    })
}

fn session_of(headers: &http::HeaderMap) -> Option<SessionId> {
    headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(|s| SessionId::from(s.to_owned()))
}

fn is_json(headers: &http::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case("application/json")
        })
}

/// The body, whole: at most [`MAX_LINE_BYTES`] (413 past it, with the JSON-RPC error stdio
/// gives a line that long, to the id its start names), each piece within [`BODY_STALL`] of
/// the one before, and the whole at [`BODY_RATE_FLOOR`] once the first stall's worth of time
/// is spent (408 otherwise: a client trickling a byte at a time holds nothing for long). A
/// body the connection cannot deliver (a malformed chunk size, a connection cut short) is a
/// 400.
async fn read_body(mut body: hyper::body::Incoming) -> Result<Bytes, Response<Body>> {
    let start = Instant::now();
    let mut buf = BytesMut::new();
    loop {
        let allowed = BODY_STALL + Duration::from_secs(buf.len() as u64 / BODY_RATE_FLOOR);
        let left = allowed.saturating_sub(start.elapsed()).min(BODY_STALL);
        if left.is_zero() {
            return Err(timeout());
        }
        let frame = match tokio::time::timeout(left, body.frame()).await {
            Err(_) => return Err(timeout()),
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                return Err(plain(
                    StatusCode::BAD_REQUEST,
                    &format!("Bad Request: the body could not be read: {e}"),
                ));
            }
            Ok(Some(Ok(frame))) => frame,
        };
        if let Ok(data) = frame.into_data() {
            if buf.len() + data.len() > MAX_LINE_BYTES {
                let owed = policy::too_long(
                    policy::peek_id(&buf),
                    &format!("{MAX_LINE_BYTES} bytes (16 MiB)"),
                );
                let mut r = rpc_error(&owed);
                *r.status_mut() = StatusCode::PAYLOAD_TOO_LARGE;
                r.headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
                return Err(r);
            }
            buf.extend_from_slice(&data);
        }
    }
    Ok(buf.freeze())
}

fn timeout() -> Response<Body> {
    let mut r = plain(
        StatusCode::REQUEST_TIMEOUT,
        "Request Timeout: the body came too slowly",
    );
    r.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    r
}

/// The answer to a message the policy answers itself: a JSON-RPC error, with status 400 (the
/// server cannot accept the input).
fn rpc_error(owed: &Owed) -> Response<Body> {
    let mut bytes = Vec::new();
    if owed.encode(&mut bytes).is_err() {
        return plain(StatusCode::BAD_REQUEST, "Bad Request");
    }
    let mut r = Response::new(Full::new(Bytes::from(bytes)).boxed());
    *r.status_mut() = StatusCode::BAD_REQUEST;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// The answer to a ping outside any session.
fn pong(id: &RequestId) -> Response<Body> {
    let answer = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {}});
    let mut r = Response::new(Full::new(Bytes::from(answer.to_string())).boxed());
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// No room for another session now: 503, and when to try again.
fn busy(wait: Duration) -> Response<Body> {
    let secs = wait.as_secs_f64().ceil() as u64;
    let mut r = plain(
        StatusCode::SERVICE_UNAVAILABLE,
        &format!(
            "Service Unavailable: this server holds as many sessions as it keeps (--max-sessions); try again in {secs} s, or end sessions you no longer use with DELETE"
        ),
    );
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
    r
}

pub(crate) fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(text.to_string())).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

fn status_only(status: StatusCode) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::new()).boxed());
    *r.status_mut() = status;
    r
}

/// The checks in front of the transport: a `Host` (named, when over TCP), the bearer token,
/// and that a request sent by a browser page comes from a loopback origin.
pub(crate) fn refuse<B>(
    req: &Request<B>,
    token: Option<&str>,
    tcp: bool,
) -> Option<Response<Body>> {
    match req.headers().get(header::HOST) {
        Some(h) if h.as_bytes().iter().all(u8::is_ascii_whitespace) => {
            return Some(plain(
                StatusCode::BAD_REQUEST,
                "Bad Request: the Host header is empty",
            ));
        }
        None if tcp => {
            return Some(plain(
                StatusCode::BAD_REQUEST,
                "Bad Request: a Host header is required",
            ));
        }
        _ => {}
    }
    if let Some(origin) = req.headers().get(header::ORIGIN) {
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
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if !given.is_some_and(|g| constant_time_eq(g.trim().as_bytes(), token.as_bytes())) {
            let mut r = plain(
                StatusCode::UNAUTHORIZED,
                "Unauthorized: this server needs its bearer token (clients of satori read it from SATORI_ENDPOINT_TOKEN)",
            );
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return Some(r);
        }
    }
    None
}

/// `http(s)://localhost|127.x.x.x|[::1][:port]`.
pub(crate) fn loopback_origin(origin: &str) -> bool {
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

/// Tells the sessions when an answer or a stream ends, however it ends: sent whole, or
/// dropped with its connection.
struct StreamGuard {
    sessions: Arc<Sessions>,
    session: SessionId,
    request: Option<RequestId>,
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.sessions.ended(&self.session, self.request.as_ref());
    }
}

/// A response body that holds its [`StreamGuard`] until hyper drops it.
struct Guarded {
    inner: Body,
    _guard: StreamGuard,
}

impl hyper::body::Body for Guarded {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn event_ids_after_the_last_one_seen() {
        for (last, next) in [
            ("0", Some("1")),
            ("41/3", Some("42/3")),
            ("7/x", None),
            ("", None),
            ("-1", None),
        ] {
            assert_eq!(next_event_id(last).as_deref(), next, "{last}");
        }
    }

    /// What the checks in front answer, by header: (headers, over TCP, status or None).
    #[test]
    fn the_checks_in_front() {
        #[track_caller]
        fn check(headers: &[(&str, &str)], tcp: bool, want: Option<u16>) {
            let mut req = Request::new(());
            for (k, v) in headers {
                req.headers_mut().append(
                    http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                    v.parse().unwrap(),
                );
            }
            let got = refuse(&req, Some("t0ken"), tcp).map(|r| r.status().as_u16());
            assert_eq!(got, want, "{headers:?} tcp={tcp}");
        }
        let auth = ("authorization", "Bearer t0ken");
        check(&[("host", "127.0.0.1:1"), auth], true, None);
        check(&[auth], false, None);
        check(&[auth], true, Some(400));
        check(&[("host", ""), auth], false, Some(400));
        check(&[("host", " "), auth], true, Some(400));
        check(&[("host", "localhost")], true, Some(401));
        check(
            &[("host", "localhost"), ("authorization", "Bearer nope")],
            true,
            Some(401),
        );
        check(
            &[
                ("host", "localhost"),
                ("origin", "http://evil.example"),
                auth,
            ],
            true,
            Some(403),
        );
    }
}
