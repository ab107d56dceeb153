//! A stdio MCP server spawned as a child process, and rmcp's client over its pipes.
//!
//! We spawn the child ourselves and hand rmcp only its pipes. Owning the process handle is
//! what lets every failure path end the same way: kill the child, reap it, and drain what it
//! wrote to stderr. rmcp's own child-process transport would kill it from a spawned task,
//! which may never run when the runtime is shutting down. The child's stdout is read through
//! [`strict::StrictStdout`], so a server that prints anything but JSON-RPC there is a
//! protocol failure that names what it printed; its stderr is copied to ours byte for byte.
//!
//! A request given up on (its timeout passed) or one that broke the stream stops the server:
//! the stream is in an unknown state afterwards, and stopping the child is the one
//! cancellation a stdio server cannot ignore. Later requests fail with [`Error::Closed`].

mod strict;

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, GetPromptRequestParams,
    Implementation, ProtocolVersion, ReadResourceRequestParams,
};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::async_rw::{AsyncRwTransport, DEFAULT_MAX_LINE_LENGTH};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStderr, Command};
use tokio::task::JoinHandle;

use crate::error::{Error, Result};
use crate::http::ClientInfo;
use strict::{StrictStdout, Violation};

/// How long a server gets to exit on its own after its stdin is closed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// How long we keep forwarding stderr after the child is gone. A grandchild that inherited
/// the pipe could hold it open forever; we do not wait for it.
const STDERR_DRAIN: Duration = Duration::from_millis(500);

/// How to start a stdio server.
#[derive(Debug, Clone)]
pub struct Spawn {
    /// The server's executable.
    pub program: PathBuf,
    pub args: Vec<String>,
    /// Environment for the child on top of ours, applied in order (a later pair wins).
    pub env: Vec<(String, String)>,
    /// Budget for spawning plus the `initialize` handshake.
    pub startup_timeout: Duration,
    /// `clientInfo` of `initialize`.
    pub client: ClientInfo,
}

/// The handler we run on our side: we offer no client capabilities, so the default
/// `ClientHandler` behaviour (answering pings, ignoring notifications) is all we need; this
/// type only carries the `initialize` parameters.
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
struct Live {
    child: Child,
    service: Option<RunningService<RoleClient, Handler>>,
    violation: Violation,
    stderr_pump: Option<JoinHandle<()>>,
}

/// A client of one stdio server child. Dropping it kills the child.
pub struct StdioClient {
    live: Option<Live>,
    pid: Option<u32>,
    server_info: Value,
}

impl std::fmt::Debug for StdioClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioClient")
            .field("pid", &self.pid())
            .finish()
    }
}

impl StdioClient {
    /// Starts the server and completes the MCP handshake within `spawn.startup_timeout`.
    /// On failure the child is already gone.
    pub async fn spawn(spawn: &Spawn) -> Result<StdioClient> {
        let mut command = Command::new(&spawn.program);
        command
            .args(&spawn.args)
            .envs(spawn.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Backstop for paths that never reach our own kill (a panic unwinding through a
            // future): tokio sends SIGKILL when the handle is dropped.
            .kill_on_drop(true);
        die_with_parent(&mut command);

        let mut child = command.spawn().map_err(|source| Error::Spawn {
            path: spawn.program.clone(),
            source,
        })?;
        let pid = child.id();
        let (Some(stdin), Some(stdout), stderr) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            // Cannot happen with the piped configuration above; handled rather than
            // unwrapped so a platform surprise is still an error.
            let _ = child.kill().await;
            return Err(Error::Transport("server pipes were not created".into()));
        };
        let stderr_pump = stderr.map(|s| tokio::spawn(forward_stderr(s)));

        let violation = Violation::default();
        let reader = StrictStdout::new(stdout, DEFAULT_MAX_LINE_LENGTH, violation.clone());
        let transport = AsyncRwTransport::new_client(reader, stdin);
        let config = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new(spawn.client.name.clone(), spawn.client.version.clone()),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25);
        let handler = Handler { config };

        let mut live = Live {
            child,
            service: None,
            violation,
            stderr_pump,
        };
        let handshake = tokio::time::timeout(spawn.startup_timeout, handler.serve(transport)).await;
        let error = match handshake {
            Ok(Ok(service)) => {
                let server_info = service
                    .peer_info()
                    .and_then(|info| serde_json::to_value(info).ok())
                    .unwrap_or(Value::Null);
                live.service = Some(service);
                return Ok(StdioClient {
                    live: Some(live),
                    pid,
                    server_info,
                });
            }
            Err(_) => Error::StartupTimeout(spawn.startup_timeout),
            Ok(Err(e)) => Error::Transport(format!("MCP handshake failed: {e}")),
        };
        let diagnosis = live.terminate().await;
        Err(match (error, diagnosis) {
            (Error::Transport(_), Some(cause)) => {
                Error::Transport(format!("MCP handshake failed: {cause}"))
            }
            (error, _) => error,
        })
    }

