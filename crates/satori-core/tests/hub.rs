//! Fetching models from a hub: the real download code (HTTP client, sha256 checks, atomic
//! publication into the cache) against a fake hub on loopback that answers like the real
//! one (redirect to a CDN, the file's sha256 in `X-Linked-Etag`), and like a broken one.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use satori_core::embed::hub::{self, HubOptions, HubRef};
use satori_core::embed::{Embeddings, ModelSource, load_dir};

const REV: &str = "0123456789abcdef0123456789abcdef01234567";

/// A two-dimensional model with a three-token vocabulary.
fn write_model(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let values: [f32; 6] = [0.0, 0.0, 1.0, 0.0, 0.0, 1.0];
    let data: Vec<u8> = values.iter().flat_map(|f| f.to_le_bytes()).collect();
    let header = format!(
        r#"{{"embeddings":{{"dtype":"F32","shape":[3,2],"data_offsets":[0,{}]}}}}"#,
        data.len()
    );
    let mut st = (header.len() as u64).to_le_bytes().to_vec();
    st.extend_from_slice(header.as_bytes());
    st.extend_from_slice(&data);
    std::fs::write(dir.join("model.safetensors"), st).unwrap();
    std::fs::write(
        dir.join("tokenizer.json"),
        r#"{"normalizer":{"type":"BertNormalizer","lowercase":true},"pre_tokenizer":{"type":"BertPreTokenizer"},"model":{"type":"WordPiece","vocab":{"[UNK]":0,"retry":1,"backoff":2}}}"#,
    )
    .unwrap();
    std::fs::write(dir.join("config.json"), r#"{"normalize":true}"#).unwrap();
}

struct FakeHub {
    child: Child,
    endpoint: String,
}

impl Drop for FakeHub {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn fake_hub(files: &Path, flags: &[&str]) -> FakeHub {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_hub.py");
    let mut child = Command::new("python3")
        .arg(script)
        .arg(files)
        .args(flags)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs the fake hub");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    FakeHub {
        child,
        endpoint: format!("http://127.0.0.1:{}", line.trim()),
    }
}

fn options(hub: &FakeHub) -> HubOptions {
    HubOptions {
        endpoint: hub.endpoint.clone(),
        offline: false,
    }
}

/// The sha256 of the weights [`served`] wrote below `root`.
fn served_sha256(root: &Path) -> String {
    use sha2::{Digest, Sha256};
    let weights = root.join(format!("acme--tiny@{REV}/model.safetensors"));
    Sha256::digest(std::fs::read(weights).unwrap())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A served model directory for `org/name@REV`, and the parsed reference.
fn served(root: &Path) -> HubRef {
    write_model(&root.join(format!("acme--tiny@{REV}")));
    HubRef::parse(&format!("hf:acme/tiny@{REV}")).unwrap()
}

#[test]
fn downloads_verifies_caches_and_then_works_offline() {
    let files = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let r = served(files.path());
    let hub = fake_hub(files.path(), &[]);
    let dir = hub::ensure(&r, cache.path(), &options(&hub)).unwrap();
    assert_eq!(dir, r.dir(cache.path()));
    let model = load_dir(&dir).unwrap();
    assert_eq!(model.dim(), 2);
    let complete = std::fs::read_to_string(dir.join("COMPLETE")).unwrap();
    assert!(complete.contains("model.safetensors"), "{complete}");
    drop(hub);
    // Cached: no hub needed, even with downloads forbidden.
    let offline = HubOptions {
        endpoint: "http://127.0.0.1:9".into(),
        offline: true,
    };
    assert_eq!(hub::ensure(&r, cache.path(), &offline).unwrap(), dir);
    let e = Embeddings::new(ModelSource::Hub(r.clone()), cache.path(), offline).unwrap();
    assert_eq!(e.info().provider, "huggingface");
    assert_eq!(e.info().dim, 2);
    assert!(
        e.info()
            .fingerprint_model()
            .starts_with("hf:acme/tiny@0123456789ab@sha256:")
    );
}

#[test]
fn a_pinned_sha256_is_enforced() {
    let files = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let r = served(files.path());
    let real = served_sha256(files.path());
    let hub = fake_hub(files.path(), &["--no-etag"]);
    let wrong = HubRef::parse(&format!("hf:acme/tiny@{REV}#sha256={}", "1".repeat(64))).unwrap();
    let err = hub::ensure(&wrong, cache.path(), &options(&hub))
        .unwrap_err()
        .0;
    assert!(
        err.contains("expected 1111") && err.contains("(pinned)"),
        "{err}"
    );
    assert!(
        !r.dir(cache.path()).exists(),
        "nothing is stored after a mismatch"
    );
    // Without an etag and without a pin nothing can be verified: refused.
    let err = hub::ensure(&r, cache.path(), &options(&hub)).unwrap_err().0;
    assert!(err.contains("cannot verify"), "{err}");
    let pinned = HubRef::parse(&format!("hf:acme/tiny@{REV}#sha256={real}")).unwrap();
    assert!(hub::ensure(&pinned, cache.path(), &options(&hub)).is_ok());
}

#[test]
fn failures_are_specific_and_leave_nothing_behind() {
    let files = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let r = served(files.path());
    let hub = fake_hub(files.path(), &["--wrong-etag"]);
    let err = hub::ensure(&r, cache.path(), &options(&hub)).unwrap_err().0;
    assert!(err.contains("the hub reports 0000"), "{err}");
    let missing = HubRef::parse(&format!("hf:acme/absent@{REV}")).unwrap();
    let err = hub::ensure(&missing, cache.path(), &options(&hub))
        .unwrap_err()
        .0;
    assert!(
        err.contains("/acme/absent/resolve/") && err.contains("404"),
        "{err}"
    );
    let offline = HubOptions {
        endpoint: hub.endpoint.clone(),
        offline: true,
    };
    let err = hub::ensure(&r, cache.path(), &offline).unwrap_err().0;
    assert!(err.contains("downloads are switched off"), "{err}");
    // No partial model directories or temporary downloads remain.
    let hf = cache.path().join("hf");
    let left: Vec<_> = std::fs::read_dir(&hf)
        .map(|rd| rd.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

/// Nothing but the cache root's `hf` directory itself: no model, no temporary download.
fn assert_nothing_stored(cache: &Path) {
    let left: Vec<_> = std::fs::read_dir(cache.join("hf"))
        .map(|rd| rd.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn bytes_damaged_on_the_way_fail_the_hub_hash() {
    let files = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let r = served(files.path());
    let real = served_sha256(files.path());
    let hub = fake_hub(files.path(), &["--corrupt-body"]);
    let err = hub::ensure(&r, cache.path(), &options(&hub)).unwrap_err().0;
    assert!(
        err.contains(&format!("the hub reports {real}")) && err.contains("nothing was stored"),
        "{err}"
    );
    assert_nothing_stored(cache.path());
}

#[test]
fn a_connection_dropped_mid_body_fails_and_leaves_nothing_behind() {
    let files = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    served(files.path());
    // Even a matching pin must not let a truncated body through.
    let real = served_sha256(files.path());
    let pinned = HubRef::parse(&format!("hf:acme/tiny@{REV}#sha256={real}")).unwrap();
    let hub = fake_hub(files.path(), &["--drop-body"]);
    let err = hub::ensure(&pinned, cache.path(), &options(&hub))
        .unwrap_err()
        .0;
    assert!(
        err.starts_with("download of ")
            && err.contains("/acme/tiny/resolve/")
            && err.contains("broke off"),
        "{err}"
    );
    assert!(!err.contains("sha256 mismatch"), "{err}");
    assert_nothing_stored(cache.path());
}
