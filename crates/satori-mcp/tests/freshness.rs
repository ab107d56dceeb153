//! Freshness of a long-running server, in memory over its stdio framing: concurrent searches
//! share one sync, a sync reports MCP progress when the request asked for it, a cancelled
//! search stops its sync and leaves the published index in use, the end of the client's
//! input does not wait for a sync, and the watcher syncs edited codebases (but not for
//! ignored paths) so the next search is fresh without syncing itself.
//!
//! Waits poll with generous deadlines; nothing here asserts how long anything took.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::handler::client::ClientHandler;
use rmcp::model::{
    CallToolRequestParams, ClientRequest, ProgressNotificationParam, ProgressToken, ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::{RoleClient, ServiceExt};
use satori_core::{CodebaseState, Home, IndexState, StateStore};
use satori_mcp::Service;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

mod support;

const DEADLINE: Duration = Duration::from_secs(120);

/// A client that keeps every progress notification it receives.
#[derive(Clone, Default)]
struct Recorder {
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
}

impl ClientHandler for Recorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }
}

struct Session {
    client: RunningService<RoleClient, Recorder>,
    recorder: Recorder,
    /// The server's session; it ends when the client goes away.
    served: tokio::task::JoinHandle<anyhow::Result<()>>,
    home: tempfile::TempDir,
    repo: tempfile::TempDir,
}

fn write(root: &Path, rel: &str, body: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, body).unwrap();
}

fn small_repo(root: &Path) {
    write(
        root,
        "src/lib.rs",
        "/// Parses one header line.\npub fn parse_header(line: &str) -> Option<(&str, &str)> {\n    line.split_once(':')\n}\n",
    );
    write(
        root,
        "src/secret.rs",
        "pub fn hidden_pelican_routine() -> u32 {\n    7\n}\n",
    );
    write(root, ".gitignore", "build/\n");
}

/// Enough new files that their sync runs through many batches: long enough for a client to
/// act while it runs.
fn many_files(root: &Path) {
    for i in 0..6000 {
        write(
            root,
            &format!("gen/m{:02}/f{i}.rs", i % 50),
            &format!(
                "/// Generated helper number {i}.\npub fn generated_helper_{i}(x: u64) -> u64 {{\n    x.wrapping_mul({i}) ^ 0x5bd1e995\n}}\n"
            ),
        );
    }
}

impl Session {
    /// A server in `mcp` mode over a fresh home with `tweak` applied to its configuration,
    /// serving one session over a pipe.
    async fn start(tweak: impl FnOnce(&mut satori_mcp::Config)) -> Session {
        let home = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        small_repo(repo.path());
        let mut config = support::config(&home.path().canonicalize().unwrap());
        config.run_mode = satori_mcp::RunMode::Mcp;
        tweak(&mut config);
        let server = satori_mcp::Session::new(&Service::new(config).unwrap());
        let (server_io, client_io) = tokio::io::duplex(1 << 20);
        let served = tokio::spawn(async move {
            let (r, w) = tokio::io::split(server_io);
            satori_mcp::serve_session(server, r, w, std::future::pending()).await
        });
        let recorder = Recorder::default();
        let client = recorder.clone().serve(client_io).await.unwrap();
        Session {
            client,
            recorder,
            served,
            home,
            repo,
        }
    }

    fn root(&self) -> PathBuf {
        self.repo.path().canonicalize().unwrap()
    }

    fn root_str(&self) -> String {
        self.root().to_string_lossy().into_owned()
    }

    fn state(&self) -> CodebaseState {
        StateStore::new(Home::new(self.home.path().canonicalize().unwrap()))
            .load()
            .unwrap()
            .codebases
            .get(&self.root())
            .cloned()
            .expect("the codebase is tracked")
    }

