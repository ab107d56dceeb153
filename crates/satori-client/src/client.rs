//! A connection to one `satori` server child process, or a session on a shared server.
//!
//! The process and the MCP session over its pipes are `mcp-client`'s
//! [`StdioClient`] (it owns the child, kills and reaps it on every failure
//! path, and names what broke the stream). This module adds Satori's part:
//! how the server is started (`SATORI_RUN_MODE=cli`, the stdout guard's mode),
//! the tools list kept for the client's life, and guard recovery (see
//! `recovery`), which replaces the connection with one started in a different
//! environment while the caller keeps the same [`Client`]. A shared server
//! (`SATORI_ENDPOINT`) is reached through `mcp-client`'s [`Conn`]: its refusal of
//! our token is reported as such, it is never retried with the guard off (its
//! guard is not ours), and the session is ended with a `DELETE` at shutdown.

use std::ops::Deref;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use mcp_client::{ClientInfo, Conn, Endpoint, Spawn, StdioClient};
use serde_json::{Map, Value};

use crate::ClientError;
use crate::daemon::{Attach, Daemon, Pending};
use crate::endpoint_env::{ENDPOINT_ENV, ENDPOINT_TOKEN_ENV};
use crate::guard_mode::{DEFAULT_GUARD_MODE, RECOVERY_GUARD_MODE, STDOUT_GUARD_ENV};
use crate::recovery::{Attempts, GuardRecovery, Stage, should_retry};

/// Whether forwarded server output left our stderr in the middle of a line
/// (see `mcp_client::stdio::take_stderr_mid_line`).
pub use mcp_client::stdio::take_stderr_mid_line;

/// The MCP revision we speak (from the contract). rmcp defaults to a newer, handshake-less one.
pub use satori_protocol::PROTOCOL_VERSION;

/// Environment variable that tells the server it runs as a one-shot CLI child.
pub const RUN_MODE_ENV: &str = satori_protocol::env::RUN_MODE;

/// Whether a shared server that failed the handshake was there at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    Unreachable,
    Answered,
}

/// How to start the server.
#[derive(Debug, Clone)]
pub struct SpawnOptions {
    /// Path of the `satori` executable (see [`crate::resolve_server_bin`]).
    pub server_bin: PathBuf,
    /// Extra environment for the child, applied after `SATORI_RUN_MODE=cli`
    /// (so a caller can override it).
    pub env: Vec<(String, String)>,
    /// Budget for spawning plus the `initialize` handshake.
    pub startup_timeout: Duration,
    /// `clientInfo` sent in `initialize`.
    pub client_name: String,
    pub client_version: String,
    /// Whether a failed attempt may be retried once with the stdout guard off.
    pub guard_recovery: GuardRecovery,
    /// A running shared server (`satori --http` / `--socket`) to talk to instead of
    /// starting one; its bearer token, when it asks for one, is read from
    /// [`ENDPOINT_TOKEN_ENV`] when connecting.
    pub endpoint: Option<Endpoint>,
    /// When nothing answers at `endpoint` (refused, no socket), start a server child as if
    /// no endpoint had been given, instead of failing. A server that answers and refuses
    /// (a wrong token, an error) is never bypassed.
    pub endpoint_fallback: bool,
    /// With no `endpoint`: the per-user server to attach to (started when none runs), see
    /// [`crate::daemon`]. When it cannot be reached, or fails a request without answering,
    /// the call goes on in a server child of its own (`Attempts::daemon_recovery` says why).
    pub daemon: Option<Daemon>,
}

impl SpawnOptions {
    /// Options with the defaults used by the shell client.
    pub fn new(server_bin: PathBuf) -> Self {
        SpawnOptions {
            server_bin,
            env: Vec::new(),
            startup_timeout: Duration::from_secs(180),
            client_name: "satori-client".to_owned(),
            client_version: env!("CARGO_PKG_VERSION").to_owned(),
            guard_recovery: GuardRecovery::Never,
            endpoint: None,
            endpoint_fallback: false,
            daemon: None,
        }
    }

