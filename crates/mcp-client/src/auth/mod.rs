//! `auth start` and `auth continue`: OAuth for MCP servers, shaped for agents.
//!
//! `start` discovers the authorization server (`discovery`), resolves the client (a client
//! file and flags, else dynamic registration, exactly once), picks the flow — the device flow
//! (RFC 8628) when the server offers it, else authorization code with PKCE S256 and a
//! loopback redirect — and writes everything `continue` needs to the auth state file (0600).
//! Without `--wait` it returns at once with the user's action (`pending`); `continue` (or
//! `--wait`) completes the flow and stores the token at KEY_REF. Stored tokens carry what a
//! refresh needs, so later commands refresh an expiring token by themselves and persist the
//! rotated one (`fresh_token`).

mod assertion;
mod discovery;
mod http;

use std::net::TcpListener as StdListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sha2::Digest;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::error::{Error, Result};
use crate::files;
use crate::keyref::{KeyRef, Token};
use crate::log::{self, Domain, Level};
use crate::proxy::now_ms;
use crate::random;
use http::Http;

/// Version of the auth state file's shape.
const STATE_VERSION: u32 = 1;
/// The device flow's grant type.
const DEVICE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";
/// A token this close to its expiry is refreshed before use.
const REFRESH_MARGIN_S: u64 = 60;

/// The auth state file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AuthState {
    pub version: u32,
    pub endpoint: String,
    /// `device_code` or `authorization_code`.
    pub flow: String,
    pub state: Flow,
}

/// What a flow needs between `start` and `continue`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Flow {
    /// `pending` or `complete`.
    pub status: String,
    pub issuer: Option<String>,
    pub token_endpoint: String,
    pub resource: String,
    pub scope: Option<String>,
    pub client_id: String,
    pub client_secret: Option<String>,
    /// The path of the client's private key, for `private_key_jwt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_key: Option<String>,
    /// `none`, `client_secret_post`, `client_secret_basic` or `private_key_jwt`.
    pub token_auth: String,
    /// The `audience` parameter some authorization servers want beside `resource`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
    // The device flow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification_uri: Option<String>,
    #[serde(default)]
    pub interval_s: u64,
    #[serde(default)]
    pub expires_at_ms: u64,
    // Authorization code with PKCE.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorize_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_uri: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_verifier: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csrf_state: Option<String>,
    #[serde(default)]
    pub iss_supported: bool,
}

/// The client identity given on the command line or in a client file.
#[derive(Debug, Clone, Default)]
pub struct ClientConfig {
    pub id: Option<String>,
    pub secret: Option<String>,
    /// A PKCS#8 PEM private key that signs client assertions (`private_key_jwt`).
    pub key: Option<PathBuf>,
    pub name: Option<String>,
    pub scope: Option<String>,
    pub resource: Option<String>,
    /// Sent as `audience` with every authorization and token request, for authorization
    /// servers that pick the token's audience by it rather than by `resource`.
    pub audience: Option<String>,
    /// The URL of the client's metadata document (SEP-991), used as its client id where
    /// the authorization server accepts one.
    pub metadata_url: Option<String>,
}

