//! The server through the MCP protocol, in memory: a real rmcp client talks to the real
//! server over a duplex pipe, and every tool's answers (and every error path of the contract)
//! are checked against snapshots with paths and times redacted.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use serde_json::{Value, json};

mod support;
use support::write;

/// A server over a fresh `SATORI_HOME` plus a small multi-language repository.
struct Harness {
    client: RunningService<RoleClient, ()>,
    _home: tempfile::TempDir,
    repo_dir: tempfile::TempDir,
    home_path: PathBuf,
}

/// The fixture repository: real-looking code in several languages, a test, docs, a binary.
fn fixture_repo(root: &Path) {
    write(
        root,
        "src/auth/refresh.ts",
        br#"import { TokenStore } from "./store";

/** Refreshes the access token when it is about to expire, retrying with backoff. */
export async function refreshAccessToken(store: TokenStore, now: number): Promise<string> {
  const current = store.get();
  if (current.expiresAt - now > 60_000) {
    return current.accessToken;
  }
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const next = await store.exchange(current.refreshToken);
      store.put(next);
      return next.accessToken;
    } catch (err) {
      await sleep(2 ** attempt * 100);
    }
  }
  throw new Error("token refresh failed");
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
"#,
    );
    write(
        root,
        "src/auth/store.ts",
        br#"export interface Token { accessToken: string; refreshToken: string; expiresAt: number }

export class TokenStore {
  private token: Token | null = null;

  get(): Token {
    if (!this.token) throw new Error("no token");
    return this.token;
  }

  put(token: Token): void {
    this.token = token;
  }

  async exchange(refreshToken: string): Promise<Token> {
    const res = await fetch("/oauth/token", { method: "POST", body: refreshToken });
    return (await res.json()) as Token;
  }
}
"#,
    );
    write(
        root,
        "src/server/router.py",
        br#""""HTTP routing: match a request path to its handler."""


class Router:
    """Keeps the routes and dispatches requests to handlers."""

    def __init__(self):
        self.routes = {}

    def add_route(self, path, handler):
        """Registers a handler for a path."""
        self.routes[path] = handler

    def route_request(self, request):
        """Finds the handler of the request path and calls it."""
        handler = self.routes.get(request.path)
        if handler is None:
            return not_found(request)
        return handler(request)


def not_found(request):
    return {"status": 404, "path": request.path}
"#,
    );
    write(
        root,
        "src/lib.rs",
        br#"//! Header parsing.

/// A parsed HTTP header.
pub struct Header {
    pub name: String,
    pub value: String,
}

/// Parses one `Name: value` header line.
pub fn parse_header(line: &str) -> Option<Header> {
    let (name, value) = line.split_once(':')?;
    Some(Header { name: name.trim().to_string(), value: value.trim().to_string() })
}
"#,
    );
    write(
        root,
        "tests/test_router.py",
        br#"from src.server.router import Router


def test_route_request_calls_handler():
    r = Router()
    r.add_route("/a", lambda req: "ok")
    assert r.route_request(type("R", (), {"path": "/a"})) == "ok"
"#,
    );
    write(root, "docs/guide.md", b"# Guide\n\n## Tokens\n\nThe token refresh flow renews access tokens before they expire.\n");
    write(root, "assets/logo.png", b"\x89PNG\r\n\x1a\n\0\0\0binary");
    // Walked (source extensions) but skipped by content: a sync must not see them as new.
    write(root, "src/blob.py", b"x = 1\0\0\0binary payload\n");
    let minified = format!("var a={};\n", "[1,2,3],".repeat(700));
    write(root, "web/bundle.js", minified.as_bytes());
    let long: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    write(root, "notes/long.txt", long.as_bytes());
    write(root, ".gitignore", b"build/\n");
    write(root, "build/out.js", b"function generated() {}\n");
}

impl Harness {
    async fn new() -> Harness {
        let home = tempfile::tempdir().unwrap();
        let repo_dir = tempfile::tempdir().unwrap();
        fixture_repo(repo_dir.path());
        Harness::start(home, repo_dir).await
    }

    /// A new server process (nothing open, nothing cached) over the same home and repo.
    async fn restarted(self) -> Harness {
        let Harness {
            client,
            _home,
            repo_dir,
            ..
        } = self;
        let _ = client.cancel().await;
        Harness::start(_home, repo_dir).await
    }

    /// A server whose configuration `change` adjusts first.
    async fn with(change: impl FnOnce(&mut satori_mcp::config::Config)) -> Harness {
        let home = tempfile::tempdir().unwrap();
        let repo_dir = tempfile::tempdir().unwrap();
        fixture_repo(repo_dir.path());
        Harness::start_with(home, repo_dir, change).await
    }

    async fn start(home: tempfile::TempDir, repo_dir: tempfile::TempDir) -> Harness {
        Harness::start_with(home, repo_dir, |_| {}).await
    }

    async fn start_with(
        home: tempfile::TempDir,
        repo_dir: tempfile::TempDir,
        change: impl FnOnce(&mut satori_mcp::config::Config),
    ) -> Harness {
        let home_path = home.path().canonicalize().unwrap();
        let mut config = support::config(&home_path);
        change(&mut config);
        let client = support::connect(config, ()).await;
        Harness {
            client,
            _home: home,
            repo_dir,
            home_path,
        }
    }

    fn repo(&self) -> PathBuf {
        self.repo_dir.path().canonicalize().unwrap()
    }

    fn repo_str(&self) -> String {
        self.repo().to_string_lossy().into_owned()
    }

    async fn call(&self, tool: &str, args: Value) -> CallToolResult {
        support::call(&self.client, tool, args).await
    }

    /// The call's result as JSON with the repository path, the home and times redacted.
    async fn check(&self, tool: &str, args: Value) -> Value {
        let r = self.call(tool, args).await;
        let mut v = serde_json::to_value(&r).unwrap();
        redact(&mut v, &self.repo_str(), &self.home_path.to_string_lossy());
        // The text of an envelope is the pretty JSON of structuredContent: say so once,
        // instead of snapshotting it twice.
        if let Some(sc) = r.structured_content.as_ref() {
            conforms_to_contract(tool, sc);
            let text = r.content[0].as_text().unwrap().text.clone();
            if sc["mode"] == "plain" {
                // A plain read answers with the file text itself; the structured copy holds
                // the same lines, shown once in the snapshot.
                assert_eq!(sc["content"], text, "text and structuredContent differ");
                v["structuredContent"]["content"] = json!("<the text of content[0]>");
            } else {
                assert_eq!(
                    serde_json::from_str::<Value>(&text).unwrap(),
                    *sc,
                    "text and structuredContent differ"
                );
                v["content"] = json!("<structuredContent as pretty JSON>");
            }
        }
        v
    }

