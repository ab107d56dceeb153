//! A branch switch that touches 1,000 files converges: after `git checkout` and a `sync`, the
//! index of the real `satori` answers exactly as a fresh index of the checked-out tree built in
//! another `SATORI_HOME` (same files and chunks in `status`, same results for a set of
//! queries), and again after switching back. Sync may rebuild or update in place; either way
//! the answers must not tell the two apart.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use satori_e2e::binary;
use serde_json::{Value, json};

/// Files on branch `a`; branch `b` removes `REMOVED` of them, modifies `MODIFIED` and adds
/// `ADDED` new ones: 1,000 files differ.
const FILES: usize = 1_000;
const MODIFIED: usize = 400;
const REMOVED: usize = 300;
const ADDED: usize = 300;

const VERBS: &[&str] = &[
    "parse", "load", "store", "fetch", "retry", "merge", "encode", "decode", "validate", "render",
    "schedule", "flush", "resolve", "compress", "index",
];
const NOUNS: &[&str] = &[
    "token", "session", "config", "request", "user", "invoice", "packet", "record", "cache",
    "route", "chunk", "segment", "message", "report", "image",
];
const ROLES: &[&str] = &["Manager", "Builder", "Registry", "Client", "Worker"];
const DOMAINS: &[&str] = &["billing", "search", "auth", "storage", "network", "media"];

/// Queries asked of both indexes: identifiers shared by many files, names that exist only on
/// one branch (`_v2` functions of modified files), words of removed and added files, and
/// questions in plain words.
const QUERIES: &[&str] = &[
    "retry_session",
    "parse_token",
    "SessionRegistry",
    "CacheWorker",
    "validate_invoice_v2",
    "flush_packet_v2",
    "compress_image",
    "schedule_report",
    "retry a failed request with backoff",
    "load the configuration from disk",
    "merge cache entries that expired",
    "lang:python encode message",
    "path:src/auth/** resolve user",
];

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// One source file, shaped like the everyday code of its language. `edit` is the branch-`b`
/// version of a modified file: a renamed function, a changed body and one more line.
fn source(i: usize, edit: bool) -> (String, String) {
    let verb = VERBS[i % VERBS.len()];
    let noun = NOUNS[(i / VERBS.len()) % NOUNS.len()];
    let role = ROLES[i % ROLES.len()];
    let domain = DOMAINS[i % DOMAINS.len()];
    let (kind, ty) = (capitalize(noun), format!("{}{role}", capitalize(noun)));
    let func = if edit {
        format!("{verb}_{noun}_v2")
    } else {
        format!("{verb}_{noun}")
    };
    let limit = 16 + i % 97 + usize::from(edit) * 1000;
    let extra = if edit { "changed on branch b" } else { "" };
    let (ext, body) = match i % 4 {
        0 => (
            "rs",
            format!(
                "//! {kind} handling for the {domain} service (file {i}).\n\
                 use std::collections::HashMap;\n\n\
                 /// Keeps each {noun} seen so far, at most {limit} of them. {extra}\n\
                 pub struct {ty} {{\n    entries: HashMap<String, u64>,\n    limit: usize,\n}}\n\n\
                 impl {ty} {{\n    pub fn new() -> Self {{\n        Self {{ entries: HashMap::new(), limit: {limit} }}\n    }}\n\n\
                 \x20   /// Tries to {verb} one {noun}; gives up when the table is full.\n\
                 \x20   pub fn {func}(&mut self, key: &str) -> Option<u64> {{\n\
                 \x20       if self.entries.len() >= self.limit {{\n            return None;\n        }}\n\
                 \x20       let n = key.len() as u64 * {i};\n        self.entries.insert(key.to_string(), n);\n        Some(n)\n    }}\n}}\n"
            ),
        ),
        1 => (
            "py",
            format!(
                "\"\"\"{kind} helpers for {domain} (file {i}).\"\"\"\nimport time\n\n\n\
                 def {func}(items, retries=3):\n    \"\"\"{verb} every {noun}, retrying a failed one with backoff. {extra}\"\"\"\n\
                 \x20   done = []\n    for item in items:\n        for attempt in range(retries):\n            try:\n                done.append(item.{verb}())\n                break\n            except OSError:\n                time.sleep(2 ** attempt * {limit} / 1000)\n    return done\n\n\n\
                 class {ty}:\n    \"\"\"Owns the {noun} objects of one {domain} request.\"\"\"\n\n    def __init__(self):\n        self.items = []\n\n    def add(self, item):\n        self.items.append(item)\n        return len(self.items) <= {limit}\n"
            ),
        ),
        2 => (
            "ts",
            format!(
                "// {kind} utilities of the {domain} module (file {i}).\n\n\
                 export interface {kind}Options {{\n  limit: number;\n  label: string;\n}}\n\n\
                 /** {verb} the {noun} and report how long it took. {extra} */\n\
                 export async function {func}(input: string, options: {kind}Options): Promise<number> {{\n\
                 \x20 const started = Date.now();\n  if (input.length > options.limit) {{\n    throw new Error(`{noun} too long: ${{options.label}}`);\n  }}\n  await new Promise((r) => setTimeout(r, {limit}));\n  return Date.now() - started;\n}}\n\n\
                 export class {ty} {{\n  private readonly seen = new Map<string, number>();\n\n  record(key: string): number {{\n    const n = (this.seen.get(key) ?? 0) + 1;\n    this.seen.set(key, n);\n    return n;\n  }}\n}}\n"
            ),
        ),
        _ => (
            "go",
            format!(
                "// Package {domain} holds {noun} code (file {i}).\npackage {domain}\n\n\
                 import \"errors\"\n\n\
                 // {ty} merges cache entries that expired and keeps at most {limit}. {extra}\n\
                 type {ty} struct {{\n\tentries map[string]int\n}}\n\n\
                 // {func} loads the configuration from disk for one {noun}.\n\
                 func (m *{ty}) {func}(key string) (int, error) {{\n\tif len(m.entries) >= {limit} {{\n\t\treturn 0, errors.New(\"{noun}: full\")\n\t}}\n\tm.entries[key] = len(key) * {i}\n\treturn m.entries[key], nil\n}}\n"
            ),
        ),
    };
    (format!("src/{domain}/{noun}_{verb}_{i}.{ext}"), body)
}

