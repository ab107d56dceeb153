//! mcat: drive any MCP server from a shell.
//!
//! Every command prints one JSON object on stdout (`output`) and exits 0, 1 or 2. State
//! lives only in files the command line names: the session file (`session`), token
//! destinations (`keyref`), the proxy's control file (`proxy`). One request per command
//! (`mcp`), over Streamable HTTP on TCP or on the Unix socket of a proxy that keeps a stdio
//! server running between commands (`proxy`).

mod auth;
mod cli;
mod error;
mod files;
mod input;
mod keyref;
mod log;
mod mcp;
mod output;
mod proxy;
mod random;
mod session;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use clap::Parser;
use serde_json::{Value, json};

pub use error::{Error, Result};
pub use output::{EXIT_FAILURE, EXIT_OK, EXIT_USAGE, Outcome};

use cli::{
    AuthCommand, Cli, Command, PromptCommand, ProxyCommand, ResourceCommand, SessionArg,
    ToolCommand,
};
use keyref::KeyRef;
use log::{Domain, Level};
use mcp::{Conn, Elicit, Endpoint};
use session::{SESSION_VERSION, Session};

/// Text for a person, on stderr (stdout carries JSON only).
fn to_stderr(text: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// Runs mcat with these arguments (the first is the program name) and returns the exit
/// code, having written the command's JSON to stdout.
pub fn main_with_args(args: impl IntoIterator<Item = OsString>) -> i32 {
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            match e.kind() {
                // Help is text for a person: stderr, since stdout carries JSON only.
                ErrorKind::DisplayHelp => {
                    to_stderr(&e.to_string());
                    return EXIT_OK;
                }
                ErrorKind::DisplayVersion => {
                    return output::emit(Ok(Outcome::Result(json!({
                        "name": "mcat",
                        "version": env!("CARGO_PKG_VERSION"),
                    }))));
                }
                // `mcat` or `mcat tool` alone: the help of that level, and a usage error.
                ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                    to_stderr(&e.to_string());
                    return output::emit(Err(Error::Usage(
                        "a command is missing: see the list above, or mcat --help".into(),
                    )));
                }
                _ => {}
            }
            // clap's message without its usage and help footer, on one line.
            let text = e.to_string();
            let message = text
                .lines()
                .map(str::trim)
                .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join(" ");
            let message = message.trim_start_matches("error: ").to_owned();
            return output::emit(Err(Error::Usage(message)));
        }
    };
    if let Command::Serve { socket, command } = &cli.command {
        return proxy::serve(socket, command);
    }
    if let Err(e) = log::init(
        &cli.log.log,
        cli.log.log_stderr,
        cli.log.log_file.as_deref(),
    ) {
        return output::emit(Err(e));
    }
    output::emit(run(cli.command, cli.reinit))
}

fn run(command: Command, reinit: bool) -> Result<Outcome> {
    match command {
        Command::Auth(a) => block_on(auth_command(*a)),
        Command::Proxy(p) => proxy_command(p),
        Command::Init {
            endpoint,
            output,
            key_ref,
            elicit,
            timeout,
        } => block_on(init(
            &endpoint,
            &output,
            key_ref.as_deref(),
            elicit.as_deref(),
            timeout.limit(),
        )),
        Command::Tool(t) => block_on(tool(t, reinit)),
        Command::Resource(r) => block_on(resource(r, reinit)),
        Command::Prompt(p) => block_on(prompt(p, reinit)),
        Command::Serve { .. } => unreachable!("handled before logging starts"),
    }
}

fn block_on<F: std::future::Future<Output = Result<Outcome>>>(f: F) -> Result<Outcome> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Transport(format!("cannot start the async runtime: {e}")))?
        .block_on(f)
}