impl ClientConfig {
    /// Reads `-c CLIENT_INFO_FILE`.
    pub fn from_file(path: &Path) -> Result<ClientConfig> {
        let bytes = files::read_optional(path)?.ok_or_else(|| {
            Error::Missing(format!("client file {} does not exist", path.display()))
        })?;
        let v: Value =
            serde_json::from_slice(&bytes).map_err(|e| Error::corrupt(path, "client file", e))?;
        let field = |a: &str, b: &str| {
            v.get(a)
                .or_else(|| v.get(b))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let c = ClientConfig {
            id: field("id", "client_id"),
            secret: field("secret", "client_secret"),
            // A key path in a client file is relative to that file.
            key: field("key", "client_key").map(|k| {
                path.parent()
                    .map_or_else(|| PathBuf::from(&k), |dir| dir.join(&k))
            }),
            name: field("name", "client_name"),
            scope: field("scope", "scope"),
            resource: field("resource", "resource"),
            audience: field("audience", "audience"),
            metadata_url: field("metadata_url", "client_metadata_url"),
        };
        c.check(&format!("client file {}", path.display()))?;
        Ok(c)
    }

    /// The conflict rules: a name registers a client, so it goes with neither an id nor a
    /// secret; a secret belongs to an id.
    pub fn check(&self, origin: &str) -> Result<()> {
        if self.name.is_some() && (self.id.is_some() || self.secret.is_some()) {
            return Err(Error::Usage(format!(
                "{origin}: a client name (for registration) cannot be combined with a client id or secret"
            )));
        }
        if self.name.is_some() && self.key.is_some() {
            return Err(Error::Usage(format!(
                "{origin}: a client name (for registration) cannot be combined with a client key"
            )));
        }
        if self.secret.is_some() && self.id.is_none() {
            return Err(Error::Usage(format!(
                "{origin}: a client secret needs a client id"
            )));
        }
        if self.key.is_some() && self.id.is_none() {
            return Err(Error::Usage(format!(
                "{origin}: a client key needs a client id"
            )));
        }
        if self.key.is_some() && self.secret.is_some() {
            return Err(Error::Usage(format!(
                "{origin}: a client authenticates with a secret or with a key, not both"
            )));
        }
        Ok(())
    }

    /// Command line over file over defaults, field by field.
    pub fn over(self, file: ClientConfig) -> ClientConfig {
        // An id given on the command line replaces the file's identity as a whole.
        let (id, secret, key, name) = if self.id.is_some() || self.name.is_some() {
            (self.id, self.secret, self.key, self.name)
        } else {
            (file.id, file.secret, file.key, file.name)
        };
        ClientConfig {
            id,
            secret,
            key,
            name,
            scope: self.scope.or(file.scope),
            resource: self.resource.or(file.resource),
            audience: self.audience.or(file.audience),
            metadata_url: self.metadata_url.or(file.metadata_url),
        }
    }
}

/// Reads a `--client-secret KEY_SPEC`: `env://VAR`, `.env://path:VAR`, or `json://path`
/// (its `client_secret`). A literal secret would show in the process list, so it is refused.
pub fn read_secret(spec: &str) -> Result<String> {
    if let Some(path) = spec.strip_prefix("json://") {
        let p = Path::new(path);
        let bytes = files::read_optional(p)?
            .ok_or_else(|| Error::Missing(format!("{path} does not exist")))?;
        let v: Value =
            serde_json::from_slice(&bytes).map_err(|e| Error::corrupt(p, "secret file", e))?;
        return v
            .get("client_secret")
            .or_else(|| v.get("secret"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| Error::corrupt(p, "secret file", "no client_secret"));
    }
    if spec.starts_with("env://") || spec.starts_with(".env://") {
        return KeyRef::parse(spec)?
            .access_token()?
            .ok_or_else(|| Error::Missing(format!("{spec} holds no client secret")));
    }
    Err(Error::Usage(
        "--client-secret takes env://VAR, .env://path:VAR or json://path, never the secret itself (it would show in the process list)".into(),
    ))
}

/// `auth start`.
#[derive(Debug)]
pub struct Start {
    pub endpoint: String,
    pub key_ref: KeyRef,
    pub state_file: PathBuf,
    pub wait: bool,
    pub overwrite: bool,
    pub client: ClientConfig,
    pub open_command: Option<String>,
    pub timeout: Duration,
    /// The client credentials grant instead of a user flow.
    pub client_credentials: bool,
}

/// Base64url without padding (PKCE, JWS).
pub(crate) fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// What authorization code with PKCE needs that must not be guessed.
#[derive(Debug)]
struct Pkce {
    verifier: String,
    /// S256 of the verifier.
    challenge: String,
    /// The OAuth `state` the redirect must carry back.
    state: String,
}

impl Pkce {
    /// A fresh verifier and state from `source`; a source that fails is an error, since a
    /// verifier or state anyone could compute defeats both.
    fn new(source: random::Source) -> Result<Pkce> {
        let verifier = b64url(&random::bytes_from(source, 32, "a PKCE verifier")?);
        let state = b64url(&random::bytes_from(source, 16, "an OAuth state")?);
        Ok(Pkce {
            challenge: b64url(&sha2::Sha256::digest(verifier.as_bytes())),
            verifier,
            state,
        })
    }
}

fn save_state(path: &Path, s: &AuthState) -> Result<()> {
    files::write_json(path, s, true)
}

fn load_state(path: &Path) -> Result<AuthState> {
    let bytes = files::read_optional(path)?.ok_or_else(|| {
        Error::Missing(format!(
            "auth state file {} does not exist: begin with mcat auth start",
            path.display()
        ))
    })?;
    let s: AuthState =
        serde_json::from_slice(&bytes).map_err(|e| Error::corrupt(path, "auth state file", e))?;
    if s.version != STATE_VERSION {
        return Err(Error::corrupt(
            path,
            "auth state file",
            format!("version {} is not {STATE_VERSION}", s.version),
        ));
    }
    Ok(s)
}

/// Fails unless a token may be stored at `key_ref`.
fn writable(key_ref: &KeyRef, overwrite: bool) -> Result<()> {
    if matches!(key_ref, KeyRef::Env(_)) {
        return Err(Error::KeyRef(format!(
            "{} is read-only: auth stores a token, so use json://path or .env://path:VAR",
            key_ref.canonical()
        )));
    }
    if !overwrite && key_ref.read()?.is_some() {
        return Err(Error::KeyRef(format!(
            "{} already holds a value; pass -o/--overwrite to replace it",
            key_ref.canonical()
        )));
    }
    Ok(())
}

/// `auth start`: discovery, the client, the flow's first step.
pub async fn start(o: Start) -> Result<Value> {
    if !matches!(o.endpoint.split_once("://"), Some(("http" | "https", _))) {
        return Err(Error::Usage(format!(
            "auth is for http:// and https:// endpoints, not '{}'",
            o.endpoint
        )));
    }
    writable(&o.key_ref, o.overwrite)?;
    let _lock = files::lock(&o.state_file)?;
    let http = Http::new();
    let found = discovery::discover(&http, &o.endpoint).await?;
    let meta = &found.metadata;
    let token_endpoint = found
        .endpoint("token_endpoint")
        .ok_or_else(|| Error::Transport("the authorization server has no token_endpoint".into()))?;
    let device_endpoint = found.endpoint("device_authorization_endpoint");
    let resource = o
        .client
        .resource
        .clone()
        .unwrap_or_else(|| found.resource.clone());
    let scope = o.client.scope.clone().or_else(|| found.scope.clone());

    // The loopback redirect, for the code flow (and for registration).
    let redirect_uri = if device_endpoint.is_none() {
        let port = StdListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(|e| {
                Error::Transport(format!("cannot pick a loopback port for the redirect: {e}"))
            })?;
        Some(format!("http://127.0.0.1:{port}/callback"))
    } else {
        None
    };

    let cimd = meta
        .get("client_id_metadata_document_supported")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let (client_id, client_secret, registered_auth) = match (&o.client.id, &o.client.metadata_url) {
        (Some(id), _) => (id.clone(), o.client.secret.clone(), None),
        // A client metadata document names the client where the server accepts it.
        (None, Some(url)) if cimd => (url.clone(), None, Some("none".to_owned())),
        (None, _) => {
            register(
                &http,
                &found,
                &o.client,
                redirect_uri.as_deref(),
                device_endpoint.is_some(),
            )
            .await?
        }
    };
    // A client key is checked now, before any flow starts, and signs at every token request.
    let client_key = match (&o.client.id, &o.client.key) {
        (Some(_), Some(path)) => {
            let key = assertion::ClientKey::load(path)?;
            check_jwt_support(meta, key.alg())?;
            Some(files::absolute(path).display().to_string())
        }
        _ => None,
    };
    let token_auth = match (&client_key, registered_auth) {
        (Some(_), _) => "private_key_jwt".to_owned(),
        (None, Some(auth)) => auth,
        (None, None) => pick_auth(meta, client_secret.is_some()),
    };
    let mut flow = Flow {
        status: "pending".into(),
        issuer: found.issuer.clone(),
        token_endpoint,
        resource: resource.clone(),
        scope: scope.clone(),
        client_id: client_id.clone(),
        client_secret: client_secret.clone(),
        client_key,
        token_auth,
        audience: o.client.audience.clone(),
        ..Flow::default()
    };

    if o.client_credentials {
        if flow.client_secret.is_none() && flow.client_key.is_none() {
            return Err(Error::Usage(
                "--grant client-credentials needs --client-id and --client-secret or --client-key"
                    .into(),
            ));
        }
        let mut fields = vec![
            ("grant_type", "client_credentials".to_owned()),
            ("resource", resource.clone()),
        ];
        if let Some(s) = &scope {
            fields.push(("scope", s.clone()));
        }
        let (status, v) = token_request(&http, &flow, &mut fields).await?;
        if status != 200 {
            return Err(oauth_error("the token endpoint", status, &v));
        }
        let token = stored(&v, &flow, None)?;
        o.key_ref.write(&token, o.overwrite)?;
        return Ok(json!({"status": "complete", "stored": o.key_ref.canonical()}));
    }
    let action;
    let kind;
    if let Some(device) = device_endpoint {
        kind = "device_code";
        let mut fields = vec![
            ("client_id", client_id.as_str()),
            ("resource", resource.as_str()),
        ];
        if let Some(s) = &scope {
            fields.push(("scope", s));
        }
        if let Some(a) = &o.client.audience {
            fields.push(("audience", a));
        }
        let (status, v) = http.post_form(&device, &fields, None).await?;
        if status != 200 {
            return Err(oauth_error("the device authorization endpoint", status, &v));
        }
        let get = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let device_code = get("device_code")
            .ok_or_else(|| Error::Transport("the device endpoint sent no device_code".into()))?;
        let user_code = get("user_code").unwrap_or_default();
        let uri = get("verification_uri_complete")
            .or_else(|| get("verification_uri"))
            .or_else(|| get("verification_url"))
            .unwrap_or_default();
        let expires_in = v.get("expires_in").and_then(Value::as_u64).unwrap_or(600);
        flow.device_code = Some(device_code);
        flow.user_code = Some(user_code.clone());
        flow.verification_uri = Some(uri.clone());
        flow.interval_s = v
            .get("interval")
            .and_then(Value::as_u64)
            .unwrap_or(5)
            .max(1);
        flow.expires_at_ms = now_ms() + expires_in * 1000;
        action = json!({"url": uri, "code": user_code, "expires_in": expires_in});
    } else {
        kind = "authorization_code";
        let methods = str_list(meta, "code_challenge_methods_supported").unwrap_or_default();
        if !methods.contains(&"S256") {
            return Err(Error::Transport(
                "the authorization server does not support PKCE with S256 (code_challenge_methods_supported), which MCP requires; refusing to authorize".into(),
            ));
        }
        let authorize = found.endpoint("authorization_endpoint").ok_or_else(|| {
            Error::Transport("the authorization server has no authorization_endpoint".into())
        })?;
        let Pkce {
            verifier,
            challenge,
            state: csrf,
        } = Pkce::new(random::os)?;
        let redirect = redirect_uri.clone().unwrap_or_default();
        let mut url = url::Url::parse(&authorize).map_err(|e| {
            Error::Transport(format!("invalid authorization_endpoint '{authorize}': {e}"))
        })?;
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("response_type", "code")
                .append_pair("client_id", &client_id)
                .append_pair("redirect_uri", &redirect)
                .append_pair("code_challenge", &challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", &csrf)
                .append_pair("resource", &resource);
            if let Some(s) = &scope {
                q.append_pair("scope", s);
            }
            if let Some(a) = &o.client.audience {
                q.append_pair("audience", a);
            }
        }
        flow.authorize_url = Some(url.to_string());
        flow.redirect_uri = redirect_uri;
        flow.code_verifier = Some(verifier);
        flow.csrf_state = Some(csrf);
        flow.iss_supported = meta
            .get("authorization_response_iss_parameter_supported")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        action = json!({"url": url.to_string(), "redirect_uri": flow.redirect_uri});
    }
    let state = AuthState {
        version: STATE_VERSION,
        endpoint: o.endpoint.clone(),
        flow: kind.into(),
        state: flow,
    };
    save_state(&o.state_file, &state)?;
    if !o.wait {
        return Ok(json!({
            "status": "pending",
            "flow": kind,
            "state_file": o.state_file.display().to_string(),
            "action": action,
        }));
    }
    drop(_lock);
    complete(
        &o.state_file,
        &o.key_ref,
        o.overwrite,
        None,
        o.timeout,
        o.open_command.as_deref(),
        true,
    )
    .await
}

/// Dynamic client registration (RFC 7591), once.
async fn register(
    http: &Http,
    found: &discovery::Discovered,
    client: &ClientConfig,
    redirect_uri: Option<&str>,
    device: bool,
) -> Result<(String, Option<String>, Option<String>)> {
    let Some(endpoint) = found.endpoint("registration_endpoint") else {
        return Err(Error::Usage(
            "no client id was given and the authorization server offers no dynamic registration: pass --client-id (or -c CLIENT_FILE)".into(),
        ));
    };
    let mut grants = vec!["authorization_code", "refresh_token"];
    if device {
        grants.push(DEVICE_GRANT);
    }
    let mut body = json!({
        "client_name": client.name.clone().unwrap_or_else(|| "mcat".into()),
        "grant_types": grants,
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    if let Some(r) = redirect_uri {
        body["redirect_uris"] = json!([r]);
    }
    if let Some(s) = client.scope.as_ref().or(found.scope.as_ref()) {
        body["scope"] = json!(s);
    }
    let (status, v) = http.post_json(&endpoint, &body).await?;
    if !(200..300).contains(&status) {
        return Err(oauth_error("client registration", status, &v));
    }
    let id = v
        .get("client_id")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::Transport("client registration returned no client_id".into()))?;
    let secret = v
        .get("client_secret")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let auth = v
        .get("token_endpoint_auth_method")
        .and_then(Value::as_str)
        .map(str::to_owned);
    log::log(Domain::Auth, Level::Info, || {
        format!("registered client {id}")
    });
    Ok((id.to_owned(), secret, auth))
}

/// The strings of the array `key` of a metadata document; `None` when it has none.
pub(crate) fn str_list<'a>(v: &'a Value, key: &str) -> Option<Vec<&'a str>> {
    v.get(key)?
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
}

/// Fails when the authorization server says it takes no `private_key_jwt`, or no assertion
/// signed with `alg`: better a clear refusal now than an opaque `invalid_client` later.
fn check_jwt_support(meta: &Value, alg: &str) -> Result<()> {
    if let Some(methods) = str_list(meta, "token_endpoint_auth_methods_supported")
        && !methods.contains(&"private_key_jwt")
    {
        return Err(Error::Usage(format!(
            "the authorization server does not accept private_key_jwt (it accepts {}): use --client-secret",
            methods.join(", ")
        )));
    }
    if let Some(algs) = str_list(meta, "token_endpoint_auth_signing_alg_values_supported")
        && !algs.contains(&alg)
    {
        return Err(Error::Usage(format!(
            "the authorization server does not accept {alg} assertions (it accepts {}): use a key of another type",
            algs.join(", ")
        )));
    }
    Ok(())
}

/// How a client with (or without) a secret authenticates at the token endpoint.
fn pick_auth(meta: &Value, has_secret: bool) -> String {
    if !has_secret {
        return "none".into();
    }
    let methods = str_list(meta, "token_endpoint_auth_methods_supported").unwrap_or_default();
    if methods.is_empty() || methods.contains(&"client_secret_basic") {
        "client_secret_basic".into()
    } else {
        "client_secret_post".into()
    }
}

fn oauth_error(what: &str, status: u16, v: &Value) -> Error {
    let code = v
        .get("error")
        .and_then(Value::as_str)
        .unwrap_or("no error code");
    let desc = v
        .get("error_description")
        .and_then(Value::as_str)
        .map(|d| format!(": {d}"))
        .unwrap_or_default();
    Error::Transport(format!(
        "{what} refused the request (HTTP {status}, {code}{desc})"
    ))
}

/// A token request with the client's authentication.
async fn token_request(
    http: &Http,
    flow: &Flow,
    fields: &mut Vec<(&str, String)>,
) -> Result<(u16, Value)> {
    let mut basic = None;
    match flow.token_auth.as_str() {
        "client_secret_basic" => {
            basic = flow
                .client_secret
                .as_deref()
                .map(|s| (flow.client_id.as_str(), s));
        }
        "client_secret_post" => {
            fields.push(("client_id", flow.client_id.clone()));
            if let Some(s) = &flow.client_secret {
                fields.push(("client_secret", s.clone()));
            }
        }
        "private_key_jwt" => {
            let path = flow.client_key.as_deref().unwrap_or_default();
            let key = assertion::ClientKey::load(Path::new(path))?;
            // The audience is the authorization server's issuer (RFC 7523bis); without
            // metadata naming one, the token endpoint (RFC 7523).
            let audience = flow.issuer.as_deref().unwrap_or(&flow.token_endpoint);
            let jwt = key.assertion(
                &flow.client_id,
                audience,
                now_ms() / 1000,
                &random::hex(16, "an assertion id")?,
            )?;
            fields.push(("client_id", flow.client_id.clone()));
            fields.push((
                "client_assertion_type",
                assertion::ASSERTION_TYPE.to_owned(),
            ));
            fields.push(("client_assertion", jwt));
        }
        _ => fields.push(("client_id", flow.client_id.clone())),
    }
    if let Some(a) = &flow.audience {
        fields.push(("audience", a.clone()));
    }
    let pairs: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    http.post_form(&flow.token_endpoint, &pairs, basic).await
}

/// The token to store: the server's answer, an absolute expiry, and what a refresh needs.
fn stored(v: &Value, flow: &Flow, previous_refresh: Option<&str>) -> Result<Token> {
    let Value::Object(m) = v else {
        return Err(Error::Transport(
            "the token endpoint did not answer with a JSON object".into(),
        ));
    };
    if !m.get("access_token").is_some_and(Value::is_string) {
        return Err(Error::Transport(
            "the token endpoint sent no access_token".into(),
        ));
    }
    let mut t: Map<String, Value> = m.clone();
    if let Some(secs) = m.get("expires_in").and_then(Value::as_u64) {
        t.insert("expires_at".into(), json!(now_ms() / 1000 + secs));
    }
    // A refresh answer without a refresh token keeps the old one.
    if !t.contains_key("refresh_token")
        && let Some(r) = previous_refresh
    {
        t.insert("refresh_token".into(), json!(r));
    }
    t.insert("token_endpoint".into(), json!(flow.token_endpoint));
    t.insert("client_id".into(), json!(flow.client_id));
    if let Some(s) = &flow.client_secret {
        t.insert("client_secret".into(), json!(s));
    }
    if let Some(k) = &flow.client_key {
        t.insert("client_key".into(), json!(k));
    }
    if let Some(a) = &flow.audience {
        t.insert("audience".into(), json!(a));
    }
    t.insert("token_auth".into(), json!(flow.token_auth));
    t.insert("resource".into(), json!(flow.resource));
    if let Some(i) = &flow.issuer {
        t.insert("issuer".into(), json!(i));
    }
    Ok(t)
}

/// `auth continue` (and the second half of `start --wait`).
pub async fn complete(
    state_file: &Path,
    key_ref: &KeyRef,
    overwrite: bool,
    redirect_url: Option<&str>,
    timeout: Duration,
    open_command: Option<&str>,
    from_start: bool,
) -> Result<Value> {
    let _lock = files::lock(state_file)?;
    let mut st = load_state(state_file)?;
    if st.state.status == "complete" {
        return Err(Error::Missing(format!(
            "the flow of {} is already complete; begin a new one with mcat auth start",
            state_file.display()
        )));
    }
    // The destination is checked before the grant is redeemed: a code or device code works
    // once, and a token that cannot be stored would be lost with it.
    writable(key_ref, overwrite)?;
    let http = Http::new();
    let answer = match st.flow.as_str() {
        "device_code" => {
            if from_start && let Some(uri) = &st.state.verification_uri {
                tell_user(uri, st.state.user_code.as_deref(), open_command);
            }
            poll_device(&http, &st.state).await?
        }
        "authorization_code" => {
            let callback = match redirect_url {
                Some(u) => u.to_owned(),
                None => {
                    wait_for_redirect(
                        &st.state,
                        timeout,
                        if from_start { open_command } else { None },
                        from_start,
                    )
                    .await?
                }
            };
            exchange_code(&http, &st.state, &callback).await?
        }
        other => {
            return Err(Error::corrupt(
                state_file,
                "auth state file",
                format!("unknown flow '{other}'"),
            ));
        }
    };
    let token = stored(&answer, &st.state, None)?;
    key_ref.write(&token, overwrite)?;
    // What is left of the flow is no longer a secret worth keeping.
    st.state.status = "complete".into();
    st.state.device_code = None;
    st.state.code_verifier = None;
    st.state.csrf_state = None;
    // The token file keeps the client secret for refreshes; the state file need not.
    st.state.client_secret = None;
    save_state(state_file, &st)?;
    Ok(json!({"status": "complete", "stored": key_ref.canonical()}))
}

/// Tells a human what to do (stderr) and opens the URL when asked to or on a terminal.
fn tell_user(url: &str, code: Option<&str>, open_command: Option<&str>) {
    use std::io::Write;
    let mut err = std::io::stderr();
    let _ = match code {
        Some(c) if !c.is_empty() => writeln!(err, "Open {url} and enter the code {c}"),
        _ => writeln!(err, "Open {url} to authorize mcat"),
    };
    open(url, open_command);
}

/// Runs `--open-command` / `MCAT_BROWSER` with the URL, else the platform opener on a
/// terminal.
fn open(url: &str, open_command: Option<&str>) {
    use std::io::IsTerminal;
    let configured = open_command
        .map(str::to_owned)
        .or_else(|| std::env::var("MCAT_BROWSER").ok())
        .filter(|c| !c.trim().is_empty());
    let mut cmd = match configured {
        Some(c) => {
            let mut cmd = std::process::Command::new("sh");
            cmd.arg("-c").arg(format!("{c} \"$1\"")).arg("sh").arg(url);
            cmd
        }
        None if std::io::stderr().is_terminal() => {
            let opener = if cfg!(target_os = "macos") {
                "open"
            } else {
                "xdg-open"
            };
            let mut cmd = std::process::Command::new(opener);
            cmd.arg(url);
            cmd
        }
        None => return,
    };
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    if let Ok(child) = cmd.spawn() {
        // Reap it in the background; the flow does not wait for the browser.
        std::thread::spawn(move || {
            let mut child = child;
            let _ = child.wait();
        });
    }
}

fn device_expired() -> Error {
    Error::Transport(
        "the device code expired before it was approved: run mcat auth start again".into(),
    )
}

async fn poll_device(http: &Http, flow: &Flow) -> Result<Value> {
    let device_code = flow
        .device_code
        .clone()
        .ok_or_else(|| Error::Transport("the auth state has no device code".into()))?;
    let mut interval = flow.interval_s.max(1);
    loop {
        if now_ms() >= flow.expires_at_ms {
            return Err(device_expired());
        }
        let mut fields = vec![
            ("grant_type", DEVICE_GRANT.to_owned()),
            ("device_code", device_code.clone()),
            ("resource", flow.resource.clone()),
        ];
        let (status, v) = token_request(http, flow, &mut fields).await?;
        if status == 200 {
            return Ok(v);
        }
        match v.get("error").and_then(Value::as_str) {
            Some("authorization_pending") => {}
            Some("slow_down") => interval += 5,
            Some("expired_token") => return Err(device_expired()),
            Some("access_denied") => {
                return Err(Error::Transport("the user denied the authorization".into()));
            }
            _ => return Err(oauth_error("the token endpoint", status, &v)),
        }
        tokio::time::sleep(Duration::from_secs(interval)).await;
    }
}

/// Listens on the loopback redirect until the browser comes back (or the time is up).
async fn wait_for_redirect(
    flow: &Flow,
    timeout: Duration,
    open_command: Option<&str>,
    tell: bool,
) -> Result<String> {
    let redirect = flow
        .redirect_uri
        .clone()
        .ok_or_else(|| Error::Transport("the auth state has no redirect URI".into()))?;
    let u = url::Url::parse(&redirect)
        .map_err(|e| Error::Transport(format!("bad redirect URI: {e}")))?;
    let port = u.port().unwrap_or(80);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|e| {
            Error::Transport(format!("cannot listen for the redirect on {redirect}: {e}"))
        })?;
    if tell && let Some(url) = &flow.authorize_url {
        tell_user(url, None, open_command);
    }
    let wait = async {
        loop {
            let (mut stream, _) = listener.accept().await?;
            let mut buf = vec![0u8; 16 * 1024];
            let n = stream.read(&mut buf).await?;
            let head = String::from_utf8_lossy(&buf[..n]).into_owned();
            let target = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
            if !target.contains("code=") && !target.contains("error=") {
                let _ = stream
                    .write_all(
                        b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    )
                    .await;
                continue;
            }
            let body = "mcat has the authorization; you can close this window.";
            let reply = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(reply.as_bytes()).await;
            return Ok::<String, std::io::Error>(format!("http://127.0.0.1:{port}{target}"));
        }
    };
    match tokio::time::timeout(timeout, wait).await {
        Ok(Ok(url)) => Ok(url),
        Ok(Err(e)) => Err(Error::Transport(format!(
            "the redirect listener failed: {e}"
        ))),
        Err(_) => Err(Error::Transport(format!(
            "no redirect reached {redirect} within {} s: open the authorization URL, or pass the redirect URL with --redirect-url",
            timeout.as_secs()
        ))),
    }
}