    /// The guard mode the first server process gets: from `env`, else
    /// inherited from our environment, else the server's cli-mode default.
    pub fn initial_guard_mode(&self) -> String {
        self.env
            .iter()
            .rev()
            .find(|(k, _)| k == STDOUT_GUARD_ENV)
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var(STDOUT_GUARD_ENV).ok())
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| DEFAULT_GUARD_MODE.to_owned())
    }
}

/// A server connection: the child this client started, or a shared server's session.
enum Connection {
    Stdio(Box<StdioClient>),
    Http(Box<Shared>),
}

/// A session on a shared server.
struct Shared {
    conn: Conn,
    server_info: Value,
    /// False once a request failed for a reason other than a JSON-RPC error.
    open: bool,
    /// The endpoint as the user wrote it, and whether a token went with each request: what a
    /// refusal says.
    endpoint: String,
    token_sent: bool,
}

impl Shared {
    /// One request on the shared server, made by `request` within `timeout` (see [`within`]);
    /// a refused token becomes the error that names `SATORI_ENDPOINT_TOKEN`.
    async fn exchange(
        &mut self,
        what: String,
        timeout: Duration,
        request: impl AsyncFnOnce(&Conn) -> mcp_client::Result<Value>,
    ) -> Result<Value, ClientError> {
        let Shared {
            conn,
            open,
            endpoint,
            token_sent,
            ..
        } = self;
        within(open, what, timeout, request(conn))
            .await
            .map_err(|e| shared_error(e, endpoint, *token_sent))
    }
}

/// How long ending a shared server's session may take. The call's answer is already in
/// hand; a server that is slow to forget the session ends it itself when it idles out.
const END_SESSION_PATIENCE: Duration = Duration::from_secs(1);

/// A shared server's refusal of our token (HTTP 401, or 403), in Satori's words, naming
/// `SATORI_ENDPOINT_TOKEN`; any other failure as the transport reported it.
fn shared_error(error: mcp_client::Error, endpoint: &str, token_sent: bool) -> ClientError {
    let status = match error {
        mcp_client::Error::Unauthorized(_) => 401,
        mcp_client::Error::Forbidden(_) => 403,
        other => return ClientError::from(other),
    };
    ClientError::EndpointAuth {
        endpoint: endpoint.to_owned(),
        status,
        token_sent,
    }
}

/// A client of one `satori` server child (two, after a guard recovery), or of a shared
/// server. Dropping it kills the child.
pub struct Client {
    options: SpawnOptions,
    connection: Option<Connection>,
    tools: Option<Value>,
    attempts: Attempts,
    /// Set once the shared server could not be reached and a child was started instead.
    fell_back: bool,
    /// Whether this client is attached to the per-user server.
    attached: bool,
    /// The per-user server this client is to start (none answered): its calls run in a
    /// server child of their own, and the server is started when this client shuts down or
    /// after [`DAEMON_START_DELAY`], whichever comes first.
    daemon_start: Arc<Mutex<DaemonStart>>,
    daemon_timer: Option<tokio::task::JoinHandle<()>>,
}

/// The per-user server a client starts: to start, started (its pid), or failed to start.
#[derive(Debug, Default)]
enum DaemonStart {
    #[default]
    None,
    Pending(Pending),
    Started(u32),
    Failed(String),
}

impl DaemonStart {
    /// Starts the pending server, if any.
    fn spawn(&mut self) {
        if let DaemonStart::Pending(p) = std::mem::take(self) {
            *self = match p.spawn() {
                Ok(pid) => DaemonStart::Started(pid),
                Err(e) => DaemonStart::Failed(e.to_string()),
            };
        }
    }
}