    async fn call(&self, tool: &str, args: Value) -> Value {
        let Value::Object(map) = args else {
            panic!("args must be an object")
        };
        let r = self
            .client
            .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(map))
            .await
            .unwrap();
        r.structured_content.unwrap_or(Value::Null)
    }

    async fn search(&self, query: &str) -> Value {
        self.call(
            "search_codebase",
            json!({"path": self.root_str(), "query": query, "limit": 5}),
        )
        .await
    }

    /// Sends a search as a request that can be cancelled; rmcp's client gives every request
    /// a `progressToken` (the handle's).
    async fn search_with_progress(&self, query: &str) -> rmcp::service::RequestHandle<RoleClient> {
        let Value::Object(args) = json!({"path": self.root_str(), "query": query, "limit": 5})
        else {
            unreachable!()
        };
        let request = ClientRequest::CallToolRequest(rmcp::model::Request::new(
            CallToolRequestParams::new("search_codebase").with_arguments(args),
        ));
        let options = PeerRequestOptions::no_options();
        self.client
            .peer()
            .send_cancellable_request(request, options)
            .await
            .unwrap()
    }

    async fn index(&self) {
        let r = self
            .call(
                "manage_index",
                json!({"action": "create", "path": self.root_str()}),
            )
            .await;
        assert_eq!(r["status"], "ok", "{r}");
        let deadline = tokio::time::Instant::now() + DEADLINE;
        loop {
            let Value::Object(args) = json!({"action": "status", "path": self.root_str()}) else {
                unreachable!()
            };
            let status = self
                .client
                .call_tool(CallToolRequestParams::new("manage_index").with_arguments(args))
                .await
                .unwrap();
            if support::build_over(&serde_json::to_value(&status).unwrap()) {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "indexing did not end"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    async fn wait_until(&self, what: &str, mut done: impl FnMut() -> bool) {
        let deadline = tokio::time::Instant::now() + DEADLINE;
        while !done() {
            assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    fn progress_for(&self, token: &ProgressToken) -> Vec<f64> {
        self.recorder
            .progress
            .lock()
            .unwrap()
            .iter()
            .filter(|p| p.progress_token == *token)
            .map(|p| p.progress)
            .collect()
    }
}

fn mode(answer: &Value) -> String {
    answer["freshnessDecision"]["mode"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn files_of(answer: &Value) -> Vec<String> {
    answer["results"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(|x| x["file"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn structured(r: ServerResult) -> Value {
    match r {
        ServerResult::CallToolResult(r) => r.structured_content.unwrap_or(Value::Null),
        other => panic!("not a tool result: {other:?}"),
    }
}

/// Two searches arriving while the tree is ahead of the index share one sync: one runs it,
/// the other joins it, and both see the new files.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_searches_coalesce_onto_one_sync() {
    let s = Session::start(|c| c.sync_threshold_ms = 0).await;
    s.index().await;
    many_files(s.repo.path());
    let (a, b) = tokio::join!(
        s.search("generated_helper_4321"),
        s.search("generated_helper_4321")
    );
    let mut modes = vec![mode(&a), mode(&b)];
    modes.sort();
    assert_eq!(modes, ["coalesced", "synced"], "{a}\n{b}");
    for answer in [&a, &b] {
        assert_eq!(
            answer["freshnessDecision"]["stats"]["added"], 6000,
            "{answer}"
        );
        assert!(
            files_of(answer).iter().any(|f| f.ends_with("f4321.rs")),
            "{answer}"
        );
    }
}

/// A search whose request carries a `progressToken` gets growing progress for its sync; one
/// without gets none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_syncing_search_reports_progress_only_when_asked() {
    let s = Session::start(|c| c.sync_threshold_ms = 0).await;
    s.index().await;
    write(s.repo.path(), "src/extra.rs", "pub fn extra_walrus() {}\n");
    let handle = s.search_with_progress("extra_walrus").await;
    let token = handle.progress_token.clone();
    let answer = structured(handle.await_response().await.unwrap());
    assert_eq!(mode(&answer), "synced", "{answer}");
    // rmcp hands each notification to its own task, so the order they are recorded in here
    // is not the order they came in: growth is checked on the wire below.
    assert!(
        !s.progress_for(&token).is_empty(),
        "no progress notification"
    );
    drop(s);

    // rmcp's client always sends a token: ask without one in plain JSON lines.
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    small_repo(repo.path());
    let root = repo.path().canonicalize().unwrap();
    let mut config = support::config(&home.path().canonicalize().unwrap());
    config.sync_threshold_ms = 0;
    let server = satori_mcp::Session::new(&Service::new(config).unwrap());
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        let (r, w) = tokio::io::split(server_io);
        satori_mcp::serve_session(server, r, w, std::future::pending()).await
    });
    let (r, mut w) = tokio::io::split(client_io);
    let mut lines = BufReader::new(r).lines();
    let mut notes = Vec::new();
    let mut id = 0;
    let mut request = async |method: &str, params: Value| -> Value {
        id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        w.write_all(format!("{msg}\n").as_bytes()).await.unwrap();
        if method == "initialize" {
            let n = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            // Sent after the answer below is read; rmcp waits for it before serving.
            let answer = read_answer(&mut lines, id, &mut notes).await;
            w.write_all(format!("{n}\n").as_bytes()).await.unwrap();
            return answer;
        }
        read_answer(&mut lines, id, &mut notes).await
    };
    request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    )
    .await;
    let path = root.to_string_lossy().into_owned();
    request(
        "tools/call",
        json!({"name": "manage_index", "arguments": {"action": "create", "path": path}}),
    )
    .await;
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let st = request(
            "tools/call",
            json!({"name": "manage_index", "arguments": {"action": "status", "path": path}}),
        )
        .await;
        if support::build_over(&st["result"]) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "indexing did not end"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    write(repo.path(), "src/more.rs", "pub fn more_walrus() {}\n");
    let answer = request(
        "tools/call",
        json!({"name": "search_codebase", "arguments": {"path": path, "query": "more_walrus"}}),
    )
    .await;
    assert_eq!(
        answer["result"]["structuredContent"]["freshnessDecision"]["mode"], "synced",
        "{answer}"
    );
    // The same with a token: its progress grows, in the order it is written.
    write(repo.path(), "src/most.rs", "pub fn most_walrus() {}\n");
    let answer = request(
        "tools/call",
        json!({"name": "search_codebase", "arguments": {"path": path, "query": "most_walrus"},
               "_meta": {"progressToken": "with-token"}}),
    )
    .await;
    assert_eq!(
        answer["result"]["structuredContent"]["freshnessDecision"]["mode"], "synced",
        "{answer}"
    );
    let progress: Vec<&Value> = notes
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .collect();
    assert!(
        progress
            .iter()
            .all(|n| n["params"]["progressToken"] == "with-token"),
        "{progress:?}"
    );
    let seen: Vec<f64> = progress
        .iter()
        .map(|n| n["params"]["progress"].as_f64().unwrap())
        .collect();
    assert!(!seen.is_empty(), "no progress notification");
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
}

/// Reads lines until the answer to `id`, keeping the notifications read on the way.
async fn read_answer(
    lines: &mut tokio::io::Lines<BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    id: u64,
    notes: &mut Vec<Value>,
) -> Value {
    loop {
        let line = tokio::time::timeout(DEADLINE, lines.next_line())
            .await
            .expect("no answer")
            .unwrap()
            .expect("the server closed the pipe");
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["id"] == id {
            return v;
        }
        notes.push(v);
    }
}

/// `notifications/cancelled` for a syncing search stops the sync: the published index
/// stays in use, and the next search syncs again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_search_stops_its_sync_and_the_next_search_syncs() {
    let s = Session::start(|c| c.sync_threshold_ms = 0).await;
    s.index().await;
    let before = s.state();
    many_files(s.repo.path());
    let handle = s.search_with_progress("generated_helper_17").await;
    let token = handle.progress_token.clone();
    s.wait_until("the sync reports progress", || {
        !s.progress_for(&token).is_empty()
    })
    .await;
    handle
        .cancel(Some("the user moved on".into()))
        .await
        .unwrap();
    s.wait_until("the cancelled sync stops", || {
        s.state().state != IndexState::Indexing
    })
    .await;
    let after = s.state();
    assert_eq!(after.state, IndexState::Indexed, "{after:?}");
    assert_eq!(after.files, before.files, "the old generation is in use");
    assert_eq!(after.last_sync_ms, before.last_sync_ms);

    // Everything the cancelled sync saw is still to do.
    let answer = s.search("generated_helper_17").await;
    assert_eq!(mode(&answer), "synced", "{answer}");
    assert_eq!(answer["freshnessDecision"]["stats"]["added"], 6000);
    assert!(s.state().files > before.files);
}

/// While a search's sync rebuilds the index (the codebase shows `indexing`), another search
/// and `manage_index sync` join that sync instead of skipping it or failing as busy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn searches_and_a_manual_sync_join_a_running_rebuild() {
    let s = Session::start(|c| c.sync_threshold_ms = 0).await;
    s.index().await;
    many_files(s.repo.path());
    let search = s.search_with_progress("generated_helper_5").await;
    let token = search.progress_token.clone();
    s.wait_until("the sync reports progress", || {
        !s.progress_for(&token).is_empty()
    })
    .await;
    let (manual, joined) = tokio::join!(
        s.call(
            "manage_index",
            json!({"action": "sync", "path": s.root_str()}),
        ),
        s.search("generated_helper_5")
    );
    assert_eq!(manual["status"], "ok", "{manual}");
    assert_eq!(mode(&joined), "coalesced", "{joined}");
    assert!(
        files_of(&joined).iter().any(|f| f.ends_with("f5.rs")),
        "{joined}"
    );
    assert!(
        manual["message"].as_str().unwrap().contains("6000 added"),
        "{manual}"
    );
    let answer = structured(search.await_response().await.unwrap());
    assert_eq!(mode(&answer), "synced", "{answer}");
}

/// A reindex asked for while a sync of this process rebuilds the index stops that sync and
/// starts, instead of answering that the index is busy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reindex_replaces_a_running_sync() {
    let s = Session::start(|c| c.sync_threshold_ms = 0).await;
    s.index().await;
    many_files(s.repo.path());
    let search = s.search_with_progress("generated_helper_8").await;
    let token = search.progress_token.clone();
    s.wait_until("the sync reports progress", || {
        !s.progress_for(&token).is_empty()
    })
    .await;
    let r = s
        .call(
            "manage_index",
            json!({"action": "reindex", "path": s.root_str()}),
        )
        .await;
    assert_eq!(r["status"], "ok", "{r}");
    s.wait_until("the reindex ends", || {
        s.state().state != IndexState::Indexing
    })
    .await;
    assert!(s.state().files > 6000, "{:?}", s.state());
}

/// When the client closes its input during a sync, the session ends without waiting for
/// the sync to finish on its own, and the index is left consistent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_end_of_input_during_a_sync_ends_the_session() {
    let s = Session::start(|c| c.sync_threshold_ms = 0).await;
    s.index().await;
    let before = s.state();
    many_files(s.repo.path());
    let pending = s.search_with_progress("generated_helper_99").await;
    let token = pending.progress_token.clone();
    s.wait_until("the sync reports progress", || {
        !s.progress_for(&token).is_empty()
    })
    .await;
    let Session {
        client,
        served,
        home,
        repo,
        ..
    } = s;
    client.cancel().await.unwrap();
    let ended = tokio::time::timeout(DEADLINE, served).await;
    assert!(ended.is_ok(), "the session did not end");
    let st = StateStore::new(Home::new(home.path().canonicalize().unwrap()))
        .load()
        .unwrap()
        .codebases
        .get(&repo.path().canonicalize().unwrap())
        .cloned()
        .unwrap();
    assert_ne!(st.state, IndexState::Indexing, "{st:?}");
    assert!(st.files >= before.files, "{st:?}");
}

/// Edits the tree until the watcher's sync lands (the watch may be set up a moment after
/// the session starts), and returns the sync time it recorded.
async fn edit_until_synced(s: &Session, rel: &str, body: &str) -> u64 {
    let before = s.state().last_sync_ms;
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        write(s.repo.path(), rel, body);
        for _ in 0..80 {
            let st = s.state();
            if st.last_sync_ms != before && st.state == IndexState::SyncCompleted {
                // A sync already running when the file was written may be the one that just
                // ended without it; the write's own event brings the next. So the wait ends
                // once no further sync has ended for three debounce periods.
                let mut last = st.last_sync_ms;
                loop {
                    tokio::time::sleep(Duration::from_millis(600)).await;
                    let now = s.state();
                    if now.last_sync_ms == last && now.state == IndexState::SyncCompleted {
                        return last.unwrap();
                    }
                    last = now.last_sync_ms;
                    assert!(
                        tokio::time::Instant::now() < deadline,
                        "the watcher never settled"
                    );
                }
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the watcher never synced"
        );
    }
}

/// The search did not sync by itself: the watcher's sync had made the index fresh (or, in
/// the instant it takes that sync to be recorded as over, the search joined it).
#[track_caller]
fn assert_no_own_sync(answer: &Value) {
    let m = mode(answer);
    assert!(m == "skipped_recent" || m == "coalesced", "{answer}");
}

fn watching(c: &mut satori_mcp::Config) {
    c.watch = Some(Duration::from_millis(200));
}

/// An edit is synced by the watcher after its debounce: the next search finds the new text
/// without syncing itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watcher_syncs_an_edit_before_the_next_search() {
    let s = Session::start(watching).await;
    s.index().await;
    edit_until_synced(&s, "src/lib.rs", "pub fn tapir_marker_fn() {}\n").await;
    let answer = s.search("tapir_marker_fn").await;
    assert_no_own_sync(&answer);
    assert!(
        files_of(&answer).iter().any(|f| f == "src/lib.rs"),
        "{answer}"
    );
}

