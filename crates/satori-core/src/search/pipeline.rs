//! The search pipeline over one generation: query analysis, retrieval from the lexical
//! index, the filter chain (with pool growth when filters starve it), code-aware scoring and
//! per-file saturation. Turning the ranked chunks into hits is `group`'s job.
//!
//! Candidates are ranked from the in-memory chunk table; the document store is read only for
//! the hits that are returned.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocSet, TERMINATED, Term};

use super::category::{self, Category};
use super::group;
use super::query::{self, Analysis, ParsedQuery, QueryKind};
use super::vocab;
use super::{
    Fusion, FusionReport, Hit, NoiseReport, ResultMode, RetrievalMode, SearchContext,
    SearchDiagnostics, SearchOutcome, SearchRequest, SearchTuning,
};
use crate::dense::{Neighbor, Quantized};
use crate::embed::Scratch;
use crate::lang::Language;
use crate::lexical::Generation;
use crate::lexical::table::{ChunkEntry, FileEntry};
use crate::lexical::tokenizer::{CodeTokenizer, TokenKind, may_stem_to};
use crate::{Error, Result};

/// Field boosts. A match in the path says more than one in the body. The names a chunk
/// defines are also part of its body, so they count twice already: a further boost (2.5 was
/// tried) made questions worse on the benchmark (hand-written nDCG@10 0.560 → 0.597 at 1.0),
/// and identifier queries are carried by the definition boost instead.
const SYMBOLS_BOOST: f32 = 1.0;
const PATH_BOOST: f32 = 1.5;
const CONTENT_BOOST: f32 = 1.0;

/// Candidate pool sizes: the first attempt, and the ceiling of the retries that happen when
/// filters leave too little.
const POOL_MIN: usize = 100;
const POOL_FIRST_MAX: usize = 300;
const POOL_MAX: usize = 2000;

/// Added to the normalised BM25 score (which is at most 1) of a chunk that defines a queried
/// identifier, so the definition outranks every chunk that merely mentions it.
const DEFINITION_EXACT: f32 = 1.0;
/// A plain query word that is exactly a defined name.
const DEFINITION_WORD: f32 = 0.3;
/// Scaled by the share of query parts found among the parts of the defined names.
const DEFINITION_PARTS: f32 = 0.3;
/// Share of the definition boost an identifier gets when it appears inside a question.
const DEFINITION_IN_QUESTION: f32 = 0.3;
/// Scaled by the share of a defined name's words that a question mentions (or relates to):
/// "put the bucket into the cache" describes `set_bucket`.
const NAME_COVERED: f32 = 0.15;
/// Names less covered than this get nothing: one common word in a long name says little.
const NAME_COVERED_MIN: f32 = 0.5;
/// Question words this long are looked for inside names spelled in two parts.
const JOINED_STEM_MIN: usize = 6;
/// How many of the best candidates the name-coverage boost looks at.
const NAME_COVER_CANDIDATES: usize = 60;
/// A query term names the file (its stem), or one of its directories (identifier queries).
const PATH_STEM_BONUS: f32 = 0.2;
const PATH_STEM_EXACT_BONUS: f32 = 0.1;
const PATH_DIR_BONUS: f32 = 0.1;

/// Each further raw chunk of the same file keeps this share of the previous one's weight.
/// Mild: relevant code often sits in several chunks of one file; this only keeps one long
/// file from taking the whole page of raw results (grouped results cap groups per file).
const FILE_SATURATION: f32 = 0.9;

/// The changed-files boost applies only to small working-tree changes.
const CHANGED_BOOST: f32 = 1.1;
const CHANGED_MAX_FILES: usize = 50;

