//! The Node addon of `@zokizuan/satori-mcp`: `listTools`, `callTool` and `SatoriClient`.
//!
//! The addon reaches the engine only through MCP: it spawns the `satori` server that the
//! platform package ships next to it and talks to it with `satori-client`, the library the
//! CLI uses, so the guard recovery, timeouts, result classification and index-build waiting
//! are the CLI's. Why a child and not the engine in-process: the `.node` file stays small
//! (no tantivy, no model), a crash or a long index build can never take the Node process
//! down, the server's stdout guard works on its own descriptors and not on Node's, and there
//! is one engine build per platform, the same process model as `satori-cli`.
//!
//! Every call resolves to a plain object (`outcome`): the package's JavaScript turns a
//! failure into an `Error` whose `code` is the CLI token. The module is the napi surface
//! only; the mapping lives in `outcome`.

mod outcome;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use napi_derive::napi;
use satori_client::{Client, GuardRecovery, SpawnOptions, starts_index_build, wait_for_index};
use serde_json::{Map, Value};
use tokio::sync::Mutex;

/// Defaults of `satori-cli` (see the CLI contract), so both clients time out alike.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(180);
const CALL_TIMEOUT: Duration = Duration::from_secs(600);
/// How often an index build is polled, as the CLI does.
const POLL_EVERY: Duration = Duration::from_millis(500);

/// How to start the server: the options of `new SatoriClient(options)` and of the one-shot
/// functions.
#[napi(object)]
#[derive(Debug, Default, Clone)]
pub struct ClientOptions {
    /// Path of the `satori` executable (the package's JavaScript fills it in from the
    /// platform package when the caller does not).
    pub server_bin: Option<String>,
    /// Budget for starting the server and the MCP handshake (ms, default 180000).
    pub startup_timeout_ms: Option<u32>,
    /// Budget for each request (ms, default 600000).
    pub call_timeout_ms: Option<u32>,
    /// `auto` (default) or `never`: whether a transport failure is retried once with the
    /// server's stdout guard off.
    pub guard_recovery: Option<String>,
    /// Extra environment for the server.
    pub env: Option<HashMap<String, String>>,
    /// A running shared server (`satori --http ADDR`: `http://ADDR/mcp`; `satori --socket
    /// PATH`: `unix:///PATH`) to talk to instead of starting one; its token, when it asks for
    /// one, is read from `SATORI_ENDPOINT_TOKEN`. A refused token rejects with `E_AUTH`, never
    /// retried with the stdout guard off (that guard is the shared server's, not ours), and
    /// `close` ends the session this client opened there.
    pub endpoint: Option<String>,
}

/// Options of one call.
#[napi(object)]
#[derive(Debug, Default, Clone)]
pub struct CallOptions {
    /// Budget for this call (ms); for an index build, for the whole wait.
    pub call_timeout_ms: Option<u32>,
    /// For `manage_index` `create`/`reindex`: wait until the build ends (default `true`)
    /// and resolve to the final status, as `satori-cli` does.
    pub wait: Option<bool>,
}

/// Client options after validation.
#[derive(Debug, Clone)]
struct Settings {
    spawn: SpawnOptions,
    call_timeout: Duration,
}

impl Settings {
    fn parse(options: ClientOptions) -> Result<Settings, String> {
        let endpoint = match options.endpoint.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(e) => Some(satori_client::Endpoint::parse(e).map_err(|e| e.to_string())?),
        };
        let server_bin = match options.server_bin.filter(|bin| !bin.is_empty()) {
            // A shared server needs no executable here.
            _ if endpoint.is_some() => PathBuf::new(),
            // A server that is not there is a configuration problem (E_USAGE), as for the
            // CLI, not a failure to talk to it.
            Some(bin) if !std::path::Path::new(&bin).is_file() => {
                return Err(format!("server executable not found: {bin} is not a file"));
            }
            Some(bin) => PathBuf::from(bin),
            None => satori_client::resolve_server_bin().map_err(|e| e.to_string())?,
        };
        let mut spawn = SpawnOptions::new(server_bin);
        spawn.endpoint = endpoint;
        spawn.client_name = "satori-node".to_owned();
        spawn.startup_timeout = options
            .startup_timeout_ms
            .map_or(STARTUP_TIMEOUT, |ms| Duration::from_millis(ms.into()));
        spawn.guard_recovery = match options.guard_recovery.as_deref() {
            None => GuardRecovery::Auto,
            Some(word) => word.parse().map_err(|e| format!("guardRecovery {e}"))?,
        };
        let mut env: Vec<(String, String)> = options.env.unwrap_or_default().into_iter().collect();
        // The server sees the same environment whatever order the object had.
        env.sort();
        // With no endpoint, the per-user server that `satori-cli` attaches to too (unless
        // `SATORI_DAEMON=off`, in the process's environment or in `env`).
        if spawn.endpoint.is_none() {
            spawn.daemon = satori_client::Daemon::with_env(&spawn.server_bin, false, &env)?.ok();
        }
        spawn.env = env;
        Ok(Settings {
            spawn,
            call_timeout: options
                .call_timeout_ms
                .map_or(CALL_TIMEOUT, |ms| Duration::from_millis(ms.into())),
        })
    }
}

/// One server connection and what is needed to (re)open it.
struct Session {
    settings: Settings,
    client: Option<Client>,
    closed: bool,
}

impl Session {
    fn new(settings: Settings) -> Session {
        Session {
            settings,
            client: None,
            closed: false,
        }
    }