    async fn create_and_wait(&self) {
        let r = self
            .check(
                "manage_index",
                json!({"action": "create", "path": self.repo_str()}),
            )
            .await;
        assert_eq!(r["structuredContent"]["status"], "ok", "{r}");
        for _ in 0..400 {
            let s = self
                .check(
                    "manage_index",
                    json!({"action": "status", "path": self.repo_str()}),
                )
                .await;
            if support::build_over(&s) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("indexing did not finish");
    }
}

/// Every envelope the server sends must read back as the contract's envelope type.
#[track_caller]
fn conforms_to_contract(tool: &str, v: &Value) {
    use satori_protocol::envelope::{
        CallGraphEnvelope, FileOutlineEnvelope, ManageIndexEnvelope, ReadFileAnswer, SearchEnvelope,
    };
    let checked = match tool {
        "file_outline" => serde_json::from_value::<FileOutlineEnvelope>(v.clone()).map(|_| ()),
        "call_graph" => serde_json::from_value::<CallGraphEnvelope>(v.clone()).map(|_| ()),
        "manage_index" => serde_json::from_value::<ManageIndexEnvelope>(v.clone()).map(|_| ()),
        "search_codebase" => serde_json::from_value::<SearchEnvelope>(v.clone()).map(|_| ()),
        "read_file" => serde_json::from_value::<ReadFileAnswer>(v.clone()).map(|_| ()),
        _ => panic!("{tool} answers in plain text, yet sent structuredContent"),
    };
    if let Err(e) = checked {
        panic!("{tool} envelope does not match satori-protocol: {e}\n{v:#}");
    }
}

const TIME_KEYS: &[&str] = &[
    "checkedAt",
    "indexedAt",
    "lastSyncAt",
    "ageMs",
    "durationMs",
    "latency_ms",
];

fn redact(v: &mut Value, repo: &str, home: &str) {
    match v {
        Value::String(s) => {
            if s.contains(repo) {
                *s = s.replace(repo, "<REPO>");
            }
            if s.contains(home) {
                *s = s.replace(home, "<HOME>");
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| redact(x, repo, home)),
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                if TIME_KEYS.contains(&k.as_str()) && !x.is_null() {
                    *x = json!("<redacted>");
                } else {
                    redact(x, repo, home);
                }
            }
        }
        _ => {}
    }
}

#[tokio::test]
async fn tools_list_is_the_contract() {
    let h = Harness::new().await;
    let tools = h.client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    // The registry's own order is pinned by satori-protocol's tests.
    let contract: Vec<&str> = satori_protocol::tools().iter().map(|d| d.name).collect();
    assert_eq!(names, contract);
    // Input and output schemas are the contract's, as generated from its types.
    for tool in &tools {
        let def = satori_protocol::tool_def(&tool.name).unwrap();
        assert_eq!(
            Value::Object(tool.input_schema.as_ref().clone()),
            def.input_schema
        );
        let advertised = tool
            .output_schema
            .as_ref()
            .map(|s| Value::Object(s.as_ref().clone()));
        assert_eq!(advertised, def.output_schema, "{}", tool.name);
    }
    let info = h.client.peer_info().unwrap();
    assert_eq!(info.protocol_version.to_string(), "2025-11-25");
}

/// Every `file` of an answer (results, outlines, graph nodes and call sites, handles, hints)
/// is relative to the codebase root, and the answer names that root: joined, they are the
/// file on disk, whatever subdirectory the call named as its `path`.
#[tokio::test]
async fn answers_name_the_root_their_files_are_relative_to() {
    let h = Harness::new().await;
    h.create_and_wait().await;
    let repo = h.repo();
    let src = repo.join("src");
    /// The strings under a key named `file`, anywhere in `v`.
    fn files(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                for (k, x) in map {
                    match (k.as_str(), x) {
                        ("file", Value::String(f)) => out.push(f.clone()),
                        _ => files(x, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|x| files(x, out)),
            _ => {}
        }
    }
    let check = |what: &str, answer: &CallToolResult| -> Value {
        let v = answer
            .structured_content
            .clone()
            .unwrap_or_else(|| panic!("{what}: no structured answer: {answer:?}"));
        let mut found = Vec::new();
        files(&v, &mut found);
        assert!(!found.is_empty(), "{what}: no files in {v:#}");
        let root = v["codebaseRoot"]
            .as_str()
            .unwrap_or_else(|| panic!("{what}: no codebaseRoot in {v:#}"));
        assert_eq!(Path::new(root), repo, "{what}");
        for file in found {
            assert!(
                Path::new(root).join(&file).is_file(),
                "{what}: {root} + {file} is no file"
            );
        }
        v
    };
    let found = h
        .call(
            "search_codebase",
            json!({"path": src, "query": "refresh the access token", "scope": "mixed"}),
        )
        .await;
    let found = check("search in a subdirectory", &found);
    let raw = h
        .call(
            "search_codebase",
            json!({"path": src.join("auth"), "query": "token", "resultMode": "raw"}),
        )
        .await;
    check("raw search in a subdirectory", &raw);
    let outline = h
        .call(
            "file_outline",
            json!({"path": src.join("server"), "file": "router.py"}),
        )
        .await;
    check("outline of a file named under a subdirectory", &outline);
    let handle = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["file"] == "src/auth/refresh.ts" && r["callGraphHint"]["supported"] == true)
        .map(|r| r["callGraphHint"]["symbolRef"].clone())
        .unwrap_or_else(|| panic!("no handle in refresh.ts: {found:#}"));
    let graph = h
        .call(
            "call_graph",
            json!({"path": src, "symbolRef": handle, "direction": "callees"}),
        )
        .await;
    check("call graph from a subdirectory", &graph);
    let router = src.join("server/router.py");
    let annotated = h
        .call(
            "read_file",
            json!({"path": router, "mode": "annotated", "start_line": 1, "end_line": 12}),
        )
        .await;
    check("annotated read", &annotated);
    let unknown = h
        .call(
            "read_file",
            json!({"path": router, "open_symbol": {"symbolId": "sym_0000000000000000"}}),
        )
        .await;
    check("open_symbol that matches nothing", &unknown);
}

