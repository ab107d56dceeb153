//! Shell (sh, bash, zsh): detection, grammar, definitions (functions), commands as calls,
//! and `source` / `.` as imports.

use tree_sitter::Node;

use super::syntax::{Ctx, Def, def, field_text};
use super::{CallRules, Callee, Calls, ImportCalls, Kind, Language, Outline, Spec, SyntaxRules};
use crate::symbol::SymbolKind;

pub(super) const SPEC: Spec = Spec {
    language: Language::Shell,
    id: "shell",
    aliases: &["sh", "bash", "zsh"],
    extensions: &["sh", "bash", "zsh"],
    interpreters: &["sh", "bash", "zsh", "dash", "ksh", "ash", "mksh"],
    kind: Kind::Code,
    grammar: Some(|| tree_sitter_bash::LANGUAGE.into()),
    outline: Outline::Syntax(SyntaxRules::new(classify)),
    calls: Calls::Rules(&CallRules {
        calls: &[("command", Callee::Field("name"))],
        import_calls: ImportCalls {
            names: &["source", "."],
            binds_names: false,
            // `. lib/x.sh`: a shell path is most often a bare word, not a string.
            bare_path_field: Some("argument"),
        },
        ..CallRules::NONE
    }),
    ..Spec::DETECTED
};

fn classify<'t>(n: Node<'t>, src: &str, _: &Ctx) -> Option<Def<'t>> {
    (n.kind() == "function_definition")
        .then(|| field_text(src, n, "name"))
        .flatten()
        .map(|name| def(SymbolKind::Function, name, n))
}
