//! Haskell: detection, grammar, definitions (types, classes, instances, functions written as
//! several equations), calls (applications) and imports.

use tree_sitter::Node;

use super::syntax::{Ctx, Def, clauses, def, def_with_body, field_text};
use super::{CallRules, Callee, Calls, Kind, Language, Outline, Spec, SyntaxRules};
use crate::symbol::SymbolKind;

pub(super) const SPEC: Spec = Spec {
    language: Language::Haskell,
    id: "haskell",
    aliases: &["hs"],
    extensions: &["hs", "hs-boot"],
    interpreters: &["runghc", "runhaskell"],
    kind: Kind::Code,
    grammar: Some(|| tree_sitter_haskell::LANGUAGE.into()),
    outline: Outline::Syntax(SyntaxRules {
        // Documentation comments, and type signatures above their equations.
        leading: &["haddock", "signature"],
        ..SyntaxRules::new(classify)
    }),
    calls: Calls::Rules(&CallRules {
        calls: &[("apply", Callee::Field("function"))],
        imports: &["import"],
        ..CallRules::NONE
    }),
    ..Spec::DETECTED
};

fn classify<'t>(n: Node<'t>, src: &str, ctx: &Ctx) -> Option<Def<'t>> {
    let kind = match n.kind() {
        "data_type" | "newtype" | "type_synonym" | "type_family" => SymbolKind::Type,
        "class" => SymbolKind::Trait,
        "instance" => {
            let class = field_text(src, n, "name")?;
            let name = match field_text(src, n, "patterns") {
                Some(p) => format!("{class} {p}"),
                None => class,
            };
            return Some(def_with_body(
                SymbolKind::Impl,
                name,
                n,
                &["instance_declarations"],
            ));
        }
        "function" | "bind" if !ctx.in_function => {
            let name = field_text(src, n, "name")?;
            // The second and later equations of a function continue its definition.
            let same = |c: Node| {
                matches!(c.kind(), "function" | "bind")
                    && field_text(src, c, "name").as_deref() == Some(&name)
            };
            let last = clauses(n, &["comment", "haddock"], &same)?;
            let kind = match ctx.parent {
                Some(SymbolKind::Trait | SymbolKind::Impl) => SymbolKind::Method,
                _ => SymbolKind::Function,
            };
            let mut d = def_with_body(kind, name, n, &["match"]);
            d.last = Some(last);
            return Some(d);
        }
        _ => return None,
    };
    Some(def(kind, field_text(src, n, "name")?, n))
}