#[tokio::test]
async fn lifecycle_and_search() {
    let h = Harness::new().await;
    let repo = h.repo_str();
    let mut out = Vec::new();
    macro_rules! step {
        ($name:expr, $tool:expr, $args:expr) => {
            out.push(json!({"step": $name, "result": h.check($tool, $args).await}));
        };
    }
    step!("list empty", "list_codebases", json!({}));
    step!(
        "status untracked",
        "manage_index",
        json!({"action": "status", "path": repo})
    );
    step!(
        "search untracked",
        "search_codebase",
        json!({"path": repo, "query": "token"})
    );
    h.create_and_wait().await;
    step!(
        "status indexed",
        "manage_index",
        json!({"action": "status", "path": repo})
    );
    step!(
        "create again",
        "manage_index",
        json!({"action": "create", "path": repo})
    );
    step!("list ready", "list_codebases", json!({}));
    step!(
        "identifier",
        "search_codebase",
        json!({"path": repo, "query": "refreshAccessToken", "limit": 3})
    );
    step!(
        "natural language",
        "search_codebase",
        json!({"path": repo, "query": "dispatch a request to its route handler", "limit": 3})
    );
    step!(
        "raw",
        "search_codebase",
        json!({"path": repo, "query": "parse_header", "resultMode": "raw", "limit": 2})
    );
    step!(
        "operators",
        "search_codebase",
        json!({"path": repo, "query": "lang:python must:handler route", "limit": 5})
    );
    step!(
        "docs scope",
        "search_codebase",
        json!({"path": repo, "query": "token refresh", "scope": "docs", "limit": 3})
    );
    step!(
        "subdirectory",
        "search_codebase",
        json!({"path": format!("{repo}/src/server"), "query": "route", "limit": 3})
    );
    step!(
        "sync unchanged",
        "manage_index",
        json!({"action": "sync", "path": repo})
    );
    write(
        &h.repo(),
        "src/new_module.py",
        b"def brand_new_function():\n    return 42\n",
    );
    std::fs::remove_file(h.repo().join("notes/long.txt")).unwrap();
    step!(
        "sync changes",
        "manage_index",
        json!({"action": "sync", "path": repo})
    );
    step!(
        "finds new code",
        "search_codebase",
        json!({"path": repo, "query": "brand_new_function", "limit": 1})
    );
    write(&h.repo(), ".satoriignore", b"docs/\n");
    step!(
        "reindex ignore-only",
        "manage_index",
        json!({"action": "reindex", "path": repo})
    );
    step!(
        "clear",
        "manage_index",
        json!({"action": "clear", "path": repo})
    );
    step!(
        "clear again",
        "manage_index",
        json!({"action": "clear", "path": repo})
    );
    step!("list after clear", "list_codebases", json!({}));
    insta::assert_json_snapshot!(out);
}

#[tokio::test]
async fn read_file_paths() {
    let h = Harness::new().await;
    let repo = h.repo_str();
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "x.txt", b"outside\n");
    let mut out = Vec::new();
    macro_rules! step {
        ($name:expr, $args:expr) => {
            out.push(json!({"step": $name, "result": h.check("read_file", $args).await}));
        };
    }
    step!(
        "untracked file is confined",
        json!({"path": format!("{repo}/src/lib.rs")})
    );
    h.create_and_wait().await;
    step!(
        "whole small file",
        json!({"path": format!("{repo}/src/lib.rs")})
    );
    step!(
        "range",
        json!({"path": format!("{repo}/src/lib.rs"), "start_line": 9, "end_line": 10})
    );
    step!(
        "truncated",
        json!({"path": format!("{repo}/notes/long.txt")})
    );
    step!(
        "only start",
        json!({"path": format!("{repo}/notes/long.txt"), "start_line": 25})
    );
    step!(
        "only end",
        json!({"path": format!("{repo}/notes/long.txt"), "end_line": 2})
    );
    step!(
        "clamped",
        json!({"path": format!("{repo}/notes/long.txt"), "start_line": 29, "end_line": 99})
    );
    step!("missing", json!({"path": format!("{repo}/nope.rs")}));
    step!("directory", json!({"path": format!("{repo}/src")}));
    step!("binary", json!({"path": format!("{repo}/assets/logo.png")}));
    step!("outside", json!({"path": outside.path().join("x.txt")}));
    step!("relative", json!({"path": "src/lib.rs"}));
    step!(
        "open symbol by label",
        json!({"path": format!("{repo}/src/lib.rs"), "open_symbol": {"symbolLabel": "parse_header"}})
    );
    step!(
        "open symbol unknown",
        json!({"path": format!("{repo}/src/lib.rs"), "open_symbol": {"symbolId": "sym_0000000000000000"}})
    );
    step!(
        "open symbol by line",
        json!({"path": format!("{repo}/src/lib.rs"), "open_symbol": {"start_line": 3, "end_line": 4}})
    );
    step!(
        "annotated",
        json!({"path": format!("{repo}/src/server/router.py"), "mode": "annotated", "start_line": 1, "end_line": 12})
    );
    let outside_path = outside.path().to_string_lossy().into_owned();
    let out: Value = serde_json::from_str(
        &serde_json::to_string(&out)
            .unwrap()
            .replace(&outside_path, "<OUTSIDE>"),
    )
    .unwrap();
    insta::assert_json_snapshot!(out);
}

