//! The client's roots, in memory and against the binary: a client that declares the `roots`
//! capability confines every tool and every `manage_index` action (indexing, status, clear,
//! searching, navigation, reading, listing) to the directories it lists, and is told
//! nothing of what lies outside them; the server follows its `roots/list_changed`
//! notifications, a list of unusable roots confines to nothing, a client that never answers
//! is waited for once, and a client without the capability is not confined.

// rmcp marks roots deprecated (SEP-2577); the revisions the server speaks all have them.
#![allow(deprecated)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolResult, ClientCapabilities, ClientConfig, Implementation, ListRootsResult, Root,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient, ServiceExt};
use satori_core::{Home, StateStore};
use satori_protocol::ManageAction;
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

/// Where the server runs.
#[derive(Clone, Copy, Debug)]
enum Server {
    /// In this process, over an in-memory pipe.
    InMemory,
    /// The built `satori` binary, as a child process on its stdio.
    Binary,
}

struct Harness {
    client: RunningService<RoleClient, RootsClient>,
    handler: RootsClient,
    home: PathBuf,
    inside: PathBuf,
    outside: PathBuf,
    /// The server's process, when it runs as one (killed when dropped).
    _child: Option<tokio::process::Child>,
    _dirs: Vec<tempfile::TempDir>,
}

impl Harness {
    async fn new(declares: bool) -> Harness {
        Harness::listing(declares, false, None).await
    }

    /// A client listing `roots` (URIs; by default the `inside` directory), or never answering
    /// when `silent`.
    async fn listing(declares: bool, silent: bool, roots: Option<Vec<String>>) -> Harness {
        Harness::on(Server::InMemory, declares, silent, roots).await
    }