async fn exchange_code(http: &Http, flow: &Flow, callback: &str) -> Result<Value> {
    let u = url::Url::parse(callback)
        .map_err(|e| Error::Usage(format!("invalid redirect URL '{callback}': {e}")))?;
    let q: std::collections::HashMap<String, String> = u.query_pairs().into_owned().collect();
    if let Some(e) = q.get("error") {
        return Err(Error::Transport(format!(
            "the authorization server refused: {e}{}",
            q.get("error_description")
                .map(|d| format!(": {d}"))
                .unwrap_or_default()
        )));
    }
    if q.get("state") != flow.csrf_state.as_ref() {
        return Err(Error::Transport(
            "the redirect's state does not match this flow's: refusing it (a forged or stale redirect)".into(),
        ));
    }
    if let Some(iss) = q.get("iss") {
        if Some(iss) != flow.issuer.as_ref() {
            return Err(Error::Transport(format!(
                "the redirect comes from issuer '{iss}', not from this flow's authorization server: refusing it"
            )));
        }
    } else if flow.iss_supported {
        return Err(Error::Transport(
            "the authorization server promises an iss parameter and the redirect has none: refusing it".into(),
        ));
    }
    let code = q
        .get("code")
        .ok_or_else(|| Error::Usage("the redirect URL has no code".into()))?;
    let mut fields = vec![
        ("grant_type", "authorization_code".to_owned()),
        ("code", code.clone()),
        (
            "redirect_uri",
            flow.redirect_uri.clone().unwrap_or_default(),
        ),
        (
            "code_verifier",
            flow.code_verifier.clone().unwrap_or_default(),
        ),
        ("resource", flow.resource.clone()),
    ];
    let (status, v) = token_request(http, flow, &mut fields).await?;
    if status != 200 {
        return Err(oauth_error("the token endpoint", status, &v));
    }
    Ok(v)
}

