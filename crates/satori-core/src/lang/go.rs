//! Go: detection, grammar, definitions (functions, methods scoped by their receiver type,
//! types, package-level constants and variables), calls and imports (a package is a
//! directory), and its `doc` packages.

use tree_sitter::Node;

use super::syntax::{Ctx, Def, bare_type, bodiless, def, field_text, single_spec_parent, text};
use super::{
    CallRules, Callee, Calls, CategoryHints, ImportExpansion, Kind, Language, Outline, Resolution,
    Spec, SyntaxRules,
};
use crate::symbol::SymbolKind;

pub(super) const SPEC: Spec = Spec {
    language: Language::Go,
    id: "go",
    aliases: &["golang"],
    extensions: &["go"],
    kind: Kind::Code,
    grammar: Some(|| tree_sitter_go::LANGUAGE.into()),
    outline: Outline::Syntax(SyntaxRules::new(classify)),
    calls: Calls::Rules(&CallRules {
        calls: &[("call_expression", Callee::Field("function"))],
        // One spec per imported package: a grouped `import ( ... )` names several.
        imports: &["import_spec"],
        ..CallRules::NONE
    }),
    resolution: Resolution {
        bare_calls_are_functions: true,
        directory_is_unit: true,
        imports: ImportExpansion {
            // An import names a package, which is every file of its directory.
            names_directory: true,
            ..ImportExpansion::PLAIN
        },
        ..Resolution::PLAIN
    },
    category: CategoryHints {
        // A Go directory is a package, and `doc` is a package name like any other (`go/doc`,
        // cobra's `doc`): its sources are code, not documentation.
        doc_dirs_hold_code: true,
        generated_suffixes: &[".pb.go", "_generated.go"],
        ..CategoryHints::NONE
    },
    ..Spec::DETECTED
};

fn classify<'t>(n: Node<'t>, src: &str, ctx: &Ctx) -> Option<Def<'t>> {
    match n.kind() {
        "function_declaration" => Some(def(SymbolKind::Function, field_text(src, n, "name")?, n)),
        "method_declaration" => {
            let mut d = def(SymbolKind::Method, field_text(src, n, "name")?, n);
            // Go methods are written at top level; their receiver type is their scope.
            d.scope = receiver(n, src).map(|r| vec![r]);
            Some(d)
        }
        "type_spec" | "type_alias" => {
            let kind = match n.child_by_field_name("type").map(|t| t.kind()) {
                Some("struct_type") if n.kind() == "type_spec" => SymbolKind::Struct,
                Some("interface_type") if n.kind() == "type_spec" => SymbolKind::Interface,
                _ => SymbolKind::Type,
            };
            Some(bodiless(
                kind,
                field_text(src, n, "name")?,
                single_spec_parent(n),
            ))
        }
        "const_spec" | "var_spec" if !ctx.in_function => {
            let kind = if n.kind() == "const_spec" {
                SymbolKind::Constant
            } else {
                SymbolKind::Variable
            };
            let name = text(src, n.child_by_field_name("name")?).to_string();
            Some(bodiless(kind, name, single_spec_parent(n)))
        }
        _ => None,
    }
}

/// The receiver type of a Go method (`func (p *Pool) ...` -> `Pool`).
fn receiver(n: Node, src: &str) -> Option<String> {
    let params = n.child_by_field_name("receiver")?;
    let param = params.named_child(0)?;
    let ty = text(src, param.child_by_field_name("type")?);
    let ty = bare_type(ty.trim_start_matches('*'));
    let ty = ty.split('[').next().unwrap_or(&ty).trim().to_string();
    (!ty.is_empty()).then_some(ty)
}
