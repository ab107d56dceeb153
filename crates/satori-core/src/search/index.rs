//! A generation opened for search: the stored generation, plus what ranking derives from it
//! once (each file's category and path words), so no search pays for it.
//!
//! An index may also carry a *layer*: a small generation held in memory with the files that
//! changed since the stored one was written, over which it hides those files' stored chunks.
//! A long-running server layers the files its watcher saw change, so they are searchable at
//! once, while the next generation is written and published in the background. Layered
//! chunks take the ordinals after the stored ones (and their files the ids after the stored
//! files), so every stage of search addresses chunks the same way; the accessors below are
//! the only place that knows where a chunk lives. Layered chunks are scored with the stored
//! generation's term statistics, on the same scale as the chunks around them.
//!
//! Categories are derived here, when the generation is opened for search, rather than
//! written into the generation: they change with the ranking rules (a new category, a new
//! directory word) and must not need a reindex when they do, and deriving them is a pass
//! over the file paths that costs a few milliseconds per thousand files.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use super::category::{self, Category};
use super::names::normalize_identifier;
use super::words::{WordCache, Words};
use crate::Result;
use crate::dense::{Neighbor, QueryVector, VectorIndex};
use crate::graph::Centrality;
use crate::store::table::{ChunkEntry, FileEntry};
use crate::store::tokenizer::CodeTokenizer;
use crate::store::{Generation, LexicalQuery, TextField};

/// What ranking needs of a file.
#[derive(Debug, Clone)]
pub(super) struct FileFacts {
    pub category: Category,
    /// Tokens of the file name before its first dot (whole and stemmed parts).
    pub stem_tokens: Vec<String>,
    /// The stem lower-cased without `_`/`-`, for `UserService` ~ `user_service.ts`.
    pub stem_norm: String,
    /// Tokens of the directory names.
    pub dir_tokens: Vec<String>,
    /// Tokens of the file's own directory's name (whole and stemmed parts).
    pub parent_tokens: Vec<String>,
}

impl FileFacts {
    /// Derives the facts of one file.
    fn of(file: &FileEntry, tokenizer: &mut CodeTokenizer) -> FileFacts {
        let (dirs, name) = file.path.rsplit_once('/').unwrap_or(("", &file.path));
        let stem = name.split('.').next().unwrap_or(name);
        let texts = |tok: &mut CodeTokenizer, s: &str| {
            let mut v: Vec<String> = tok.analyze(s).into_iter().map(|t| t.text).collect();
            v.sort();
            v.dedup();
            v
        };
        FileFacts {
            category: category::categorize(&file.path, file.language),
            stem_tokens: texts(tokenizer, stem),
            stem_norm: normalize_identifier(stem),
            dir_tokens: texts(tokenizer, dirs),
            parent_tokens: texts(tokenizer, dirs.rsplit('/').next().unwrap_or("")),
        }
    }
}

/// How much of a file's first chunks [`Index::file_doc`] reads for its documentation.
const FILE_DOC_CHARS: usize = 4000;

/// Appends the comment and doc-string lines of `content` to `out`: lines that open with a
/// comment marker (`//`, `/*`, `*`, `#` followed by a space, `--`, `;`, `%`), and the lines
/// of triple-quoted strings (Python docstrings, Elixir `@moduledoc`). Code lines are left out:
/// a file's opening code is mostly imports.
fn doc_lines(content: &str, out: &mut String) {
    let mut in_string: Option<&str> = None;
    for line in content.lines() {
        let t = line.trim_start();
        if let Some(quote) = in_string {
            out.push_str(t);
            out.push('\n');
            if t.contains(quote) {
                in_string = None;
            }
            continue;
        }
        let opens = ["\"\"\"", "'''"].into_iter().find(|q| {
            t.find(q).is_some_and(|at| {
                let before = t[..at].trim_end();
                before.is_empty()
                    || before.ends_with("@moduledoc")
                    || before.ends_with("@doc")
                    || before == "r"
            })
        });
        if let Some(quote) = opens {
            out.push_str(t);
            out.push('\n');
            let at = t.find(quote).unwrap_or(0) + quote.len();
            if !t[at..].contains(quote) {
                in_string = Some(quote);
            }
            continue;
        }
        let comment = t.starts_with("//")
            || t.starts_with("/*")
            || t.starts_with('*')
            || t == "#"
            || t.starts_with("# ")
            || t.starts_with("##")
            || t.starts_with("--")
            || t.starts_with(';')
            || t.starts_with('%');
        if comment {
            out.push_str(t);
            out.push('\n');
        }
    }
}

