//! The call graph on small projects with a known call structure, one per language
//! (`tests/fixtures/callgraph/<language>/`, described by `<language>.json`): every listed
//! edge is found with its call site, ambiguous calls give a note and no edge, calls of
//! library functions give no edge, a method called on a value whose only definition is out
//! of the caller's reach (not in its file, imports or package) gives a note and no edge, overloads get an edge each, and nothing else is drawn
//! except constructor calls. Then what survives edits: ids of moved functions, a sync that
//! re-parses only the changed file, stale handles.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use satori_core::embed::hub::HubOptions;
use satori_core::embed::{Embeddings, ModelSource};
use satori_core::graph::{CallGraph, Centrality, Direction, EdgeKind, GraphQuery, GraphStatus};
use satori_core::search::SearchTuning;
use satori_core::{Engine, Home, IndexOptions, Symbol};
use serde_json::Value;

fn engine(home: &Path) -> Arc<Engine> {
    engine_with(home, SearchTuning::default())
}

/// An engine without an embedding model, ranking with `tuning`.
fn engine_with(home: &Path, tuning: SearchTuning) -> Arc<Engine> {
    let home = Home::new(home.to_path_buf());
    let embeddings = Embeddings::new(
        ModelSource::Disabled,
        &home.models_dir(),
        HubOptions::default(),
    )
    .unwrap();
    Arc::new(Engine::new(home, Arc::new(embeddings), tuning))
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn index(engine: &Arc<Engine>, root: &Path) -> Arc<CallGraph> {
    engine
        .start_index(root, IndexOptions::default())
        .unwrap()
        .run(|_| {})
        .unwrap();
    let (graph, status) = engine.call_graph(root).unwrap().expect("a graph");
    assert_eq!(status, GraphStatus::Complete);
    graph
}

/// `file::Scope.name` for every symbol, with `#n` for the n-th (1-based) of several symbols
/// sharing a qualified name in one file.
fn qualified_names(graph: &CallGraph, files: &[String]) -> BTreeMap<String, Symbol> {
    let mut out = BTreeMap::new();
    for file in files {
        let Some((symbols, _)) = graph.symbols_of(file) else {
            continue;
        };
        let mut count: BTreeMap<String, usize> = BTreeMap::new();
        for s in symbols {
            let mut parts = s.scope.clone();
            parts.push(s.name.clone());
            let q = format!("{file}::{}", parts.join("."));
            *count.entry(q).or_default() += 1;
        }
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        for s in symbols {
            let mut parts = s.scope.clone();
            parts.push(s.name.clone());
            let q = format!("{file}::{}", parts.join("."));
            let n = seen.entry(q.clone()).or_default();
            *n += 1;
            if count[&q] > 1 {
                out.insert(format!("{q}#{n}"), s.clone());
            }
            out.entry(q).or_insert_with(|| s.clone());
        }
    }
    out
}

fn files_under(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}

/// Every (caller, callee, line) edge of the graph, by qualified names, found by asking
/// for the callees of every symbol. Symbols sharing a qualified name are named `#n`, as
/// callers too.
fn all_edges(
    graph: &CallGraph,
    names: &BTreeMap<String, Symbol>,
) -> BTreeSet<(String, String, u32, EdgeKind)> {
    let by_id: BTreeMap<&str, &str> = names
        .iter()
        .map(|(q, s)| (s.id.as_str(), q.as_str()))
        .collect();
    let mut out = BTreeSet::new();
    for (q, s) in names {
        // `q` also names the first of several symbols, which is asked for as `q#1`.
        if names.contains_key(&format!("{q}#1")) {
            continue;
        }
        let file = q.split("::").next().unwrap().to_owned();
        let view = graph
            .query(&GraphQuery {
                file,
                symbol_id: s.id.clone(),
                direction: Direction::Callees,
                depth: 1,
                limit: 1000,
            })
            .unwrap();
        for e in view.edges {
            let name = |id: &str| by_id.get(id).map(|s| s.to_string()).unwrap_or_default();
            out.insert((name(&e.src), name(&e.dst), e.site_line, e.kind));
        }
    }
    out
}

/// Indexes the fixture of `language` and compares the graph with its description.
/// The notes of `from`'s callees at depth 1.
fn callee_notes(graph: &CallGraph, names: &BTreeMap<String, Symbol>, from: &str) -> Vec<String> {
    graph
        .query(&GraphQuery {
            file: from.split("::").next().unwrap().to_owned(),
            symbol_id: names[from].id.clone(),
            direction: Direction::Callees,
            depth: 1,
            limit: 100,
        })
        .unwrap()
        .notes
}

fn check(language: &str) {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/callgraph");
    let spec: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures.join(format!("{language}.json"))).unwrap(),
    )
    .unwrap();
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path().canonicalize().unwrap();
    copy_tree(&fixtures.join(language), &root);
    let home = tempfile::tempdir().unwrap();
    let engine = engine(home.path());
    let graph = index(&engine, &root);
    let files = files_under(&root);
    let names = qualified_names(&graph, &files);
    let found = all_edges(&graph, &names);
    // Callees are compared without overload numbers: an edge to `f#2` is an edge to `f`.
    let plain = |q: &str| -> String {
        match q.split_once('#') {
            Some((base, _)) => base.to_owned(),
            None => q.to_owned(),
        }
    };
    let mut expected: BTreeSet<(String, String, u32)> = BTreeSet::new();
    for e in spec["edges"].as_array().unwrap() {
        let from = e["from"].as_str().unwrap().to_owned();
        let to = e["to"].as_str().unwrap().to_owned();
        let line = e["line"].as_u64().unwrap() as u32;
        assert!(
            names.contains_key(&from),
            "{language}: no symbol {from} (have {:?})",
            names.keys()
        );
        assert!(
            names.contains_key(&to),
            "{language}: no symbol {to} (have {:?})",
            names.keys()
        );
        expected.insert((from, to, line));
    }
    for o in spec["overloads"].as_array().into_iter().flatten() {
        let from = o["from"].as_str().unwrap().to_owned();
        let line = o["line"].as_u64().unwrap() as u32;
        for c in o["candidates"].as_array().unwrap() {
            expected.insert((from.clone(), plain(c.as_str().unwrap()), line));
        }
    }
    // An expected callee is written plain (any of its overloads) or with its number (that
    // one overload).
    let got: BTreeSet<(String, String, u32)> = found
        .iter()
        .flat_map(|(a, b, l, _)| [(a.clone(), plain(b), *l), (a.clone(), b.clone(), *l)])
        .collect();
    let missing: Vec<_> = expected.difference(&got).collect();
    assert!(
        missing.is_empty(),
        "{language}: edges not found: {missing:#?}\nfound: {got:#?}"
    );
    // Nothing else, except constructor calls (which fixtures need not list).
    let extra: Vec<_> = found
        .iter()
        .filter(|(a, b, l, kind)| {
            *kind != EdgeKind::Construct
                && !expected.contains(&(a.clone(), plain(b), *l))
                && !expected.contains(&(a.clone(), b.clone(), *l))
        })
        .collect();
    assert!(extra.is_empty(), "{language}: unexpected edges: {extra:#?}");
    for a in spec["ambiguous"].as_array().into_iter().flatten() {
        let from = a["from"].as_str().unwrap();
        let name = a["name"].as_str().unwrap();
        let line = a["line"].as_u64().unwrap() as u32;
        assert!(
            !found.iter().any(|(f, _, l, _)| f == from && *l == line),
            "{language}: an edge was drawn for the ambiguous call of {name} at {line}"
        );
        let notes = callee_notes(&graph, &names, from);
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with("ambiguous:") && n.contains(&format!("`{name}`"))),
            "{language}: no note on the ambiguous call of {name}: {notes:?}"
        );
    }
    for u in spec["untyped"].as_array().into_iter().flatten() {
        let from = u["from"].as_str().unwrap();
        let name = u["name"].as_str().unwrap();
        let line = u["line"].as_u64().unwrap() as u32;
        assert!(
            !found.iter().any(|(f, _, l, _)| f == from && *l == line),
            "{language}: an edge was drawn for the call of {name} on a value at {line}"
        );
        let notes = callee_notes(&graph, &names, from);
        assert!(
            notes
                .iter()
                .any(|n| n.contains("values of unknown type") && n.contains(name)),
            "{language}: no note on the call of {name} on a value: {notes:?}"
        );
    }
    for x in spec["external"].as_array().into_iter().flatten() {
        let from = x["from"].as_str().unwrap();
        let line = x["line"].as_u64().unwrap() as u32;
        let name = x["name"].as_str().unwrap();
        assert!(
            !found.iter().any(|(f, _, l, _)| f == from
                && *l == line
                && !expected.iter().any(|(ef, _, el)| ef == from && *el == line)),
            "{language}: the call of {name} at {line} reached a project symbol"
        );
    }
    // Each file's centrality counts at least the other files with an edge into it (imports
    // may add files that call nothing of it).
    let file_of = |q: &str| q.split("::").next().unwrap().to_owned();
    let mut callers: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, to, _, _) in &found {
        if file_of(from) != file_of(to) {
            callers
                .entry(file_of(to))
                .or_default()
                .insert(file_of(from));
        }
    }
    let central = centrality(&engine, &root, &files);
    for (file, from) in &callers {
        assert!(
            central[file] as usize >= from.len(),
            "{language}: {file} is reached by {from:?}, centrality {}",
            central[file]
        );
    }
}

