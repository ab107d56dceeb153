//! The session file `init` writes and every later command reads: which endpoint, which
//! session, which protocol revision and what the server advertised.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::files;
use crate::http::{Elicit, Handshake};

/// Version of the session file's shape.
pub const SESSION_VERSION: u32 = 1;

/// `SESS_INFO_FILE`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub version: u32,
    /// `http` or `unix`.
    pub transport: String,
    pub endpoint: String,
    /// Where the token is (HTTP only, when one is used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_ref: Option<String>,
    /// `null` for a stateless server.
    pub session_id: Option<String>,
    /// `stateful` or `stateless`. Optional, like the revision: the seed's minimal session
    /// file (version, transport, endpoint, key_ref, session_id) is enough to proceed.
    #[serde(default)]
    pub session_mode: String,
    /// Empty when unknown: no `MCP-Protocol-Version` header is sent then.
    #[serde(default)]
    pub protocol_version: String,
    #[serde(default)]
    pub server_capabilities: Value,
    #[serde(default)]
    pub server_info: Value,
    /// The proxy's control file, when an mcat proxy serves the unix:// endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_control_file: Option<String>,
    /// How elicitation is answered, when `init --elicit` declared it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicit: Option<Elicit>,
}

impl Session {
    /// Reads a session file; a missing or damaged one is a clear error.
    pub fn load(path: &Path) -> Result<Session> {
        let bytes = files::read_optional(path)?.ok_or_else(|| {
            Error::Missing(format!(
                "session file {} does not exist: create it with mcat init ENDPOINT -o {}",
                path.display(),
                path.display()
            ))
        })?;
        let s: Session = serde_json::from_slice(&bytes)
            .map_err(|e| Error::corrupt(path, "session file (run mcat init again)", e))?;
        if s.version != SESSION_VERSION {
            return Err(Error::corrupt(
                path,
                "session file",
                format!("version {} is not {SESSION_VERSION}", s.version),
            ));
        }
        Ok(s)
    }

    /// Takes what a handshake says: the session, its mode, the revision, the server.
    pub fn apply(&mut self, hs: &Handshake) {
        let r = &hs.result;
        self.session_id = hs.session_id.clone();
        self.session_mode = if hs.session_id.is_some() {
            "stateful"
        } else {
            "stateless"
        }
        .into();
        self.protocol_version = r["protocolVersion"].as_str().unwrap_or_default().into();
        self.server_capabilities = r.get("capabilities").cloned().unwrap_or(json!({}));
        self.server_info = r.get("serverInfo").cloned().unwrap_or(Value::Null);
    }

    /// Writes the session file atomically, under its lock.
    pub fn save(&self, path: &Path) -> Result<()> {
        let _lock = files::lock(path)?;
        files::write_json(path, self, true)
    }

    /// Fails unless the server advertised `capability` (`resources`, `prompts`, `tools`).
    /// A session file without the handshake's capabilities lets the server decide.
    pub fn require(&self, capability: &'static str) -> Result<()> {
        match &self.server_capabilities {
            Value::Object(m) if !m.contains_key(capability) => Err(Error::Capability(capability)),
            _ => Ok(()),
        }
    }
}
