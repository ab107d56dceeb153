//! Scala: detection, grammar, definitions (classes, traits, objects, enums, functions,
//! types, object-level values), calls and imports; it calls Java's definitions.

use tree_sitter::Node;

use super::syntax::{Ctx, Def, bodiless, def, field_text, function_or_method, module_level};
use super::{CallRules, Callee, Calls, Kind, Language, Outline, Resolution, Spec, SyntaxRules};
use crate::symbol::SymbolKind;

pub(super) const SPEC: Spec = Spec {
    language: Language::Scala,
    id: "scala",
    extensions: &["scala", "sc"],
    interpreters: &["scala"],
    kind: Kind::Code,
    grammar: Some(|| tree_sitter_scala::LANGUAGE.into()),
    outline: Outline::Syntax(SyntaxRules::new(classify)),
    calls: Calls::Rules(&CallRules {
        calls: &[
            ("call_expression", Callee::Field("function")),
            ("instance_expression", Callee::First),
        ],
        imports: &["import_declaration"],
        ..CallRules::NONE
    }),
    resolution: Resolution {
        family: Some(Language::Java),
        directory_is_unit: true,
        ..Resolution::PLAIN
    },
    ..Spec::DETECTED
};

fn classify<'t>(n: Node<'t>, src: &str, ctx: &Ctx) -> Option<Def<'t>> {
    let scopes = [
        SymbolKind::Class,
        SymbolKind::Trait,
        SymbolKind::Module,
        SymbolKind::Enum,
    ];
    let kind = match n.kind() {
        "class_definition" => SymbolKind::Class,
        "trait_definition" => SymbolKind::Trait,
        "object_definition" => SymbolKind::Module,
        "enum_definition" => SymbolKind::Enum,
        "function_definition" | "function_declaration" if !ctx.in_function => {
            function_or_method(ctx, &scopes)
        }
        "type_definition" if !ctx.in_function => SymbolKind::Type,
        "val_definition" | "var_definition"
            if module_level(ctx) || ctx.parent == Some(SymbolKind::Module) =>
        {
            let name = field_text(src, n, "pattern")?;
            return Some(bodiless(SymbolKind::Constant, name, n));
        }
        _ => return None,
    };
    Some(def(kind, field_text(src, n, "name")?, n))
}
