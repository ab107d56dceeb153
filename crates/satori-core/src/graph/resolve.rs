//! Turns the stored definitions and call sites of every file into edges, and walks them.
//!
//! A call names a definition only by its name, so resolution ranks the definitions of that
//! name by where they live relative to the call: the caller's own type (a `self.f()` call),
//! the caller's file, a file the caller imports, the caller's directory, anywhere. The best
//! tier wins when it holds one definition; several overloads of one method all get an edge;
//! anything else is ambiguous and becomes a note instead of a guess. A call on a named type
//! (`Ledger::new()`) only considers that type's definitions, and a call on a type the
//! codebase does not define (`Vec::new()`) is a library call.

use std::collections::{HashMap, HashSet, VecDeque};

use super::{FileGraph, GraphFile, Import, Receiver, UNKNOWN_ARGS};
use crate::lang::Language;
use crate::symbol::{Symbol, SymbolKind};

/// Which way to walk from a symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Who calls it.
    Callers,
    /// What it calls.
    Callees,
    Both,
}

/// How much of the codebase a graph covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphStatus {
    Complete,
    /// Built by syncs over an index that predates the call graph: only the files changed
    /// since are in it, until the next reindex.
    Partial,
}

/// What an edge stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EdgeKind {
    /// A call resolved to a definition.
    Call,
    /// A call of a type's name: a constructor call (`new Order()`, `Order(...)`).
    Construct,
}

/// Confidence of an edge by the tier it was resolved in.
const CONFIDENCE: [f32; 5] = [0.95, 0.9, 0.8, 0.7, 0.6];
/// How many external names a note lists.
const NOTE_NAMES: usize = 8;

/// A resolved edge between two symbols (indices into [`CallGraph`]'s node list).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Edge {
    src: u32,
    dst: u32,
    kind: EdgeKind,
    /// The file of the call site (the caller's file) and its line.
    line: u32,
    confidence: f32,
}

/// A call site that named several definitions that resolution could not tell apart.
#[derive(Debug, Clone)]
struct Ambiguous {
    caller: u32,
    line: u32,
    name: String,
    candidates: Vec<u32>,
}

/// The resolved graph of a generation.
pub struct CallGraph {
    files: Vec<FileGraph>,
    complete: bool,
    /// (file index, symbol index) of each node; a node is a definition.
    nodes: Vec<(u32, u32)>,
    by_id: HashMap<String, u32>,
    edges: Vec<Edge>,
    out: Vec<Vec<u32>>,
    into: Vec<Vec<u32>>,
    ambiguous: Vec<Ambiguous>,
    /// Per caller node: the names it calls that nothing in the codebase defines.
    external: HashMap<u32, Vec<String>>,
    /// Per caller node: methods it calls on values of unknown type whose only definitions
    /// are out of reach (see `on_value` in `build`).
    untyped: HashMap<u32, Vec<String>>,
}

/// One end of an edge in an answer.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphNode {
    pub file: String,
    pub language: Language,
    pub symbol: Symbol,
}

/// An edge in an answer, by symbol ids.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphEdge {
    pub src: String,
    pub dst: String,
    pub kind: EdgeKind,
    /// Where the call is written.
    pub site_file: String,
    pub site_line: u32,
    /// 0 to 1: how sure the resolution is.
    pub confidence: f32,
}

/// What to walk.
#[derive(Debug, Clone)]
pub struct GraphQuery {
    /// The symbol's file, root-relative.
    pub file: String,
    pub symbol_id: String,
    pub direction: Direction,
    /// 1 to 3.
    pub depth: u32,
    /// Most edges returned.
    pub limit: usize,
}

/// The part of the graph around one symbol.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphView {
    /// The symbol asked for, then every other node, by file, line, label, id.
    pub nodes: Vec<GraphNode>,
    /// Nearest first, then by site.
    pub edges: Vec<GraphEdge>,
    /// What resolution could not decide, and what was left out.
    pub notes: Vec<String>,
    /// More edges were found than `limit`.
    pub truncated: bool,
}

/// Kinds a call can come from.
fn is_caller(kind: SymbolKind) -> bool {
    matches!(
        kind,
        SymbolKind::Function | SymbolKind::Method | SymbolKind::Constructor | SymbolKind::Macro
    )
}

/// Kinds a call can reach, and whether reaching it constructs.
fn callee_kind(kind: SymbolKind) -> Option<EdgeKind> {
    match kind {
        SymbolKind::Function | SymbolKind::Method | SymbolKind::Constructor | SymbolKind::Macro => {
            Some(EdgeKind::Call)
        }
        SymbolKind::Class | SymbolKind::Struct => Some(EdgeKind::Construct),
        _ => None,
    }
}

/// The language whose definitions a file of `lang` can call by name: one per runtime
/// (TypeScript calls JavaScript, C++ calls C, Kotlin and Scala call Java).
fn family(lang: Language) -> Language {
    match lang {
        Language::TypeScript | Language::Tsx => Language::JavaScript,
        Language::Cpp => Language::C,
        Language::Kotlin | Language::Scala => Language::Java,
        other => other,
    }
}

