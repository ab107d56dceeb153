//! Turns the stored definitions and call sites of every file into edges, and walks them.
//!
//! A call names a definition only by its name, so resolution ranks the definitions of that
//! name by where they live relative to the call: the caller's own type (a `self.f()` call),
//! the caller's file, a file the caller imports, the caller's directory, anywhere. The best
//! tier wins when it holds one definition; several overloads of one method all get an edge;
//! anything else is ambiguous and becomes a note instead of a guess.

use std::collections::{HashMap, HashSet, VecDeque};

use super::{FileGraph, GraphFile, Import, Receiver};
use crate::chunk::{Symbol, SymbolKind};
use crate::lang::Language;

/// Which way to walk from a symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Who calls it.
    Callers,
    /// What it calls.
    Callees,
    Both,
}

/// How much of the codebase a graph covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphStatus {
    Complete,
    /// Built by syncs over an index that predates the call graph: only the files changed
    /// since are in it, until the next reindex.
    Partial,
}

/// What an edge stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EdgeKind {
    /// A call resolved to a definition.
    Call,
    /// A call of a type's name: a constructor call (`new Order()`, `Order(...)`).
    Construct,
}

/// Confidence of an edge by the tier it was resolved in.
const CONFIDENCE: [f32; 5] = [0.95, 0.9, 0.8, 0.7, 0.6];
/// Confidence of each edge to one of several overloads.
const OVERLOAD_CONFIDENCE: f32 = 0.5;
/// How many external names a note lists.
const NOTE_NAMES: usize = 8;

/// A resolved edge between two symbols (indices into [`CallGraph`]'s node list).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Edge {
    src: u32,
    dst: u32,
    kind: EdgeKind,
    /// The file of the call site (the caller's file) and its line.
    line: u32,
    confidence: f32,
}

/// A call site that named several definitions that resolution could not tell apart.
#[derive(Debug, Clone)]
struct Ambiguous {
    caller: u32,
    line: u32,
    name: String,
    candidates: Vec<u32>,
}

/// The resolved graph of a generation.
pub struct CallGraph {
    files: Vec<FileGraph>,
    complete: bool,
    /// (file index, symbol index) of each node; a node is a definition.
    nodes: Vec<(u32, u32)>,
    by_id: HashMap<String, u32>,
    edges: Vec<Edge>,
    out: Vec<Vec<u32>>,
    into: Vec<Vec<u32>>,
    ambiguous: Vec<Ambiguous>,
    /// Per caller node: the names it calls that nothing in the codebase defines.
    external: HashMap<u32, Vec<String>>,
}

/// One end of an edge in an answer.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphNode {
    pub file: String,
    pub language: Language,
    pub symbol: Symbol,
}

/// An edge in an answer, by symbol ids.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphEdge {
    pub src: String,
    pub dst: String,
    pub kind: EdgeKind,
    /// Where the call is written.
    pub site_file: String,
    pub site_line: u32,
    /// 0 to 1: how sure the resolution is.
    pub confidence: f32,
}

/// What to walk.
#[derive(Debug, Clone)]
pub struct GraphQuery {
    /// The symbol's file, root-relative.
    pub file: String,
    pub symbol_id: String,
    pub direction: Direction,
    /// 1 to 3.
    pub depth: u32,
    /// Most edges returned.
    pub limit: usize,
}

/// The part of the graph around one symbol.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphView {
    /// The symbol asked for, then every other node, by file, line, label, id.
    pub nodes: Vec<GraphNode>,
    /// Nearest first, then by site.
    pub edges: Vec<GraphEdge>,
    /// What resolution could not decide, and what was left out.
    pub notes: Vec<String>,
    /// More edges were found than `limit`.
    pub truncated: bool,
}

/// Kinds a call can come from.
fn is_caller(kind: SymbolKind) -> bool {
    matches!(
        kind,
        SymbolKind::Function | SymbolKind::Method | SymbolKind::Constructor | SymbolKind::Macro
    )
}

/// Kinds a call can reach, and whether reaching it constructs.
fn callee_kind(kind: SymbolKind) -> Option<EdgeKind> {
    match kind {
        SymbolKind::Function | SymbolKind::Method | SymbolKind::Constructor | SymbolKind::Macro => {
            Some(EdgeKind::Call)
        }
        SymbolKind::Class | SymbolKind::Struct => Some(EdgeKind::Construct),
        _ => None,
    }
}

/// The parts of a path without its extension: `src/orders/service.py` → `src orders service`.
fn file_parts(path: &str) -> Vec<String> {
    let mut parts: Vec<String> = path.split('/').map(str::to_owned).collect();
    if let Some(last) = parts.last_mut()
        && let Some((stem, _)) = last.rsplit_once('.')
        && !stem.is_empty()
    {
        *last = stem.to_owned();
    }
    parts
}

