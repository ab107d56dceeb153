//! The call graph: which definitions call which, across the files of a codebase.
//!
//! Chunking records, per file, its definitions (the outline) and its references (call sites
//! and imports, see `extract`). A generation stores them in one file ([`GRAPH_FILE`]), carried
//! over file by file when a sync derives the next generation, so only changed files are parsed
//! again; a derived generation may share that file with earlier ones and store only the
//! files changed since, with the paths that left, in [`GRAPH_DELTA_FILE`]. Resolution (`resolve`) runs when the graph is first asked for: it is heuristic and
//! says so — a call is matched by name, preferring the caller's own type and file, then files
//! the caller imports, then its directory, then a unique definition anywhere; every edge
//! carries how sure it is, and every site it could not pin down becomes a note.

mod centrality;
pub(crate) mod extract;
mod query;
mod resolve;

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::lang::Language;
use crate::symbol::{Symbol, SymbolKind};
use crate::{Error, Result};

pub use centrality::Centrality;
pub use query::{Direction, GraphEdge, GraphNode, GraphQuery, GraphStatus, GraphView};
pub use resolve::{CallGraph, EdgeKind};

/// The file of a generation that holds every file's definitions and references.
pub const GRAPH_FILE: &str = "graph.json";

/// The changes a derived generation stores over the [`GRAPH_FILE`] it shares.
pub const GRAPH_DELTA_FILE: &str = "graph.delta.json";

/// Bumped when what [`FileRefs`] records changes; an older graph file is not read.
const GRAPH_VERSION: u32 = 2;

/// Whether the call graph covers files of `language` (it has a grammar and call rules).
pub fn supports(language: Language) -> bool {
    extract::has_call_rules(language)
}

/// What a call was made on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Receiver {
    /// A bare name: `f()`.
    None,
    /// The enclosing type: `self.f()`, `this.f()`, `@f`.
    SelfType,
    /// A name or a dotted path: `svc.f()`, `Ledger::new()`, `fmt.Println`.
    Named(String),
    /// Anything else: `make().f()`, `xs[0].f()`.
    Expression,
}

/// One call site.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallSite {
    /// The name called (the last part of `a.b.c()`).
    pub name: String,
    pub receiver: Receiver,
    /// 1-based line of the call.
    pub line: u32,
    /// How many arguments it passes, when the grammar says ([`UNKNOWN_ARGS`] otherwise):
    /// what tells overloads apart.
    pub args: u8,
}

/// [`CallSite::args`] of a call whose arguments were not counted.
pub const UNKNOWN_ARGS: u8 = u8::MAX;

/// One import: the module path as written and the names it mentions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Import {
    /// `./orders/service`, `crate::orders::service`, `orders.service`, `orders/service.h`.
    pub path: String,
    /// Identifiers written in the statement (imported names and the parts of the path).
    pub names: Vec<String>,
    /// 1-based line of the statement.
    pub line: u32,
}

/// The references of one file, as chunking found them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRefs {
    pub calls: Vec<CallSite>,
    pub imports: Vec<Import>,
}

/// Everything the graph keeps of one file. Stored as arrays, not objects ([`StoredFile`]):
/// field names repeated for every symbol and call would be most of the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "StoredFile", from = "StoredFile")]
pub struct FileGraph {
    /// Root-relative, `/`-separated.
    pub path: String,
    pub language: Language,
    /// The file's outline.
    pub symbols: Vec<Symbol>,
    pub refs: FileRefs,
}

/// A symbol as stored: id, name, label, kind, first and last line, scope.
type StoredSymbol = (String, String, String, SymbolKind, u32, u32, Vec<String>);

/// A call as stored: name, receiver (`""` none, `"."` the enclosing type, `"~"` an
/// expression, else the name written), line, arguments.
type StoredCall = (String, String, u32, u8);

/// A file as stored: path, language, symbols, calls, imports (path, names, line).
#[derive(Serialize, Deserialize)]
struct StoredFile(
    String,
    Language,
    Vec<StoredSymbol>,
    Vec<StoredCall>,
    Vec<(String, Vec<String>, u32)>,
);

impl From<FileGraph> for StoredFile {
    fn from(f: FileGraph) -> Self {
        let symbols = f
            .symbols
            .into_iter()
            .map(|s| {
                (
                    s.id,
                    s.name,
                    s.label,
                    s.kind,
                    s.start_line,
                    s.end_line,
                    s.scope,
                )
            })
            .collect();
        let calls = f
            .refs
            .calls
            .into_iter()
            .map(|c| {
                let receiver = match c.receiver {
                    Receiver::None => String::new(),
                    Receiver::SelfType => ".".to_owned(),
                    Receiver::Expression => "~".to_owned(),
                    Receiver::Named(n) => n,
                };
                (c.name, receiver, c.line, c.args)
            })
            .collect();
        let imports = f
            .refs
            .imports
            .into_iter()
            .map(|i| (i.path, i.names, i.line))
            .collect();
        StoredFile(f.path, f.language, symbols, calls, imports)
    }
}

