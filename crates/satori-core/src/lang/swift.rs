//! Swift: detection, grammar, definitions (classes, structs, enums, extensions, protocols,
//! functions, initialisers, type aliases), calls and imports; every file of a module sees
//! every other.

use tree_sitter::Node;

use super::syntax::{Ctx, Def, def, field_text, function_or_method, has_keyword};
use super::{CallRules, Callee, Calls, Kind, Language, Outline, Resolution, Spec, SyntaxRules};
use crate::symbol::SymbolKind;

pub(super) const SPEC: Spec = Spec {
    language: Language::Swift,
    id: "swift",
    extensions: &["swift"],
    interpreters: &["swift"],
    kind: Kind::Code,
    grammar: Some(|| tree_sitter_swift::LANGUAGE.into()),
    outline: Outline::Syntax(SyntaxRules::new(classify)),
    calls: Calls::Rules(&CallRules {
        calls: &[("call_expression", Callee::First)],
        imports: &["import_declaration"],
        ..CallRules::NONE
    }),
    resolution: Resolution {
        // Swift never imports a file.
        whole_module_visible: true,
        ..Resolution::PLAIN
    },
    ..Spec::DETECTED
};

fn classify<'t>(n: Node<'t>, src: &str, ctx: &Ctx) -> Option<Def<'t>> {
    let scopes = [
        SymbolKind::Class,
        SymbolKind::Struct,
        SymbolKind::Enum,
        SymbolKind::Interface,
        SymbolKind::Impl,
    ];
    let kind = match n.kind() {
        "class_declaration" => {
            let kind = ["class", "struct", "enum", "extension", "actor"]
                .into_iter()
                .find(|w| has_keyword(n, src, w));
            match kind {
                Some("struct") => SymbolKind::Struct,
                Some("enum") => SymbolKind::Enum,
                Some("extension") => SymbolKind::Impl,
                _ => SymbolKind::Class,
            }
        }
        "protocol_declaration" => SymbolKind::Interface,
        "function_declaration" | "protocol_function_declaration" => {
            function_or_method(ctx, &scopes)
        }
        "init_declaration" => {
            let name = ctx.parent_name.unwrap_or("init").to_string();
            return Some(def(SymbolKind::Constructor, name, n));
        }
        "typealias_declaration" => SymbolKind::Type,
        _ => return None,
    };
    Some(def(kind, field_text(src, n, "name")?, n))
}
