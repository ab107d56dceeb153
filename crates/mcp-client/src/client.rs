//! Session reuse: `init` opens a session and writes the session file; [`Client`] resumes the
//! session of a session file for later requests, refreshing an OAuth token once when the
//! server refuses it, initializing again when the server forgot the session (if asked), and
//! following a server that rotates the session id, so the next process uses the new one.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::auth;
use crate::error::{Error, Result};
use crate::files;
use crate::http::{ClientInfo, Conn, Elicit, Endpoint, SESSIONLESS_VERSION};
use crate::keyref::KeyRef;
use crate::log::{self, Domain, Level};
use crate::proxy;
use crate::session::{SESSION_VERSION, Session};

/// How a session is opened and used.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `clientInfo` of `initialize`.
    pub client: ClientInfo,
    /// How long each request waits for its answer (`None`: as long as the server takes).
    pub timeout: Option<Duration>,
    /// Whether a session the server no longer knows is replaced by a new one.
    pub reinit: bool,
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

/// Initializes a session with the server at `endpoint` and writes it to the session file
/// `out`; the session as written.
pub async fn init(
    endpoint: &str,
    out: &Path,
    key_ref: Option<&str>,
    elicit: Option<&str>,
    options: &Options,
) -> Result<Session> {
    let ep = Endpoint::parse(endpoint)?;
    let key_ref = key_ref.map(KeyRef::parse).transpose()?;
    let elicit = elicit.map(Elicit::parse).transpose()?;
    // A unix:// endpoint is the proxy's or any Streamable HTTP server's on that socket; only
    // the proxy rules out a token and elicitation (it initialized its server itself).
    let proxied = match &ep {
        Endpoint::Unix(socket) => {
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
            proxy::served(socket)? == proxy::Served::Proxy
        }
        Endpoint::Http(_) => false,
    };
    if proxied && elicit.is_some() {
        return Err(Error::Usage(
            "--elicit is not for an mcat proxy: its server was initialized by the proxy, which declares no elicitation".into(),
        ));
    }
    if proxied && key_ref.is_some() {
        return Err(Error::Usage(
            "-k/--key-ref is not for an mcat proxy: its socket takes no token".into(),
        ));
    }
    let token = match &key_ref {
        Some(k) => auth::fresh_token(k, false).await?,
        None => None,
    };
    let mut conn = Conn::new(&ep, token)?
        .client_info(options.client.clone())
        .elicit(elicit)
        .timeout(options.timeout);
    let started = std::time::Instant::now();
    let hs = conn.initialize().await.map_err(|e| match e {
        Error::Server { code: -32601, .. } => Error::Transport(format!(
            "{} does not know initialize: it speaks the sessionless MCP revision ({} or later), which mcat detects but does not drive yet",
            ep.shown(),
            SESSIONLESS_VERSION
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
            Endpoint::Unix(s) if proxied => Some(proxy::control_path(s).display().to_string()),
            _ => None,
        },
        elicit,
    };
    session.apply(&hs);
    session.save(out)?;
    Ok(session)
}

/// A session file's connection: requests that refresh the token once when the server
/// refuses it.
pub struct Client {
    session: Session,
    path: PathBuf,
    endpoint: Endpoint,
    key_ref: Option<KeyRef>,
    conn: Conn,
    token: Option<String>,
    options: Options,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("path", &self.path)
            .field("endpoint", &self.endpoint)
            .finish()
    }
}

impl Client {
    /// The session of the session file at `path` and a connection resuming it.
    pub async fn open(path: &Path, options: Options) -> Result<Client> {
        let s = Session::load(path)?;
        let ep =
            Endpoint::parse(&s.endpoint).map_err(|e| Error::corrupt(path, "session file", e))?;
        if let Endpoint::Unix(socket) = &ep {
            // A proxy that died is reported as such; anything else is found out by the request.
            proxy::served(socket)?;
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
        let conn = resumed(&ep, &s, token.clone(), &options)?;
        Ok(Client {
            session: s,
            path: path.to_owned(),
            endpoint: ep,
            key_ref,
            conn,
            token,
            options,
        })
    }

    /// The session as the session file holds it.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// One request; its `result`.
    pub async fn request(&mut self, method: &str, params: Option<Value>) -> Result<Value> {
        let (value, session) = match self.authorized(method, &params).await {
            Err(Error::SessionExpired(_)) if self.options.reinit => {
                self.initialize_again().await?;
                self.authorized(method, &params).await
            }
            other => other,
        }?;
        self.keep_rotated(session)?;
        Ok(value)
    }

    /// Every page of a paged list (`tools/list`, `resources/list`, ...): the items under
    /// `key`, as one list.
    pub async fn list_all(&mut self, method: &str, key: &str) -> Result<Vec<Value>> {
        let mut items = Vec::new();
        let mut next: Option<String> = None;
        for _ in 0..10_000 {
            let page = self.request(method, cursor_params(next.take())).await?;
            if let Some(page_items) = page.get(key).and_then(Value::as_array) {
                items.extend(page_items.iter().cloned());
            }
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(c) if !c.is_empty() => next = Some(c.to_owned()),
                _ => break,
            }
        }
        Ok(items)
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
            .client_info(self.options.client.clone())
            .elicit(self.session.elicit)
            .timeout(self.options.timeout);
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
                self.conn = resumed(&self.endpoint, &self.session, token, &self.options)?;
                self.conn.request(method, params.clone()).await
            }
            other => other,
        }
    }
}

/// The params of a list request that starts at `cursor`.
pub fn cursor_params(cursor: Option<String>) -> Option<Value> {
    cursor.map(|c| json!({"cursor": c}))
}

/// A connection that resumes session `s` with `token`.
fn resumed(ep: &Endpoint, s: &Session, token: Option<String>, options: &Options) -> Result<Conn> {
    Ok(Conn::new(ep, token)?
        .client_info(options.client.clone())
        .elicit(s.elicit)
        .timeout(options.timeout)
        .resume(s.session_id.clone(), Some(s.protocol_version.clone())))
}
