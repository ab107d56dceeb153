//! Definitions as the engine knows them: the kinds of symbol and one entry of a file's
//! outline. Chunking produces them and the call graph, the store and search read them, so they
//! live below all of those.

use serde::{Deserialize, Serialize};

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
    /// Every kind.
    pub const ALL: [SymbolKind; 16] = [
        SymbolKind::Function,
        SymbolKind::Method,
        SymbolKind::Constructor,
        SymbolKind::Class,
        SymbolKind::Struct,
        SymbolKind::Enum,
        SymbolKind::Interface,
        SymbolKind::Trait,
        SymbolKind::Impl,
        SymbolKind::Module,
        SymbolKind::Namespace,
        SymbolKind::Type,
        SymbolKind::Constant,
        SymbolKind::Variable,
        SymbolKind::Macro,
        SymbolKind::Section,
    ];

    /// The kind with this [`SymbolKind::id`].
    pub fn from_id(id: &str) -> Option<SymbolKind> {
        SymbolKind::ALL.into_iter().find(|k| k.id() == id)
    }

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