/// The access token at `key_ref`, refreshed first when it expires within a minute (or
/// `force`d, after the server refused it) and a refresh token is stored with it.
pub async fn fresh_token(key_ref: &KeyRef, force: bool) -> Result<Option<String>> {
    let Some(token) = key_ref.read()? else {
        return Ok(None);
    };
    let access = token
        .get("access_token")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let expiring = token
        .get("expires_at")
        .and_then(Value::as_u64)
        .is_some_and(|at| now_ms() / 1000 + REFRESH_MARGIN_S >= at);
    let refresh = token.get("refresh_token").and_then(Value::as_str);
    let endpoint = token.get("token_endpoint").and_then(Value::as_str);
    let (Some(refresh), Some(endpoint)) = (refresh, endpoint) else {
        return Ok(access);
    };
    if !(expiring || force) || matches!(key_ref, KeyRef::Env(_)) {
        return Ok(access);
    }
    let s = |k: &str| token.get(k).and_then(Value::as_str).map(str::to_owned);
    let flow = Flow {
        token_endpoint: endpoint.to_owned(),
        client_id: s("client_id").unwrap_or_default(),
        client_secret: s("client_secret"),
        client_key: s("client_key"),
        audience: s("audience"),
        token_auth: s("token_auth").unwrap_or_else(|| "none".into()),
        resource: s("resource").unwrap_or_default(),
        issuer: s("issuer"),
        scope: s("scope"),
        ..Flow::default()
    };
    let mut fields = vec![
        ("grant_type", "refresh_token".to_owned()),
        ("refresh_token", refresh.to_owned()),
    ];
    if !flow.resource.is_empty() {
        fields.push(("resource", flow.resource.clone()));
    }
    let http = Http::new();
    let (status, v) = token_request(&http, &flow, &mut fields).await?;
    if status != 200 {
        return Err(Error::Transport(format!(
            "{}; authorize again with mcat auth start",
            oauth_error("refreshing the token", status, &v)
        )));
    }
    let t = stored(&v, &flow, Some(refresh))?;
    key_ref.write(&t, true)?;
    log::log(Domain::Auth, Level::Info, || {
        format!("refreshed the token at {}", key_ref.canonical())
    });
    Ok(t.get("access_token")
        .and_then(Value::as_str)
        .map(str::to_owned))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_needs_a_working_random_source() {
        let failing: random::Source = |_| Err("no entropy".into());
        let e = Pkce::new(failing).unwrap_err();
        assert!(matches!(e, Error::Random(_)), "{e:?}");
        assert!(e.to_string().contains("a PKCE verifier"), "{e}");

        let a = Pkce::new(random::os).unwrap();
        let b = Pkce::new(random::os).unwrap();
        assert_eq!(a.verifier.len(), 43, "32 bytes, base64url");
        assert_eq!(a.state.len(), 22, "16 bytes, base64url");
        assert_eq!(
            a.challenge,
            b64url(&sha2::Sha256::digest(a.verifier.as_bytes()))
        );
        assert_ne!(a.verifier, b.verifier);
        assert_ne!(a.state, b.state);
    }
}
