//! Turns the stored definitions and call sites of every file into edges (`query.rs` walks
//! them).
//!
//! A call names a definition only by its name, so resolution ranks the definitions of that
//! name by where they live relative to the call: the caller's own type (a `self.f()` call),
//! the caller's file, a file the caller imports, the caller's directory, anywhere. The best
//! tier wins when it holds one definition; several overloads of one method all get an edge;
//! anything else is ambiguous and becomes a note instead of a guess. A call on a named type
//! (`Ledger::new()`) only considers that type's definitions, and a call on a type the
//! codebase does not define (`Vec::new()`) is a library call.
//!
//! A common name (`new`, `fmt`, `clone`) has thousands of definitions in a large codebase,
//! and most calls of it filter them alike: those candidate lists are built once per name
//! ([`SharedCands`], with the candidates by scope type and by file), and each file's nearby
//! files once per file ([`near_files`]), so a call looks up the files near it instead of
//! ranking every definition of its name. The answers are the ones the plain walk gives.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;

use super::{CallSite, FileGraph, GraphFile, Import, Receiver, UNKNOWN_ARGS};
use crate::lang::{ImportReach, Language, Resolution, WrittenImport};
use crate::symbol::{Symbol, SymbolKind};

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
/// A resolved edge between two symbols (indices into [`CallGraph`]'s node list).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Edge {
    pub src: u32,
    pub dst: u32,
    pub kind: EdgeKind,
    /// The file of the call site (the caller's file) and its line.
    pub line: u32,
    pub confidence: f32,
}

/// A call site that named several definitions that resolution could not tell apart.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Ambiguous {
    pub caller: u32,
    pub line: u32,
    pub name: String,
    /// Shared with the other calls of the name when it is every definition of it.
    pub candidates: Arc<[u32]>,
}

/// The resolved graph of a generation.
pub struct CallGraph {
    pub(super) files: Vec<FileGraph>,
    pub(super) complete: bool,
    /// (file index, symbol index) of each node; a node is a definition.
    pub(super) nodes: Vec<(u32, u32)>,
    pub(super) by_id: HashMap<String, u32>,
    pub(super) edges: Vec<Edge>,
    pub(super) out: Vec<Vec<u32>>,
    pub(super) into: Vec<Vec<u32>>,
    pub(super) ambiguous: Vec<Ambiguous>,
    /// Indices into `ambiguous` by caller node, and by the name called (every candidate of
    /// a site has the name it called): what a query's notes look up instead of scanning
    /// every ambiguous site of a large codebase.
    pub(super) ambiguous_by_caller: HashMap<u32, Vec<u32>>,
    pub(super) ambiguous_by_name: HashMap<String, Vec<u32>>,
    /// Per caller node: the names it calls that nothing in the codebase defines.
    pub(super) external: HashMap<u32, Vec<String>>,
    /// Per caller node: methods it calls on values of unknown type whose only definitions
    /// are out of reach (see `Call::narrow`).
    pub(super) untyped: HashMap<u32, Vec<String>>,
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

/// The parts of a path without its extension: `src/orders/service.py` → `src orders service`.
/// A directory's module file stands for the directory, since that is what imports name:
/// `mod orders;` and `use orders::X` reach `src/orders/mod.rs` → `src orders`.
pub(super) fn file_parts(path: &str) -> Vec<String> {
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

/// A receiver written as a type: a capitalised name alone or at the end of a `::` or `\`
/// path (`Vec::new()`, `Math.max()`, `std::collections::HashMap::new()`), as opposed to a
/// value (`ledger.post()`, `self.entries.push()`); or, where the language says only
/// keywords are types ([`Resolution::type_keywords`]), one of them.
fn written_type<'r>(rules: &Resolution, receiver: &'r Receiver) -> Option<&'r str> {
    let Receiver::Named(r) = receiver else {
        return None;
    };
    if let Some(keywords) = rules.type_keywords {
        return keywords.contains(&r.as_str()).then_some(r.as_str());
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

/// Whether one part list ends with the other (the shorter one, at least one part long).
fn suffix_match(a: &[String], b: &[String]) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    !short.is_empty() && long.ends_with(short)
}

fn dir_of(path: &str) -> &str {
    path.rsplit_once('/').map(|(d, _)| d).unwrap_or("")
}

/// The tier of a definition in the caller's own type, of one in its file, one in a file it
/// imports, one in its directory, one anywhere: indices into [`CONFIDENCE`].
const OWN_TYPE: usize = 0;
const SAME_FILE: usize = 1;
const IMPORTED: usize = 2;
const SAME_DIR: usize = 3;
const ANYWHERE: usize = 4;

/// Every definition of a codebase, indexed for resolution.
struct Definitions<'a> {
    files: &'a [FileGraph],
    /// The node of each file's first symbol.
    offsets: Vec<u32>,
    /// (file index, symbol index) of each node.
    nodes: Vec<(u32, u32)>,
    by_id: HashMap<String, u32>,
    /// The definitions a call can reach, by name.
    by_name: HashMap<&'a str, Vec<u32>>,
    /// Each file's path parts ([`file_parts`]).
    file_parts: Vec<Vec<String>>,
    /// Every name a receiver could write for a type of the codebase: definitions' names
    /// and the types of scopes (a Go method's receiver type has no definition of its own
    /// when it is declared elsewhere).
    type_names: HashSet<&'a str>,
}

/// The files of a codebase by what imports and directories match on, for listing the files
/// an import names or a caller is near ([`imported_files`], [`near_files`]) without
/// comparing it with every file.
pub(super) struct FileIndex<'d> {
    /// Each file's path parts ([`file_parts`]).
    parts: &'d [Vec<String>],
    /// Each file's directory.
    dirs: Vec<&'d str>,
    by_dir: HashMap<&'d str, Vec<u32>>,
    /// Files by the last of their path parts.
    by_last: HashMap<&'d str, Vec<u32>>,
    /// Files by the part before the last (their directory's name).
    by_parent: HashMap<&'d str, Vec<u32>>,
    /// Files by every part of their path.
    by_part: HashMap<&'d str, Vec<u32>>,
}

