//! The client's roots, in memory: a client that declares the `roots` capability confines
//! indexing, searching, reading and listing to the directories it lists, follows its
//! `roots/list_changed` notifications, a list of unusable roots confines to nothing, a
//! client that never answers is waited for once, and a client without the capability is not
//! confined.

// rmcp marks roots deprecated (SEP-2577); the revisions the server speaks all have them.
#![allow(deprecated)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolResult, ClientCapabilities, ClientConfig, Implementation, ListRootsResult, Root,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient};
use serde_json::{Value, json};

mod support;

/// A client that declares roots (or not) and answers `roots/list` with the URIs in `roots`
/// (or never, when `silent`).
#[derive(Clone)]
struct RootsClient {
    declares: bool,
    silent: bool,
    roots: Arc<Mutex<Vec<String>>>,
    asked: Arc<Mutex<usize>>,
}

/// The `file://` URI of a directory.
fn uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

impl ClientHandler for RootsClient {
    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.declares {
            ClientCapabilities::builder()
                .enable_roots()
                .enable_roots_list_changed()
                .build()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(capabilities, Implementation::new("roots-test", "1.0.0"))
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, McpError> {
        *self.asked.lock().unwrap() += 1;
        if self.silent {
            std::future::pending::<()>().await;
        }
        let roots = self.roots.lock().unwrap().clone();
        Ok(ListRootsResult::new(
            roots.into_iter().map(Root::new).collect(),
        ))
    }
}

struct Harness {
    client: RunningService<RoleClient, RootsClient>,
    handler: RootsClient,
    inside: PathBuf,
    outside: PathBuf,
    _dirs: Vec<tempfile::TempDir>,
}

impl Harness {
    async fn new(declares: bool) -> Harness {
        Harness::listing(declares, false, None).await
    }

    /// A client listing `roots` (URIs; by default the `inside` directory), or never answering
    /// when `silent`.
    async fn listing(declares: bool, silent: bool, roots: Option<Vec<String>>) -> Harness {
        let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
        let [home, inside, outside] = [0, 1, 2].map(|i| dirs[i].path().canonicalize().unwrap());
        for dir in [&inside, &outside] {
            support::write(dir, "src/lib.rs", "pub fn answer() -> u32 { 42 }\n");
        }
        let handler = RootsClient {
            declares,
            silent,
            roots: Arc::new(Mutex::new(roots.unwrap_or_else(|| vec![uri(&inside)]))),
            asked: Arc::new(Mutex::new(0)),
        };
        let client = support::connect(support::config(&home), handler.clone()).await;
        Harness {
            client,
            handler,
            inside,
            outside,
            _dirs: dirs,
        }
    }

    async fn call(&self, tool: &str, args: Value) -> CallToolResult {
        support::call(&self.client, tool, args).await
    }

    async fn create(&self, path: &Path) -> Value {
        let r = self
            .call("manage_index", json!({"action": "create", "path": path}))
            .await;
        r.structured_content.unwrap()
    }

    async fn read(&self, path: &Path) -> (bool, String) {
        let r = self.call("read_file", json!({"path": path})).await;
        (
            r.is_error == Some(true),
            r.content[0].as_text().unwrap().text.clone(),
        )
    }

    async fn list(&self) -> String {
        let r = self.call("list_codebases", json!({})).await;
        r.content[0].as_text().unwrap().text.clone()
    }

