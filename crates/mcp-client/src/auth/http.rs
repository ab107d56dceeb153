//! The few HTTP calls OAuth needs (metadata GETs, form POSTs to the token and device
//! endpoints, the registration POST), logged in the `auth` domain without secrets.

use std::time::Instant;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::log::{self, Domain, Level};

/// An HTTP client for authorization servers.
#[derive(Clone)]
pub struct Http {
    client: reqwest::Client,
}

/// Form fields whose values never reach a log.
const SECRET_FIELDS: [&str; 7] = [
    "code",
    "code_verifier",
    "client_secret",
    "client_assertion",
    "refresh_token",
    "device_code",
    "access_token",
];

impl Http {
    pub fn new() -> Http {
        Http {
            client: reqwest::Client::new(),
        }
    }

    fn failed(url: &str, e: reqwest::Error) -> Error {
        Error::Transport(format!("cannot reach {}: {e}", strip_query(url)))
    }

    /// POSTs `body` without a token; the `WWW-Authenticate` header of a `401`, `None` when
    /// the server does not ask for authorization.
    pub async fn probe(&self, url: &str, body: &Value) -> Result<Option<String>> {
        let r = self
            .client
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(serde_json::to_vec(body).unwrap_or_default())
            .send()
            .await
            .map_err(|e| Self::failed(url, e))?;
        log::log(Domain::Auth, Level::Info, || {
            format!("POST {url} -> {}", r.status())
        });
        if r.status() == reqwest::StatusCode::UNAUTHORIZED {
            let h = r
                .headers()
                .get("www-authenticate")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            return Ok(Some(h));
        }
        Ok(None)
    }

    /// GETs a JSON document; `None` when there is none at `url` (any 4xx).
    pub async fn get_json(&self, url: &str) -> Result<Option<Value>> {
        let started = Instant::now();
        let r = self
            .client
            .get(url)
            .header("accept", "application/json")
            .send()
            .await
            .map_err(|e| Self::failed(url, e))?;
        let status = r.status();
        log::log(Domain::Auth, Level::Info, || {
            format!(
                "GET {url} -> {status} in {} ms",
                started.elapsed().as_millis()
            )
        });
        if !status.is_success() {
            return Ok(None);
        }
        let bytes = r.bytes().await.map_err(|e| Self::failed(url, e))?;
        Ok(serde_json::from_slice(&bytes).ok())
    }

    /// POSTs a form; the status and the JSON answer (an empty object when not JSON).
    pub async fn post_form(
        &self,
        url: &str,
        fields: &[(&str, &str)],
        basic: Option<(&str, &str)>,
    ) -> Result<(u16, Value)> {
        let mut form = url::form_urlencoded::Serializer::new(String::new());
        for (k, v) in fields {
            form.append_pair(k, v);
        }
        let mut req = self
            .client
            .post(url)
            .header("content-type", "application/x-www-form-urlencoded")
            .header("accept", "application/json")
            .body(form.finish());
        if let Some((id, secret)) = basic {
            // RFC 6749 section 2.3.1: both parts form-encoded before the Basic scheme.
            let enc =
                |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            req = req.basic_auth(enc(id), Some(enc(secret)));
        }
        self.send(url, req, || {
            fields
                .iter()
                .map(|(k, v)| {
                    if SECRET_FIELDS.contains(k) {
                        format!("{k}=[redacted]")
                    } else {
                        format!("{k}={v}")
                    }
                })
                .collect::<Vec<_>>()
                .join("&")
        })
        .await
    }

    /// POSTs JSON (dynamic client registration).
    pub async fn post_json(&self, url: &str, body: &Value) -> Result<(u16, Value)> {
        let req = self
            .client
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .body(serde_json::to_vec(body).unwrap_or_default());
        self.send(url, req, || "client registration".to_owned())
            .await
    }

    async fn send(
        &self,
        url: &str,
        req: reqwest::RequestBuilder,
        shown: impl FnOnce() -> String,
    ) -> Result<(u16, Value)> {
        let started = Instant::now();
        let r = req.send().await.map_err(|e| Self::failed(url, e))?;
        let status = r.status().as_u16();
        log::log(Domain::Auth, Level::Info, || {
            format!(
                "POST {url} ({}) -> {status} in {} ms",
                shown(),
                started.elapsed().as_millis()
            )
        });
        let bytes = r.bytes().await.map_err(|e| Self::failed(url, e))?;
        let value = serde_json::from_slice(&bytes).unwrap_or(Value::Object(Default::default()));
        Ok((status, value))
    }
}

fn strip_query(url: &str) -> &str {
    url.split('?').next().unwrap_or(url)
}