impl<'d> FileIndex<'d> {
    /// The index of `files`, whose path parts are `parts`.
    pub(super) fn of(files: &'d [FileGraph], parts: &'d [Vec<String>]) -> FileIndex<'d> {
        let mut ix = FileIndex {
            parts,
            dirs: files.iter().map(|f| dir_of(&f.path)).collect(),
            by_dir: HashMap::new(),
            by_last: HashMap::new(),
            by_parent: HashMap::new(),
            by_part: HashMap::new(),
        };
        for (gi, p) in parts.iter().enumerate() {
            let g = gi as u32;
            ix.by_dir.entry(ix.dirs[gi]).or_default().push(g);
            if let Some(last) = p.last() {
                ix.by_last.entry(last.as_str()).or_default().push(g);
            }
            if p.len() > 1 {
                ix.by_parent
                    .entry(p[p.len() - 2].as_str())
                    .or_default()
                    .push(g);
            }
            let mut seen: Vec<&str> = Vec::new();
            for part in p {
                if !seen.contains(&part.as_str()) {
                    seen.push(part);
                    ix.by_part.entry(part.as_str()).or_default().push(g);
                }
            }
        }
        ix
    }

    fn get<'m>(map: &'m HashMap<&'d str, Vec<u32>>, key: &str) -> &'m [u32] {
        map.get(key).map_or(&[], Vec::as_slice)
    }
}

/// The files other than `fi` that its imports name ([`FileImports::imports`]), in file
/// order. Each import is matched against the files whose last path parts could satisfy it
/// (an import's last part names the file or its directory), then checked as resolution
/// checks it.
pub(super) fn imported_files(files: &FileIndex, fi: usize, imports: &mut FileImports) -> Vec<u32> {
    let mut maybe: Vec<u32> = Vec::new();
    for (target, whole_dir) in &imports.reach.targets {
        if let Some(last) = target.last() {
            maybe.extend_from_slice(FileIndex::get(&files.by_last, last));
            if *whole_dir {
                maybe.extend_from_slice(FileIndex::get(&files.by_parent, last));
            }
        }
        if target.len() > 1 {
            maybe.extend_from_slice(FileIndex::get(&files.by_last, &target[target.len() - 2]));
        }
    }
    maybe.sort_unstable();
    maybe.dedup();
    maybe.retain(|&g| g as usize != fi && imports.imports(g as usize, &files.parts[g as usize]));
    maybe
}

/// The files other than `fi` that a call in `fi` reaches at the imported tier (its imports
/// name them) or the directory tier (same directory, or a directory its imports make as near
/// as its own), with that tier: what [`Call::tier`] says of each of them, for the files it
/// would not say `ANYWHERE` of.
fn near_files(files: &FileIndex, fi: usize, imports: &mut FileImports) -> HashMap<u32, usize> {
    let mut near: HashMap<u32, usize> = imported_files(files, fi, imports)
        .into_iter()
        .map(|g| (g, IMPORTED))
        .collect();
    let in_module_dirs = imports.reach.module_dirs.iter().flat_map(|m| {
        m.last()
            .map_or(&[][..], |last| FileIndex::get(&files.by_parent, last))
            .iter()
            .copied()
            .filter(|&g| imports.in_module_dir(&files.parts[g as usize]))
    });
    let dir_mates = FileIndex::get(&files.by_dir, files.dirs[fi])
        .iter()
        .copied();
    for g in dir_mates.chain(in_module_dirs).collect::<Vec<u32>>() {
        if g as usize != fi {
            near.entry(g).or_insert(SAME_DIR);
        }
    }
    near
}

/// Every definition of one name that a call may run, for the calls that filter them alike
/// ([`Call::shares_candidates`]), with the lookups `narrow` and `nearest` make in them.
struct SharedCands<'a> {
    nodes: Arc<[u32]>,
    /// The nodes with a type of this name in their scope (`last_part(scope_type(p))`), in
    /// node order.
    by_type: HashMap<&'a str, Vec<u32>>,
    /// Each file's nodes, in node order.
    by_file: HashMap<u32, Vec<u32>>,
    /// What `settle` asks of all the nodes at once, computed the first time it does.
    whole: std::cell::OnceCell<(Option<Vec<u32>>, bool)>,
    /// The nodes that are not static methods, for a Java or C# call on a value (`None`:
    /// there are none), listed the first time such a call asks.
    non_static: std::cell::OnceCell<Option<Rc<SharedCands<'a>>>>,
}

