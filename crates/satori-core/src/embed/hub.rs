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
//! Transfers use the system `curl` (present on macOS, Linux and Windows 10+), which brings
//! the platform's TLS stack and proxy settings without compiling one into Satori.
//! [`HubOptions`] can point at another hub address (mirrors, tests) or forbid downloads.

use std::path::{Path, PathBuf};
use std::process::Command;

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
    let base = opts.endpoint.trim_end_matches('/');
    let mut record = String::new();
    for name in FILES {
        let url = format!("{base}/{}/resolve/{}/{name}", r.repo, r.revision);
        let target = tmp.join(name);
        let headers = tmp.join(format!(".{name}.headers"));
        fetch(&url, &target, &headers)?;
        let bytes = std::fs::read(&target)
            .map_err(|e| ModelError(format!("cannot read '{}': {e}", target.display())))?;
        let got = crate::util::hex(&Sha256::digest(&bytes));
        if name == "model.safetensors" {
            let hub_sha = linked_etag(&std::fs::read_to_string(&headers).unwrap_or_default());
            if let Some(want) = &r.sha256
                && *want != got
            {
                return Err(ModelError(format!(
                    "sha256 mismatch for {url}: expected {want} (pinned), got {got}; nothing was stored"
                )));
            }
            if let Some(want) = &hub_sha
                && *want != got
            {
                return Err(ModelError(format!(
                    "sha256 mismatch for {url}: the hub reports {want}, the download is {got}; nothing was stored"
                )));
            }
            if r.sha256.is_none() && hub_sha.is_none() {
                return Err(ModelError(format!(
                    "cannot verify {url}: the hub reported no sha256 and none is pinned; \
                     add #sha256=<hex> to the model name"
                )));
            }
        }
        let _ = std::fs::remove_file(&headers);
        record.push_str(&format!("{got}  {name}\n"));
    }
    crate::util::write_atomic(&tmp.join(COMPLETE), record.as_bytes())
        .map_err(|e| ModelError(e.to_string()))
}

/// Runs curl for one file; HTTP errors (404, 401, ...) fail with curl's message.
fn fetch(url: &str, target: &Path, headers: &Path) -> Result<(), ModelError> {
    let out = Command::new("curl")
        .args(["--silent", "--show-error", "--fail", "--location"])
        .args(["--retry", "2", "--connect-timeout", "20"])
        .arg("--dump-header")
        .arg(headers)
        .arg("--output")
        .arg(target)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .output()
        .map_err(|e| {
            ModelError(format!(
                "cannot run curl to download {url}: {e}; install curl or use a local model directory"
            ))
        })?;
    if !out.status.success() {
        let msg = String::from_utf8_lossy(&out.stderr);
        return Err(ModelError(format!(
            "download of {url} failed: {}",
            msg.trim()
        )));
    }
    Ok(())
}

/// The sha256 in the last `X-Linked-Etag` header of a (possibly redirected) response.
fn linked_etag(headers: &str) -> Option<String> {
    headers
        .lines()
        .rev()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| k.trim().eq_ignore_ascii_case("x-linked-etag"))
        .map(|(_, v)| {
            v.trim()
                .trim_start_matches("W/")
                .trim_matches('"')
                .to_ascii_lowercase()
        })
        .find(|v| is_hex(v, 64))
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
    fn etag_from_headers() {
        let h = "HTTP/1.1 302 Found\r\nX-Linked-Etag: \"aa\"\r\n\r\nHTTP/1.1 200 OK\r\nx-linked-etag: \"".to_string()
            + &"AB".repeat(32)
            + "\"\r\n";
        assert_eq!(linked_etag(&h), Some("ab".repeat(32)));
        assert_eq!(linked_etag("HTTP/1.1 200 OK\r\n"), None);
    }
}
