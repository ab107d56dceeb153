//! Rust: detection, grammar, definitions (items; trait impls named `Trait for Type`), calls
//! (with those written inside macro arguments) and imports (`use`, `mod x;`), how `use`
//! paths reach files and bind names, and its test modules.

use tree_sitter::Node;

use super::syntax::{Ctx, Def, bare_type, def, field_text, function_or_method, text};
use super::{
    CallRules, Callee, Calls, CategoryHints, ImportExpansion, ImportReach, Kind, Language,
    MacroTokens, Outline, Resolution, Spec, SyntaxRules, WrittenImport,
};
use crate::symbol::SymbolKind;

pub(super) const SPEC: Spec = Spec {
    language: Language::Rust,
    id: "rust",
    aliases: &["rs"],
    extensions: &["rs"],
    kind: Kind::Code,
    grammar: Some(|| tree_sitter_rust::LANGUAGE.into()),
    outline: Outline::Syntax(SyntaxRules {
        item_macros: true,
        leading: &["attribute_item"],
        ..SyntaxRules::new(classify)
    }),
    calls: Calls::Rules(&CallRules {
        calls: &[
            ("call_expression", Callee::Field("function")),
            ("macro_invocation", Callee::Field("macro")),
        ],
        imports: &["use_declaration", "mod_item"],
        import_path_fields: &[("mod_item", "name"), ("use_declaration", "argument")],
        // `mod x;` imports a file; `mod x { ... }` only holds code.
        code_when_bodied: &["mod_item"],
        macro_tokens: Some(MacroTokens {
            kind: "token_tree",
            keywords: &[
                "if", "while", "match", "return", "in", "for", "move", "fn", "let", "as", "else",
                "loop", "break", "mut", "ref", "where", "impl", "dyn", "async", "await",
            ],
        }),
        ..CallRules::NONE
    }),
    resolution: Resolution {
        bare_calls_are_functions: true,
        super_is_module: true,
        path_separator: Some("::"),
        library_roots: STD_CRATES,
        imports: ImportExpansion {
            expand: Some(expand_imports),
            ..ImportExpansion::PLAIN
        },
        ..Resolution::PLAIN
    },
    category: CategoryHints {
        // By convention the `#[cfg(test)]` module.
        test_modules: &["test", "tests"],
        ..CategoryHints::NONE
    },
    ..Spec::DETECTED
};

/// The crates of the standard library, never in a codebase.
const STD_CRATES: &[&str] = &["std", "core", "alloc"];

fn classify<'t>(n: Node<'t>, src: &str, ctx: &Ctx) -> Option<Def<'t>> {
    let kind = match n.kind() {
        "function_item" => function_or_method(ctx, &[SymbolKind::Impl, SymbolKind::Trait]),
        "function_signature_item" => SymbolKind::Method,
        "struct_item" | "union_item" => SymbolKind::Struct,
        "enum_item" => SymbolKind::Enum,
        "trait_item" => SymbolKind::Trait,
        "mod_item" => SymbolKind::Module,
        "type_item" => SymbolKind::Type,
        "macro_definition" => SymbolKind::Macro,
        "const_item" if !ctx.in_function => SymbolKind::Constant,
        "static_item" if !ctx.in_function => SymbolKind::Variable,
        "impl_item" => {
            let ty = bare_type(text(src, n.child_by_field_name("type")?));
            // Trait impls are named `Trait for Type` so that the methods of `impl Display for
            // Foo` and `impl Debug for Foo` get distinct scopes (and ids).
            let name = match n.child_by_field_name("trait") {
                Some(t) => format!("{} for {ty}", bare_type(text(src, t))),
                None => ty,
            };
            return Some(def(SymbolKind::Impl, name, n));
        }
        _ => return None,
    };
    Some(def(kind, field_text(src, n, "name")?, n))
}

/// What `use` reaches beyond its path's parts.
///
/// Names a file brings in by `use` (the last part of a path, the members of a group) are
/// bound: a call of one of them runs what the `use` names, so a definition of that name
/// elsewhere in the codebase is not it (`use std::pin::pin;` then `pin!(...)` is not the
/// codebase's own `pin!`).
///
/// A path starts with a crate name (`tokio::task` in tokio's own tests and examples) where
/// the crate's files start at `src/`: without it, it names them. And an item a module
/// exports is most often defined in a file of the module's directory and re-exported (`use
/// tokio::task::spawn_blocking` is defined in `src/task/blocking.rs`): the module's
/// directory counts as near as the caller's own directory.
fn expand_imports<'a>(imports: &[WrittenImport<'a>], reach: &mut ImportReach<'a>) {
    for i in imports {
        if !i.path.trim_end().ends_with("::")
            && !i.path.ends_with('*')
            && let Some(last) = i.path.rsplit("::").next()
        {
            reach.bound.insert(last.trim());
        }
        for name in i.names {
            if !i.parts.contains(name) {
                reach.bound.insert(name);
            }
        }
    }
    let uncrated: Vec<(Vec<String>, bool)> = reach
        .targets
        .iter()
        .filter(|(parts, _)| parts.len() >= 2 && !STD_CRATES.contains(&parts[0].as_str()))
        .map(|(parts, dir)| (parts[1..].to_vec(), *dir))
        .collect();
    reach.targets.extend(uncrated);
    reach.module_dirs = reach
        .targets
        .iter()
        .filter(|(parts, _)| parts.len() >= 2)
        .map(|(parts, _)| parts[..parts.len() - 1].to_vec())
        .collect();
}
