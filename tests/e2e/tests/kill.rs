//! The crash discipline under SIGKILL: the real `satori` is killed at seeded points spread
//! over every phase of `create`, `reindex` and `sync` (walk, chunk + embed, write, publish),
//! and after every kill a fresh server must start, report no partial index as complete, serve
//! either the previous generation or the new one (or say the codebase needs indexing), and a
//! later build must complete and leave no unfinished generation behind.
//!
//! Kill points follow the build's own progress: a calibration run of each operation records
//! when each `phase` appears in `state.json`, and a kill waits for its phase to show up there,
//! then for a seeded share of that phase's calibrated length. So the points stay inside their
//! phases however fast the phases become. The seed is printed; `SATORI_KILL_SEED=<n>` replays
//! a run. The corpus is real Rust source copied from the local cargo registry.

#![cfg(unix)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use satori_e2e::binary;
use satori_protocol::env;
use serde_json::{Value, json};

/// Kills in one run; every one of them is checked.
const KILLS: usize = 52;
/// Every this many kills, one operation runs to completion and the index is checked whole.
const KILLS_PER_COMPLETION: usize = 17;
/// Generous bound on any one wait (a debug build on busy cores).
const WAIT: Duration = Duration::from_secs(120);
/// Corpus size: enough files for every phase to take a measurable time in a debug build.
const CORPUS_FILES: usize = 16;
const CORPUS_MAX_FILE_BYTES: u64 = 64 * 1024;

/// A small deterministic generator (64-bit LCG): the seed decides every choice of the run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn unit(&mut self) -> f64 {
        (self.next() % 1_000_000) as f64 / 1_000_000.0
    }
}

/// A `satori` process spoken to in raw JSON-RPC lines.
struct Server {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<Value>,
    next_id: u64,
}