/// What ranking needs of a file, derived once when the generation is opened.
#[derive(Debug, Clone)]
pub struct FileFacts {
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
    pub fn of(file: &FileEntry, tokenizer: &mut CodeTokenizer) -> FileFacts {
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

/// Lower-cases and drops separators so `parse_header`, `parseHeader` and `ParseHeader` meet.
fn normalize_identifier(s: &str) -> String {
    s.chars()
        .filter(|c| !matches!(c, '_' | '-' | '$'))
        .flat_map(char::to_lowercase)
        .collect()
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
}

/// One `must:`/`exclude:` value: every identifier run it contains, each with the spellings
/// that count as that run (exact and stemmed).
type TokenRuns = Vec<Vec<String>>;

fn token_runs(value: &str, tokenizer: &mut CodeTokenizer) -> TokenRuns {
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

/// Names of the filter stages, in the order they run.
const STAGES: [&str; 7] = [
    "scope",
    "lang",
    "path",
    "-path",
    "must",
    "exclude",
    "path_prefix",
];

/// The filter chain of one request.
struct Filters {
    scope: super::Scope,
    langs: Vec<Language>,
    include: Option<Gitignore>,
    exclude_path: Option<Gitignore>,
    must: Option<OrdSet>,
    exclude: Option<OrdSet>,
    prefix: Option<String>,
    /// Per file: the first stage it fails (`STAGES.len()` = passes), cached.
    file_verdicts: HashMap<u32, usize>,
}

impl Filters {
    /// The index of the first stage that rejects the chunk, or `STAGES.len()`.
    fn first_failure(&mut self, g: &Generation, ord: u32) -> usize {
        let chunk = &g.table.chunks[ord as usize];
        let verdict = match self.file_verdicts.get(&chunk.file) {
            Some(&v) => v,
            None => {
                let v = self.file_stage(g, chunk.file);
                self.file_verdicts.insert(chunk.file, v);
                v
            }
        };
        if verdict < 4 {
            return verdict;
        }
        // A chunk may differ from its file (a Rust inline test module).
        let file = &g.table.files[chunk.file as usize];
        let chunk_category =
            category::of_chunk(g.facts[chunk.file as usize].category, file.language, chunk);
        if category::multiplier(self.scope, chunk_category).is_none() {
            return 0;
        }
        if self.must.as_ref().is_some_and(|m| !m.contains(ord)) {
            return 4;
        }
        if self.exclude.as_ref().is_some_and(|x| x.contains(ord)) {
            return 5;
        }
        verdict
    }

    /// File-level stages: scope, lang, path, -path (0..4), then path_prefix (6).
    fn file_stage(&self, g: &Generation, file_id: u32) -> usize {
        let file = &g.table.files[file_id as usize];
        let path = file.path.trim_start_matches('/');
        let category = g.facts[file_id as usize].category;
        // A Rust runtime file may hold tests (decided per chunk), which the docs scope wants.
        let may_hold_tests = file.language == Language::Rust
            && category == Category::Runtime
            && category::multiplier(self.scope, Category::Tests).is_some();
        if category::multiplier(self.scope, category).is_none() && !may_hold_tests {
            return 0;
        }
        if !self.langs.is_empty() && !self.langs.contains(&file.language) {
            return 1;
        }
        if let Some(inc) = &self.include
            && !matches!(
                inc.matched_path_or_any_parents(Path::new(path), false),
                Match::Ignore(_)
            )
        {
            return 2;
        }
        if let Some(exc) = &self.exclude_path
            && matches!(
                exc.matched_path_or_any_parents(Path::new(path), false),
                Match::Ignore(_)
            )
        {
            return 3;
        }
        if let Some(prefix) = &self.prefix
            && !(path == prefix || path.starts_with(&format!("{prefix}/")))
        {
            return 6;
        }
        STAGES.len()
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
fn ord_set_for(g: &Generation, runs: &TokenRuns) -> Result<OrdSet> {
    let n = g.table.chunks.len();
    let mut all: Option<OrdSet> = None;
    for spellings in runs {
        let mut set = OrdSet::new(n);
        for field in [g.fields.content, g.fields.symbols, g.fields.path] {
            for spelling in spellings {
                let term = Term::from_field_text(field, spelling);
                for (seg, reader) in g.searcher.segment_readers().iter().enumerate() {
                    let inverted = reader.inverted_index(field)?;
                    let postings = inverted
                        .read_postings(&term, IndexRecordOption::Basic)
                        .map_err(|e| Error::Lexical(e.to_string()))?;
                    if let Some(mut postings) = postings {
                        let mut doc = postings.doc();
                        while doc != TERMINATED {
                            set.insert(g.ord_of[seg][doc as usize]);
                            doc = postings.advance();
                        }
                    }
                }
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

/// One `must:` value as a query clause: each run must appear in some field.
fn must_clause(g: &Generation, runs: &TokenRuns) -> Box<dyn Query> {
    let per_run: Vec<(Occur, Box<dyn Query>)> = runs
        .iter()
        .map(|spellings| {
            let alternatives: Vec<(Occur, Box<dyn Query>)> = fields(g)
                .into_iter()
                .flat_map(|(field, boost)| {
                    spellings
                        .iter()
                        .map(move |s| (Occur::Should, term_query(field, s, boost)))
                })
                .collect();
            (
                Occur::Must,
                Box::new(BooleanQuery::new(alternatives)) as Box<dyn Query>,
            )
        })
        .collect();
    Box::new(BooleanQuery::new(per_run))
}

fn fields(g: &Generation) -> [(Field, f32); 3] {
    [
        (g.fields.symbols, SYMBOLS_BOOST),
        (g.fields.path, PATH_BOOST),
        (g.fields.content, CONTENT_BOOST),
    ]
}

fn term_query(field: Field, text: &str, boost: f32) -> Box<dyn Query> {
    let q = TermQuery::new(
        Term::from_field_text(field, text),
        IndexRecordOption::WithFreqs,
    );
    Box::new(BoostQuery::new(Box::new(q), boost))
}

/// A candidate after filtering, with its score parts.
#[derive(Debug, Clone)]
pub(super) struct Scored {
    pub(super) ord: u32,
    pub(super) bm25: f32,
    pub(super) lexical_rank: Option<usize>,
    pub(super) dense: Option<f32>,
    pub(super) dense_rank: Option<usize>,
    pub(super) fused: f32,
    pub(super) definition: f32,
    pub(super) path: f32,
    pub(super) category: Category,
    pub(super) category_mult: f32,
    pub(super) changed_mult: f32,
    pub(super) score: f32,
}

/// A retrieved chunk before scoring.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    ord: u32,
    bm25: f32,
    lexical_rank: Option<usize>,
    dense: Option<f32>,
    dense_rank: Option<usize>,
}

/// Weights of the lexical and dense scores in the blend, by query kind: an identifier is
/// best found by its exact spelling, a question by its meaning.
///
/// The static model is a weaker retriever than BM25 on its own (see `bench/quality`), but
/// finds what the words of a question miss; these weights are the benchmark's choice.
fn blend_weights(kind: QueryKind) -> (f32, f32) {
    match kind {
        QueryKind::Identifier => (0.8, 0.2),
        // A question weighs its words and its meaning equally since the static model was
        // fine-tuned on doc comments of eight languages (0.7/0.3 and 0.6/0.4 before).
        QueryKind::Mixed | QueryKind::NaturalLanguage | QueryKind::Empty => (0.5, 0.5),
    }
}

/// The constant of reciprocal-rank fusion.
const RRF_K: f32 = 60.0;

/// Runs one search.
pub(crate) fn execute(
    g: &Generation,
    req: &SearchRequest,
    ctx: SearchContext<'_>,
) -> Result<SearchOutcome> {
    let limit = req.limit.clamp(1, 50);
    let tuning = ctx.tuning;
    let parsed = query::parse(&req.query);
    let mut tokenizer = CodeTokenizer::default();
    let mut analysis = query::analyze(&parsed.text, &mut tokenizer);
    let related = if tuning.expansion {
        vocab::expand(&mut analysis, &parsed.text, &mut tokenizer)
    } else {
        Vec::new()
    };
    let mut warnings = BTreeSet::new();
    let mut diagnostics = SearchDiagnostics {
        query_kind: analysis.kind,
        semantic_query: parsed.text.clone(),
        terms: analysis.terms.iter().map(|t| t.text.clone()).collect(),
        operators: parsed.clone(),
        ..SearchDiagnostics::default()
    };

    let must_runs: Vec<TokenRuns> = parsed
        .must
        .iter()
        .map(|v| token_runs(v, &mut tokenizer))
        .collect();
    let mut filters = build_filters(g, req, &parsed, &must_runs, &mut tokenizer, &mut warnings)?;

    let has_text = !analysis.terms.is_empty();
    if !has_text && !parsed.can_rank_without_text() {
        warnings.insert("EMPTY_QUERY".to_string());
        diagnostics.retrieval_mode = RetrievalMode::Skipped;
        return Ok(finish(Vec::new(), warnings, diagnostics, None));
    }

    // The query embedding, when this generation has vectors and dense retrieval is on.
    let qvec = match (ctx.model, &g.dense) {
        (Some(model), Some(dense)) if tuning.dense && has_text && model.dim() == dense.dim() => {
            let mut v = vec![0.0f32; model.dim()];
            model.embed_into(&parsed.text, &mut Scratch::default(), &mut v);
            Some(Quantized::new(&v)).filter(|q| !q.is_zero())
        }
        _ => None,
    };
    // Without a usable query vector the lexical retriever is always used, whatever the
    // switches say: a search must not come back empty because a word is unknown to the model.
    let use_lexical = tuning.lexical || qvec.is_none();
    diagnostics.retrieval_mode = match (use_lexical, qvec.is_some()) {
        (true, true) => RetrievalMode::Hybrid,
        (true, false) => RetrievalMode::Lexical,
        _ => RetrievalMode::Dense,
    };

    // Retrieval with pool growth: filters run over the pool, and a pool that filters starve
    // is retried larger while the retrievers still have more to give.
    let query = if use_lexical {
        build_query(g, &analysis, &must_runs, tuning.fields)
    } else {
        None
    };
    let operator_only = use_lexical && query.is_none();
    let needed = limit * 3;
    let mut pool = (limit * 10).clamp(POOL_MIN, POOL_FIRST_MAX);
    let mut dense_all: Vec<Neighbor> = Vec::new();
    let mut dense_asked = 0;
    let lexical_of = |pool: usize| -> Result<Vec<(f32, u32)>> {
        Ok(match &query {
            Some(q) => g.top_ordinals(q.as_ref(), pool)?,
            // Operator-only (`path:`/`lang:`): every chunk is a candidate, ranked by the
            // signals that do not need text.
            None if operator_only => (0..g.table.chunks.len() as u32).map(|o| (0.0, o)).collect(),
            None => Vec::new(),
        })
    };
    let survivors = loop {
        let lexical = match (&qvec, &g.dense) {
            (Some(q), Some(d)) if pool > dense_asked => {
                // The two retrievers are independent: on a multi-core machine the vector
                // scan runs beside the BM25 query instead of after it. The calling thread
                // runs the BM25 leg itself, which saves a thread hand-off per search.
                let mut dense = Vec::new();
                let lexical = rayon::in_place_scope(|s| {
                    s.spawn(|_| dense = d.top_k(q, pool));
                    lexical_of(pool)
                });
                dense_all = dense;
                dense_asked = pool;
                lexical?
            }
            _ => lexical_of(pool)?,
        };
        let dense = &dense_all[..];
        diagnostics.lexical_candidates = lexical.len();
        diagnostics.dense_candidates = dense.len();
        let candidates = merge_candidates(g, &lexical, dense, qvec.as_ref());
        let mut counts = [0usize; STAGES.len()];
        let mut survivors = Vec::new();
        for c in &candidates {
            let failed_at = filters.first_failure(g, c.ord);
            for n in counts.iter_mut().take(failed_at) {
                *n += 1;
            }
            if failed_at == STAGES.len() {
                survivors.push(*c);
            }
        }
        diagnostics.filter_counts = STAGES
            .iter()
            .zip(counts)
            .map(|(s, c)| (s.to_string(), c))
            .collect();
        diagnostics.candidates = candidates.len();
        let lexical_done = query.is_none() || lexical.len() < pool;
        let dense_done = qvec.is_none() || dense.len() < pool;
        if survivors.len() >= needed || (lexical_done && dense_done) || pool >= POOL_MAX {
            break survivors;
        }
        pool = (pool * 4).min(POOL_MAX);
    };
    diagnostics.after_filters = survivors.len();
    if !parsed.must.is_empty() && survivors.is_empty() {
        warnings.insert("FILTER_MUST_UNSATISFIED".to_string());
    }

    let changed: HashSet<&str> = match &req.changed_files {
        Some(list) if tuning.changed && !list.is_empty() && list.len() <= CHANGED_MAX_FILES => list
            .iter()
            .map(|p| p.trim_start_matches("./").trim_start_matches('/'))
            .collect(),
        _ => HashSet::new(),
    };
    let weights = blend_weights(analysis.kind);
    diagnostics.fusion = Some(match tuning.fusion {
        Fusion::Blend => FusionReport::Blend {
            lexical_weight: weights.0,
            dense_weight: weights.1,
        },
        Fusion::Rrf => FusionReport::Rrf { k: RRF_K },
    });
    let scored = score(
        g,
        req,
        &analysis,
        &related,
        &survivors,
        &changed,
        &tuning,
        weights,
        &mut tokenizer,
    );
    let hits = match req.result_mode {
        ResultMode::Raw => group::raw_hits(g, req, &scored, limit)?,
        ResultMode::Grouped => group::grouped_hits(
            g,
            req,
            &scored,
            limit,
            &analysis,
            &mut tokenizer,
            &mut diagnostics,
        )?,
    };
    // In docs scope tests and docs are what was asked for, not noise.
    let noise = if req.scope == super::Scope::Docs {
        None
    } else {
        group::noise_report(&hits)
    };
    Ok(finish(hits, warnings, diagnostics, noise))
}

/// The union of both retrievers' candidates: lexical ones in their order, then dense-only
/// ones in theirs. Every candidate gets its cosine when vectors exist, so a chunk found only
/// lexically still has a dense score to blend.
fn merge_candidates(
    g: &Generation,
    lexical: &[(f32, u32)],
    dense: &[Neighbor],
    qvec: Option<&Quantized>,
) -> Vec<Candidate> {
    let mut at: HashMap<u32, usize> = HashMap::with_capacity(lexical.len() + dense.len());
    let mut out: Vec<Candidate> = Vec::with_capacity(lexical.len() + dense.len());
    for (rank, &(bm25, ord)) in lexical.iter().enumerate() {
        at.insert(ord, out.len());
        out.push(Candidate {
            ord,
            bm25,
            lexical_rank: Some(rank),
            dense: None,
            dense_rank: None,
        });
    }
    for (rank, n) in dense.iter().enumerate() {
        match at.get(&n.row) {
            Some(&i) => {
                out[i].dense = Some(n.score);
                out[i].dense_rank = Some(rank);
            }
            None => {
                at.insert(n.row, out.len());
                out.push(Candidate {
                    ord: n.row,
                    bm25: 0.0,
                    lexical_rank: None,
                    dense: Some(n.score),
                    dense_rank: Some(rank),
                });
            }
        }
    }
    if let (Some(q), Some(d)) = (qvec, &g.dense) {
        for c in out.iter_mut().filter(|c| c.dense.is_none()) {
            c.dense = Some(d.score(q, c.ord));
        }
    }
    out
}

fn finish(
    hits: Vec<Hit>,
    warnings: BTreeSet<String>,
    diagnostics: SearchDiagnostics,
    noise: Option<NoiseReport>,
) -> SearchOutcome {
    SearchOutcome {
        hits,
        warnings: warnings.into_iter().collect(),
        diagnostics,
        noise,
    }
}

fn build_filters(
    g: &Generation,
    req: &SearchRequest,
    parsed: &ParsedQuery,
    must_runs: &[TokenRuns],
    tokenizer: &mut CodeTokenizer,
    warnings: &mut BTreeSet<String>,
) -> Result<Filters> {
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
            let set = ord_set_for(g, runs)?;
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
        let mut any = OrdSet::new(g.table.chunks.len());
        for value in &parsed.exclude {
            let set = ord_set_for(g, &token_runs(value, tokenizer))?;
            for (a, b) in any.0.iter_mut().zip(&set.0) {
                *a |= b;
            }
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
        langs,
        include: glob_matcher(&parsed.path, warnings),
        exclude_path: glob_matcher(&parsed.exclude_path, warnings),
        must,
        exclude,
        prefix,
        file_verdicts: HashMap::new(),
    })
}

/// The BM25 query: every term in every field (weighted; in the chunk's text only without
/// `all_fields`), plus each `must:` value as a required clause so that must-heavy searches
/// are not starved by a small pool.
fn build_query(
    g: &Generation,
    analysis: &Analysis,
    must_runs: &[TokenRuns],
    all_fields: bool,
) -> Option<Box<dyn Query>> {
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
    for term in &analysis.terms {
        // Without the weighted fields (an ablation), the words are scored on the chunk's
        // text alone: plain BM25. `must:` values keep every field, as their filter does.
        for (field, boost) in fields(g)
            .into_iter()
            .filter(|&(field, _)| all_fields || field == g.fields.content)
        {
            clauses.push((
                Occur::Should,
                term_query(field, &term.text, boost * term.weight),
            ));
        }
    }
    for runs in must_runs {
        clauses.push((Occur::Must, must_clause(g, runs)));
    }
    if clauses.is_empty() {
        None
    } else {
        Some(Box::new(BooleanQuery::new(clauses)))
    }
}

/// Scores the surviving candidates and orders them (file saturation included).
#[allow(clippy::too_many_arguments)]
fn score(
    g: &Generation,
    req: &SearchRequest,
    analysis: &Analysis,
    related: &[String],
    survivors: &[Candidate],
    changed: &HashSet<&str>,
    tuning: &SearchTuning,
    (w_lexical, w_dense): (f32, f32),
    tokenizer: &mut CodeTokenizer,
) -> Vec<Scored> {
    let top = survivors.iter().map(|c| c.bm25).fold(0.0f32, f32::max);
    // Cosines are min-max normalised over the candidates: their absolute level says little
    // (a static model's cosines bunch together), their spread among candidates says much.
    let (dmin, dmax) = survivors
        .iter()
        .filter_map(|c| c.dense)
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), d| {
            (lo.min(d), hi.max(d))
        });
    let has_dense = dmax.is_finite();
    let mut names = NameMatcher::new(analysis);
    let mut covered = NameCover::new(analysis, related);
    let mut scored: Vec<Scored> = survivors
        .iter()
        .map(|c| {
            let chunk = &g.table.chunks[c.ord as usize];
            let file = &g.table.files[chunk.file as usize];
            let facts = &g.facts[chunk.file as usize];
            let lexical = if top > 0.0 { c.bm25 / top } else { 0.0 };
            let dense = match c.dense {
                Some(d) if has_dense && dmax > dmin => (d - dmin) / (dmax - dmin),
                Some(_) if has_dense => 1.0,
                _ => 0.0,
            };
            let fused = if top <= 0.0 && !has_dense {
                // Operator-only searches have no retrieval score: every candidate starts equal.
                1.0
            } else if !has_dense {
                lexical
            } else if top <= 0.0 {
                dense
            } else {
                match tuning.fusion {
                    Fusion::Blend => w_lexical * lexical + w_dense * dense,
                    Fusion::Rrf => {
                        let rr =
                            |r: Option<usize>| r.map_or(0.0, |r| 1.0 / (RRF_K + 1.0 + r as f32));
                        (rr(c.lexical_rank) + rr(c.dense_rank)) / (2.0 / (RRF_K + 1.0))
                    }
                }
            };
            // Definition and path signals are about names. For an identifier query they are
            // decisive; in a question, words that happen to be names (`get`, `request`) are
            // noise, so only an explicitly code-shaped identifier counts, and less.
            let ident_q = analysis.kind == QueryKind::Identifier;
            let definition = if tuning.definition {
                let d = definition_boost(chunk, analysis, &mut names, tokenizer);
                if ident_q {
                    d
                } else {
                    d * DEFINITION_IN_QUESTION
                }
            } else {
                0.0
            };
            let path = if tuning.path && ident_q {
                path_boost(facts, &names.idents, &names.parts)
            } else {
                0.0
            };
            let chunk_category = category::of_chunk(facts.category, file.language, chunk);
            let category_mult = if tuning.category {
                category::multiplier(req.scope, chunk_category).unwrap_or(0.0)
            } else {
                1.0
            };
            let changed_mult = if changed.contains(file.path.as_str()) {
                CHANGED_BOOST
            } else {
                1.0
            };
            Scored {
                ord: c.ord,
                bm25: c.bm25,
                lexical_rank: c.lexical_rank,
                dense: c.dense,
                dense_rank: c.dense_rank,
                fused,
                definition,
                path,
                category: chunk_category,
                category_mult,
                changed_mult,
                score: (fused + definition + path) * category_mult * changed_mult,
            }
        })
        .collect();
    if tuning.names && analysis.kind != QueryKind::Identifier {
        name_cover_boost(g, &mut scored, &mut covered, tokenizer);
    }
    sort_scored(g, &mut scored);
    // Grouped results cap the groups of a file already; a further decay there only pushes a
    // file's second relevant symbol below weaker ones elsewhere (benchmark: +0.006 nDCG@10
    // without it). Raw chunks have no cap, so they decay.
    if tuning.saturation && req.result_mode == ResultMode::Raw {
        // Per-file saturation: the k-th chunk of a file keeps FILE_SATURATION^k of its score.
        let mut seen: HashMap<u32, i32> = HashMap::new();
        for s in &mut scored {
            let k = seen.entry(g.table.chunks[s.ord as usize].file).or_insert(0);
            s.score *= FILE_SATURATION.powi(*k);
            *k += 1;
        }
        sort_scored(g, &mut scored);
    }
    scored
}

/// Score descending, then file, start line, symbol label and ordinal ascending.
fn sort_scored(g: &Generation, scored: &mut [Scored]) {
    scored.sort_by(|a, b| {
        let (ca, cb) = (
            &g.table.chunks[a.ord as usize],
            &g.table.chunks[b.ord as usize],
        );
        b.score
            .total_cmp(&a.score)
            .then_with(|| {
                g.table.files[ca.file as usize]
                    .path
                    .cmp(&g.table.files[cb.file as usize].path)
            })
            .then(ca.start_line.cmp(&cb.start_line))
            .then_with(|| label(ca).cmp(label(cb)))
            .then(a.ord.cmp(&b.ord))
    });
}

fn label(c: &ChunkEntry) -> &str {
    c.symbol.as_ref().map_or("", |s| s.label.as_str())
}

/// How strongly a chunk defines what the query names.
fn definition_boost<'g>(
    chunk: &'g ChunkEntry,
    analysis: &Analysis,
    names: &mut NameMatcher<'_, 'g>,
    tokenizer: &mut CodeTokenizer,
) -> f32 {
    // A question without an explicit identifier has nothing this boost could match.
    if names.idents.is_empty() && analysis.kind != QueryKind::Identifier {
        return 0.0;
    }
    let chunk_names = || {
        chunk
            .symbol
            .iter()
            .map(|s| s.name.as_str())
            .chain(chunk.defines.iter().map(String::as_str))
    };
    if chunk_names().next().is_none() {
        return 0.0;
    }
    if chunk_names().any(|n| names.idents.iter().any(|i| normalized_eq(n, i))) {
        return DEFINITION_EXACT;
    }
    // Beyond exact identifiers, only an identifier query's words and parts name things.
    if analysis.kind != QueryKind::Identifier {
        return 0.0;
    }
    if chunk_names().any(|n| analysis.words.iter().any(|w| lower_eq(n, w))) {
        return DEFINITION_WORD;
    }
    if names.parts.is_empty() {
        return 0.0;
    }
    let found = chunk_names().fold(0u128, |acc, n| acc | names.parts_of(n, tokenizer));
    DEFINITION_PARTS * found.count_ones() as f32 / names.parts.len() as f32
}

/// Whether `raw` equals an identifier already passed through [`normalize_identifier`],
/// compared without allocating: a search scores hundreds of candidates.
fn normalized_eq(raw: &str, norm: &str) -> bool {
    if raw.is_ascii() {
        // The common case, byte by byte: separators dropped, letters folded.
        return raw
            .bytes()
            .filter(|b| !matches!(b, b'_' | b'-' | b'$'))
            .map(|b| b.to_ascii_lowercase())
            .eq(norm.bytes());
    }
    raw.chars()
        .filter(|c| !matches!(c, '_' | '-' | '$'))
        .flat_map(char::to_lowercase)
        .eq(norm.chars())
}

/// Whether `raw` lower-cased equals the lower-case `word`, without allocating.
fn lower_eq(raw: &str, word: &str) -> bool {
    if raw.is_ascii() {
        return raw.len() == word.len() && raw.eq_ignore_ascii_case(word);
    }
    raw.chars().flat_map(char::to_lowercase).eq(word.chars())
}

/// The query side of name matching, prepared once per search: normalised identifiers, the
/// distinct stemmed parts, and which parts each chunk name contains (names recur across
/// candidates, and analysing one means tokenising and stemming it).
struct NameMatcher<'q, 'g> {
    idents: Vec<String>,
    /// At most 128 distinct parts, so a name's matches fit one bit mask.
    parts: Vec<&'q str>,
    memo: rustc_hash::FxHashMap<&'g str, u128>,
}

impl<'q, 'g> NameMatcher<'q, 'g> {
    fn new(analysis: &'q Analysis) -> Self {
        let mut parts: Vec<&str> = Vec::new();
        for p in &analysis.parts {
            if parts.len() < 128 && !parts.contains(&p.as_str()) {
                parts.push(p);
            }
        }
        NameMatcher {
            idents: analysis
                .identifiers
                .iter()
                .map(|i| normalize_identifier(i))
                .collect(),
            parts,
            memo: rustc_hash::FxHashMap::with_capacity_and_hasher(1024, Default::default()),
        }
    }

    /// The bit mask of query parts among the tokens of `name`.
    fn parts_of(&mut self, name: &'g str, tokenizer: &mut CodeTokenizer) -> u128 {
        if let Some(&mask) = self.memo.get(name) {
            return mask;
        }
        // Every token starts with (the lower case of) some letter of the name, so a name
        // without any part's first letter has none of the parts.
        if name.is_ascii()
            && !name.bytes().any(|b| {
                let b = b.to_ascii_lowercase();
                self.parts.iter().any(|p| p.as_bytes().first() == Some(&b))
            })
        {
            return 0;
        }
        let parts = &self.parts;
        let may_stem_to = |seg: &str| parts.iter().any(|p| may_stem_to(seg, p));
        let mut mask = 0u128;
        tokenizer.scan(name, &may_stem_to, &mut |word| {
            if let Some(i) = parts.iter().position(|p| *p == word) {
                mask |= 1 << i;
            }
        });
        self.memo.insert(name, mask);
        mask
    }
}

/// Adds the name-coverage boost: a question that describes a name rather than spelling it.
/// Only the best-scoring candidates are considered: the boost is small, so a chunk further
/// down cannot reach the page through it, and analysing the names of every candidate (a
/// class chunk defines dozens) would cost more than the rest of the ranking.
fn name_cover_boost<'g>(
    g: &'g Generation,
    scored: &mut [Scored],
    covered: &mut NameCover<'_, 'g>,
    tokenizer: &mut CodeTokenizer,
) {
    let threshold = if scored.len() > NAME_COVER_CANDIDATES {
        let mut scores: Vec<f32> = scored.iter().map(|s| s.score).collect();
        let (_, nth, _) =
            scores.select_nth_unstable_by(NAME_COVER_CANDIDATES - 1, |a, b| b.total_cmp(a));
        *nth
    } else {
        f32::NEG_INFINITY
    };
    for s in scored.iter_mut() {
        // A chunk that already defines a spelled identifier needs no second boost.
        if s.score < threshold || s.definition != 0.0 {
            continue;
        }
        let boost = covered.boost(&g.table.chunks[s.ord as usize], tokenizer);
        if boost > 0.0 {
            s.definition = boost;
            s.score = (s.fused + s.definition + s.path) * s.category_mult * s.changed_mult;
        }
    }
}

/// How much of a defined name a question's words cover, memoised per name.
struct NameCover<'q, 'g> {
    /// The question's stems and their related stems.
    stems: Vec<&'q str>,
    memo: rustc_hash::FxHashMap<&'g str, f32>,
}

impl<'q, 'g> NameCover<'q, 'g> {
    fn new(analysis: &'q Analysis, related: &'q [String]) -> Self {
        let mut stems: Vec<&str> = Vec::new();
        if matches!(analysis.kind, QueryKind::NaturalLanguage | QueryKind::Mixed) {
            for s in analysis.parts.iter().chain(related) {
                if !stems.contains(&s.as_str()) {
                    stems.push(s);
                }
            }
        }
        NameCover {
            stems,
            memo: rustc_hash::FxHashMap::default(),
        }
    }

    /// The boost of the best-covered name the chunk defines.
    fn boost(&mut self, chunk: &'g ChunkEntry, tokenizer: &mut CodeTokenizer) -> f32 {
        if self.stems.is_empty() {
            return 0.0;
        }
        let mut best = 0.0f32;
        for name in chunk
            .symbol
            .iter()
            .map(|s| s.name.as_str())
            .chain(chunk.defines.iter().map(String::as_str))
        {
            best = best.max(self.cover(name, tokenizer));
        }
        if best >= NAME_COVERED_MIN {
            NAME_COVERED * best
        } else {
            0.0
        }
    }

    /// Share of the distinct words of `name` (stop words aside) among the question's stems.
    fn cover(&mut self, name: &'g str, tokenizer: &mut CodeTokenizer) -> f32 {
        if let Some(&c) = self.memo.get(name) {
            return c;
        }
        // Most names share no word with the question: a filtered scan (no allocation, only
        // segments that could stem to a question word are stemmed) rules them out before
        // the full analysis that counts the name's words.
        let stems = &self.stems;
        let mut shares = false;
        tokenizer.scan(
            name,
            &|seg| stems.iter().any(|s| may_stem_to(seg, s)),
            &mut |word| shares |= stems.contains(&word),
        );
        // A name may share only a compound with the question (`FileSystem`, `call_back` and
        // "filesystem", "callback"): look for long question words in the name's letters.
        if !shares && stems.iter().any(|s| s.len() >= JOINED_STEM_MIN) {
            let flat: Vec<u8> = name
                .bytes()
                .filter(u8::is_ascii_alphanumeric)
                .map(|b| b.to_ascii_lowercase())
                .collect();
            shares = stems.iter().any(|s| {
                s.len() >= JOINED_STEM_MIN && flat.windows(s.len()).any(|w| w == s.as_bytes())
            });
        }
        if !shares {
            self.memo.insert(name, 0.0);
            return 0.0;
        }
        let tokens = tokenizer.analyze(name);
        let has_parts = tokens.iter().any(|t| t.kind == TokenKind::Part);
        let mut words: Vec<&str> = Vec::new();
        let mut seq: Vec<&str> = Vec::new();
        for t in &tokens {
            let wanted = if has_parts {
                t.kind == TokenKind::Part
            } else {
                t.kind == TokenKind::Whole
            };
            if wanted && seq.last() != Some(&t.text.as_str()) {
                seq.push(&t.text);
            }
            if wanted
                && t.text.len() >= 2
                && !query::is_stop_word(&t.text)
                && !words.contains(&t.text.as_str())
            {
                words.push(&t.text);
            }
        }
        let mut covered: Vec<&str> = words
            .iter()
            .copied()
            .filter(|w| self.stems.contains(w))
            .collect();
        // A question writes as one word what a name spells as two: "filesystem" covers
        // `FileSystem`, "callback" covers `call_back`.
        let mut joined = String::new();
        for pair in seq.windows(2) {
            joined.clear();
            joined.push_str(pair[0]);
            joined.push_str(pair[1]);
            if self.stems.contains(&joined.as_str()) {
                for w in pair {
                    if words.contains(w) && !covered.contains(w) {
                        covered.push(w);
                    }
                }
            }
        }
        let c = if words.is_empty() {
            0.0
        } else {
            covered.len() as f32 / words.len() as f32
        };
        self.memo.insert(name, c);
        c
    }
}

/// Bonus for query terms naming the file or its directories.
fn path_boost(facts: &FileFacts, idents: &[String], parts: &[&str]) -> f32 {
    let mut boost = 0.0;
    if facts
        .stem_tokens
        .iter()
        .any(|t| parts.contains(&t.as_str()))
    {
        boost += PATH_STEM_BONUS;
    }
    if !facts.stem_norm.is_empty() && idents.contains(&facts.stem_norm) {
        boost += PATH_STEM_EXACT_BONUS;
    }
    if facts.dir_tokens.iter().any(|t| parts.contains(&t.as_str())) {
        boost += PATH_DIR_BONUS;
    }
    boost
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How much of `name` the question covers.
    #[track_caller]
    fn check(question: &str, name: &str, expected: f32) {
        let mut tokenizer = CodeTokenizer::default();
        let mut analysis = query::analyze(question, &mut tokenizer);
        let related = vocab::expand(&mut analysis, question, &mut tokenizer);
        let mut cover = NameCover::new(&analysis, &related);
        let got = cover.cover(name, &mut tokenizer);
        assert!(
            (got - expected).abs() < 1e-6,
            "{question:?} covers {got} of {name:?}, expected {expected}"
        );
    }

    #[test]
    fn name_coverage() {
        check("put the bucket into the cache", "set_bucket", 1.0);
        check("put the bucket into the cache", "BucketMap", 0.5);
        check(
            "which loader reads templates from the filesystem",
            "FileSystemLoader",
            1.0,
        );
        check(
            "which loader reads templates from the disk",
            "FileSystemLoader",
            1.0 / 3.0,
        );
        check(
            "register a callback for the event",
            "call_back_registry",
            2.0 / 3.0,
        );
        check("when is the callback run", "call_back", 1.0);
        check("when is the callback run", "back_call", 0.0);
        check("register a callback for the event", "parse_header", 0.0);
    }
}
