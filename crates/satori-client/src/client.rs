//! A connection to one `satori` server child process.
//!
//! We spawn the child ourselves and hand rmcp only its pipes. Owning the
//! process handle is what lets every failure path end the same way: kill the
//! child, reap it, and drain what it wrote to stderr. rmcp's own child-process
//! transport would kill it from a spawned task, which may never run when the
//! runtime is shutting down.
//!
//! The live parts (process, rmcp service, stderr pump) sit in a `Connection`
//! that is separate from the caller-facing [`Client`], because guard recovery
//! (see `recovery`) replaces the connection with one started in a different
//! environment while the caller keeps the same `Client`.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::async_rw::{AsyncRwTransport, DEFAULT_MAX_LINE_LENGTH};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Map, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStderr, Command};
use tokio::task::JoinHandle;

use crate::ClientError;
use crate::guard_mode::{DEFAULT_GUARD_MODE, RECOVERY_GUARD_MODE, STDOUT_GUARD_ENV};
use crate::recovery::{Attempts, GuardRecovery, Stage, should_retry};
use crate::stdout_guard::{StrictStdout, Violation};

/// The MCP revision we speak (from the contract). rmcp defaults to a newer, handshake-less one.
pub use satori_protocol::PROTOCOL_VERSION;

/// Environment variable that tells the server it runs as a one-shot CLI child.
pub const RUN_MODE_ENV: &str = satori_protocol::env::RUN_MODE;

/// How long a server gets to exit on its own after its stdin is closed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// How long we keep forwarding stderr after the child is gone. A grandchild
/// that inherited the pipe could hold it open forever; we do not wait for it.
const STDERR_DRAIN: Duration = Duration::from_millis(500);

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

/// The handler we run on our side: we offer no client capabilities, so the
/// default `ClientHandler` behaviour (answering pings, ignoring notifications)
/// is all we need; this type only carries the `initialize` parameters.
#[derive(Debug, Clone)]
struct Handler {
    config: ClientConfig,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        self.config.clone()
    }
}

/// The live parts of one server process.
struct Connection {
    child: Child,
    pid: Option<u32>,
    service: Option<RunningService<RoleClient, Handler>>,
    violation: Violation,
    stderr_pump: Option<JoinHandle<()>>,
    server_info: Value,
}