    /// The live client, started on first use. The `Client` keeps the guard-recovery state
    /// (sticky: after a recovery every later server starts with the guard off).
    async fn client(&mut self) -> Result<&mut Client, Value> {
        if self.closed {
            return Err(outcome::failure(
                outcome::E_USAGE,
                "the SatoriClient is closed".to_owned(),
                None,
            ));
        }
        let client = self
            .client
            .get_or_insert_with(|| Client::new(self.settings.spawn.clone()));
        if let Err(error) = client.connect().await {
            return Err(outcome::client_failure(&error, client.attempts()));
        }
        Ok(client)
    }

    async fn list_tools(&mut self) -> Value {
        let timeout = self.settings.call_timeout;
        let client = match self.client().await {
            Ok(client) => client,
            Err(failure) => return failure,
        };
        match client.list_tools(timeout).await {
            Ok(tools) => outcome::ok(tools, client.attempts()),
            Err(error) => outcome::client_failure(&error, client.attempts()),
        }
    }

    async fn call_tool(
        &mut self,
        name: String,
        args: Option<Value>,
        options: CallOptions,
    ) -> Value {
        let args = match args {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(args)) => args,
            Some(other) => {
                return outcome::failure(
                    outcome::E_USAGE,
                    format!(
                        "{} the arguments of {name} must be an object, not {other}",
                        outcome::E_USAGE
                    ),
                    None,
                );
            }
        };
        let timeout = options
            .call_timeout_ms
            .map_or(self.settings.call_timeout, |ms| {
                Duration::from_millis(ms.into())
            });
        let wait = options.wait.unwrap_or(true) && starts_index_build(&name, &args);
        let path = args.get("path").and_then(Value::as_str).map(str::to_owned);
        let client = match self.client().await {
            Ok(client) => client,
            Err(failure) => return failure,
        };
        let result = match client.call_tool(&name, args, timeout).await {
            Ok(result) => result,
            Err(error) => return outcome::client_failure(&error, client.attempts()),
        };
        if !(wait && is_kickoff_ok(&result) && !satori_client::is_terminal(&result)) {
            return outcome::tool_result(&name, result, client.attempts());
        }
        // A kickoff without a path cannot be followed; the server refuses it anyway.
        let Some(path) = path else {
            return outcome::tool_result(&name, result, client.attempts());
        };
        match wait_for_index(client, &path, POLL_EVERY, timeout, |_| {}).await {
            Ok(last) => outcome::index_result(&name, last, client.attempts()),
            Err(error) => outcome::client_failure(&error, client.attempts()),
        }
    }

    async fn close(&mut self) {
        self.closed = true;
        if let Some(client) = self.client.take() {
            client.shutdown().await;
        }
    }
}

/// Whether a `manage_index` kickoff was accepted (its envelope says `ok`, or it is no
/// envelope at all and not an error).
fn is_kickoff_ok(result: &Value) -> bool {
    matches!(
        satori_client::classify(result),
        satori_client::Classification::Ok
    )
}

/// A client that keeps one warm `satori` server across calls, and the guard-recovery state
/// with it. Calls on one client run one at a time, in the order they were made.
#[napi]
pub struct SatoriClient {
    session: Arc<Mutex<Session>>,
}

#[napi]
impl SatoriClient {
    /// Validates the options; the server starts on the first call.
    #[napi(constructor)]
    pub fn new(options: Option<ClientOptions>) -> napi::Result<SatoriClient> {
        let settings = Settings::parse(options.unwrap_or_default()).map_err(|message| {
            napi::Error::from_reason(format!("{} {message}", outcome::E_USAGE))
        })?;
        Ok(SatoriClient {
            session: Arc::new(Mutex::new(Session::new(settings))),
        })
    }

    /// The `tools/list` result (`{tools: [...]}`), fetched once per server.
    #[napi(ts_return_type = "Promise<unknown>")]
    pub async fn list_tools(&self) -> Value {
        self.session.lock().await.list_tools().await
    }

    /// Call a tool; resolves to the outcome object the package's JavaScript unwraps.
    #[napi(ts_return_type = "Promise<unknown>")]
    pub async fn call_tool(
        &self,
        name: String,
        args: Option<Value>,
        options: Option<CallOptions>,
    ) -> Value {
        let mut session = self.session.lock().await;
        session
            .call_tool(name, args, options.unwrap_or_default())
            .await
    }

    /// Stop the server (close its stdin, then kill it after a grace), or end this client's
    /// session on a shared server (HTTP `DELETE`), and refuse later calls.
    #[napi]
    pub async fn close(&self) {
        self.session.lock().await.close().await;
    }
}

/// `tools/list` on a server started for this call only.
#[napi(ts_return_type = "Promise<unknown>")]
pub async fn list_tools(options: Option<ClientOptions>) -> Value {
    let mut session = match Settings::parse(options.unwrap_or_default()) {
        Ok(settings) => Session::new(settings),
        Err(message) => return usage(message),
    };
    let outcome = session.list_tools().await;
    session.close().await;
    outcome
}

/// `tools/call` on a server started for this call only.
#[napi(ts_return_type = "Promise<unknown>")]
pub async fn call_tool(
    name: String,
    args: Option<Value>,
    options: Option<CallOptions>,
    client: Option<ClientOptions>,
) -> Value {
    let mut session = match Settings::parse(client.unwrap_or_default()) {
        Ok(settings) => Session::new(settings),
        Err(message) => return usage(message),
    };
    let outcome = session
        .call_tool(name, args, options.unwrap_or_default())
        .await;
    session.close().await;
    outcome
}

fn usage(message: String) -> Value {
    outcome::failure(
        outcome::E_USAGE,
        format!("{} {message}", outcome::E_USAGE),
        None,
    )
}