/// Whether a call without a receiver (`f()`) cannot run a method: where a method is only
/// ever called on something (`self.f()`, `this.f()`, `x.f()`, `Type::f()`), a bare name
/// means a function (Java, C#, C++, Kotlin, Scala, Swift and Ruby call their own methods
/// bare).
fn bare_call_misses_methods(lang: Language, receiver: &Receiver) -> bool {
    *receiver == Receiver::None
        && matches!(
            lang,
            Language::Rust
                | Language::Python
                | Language::JavaScript
                | Language::TypeScript
                | Language::Tsx
                | Language::Go
                | Language::Php
                | Language::Lua
        )
}

/// Languages whose unit of code is the directory: a Go or Java package, a C# namespace, a
/// C or C++ source beside its header. Code calls across files of it without importing them.
fn directory_is_unit(lang: Language) -> bool {
    matches!(
        lang,
        Language::Go
            | Language::Java
            | Language::Kotlin
            | Language::Scala
            | Language::CSharp
            | Language::C
            | Language::Cpp
    )
}

/// The parts of a path without its extension: `src/orders/service.py` → `src orders service`.
/// A directory's module file stands for the directory, since that is what imports name:
/// `mod orders;` and `use orders::X` reach `src/orders/mod.rs` → `src orders`.
fn file_parts(path: &str) -> Vec<String> {
    let mut parts: Vec<String> = path.split('/').map(str::to_owned).collect();
    if let Some(last) = parts.last_mut()
        && let Some((stem, _)) = last.rsplit_once('.')
        && !stem.is_empty()
    {
        *last = stem.to_owned();
    }
    if parts.len() > 1
        && matches!(
            parts.last().map(String::as_str),
            Some("mod" | "__init__" | "index")
        )
    {
        parts.pop();
    }
    parts
}

/// The type part of a scope element: `Export for Text` (a Rust trait impl) → `Text`.
fn scope_type(scope: &str) -> &str {
    scope.rsplit(" for ").next().unwrap_or(scope)
}

/// The last part of a written path: `a.b` → `b`, `std::vec::Vec` → `Vec`, `\App\Ledger` →
/// `Ledger`.
fn last_part(path: &str) -> &str {
    path.rsplit(['.', ':', '\\']).next().unwrap_or(path)
}

/// C#'s built-in types, called on by their keyword (`long.Parse(s)`, `string.Join(...)`).
const CSHARP_TYPES: &[&str] = &[
    "bool", "byte", "char", "decimal", "double", "float", "int", "long", "object", "sbyte",
    "short", "string", "uint", "ulong", "ushort",
];

/// A receiver written as a type: a capitalised name alone or at the end of a `::` or `\`
/// path (`Vec::new()`, `Math.max()`, `std::collections::HashMap::new()`), as opposed to a
/// value (`ledger.post()`, `self.entries.push()`). In C# a capitalised name is as often a
/// property as a type, so only the built-in types' keywords are taken for types there.
fn written_type(language: Language, receiver: &Receiver) -> Option<&str> {
    let Receiver::Named(r) = receiver else {
        return None;
    };
    if language == Language::CSharp {
        return CSHARP_TYPES.contains(&r.as_str()).then_some(r.as_str());
    }
    if r.contains('.') {
        return None;
    }
    let last = last_part(r);
    last.starts_with(|c: char| c.is_uppercase()).then_some(last)
}

/// The parts of an import path in any language's writing, without relative markers.
fn import_parts(import: &Import) -> Vec<String> {
    let path = import.path.as_str();
    let slashed = path.contains('/');
    let mut parts: Vec<String> = if slashed {
        path.split('/').map(str::to_owned).collect()
    } else {
        path.split(['.', ':', '\\']).map(str::to_owned).collect()
    };
    if slashed
        && let Some(last) = parts.last_mut()
        && let Some((stem, ext)) = last.rsplit_once('.')
        && ext.len() <= 5
        && !stem.is_empty()
    {
        *last = stem.to_owned();
    }
    parts.retain(|p| {
        !p.is_empty()
            && !matches!(
                p.as_str(),
                "." | ".." | "crate" | "super" | "self" | "@" | "~" | "*" | "static"
            )
    });
    parts
}

/// How many arguments a definition takes, read from its label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Arity {
    params: u8,
    /// The last parameter takes any number (`String... parts`, `params object[] xs`).
    variadic: bool,
}

impl Arity {
    fn takes(self, args: u8) -> bool {
        if self.variadic {
            args + 1 >= self.params
        } else {
            args == self.params
        }
    }
}

