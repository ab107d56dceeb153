//! Zig: detection, grammar, definitions (functions, tests, containers assigned to a
//! constant, top-level constants), calls (with builtins) and `@import`.

use tree_sitter::Node;

use super::syntax::{
    Ctx, Def, child_of_kind, def, def_with_body, field_text, function_or_method, has_keyword,
    module_level, text,
};
use super::{CallRules, Callee, Calls, ImportCalls, Kind, Language, Outline, Spec, SyntaxRules};
use crate::symbol::SymbolKind;

pub(super) const SPEC: Spec = Spec {
    language: Language::Zig,
    id: "zig",
    extensions: &["zig", "zon"],
    kind: Kind::Code,
    grammar: Some(|| tree_sitter_zig::LANGUAGE.into()),
    outline: Outline::Syntax(SyntaxRules::new(classify)),
    calls: Calls::Rules(&CallRules {
        // Builtins (`@import("x.zig")`, `@intCast(n)`) are a node of their own.
        calls: &[
            ("call_expression", Callee::Field("function")),
            ("builtin_function", Callee::First),
        ],
        import_calls: ImportCalls {
            names: &["@import"],
            ..ImportCalls::NONE
        },
        ..CallRules::NONE
    }),
    ..Spec::DETECTED
};

fn classify<'t>(n: Node<'t>, src: &str, ctx: &Ctx) -> Option<Def<'t>> {
    match n.kind() {
        "function_declaration" => {
            let kind = function_or_method(ctx, &[SymbolKind::Struct, SymbolKind::Enum]);
            Some(def(kind, field_text(src, n, "name")?, n))
        }
        "test_declaration" => {
            let name = child_of_kind(n, &["string", "identifier"])
                .map(|s| text(src, s).trim_matches('"').to_string())?;
            Some(def_with_body(SymbolKind::Function, name, n, &["block"]))
        }
        // `const Name = struct { ... };` and the other containers; other top-level
        // constants.
        "variable_declaration" if !ctx.in_function => {
            let name = text(src, child_of_kind(n, &["identifier"])?).to_string();
            let container = child_of_kind(
                n,
                &[
                    "struct_declaration",
                    "enum_declaration",
                    "union_declaration",
                    "opaque_declaration",
                    "error_set_declaration",
                ],
            );
            let kind = match container.map(|c| c.kind()) {
                Some("struct_declaration" | "opaque_declaration") => SymbolKind::Struct,
                Some("enum_declaration") => SymbolKind::Enum,
                Some("union_declaration") => SymbolKind::Type,
                Some(_) => SymbolKind::Type,
                None if has_keyword(n, src, "const") && module_level(ctx) => SymbolKind::Constant,
                None => return None,
            };
            let mut d = def(kind, name, n);
            d.body = container.filter(|c| c.kind() != "error_set_declaration");
            Some(d)
        }
        _ => None,
    }
}
