//! Several `satori-cli` processes on one codebase at once: parallel creates all wait for the
//! one build and succeed, and a seeded mix of create, sync, search, status and clear ends
//! only in documented statuses, with a consistent index and no orphaned directory after.

use std::path::Path;
use std::process::Command;

use satori_e2e::{binary, write_files};
use serde_json::{Value, json};

/// What one CLI call ended with: its exit code and its envelope's `status` and `state`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Outcome {
    code: i32,
    status: String,
    state: String,
    /// The envelope's message: shown when an outcome is not allowed, never compared.
    message: String,
}

fn cli(home: &Path, tool: &str, args: &Value) -> Outcome {
    let out = Command::new(binary("satori-cli"))
        .env("SATORI_HOME", home)
        .env("SATORI_SERVER_BIN", binary("satori"))
        // Lexical only: the suite is about processes and files, not about embeddings.
        .env("SATORI_EMBEDDING_MODEL", "none")
        .args(["tool", "call", tool, "--args-json", &args.to_string()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let doc: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}): {stdout:?}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let env = &doc["structuredContent"];
    let text = |key: &str| env[key].as_str().unwrap_or("-").to_owned();
    Outcome {
        code: out.status.code().unwrap_or(-1),
        status: text("status"),
        state: text("state"),
        message: text("message"),
    }
}

/// A repository big enough that a build takes a moment, so that calls overlap it.
fn repo(root: &Path, files: usize) {
    let bodies: Vec<(String, String)> = (0..files)
        .map(|i| {
            (
                format!("src/mod_{i}.rs"),
                format!("/// Retries request {i} with backoff.\npub fn retry_request_{i}(attempts: u32) -> u32 {{\n    attempts * {i}\n}}\n"),
            )
        })
        .collect();
    let files: Vec<(&str, &str)> = bodies
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_str()))
        .collect();
    write_files(root, &files);
}

/// Entries of `indexes/` other than the codebase directory of a tracked root.
fn orphans(home: &Path, tracked: bool) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(home.join("indexes")) else {
        return Vec::new();
    };
    let names: Vec<String> = rd
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    if tracked && names.len() == 1 && !names[0].starts_with('.') {
        return Vec::new();
    }
    names
}

/// Eight `create` calls at once on one path: every one waits for the one build and exits 0.
#[test]
fn parallel_creates_all_wait_for_the_one_build() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    repo(dir.path(), 300);
    let root = dir.path().canonicalize().unwrap();
    let args = json!({"action": "create", "path": root});
    let outcomes: Vec<Outcome> = std::thread::scope(|s| {
        let calls: Vec<_> = (0..8)
            .map(|_| s.spawn(|| cli(home.path(), "manage_index", &args)))
            .collect();
        calls.into_iter().map(|c| c.join().unwrap()).collect()
    });
    for o in &outcomes {
        assert_eq!(o.code, 0, "{outcomes:?}");
        assert_eq!(o.status, "ok", "{outcomes:?}");
        assert_eq!(o.state, "indexed", "{outcomes:?}");
    }
    assert_eq!(orphans(home.path(), true), Vec::<String>::new());
}

/// A small deterministic generator (xorshift), so that a failing mix can be replayed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// One allowed outcome: exit code, envelope status, envelope state (`*`: any).
type Allowed = (i32, &'static str, &'static str);

/// The outcomes each action may have while other processes create, sync, search and clear
/// the same codebase: `(exit code, status, state)`, `*` for any state. A clear can remove
/// the index under any other call (`not_indexed`); a build running elsewhere makes calls
/// that need the index wait or answer `not_ready`, and a clear answer `blocked`.
const ALLOWED: &[(&str, &[Allowed])] = &[
    (
        "create",
        &[
            (0, "ok", "indexed"),
            (0, "ok", "sync_completed"),
            // Cleared while it waited for the build.
            (1, "not_indexed", "not_indexed"),
        ],
    ),
    (
        "sync",
        &[
            (0, "ok", "sync_completed"),
            (1, "not_indexed", "not_indexed"),
            (1, "not_ready", "indexing"),
        ],
    ),
    (
        "status",
        &[
            (0, "ok", "indexed"),
            (0, "ok", "sync_completed"),
            (0, "ok", "indexing"),
            (1, "not_indexed", "not_indexed"),
        ],
    ),
    (
        "search",
        &[
            (0, "ok", "*"),
            (1, "not_indexed", "*"),
            (1, "not_ready", "*"),
        ],
    ),
    (
        "clear",
        &[(0, "ok", "not_indexed"), (1, "blocked", "indexing")],
    ),
];

fn allowed(action: &str, o: &Outcome) -> bool {
    ALLOWED
        .iter()
        .filter(|(a, _)| *a == action)
        .flat_map(|(_, list)| list.iter())
        .any(|(code, status, state)| {
            *code == o.code && *status == o.status && (*state == "*" || *state == o.state)
        })
}

#[test]
fn concurrent_create_sync_search_and_clear_end_in_documented_statuses() {
    const SEED: u64 = 0x5eed_1515;
    const WORKERS: u64 = 5;
    const CALLS: usize = 6;
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    repo(dir.path(), 120);
    let root = dir.path().canonicalize().unwrap();
    let path = root.to_str().unwrap().to_owned();
    let results: Vec<(u64, &str, Outcome)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..WORKERS)
            .map(|w| {
                let (home, root, path) = (home.path(), &root, &path);
                s.spawn(move || {
                    let mut rng = Rng(SEED ^ (w + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                    let mut out = Vec::new();
                    for i in 0..CALLS {
                        let action =
                            ["create", "sync", "search", "status", "clear"][rng.below(5) as usize];
                        if action == "sync" {
                            // Give the sync something to do.
                            std::fs::write(
                                root.join(format!("src/edit_{w}.rs")),
                                format!("pub fn edited_{w}_{i}() {{}}\n"),
                            )
                            .unwrap();
                        }
                        let o = match action {
                            "search" => cli(
                                home,
                                "search_codebase",
                                &json!({"path": path, "query": "retry request backoff"}),
                            ),
                            _ => cli(
                                home,
                                "manage_index",
                                &json!({"action": action, "path": path}),
                            ),
                        };
                        out.push((w, action, o));
                    }
                    out
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    let bad: Vec<_> = results
        .iter()
        .filter(|(_, action, o)| !allowed(action, o))
        .collect();
    assert!(bad.is_empty(), "undocumented outcomes: {bad:#?}");

    // Afterwards the index is consistent: one more create and a search succeed.
    let create = cli(
        home.path(),
        "manage_index",
        &json!({"action": "create", "path": path}),
    );
    assert_eq!(create.code, 0, "{create:?}");
    let search = cli(
        home.path(),
        "search_codebase",
        &json!({"path": path, "query": "retry_request_7"}),
    );
    assert_eq!((search.code, search.status.as_str()), (0, "ok"));
    assert_eq!(orphans(home.path(), true), Vec::<String>::new());
}