impl From<StoredFile> for FileGraph {
    fn from(StoredFile(path, language, symbols, calls, imports): StoredFile) -> Self {
        FileGraph {
            path,
            language,
            symbols: symbols
                .into_iter()
                .map(
                    |(id, name, label, kind, start_line, end_line, scope)| Symbol {
                        id,
                        name,
                        label,
                        kind,
                        start_line,
                        end_line,
                        scope,
                    },
                )
                .collect(),
            refs: FileRefs {
                calls: calls
                    .into_iter()
                    .map(|(name, receiver, line, args)| CallSite {
                        name,
                        receiver: match receiver.as_str() {
                            "" => Receiver::None,
                            "." => Receiver::SelfType,
                            "~" => Receiver::Expression,
                            _ => Receiver::Named(receiver),
                        },
                        line,
                        args,
                    })
                    .collect(),
                imports: imports
                    .into_iter()
                    .map(|(path, names, line)| Import { path, names, line })
                    .collect(),
            },
        }
    }
}

/// The stored form: every file of a generation.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GraphFile {
    pub version: u32,
    /// Every file of the generation is in it: false when a sync derived it from a
    /// generation that had no graph, so only the files it chunked are.
    pub complete: bool,
    pub files: Vec<FileGraph>,
}

impl GraphFile {
    /// An empty graph of the current version.
    pub fn new() -> Self {
        GraphFile {
            version: GRAPH_VERSION,
            complete: true,
            files: Vec::new(),
        }
    }

    /// Writes `<dir>/graph.json` (the generation directory is published as a whole, so a
    /// plain write is enough).
    pub fn save(&self, dir: &Path) -> Result<()> {
        let path = dir.join(GRAPH_FILE);
        let bytes = serde_json::to_vec(self)
            .map_err(|e| Error::Lexical(format!("cannot encode the call graph: {e}")))?;
        std::fs::write(&path, bytes).map_err(|e| Error::io("write", &path, e))
    }

    /// Reads the graph of the generation in `dir`: `graph.json`, with the changes of
    /// `graph.delta.json` applied when there is one; `Ok(None)` when the generation has no
    /// graph (it predates the call graph) or one of another version.
    pub fn load(dir: &Path) -> Result<Option<GraphFile>> {
        let Some(mut graph) = GraphFile::load_file(dir)? else {
            return Ok(None);
        };
        let Some(delta) = GraphDelta::load(dir)? else {
            return Ok(Some(graph));
        };
        crate::util::apply_file_delta(&mut graph.files, &delta.removed, delta.files, |f| {
            f.path.as_str()
        });
        Ok(Some(graph))
    }

    /// Reads `<dir>/graph.json` alone.
    fn load_file(dir: &Path) -> Result<Option<GraphFile>> {
        let path = dir.join(GRAPH_FILE);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io("read", &path, e)),
        };
        // The version first: an older file may not have the shape of this one.
        #[derive(Deserialize)]
        struct Head {
            version: u32,
        }
        let damaged = |e: serde_json::Error| {
            Error::Lexical(format!("the call graph {} is damaged: {e}", path.display()))
        };
        let head: Head = serde_json::from_slice(&bytes).map_err(damaged)?;
        if head.version != GRAPH_VERSION {
            return Ok(None);
        }
        let graph: GraphFile = serde_json::from_slice(&bytes).map_err(|e| {
            Error::Lexical(format!("the call graph {} is damaged: {e}", path.display()))
        })?;
        Ok((graph.version == GRAPH_VERSION).then_some(graph))
    }
}

/// What a derived generation stores over the graph it shares: the paths of the shared
/// graph's files that are gone (removed or replaced), and the files added since, sorted.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GraphDelta {
    pub version: u32,
    pub removed: Vec<String>,
    pub files: Vec<FileGraph>,
}

impl GraphDelta {
    pub fn new() -> Self {
        GraphDelta {
            version: GRAPH_VERSION,
            ..GraphDelta::default()
        }
    }

    /// Writes `<dir>/graph.delta.json`.
    pub fn save(&self, dir: &Path) -> Result<()> {
        let path = dir.join(GRAPH_DELTA_FILE);
        let bytes = serde_json::to_vec(self)
            .map_err(|e| Error::Lexical(format!("cannot encode the call graph: {e}")))?;
        std::fs::write(&path, bytes).map_err(|e| Error::io("write", &path, e))
    }

    /// Reads `<dir>/graph.delta.json`; `Ok(None)` when there is none.
    pub fn load(dir: &Path) -> Result<Option<GraphDelta>> {
        let path = dir.join(GRAPH_DELTA_FILE);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io("read", &path, e)),
        };
        let delta: GraphDelta = serde_json::from_slice(&bytes).map_err(|e| {
            Error::Lexical(format!("the call graph {} is damaged: {e}", path.display()))
        })?;
        if delta.version != GRAPH_VERSION {
            return Err(Error::Lexical(format!(
                "the call graph {} has version {} over a graph of version {GRAPH_VERSION}",
                path.display(),
                delta.version
            )));
        }
        Ok(Some(delta))
    }
}
