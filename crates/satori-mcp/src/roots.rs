//! The client's roots (MCP `roots` capability): when the client declares it, the server asks
//! `roots/list` after initialization and again on `notifications/roots/list_changed`, and
//! indexing, searching and reading stay inside those directories.
//!
//! A client without the capability keeps the server's own confinement only. A client that
//! declares it but lists no roots sets no boundary (several clients declare the capability
//! before a workspace is open). A list whose roots are all unusable (another host, another
//! scheme, a relative path, a bad `%`-escape) confines to nothing: it is a boundary the
//! server cannot draw, never the absence of one. Until the first answer arrives, a tool
//! call waits for it; a client that does not answer in time leaves calls refused rather than
//! unconfined, and is not waited for again until it says its roots changed.

use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use rmcp::RoleServer;
use rmcp::service::Peer;

/// How long tool calls wait for the client's answer to `roots/list`, counted from the
/// request: every call waiting meanwhile shares this one wait.
const ANSWER_WAIT: Duration = Duration::from_secs(10);

/// What is known of the client's roots.
#[derive(Debug, Clone, PartialEq)]
enum Known {
    /// The client did not declare the capability.
    Undeclared,
    /// Declared; `roots/list` asked at this instant, no answer yet.
    Pending(Instant),
    /// The directories the client listed (canonical where they exist).
    Roots(Vec<PathBuf>),
    /// The client listed roots, and none of them names a directory of this machine: each
    /// one with why.
    Unusable(Vec<String>),
    /// The client declared the capability but `roots/list` failed or was not answered.
    Failed(String),
}

/// Why a path is refused by the client's roots.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RootsRefusal {
    /// The path is outside every root (the roots are listed).
    Outside(Vec<PathBuf>),
    /// The client listed roots, but none can be used (each with why).
    Unusable(Vec<String>),
    /// The roots could not be learnt from the client.
    Unknown(String),
}

impl RootsRefusal {
    /// A sentence naming the boundary, for refusals.
    pub fn describe(&self, shown: &str) -> String {
        match self {
            RootsRefusal::Outside(_) => format!(
                "'{shown}' is outside the roots the client allows ({})",
                self.boundary()
            ),
            RootsRefusal::Unusable(_) | RootsRefusal::Unknown(_) => self.boundary(),
        }
    }

