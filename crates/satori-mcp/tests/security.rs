//! Confinement and secrets through the server, in memory: roots that may not be tracked
//! (credential directories among them), files that are never read or indexed (VCS internals,
//! dependencies, secrets by name, by place and by content, links to them), roots tracked
//! before the policy, reads of huge files, files that are not regular or read on past their
//! size, files swapped for links while they are read, and names that cannot be indexed.
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

fn npm_token() -> String {
    format!("npm_{}", "aB3dE5gH9kLm".repeat(3))
}

fn huggingface_token() -> String {
    format!("hf_{}", "QwErTyUiOpAsDfGhJk".repeat(2))
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
        (
            ".envrc",
            "export ZEBRACORN=hunter2\n".into(),
            "secret-file pattern '.envrc'",
        ),
        (
            "deploy/production.env",
            "ZEBRACORN=hunter2\n".into(),
            "secret-file pattern '*.env'",
        ),
        (
            ".env~",
            "ZEBRACORN=hunter2\n".into(),
            "secret-file pattern '.env'",
        ),
        (
            "config/secrets.yaml.bak",
            "zebracorn: hunter2\n".into(),
            "secret-file pattern 'secrets.yaml'",
        ),
        (
            "infra/terraform.tfvars.json",
            "{\"zebracorn\": \"hunter2\"}\n".into(),
            "secret-file pattern '*.tfvars.json'",
        ),
        (
            ".cargo/credentials.toml",
            "[registry]\ntoken = \"zebracorn-hunter2\"\n".into(),
            "secret-file pattern '.cargo/credentials.toml'",
        ),
        (
            "scripts/publish.sh",
            format!("# zebracorn\nexport NPM_TOKEN={}\n", npm_token()),
            "contains an npm token",
        ),
        (
            "src/hub.py",
            format!("ZEBRACORN = 1\nHF_TOKEN = \"{}\"\n", huggingface_token()),
            "contains a Hugging Face token",
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

/// Directories of keys and tokens are refused as roots, in the home directory or anywhere
/// else, and so is any directory inside them: one row per credential directory.
#[tokio::test]
async fn credential_directories_are_refused_as_roots() {
    let h = Harness::new(|_| {}).await;
    let elsewhere = h.repo.join("backup");
    for (label, path, dir) in [
        ("~/.ssh", h.user_home.join(".ssh"), h.user_home.join(".ssh")),
        ("~/.aws", h.user_home.join(".aws"), h.user_home.join(".aws")),
        (
            "~/.docker",
            h.user_home.join(".docker"),
            h.user_home.join(".docker"),
        ),
        (
            "~/.kube",
            h.user_home.join(".kube"),
            h.user_home.join(".kube"),
        ),
        (
            "~/.gnupg",
            h.user_home.join(".gnupg"),
            h.user_home.join(".gnupg"),
        ),
        (
            "~/.azure",
            h.user_home.join(".azure"),
            h.user_home.join(".azure"),
        ),
        (
            "~/.config/gcloud",
            h.user_home.join(".config/gcloud"),
            h.user_home.join(".config/gcloud"),
        ),
        (
            "~/.config/gh",
            h.user_home.join(".config/gh"),
            h.user_home.join(".config/gh"),
        ),
        (
            "inside ~/.kube",
            h.user_home.join(".kube/cache/discovery"),
            h.user_home.join(".kube"),
        ),
        (
            "inside ~/.config/gcloud",
            h.user_home.join(".config/gcloud/configurations"),
            h.user_home.join(".config/gcloud"),
        ),
        (
            "a .ssh elsewhere",
            elsewhere.join(".ssh"),
            elsewhere.join(".ssh"),
        ),
    ] {
        std::fs::create_dir_all(&path).unwrap();
        write(&path, "config", b"zebracorn = 1\n");
        for action in ["create", "reindex", "sync"] {
            let v = h.manage(action, &path).await;
            assert_eq!(v["status"], "blocked", "{label} {action}: {v}");
            assert_eq!(v["reason"], "root_refused", "{label} {action}: {v}");
            assert_eq!(
                v["warnings"],
                json!(["ROOT_REFUSED:credential_directory"]),
                "{label} {action}: {v}"
            );
            assert!(v.get("hints").is_none(), "{label} {action}: {v}");
            let message = v["message"].as_str().unwrap();
            let says = format!(
                "'{}' is a credential directory, which holds keys and tokens, not a project",
                dir.display()
            );
            assert!(message.contains(&says), "{label} {action}: {message}");
        }
        // Nor does read_file suggest indexing it.
        let (is_error, text) = h.read(&path.join("config")).await;
        assert!(is_error, "{label}: {text}");
        assert!(!text.contains("manage_index"), "{label}: {text}");
    }
    let list = h.call("list_codebases", json!({})).await;
    let text = &list.content[0].as_text().unwrap().text;
    assert!(!text.contains(".ssh") && !text.contains(".kube"), "{text}");
}

/// A root above a credential place (`~/.config`) may be indexed, but the places keep their
/// files out of search and reads: the rules hold on the whole path, not the root-relative one.
#[tokio::test]
async fn credential_places_below_a_root_stay_closed() {
    let h = Harness::new(|_| {}).await;
    let config = h.user_home.join(".config");
    let secrets = [
        (
            "gcloud/application_default_credentials.json",
            "{\"refresh_token\": \"zebracorn\"}\n",
            "'.config/gcloud/**'",
        ),
        (
            "gh/hosts.yml",
            "github.com:\n  oauth_token: zebracorn\n",
            "'.config/gh/hosts.yml'",
        ),
    ];
    for (rel, body, _) in secrets {
        write(&config, rel, body.as_bytes());
    }
    write(
        &config,
        "nvim/init.lua",
        b"-- zebracorn\nvim.opt.number = true\n",
    );
    let r = h.manage("create", &config).await;
    assert_eq!(r["status"], "ok", "{r}");
    support::wait_built(&h.client, &config).await;
    let r = h
        .call(
            "search_codebase",
            json!({"path": config, "query": "zebracorn", "resultMode": "raw", "scope": "mixed", "limit": 50}),
        )
        .await;
    let v = r.structured_content.unwrap();
    assert_eq!(v["status"], "ok", "{v}");
    let files: Vec<&str> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["file"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["nvim/init.lua"], "{v}");
    for (rel, _, rule) in secrets {
        let (is_error, text) = h.read(&config.join(rel)).await;
        assert!(is_error, "{rel} was read: {text}");
        assert!(text.contains(rule), "{rel}: {text}");
        assert!(!text.contains("zebracorn"), "{rel}: {text}");
    }
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
        // file_outline judges where a link leads as read_file does: an innocent name
        // leading to a file named like a secret is refused by both.
        write(
            &h.repo,
            ".env.ts",
            b"export function zebracorn() { return 1; }\n",
        );
        std::os::unix::fs::symlink(h.repo.join(".env.ts"), h.repo.join("src/app.ts")).unwrap();
        check(
            "src/app.ts",
            h.read(&h.repo.join("src/app.ts")).await,
            "secret-file pattern '.env.*'",
        );
        let r = h
            .call(
                "file_outline",
                json!({"path": h.repo, "file": "src/app.ts"}),
            )
            .await;
        let v = r.structured_content.unwrap();
        assert_eq!(v["status"], "blocked", "{v}");
        assert_eq!(v["reason"], "policy_refused", "{v}");
        assert!(
            v["message"]
                .as_str()
                .unwrap()
                .contains("secret-file pattern '.env.*'"),
            "{v}"
        );
        assert!(v.get("outline").is_none_or(Value::is_null), "{v}");
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

/// A tracked file swapped back and forth for a link to a file outside the codebase, while
/// `read_file` and `file_outline` read it: whatever the timing, a read returns the tracked
/// file or an error, never the file the link leads to.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_swapped_for_a_link_while_read_never_leaks() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let h = Harness::new(|_| {}).await;
    let outside = h.user_home.join("notes/outside.py");
    write(
        &h.user_home,
        "notes/outside.py",
        b"def outside_leak():\n    return 2\n",
    );
    let inside = h.repo.join("src/inside.py");
    write(
        &h.repo,
        "src/inside.py",
        b"def inside_only():\n    return 1\n",
    );
    let target = h.repo.join("src/race.py");
    std::fs::hard_link(&inside, &target).unwrap();
    h.create_and_wait().await;

    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, outside, inside, target) = (
            Arc::clone(&stop),
            outside.clone(),
            inside.clone(),
            target.clone(),
        );
        let link = target.with_file_name(".swap-link");
        let file = target.with_file_name(".swap-file");
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let _ = std::fs::remove_file(&link);
                std::os::unix::fs::symlink(&outside, &link).unwrap();
                std::fs::rename(&link, &target).unwrap();
                let _ = std::fs::remove_file(&file);
                std::fs::hard_link(&inside, &file).unwrap();
                std::fs::rename(&file, &target).unwrap();
                swaps += 1;
            }
            swaps
        })
    };
    let (mut leaks, mut served) = (0, 0);
    for i in 0..2000 {
        let r = if i % 4 == 3 {
            h.call(
                "file_outline",
                json!({"path": h.repo, "file": "src/race.py"}),
            )
            .await
        } else {
            h.call("read_file", json!({"path": target})).await
        };
        let answer = format!("{:?} {:?}", r.content, r.structured_content);
        if answer.contains("outside_leak") {
            leaks += 1;
        }
        if answer.contains("inside_only") {
            served += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 100, "the swapper ran only {swaps} times");
    assert!(served > 0, "no read returned the tracked file");
    assert_eq!(
        leaks, 0,
        "{leaks} of 2000 reads returned the file outside the codebase"
    );
    // Nor did a sync that ran while the file was a link index what the link led to.
    let v = h.manage("sync", &h.repo).await;
    assert_eq!(v["status"], "ok", "{v}");
    let r = h
        .call(
            "search_codebase",
            json!({"path": h.repo, "query": "outside_leak", "resultMode": "raw", "limit": 50}),
        )
        .await;
    let v = r.structured_content.unwrap();
    assert_eq!(v["status"], "ok", "{v}");
    assert!(!v["results"].to_string().contains("outside_leak"), "{v}");
}

