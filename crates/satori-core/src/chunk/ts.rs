//! The tree-sitter side of chunking: parsing with a per-thread parser and a time budget, the
//! outline of a syntax tree as line units (with leading comments and attributes glued to what
//! they document), and the walk that turns definitions into symbols.

use std::cell::RefCell;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::marker::PhantomData;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use tree_sitter::{Node, ParseOptions, ParseState, Parser, Tree};

use super::label;
use super::split::{Outline, Unit};
use super::{RawSymbol, SymbolKind};
use crate::lang::{self, Ctx, Language, SyntaxRules};

/// A parse that takes longer than this is abandoned and the file is chunked by lines: a
/// pathological file must not stall indexing.
const PARSE_BUDGET: Duration = Duration::from_secs(2);

thread_local! {
    /// Parsers are reused per thread (files are chunked in parallel); creating one and loading
    /// its grammar for every file would cost more than parsing a small file.
    static PARSERS: RefCell<HashMap<Language, Parser>> = RefCell::new(HashMap::new());
}

/// Parses `text`, or `None` when the language has no grammar or the parse was abandoned.
pub(crate) fn parse(lang: Language, text: &str) -> Option<Tree> {
    let grammar = lang.grammar()?;
    PARSERS.with(|cell| {
        let mut parsers = cell.try_borrow_mut().ok()?;
        let parser = match parsers.entry(lang) {
            Entry::Occupied(o) => o.into_mut(),
            Entry::Vacant(v) => {
                let mut p = Parser::new();
                p.set_language(&grammar).ok()?;
                v.insert(p)
            }
        };
        let deadline = Instant::now() + PARSE_BUDGET;
        let mut progress = |_: &ParseState| {
            if Instant::now() >= deadline {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let bytes = text.as_bytes();
        let mut read = |at: usize, _| bytes.get(at..).unwrap_or(&[]);
        let options = ParseOptions::new().progress_callback(&mut progress);
        let tree = parser.parse_with_options(&mut read, None, Some(options));
        if tree.is_none() {
            // An abandoned parse leaves state behind that the next parse would resume.
            parser.reset();
        }
        tree
    })
}

/// How many times item macros are unwrapped: `cfg_feature! { cfg_server! { ... } }` needs two.
const MACRO_UNWRAP_PASSES: usize = 3;

/// Rust code often wraps items in a macro (`cfg_server! { impl Foo { fn bar() {} } }`), which
/// the grammar sees as an opaque token tree: no definitions, and chunks cut by size. When the
/// inside of an item-level, brace-delimited macro call parses cleanly as items on its own, this
/// returns `text` with the call's head (`cfg_server! {`) and closing brace blanked out, byte
/// for byte, so the items parse as if written directly. Offsets, lines and every other byte
/// stay the same. Returns the new text and its tree; `None` when there is nothing to unwrap.
pub(crate) fn unwrap_item_macros(
    language: Language,
    root: Node,
    text: &str,
) -> Option<(String, Tree)> {
    let mut out: Option<Vec<u8>> = None;
    let mut tree: Option<Tree> = None;
    for _ in 0..MACRO_UNWRAP_PASSES {
        let current = out.as_deref().unwrap_or(text.as_bytes());
        let node = tree.as_ref().map(|t| t.root_node()).unwrap_or(root);
        let spans = item_macro_spans(language, node, current);
        if spans.is_empty() {
            break;
        }
        let buf = out.get_or_insert_with(|| text.as_bytes().to_vec());
        for (head, close) in spans {
            for b in &mut buf[head] {
                if *b != b'\n' {
                    *b = b' ';
                }
            }
            buf[close] = b' ';
        }
        // Only whole characters were replaced (ASCII heads and braces, or a whole name).
        let s = std::str::from_utf8(buf).ok()?;
        tree = Some(parse(language, s)?);
    }
    let text = String::from_utf8(out?).ok()?;
    Some((text, tree?))
}

/// The (head byte range, closing-brace byte) of every item-level macro call under `root`
/// whose braces hold nothing but items.
fn item_macro_spans(
    language: Language,
    root: Node,
    text: &[u8],
) -> Vec<(std::ops::Range<usize>, usize)> {
    let mut out = Vec::new();
    let mut stack = vec![root];
    let mut cursor = root.walk();
    while let Some(node) = stack.pop() {
        match node.kind() {
            "source_file" | "declaration_list" => {
                stack.extend(node.named_children(&mut cursor));
            }
            "mod_item" | "impl_item" | "trait_item" => {
                stack.extend(node.child_by_field_name("body"));
            }
            "macro_invocation" => {
                let Some(tt) = (0..node.named_child_count())
                    .filter_map(|i| node.named_child(i as u32))
                    .find(|c| c.kind() == "token_tree")
                else {
                    continue;
                };
                let (open, close) = (tt.start_byte(), tt.end_byte().saturating_sub(1));
                if text.get(open) != Some(&b'{') || text.get(close) != Some(&b'}') {
                    continue;
                }
                let inner = std::str::from_utf8(&text[open + 1..close]).unwrap_or("");
                if holds_only_items(language, inner) {
                    out.push((node.start_byte()..open + 1, close));
                }
            }
            _ => {}
        }
    }
    out
}

/// The text parses as Rust without errors and defines something.
fn holds_only_items(language: Language, inner: &str) -> bool {
    let Some(tree) = parse(language, inner) else {
        return false;
    };
    let root = tree.root_node();
    let mut cursor = root.walk();
    let defines = root.named_children(&mut cursor).any(|c| {
        matches!(
            c.kind(),
            "function_item"
                | "impl_item"
                | "struct_item"
                | "enum_item"
                | "union_item"
                | "trait_item"
                | "mod_item"
                | "type_item"
                | "const_item"
                | "static_item"
                | "macro_definition"
                | "macro_invocation"
        )
    });
    defines && !root.has_error()
}

/// 0-based first line of a node.
pub(crate) fn first_line(n: Node) -> usize {
    n.start_position().row
}

/// 0-based last line of a node. Some nodes (Rust line comments, C `#include`) own their
/// newline and so "end" at column 0 of the next line, which they do not occupy.
pub(crate) fn last_line(n: Node) -> usize {
    let end = n.end_position();
    if end.column == 0 && end.row > n.start_position().row {
        end.row - 1
    } else {
        end.row
    }
}

/// Comments, as the grammars name them.
const COMMENTS: &[&str] = &["comment", "line_comment", "block_comment"];

/// Nodes that document or annotate the node after them: comments, and the kinds the
/// language's syntax rules add (`leading`: attributes, decorators, ...).
fn is_leading(leading: &[&str], kind: &str) -> bool {
    COMMENTS.contains(&kind) || leading.contains(&kind)
}

/// The syntax rules of `language` (those of no language when it has none).
fn rules_of(language: Language) -> SyntaxRules {
    match language.spec().outline {
        lang::Outline::Syntax(rules) => rules,
        _ => SyntaxRules::new(|_, _, _| None),
    }
}

/// The outline of a syntax tree: a node's units are its named children, where a run of
/// comments/attributes directly above a child (no blank line between) joins that child.
pub(crate) struct TsOutline<'t> {
    /// The language's node kinds that join the node after them, besides comments.
    leading: &'static [&'static str],
    node: PhantomData<Node<'t>>,
}

