//! Elixir: detection, grammar, definitions (macro calls: `defmodule`, `def`, `defmacro`,
//! with their further clauses), calls (skipping the syntax that is written as calls),
//! `alias`/`import` as imports, and how a module names its file.

use tree_sitter::Node;

use super::syntax::{Ctx, Def, child_of_kind, clauses, collapse, def_with_body, text};
use super::{
    CallRules, Callee, Calls, ImportCalls, ImportExpansion, Kind, Language, Outline, Resolution,
    Spec, SyntaxRules,
};
use crate::symbol::SymbolKind;

pub(super) const SPEC: Spec = Spec {
    language: Language::Elixir,
    id: "elixir",
    aliases: &["ex"],
    extensions: &["ex", "exs"],
    interpreters: &["elixir"],
    kind: Kind::Code,
    grammar: Some(|| tree_sitter_elixir::LANGUAGE.into()),
    outline: Outline::Syntax(SyntaxRules::new(classify)),
    calls: Calls::Rules(&CallRules {
        calls: &[("call", Callee::Field("target"))],
        import_calls: ImportCalls {
            names: &["alias", "import", "require", "use"],
            binds_names: true,
            bare_path_field: None,
        },
        // Definitions and control flow are calls in Elixir's grammar.
        keyword_calls: &[
            "def",
            "defp",
            "defmacro",
            "defmacrop",
            "defmodule",
            "defstruct",
            "defimpl",
            "defprotocol",
            "defdelegate",
            "defguard",
            "defguardp",
            "defexception",
            "defoverridable",
            "if",
            "unless",
            "case",
            "cond",
            "with",
            "for",
            "fn",
            "quote",
            "unquote",
            "receive",
            "try",
            "raise",
            "describe",
            "test",
        ],
        definition_calls: &[
            "def",
            "defp",
            "defmacro",
            "defmacrop",
            "defguard",
            "defguardp",
            "defdelegate",
        ],
        ..CallRules::NONE
    }),
    resolution: Resolution {
        imports: ImportExpansion {
            // `Acme.LedgerBook` lives in `lib/acme/ledger_book.ex`.
            part: Some(snake_case),
            ..ImportExpansion::PLAIN
        },
        ..Resolution::PLAIN
    },
    ..Spec::DETECTED
};

/// Elixir definitions are macro calls: `defmodule Name do ... end`, `def name(args) do`.
/// The kind and name a call defines, if it is a definition.
fn head(n: Node, src: &str) -> Option<(SymbolKind, String)> {
    if n.kind() != "call" {
        return None;
    }
    let kind = match text(src, n.child_by_field_name("target")?) {
        "defmodule" | "defprotocol" | "defimpl" => SymbolKind::Module,
        "def" | "defp" | "defdelegate" | "defguard" | "defguardp" => SymbolKind::Function,
        "defmacro" | "defmacrop" => SymbolKind::Macro,
        _ => return None,
    };
    let args = child_of_kind(n, &["arguments"])?;
    let mut cursor = args.walk();
    let first = args.named_children(&mut cursor).next()?;
    let name = match kind {
        SymbolKind::Module => collapse(text(src, first)),
        _ => {
            // `name(args)`, `name(args) when guard`, or a bare `name`.
            let mut head = first;
            if head.kind() == "binary_operator" {
                head = head.child_by_field_name("left")?;
            }
            match head.kind() {
                "call" => text(src, head.child_by_field_name("target")?).to_string(),
                "identifier" => text(src, head).to_string(),
                _ => return None,
            }
        }
    };
    Some((kind, name))
}

fn classify<'t>(n: Node<'t>, src: &str, _: &Ctx) -> Option<Def<'t>> {
    let (kind, name) = head(n, src)?;
    let mut d = def_with_body(kind, name.clone(), n, &["do_block"]);
    if kind != SymbolKind::Module {
        // Further clauses of the same function (`defp trim([])`, `defp trim(list)`).
        let same = |c: Node| head(c, src).is_some_and(|(k, other)| k == kind && other == name);
        d.last = Some(clauses(n, &["comment", "unary_operator"], &same)?);
    }
    Some(d)
}

/// `LedgerBook` → `ledger_book`.
fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    let mut prev_lower = false;
    for c in name.chars() {
        if c.is_uppercase() && prev_lower {
            out.push('_');
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        out.extend(c.to_lowercase());
    }
    out
}