/// A client of one `satori` server child (two, after a guard recovery).
/// Dropping it kills the child.
pub struct Client {
    options: SpawnOptions,
    connection: Option<Connection>,
    tools: Option<Value>,
    attempts: Attempts,
}

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

    /// Process id of the server child while it is connected.
    pub fn pid(&self) -> Option<u32> {
        self.connection.as_ref().and_then(|c| c.pid)
    }

    /// The server's `initialize` result (protocol version, capabilities, info).
    pub fn server_info(&self) -> Option<&Value> {
        self.connection.as_ref().map(|c| &c.server_info)
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
    /// a moment to exit, then kill it. Always reaps the child.
    pub async fn shutdown(mut self) {
        if let Some(connection) = self.connection.take() {
            connection.close(EXIT_GRACE).await;
        }
    }

    /// Start one server process with the current guard mode.
    async fn open(&mut self) -> Result<(), ClientError> {
        self.attempts.attempt_count += 1;
        let mut env = Vec::new();
        if self.attempts.guard_recovery_attempted {
            env.push((STDOUT_GUARD_ENV.to_owned(), RECOVERY_GUARD_MODE.to_owned()));
        }
        self.connection = Some(Connection::open(&self.options, &env).await?);
        Ok(())
    }

    /// Decide on a retry after `first`: `Err(first)` when there is none,
    /// otherwise switch to the recovery guard mode (for good: it is sticky)
    /// and hand `first` back for the combined error.
    fn begin_recovery(
        &mut self,
        stage: Stage<'_>,
        first: ClientError,
    ) -> Result<ClientError, ClientError> {
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
        let outcome = {
            let service = self.service()?;
            tokio::time::timeout(timeout, service.list_all_tools()).await
        };
        let tools = self.settle("tools/list", timeout, outcome).await?;
        let json = serde_json::to_value(tools)
            .map_err(|e| ClientError::Protocol(format!("cannot encode tools/list: {e}")))?;
        Ok(serde_json::json!({ "tools": json }))
    }

    async fn call_tool_once(
        &mut self,
        name: &str,
        args: Map<String, Value>,
        timeout: Duration,
    ) -> Result<Value, ClientError> {
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(args);
        let outcome = {
            let service = self.service()?;
            tokio::time::timeout(timeout, service.call_tool(params)).await
        };
        let method = format!("tools/call {name}");
        let result = self.settle(&method, timeout, outcome).await?;
        serde_json::to_value(result)
            .map_err(|e| ClientError::Protocol(format!("cannot encode tool result: {e}")))
    }

    fn service(&self) -> Result<&RunningService<RoleClient, Handler>, ClientError> {
        self.connection
            .as_ref()
            .and_then(|c| c.service.as_ref())
            .ok_or(ClientError::Closed)
    }

    /// Turn the outcome of one request into our result. Any failure that
    /// leaves the stream in an unknown state tears the connection down first,
    /// so no caller can keep using (or leak) a broken child.
    async fn settle<T>(
        &mut self,
        method: &str,
        timeout: Duration,
        outcome: Result<Result<T, ServiceError>, tokio::time::error::Elapsed>,
    ) -> Result<T, ClientError> {
        let error = match outcome {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(ServiceError::McpError(e))) => {
                // A JSON-RPC error is a well-formed answer; the connection is fine.
                return Err(ClientError::Rpc {
                    code: e.code.0,
                    message: e.message.into_owned(),
                    data: e.data,
                });
            }
            Err(_) => ClientError::CallTimeout {
                what: method.to_owned(),
                timeout,
            },
            Ok(Err(other)) => ClientError::Protocol(format!("{method}: {other}")),
        };
        let Some(connection) = self.connection.take() else {
            return Err(error);
        };
        let diagnosis = connection.terminate().await;
        Err(match (error, diagnosis) {
            // The real cause (garbage on stdout, the server died) beats the
            // generic "transport closed" that rmcp reports for it.
            (ClientError::Protocol(_), Some(cause)) => {
                ClientError::Protocol(format!("{method}: {cause}"))
            }
            (error, _) => error,
        })
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        if let Some(connection) = self.connection.take() {
            connection.kill_now();
        }
    }
}

impl Connection {
    async fn open(
        options: &SpawnOptions,
        overrides: &[(String, String)],
    ) -> Result<Connection, ClientError> {
        let mut command = Command::new(&options.server_bin);
        command
            .env(RUN_MODE_ENV, "cli")
            .envs(options.env.iter().map(|(k, v)| (k, v)))
            .envs(overrides.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Backstop for paths that never reach our own kill (a panic unwinding
            // through a future): tokio sends SIGKILL when the handle is dropped.
            .kill_on_drop(true);
        die_with_parent(&mut command);

        let mut child = command.spawn().map_err(|source| ClientError::Spawn {
            path: options.server_bin.clone(),
            source,
        })?;
        let pid = child.id();
        let (Some(stdin), Some(stdout), stderr) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            // Cannot happen with the piped configuration above; handled
            // rather than unwrapped so a platform surprise is still an error.
            let _ = child.kill().await;
            return Err(ClientError::Protocol(
                "server pipes were not created".into(),
            ));
        };
        let stderr_pump = stderr.map(|s| tokio::spawn(forward_stderr(s)));

        let violation = Violation::default();
        let reader = StrictStdout::new(stdout, DEFAULT_MAX_LINE_LENGTH, violation.clone());
        let transport = AsyncRwTransport::new_client(reader, stdin);
        let config = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new(options.client_name.clone(), options.client_version.clone()),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25);
        let handler = Handler { config };

        let mut connection = Connection {
            child,
            pid,
            service: None,
            violation,
            stderr_pump,
            server_info: Value::Null,
        };
        let handshake =
            tokio::time::timeout(options.startup_timeout, handler.serve(transport)).await;
        let error = match handshake {
            Ok(Ok(service)) => {
                connection.server_info = service
                    .peer_info()
                    .and_then(|info| serde_json::to_value(info).ok())
                    .unwrap_or(Value::Null);
                connection.service = Some(service);
                return Ok(connection);
            }
            Err(_) => ClientError::StartupTimeout(options.startup_timeout),
            Ok(Err(e)) => ClientError::Protocol(format!("MCP handshake failed: {e}")),
        };
        let diagnosis = connection.terminate().await;
        Err(match (error, diagnosis) {
            (ClientError::Protocol(_), Some(cause)) => {
                ClientError::Protocol(format!("MCP handshake failed: {cause}"))
            }
            (error, _) => error,
        })
    }