impl<'a> SharedCands<'a> {
    fn of(defs: &Definitions<'a>, nodes: Vec<u32>) -> SharedCands<'a> {
        let mut by_type: HashMap<&'a str, Vec<u32>> = HashMap::new();
        let mut by_file: HashMap<u32, Vec<u32>> = HashMap::new();
        for &n in &nodes {
            let (gi, sym) = defs.symbol(n);
            by_file.entry(gi as u32).or_default().push(n);
            for p in &sym.scope {
                let list = by_type.entry(last_part(scope_type(p))).or_default();
                if list.last() != Some(&n) {
                    list.push(n);
                }
            }
        }
        SharedCands {
            nodes: nodes.into(),
            by_type,
            by_file,
            whole: std::cell::OnceCell::new(),
            non_static: std::cell::OnceCell::new(),
        }
    }

    /// The nodes that are not static methods, shared like these.
    fn non_static(&self, defs: &Definitions<'a>) -> Option<Rc<SharedCands<'a>>> {
        self.non_static
            .get_or_init(|| {
                let kept = not_static(defs, &self.nodes);
                (!kept.is_empty()).then(|| Rc::new(SharedCands::of(defs, kept)))
            })
            .clone()
    }
}

/// The nodes that are not static methods: Java and C# code calls a static method on its
/// type, not on a value (`list.add(x)` is not `ArrayUtils.add`).
fn not_static(defs: &Definitions, nodes: &[u32]) -> Vec<u32> {
    nodes
        .iter()
        .copied()
        .filter(|&n| {
            let s = defs.symbol(n).1;
            !(s.kind == SymbolKind::Method && s.label.split_whitespace().any(|w| w == "static"))
        })
        .collect()
}

/// Candidate lists shared between calls, by name, caller family and whether a bare call
/// leaves methods out.
type SharedKey<'a> = (&'a str, Language, bool);

/// At least this many candidates take the lookup path of [`Call::nearest`]; fewer are
/// ranked one by one, which costs less than the lookups.
const SHARED_MIN: usize = 16;

impl<'a> Definitions<'a> {
    /// Step 1 of [`CallGraph::build`]: every symbol becomes a node, and the callable ones
    /// are listed by name.
    fn index(files: &'a [FileGraph]) -> Definitions<'a> {
        let mut defs = Definitions {
            files,
            offsets: Vec::with_capacity(files.len()),
            nodes: Vec::new(),
            by_id: HashMap::new(),
            by_name: HashMap::new(),
            file_parts: files.iter().map(|f| file_parts(&f.path)).collect(),
            type_names: HashSet::new(),
        };
        for (fi, f) in files.iter().enumerate() {
            defs.offsets.push(defs.nodes.len() as u32);
            for (si, s) in f.symbols.iter().enumerate() {
                let node = defs.nodes.len() as u32;
                defs.nodes.push((fi as u32, si as u32));
                defs.by_id.insert(s.id.clone(), node);
                if callee_kind(s.kind).is_some() {
                    defs.by_name.entry(s.name.as_str()).or_default().push(node);
                }
                defs.type_names.insert(last_part(&s.name));
                for part in &s.scope {
                    defs.type_names.insert(last_part(scope_type(part)));
                }
            }
        }
        defs
    }

    /// The file index and the symbol of a node.
    fn symbol(&self, node: u32) -> (usize, &'a Symbol) {
        let (fi, si) = self.nodes[node as usize];
        let files: &'a [FileGraph] = self.files;
        (fi as usize, &files[fi as usize].symbols[si as usize])
    }

    /// Several candidates that are overloads of one method: same file, same scope, same
    /// name.
    fn overloads(&self, cands: &[u32]) -> bool {
        let (f0, s0) = self.symbol(cands[0]);
        cands[1..].iter().all(|&c| {
            let (f, s) = self.symbol(c);
            f == f0 && s.scope == s0.scope && s.name == s0.name && s.kind == s0.kind
        })
    }

    /// When `cands` are one class (or struct) and constructors it declares (named after it,
    /// as in Java, C#, C++, Kotlin), the constructors. C++ defines them in another file than
    /// the class, under the same scope.
    fn constructors(&self, cands: &[u32]) -> Option<Vec<u32>> {
        let sym = |n: u32| self.symbol(n).1;
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
}

/// What the imports of one file reach, and which files they import (decided lazily, per
/// candidate file).
pub(super) struct FileImports<'a> {
    pub(super) reach: ImportReach<'a>,
    imported: HashMap<u32, bool>,
}

impl<'a> FileImports<'a> {
    /// Step 2 of [`CallGraph::build`]: the files and directories each import of `f` names,
    /// widened by its language's `ImportExpansion`. A grouped import names its files after
    /// the path: `from ledger import book`, `import acme.ledger.{Entry, Ledger}`, `use
    /// crate::ledger::{book::Ledger}` (`from . import book` has no path: the directory tier
    /// finds its file); a wildcard (`a.b.*`) names a directory.
    pub(super) fn expand(f: &'a FileGraph) -> FileImports<'a> {
        let rules = &f.language.spec().resolution.imports;
        let mut reach = ImportReach::default();
        let mut written = Vec::new();
        for i in &f.refs.imports {
            let whole_dir = rules.names_directory || i.path.ends_with('*');
            let raw = import_parts(i);
            let parts: Vec<String> = match rules.part {
                Some(part) => raw.iter().map(|p| part(p)).collect(),
                None => raw.clone(),
            };
            for name in &i.names {
                if !parts.is_empty() && !parts.contains(name) {
                    let mut named = parts.clone();
                    named.push(name.clone());
                    reach.targets.push((named, false));
                }
            }
            reach.targets.push((parts, whole_dir));
            if rules.expand.is_some() {
                written.push(WrittenImport {
                    path: &i.path,
                    names: &i.names,
                    parts: raw,
                });
            }
        }
        if let Some(expand) = rules.expand {
            expand(&written, &mut reach);
        }
        FileImports {
            reach,
            imported: HashMap::new(),
        }
    }

    /// Whether the file imports file `gi`, whose path parts are `target`.
    pub(super) fn imports(&mut self, gi: usize, target: &[String]) -> bool {
        let targets = &self.reach.targets;
        *self.imported.entry(gi as u32).or_insert_with(|| {
            let target_dir = &target[..target.len().saturating_sub(1)];
            targets.iter().any(|(parts, whole_dir)| {
                suffix_match(parts, target)
                    || (parts.len() > 1 && suffix_match(&parts[..parts.len() - 1], target))
                    || (*whole_dir && suffix_match(parts, target_dir))
            })
        })
    }

    /// Whether a file whose path parts are `target` lies in a directory that counts as near
    /// as the caller's own ([`ImportReach::module_dirs`]).
    fn in_module_dir(&self, target: &[String]) -> bool {
        let target_dir = &target[..target.len().saturating_sub(1)];
        self.reach
            .module_dirs
            .iter()
            .any(|m| suffix_match(m, target_dir))
    }
}

/// What resolution found, before the edges are linked.
#[derive(Default)]
struct Resolved {
    edges: Vec<Edge>,
    ambiguous: Vec<Ambiguous>,
    external: HashMap<u32, Vec<String>>,
    untyped: HashMap<u32, Vec<String>>,
}

/// Adds `name` to the names `caller` calls in `map`, once.
fn note_name(map: &mut HashMap<u32, Vec<String>>, caller: u32, name: &str) {
    let names = map.entry(caller).or_default();
    if !names.iter().any(|n| n == name) {
        names.push(name.to_owned());
    }
}

/// One call site, read: who calls, on what, and what the caller's language says of it.
struct Call<'a> {
    site: &'a CallSite,
    /// The caller's file.
    fi: usize,
    language: Language,
    rules: &'static Resolution,
    caller: u32,
    caller_sym: &'a Symbol,
    /// `parent::f()`, `super.f()`: a call of the parent type's `f`, never the caller's own
    /// type's.
    to_parent: bool,
    receiver: Receiver,
    /// A bare call where the caller's own type holds the methods it may run.
    own_bare: bool,
    /// The words of the declaration of the caller's type (`class QuotedCsv extends Csv`),
    /// which name its parents (read for parent and own-type calls only).
    parents: HashSet<&'a str>,
}

/// Candidates of a call: its own list, or the list it shares with the calls of its name.
enum Cands<'a> {
    Own(Vec<u32>),
    Shared(Rc<SharedCands<'a>>),
}

impl Cands<'_> {
    fn nodes(&self) -> &[u32] {
        match self {
            Cands::Own(v) => v,
            Cands::Shared(s) => &s.nodes,
        }
    }
}

/// The definitions a call may run, once narrowed by what its receiver says.
struct Narrowed<'a> {
    cands: Cands<'a>,
    /// The candidates are the named type's own (`Ledger::new()`).
    of_type: bool,
    /// The name is one the file imports by name.
    imported_name: bool,
    /// The highest tier the call reaches: a method called on a value of unknown type only
    /// reaches what the caller can see.
    reach: usize,
    /// A call through a module path reaches the files of that module (`task::spawn()`).
    module: Option<String>,
}

