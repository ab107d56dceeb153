//! What a syntax tree says about references between definitions: every call site (the name
//! called, what it was called on, its line) and every import (the module path written and
//! the names it brings in). Languages differ only in the node kinds, fields and names of
//! their call rules (`lang::CallRules`, in each language's file); the walk is shared.

use tree_sitter::Node;

use super::{CallSite, FileRefs, Import, Receiver, UNKNOWN_ARGS};
use crate::lang::{CallRules, Callee, Language};

/// Whether the call graph reads `lang`'s files: it has call rules.
pub(crate) fn has_call_rules(lang: Language) -> bool {
    lang.call_rules().is_some()
}

/// The head call of a definition written as a call (Elixir's `name(args)` in `def
/// name(args)`, also before a guard: `def name(x) when x > 0`): it names what is defined.
fn definition_head(def: Node) -> Option<Node> {
    let mut cursor = def.walk();
    let args = def
        .named_children(&mut cursor)
        .find(|c| c.kind() == "arguments")?;
    let mut head = args.named_child(0)?;
    if head.kind() == "binary_operator" {
        head = head.child_by_field_name("left")?;
    }
    (head.kind() == "call").then_some(head)
}

/// A call that constructs, read as a call of the class (Ruby's `Ledger.new`, see
/// [`CallRules::constructor`]).
fn constructed(rules: &CallRules, name: String, receiver: Receiver) -> (String, Receiver) {
    let (Some(constructor), Receiver::Named(written)) = (rules.constructor, &receiver) else {
        return (name, receiver);
    };
    match constructor(&name, written) {
        Some((class, outer)) => (class, outer.map_or(Receiver::None, Receiver::Named)),
        None => (name, receiver),
    }
}

/// Fields that hold the name part of a member expression, most specific first.
const NAME_FIELDS: &[&str] = &[
    "property",
    "attribute",
    "field",
    "member",
    "method",
    "right",
    "suffix",
    "id",
    "name",
];

/// Fields that hold what a member expression is taken on.
const RECEIVER_FIELDS: &[&str] = &[
    "object",
    "value",
    "argument",
    "operand",
    "expression",
    "path",
    "scope",
    "qualifier",
    "table",
    "left",
    "target",
    "module",
    "receiver",
];

fn text<'s>(src: &'s str, n: Node) -> &'s str {
    src.get(n.byte_range()).unwrap_or("")
}

/// The receiver as written, classified: `self`/`this` is the enclosing type.
fn receiver_of(src: &str, n: Node) -> Receiver {
    receiver_text(text(src, n))
}

/// [`receiver_of`] on text.
fn receiver_text(t: &str) -> Receiver {
    let t = t.trim();
    match t {
        "self" | "this" | "Self" | "@" | "$this" | "static" => Receiver::SelfType,
        "parent" | "super" => Receiver::Named("super".to_owned()),
        _ if !t.is_empty()
            && t.len() <= 64
            && t.chars().all(|c| {
                c.is_alphanumeric() || matches!(c, '_' | '$' | '@' | ':' | '.' | '\\')
            }) =>
        {
            Receiver::Named(t.trim_start_matches(['$', '@']).to_owned())
        }
        _ => Receiver::Expression,
    }
}

