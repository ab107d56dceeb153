//! Fetching a model2vec model from the Hugging Face hub, pinned and verified.
//!
//! A hub model is named `hf:<org>/<name>@<commit>[#sha256=<hex>]`. The revision must be a
//! full 40-character commit id: branch names move, and an index must stay bound to the exact
//! weights it was built with. `model.safetensors` is checked against the sha256 given in the
//! name and, in any case, against the sha256 the hub reports for the file (its `X-Linked-Etag`
//! header); a download that cannot be verified either way is refused. Verified files are
//! stored under `<models>/hf/<org>--<name>@<commit>/` (`$SATORI_HOME/models`) and published by renaming a
//! complete directory, so an interrupted download leaves nothing half-written behind.
//!
//! Transfers use `ureq` over rustls with the Mozilla root certificates compiled in, so no
//! system tool or TLS library is needed; the usual proxy variables are honoured. A transfer
//! that breaks off, stalls or fails the hash check leaves nothing behind.
//! [`HubOptions`] can point at another hub address (mirrors, tests) or forbid downloads.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::ModelError;

/// Files of a model2vec model, in download order (the big one last).
const FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// Marker written last into a verified model directory.
const COMPLETE: &str = "COMPLETE";

/// A pinned hub model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubRef {
    /// `org/name`.
    pub repo: String,
    /// A 40-hex commit id.
    pub revision: String,
    /// Expected sha256 of `model.safetensors`, when pinned in the name.
    pub sha256: Option<String>,
}

fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit())
}

impl HubRef {
    /// Parses `hf:<org>/<name>@<commit>[#sha256=<hex>]`.
    pub fn parse(spec: &str) -> Result<HubRef, ModelError> {
        let bad = |why: &str| {
            ModelError(format!(
                "invalid hub model '{spec}': {why}; expected hf:<org>/<name>@<40-hex commit>[#sha256=<64-hex>]"
            ))
        };
        let rest = spec
            .strip_prefix("hf:")
            .ok_or_else(|| bad("missing 'hf:'"))?;
        let (name, pin) = match rest.split_once('#') {
            Some((n, p)) => (n, Some(p)),
            None => (rest, None),
        };
        let (repo, revision) = name
            .split_once('@')
            .ok_or_else(|| bad("no revision (a commit id is required)"))?;
        let valid_part = |p: &str| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
                && p != "."
                && p != ".."
        };
        match repo.split_once('/') {
            Some((org, model)) if valid_part(org) && valid_part(model) => {}
            _ => return Err(bad("the repository must be <org>/<name>")),
        }
        if !is_hex(revision, 40) {
            return Err(bad(
                "the revision must be a full 40-character commit id, not a branch or tag",
            ));
        }
        let sha256 = match pin {
            None => None,
            Some(p) => {
                let h = p
                    .strip_prefix("sha256=")
                    .ok_or_else(|| bad("the pin must be #sha256=<hex>"))?;
                if !is_hex(h, 64) {
                    return Err(bad("the sha256 must be 64 hex characters"));
                }
                Some(h.to_ascii_lowercase())
            }
        };
        Ok(HubRef {
            repo: repo.to_string(),
            revision: revision.to_ascii_lowercase(),
            sha256,
        })
    }

    /// The readable id recorded in fingerprints.
    pub fn id(&self) -> String {
        format!("hf:{}@{}", self.repo, &self.revision[..12])
    }

    /// Directory of the verified copy under the models directory `cache_dir`.
    pub fn dir(&self, cache_dir: &Path) -> PathBuf {
        cache_dir.join("hf").join(format!(
            "{}@{}",
            self.repo.replace('/', "--"),
            self.revision
        ))
    }
}

/// How to reach the hub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubOptions {
    /// Base address, e.g. `https://huggingface.co` (no trailing slash needed).
    pub endpoint: String,
    /// Never download: only models already in the cache can be used.
    pub offline: bool,
}

impl Default for HubOptions {
    fn default() -> Self {
        HubOptions {
            endpoint: "https://huggingface.co".into(),
            offline: false,
        }
    }
}

