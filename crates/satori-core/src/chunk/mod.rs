//! Syntax-aware chunking: a file's text becomes chunks that follow its syntax (a function, a
//! method, a class where possible), plus the outline of the symbols it defines.
//!
//! Languages with a tree-sitter grammar are chunked along syntax, Markdown along its headings
//! and Perl along an outline read from its lines; every other text file falls back to
//! line-based chunks. Chunking is pure: text in, chunks out, no I/O.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use tree_sitter::Tree;

use crate::graph::FileRefs;
use crate::graph::extract;
use crate::lang::{Language, LineReader, Outline};
use crate::symbol::{Symbol, SymbolKind};
use crate::util::{hash_parts, hash16};

mod label;
mod lines;
mod markdown;
mod perl;
mod split;
mod ts;

use lines::Lines;

/// The version of the chunking rules: which languages are read how, where chunks are cut,
/// what they are named. Bumped whenever a file that has not changed would now be chunked
/// differently (a new language, a new outline); an index built under another version is
/// rebuilt in full by its next sync, as a sync re-reads only the files that changed.
/// 1: Perl outlines, and C++ read in `.h` headers.
/// 2: definitions nested past the depth cap are left out of the outline.
pub const CHUNKING_VERSION: u32 = 2;

/// The chunking rules an index records in its manifest.
pub(crate) fn chunking_signature() -> String {
    format!("v{CHUNKING_VERSION}")
}

/// One indexed unit of text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chunk {
    /// Path relative to the codebase root, with `/` separators.
    pub file: String,
    pub language: Language,
    /// 1-based inclusive line span.
    pub start_line: u32,
    pub end_line: u32,
    /// The exact text of those lines.
    pub content: String,
    /// The main symbol of the chunk (the definition it is, or the innermost definition that
    /// encloses it), if any.
    pub symbol: Option<Symbol>,
    /// Names of every symbol whose definition starts inside this chunk (merged small siblings
    /// give several). Used to boost chunks that define a queried identifier.
    pub defines: Vec<String>,
    /// Labels of the enclosing scopes, outermost first, at most the last two.
    pub breadcrumbs: Vec<String>,
    /// 16 hex chars of the sha256 of `content`.
    pub content_hash: String,
}

/// Size targets for chunking, in characters of source text.
#[derive(Debug, Clone, Copy)]
pub struct ChunkOptions {
    /// A node larger than this is split (into its children, or by lines as a last resort).
    pub max_chars: usize,
    /// Adjacent small siblings are merged until a chunk reaches about this size.
    pub target_chars: usize,
    /// Line-based fallback: lines per chunk and overlap between consecutive chunks.
    pub fallback_lines: usize,
    pub fallback_overlap: usize,
}

impl Default for ChunkOptions {
    fn default() -> Self {
        ChunkOptions {
            max_chars: 2400,
            target_chars: 1200,
            fallback_lines: 40,
            fallback_overlap: 5,
        }
    }
}

/// The result of chunking one file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChunkedFile {
    /// Chunks in file order; together they cover every non-blank line of the file.
    pub chunks: Vec<Chunk>,
    /// Every definition found, sorted by (start_line, end_line, label, id).
    pub symbols: Vec<Symbol>,
    /// The file's call sites and imports (empty without a grammar).
    pub refs: FileRefs,
    /// Some definitions nest deeper than the depth cap allows: they are not in `symbols`,
    /// and the lines they span are chunked by size alone.
    pub too_deep: bool,
}

/// Chunks one file. `file` is the root-relative path (used in ids); `text` its UTF-8 content.
pub fn chunk_file(file: &str, language: Language, text: &str, opts: &ChunkOptions) -> ChunkedFile {
    let lines = Lines::new(text);
    if lines.trim(0, lines.len().saturating_sub(1)).is_none() {
        return ChunkedFile::default();
    }
    let opts = ChunkOptions {
        max_chars: opts.max_chars.max(1),
        target_chars: opts.target_chars.clamp(1, opts.max_chars.max(1)),
        fallback_lines: opts.fallback_lines.max(1),
        fallback_overlap: opts
            .fallback_overlap
            .min(opts.fallback_lines.saturating_sub(1)),
    };
    if let Outline::Lines { reader, .. } = language.spec().outline {
        let (pieces, symbols) = match reader {
            LineReader::Markdown => {
                let outline = markdown::MdOutline::new(&lines);
                let pieces = split::split_file(&lines, &opts, &outline, None);
                (pieces, outline.symbols(&lines))
            }
            LineReader::Perl => {
                let outline = perl::PerlOutline::new(&lines);
                let pieces = split::split_file(&lines, &opts, &outline, None);
                (pieces, outline.symbols(&lines))
            }
        };
        return assemble(file, language, &lines, &pieces, symbols);
    }
    if let Some(tree) = ts::parse(language, text) {
        let unwrapped = unwrap_macros(language, &tree, text);
        let (tree, text) = match &unwrapped {
            Some((u, t)) => (t, u.as_str()),
            None => (&tree, text),
        };
        let root = tree.root_node();
        let pieces = split::split_file(&lines, &opts, &ts::TsOutline::new(language), root);
        let defs = ts::symbols(language, root, text);
        let mut chunked = assemble(file, language, &lines, &pieces, defs.symbols);
        chunked.refs = extract::refs(language, root, text);
        chunked.too_deep = defs.too_deep;
        return chunked;
    }
    let pieces = fallback_pieces(&lines, &opts);
    assemble(file, language, &lines, &pieces, Vec::new())
}

