//! Confinement and secrets through the server, in memory: roots that may not be tracked,
//! files that are never read or indexed (VCS internals, dependencies, secrets by name and by
//! content, links to them), roots tracked before the policy, reads of huge files, and files
//! that are not regular or read on past their size.
//!
//! Token-shaped strings are assembled at run time so that this file holds none itself.

use std::io::Write;
use std::path::{Path, PathBuf};

use rmcp::RoleClient;
use rmcp::model::CallToolResult;
use rmcp::service::RunningService;
use satori_core::{CodebaseState, Home, IndexState, StateStore};
use satori_mcp::config::Config;
use serde_json::{Value, json};

mod support;
use support::write;

/// A server over a fresh `SATORI_HOME`, with a fake user home holding a key, and a
/// repository full of things that must not come out.
struct Harness {
    client: RunningService<RoleClient, ()>,
    state_home: PathBuf,
    user_home: PathBuf,
    repo: PathBuf,
    _dirs: Vec<tempfile::TempDir>,
}

/// A PEM private key block (armour assembled so this source holds no key).
fn pem_key() -> String {
    let dashes = "-----";
    let body = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun";
    format!(
        "{dashes}BEGIN RSA PRIVATE KEY{dashes}\n{body}\n{body}\n{dashes}END RSA PRIVATE KEY{dashes}\n"
    )
}

fn github_token() -> String {
    format!("ghp_{}", "a1B2c3D4e5F6".repeat(3))
}

/// Files that must never be read nor found, with the rule each is refused by. Every one
/// mentions `zebracorn`, so a search for it shows whether any was indexed.
fn secret_files() -> Vec<(&'static str, String, &'static str)> {
    vec![
        (
            ".env",
            "API_KEY=zebracorn\n".into(),
            "secret-file pattern '.env'",
        ),
        (
            "id_rsa",
            format!("zebracorn\n{}", pem_key()),
            "secret-file pattern 'id_rsa*'",
        ),
        (
            ".aws/credentials",
            "[default]\nzebracorn = 1\n".into(),
            "secret-file pattern '.aws/**'",
        ),
        (
            ".git/config",
            format!(
                "[remote \"origin\"]\n  url = https://x:{}@github.com/zebracorn\n",
                github_token()
            ),
            "version-control directory '.git'",
        ),
        (
            "node_modules/pkg/zebracorn.js",
            "function zebracorn() {}\n".into(),
            "dependency directory 'node_modules'",
        ),
        (
            "private_key.txt",
            format!("zebracorn\n{}", pem_key()),
            "contains a PEM private key",
        ),
        (
            "src/settings.py",
            format!("ZEBRACORN = 1\nTOKEN = \"{}\"\n", github_token()),
            "contains a GitHub token",
        ),
        (
            "credentials.json",
            "{\"zebracorn\": \"hunter2\"}\n".into(),
            "secret-file pattern 'credentials*.json'",
        ),
        (
            "config/secrets.yaml",
            "zebracorn: hunter2\n".into(),
            "secret-file pattern 'secrets.yaml'",
        ),
        (
            "config/database.yml",
            "password: zebracorn\n".into(),
            "secret-file pattern 'database.yml'",
        ),
        (
            "appsettings.json",
            "{\"zebracorn\": \"Server=x;Password=y\"}\n".into(),
            "secret-file pattern 'appsettings*.json'",
        ),
    ]
}

impl Harness {
    async fn new(tweak: impl FnOnce(&mut Config)) -> Harness {
        let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
        let [state_home, user_home, repo] =
            [0, 1, 2].map(|i| dirs[i].path().canonicalize().unwrap());
        write(&user_home, ".ssh/id_rsa", pem_key().as_bytes());
        write(&repo, "src/app.py", b"def zebracorn():\n    return 1\n");
        for (rel, body, _) in secret_files() {
            write(&repo, rel, body.as_bytes());
        }
        #[cfg(unix)]
        {
            // A link inside the codebase to the user's key, and one to a secret inside it.
            std::os::unix::fs::symlink(user_home.join(".ssh/id_rsa"), repo.join("src/notes.txt"))
                .unwrap();
            std::os::unix::fs::symlink(repo.join("private_key.txt"), repo.join("src/readme.txt"))
                .unwrap();
        }
        let mut config = support::config(&state_home);
        config.user_home = Some(user_home.clone());
        tweak(&mut config);
        let client = support::connect(config, ()).await;
        Harness {
            client,
            state_home,
            user_home,
            repo,
            _dirs: dirs,
        }
    }