#[test]
fn python() {
    check("python");
}

#[test]
fn typescript() {
    check("typescript");
}

#[test]
fn javascript() {
    check("javascript");
}

#[test]
fn rust() {
    check("rust");
}

#[test]
fn go() {
    check("go");
}

#[test]
fn java() {
    check("java");
}

#[test]
fn c() {
    check("c");
}

#[test]
fn cpp() {
    check("cpp");
}

#[test]
fn ruby() {
    check("ruby");
}

#[test]
fn php() {
    check("php");
}

#[test]
fn csharp() {
    check("csharp");
}

#[test]
fn kotlin() {
    check("kotlin");
}

#[test]
fn scala() {
    check("scala");
}

#[test]
fn swift() {
    check("swift");
}

#[test]
fn lua() {
    check("lua");
}

#[test]
fn elixir() {
    check("elixir");
}

#[test]
fn haskell() {
    check("haskell");
}

#[test]
fn zig() {
    check("zig");
}

#[test]
fn shell() {
    check("shell");
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn symbol<'g>(graph: &'g CallGraph, file: &str, name: &str) -> &'g Symbol {
    let (symbols, _) = graph.symbols_of(file).unwrap();
    symbols.iter().find(|s| s.name == name).unwrap()
}

fn callees(graph: &CallGraph, file: &str, id: &str) -> Option<Vec<(String, u32)>> {
    let view = graph.query(&GraphQuery {
        file: file.to_owned(),
        symbol_id: id.to_owned(),
        direction: Direction::Callees,
        depth: 1,
        limit: 50,
    })?;
    let names: BTreeMap<String, String> = view
        .nodes
        .iter()
        .map(|n| (n.symbol.id.clone(), n.symbol.name.clone()))
        .collect();
    Some(
        view.edges
            .iter()
            .map(|e| (names[&e.dst].clone(), e.site_line))
            .collect(),
    )
}