/// A name that is not UTF-8 cannot be indexed (paths are UTF-8 everywhere in the index);
/// `status` counts and names such files as it does unreadable ones, and a sync after the
/// file is renamed indexes it and drops the warning.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn names_that_are_not_utf8_are_reported() {
    use std::os::unix::ffi::OsStrExt;
    let h = Harness::new(|_| {}).await;
    let bad = h
        .repo
        .join("src")
        .join(std::ffi::OsStr::from_bytes(b"caf\xe9.py"));
    std::fs::write(&bad, "def quokkafruit():\n    return 1\n").unwrap();
    h.create_and_wait().await;
    let v = h.manage("status", &h.repo).await;
    assert_eq!(v["status"], "ok", "{v}");
    let warnings = v["warnings"].as_array().unwrap();
    assert!(warnings.contains(&json!("NON_UTF8_NAMES:1")), "{v}");
    let message = v["message"].as_str().unwrap();
    assert!(
        message.contains("1 file or directory name(s) are not valid UTF-8")
            && message.contains("src/caf\u{fffd}.py"),
        "{message}"
    );
    let files = h.found("quokkafruit").await;
    assert!(!files.iter().any(|f| f.contains("caf")), "{files:?}");

    std::fs::rename(&bad, h.repo.join("src/cafe.py")).unwrap();
    let v = h.manage("sync", &h.repo).await;
    assert_eq!(v["status"], "ok", "{v}");
    let v = h.manage("status", &h.repo).await;
    assert!(
        !v["warnings"].as_array().is_some_and(|w| w
            .iter()
            .any(|w| w.as_str().unwrap().starts_with("NON_UTF8"))),
        "{v}"
    );
    let files = h.found("quokkafruit").await;
    assert!(files.iter().any(|f| f == "src/cafe.py"), "{files:?}");
}

