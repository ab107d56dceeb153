//! The filter chain of one request: scope, `lang:`, `path:`, `-path:`, `must:`, `exclude:`
//! and the searched subdirectory, in that order of [`Stage`]s. File-level verdicts are cached
//! per file; `must:`/`exclude:` are sets of chunk ordinals read from the postings once.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::category::{self, Category};
use super::index::Index;
use super::query::ParsedQuery;
use super::weights::Weights;
use super::{Scope, SearchRequest};
use crate::Result;
use crate::lang::Language;
use crate::store::TextField;
use crate::store::tokenizer::{CodeTokenizer, TokenKind};

/// The filter stages, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Stage {
    Scope,
    Lang,
    Path,
    ExcludePath,
    Must,
    Exclude,
    PathPrefix,
}

impl Stage {
    pub(super) const ALL: [Stage; 7] = [
        Stage::Scope,
        Stage::Lang,
        Stage::Path,
        Stage::ExcludePath,
        Stage::Must,
        Stage::Exclude,
        Stage::PathPrefix,
    ];

    /// The name reported in `filter_counts`.
    pub(super) fn id(self) -> &'static str {
        match self {
            Stage::Scope => "scope",
            Stage::Lang => "lang",
            Stage::Path => "path",
            Stage::ExcludePath => "-path",
            Stage::Must => "must",
            Stage::Exclude => "exclude",
            Stage::PathPrefix => "path_prefix",
        }
    }
}

/// A set of chunk ordinals.
struct OrdSet(Vec<u64>);

impl OrdSet {
    fn new(n: usize) -> OrdSet {
        OrdSet(vec![0; n.div_ceil(64)])
    }
    fn insert(&mut self, ord: u32) {
        self.0[ord as usize / 64] |= 1 << (ord % 64);
    }
    fn contains(&self, ord: u32) -> bool {
        self.0
            .get(ord as usize / 64)
            .is_some_and(|w| w & (1 << (ord % 64)) != 0)
    }
    fn intersect(&mut self, other: &OrdSet) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a &= b;
        }
    }
    fn union(&mut self, other: &OrdSet) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a |= b;
        }
    }
}

/// One `must:`/`exclude:` value: every identifier run it contains, each with the spellings
/// that count as that run (exact and stemmed).
pub(super) type TokenRuns = Vec<Vec<String>>;

pub(super) fn token_runs(value: &str, tokenizer: &mut CodeTokenizer) -> TokenRuns {
    tokenizer
        .analyze(value)
        .into_iter()
        .filter(|t| t.kind == TokenKind::Whole)
        .map(|t| {
            let stem = tokenizer.stem(&t.text);
            if stem == t.text {
                vec![t.text]
            } else {
                vec![t.text, stem]
            }
        })
        .collect()
}

/// The filter chain of one request.
pub(super) struct Filters<'w> {
    scope: Scope,
    weights: &'w Weights,
    langs: Vec<Language>,
    include: Option<Gitignore>,
    exclude_path: Option<Gitignore>,
    must: Option<OrdSet>,
    exclude: Option<OrdSet>,
    prefix: Option<String>,
    /// Per file: the first stage it fails (`None` = passes), cached.
    file_verdicts: HashMap<u32, Option<Stage>>,
}