/// The directory of a verified copy of `r`, downloading it first when needed.
pub fn ensure(r: &HubRef, cache_dir: &Path, opts: &HubOptions) -> Result<PathBuf, ModelError> {
    let dir = r.dir(cache_dir);
    if dir.join(COMPLETE).is_file() {
        return Ok(dir);
    }
    if opts.offline {
        return Err(ModelError(format!(
            "model hf:{}@{} is not in the cache ({}) and downloads are switched off; \
             download it where a network is available, or use a local model directory",
            r.repo,
            r.revision,
            dir.display()
        )));
    }
    let parent = dir.parent().unwrap_or(cache_dir);
    std::fs::create_dir_all(parent)
        .map_err(|e| ModelError(format!("cannot create '{}': {e}", parent.display())))?;
    let tmp = parent.join(format!(
        ".download-{}-{}",
        std::process::id(),
        crate::util::now_ms()
    ));
    let result = download_into(r, &tmp, opts).and_then(|()| {
        match std::fs::rename(&tmp, &dir) {
            Ok(()) => Ok(()),
            // Another process published the same model first: use theirs.
            Err(_) if dir.join(COMPLETE).is_file() => Ok(()),
            Err(e) => Err(ModelError(format!(
                "cannot publish '{}': {e}",
                dir.display()
            ))),
        }
    });
    let _ = std::fs::remove_dir_all(&tmp);
    result.map(|()| dir)
}

fn download_into(r: &HubRef, tmp: &Path, opts: &HubOptions) -> Result<(), ModelError> {
    std::fs::create_dir_all(tmp)
        .map_err(|e| ModelError(format!("cannot create '{}': {e}", tmp.display())))?;
    let agent = agent();
    let base = opts.endpoint.trim_end_matches('/');
    let mut record = String::new();
    for name in FILES {
        let url = format!("{base}/{}/resolve/{}/{name}", r.repo, r.revision);
        let fetched = fetch(&agent, &url, &tmp.join(name))?;
        let got = fetched.sha256;
        if name == "model.safetensors" {
            if let Some(want) = &r.sha256
                && *want != got
            {
                return Err(ModelError(format!(
                    "sha256 mismatch for {url}: expected {want} (pinned), got {got}; nothing was stored"
                )));
            }
            if let Some(want) = &fetched.hub_sha256
                && *want != got
            {
                return Err(ModelError(format!(
                    "sha256 mismatch for {url}: the hub reports {want}, the download is {got}; nothing was stored"
                )));
            }
            if r.sha256.is_none() && fetched.hub_sha256.is_none() {
                return Err(ModelError(format!(
                    "cannot verify {url}: the hub reported no sha256 and none is pinned; \
                     add #sha256=<hex> to the model name"
                )));
            }
        }
        record.push_str(&format!("{got}  {name}\n"));
    }
    crate::util::write_atomic(&tmp.join(COMPLETE), record.as_bytes())
        .map_err(|e| ModelError(e.to_string()))
}

/// A hub that accepts no connection within this is reported as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);
/// A transfer that receives nothing for this long has stalled: fail rather than hang a build.
const STALL_TIMEOUT: Duration = Duration::from_secs(60);
/// Redirect hops followed for one file (the hub answers with one, to its CDN).
const MAX_REDIRECTS: usize = 10;
/// Extra attempts after a transient failure (a timeout, or 408/429/5xx), waiting 1 s, then 2 s.
const RETRIES: u32 = 2;

/// The HTTP client for one model download.
///
/// Redirects are followed by hand because the hub puts the file's sha256 on the redirect
/// itself, which an automatically followed chain would hide; statuses are answers, not
/// errors, so a 404 can be reported with the address that gave it. Proxies come from the
/// usual `HTTPS_PROXY`/`HTTP_PROXY`/`ALL_PROXY`/`NO_PROXY` variables (ureq's default).
fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .max_redirects(0)
        .http_status_as_error(false)
        .timeout_connect(Some(CONNECT_TIMEOUT))
        .timeout_per_read(Some(STALL_TIMEOUT))
        .user_agent(concat!("satori/", env!("CARGO_PKG_VERSION")))
        .build()
        .new_agent()
}

