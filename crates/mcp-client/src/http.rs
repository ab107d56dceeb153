//! One MCP exchange per command: the handshake of `init`, then single requests that reuse
//! a stored session, over Streamable HTTP on TCP or on a Unix socket (the proxy's, or any
//! server's that serves Streamable HTTP there), and the `DELETE` that ends a session for a
//! caller that is done with it.
//!
//! rmcp's `StreamableHttpClient` does the HTTP (headers, the session id, 401/403/404, JSON or
//! SSE answers); this module builds the JSON-RPC messages, picks the answer to its own
//! request out of an SSE stream (notifications may come first), answers the requests a
//! server sends back while it works (`ping`, and elicitation by the policy chosen at
//! `init`), gives up on a request after the command's timeout, and maps failures to
//! [`Error`]s a shell user can act on.
//!
//! Every request carries an id of its own, a string of 64 random bits: processes that share
//! one session file share the server's session, and a server keys its answer streams by
//! request id, so two commands sending the same id would receive each other's answers (or
//! none). Random ids need no coordination between processes, not even on different
//! machines; a counter in the session file would need a lock around every request. They
//! are strings because a JavaScript server reads a 64-bit number as a double and would echo
//! back a different one. An answer with any other id is not ours and is never reported.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
#[cfg(unix)]
use rmcp::transport::common::unix_socket::UnixSocketHttpClient;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::error::{Error, Result};
use crate::log::{self, Domain, Level};
use crate::random;

/// The protocol revision the client asks for.
pub const PROTOCOL_VERSION: &str = "2025-11-25";
/// Revisions the client speaks (with `initialize` and sessions).
pub const KNOWN_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];
/// The revision that dropped `initialize` and sessions: detected and reported.
pub const SESSIONLESS_VERSION: &str = "2026-07-28";

/// How many times one answer's event stream is resumed.
const MAX_RESUMES: usize = 5;

/// How long a request waits for its answer unless [`Conn::timeout`] says otherwise.
pub const DEFAULT_TIMEOUT_S: u64 = 60;

/// How long the `notifications/cancelled` of a timed-out request may take: the server that
/// did not answer may not take this one either, and the command is already failing.
const CANCEL_PATIENCE: Duration = Duration::from_secs(2);

/// The URI requests carry over a Unix socket (the proxy serves any path; `satori --socket`
/// and the SDKs' servers serve `/mcp`).
#[cfg(unix)]
const UNIX_URI: &str = "http://localhost/mcp";

/// How a one-shot command answers a server that asks its user for input (elicitation). It
/// is chosen at `init`, because the capability is declared in the handshake; a session
/// without one declares no elicitation, so a conforming server never asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Elicit {
    /// Accept with the defaults of the requested schema, or decline when a required field
    /// has none (no user is there to fill it in).
    AcceptDefaults,
    Decline,
    Cancel,
}

impl Elicit {
    pub fn parse(s: &str) -> Result<Elicit> {
        match s {
            "accept-defaults" => Ok(Elicit::AcceptDefaults),
            "decline" => Ok(Elicit::Decline),
            "cancel" => Ok(Elicit::Cancel),
            _ => Err(Error::Usage(format!(
                "unknown --elicit '{s}': use accept-defaults, decline or cancel"
            ))),
        }
    }

    /// The result of `elicitation/create` with `params`.
    pub fn answer(self, params: Option<&Value>) -> Value {
        let decline = json!({"action": "decline"});
        match self {
            Elicit::Decline => decline,
            Elicit::Cancel => json!({"action": "cancel"}),
            Elicit::AcceptDefaults => {
                let params = params.unwrap_or(&Value::Null);
                // A URL-mode request wants a person at a browser.
                if params.get("mode").and_then(Value::as_str) == Some("url") {
                    return decline;
                }
                let schema = &params["requestedSchema"];
                let mut content = Map::new();
                if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                    for (name, prop) in props {
                        if let Some(d) = prop.get("default") {
                            content.insert(name.clone(), d.clone());
                        }
                    }
                }
                let required = schema.get("required").and_then(Value::as_array);
                let missing = required
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .any(|r| !content.contains_key(r));
                if missing {
                    decline
                } else {
                    json!({"action": "accept", "content": content})
                }
            }
        }
    }
}