/// The parameter list of `name` in `label` (`public static String join(long[] a, char s)`),
/// counted at the top level of brackets; `None` when the label does not show it whole.
fn arity(label: &str, name: &str) -> Option<Arity> {
    let at = label.find(&format!("{name}("))? + name.len();
    let inner = &label[at + 1..];
    let mut depth = 0i32;
    let mut commas = 0u8;
    let mut end = None;
    let mut prev = ' ';
    for (i, c) in inner.char_indices() {
        let arrow = c == '>' && matches!(prev, '-' | '=');
        prev = c;
        match c {
            '(' | '[' | '<' | '{' => depth += 1,
            ')' if depth == 0 => {
                end = Some(i);
                break;
            }
            '>' if arrow => {}
            ')' | ']' | '>' | '}' => depth -= 1,
            ',' if depth == 0 => commas = commas.saturating_add(1),
            _ => {}
        }
    }
    let params = inner[..end?].trim();
    Some(Arity {
        params: if params.is_empty() { 0 } else { commas + 1 },
        variadic: params.contains("...")
            || params.contains("params ")
            || params.contains("vararg "),
    })
}

/// Languages without free functions, where a bare call runs a method of the caller's own
/// type or a parent of it (or one imported statically).
fn bare_call_is_own(lang: Language) -> bool {
    matches!(lang, Language::Java | Language::CSharp)
}

