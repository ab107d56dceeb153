//! C#: detection, grammar, definitions (types, namespaces, methods, constructors,
//! delegates; `[Attribute]`s dropped from labels), calls and `using` directives (a namespace
//! is a directory), and which receivers are types.

use tree_sitter::Node;

use super::syntax::{Ctx, Def, def, field_text};
use super::{
    CallRules, Callee, Calls, ImportExpansion, Kind, Language, Outline, Resolution, Spec,
    SyntaxRules,
};
use crate::symbol::SymbolKind;

pub(super) const SPEC: Spec = Spec {
    language: Language::CSharp,
    id: "csharp",
    aliases: &["c#", "cs"],
    extensions: &["cs"],
    kind: Kind::Code,
    grammar: Some(|| tree_sitter_c_sharp::LANGUAGE.into()),
    outline: Outline::Syntax(SyntaxRules {
        bracket_attributes: true,
        ..SyntaxRules::new(classify)
    }),
    calls: Calls::Rules(&CallRules {
        calls: &[
            ("invocation_expression", Callee::Field("function")),
            ("object_creation_expression", Callee::Field("type")),
        ],
        imports: &["using_directive"],
        ..CallRules::NONE
    }),
    resolution: Resolution {
        bare_calls_are_own: true,
        directory_is_unit: true,
        // A capitalised name is as often a property as a type: only the built-in types'
        // keywords are taken for types (`long.Parse(s)`, `string.Join(...)`).
        type_keywords: Some(&[
            "bool", "byte", "char", "decimal", "double", "float", "int", "long", "object", "sbyte",
            "short", "string", "uint", "ulong", "ushort",
        ]),
        imports: ImportExpansion {
            // A `using` names a namespace, which is most often a directory.
            names_directory: true,
            ..ImportExpansion::PLAIN
        },
        ..Resolution::PLAIN
    },
    ..Spec::DETECTED
};

fn classify<'t>(n: Node<'t>, src: &str, _: &Ctx) -> Option<Def<'t>> {
    let kind = match n.kind() {
        "class_declaration" | "record_declaration" | "record_struct_declaration" => {
            SymbolKind::Class
        }
        "interface_declaration" => SymbolKind::Interface,
        "struct_declaration" => SymbolKind::Struct,
        "enum_declaration" => SymbolKind::Enum,
        "namespace_declaration" | "file_scoped_namespace_declaration" => SymbolKind::Namespace,
        "method_declaration" => SymbolKind::Method,
        "constructor_declaration" => SymbolKind::Constructor,
        "delegate_declaration" => SymbolKind::Type,
        _ => return None,
    };
    Some(def(kind, field_text(src, n, "name")?, n))
}