/// Every invalid-arguments path of the contract: one line, `isError: true`.
/// `file_outline`, `call_graph` and `read_file` `open_symbol` over one codebase: the gates,
/// outlines (window, limit, exact with ok/ambiguous/not_found), the files an outline refuses,
/// a walk in each direction, and the handles after edits: a moved function keeps its id, a
/// renamed one answers `not_found` with a search to refresh it.
#[tokio::test]
async fn navigation() {
    let h = Harness::new().await;
    let repo = h.repo_str();
    let mut out = Vec::new();
    macro_rules! step {
        ($name:expr, $tool:expr, $args:expr) => {{
            let r = h.check($tool, $args).await;
            out.push(json!({"step": $name, "result": r.clone()}));
            r
        }};
    }
    let router = "src/server/router.py";
    step!(
        "outline untracked",
        "file_outline",
        json!({"path": repo, "file": router})
    );
    step!(
        "graph untracked",
        "call_graph",
        json!({"path": repo, "symbolRef": {"file": router, "symbolId": "sym_0000000000000000"}})
    );
    h.create_and_wait().await;
    let outline = step!(
        "outline",
        "file_outline",
        json!({"path": repo, "file": router})
    );
    step!(
        "outline window",
        "file_outline",
        json!({"path": repo, "file": router, "start_line": 13, "end_line": 16})
    );
    step!(
        "outline limit",
        "file_outline",
        json!({"path": repo, "file": router, "limitSymbols": 2})
    );
    step!(
        "outline from a subdirectory path",
        "file_outline",
        json!({"path": format!("{repo}/src"), "file": "server/router.py"})
    );
    step!(
        "exact by label",
        "file_outline",
        json!({"path": repo, "file": router, "resolveMode": "exact", "symbolLabelExact": "route_request"})
    );
    step!(
        "exact unknown",
        "file_outline",
        json!({"path": repo, "file": router, "resolveMode": "exact", "symbolLabelExact": "dispatch"})
    );
    write(
        &h.repo(),
        "src/handlers.py",
        b"class Users:\n    def handle(self, request):\n        return request\n\n\nclass Orders:\n    def handle(self, request):\n        return request\n",
    );
    step!(
        "exact ambiguous",
        "file_outline",
        json!({"path": repo, "file": "src/handlers.py", "resolveMode": "exact", "symbolLabelExact": "handle"})
    );
    // Perl has no grammar: its outline is read from its lines, and it has no call graph.
    write(
        &h.repo(),
        "lib/Shop/Cart.pm",
        b"package Shop::Cart;\n\n# Adds an item.\nsub add {\n    my ($self, $item) = @_;\n    push @{ $self->{items} }, $item;\n}\n\n1;\n__END__\n\n=head1 NAME\n\nShop::Cart - a cart\n\n=cut\n",
    );
    step!(
        "perl outline",
        "file_outline",
        json!({"path": repo, "file": "lib/Shop/Cart.pm"})
    );
    step!(
        "perl open symbol",
        "read_file",
        json!({"path": format!("{repo}/lib/Shop/Cart.pm"), "open_symbol": {"symbolLabel": "add"}})
    );
    step!(
        "perl graph",
        "call_graph",
        json!({"path": repo, "symbolRef": {"file": "lib/Shop/Cart.pm", "symbolId": "sym_0000000000000000"}})
    );
    step!(
        "unsupported language",
        "file_outline",
        json!({"path": repo, "file": "notes/long.txt"})
    );
    step!(
        "binary",
        "file_outline",
        json!({"path": repo, "file": "assets/logo.png"})
    );
    step!(
        "missing file",
        "file_outline",
        json!({"path": repo, "file": "src/server/gone.py"})
    );
    step!(
        "parent directory",
        "file_outline",
        json!({"path": repo, "file": "../etc/passwd"})
    );
    write(&h.repo(), ".env", b"API_KEY=abc\n");
    step!(
        "secrets",
        "file_outline",
        json!({"path": repo, "file": ".env"})
    );

    let symbols = outline["structuredContent"]["outline"]["symbols"]
        .as_array()
        .unwrap()
        .clone();
    let handle = |name: &str| -> Value {
        symbols
            .iter()
            .find(|s| s["symbolLabel"].as_str().unwrap().contains(name))
            .unwrap_or_else(|| panic!("no {name} in {symbols:?}"))["callGraphHint"]["symbolRef"]
            .clone()
    };
    let route = handle("route_request");
    step!(
        "callers depth 2",
        "call_graph",
        json!({"path": repo, "symbolRef": route, "direction": "callers", "depth": 2})
    );
    step!(
        "callees",
        "call_graph",
        json!({"path": repo, "symbolRef": route, "direction": "callees"})
    );
    step!(
        "bidirectional, limit 1",
        "call_graph",
        json!({"path": repo, "symbolRef": route, "direction": "bidirectional", "limit": 1})
    );
    step!(
        "stale id",
        "call_graph",
        json!({"path": repo, "symbolRef": {"file": router, "symbolId": "sym_0000000000000000", "symbolLabel": "route_request"}})
    );
    step!(
        "no call graph for the language",
        "call_graph",
        json!({"path": repo, "symbolRef": {"file": "notes/long.txt", "symbolId": "sym_0000000000000000", "span": {"startLine": 1, "endLine": 3}}})
    );
    step!(
        "open symbol by id",
        "read_file",
        json!({"path": format!("{repo}/{router}"), "open_symbol": {"symbolId": route["symbolId"]}})
    );

    // Lines added above the function move it: same id, new span, same callers.
    let path = h.repo().join(router);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("import os\nimport sys\n\n{text}")).unwrap();
    step!(
        "sync after a move",
        "manage_index",
        json!({"action": "sync", "path": repo})
    );
    let moved = step!(
        "moved function keeps its id",
        "file_outline",
        json!({"path": repo, "file": router, "resolveMode": "exact", "symbolIdExact": route["symbolId"]})
    );
    assert_eq!(moved["structuredContent"]["status"], "ok");
    step!(
        "callers after the move",
        "call_graph",
        json!({"path": repo, "symbolRef": route, "direction": "callers"})
    );
    // A renamed function is another symbol: the old handle is stale.
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replace("def route_request", "def dispatch_request"),
    )
    .unwrap();
    step!(
        "sync after a rename",
        "manage_index",
        json!({"action": "sync", "path": repo})
    );
    step!(
        "renamed function",
        "call_graph",
        json!({"path": repo, "symbolRef": route, "direction": "callers"})
    );
    step!(
        "renamed function by id",
        "file_outline",
        json!({"path": repo, "file": router, "resolveMode": "exact", "symbolIdExact": route["symbolId"]})
    );
    insta::assert_json_snapshot!(out);
}