/// How long a call that found no per-user server runs alone before the server it is to start
/// is started anyway: long enough for a search or a listing to finish first (the two would
/// compete for the machine while the caller waits), short enough that the calls queued
/// behind the start lock do not wait long on a build.
pub const DAEMON_START_DELAY: Duration = Duration::from_millis(300);

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("server_bin", &self.options.server_bin)
            .field("pid", &self.pid())
            .field("attempts", &self.attempts)
            .finish()
    }
}

impl Client {
    /// A client that has not started the server yet; see [`Client::connect`].
    pub fn new(options: SpawnOptions) -> Client {
        let initial_mode = options.initial_guard_mode();
        Client {
            options,
            connection: None,
            tools: None,
            attempts: Attempts::new(initial_mode),
            fell_back: false,
            attached: false,
            daemon_start: Arc::default(),
            daemon_timer: None,
        }
    }

    /// Whether this client started a server child because nothing answered at the endpoint
    /// (see [`SpawnOptions::endpoint_fallback`]).
    pub fn fell_back_to_child(&self) -> bool {
        self.fell_back
    }

    /// Whether this client is attached to the per-user server.
    pub fn attached(&self) -> bool {
        self.attached
    }

    /// Whether this client starts the per-user server for the calls that follow (none
    /// answered; this client's own calls run in a server child).
    pub fn starts_daemon(&self) -> bool {
        !matches!(lock(&self.daemon_start).deref(), DaemonStart::None)
    }

    /// The pid of the per-user server this client started, once it did; why it could not,
    /// when it failed.
    pub fn started_daemon(&self) -> Option<Result<u32, String>> {
        match lock(&self.daemon_start).deref() {
            DaemonStart::Started(pid) => Some(Ok(*pid)),
            DaemonStart::Failed(why) => Some(Err(why.clone())),
            DaemonStart::None | DaemonStart::Pending(_) => None,
        }
    }

    /// Start the server and complete the MCP handshake within
    /// `options.startup_timeout`. On failure the child is already gone.
    pub async fn spawn(options: SpawnOptions) -> Result<Client, ClientError> {
        let mut client = Client::new(options);
        client.connect().await?;
        Ok(client)
    }

    /// Start the server (again, after a failure) and complete the handshake.
    /// Under [`GuardRecovery::Auto`] a failed start is retried once with the
    /// stdout guard off; nothing was sent yet, so this is safe for any tool.
    pub async fn connect(&mut self) -> Result<(), ClientError> {
        if self.connection.is_some() {
            return Ok(());
        }
        match self.open().await {
            Ok(()) => Ok(()),
            Err(first) => {
                let first = self.begin_recovery(Stage::Connect, first)?;
                let outcome = self.open().await;
                self.end_recovery(first, outcome)
            }
        }
    }

    /// The options this client was started with.
    pub fn options(&self) -> &SpawnOptions {
        &self.options
    }

    /// Process id of the server child while it is connected (none for a shared server).
    pub fn pid(&self) -> Option<u32> {
        match self.connection.as_ref()? {
            Connection::Stdio(c) => c.pid(),
            Connection::Http(_) => None,
        }
    }

    /// The server's `initialize` result (protocol version, capabilities, info).
    pub fn server_info(&self) -> Option<&Value> {
        match self.connection.as_ref()? {
            Connection::Stdio(c) => Some(c.server_info()),
            Connection::Http(h) => Some(&h.server_info),
        }
    }

    /// What happened to the stdout guard so far (see [`crate::recovery`]).
    pub fn attempts(&self) -> &Attempts {
        &self.attempts
    }

    /// The `tools/list` result as JSON (`{"tools":[...]}`, all pages), fetched
    /// once per client and then served from memory.
    pub async fn list_tools(&mut self, timeout: Duration) -> Result<Value, ClientError> {
        if let Some(tools) = &self.tools {
            return Ok(tools.clone());
        }
        let result = match self.list_tools_once(timeout).await {
            Ok(result) => result,
            Err(first) => {
                let first = self.begin_recovery(Stage::ListTools, first)?;
                let outcome = match self.open().await {
                    Ok(()) => self.list_tools_once(timeout).await,
                    Err(e) => Err(e),
                };
                self.end_recovery(first, outcome)?
            }
        };
        self.tools = Some(result.clone());
        Ok(result)
    }