/// The parts of an import path in any language's writing, without relative markers.
fn import_parts(import: &Import) -> Vec<String> {
    let path = import.path.as_str();
    let slashed = path.contains('/');
    let mut parts: Vec<String> = if slashed {
        path.split('/').map(str::to_owned).collect()
    } else {
        path.split(['.', ':', '\\']).map(str::to_owned).collect()
    };
    if slashed
        && let Some(last) = parts.last_mut()
        && let Some((stem, ext)) = last.rsplit_once('.')
        && ext.len() <= 5
        && !stem.is_empty()
    {
        *last = stem.to_owned();
    }
    parts.retain(|p| {
        !p.is_empty()
            && !matches!(
                p.as_str(),
                "." | ".." | "crate" | "super" | "self" | "@" | "~" | "*" | "static"
            )
    });
    parts
}

/// Whether one part list ends with the other (the shorter one, at least one part long).
fn suffix_match(a: &[String], b: &[String]) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    !short.is_empty() && long.ends_with(short)
}

fn dir_of(path: &str) -> &str {
    path.rsplit_once('/').map(|(d, _)| d).unwrap_or("")
}

impl CallGraph {
    /// Resolves every call site of `graph`.
    pub fn build(graph: GraphFile) -> CallGraph {
        let complete = graph.complete;
        let files = graph.files;
        let mut offsets = Vec::with_capacity(files.len());
        let mut nodes = Vec::new();
        let mut by_id = HashMap::new();
        let mut by_name: HashMap<&str, Vec<u32>> = HashMap::new();
        for (fi, f) in files.iter().enumerate() {
            offsets.push(nodes.len() as u32);
            for (si, s) in f.symbols.iter().enumerate() {
                let node = nodes.len() as u32;
                nodes.push((fi as u32, si as u32));
                by_id.insert(s.id.clone(), node);
                if callee_kind(s.kind).is_some() {
                    by_name.entry(s.name.as_str()).or_default().push(node);
                }
            }
        }
        let file_parts_of: Vec<Vec<String>> = files.iter().map(|f| file_parts(&f.path)).collect();
        let mut edges = Vec::new();
        let mut ambiguous = Vec::new();
        let mut external: HashMap<u32, Vec<String>> = HashMap::new();
        for (fi, f) in files.iter().enumerate() {
            if f.refs.calls.is_empty() {
                continue;
            }
            let imports: Vec<Vec<String>> = f.refs.imports.iter().map(import_parts).collect();
            // Files this file imports, decided lazily per candidate file.
            let mut imported: HashMap<u32, bool> = HashMap::new();
            let mut is_imported = |gi: u32| {
                *imported.entry(gi).or_insert_with(|| {
                    let target = &file_parts_of[gi as usize];
                    imports.iter().any(|parts| {
                        suffix_match(parts, target)
                            || (parts.len() > 1 && suffix_match(&parts[..parts.len() - 1], target))
                    })
                })
            };
            let dir = dir_of(&f.path);
            for site in &f.refs.calls {
                let Some(caller_si) = enclosing(&f.symbols, site.line) else {
                    continue;
                };
                let caller = offsets[fi] + caller_si as u32;
                let caller_sym = &f.symbols[caller_si];
                let Some(cands) = by_name.get(site.name.as_str()) else {
                    let names = external.entry(caller).or_default();
                    if !names.contains(&site.name) {
                        names.push(site.name.clone());
                    }
                    continue;
                };
                let tier_of = |node: u32, is_imported: &mut dyn FnMut(u32) -> bool| -> usize {
                    let (gi, si) = nodes[node as usize];
                    let cand = &files[gi as usize].symbols[si as usize];
                    let same_file = gi as usize == fi;
                    if same_file
                        && site.receiver == Receiver::SelfType
                        && cand.scope == caller_sym.scope
                    {
                        0
                    } else if same_file {
                        1
                    } else if is_imported(gi) {
                        2
                    } else if dir_of(&files[gi as usize].path) == dir {
                        3
                    } else {
                        4
                    }
                };
                let mut best = usize::MAX;
                let mut chosen: Vec<u32> = Vec::new();
                for &c in cands {
                    // A call does not reach the definition it is written in by its own name
                    // unless it is a plain recursive call.
                    let t = tier_of(c, &mut is_imported);
                    if t < best {
                        best = t;
                        chosen.clear();
                    }
                    if t == best {
                        chosen.push(c);
                    }
                }
                let kind_of = |node: u32| {
                    let (gi, si) = nodes[node as usize];
                    callee_kind(files[gi as usize].symbols[si as usize].kind)
                        .unwrap_or(EdgeKind::Call)
                };
                match chosen.as_slice() {
                    [one] => edges.push(Edge {
                        src: caller,
                        dst: *one,
                        kind: kind_of(*one),
                        line: site.line,
                        confidence: CONFIDENCE[best],
                    }),
                    many if overloads(&files, &nodes, many) => {
                        for &c in many {
                            edges.push(Edge {
                                src: caller,
                                dst: c,
                                kind: kind_of(c),
                                line: site.line,
                                confidence: OVERLOAD_CONFIDENCE,
                            });
                        }
                    }
                    many => ambiguous.push(Ambiguous {
                        caller,
                        line: site.line,
                        name: site.name.clone(),
                        candidates: many.to_vec(),
                    }),
                }
            }
        }
        let mut out = vec![Vec::new(); nodes.len()];
        let mut into = vec![Vec::new(); nodes.len()];
        for (i, e) in edges.iter().enumerate() {
            out[e.src as usize].push(i as u32);
            into[e.dst as usize].push(i as u32);
        }
        CallGraph {
            files,
            complete,
            nodes,
            by_id,
            edges,
            out,
            into,
            ambiguous,
            external,
        }
    }