/// One downloaded file: the sha256 of the bytes written, and the one the hub advertised.
struct Fetched {
    sha256: String,
    hub_sha256: Option<String>,
}

/// Why one attempt failed; transient failures are worth another attempt.
struct Failure {
    message: String,
    transient: bool,
}

impl Failure {
    fn permanent(message: String) -> Failure {
        Failure {
            message,
            transient: false,
        }
    }
}

impl From<ureq::Error> for Failure {
    fn from(e: ureq::Error) -> Failure {
        Failure {
            transient: matches!(e, ureq::Error::Timeout(_)),
            message: e.to_string(),
        }
    }
}

/// Downloads `url` into `target`, retrying transient failures.
fn fetch(agent: &ureq::Agent, url: &str, target: &Path) -> Result<Fetched, ModelError> {
    let mut attempt = 0;
    loop {
        match fetch_once(agent, url, target) {
            Ok(fetched) => return Ok(fetched),
            Err(f) if f.transient && attempt < RETRIES => {
                std::thread::sleep(Duration::from_secs(1 << attempt));
                attempt += 1;
            }
            Err(f) => {
                return Err(ModelError(format!(
                    "download of {url} failed: {}",
                    f.message
                )));
            }
        }
    }
}

/// One attempt: follows the redirects, remembering the last sha256 the hub advertised on
/// the way, then streams the body into `target` while hashing it.
fn fetch_once(agent: &ureq::Agent, url: &str, target: &Path) -> Result<Fetched, Failure> {
    let mut current = url.to_string();
    let mut hub_sha256 = None;
    for _ in 0..=MAX_REDIRECTS {
        let response = agent.get(&current).call()?;
        if let Some(sha) = response
            .headers()
            .get_all("x-linked-etag")
            .iter()
            .rev()
            .filter_map(|v| v.to_str().ok())
            .find_map(linked_etag)
        {
            hub_sha256 = Some(sha);
        }
        let status = response.status();
        if status.is_redirection() {
            let location = response
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| {
                    Failure::permanent(format!("{current} redirected without a location"))
                })?;
            current = redirect_target(&current, location).map_err(Failure::permanent)?;
            continue;
        }
        if !status.is_success() {
            let from = if current == url {
                String::new()
            } else {
                format!(" (redirected to {current})")
            };
            return Err(Failure {
                message: format!("the server answered HTTP {status}{from}"),
                transient: matches!(status.as_u16(), 408 | 429 | 500 | 502 | 503 | 504),
            });
        }
        let sha256 = save_body(response.into_body().into_reader(), target)?;
        return Ok(Fetched { sha256, hub_sha256 });
    }
    Err(Failure::permanent(format!(
        "more than {MAX_REDIRECTS} redirects"
    )))
}

/// Copies a response body into `target`, returning its sha256. A connection that closes
/// before the announced length arrived is an error here (ureq checks `Content-Length`).
fn save_body(mut body: impl Read, target: &Path) -> Result<String, Failure> {
    let mut file = std::fs::File::create(target)
        .map_err(|e| Failure::permanent(format!("cannot create '{}': {e}", target.display())))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut received = 0u64;
    loop {
        let n = match body.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(Failure {
                    message: format!("the transfer broke off after {received} bytes: {e}"),
                    transient: e.kind() == std::io::ErrorKind::TimedOut,
                });
            }
        };
        received += n as u64;
        hasher.update(&buf[..n]);
        file.write_all(&buf[..n])
            .map_err(|e| Failure::permanent(format!("cannot write '{}': {e}", target.display())))?;
    }
    file.sync_all()
        .map_err(|e| Failure::permanent(format!("cannot write '{}': {e}", target.display())))?;
    Ok(crate::util::hex(&hasher.finalize()))
}