const SERVICE: &str = "def load(path):\n    return parse(read(path))\n\n\ndef parse(text):\n    return text.split()\n\n\ndef read(path):\n    return open(path).read()\n";

/// A function that moves keeps its id and its edges; a sync parses only the changed file;
/// a renamed function's old handle is unknown.
#[test]
fn handles_survive_unrelated_edits() {
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path().canonicalize().unwrap();
    write(&root, "svc.py", SERVICE);
    write(
        &root,
        "app.py",
        "from svc import load\n\n\ndef main():\n    return load('x')\n",
    );
    let home = tempfile::tempdir().unwrap();
    let engine = engine(home.path());
    let graph = index(&engine, &root);
    let load = symbol(&graph, "svc.py", "load").clone();
    assert_eq!(
        callees(&graph, "svc.py", &load.id).unwrap(),
        vec![("parse".to_owned(), 2), ("read".to_owned(), 2)]
    );
    let main = symbol(&graph, "app.py", "main").clone();
    assert_eq!(
        callees(&graph, "app.py", &main.id).unwrap(),
        vec![("load".to_owned(), 5)]
    );

    // Three lines above `load`: it moves, keeps its id, and its call site moves with it.
    write(&root, "svc.py", &format!("import os\n\n\n{SERVICE}"));
    engine.sync(&root, &Default::default()).unwrap();
    let (graph, status) = engine.call_graph(&root).unwrap().unwrap();
    assert_eq!(status, GraphStatus::Complete);
    let moved = symbol(&graph, "svc.py", "load");
    assert_eq!(moved.id, load.id);
    assert_eq!(moved.start_line, load.start_line + 3);
    assert_eq!(
        callees(&graph, "svc.py", &load.id).unwrap(),
        vec![("parse".to_owned(), 5), ("read".to_owned(), 5)]
    );
    // The unchanged caller in the other file still reaches it.
    assert_eq!(
        callees(&graph, "app.py", &main.id).unwrap(),
        vec![("load".to_owned(), 5)]
    );

    // Renamed: the old handle is not found; the new name has a handle of its own.
    write(
        &root,
        "svc.py",
        &SERVICE.replace("def load", "def load_all"),
    );
    engine.sync(&root, &Default::default()).unwrap();
    let (graph, _) = engine.call_graph(&root).unwrap().unwrap();
    assert_eq!(callees(&graph, "svc.py", &load.id), None);
    let renamed = symbol(&graph, "svc.py", "load_all");
    assert_ne!(renamed.id, load.id);
    // A handle asked for in the wrong file is not found either.
    assert_eq!(callees(&graph, "app.py", &renamed.id), None);
}