/// A search after an edit the watcher saw does not wait for the sync: the changed file is
/// layered over the published generation at once. Here another process holds the index's
/// writer lock, so no sync can run at all: only the layer can show the edit, and it does.
/// Once the lock is free the sync writes the edit down.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_is_searchable_at_once_while_the_sync_cannot_run() {
    let s = Session::start(|c| c.watch = Some(Duration::from_millis(100))).await;
    s.index().await;
    let home = Home::new(s.home.path().canonicalize().unwrap());
    let lock = std::fs::OpenOptions::new()
        .write(true)
        .open(home.codebase(&s.root()).path().join("writer.lock"))
        .unwrap();
    lock.try_lock().unwrap();
    let before = s.state();
    let deadline = tokio::time::Instant::now() + DEADLINE;
    let mut n = 0;
    let found = loop {
        // Rewritten now and then: the watch may be set up a moment after the session starts.
        if n % 50 == 0 {
            write(
                s.repo.path(),
                "src/lib.rs",
                &format!("pub fn layered_ibis_{}() {{}}\n", n / 50),
            );
        }
        // `must:`: the vectors alone would return this small repository's every file.
        let word = format!("layered_ibis_{}", n / 50);
        let answer = s.search(&format!("must:{word} {word}")).await;
        if files_of(&answer).iter().any(|f| f == "src/lib.rs") {
            break answer;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never layered: {answer}"
        );
        n += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(mode(&found), "synced", "{found}");
    assert_eq!(
        found["freshnessDecision"]["stats"]["modified"], 1,
        "{found}"
    );
    // Nothing was written meanwhile.
    assert_eq!(s.state(), before);
    drop(lock);
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while s.state().last_sync_ms == before.last_sync_ms {
        assert!(tokio::time::Instant::now() < deadline, "the sync never ran");
        // A search on the still-dirty root starts the sync the lock held back.
        s.search("layered_ibis").await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Changes the walker ignores (`.git/`, dependency directories, ignored files) cause no
/// sync; a change it sees still does afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ignored_paths_do_not_trigger_a_sync() {
    let s = Session::start(watching).await;
    s.index().await;
    let synced = edit_until_synced(&s, "src/lib.rs", "pub fn first_edit() {}\n").await;
    for (rel, body) in [
        (".git/index", "binary-ish"),
        ("node_modules/pkg/index.js", "module.exports = 1;\n"),
        ("build/out.js", "function generated() {}\n"),
        ("target/debug/x.rs", "fn x() {}\n"),
        ("notes.bin", "\u{0}\u{1}"),
    ] {
        write(s.repo.path(), rel, body);
    }
    // Many debounce periods: a sync, had one been triggered, would have landed.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(s.state().last_sync_ms, Some(synced));
    edit_until_synced(&s, "src/lib.rs", "pub fn second_edit() {}\n").await;
}

/// Editing `.satoriignore` triggers the sync that drops the newly ignored file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_satoriignore_edit_is_reconciled() {
    let s = Session::start(watching).await;
    s.index().await;
    let found = s.search("hidden_pelican_routine").await;
    assert!(
        files_of(&found).iter().any(|f| f == "src/secret.rs"),
        "{found}"
    );
    edit_until_synced(&s, ".satoriignore", "src/secret.rs\n").await;
    let answer = s.search("hidden_pelican_routine").await;
    assert_no_own_sync(&answer);
    assert!(
        !files_of(&answer).iter().any(|f| f == "src/secret.rs"),
        "{answer}"
    );
}