    async fn call(&self, tool: &str, args: Value) -> CallToolResult {
        support::call(&self.client, tool, args).await
    }

    async fn manage(&self, action: &str, path: &Path) -> Value {
        let r = self
            .call("manage_index", json!({"action": action, "path": path}))
            .await;
        r.structured_content.unwrap()
    }

    async fn read(&self, path: &Path) -> (bool, String) {
        let r = self.call("read_file", json!({"path": path})).await;
        let text = r.content[0].as_text().unwrap().text.clone();
        (r.is_error == Some(true), text)
    }

    async fn create_and_wait(&self) {
        let r = self.manage("create", &self.repo).await;
        assert_eq!(r["status"], "ok", "{r}");
        support::wait_built(&self.client, &self.repo).await;
    }

    /// The file of every raw result of a search for `query` in the repository, in any kind
    /// of file; the search must succeed.
    async fn found(&self, query: &str) -> Vec<String> {
        let r = self
            .call(
                "search_codebase",
                json!({"path": self.repo, "query": query, "resultMode": "raw", "scope": "mixed", "limit": 50}),
            )
            .await;
        let v = r.structured_content.unwrap();
        assert_eq!(v["status"], "ok", "{v}");
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["file"].as_str().unwrap().to_owned())
            .collect()
    }

    fn redact(&self, text: &str) -> String {
        text.replace(&*self.state_home.to_string_lossy(), "<SATORI_HOME>")
            .replace(&*self.user_home.to_string_lossy(), "<USER_HOME>")
    }
}

#[tokio::test]
async fn roots_that_are_not_projects_are_refused() {
    let h = Harness::new(|_| {}).await;
    let inside_state = h.state_home.join("indexes");
    std::fs::create_dir_all(&inside_state).unwrap();
    let mut out = Vec::new();
    for (label, path) in [
        ("filesystem root", PathBuf::from("/")),
        ("/etc", PathBuf::from("/etc")),
        ("inside /usr", PathBuf::from("/usr/lib")),
        ("the user's home", h.user_home.clone()),
        ("SATORI_HOME", h.state_home.clone()),
        ("inside SATORI_HOME", inside_state.clone()),
    ] {
        for action in ["create", "reindex", "sync"] {
            let v = h.manage(action, &path).await;
            assert_eq!(v["status"], "blocked", "{label} {action}: {v}");
            assert_eq!(v["reason"], "root_refused", "{label} {action}: {v}");
            assert!(v.get("hints").is_none(), "{label} {action}: {v}");
            let message = v["message"].as_str().unwrap();
            assert!(!message.contains("create"), "{label}: {message}");
            if action == "create" {
                let mut v = v.clone();
                for key in ["path", "message", "humanText"] {
                    v[key] = json!(h.redact(v[key].as_str().unwrap()));
                }
                out.push(json!({"root": label, "answer": v}));
            }
        }
    }
    insta::assert_json_snapshot!("refused_roots", out);
    // Nothing was tracked on the way.
    let list = h.call("list_codebases", json!({})).await;
    let text = &list.content[0].as_text().unwrap().text;
    assert!(!text.contains("/etc"), "{text}");

    // The refusal of a system file suggests no indexing.
    let (is_error, text) = h.read(Path::new("/etc/passwd")).await;
    assert!(is_error, "{text}");
    assert!(text.contains("outside every indexed codebase"), "{text}");
    assert!(!text.contains("manage_index"), "{text}");

    // A subdirectory of the home directory is a project like any other.
    let r = h.manage("create", &h.repo).await;
    assert_eq!(r["status"], "ok", "{r}");
}

#[tokio::test]
async fn roots_tracked_before_the_policy_are_not_served() {
    let h = Harness::new(|_| {}).await;
    // A state file written by a version without the policy.
    let store = StateStore::new(Home::new(h.state_home.clone()));
    store
        .set(Path::new("/etc"), CodebaseState::new(IndexState::Indexed))
        .unwrap();
    let (is_error, text) = h.read(Path::new("/etc/passwd")).await;
    assert!(is_error, "{text}");
    assert!(text.contains("does not serve"), "{text}");
    let r = h
        .call("search_codebase", json!({"path": "/etc", "query": "root"}))
        .await;
    let v = r.structured_content.unwrap();
    assert_eq!(v["status"], "blocked", "{v}");
    assert_eq!(v["reason"], "root_refused", "{v}");
    // The stale record can still be removed.
    let v = h.manage("clear", Path::new("/etc")).await;
    assert_eq!(v["status"], "ok", "{v}");
}