/// Walks: callers and callees at depths 1 to 3, cycles and recursion visited once, the edge
/// limit with its note, nodes listed with the start symbol first.
#[test]
fn walks() {
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path().canonicalize().unwrap();
    write(
        &root,
        "chain.py",
        "def a():\n    b()\n\n\ndef b():\n    c()\n\n\ndef c():\n    d()\n    c()\n\n\ndef d():\n    c()\n    print('x')\n",
    );
    let home = tempfile::tempdir().unwrap();
    let engine = engine(home.path());
    let graph = index(&engine, &root);
    let id = |name: &str| symbol(&graph, "chain.py", name).id.clone();
    let walk = |name: &str, direction: Direction, depth: u32, limit: usize| {
        let view = graph
            .query(&GraphQuery {
                file: "chain.py".to_owned(),
                symbol_id: id(name),
                direction,
                depth,
                limit,
            })
            .unwrap();
        let names: BTreeMap<String, String> = view
            .nodes
            .iter()
            .map(|n| (n.symbol.id.clone(), n.symbol.name.clone()))
            .collect();
        let edges: Vec<String> = view
            .edges
            .iter()
            .map(|e| format!("{}->{}@{}", names[&e.src], names[&e.dst], e.site_line))
            .collect();
        let nodes: Vec<String> = view.nodes.iter().map(|n| n.symbol.name.clone()).collect();
        (nodes, edges, view.notes, view.truncated)
    };
    let check = |name: &str, direction, depth, limit, nodes: &[&str], edges: &[&str]| {
        let (n, e, _, _) = walk(name, direction, depth, limit);
        assert_eq!(n, nodes, "{name} {direction:?} depth {depth}");
        assert_eq!(e, edges, "{name} {direction:?} depth {depth}");
    };
    check("a", Direction::Callees, 1, 20, &["a", "b"], &["a->b@2"]);
    check(
        "a",
        Direction::Callees,
        2,
        20,
        &["a", "b", "c"],
        &["a->b@2", "b->c@6"],
    );
    check(
        "a",
        Direction::Callees,
        3,
        20,
        &["a", "b", "c", "d"],
        &["a->b@2", "b->c@6", "c->d@10", "c->c@11"],
    );
    check(
        "c",
        Direction::Callers,
        1,
        20,
        &["c", "b", "d"],
        &["b->c@6", "c->c@11", "d->c@15"],
    );
    check(
        "d",
        Direction::Both,
        1,
        20,
        &["d", "c"],
        &["c->d@10", "d->c@15"],
    );
    // Depth is at most 3, whatever is asked.
    assert_eq!(
        walk("a", Direction::Callees, 9, 20),
        walk("a", Direction::Callees, 3, 20)
    );
    let (_, edges, notes, truncated) = walk("a", Direction::Callees, 3, 2);
    assert_eq!(edges.len(), 2);
    assert!(truncated);
    assert!(
        notes.iter().any(|n| n.contains("first 2 edges")),
        "{notes:?}"
    );
    let (_, _, notes, _) = walk("d", Direction::Callees, 1, 20);
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("unresolved:") && n.contains("print")),
        "{notes:?}"
    );
}