/// Whether a JSON-RPC error says the server does not know the session.
fn session_refused(id: Option<&Value>, code: i64, message: &str) -> bool {
    let m = message.to_lowercase();
    let transport_level = id.is_none_or(Value::is_null) || matches!(code, -32000 | -32001);
    let about_session = m.contains("session")
        && [
            "not found",
            "invalid",
            "no valid",
            "expired",
            "unknown",
            "missing",
            "terminated",
        ]
        .iter()
        .any(|w| m.contains(w));
    transport_level && about_session
}

/// Whether `answer` (a JSON-RPC response or error) answers request `id`. An error without
/// an id is about a request the server could not read: on this POST, ours.
fn answers(answer: &Value, id: &Value) -> bool {
    match answer.get("id") {
        None | Some(Value::Null) => answer.get("error").is_some(),
        Some(other) => other == id,
    }
}

/// Where a server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    Http(String),
    Unix(PathBuf),
}

impl Endpoint {
    /// `http://…`, `https://…` or `unix:///absolute/path.sock`.
    pub fn parse(s: &str) -> Result<Endpoint> {
        if s.starts_with("http://") || s.starts_with("https://") {
            return Ok(Endpoint::Http(s.to_owned()));
        }
        if let Some(path) = s.strip_prefix("unix://") {
            if !path.starts_with('/') {
                return Err(Error::Usage(format!(
                    "invalid endpoint '{s}': a unix:// endpoint needs an absolute path (unix:///path/to/server.sock)"
                )));
            }
            return Ok(Endpoint::Unix(PathBuf::from(path)));
        }
        let scheme = s.split_once("://").map_or("", |(p, _)| p);
        Err(Error::Usage(if scheme.is_empty() {
            format!(
                "invalid endpoint '{s}': expected http://, https:// or unix:///path (no scheme given)"
            )
        } else {
            format!(
                "invalid endpoint '{s}': unknown scheme '{scheme}://' (expected http://, https:// or unix://)"
            )
        }))
    }

    pub fn transport(&self) -> &'static str {
        match self {
            Endpoint::Http(_) => "http",
            Endpoint::Unix(_) => "unix",
        }
    }

    pub fn shown(&self) -> String {
        match self {
            Endpoint::Http(u) => u.clone(),
            Endpoint::Unix(p) => format!("unix://{}", p.display()),
        }
    }
}

/// Runs one body against whichever client `http` holds: the two share rmcp's client trait
/// but not an error type, so the body is written once and compiled twice.
macro_rules! on_client {
    ($http:expr, $c:ident => $body:expr) => {
        match $http {
            Http::Tcp($c) => $body,
            #[cfg(unix)]
            Http::Unix($c) => $body,
        }
    };
}

#[derive(Clone)]
enum Http {
    Tcp(reqwest::Client),
    #[cfg(unix)]
    Unix(UnixSocketHttpClient),
}

/// Who the client is, in `initialize`'s `clientInfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientInfo {
    pub name: String,
    pub version: String,
}

impl ClientInfo {
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> ClientInfo {
        ClientInfo {
            name: name.into(),
            version: version.into(),
        }
    }
}

impl Default for ClientInfo {
    /// This library, by its package name and version.
    fn default() -> ClientInfo {
        ClientInfo::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION"))
    }
}

/// A connection for one command.
pub struct Conn {
    http: Http,
    endpoint: Endpoint,
    uri: Arc<str>,
    token: Option<String>,
    session_id: Option<String>,
    protocol_version: Option<String>,
    elicit: Option<Elicit>,
    client: ClientInfo,
    /// How long each request waits for its answer; `None` waits as long as the server takes.
    timeout: Option<Duration>,
}

/// The answer to `initialize`.
#[derive(Debug)]
pub struct Handshake {
    pub result: Value,
    pub session_id: Option<String>,
}

