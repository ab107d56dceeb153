//! Walks the resolved call graph: the callers or callees of one symbol to a depth, with an
//! edge limit, and the notes on what resolution left open around them.

use std::collections::{HashMap, HashSet, VecDeque};

use super::FileGraph;
use super::resolve::{CallGraph, EdgeKind};
use crate::lang::Language;
use crate::symbol::Symbol;

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

/// How many names (external or unresolved) or candidate definitions (ambiguous) a note lists.
const NOTE_NAMES: usize = 8;

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

impl CallGraph {
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
        // The sites called from a shown node, and those calling the start's name (a site's
        // candidates all have the name it called), each once.
        let mut sites: Vec<u32> = Vec::new();
        if callees {
            for n in nodes {
                sites.extend(self.ambiguous_by_caller.get(n).into_iter().flatten());
            }
        }
        if callers {
            let name = &self.symbol(start).1.name;
            sites.extend(
                self.ambiguous_by_name
                    .get(name)
                    .into_iter()
                    .flatten()
                    .filter(|&&i| self.ambiguous[i as usize].candidates.contains(&start)),
            );
        }
        sites.sort_unstable();
        sites.dedup();
        for a in sites.iter().map(|&i| &self.ambiguous[i as usize]) {
            let (file, caller) = self.symbol(a.caller);
            // A common name can have thousands of definitions: the first few say what kind
            // of call it is, the rest would be most of the answer.
            let candidates: Vec<String> = a
                .candidates
                .iter()
                .take(NOTE_NAMES)
                .map(|&c| {
                    let (f, s) = self.symbol(c);
                    format!("{} ({}:{})", s.label, f.path, s.start_line)
                })
                .collect();
            let more = a.candidates.len().saturating_sub(NOTE_NAMES);
            let tail = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            notes.push(format!(
                "ambiguous: `{}` called in {} ({}:{}) may be any of {} definitions: {}{tail}; no edge drawn.",
                a.name,
                caller.name,
                file.path,
                a.line,
                a.candidates.len(),
                candidates.join(", ")
            ));
        }
        if callees {
            let listed = |map: &HashMap<u32, Vec<String>>| -> Option<(usize, String)> {
                let mut names: Vec<&str> = nodes
                    .iter()
                    .filter_map(|n| map.get(n))
                    .flatten()
                    .map(String::as_str)
                    .collect();
                names.sort_unstable();
                names.dedup();
                if names.is_empty() {
                    return None;
                }
                let shown: Vec<&str> = names.iter().take(NOTE_NAMES).copied().collect();
                let more = names.len().saturating_sub(NOTE_NAMES);
                let tail = if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                };
                Some((names.len(), format!("{}{tail}", shown.join(", "))))
            };
            if let Some((n, names)) = listed(&self.external) {
                notes.push(format!(
                    "unresolved: {n} called name(s) are defined outside the codebase (library or built-in): {names}."
                ));
            }
            if let Some((n, names)) = listed(&self.untyped) {
                notes.push(format!(
                    "unresolved: {n} method(s) called on values of unknown type are defined only outside the caller's file, imports and package, so no edge is drawn: {names}."
                ));
            }
        }
        notes.sort();
        // Two calls of one name on one line read the same.
        notes.dedup();
        notes
    }
}