/// The outline of one file: the symbols [`chunk_file`] finds in it (same ids, same order),
/// without cutting chunks or reading references, which an outline does not need.
pub fn outline_file(file: &str, language: Language, text: &str) -> Vec<Symbol> {
    let raw = if let Outline::Lines { reader, .. } = language.spec().outline {
        let lines = Lines::new(text);
        match reader {
            LineReader::Markdown => markdown::MdOutline::new(&lines).symbols(&lines),
            LineReader::Perl => perl::PerlOutline::new(&lines).symbols(&lines),
        }
    } else if let Some(tree) = ts::parse(language, text) {
        let unwrapped = unwrap_macros(language, &tree, text);
        let (tree, text) = match &unwrapped {
            Some((u, t)) => (t, u.as_str()),
            None => (&tree, text),
        };
        ts::symbols(language, tree.root_node(), text).symbols
    } else {
        Vec::new()
    };
    let mut symbols = with_ids(file, &raw);
    sort_symbols(&mut symbols);
    symbols
}

/// Items inside `cfg_x! { ... }` calls are parsed as items, where the language's syntax
/// rules ask for it (Rust); the chunks still carry the original lines, and labels come from
/// the unchanged bytes of the items themselves.
fn unwrap_macros(language: Language, tree: &Tree, text: &str) -> Option<(String, Tree)> {
    let Outline::Syntax(rules) = language.spec().outline else {
        return None;
    };
    rules
        .item_macros
        .then(|| ts::unwrap_item_macros(language, tree.root_node(), text))
        .flatten()
}

/// A definition as the chunkers find it, before ids and chunk metadata.
#[derive(Debug, Clone)]
pub(crate) struct RawSymbol {
    pub name: String,
    pub label: String,
    pub kind: SymbolKind,
    /// 0-based inclusive lines; `start` includes the comments and attributes above it.
    pub start: usize,
    pub end: usize,
    pub scope: Vec<String>,
    /// Index of the enclosing definition in the same list.
    pub parent: Option<usize>,
}

/// The line-based chunking for languages without a grammar (and for abandoned parses):
/// windows of `fallback_lines` lines (fewer if they exceed `max_chars`) overlapping by
/// `fallback_overlap`. When a blank line is near the end of a window the window ends there
/// instead, and the next one starts after it without overlap: a paragraph break is a natural
/// boundary that needs no repeated context.
fn fallback_pieces(lines: &Lines, opts: &ChunkOptions) -> Vec<(usize, usize)> {
    let n = lines.len();
    let window = opts.fallback_lines;
    let mut out = Vec::new();
    let mut start = 0;
    while start < n {
        while start < n && lines.is_blank(start) {
            start += 1;
        }
        if start >= n {
            break;
        }
        let mut end = (start + window - 1).min(n - 1);
        while end > start && lines.size(start, end) > opts.max_chars {
            end -= 1;
        }
        if end == n - 1 {
            out.push((start, end));
            break;
        }
        let floor = (end + 1).saturating_sub(window / 4).max(start + 1);
        if let Some(b) = (floor..=end).rev().find(|&i| lines.is_blank(i)) {
            out.push((start, b));
            start = b + 1;
            continue;
        }
        out.push((start, end));
        start = (end + 1)
            .saturating_sub(opts.fallback_overlap)
            .max(start + 1);
    }
    out
}

/// Turns pieces (0-based line ranges) and raw symbols into the public result: symbols with
/// stable ids, chunks with their text, hash, main symbol, defined names and breadcrumbs.
fn assemble(
    file: &str,
    language: Language,
    lines: &Lines,
    pieces: &[(usize, usize)],
    raw: Vec<RawSymbol>,
) -> ChunkedFile {
    let mut symbols = with_ids(file, &raw);

    let mut chunks = Vec::with_capacity(pieces.len());
    for &(s, e) in pieces {
        let Some((s, e)) = lines.trim(s, e) else {
            continue;
        };
        let content = lines.content(s, e);
        let main = main_symbol(&raw, s, e);
        let mut defines: Vec<String> = Vec::new();
        for r in raw.iter().filter(|r| r.start >= s && r.start <= e) {
            if !defines.contains(&r.name) {
                defines.push(r.name.clone());
            }
        }
        chunks.push(Chunk {
            file: file.to_string(),
            language,
            start_line: line_no(s),
            end_line: line_no(e),
            content_hash: hash16(content.as_bytes()),
            content,
            symbol: main.map(|i| symbols[i].clone()),
            defines,
            breadcrumbs: main.map(|i| breadcrumbs(&raw, i, s)).unwrap_or_default(),
        });
    }

    sort_symbols(&mut symbols);
    ChunkedFile {
        chunks,
        symbols,
        refs: FileRefs::default(),
        too_deep: false,
    }
}