/// The ranking facts of a generation's files, in file-id order, each derived the first time
/// ranking asks for it: ranking needs the files of its candidates only, and deriving the
/// facts of every file of a large codebase (tokenising and stemming tens of thousands of
/// paths) would cost a process started for one search more than the search.
struct Facts(Vec<OnceLock<FileFacts>>);

impl Facts {
    fn new(files: usize) -> Facts {
        Facts((0..files).map(|_| OnceLock::new()).collect())
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn get(&self, i: usize, file: &FileEntry) -> &FileFacts {
        self.0[i].get_or_init(|| FileFacts::of(file, &mut CodeTokenizer::default()))
    }
}

/// A generation and its per-file facts, with an optional layer of changed files. Cheap to
/// share between threads; searched with [`crate::search::search`].
pub struct Index {
    generation: Arc<Generation>,
    facts: Arc<Facts>,
    layer: Option<Arc<Layer>>,
    /// Each file's live chunk ordinals, built the first time ranking asks (see
    /// [`Index::file_chunks`]).
    by_file: OnceLock<FileChunks>,
    /// The highest version directory (`v4` of `src/v3`, `src/v4`) under each directory that
    /// has some, built the first time ranking asks (see [`Index::superseded_version`]).
    versions: OnceLock<std::collections::HashMap<String, u32>>,
    /// The word tokens of the names each file's live chunks define, each file's derived the
    /// first time ranking asks and kept within a budget (see [`Index::file_names`]).
    names: WordCache,
    /// The word tokens of each file's opening documentation (see [`Index::file_doc`]).
    docs: WordCache,
    /// How many other files reach each stored file, computed the first time ranking asks
    /// (see [`Index::file_centrality`]) and shared with the layered indexes made from this
    /// one.
    centrality: Arc<OnceLock<HashMap<String, u32>>>,
}

/// The live chunk ordinals of every file, file by file (compressed rows: the ordinals of file
/// `f` are `ords[starts[f]..starts[f + 1]]`, in ordinal order).
struct FileChunks {
    starts: Vec<u32>,
    ords: Vec<u32>,
}

/// Files changed since the stored generation was written, held in memory over it.
struct Layer {
    /// The changed files as they are now.
    delta: Generation,
    /// The delta's chunks with their file ids shifted past the stored files'.
    chunks: Vec<ChunkEntry>,
    facts: Facts,
    /// Per stored chunk: hidden because its file changed or went away.
    hidden: Vec<bool>,
    hidden_count: usize,
}

impl Index {
    /// Prepares a generation for search.
    pub fn new(generation: Generation) -> Index {
        let files = generation.files().len();
        let facts = Facts::new(files);
        Index {
            generation: Arc::new(generation),
            facts: Arc::new(facts),
            layer: None,
            by_file: OnceLock::new(),
            versions: OnceLock::new(),
            names: WordCache::new(files),
            docs: WordCache::new(files),
            centrality: Arc::new(OnceLock::new()),
        }
    }

    /// This index's stored generation with `delta` layered over it: the chunks of `delta`
    /// join the index, and the stored chunks of every file for which `replaced` holds (given
    /// its path) are hidden. Replaces any layer this index had.
    pub fn layered(&self, delta: Generation, replaced: &dyn Fn(&str) -> bool) -> Index {
        let stored = &self.generation;
        let gone: Vec<bool> = stored.files().iter().map(|f| replaced(&f.path)).collect();
        let stored_chunks = stored.chunks();
        let hidden: Vec<bool> = (0..stored_chunks.len())
            .map(|i| gone[stored_chunks.file(i) as usize])
            .collect();
        let shift = stored.files().len() as u32;
        let chunks = delta
            .chunks()
            .iter()
            .map(|c| ChunkEntry {
                file: c.file + shift,
                ..c.clone()
            })
            .collect();
        let facts = Facts::new(delta.files().len());
        let files = stored.files().len() + delta.files().len();
        Index {
            generation: Arc::clone(&self.generation),
            facts: Arc::clone(&self.facts),
            layer: Some(Arc::new(Layer {
                hidden_count: hidden.iter().filter(|h| **h).count(),
                hidden,
                chunks,
                facts,
                delta,
            })),
            by_file: OnceLock::new(),
            versions: OnceLock::new(),
            names: WordCache::new(files),
            docs: WordCache::new(files),
            centrality: Arc::clone(&self.centrality),
        }
    }