    /// Whether every indexed file is in the graph.
    pub fn status(&self) -> GraphStatus {
        if self.complete {
            GraphStatus::Complete
        } else {
            GraphStatus::Partial
        }
    }

    /// The number of resolved edges (for statistics and tests).
    pub fn edge_count(&self) -> usize {
        self.edges.len()
    }

    /// The file a symbol id belongs to, when the graph knows the id.
    pub fn file_of(&self, symbol_id: &str) -> Option<&str> {
        let node = *self.by_id.get(symbol_id)?;
        Some(&self.files[self.nodes[node as usize].0 as usize].path)
    }

    /// The outline the graph holds for a file.
    pub fn symbols_of(&self, file: &str) -> Option<(&[Symbol], Language)> {
        self.files
            .iter()
            .find(|f| f.path == file)
            .map(|f| (f.symbols.as_slice(), f.language))
    }

    fn symbol(&self, node: u32) -> (&FileGraph, &Symbol) {
        let (fi, si) = self.nodes[node as usize];
        let f = &self.files[fi as usize];
        (f, &f.symbols[si as usize])
    }

    fn graph_node(&self, node: u32) -> GraphNode {
        let (f, s) = self.symbol(node);
        GraphNode {
            file: f.path.clone(),
            language: f.language,
            symbol: s.clone(),
        }
    }

    /// The edges around `q.symbol_id`, walking `q.depth` steps in `q.direction`. `None`
    /// when the id is unknown or belongs to another file than `q.file`.
    pub fn query(&self, q: &GraphQuery) -> Option<GraphView> {
        let start = *self.by_id.get(&q.symbol_id)?;
        if self.symbol(start).0.path != q.file {
            return None;
        }
        let depth = q.depth.clamp(1, 3);
        let limit = q.limit.max(1);
        let mut seen_nodes: Vec<u32> = vec![start];
        let mut seen_edges: HashSet<u32> = HashSet::new();
        let mut found: Vec<(u32, u32)> = Vec::new(); // (level, edge)
        let mut truncated = false;
        let walks: &[bool] = match q.direction {
            Direction::Callees => &[true],
            Direction::Callers => &[false],
            Direction::Both => &[true, false],
        };
        for &forward in walks {
            let mut visited: HashSet<u32> = HashSet::from([start]);
            let mut queue: VecDeque<(u32, u32)> = VecDeque::from([(start, 0)]);
            while let Some((node, level)) = queue.pop_front() {
                if level >= depth {
                    continue;
                }
                let list = if forward {
                    &self.out[node as usize]
                } else {
                    &self.into[node as usize]
                };
                let mut list: Vec<u32> = list.clone();
                list.sort_by_key(|&e| (self.edges[e as usize].line, e));
                for e in list {
                    let edge = self.edges[e as usize];
                    let next = if forward { edge.dst } else { edge.src };
                    if !seen_edges.insert(e) {
                        continue;
                    }
                    if found.len() >= limit {
                        truncated = true;
                        break;
                    }
                    found.push((level + 1, e));
                    if !seen_nodes.contains(&next) {
                        seen_nodes.push(next);
                    }
                    if visited.insert(next) {
                        queue.push_back((next, level + 1));
                    }
                }
            }
        }
        found.sort_by(|a, b| {
            let (ea, eb) = (&self.edges[a.1 as usize], &self.edges[b.1 as usize]);
            let (fa, _) = self.symbol(ea.src);
            let (fb, _) = self.symbol(eb.src);
            (a.0, &fa.path, ea.line, a.1).cmp(&(b.0, &fb.path, eb.line, b.1))
        });
        let edges = found
            .iter()
            .map(|&(_, e)| {
                let edge = self.edges[e as usize];
                let (src_file, src) = self.symbol(edge.src);
                let (_, dst) = self.symbol(edge.dst);
                GraphEdge {
                    src: src.id.clone(),
                    dst: dst.id.clone(),
                    kind: edge.kind,
                    site_file: src_file.path.clone(),
                    site_line: edge.line,
                    confidence: edge.confidence,
                }
            })
            .collect();
        let mut notes = self.notes_for(&seen_nodes, q.direction, start);
        if truncated {
            notes.push(format!(
                "Only the first {limit} edges are shown; raise limit or lower depth to see more."
            ));
        }
        let mut others: Vec<GraphNode> = seen_nodes[1..]
            .iter()
            .map(|&n| self.graph_node(n))
            .collect();
        others.sort_by(|a, b| {
            (&a.file, a.symbol.start_line, &a.symbol.label, &a.symbol.id).cmp(&(
                &b.file,
                b.symbol.start_line,
                &b.symbol.label,
                &b.symbol.id,
            ))
        });
        let mut nodes = vec![self.graph_node(start)];
        nodes.extend(others);
        Some(GraphView {
            nodes,
            edges,
            notes,
            truncated,
        })
    }