    /// Process id of the server child while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.live.as_ref().and(self.pid)
    }

    /// Whether the connection is still usable (no failure has torn it down).
    pub fn is_open(&self) -> bool {
        self.live.is_some()
    }

    /// The server's `initialize` result (protocol version, capabilities, info).
    pub fn server_info(&self) -> &Value {
        &self.server_info
    }

    /// The `tools/list` result as JSON (`{"tools":[...]}`, all pages).
    pub async fn list_tools(&mut self, timeout: Duration) -> Result<Value> {
        let outcome = {
            let service = self.service()?;
            tokio::time::timeout(timeout, service.list_all_tools()).await
        };
        let tools = self.settle("tools/list", timeout, outcome).await?;
        Ok(json!({ "tools": encode("tools/list", tools)? }))
    }

    /// Calls a tool; the `CallToolResult` as JSON. A result with `isError` is a success here:
    /// what it means is the caller's to decide.
    pub async fn call_tool(
        &mut self,
        name: &str,
        args: Map<String, Value>,
        timeout: Duration,
    ) -> Result<Value> {
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(args);
        let outcome = {
            let service = self.service()?;
            tokio::time::timeout(timeout, service.call_tool(params)).await
        };
        let method = format!("tools/call {name}");
        let result = self.settle(&method, timeout, outcome).await?;
        encode("tool result", result)
    }

    /// The `resources/list` result as JSON (`{"resources":[...]}`, all pages).
    pub async fn list_resources(&mut self, timeout: Duration) -> Result<Value> {
        let outcome = {
            let service = self.service()?;
            tokio::time::timeout(timeout, service.list_all_resources()).await
        };
        let resources = self.settle("resources/list", timeout, outcome).await?;
        Ok(json!({ "resources": encode("resources/list", resources)? }))
    }

    /// The `resources/read` result of `uri` as JSON.
    pub async fn read_resource(&mut self, uri: &str, timeout: Duration) -> Result<Value> {
        let params = ReadResourceRequestParams::new(uri.to_owned());
        let outcome = {
            let service = self.service()?;
            tokio::time::timeout(timeout, service.read_resource(params)).await
        };
        let result = self.settle("resources/read", timeout, outcome).await?;
        encode("resources/read", result)
    }

    /// The `prompts/list` result as JSON (`{"prompts":[...]}`, all pages).
    pub async fn list_prompts(&mut self, timeout: Duration) -> Result<Value> {
        let outcome = {
            let service = self.service()?;
            tokio::time::timeout(timeout, service.list_all_prompts()).await
        };
        let prompts = self.settle("prompts/list", timeout, outcome).await?;
        Ok(json!({ "prompts": encode("prompts/list", prompts)? }))
    }

    /// The `prompts/get` result of prompt `name` with `args` as JSON.
    pub async fn get_prompt(
        &mut self,
        name: &str,
        args: Map<String, Value>,
        timeout: Duration,
    ) -> Result<Value> {
        let params = GetPromptRequestParams::new(name.to_owned()).with_arguments(args);
        let outcome = {
            let service = self.service()?;
            tokio::time::timeout(timeout, service.get_prompt(params)).await
        };
        let result = self.settle("prompts/get", timeout, outcome).await?;
        encode("prompts/get", result)
    }

    /// Closes the connection politely: closes the server's stdin, gives it a moment to
    /// exit, then kills it. Always reaps the child.
    pub async fn shutdown(mut self) {
        if let Some(live) = self.live.take() {
            live.close(EXIT_GRACE).await;
        }
    }

    fn service(&self) -> Result<&RunningService<RoleClient, Handler>> {
        self.live
            .as_ref()
            .and_then(|c| c.service.as_ref())
            .ok_or(Error::Closed)
    }

    /// Turns the outcome of one request into our result. Any failure that leaves the stream
    /// in an unknown state tears the connection down first, so no caller can keep using (or
    /// leak) a broken child.
    async fn settle<T>(
        &mut self,
        method: &str,
        timeout: Duration,
        outcome: std::result::Result<
            std::result::Result<T, ServiceError>,
            tokio::time::error::Elapsed,
        >,
    ) -> Result<T> {
        let error = match outcome {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(ServiceError::McpError(e))) => {
                // A JSON-RPC error is a well-formed answer; the connection is fine.
                return Err(Error::Server {
                    code: e.code.0.into(),
                    message: e.message.into_owned(),
                    data: e.data,
                });
            }
            Err(_) => Error::CallTimeout {
                what: method.to_owned(),
                timeout,
            },
            Ok(Err(other)) => Error::Transport(format!("{method}: {other}")),
        };
        let Some(live) = self.live.take() else {
            return Err(error);
        };
        let diagnosis = live.terminate().await;
        Err(match (error, diagnosis) {
            // The real cause (garbage on stdout, the server died) beats the generic
            // "transport closed" that rmcp reports for it.
            (Error::Transport(_), Some(cause)) => Error::Transport(format!("{method}: {cause}")),
            (error, _) => error,
        })
    }
}

