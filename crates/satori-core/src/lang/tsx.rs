//! TSX (TypeScript with JSX): detection and grammar; its definitions, calls and resolution
//! are JavaScript's (`javascript.rs`).

use super::{Language, Spec, javascript};

pub(super) const SPEC: Spec = Spec {
    language: Language::Tsx,
    id: "tsx",
    extensions: &["tsx"],
    grammar: Some(|| tree_sitter_typescript::LANGUAGE_TSX.into()),
    ..javascript::FAMILY
};