impl<'a> Call<'a> {
    /// The call at `site`, made in the `caller_si`-th symbol of file `fi`.
    fn read(defs: &Definitions<'a>, fi: usize, caller_si: usize, site: &'a CallSite) -> Self {
        let f = &defs.files[fi];
        let rules = &f.language.spec().resolution;
        let caller_sym = &f.symbols[caller_si];
        let to_parent = matches!(&site.receiver, Receiver::Named(r) if r == "super");
        let receiver = match &site.receiver {
            // A Rust `super::f()` is a path to the parent module.
            _ if to_parent && rules.super_is_module => Receiver::None,
            _ if to_parent => Receiver::SelfType,
            r => r.clone(),
        };
        let own_bare = rules.bare_calls_are_own && receiver == Receiver::None;
        let parents = if to_parent || own_bare {
            declaration_words(&f.symbols, caller_sym)
        } else {
            HashSet::new()
        };
        Call {
            site,
            fi,
            language: f.language,
            rules,
            caller: defs.offsets[fi] + caller_si as u32,
            caller_sym,
            to_parent,
            receiver,
            own_bare,
            parents,
        }
    }

    /// Whether the innermost type of a scope is one of the caller's type's parents.
    fn is_parent(&self, scope: &[String]) -> bool {
        scope
            .last()
            .is_some_and(|t| self.parents.contains(last_part(scope_type(t))))
    }

    /// Whether [`Call::candidates`] depends only on the called name, the caller's family and
    /// whether the call is bare: not a parent call, not a bare call of the caller's own
    /// type (both read the caller's scope or imports).
    fn shares_candidates(&self) -> bool {
        !self.to_parent && !self.own_bare
    }