/// Every file's centrality in the published generation of `root`, for the files listed.
fn centrality(engine: &Arc<Engine>, root: &Path, files: &[String]) -> BTreeMap<String, u32> {
    let index = engine.generation(root).unwrap();
    let counts = Centrality::of_generation(index.generation().dir())
        .unwrap()
        .expect("a complete graph");
    files
        .iter()
        .map(|f| (f.clone(), counts.get(f).copied().unwrap_or(0)))
        .collect()
}

/// The file centrality (how many other files call into a file or import it) counts calls and
/// imports across files, and the graph of a sync that shares its predecessor's stored graph
/// counts the same as a full index of the same tree, for files it did not touch as much as
/// for those it did.
#[test]
fn a_sync_counts_file_centrality_as_a_full_index_does() {
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path().canonicalize().unwrap();
    write(&root, "core/svc.py", SERVICE);
    write(
        &root,
        "app.py",
        "from core.svc import load\n\n\ndef main():\n    return load('x')\n",
    );
    write(
        &root,
        "cli.py",
        "import core.svc\n\n\ndef cli():\n    pass\n",
    );
    // Files that reach nothing, so the edits below are a small share of the tree and the
    // sync shares the stored graph instead of rewriting it.
    for i in 0..30 {
        write(
            &root,
            &format!("extra/m{i}.py"),
            &format!("def unrelated_{i}():\n    return {i}\n"),
        );
    }
    let home = tempfile::tempdir().unwrap();
    let engine = engine(home.path());
    index(&engine, &root);
    let c = centrality(&engine, &root, &["core/svc.py".into(), "app.py".into()]);
    assert_eq!(c["core/svc.py"], 2, "{c:?}");
    assert_eq!(c["app.py"], 0, "{c:?}");

    // One caller goes, two come (one of them by a call alone, found through its directory).
    std::fs::remove_file(root.join("cli.py")).unwrap();
    write(
        &root,
        "worker.py",
        "from core import svc\n\n\ndef work():\n    return svc.load('y')\n",
    );
    write(
        &root,
        "core/batch.py",
        "def batch(paths):\n    return [load(p) for p in paths]\n",
    );
    let s = engine.sync(&root, &Default::default()).unwrap();
    assert!(s.derived, "{s:?}");
    let published = engine.generation(&root).unwrap();
    assert!(
        published
            .generation()
            .dir()
            .join("graph.delta.json")
            .is_file(),
        "the sync shared the stored graph"
    );
    let files = files_under(&root);
    let derived = centrality(&engine, &root, &files);
    assert_eq!(derived["core/svc.py"], 3, "{derived:?}");

    let fresh_home = tempfile::tempdir().unwrap();
    let fresh = self::engine(fresh_home.path());
    index(&fresh, &root);
    assert_eq!(derived, centrality(&fresh, &root, &files));
}