/// The called name (and receiver) of a callee expression, or `None` when the callee is not
/// a name (a call of a call's result, of a lambda, of an index).
fn callee_name(src: &str, mut n: Node, mut receiver: Receiver) -> Option<(String, Receiver)> {
    for _ in 0..8 {
        // The result of a call, or an argument list reached by descending: not a name.
        if n.kind().contains("call") || n.kind().contains("arguments") {
            return None;
        }
        match n.kind() {
            // Wrappers around the callee.
            "generic_function"
            | "generic_name"
            | "generic_type"
            | "template_function"
            | "parenthesized_expression"
            | "command_name" => {
                n = n
                    .child_by_field_name("function")
                    .or_else(|| n.child_by_field_name("name"))
                    .or_else(|| n.named_child(0))?;
                continue;
            }
            // Kotlin writes `a.b` as two named children, receiver first.
            "navigation_expression" if n.child_by_field_name("target").is_none() => {
                let count = n.named_child_count();
                let last = n.named_child((count.checked_sub(1)?) as u32)?;
                if count >= 2 {
                    receiver = receiver_of(src, n.named_child(0)?);
                }
                n = last;
                continue;
            }
            // Haskell's `f x y` nests applications: the function is the innermost.
            "apply" => {
                n = n.child_by_field_name("function")?;
                continue;
            }
            _ => {}
        }
        if n.named_child_count() == 0 {
            let name = text(src, n).trim();
            let name = name.trim_start_matches('$');
            // The shell's `.` (source) is the one name that is punctuation.
            if name != "."
                && (name.is_empty()
                    || name.len() > 128
                    || !name
                        .chars()
                        .all(|c| c.is_alphanumeric() || matches!(c, '_' | '@' | '!' | '?' | '-')))
            {
                return None;
            }
            return Some((name.trim_end_matches('!').to_owned(), receiver));
        }
        let named = NAME_FIELDS
            .iter()
            .find_map(|f| n.child_by_field_name(f).map(|c| (c, *f)));
        match named {
            Some((name, field)) => {
                if let Some(r) = RECEIVER_FIELDS
                    .iter()
                    .find_map(|f| n.child_by_field_name(f))
                {
                    receiver = receiver_of(src, r);
                    // `task::spawn()` names a module or a type, never a value: the path is
                    // marked with a leading `::` so resolution tells it from `task.spawn()`.
                    if matches!(n.kind(), "scoped_identifier" | "qualified_identifier")
                        && let Receiver::Named(path) = &receiver
                        && !path.contains("::")
                    {
                        receiver = Receiver::Named(format!("::{path}"));
                    }
                } else if field == "suffix" && n.kind() != "navigation_suffix" {
                    // A suffix with nothing it is taken on is taken on an expression; Swift's
                    // `.name` part of `a.name` got its receiver from its parent.
                    receiver = Receiver::Expression;
                }
                n = name;
            }
            None => {
                // A node with children but no name field: an identifier spelled with parts
                // (Swift's `navigation_suffix` holds the name in `suffix`, handled above; a
                // qualified type holds it last).
                let count = n.named_child_count();
                n = n.named_child((count.checked_sub(1)?) as u32)?;
            }
        }
    }
    None
}

/// The (name, receiver) a call node calls.
fn call_target(src: &str, call: Node, how: Callee) -> Option<(String, Receiver)> {
    match how {
        Callee::Field(f) => callee_name(src, call.child_by_field_name(f)?, Receiver::None),
        Callee::Split { name, receiver } => {
            let r = call
                .child_by_field_name(receiver)
                .map(|r| receiver_of(src, r))
                .unwrap_or(Receiver::None);
            callee_name(src, call.child_by_field_name(name)?, r)
        }
        Callee::First => {
            let first = call.named_child(0)?;
            // PHP's and Scala's `new Foo()` start with the class name; Kotlin and Swift with
            // the callee.
            callee_name(src, first, Receiver::None)
        }
    }
}

/// Most nodes of one import searched for its path or names, and most names kept: an import
/// is a line or a few, and calls that import nested thousands deep (`require(require(...))`)
/// must not each walk, and copy, everything nested under them.
const IMPORT_NODES_MAX: usize = 4096;
pub(crate) const IMPORT_NAMES_MAX: usize = 256;

/// The first string literal inside an import, unquoted (a module path: `'./x'`, `"x.h"`).
fn first_string_in(src: &str, n: Node) -> Option<String> {
    let mut stack = vec![n];
    let mut cursor = n.walk();
    let mut visited = 0;
    while let Some(node) = stack.pop() {
        visited += 1;
        if visited > IMPORT_NODES_MAX {
            return None;
        }
        let kind = node.kind();
        if kind.contains("string") || kind == "system_lib_string" {
            let t = text(src, node).trim_matches(|c| matches!(c, '"' | '\'' | '`' | '<' | '>'));
            if !t.is_empty() && t.len() < 256 && !t.contains('\n') {
                return Some(t.to_owned());
            }
            continue;
        }
        stack.extend(node.named_children(&mut cursor));
    }
    None
}