/// What a reading tool must answer for one path of the hostile tree.
struct Hostile {
    /// Relative to the codebase root.
    rel: &'static str,
    /// Words of `read_file`'s refusal; `None`: it reads, within the byte cap.
    read_file: Option<&'static str>,
    /// `file_outline`'s status and reason.
    outline: (&'static str, &'static str),
}

/// One tree of everything a reading tool may be pointed at to leak or hang, run through
/// every tool of the registry: links to secret names inside and outside the root, a secret
/// name leading to an innocent file, a named pipe, a device, a file that turns binary after
/// it was indexed and one that keeps growing. No answer of any tool holds the canary that
/// every forbidden file carries, and the registry's list of tools is the test's list, so a
/// new tool cannot skip it.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_holds_in_a_hostile_tree() {
    use std::os::unix::fs::symlink;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let cap = 4096;
    let h = Harness::new(|c| c.read_max_bytes = cap).await;
    let canary = format!("osprey{}", "-canary-7f3a");
    let (repo, away) = (&h.repo, &h.user_home);
    write(repo, ".env.ts", format!("export const k = '{canary}';\n"));
    symlink(repo.join(".env.ts"), repo.join("src/app.ts")).unwrap();
    symlink(repo.join("src/app.py"), repo.join(".env.local")).unwrap();
    write(away, ".npmrc", format!("//registry/:_authToken={canary}\n"));
    symlink(away.join(".npmrc"), repo.join("src/npmrc.js")).unwrap();
    write(
        away,
        "notes.py",
        format!("def away():\n    return '{canary}'\n"),
    );
    symlink(away.join("notes.py"), repo.join("src/away.py")).unwrap();
    symlink("/dev/zero", repo.join("src/zero.py")).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(repo.join("src/pipe.py"))
        .status()
        .unwrap();
    assert!(made.success());
    write(repo, "src/turns.py", "def turns_binary():\n    return 1\n");
    write(repo, "src/grows.py", "def grows():\n    return 1\n");
    h.create_and_wait().await;

    // After the build: one file turns binary (carrying the canary), another keeps growing
    // past the cap while it is read.
    write(repo, "src/turns.py", format!("\0\u{1}{canary}\0"));
    let stop = Arc::new(AtomicBool::new(false));
    let grower = {
        let (stop, path) = (Arc::clone(&stop), repo.join("src/grows.py"));
        std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
            while !stop.load(Ordering::Relaxed) {
                f.write_all(b"# more\n").unwrap();
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        })
    };
    while std::fs::metadata(repo.join("src/grows.py")).unwrap().len() <= cap as u64 {
        std::thread::yield_now();
    }

    let secret = "secret-file pattern '.env.*'";
    let outside = "outside every indexed codebase";
    let cases = [
        Hostile {
            rel: "src/app.ts",
            read_file: Some(secret),
            outline: ("blocked", "policy_refused"),
        },
        Hostile {
            rel: ".env.local",
            read_file: Some(secret),
            outline: ("blocked", "policy_refused"),
        },
        Hostile {
            rel: "src/npmrc.js",
            read_file: Some(outside),
            outline: ("blocked", "outside_codebase"),
        },
        Hostile {
            rel: "src/away.py",
            read_file: Some(outside),
            outline: ("blocked", "outside_codebase"),
        },
        Hostile {
            rel: "src/zero.py",
            read_file: Some("is a device, not a regular file"),
            outline: ("blocked", "outside_codebase"),
        },
        Hostile {
            rel: "src/pipe.py",
            read_file: Some("is a named pipe (FIFO), not a regular file"),
            outline: ("unsupported", "file_not_found"),
        },
        Hostile {
            rel: "src/turns.py",
            read_file: Some("is a binary file"),
            outline: ("unsupported", "binary_file"),
        },
        Hostile {
            rel: "src/grows.py",
            read_file: None,
            outline: ("unsupported", "file_too_large"),
        },
    ];

    let leaks = |tool: &str, what: &str, r: &CallToolResult| {
        let answer = format!("{:?} {:?}", r.content, r.structured_content);
        for secret in [canary.as_str(), "MIIE"] {
            if let Some(at) = answer.find(secret) {
                let around = &answer[at.saturating_sub(300)..(at + 100).min(answer.len())];
                panic!("{tool} {what} leaked: ...{around}...");
            }
        }
    };
    for tool in satori_protocol::tools() {
        match tool.name {
            "read_file" => {
                for case in &cases {
                    let r = h
                        .call("read_file", json!({"path": repo.join(case.rel)}))
                        .await;
                    leaks(tool.name, case.rel, &r);
                    let text = &r.content[0].as_text().unwrap().text;
                    match case.read_file {
                        Some(words) => {
                            assert_eq!(r.is_error, Some(true), "{}: {text}", case.rel);
                            assert!(text.contains(words), "{}: {text}", case.rel);
                        }
                        None => {
                            assert_ne!(r.is_error, Some(true), "{}: {text}", case.rel);
                            let v = r.structured_content.as_ref().unwrap();
                            let content = v["content"].as_str().unwrap();
                            assert!(
                                content.len() <= cap,
                                "{}: {} bytes",
                                case.rel,
                                content.len()
                            );
                        }
                    }
                }
            }
            "file_outline" => {
                for case in &cases {
                    let r = h
                        .call("file_outline", json!({"path": repo, "file": case.rel}))
                        .await;
                    leaks(tool.name, case.rel, &r);
                    let v = r.structured_content.as_ref().unwrap();
                    assert_eq!(
                        (v["status"].as_str(), v["reason"].as_str()),
                        (Some(case.outline.0), Some(case.outline.1)),
                        "{}: {v}",
                        case.rel
                    );
                    assert!(v.get("outline").is_none_or(Value::is_null), "{v}");
                }
            }
            "call_graph" => {
                for case in &cases {
                    let r = h
                        .call(
                            "call_graph",
                            json!({"path": repo, "symbolRef": {"file": case.rel, "symbolId": "sym_0000000000000000"}}),
                        )
                        .await;
                    leaks(tool.name, case.rel, &r);
                    let v = r.structured_content.as_ref().unwrap();
                    assert_ne!(v["status"], "ok", "{}: {v}", case.rel);
                }
            }
            "search_codebase" => {
                for query in [
                    "osprey canary",
                    "authToken",
                    "away",
                    "turns_binary",
                    "zebracorn",
                ] {
                    let r = h
                        .call(
                            "search_codebase",
                            json!({"path": repo, "query": query, "resultMode": "raw", "scope": "mixed", "limit": 50}),
                        )
                        .await;
                    leaks(tool.name, query, &r);
                    let v = r.structured_content.as_ref().unwrap();
                    assert_eq!(v["status"], "ok", "{query}: {v}");
                    for hit in v["results"].as_array().unwrap() {
                        let file = hit["file"].as_str().unwrap();
                        assert!(
                            !cases[..6].iter().any(|c| c.rel == file) && file != ".env.ts",
                            "{query} found {file}"
                        );
                    }
                }
            }
            "manage_index" => {
                for action in ["status", "sync"] {
                    let r = h
                        .call("manage_index", json!({"action": action, "path": repo}))
                        .await;
                    leaks(tool.name, action, &r);
                    assert_ne!(r.is_error, Some(true), "{action}: {:?}", r.content);
                }
            }
            "list_codebases" => {
                let r = h.call("list_codebases", json!({})).await;
                leaks(tool.name, "", &r);
            }
            other => panic!(
                "{other} is not run through the hostile tree: add how it reaches files to this test"
            ),
        }
    }
    stop.store(true, Ordering::Relaxed);
    grower.join().unwrap();
}
