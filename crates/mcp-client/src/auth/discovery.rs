//! Finding who issues tokens for an MCP server, as the MCP authorization spec orders it:
//! the server's `401` challenge (`resource_metadata`, `scope`), its Protected Resource
//! Metadata (RFC 9728: the challenge's URL, then the well-known paths with and without the
//! server's path), then the authorization server's metadata (RFC 8414 and OpenID discovery,
//! path inserted and appended). A server from before Protected Resource Metadata is its own
//! authorization server, and one without metadata at all gets the default endpoints.

use serde_json::{Value, json};

use super::http::Http;
use crate::error::{Error, Result};

/// What discovery found.
#[derive(Debug, Clone)]
pub struct Discovered {
    /// The resource the token is for (RFC 8707).
    pub resource: String,
    /// The scope to ask for: the challenge's, else everything the server supports.
    pub scope: Option<String>,
    pub issuer: Option<String>,
    pub metadata: Value,
}

impl Discovered {
    pub fn endpoint(&self, name: &str) -> Option<String> {
        self.metadata
            .get(name)
            .and_then(Value::as_str)
            .map(str::to_owned)
    }
}

/// The parameters of a `WWW-Authenticate: Bearer k="v", ...` header.
pub fn challenge_param(header: &str, key: &str) -> Option<String> {
    let rest = header.trim().strip_prefix("Bearer").unwrap_or(header);
    let mut s = rest;
    loop {
        s = s.trim_start_matches([' ', ',']);
        let (k, after) = s.split_once('=')?;
        let after = after.trim_start();
        let (v, tail) = if let Some(q) = after.strip_prefix('"') {
            let end = q.find('"')?;
            (&q[..end], &q[end + 1..])
        } else {
            let end = after.find(',').unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        if k.trim().eq_ignore_ascii_case(key) {
            return Some(v.to_owned());
        }
        s = tail;
    }
}

/// `scheme://host[:port]` and the path of `url`.
fn split(url: &str) -> Result<(String, String)> {
    let u = url::Url::parse(url).map_err(|e| Error::Usage(format!("invalid URL '{url}': {e}")))?;
    let origin = u.origin().ascii_serialization();
    let path = u.path().trim_end_matches('/').to_owned();
    Ok((origin, path))
}

/// Runs discovery for the MCP server at `endpoint`.
pub async fn discover(http: &Http, endpoint: &str) -> Result<Discovered> {
    // The challenge of an unauthenticated request.
    let probe = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": crate::http::PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "mcat", "version": env!("CARGO_PKG_VERSION")},
    }});
    let mut challenge = http.probe(endpoint, &probe).await?;
    // Some servers let `initialize` through and guard everything after it: ask with a ping.
    if challenge.is_none() {
        let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
        challenge = http.probe(endpoint, &ping).await?;
    }
    let hinted_metadata = challenge
        .as_deref()
        .and_then(|h| challenge_param(h, "resource_metadata"));
    let challenge_scope = challenge
        .as_deref()
        .and_then(|h| challenge_param(h, "scope"));

    let (origin, path) = split(endpoint)?;
    let mut prm_urls = Vec::new();
    if let Some(u) = hinted_metadata {
        prm_urls.push(u);
    }
    if !path.is_empty() {
        prm_urls.push(format!(
            "{origin}/.well-known/oauth-protected-resource{path}"
        ));
    }
    prm_urls.push(format!("{origin}/.well-known/oauth-protected-resource"));
    let prm = first_json(http, &prm_urls).await?;

    let (issuer, resource, supported_scopes) = match &prm {
        Some(p) => {
            let issuer = p
                .get("authorization_servers")
                .and_then(Value::as_array)
                .and_then(|a| a.first())
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| {
                    Error::Transport(format!(
                        "the protected resource metadata of {endpoint} names no authorization server"
                    ))
                })?;
            let resource = p
                .get("resource")
                .and_then(Value::as_str)
                .unwrap_or(endpoint)
                .to_owned();
            if !same_resource(&resource, endpoint) {
                return Err(Error::Transport(format!(
                    "the protected resource metadata is for '{resource}', not for {endpoint}: refusing to get a token for another resource"
                )));
            }
            let scopes = super::str_list(p, "scopes_supported")
                .map(|a| a.join(" "))
                .filter(|s| !s.is_empty());
            (issuer, resource, scopes)
        }
        // Before Protected Resource Metadata, the server's origin was the authorization server.
        None => (origin.clone(), endpoint.to_owned(), None),
    };

    let (as_origin, as_path) = split(&issuer)?;
    let mut as_urls = Vec::new();
    if as_path.is_empty() {
        as_urls.push(format!(
            "{as_origin}/.well-known/oauth-authorization-server"
        ));
        as_urls.push(format!("{as_origin}/.well-known/openid-configuration"));
    } else {
        as_urls.push(format!(
            "{as_origin}/.well-known/oauth-authorization-server{as_path}"
        ));
        as_urls.push(format!(
            "{as_origin}/.well-known/openid-configuration{as_path}"
        ));
        as_urls.push(format!(
            "{as_origin}{as_path}/.well-known/openid-configuration"
        ));
    }
    let metadata = match first_json(http, &as_urls).await? {
        Some(m) => m,
        // No metadata: the endpoints a 2025-03-26 server was assumed to have.
        None if prm.is_none() => json!({
            "issuer": as_origin,
            "authorization_endpoint": format!("{as_origin}/authorize"),
            "token_endpoint": format!("{as_origin}/token"),
            "registration_endpoint": format!("{as_origin}/register"),
            "code_challenge_methods_supported": ["S256"],
        }),
        None => {
            return Err(Error::Transport(format!(
                "no authorization server metadata at {} (tried {})",
                issuer,
                as_urls.join(", ")
            )));
        }
    };
    Ok(Discovered {
        resource,
        scope: challenge_scope.or(supported_scopes),
        issuer: metadata
            .get("issuer")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or(Some(issuer)),
        metadata,
    })
}

/// Whether the metadata's resource covers the endpoint: the same origin, and a path that is
/// the endpoint's or a prefix of it.
fn same_resource(resource: &str, endpoint: &str) -> bool {
    let (Ok((ro, rp)), Ok((eo, ep))) = (split(resource), split(endpoint)) else {
        return false;
    };
    ro == eo && (ep == rp || ep.starts_with(&format!("{rp}/")) || rp.is_empty())
}

/// The first of `urls` that answers with JSON (well-known locations, tried in order).
async fn first_json(http: &Http, urls: &[String]) -> Result<Option<Value>> {
    for u in urls {
        if let Some(v) = http.get_json(u).await? {
            return Ok(Some(v));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenge_params() {
        let h = r#"Bearer error="invalid_token", resource_metadata="https://a.example/.well-known/oauth-protected-resource/mcp", scope="read write""#;
        assert_eq!(
            challenge_param(h, "resource_metadata").as_deref(),
            Some("https://a.example/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(challenge_param(h, "scope").as_deref(), Some("read write"));
        assert_eq!(
            challenge_param("Bearer realm=x", "realm").as_deref(),
            Some("x")
        );
        assert_eq!(challenge_param(h, "missing"), None);
    }

    #[test]
    fn resources() {
        assert!(same_resource(
            "https://a.example/mcp",
            "https://a.example/mcp"
        ));
        assert!(same_resource("https://a.example", "https://a.example/mcp"));
        assert!(!same_resource(
            "https://b.example/mcp",
            "https://a.example/mcp"
        ));
        assert!(!same_resource(
            "https://a.example/other",
            "https://a.example/mcp"
        ));
    }
}