    /// The boundary itself, without a path: the roots, or why there are none to serve.
    pub fn boundary(&self) -> String {
        match self {
            RootsRefusal::Outside(roots) => roots
                .iter()
                .map(|r| format!("'{}'", crate::to_proto::display(r)))
                .collect::<Vec<_>>()
                .join(", "),
            RootsRefusal::Unusable(why) => format!(
                "none of the roots the client listed can be used ({}), so nothing is served",
                why.join("; ")
            ),
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
        let mut k = self.lock();
        if *k == Known::Undeclared {
            *k = Known::Pending(Instant::now());
            true
        } else {
            false
        }
    }

    /// Notes that the roots are asked for again (the client said they changed): calls wait
    /// for the new list, once more, instead of serving by the old one.
    pub fn expect_again(&self) {
        *self.lock() = Known::Pending(Instant::now());
    }

    /// Records the client's answer to `roots/list`: the directories it lists and, for each
    /// root that names none, why.
    pub fn set(&self, answer: Result<(Vec<PathBuf>, Vec<String>), String>) {
        let mut k = self.lock();
        *k = match answer {
            Ok((roots, unusable)) if roots.is_empty() && !unusable.is_empty() => {
                Known::Unusable(unusable)
            }
            Ok((roots, _)) => Known::Roots(roots),
            Err(e) => Known::Failed(e),
        };
        self.changed.notify_all();
    }

    /// Whether `path` (absolute, canonical) may be served. Blocks while the answer is
    /// awaited (see [`Self::settled`]).
    pub fn check(&self, path: &Path) -> Result<(), RootsRefusal> {
        judge(&self.settled(), path)
    }

    /// Whether `path` may be named to this client now, without waiting for an answer that
    /// is awaited: for what the process tells sessions on its own (a build that failed),
    /// which must not wait on any one client. Roots not known yet allow nothing.
    pub fn allows_now(&self, path: &Path) -> bool {
        judge(&self.lock(), path).is_ok()
    }

    /// The boundary this session is held to, when it has one: what an answer about no path
    /// in particular (an empty list of codebases) names instead of saying what lies outside.
    pub fn boundary(&self) -> Option<RootsRefusal> {
        match &*self.settled() {
            Known::Undeclared | Known::Pending(_) => None,
            Known::Roots(roots) if roots.is_empty() => None,
            Known::Roots(roots) => Some(RootsRefusal::Outside(roots.clone())),
            Known::Unusable(why) => Some(RootsRefusal::Unusable(why.clone())),
            Known::Failed(e) => Some(RootsRefusal::Unknown(e.clone())),
        }
    }

    /// What is known once any answer awaited has come. Blocks while it is awaited (tool
    /// calls run on blocking threads), at most [`ANSWER_WAIT`] after it was asked for; once
    /// that has passed, the missing answer is remembered as a failure.
    fn settled(&self) -> std::sync::MutexGuard<'_, Known> {
        let mut k = self.lock();
        while let Known::Pending(asked) = *k {
            let left = (asked + ANSWER_WAIT).saturating_duration_since(Instant::now());
            if left.is_zero() {
                *k = Known::Failed(format!(
                    "the client did not answer roots/list within {} s",
                    ANSWER_WAIT.as_secs()
                ));
                break;
            }
            k = self
                .changed
                .wait_timeout(k, left)
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0);
        }
        k
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Known> {
        self.known.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The rule itself: whether `path` is inside what is known of the roots.
fn judge(known: &Known, path: &Path) -> Result<(), RootsRefusal> {
    match known {
        Known::Undeclared => Ok(()),
        Known::Pending(_) => Err(RootsRefusal::Unknown(
            "the client has not answered roots/list yet".to_owned(),
        )),
        Known::Roots(roots) if roots.is_empty() => Ok(()),
        Known::Roots(roots) if roots.iter().any(|r| path.starts_with(r)) => Ok(()),
        Known::Roots(roots) => Err(RootsRefusal::Outside(roots.clone())),
        Known::Unusable(why) => Err(RootsRefusal::Unusable(why.clone())),
        Known::Failed(e) => Err(RootsRefusal::Unknown(e.clone())),
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
                let mut usable = Vec::new();
                let mut unusable = Vec::new();
                for root in &r.roots {
                    match file_uri_path(&root.uri) {
                        Ok(path) => usable.push(path),
                        Err(why) => {
                            let shown: String = root.uri.chars().take(200).collect();
                            unusable.push(format!("'{shown}' {why}"));
                        }
                    }
                }
                (usable, unusable)
            })
            .map_err(|e| e.to_string()),
    );
}

/// The directory of a `file://` root URI, canonical when it exists, or why the URI names
/// no directory of this machine.
fn file_uri_path(uri: &str) -> Result<PathBuf, &'static str> {
    let Some(rest) = uri.strip_prefix("file://") else {
        return Err(if uri.starts_with("file:") {
            "is not an absolute file:// URI"
        } else {
            "is not a file:// URI"
        });
    };
    // `file://localhost/x` and `file:///x` both name `/x`; any other host is not this
    // machine.
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return Err("names another host or a relative path");
    }
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
        return Err("is not an absolute path here");
    }
    Ok(path.canonicalize().unwrap_or(path))
}