impl TsOutline<'_> {
    /// The outline of trees of `language`.
    pub(crate) fn new(language: Language) -> Self {
        TsOutline {
            leading: rules_of(language).leading,
            node: PhantomData,
        }
    }
}

impl<'t> Outline for TsOutline<'t> {
    type Src = Node<'t>;

    fn units(&self, node: Node<'t>) -> Vec<Unit<Node<'t>>> {
        // (unit, only leading nodes in it, line count of its widest node)
        let mut raw: Vec<(Unit<Node<'t>>, bool, usize)> = Vec::new();
        // Everything before a definition's body (name, multi-line parameters, decorators) is
        // its signature: it joins the body's unit so it stays with the body's first piece.
        let body = node.child_by_field_name("body");
        let signature_end = body.map(|b| b.start_byte()).unwrap_or(0);
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            if child.end_byte() <= signature_end && !is_leading(self.leading, child.kind()) {
                continue;
            }
            let (start, end) = (first_line(child), last_line(child));
            let start = match body {
                Some(b) if b.id() == child.id() => start.min(first_line(node)),
                _ => start,
            };
            let leading = is_leading(self.leading, child.kind());
            match raw.last_mut() {
                // Children sharing a line form one unit: a line goes to one chunk only.
                Some((prev, prev_leading, widest)) if start <= prev.end => {
                    if end - start > *widest {
                        *widest = end - start;
                        prev.src = child;
                    }
                    prev.end = prev.end.max(end);
                    *prev_leading &= leading;
                }
                _ => raw.push((
                    Unit {
                        start,
                        end,
                        src: child,
                    },
                    leading,
                    end - start,
                )),
            }
        }
        let mut out: Vec<Unit<Node<'t>>> = Vec::with_capacity(raw.len());
        for (unit, leading, _) in raw.into_iter().rev() {
            if leading
                && let Some(next) = out.last_mut()
                && next.start <= unit.end + 1
            {
                next.start = unit.start;
                continue;
            }
            out.push(unit);
        }
        out.reverse();
        out
    }
}

/// The first line of a definition including the comments, attributes and decorators directly
/// above it (stopping at a blank line, or at a comment that trails the previous statement).
fn leading_start(leading: &[&str], node: Node) -> usize {
    let mut start = first_line(node);
    let mut cur = node;
    while let Some(prev) = cur.prev_named_sibling() {
        if !is_leading(leading, prev.kind()) || last_line(prev) + 1 < start {
            break;
        }
        if let Some(before) = prev.prev_named_sibling()
            && last_line(before) >= first_line(prev)
        {
            break;
        }
        start = first_line(prev);
        cur = prev;
    }
    start
}

/// Definitions nested deeper than this are not symbols, and the walk does not descend into
/// them. Every symbol carries its scope (the names of all the definitions around it), so an
/// outline costs the number of symbols times their depth: a file of thousands of nested
/// modules or functions would cost memory in the square of its size. Real code nests a
/// handful of definitions (namespaces, a class, a nested class, a method, a local function);
/// 64 leaves room for generated code while keeping every symbol's scope small. The lines
/// past the cap are still chunked, as the outline's size rules cut them.
pub(crate) const MAX_DEFINITION_DEPTH: usize = 64;

/// The definitions of a tree, and whether some were left out for nesting past
/// [`MAX_DEFINITION_DEPTH`].
pub(crate) struct Definitions {
    pub symbols: Vec<RawSymbol>,
    pub too_deep: bool,
}

/// Walks the tree and returns every definition, parents before children, in file order, down
/// to [`MAX_DEFINITION_DEPTH`] levels of definitions. The walk keeps its own stack, so a
/// deeply nested tree costs no call stack.
pub(crate) fn symbols(language: Language, root: Node, text: &str) -> Definitions {
    let mut out: Vec<RawSymbol> = Vec::new();
    let mut too_deep = false;
    let rules = rules_of(language);
    // (node, index of the enclosing symbol, its depth in definitions, inside a function body)
    let mut stack: Vec<(Node, Option<usize>, usize, bool)> = vec![(root, None, 0, false)];
    let mut cursor = root.walk();
    while let Some((node, parent, depth, in_function)) = stack.pop() {
        let parent_sym = parent.map(|i| &out[i]);
        let ctx = Ctx {
            parent: parent_sym.map(|s| s.kind),
            parent_name: parent_sym.map(|s| s.name.as_str()),
            parent_scope: parent_sym.map(|s| s.scope.as_slice()).unwrap_or(&[]),
            in_function,
        };
        let mut child_parent = parent;
        let mut child_depth = depth;
        let mut child_in_function = in_function;
        if let Some(def) = (rules.classify)(node, text, &ctx) {
            if depth >= MAX_DEFINITION_DEPTH {
                too_deep = true;
                continue;
            }
            let mut outer = def.decl;
            // A wrapper of the definition (`export`, decorators, `template<...>`): the
            // symbol's span starts at the wrapper.
            while let Some(p) = outer
                .parent()
                .filter(|p| rules.wrappers.contains(&p.kind()))
            {
                outer = p;
            }
            let scope = match def.scope {
                Some(s) => s,
                None => match parent {
                    Some(i) => {
                        let mut s = out[i].scope.clone();
                        s.push(out[i].name.clone());
                        s
                    }
                    None => Vec::new(),
                },
            };
            let is_fn = matches!(
                def.kind,
                SymbolKind::Function | SymbolKind::Method | SymbolKind::Constructor
            );
            out.push(RawSymbol {
                label: label::label(rules.bracket_attributes, text, def.decl, def.body),
                name: def.name,
                kind: def.kind,
                start: leading_start(rules.leading, outer),
                end: last_line(def.last.unwrap_or(def.decl)).max(last_line(node)),
                scope,
                parent,
            });
            child_parent = Some(out.len() - 1);
            child_depth = depth + 1;
            child_in_function = in_function || is_fn;
        }
        let first_child = stack.len();
        for child in node.named_children(&mut cursor) {
            stack.push((child, child_parent, child_depth, child_in_function));
        }
        stack[first_child..].reverse();
    }
    Definitions {
        symbols: out,
        too_deep,
    }
}
