//! The command line, as clap sees it. Parsing errors become `{"ok":false,...}` with exit 2
//! (see `lib.rs`); help stays plain text.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "mcat",
    version,
    about = "Drive any MCP server from a shell: one JSON object on stdout per command."
)]
pub struct Cli {
    #[command(flatten)]
    pub log: LogArgs,
    /// When the server no longer knows the session file's session, initialize again, update
    /// the session file and retry (instead of failing).
    #[arg(long, global = true)]
    pub reinit: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct LogArgs {
    /// Enable a log domain: app, auth or mcp, optionally with :error, :warn, :info or :debug.
    #[arg(long = "log", value_name = "DOMAIN[:LEVEL]", global = true)]
    pub log: Vec<String>,
    /// Also log to stderr when --log-file is given.
    #[arg(long = "log-stderr", global = true)]
    pub log_stderr: bool,
    /// Log to this file (appended).
    #[arg(long = "log-file", value_name = "PATH", global = true)]
    pub log_file: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Authorize with OAuth (HTTP endpoints).
    #[command(subcommand)]
    Auth(Box<AuthCommand>),
    /// Run a stdio MCP server behind a Unix socket.
    #[command(subcommand)]
    Proxy(ProxyCommand),
    /// Handshake with a server and write the session file the other commands use.
    Init {
        /// http://..., https://... or unix:///path.sock
        endpoint: String,
        /// The session file to write.
        #[arg(short = 'o', long = "output", value_name = "SESS_INFO_FILE")]
        output: PathBuf,
        /// Where the access token is (HTTP).
        #[arg(short = 'k', long = "key-ref", value_name = "KEY_REF")]
        key_ref: Option<String>,
        /// Declare elicitation (HTTP) and answer a server's questions without a user:
        /// accept-defaults (the schema's defaults; decline if a required field has none),
        /// decline or cancel.
        #[arg(long, value_name = "POLICY")]
        elicit: Option<String>,
        #[command(flatten)]
        timeout: TimeoutArg,
    },
    /// Tools.
    #[command(subcommand)]
    Tool(ToolCommand),
    /// Resources.
    #[command(subcommand)]
    Resource(ResourceCommand),
    /// Prompts.
    #[command(subcommand)]
    Prompt(PromptCommand),
    /// The bridge process of `proxy up` (internal).
    #[command(name = "__serve", hide = true)]
    Serve {
        socket: PathBuf,
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
}

// One value is parsed per process, so the size of the largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum AuthCommand {
    /// Begin an authorization: returns the user's action at once, or completes with --wait.
    Start {
        endpoint: String,
        /// Where the token is stored.
        #[arg(short = 'k', long = "key-ref", value_name = "KEY_REF")]
        key_ref: String,
        /// The auth state file `continue` reads.
        #[arg(long = "state", value_name = "AUTH_STATE_FILE")]
        state: PathBuf,
        /// Block until the flow completes (or times out).
        #[arg(long)]
        wait: bool,
        /// Replace a token already stored at KEY_REF.
        #[arg(short = 'o', long = "overwrite")]
        overwrite: bool,
        /// A client file: id/client_id, secret/client_secret, key/client_key (a PEM path,
        /// relative to the file), name/client_name, scope, resource, audience.
        #[arg(short = 'c', long = "client", value_name = "CLIENT_INFO_FILE")]
        client: Option<PathBuf>,
        #[arg(long = "client-id")]
        client_id: Option<String>,
        /// env://VAR, .env://path:VAR or json://path holding the secret.
        #[arg(long = "client-secret", value_name = "KEY_SPEC")]
        client_secret: Option<String>,
        /// A PKCS#8 PEM private key file (P-256, P-384 or RSA): the client authenticates
        /// with assertions it signs (`private_key_jwt`) instead of a secret.
        #[arg(long = "client-key", value_name = "PEM_FILE")]
        client_key: Option<PathBuf>,
        /// The name to register a client under.
        #[arg(long = "client-name")]
        client_name: Option<String>,
        /// The HTTPS URL of this client's metadata document, used as its client id where the
        /// authorization server supports client ID metadata documents.
        #[arg(long = "client-metadata-url", value_name = "URL")]
        client_metadata_url: Option<String>,
        /// The scope to ask for (default: the server's challenge, else all it supports).
        #[arg(long)]
        scope: Option<String>,
        /// A command run with the URL to open (default: $MCAT_BROWSER, else the platform
        /// opener on a terminal).
        #[arg(long = "open-command", value_name = "CMD")]
        open_command: Option<String>,
        /// Seconds --wait waits for the redirect.
        #[arg(long, default_value_t = 300)]
        timeout: u64,
        /// `client-credentials`: a machine client authenticates with its own id and secret,
        /// no user involved (completes at once).
        #[arg(long, value_name = "GRANT")]
        grant: Option<String>,
    },
    /// Complete a pending authorization and store the token at KEY_REF.
    Continue {
        #[arg(long = "state", value_name = "AUTH_STATE_FILE")]
        state: PathBuf,
        #[arg(short = 'k', long = "key-ref", value_name = "KEY_REF")]
        key_ref: String,
        #[arg(short = 'o', long = "overwrite")]
        overwrite: bool,
        /// The URL the browser was redirected to, pasted (instead of listening for it).
        #[arg(long = "redirect-url", value_name = "URL")]
        redirect_url: Option<String>,
        /// Seconds to wait for the redirect.
        #[arg(long, default_value_t = 300)]
        timeout: u64,
    },
}

#[derive(Debug, Subcommand)]
pub enum ProxyCommand {
    /// Start CMD as a stdio MCP server served on the socket.
    Up {
        endpoint: String,
        /// The server's command and arguments, after --.
        #[arg(last = true)]
        command: Vec<String>,
    },
    /// Stop the proxy and remove its socket, control file and log.
    Down { endpoint: String },
    /// Report the proxy's pid, command, uptime and whether it is alive.
    Status { endpoint: String },
}

#[derive(Debug, Args)]
pub struct SessionArg {
    /// The session file written by init.
    #[arg(short = 's', long = "session", value_name = "SESS_INFO_FILE")]
    pub session: PathBuf,
    #[command(flatten)]
    pub timeout: TimeoutArg,
}

#[derive(Debug, Args)]
pub struct TimeoutArg {
    /// Seconds to wait for each answer from the server before failing (and cancelling the
    /// request); 0 waits as long as the server takes.
    #[arg(long, value_name = "SECONDS", default_value_t = mcp_client::http::DEFAULT_TIMEOUT_S)]
    pub timeout: u64,
}

impl TimeoutArg {
    /// The limit, `None` for none.
    pub fn limit(&self) -> Option<std::time::Duration> {
        (self.timeout > 0).then(|| std::time::Duration::from_secs(self.timeout))
    }
}

#[derive(Debug, Subcommand)]
pub enum ToolCommand {
    /// List the server's tools (every page).
    List {
        #[command(flatten)]
        session: SessionArg,
        /// One page from this cursor instead of every page.
        #[arg(long)]
        cursor: Option<String>,
    },
    /// Call a tool; the result is the server's raw result.
    Call {
        name: String,
        /// Arguments: inline JSON5, @file or @- (stdin).
        #[arg(short = 'i', long = "input", value_name = "ARGS")]
        input: Option<String>,
        #[command(flatten)]
        session: SessionArg,
    },
}

#[derive(Debug, Subcommand)]
pub enum ResourceCommand {
    /// One page of resources.
    List {
        #[command(flatten)]
        session: SessionArg,
        #[arg(long)]
        cursor: Option<String>,
    },
    /// Read a resource; -o FILE writes its decoded bytes, -o - writes them to stdout.
    Read {
        uri: String,
        #[command(flatten)]
        session: SessionArg,
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<String>,
    },
    /// One page of resource templates.
    ListTemplate {
        #[command(flatten)]
        session: SessionArg,
        #[arg(long)]
        cursor: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum PromptCommand {
    /// One page of prompts.
    List {
        #[command(flatten)]
        session: SessionArg,
        #[arg(long)]
        cursor: Option<String>,
    },
    /// Get a prompt with its arguments (an object of strings).
    Get {
        name: String,
        #[arg(short = 'i', long = "input", value_name = "ARGS")]
        input: Option<String>,
        #[command(flatten)]
        session: SessionArg,
    },
}
