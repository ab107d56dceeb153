//! The workspace's structural rules, checked on every test run.
//!
//! Crate edges: the engine knows nothing of MCP or command lines, the contract depends on
//! nothing of ours, clients reach the engine only through MCP, and the MCP client library
//! knows nothing of Satori.
//!
//! Module cycles: inside every crate, the modules that share a parent (the crate's top
//! modules, the sub-modules of each directory module, and so on down) must reference each
//! other without a cycle. References are read from the source: `crate::`, `super::` and
//! `self::` paths in code and `use` trees (comments and strings are skipped), resolved through
//! the module tree and through `use`/`pub use` re-exports, so `super::Thing` counts as a
//! reference to the sibling that `Thing` really comes from. A parent's own items are not a
//! node: children may use what their parent declares.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// `(crate, forbidden dependency)` pairs, for normal and build dependencies.
const FORBIDDEN: &[(&str, &[&str])] = &[
    (
        "satori-core",
        &[
            "satori-protocol",
            "satori-mcp",
            "satori-client",
            "satori-cli",
            "rmcp",
            "clap",
            "napi",
            "napi-derive",
        ],
    ),
    (
        "satori-protocol",
        &[
            "satori-core",
            "satori-mcp",
            "satori-client",
            "satori-cli",
            "rmcp",
            "tokio",
        ],
    ),
    (
        "satori-client",
        &["satori-core", "satori-mcp", "satori-cli"],
    ),
    ("satori-cli", &["satori-core", "satori-mcp"]),
    // The Node addon reaches the engine through the bundled server, over MCP.
    ("satori-node", &["satori-core", "satori-mcp", "satori-cli"]),
    // A client of any server: it knows nothing of Satori's engine, server or wire types.
    (
        "mcat",
        &[
            "satori-core",
            "satori-mcp",
            "satori-cli",
            "satori-protocol",
            "satori-client",
        ],
    ),
    // The Milvus vector store: the engine's seam and nothing else of ours.
    (
        "satori-milvus",
        &[
            "satori-protocol",
            "satori-mcp",
            "satori-client",
            "satori-cli",
            "satori-node",
            "satori-providers",
            "mcat",
            "mcp-client",
            "rmcp",
            "clap",
            "napi",
        ],
    ),
    // Remote embedders: the engine's seam and nothing else of ours.
    (
        "satori-providers",
        &[
            "satori-protocol",
            "satori-mcp",
            "satori-client",
            "satori-cli",
            "satori-node",
            "mcat",
            "mcp-client",
            "rmcp",
            "clap",
            "napi",
        ],
    ),
    // The MCP client library: no crate of Satori's, so any MCP client can use it.
    (
        "mcp-client",
        &[
            "satori-core",
            "satori-mcp",
            "satori-cli",
            "satori-protocol",
            "satori-client",
            "satori-node",
            "mcat",
        ],
    ),
];

/// Module cycles that exist today and are being removed; nothing may be added here. Each
/// entry is `<crate target>: <the modules of the cycle, sorted>`. The test also fails when an
/// entry no longer matches a cycle, so the list only shrinks: delete the entry then.
const ALLOWED_CYCLES: &[&str] = &[];

fn metadata() -> Value {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .output()
        .expect("cargo metadata");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("metadata JSON")
}