/// Codebases can nest: an edit under the inner root changes the outer codebase too, and a
/// search of the outer one finds it at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_under_a_nested_codebase_freshens_the_outer_one() {
    let s = Session::start(watching).await;
    write(
        s.repo.path(),
        "inner/src/nest.rs",
        "pub fn first_nest() {}\n",
    );
    s.index().await;
    let inner = s.root().join("inner");
    let r = s
        .call(
            "manage_index",
            json!({"action": "create", "path": inner.to_string_lossy()}),
        )
        .await;
    assert_eq!(r["status"], "ok", "{r}");
    let store = StateStore::new(Home::new(s.home.path().canonicalize().unwrap()));
    s.wait_until("the inner codebase is indexed", || {
        store
            .load()
            .unwrap()
            .codebases
            .get(&inner)
            .is_some_and(|c| c.state == IndexState::Indexed)
    })
    .await;
    let deadline = tokio::time::Instant::now() + DEADLINE;
    let mut n = 0;
    let found = loop {
        // Rewritten now and then: the watch may be set up a moment after the build.
        if n % 50 == 0 {
            write(
                s.repo.path(),
                "inner/src/nest.rs",
                &format!("pub fn nested_wren_{}() {{}}\n", n / 50),
            );
        }
        let word = format!("nested_wren_{}", n / 50);
        let answer = s.search(&format!("must:{word} {word}")).await;
        if files_of(&answer).iter().any(|f| f == "inner/src/nest.rs") {
            break answer;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the outer codebase never saw the edit: {answer}"
        );
        n += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_ne!(mode(&found), "skipped_recent", "{found}");
}