    /// [`Call::candidates`] for a call that [shares them](Call::shares_candidates), built
    /// the first time its name, family and bareness are called.
    fn shared_candidates(
        &self,
        defs: &Definitions<'a>,
        imports: &mut FileImports,
        memo: &mut HashMap<SharedKey<'a>, Rc<SharedCands<'a>>>,
    ) -> Rc<SharedCands<'a>> {
        let bare_function = self.rules.bare_calls_are_functions && self.receiver == Receiver::None;
        let key = (
            self.site.name.as_str(),
            self.language.family(),
            bare_function,
        );
        if let Some(found) = memo.get(&key) {
            return Rc::clone(found);
        }
        let shared = Rc::new(SharedCands::of(defs, self.candidates(defs, imports)));
        memo.insert(key, Rc::clone(&shared));
        shared
    }

    /// The definitions of the called name this call could run at all. Only code of the
    /// caller's runtime can be called by name: a Python `get()` never runs a TypeScript
    /// method.
    fn candidates(&self, defs: &Definitions, imports: &mut FileImports) -> Vec<u32> {
        let name = self.site.name.as_str();
        let bare_function = self.rules.bare_calls_are_functions && self.receiver == Receiver::None;
        let family = self.language.family();
        defs.by_name
            .get(name)
            .into_iter()
            .flatten()
            .copied()
            .filter(|&n| {
                let (gi, cand) = defs.symbol(n);
                let method = cand.kind == SymbolKind::Method;
                defs.files[gi].language.family() == family
                    && !(self.to_parent
                        && !self.rules.super_is_module
                        && cand.scope == self.caller_sym.scope)
                    && !(bare_function && method)
                    // A bare Java or C# call runs a method of the caller's own type, of the
                    // types it extends, or one imported statically.
                    && !(self.own_bare
                        && method
                        && gi != self.fi
                        && !(imports.reach.bound.contains(name)
                            && imports.imports(gi, &defs.file_parts[gi]))
                        && !self.is_parent(&cand.scope))
            })
            .collect()
    }

    /// Narrows `cands` by the receiver: `None` when the call is a library call after all.
    fn narrow(
        &self,
        defs: &Definitions<'a>,
        imports: &FileImports,
        cands: Cands<'a>,
    ) -> Option<Narrowed<'a>> {
        let receiver = &self.receiver;
        // A call on a type the codebase does not define (`Vec::new()`, `Math.max()`) is a
        // library call, whatever the codebase defines under that name.
        let typed = written_type(self.rules, receiver);
        if typed.is_some_and(|t| !defs.type_names.contains(t)) {
            return None;
        }
        // The first part of a path, which an import may have bound; a path from the
        // standard library (`std::thread::scope()`) never reaches the codebase.
        let head = match (receiver, self.rules.path_separator) {
            (Receiver::Named(r), Some(sep)) => r.split(sep).next().filter(|h| !h.is_empty()),
            (Receiver::None, Some(_)) => Some(self.site.name.as_str()),
            _ => None,
        };
        if head
            .is_some_and(|h| self.rules.library_roots.contains(&h) && *receiver != Receiver::None)
        {
            return None;
        }
        let imported_name = head.is_some_and(|h| imports.reach.bound.contains(h));
        // A call on a named type (`Ledger::new()`, `Ledger.open()`) reaches that type's
        // definitions when it has any by that name; a parent call, the parent type's (the
        // one the caller's type declaration names).
        let of_type: Vec<u32> = if self.to_parent && !self.parents.is_empty() {
            cands
                .nodes()
                .iter()
                .copied()
                .filter(|&n| self.is_parent(&defs.symbol(n).1.scope))
                .collect()
        } else if let Receiver::Named(r) = receiver {
            let written = last_part(r);
            match &cands {
                Cands::Shared(shared) => shared.by_type.get(written).cloned().unwrap_or_default(),
                Cands::Own(own) => own
                    .iter()
                    .copied()
                    .filter(|&n| {
                        let scope = &defs.symbol(n).1.scope;
                        scope.iter().any(|p| last_part(scope_type(p)) == written)
                    })
                    .collect(),
            }
        } else {
            Vec::new()
        };
        // A type the codebase defines, called for a member it does not define there
        // (`Vec::new()` where the codebase only implements a trait for `Vec`): the member
        // comes from outside, a trait's default or a derive.
        if typed.is_some() && of_type.is_empty() {
            return None;
        }
        // A method called on a value (`ledger.post()`, `make().post()`) belongs to a type
        // nobody wrote down: a definition of that name in the caller's file or in what it
        // imports is a fair guess, one elsewhere is mostly a different method of the same
        // name (`entries.clear()` is not `Cache::clear`). Where the directory is the unit
        // of code (a Go package, a Java package, a C or C++ module beside its header), the
        // directory counts as imported.
        let on_value = of_type.is_empty()
            && typed.is_none()
            && match receiver {
                Receiver::Expression => true,
                Receiver::Named(r) => !r.contains("::"),
                Receiver::None | Receiver::SelfType => false,
            };
        let mut cands = cands;
        if on_value && self.rules.bare_calls_are_own {
            cands = match cands {
                Cands::Shared(shared) => Cands::Shared(shared.non_static(defs)?),
                Cands::Own(own) => Cands::Own(not_static(defs, &own)),
            };
            if cands.nodes().is_empty() {
                return None;
            }
        }
        let reach = if !on_value || self.rules.whole_module_visible {
            CONFIDENCE.len()
        } else if self.rules.directory_is_unit {
            ANYWHERE
        } else {
            SAME_DIR
        };
        // A call through a module path (`task::spawn_blocking()`) reaches the files of that
        // module as an import would: the path's last module names a directory or file of the
        // candidate (a re-export from `task/mod.rs` is not followed).
        let module = match receiver {
            Receiver::Named(r) if r.contains("::") && typed.is_none() => {
                Some(last_part(r).to_owned()).filter(|m| !m.is_empty())
            }
            _ => None,
        };
        let of_type_found = !of_type.is_empty();
        Some(Narrowed {
            cands: if of_type_found {
                Cands::Own(of_type)
            } else {
                cands
            },
            of_type: of_type_found,
            imported_name,
            reach,
            module,
        })
    }

    /// The tier of candidate `node` for this call.
    fn tier(
        &self,
        defs: &Definitions,
        imports: &mut FileImports,
        module: Option<&str>,
        node: u32,
    ) -> usize {
        let (gi, cand) = defs.symbol(node);
        let target = &defs.file_parts[gi];
        let same_file = gi == self.fi;
        if same_file && self.receiver == Receiver::SelfType && cand.scope == self.caller_sym.scope {
            OWN_TYPE
        } else if same_file {
            SAME_FILE
        } else if imports.imports(gi, target)
            || module.is_some_and(|m| target.iter().any(|p| p == m))
        {
            IMPORTED
        } else if dir_of(&defs.files[gi].path) == dir_of(&defs.files[self.fi].path)
            || imports.in_module_dir(target)
        {
            SAME_DIR
        } else {
            ANYWHERE
        }
    }

    /// The candidates of the best tier, and that tier (`usize::MAX` when none is left), and
    /// whether they are every shared candidate of the name. A call does not reach the
    /// definition it is written in by its own name unless it is a plain recursive call:
    /// `self.file.close()` in `close` is another `close`.
    fn nearest(
        &self,
        defs: &Definitions,
        imports: &mut FileImports,
        memo: &mut Memo,
        narrowed: &Narrowed,
    ) -> (usize, Vec<u32>, bool) {
        let plain =
            matches!(self.receiver, Receiver::None | Receiver::SelfType) || narrowed.of_type;
        let mut best = usize::MAX;
        let mut chosen: Vec<u32> = Vec::new();
        // Keeps the candidates of the best tier seen so far.
        let take = |best: &mut usize, chosen: &mut Vec<u32>, t: usize, nodes: &[u32]| {
            for &c in nodes {
                if c == self.caller && !plain {
                    continue;
                }
                if t < *best {
                    *best = t;
                    chosen.clear();
                }
                if t == *best {
                    chosen.push(c);
                }
            }
        };
        let module = narrowed.module.as_deref();
        let shared = match &narrowed.cands {
            Cands::Shared(shared) if shared.nodes.len() >= memo.shared_min => shared,
            cands => {
                for &c in cands.nodes() {
                    take(
                        &mut best,
                        &mut chosen,
                        self.tier(defs, imports, module, c),
                        &[c],
                    );
                }
                return (best, chosen, false);
            }
        };
        // The same tiers as `tier`, looked up by file: the caller's file, then the files near
        // it, and only when none of them defines the name, every candidate.
        for &c in shared.by_file.get(&(self.fi as u32)).into_iter().flatten() {
            let same_type = self.receiver == Receiver::SelfType
                && defs.symbol(c).1.scope == self.caller_sym.scope;
            let t = if same_type { OWN_TYPE } else { SAME_FILE };
            take(&mut best, &mut chosen, t, &[c]);
        }
        if best > SAME_FILE {
            let files = &memo.files;
            let nearby = memo.near.of(files, self.fi, imports);
            let module_files = module.map_or(&[][..], |m| FileIndex::get(&files.by_part, m));
            if nearby.len() + module_files.len() < shared.by_file.len() {
                // A file both near and on the module path is taken twice, at the better tier
                // the second time.
                for (&g, &t) in nearby {
                    if let Some(nodes) = shared.by_file.get(&g) {
                        take(&mut best, &mut chosen, t, nodes);
                    }
                }
                for &g in module_files {
                    if g as usize != self.fi
                        && let Some(nodes) = shared.by_file.get(&g)
                    {
                        take(&mut best, &mut chosen, IMPORTED, nodes);
                    }
                }
            } else {
                for (&g, nodes) in &shared.by_file {
                    let on_module_path =
                        module.is_some_and(|m| files.parts[g as usize].iter().any(|p| p == m));
                    let t = match nearby.get(&g) {
                        _ if g as usize == self.fi => None,
                        _ if on_module_path => Some(IMPORTED),
                        t => t.copied(),
                    };
                    if let Some(t) = t {
                        take(&mut best, &mut chosen, t, nodes);
                    }
                }
            }
            // Files were visited in no particular order, some twice: the walk over the
            // candidates lists each once, in node order.
            chosen.sort_unstable();
            chosen.dedup();
        }
        if best == usize::MAX {
            take(&mut best, &mut chosen, ANYWHERE, &shared.nodes);
            let whole = chosen.len() == shared.nodes.len();
            return (best, chosen, whole);
        }
        (best, chosen, false)
    }
}