#[test]
fn forbidden_edges_are_absent() {
    let meta = metadata();
    let packages = meta["packages"].as_array().expect("packages");
    let mut violations = Vec::new();
    for (krate, banned) in FORBIDDEN {
        let pkg = packages
            .iter()
            .find(|p| p["name"] == *krate)
            .unwrap_or_else(|| panic!("package {krate} not found"));
        for dep in pkg["dependencies"].as_array().expect("dependencies") {
            let name = dep["name"].as_str().unwrap_or_default();
            let kind = dep["kind"].as_str();
            if kind != Some("dev") && banned.contains(&name) {
                violations.push(format!("{krate} -> {name}"));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "forbidden dependency edges: {violations:?}"
    );
}

#[test]
fn no_module_cycles_in_any_crate() {
    let meta = metadata();
    let root = PathBuf::from(meta["workspace_root"].as_str().expect("workspace_root"));
    let mut found = BTreeMap::new();
    let mut crates = 0;
    for pkg in meta["packages"].as_array().expect("packages") {
        for target in pkg["targets"].as_array().expect("targets") {
            let kinds = target["kind"].as_array().expect("kind");
            if !kinds.iter().any(|k| k == "lib" || k == "bin") {
                continue;
            }
            let name = format!(
                "{} ({} {})",
                pkg["name"].as_str().unwrap_or_default(),
                kinds[0].as_str().unwrap_or_default(),
                target["name"].as_str().unwrap_or_default()
            );
            let src = PathBuf::from(target["src_path"].as_str().expect("src_path"));
            let tree = ModuleTree::read(&src);
            crates += 1;
            for cycle in tree.cycles() {
                let key = format!("{name}: {}", cycle.members.join(", "));
                let shown = cycle.explain(&root);
                found.insert(key, shown);
            }
        }
    }
    assert!(crates >= 6, "only {crates} crate targets found");
    let allowed: BTreeSet<&str> = ALLOWED_CYCLES.iter().copied().collect();
    let new: Vec<String> = found
        .iter()
        .filter(|(key, _)| !allowed.contains(key.as_str()))
        .map(|(key, shown)| format!("{key}\n{shown}"))
        .collect();
    let gone: Vec<&str> = allowed
        .iter()
        .filter(|key| !found.contains_key(**key))
        .copied()
        .collect();
    assert!(
        new.is_empty(),
        "module cycles (break them: move the shared item down, or invert the reference):\n\n{}",
        new.join("\n\n")
    );
    assert!(
        gone.is_empty(),
        "these allowed cycles no longer exist; delete them from ALLOWED_CYCLES: {gone:?}"
    );
}

/// The checker on a small crate written for it: it must see `use` trees, re-exports,
/// `super::` from inline modules, and ignore comments and strings.
#[test]
fn the_cycle_checker_sees_what_it_must() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let write = |rel: &str, text: &str| {
        let path = src.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "lib.rs",
        "mod a;\nmod b;\nmod c;\nmod d;\npub use a::Thing;\n/// [`crate::d::X`]\nfn f() {}\n",
    );
    // a -> b through a nested use tree.
    write(
        "a.rs",
        "use crate::{x::y, b::{self, Other}};\npub struct Thing;\n",
    );
    // b -> a only through the root re-export of `a::Thing`.
    write(
        "b.rs",
        "pub struct Other;\nfn g() -> crate::Thing { todo!() }\n",
    );
    // c mentions d only in a comment and a string: no edge. Its tests use their parent.
    write(
        "c.rs",
        "// crate::d::X\nconst S: &str = \"crate::d::X\";\nmod tests {\n    use super::*;\n}\n",
    );
    // d/ holds a two-module cycle through `super::` and the parent's re-export.
    write(
        "d/mod.rs",
        "mod p;\nmod q;\npub use self::q::Q;\nuse crate::c;\n",
    );
    write("d/p.rs", "pub struct P;\nfn h(_: super::Q) {}\n");
    write(
        "d/q.rs",
        "pub struct Q;\nfn k() { let _ = '\"'; let _: Option<super::p::P> = None; }\n",
    );
    let tree = ModuleTree::read(&src.join("lib.rs"));
    let cycles: Vec<String> = tree.cycles().iter().map(|c| c.members.join(", ")).collect();
    assert_eq!(cycles, ["a, b", "d::p, d::q"]);
    let explained = tree.cycles()[0].explain(src);
    assert!(explained.contains("a.rs:1"), "{explained}");
    assert!(explained.contains("b.rs:2"), "{explained}");
}

// ---- Reading modules -------------------------------------------------------------------

/// A module path inside one crate; the crate root is the empty path.
type ModPath = Vec<String>;

/// A `crate::`/`super::`/`self::`/`use` path as written, with where it was written.
#[derive(Debug, Clone)]
struct RawRef {
    /// The module the path appears in (inline modules included).
    from: ModPath,
    /// The path's segments; `crate`, `super`, `self` or a relative first segment.
    segments: Vec<String>,
    file: PathBuf,
    line: usize,
}

/// Everything read from one crate: its modules, what each imports, what each references.
#[derive(Debug, Default)]
struct ModuleTree {
    /// Child module names of each module.
    children: BTreeMap<ModPath, BTreeSet<String>>,
    /// Names brought into each module by `use` (public or not), with the path they name.
    imports: BTreeMap<ModPath, BTreeMap<String, RawRef>>,
    references: Vec<RawRef>,
}

impl ModuleTree {
    fn read(root_file: &Path) -> ModuleTree {
        let mut tree = ModuleTree::default();
        tree.children.insert(Vec::new(), BTreeSet::new());
        tree.read_file(root_file, Vec::new(), true);
        tree
    }

    /// Reads one module file; `owns_dir` is true for `lib.rs`, `main.rs` and `mod.rs`, whose
    /// children live beside them rather than in a directory named after them.
    fn read_file(&mut self, file: &Path, module: ModPath, owns_dir: bool) {
        let text = std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        let tokens = lex(&text);
        let child_dir = if owns_dir {
            file.parent().unwrap().to_path_buf()
        } else {
            file.with_extension("")
        };
        // Inline modules open here: (module path, brace depth of their body).
        let mut scopes: Vec<(ModPath, usize)> = vec![(module.clone(), 0)];
        let mut depth = 0usize;
        let mut i = 0;
        while i < tokens.len() {
            let current = scopes.last().unwrap().0.clone();
            match &tokens[i].tok {
                Tok::Open => depth += 1,
                Tok::Close => {
                    if scopes.len() > 1 && scopes.last().unwrap().1 == depth {
                        scopes.pop();
                    }
                    depth = depth.saturating_sub(1);
                }
                Tok::Ident(kw) if kw == "mod" => {
                    if let Some(Tok::Ident(name)) = tokens.get(i + 1).map(|t| &t.tok) {
                        let mut child = current.clone();
                        child.push(name.clone());
                        self.children
                            .entry(current.clone())
                            .or_default()
                            .insert(name.clone());
                        self.children.entry(child.clone()).or_default();
                        match tokens.get(i + 2).map(|t| &t.tok) {
                            Some(Tok::Open) => {
                                depth += 1;
                                scopes.push((child, depth));
                                i += 3;
                                continue;
                            }
                            Some(Tok::Semi) if scopes.len() == 1 => {
                                let (path, owns) = module_file(&child_dir, name);
                                self.read_file(&path, child, owns);
                            }
                            _ => {}
                        }
                        i += 2;
                        continue;
                    }
                }
                Tok::Ident(kw) if kw == "use" => {
                    let line = tokens[i].line;
                    i += 1;
                    let mut paths = Vec::new();
                    use_tree(&tokens, &mut i, Vec::new(), &mut paths);
                    for (segments, name) in paths {
                        let r = RawRef {
                            from: current.clone(),
                            segments,
                            file: file.to_path_buf(),
                            line,
                        };
                        if let Some(name) = name {
                            self.imports
                                .entry(current.clone())
                                .or_default()
                                .insert(name, r.clone());
                        }
                        self.references.push(r);
                    }
                    continue;
                }
                Tok::Ident(kw)
                    if matches!(kw.as_str(), "crate" | "super" | "self")
                        && matches!(tokens.get(i + 1).map(|t| &t.tok), Some(Tok::PathSep))
                        && !matches!(
                            i.checked_sub(1).map(|p| &tokens[p].tok),
                            Some(Tok::PathSep | Tok::Dollar)
                        ) =>
                {
                    let line = tokens[i].line;
                    let mut paths = Vec::new();
                    use_tree(&tokens, &mut i, Vec::new(), &mut paths);
                    for (segments, _) in paths {
                        self.references.push(RawRef {
                            from: current.clone(),
                            segments,
                            file: file.to_path_buf(),
                            line,
                        });
                    }
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
    }

    /// The absolute path a written path names, or `None` for paths outside the crate.
    fn absolute(&self, r: &RawRef) -> Option<ModPath> {
        let mut segments = r.segments.iter().peekable();
        let mut base: ModPath = match segments.peek().map(|s| s.as_str()) {
            Some("crate") => {
                segments.next();
                Vec::new()
            }
            Some("self") => {
                segments.next();
                r.from.clone()
            }
            Some("super") => {
                let mut base = r.from.clone();
                while segments.peek().map(|s| s.as_str()) == Some("super") {
                    segments.next();
                    base.pop();
                }
                base
            }
            // A relative path names a child module or an import of the module it is in.
            Some(first) if self.is_child(&r.from, first) || self.import(&r.from, first) => {
                r.from.clone()
            }
            _ => return None,
        };
        base.extend(segments.filter(|s| *s != "self").cloned());
        Some(base)
    }

    fn is_child(&self, module: &ModPath, name: &str) -> bool {
        self.children.get(module).is_some_and(|c| c.contains(name))
    }

    fn import(&self, module: &ModPath, name: &str) -> bool {
        self.imports
            .get(module)
            .is_some_and(|m| m.contains_key(name))
    }

    /// The deepest module an absolute path reaches, following imports and re-exports.
    fn resolve(&self, path: &[String], hops: usize) -> ModPath {
        let mut current = Vec::new();
        for (k, segment) in path.iter().enumerate() {
            if self.is_child(&current, segment) {
                current.push(segment.clone());
                continue;
            }
            let imported = self.imports.get(&current).and_then(|m| m.get(segment));
            if let Some(r) = imported
                && hops < 16
                && let Some(mut target) = self.absolute(r)
            {
                target.extend(path[k + 1..].iter().cloned());
                return self.resolve(&target, hops + 1);
            }
            break;
        }
        current
    }

    /// Edges between siblings: for each parent module, `child → child` with the first
    /// reference that made it.
    fn edges(&self) -> BTreeMap<ModPath, BTreeMap<(String, String), &RawRef>> {
        let mut edges: BTreeMap<ModPath, BTreeMap<(String, String), &RawRef>> = BTreeMap::new();
        for r in &self.references {
            let Some(path) = self.absolute(r) else {
                continue;
            };
            let target = self.resolve(&path, 0);
            let common = r
                .from
                .iter()
                .zip(&target)
                .take_while(|(a, b)| a == b)
                .count();
            let (Some(a), Some(b)) = (r.from.get(common), target.get(common)) else {
                continue;
            };
            edges
                .entry(r.from[..common].to_vec())
                .or_default()
                .entry((a.clone(), b.clone()))
                .or_insert(r);
        }
        edges
    }

    /// Every strongly connected group of two or more siblings, with a cycle through it.
    fn cycles(&self) -> Vec<Cycle> {
        let mut cycles = Vec::new();
        for (parent, edges) in self.edges() {
            let mut graph: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
            for (a, b) in edges.keys() {
                graph.entry(a).or_default().insert(b);
                graph.entry(b).or_default();
            }
            for component in strongly_connected(&graph) {
                if component.len() < 2 {
                    continue;
                }
                let name = |m: &str| {
                    let mut p = parent.clone();
                    p.push(m.to_string());
                    p.join("::")
                };
                let walk = cycle_through(&graph, &component);
                let steps = walk
                    .windows(2)
                    .map(|w| {
                        let r = edges[&(w[0].to_string(), w[1].to_string())];
                        (
                            format!("{} → {}", name(w[0]), name(w[1])),
                            r.file.clone(),
                            r.line,
                            r.segments.join("::"),
                        )
                    })
                    .collect();
                cycles.push(Cycle {
                    members: component.iter().map(|m| name(m)).collect(),
                    steps,
                });
            }
        }
        cycles.sort_by(|a, b| a.members.cmp(&b.members));
        cycles
    }
}

/// One cycle: its modules (sorted) and one closed walk through all of them, each step with
/// the reference that makes it.
#[derive(Debug)]
struct Cycle {
    members: Vec<String>,
    steps: Vec<(String, PathBuf, usize, String)>,
}

impl Cycle {
    fn explain(&self, root: &Path) -> String {
        let mut seen = BTreeSet::new();
        self.steps
            .iter()
            .filter(|step| seen.insert(&step.0))
            .map(|(edge, file, line, path)| {
                let file = file.strip_prefix(root).unwrap_or(file);
                format!("  {edge}: {}:{line} `{path}`", file.display())
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// The file of module `name` declared in a file whose children live in `dir`, and whether
/// that file is a `mod.rs` (its own children live beside it).
fn module_file(dir: &Path, name: &str) -> (PathBuf, bool) {
    let flat = dir.join(format!("{name}.rs"));
    if flat.is_file() {
        (flat, false)
    } else {
        (dir.join(name).join("mod.rs"), true)
    }
}

/// Tarjan's algorithm; components come out sorted by name inside.
fn strongly_connected<'a>(graph: &BTreeMap<&'a str, BTreeSet<&'a str>>) -> Vec<Vec<&'a str>> {
    struct State<'a> {
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<&'a str>>,
    }
    fn visit<'a>(v: &'a str, g: &BTreeMap<&'a str, BTreeSet<&'a str>>, s: &mut State<'a>) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for &w in &g[v] {
            if !s.index.contains_key(w) {
                visit(w, g, s);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w);
                if w == v {
                    break;
                }
            }
            component.sort_unstable();
            s.out.push(component);
        }
    }
    let mut s = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for &v in graph.keys() {
        if !s.index.contains_key(v) {
            visit(v, graph, &mut s);
        }
    }
    s.out
}

/// A closed walk from the component's first module that visits every module of it: the
/// shortest path to each next unvisited module, then back to the start.
fn cycle_through<'a>(
    graph: &BTreeMap<&'a str, BTreeSet<&'a str>>,
    component: &[&'a str],
) -> Vec<&'a str> {
    let inside: BTreeSet<&str> = component.iter().copied().collect();
    let shortest = |from: &'a str, to: &'a str| -> Vec<&'a str> {
        let mut previous: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([from]);
        while let Some(v) = queue.pop_front() {
            for &w in &graph[v] {
                if inside.contains(w) && !previous.contains_key(w) && w != from {
                    previous.insert(w, v);
                    queue.push_back(w);
                }
            }
            if v == to && v != from {
                break;
            }
        }
        let mut path = vec![to];
        let mut at = to;
        while let Some(&p) = previous.get(at) {
            path.push(p);
            if p == from {
                break;
            }
            at = p;
        }
        path.reverse();
        path
    };
    let start = component[0];
    let mut walk = vec![start];
    let mut at = start;
    for &next in &component[1..] {
        if walk.contains(&next) {
            continue;
        }
        let path = shortest(at, next);
        walk.extend(&path[1..]);
        at = next;
    }
    let back = shortest(at, start);
    walk.extend(&back[1..]);
    walk
}

/// Reads one `use` tree (or a plain path) starting at `tokens[*i]`; pushes each leaf path
/// with the name it binds (`None` for globs).
fn use_tree(
    tokens: &[Token],
    i: &mut usize,
    prefix: Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    let mut segments = prefix;
    let start = segments.len();
    loop {
        match tokens.get(*i).map(|t| &t.tok) {
            Some(Tok::PathSep) if segments.is_empty() => *i += 1, // `::std::...`
            Some(Tok::Ident(s)) => {
                segments.push(s.clone());
                *i += 1;
                match tokens.get(*i).map(|t| &t.tok) {
                    Some(Tok::PathSep) => {
                        *i += 1;
                        continue;
                    }
                    Some(Tok::Ident(kw)) if kw == "as" => {
                        let alias = match tokens.get(*i + 1).map(|t| &t.tok) {
                            Some(Tok::Ident(a)) => Some(a.clone()),
                            _ => None,
                        };
                        *i += 2;
                        out.push((segments, alias));
                    }
                    _ => {
                        // `a::{self}` binds `a`.
                        let name = if s == "self" {
                            segments.iter().rev().nth(1).cloned()
                        } else {
                            Some(s.clone())
                        };
                        out.push((segments, name));
                    }
                }
                return;
            }
            Some(Tok::Open) => {
                *i += 1;
                loop {
                    match tokens.get(*i).map(|t| &t.tok) {
                        Some(Tok::Close) => {
                            *i += 1;
                            return;
                        }
                        Some(Tok::Comma) => *i += 1,
                        None => return,
                        _ => {
                            let before = *i;
                            use_tree(tokens, i, segments.clone(), out);
                            if *i == before {
                                *i += 1;
                            }
                        }
                    }
                }
            }
            Some(Tok::Star) => {
                *i += 1;
                out.push((segments, None));
                return;
            }
            // A path cut short by generics (`crate::a::f::<T>()`): what was read counts.
            _ => {
                if segments.len() > start {
                    out.push((segments, None));
                }
                return;
            }
        }
    }
}

// ---- A lexer that knows just enough Rust ------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    PathSep,
    Open,
    Close,
    Semi,
    Comma,
    Star,
    Dollar,
    Other,
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    line: usize,
}

/// Splits Rust source into the tokens paths are made of, skipping comments, string, byte
/// and character literals, lifetimes and numbers.
fn lex(text: &str) -> Vec<Token> {
    let c: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let is_ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    while i < c.len() {
        let ch = c[i];
        let next = c.get(i + 1).copied();
        match ch {
            '\n' => {
                line += 1;
                i += 1;
            }
            _ if ch.is_whitespace() => i += 1,
            '/' if next == Some('/') => {
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
            }
            '/' if next == Some('*') => {
                let mut nesting = 0;
                while i < c.len() {
                    if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                        nesting += 1;
                        i += 2;
                    } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                        nesting -= 1;
                        i += 2;
                        if nesting == 0 {
                            break;
                        }
                    } else {
                        if c[i] == '\n' {
                            line += 1;
                        }
                        i += 1;
                    }
                }
            }
            '"' => i = skip_string(&c, i + 1, &mut line),
            '\'' => {
                // A character literal ('a', '\n', '\u{..}') or a lifetime ('a).
                if next == Some('\\') {
                    // Past the quote, the backslash and the escaped character.
                    i += 3;
                    while i < c.len() && c[i] != '\'' {
                        i += 1;
                    }
                    i += 1;
                } else if c.get(i + 2) == Some(&'\'') {
                    i += 3;
                } else {
                    i += 1;
                    while i < c.len() && is_ident(c[i]) {
                        i += 1;
                    }
                }
            }
            _ if ch.is_ascii_digit() => {
                while i < c.len()
                    && (is_ident(c[i])
                        || c[i] == '.' && c.get(i + 1).is_some_and(|d| d.is_ascii_digit()))
                {
                    i += 1;
                }
            }
            _ if is_ident(ch) => {
                let start = i;
                while i < c.len() && is_ident(c[i]) {
                    i += 1;
                }
                let word: String = c[start..i].iter().collect();
                let after = c.get(i).copied();
                match (word.as_str(), after) {
                    // Raw strings r"..", r#".."#, br"..".
                    ("r" | "br" | "cr", Some('"' | '#'))
                        if after == Some('"') || raw_string_hashes(&c, i).is_some() =>
                    {
                        let hashes = raw_string_hashes(&c, i).unwrap_or(0);
                        i += hashes + 1;
                        loop {
                            if i >= c.len() {
                                break;
                            }
                            if c[i] == '\n' {
                                line += 1;
                            }
                            if c[i] == '"' && (0..hashes).all(|k| c.get(i + 1 + k) == Some(&'#')) {
                                i += 1 + hashes;
                                break;
                            }
                            i += 1;
                        }
                    }
                    ("b" | "c", Some('"')) => i = skip_string(&c, i + 1, &mut line),
                    ("b", Some('\'')) => {
                        i += 1;
                        if c.get(i) == Some(&'\\') {
                            i += 1;
                        }
                        i += 1;
                        while i < c.len() && c[i] != '\'' {
                            i += 1;
                        }
                        i += 1;
                    }
                    // Raw identifiers r#name.
                    ("r", Some('#')) if c.get(i + 1).is_some_and(|d| is_ident(*d)) => {
                        let start = i + 1;
                        i = start;
                        while i < c.len() && is_ident(c[i]) {
                            i += 1;
                        }
                        out.push(Token {
                            tok: Tok::Ident(c[start..i].iter().collect()),
                            line,
                        });
                    }
                    _ => out.push(Token {
                        tok: Tok::Ident(word),
                        line,
                    }),
                }
            }
            ':' if next == Some(':') => {
                out.push(Token {
                    tok: Tok::PathSep,
                    line,
                });
                i += 2;
            }
            _ => {
                let tok = match ch {
                    '{' => Tok::Open,
                    '}' => Tok::Close,
                    ';' => Tok::Semi,
                    ',' => Tok::Comma,
                    '*' => Tok::Star,
                    '$' => Tok::Dollar,
                    _ => Tok::Other,
                };
                out.push(Token { tok, line });
                i += 1;
            }
        }
    }
    out
}

/// For a raw string starting at `c[i]` (after the `r`), the number of `#` before its `"`.
fn raw_string_hashes(c: &[char], i: usize) -> Option<usize> {
    let hashes = c[i..].iter().take_while(|&&ch| ch == '#').count();
    (c.get(i + hashes) == Some(&'"')).then_some(hashes)
}

/// Skips a string body starting after its opening quote; returns the index after the close.
fn skip_string(c: &[char], mut i: usize, line: &mut usize) -> usize {
    while i < c.len() {
        match c[i] {
            '\\' => {
                if c.get(i + 1) == Some(&'\n') {
                    *line += 1;
                }
                i += 2;
            }
            '"' => return i + 1,
            '\n' => {
                *line += 1;
                i += 1;
            }
            _ => i += 1,
        }
    }
    i
}
