//! Syntax-aware chunking: a file's text becomes chunks that follow its syntax (a function, a
//! method, a class where possible), plus the outline of the symbols it defines.
//!
//! Languages with a tree-sitter grammar are chunked along syntax; every other text file falls
//! back to line-based chunks. Chunking is pure: text in, chunks out, no I/O.

use serde::{Deserialize, Serialize};

use crate::lang::Language;

/// What kind of definition a symbol is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SymbolKind {
    Function,
    Method,
    Constructor,
    Class,
    Struct,
    Enum,
    Interface,
    Trait,
    Impl,
    Module,
    Namespace,
    Type,
    Constant,
    Variable,
    Macro,
    Section,
}

impl SymbolKind {
    /// The stable snake_case id of the kind.
    pub fn id(self) -> &'static str {
        match self {
            SymbolKind::Function => "function",
            SymbolKind::Method => "method",
            SymbolKind::Constructor => "constructor",
            SymbolKind::Class => "class",
            SymbolKind::Struct => "struct",
            SymbolKind::Enum => "enum",
            SymbolKind::Interface => "interface",
            SymbolKind::Trait => "trait",
            SymbolKind::Impl => "impl",
            SymbolKind::Module => "module",
            SymbolKind::Namespace => "namespace",
            SymbolKind::Type => "type",
            SymbolKind::Constant => "constant",
            SymbolKind::Variable => "variable",
            SymbolKind::Macro => "macro",
            SymbolKind::Section => "section",
        }
    }
}

/// A definition found in a file: one entry of its outline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Symbol {
    /// Stable id: `sym_` + 16 hex chars of a hash of (file, qualified name, kind, occurrence).
    /// It survives edits that move the symbol within its file.
    pub id: String,
    /// The bare name (`parse_header`, `UserService`).
    pub name: String,
    /// A one-line human label (`fn parse_header(input: &str) -> Header`, `class UserService`),
    /// whitespace collapsed, at most 120 characters.
    pub label: String,
    pub kind: SymbolKind,
    /// 1-based inclusive line span of the whole definition.
    pub start_line: u32,
    pub end_line: u32,
    /// Names of the enclosing scopes, outermost first (`["UserService"]` for a method).
    pub scope: Vec<String>,
}

/// One indexed unit of text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chunk {
    /// Path relative to the codebase root, with `/` separators.
    pub file: String,
    pub language: Language,
    /// 1-based inclusive line span.
    pub start_line: u32,
    pub end_line: u32,
    /// The exact text of those lines.
    pub content: String,
    /// The main symbol of the chunk (the definition it is, or the innermost definition that
    /// encloses it), if any.
    pub symbol: Option<Symbol>,
    /// Names of every symbol whose definition starts inside this chunk (merged small siblings
    /// give several). Used to boost chunks that define a queried identifier.
    pub defines: Vec<String>,
    /// Labels of the enclosing scopes, outermost first, at most the last two.
    pub breadcrumbs: Vec<String>,
    /// 16 hex chars of the sha256 of `content`.
    pub content_hash: String,
}

/// Size targets for chunking, in characters of source text.
#[derive(Debug, Clone, Copy)]
pub struct ChunkOptions {
    /// A node larger than this is split (into its children, or by lines as a last resort).
    pub max_chars: usize,
    /// Adjacent small siblings are merged until a chunk reaches about this size.
    pub target_chars: usize,
    /// Line-based fallback: lines per chunk and overlap between consecutive chunks.
    pub fallback_lines: usize,
    pub fallback_overlap: usize,
}

impl Default for ChunkOptions {
    fn default() -> Self {
        ChunkOptions {
            max_chars: 2400,
            target_chars: 1200,
            fallback_lines: 40,
            fallback_overlap: 5,
        }
    }
}

/// The result of chunking one file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChunkedFile {
    /// Chunks in file order; together they cover every non-blank line of the file.
    pub chunks: Vec<Chunk>,
    /// Every definition found, sorted by (start_line, end_line, label, id).
    pub symbols: Vec<Symbol>,
}

/// Chunks one file. `file` is the root-relative path (used in ids); `text` its UTF-8 content.
pub fn chunk_file(file: &str, language: Language, text: &str, opts: &ChunkOptions) -> ChunkedFile {
    todo_chunker(file, language, text, opts)
}

fn todo_chunker(_file: &str, _language: Language, _text: &str, _opts: &ChunkOptions) -> ChunkedFile {
    ChunkedFile::default()
}