/// The files near the caller file whose calls are being resolved ([`near_files`]), listed
/// the first time one of its calls needs them.
#[derive(Default)]
struct Near {
    /// The caller file the list is for, and the list.
    current: Option<(usize, HashMap<u32, usize>)>,
}

impl Near {
    /// The files near `fi`, listed unless they are already.
    fn of(
        &mut self,
        files: &FileIndex,
        fi: usize,
        imports: &mut FileImports,
    ) -> &HashMap<u32, usize> {
        if self.current.as_ref().is_none_or(|(f, _)| *f != fi) {
            self.current = Some((fi, near_files(files, fi, imports)));
        }
        &self.current.as_ref().expect("just listed").1
    }
}

/// Step 3 of [`CallGraph::build`]: resolves the call at `site` in file `fi` into an edge, an
/// ambiguous site, or a name called outside the codebase or out of reach.
fn resolve_call<'a>(
    defs: &Definitions<'a>,
    fi: usize,
    imports: &mut FileImports,
    memo: &mut Memo<'a, '_>,
    site: &'a CallSite,
    out: &mut Resolved,
) {
    let Some(caller_si) = enclosing(&defs.files[fi].symbols, site.line) else {
        return;
    };
    let call = Call::read(defs, fi, caller_si, site);
    // `usize::MAX`: no list is shared, every call builds and ranks its own.
    let cands = if call.shares_candidates() && memo.shared_min != usize::MAX {
        Cands::Shared(call.shared_candidates(defs, imports, &mut memo.shared))
    } else {
        Cands::Own(call.candidates(defs, imports))
    };
    let narrowed = match cands.nodes().is_empty() {
        true => None,
        false => call.narrow(defs, imports, cands),
    };
    let Some(narrowed) = narrowed else {
        return note_name(&mut out.external, call.caller, &site.name);
    };
    let (best, chosen, whole) = call.nearest(defs, imports, memo, &narrowed);
    // A name the file imports is what the import names: when neither the caller's file nor
    // what it imports (or its module's directory) defines it, the import comes from outside
    // the codebase.
    if narrowed.imported_name && best >= ANYWHERE {
        return note_name(&mut out.external, call.caller, &site.name);
    }
    // Out of reach and unique: a guess not worth an edge. Several candidates stay an
    // ambiguous note below, which says what they are.
    if best >= narrowed.reach && best != usize::MAX && chosen.len() == 1 {
        return note_name(&mut out.untyped, call.caller, &site.name);
    }
    let whole = match (&narrowed.cands, whole) {
        (Cands::Shared(shared), true) => Some(shared.as_ref()),
        _ => None,
    };
    settle(defs, &call, best, chosen, whole, out);
}

