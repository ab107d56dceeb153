//! What the classification rules of the language files share: the context a node is
//! classified in, the definition they return, and small readers of syntax nodes.

use tree_sitter::Node;

use crate::symbol::SymbolKind;

/// Where a node sits, as far as classification cares.
pub struct Ctx<'a> {
    /// Kind of the innermost enclosing definition.
    pub parent: Option<SymbolKind>,
    pub parent_name: Option<&'a str>,
    /// Scope of the innermost enclosing definition (its own, without its name).
    pub parent_scope: &'a [String],
    /// Inside a function body: local constants are not outline symbols.
    pub in_function: bool,
}

/// A definition recognised in a syntax tree.
pub struct Def<'t> {
    pub kind: SymbolKind,
    pub name: String,
    /// The node the label starts at (the whole declaration, e.g. `const x = ...` for `x`).
    pub decl: Node<'t>,
    /// The body; the label stops where it starts.
    pub body: Option<Node<'t>>,
    /// Scope given by the syntax rather than by nesting (a Go method's receiver type).
    pub scope: Option<Vec<String>>,
    /// The last node of a definition written as several sibling clauses (Haskell equations,
    /// Elixir function heads), when it is not `decl`.
    pub last: Option<Node<'t>>,
}

pub(super) fn text<'s>(src: &'s str, n: Node) -> &'s str {
    src.get(n.byte_range()).unwrap_or("")
}

pub(super) fn field_text(src: &str, n: Node, field: &str) -> Option<String> {
    let t = collapse(text(src, n.child_by_field_name(field)?));
    (!t.is_empty()).then_some(t)
}

/// A definition whose body is its `body` field.
pub(super) fn def<'t>(kind: SymbolKind, name: String, decl: Node<'t>) -> Def<'t> {
    Def {
        kind,
        name,
        decl,
        body: decl.child_by_field_name("body"),
        scope: None,
        last: None,
    }
}

/// A definition without a body: its label is its first line.
pub(super) fn bodiless<'t>(kind: SymbolKind, name: String, decl: Node<'t>) -> Def<'t> {
    Def {
        body: None,
        ..def(kind, name, decl)
    }
}

/// A definition whose body is its first child of one of `bodies` (grammars that do not name
/// the body as a field).
pub(super) fn def_with_body<'t>(
    kind: SymbolKind,
    name: String,
    decl: Node<'t>,
    bodies: &[&str],
) -> Def<'t> {
    Def {
        body: child_of_kind(decl, bodies),
        ..def(kind, name, decl)
    }
}

/// For a definition written as clauses (`f [] = ...` then `f (x:xs) = ...`): `None` when `n`
/// continues the definition of an earlier sibling (`same_def` tells whether a sibling
/// defines the same name), else the last sibling clause of the run `n` starts. Siblings of
/// the kinds in `between` (comments, documentation) may sit between clauses.
pub(super) fn clauses<'t>(
    n: Node<'t>,
    between: &[&str],
    same_def: &dyn Fn(Node<'t>) -> bool,
) -> Option<Node<'t>> {
    let step = |from: Node<'t>, back: bool| {
        let mut cur = if back {
            from.prev_named_sibling()
        } else {
            from.next_named_sibling()
        };
        while let Some(c) = cur.filter(|c| between.contains(&c.kind())) {
            cur = if back {
                c.prev_named_sibling()
            } else {
                c.next_named_sibling()
            };
        }
        cur.filter(|c| same_def(*c))
    };
    if step(n, true).is_some() {
        return None;
    }
    let mut last = n;
    while let Some(next) = step(last, false) {
        last = next;
    }
    Some(last)
}

/// `decl` is a spec inside a declaration (`const a = 1`, `type T struct{}`): when it is the
/// only one, the label and span start at the declaration keyword.
pub(super) fn single_spec_parent(n: Node) -> Node {
    match n.parent() {
        Some(p) if p.named_child_count() == 1 => p,
        _ => n,
    }
}

/// Top-level or namespace-level: where constants are outline symbols.
pub(super) fn module_level(ctx: &Ctx) -> bool {
    !ctx.in_function
        && matches!(
            ctx.parent,
            None | Some(SymbolKind::Module | SymbolKind::Namespace)
        )
}

/// A function directly inside one of `scopes` is a method.
pub(super) fn function_or_method(ctx: &Ctx, scopes: &[SymbolKind]) -> SymbolKind {
    if ctx.parent.is_some_and(|p| scopes.contains(&p)) {
        SymbolKind::Method
    } else {
        SymbolKind::Function
    }
}

/// A type's name without generic arguments (`Foo<T>` -> `Foo`).
pub(super) fn bare_type(t: &str) -> String {
    collapse(t.split('<').next().unwrap_or(t))
}

/// The first named child of `n` whose kind is one of `kinds`.
pub(super) fn child_of_kind<'t>(n: Node<'t>, kinds: &[&str]) -> Option<Node<'t>> {
    let mut cursor = n.walk();
    n.named_children(&mut cursor)
        .find(|c| kinds.contains(&c.kind()))
}

/// Whether `n` has an anonymous (keyword) child spelled `word`.
pub(super) fn has_keyword(n: Node, src: &str, word: &str) -> bool {
    let mut cursor = n.walk();
    n.children(&mut cursor)
        .any(|c| !c.is_named() && text(src, c) == word)
}

/// Collapses every run of whitespace to one space and trims the ends.
pub(crate) fn collapse(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for word in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}
