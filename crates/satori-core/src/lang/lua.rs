//! Lua: detection, grammar, definitions (functions, functions of a table, functions
//! assigned to a name), calls and `require` as an import.

use tree_sitter::Node;

use super::syntax::{Ctx, Def, child_of_kind, collapse, def, text};
use super::{
    CallRules, Callee, Calls, ImportCalls, Kind, Language, Outline, Resolution, Spec, SyntaxRules,
};
use crate::symbol::SymbolKind;

pub(super) const SPEC: Spec = Spec {
    language: Language::Lua,
    id: "lua",
    extensions: &["lua"],
    interpreters: &["lua", "luajit"],
    kind: Kind::Code,
    grammar: Some(|| tree_sitter_lua::LANGUAGE.into()),
    outline: Outline::Syntax(SyntaxRules::new(classify)),
    calls: Calls::Rules(&CallRules {
        calls: &[("function_call", Callee::Field("name"))],
        import_calls: ImportCalls {
            names: &["require"],
            ..ImportCalls::NONE
        },
        ..CallRules::NONE
    }),
    resolution: Resolution {
        bare_calls_are_functions: true,
        ..Resolution::PLAIN
    },
    ..Spec::DETECTED
};

fn classify<'t>(n: Node<'t>, src: &str, ctx: &Ctx) -> Option<Def<'t>> {
    match n.kind() {
        "function_declaration" => {
            let name_node = n.child_by_field_name("name")?;
            let (kind, name) = match name_node.kind() {
                // `function M.f()`, `function M:f()`: a function of the table `M`.
                "method_index_expression" => (
                    SymbolKind::Method,
                    text(src, name_node.child_by_field_name("method")?).to_string(),
                ),
                "dot_index_expression" => (
                    SymbolKind::Function,
                    text(src, name_node.child_by_field_name("field")?).to_string(),
                ),
                _ => (SymbolKind::Function, text(src, name_node).to_string()),
            };
            let mut d = def(kind, name, n);
            if let Some(table) = name_node.child_by_field_name("table") {
                d.scope = Some(vec![text(src, table).to_string()]);
            }
            Some(d)
        }
        // `local f = function(...) ... end`
        "variable_declaration" | "assignment_statement" if !ctx.in_function => {
            let assignment = if n.kind() == "variable_declaration" {
                child_of_kind(n, &["assignment_statement"])?
            } else if n
                .parent()
                .is_some_and(|p| p.kind() == "variable_declaration")
            {
                return None;
            } else {
                n
            };
            let names = child_of_kind(assignment, &["variable_list"])?;
            let values = child_of_kind(assignment, &["expression_list"])?;
            let value = values.named_child(0)?;
            if value.kind() != "function_definition" || names.named_child_count() != 1 {
                return None;
            }
            let name = collapse(text(src, names));
            let mut d = def(SymbolKind::Function, name, n);
            d.body = value.child_by_field_name("body");
            Some(d)
        }
        _ => None,
    }
}