/// Identifiers inside an import (the names it binds, and the parts of its path).
fn identifiers_in(src: &str, n: Node, out: &mut Vec<String>) {
    let mut stack = vec![n];
    let mut cursor = n.walk();
    let mut visited = 0;
    while let Some(node) = stack.pop() {
        visited += 1;
        if visited > IMPORT_NODES_MAX || out.len() >= IMPORT_NAMES_MAX {
            return;
        }
        if node.named_child_count() == 0 {
            let kind = node.kind();
            // Elixir's module names (`alias Acme.Ledger.Book`) are `alias` nodes.
            if kind.contains("identifier") || matches!(kind, "name" | "module" | "alias") {
                let t = text(src, node).trim();
                if !t.is_empty() && t.len() <= 128 {
                    out.push(t.to_owned());
                }
            }
            continue;
        }
        if node.kind().contains("string") {
            continue;
        }
        stack.extend(node.named_children(&mut cursor));
    }
}

/// The module path an import statement names, in the writing of its language (`a.b.c`,
/// `crate::a::b`, `./a/b`, `a/b.h`): the statement's text without the keyword and the
/// imported list, which is enough to compare it with file paths.
fn import_path(rules: &CallRules, src: &str, n: Node) -> String {
    if let Some(s) = first_string_in(src, n) {
        return s;
    }
    let field = rules
        .import_path_fields
        .iter()
        .find(|(kind, _)| *kind == n.kind())
        .map_or("", |(_, field)| field);
    let node = n.child_by_field_name(field).unwrap_or(n);
    let t = text(src, node);
    let t = t
        .split(['{', '(', ';', '\n'])
        .next()
        .unwrap_or("")
        .trim()
        .trim_start_matches("import ")
        .trim_start_matches("using ")
        .trim_start_matches("use ")
        .trim_start_matches("static ")
        .trim();
    t.to_owned()
}

/// A call written inside a macro's arguments (Rust's `println!("{}", ledger.balance())`):
/// the grammar leaves them as a flat token tree, so a name followed by a parenthesised token
/// tree is read back as a call, with the `a.b` / `A::b` chain before the name as its
/// receiver. `keywords` stand before a parenthesis without being called.
fn token_tree_call(src: &str, tree: Node, keywords: &[&str]) -> Option<CallSite> {
    if !text(src, tree).starts_with('(') {
        return None;
    }
    let name_node = tree.prev_sibling().filter(|n| n.kind() == "identifier")?;
    let name = text(src, name_node);
    if keywords.contains(&name) {
        return None;
    }
    // Walk back over `part.` / `part::` pairs; a chain that starts with a call's or an
    // index's result is an expression.
    let mut start = name_node;
    let mut parts: Vec<&str> = Vec::new();
    let mut expression = false;
    while let Some(sep) = start
        .prev_sibling()
        .filter(|n| matches!(n.kind(), "." | "::"))
    {
        match sep.prev_sibling() {
            Some(p) if matches!(p.kind(), "identifier" | "self" | "super" | "crate") => {
                parts.push(sep.kind());
                parts.push(text(src, p));
                start = p;
            }
            _ => {
                expression = true;
                break;
            }
        }
    }
    parts.reverse();
    let receiver = if expression {
        Receiver::Expression
    } else if parts.is_empty() {
        Receiver::None
    } else {
        // Drop the trailing separator: `self.a.` -> `self.a`.
        let written: String = parts[..parts.len() - 1].concat();
        receiver_text(&written)
    };
    Some(CallSite {
        name: name.to_owned(),
        receiver,
        line: start.start_position().row as u32 + 1,
        args: UNKNOWN_ARGS,
    })
}