fn git(repo: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=satori-test",
            "-c",
            "user.email=test@localhost",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(repo)
        .output()
        .expect("git must be installed to run this test");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn write(repo: &Path, rel: &str, body: &str) {
    let p = repo.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, body).unwrap();
}

/// A repository with branches `a` and `b` that differ in exactly 1,000 files; `a` is checked out.
fn two_branch_repo(repo: &Path) {
    git(repo, &["init", "-q", "-b", "a"]);
    let paths: Vec<String> = (0..FILES)
        .map(|i| {
            let (rel, body) = source(i, false);
            write(repo, &rel, &body);
            rel
        })
        .collect();
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "a"]);
    git(repo, &["checkout", "-q", "-b", "b"]);
    // Spread the changes over the whole tree: of every ten files, four are modified, three
    // removed and three kept.
    let (mut modified, mut removed) = (0, 0);
    for (i, rel) in paths.iter().enumerate() {
        match i % 10 {
            0..=3 => {
                write(repo, rel, &source(i, true).1);
                modified += 1;
            }
            4..=6 => {
                std::fs::remove_file(repo.join(rel)).unwrap();
                removed += 1;
            }
            _ => {}
        }
    }
    assert_eq!((modified, removed), (MODIFIED, REMOVED));
    for i in FILES..FILES + ADDED {
        let (rel, body) = source(i, false);
        write(repo, &rel, &body);
    }
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "b"]);
    git(repo, &["checkout", "-q", "a"]);
}