    /// Call a tool; returns the `CallToolResult` as JSON. A tool-level error
    /// (`isError`, non-ok envelope) is a successful return: see [`crate::classify`].
    pub async fn call_tool(
        &mut self,
        name: &str,
        args: Map<String, Value>,
        timeout: Duration,
    ) -> Result<Value, ClientError> {
        match self.call_tool_once(name, args.clone(), timeout).await {
            Ok(result) => Ok(result),
            Err(first) => {
                let first = self.begin_recovery(Stage::Call(name), first)?;
                let outcome = match self.open().await {
                    Ok(()) => self.call_tool_once(name, args, timeout).await,
                    Err(e) => Err(e),
                };
                self.end_recovery(first, outcome)
            }
        }
    }

    /// Close the connection politely: close the server's stdin, give it
    /// a moment to exit, then kill it. Then start the per-user server this client was to
    /// start, if any; its pid, or why it could not be started, is returned. Always reaps the child. On a shared server, end the
    /// session this client opened (an HTTP `DELETE`), so that it does not hold the
    /// server's memory until it idles out; at most `END_SESSION_PATIENCE`, and whatever
    /// the server answers (a 404 for a session it already dropped, a 405 from a server that
    /// lets no client end one) changes nothing for the caller.
    pub async fn shutdown(mut self) -> Option<Result<u32, String>> {
        if let Some(timer) = self.daemon_timer.take() {
            timer.abort();
        }
        match self.connection.take() {
            Some(Connection::Stdio(c)) => (*c).shutdown().await,
            Some(Connection::Http(h)) => {
                let _ = h.conn.end_session(END_SESSION_PATIENCE).await;
            }
            None => {}
        }
        // The call is answered: the server it was to start starts now.
        let start = Arc::clone(&self.daemon_start);
        let _ = tokio::task::spawn_blocking(move || lock(&start).spawn()).await;
        self.started_daemon()
    }

    /// Start one server process with the current guard mode, or open a session on the
    /// shared server.
    async fn open(&mut self) -> Result<(), ClientError> {
        self.attempts.attempt_count += 1;
        self.attached = false;
        if self.options.endpoint.is_none()
            && !self.fell_back
            && let Some(daemon) = self.options.daemon.clone()
        {
            match self.open_daemon(&daemon).await {
                Ok(Some(shared)) => {
                    self.connection = Some(Connection::Http(Box::new(shared)));
                    self.attached = true;
                    return Ok(());
                }
                // Started for the calls that follow: this one goes on in a server child,
                // as fast as without the per-user server, while that one starts.
                Ok(None) => self.fell_back = true,
                Err(e) => {
                    self.fell_back = true;
                    self.attempts.daemon_recovery = Some(format!(
                        "could not attach to the per-user server at {}: {e}",
                        daemon.socket().display()
                    ));
                }
            }
        }
        if let Some(endpoint) = self.options.endpoint.clone()
            && !self.fell_back
        {
            match self.open_shared(&endpoint).await {
                Ok(shared) => {
                    self.connection = Some(Connection::Http(Box::new(shared)));
                    return Ok(());
                }
                Err((_, Reach::Unreachable)) if self.options.endpoint_fallback => {
                    self.fell_back = true;
                }
                Err((e, _)) => return Err(e),
            }
        }
        let mut env = Vec::new();
        if self.attempts.guard_recovery_attempted {
            env.push((STDOUT_GUARD_ENV.to_owned(), RECOVERY_GUARD_MODE.to_owned()));
        }
        let mut spawn_env = vec![(RUN_MODE_ENV.to_owned(), "cli".to_owned())];
        spawn_env.extend(self.options.env.iter().cloned());
        spawn_env.extend(env);
        let spawn = Spawn {
            program: self.options.server_bin.clone(),
            args: Vec::new(),
            env: spawn_env,
            startup_timeout: self.options.startup_timeout,
            client: ClientInfo::new(&self.options.client_name, &self.options.client_version),
        };
        self.connection = Some(Connection::Stdio(Box::new(
            StdioClient::spawn(&spawn).await?,
        )));
        Ok(())
    }