async fn auth_command(a: AuthCommand) -> Result<Outcome> {
    let result = match a {
        AuthCommand::Start {
            endpoint,
            key_ref,
            state,
            wait,
            overwrite,
            client,
            client_id,
            client_secret,
            client_key,
            client_name,
            client_metadata_url,
            scope,
            open_command,
            timeout,
            grant,
        } => {
            let key_ref = KeyRef::parse(&key_ref)?;
            let client_credentials = match grant.as_deref() {
                None => false,
                Some("client-credentials") => true,
                Some(other) => {
                    return Err(Error::Usage(format!(
                        "unknown --grant '{other}' (the one grant to choose is client-credentials; user flows are picked from the server's metadata)"
                    )));
                }
            };
            let cli_client = auth::ClientConfig {
                id: client_id,
                secret: client_secret
                    .as_deref()
                    .map(auth::read_secret)
                    .transpose()?,
                key: client_key,
                name: client_name,
                scope,
                resource: None,
                // The seed gives `audience` in the client file only.
                audience: None,
                metadata_url: client_metadata_url,
            };
            cli_client.check("the command line")?;
            let file = match &client {
                Some(p) => auth::ClientConfig::from_file(p)?,
                None => auth::ClientConfig::default(),
            };
            auth::start(auth::Start {
                endpoint,
                key_ref,
                state_file: state,
                wait,
                overwrite,
                client: cli_client.over(file),
                open_command,
                timeout: std::time::Duration::from_secs(timeout),
                client_credentials,
            })
            .await?
        }
        AuthCommand::Continue {
            state,
            key_ref,
            overwrite,
            redirect_url,
            timeout,
        } => {
            let key_ref = KeyRef::parse(&key_ref)?;
            auth::complete(
                &state,
                &key_ref,
                overwrite,
                redirect_url.as_deref(),
                std::time::Duration::from_secs(timeout),
                None,
                false,
            )
            .await?
        }
    };
    Ok(Outcome::Result(result))
}

fn unix_socket(endpoint: &str) -> Result<PathBuf> {
    match Endpoint::parse(endpoint)? {
        Endpoint::Unix(p) => Ok(p),
        Endpoint::Http(_) => Err(Error::Usage(format!(
            "proxy commands take a unix:///path.sock endpoint, not '{endpoint}'"
        ))),
    }
}

fn proxy_command(p: ProxyCommand) -> Result<Outcome> {
    let result = match p {
        ProxyCommand::Up { endpoint, command } => proxy::up(&unix_socket(&endpoint)?, &command)?,
        ProxyCommand::Down { endpoint } => proxy::down(&unix_socket(&endpoint)?)?,
        ProxyCommand::Status { endpoint } => proxy::status(&unix_socket(&endpoint)?)?,
    };
    Ok(Outcome::Result(result))
}

/// Whether two paths name the same file (the second may not exist yet).
fn same_file(a: &Path, b: &Path) -> bool {
    let abs = |p: &Path| {
        let p = files::absolute(p);
        match (
            p.parent().and_then(|d| d.canonicalize().ok()),
            p.file_name(),
        ) {
            (Some(d), Some(n)) => d.join(n),
            _ => p,
        }
    };
    abs(a) == abs(b)
}

async fn init(
    endpoint: &str,
    out: &Path,
    key_ref: Option<&str>,
    elicit: Option<&str>,
    timeout: Option<Duration>,
) -> Result<Outcome> {
    let ep = Endpoint::parse(endpoint)?;
    let key_ref = key_ref.map(KeyRef::parse).transpose()?;
    let elicit = elicit.map(Elicit::parse).transpose()?;
    if let (Endpoint::Unix(_), Some(_)) = (&ep, elicit) {
        return Err(Error::Usage(
            "--elicit is for HTTP endpoints: a proxy's server was initialized by the proxy, which declares no elicitation".into(),
        ));
    }
    if let (Endpoint::Unix(_), Some(_)) = (&ep, &key_ref) {
        return Err(Error::Usage(
            "-k/--key-ref is for HTTP endpoints; a unix:// proxy takes no token".into(),
        ));
    }
    if let Endpoint::Unix(socket) = &ep {
        let control = proxy::control_path(socket);
        if same_file(out, socket)
            || same_file(out, &control)
            || same_file(out, &proxy::log_path(socket))
        {
            return Err(Error::Usage(format!(
                "{} is the proxy's own file: write the session file elsewhere",
                out.display()
            )));
        }
        proxy::require(socket)?;
    }
    let token = match &key_ref {
        Some(k) => auth::fresh_token(k, false).await?,
        None => None,
    };
    let mut conn = Conn::new(&ep, token)?.elicit(elicit).timeout(timeout);
    let started = std::time::Instant::now();
    let hs = conn.initialize().await.map_err(|e| match e {
        Error::Server { code: -32601, .. } => Error::Transport(format!(
            "{} does not know initialize: it speaks the sessionless MCP revision ({} or later), which mcat detects but does not drive yet",
            ep.shown(),
            mcp::SESSIONLESS_VERSION
        )),
        other => other,
    })?;
    log::log(Domain::Mcp, Level::Info, || {
        format!(
            "initialize {} in {} ms",
            ep.shown(),
            started.elapsed().as_millis()
        )
    });
    let mut session = Session {
        version: SESSION_VERSION,
        transport: ep.transport().into(),
        endpoint: ep.shown(),
        key_ref: key_ref.as_ref().map(KeyRef::canonical),
        session_id: None,
        session_mode: String::new(),
        protocol_version: String::new(),
        server_capabilities: Value::Null,
        server_info: Value::Null,
        proxy_control_file: match &ep {
            Endpoint::Unix(s) => Some(proxy::control_path(s).display().to_string()),
            Endpoint::Http(_) => None,
        },
        elicit,
    };
    session.apply(&hs);
    session.save(out)?;
    Ok(Outcome::Result(json!({
        "session_file": out.display().to_string(),
        "session_id": session.session_id,
        "protocol_version": session.protocol_version,
        "server_info": session.server_info,
        "server_capabilities": session.server_capabilities,
    })))
}