/// Decodes `%XX` escapes, or says what is wrong with them.
fn percent_decode(s: &str) -> Result<String, &'static str> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let byte = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or("has a malformed %-escape")?;
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "is not UTF-8 once its %-escapes are decoded")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris() {
        for (uri, expect) in [
            ("file:///srv/app", Ok("/srv/app")),
            ("file://localhost/srv/app", Ok("/srv/app")),
            ("file:///srv/my%20app", Ok("/srv/my app")),
            ("https://example.com/x", Err("is not a file:// URI")),
            ("file:relative/x", Err("is not an absolute file:// URI")),
            (
                "file://relative",
                Err("names another host or a relative path"),
            ),
            (
                "file://otherhost/srv/app",
                Err("names another host or a relative path"),
            ),
            ("file:///bad%zz", Err("has a malformed %-escape")),
            ("file:///bad%4", Err("has a malformed %-escape")),
            (
                "file:///bad%ff",
                Err("is not UTF-8 once its %-escapes are decoded"),
            ),
        ] {
            assert_eq!(file_uri_path(uri), expect.map(PathBuf::from), "{uri}");
        }
    }

    #[test]
    fn confinement() {
        let roots = ClientRoots::default();
        assert_eq!(roots.check(Path::new("/anywhere")), Ok(()));
        assert!(roots.allows_now(Path::new("/anywhere")));
        assert_eq!(roots.boundary(), None);
        assert!(roots.expect());
        assert!(!roots.expect());
        // Asked, not answered: nothing is named to the client meanwhile.
        assert!(!roots.allows_now(Path::new("/anywhere")));
        roots.set(Ok((vec![PathBuf::from("/srv/app")], Vec::new())));
        assert_eq!(
            roots.boundary(),
            Some(RootsRefusal::Outside(vec![PathBuf::from("/srv/app")]))
        );
        assert_eq!(roots.check(Path::new("/srv/app/src/main.rs")), Ok(()));
        assert_eq!(roots.check(Path::new("/srv/app")), Ok(()));
        assert!(roots.allows_now(Path::new("/srv/app")));
        assert!(!roots.allows_now(Path::new("/srv/other")));
        assert_eq!(
            roots.check(Path::new("/srv/application")),
            Err(RootsRefusal::Outside(vec![PathBuf::from("/srv/app")]))
        );
        // Some roots unusable: the usable ones confine.
        roots.set(Ok((
            vec![PathBuf::from("/srv/app")],
            vec!["'x:y' bad".into()],
        )));
        assert_eq!(roots.check(Path::new("/srv/app/a")), Ok(()));
        assert!(roots.check(Path::new("/srv/other")).is_err());
        // Every root unusable: nothing is served.
        roots.set(Ok((Vec::new(), vec!["'x:y' bad".into()])));
        assert_eq!(
            roots.check(Path::new("/anywhere")),
            Err(RootsRefusal::Unusable(vec!["'x:y' bad".into()]))
        );
        assert!(matches!(roots.boundary(), Some(RootsRefusal::Unusable(_))));
        // No roots listed at all: no boundary.
        roots.set(Ok((Vec::new(), Vec::new())));
        assert_eq!(roots.check(Path::new("/anywhere")), Ok(()));
        assert_eq!(roots.boundary(), None);
        roots.set(Err("boom".into()));
        assert!(matches!(
            roots.check(Path::new("/srv/app")),
            Err(RootsRefusal::Unknown(_))
        ));
    }

    #[test]
    fn an_unanswered_request_is_waited_for_once() {
        let roots = ClientRoots::default();
        assert!(roots.expect());
        // As if asked long ago: the wait is over.
        *roots.lock() = Known::Pending(Instant::now() - ANSWER_WAIT);
        let started = Instant::now();
        assert!(matches!(
            roots.check(Path::new("/srv/app")),
            Err(RootsRefusal::Unknown(_))
        ));
        assert!(matches!(*roots.lock(), Known::Failed(_)));
        assert!(started.elapsed() < Duration::from_secs(1));
        // A late answer still counts.
        roots.set(Ok((vec![PathBuf::from("/srv/app")], Vec::new())));
        assert_eq!(roots.check(Path::new("/srv/app/a")), Ok(()));
    }
}