/// A root deleted and created again is watched again: an edit after it is back is synced
/// by the watcher, and the next search finds it without syncing itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_root_deleted_and_created_again_is_watched_again() {
    let s = Session::start(watching).await;
    s.index().await;
    edit_until_synced(&s, "src/lib.rs", "pub fn before_removal() {}\n").await;
    std::fs::remove_dir_all(s.repo.path()).unwrap();
    small_repo(s.repo.path());
    // The removal's own events may bring one sync of the new tree; only a watch of the new
    // directory brings the next.
    edit_until_synced(&s, "src/lib.rs", "pub fn after_return() {}\n").await;
    edit_until_synced(&s, "src/lib.rs", "pub fn after_return_kite() {}\n").await;
    let answer = s.search("after_return_kite").await;
    assert_no_own_sync(&answer);
    assert!(
        files_of(&answer).iter().any(|f| f == "src/lib.rs"),
        "{answer}"
    );
}

/// Without a watcher, the periodic re-check still brings an edit in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_periodic_recheck_syncs_without_a_watcher() {
    let s = Session::start(|c| c.reconcile_every = Some(Duration::from_millis(300))).await;
    s.index().await;
    edit_until_synced(&s, "src/lib.rs", "pub fn periodic_heron() {}\n").await;
    let answer = s.search("periodic_heron").await;
    assert!(
        files_of(&answer).iter().any(|f| f == "src/lib.rs"),
        "{answer}"
    );
}

/// SIGTERM stops a long-running server cleanly: exit status 0 and nothing on stdout but the
/// protocol.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_exits_cleanly() {
    let home = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_satori"))
        .env("SATORI_HOME", home.path())
        .env("SATORI_RUN_MODE", "mcp")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    stdin
        .write_all(format!("{init}\n").as_bytes())
        .await
        .unwrap();
    let line = tokio::time::timeout(DEADLINE, lines.next_line())
        .await
        .expect("no answer to initialize")
        .unwrap()
        .unwrap();
    let answer: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(answer["id"], 1, "{answer}");
    let pid = child.id().unwrap() as libc::pid_t;
    // SAFETY: sends a signal to the child this test spawned and still owns.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let status = tokio::time::timeout(DEADLINE, child.wait())
        .await
        .expect("the server did not exit")
        .unwrap();
    assert!(status.success(), "{status:?}");
    let mut rest = Vec::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        rest.push(line);
    }
    assert!(rest.is_empty(), "stdout after the handshake: {rest:?}");
    drop(stdin);
}