/// A result as JSON.
fn encode(what: &str, value: impl serde::Serialize) -> Result<Value> {
    serde_json::to_value(value).map_err(|e| Error::Transport(format!("cannot encode {what}: {e}")))
}

impl Drop for StdioClient {
    fn drop(&mut self) {
        if let Some(live) = self.live.take() {
            live.kill_now();
        }
    }
}

impl Live {
    /// Tear down after a failure: kill first (the server is misbehaving, there is nothing to
    /// wait for), then collect the reason the stream broke.
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
        // Only a child that exited on its own tells us something; one we just killed
        // reports our own signal.
        exited_by_itself(status)
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

    /// Synchronous cleanup for `Drop`: SIGKILL, then reap without blocking the runtime for
    /// more than a moment (a killed process is reaped in microseconds; if not, tokio's
    /// orphan reaper takes over).
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

fn exited_by_itself(status: Option<std::process::ExitStatus>) -> Option<String> {
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

/// Whether the last byte forwarded from a server's stderr to ours was not a newline.
/// Process-wide because stderr is: a server that dies after printing half a line would
/// otherwise have the caller's next line (an error token that scripts look for at the start
/// of a line) glued to its text.
static STDERR_MID_LINE: AtomicBool = AtomicBool::new(false);

/// Whether forwarded server output left our stderr in the middle of a line; clears the
/// flag, because the caller is about to end that line itself. Call it before writing a line
/// of your own to stderr.
pub fn take_stderr_mid_line() -> bool {
    STDERR_MID_LINE.swap(false, Ordering::SeqCst)
}

/// Copy the child's stderr to ours byte for byte. If our stderr is gone we keep reading and
/// discard, because a child blocked on a full pipe would hang.
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

/// Ask Linux to SIGKILL the server if we die without cleaning up (SIGKILL, abort). Not
/// available elsewhere; the other paths still kill the child. The signal fires when the
/// *thread* that spawned the child ends, so spawn from a long-lived thread (the main thread,
/// or a runtime worker).
#[cfg(target_os = "linux")]
fn die_with_parent(command: &mut Command) {
    // SAFETY: the closure runs between fork and exec and only calls prctl, which is
    // async-signal-safe and touches no memory of the parent.
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