    /// The per-user server, started when none runs, and a session on it: only a server of
    /// this client's version is used (one at our socket that is not is left as it is).
    async fn open_daemon(&mut self, daemon: &Daemon) -> Result<Option<Shared>, ClientError> {
        let timeout = self.options.startup_timeout;
        let starting = daemon.clone();
        let preopen = self
            .options
            .env
            .iter()
            .rev()
            .find(|(k, _)| k == satori_protocol::env::PREOPEN)
            .map(|(_, v)| v.clone());
        let found = tokio::task::spawn_blocking(move || {
            starting.attach_or_start(timeout, preopen.as_deref())
        })
        .await
        .map_err(|e| ClientError::Protocol(format!("starting the per-user server: {e}")))??;
        if let Attach::Start(pending) = found {
            *lock(&self.daemon_start) = DaemonStart::Pending(pending);
            let start = Arc::clone(&self.daemon_start);
            self.daemon_timer = Some(tokio::spawn(async move {
                tokio::time::sleep(DAEMON_START_DELAY).await;
                let _ = tokio::task::spawn_blocking(move || lock(&start).spawn()).await;
            }));
            return Ok(None);
        }
        let shared = self
            .open_shared(&daemon.endpoint())
            .await
            .map_err(|(e, _)| e)?;
        let version = shared.server_info["serverInfo"]["version"].as_str();
        if version != Some(env!("CARGO_PKG_VERSION")) {
            let _ = shared.conn.end_session(END_SESSION_PATIENCE).await;
            return Err(ClientError::Protocol(format!(
                "the server there is version {}, not {}; it was left as it is",
                version.unwrap_or("unknown"),
                env!("CARGO_PKG_VERSION")
            )));
        }
        Ok(Some(shared))
    }

    /// The handshake with the shared server at `endpoint`, within the startup budget.
    /// On failure, also whether the server could not be reached at all (what
    /// [`SpawnOptions::endpoint_fallback`] falls back on) or answered and refused.
    async fn open_shared(&self, endpoint: &Endpoint) -> Result<Shared, (ClientError, Reach)> {
        let token = std::env::var(ENDPOINT_TOKEN_ENV)
            .ok()
            .filter(|t| !t.trim().is_empty());
        let token_sent = token.is_some();
        let mut conn = Conn::new(endpoint, token)
            .map_err(|e| (ClientError::from(e), Reach::Answered))?
            .client_info(ClientInfo::new(
                &self.options.client_name,
                &self.options.client_version,
            ))
            .timeout(None);
        let budget = self.options.startup_timeout;
        let handshake = match tokio::time::timeout(budget, conn.initialize()).await {
            Err(_) => return Err((ClientError::StartupTimeout(budget), Reach::Answered)),
            Ok(Err(e @ (mcp_client::Error::Unauthorized(_) | mcp_client::Error::Forbidden(_)))) => {
                return Err((
                    shared_error(e, &endpoint.shown(), token_sent),
                    Reach::Answered,
                ));
            }
            Ok(Err(e)) => {
                // Refused connections and missing sockets are "nobody there"; a server that
                // answered with a status or an error is not.
                let reach = match e {
                    mcp_client::Error::Transport(_) | mcp_client::Error::Proxy(_) => {
                        Reach::Unreachable
                    }
                    _ => Reach::Answered,
                };
                return Err((
                    ClientError::Protocol(format!(
                        "no satori server answers at {} ({e}); start one with `satori --http 127.0.0.1:7700` (or `satori --socket PATH`), leave out --endpoint and {ENDPOINT_ENV} to start a server for each call, or add --endpoint-fallback to start one for a call when none answers",
                        endpoint.shown()
                    )),
                    reach,
                ));
            }
            Ok(Ok(h)) => h,
        };
        Ok(Shared {
            conn,
            server_info: handshake.result,
            open: true,
            endpoint: endpoint.shown(),
            token_sent,
        })
    }