/// A session's connection: requests that refresh the token once when the server refuses it.
struct Client {
    session: Session,
    path: PathBuf,
    endpoint: Endpoint,
    key_ref: Option<KeyRef>,
    conn: Conn,
    token: Option<String>,
    reinit: bool,
    timeout: Option<Duration>,
}

impl Client {
    async fn request(&mut self, method: &str, params: Option<Value>) -> Result<Value> {
        let (value, session) = match self.authorized(method, &params).await {
            Err(Error::SessionExpired(_)) if self.reinit => {
                self.initialize_again().await?;
                self.authorized(method, &params).await
            }
            other => other,
        }?;
        self.keep_rotated(session)?;
        Ok(value)
    }

    /// A stateful server that answers with another session id has rotated it: the session
    /// file follows, so the next command uses the new one.
    fn keep_rotated(&mut self, session: Option<String>) -> Result<()> {
        let Some(id) = session else {
            return Ok(());
        };
        if self
            .session
            .session_id
            .as_deref()
            .is_none_or(|old| old == id)
        {
            return Ok(());
        }
        log::log(Domain::Mcp, Level::Info, || {
            format!(
                "the server rotated the session id; {} follows",
                self.path.display()
            )
        });
        self.session.session_id = Some(id);
        self.session.save(&self.path)
    }

    /// A new session in place of the expired one, written to the session file.
    async fn initialize_again(&mut self) -> Result<()> {
        let mut conn = Conn::new(&self.endpoint, self.token.clone())?
            .elicit(self.session.elicit)
            .timeout(self.timeout);
        let hs = conn.initialize().await?;
        self.session.apply(&hs);
        self.session.save(&self.path)?;
        log::log(Domain::App, Level::Info, || {
            format!("initialized a new session for {}", self.path.display())
        });
        self.conn = conn;
        Ok(())
    }

    async fn authorized(
        &mut self,
        method: &str,
        params: &Option<Value>,
    ) -> Result<(Value, Option<String>)> {
        match self.conn.request(method, params.clone()).await {
            Err(Error::Unauthorized(why)) => {
                let Some(k) = &self.key_ref else {
                    return Err(Error::Unauthorized(why));
                };
                let token = auth::fresh_token(k, true).await?;
                self.token.clone_from(&token);
                self.conn = resumed(&self.endpoint, &self.session, token, self.timeout)?;
                self.conn.request(method, params.clone()).await
            }
            other => other,
        }
    }
}

/// A connection that resumes session `s` with `token`.
fn resumed(
    ep: &Endpoint,
    s: &Session,
    token: Option<String>,
    timeout: Option<Duration>,
) -> Result<Conn> {
    Ok(Conn::new(ep, token)?
        .elicit(s.elicit)
        .timeout(timeout)
        .resume(s.session_id.clone(), Some(s.protocol_version.clone())))
}

/// The session of the session file and a connection resuming it.
async fn connect(arg: &SessionArg, reinit: bool) -> Result<Client> {
    let path = arg.session.as_path();
    let timeout = arg.timeout.limit();
    let s = Session::load(path)?;
    let ep = Endpoint::parse(&s.endpoint).map_err(|e| Error::corrupt(path, "session file", e))?;
    if let Endpoint::Unix(socket) = &ep {
        proxy::require(socket)?;
    }
    let key_ref = s
        .key_ref
        .as_deref()
        .map(KeyRef::parse)
        .transpose()
        .map_err(|e| Error::corrupt(path, "session file", e))?;
    let token = match &key_ref {
        Some(k) => auth::fresh_token(k, false).await?,
        None => None,
    };
    let conn = resumed(&ep, &s, token.clone(), timeout)?;
    Ok(Client {
        session: s,
        path: path.to_owned(),
        endpoint: ep,
        key_ref,
        conn,
        token,
        reinit,
        timeout,
    })
}

fn cursor_params(cursor: Option<String>) -> Option<Value> {
    cursor.map(|c| json!({"cursor": c}))
}