#[tokio::test]
async fn invalid_arguments() {
    let h = Harness::new().await;
    let cases = [
        ("manage_index", json!({})),
        ("manage_index", json!({"action": "explode", "path": "/x"})),
        ("manage_index", json!({"action": "create", "path": ""})),
        (
            "manage_index",
            json!({"action": "create", "path": "relative/dir"}),
        ),
        (
            "manage_index",
            json!({"action": "status", "path": "/x", "force": true}),
        ),
        (
            "manage_index",
            json!({"action": "create", "path": "/x", "bogus": 1}),
        ),
        ("search_codebase", json!({"path": "/x"})),
        ("search_codebase", json!({"path": "/x", "query": ""})),
        ("search_codebase", json!({"path": "/x", "query": "   "})),
        (
            "search_codebase",
            json!({"path": "/x", "query": "q", "limit": 0}),
        ),
        (
            "search_codebase",
            json!({"path": "/x", "query": "q", "limit": 51}),
        ),
        (
            "search_codebase",
            json!({"path": "/x", "query": "q", "scope": "everything"}),
        ),
        (
            "search_codebase",
            json!({"path": "/x", "query": "q", "debug": "yes"}),
        ),
        ("read_file", json!({"path": "/x", "start_line": 0})),
        ("read_file", json!({"path": "/x", "open_symbol": {}})),
        ("read_file", json!({"path": "/x", "mode": "fancy"})),
        ("list_codebases", json!({"unexpected": true})),
    ];
    let mut out = Vec::new();
    for (tool, args) in cases {
        let r = h.call(tool, args.clone()).await;
        assert_eq!(r.is_error, Some(true), "{tool} {args}");
        let text = r.content[0].as_text().unwrap().text.clone();
        assert!(!text.contains('\n'), "one line: {text}");
        assert!(
            text.starts_with(&format!("Error: Invalid arguments for '{tool}'. ")),
            "{text}"
        );
        out.push(json!({"tool": tool, "args": args, "error": text}));
    }
    insta::assert_json_snapshot!(out);
}

#[tokio::test]
async fn unknown_tool_is_a_protocol_error() {
    let h = Harness::new().await;
    let err = h
        .client
        .call_tool(CallToolRequestParams::new("rename_symbol"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("unknown tool"), "{err}");
}

/// A stored fingerprint that differs from the runtime one gates every access.
#[tokio::test]
async fn fingerprint_mismatch_requires_reindex() {
    let h = Harness::new().await;
    let repo = h.repo_str();
    h.create_and_wait().await;
    let state_path = h.home_path.join("state.json");
    let mut state: Value = serde_json::from_slice(&std::fs::read(&state_path).unwrap()).unwrap();
    state["codebases"][&repo]["fingerprint"]["embeddingModel"] = json!("some-other-model");
    std::fs::write(&state_path, serde_json::to_vec(&state).unwrap()).unwrap();
    let mut out = Vec::new();
    out.push(
        h.check("search_codebase", json!({"path": repo, "query": "token"}))
            .await,
    );
    out.push(
        h.check("manage_index", json!({"action": "status", "path": repo}))
            .await,
    );
    out.push(h.check("list_codebases", json!({})).await);
    out.push(
        h.check("manage_index", json!({"action": "sync", "path": repo}))
            .await,
    );
    insta::assert_json_snapshot!(out);
}

/// A damaged file of the published index (here the lexical term dictionary) is found by
/// `status` and by `search_codebase`, named, and answered as `requires_reindex` with a
/// reindex hint; a reindex repairs it.
#[tokio::test]
async fn damaged_index_requires_reindex() {
    let h = Harness::new().await;
    let repo = h.repo_str();
    h.create_and_wait().await;
    let dir = satori_core::Home::new(h.home_path.clone()).codebase(&h.repo());
    let current = std::fs::read_to_string(dir.path().join("CURRENT")).unwrap();
    let lexical = dir.path().join(current.trim()).join("lexical");
    let term = std::fs::read_dir(&lexical)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "term"))
        .unwrap();
    let mut bytes = std::fs::read(&term).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&term, bytes).unwrap();
    let term_name = term.file_name().unwrap().to_string_lossy().into_owned();
    let h = h.restarted().await;
    let search = json!({"path": repo, "query": "token"});
    let mut out = vec![
        h.check("search_codebase", search.clone()).await,
        h.check("manage_index", json!({"action": "status", "path": repo}))
            .await,
    ];
    // A fresh process finds it at status time too.
    let h = h.restarted().await;
    let state_path = h.home_path.join("state.json");
    let mut state: Value = serde_json::from_slice(&std::fs::read(&state_path).unwrap()).unwrap();
    state["codebases"][&repo]["state"] = json!("indexed");
    std::fs::write(&state_path, serde_json::to_vec(&state).unwrap()).unwrap();
    out.push(
        h.check("manage_index", json!({"action": "status", "path": repo}))
            .await,
    );
    let key = dir
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let text = serde_json::to_string(&out)
        .unwrap()
        .replace(&term_name, "<segment>.term")
        .replace(current.trim(), "<gen>")
        .replace(&key, "<key>");
    let out: Value = serde_json::from_str(&text).unwrap();
    insta::assert_json_snapshot!(out);
    let r = h
        .check("manage_index", json!({"action": "reindex", "path": repo}))
        .await;
    assert_eq!(r["structuredContent"]["status"], "ok", "{r}");
    for _ in 0..400 {
        let s = h
            .check("manage_index", json!({"action": "status", "path": repo}))
            .await;
        if support::build_over(&s) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let r = h.check("search_codebase", search).await;
    assert_eq!(r["structuredContent"]["status"], "ok", "{r}");
}

/// Damages the `CURRENT` pointer of the codebase directory `dir` in one way.
type PointerDamage = fn(&Path);

