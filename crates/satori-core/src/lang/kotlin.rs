//! Kotlin: detection, grammar, definitions (classes, interfaces, enums, objects, functions,
//! constructors, type aliases, top-level and object properties), calls and imports; it calls
//! Java's definitions.

use tree_sitter::Node;

use super::syntax::{
    Ctx, Def, bodiless, child_of_kind, collapse, def, def_with_body, field_text,
    function_or_method, has_keyword, module_level, text,
};
use super::{CallRules, Callee, Calls, Kind, Language, Outline, Resolution, Spec, SyntaxRules};
use crate::symbol::SymbolKind;

pub(super) const SPEC: Spec = Spec {
    language: Language::Kotlin,
    id: "kotlin",
    aliases: &["kt"],
    extensions: &["kt", "kts"],
    interpreters: &["kotlin"],
    kind: Kind::Code,
    grammar: Some(|| tree_sitter_kotlin_ng::LANGUAGE.into()),
    outline: Outline::Syntax(SyntaxRules::new(classify)),
    calls: Calls::Rules(&CallRules {
        calls: &[("call_expression", Callee::First)],
        imports: &["import"],
        ..CallRules::NONE
    }),
    resolution: Resolution {
        family: Some(Language::Java),
        directory_is_unit: true,
        ..Resolution::PLAIN
    },
    ..Spec::DETECTED
};

const BODIES: &[&str] = &["class_body", "enum_class_body", "function_body"];

fn classify<'t>(n: Node<'t>, src: &str, ctx: &Ctx) -> Option<Def<'t>> {
    let scopes = [
        SymbolKind::Class,
        SymbolKind::Interface,
        SymbolKind::Enum,
        SymbolKind::Module,
    ];
    let kind = match n.kind() {
        "class_declaration" => {
            let modifiers = child_of_kind(n, &["modifiers"]).map(|m| text(src, m));
            if has_keyword(n, src, "interface") {
                SymbolKind::Interface
            } else if modifiers.is_some_and(|m| m.split_whitespace().any(|w| w == "enum")) {
                SymbolKind::Enum
            } else {
                SymbolKind::Class
            }
        }
        "object_declaration" | "companion_object" => SymbolKind::Module,
        "function_declaration" => function_or_method(ctx, &scopes),
        "secondary_constructor" => {
            let name = ctx.parent_name.unwrap_or("constructor").to_string();
            return Some(def_with_body(SymbolKind::Constructor, name, n, &["block"]));
        }
        "type_alias" => {
            let name = collapse(text(src, n.child_by_field_name("type")?));
            return Some(def(SymbolKind::Type, name, n));
        }
        "property_declaration" if module_level(ctx) || ctx.parent == Some(SymbolKind::Module) => {
            let var = child_of_kind(n, &["variable_declaration"])?;
            let name = collapse(text(
                src,
                child_of_kind(var, &["identifier"]).unwrap_or(var),
            ));
            return Some(bodiless(SymbolKind::Constant, name, n));
        }
        _ => return None,
    };
    let name = match field_text(src, n, "name") {
        Some(name) => name,
        // `companion object { ... }` without a name.
        None if n.kind() == "companion_object" => "Companion".to_string(),
        None => return None,
    };
    Some(def_with_body(kind, name, n, BODIES))
}