#[tokio::test]
async fn secrets_are_neither_read_nor_indexed() {
    let h = Harness::new(|_| {}).await;
    h.create_and_wait().await;
    #[track_caller]
    fn check(rel: &str, (is_error, text): (bool, String), rule: &str) {
        assert!(is_error, "{rel} was read: {text}");
        assert!(text.contains(rule), "{rel}: {text}");
        assert!(
            !text.contains("hunter2") && !text.contains("MIIE"),
            "{rel}: {text}"
        );
    }
    for (rel, _, rule) in secret_files() {
        check(rel, h.read(&h.repo.join(rel)).await, rule);
    }
    #[cfg(unix)]
    {
        // Links resolve before the checks: to the user's key outside the codebase, and to a
        // key inside it under an innocent name.
        check(
            "src/notes.txt",
            h.read(&h.repo.join("src/notes.txt")).await,
            "outside every indexed codebase",
        );
        check(
            "src/readme.txt",
            h.read(&h.repo.join("src/readme.txt")).await,
            "PEM private key",
        );
    }
    let (is_error, text) = h.read(&h.repo.join("src/app.py")).await;
    assert!(!is_error, "{text}");

    // Search finds the one ordinary file that mentions the word, none of the secrets.
    assert_eq!(h.found("zebracorn").await, ["src/app.py"]);
}

#[tokio::test]
async fn the_opt_out_lifts_secrets_rules_only() {
    let h = Harness::new(|c| c.allow_secrets = true).await;
    h.create_and_wait().await;
    for rel in ["private_key.txt", "credentials.json", "config/secrets.yaml"] {
        let (is_error, text) = h.read(&h.repo.join(rel)).await;
        assert!(!is_error, "{rel}: {text}");
    }
    let (is_error, text) = h.read(&h.repo.join(".git/config")).await;
    assert!(is_error, "{text}");
    let files = h.found("zebracorn").await;
    assert!(files.iter().any(|f| f == "private_key.txt"), "{files:?}");
    assert!(!files.iter().any(|f| f.starts_with(".git/")), "{files:?}");
}

#[tokio::test]
async fn satori_s_own_files_are_never_read() {
    // Even with reads unconfined, the state directory stays closed.
    let h = Harness::new(|c| c.read_any_file = true).await;
    h.create_and_wait().await;
    let state = h.state_home.join("state.json");
    assert!(state.is_file());
    let (is_error, text) = h.read(&state).await;
    assert!(is_error, "{text}");
    assert!(
        text.contains("inside Satori's own state directory"),
        "{text}"
    );
    // Reads outside codebases are what the opt-in allows; the secrets rules still hold.
    let (is_error, text) = h.read(&h.repo.join("src/app.py")).await;
    assert!(!is_error, "{text}");
    let (is_error, text) = h.read(&h.user_home.join(".ssh/id_rsa")).await;
    assert!(is_error, "{text}");
    assert!(text.contains("'.ssh/**'"), "{text}");
}

/// Writes `lines` numbered lines (`line 1`, ...) to `path`.
fn numbered(path: &Path, lines: usize) {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for i in 1..=lines {
        writeln!(
            w,
            "line {i} of a very large generated file, padded to a realistic width"
        )
        .unwrap();
    }
    w.flush().unwrap();
}

