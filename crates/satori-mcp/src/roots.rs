//! The client's roots (MCP `roots` capability): when the client declares it, the server asks
//! `roots/list` after initialization and again on `notifications/roots/list_changed`, and
//! indexing, searching and reading stay inside those directories.
//!
//! A client without the capability keeps the server's own confinement only. A client that
//! declares it but lists no roots sets no boundary (several clients declare the capability
//! before a workspace is open). Until the first answer arrives, a tool call waits for it; a
//! client that never answers leaves calls refused rather than unconfined.

use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use rmcp::RoleServer;
use rmcp::service::Peer;

/// How long a tool call waits for the client's first `roots/list` answer.
const FIRST_ANSWER_WAIT: Duration = Duration::from_secs(10);

/// What is known of the client's roots.
#[derive(Debug, Clone, PartialEq)]
enum Known {
    /// The client did not declare the capability.
    Undeclared,
    /// Declared; `roots/list` asked, no answer yet.
    Pending,
    /// The directories the client listed (canonical where they exist).
    Roots(Vec<PathBuf>),
    /// The client declared the capability but `roots/list` failed.
    Failed(String),
}

/// Why a path is refused by the client's roots.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RootsRefusal {
    /// The path is outside every root (the roots are listed).
    Outside(Vec<PathBuf>),
    /// The roots could not be learnt from the client.
    Unknown(String),
}

impl RootsRefusal {
    /// A sentence naming the boundary, for refusals.
    pub fn describe(&self, shown: &str) -> String {
        match self {
            RootsRefusal::Outside(roots) => {
                let listed: Vec<String> = roots
                    .iter()
                    .map(|r| format!("'{}'", crate::to_proto::display(r)))
                    .collect();
                format!(
                    "'{shown}' is outside the roots the client allows ({})",
                    listed.join(", ")
                )
            }
            RootsRefusal::Unknown(why) => format!(
                "the client declared roots but they could not be read ({why}), so nothing is served"
            ),
        }
    }
}

/// The client's roots, shared by the notification handlers and the tool calls.
pub(crate) struct ClientRoots {
    known: Mutex<Known>,
    changed: Condvar,
}

impl Default for ClientRoots {
    fn default() -> Self {
        ClientRoots {
            known: Mutex::new(Known::Undeclared),
            changed: Condvar::new(),
        }
    }
}

impl ClientRoots {
    /// Notes that the roots are being asked for: calls wait for the answer from now on.
    /// Returns false when they are already known or asked (no second request is needed).
    pub fn expect(&self) -> bool {
        let mut k = self.known.lock().unwrap_or_else(|p| p.into_inner());
        if *k == Known::Undeclared {
            *k = Known::Pending;
            true
        } else {
            false
        }
    }

    /// Records the client's answer to `roots/list`.
    pub fn set(&self, answer: Result<Vec<PathBuf>, String>) {
        let mut k = self.known.lock().unwrap_or_else(|p| p.into_inner());
        *k = match answer {
            Ok(roots) => Known::Roots(roots),
            Err(e) => Known::Failed(e),
        };
        self.changed.notify_all();
    }

    /// Whether `path` (absolute, canonical) may be served. Blocks while the first answer is
    /// awaited (tool calls run on blocking threads).
    pub fn check(&self, path: &Path) -> Result<(), RootsRefusal> {
        let deadline = Instant::now() + FIRST_ANSWER_WAIT;
        let mut k = self.known.lock().unwrap_or_else(|p| p.into_inner());
        while *k == Known::Pending {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(RootsRefusal::Unknown(
                    "the client did not answer roots/list".into(),
                ));
            }
            k = self
                .changed
                .wait_timeout(k, left)
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0);
        }
        match &*k {
            Known::Undeclared | Known::Pending => Ok(()),
            Known::Roots(roots) if roots.is_empty() => Ok(()),
            Known::Roots(roots) if roots.iter().any(|r| path.starts_with(r)) => Ok(()),
            Known::Roots(roots) => Err(RootsRefusal::Outside(roots.clone())),
            Known::Failed(e) => Err(RootsRefusal::Unknown(e.clone())),
        }
    }
}

/// Whether the client that initialized this session declared the `roots` capability.
#[allow(deprecated)]
pub(crate) fn declared(peer: &Peer<RoleServer>) -> bool {
    peer.peer_info()
        .is_some_and(|info| info.capabilities.roots.is_some())
}

/// Asks the client for its roots and records the answer.
// rmcp marks roots deprecated (SEP-2577); every revision we answer still has them.
#[allow(deprecated)]
pub(crate) async fn refresh(roots: &ClientRoots, peer: &Peer<RoleServer>) {
    let answer = peer.list_roots().await;
    roots.set(
        answer
            .map(|r| {
                r.roots
                    .iter()
                    .filter_map(|root| file_uri_path(&root.uri))
                    .collect()
            })
            .map_err(|e| e.to_string()),
    );
}

/// The directory of a `file://` root URI, canonical when it exists; other schemes name no
/// directory of this machine and are ignored.
fn file_uri_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    // `file://localhost/x` and `file:///x` both name `/x`.
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    let decoded = percent_decode(rest)?;
    // `file:///C:/x` names `C:/x` on Windows.
    let bytes = decoded.as_bytes();
    let path = if bytes.len() > 2 && bytes[0] == b'/' && bytes[2] == b':' {
        decoded[1..].to_owned()
    } else {
        decoded
    };
    let path = PathBuf::from(path);
    if !path.is_absolute() {
        return None;
    }
    Some(path.canonicalize().unwrap_or(path))
}

/// Decodes `%XX` escapes; `None` for a malformed escape or bytes that are not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris() {
        for (uri, expect) in [
            ("file:///srv/app", Some("/srv/app")),
            ("file://localhost/srv/app", Some("/srv/app")),
            ("file:///srv/my%20app", Some("/srv/my app")),
            ("https://example.com/x", None),
            ("file://relative", None),
            ("file:///bad%zz", None),
        ] {
            assert_eq!(file_uri_path(uri), expect.map(PathBuf::from), "{uri}");
        }
    }

    #[test]
    fn confinement() {
        let roots = ClientRoots::default();
        assert_eq!(roots.check(Path::new("/anywhere")), Ok(()));
        assert!(roots.expect());
        assert!(!roots.expect());
        roots.set(Ok(vec![PathBuf::from("/srv/app")]));
        assert_eq!(roots.check(Path::new("/srv/app/src/main.rs")), Ok(()));
        assert_eq!(roots.check(Path::new("/srv/app")), Ok(()));
        assert_eq!(
            roots.check(Path::new("/srv/application")),
            Err(RootsRefusal::Outside(vec![PathBuf::from("/srv/app")]))
        );
        roots.set(Ok(Vec::new()));
        assert_eq!(roots.check(Path::new("/anywhere")), Ok(()));
        roots.set(Err("boom".into()));
        assert!(matches!(
            roots.check(Path::new("/srv/app")),
            Err(RootsRefusal::Unknown(_))
        ));
    }
}