    /// Decide on a retry after `first`: `Err(first)` when there is none,
    /// otherwise switch to the recovery guard mode (for good: it is sticky)
    /// and hand `first` back for the combined error. A shared server is never retried: its
    /// stdout guard is not ours to turn off (it serves HTTP, not our pipes), so a second
    /// attempt would only repeat the first; a server child started by the fallback is ours.
    fn begin_recovery(
        &mut self,
        stage: Stage<'_>,
        first: ClientError,
    ) -> Result<ClientError, ClientError> {
        if self.attached {
            // Attached to the per-user server: a request it failed without answering goes
            // once to a server child of this call's own, unless it may have changed
            // something already (a build asked for and then the connection lost).
            if !daemon_retry(stage, &first) {
                return Err(first);
            }
            self.fell_back = true;
            self.attached = false;
            self.connection = None;
            self.attempts.daemon_recovery = Some(format!(
                "the per-user server failed {}: {first}",
                match stage {
                    Stage::Connect => "the handshake".to_owned(),
                    Stage::ListTools => "tools/list".to_owned(),
                    Stage::Call(tool) => format!("tools/call {tool}"),
                }
            ));
            return Ok(first);
        }
        if self.options.endpoint.is_some() && !self.fell_back {
            return Err(first);
        }
        if !should_retry(
            self.options.guard_recovery,
            &self.attempts.effective_guard_mode,
            stage,
            &first,
        ) {
            return Err(first);
        }
        self.attempts.guard_recovery_attempted = true;
        Ok(first)
    }

    /// Record how the retry went; `first_mode` is what the first attempt used.
    fn end_recovery<T>(
        &mut self,
        first: ClientError,
        outcome: Result<T, ClientError>,
    ) -> Result<T, ClientError> {
        if !self.attempts.guard_recovery_attempted {
            // A retry after the per-user server failed: the guard was not the cause and the
            // child ran with the same mode.
            return outcome;
        }
        let first_mode = std::mem::replace(
            &mut self.attempts.effective_guard_mode,
            RECOVERY_GUARD_MODE.to_owned(),
        );
        match outcome {
            Ok(value) => {
                self.attempts.guard_recovery_succeeded = true;
                Ok(value)
            }
            Err(second) => Err(ClientError::RecoveryFailed {
                first_mode,
                first: Box::new(first),
                second: Box::new(second),
            }),
        }
    }

    async fn list_tools_once(&mut self, timeout: Duration) -> Result<Value, ClientError> {
        let outcome = match self.connection.as_mut().ok_or(ClientError::Closed)? {
            Connection::Stdio(c) => c.list_tools(timeout).await.map_err(ClientError::from),
            Connection::Http(h) => {
                let pages = async |conn: &Conn| {
                    let mut tools = Vec::new();
                    let mut cursor = None;
                    loop {
                        let (page, _) = conn
                            .request("tools/list", mcp_client::client::cursor_params(cursor))
                            .await?;
                        tools.extend(page["tools"].as_array().cloned().unwrap_or_default());
                        cursor = page["nextCursor"].as_str().map(str::to_owned);
                        if cursor.is_none() {
                            return Ok(serde_json::json!({ "tools": tools }));
                        }
                    }
                };
                h.exchange("tools/list".to_owned(), timeout, pages).await
            }
        };
        self.settle(outcome)
    }