impl Conn {
    /// A connection to `endpoint`. A `unix://` endpoint is refused where the platform has
    /// no Unix-domain sockets (see `proxy`).
    pub fn new(endpoint: &Endpoint, token: Option<String>) -> Result<Conn> {
        let (http, uri) = match endpoint {
            Endpoint::Http(u) => (Http::Tcp(tcp_client()), u.clone()),
            #[cfg(unix)]
            Endpoint::Unix(p) => (
                Http::Unix(UnixSocketHttpClient::new(&p.to_string_lossy(), UNIX_URI)),
                UNIX_URI.to_owned(),
            ),
            #[cfg(not(unix))]
            Endpoint::Unix(_) => return Err(Error::NoUnixSockets),
        };
        Ok(Conn {
            http,
            endpoint: endpoint.clone(),
            uri: uri.into(),
            token,
            session_id: None,
            protocol_version: None,
            elicit: None,
            client: ClientInfo::default(),
            timeout: Some(Duration::from_secs(DEFAULT_TIMEOUT_S)),
        })
    }

    /// Names the client in `initialize`.
    pub fn client_info(mut self, client: ClientInfo) -> Conn {
        self.client = client;
        self
    }

    /// Waits at most `timeout` for each answer (`None`: as long as the server takes).
    pub fn timeout(mut self, timeout: Option<Duration>) -> Conn {
        self.timeout = timeout;
        self
    }

    /// Declares elicitation at `initialize` and answers it by `policy`.
    pub fn elicit(mut self, policy: Option<Elicit>) -> Conn {
        self.elicit = policy;
        self
    }

    /// Reuses a session from a session file.
    pub fn resume(mut self, session_id: Option<String>, protocol_version: Option<String>) -> Conn {
        self.session_id = session_id;
        self.protocol_version = protocol_version.filter(|v| !v.is_empty());
        self
    }

