//! Ruby: detection, grammar, definitions (classes, modules, methods, constants), calls
//! (`Ledger.new` constructs), keyword-like calls, and `require` as an import.

use tree_sitter::Node;

use super::syntax::{Ctx, Def, bodiless, def, field_text, function_or_method, text};
use super::{CallRules, Callee, Calls, ImportCalls, Kind, Language, Outline, Spec, SyntaxRules};
use crate::symbol::SymbolKind;

pub(super) const SPEC: Spec = Spec {
    language: Language::Ruby,
    id: "ruby",
    aliases: &["rb"],
    extensions: &["rb", "rake", "gemspec"],
    file_names: &["Rakefile", "Gemfile"],
    interpreters: &["ruby", "jruby"],
    kind: Kind::Code,
    grammar: Some(|| tree_sitter_ruby::LANGUAGE.into()),
    outline: Outline::Syntax(SyntaxRules::new(classify)),
    calls: Calls::Rules(&CallRules {
        calls: &[(
            "call",
            Callee::Split {
                name: "method",
                receiver: "receiver",
            },
        )],
        import_calls: ImportCalls {
            names: &["require", "require_relative", "load"],
            ..ImportCalls::NONE
        },
        keyword_calls: &[
            "attr_reader",
            "attr_writer",
            "attr_accessor",
            "private",
            "protected",
            "public",
            "include",
            "extend",
            "raise",
            "puts",
        ],
        constructor: Some(constructed),
        ..CallRules::NONE
    }),
    ..Spec::DETECTED
};

fn classify<'t>(n: Node<'t>, src: &str, ctx: &Ctx) -> Option<Def<'t>> {
    let kind = match n.kind() {
        "class" => SymbolKind::Class,
        "module" => SymbolKind::Module,
        "singleton_method" => SymbolKind::Method,
        "method" => {
            let name = field_text(src, n, "name")?;
            let kind = match function_or_method(ctx, &[SymbolKind::Class, SymbolKind::Module]) {
                SymbolKind::Method if name == "initialize" => SymbolKind::Constructor,
                k => k,
            };
            return Some(def(kind, name, n));
        }
        "assignment" if !ctx.in_function => {
            let left = n.child_by_field_name("left")?;
            if left.kind() != "constant" {
                return None;
            }
            return Some(bodiless(
                SymbolKind::Constant,
                text(src, left).to_string(),
                n,
            ));
        }
        _ => return None,
    };
    Some(def(kind, field_text(src, n, "name")?, n))
}

/// `Ledger.new(...)` constructs: a call of the class's name, as `new Ledger()` is elsewhere
/// (the method that runs is `initialize`, which nothing calls by name). A namespace before
/// the class (`Formats::Text.new`) stays the receiver.
fn constructed(name: &str, receiver: &str) -> Option<(String, Option<String>)> {
    let is_class = receiver
        .rsplit("::")
        .next()
        .is_some_and(|c| c.starts_with(|ch: char| ch.is_ascii_uppercase()) && !c.contains('.'));
    if name != "new" || !is_class {
        return None;
    }
    Some(match receiver.rsplit_once("::") {
        Some((outer, class)) => (class.to_owned(), Some(outer.to_owned())),
        None => (receiver.to_owned(), None),
    })
}
