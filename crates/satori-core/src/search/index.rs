//! A generation opened for search: the stored generation, plus what ranking derives from it
//! once (each file's category and path words), so no search pays for it.
//!
//! Categories are derived here, when the generation is opened for search, rather than
//! written into the generation: they change with the ranking rules (a new category, a new
//! directory word) and must not need a reindex when they do, and deriving them is a pass
//! over the file paths that costs a few milliseconds per thousand files.

use super::category::{self, Category};
use super::names::normalize_identifier;
use crate::store::Generation;
use crate::store::table::{ChunkEntry, FileEntry};
use crate::store::tokenizer::CodeTokenizer;

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
        }
    }
}

/// A generation and its per-file facts. Cheap to share between threads; searched with
/// [`crate::search::search`].
pub struct Index {
    generation: Generation,
    facts: Vec<FileFacts>,
}

impl Index {
    /// Prepares a generation for search.
    pub fn new(generation: Generation) -> Index {
        let mut tokenizer = CodeTokenizer::default();
        let facts = generation
            .files()
            .iter()
            .map(|f| FileFacts::of(f, &mut tokenizer))
            .collect();
        Index { generation, facts }
    }

    /// The stored generation.
    pub fn generation(&self) -> &Generation {
        &self.generation
    }

    /// The chunk with ordinal `ord`.
    pub(super) fn chunk(&self, ord: u32) -> &ChunkEntry {
        &self.generation.chunks()[ord as usize]
    }

    /// The file with id `file`.
    pub(super) fn file(&self, file: u32) -> &FileEntry {
        &self.generation.files()[file as usize]
    }

    /// The ranking facts of the file with id `file`.
    pub(super) fn facts(&self, file: u32) -> &FileFacts {
        &self.facts[file as usize]
    }
}