    /// Notes on what resolution left open around the nodes shown: ambiguous sites in the
    /// callers walked (callees direction) or naming the start symbol (callers direction),
    /// and names called that the codebase does not define.
    fn notes_for(&self, nodes: &[u32], direction: Direction, start: u32) -> Vec<String> {
        let mut notes = Vec::new();
        let callees = matches!(direction, Direction::Callees | Direction::Both);
        let callers = matches!(direction, Direction::Callers | Direction::Both);
        let shown: HashSet<u32> = nodes.iter().copied().collect();
        for a in &self.ambiguous {
            let from_shown = callees && shown.contains(&a.caller);
            let names_start = callers && a.candidates.contains(&start);
            if !(from_shown || names_start) {
                continue;
            }
            let (file, caller) = self.symbol(a.caller);
            let candidates: Vec<String> = a
                .candidates
                .iter()
                .map(|&c| {
                    let (f, s) = self.symbol(c);
                    format!("{} ({}:{})", s.label, f.path, s.start_line)
                })
                .collect();
            notes.push(format!(
                "ambiguous: `{}` called in {} ({}:{}) may be any of {} definitions: {}; no edge drawn.",
                a.name,
                caller.name,
                file.path,
                a.line,
                candidates.len(),
                candidates.join(", ")
            ));
        }
        if callees {
            let mut names: Vec<&str> = nodes
                .iter()
                .filter_map(|n| self.external.get(n))
                .flatten()
                .map(String::as_str)
                .collect();
            names.sort_unstable();
            names.dedup();
            if !names.is_empty() {
                let shown: Vec<&str> = names.iter().take(NOTE_NAMES).copied().collect();
                let more = names.len().saturating_sub(NOTE_NAMES);
                notes.push(format!(
                    "unresolved: {} called name(s) are defined outside the codebase (library or built-in): {}{}.",
                    names.len(),
                    shown.join(", "),
                    if more > 0 {
                        format!(" and {more} more")
                    } else {
                        String::new()
                    }
                ));
            }
        }
        notes.sort();
        notes
    }
}

/// Several candidates that are overloads of one method: same file, same scope, same name.
fn overloads(files: &[FileGraph], nodes: &[(u32, u32)], cands: &[u32]) -> bool {
    let sym = |n: u32| {
        let (fi, si) = nodes[n as usize];
        (fi, &files[fi as usize].symbols[si as usize])
    };
    let (f0, s0) = sym(cands[0]);
    cands[1..].iter().all(|&c| {
        let (f, s) = sym(c);
        f == f0 && s.scope == s0.scope && s.name == s0.name && s.kind == s0.kind
    })
}

/// The innermost callable definition whose span holds `line`; else the innermost definition
/// of any kind (a class body's call), else `None` (code at the top of a file).
fn enclosing(symbols: &[Symbol], line: u32) -> Option<usize> {
    let holds = |s: &Symbol| s.start_line <= line && line <= s.end_line;
    let innermost = |pred: &dyn Fn(&Symbol) -> bool| {
        symbols
            .iter()
            .enumerate()
            .filter(|(_, s)| holds(s) && pred(s))
            .max_by_key(|(i, s)| (s.start_line, std::cmp::Reverse(s.end_line), *i))
            .map(|(i, _)| i)
    };
    innermost(&|s| is_caller(s.kind)).or_else(|| innermost(&|s| s.kind != SymbolKind::Section))
}