    /// Tear down after a failure: kill first (the server is misbehaving, there
    /// is nothing to wait for), then collect the reason the stream broke.
    async fn terminate(mut self) -> Option<String> {
        let _ = self.child.start_kill();
        let status = self.child.wait().await.ok();
        if let Some(service) = self.service.take() {
            let _ = service.cancel().await;
        }
        self.drain_stderr().await;
        if let Some(v) = self.violation.get() {
            return Some(v);
        }
        // Only a child that exited on its own tells us something; one we
        // just killed reports our own signal.
        self.exited_by_itself(status)
    }

    fn exited_by_itself(&self, status: Option<std::process::ExitStatus>) -> Option<String> {
        let status = status?;
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            if status.signal() == Some(libc::SIGKILL) {
                return None;
            }
        }
        Some(format!("server exited unexpectedly ({status})"))
    }

    /// Normal end: close stdin so the server can finish, then make sure it is gone.
    async fn close(mut self, grace: Duration) {
        if let Some(service) = self.service.take() {
            // Cancelling the service closes the transport, i.e. the child's stdin.
            let _ = tokio::time::timeout(grace, service.cancel()).await;
        }
        if tokio::time::timeout(grace, self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.start_kill();
            let _ = self.child.wait().await;
        }
        self.drain_stderr().await;
    }

    async fn drain_stderr(&mut self) {
        if let Some(mut pump) = self.stderr_pump.take()
            && tokio::time::timeout(STDERR_DRAIN, &mut pump).await.is_err()
        {
            pump.abort();
        }
    }

    /// Synchronous cleanup for `Drop`: SIGKILL, then reap without blocking the
    /// runtime for more than a moment (a killed process is reaped in
    /// microseconds; if not, tokio's orphan reaper takes over).
    fn kill_now(mut self) {
        let _ = self.child.start_kill();
        for _ in 0..50 {
            match self.child.try_wait() {
                Ok(Some(_)) | Err(_) => break,
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            }
        }
        if let Some(pump) = self.stderr_pump.take() {
            pump.abort();
        }
    }
}

/// Whether the last byte forwarded from a server's stderr to ours was not a
/// newline. Process-wide because stderr is: a server that dies after printing
/// half a line would otherwise have the caller's next line (an error token
/// that scripts look for at the start of a line) glued to its text.
static STDERR_MID_LINE: AtomicBool = AtomicBool::new(false);

/// Whether forwarded server output left our stderr in the middle of a line;
/// clears the flag, because the caller is about to end that line itself.
/// Call it before writing a line of your own to stderr.
pub fn take_stderr_mid_line() -> bool {
    STDERR_MID_LINE.swap(false, Ordering::SeqCst)
}

/// Copy the child's stderr to ours byte for byte. If our stderr is gone we keep
/// reading and discard, because a child blocked on a full pipe would hang.
async fn forward_stderr(mut from: ChildStderr) {
    let mut to = tokio::io::stderr();
    let mut broken = false;
    let mut buf = vec![0u8; 8192];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if !broken {
                    let written = async {
                        to.write_all(&buf[..n]).await?;
                        to.flush().await
                    };
                    broken = written.await.is_err();
                    STDERR_MID_LINE.store(buf[n - 1] != b'\n', Ordering::SeqCst);
                }
            }
        }
    }
}

/// Ask Linux to SIGKILL the server if we die without cleaning up (SIGKILL,
/// abort). Not available elsewhere; the other paths still kill the child.
/// The signal fires when the *thread* that spawned the child ends, so spawn
/// from a long-lived thread (the main thread, or a runtime worker).
#[cfg(target_os = "linux")]
fn die_with_parent(command: &mut Command) {
    // SAFETY: the closure runs between fork and exec and only calls prctl,
    // which is async-signal-safe and touches no memory of the parent.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_command: &mut Command) {}