/// One MCP session with the real server over stdio.
struct Session {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Session {
    fn start(home: &Path) -> Session {
        let mut child = Command::new(binary("satori"))
            .env("SATORI_HOME", home)
            .env("SATORI_RUN_MODE", "cli")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut s = Session {
            child,
            stdin,
            stdout,
            next_id: 0,
        };
        s.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "e2e", "version": "0"}}),
        );
        s.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s
    }

    fn send(&mut self, msg: Value) {
        writeln!(self.stdin, "{msg}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            let n = self.stdout.read_line(&mut line).unwrap();
            assert!(n > 0, "the server closed stdout during {method}");
            let msg: Value = serde_json::from_str(&line).unwrap();
            if msg["id"] == id && msg.get("method").is_none() {
                assert!(msg.get("error").is_none(), "{method}: {msg}");
                return msg["result"].clone();
            }
        }
    }

    /// A tool's envelope (`structuredContent`).
    fn call(&mut self, tool: &str, args: Value) -> Value {
        let r = self.request("tools/call", json!({"name": tool, "arguments": args}));
        r["structuredContent"].clone()
    }

    fn status(&mut self, repo: &str) -> Value {
        self.call("manage_index", json!({"action": "status", "path": repo}))
    }

    /// Creates the index and waits for the build to end.
    fn index(&mut self, repo: &str) {
        let env = self.call("manage_index", json!({"action": "create", "path": repo}));
        assert_eq!(env["status"], "ok", "{env}");
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            let st = self.status(repo);
            if st["state"] != "indexing" {
                assert_eq!(st["state"], "indexed", "{st}");
                return;
            }
            assert!(Instant::now() < deadline, "indexing never ended: {st}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Syncs and returns the counts the sync reported.
    fn sync(&mut self, repo: &str) -> Value {
        // A build that has just published may hold its lock a moment longer.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let env = self.call("manage_index", json!({"action": "sync", "path": repo}));
            if env["status"] == "not_ready" && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
            assert_eq!(env["status"], "ok", "{env}");
            return env["stats"].clone();
        }
    }

    /// What a user of the index can observe: its counts and the answers to `QUERIES`
    /// (grouped in the default scope and raw chunks over everything), without timestamps.
    fn observe(&mut self, repo: &str) -> Value {
        let st = self.status(repo);
        assert!(
            ["indexed", "sync_completed"].contains(&st["state"].as_str().unwrap_or("")),
            "{st}"
        );
        let mut answers = vec![json!({
            "files": st["stats"]["files"],
            "chunks": st["stats"]["chunks"],
        })];
        for query in QUERIES {
            for (mode, scope) in [("grouped", "runtime"), ("raw", "mixed")] {
                let env = self.call(
                    "search_codebase",
                    json!({"path": repo, "query": query, "resultMode": mode, "scope": scope,
                           "rankingMode": "default", "limit": 20}),
                );
                assert_eq!(env["status"], "ok", "{query}: {env}");
                let hits: Vec<Value> = env["results"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| {
                        json!([
                            r["file"],
                            r["span"]["startLine"],
                            r["span"]["endLine"],
                            r["symbolLabel"]
                        ])
                    })
                    .collect();
                answers.push(json!({"query": query, "mode": mode, "hits": hits}));
            }
        }
        Value::Array(answers)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The first answer (counts, or one query) where the synced index and the fresh one differ.
fn check(step: &str, synced: &Value, fresh: &Value) {
    let (s, f) = (synced.as_array().unwrap(), fresh.as_array().unwrap());
    for (a, b) in s.iter().zip(f) {
        assert_eq!(
            a, b,
            "{step}: the synced index answers differently from a fresh index of the same tree"
        );
    }
    assert_eq!(s.len(), f.len());
}

#[test]
fn a_1000_file_branch_switch_converges_to_a_fresh_index() {
    let dir = tempfile::tempdir().unwrap();
    let repo_path = dir.path().join("repo");
    std::fs::create_dir(&repo_path).unwrap();
    two_branch_repo(&repo_path);
    let repo_path = repo_path.canonicalize().unwrap();
    let repo = repo_path.to_str().unwrap();

    let synced_home = tempfile::tempdir().unwrap();
    let mut synced = Session::start(synced_home.path());
    synced.index(repo);
    let fresh_a = synced.observe(repo);
    let files_a = fresh_a[0]["files"].as_u64().unwrap();
    assert_eq!(files_a, FILES as u64, "{}", fresh_a[0]);

    git(&repo_path, &["checkout", "-q", "b"]);
    let stats = synced.sync(repo);
    assert_eq!(
        (&stats["added"], &stats["removed"], &stats["modified"]),
        (&json!(ADDED), &json!(REMOVED), &json!(MODIFIED)),
        "{stats}"
    );
    let after_switch = synced.observe(repo);

    let fresh_home = tempfile::tempdir().unwrap();
    let mut fresh = Session::start(fresh_home.path());
    fresh.index(repo);
    let fresh_b = fresh.observe(repo);
    drop(fresh);
    assert_eq!(
        fresh_b[0]["files"],
        json!(FILES - REMOVED + ADDED),
        "{}",
        fresh_b[0]
    );
    check("a -> b", &after_switch, &fresh_b);

    git(&repo_path, &["checkout", "-q", "a"]);
    let stats = synced.sync(repo);
    assert_eq!(
        (&stats["added"], &stats["removed"], &stats["modified"]),
        (&json!(REMOVED), &json!(ADDED), &json!(MODIFIED)),
        "{stats}"
    );
    check("b -> a", &synced.observe(repo), &fresh_a);
}