    /// `initialize`, then `notifications/initialized` on the session it opened.
    pub async fn initialize(&mut self) -> Result<Handshake> {
        let capabilities = match self.elicit {
            Some(_) => json!({"elicitation": {"form": {}}}),
            None => json!({}),
        };
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": capabilities,
            "clientInfo": {"name": self.client.name, "version": self.client.version},
        });
        let (result, session_id) = self.exchange("initialize", Some(params)).await?;
        let version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if !KNOWN_VERSIONS.contains(&version.as_str()) {
            return Err(Error::Transport(format!(
                "{} answered initialize with protocol version '{version}', which mcat does not speak (it speaks {})",
                self.endpoint.shown(),
                KNOWN_VERSIONS.join(", ")
            )));
        }
        self.session_id = session_id.clone();
        self.protocol_version = Some(version);
        self.notify("notifications/initialized", None).await?;
        Ok(Handshake { result, session_id })
    }

    /// One request; its `result`, and the session id the answer carried (a server may
    /// rotate it).
    pub async fn request(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> Result<(Value, Option<String>)> {
        self.exchange(method, params).await
    }

    /// Ends the session this connection holds: an HTTP `DELETE` with its session id, so the
    /// server frees it now instead of when it idles out. A server that lets no client end a
    /// session answers 405, which is no failure. Gives up after `patience`: the caller is
    /// done with the server and must not wait on it. Without a session (a stateless server)
    /// there is nothing to end.
    pub async fn end_session(&self, patience: Duration) -> Result<()> {
        let Some(id) = self.session_id.as_deref() else {
            return Ok(());
        };
        let session: Arc<str> = id.into();
        let ended = async {
            on_client!(&self.http, c => c
                .delete_session(self.uri.clone(), session, self.token.clone(), self.headers())
                .await
                .map_err(|e| self.transport_error("DELETE", e)))
        };
        let outcome = match tokio::time::timeout(patience, ended).await {
            Ok(outcome) => outcome,
            Err(_) => Err(Error::Timeout(format!(
                "{} did not answer the DELETE of session {id} within {} ms",
                self.endpoint.shown(),
                patience.as_millis()
            ))),
        };
        log::log(Domain::Mcp, Level::Info, || match &outcome {
            Ok(()) => format!("ended session {id} at {}", self.endpoint.shown()),
            Err(e) => format!("could not end session {id}: {e}"),
        });
        outcome
    }

    /// One notification.
    pub async fn notify(&self, method: &str, params: Option<Value>) -> Result<()> {
        let mut msg = json!({"jsonrpc": "2.0", "method": method});
        if let Some(p) = params {
            msg["params"] = p;
        }
        // A server that answers a notification with a body is lenient, not wrong.
        let Some(limit) = self.timeout else {
            return self.post(msg).await.map(|_| ());
        };
        match tokio::time::timeout(limit, self.post(msg)).await {
            Ok(sent) => sent.map(|_| ()),
            Err(_) => Err(Error::Timeout(format!(
                "{} did not take the {method} notification within {} s (--timeout)",
                self.endpoint.shown(),
                limit.as_secs()
            ))),
        }
    }

    /// One request and its answer. In a session that answers elicitation, the server's own
    /// stream is open meanwhile: a server may ask there rather than on the answer's stream.
    async fn exchange(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> Result<(Value, Option<String>)> {
        let started = std::time::Instant::now();
        let id = Value::String(format!("mcat-{}", random::hex(8, "a request id")?));
        let work = async {
            if self.elicit.is_none() || self.session_id.is_none() {
                self.exchange_once(&id, method, params).await
            } else {
                // The stream is open before the request goes out: a server drops what it
                // sends while its client has no stream to receive it.
                let listening = self.listen().await;
                let work = Box::pin(self.exchange_once(&id, method, params));
                match futures::future::select(work, listening).await {
                    futures::future::Either::Left((answer, _)) => answer,
                    futures::future::Either::Right(((), work)) => work.await,
                }
            }
        };
        let answer = match self.timeout {
            None => work.await,
            Some(limit) => match tokio::time::timeout(limit, work).await {
                Ok(answer) => answer,
                Err(_) => Err(self.give_up(&id, method, limit).await),
            },
        };
        log::log(Domain::Mcp, Level::Info, || {
            format!(
                "{method} to {} (request {id}, session {}): {} in {} ms",
                self.endpoint.shown(),
                self.session_id.as_deref().unwrap_or("none"),
                match &answer {
                    Ok(_) => "answered".to_owned(),
                    Err(e) => format!("failed: {e}"),
                },
                started.elapsed().as_millis()
            )
        });
        answer
    }

    /// Tells the server that request `id` is abandoned (it may stop working on it), and
    /// says why the command fails. `initialize` is never cancelled, as the protocol asks.
    async fn give_up(&self, id: &Value, method: &str, limit: Duration) -> Error {
        let waited = limit.as_secs();
        let mut cancelled = false;
        if method != "initialize" {
            let notice = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {
                "requestId": id,
                "reason": format!("mcat waited {waited} s for the answer (--timeout)"),
            }});
            match tokio::time::timeout(CANCEL_PATIENCE, self.post(notice)).await {
                Ok(Ok(_)) => cancelled = true,
                Ok(Err(e)) => log::log(Domain::Mcp, Level::Warn, || {
                    format!("could not cancel {method} {id}: {e}")
                }),
                Err(_) => log::log(Domain::Mcp, Level::Warn, || {
                    format!("could not cancel {method} {id}: no answer")
                }),
            }
        }
        Error::Timeout(format!(
            "{} did not answer {method} within {waited} s{}: wait longer with --timeout SECONDS (0 waits as long as it takes)",
            self.endpoint.shown(),
            if cancelled {
                " (the request was cancelled)"
            } else {
                ""
            }
        ))
    }

    /// Opens the server's standalone stream (a GET); the future it returns answers the
    /// requests on it until the stream ends. A server need not offer one: then it is done at
    /// once.
    async fn listen(&self) -> futures::future::BoxFuture<'_, ()> {
        let session: Option<Arc<str>> = self.session_id.as_deref().map(Into::into);
        let opened = on_client!(&self.http, c => c
            .get_stream(self.uri.clone(), session, None, self.token.clone(), self.headers())
            .await
            .map(|s| s.map(|r| r.map_err(|e| e.to_string())).boxed())
            .map_err(|e| e.to_string()));
        let mut stream = match opened {
            Ok(s) => s,
            Err(e) => {
                log::log(Domain::Mcp, Level::Debug, || {
                    format!("no stream from the server for its requests: {e}")
                });
                return Box::pin(async {});
            }
        };
        Box::pin(async move {
            while let Some(Ok(event)) = stream.next().await {
                let Some(raw) = event
                    .data
                    .and_then(|d| serde_json::from_str::<Value>(&d).ok())
                else {
                    continue;
                };
                if self.answer_if_request(&raw).await.is_err() {
                    return;
                }
            }
        })
    }

    /// Answers `raw` when it is a request from the server (which waits for the answer before
    /// it can finish ours); says whether it was one.
    async fn answer_if_request(&self, raw: &Value) -> Result<bool> {
        let (Some(method), Some(id)) = (raw.get("method").and_then(Value::as_str), raw.get("id"))
        else {
            return Ok(false);
        };
        self.post(self.answer(method, id, raw.get("params")))
            .await?;
        Ok(true)
    }

    async fn exchange_once(
        &self,
        id: &Value,
        method: &str,
        params: Option<Value>,
    ) -> Result<(Value, Option<String>)> {
        let mut msg = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if let Some(p) = params {
            msg["params"] = p;
        }
        let (answer, session) = match self.post(msg).await? {
            StreamableHttpPostResponse::Json(m, session) => {
                let value = serde_json::to_value(&m).unwrap_or(Value::Null);
                // The one answer of this POST, but to another request: never ours to report.
                if !answers(&value, id) {
                    return Err(Error::Transport(format!(
                        "{} answered {method} with the answer to another request (id {}, ours is {id})",
                        self.endpoint.shown(),
                        value["id"]
                    )));
                }
                (Some(value), session)
            }
            StreamableHttpPostResponse::Sse(stream, session) => {
                let found = self.read_stream(stream, id, session.as_deref()).await?;
                (found, session)
            }
            _ => (None, None),
        };
        let Some(value) = answer else {
            return Err(Error::Transport(format!(
                "{} sent no answer to {method}",
                self.endpoint.shown()
            )));
        };
        if let Some(err) = value.get("error") {
            let code = err.get("code").and_then(Value::as_i64).unwrap_or(0);
            let message = err
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("(no message)")
                .to_owned();
            // Some servers answer a session they no longer know with 400 and a JSON-RPC
            // error instead of the 404 the transport specifies. Such an error is about the
            // transport, not our request: it has no id, or a server-error code. A request's
            // own error that merely mentions a session (a prompt named `my-session`) is not it.
            if self.session_id.is_some() && session_refused(value.get("id"), code, &message) {
                return Err(Error::SessionExpired(format!(
                    "session expired: {} does not accept the session of this session file ({message}); run mcat init again, or pass --reinit",
                    self.endpoint.shown()
                )));
            }
            return Err(Error::Server {
                code,
                message,
                data: err.get("data").cloned(),
            });
        }
        let result = value.get("result").cloned().unwrap_or(Value::Null);
        Ok((result, session))
    }

    /// Reads an SSE answer until the response to our request `id`; answers to other
    /// requests are logged and skipped. A stream the server closes before it (SEP-1699) is
    /// resumed with a GET carrying `Last-Event-ID`, after the `retry` the server asked for.
    async fn read_stream<E: std::fmt::Display>(
        &self,
        stream: futures::stream::BoxStream<'static, std::result::Result<sse_stream::Sse, E>>,
        id: &Value,
        new_session: Option<&str>,
    ) -> Result<Option<Value>> {
        let mut stream = stream.map(|r| r.map_err(|e| e.to_string())).boxed();
        let mut last_id: Option<String> = None;
        let mut retry = Duration::from_secs(1);
        for _ in 0..MAX_RESUMES {
            while let Some(event) = stream.next().await {
                let event = event.map_err(|e| {
                    Error::Transport(format!(
                        "the event stream from {} broke: {e}",
                        self.endpoint.shown()
                    ))
                })?;
                if let Some(id) = &event.id {
                    last_id = Some(id.clone());
                }
                if let Some(ms) = event.retry {
                    retry = Duration::from_millis(ms);
                }
                let Some(data) = event.data.filter(|d| !d.trim().is_empty()) else {
                    continue;
                };
                let Ok(raw) = serde_json::from_str::<Value>(&data) else {
                    continue;
                };
                if self.answer_if_request(&raw).await? {
                    continue;
                }
                let Ok(m) = serde_json::from_value::<ServerJsonRpcMessage>(raw.clone()) else {
                    continue;
                };
                if !matches!(
                    m,
                    ServerJsonRpcMessage::Response(_) | ServerJsonRpcMessage::Error(_)
                ) {
                    continue;
                }
                if answers(&raw, id) {
                    return Ok(Some(raw));
                }
                log::log(Domain::Mcp, Level::Warn, || {
                    format!(
                        "skipped an answer to request {} on the stream of request {id}",
                        raw["id"]
                    )
                });
            }
            // The stream ended without our answer: resume it when the server made that
            // possible (an event id to resume after).
            let Some(id) = last_id.clone() else {
                return Ok(None);
            };
            tokio::time::sleep(retry).await;
            let session: Option<Arc<str>> =
                new_session.or(self.session_id.as_deref()).map(Into::into);
            let headers = self.headers();
            let resumed = on_client!(&self.http, c => c
                .get_stream(self.uri.clone(), session, Some(id), self.token.clone(), headers)
                .await
                .map_err(|e| self.transport_error("resuming the event stream", e)));
            stream = resumed?.map(|r| r.map_err(|e| e.to_string())).boxed();
        }
        Ok(None)
    }

    fn headers(&self) -> HashMap<http::HeaderName, http::HeaderValue> {
        let mut headers = HashMap::new();
        if let Some(v) = &self.protocol_version
            && let Ok(value) = v.parse()
        {
            headers.insert(http::HeaderName::from_static("mcp-protocol-version"), value);
        }
        headers
    }

    /// The answer to a request the server sent while it works on ours.
    fn answer(&self, method: &str, id: &Value, params: Option<&Value>) -> Value {
        let result = match (method, self.elicit) {
            ("ping", _) => Some(json!({})),
            ("elicitation/create", Some(policy)) => Some(policy.answer(params)),
            _ => None,
        };
        log::log(Domain::Mcp, Level::Info, || match &result {
            Some(r) => format!("answered the server's {method} with {r}"),
            None => format!("refused the server's {method}"),
        });
        match result {
            Some(r) => json!({"jsonrpc": "2.0", "id": id, "result": r}),
            None => json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": -32601,
                "message": format!("mcat does not answer {method} in this session"),
            }}),
        }
    }

    async fn post(&self, msg: Value) -> Result<StreamableHttpPostResponse> {
        let method = msg
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("message")
            .to_owned();
        let message: ClientJsonRpcMessage = serde_json::from_value(msg)
            .map_err(|e| Error::Usage(format!("cannot build the {method} request: {e}")))?;
        let headers = self.headers();
        let session: Option<Arc<str>> = self.session_id.as_deref().map(Into::into);
        let token = self.token.clone();
        let uri = self.uri.clone();
        on_client!(&self.http, c => c
            .post_message(uri, message, session, token, headers)
            .await
            .map_err(|e| self.transport_error(&method, e)))
    }

    fn transport_error<E: std::error::Error + Send + Sync + 'static>(
        &self,
        method: &str,
        e: StreamableHttpError<E>,
    ) -> Error {
        let at = self.endpoint.shown();
        match e {
            StreamableHttpError::SessionExpired => Error::SessionExpired(format!(
                "session expired: {at} no longer knows the session of this session file; run mcat init again, or pass --reinit"
            )),
            StreamableHttpError::AuthRequired(_) => Error::Unauthorized(format!(
                "{at} requires authorization: run mcat auth start {at} -k KEY_REF --state FILE, then init with -k KEY_REF"
            )),
            StreamableHttpError::InsufficientScope(s) => Error::Forbidden(format!(
                "{at} refused {method} for insufficient scope{}: authorize again with the larger scope (mcat auth start)",
                s.required_scope
                    .map(|s| format!(" (needs '{s}')"))
                    .unwrap_or_default()
            )),
            // A 401 or 403 without a `WWW-Authenticate` challenge reaches us only as text
            // (rmcp keeps the status in it, `HTTP 401 Unauthorized: <body>`); it is still a
            // refusal, not a broken transport.
            StreamableHttpError::UnexpectedServerResponse(text) if text.starts_with("HTTP 401") => {
                Error::Unauthorized(format!(
                    "{at} refused {method} ({text}): it wants another token; run mcat auth start {at} -k KEY_REF --state FILE, then init with -k KEY_REF"
                ))
            }
            StreamableHttpError::UnexpectedServerResponse(text) if text.starts_with("HTTP 403") => {
                Error::Forbidden(format!("{at} refused {method} ({text})"))
            }
            other => {
                let text = other.to_string();
                if let Endpoint::Unix(p) = &self.endpoint
                    && (text.contains("No such file") || text.contains("onnection refused"))
                {
                    return Error::Proxy(format!(
                        "nothing listens on {at}: start a stdio server behind it with mcat proxy up unix://{} -- CMD [ARG...], or start the Streamable HTTP server that serves that socket",
                        p.display()
                    ));
                }
                Error::Transport(format!("{method} to {at} failed: {text}"))
            }
        }
    }
}

