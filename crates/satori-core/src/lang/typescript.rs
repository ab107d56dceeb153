//! TypeScript: detection and grammar; its definitions, calls and resolution are
//! JavaScript's (`javascript.rs`), whose definitions it calls.

use super::{CategoryHints, Language, Spec, javascript};

pub(super) const SPEC: Spec = Spec {
    language: Language::TypeScript,
    id: "typescript",
    aliases: &["ts"],
    extensions: &["ts", "mts", "cts"],
    interpreters: &["ts-node", "tsx"],
    grammar: Some(|| tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into()),
    category: CategoryHints {
        declaration_suffixes: &[".d.ts", ".d.mts"],
        ..CategoryHints::NONE
    },
    ..javascript::FAMILY
};