    /// The stored generation (without the layer).
    pub fn generation(&self) -> &Generation {
        &self.generation
    }

    /// Ordinals below this are stored chunks; from it on, layered ones.
    fn stored_chunks(&self) -> usize {
        self.generation.chunks().len()
    }

    /// One past the highest chunk ordinal (hidden chunks included).
    pub(super) fn chunk_count(&self) -> usize {
        self.stored_chunks() + self.layer.as_ref().map_or(0, |l| l.chunks.len())
    }

    /// The chunk with ordinal `ord`.
    pub(super) fn chunk(&self, ord: u32) -> &ChunkEntry {
        let stored = self.generation.chunks();
        match &self.layer {
            Some(l) if ord as usize >= stored.len() => &l.chunks[ord as usize - stored.len()],
            _ => &stored[ord as usize],
        }
    }

    /// The chunk with ordinal `ord`, decoded for this use only when it was not decoded before
    /// (see [`Index::chunk`], which keeps it).
    fn chunk_transient(&self, ord: u32) -> Cow<'_, ChunkEntry> {
        let stored = self.generation.chunks();
        match &self.layer {
            Some(l) if ord as usize >= stored.len() => {
                Cow::Borrowed(&l.chunks[ord as usize - stored.len()])
            }
            _ => stored.transient(ord as usize),
        }
    }

    /// The file id of the chunk with ordinal `ord`, without decoding the rest of a stored
    /// chunk (what [`Index::chunk`] does): a pass over every chunk must stay cheap.
    fn chunk_file(&self, ord: u32) -> u32 {
        let stored = self.generation.chunks();
        match &self.layer {
            Some(l) if ord as usize >= stored.len() => l.chunks[ord as usize - stored.len()].file,
            _ => stored.file(ord as usize),
        }
    }

    /// The file with id `file`.
    pub(super) fn file(&self, file: u32) -> &FileEntry {
        let stored = self.generation.files();
        match &self.layer {
            Some(l) if file as usize >= stored.len() => {
                &l.delta.files()[file as usize - stored.len()]
            }
            _ => &stored[file as usize],
        }
    }

    /// How many other files call into the file with id `file` or import it (see
    /// [`Centrality`]), 0 when the generation has no complete graph. The first call resolves
    /// the stored generation's graph, once for the life of this index. A layered file has
    /// its stored namesake's count: the count changes with other files' edits as much as
    /// with its own, and the generation the layer becomes counts it afresh.
    pub(super) fn file_centrality(&self, file: u32) -> Result<u32> {
        let counts = match self.centrality.get() {
            Some(c) => c,
            None => {
                let counts = Centrality::of_generation(self.generation.dir())?.unwrap_or_default();
                self.centrality.get_or_init(|| counts)
            }
        };
        Ok(counts.get(&self.file(file).path).copied().unwrap_or(0))
    }

    /// The ranking facts of the file with id `file`.
    pub(super) fn facts(&self, file: u32) -> &FileFacts {
        let at = file as usize;
        match &self.layer {
            Some(l) if at >= self.facts.len() => {
                let i = at - self.facts.len();
                l.facts.get(i, &l.delta.files()[i])
            }
            _ => self.facts.get(at, &self.generation.files()[at]),
        }
    }