async fn tool(t: ToolCommand, reinit: bool) -> Result<Outcome> {
    match t {
        ToolCommand::List { session, cursor } => {
            let mut c = connect(&session, reinit).await?;
            c.session.require("tools")?;
            if cursor.is_some() {
                return Ok(Outcome::Result(
                    c.request("tools/list", cursor_params(cursor)).await?,
                ));
            }
            // Every page, as one list.
            let mut tools = Vec::new();
            let mut next: Option<String> = None;
            for _ in 0..10_000 {
                let page = c.request("tools/list", cursor_params(next.take())).await?;
                if let Some(items) = page.get("tools").and_then(Value::as_array) {
                    tools.extend(items.iter().cloned());
                }
                match page.get("nextCursor").and_then(Value::as_str) {
                    Some(c) if !c.is_empty() => next = Some(c.to_owned()),
                    _ => break,
                }
            }
            Ok(Outcome::Result(json!({"tools": tools})))
        }
        ToolCommand::Call {
            name,
            input,
            session,
        } => {
            let arguments = match input {
                Some(i) => input::parse_object(&i, &mut std::io::stdin())?,
                None => Default::default(),
            };
            let mut c = connect(&session, reinit).await?;
            c.session.require("tools")?;
            let result = c
                .request(
                    "tools/call",
                    Some(json!({"name": name, "arguments": arguments})),
                )
                .await?;
            Ok(Outcome::Result(result))
        }
    }
}

async fn resource(r: ResourceCommand, reinit: bool) -> Result<Outcome> {
    match r {
        ResourceCommand::List { session, cursor } => {
            let mut c = connect(&session, reinit).await?;
            c.session.require("resources")?;
            Ok(Outcome::Result(
                c.request("resources/list", cursor_params(cursor)).await?,
            ))
        }
        ResourceCommand::ListTemplate { session, cursor } => {
            let mut c = connect(&session, reinit).await?;
            c.session.require("resources")?;
            Ok(Outcome::Result(
                c.request("resources/templates/list", cursor_params(cursor))
                    .await?,
            ))
        }
        ResourceCommand::Read {
            uri,
            session,
            output,
        } => {
            let mut c = connect(&session, reinit).await?;
            c.session.require("resources")?;
            let result = c
                .request("resources/read", Some(json!({"uri": uri})))
                .await?;
            let Some(out) = output else {
                return Ok(Outcome::Result(result));
            };
            let contents = result
                .get("contents")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let [item] = contents.as_slice() else {
                return Err(Error::Transport(format!(
                    "{uri} has {} content items; -o writes exactly one (read without -o to see them all)",
                    contents.len()
                )));
            };
            let bytes = decode(item, &uri)?;
            if out == "-" {
                return Ok(Outcome::Bytes(bytes));
            }
            let path = PathBuf::from(&out);
            files::write_atomic(&path, &bytes, false)?;
            Ok(Outcome::Result(json!({
                "uri": uri,
                "path": path.display().to_string(),
                "bytes": bytes.len(),
                "mimeType": item.get("mimeType").cloned().unwrap_or(Value::Null),
            })))
        }
    }
}

/// The bytes of one content item: its text, or its base64 blob decoded.
fn decode(item: &Value, uri: &str) -> Result<Vec<u8>> {
    if let Some(t) = item.get("text").and_then(Value::as_str) {
        return Ok(t.as_bytes().to_vec());
    }
    if let Some(b) = item.get("blob").and_then(Value::as_str) {
        return base64::engine::general_purpose::STANDARD
            .decode(b.trim())
            .map_err(|e| Error::Transport(format!("the blob of {uri} is not valid base64: {e}")));
    }
    Err(Error::Transport(format!(
        "the content of {uri} has neither text nor blob"
    )))
}

async fn prompt(p: PromptCommand, reinit: bool) -> Result<Outcome> {
    match p {
        PromptCommand::List { session, cursor } => {
            let mut c = connect(&session, reinit).await?;
            c.session.require("prompts")?;
            Ok(Outcome::Result(
                c.request("prompts/list", cursor_params(cursor)).await?,
            ))
        }
        PromptCommand::Get {
            name,
            input,
            session,
        } => {
            let arguments = match input {
                Some(i) => input::parse_prompt_args(&i, &mut std::io::stdin())?,
                None => Default::default(),
            };
            let mut c = connect(&session, reinit).await?;
            c.session.require("prompts")?;
            let mut result = c
                .request(
                    "prompts/get",
                    Some(json!({"name": name, "arguments": arguments})),
                )
                .await?;
            if let Value::Object(m) = &mut result {
                m.insert("session_id".into(), json!(c.session.session_id));
            }
            Ok(Outcome::Result(result))
        }
    }
}