    /// [`Harness::listing`], with the server running where `server` says.
    async fn on(
        server: Server,
        declares: bool,
        silent: bool,
        roots: Option<Vec<String>>,
    ) -> Harness {
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
        let (client, child) = match server {
            Server::InMemory => (
                support::connect(support::config(&home), handler.clone()).await,
                None,
            ),
            Server::Binary => {
                let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_satori"))
                    .env("SATORI_HOME", &home)
                    .env("SATORI_RUN_MODE", "cli")
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::null())
                    .kill_on_drop(true)
                    .spawn()
                    .unwrap();
                let io = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
                (handler.clone().serve(io).await.unwrap(), Some(child))
            }
        };
        Harness {
            client,
            handler,
            home,
            inside,
            outside,
            _child: child,
            _dirs: dirs,
        }
    }

    /// Lists `roots` from now on and tells the server; returns once `applied` holds (the
    /// server asks for the new list on its own task).
    async fn move_roots<F: Future<Output = bool>>(&self, roots: &[&Path], applied: impl Fn() -> F) {
        *self.handler.roots.lock().unwrap() = roots.iter().map(|r| uri(r)).collect();
        self.client.notify_roots_list_changed().await.unwrap();
        for _ in 0..400 {
            if applied().await {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("the roots {roots:?} were not applied");
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

    async fn status(&self, path: &Path) -> Value {
        let r = self
            .call("manage_index", json!({"action": "status", "path": path}))
            .await;
        r.structured_content.unwrap()
    }

    async fn list(&self) -> String {
        let r = self.call("list_codebases", json!({})).await;
        r.content[0].as_text().unwrap().text.clone()
    }

    async fn wait_indexed(&self, path: &Path) {
        support::wait_built(&self.client, path).await;
    }
}

/// What a session may ask of the codebase at `path`: one row per `manage_index` action and
/// one per other tool that names a path (`list_codebases` names none and is checked by its
/// own listing), each as `(what, tool, arguments)`.
fn actions_on(path: &Path) -> Vec<(String, &'static str, Value)> {
    let mut rows: Vec<(String, &'static str, Value)> = ManageAction::ALL
        .iter()
        .map(|a| {
            (
                format!("manage_index {}", a.as_str()),
                "manage_index",
                json!({"action": a.as_str(), "path": path}),
            )
        })
        .collect();
    for (tool, args) in [
        ("search_codebase", json!({"path": path, "query": "answer"})),
        ("file_outline", json!({"path": path, "file": "src/lib.rs"})),
        (
            "call_graph",
            json!({"path": path, "symbolRef": {"file": "src/lib.rs", "symbolId": "answer"}}),
        ),
        ("read_file", json!({"path": path.join("src/lib.rs")})),
    ] {
        rows.push((tool.to_owned(), tool, args));
    }
    rows
}

/// Asserts that a call was refused for being outside the client's roots, in the words of its
/// tool: an envelope `blocked` with reason `outside_client_roots`, naming the roots, telling
/// nothing of the codebase (no state, counts, progress or compatibility) and offering no next
/// call; or, from `read_file`, an error saying the same.
fn check_refused(what: &str, r: &CallToolResult) {
    let text = &r.content[0].as_text().unwrap().text;
    assert!(
        text.contains("outside the roots the client allows"),
        "{what}: {text}"
    );
    let Some(v) = &r.structured_content else {
        assert_eq!(r.is_error, Some(true), "{what}: {text}");
        return;
    };
    assert_eq!(v["status"], "blocked", "{what}: {v}");
    assert_eq!(v["reason"], "outside_client_roots", "{what}: {v}");
    for told in [
        "state",
        "stats",
        "progress",
        "compatibility",
        "codebaseRoot",
        "results",
    ] {
        let empty = match v.get(told) {
            None | Some(Value::Null) => true,
            Some(Value::Array(a)) => a.is_empty(),
            Some(_) => false,
        };
        assert!(empty, "{what} tells '{told}': {v}");
    }
    let hints = v.get("hints").and_then(Value::as_object);
    assert!(hints.is_none_or(|h| h.is_empty()), "{what}: {v}");
}

/// A session confined to one codebase acts on no other: with two codebases indexed, once
/// the client's roots hold only the first, every action on the second (by its root, and by
/// a path under it that does not exist) is refused alike, `clear` included, and the second
/// index survives; `list_codebases` shows nothing of it, not even a count.
async fn a_confined_session_acts_on_no_other_codebase(server: Server) {
    let h = Harness::on(server, true, false, None).await;
    let (inside, outside) = (h.inside.as_path(), h.outside.as_path());
    // Every tool of the registry has its row (or, for the listing, its check below).
    let covered: BTreeSet<&str> = actions_on(outside)
        .iter()
        .map(|(_, tool, _)| *tool)
        .chain(["list_codebases"])
        .collect();
    let registry: BTreeSet<&str> = satori_protocol::tools().iter().map(|t| t.name).collect();
    assert_eq!(covered, registry, "a tool without a row in actions_on");

    h.move_roots(&[inside, outside], || async {
        h.status(outside).await["status"] != "blocked"
    })
    .await;
    for root in [inside, outside] {
        let v = h.create(root).await;
        assert_eq!(v["status"], "ok", "{v}");
        h.wait_indexed(root).await;
    }

    h.move_roots(&[inside], || async {
        let r = h
            .call(
                "search_codebase",
                json!({"path": outside, "query": "answer"}),
            )
            .await;
        r.structured_content.unwrap()["reason"] == "outside_client_roots"
    })
    .await;
    for path in [outside.to_path_buf(), outside.join("no-such-dir")] {
        for (what, tool, args) in actions_on(&path) {
            let r = h.call(tool, args).await;
            check_refused(&format!("{what} of {}", path.display()), &r);
        }
    }
    // The refused clear left the index: its record is there, and once the roots hold it
    // again it is searched as before.
    let store = StateStore::new(Home::new(h.home.clone()));
    assert!(
        store.load().unwrap().codebases.contains_key(outside),
        "the index outside the roots was removed"
    );
    let text = h.list().await;
    assert!(text.contains(&*inside.to_string_lossy()), "{text}");
    assert!(!text.contains(&*outside.to_string_lossy()), "{text}");

    // Roots that hold no codebase: the same answer as if there were none elsewhere.
    let src = inside.join("src");
    h.move_roots(&[&src], || async { !h.list().await.contains("## Ready") })
        .await;
    assert_eq!(
        h.list().await,
        format!(
            "No indexed codebase is inside the roots the client allows ('{}').",
            src.display()
        )
    );

    h.move_roots(&[inside, outside], || async {
        h.status(outside).await["status"] == "ok"
    })
    .await;
    let r = h
        .call(
            "search_codebase",
            json!({"path": outside, "query": "answer", "resultMode": "raw"}),
        )
        .await;
    let v = r.structured_content.unwrap();
    assert_eq!(v["status"], "ok", "{v}");
    assert!(v["results"].to_string().contains("answer"), "{v}");
}

#[tokio::test]
async fn a_confined_session_acts_on_no_other_codebase_in_memory() {
    a_confined_session_acts_on_no_other_codebase(Server::InMemory).await;
}

#[tokio::test]
async fn a_confined_session_acts_on_no_other_codebase_of_the_binary() {
    a_confined_session_acts_on_no_other_codebase(Server::Binary).await;
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