    /// The live chunk ordinals of the file with id `file`, in ordinal order. The map is built
    /// on first use, one pass over the chunks: only ranking signals that look at whole files
    /// need it, and a process started for one search that asks for none of them should not
    /// pay for it.
    pub(super) fn file_chunks(&self, file: u32) -> &[u32] {
        let map = self.by_file.get_or_init(|| {
            let files = self.generation.files().len()
                + self.layer.as_ref().map_or(0, |l| l.delta.files().len());
            let mut counts = vec![0u32; files + 1];
            for o in self.live_ordinals() {
                counts[self.chunk_file(o) as usize + 1] += 1;
            }
            for i in 1..counts.len() {
                counts[i] += counts[i - 1];
            }
            let mut next = counts.clone();
            let mut ords = vec![0u32; counts[files] as usize];
            for o in self.live_ordinals() {
                let f = self.chunk_file(o) as usize;
                ords[next[f] as usize] = o;
                next[f] += 1;
            }
            FileChunks {
                starts: counts,
                ords,
            }
        });
        let f = file as usize;
        match (map.starts.get(f), map.starts.get(f + 1)) {
            (Some(&a), Some(&b)) => &map.ords[a as usize..b as usize],
            _ => &[],
        }
    }

    /// The word tokens (whole names, their parts and stems, as the lexical index has them) of
    /// every name the live chunks of the file with id `file` define, sorted and deduplicated:
    /// the file's vocabulary of definitions, for questions that describe what a file is about.
    /// Derived on first use, per file (ranking asks for the leading files of a search only),
    /// and kept while the cache is within its budget (see `words.rs`).
    pub(super) fn file_names(&self, file: u32) -> Cow<'_, Words> {
        let derive = || {
            let mut tokenizer = CodeTokenizer::default();
            let mut tokens: Vec<String> = Vec::new();
            for &ord in self.file_chunks(file) {
                // Read without keeping the decoded chunk: a file's every chunk is read here,
                // and most are never a candidate.
                let chunk = self.chunk_transient(ord);
                for name in &chunk.defines {
                    tokens.extend(tokenizer.analyze(name).into_iter().map(|t| t.text));
                }
            }
            Ok::<_, std::convert::Infallible>(Words::new(tokens))
        };
        match self.names.get(file, derive) {
            Ok(words) => words,
            Err(never) => match never {},
        }
    }

    /// The word tokens of the opening documentation of the file with id `file`: the comments
    /// and doc strings of its first chunks (up to [`FILE_DOC_CHARS`] of their text), sorted
    /// and deduplicated. What a file says of itself at its top (a module doc, a class's doc
    /// comment after the imports) describes the file as a whole. Derived and kept as
    /// [`Index::file_names`] are.
    pub(super) fn file_doc(&self, file: u32) -> Result<Cow<'_, Words>> {
        self.docs.get(file, || {
            let mut text = String::new();
            let mut read = 0;
            for &ord in self.file_chunks(file) {
                if read >= FILE_DOC_CHARS {
                    break;
                }
                let content = self.chunk_content(ord)?;
                read += content.len();
                doc_lines(&content, &mut text);
            }
            let mut tokenizer = CodeTokenizer::default();
            let tokens = tokenizer.analyze(&text).into_iter().map(|t| t.text);
            Ok(Words::new(tokens.collect()))
        })
    }

    /// The version directory of a file's path that a newer sibling supersedes (`v3` of
    /// `src/v3/types.ts` when `src/v4/` exists), if any: a package that keeps its previous
    /// major version beside the current one (`v3/` and `v4/`, `api/v1/` and `api/v2/`) means
    /// the newest one unless asked otherwise. The map of version directories is built on first
    /// use, one pass over the paths, and only for a path that has a version directory at all.
    pub(super) fn superseded_version(&self, file: u32) -> Option<&str> {
        let path = self.file(file).path.as_str();
        let (dirs, _) = path.rsplit_once('/')?;
        let mut at = 0;
        let mut found = None;
        for seg in dirs.split('/') {
            if let Some(n) = version_number(seg) {
                found = Some((at, seg, n));
            }
            at += seg.len() + 1;
        }
        let (at, seg, n) = found?;
        let newest = self.versions.get_or_init(|| {
            let mut map = std::collections::HashMap::new();
            let mut note = |p: &str| {
                let mut at = 0;
                let dirs = p.rsplit_once('/').map_or("", |(d, _)| d);
                for seg in dirs.split('/') {
                    if let Some(n) = version_number(seg) {
                        let parent = dirs[..at].to_string();
                        let e = map.entry(parent).or_insert(n);
                        *e = (*e).max(n);
                    }
                    at += seg.len() + 1;
                }
            };
            for f in self.generation.files() {
                note(&f.path);
            }
            if let Some(l) = &self.layer {
                for f in l.delta.files() {
                    note(&f.path);
                }
            }
            map
        });
        let parent = &dirs[..at];
        (newest.get(parent).copied().unwrap_or(n) > n).then_some(seg)
    }

    /// Whether a stored chunk is hidden by the layer.
    fn hidden(&self, ord: u32) -> bool {
        self.layer
            .as_ref()
            .is_some_and(|l| l.hidden.get(ord as usize).copied().unwrap_or(false))
    }

    /// Every chunk that is not hidden, in ordinal order.
    pub(super) fn live_ordinals(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.chunk_count() as u32).filter(|&o| !self.hidden(o))
    }

    /// The content of one chunk.
    pub(super) fn chunk_content(&self, ord: u32) -> Result<String> {
        let stored = self.stored_chunks();
        match &self.layer {
            Some(l) if ord as usize >= stored => l.delta.chunk_content(ord as usize - stored),
            _ => self.generation.chunk_content(ord as usize),
        }
    }

    /// The `limit` best chunks for a BM25 query, as (score, ordinal), best first; equal
    /// scores in file-path, then line order (see [`Generation::bm25_top`]).
    pub(super) fn bm25_top(&self, query: &LexicalQuery, limit: usize) -> Result<Vec<(f32, u32)>> {
        let Some(l) = &self.layer else {
            return self.generation.bm25_top(query, limit);
        };
        // Hidden chunks can take at most `hidden_count` places of the stored list.
        let mut top: Vec<(f32, u32)> = self
            .generation
            .bm25_top(query, limit + l.hidden_count)?
            .into_iter()
            .filter(|&(_, o)| !self.hidden(o))
            .collect();
        let shift = self.stored_chunks() as u32;
        top.extend(
            l.delta
                .bm25_top_scored_by(query, limit, &self.generation)?
                .into_iter()
                .map(|(score, o)| (score, o + shift)),
        );
        let place = |ord: u32| {
            let c = self.chunk(ord);
            (self.file(c.file).path.as_str(), c.start_line, ord)
        };
        top.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then_with(|| place(a.1).cmp(&place(b.1)))
        });
        top.truncate(limit);
        Ok(top)
    }

    /// Calls `each` with the ordinal of every chunk that has `term` (an analysed token) in
    /// `field`, in no particular order.
    pub(super) fn for_each_chunk_with(
        &self,
        field: TextField,
        term: &str,
        each: &mut dyn FnMut(u32),
    ) -> Result<()> {
        let Some(l) = &self.layer else {
            return self.generation.for_each_chunk_with(field, term, each);
        };
        self.generation.for_each_chunk_with(field, term, &mut |o| {
            if !self.hidden(o) {
                each(o);
            }
        })?;
        let shift = self.stored_chunks() as u32;
        l.delta
            .for_each_chunk_with(field, term, &mut |o| each(o + shift))
    }

    /// The vector index over every chunk, when the generation has vectors.
    pub(super) fn vectors(&self) -> Option<Vectors<'_>> {
        let stored = self.generation.vectors()?;
        let layer = match &self.layer {
            Some(l) => Some((l.as_ref(), l.delta.vectors()?)),
            None => None,
        };
        Some(Vectors {
            ix: self,
            stored,
            layer,
        })
    }
}