impl<'w> Filters<'w> {
    /// The filters of a request; invalid globs and unknown languages become warnings.
    pub(super) fn new(
        ix: &Index,
        req: &SearchRequest,
        parsed: &ParsedQuery,
        must_runs: &[TokenRuns],
        weights: &'w Weights,
        tokenizer: &mut CodeTokenizer,
        warnings: &mut BTreeSet<String>,
    ) -> Result<Filters<'w>> {
        let mut langs = Vec::new();
        for value in &parsed.lang {
            match Language::from_id(value) {
                Some(l) => {
                    if !langs.contains(&l) {
                        langs.push(l);
                    }
                }
                None => {
                    warnings.insert(format!("UNKNOWN_LANGUAGE_FILTER:{value}"));
                }
            }
        }
        let must = if must_runs.is_empty() {
            None
        } else {
            let mut all: Option<OrdSet> = None;
            for runs in must_runs {
                let set = ord_set_for(ix, runs)?;
                match &mut all {
                    Some(a) => a.intersect(&set),
                    None => all = Some(set),
                }
            }
            all
        };
        let exclude = if parsed.exclude.is_empty() {
            None
        } else {
            let mut any = OrdSet::new(ix.chunk_count());
            for value in &parsed.exclude {
                any.union(&ord_set_for(ix, &token_runs(value, tokenizer))?);
            }
            Some(any)
        };
        let prefix = req
            .path_prefix
            .as_deref()
            .map(|p| p.trim_start_matches("./").trim_matches('/').to_string())
            .filter(|p| !p.is_empty() && p != ".");
        Ok(Filters {
            scope: req.scope,
            weights,
            langs,
            include: glob_matcher(&parsed.path, warnings),
            exclude_path: glob_matcher(&parsed.exclude_path, warnings),
            must,
            exclude,
            prefix,
            file_verdicts: HashMap::new(),
        })
    }

    /// The first stage that rejects the chunk, or `None` when it passes them all.
    pub(super) fn first_failure(&mut self, ix: &Index, ord: u32) -> Option<Stage> {
        let chunk = ix.chunk(ord);
        let verdict = match self.file_verdicts.get(&chunk.file) {
            Some(&v) => v,
            None => {
                let v = self.file_stage(ix, chunk.file);
                self.file_verdicts.insert(chunk.file, v);
                v
            }
        };
        if verdict.is_some_and(|s| s < Stage::Must) {
            return verdict;
        }
        // A chunk may differ from its file (a Rust inline test module).
        let chunk_category = category::of_chunk(
            ix.facts(chunk.file).category,
            ix.file(chunk.file).language,
            chunk,
        );
        if self.weights.category(self.scope, chunk_category).is_none() {
            return Some(Stage::Scope);
        }
        if self.must.as_ref().is_some_and(|m| !m.contains(ord)) {
            return Some(Stage::Must);
        }
        if self.exclude.as_ref().is_some_and(|x| x.contains(ord)) {
            return Some(Stage::Exclude);
        }
        verdict
    }

    /// File-level stages: scope, lang, path, -path, then the path prefix.
    fn file_stage(&self, ix: &Index, file_id: u32) -> Option<Stage> {
        let file = ix.file(file_id);
        let path = file.path.trim_start_matches('/');
        let category = ix.facts(file_id).category;
        let admits = |c: Category| self.weights.category(self.scope, c).is_some();
        // A Rust runtime file may hold tests (decided per chunk), which the docs scope wants.
        let may_hold_tests = !file.language.spec().category.test_modules.is_empty()
            && category == Category::Runtime
            && admits(Category::Tests);
        if !admits(category) && !may_hold_tests {
            return Some(Stage::Scope);
        }
        if !self.langs.is_empty() && !self.langs.contains(&file.language) {
            return Some(Stage::Lang);
        }
        if let Some(inc) = &self.include
            && !matches!(
                inc.matched_path_or_any_parents(Path::new(path), false),
                Match::Ignore(_)
            )
        {
            return Some(Stage::Path);
        }
        if let Some(exc) = &self.exclude_path
            && matches!(
                exc.matched_path_or_any_parents(Path::new(path), false),
                Match::Ignore(_)
            )
        {
            return Some(Stage::ExcludePath);
        }
        if let Some(prefix) = &self.prefix
            && !(path == prefix || path.starts_with(&format!("{prefix}/")))
        {
            return Some(Stage::PathPrefix);
        }
        None
    }
}

/// Builds a gitignore-style matcher from globs; invalid globs become warnings.
fn glob_matcher(globs: &[String], warnings: &mut BTreeSet<String>) -> Option<Gitignore> {
    if globs.is_empty() {
        return None;
    }
    let mut b = GitignoreBuilder::new("");
    let mut any = false;
    for glob in globs {
        match b.add_line(None, glob) {
            Ok(_) => any = true,
            Err(_) => {
                warnings.insert(format!("INVALID_PATH_FILTER:{glob}"));
            }
        }
    }
    if !any {
        return None;
    }
    match b.build() {
        Ok(g) => Some(g),
        Err(_) => {
            for glob in globs {
                warnings.insert(format!("INVALID_PATH_FILTER:{glob}"));
            }
            None
        }
    }
}

/// The ordinals of chunks that contain every run of `runs` in some field.
fn ord_set_for(ix: &Index, runs: &TokenRuns) -> Result<OrdSet> {
    let n = ix.chunk_count();
    let mut all: Option<OrdSet> = None;
    for spellings in runs {
        let mut set = OrdSet::new(n);
        for field in [TextField::Content, TextField::Symbols, TextField::Path] {
            for spelling in spellings {
                ix.for_each_chunk_with(field, spelling, &mut |ord| set.insert(ord))?;
            }
        }
        match &mut all {
            Some(a) => a.intersect(&set),
            None => all = Some(set),
        }
    }
    // A value with no identifier characters (`must:--`) matches nothing.
    Ok(all.unwrap_or_else(|| OrdSet::new(n)))
}