impl Server {
    /// Starts a server over `home` and completes the handshake: it must start cleanly.
    fn start(home: &Path) -> Server {
        let mut child = Command::new(binary("satori"))
            .env(env::HOME, home)
            // On-demand mode, and no freshness sync from the searches of a process that has
            // checked the tree itself: the one search after a kill, in a fresh process,
            // checks it (and may sync the tree in), and the test accounts for that.
            .env(env::RUN_MODE, "cli")
            .env(env::SYNC_THRESHOLD_MS, "86400000")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn satori");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not a JSON message on stdout ({e}): {line:?}"));
                if tx.send(v).is_err() {
                    return;
                }
            }
        });
        let mut s = Server {
            child,
            stdin,
            lines,
            next_id: 0,
        };
        let init = s.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "kill", "version": "1"}}),
        );
        assert!(init.get("result").is_some(), "initialize: {init}");
        s.line(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s
    }

    fn line(&mut self, v: &Value) {
        writeln!(self.stdin, "{v}").expect("write to satori");
        self.stdin.flush().expect("flush to satori");
    }

    /// Sends a request without waiting for its answer; returns its id.
    fn send(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.line(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    fn wait(&mut self, id: u64) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(m) if m["id"] == id => return m,
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => panic!("no answer to request {id} in {WAIT:?}"),
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("satori exited before answering {id}")
                }
            }
        }
    }

    /// Whether the answer to `id` has arrived (other messages are dropped).
    fn poll_answer(&mut self, id: u64) -> bool {
        while let Ok(m) = self.lines.try_recv() {
            if m["id"] == id {
                return true;
            }
        }
        false
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params);
        self.wait(id)
    }

    fn call_args(tool: &str, args: Value) -> Value {
        json!({"name": tool, "arguments": args})
    }

    /// A tool call's `structuredContent`.
    fn call(&mut self, tool: &str, args: Value) -> Value {
        let answer = self.request("tools/call", Self::call_args(tool, args));
        let envelope = answer["result"]["structuredContent"].clone();
        assert!(envelope.is_object(), "{tool}: {answer}");
        envelope
    }

    fn status(&mut self, root: &str) -> Value {
        self.call("manage_index", json!({"action": "status", "path": root}))
    }

    /// SIGKILL, and reap the process.
    fn kill(mut self) {
        self.child.kill().expect("SIGKILL satori");
        self.child.wait().expect("reap satori");
    }

    /// Ends the session by closing stdin, as a client does.
    fn stop(self) {
        let Server {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        let status = child.wait().expect("satori exits");
        assert!(status.success(), "satori exited with {status}");
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// `create` with `force` on a codebase that may have an index, or after `clear`.
    Create,
    Reindex,
    /// `sync` after the tree was edited.
    Sync,
}

impl Op {
    fn args(self, root: &str) -> Value {
        match self {
            Op::Create => json!({"action": "create", "path": root, "force": true}),
            Op::Reindex => {
                json!({"action": "reindex", "path": root, "allowUnnecessaryReindex": true})
            }
            Op::Sync => json!({"action": "sync", "path": root}),
        }
    }
}

/// When each phase appeared and how long the operation took, from one run to completion.
#[derive(Debug, Default, Clone)]
struct Timeline {
    /// Phases in order of appearance with the time of their first sighting.
    phases: Vec<(String, Duration)>,
    total: Duration,
}

impl Timeline {
    /// The calibrated length of `phase` (to the next phase, or to the end).
    fn length(&self, i: usize) -> Duration {
        let start = self.phases[i].1;
        let end = self.phases.get(i + 1).map_or(self.total, |p| p.1);
        end.saturating_sub(start)
    }
}

/// The codebase record in `state.json`, if any (`None` while the file is being replaced).
fn record(home: &Path, root: &str) -> Option<Value> {
    let bytes = std::fs::read(home.join("state.json")).ok()?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    Some(v["codebases"][root].clone())
}

fn phase_of(rec: &Value) -> Option<String> {
    (rec["state"] == "indexing")
        .then(|| rec["phase"].as_str().map(str::to_owned))
        .flatten()
}

/// Runs `op` to completion on `server` while watching `state.json`; returns its timeline.
fn run_to_completion(server: &mut Server, home: &Path, root: &str, op: Op) -> Timeline {
    let started = Instant::now();
    let call = Server::call_args("manage_index", op.args(root));
    let mut id = server.send("tools/call", call.clone());
    let mut t = Timeline::default();
    let mut answered = None;
    loop {
        if let Some(p) = record(home, root).as_ref().and_then(phase_of)
            && t.phases.last().is_none_or(|(last, _)| *last != p)
        {
            t.phases.push((p, started.elapsed()));
        }
        if answered.is_none()
            && let Ok(m) = server.lines.try_recv()
            && m["id"] == id
        {
            answered = Some(m);
        }
        if let Some(a) = &answered {
            let env = &a["result"]["structuredContent"];
            // The record of the previous build may say it is done a moment before that
            // build lets go of the writer lock: ask again.
            if env["status"] == "not_ready" && env["reason"] == "indexing" {
                std::thread::sleep(Duration::from_millis(20));
                id = server.send("tools/call", call.clone());
                answered = None;
                continue;
            }
            assert_eq!(env["status"], "ok", "{op:?}: {a}");
            let done = record(home, root).is_some_and(|r| r["state"] != "indexing");
            if done {
                t.total = started.elapsed();
                return t;
            }
        }
        assert!(
            started.elapsed() < WAIT,
            "{op:?} did not finish in {WAIT:?}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Copies up to [`CORPUS_FILES`] Rust sources from the cargo registry into `root`, in a
/// stable order; returns how many.
fn copy_corpus(root: &Path) -> usize {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cargo"));
    let mut crates: Vec<PathBuf> = std::fs::read_dir(cargo_home.join("registry/src"))
        .expect("a cargo registry with sources")
        .flatten()
        .flat_map(|index| {
            std::fs::read_dir(index.path())
                .into_iter()
                .flatten()
                .flatten()
        })
        .map(|c| c.path())
        .collect();
    crates.sort();
    let mut files = Vec::new();
    for krate in crates {
        collect_rs(&krate.join("src"), &mut files);
        if files.len() >= CORPUS_FILES {
            break;
        }
    }
    files.truncate(CORPUS_FILES);
    for (i, f) in files.iter().enumerate() {
        let name = f.file_name().unwrap().to_string_lossy();
        let dest = root
            .join(format!("m{:02}", i % 16))
            .join(format!("{i:03}_{name}"));
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(f, &dest).unwrap();
    }
    files.len()
}

fn collect_rs(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            collect_rs(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs")
            && p.metadata()
                .is_ok_and(|m| m.len() > 200 && m.len() <= CORPUS_MAX_FILE_BYTES)
        {
            out.push(p);
        }
    }
}

/// The two trees a sync moves between: `B` is `A` with two files added, one removed and a
/// few edited, so the two generations differ in file count.
struct Trees {
    root: PathBuf,
    on_b: bool,
    edited: Vec<PathBuf>,
    /// Edits made so far: each one writes new text, so no sync ever finds the tree back in
    /// the state of an earlier generation (and skips its build).
    edits: usize,
}

const ADDED: [&str; 2] = ["zz_added_by_sync.rs", "zz_added_by_sync_too.rs"];
const REMOVED: &str = "m00/000_removed.rs";

impl Trees {
    fn flip(&mut self) {
        let removed = self.root.join(REMOVED);
        for added in ADDED.map(|a| self.root.join(a)) {
            if self.on_b {
                std::fs::remove_file(&added).unwrap();
            } else {
                std::fs::write(&added, "pub fn kill_suite_added_marker() -> u32 { 7 }\n").unwrap();
            }
        }
        if self.on_b {
            std::fs::write(&removed, "pub fn kill_suite_removed_marker() {}\n").unwrap();
        } else {
            std::fs::remove_file(&removed).unwrap();
        }
        self.edits += 1;
        for f in &self.edited {
            let mut text = std::fs::read_to_string(f).unwrap();
            if let Some(at) = text.rfind("\n// kill suite edit") {
                text.truncate(at);
            }
            text.push_str(&format!("\n// kill suite edit {}\n", self.edits));
            std::fs::write(f, text).unwrap();
        }
        self.on_b = !self.on_b;
    }
}

/// What the index may hold after a kill: the generation before the operation or the one it
/// was building.
#[derive(Debug, Clone, Copy)]
struct Expect {
    /// File count of the published index before the operation (`None`: there was none).
    before: Option<u64>,
    /// File count of the tree the operation indexes.
    after: u64,
}

/// The codebase directory under `home` (one codebase is tracked).
fn codebase_dir(home: &Path) -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(home.join("indexes"))
        .expect("indexes directory")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(dirs.len(), 1, "one codebase directory: {dirs:?}");
    dirs.pop().unwrap()
}

/// Generation directories without their `COMPLETE` marker.
fn unfinished_generations(home: &Path) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(codebase_dir(home)) else {
        return Vec::new();
    };
    rd.flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("gen-"))
        .filter(|e| !e.path().join("COMPLETE").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// After a kill, on a fresh server: the codebase is either searchable from a complete
/// generation holding the files before or after the operation, or says it needs indexing.
/// Returns the file count of the index now published, if any.
fn check_after_kill(
    server: &mut Server,
    home: &Path,
    root: &str,
    expect: Expect,
    what: &str,
) -> Option<u64> {
    let st = server.status(root);
    let state = st["state"].as_str().unwrap_or_default().to_owned();
    match state.as_str() {
        "indexed" | "sync_completed" => {
            let files = st["stats"]["files"]
                .as_u64()
                .expect("files of a searchable index");
            assert!(
                Some(files) == expect.before || files == expect.after,
                "{what}: status claims {files} files, the index had {:?} before and the tree has {}: {st}",
                expect.before,
                expect.after
            );
            let dir = codebase_dir(home);
            let current = std::fs::read_to_string(dir.join("CURRENT"))
                .unwrap_or_else(|e| panic!("{what}: {state} without CURRENT ({e}): {st}"));
            assert!(
                dir.join(current.trim()).join("COMPLETE").is_file(),
                "{what}: {state} but CURRENT names an unfinished generation {current}: {st}"
            );
            let found = server.call(
                "search_codebase",
                json!({"path": root, "query": "fn new", "scope": "mixed", "limit": 3}),
            );
            assert_eq!(
                found["status"], "ok",
                "{what}: search after the kill: {found}"
            );
            assert!(
                found["results"].as_array().is_some_and(|r| !r.is_empty()),
                "{what}: no results: {found}"
            );
            // A fresh process checks the tree before its first search: a sync the kill cut
            // short is done now, and the index holds the tree.
            let st = server.status(root);
            let now = st["stats"]["files"]
                .as_u64()
                .expect("files of a searchable index");
            assert!(
                now == files || now == expect.after,
                "{what}: after the search the index has {now} files, it had {files} and the tree has {}: {st}",
                expect.after
            );
            Some(now)
        }
        "indexfailed" | "requires_reindex" | "not_indexed" | "not_found" => {
            assert!(
                expect.before.is_none(),
                "{what}: a published index was lost ({state}): {st}"
            );
            None
        }
        _ => panic!("{what}: unexpected state after a kill: {st}"),
    }
}

/// After an operation ran to completion: the index holds the tree, search works, and no
/// unfinished generation is left.
fn check_complete(server: &mut Server, home: &Path, root: &str, files: u64, what: &str) {
    let st = server.status(root);
    assert!(
        st["state"] == "indexed" || st["state"] == "sync_completed",
        "{what}: {st}"
    );
    assert_eq!(st["stats"]["files"], files, "{what}: {st}");
    assert_eq!(st["stats"]["indexStatus"], "completed", "{what}: {st}");
    let unfinished = unfinished_generations(home);
    assert!(
        unfinished.is_empty(),
        "{what}: unfinished generations left: {unfinished:?}"
    );
}

#[test]
fn killed_builds_never_leave_a_partial_index() {
    let seed = std::env::var("SATORI_KILL_SEED")
        .ok()
        .map(|s| s.parse::<u64>().expect("SATORI_KILL_SEED is a number"))
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                % 1_000_000_000
        });
    // The seed is the first thing a failure report needs.
    std::io::stderr()
        .write_all(
            format!("kill suite seed: {seed} (replay with SATORI_KILL_SEED={seed})\n").as_bytes(),
        )
        .unwrap();
    let mut rng = Rng(seed);

    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    let copied = copy_corpus(repo.path());
    assert!(
        copied >= CORPUS_FILES / 2,
        "only {copied} sources found in the cargo registry"
    );
    let root_path = repo.path().canonicalize().unwrap();
    let root = root_path.to_str().unwrap().to_owned();
    std::fs::write(
        root_path.join(REMOVED),
        "pub fn kill_suite_removed_marker() {}\n",
    )
    .unwrap();
    let mut trees = Trees {
        root: root_path.clone(),
        on_b: false,
        edits: 0,
        edited: (1..6)
            .map(|i| root_path.join(format!("m{i:02}")))
            .filter_map(|d| {
                let mut f: Vec<PathBuf> = std::fs::read_dir(d)
                    .ok()?
                    .flatten()
                    .map(|e| e.path())
                    .collect();
                f.sort();
                f.into_iter().next()
            })
            .collect(),
    };

    // Calibration: each operation once to completion, watching its phases.
    let mut server = Server::start(home.path());
    let mut timelines = Vec::new();
    let create = run_to_completion(&mut server, home.path(), &root, Op::Create);
    let files_a = server.status(&root)["stats"]["files"].as_u64().unwrap();
    timelines.push((Op::Create, create));
    timelines.push((
        Op::Reindex,
        run_to_completion(&mut server, home.path(), &root, Op::Reindex),
    ));
    trees.flip();
    timelines.push((
        Op::Sync,
        run_to_completion(&mut server, home.path(), &root, Op::Sync),
    ));
    let files_b = server.status(&root)["stats"]["files"].as_u64().unwrap();
    assert_ne!(files_a, files_b, "the two trees differ in file count");
    server.stop();
    let mut report = String::new();
    for (op, t) in &timelines {
        report.push_str(&format!("calibration {op:?}: {:?} total", t.total));
        for (i, (p, at)) in t.phases.iter().enumerate() {
            report.push_str(&format!(", {p} at {at:?} for {:?}", t.length(i)));
        }
        report.push('\n');
    }
    std::io::stderr().write_all(report.as_bytes()).unwrap();
    report.clear();

    let tree_files = |trees: &Trees| if trees.on_b { files_b } else { files_a };
    let mut published: Option<u64> = Some(files_b);
    let mut landed: Vec<(Op, String)> = Vec::new();
    let mut since_completion = 0;
    let mut round = 0;
    while landed.len() < KILLS {
        round += 1;
        // A kill that left no index is followed by a create that must complete; so is every
        // run of kills. Sync and reindex need an index to work on.
        let completes = published.is_none() || since_completion == KILLS_PER_COMPLETION;
        let op = match (published, rng.below(3)) {
            (None, _) | (_, 0) => Op::Create,
            (_, 1) => Op::Reindex,
            _ => Op::Sync,
        };
        let mut server = Server::start(home.path());
        if op == Op::Create && !completes && rng.below(4) == 0 {
            let cleared = server.call("manage_index", json!({"action": "clear", "path": root}));
            assert_eq!(cleared["status"], "ok", "{cleared}");
            published = None;
        }
        if op == Op::Sync {
            trees.flip();
        }
        let expect = Expect {
            before: published,
            after: tree_files(&trees),
        };
        if completes {
            let what = format!("completed {op:?} in round {round}, seed {seed}");
            run_to_completion(&mut server, home.path(), &root, op);
            check_complete(&mut server, home.path(), &root, expect.after, &what);
            published = Some(expect.after);
            since_completion = 0;
            server.stop();
            continue;
        }
        since_completion += 1;
        let kill = landed.len();

        // The kill point: a phase of the calibrated run (or the instant the call is sent),
        // and a share of that phase's length.
        let timeline = &timelines.iter().find(|(o, _)| *o == op).unwrap().1;
        let pick = rng.below(timeline.phases.len() + 1);
        let share = rng.unit();
        let started = Instant::now();
        let id = server.send(
            "tools/call",
            Server::call_args("manage_index", op.args(&root)),
        );
        let mut answered = false;
        // Where the operation is: its phase while it builds, else before or after the build.
        let mut now_at = |server: &mut Server| {
            answered |= server.poll_answer(id);
            match record(home.path(), &root).as_ref().and_then(phase_of) {
                Some(p) => p,
                // create and reindex answer once the build is under way (the record says
                // indexing by then); sync answers when it is done.
                None if answered => "finished".into(),
                None => "before the build".into(),
            }
        };
        let delay = match pick.checked_sub(1) {
            // Before the first phase: reading the request, a sync's comparison of the tree.
            None => timeline
                .phases
                .first()
                .map_or(timeline.total, |p| p.1)
                .mul_f64(share),
            Some(i) => {
                let wanted: Vec<&str> = timeline.phases[i..]
                    .iter()
                    .map(|(p, _)| p.as_str())
                    .collect();
                // Wait for the phase (or a later one, or the end of the operation).
                loop {
                    let at = now_at(&mut server);
                    if wanted.contains(&at.as_str()) || at == "finished" {
                        break;
                    }
                    assert!(
                        started.elapsed() < WAIT,
                        "{op:?} never reached {}",
                        wanted[0]
                    );
                    std::thread::sleep(Duration::from_millis(1));
                }
                timeline.length(i).mul_f64(share)
            }
        };
        std::thread::sleep(delay);
        let last_phase = now_at(&mut server);
        server.kill();
        let what = format!("kill #{kill} during {op:?} ({last_phase}), seed {seed}");
        landed.push((op, last_phase));

        let mut server = Server::start(home.path());
        published = check_after_kill(&mut server, home.path(), &root, expect, &what);
        server.stop();
    }

    // The last word: a build completes over whatever the kills left, and cleans up.
    let mut server = Server::start(home.path());
    run_to_completion(&mut server, home.path(), &root, Op::Create);
    check_complete(
        &mut server,
        home.path(),
        &root,
        tree_files(&trees),
        "final create",
    );
    server.stop();

    for op in [Op::Create, Op::Reindex, Op::Sync] {
        let mut phases: Vec<&str> = landed
            .iter()
            .filter(|(o, _)| *o == op)
            .map(|(_, p)| p.as_str())
            .collect();
        phases.sort_unstable();
        report.push_str(&format!("{op:?}: {} kills at {phases:?}\n", phases.len()));
    }
    std::io::stderr().write_all(report.as_bytes()).unwrap();
    assert!(landed.len() >= 50, "{} kills", landed.len());
}