/// The words of the declaration of `caller`'s innermost type in its file: the names it
/// extends or implements are among them.
fn declaration_words<'a>(symbols: &'a [Symbol], caller: &Symbol) -> HashSet<&'a str> {
    let Some(own) = caller.scope.last() else {
        return HashSet::new();
    };
    symbols
        .iter()
        .find(|s| s.name == scope_type(own) && s.scope.len() + 1 == caller.scope.len())
        .map(|decl| {
            decl.label
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .filter(|w| !w.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether a Rust path starts at the standard library, which is never in a codebase.
fn is_std_crate(part: &str) -> bool {
    matches!(part, "std" | "core" | "alloc")
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

/// Whether one part list ends with the other (the shorter one, at least one part long).
fn suffix_match(a: &[String], b: &[String]) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    !short.is_empty() && long.ends_with(short)
}

fn dir_of(path: &str) -> &str {
    path.rsplit_once('/').map(|(d, _)| d).unwrap_or("")
}

impl CallGraph {
    /// Resolves every call site of `graph`.
    pub fn build(graph: GraphFile) -> CallGraph {
        let complete = graph.complete;
        let files = graph.files;
        let mut offsets = Vec::with_capacity(files.len());
        let mut nodes = Vec::new();
        let mut by_id = HashMap::new();
        let mut by_name: HashMap<&str, Vec<u32>> = HashMap::new();
        for (fi, f) in files.iter().enumerate() {
            offsets.push(nodes.len() as u32);
            for (si, s) in f.symbols.iter().enumerate() {
                let node = nodes.len() as u32;
                nodes.push((fi as u32, si as u32));
                by_id.insert(s.id.clone(), node);
                if callee_kind(s.kind).is_some() {
                    by_name.entry(s.name.as_str()).or_default().push(node);
                }
            }
        }
        let file_parts_of: Vec<Vec<String>> = files.iter().map(|f| file_parts(&f.path)).collect();
        // Every name a receiver could write for a type of the codebase: definitions' names
        // and the types of scopes (a Go method's receiver type has no definition of its own
        // when it is declared elsewhere).
        let mut type_names: HashSet<&str> = HashSet::new();
        for f in &files {
            for s in &f.symbols {
                type_names.insert(last_part(&s.name));
                for part in &s.scope {
                    type_names.insert(last_part(scope_type(part)));
                }
            }
        }
        let mut edges = Vec::new();
        let mut ambiguous = Vec::new();
        let mut external: HashMap<u32, Vec<String>> = HashMap::new();
        let mut untyped: HashMap<u32, Vec<String>> = HashMap::new();
        for (fi, f) in files.iter().enumerate() {
            if f.refs.calls.is_empty() {
                continue;
            }
            // (parts, whether the import names a directory): a Go import names a package,
            // which is every file of its directory, a C# `using` a namespace, which is most
            // often a directory too, and so does a wildcard (`a.b.*`).
            let mut imports: Vec<(Vec<String>, bool)> = Vec::new();
            for i in &f.refs.imports {
                let whole_dir =
                    matches!(f.language, Language::Go | Language::CSharp) || i.path.ends_with('*');
                let mut parts = import_parts(i);
                if f.language == Language::Elixir {
                    // `Acme.LedgerBook` lives in `lib/acme/ledger_book.ex`.
                    parts = parts.iter().map(|p| snake_case(p)).collect();
                }
                // A grouped import names its files after the path: `from ledger import book`,
                // `import acme.ledger.{Entry, Ledger}`, `use crate::ledger::{book::Ledger}`.
                // (`from . import book` has no path: the directory tier finds its file.)
                for name in &i.names {
                    if !parts.is_empty() && !parts.contains(name) {
                        let mut named = parts.clone();
                        named.push(name.clone());
                        imports.push((named, false));
                    }
                }
                imports.push((parts, whole_dir));
            }
            // A Rust path starts with a crate name (`tokio::task` in tokio's own tests and
            // examples) where the crate's files start at `src/`: without it, it names them.
            // And an item a module exports is most often defined in a file of the module's
            // directory and re-exported (`use tokio::task::spawn_blocking` is defined in
            // `src/task/blocking.rs`): the module's directory counts as near as the caller's
            // own directory.
            let mut module_dirs: Vec<Vec<String>> = Vec::new();
            // Names a Rust file brings in by `use` (the last part of a path, the members of a
            // group): a call of one of them runs what the `use` names, so a definition of
            // that name elsewhere in the codebase is not it (`use std::pin::pin;` then
            // `pin!(...)` is not the codebase's own `pin!`).
            let mut bound: HashSet<&str> = HashSet::new();
            if f.language == Language::Java {
                // `import a.b.Type;`, `import static a.b.Type.name;`
                for i in &f.refs.imports {
                    if let Some(last) = i.path.trim_end_matches(';').rsplit('.').next()
                        && last != "*"
                    {
                        bound.insert(last.trim());
                    }
                }
            }
            if f.language == Language::Rust {
                for i in &f.refs.imports {
                    let parts = import_parts(i);
                    if !i.path.trim_end().ends_with("::")
                        && !i.path.ends_with('*')
                        && let Some(last) = i.path.rsplit("::").next()
                    {
                        bound.insert(last.trim());
                    }
                    for name in &i.names {
                        if !parts.contains(name) {
                            bound.insert(name);
                        }
                    }
                }
                let uncrated: Vec<(Vec<String>, bool)> = imports
                    .iter()
                    .filter(|(parts, _)| parts.len() >= 2 && !is_std_crate(&parts[0]))
                    .map(|(parts, dir)| (parts[1..].to_vec(), *dir))
                    .collect();
                imports.extend(uncrated);
                module_dirs = imports
                    .iter()
                    .filter(|(parts, _)| parts.len() >= 2)
                    .map(|(parts, _)| parts[..parts.len() - 1].to_vec())
                    .collect();
            }
            // PHP maps a namespace's vendor prefix to a directory of another name
            // (`Acme\Ledger\Book` lives in `src/Ledger/Book.php`): without its first one or
            // two parts, a namespace still names the file.
            if f.language == Language::Php {
                let unprefixed: Vec<(Vec<String>, bool)> = imports
                    .iter()
                    .flat_map(|(parts, _)| {
                        (1..=2)
                            .filter(|k| parts.len() >= k + 2)
                            .map(|k| (parts[k..].to_vec(), false))
                    })
                    .collect();
                imports.extend(unprefixed);
            }
            // Files this file imports, decided lazily per candidate file.
            let mut imported: HashMap<u32, bool> = HashMap::new();
            let mut is_imported = |gi: u32| {
                *imported.entry(gi).or_insert_with(|| {
                    let target = &file_parts_of[gi as usize];
                    let target_dir = &target[..target.len().saturating_sub(1)];
                    imports.iter().any(|(parts, whole_dir)| {
                        suffix_match(parts, target)
                            || (parts.len() > 1 && suffix_match(&parts[..parts.len() - 1], target))
                            || (*whole_dir && suffix_match(parts, target_dir))
                    })
                })
            };
            let dir = dir_of(&f.path);
            for site in &f.refs.calls {
                let Some(caller_si) = enclosing(&f.symbols, site.line) else {
                    continue;
                };
                let caller = offsets[fi] + caller_si as u32;
                let caller_sym = &f.symbols[caller_si];
                // `parent::f()`, `super.f()` call the parent type's `f`, never the caller's own
                // type's; a Rust `super::f()` is a path to the parent module.
                let to_parent = matches!(&site.receiver, Receiver::Named(r) if r == "super");
                let receiver = match &site.receiver {
                    _ if to_parent && f.language == Language::Rust => Receiver::None,
                    _ if to_parent => Receiver::SelfType,
                    r => r.clone(),
                };
                // The words of the declaration of the caller's type (`class QuotedCsv extends
                // Csv`), which name its parents.
                let own_bare = bare_call_is_own(f.language) && receiver == Receiver::None;
                let parents: HashSet<&str> = if to_parent || own_bare {
                    declaration_words(&f.symbols, caller_sym)
                } else {
                    HashSet::new()
                };
                let outside = |external: &mut HashMap<u32, Vec<String>>| {
                    let names = external.entry(caller).or_default();
                    if !names.contains(&site.name) {
                        names.push(site.name.clone());
                    }
                };
                // Only code of the caller's runtime can be called by name: a Python `get()`
                // never runs a TypeScript method.
                let cands: Vec<u32> = by_name
                    .get(site.name.as_str())
                    .into_iter()
                    .flatten()
                    .copied()
                    .filter(|&n| {
                        let (gi, si) = nodes[n as usize];
                        let cand = &files[gi as usize];
                        family(cand.language) == family(f.language)
                            && !(to_parent
                                && f.language != Language::Rust
                                && cand.symbols[si as usize].scope == caller_sym.scope)
                            && !(bare_call_misses_methods(f.language, &receiver)
                                && cand.symbols[si as usize].kind == SymbolKind::Method)
                            // A bare Java or C# call runs a method of the caller's own type, of
                            // the types it extends, or one imported statically.
                            && !(own_bare
                                && cand.symbols[si as usize].kind == SymbolKind::Method
                                && gi as usize != fi
                                && !(bound.contains(site.name.as_str()) && is_imported(gi))
                                && !cand.symbols[si as usize].scope.last().is_some_and(|t| {
                                    parents.contains(last_part(scope_type(t)))
                                }))
                    })
                    .collect();
                if cands.is_empty() {
                    outside(&mut external);
                    continue;
                }
                // A call on a type the codebase does not define (`Vec::new()`, `Math.max()`)
                // is a library call, whatever the codebase defines under that name.
                let typed = written_type(f.language, &receiver);
                if typed.is_some_and(|t| !type_names.contains(t)) {
                    outside(&mut external);
                    continue;
                }
                // A path from the standard library (`std::thread::scope()`) never reaches the
                // codebase.
                let head = match &receiver {
                    Receiver::Named(r) if f.language == Language::Rust => {
                        r.split("::").next().filter(|h| !h.is_empty())
                    }
                    Receiver::Named(r) if f.language == Language::Java => {
                        r.split('.').next().filter(|h| !h.is_empty())
                    }
                    Receiver::None if matches!(f.language, Language::Rust | Language::Java) => {
                        Some(site.name.as_str())
                    }
                    _ => None,
                };
                if f.language == Language::Rust
                    && head.is_some_and(|h| is_std_crate(h) && receiver != Receiver::None)
                {
                    outside(&mut external);
                    continue;
                }
                let imported_name = head.is_some_and(|h| bound.contains(h));
                // A call on a named type (`Ledger::new()`, `Ledger.open()`) reaches that
                // type's definitions when it has any by that name.
                let on_type = |node: &u32| {
                    let (gi, si) = nodes[*node as usize];
                    let scope = &files[gi as usize].symbols[si as usize].scope;
                    let Receiver::Named(r) = &receiver else {
                        return false;
                    };
                    let written = last_part(r);
                    scope.iter().any(|p| last_part(scope_type(p)) == written)
                };
                let mut of_type: Vec<u32> = cands.iter().copied().filter(on_type).collect();
                // The parent type is the one the caller's type declaration names
                // (`class QuotedCsv extends Csv`).
                if to_parent && !parents.is_empty() {
                    of_type = cands
                        .iter()
                        .copied()
                        .filter(|&n| {
                            let (gi, si) = nodes[n as usize];
                            let scope = &files[gi as usize].symbols[si as usize].scope;
                            scope
                                .last()
                                .is_some_and(|t| parents.contains(last_part(scope_type(t))))
                        })
                        .collect();
                }
                // A type the codebase defines, called for a member it does not define there
                // (`Vec::new()` where the codebase only implements a trait for `Vec`): the
                // member comes from outside, a trait's default or a derive.
                if typed.is_some() && of_type.is_empty() {
                    outside(&mut external);
                    continue;
                }
                // A method called on a value (`ledger.post()`, `make().post()`) belongs to a
                // type nobody wrote down: a definition of that name in the caller's file or
                // in what it imports is a fair guess, one elsewhere is mostly a different
                // method of the same name (`entries.clear()` is not `Cache::clear`). Where
                // the directory is the unit of code (a Go package, a Java package, a C or
                // C++ module beside its header), the directory counts as imported.
                let on_value = of_type.is_empty()
                    && typed.is_none()
                    && match &receiver {
                        Receiver::Expression => true,
                        Receiver::Named(r) => !r.contains("::"),
                        Receiver::None | Receiver::SelfType => false,
                    };
                // Java and C# code calls a static method on its type, not on a value
                // (`list.add(x)` is not `ArrayUtils.add`).
                let instance_only: Vec<u32>;
                let cands: &[u32] = if on_value && bare_call_is_own(f.language) {
                    instance_only = cands
                        .iter()
                        .copied()
                        .filter(|&n| {
                            let (gi, si) = nodes[n as usize];
                            let s = &files[gi as usize].symbols[si as usize];
                            !(s.kind == SymbolKind::Method
                                && s.label.split_whitespace().any(|w| w == "static"))
                        })
                        .collect();
                    if instance_only.is_empty() {
                        outside(&mut external);
                        continue;
                    }
                    &instance_only
                } else {
                    &cands
                };
                // Swift never imports a file: every file of a module sees every other.
                let reach = if !on_value || f.language == Language::Swift {
                    CONFIDENCE.len()
                } else if directory_is_unit(f.language) {
                    4
                } else {
                    3
                };
                let cands: &[u32] = if of_type.is_empty() { cands } else { &of_type };
                // A call does not reach the definition it is written in by its own name unless
                // it is a plain recursive call: `self.file.close()` in `close` is another
                // `close`.
                let plain =
                    matches!(receiver, Receiver::None | Receiver::SelfType) || !of_type.is_empty();
                // A call through a module path (`task::spawn_blocking()`) reaches the files of
                // that module as an import would: the path's last module names a directory or
                // file of the candidate (a re-export from `task/mod.rs` is not followed).
                let module = match &receiver {
                    Receiver::Named(r) if r.contains("::") && typed.is_none() => {
                        Some(last_part(r)).filter(|m| !m.is_empty())
                    }
                    _ => None,
                };
                let in_module =
                    |parts: &[String]| module.is_some_and(|m| parts.iter().any(|p| p == m));
                let tier_of = |node: u32, is_imported: &mut dyn FnMut(u32) -> bool| -> usize {
                    let (gi, si) = nodes[node as usize];
                    let cand = &files[gi as usize].symbols[si as usize];
                    let same_file = gi as usize == fi;
                    if same_file && receiver == Receiver::SelfType && cand.scope == caller_sym.scope
                    {
                        0
                    } else if same_file {
                        1
                    } else if is_imported(gi) || in_module(&file_parts_of[gi as usize]) {
                        2
                    } else if dir_of(&files[gi as usize].path) == dir || {
                        let target = &file_parts_of[gi as usize];
                        let target_dir = &target[..target.len().saturating_sub(1)];
                        module_dirs.iter().any(|m| suffix_match(m, target_dir))
                    } {
                        3
                    } else {
                        4
                    }
                };
                let mut best = usize::MAX;
                let mut chosen: Vec<u32> = Vec::new();
                for &c in cands {
                    if c == caller && !plain {
                        continue;
                    }
                    let t = tier_of(c, &mut is_imported);
                    if t < best {
                        best = t;
                        chosen.clear();
                    }
                    if t == best {
                        chosen.push(c);
                    }
                }
                // A name the file imports is what the import names: when neither the caller's
                // file nor what it imports (or its module's directory) defines it, the import
                // comes from outside the codebase.
                if imported_name && best >= 4 {
                    outside(&mut external);
                    continue;
                }
                // Out of reach and unique: a guess not worth an edge. Several candidates
                // stay an ambiguous note below, which says what they are.
                if best >= reach && best != usize::MAX && chosen.len() == 1 {
                    let names = untyped.entry(caller).or_default();
                    if !names.contains(&site.name) {
                        names.push(site.name.clone());
                    }
                    continue;
                }
                // `new Ledger(...)` names the class and the constructors it declares alike:
                // the call runs the constructors.
                let construct = constructors(&files, &nodes, &chosen);
                if let Some(ctors) = &construct {
                    chosen.clone_from(ctors);
                }
                let kind_of = |node: u32| {
                    let (gi, si) = nodes[node as usize];
                    match construct {
                        Some(_) => EdgeKind::Construct,
                        None => callee_kind(files[gi as usize].symbols[si as usize].kind)
                            .unwrap_or(EdgeKind::Call),
                    }
                };
                let mut overloaded = chosen.len() > 1 && overloads(&files, &nodes, &chosen);
                // TypeScript's overloads are signatures followed by the one implementation
                // that runs for all of them, written last.
                if overloaded
                    && family(files[nodes[chosen[0] as usize].0 as usize].language)
                        == Language::JavaScript
                {
                    let last = chosen.iter().copied().max_by_key(|&c| {
                        let (gi, si) = nodes[c as usize];
                        files[gi as usize].symbols[si as usize].start_line
                    });
                    chosen = last.into_iter().collect();
                    overloaded = false;
                }
                // Overloads that cannot take as many arguments as the call passes are not it.
                if overloaded && site.args != UNKNOWN_ARGS {
                    let fits: Vec<u32> = chosen
                        .iter()
                        .copied()
                        .filter(|&c| {
                            let (gi, si) = nodes[c as usize];
                            let s = &files[gi as usize].symbols[si as usize];
                            arity(&s.label, &s.name).is_none_or(|a| a.takes(site.args))
                        })
                        .collect();
                    if !fits.is_empty() {
                        overloaded = fits.len() > 1;
                        chosen = fits;
                    }
                }
                // An overload calling another by their shared name (`post(account, amount)`
                // delegating to `post(entry)`) is not also taken for a call of itself.
                if overloaded && chosen.contains(&caller) {
                    chosen.retain(|&c| c != caller);
                }
                match chosen.as_slice() {
                    [] => outside(&mut external),
                    // Several overloads the argument count does not tell apart stay a note:
                    // an edge to each would be wrong for all but one.
                    &[c] => edges.push(Edge {
                        src: caller,
                        dst: c,
                        kind: kind_of(c),
                        line: site.line,
                        confidence: CONFIDENCE[best],
                    }),
                    many => ambiguous.push(Ambiguous {
                        caller,
                        line: site.line,
                        name: site.name.clone(),
                        candidates: many.to_vec(),
                    }),
                }
            }
        }
        let mut out = vec![Vec::new(); nodes.len()];
        let mut into = vec![Vec::new(); nodes.len()];
        for (i, e) in edges.iter().enumerate() {
            out[e.src as usize].push(i as u32);
            into[e.dst as usize].push(i as u32);
        }
        CallGraph {
            files,
            complete,
            nodes,
            by_id,
            edges,
            out,
            into,
            ambiguous,
            external,
            untyped,
        }
    }

    /// Whether every indexed file is in the graph.
    pub fn status(&self) -> GraphStatus {
        if self.complete {
            GraphStatus::Complete
        } else {
            GraphStatus::Partial
        }
    }

    /// The number of resolved edges (for statistics and tests).
    pub fn edge_count(&self) -> usize {
        self.edges.len()
    }

    /// The file a symbol id belongs to, when the graph knows the id.
    pub fn file_of(&self, symbol_id: &str) -> Option<&str> {
        let node = *self.by_id.get(symbol_id)?;
        Some(&self.files[self.nodes[node as usize].0 as usize].path)
    }

    /// The outline the graph holds for a file.
    pub fn symbols_of(&self, file: &str) -> Option<(&[Symbol], Language)> {
        self.files
            .iter()
            .find(|f| f.path == file)
            .map(|f| (f.symbols.as_slice(), f.language))
    }

    fn symbol(&self, node: u32) -> (&FileGraph, &Symbol) {
        let (fi, si) = self.nodes[node as usize];
        let f = &self.files[fi as usize];
        (f, &f.symbols[si as usize])
    }

    fn graph_node(&self, node: u32) -> GraphNode {
        let (f, s) = self.symbol(node);
        GraphNode {
            file: f.path.clone(),
            language: f.language,
            symbol: s.clone(),
        }
    }

    /// The edges around `q.symbol_id`, walking `q.depth` steps in `q.direction`. `None`
    /// when the id is unknown or belongs to another file than `q.file`.
    pub fn query(&self, q: &GraphQuery) -> Option<GraphView> {
        let start = *self.by_id.get(&q.symbol_id)?;
        if self.symbol(start).0.path != q.file {
            return None;
        }
        let depth = q.depth.clamp(1, 3);
        let limit = q.limit.max(1);
        let mut seen_nodes: Vec<u32> = vec![start];
        let mut seen_edges: HashSet<u32> = HashSet::new();
        let mut found: Vec<(u32, u32)> = Vec::new(); // (level, edge)
        let mut truncated = false;
        let walks: &[bool] = match q.direction {
            Direction::Callees => &[true],
            Direction::Callers => &[false],
            Direction::Both => &[true, false],
        };
        for &forward in walks {
            let mut visited: HashSet<u32> = HashSet::from([start]);
            let mut queue: VecDeque<(u32, u32)> = VecDeque::from([(start, 0)]);
            while let Some((node, level)) = queue.pop_front() {
                if level >= depth {
                    continue;
                }
                let list = if forward {
                    &self.out[node as usize]
                } else {
                    &self.into[node as usize]
                };
                let mut list: Vec<u32> = list.clone();
                list.sort_by_key(|&e| (self.edges[e as usize].line, e));
                for e in list {
                    let edge = self.edges[e as usize];
                    let next = if forward { edge.dst } else { edge.src };
                    if !seen_edges.insert(e) {
                        continue;
                    }
                    if found.len() >= limit {
                        truncated = true;
                        break;
                    }
                    found.push((level + 1, e));
                    if !seen_nodes.contains(&next) {
                        seen_nodes.push(next);
                    }
                    if visited.insert(next) {
                        queue.push_back((next, level + 1));
                    }
                }
            }
        }
        found.sort_by(|a, b| {
            let (ea, eb) = (&self.edges[a.1 as usize], &self.edges[b.1 as usize]);
            let (fa, _) = self.symbol(ea.src);
            let (fb, _) = self.symbol(eb.src);
            (a.0, &fa.path, ea.line, a.1).cmp(&(b.0, &fb.path, eb.line, b.1))
        });
        let edges = found
            .iter()
            .map(|&(_, e)| {
                let edge = self.edges[e as usize];
                let (src_file, src) = self.symbol(edge.src);
                let (_, dst) = self.symbol(edge.dst);
                GraphEdge {
                    src: src.id.clone(),
                    dst: dst.id.clone(),
                    kind: edge.kind,
                    site_file: src_file.path.clone(),
                    site_line: edge.line,
                    confidence: edge.confidence,
                }
            })
            .collect();
        let mut notes = self.notes_for(&seen_nodes, q.direction, start);
        if truncated {
            notes.push(format!(
                "Only the first {limit} edges are shown; raise limit or lower depth to see more."
            ));
        }
        let mut others: Vec<GraphNode> = seen_nodes[1..]
            .iter()
            .map(|&n| self.graph_node(n))
            .collect();
        others.sort_by(|a, b| {
            (&a.file, a.symbol.start_line, &a.symbol.label, &a.symbol.id).cmp(&(
                &b.file,
                b.symbol.start_line,
                &b.symbol.label,
                &b.symbol.id,
            ))
        });
        let mut nodes = vec![self.graph_node(start)];
        nodes.extend(others);
        Some(GraphView {
            nodes,
            edges,
            notes,
            truncated,
        })
    }

    /// Notes on what resolution left open around the nodes shown: ambiguous sites in the
    /// callers walked (callees direction) or naming the start symbol (callers direction),
    /// and names called that the codebase does not define.
    fn notes_for(&self, nodes: &[u32], direction: Direction, start: u32) -> Vec<String> {
        let mut notes = Vec::new();
        let callees = matches!(direction, Direction::Callees | Direction::Both);
        let callers = matches!(direction, Direction::Callers | Direction::Both);
        let shown: HashSet<u32> = nodes.iter().copied().collect();
        for a in &self.ambiguous {
            let from_shown = callees && shown.contains(&a.caller);
            let names_start = callers && a.candidates.contains(&start);
            if !(from_shown || names_start) {
                continue;
            }
            let (file, caller) = self.symbol(a.caller);
            let candidates: Vec<String> = a
                .candidates
                .iter()
                .map(|&c| {
                    let (f, s) = self.symbol(c);
                    format!("{} ({}:{})", s.label, f.path, s.start_line)
                })
                .collect();
            notes.push(format!(
                "ambiguous: `{}` called in {} ({}:{}) may be any of {} definitions: {}; no edge drawn.",
                a.name,
                caller.name,
                file.path,
                a.line,
                candidates.len(),
                candidates.join(", ")
            ));
        }
        if callees {
            let listed = |map: &HashMap<u32, Vec<String>>| -> Option<(usize, String)> {
                let mut names: Vec<&str> = nodes
                    .iter()
                    .filter_map(|n| map.get(n))
                    .flatten()
                    .map(String::as_str)
                    .collect();
                names.sort_unstable();
                names.dedup();
                if names.is_empty() {
                    return None;
                }
                let shown: Vec<&str> = names.iter().take(NOTE_NAMES).copied().collect();
                let more = names.len().saturating_sub(NOTE_NAMES);
                let tail = if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                };
                Some((names.len(), format!("{}{tail}", shown.join(", "))))
            };
            if let Some((n, names)) = listed(&self.external) {
                notes.push(format!(
                    "unresolved: {n} called name(s) are defined outside the codebase (library or built-in): {names}."
                ));
            }
            if let Some((n, names)) = listed(&self.untyped) {
                notes.push(format!(
                    "unresolved: {n} method(s) called on values of unknown type are defined only outside the caller's file, imports and package, so no edge is drawn: {names}."
                ));
            }
        }
        notes.sort();
        // Two calls of one name on one line read the same.
        notes.dedup();
        notes
    }
}

/// Several candidates that are overloads of one method: same file, same scope, same name.
fn overloads(files: &[FileGraph], nodes: &[(u32, u32)], cands: &[u32]) -> bool {
    let sym = |n: u32| {
        let (fi, si) = nodes[n as usize];
        (fi, &files[fi as usize].symbols[si as usize])
    };
    let (f0, s0) = sym(cands[0]);
    cands[1..].iter().all(|&c| {
        let (f, s) = sym(c);
        f == f0 && s.scope == s0.scope && s.name == s0.name && s.kind == s0.kind
    })
}

/// When `cands` are one class (or struct) and constructors it declares (named after it, as
/// in Java, C#, C++, Kotlin), the constructors. C++ defines them in another file than the
/// class, under the same scope.
fn constructors(files: &[FileGraph], nodes: &[(u32, u32)], cands: &[u32]) -> Option<Vec<u32>> {
    let sym = |n: u32| {
        let (fi, si) = nodes[n as usize];
        &files[fi as usize].symbols[si as usize]
    };
    let mut classes = cands
        .iter()
        .filter(|&&c| matches!(sym(c).kind, SymbolKind::Class | SymbolKind::Struct));
    let (Some(&class), None) = (classes.next(), classes.next()) else {
        return None;
    };
    let class_sym = sym(class);
    let ctors: Vec<u32> = cands.iter().copied().filter(|&c| c != class).collect();
    let declared = |c: u32| {
        let s = sym(c);
        s.kind == SymbolKind::Constructor
            && s.scope.len() == class_sym.scope.len() + 1
            && s.scope.starts_with(&class_sym.scope)
            && s.scope.last() == Some(&class_sym.name)
    };
    (!ctors.is_empty() && ctors.iter().all(|&c| declared(c))).then_some(ctors)
}

/// The innermost callable definition whose span holds `line`; else the innermost definition
/// of any kind (a class body's call), else `None` (code at the top of a file).
fn enclosing(symbols: &[Symbol], line: u32) -> Option<usize> {
    let holds = |s: &Symbol| s.start_line <= line && line <= s.end_line;
    let innermost = |pred: &dyn Fn(&Symbol) -> bool| {
        symbols
            .iter()
            .enumerate()
            .filter(|(_, s)| holds(s) && pred(s))
            .max_by_key(|(i, s)| (s.start_line, std::cmp::Reverse(s.end_line), *i))
            .map(|(i, _)| i)
    };
    innermost(&|s| is_caller(s.kind)).or_else(|| innermost(&|s| s.kind != SymbolKind::Section))
}