#[tokio::test]
async fn huge_files_are_streamed_with_a_byte_cap() {
    let h = Harness::new(|c| c.read_max_bytes = 64 * 1024).await;
    h.create_and_wait().await;
    // About 200 MB: far more than any read may hold.
    let big = h.repo.join("data/huge.txt");
    std::fs::create_dir_all(big.parent().unwrap()).unwrap();
    let lines = 2_800_000;
    numbered(&big, lines);
    assert!(std::fs::metadata(&big).unwrap().len() > 190_000_000);

    let r = h
        .call(
            "read_file",
            json!({"path": big, "start_line": 1, "end_line": 1}),
        )
        .await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let v = r.structured_content.unwrap();
    assert_eq!(
        v["content"],
        "line 1 of a very large generated file, padded to a realistic width"
    );
    assert_eq!(v["hasMore"], true);
    assert_eq!(
        v["span"],
        json!({"startLine": 1, "endLine": 1, "totalLines": lines})
    );

    // A window in the middle, and one past the end, clamped.
    let r = h
        .call(
            "read_file",
            json!({"path": big, "start_line": 1_500_000, "end_line": 1_500_001}),
        )
        .await;
    let v = r.structured_content.unwrap();
    assert!(
        v["content"]
            .as_str()
            .unwrap()
            .starts_with("line 1500000 of"),
        "{v}"
    );
    assert_eq!(v["span"]["endLine"], 1_500_001);

    // An explicit range larger than the byte cap stops at the cap, with a notice.
    let r = h
        .call(
            "read_file",
            json!({"path": big, "start_line": 10, "end_line": 100_000}),
        )
        .await;
    let text = r.content[0].as_text().unwrap().text.clone();
    assert!(text.len() < 64 * 1024 + 512, "{}", text.len());
    let notice = text.rsplit("\n\n").next().unwrap();
    assert!(notice.starts_with("(File truncated at line "), "{notice}");
    assert!(
        notice.contains("READ_FILE_MAX_BYTES (65536 bytes) reached"),
        "{notice}"
    );
    let v = r.structured_content.unwrap();
    let end = v["span"]["endLine"].as_u64().unwrap();
    assert!(
        notice.contains(&format!("start_line={}.)", end + 1)),
        "{notice}"
    );
    assert_eq!(v["hasMore"], true);

    // One line longer than the cap is cut, and says so.
    let wide = h.repo.join("data/wide.txt");
    std::fs::write(&wide, format!("{}\nsecond\n", "w".repeat(200_000))).unwrap();
    let r = h.call("read_file", json!({"path": wide})).await;
    let text = r.content[0].as_text().unwrap().text.clone();
    assert!(text.starts_with(&"w".repeat(1000)), "{}", &text[..50]);
    assert!(
        text.contains("(Line 1 is longer than READ_FILE_MAX_BYTES (65536 bytes)"),
        "{}",
        &text[text.len() - 300..]
    );
    assert!(text.contains("start_line=2.)"));
}

/// Files whose size at the check says nothing of what a read returns: a named pipe (with a
/// writer pouring far more than the cap into it, or with no writer at all) is refused at
/// once, and a file that reports a size of 0 yet reads on stays within the byte cap — as any
/// file that grows between the size check and the read must.
#[cfg(unix)]
#[tokio::test]
async fn reads_stay_bounded_whatever_the_file_does() {
    let cap = 64;
    let h = Harness::new(|c| {
        c.read_max_bytes = cap;
        c.read_any_file = true;
    })
    .await;
    h.create_and_wait().await;

    #[track_caller]
    fn check(label: &str, r: &CallToolResult, cap: usize, refusal: Option<&str>) {
        let text = &r.content[0].as_text().unwrap().text;
        match refusal {
            Some(words) => {
                assert_eq!(r.is_error, Some(true), "{label}: {text}");
                assert!(text.contains(words), "{label}: {text}");
            }
            None => {
                assert_ne!(r.is_error, Some(true), "{label}: {text}");
                // The file's lines, then the notice of the cap.
                let (lines, notice) = text.rsplit_once("\n\n(").unwrap();
                assert!(lines.len() <= cap, "{label}: {} bytes: {text}", lines.len());
                assert!(
                    notice.contains(&format!("READ_FILE_MAX_BYTES ({cap} bytes) reached")),
                    "{label}: {text}"
                );
                let v = r.structured_content.as_ref().unwrap();
                assert_eq!(v["hasMore"], true, "{label}: {v}");
            }
        }
    }

    let pipe = |name: &str| {
        let path = h.repo.join(name);
        let made = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap();
        assert!(made.success());
        path
    };
    let refused = "is a named pipe (FIFO), not a regular file";
    let silent = pipe("silent.fifo");
    let r = h.call("read_file", json!({"path": silent})).await;
    check("a pipe with no writer", &r, cap, Some(refused));

    let pouring = pipe("pouring.fifo");
    let writer = {
        let path = pouring.clone();
        std::thread::spawn(move || {
            // Blocks until a reader opens the pipe, then writes far more than the cap.
            let mut w = std::fs::OpenOptions::new().write(true).open(path)?;
            let block = vec![b'x'; 64 * 1024];
            for _ in 0..256 {
                w.write_all(&block)?;
            }
            std::io::Result::Ok(())
        })
    };
    let r = h.call("read_file", json!({"path": pouring})).await;
    check("a pipe with a writer", &r, cap, Some(refused));
    // Let the writer go: meet it at the pipe and hang up, so its next write fails.
    drop(std::fs::File::open(&pouring));
    let _ = writer.join();

    // Linux reports a size of 0 for its process files, which read on for kilobytes.
    #[cfg(target_os = "linux")]
    {
        let r = h
            .call("read_file", json!({"path": "/proc/self/status"}))
            .await;
        check("a file larger than its size", &r, cap, None);
    }
}
