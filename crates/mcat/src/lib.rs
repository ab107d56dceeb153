//! mcat: drive any MCP server from a shell.
//!
//! A thin command line over the `mcp-client` library: this crate parses arguments (`cli`,
//! `input`), runs one command through the library, and prints one JSON object on stdout
//! (`output`) with exit code 0, 1 or 2. State lives only in files the command line names:
//! the session file, token destinations, the proxy's control file (all the library's).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use clap::Parser;
use mcp_client::client::cursor_params;
use mcp_client::{Client, ClientInfo, Endpoint, KeyRef, auth, files, log, proxy};
use serde_json::{Value, json};

pub use mcp_client::{Error, Result};
pub use output::{EXIT_FAILURE, EXIT_OK, EXIT_USAGE, Outcome};

use cli::{
    AuthCommand, Cli, Command, PromptCommand, ProxyCommand, ResourceCommand, SessionArg,
    ToolCommand,
};

mod cli;
mod input;
mod output;

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
        return match proxy::serve(socket, command) {
            Ok(code) => code,
            Err(e) => output::emit(Err(e)),
        };
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

/// Who mcat is, in `initialize`.
fn client_info() -> ClientInfo {
    ClientInfo::new("mcat", env!("CARGO_PKG_VERSION"))
}

async fn init(
    endpoint: &str,
    out: &Path,
    key_ref: Option<&str>,
    elicit: Option<&str>,
    timeout: Option<Duration>,
) -> Result<Outcome> {
    let options = mcp_client::Options {
        client: client_info(),
        timeout,
        reinit: false,
    };
    let session = mcp_client::init(endpoint, out, key_ref, elicit, &options).await?;
    Ok(Outcome::Result(json!({
        "session_file": out.display().to_string(),
        "session_id": session.session_id,
        "protocol_version": session.protocol_version,
        "server_info": session.server_info,
        "server_capabilities": session.server_capabilities,
    })))
}

/// The session of the session file and a connection resuming it, once the server is known
/// to advertise `capability`.
async fn connect(arg: &SessionArg, reinit: bool, capability: &'static str) -> Result<Client> {
    let options = mcp_client::Options {
        client: client_info(),
        timeout: arg.timeout.limit(),
        reinit,
    };
    let c = Client::open(arg.session.as_path(), options).await?;
    c.session().require(capability)?;
    Ok(c)
}

async fn tool(t: ToolCommand, reinit: bool) -> Result<Outcome> {
    match t {
        ToolCommand::List { session, cursor } => {
            let mut c = connect(&session, reinit, "tools").await?;
            if cursor.is_some() {
                return Ok(Outcome::Result(
                    c.request("tools/list", cursor_params(cursor)).await?,
                ));
            }
            // Every page, as one list.
            let tools = c.list_all("tools/list", "tools").await?;
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
            let mut c = connect(&session, reinit, "tools").await?;
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
            let mut c = connect(&session, reinit, "resources").await?;
            Ok(Outcome::Result(
                c.request("resources/list", cursor_params(cursor)).await?,
            ))
        }
        ResourceCommand::ListTemplate { session, cursor } => {
            let mut c = connect(&session, reinit, "resources").await?;
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
            let mut c = connect(&session, reinit, "resources").await?;
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
            let mut c = connect(&session, reinit, "prompts").await?;
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
            let mut c = connect(&session, reinit, "prompts").await?;
            let mut result = c
                .request(
                    "prompts/get",
                    Some(json!({"name": name, "arguments": arguments})),
                )
                .await?;
            if let Value::Object(m) = &mut result {
                m.insert("session_id".into(), json!(c.session().session_id));
            }
            Ok(Outcome::Result(result))
        }
    }
}