/// With the centrality weight on, a question's leading file that other files reach gets the
/// boost (in its file-level component) and one that nothing reaches does not; with the
/// shipped weights neither does. Gate 0, so the boost does not depend on the scores.
#[test]
fn the_centrality_boost_goes_to_files_other_files_reach() {
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path().canonicalize().unwrap();
    let parser = "def parse_config(text):\n    \"\"\"Parse the config text into settings.\"\"\"\n    return dict(line.split('=') for line in text.splitlines())\n";
    write(&root, "config/hub.py", parser);
    write(
        &root,
        "config/leaf.py",
        &parser.replace("parse_config", "parse_config_copy"),
    );
    for caller in ["app.py", "cli.py", "worker.py"] {
        write(
            &root,
            caller,
            "from config.hub import parse_config\n\n\ndef start(text):\n    return parse_config(text)\n",
        );
    }
    let home = tempfile::tempdir().unwrap();
    index(&engine(home.path()), &root);
    let boosts = |weights: &str| -> BTreeMap<String, f32> {
        let tuning = SearchTuning {
            weights: satori_core::search::Weights::with_overrides(weights).unwrap(),
            ..SearchTuning::default()
        };
        let engine = engine_with(home.path(), tuning);
        let req = satori_core::search::SearchRequest {
            query: "how is the config text parsed into settings".into(),
            limit: 10,
            debug: true,
            ..Default::default()
        };
        engine
            .search(&root, &req)
            .unwrap()
            .hits
            .iter()
            .filter(|h| h.file.starts_with("config/"))
            .map(|h| {
                (
                    h.file.clone(),
                    h.components.as_ref().unwrap().coherence_boost,
                )
            })
            .collect()
    };
    let shipped = boosts("{}");
    let on = boosts(r#"{"file_centrality": 0.3, "file_centrality_gate": 0}"#);
    assert_eq!(shipped.len(), 2, "{shipped:?}");
    assert!(
        (on["config/hub.py"] - shipped["config/hub.py"] - 0.3).abs() < 1e-4,
        "{on:?} {shipped:?}"
    );
    assert_eq!(on["config/leaf.py"], shipped["config/leaf.py"], "{on:?}");
}

/// A call that could run any of many definitions gets one note that counts them all and
/// lists the first few, not every one of them.
#[test]
fn an_ambiguous_note_lists_a_few_of_many_candidates() {
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path().canonicalize().unwrap();
    for i in 0..12 {
        write(
            &root,
            &format!("part{i:02}/util.py"),
            &format!("def helper():\n    return {i}\n"),
        );
    }
    write(&root, "app.py", "def main():\n    return helper()\n");
    let home = tempfile::tempdir().unwrap();
    let graph = index(&engine(home.path()), &root);
    let main = symbol(&graph, "app.py", "main").clone();
    let notes = graph
        .query(&GraphQuery {
            file: "app.py".into(),
            symbol_id: main.id,
            direction: Direction::Callees,
            depth: 1,
            limit: 50,
        })
        .unwrap()
        .notes;
    let note = notes
        .iter()
        .find(|n| n.starts_with("ambiguous:"))
        .unwrap_or_else(|| panic!("{notes:?}"));
    assert!(note.contains("may be any of 12 definitions"), "{note}");
    assert_eq!(note.matches("def helper()").count(), 8, "{note}");
    assert!(
        note.contains("part07/util.py") && !note.contains("part08/util.py"),
        "{note}"
    );
    assert!(note.ends_with(" and 4 more; no edge drawn."), "{note}");
    // Asked from the other end, any of the candidates (listed in the note or not) is told
    // of the site that may call it; a definition of another name is not.
    let notes_of_callers = |file: &str, name: &str| {
        graph
            .query(&GraphQuery {
                file: file.into(),
                symbol_id: symbol(&graph, file, name).id.clone(),
                direction: Direction::Callers,
                depth: 1,
                limit: 50,
            })
            .unwrap()
            .notes
    };
    for file in ["part00/util.py", "part11/util.py"] {
        let notes = notes_of_callers(file, "helper");
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with("ambiguous: `helper` called in main")),
            "{file}: {notes:?}"
        );
    }
    assert!(notes_of_callers("app.py", "main").is_empty());
}