    async fn call_tool_once(
        &mut self,
        name: &str,
        args: Map<String, Value>,
        timeout: Duration,
    ) -> Result<Value, ClientError> {
        let outcome = match self.connection.as_mut().ok_or(ClientError::Closed)? {
            Connection::Stdio(c) => c
                .call_tool(name, args, timeout)
                .await
                .map_err(ClientError::from),
            Connection::Http(h) => {
                let params = serde_json::json!({"name": name, "arguments": args});
                let call = async |conn: &Conn| {
                    let (result, _) = conn.request("tools/call", Some(params)).await?;
                    Ok(result)
                };
                h.exchange(format!("tools/call {name}"), timeout, call)
                    .await
            }
        };
        self.settle(outcome)
    }

    /// Our result of one request. A failure that tore the connection down
    /// (anything but a JSON-RPC error) leaves no connection behind, so the next
    /// `connect` or recovery starts a new server.
    fn settle(&mut self, outcome: Result<Value, ClientError>) -> Result<Value, ClientError> {
        let open = match self.connection.as_ref() {
            Some(Connection::Stdio(c)) => c.is_open(),
            Some(Connection::Http(h)) => h.open,
            None => true,
        };
        if !open {
            self.connection = None;
        }
        outcome
    }
}

/// Whether a request the per-user server failed goes once to a server child of the call's
/// own: when no answer came (the server went away, the stream broke) and the request changes
/// nothing or was never sent. A timeout is not retried: the child would wait as long again.
fn daemon_retry(stage: Stage<'_>, error: &ClientError) -> bool {
    let unanswered = matches!(error, ClientError::Protocol(_) | ClientError::Closed);
    unanswered
        && match stage {
            Stage::Connect | Stage::ListTools => true,
            Stage::Call(tool) => tool != satori_protocol::MANAGE_INDEX,
        }
}

/// `request` on the shared server within `timeout`; a failure other than the server's
/// JSON-RPC error closes the session for this client.
async fn within(
    open: &mut bool,
    what: String,
    timeout: Duration,
    request: impl Future<Output = mcp_client::Result<Value>>,
) -> mcp_client::Result<Value> {
    let outcome = match tokio::time::timeout(timeout, request).await {
        Ok(r) => r,
        Err(_) => Err(mcp_client::Error::CallTimeout { what, timeout }),
    };
    if let Err(e) = &outcome
        && !matches!(e, mcp_client::Error::Server { .. })
    {
        *open = false;
    }
    outcome
}

/// The lock of a client's state; a panic while it was held leaves the state as it was.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(stage: Stage<'_>, error: ClientError, want: bool) {
        assert_eq!(daemon_retry(stage, &error), want, "{stage:?} {error}");
    }

    /// A request the per-user server failed goes once to a server of the call's own when no
    /// answer came and a second attempt cannot repeat a change.
    #[test]
    fn what_the_per_user_server_failed_is_retried_in_a_child() {
        let broken = || ClientError::Protocol("the stream broke".into());
        check(Stage::Connect, broken(), true);
        check(Stage::ListTools, broken(), true);
        check(Stage::Call("search_codebase"), broken(), true);
        check(Stage::Call("read_file"), ClientError::Closed, true);
        // A build may have started before the connection broke.
        check(Stage::Call(satori_protocol::MANAGE_INDEX), broken(), false);
        // An answer is the server speaking; a timeout would only wait as long again.
        check(
            Stage::Call("search_codebase"),
            ClientError::Rpc {
                code: -32602,
                message: "bad".into(),
                data: None,
            },
            false,
        );
        check(
            Stage::Call("search_codebase"),
            ClientError::CallTimeout {
                what: "tools/call search_codebase".into(),
                timeout: Duration::from_secs(1),
            },
            false,
        );
        check(
            Stage::Connect,
            ClientError::StartupTimeout(Duration::from_secs(1)),
            false,
        );
    }
}