/// What resolution keeps between calls: the candidate lists shared by name, and the files
/// near the caller's file.
struct Memo<'a, 'd> {
    shared: HashMap<SharedKey<'a>, Rc<SharedCands<'a>>>,
    files: FileIndex<'d>,
    near: Near,
    /// Shared lists at least this long are looked up by file ([`SHARED_MIN`]).
    shared_min: usize,
}

/// Step 4 of [`CallGraph::build`]: the edge (or ambiguity) for the candidates of one tier.
/// Constructors stand for their class, overloads are told apart by argument count, and an
/// overload does not call itself.
///
/// `whole` is set when `chosen` is every candidate the name shares with other calls: what
/// is asked of all of them is then answered once for all those calls.
fn settle(
    defs: &Definitions,
    call: &Call,
    best: usize,
    mut chosen: Vec<u32>,
    whole: Option<&SharedCands>,
    out: &mut Resolved,
) {
    let site = call.site;
    let facts = whole.map(|w| {
        w.whole.get_or_init(|| {
            (
                defs.constructors(&w.nodes),
                w.nodes.len() > 1 && defs.overloads(&w.nodes),
            )
        })
    });
    // `new Ledger(...)` names the class and the constructors it declares alike: the call
    // runs the constructors.
    let construct = match facts {
        Some((ctors, _)) => ctors.clone(),
        None => defs.constructors(&chosen),
    };
    if let Some(ctors) = &construct {
        chosen.clone_from(ctors);
    }
    let kind_of = |node: u32| match construct {
        Some(_) => EdgeKind::Construct,
        None => callee_kind(defs.symbol(node).1.kind).unwrap_or(EdgeKind::Call),
    };
    let mut overloaded = chosen.len() > 1
        && match facts {
            Some((None, overloads)) => *overloads,
            _ => defs.overloads(&chosen),
        };
    if overloaded
        && defs.files[defs.symbol(chosen[0]).0]
            .language
            .spec()
            .resolution
            .overloads_share_body
    {
        let last = chosen
            .iter()
            .copied()
            .max_by_key(|&c| defs.symbol(c).1.start_line);
        chosen = last.into_iter().collect();
        overloaded = false;
    }
    // Overloads that cannot take as many arguments as the call passes are not it.
    if overloaded && site.args != UNKNOWN_ARGS {
        let fits: Vec<u32> = chosen
            .iter()
            .copied()
            .filter(|&c| {
                let s = defs.symbol(c).1;
                arity(&s.label, &s.name).is_none_or(|a| a.takes(site.args))
            })
            .collect();
        if !fits.is_empty() {
            overloaded = fits.len() > 1;
            chosen = fits;
        }
    }
    // An overload calling another by their shared name (`post(account, amount)` delegating
    // to `post(entry)`) is not also taken for a call of itself.
    if overloaded && chosen.contains(&call.caller) {
        chosen.retain(|&c| c != call.caller);
    }
    match chosen.as_slice() {
        [] => note_name(&mut out.external, call.caller, &site.name),
        // Several overloads the argument count does not tell apart stay a note: an edge to
        // each would be wrong for all but one.
        &[c] => out.edges.push(Edge {
            src: call.caller,
            dst: c,
            kind: kind_of(c),
            line: site.line,
            confidence: CONFIDENCE[best],
        }),
        many => out.ambiguous.push(Ambiguous {
            caller: call.caller,
            line: site.line,
            name: site.name.clone(),
            // `chosen` only ever loses candidates: as many as the shared list are all of it.
            candidates: match whole {
                Some(w) if many.len() == w.nodes.len() => Arc::clone(&w.nodes),
                _ => many.into(),
            },
        }),
    }
}

impl CallGraph {
    /// Resolves every call site of `graph`: indexes the definitions, then, file by file,
    /// expands the file's imports and resolves each of its calls by tier, and links the
    /// edges found.
    pub fn build(graph: GraphFile) -> CallGraph {
        CallGraph::build_with(graph, SHARED_MIN)
    }

    /// [`CallGraph::build`], looking up by file the shared candidate lists at least
    /// `shared_min` long (the others are ranked one by one); with `usize::MAX`, no list is
    /// shared: each call filters, narrows and ranks every definition of its name itself.
    fn build_with(graph: GraphFile, shared_min: usize) -> CallGraph {
        let complete = graph.complete;
        let files = graph.files;
        let (nodes, by_id, resolved) = {
            let defs = Definitions::index(&files);
            let mut resolved = Resolved::default();
            {
                let mut memo = Memo {
                    shared: HashMap::new(),
                    files: FileIndex::of(&files, &defs.file_parts),
                    near: Near::default(),
                    shared_min,
                };
                for (fi, f) in files.iter().enumerate() {
                    if f.refs.calls.is_empty() {
                        continue;
                    }
                    let mut imports = FileImports::expand(f);
                    for site in &f.refs.calls {
                        resolve_call(&defs, fi, &mut imports, &mut memo, site, &mut resolved);
                    }
                }
            }
            (defs.nodes, defs.by_id, resolved)
        };
        CallGraph::link(files, complete, nodes, by_id, resolved)
    }