/// The number of a version directory's name: `v3` → 3, `V12` → 12; nothing for any other name.
fn version_number(seg: &str) -> Option<u32> {
    let digits = seg.strip_prefix(['v', 'V'])?;
    if digits.is_empty() || digits.len() > 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The vectors of an index: the stored rows, less the hidden ones, then the layer's.
pub(super) struct Vectors<'a> {
    ix: &'a Index,
    stored: &'a dyn VectorIndex,
    layer: Option<(&'a Layer, &'a dyn VectorIndex)>,
}

impl std::fmt::Debug for Vectors<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vectors")
            .field("stored", &self.stored)
            .field("layered", &self.layer.map(|(_, v)| v))
            .finish()
    }
}

impl VectorIndex for Vectors<'_> {
    fn dim(&self) -> usize {
        self.stored.dim()
    }

    fn len(&self) -> usize {
        self.stored.len() + self.layer.map_or(0, |(_, v)| v.len())
    }

    fn top_k(&self, query: &QueryVector, k: usize) -> Result<Vec<Neighbor>> {
        let Some((layer, delta)) = self.layer else {
            return self.stored.top_k(query, k);
        };
        let mut top: Vec<Neighbor> = self
            .stored
            .top_k(query, k + layer.hidden_count)?
            .into_iter()
            .filter(|n| !self.ix.hidden(n.row))
            .collect();
        let shift = self.stored.len() as u32;
        top.extend(delta.top_k(query, k)?.into_iter().map(|n| Neighbor {
            row: n.row + shift,
            ..n
        }));
        top.sort();
        top.truncate(k);
        Ok(top)
    }

    fn cosines(&self, query: &QueryVector, rows: &[u32], out: &mut Vec<f32>) -> Result<()> {
        let Some((_, delta)) = self.layer else {
            return self.stored.cosines(query, rows, out);
        };
        let shift = self.stored.len() as u32;
        let (stored_rows, layered_rows): (Vec<u32>, Vec<u32>) =
            rows.iter().partition(|&&r| r < shift);
        let layered_rows: Vec<u32> = layered_rows.iter().map(|r| r - shift).collect();
        let (mut stored, mut layered) = (Vec::new(), Vec::new());
        self.stored.cosines(query, &stored_rows, &mut stored)?;
        delta.cosines(query, &layered_rows, &mut layered)?;
        let (mut stored, mut layered) = (stored.into_iter(), layered.into_iter());
        out.extend(rows.iter().map(|&r| {
            let next = if r < shift {
                stored.next()
            } else {
                layered.next()
            };
            next.unwrap_or(0.0)
        }));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::doc_lines;

    /// The documentation lines `doc_lines` keeps of `content`, trimmed, in order.
    fn check(content: &str, expected: &[&str]) {
        let mut out = String::new();
        doc_lines(content, &mut out);
        let got: Vec<&str> = out.lines().collect();
        assert_eq!(got, expected, "{content}");
    }

    #[test]
    fn opening_documentation() {
        // Rust: inner and outer doc comments; attributes and code are not documentation.
        check(
            "//! Runs `!Send` futures on the current thread.\n#[derive(Debug)]\npub struct LocalSet {}\n",
            &["//! Runs `!Send` futures on the current thread."],
        );
        // C and C++: preprocessor lines are code, block comments are not.
        check(
            "#include <ostream>\n/*\n * Formatting of std::ostream.\n */\n#define FMT_X 1\n",
            &["/*", "* Formatting of std::ostream.", "*/"],
        );
        // Python: a module docstring over several lines, then `#` comments; code is left out.
        check(
            "\"\"\"Distillation of a model:\ninference and extraction.\n\"\"\"\nimport os\n# helpers\nx = 1\n",
            &[
                "\"\"\"Distillation of a model:",
                "inference and extraction.",
                "\"\"\"",
                "# helpers",
            ],
        );
        // A one-line docstring does not swallow the code after it.
        check(
            "def f():\n    '''Waits for the lock.'''\n    return 1\n",
            &["'''Waits for the lock.'''"],
        );
        // Elixir: a module doc heredoc.
        check(
            "defmodule Phoenix.Channel do\n  @moduledoc \"\"\"\n  Channels join topics.\n  \"\"\"\n  use X\nend\n",
            &["@moduledoc \"\"\"", "Channels join topics.", "\"\"\""],
        );
        // A string that merely contains triple quotes in code is not a docstring.
        check("let s = \"\"\"raw\"\"\";\n", &[]);
        // Ruby, shell, Lua, SQL, Erlang comment markers; a shebang is not documentation.
        check(
            "#!/usr/bin/env ruby\n# Logs each request.\n-- a query\n% a clause\nputs 1\n",
            &["# Logs each request.", "-- a query", "% a clause"],
        );
    }
}
