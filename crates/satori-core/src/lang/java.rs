//! Java: detection, grammar, definitions (types, methods, constructors, `static final`
//! constants), calls and imports, and how a bare call reaches its own type's methods and an
//! import binds a name.

use tree_sitter::Node;

use super::syntax::{Ctx, Def, def, field_text, text};
use super::{
    CallRules, Callee, Calls, ImportExpansion, ImportReach, Kind, Language, Outline, Resolution,
    Spec, SyntaxRules, WrittenImport,
};
use crate::symbol::SymbolKind;

pub(super) const SPEC: Spec = Spec {
    language: Language::Java,
    id: "java",
    extensions: &["java"],
    kind: Kind::Code,
    grammar: Some(|| tree_sitter_java::LANGUAGE.into()),
    outline: Outline::Syntax(SyntaxRules::new(classify)),
    calls: Calls::Rules(&CallRules {
        calls: &[
            (
                "method_invocation",
                Callee::Split {
                    name: "name",
                    receiver: "object",
                },
            ),
            ("object_creation_expression", Callee::Field("type")),
        ],
        imports: &["import_declaration"],
        ..CallRules::NONE
    }),
    resolution: Resolution {
        bare_calls_are_own: true,
        directory_is_unit: true,
        path_separator: Some("."),
        imports: ImportExpansion {
            expand: Some(bind_imports),
            ..ImportExpansion::PLAIN
        },
        ..Resolution::PLAIN
    },
    ..Spec::DETECTED
};

fn classify<'t>(n: Node<'t>, src: &str, _: &Ctx) -> Option<Def<'t>> {
    let kind = match n.kind() {
        "class_declaration" | "record_declaration" => SymbolKind::Class,
        "interface_declaration" | "annotation_type_declaration" => SymbolKind::Interface,
        "enum_declaration" => SymbolKind::Enum,
        "method_declaration" => SymbolKind::Method,
        "constructor_declaration" | "compact_constructor_declaration" => SymbolKind::Constructor,
        "field_declaration" => {
            // `static final` fields are Java's constants.
            let mut cursor = n.walk();
            let mods = n
                .children(&mut cursor)
                .find(|c| c.kind() == "modifiers")
                .map(|m| text(src, m))
                .unwrap_or("");
            let words: Vec<&str> = mods.split_whitespace().collect();
            if !(words.contains(&"static") && words.contains(&"final")) {
                return None;
            }
            let name = field_text(src, n.child_by_field_name("declarator")?, "name")?;
            return Some(def(SymbolKind::Constant, name, n));
        }
        _ => return None,
    };
    Some(def(kind, field_text(src, n, "name")?, n))
}

/// `import a.b.Type;` and `import static a.b.Type.name;` bind their last part.
fn bind_imports<'a>(imports: &[WrittenImport<'a>], reach: &mut ImportReach<'a>) {
    for i in imports {
        if let Some(last) = i.path.trim_end_matches(';').rsplit('.').next()
            && last != "*"
        {
            reach.bound.insert(last.trim());
        }
    }
}
