//! Python: detection, grammar, definitions (functions, classes, methods, module-level
//! UPPER_CASE constants), calls and imports.

use tree_sitter::Node;

use super::syntax::{Ctx, Def, bodiless, def, field_text, module_level, text};
use super::{
    CallRules, Callee, Calls, CategoryHints, Kind, Language, Outline, Resolution, Spec, SyntaxRules,
};
use crate::symbol::SymbolKind;

pub(super) const SPEC: Spec = Spec {
    language: Language::Python,
    id: "python",
    aliases: &["py"],
    extensions: &["py", "pyi"],
    interpreters: &["python", "pypy"],
    kind: Kind::Code,
    grammar: Some(|| tree_sitter_python::LANGUAGE.into()),
    outline: Outline::Syntax(SyntaxRules {
        leading: &["decorator"],
        wrappers: &["decorated_definition"],
        ..SyntaxRules::new(classify)
    }),
    calls: Calls::Rules(&CallRules {
        calls: &[("call", Callee::Field("function"))],
        imports: &["import_statement", "import_from_statement"],
        import_path_fields: &[("import_from_statement", "module_name")],
        ..CallRules::NONE
    }),
    resolution: Resolution {
        bare_calls_are_functions: true,
        ..Resolution::PLAIN
    },
    category: CategoryHints {
        generated_suffixes: &["_pb2.py", "_pb2_grpc.py"],
        declaration_suffixes: &[".pyi"],
        ..CategoryHints::NONE
    },
    ..Spec::DETECTED
};

fn classify<'t>(n: Node<'t>, src: &str, ctx: &Ctx) -> Option<Def<'t>> {
    match n.kind() {
        "function_definition" => {
            let name = field_text(src, n, "name")?;
            let kind = match ctx.parent {
                Some(SymbolKind::Class) if name == "__init__" => SymbolKind::Constructor,
                Some(SymbolKind::Class) => SymbolKind::Method,
                _ => SymbolKind::Function,
            };
            Some(def(kind, name, n))
        }
        "class_definition" => Some(def(SymbolKind::Class, field_text(src, n, "name")?, n)),
        "assignment" if module_level(ctx) => {
            // Module-level UPPER_CASE names are constants by convention.
            let left = n.child_by_field_name("left")?;
            let name = text(src, left);
            let is_constant = left.kind() == "identifier"
                && name.chars().any(|c| c.is_ascii_uppercase())
                && !name.chars().any(|c| c.is_lowercase());
            let stmt = n.parent().filter(|p| p.kind() == "expression_statement")?;
            is_constant.then(|| bodiless(SymbolKind::Constant, name.to_string(), stmt))
        }
        _ => None,
    }
}