/// The absolute address a `Location` header points to, seen from `base`.
///
/// A redirect from `https` to plain `http` is refused: the hub never downgrades, and a
/// chain that does is not one to follow.
fn redirect_target(base: &str, location: &str) -> Result<String, String> {
    let (scheme, rest) = base
        .split_once("://")
        .ok_or_else(|| format!("'{base}' is not an absolute address"))?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let target = if location.contains("://") {
        location.to_string()
    } else if let Some(path) = location.strip_prefix("//") {
        format!("{scheme}://{path}")
    } else if location.starts_with('/') {
        format!("{scheme}://{authority}{location}")
    } else {
        // Relative to the directory of the current path (query and fragment dropped).
        let path = rest[authority.len()..]
            .split(['?', '#'])
            .next()
            .unwrap_or_default();
        let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
        let dir = if dir.is_empty() { "/" } else { dir };
        format!("{scheme}://{authority}{dir}{location}")
    };
    let target_scheme = target.split_once("://").map_or("", |(s, _)| s);
    if !matches!(target_scheme, "http" | "https") {
        return Err(format!(
            "{base} redirected to an unsupported address '{location}'"
        ));
    }
    if scheme.eq_ignore_ascii_case("https") && target_scheme.eq_ignore_ascii_case("http") {
        return Err(format!(
            "{base} redirected from https to plain http ({target}); refused"
        ));
    }
    Ok(target)
}

/// The sha256 in one `X-Linked-Etag` value (`"<hex>"`, possibly weak: `W/"<hex>"`).
fn linked_etag(value: &str) -> Option<String> {
    let v = value
        .trim()
        .trim_start_matches("W/")
        .trim_matches('"')
        .to_ascii_lowercase();
    is_hex(&v, 64).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_names() {
        let c = "0123456789abcdef0123456789abcdef01234567";
        let r = HubRef::parse(&format!("hf:minishlab/potion-base-8M@{c}")).unwrap();
        assert_eq!(r.repo, "minishlab/potion-base-8M");
        assert_eq!(r.id(), "hf:minishlab/potion-base-8M@0123456789ab");
        let h = "ab".repeat(32);
        let r = HubRef::parse(&format!("hf:a/b@{c}#sha256={h}")).unwrap();
        assert_eq!(r.sha256.as_deref(), Some(h.as_str()));
        for bad in [
            "hf:a/b@main",
            "hf:a/b",
            "hf:ab@0123456789abcdef0123456789abcdef01234567",
            "hf:../b@0123456789abcdef0123456789abcdef01234567",
            "hf:a/b@0123456789abcdef0123456789abcdef01234567#md5=1",
        ] {
            assert!(HubRef::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn etag_values() {
        let upper = format!("\"{}\"", "AB".repeat(32));
        assert_eq!(linked_etag(&upper), Some("ab".repeat(32)));
        let weak = format!("W/\"{}\"", "cd".repeat(32));
        assert_eq!(linked_etag(&weak), Some("cd".repeat(32)));
        // A git blob id (40 hex) is what the hub sends for small files: not a sha256.
        assert_eq!(linked_etag(&format!("\"{}\"", "a".repeat(40))), None);
        assert_eq!(linked_etag("\"aa\""), None);
    }

    #[test]
    fn redirects_resolve_like_a_browser() {
        let base = "https://hub.example/acme/tiny/resolve/abc/model.safetensors?x=1";
        for (location, resolved) in [
            ("https://cdn.example/a/b", "https://cdn.example/a/b"),
            ("//cdn.example/a", "https://cdn.example/a"),
            (
                "/api/resolve-cache/x",
                "https://hub.example/api/resolve-cache/x",
            ),
            (
                "other.bin",
                "https://hub.example/acme/tiny/resolve/abc/other.bin",
            ),
        ] {
            assert_eq!(
                redirect_target(base, location).unwrap(),
                resolved,
                "{location}"
            );
        }
        assert!(redirect_target(base, "http://cdn.example/a").is_err());
        assert!(redirect_target(base, "ftp://cdn.example/a").is_err());
        assert_eq!(
            redirect_target("http://127.0.0.1:8/a", "/cdn/b").unwrap(),
            "http://127.0.0.1:8/cdn/b"
        );
    }
}