/// The HTTP client of one command. Connections are not kept for reuse: a command makes one
/// or two requests, and some servers tie per-request state to the connection's lifetime.
fn tcp_client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_transport_errors_about_the_session_expire_it() {
        let check = |id: Value, code: i64, message: &str, want: bool| {
            assert_eq!(
                session_refused(Some(&id), code, message),
                want,
                "{id} {code} {message}"
            );
        };
        check(
            Value::Null,
            -32000,
            "Bad Request: No valid session ID provided",
            true,
        );
        check(json!(1), -32001, "Session not found", true);
        check(Value::Null, -32600, "Invalid session", true);
        check(json!(1), -32602, "Prompt my-session not found", false);
        check(
            json!(1),
            -32002,
            "Resource demo://session/x not found",
            false,
        );
        check(Value::Null, -32000, "Session store is warming up", false);
    }

    #[test]
    fn elicitation_policies() {
        let schema = |required: Value| {
            json!({"message": "m", "requestedSchema": {"type": "object", "properties": {
                "name": {"type": "string", "default": "Ada"},
                "age": {"type": "integer", "default": 36},
                "note": {"type": "string"},
            }, "required": required}})
        };
        let check = |policy: Elicit, params: Value, want: Value| {
            assert_eq!(policy.answer(Some(&params)), want, "{policy:?} {params}");
        };
        let accepted = json!({"action": "accept", "content": {"name": "Ada", "age": 36}});
        check(Elicit::AcceptDefaults, schema(json!([])), accepted.clone());
        check(Elicit::AcceptDefaults, schema(json!(["name"])), accepted);
        // A required field without a default has nobody to fill it in.
        check(
            Elicit::AcceptDefaults,
            schema(json!(["note"])),
            json!({"action": "decline"}),
        );
        check(
            Elicit::AcceptDefaults,
            json!({"mode": "url", "url": "https://x", "message": "m"}),
            json!({"action": "decline"}),
        );
        check(
            Elicit::Decline,
            schema(json!([])),
            json!({"action": "decline"}),
        );
        check(
            Elicit::Cancel,
            schema(json!([])),
            json!({"action": "cancel"}),
        );
        assert!(Elicit::parse("yes").is_err());
        assert_eq!(
            Elicit::parse("accept-defaults").unwrap(),
            Elicit::AcceptDefaults
        );
    }
}