/// One damaged `CURRENT`: a fresh process's status, search, outline, call graph and sync all
/// say the index is damaged (naming `CURRENT`), hint `reindex`, and none answers `indexed` or
/// "not indexed"; then `recover` (`reindex`, the hinted call, or `create`, which must not
/// answer "already indexed") rebuilds it, and search answers again.
async fn check_damaged_pointer(name: &str, damage: PointerDamage, recover: &str) {
    let h = Harness::new().await;
    let repo = h.repo_str();
    h.create_and_wait().await;
    let dir = satori_core::Home::new(h.home_path.clone()).codebase(&h.repo());
    damage(dir.path());
    let h = h.restarted().await;
    let mut hint = Value::Null;
    for (tool, args) in [
        ("search_codebase", json!({"path": repo, "query": "token"})),
        ("manage_index", json!({"action": "status", "path": repo})),
        (
            "file_outline",
            json!({"path": repo, "file": "src/auth/refresh.ts"}),
        ),
        (
            "call_graph",
            json!({"path": repo, "symbolRef": {"file": "src/auth/refresh.ts", "symbolId": "sym_0000000000000000"}}),
        ),
        ("manage_index", json!({"action": "sync", "path": repo})),
    ] {
        let r = h.call(tool, args).await;
        let v = r.structured_content.unwrap_or_default();
        assert_eq!(v["status"], "requires_reindex", "{name}: {tool}: {v}");
        let message = v["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("CURRENT") && message.contains("damaged"),
            "{name}: {tool} does not say the pointer is damaged: {message}"
        );
        assert!(v["hints"]["reindex"].is_object(), "{name}: {tool}: {v}");
        assert!(v["hints"].get("create").is_none(), "{name}: {tool}: {v}");
        hint = v["hints"]["reindex"].clone();
    }
    let r = match recover {
        "reindex" => {
            assert_eq!(hint["tool"], "manage_index", "{name}: {hint}");
            h.check("manage_index", hint["args"].clone()).await
        }
        _ => {
            h.check("manage_index", json!({"action": "create", "path": repo}))
                .await
        }
    };
    let v = &r["structuredContent"];
    assert_eq!(v["status"], "ok", "{name}: {recover}: {v}");
    assert_eq!(
        v["state"], "indexing",
        "{name}: {recover} did not rebuild: {v}"
    );
    for _ in 0..400 {
        let s = h
            .check("manage_index", json!({"action": "status", "path": repo}))
            .await;
        if support::build_over(&s) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let r = h
        .check("search_codebase", json!({"path": repo, "query": "token"}))
        .await;
    assert_eq!(r["structuredContent"]["status"], "ok", "{name}: {r}");
}

/// A `CURRENT` that is empty, holds garbage or a path, names a generation that is gone, or is
/// missing, is a damaged index, not an indexed one and not a cleared one.
#[tokio::test]
async fn damaged_current_pointer_requires_reindex() {
    let cases: [(&str, PointerDamage, &str); 5] = [
        (
            "empty",
            |d| std::fs::write(d.join("CURRENT"), "").unwrap(),
            "reindex",
        ),
        (
            "garbage",
            |d| std::fs::write(d.join("CURRENT"), b"\xff\xfe not a name").unwrap(),
            "create",
        ),
        (
            "a path",
            |d| std::fs::write(d.join("CURRENT"), "../../etc").unwrap(),
            "reindex",
        ),
        (
            "a missing generation",
            |d| std::fs::write(d.join("CURRENT"), "gen-1-1").unwrap(),
            "create",
        ),
        (
            "missing",
            |d| std::fs::remove_file(d.join("CURRENT")).unwrap(),
            "reindex",
        ),
    ];
    for (name, damage, recover) in cases {
        check_damaged_pointer(name, damage, recover).await;
    }
}

/// A build whose process died leaves `indexing` behind with no writer; it reads as failed.
#[tokio::test]
async fn interrupted_build_is_reported_as_failed() {
    let h = Harness::new().await;
    let repo = h.repo_str();
    let state = json!({
        "formatVersion": 1,
        "codebases": { repo.clone(): { "state": "indexing", "percentage": 40.0, "phase": "chunking", "lastUpdatedMs": 1 } }
    });
    std::fs::create_dir_all(&h.home_path).unwrap();
    std::fs::write(
        h.home_path.join("state.json"),
        serde_json::to_vec(&state).unwrap(),
    )
    .unwrap();
    let mut out = Vec::new();
    out.push(
        h.check("manage_index", json!({"action": "status", "path": repo}))
            .await,
    );
    out.push(
        h.check("search_codebase", json!({"path": repo, "query": "token"}))
            .await,
    );
    out.push(h.check("list_codebases", json!({})).await);
    insta::assert_json_snapshot!(out);
}

/// A corrupt state file is set aside and rebuilt from the published indexes.
#[tokio::test]
async fn corrupt_state_file_loses_no_index() {
    let h = Harness::new().await;
    let repo = h.repo_str();
    h.create_and_wait().await;
    std::fs::write(
        h.home_path.join("state.json"),
        b"{\"formatVersion\": 1, \"codebases\": {",
    )
    .unwrap();
    let r = h
        .check(
            "search_codebase",
            json!({"path": repo, "query": "parse_header", "limit": 1}),
        )
        .await;
    assert_eq!(r["structuredContent"]["status"], "ok", "{r}");
    assert_eq!(
        r["structuredContent"]["results"][0]["file"], "src/lib.rs",
        "{r}"
    );
}

/// Searching while the first build runs answers not_ready with a status hint.
#[tokio::test]
async fn search_during_first_index_is_not_ready() {
    let h = Harness::new().await;
    let repo = h.repo_str();
    // Hold the writer lock the way a running build does, with an `indexing` record.
    let home = satori_core::Home::new(h.home_path.clone());
    let dir = home.codebase(&h.repo());
    dir.ensure(&h.repo()).unwrap();
    let _lock = dir.lock_for_build(&h.repo()).unwrap().unwrap();
    let store = satori_core::StateStore::new(home);
    let mut st = satori_core::CodebaseState::new(satori_core::IndexState::Indexing);
    st.percentage = 12.0;
    store.set(&h.repo(), st).unwrap();
    let mut out = Vec::new();
    out.push(
        h.check("search_codebase", json!({"path": repo, "query": "token"}))
            .await,
    );
    out.push(
        h.check("read_file", json!({"path": format!("{repo}/src/lib.rs")}))
            .await,
    );
    out.push(
        h.check(
            "manage_index",
            json!({"action": "create", "path": repo, "force": true}),
        )
        .await,
    );
    out.push(
        h.check("manage_index", json!({"action": "clear", "path": repo}))
            .await,
    );
    insta::assert_json_snapshot!(out);
}

/// `debug: true` adds score components to every result and the query plan to the hints; both
/// are part of the answer, so their shape is pinned like the rest.
#[tokio::test]
async fn debug_search() {
    let h = Harness::new().await;
    let repo = h.repo_str();
    h.create_and_wait().await;
    let mut out = Vec::new();
    out.push(
        h.check(
            "search_codebase",
            json!({"path": repo, "query": "lang:python -path:tests/** exclude:zzz must:handler route request", "limit": 2, "debug": true}),
        )
        .await,
    );
    out.push(
        h.check(
            "search_codebase",
            json!({"path": repo, "query": "parse_header", "resultMode": "raw", "limit": 1, "debug": true}),
        )
        .await,
    );
    out.push(
        h.check(
            "search_codebase",
            json!({"path": repo, "query": "test route request handler", "scope": "mixed", "limit": 3}),
        )
        .await,
    );
    // Without a reranker: asked off, the debug block says so; forced on, a clear error.
    out.push(
        h.check(
            "search_codebase",
            json!({"path": repo, "query": "route request handler", "limit": 1, "debug": true, "useReranker": false}),
        )
        .await,
    );
    out.push(
        h.check(
            "search_codebase",
            json!({"path": repo, "query": "route request handler", "useReranker": true}),
        )
        .await,
    );
    insta::assert_json_snapshot!(out);
}

/// With the local reranker configured, a described behaviour is reranked by default (every
/// candidate gets the reranker's score and rank), an identifier is not unless asked, and
/// `useReranker: false` turns it off.
#[tokio::test]
async fn the_local_reranker_reranks_by_default() {
    let h = Harness::with(|c| {
        c.reranker = Some(std::sync::Arc::new(
            satori_core::search::LateInteraction::bundled().unwrap(),
        ))
    })
    .await;
    let repo = h.repo_str();
    h.create_and_wait().await;
    let search = |args: Value| {
        let h = &h;
        async move {
            let r = h.call("search_codebase", args).await;
            assert_ne!(r.is_error, Some(true), "{r:?}");
            r.structured_content.unwrap()
        }
    };
    let v = search(
        json!({"path": repo, "query": "renew the access token before it expires", "debug": true}),
    )
    .await;
    let rerank = &v["hints"]["debugSearch"]["rerank"];
    assert_eq!(rerank["decision"], "applied", "{rerank}");
    assert!(
        rerank["reranker"]
            .as_str()
            .unwrap()
            .starts_with("local/late-interaction-")
    );
    assert!(rerank["candidates"].as_u64().unwrap() >= 1);
    let first = &v["results"][0]["debug"];
    assert!(
        first["rerankScore"].is_number() && first["rerankRank"].is_number(),
        "{first}"
    );
    let v = search(json!({"path": repo, "query": "parse_header", "debug": true})).await;
    assert_eq!(
        v["hints"]["debugSearch"]["rerank"]["decision"],
        "identifier_query"
    );
    let v =
        search(json!({"path": repo, "query": "parse_header", "debug": true, "useReranker": true}))
            .await;
    assert_eq!(v["hints"]["debugSearch"]["rerank"]["decision"], "applied");
    let v = search(json!({"path": repo, "query": "renew the access token", "debug": true, "useReranker": false})).await;
    assert_eq!(v["hints"]["debugSearch"]["rerank"]["decision"], "disabled");
}

/// Reads every snapshot of this crate and of `satori-protocol` and returns each envelope in
/// it with the tool that sent it. Server snapshots hold whole results (the envelope is their
/// `structuredContent`); the contract's own snapshots are envelopes, named by tool.
fn snapshot_envelopes() -> Vec<(String, &'static str, Value)> {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for dir in [
        here.join("tests/snapshots"),
        here.join("../satori-protocol/tests/snapshots"),
    ] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "snap"))
            .collect();
        files.sort();
        for file in files {
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&file).unwrap();
            // An insta snapshot: a `---` header block, then the JSON.
            let body = text.splitn(3, "---\n").nth(2).unwrap();
            let Ok(value) = serde_json::from_str::<Value>(body) else {
                continue;
            };
            if let Some(envelope) = name.strip_prefix("envelopes__") {
                let tool = match envelope.split('_').next() {
                    Some("manage") => "manage_index",
                    Some("search") => "search_codebase",
                    Some("read") => "read_file",
                    _ => panic!("{name}: which tool's envelope is this?"),
                };
                out.push((name.clone(), tool, value));
            } else {
                collect_structured(&name, &value, &mut out);
            }
        }
    }
    out
}