    async fn wait_indexed(&self, path: &Path) {
        support::wait_built(&self.client, path).await;
    }
}

#[tokio::test]
async fn declared_roots_confine_indexing_search_and_reads() {
    let h = Harness::new(true).await;
    let v = h.create(&h.outside).await;
    assert_eq!(v["status"], "blocked", "{v}");
    assert_eq!(v["reason"], "outside_client_roots", "{v}");
    let message = v["message"].as_str().unwrap();
    assert!(
        message.contains(&*h.inside.to_string_lossy()),
        "the refusal names the roots: {message}"
    );
    assert!(v.get("hints").is_none(), "{v}");

    let v = h.create(&h.inside).await;
    assert_eq!(v["status"], "ok", "{v}");
    h.wait_indexed(&h.inside).await;
    let (is_error, text) = h.read(&h.inside.join("src/lib.rs")).await;
    assert!(!is_error, "{text}");
    let (is_error, text) = h.read(&h.outside.join("src/lib.rs")).await;
    assert!(is_error, "{text}");
    assert!(
        text.contains("outside the roots the client allows"),
        "{text}"
    );

    // The client moves its root: the server asks again and follows.
    *h.handler.roots.lock().unwrap() = vec![uri(&h.outside)];
    h.client.notify_roots_list_changed().await.unwrap();
    let mut refused = false;
    for _ in 0..400 {
        let (is_error, _) = h.read(&h.inside.join("src/lib.rs")).await;
        if is_error {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(refused, "the new roots were not applied");
    assert!(*h.handler.asked.lock().unwrap() >= 2);
    let r = h
        .call(
            "search_codebase",
            json!({"path": h.inside, "query": "answer"}),
        )
        .await;
    let v = r.structured_content.unwrap();
    assert_eq!(v["status"], "blocked", "{v}");
    assert_eq!(v["reason"], "outside_client_roots", "{v}");
    let v = h.create(&h.outside).await;
    assert_eq!(v["status"], "ok", "{v}");
}

/// A client whose roots are all unusable confines to nothing: `create`, `search_codebase`
/// and `read_file` are refused everywhere, saying why each root cannot be used.
#[tokio::test]
async fn unusable_roots_confine_to_nothing() {
    let cases = [
        (
            "another host",
            vec!["file://otherhost/srv/app"],
            "another host",
        ),
        (
            "bad escape",
            vec!["file:///srv/a%zzb"],
            "malformed %-escape",
        ),
        ("not UTF-8", vec!["file:///srv/a%ffb"], "not UTF-8"),
        (
            "relative",
            vec!["file:relative/dir"],
            "not an absolute file:// URI",
        ),
        (
            "another scheme",
            vec!["https://example.com/app"],
            "not a file:// URI",
        ),
        (
            "all of them",
            vec![
                "file://otherhost/x",
                "file:///a%zz",
                "https://example.com/app",
            ],
            "'https://example.com/app' is not a file:// URI",
        ),
    ];
    for (name, roots, why) in cases {
        let roots = roots.into_iter().map(str::to_owned).collect();
        let h = Harness::listing(true, false, Some(roots)).await;
        for path in [&h.inside, &h.outside] {
            let v = h.create(path).await;
            assert_eq!(v["status"], "blocked", "{name}: {v}");
            assert_eq!(v["reason"], "outside_client_roots", "{name}: {v}");
            let message = v["message"].as_str().unwrap();
            assert!(
                message.contains("nothing is served") && message.contains(why),
                "{name}: {message}"
            );
            let (is_error, text) = h.read(&path.join("src/lib.rs")).await;
            assert!(is_error, "{name}: {text}");
            assert!(text.contains(why), "{name}: {text}");
        }
    }
}

/// A client that declares roots and never answers `roots/list` costs one wait: the first
/// call is refused after it, later calls are refused at once, and `list_codebases` lists
/// nothing it could not serve.
#[tokio::test]
async fn an_unanswered_roots_request_is_waited_for_once() {
    let h = Harness::listing(true, true, None).await;
    let started = std::time::Instant::now();
    let v = h.create(&h.inside).await;
    assert_eq!(v["status"], "blocked", "{v}");
    let message = v["message"].as_str().unwrap();
    assert!(message.contains("did not answer roots/list"), "{message}");
    assert!(
        started.elapsed() >= Duration::from_secs(5),
        "no wait at all"
    );
    for _ in 0..3 {
        let started = std::time::Instant::now();
        let (is_error, text) = h.read(&h.inside.join("src/lib.rs")).await;
        assert!(is_error, "{text}");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "waited again: {:?}",
            started.elapsed()
        );
    }
    assert_eq!(*h.handler.asked.lock().unwrap(), 1);
}

/// `list_codebases` lists only the codebases inside the client's roots.
#[tokio::test]
async fn list_codebases_shows_only_what_is_inside_the_roots() {
    let h = Harness::new(true).await;
    *h.handler.roots.lock().unwrap() = vec![uri(&h.inside), uri(&h.outside)];
    h.client.notify_roots_list_changed().await.unwrap();
    let mut v = h.create(&h.outside).await;
    for _ in 0..400 {
        if v["status"] == "ok" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
        v = h.create(&h.outside).await;
    }
    assert_eq!(v["status"], "ok", "{v}");
    h.wait_indexed(&h.outside).await;
    let v = h.create(&h.inside).await;
    assert_eq!(v["status"], "ok", "{v}");
    h.wait_indexed(&h.inside).await;
    let text = h.list().await;
    assert!(
        text.contains(&*h.inside.to_string_lossy()) && text.contains(&*h.outside.to_string_lossy()),
        "{text}"
    );
    *h.handler.roots.lock().unwrap() = vec![uri(&h.inside)];
    h.client.notify_roots_list_changed().await.unwrap();
    let mut text = h.list().await;
    for _ in 0..400 {
        if !text.contains(&*h.outside.to_string_lossy()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
        text = h.list().await;
    }
    assert!(text.contains(&*h.inside.to_string_lossy()), "{text}");
    assert!(!text.contains(&*h.outside.to_string_lossy()), "{text}");
    *h.handler.roots.lock().unwrap() = vec!["https://example.com/app".to_owned()];
    h.client.notify_roots_list_changed().await.unwrap();
    let mut text = h.list().await;
    for _ in 0..400 {
        if !text.contains(&*h.inside.to_string_lossy()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
        text = h.list().await;
    }
    assert!(!text.contains(&*h.inside.to_string_lossy()), "{text}");
    assert!(text.contains("nothing is served"), "{text}");
}

#[tokio::test]
async fn without_the_capability_nothing_is_asked() {
    let h = Harness::new(false).await;
    let v = h.create(&h.outside).await;
    assert_eq!(v["status"], "ok", "{v}");
    h.wait_indexed(&h.outside).await;
    let (is_error, text) = h.read(&h.outside.join("src/lib.rs")).await;
    assert!(!is_error, "{text}");
    assert_eq!(*h.handler.asked.lock().unwrap(), 0);
}

/// The MCP Python SDK as a client with roots, against the binary. Runs when `python3` (or
/// `$SATORI_TEST_PYTHON`) can import `mcp`; skipped with a message otherwise.
#[test]
fn python_sdk_roots() {
    let python = match support::python_with_sdk() {
        Ok(python) => python,
        Err(skipped) => {
            eprintln!("{skipped}");
            return;
        }
    };
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let [home, allowed, other] = [0, 1, 2].map(|i| dirs[i].path().canonicalize().unwrap());
    for dir in [&allowed, &other] {
        support::write(dir, "src/lib.rs", "pub fn answer() -> u32 { 42 }\n");
    }
    let seen = support::run_sdk_script(
        &python,
        "sdk_roots.py",
        &[allowed.as_os_str(), other.as_os_str()],
        &home,
    );
    assert_eq!(seen["asked"], true, "{seen}");
    assert_eq!(seen["outside"]["status"], "blocked", "{seen}");
    assert_eq!(seen["outside"]["reason"], "outside_client_roots", "{seen}");
    let message = seen["outside"]["message"].as_str().unwrap();
    assert!(
        message.contains("outside the roots the client allows"),
        "the roots were not learnt: {message}"
    );
    assert_eq!(seen["inside"]["status"], "ok", "{seen}");
}