    /// The last step of [`CallGraph::build`]: each node's outgoing and incoming edges.
    fn link(
        files: Vec<FileGraph>,
        complete: bool,
        nodes: Vec<(u32, u32)>,
        by_id: HashMap<String, u32>,
        resolved: Resolved,
    ) -> CallGraph {
        let Resolved {
            edges,
            ambiguous,
            external,
            untyped,
        } = resolved;
        let mut out = vec![Vec::new(); nodes.len()];
        let mut into = vec![Vec::new(); nodes.len()];
        for (i, e) in edges.iter().enumerate() {
            out[e.src as usize].push(i as u32);
            into[e.dst as usize].push(i as u32);
        }
        let mut ambiguous_by_caller: HashMap<u32, Vec<u32>> = HashMap::new();
        let mut ambiguous_by_name: HashMap<String, Vec<u32>> = HashMap::new();
        for (i, a) in ambiguous.iter().enumerate() {
            ambiguous_by_caller
                .entry(a.caller)
                .or_default()
                .push(i as u32);
            // One key per name, not one copy per site.
            match ambiguous_by_name.get_mut(&a.name) {
                Some(sites) => sites.push(i as u32),
                None => {
                    ambiguous_by_name.insert(a.name.clone(), vec![i as u32]);
                }
            }
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
            ambiguous_by_caller,
            ambiguous_by_name,
            external,
            untyped,
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::FileRefs;

    fn symbol(name: &str, kind: SymbolKind, line: u32, scope: &[&str]) -> Symbol {
        Symbol {
            id: format!("{}.{name}#{line}", scope.join(".")),
            name: name.to_owned(),
            label: format!("def {name}(self)"),
            kind,
            start_line: line,
            end_line: line + 1,
            scope: scope.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    /// A codebase where one name (`run`) and one class (`Worker`) are defined in every file,
    /// files import each other and call the name every way a call can be written: the calls
    /// of each file reach definitions in its own file, its own type, imported files, its
    /// directory, a module path (Rust's `pkg1::m3::run()`), and nowhere near; in Java, calls
    /// on values skip the static methods.
    fn codebase(language: Language, files: usize) -> GraphFile {
        let rust = language == Language::Rust;
        let (ext, sep) = match language {
            Language::Rust => ("rs", "::"),
            Language::Java => ("java", "."),
            _ => ("py", "."),
        };
        let module = |i: usize| {
            if rust {
                format!("crate::pkg{}::m{i}", i % 5)
            } else {
                format!("pkg{}.m{i}", i % 5)
            }
        };
        let mut out = Vec::new();
        for i in 0..files {
            let dir = format!("pkg{}", i % 5);
            let path = format!("{dir}/m{i}.{ext}");
            let mut symbols = vec![
                symbol("Worker", SymbolKind::Class, 1, &[]),
                symbol("run", SymbolKind::Method, 2, &["Worker"]),
                symbol("start", SymbolKind::Method, 4, &["Worker"]),
                symbol("helper", SymbolKind::Function, 10, &[]),
            ];
            // Every third file also defines `run` at the top, and every seventh `spawn`.
            if i % 3 == 0 {
                symbols.push(symbol("run", SymbolKind::Function, 20, &[]));
            }
            if i % 7 == 0 {
                symbols.push(symbol("spawn", SymbolKind::Function, 30, &[]));
            }
            // In Java, every other `Worker.run` is static: a call on a value never runs it.
            if language == Language::Java && i % 2 == 0 {
                symbols[1].label = "public static void run()".into();
            }
            let imported = (i * 7 + 3) % files;
            let imports = vec![
                Import {
                    path: module(imported),
                    names: vec!["run".into()],
                    line: 1,
                },
                Import {
                    path: format!("pkg{}", (i + 2) % 5),
                    names: Vec::new(),
                    line: 1,
                },
            ];
            let through = (i * 3 + 1) % files;
            let call = |name: &str, receiver: Receiver, line: u32| CallSite {
                name: name.into(),
                receiver,
                line,
                args: UNKNOWN_ARGS,
            };
            let calls = vec![
                call("run", Receiver::None, 5),
                call("run", Receiver::SelfType, 5),
                call("run", Receiver::Named("worker".into()), 5),
                call("run", Receiver::Named("Worker".into()), 11),
                call("run", Receiver::Named(format!("pkg{}", (i + 1) % 5)), 11),
                call(
                    "run",
                    Receiver::Named(format!("pkg{}{sep}m{through}", through % 5)),
                    11,
                ),
                call(
                    "spawn",
                    Receiver::Named(format!("pkg{}{sep}m{through}", through % 5)),
                    11,
                ),
                call("run", Receiver::Expression, 3),
                call("spawn", Receiver::None, 11),
                call("spawn", Receiver::Named("pool".into()), 11),
                call("start", Receiver::Named("w".into()), 2),
                call("helper", Receiver::None, 2),
                call("Worker", Receiver::None, 11),
            ];
            out.push(FileGraph {
                path,
                language,
                symbols,
                refs: FileRefs { calls, imports },
            });
        }
        GraphFile {
            files: out,
            ..GraphFile::new()
        }
    }

    /// Sharing candidate lists and looking them up by file resolves every call as each call
    /// filtering, narrowing and ranking every candidate itself does:
    /// the same edges with the same confidence, the same ambiguous sites with the same
    /// candidates in the same order, the same unresolved names.
    #[test]
    fn lookup_by_file_resolves_as_ranking_every_candidate() {
        for (language, files) in [Language::Python, Language::Rust, Language::Java]
            .into_iter()
            .flat_map(|l| [1, 7, 40, 120].map(|n| (l, n)))
        {
            let graph = codebase(language, files);
            let plain = CallGraph::build_with(graph.clone(), usize::MAX);
            let looked_up = CallGraph::build_with(graph, 1);
            assert!(!plain.edges.is_empty(), "{language} {files} files");
            let decided = |g: &CallGraph| {
                (
                    g.edges.clone(),
                    g.ambiguous.clone(),
                    g.external.clone(),
                    g.untyped.clone(),
                )
            };
            assert_eq!(
                decided(&looked_up),
                decided(&plain),
                "{language} {files} files: (edges, ambiguous, external, untyped)"
            );
        }
    }
}