/// The number of arguments a call node passes, from its `arguments` field (Java, C#, C++,
/// C, Go, Rust, JavaScript, TypeScript, Python name it so) or its value arguments (Kotlin,
/// Swift), else [`UNKNOWN_ARGS`].
fn argument_count(call: Node) -> u8 {
    // Kotlin: `value_arguments` > `value_argument`s; Swift puts them in a `call_suffix`.
    fn value_arguments(n: Node<'_>) -> Option<Node<'_>> {
        let mut cursor = n.walk();
        n.named_children(&mut cursor)
            .find(|c| c.kind() == "value_arguments")
    }
    let suffix_args = || {
        value_arguments(call).or_else(|| {
            let mut cursor = call.walk();
            let suffix = call
                .named_children(&mut cursor)
                .find(|c| c.kind() == "call_suffix")?;
            value_arguments(suffix)
        })
    };
    let Some(list) = call.child_by_field_name("arguments").or_else(suffix_args) else {
        return UNKNOWN_ARGS;
    };
    let mut cursor = list.walk();
    let n = list
        .named_children(&mut cursor)
        .filter(|c| !c.kind().contains("comment"))
        .count();
    n.min(UNKNOWN_ARGS as usize - 1) as u8
}

/// The ids of the named node kinds called `kinds` (a grammar may alias several ids to one
/// name), so the walk compares numbers instead of strings.
fn kind_ids(root: Node, kinds: &[&str]) -> Vec<(u16, usize)> {
    let lang = root.language();
    let mut out = Vec::new();
    for id in 0..lang.node_kind_count() as u16 {
        if !lang.node_kind_is_named(id) {
            continue;
        }
        if let Some(name) = lang.node_kind_for_id(id)
            && let Some(i) = kinds.iter().position(|k| *k == name)
        {
            out.push((id, i));
        }
    }
    out
}

/// Every call site and import of a parsed file. `text` is the text `root` was parsed from.
pub(crate) fn refs(lang: Language, root: Node, src: &str) -> FileRefs {
    let mut out = FileRefs::default();
    let Some(rules) = lang.call_rules() else {
        return out;
    };
    let call_names: Vec<&str> = rules.calls.iter().map(|(k, _)| *k).collect();
    let call_ids = kind_ids(root, &call_names);
    let import_ids = kind_ids(root, rules.imports);
    let token_tree_ids: Vec<u16> = match &rules.macro_tokens {
        Some(tokens) => kind_ids(root, &[tokens.kind])
            .iter()
            .map(|(i, _)| *i)
            .collect(),
        None => Vec::new(),
    };
    // Definition heads (`def name(args)`) still to skip: they are parsed as calls.
    let mut heads: Vec<usize> = Vec::new();
    // A cursor walk: indexing a large codebase visits millions of nodes here.
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        let id = node.kind_id();
        let mut descend = true;
        if import_ids.iter().any(|(i, _)| *i == id) {
            let holds_code = rules.code_when_bodied.contains(&node.kind())
                && node.child_by_field_name("body").is_some();
            if !holds_code {
                let mut names = Vec::new();
                identifiers_in(src, node, &mut names);
                out.imports.push(Import {
                    path: import_path(rules, src, node),
                    names,
                    line: node.start_position().row as u32 + 1,
                });
                descend = false;
            }
        } else if let Some(&(_, rule)) = call_ids.iter().find(|(i, _)| *i == id)
            && let Some((name, receiver)) = call_target(src, node, rules.calls[rule].1)
        {
            let line = node.start_position().row as u32 + 1;
            if rules.import_calls.names.contains(&name.as_str()) {
                out.imports.push(import_call(rules, src, node, &name, line));
            } else if rules.definition_calls.contains(&name.as_str()) {
                heads.extend(definition_head(node).map(|h| h.id()));
            } else if heads.last() == Some(&node.id()) {
                // The head of the definition just seen names what it defines.
                heads.pop();
            } else if !rules.keyword_calls.contains(&name.as_str()) {
                let (name, receiver) = constructed(rules, name, receiver);
                out.calls.push(CallSite {
                    name,
                    receiver,
                    line,
                    args: argument_count(node),
                });
            }
        }
        if token_tree_ids.contains(&id)
            && let Some(tokens) = &rules.macro_tokens
            && let Some(site) = token_tree_call(src, node, tokens.keywords)
        {
            out.calls.push(site);
        }
        if descend && cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                return out;
            }
        }
    }
}

/// The import a call of `name` makes (`require("x")`, `alias Acme.Ledger`, `. lib/x.sh`).
fn import_call(rules: &CallRules, src: &str, node: Node, name: &str, line: u32) -> Import {
    let how = &rules.import_calls;
    let mut path = first_string_in(src, node);
    let mut names = Vec::new();
    if how.binds_names {
        identifiers_in(src, node, &mut names);
        names.retain(|n| n != name);
    }
    if path.is_none()
        && let Some(field) = how.bare_path_field
    {
        path = node
            .child_by_field_name(field)
            .map(|a| text(src, a).to_owned());
    }
    let path = path.unwrap_or_else(|| names.join("."));
    Import { path, names, line }
}
