//! PHP: detection, grammar, definitions (functions, types, namespaces, methods, constants),
//! calls and `use` declarations, and how a namespace names its file without its vendor
//! prefix.

use tree_sitter::Node;

use super::syntax::{Ctx, Def, bodiless, def, field_text, single_spec_parent, text};
use super::{
    CallRules, Callee, Calls, ImportExpansion, ImportReach, Kind, Language, Outline, Resolution,
    Spec, SyntaxRules, WrittenImport,
};
use crate::symbol::SymbolKind;

/// A member call: `$obj->name()`, `$obj?->name()`.
const MEMBER_CALL: Callee = Callee::Split {
    name: "name",
    receiver: "object",
};

pub(super) const SPEC: Spec = Spec {
    language: Language::Php,
    id: "php",
    extensions: &["php"],
    interpreters: &["php"],
    kind: Kind::Code,
    grammar: Some(|| tree_sitter_php::LANGUAGE_PHP.into()),
    outline: Outline::Syntax(SyntaxRules::new(classify)),
    calls: Calls::Rules(&CallRules {
        calls: &[
            ("function_call_expression", Callee::Field("function")),
            ("member_call_expression", MEMBER_CALL),
            ("nullsafe_member_call_expression", MEMBER_CALL),
            (
                "scoped_call_expression",
                Callee::Split {
                    name: "name",
                    receiver: "scope",
                },
            ),
            ("object_creation_expression", Callee::First),
        ],
        imports: &["namespace_use_declaration"],
        ..CallRules::NONE
    }),
    resolution: Resolution {
        bare_calls_are_functions: true,
        imports: ImportExpansion {
            expand: Some(unprefixed),
            ..ImportExpansion::PLAIN
        },
        ..Resolution::PLAIN
    },
    ..Spec::DETECTED
};

fn classify<'t>(n: Node<'t>, src: &str, ctx: &Ctx) -> Option<Def<'t>> {
    let kind = match n.kind() {
        "function_definition" => SymbolKind::Function,
        "class_declaration" => SymbolKind::Class,
        "interface_declaration" => SymbolKind::Interface,
        "trait_declaration" => SymbolKind::Trait,
        "enum_declaration" => SymbolKind::Enum,
        "namespace_definition" => SymbolKind::Namespace,
        "method_declaration" => {
            let name = field_text(src, n, "name")?;
            let kind = if name == "__construct" {
                SymbolKind::Constructor
            } else {
                SymbolKind::Method
            };
            return Some(def(kind, name, n));
        }
        "const_element" if !ctx.in_function => {
            let mut cursor = n.walk();
            let name = n.named_children(&mut cursor).find(|c| c.kind() == "name")?;
            return Some(bodiless(
                SymbolKind::Constant,
                text(src, name).to_string(),
                single_spec_parent(n),
            ));
        }
        _ => return None,
    };
    Some(def(kind, field_text(src, n, "name")?, n))
}

/// PHP maps a namespace's vendor prefix to a directory of another name (`Acme\Ledger\Book`
/// lives in `src/Ledger/Book.php`): without its first one or two parts, a namespace still
/// names the file.
fn unprefixed<'a>(_: &[WrittenImport<'a>], reach: &mut ImportReach<'a>) {
    let unprefixed: Vec<(Vec<String>, bool)> = reach
        .targets
        .iter()
        .flat_map(|(parts, _)| {
            (1..=2)
                .filter(|k| parts.len() >= k + 2)
                .map(|k| (parts[k..].to_vec(), false))
        })
        .collect();
    reach.targets.extend(unprefixed);
}