/// The public symbols of raw ones, in the same order, with their stable ids.
fn with_ids(file: &str, raw: &[RawSymbol]) -> Vec<Symbol> {
    // Ids count earlier namesakes (same scope, name and kind) in file order, so that moving
    // code around, or editing above it, keeps them.
    let mut order: Vec<usize> = (0..raw.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&raw[a], &raw[b]);
        (x.start, x.end, &x.label).cmp(&(y.start, y.end, &y.label))
    });
    let mut seen: HashMap<(String, &str, SymbolKind), usize> = HashMap::new();
    let mut symbols: Vec<Symbol> = raw
        .iter()
        .map(|r| Symbol {
            id: String::new(),
            name: r.name.clone(),
            label: r.label.clone(),
            kind: r.kind,
            start_line: line_no(r.start),
            end_line: line_no(r.end),
            scope: r.scope.clone(),
        })
        .collect();
    for &i in &order {
        let r = &raw[i];
        let scope = r.scope.join("::");
        let occurrence = seen
            .entry((scope.clone(), r.name.as_str(), r.kind))
            .or_insert(0);
        symbols[i].id = format!(
            "sym_{}",
            hash_parts(
                &[file, &scope, &r.name, r.kind.id(), &occurrence.to_string()],
                16
            )
        );
        *occurrence += 1;
    }
    symbols
}

/// The outline's order: by span, then label, then id.
fn sort_symbols(symbols: &mut [Symbol]) {
    symbols.sort_by(|a, b| {
        (a.start_line, a.end_line, &a.label, &a.id).cmp(&(
            b.start_line,
            b.end_line,
            &b.label,
            &b.id,
        ))
    });
}

fn line_no(i: usize) -> u32 {
    u32::try_from(i + 1).unwrap_or(u32::MAX)
}

/// The chunk's main symbol: the innermost definition enclosing its first line, else the first
/// definition starting inside it. A namespace is only a scope, so a chunk whose main symbol
/// would be one (`namespace store {` and the types after it, or a chunk of a namespace's
/// body) is named after the largest other definition it holds, when it holds one: naming
/// it after the namespace would label half the chunks of a C++ or C# codebase alike.
fn main_symbol(raw: &[RawSymbol], s: usize, e: usize) -> Option<usize> {
    let enclosing = raw
        .iter()
        .enumerate()
        .filter(|(_, r)| r.start <= s && r.end >= s)
        .max_by(|(_, a), (_, b)| {
            (a.start, std::cmp::Reverse(a.end), a.scope.len()).cmp(&(
                b.start,
                std::cmp::Reverse(b.end),
                b.scope.len(),
            ))
        })
        .map(|(i, _)| i);
    let inside = || {
        raw.iter()
            .enumerate()
            .filter(move |(_, r)| r.start >= s && r.start <= e)
    };
    let main = enclosing.or_else(|| {
        inside()
            .min_by_key(|(_, r)| (r.start, std::cmp::Reverse(r.end), r.scope.len()))
            .map(|(i, _)| i)
    })?;
    if raw[main].kind != SymbolKind::Namespace {
        return Some(main);
    }
    // Code before documentation (a Perl package's POD sections), then the largest.
    let held = inside()
        .filter(|(_, r)| r.kind != SymbolKind::Namespace)
        .max_by_key(|(_, r)| {
            (
                r.kind != SymbolKind::Section,
                r.end.min(e) - r.start,
                std::cmp::Reverse(r.start),
                std::cmp::Reverse(r.scope.len()),
            )
        })
        .map(|(i, _)| i);
    Some(held.unwrap_or(main))
}

/// Labels of the scopes around a chunk, outermost first, the last two: the main symbol's
/// ancestors, and the main symbol itself when the chunk starts inside it.
fn breadcrumbs(raw: &[RawSymbol], main: usize, s: usize) -> Vec<String> {
    let mut chain = Vec::new();
    let m = &raw[main];
    if m.start <= s && m.end >= s {
        chain.push(m.label.clone());
    }
    let mut p = m.parent;
    while let Some(i) = p {
        chain.push(raw[i].label.clone());
        p = raw[i].parent;
    }
    chain.reverse();
    chain.dedup();
    let skip = chain.len().saturating_sub(2);
    chain.split_off(skip)
}

#[cfg(test)]
mod tests;