fn collect_structured(name: &str, v: &Value, out: &mut Vec<(String, &'static str, Value)>) {
    match v {
        Value::Object(map) => {
            if let Some(sc) = map.get("structuredContent") {
                // Only manage_index says its name; a search echoes its request.
                let tool = if sc["tool"] == "manage_index" {
                    "manage_index"
                } else if sc.get("edges").is_some() {
                    "call_graph"
                } else if sc.get("outline").is_some() && sc.get("mode").is_none() {
                    "file_outline"
                } else if sc.get("resultMode").is_some() {
                    "search_codebase"
                } else {
                    "read_file"
                };
                let mut sc = sc.clone();
                unredact(&mut sc);
                out.push((name.to_owned(), tool, sc));
            }
            map.values().for_each(|x| collect_structured(name, x, out));
        }
        Value::Array(items) => items.iter().for_each(|x| collect_structured(name, x, out)),
        _ => {}
    }
}

/// Durations were redacted to a string in the snapshots; put a number back so the envelope
/// has the types the server sent.
fn unredact(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (k, x) in map.iter_mut() {
                if matches!(k.as_str(), "ageMs" | "durationMs") && x == "<redacted>" {
                    *x = json!(0);
                } else {
                    unredact(x);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(unredact),
        _ => {}
    }
}

/// Checks `value` against the JSON Schema `root`, for the keywords our output schemas use.
/// Unknown keys fail through `additionalProperties: false`, which every envelope object has.
fn schema_errors(root: &Value, value: &Value, at: &str, errors: &mut Vec<String>) {
    node_errors(root, root, value, at, errors);
}

/// [`schema_errors`] for the node `schema` of `root` (whose `$defs` its `$ref`s name).
fn node_errors(root: &Value, schema: &Value, value: &Value, at: &str, errors: &mut Vec<String>) {
    if let Some(target) = schema.get("$ref").and_then(Value::as_str) {
        let name = target
            .strip_prefix("#/$defs/")
            .unwrap_or_else(|| panic!("{at}: $ref {target} is not a local definition"));
        let def = root["$defs"]
            .get(name)
            .unwrap_or_else(|| panic!("{at}: no definition {name}"));
        node_errors(root, def, value, at, errors);
    }
    let type_ok = |t: &str| match t {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "integer" => value.is_u64() || value.is_i64(),
        "number" => value.is_number(),
        other => panic!("schema type {other} not handled by this check"),
    };
    match schema.get("type") {
        Some(Value::String(t)) if !type_ok(t) => errors.push(format!("{at}: not a {t}")),
        Some(Value::Array(ts)) if !ts.iter().any(|t| type_ok(t.as_str().unwrap())) => {
            errors.push(format!("{at}: not any of {ts:?}"))
        }
        _ => {}
    }
    if let Some(Value::Array(allowed)) = schema.get("enum")
        && !allowed.contains(value)
    {
        errors.push(format!("{at}: {value} not in {allowed:?}"));
    }
    if let Some(c) = schema.get("const")
        && c != value
    {
        errors.push(format!("{at}: {value} is not {c}"));
    }
    if let (Some(min), Some(n)) = (
        schema.get("minimum").and_then(Value::as_f64),
        value.as_f64(),
    ) && n < min
    {
        errors.push(format!("{at}: {n} < {min}"));
    }
    for (key, exactly_one) in [("anyOf", false), ("oneOf", true)] {
        if let Some(Value::Array(branches)) = schema.get(key) {
            let passing = branches
                .iter()
                .filter(|b| {
                    let mut e = Vec::new();
                    node_errors(root, b, value, at, &mut e);
                    e.is_empty()
                })
                .count();
            if passing == 0 || (exactly_one && passing > 1) {
                errors.push(format!("{at}: {passing} branches of {key} match"));
            }
        }
    }
    if let Value::Object(map) = value {
        let props = schema.get("properties").and_then(Value::as_object);
        for required in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if !map.contains_key(required.as_str().unwrap()) {
                errors.push(format!("{at}: missing {required}"));
            }
        }
        for (k, x) in map {
            match props.and_then(|p| p.get(k)) {
                Some(sub) => node_errors(root, sub, x, &format!("{at}.{k}"), errors),
                None => match schema.get("additionalProperties") {
                    Some(Value::Bool(false)) => errors.push(format!("{at}: unknown key {k}")),
                    Some(sub @ Value::Object(_)) => {
                        node_errors(root, sub, x, &format!("{at}.{k}"), errors)
                    }
                    _ => {}
                },
            }
        }
    }
    if let Value::Array(items) = value {
        let len = items.len() as u64;
        if schema["minItems"].as_u64().is_some_and(|min| len < min)
            || schema["maxItems"].as_u64().is_some_and(|max| len > max)
        {
            errors.push(format!("{at}: {len} items"));
        }
        if let Some(sub) = schema.get("items").filter(|s| s.is_object()) {
            for (i, x) in items.iter().enumerate() {
                node_errors(root, sub, x, &format!("{at}[{i}]"), errors);
            }
        }
    }
}

/// Every envelope of every snapshot validates against the `outputSchema` its tool
/// advertises, unknown keys refused; and it reads back as the contract's answer type (which
/// refuses unknown keys too) and writes back to the same JSON, so the type is the wire shape.
#[tokio::test]
async fn snapshot_envelopes_conform_to_the_output_schemas() {
    use satori_protocol::envelope::{
        CallGraphEnvelope, FileOutlineEnvelope, ManageIndexEnvelope, ReadFileAnswer, SearchEnvelope,
    };
    fn round_trip<T: serde::de::DeserializeOwned + serde::Serialize>(v: &Value) -> Value {
        let typed: T = serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{e}"));
        serde_json::to_value(typed).unwrap()
    }
    let h = Harness::new().await;
    let tools = h.client.list_all_tools().await.unwrap();
    let schema_of = |name: &str| -> Value {
        let tool = tools.iter().find(|t| t.name == name).unwrap();
        Value::Object(tool.output_schema.as_deref().unwrap().clone())
    };
    let mut counts = std::collections::BTreeMap::new();
    for (file, tool, envelope) in snapshot_envelopes() {
        let mut errors = Vec::new();
        schema_errors(&schema_of(tool), &envelope, "$", &mut errors);
        assert!(
            errors.is_empty(),
            "{file} ({tool}): {errors:#?}\n{envelope:#}"
        );
        let back = match tool {
            "manage_index" => round_trip::<ManageIndexEnvelope>(&envelope),
            "search_codebase" => round_trip::<SearchEnvelope>(&envelope),
            "file_outline" => round_trip::<FileOutlineEnvelope>(&envelope),
            "call_graph" => round_trip::<CallGraphEnvelope>(&envelope),
            _ => round_trip::<ReadFileAnswer>(&envelope),
        };
        assert_eq!(back, envelope, "{file} ({tool}) does not round-trip");
        *counts.entry(tool).or_insert(0) += 1;
    }
    // The walk found the envelopes (a renamed snapshot directory must not pass silently).
    for tool in [
        "manage_index",
        "search_codebase",
        "read_file",
        "file_outline",
        "call_graph",
    ] {
        assert!(counts.get(tool).copied().unwrap_or(0) >= 5, "{counts:?}");
    }
    // And the check itself refuses what it must: an extra key, a missing one, a wrong type.
    let search = schema_of("search_codebase");
    let good = json!({"status": "not_indexed", "path": "/r", "query": "q", "scope": "runtime",
        "groupBy": "symbol", "resultMode": "grouped", "limit": 10, "results": []});
    let mut errors = Vec::new();
    schema_errors(&search, &good, "$", &mut errors);
    assert!(errors.is_empty(), "{errors:?}");
    let mut extra = good.clone();
    extra["surprise"] = json!(1);
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("query");
    let mut wrong = good.clone();
    wrong["limit"] = json!("ten");
    for bad in [extra, missing, wrong] {
        let mut errors = Vec::new();
        schema_errors(&search, &bad, "$", &mut errors);
        assert!(!errors.is_empty(), "accepted {bad}");
        assert!(serde_json::from_value::<SearchEnvelope>(bad).is_err());
    }
}
