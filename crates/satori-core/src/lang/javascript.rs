//! JavaScript: detection, grammar, definitions (functions, classes, methods, function-valued
//! fields and keys, prototype assignments, module constants), calls and imports. TypeScript
//! and TSX share its definition and call rules.

use tree_sitter::Node;

use super::syntax::{
    Ctx, Def, bodiless, collapse, def, field_text, module_level, single_spec_parent, text,
};
use super::{
    CallRules, Callee, Calls, CategoryHints, ImportCalls, Kind, Language, Outline, Resolution,
    Spec, SyntaxRules,
};
use crate::symbol::SymbolKind;

pub(super) const SPEC: Spec = Spec {
    language: Language::JavaScript,
    id: "javascript",
    aliases: &["js", "jsx", "node"],
    extensions: &["js", "jsx", "mjs", "cjs"],
    interpreters: &["node", "nodejs", "deno", "bun"],
    grammar: Some(|| tree_sitter_javascript::LANGUAGE.into()),
    category: CategoryHints {
        generated_suffixes: &[".min.js"],
        ..CategoryHints::NONE
    },
    ..FAMILY
};

/// What the languages of the JavaScript family (JavaScript, TypeScript, TSX) share: their
/// definitions, calls and resolution. Their specs start from it.
pub(super) const FAMILY: Spec = Spec {
    kind: Kind::Code,
    outline: Outline::Syntax(SyntaxRules {
        leading: &["decorator"],
        // `ambient_declaration` is TypeScript's `declare ...`.
        wrappers: &["export_statement", "ambient_declaration"],
        ..SyntaxRules::new(classify)
    }),
    calls: Calls::Rules(&CALLS),
    resolution: RESOLUTION,
    ..Spec::DETECTED
};

/// The calls and imports of the JavaScript family.
const CALLS: CallRules = CallRules {
    calls: &[
        ("call_expression", Callee::Field("function")),
        ("new_expression", Callee::Field("constructor")),
    ],
    imports: &["import_statement"],
    import_calls: ImportCalls {
        names: &["require"],
        ..ImportCalls::NONE
    },
    ..CallRules::NONE
};

/// How calls of the JavaScript family resolve: methods are called on something, and an
/// overloaded TypeScript function runs its last declaration, the implementation.
const RESOLUTION: Resolution = Resolution {
    family: Some(Language::JavaScript),
    bare_calls_are_functions: true,
    overloads_share_body: true,
    ..Resolution::PLAIN
};

fn is_js_function(kind: &str) -> bool {
    matches!(
        kind,
        "arrow_function" | "function_expression" | "function" | "generator_function"
    )
}

fn classify<'t>(n: Node<'t>, src: &str, ctx: &Ctx) -> Option<Def<'t>> {
    let name = || field_text(src, n, "name");
    let kind = match n.kind() {
        // Overload signatures and `declare function` in declaration files count too.
        "function_declaration" | "generator_function_declaration" | "function_signature" => {
            SymbolKind::Function
        }
        "class_declaration" | "abstract_class_declaration" => SymbolKind::Class,
        "interface_declaration" => SymbolKind::Interface,
        "enum_declaration" => SymbolKind::Enum,
        "type_alias_declaration" => SymbolKind::Type,
        "internal_module" => SymbolKind::Namespace,
        "module" => SymbolKind::Module,
        "method_definition" => {
            let name = name()?;
            let kind = if name == "constructor" {
                SymbolKind::Constructor
            } else {
                SymbolKind::Method
            };
            return Some(def(kind, name, n));
        }
        "public_field_definition" | "field_definition" => {
            // Class fields holding functions (`onClick = () => {...}`) act as methods.
            let value = n.child_by_field_name("value")?;
            if !is_js_function(value.kind()) {
                return None;
            }
            let name = field_text(src, n, "name").or_else(|| field_text(src, n, "property"))?;
            let mut d = def(SymbolKind::Method, name, n);
            d.body = value.child_by_field_name("body");
            return Some(d);
        }
        "variable_declarator" => return classify_variable(n, src, ctx),
        "assignment_expression" => return classify_assignment(n, src),
        "pair" => {
            // `{ handle: function () {...} }`: an object literal's function-valued key.
            let value = n.child_by_field_name("value")?;
            if !is_js_function(value.kind()) {
                return None;
            }
            let key = n.child_by_field_name("key")?;
            let name = text(src, key)
                .trim_matches(|c| c == '"' || c == '\'')
                .to_string();
            if name.is_empty() || key.kind() == "computed_property_name" {
                return None;
            }
            let mut d = def(SymbolKind::Method, name, n);
            d.body = value.child_by_field_name("body");
            return Some(d);
        }
        _ => return None,
    };
    let name = name()?;
    let name = name.trim_matches(|c| c == '"' || c == '\'').to_string();
    Some(def(kind, name, n))
}

fn classify_variable<'t>(n: Node<'t>, src: &str, ctx: &Ctx) -> Option<Def<'t>> {
    let name_node = n.child_by_field_name("name")?;
    if name_node.kind() != "identifier" {
        return None;
    }
    let name = text(src, name_node).to_string();
    let decl = single_spec_parent(n);
    let value = n.child_by_field_name("value");
    if let Some(v) = value.filter(|v| is_js_function(v.kind())) {
        return Some(Def {
            kind: SymbolKind::Function,
            name,
            decl,
            body: v.child_by_field_name("body"),
            scope: None,
            last: None,
        });
    }
    let is_const = n
        .parent()
        .and_then(|p| p.child(0))
        .is_some_and(|k| k.kind() == "const");
    if !is_const || !module_level(ctx) {
        return None;
    }
    // `const fs = require("fs")` is an import, not a constant worth listing.
    if let Some(v) = value
        && v.kind() == "call_expression"
        && v.child_by_field_name("function")
            .is_some_and(|f| text(src, f) == "require")
    {
        return None;
    }
    Some(bodiless(SymbolKind::Constant, name, decl))
}

/// `Foo.prototype.bar = function () {...}`, `exports.bar = () => {...}`, `Foo.bar = ...`:
/// the pre-class way of defining methods and exports, still common in JavaScript.
fn classify_assignment<'t>(n: Node<'t>, src: &str) -> Option<Def<'t>> {
    let value = n.child_by_field_name("right")?;
    if !is_js_function(value.kind()) {
        return None;
    }
    let left = n.child_by_field_name("left")?;
    if left.kind() != "member_expression" {
        return None;
    }
    let property = left.child_by_field_name("property")?;
    if property.kind() != "property_identifier" {
        return None;
    }
    let name = text(src, property).to_string();
    let object = collapse(text(src, left.child_by_field_name("object")?));
    let owner = object.strip_suffix(".prototype").unwrap_or(&object);
    // Exports and `this.x = ...` have no owner worth naming; `Foo.bar` and
    // `Foo.prototype.bar` belong to `Foo`.
    let is_owner = !owner.is_empty()
        && !matches!(owner, "exports" | "module.exports" | "this" | "module")
        && owner
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '$' | '.'));
    let decl = n
        .parent()
        .filter(|p| p.kind() == "expression_statement")
        .unwrap_or(n);
    Some(Def {
        kind: if is_owner {
            SymbolKind::Method
        } else {
            SymbolKind::Function
        },
        name,
        decl,
        body: value.child_by_field_name("body"),
        scope: is_owner.then(|| owner.split('.').map(str::to_string).collect()),
        last: None,
    })
}
