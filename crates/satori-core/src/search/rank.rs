//! Ranking the filtered candidates: the fused retrieval score, the code-aware signals
//! (definitions, path words, category under the scope, changed files, names a question
//! describes), and the order. The score formula is [`Scored::total`], and only there; two
//! steps then reorder without being part of it: the kind of definition a question asks for
//! moves up within its file, and raw results decay per file (saturation).
//!
//! A new signal is a field of [`Scored`], its weight in `weights.rs`, its computation in
//! [`Ranker::score`] and its place in [`Scored::total`].

use std::collections::{HashMap, HashSet};

use super::category::{self, Category};
use super::index::{FileFacts, Index};
use super::names::{NameCover, NameMatcher, lower_eq, normalized_eq};
use super::query::{Analysis, KindCue, QueryKind};
use super::retrieve::Candidate;
use super::weights::Weights;
use super::{Fusion, ResultMode, SearchRequest, SearchTuning};
use crate::Result;
use crate::dense::{QueryVector, VectorIndex};
use crate::store::table::ChunkEntry;
use crate::store::tokenizer::CodeTokenizer;

/// A candidate after filtering, with its score parts.
#[derive(Debug, Clone)]
pub(super) struct Scored {
    pub(super) ord: u32,
    pub(super) bm25: f32,
    pub(super) lexical_rank: Option<usize>,
    pub(super) dense: Option<f32>,
    pub(super) dense_rank: Option<usize>,
    /// The fused retrieval score in [0, 1].
    pub(super) fused: f32,
    /// Added for defining what the query names (or describes).
    pub(super) definition: f32,
    /// Added for naming the file or its directories.
    pub(super) path: f32,
    /// Added to a file's best chunk for the file's share of the retrieval score.
    pub(super) coherence: f32,
    /// Added to a file's best chunk for the file's closeness, as a whole, to the query.
    pub(super) file_vector: f32,
    /// Added to a file's best chunk for the share of a question's words its defined names use.
    pub(super) file_names: f32,
    /// Added to a file's best chunk for the share of a question's words its opening
    /// documentation uses.
    pub(super) file_doc: f32,
    /// Added to a file's best chunk for how many other files reach the file.
    pub(super) file_centrality: f32,
    pub(super) category: Category,
    pub(super) category_mult: f32,
    pub(super) changed_mult: f32,
    /// The reranker's score and the candidate's rank in its order, when it reranked.
    pub(super) rerank: Option<(f32, usize)>,
    pub(super) score: f32,
}

impl Scored {
    /// The score formula: retrieval plus the additive signals, times the multipliers.
    fn total(&self) -> f32 {
        (self.fused
            + self.definition
            + self.path
            + self.coherence
            + self.file_vector
            + self.file_names
            + self.file_doc
            + self.file_centrality)
            * self.category_mult
            * self.changed_mult
    }

    /// The score without the file-level boosts: what the chunk itself earned.
    fn merit(&self) -> f32 {
        (self.fused + self.definition + self.path) * self.category_mult * self.changed_mult
    }
}

/// The (lexical, dense) weights of the blend for a query kind: an identifier is best found
/// by its exact spelling, a question by its meaning.
pub(super) fn blend(w: &Weights, kind: QueryKind) -> (f32, f32) {
    match kind {
        QueryKind::Identifier => (w.identifier_lexical, w.identifier_dense),
        QueryKind::Mixed | QueryKind::NaturalLanguage | QueryKind::Empty => {
            (w.question_lexical, w.question_dense)
        }
    }
}

/// Everything ranking reads besides the candidates, fixed for one search.
pub(super) struct Ranker<'a> {
    pub(super) ix: &'a Index,
    pub(super) req: &'a SearchRequest,
    pub(super) analysis: &'a Analysis,
    /// Related code words of the question's words.
    pub(super) related: &'a [String],
    /// Root-relative paths changed in the working tree (empty: no boost).
    pub(super) changed: HashSet<&'a str>,
    pub(super) tuning: &'a SearchTuning,
    pub(super) weights: &'a Weights,
    /// The query's embedding and the vectors, when the search has them.
    pub(super) vectors: Option<(&'a QueryVector, &'a dyn VectorIndex)>,
    /// The query is a name and a word or two (`OneOf validator`, `Entry struct`): a lookup
    /// of the name rather than a description (see [`Ranker::is_short_question`]).
    pub(super) short_question: bool,
}

impl<'a> Ranker<'a> {
    /// Whether a question of this kind and text is short enough to be a lookup of the
    /// identifier it names: at most `short_question_words` words.
    pub(super) fn is_short_question(analysis: &Analysis, query: &str, w: &Weights) -> bool {
        analysis.kind != QueryKind::Identifier
            && !analysis.identifiers.is_empty()
            && query.split_whitespace().count() <= w.short_question_words
    }

    /// The changed files of a request that the boost applies to: none when the list is
    /// too long to say anything (a branch switch, a mass rename).
    pub(super) fn changed_files(
        req: &'a SearchRequest,
        tuning: &SearchTuning,
        w: &Weights,
    ) -> HashSet<&'a str> {
        match &req.changed_files {
            Some(list)
                if tuning.changed && !list.is_empty() && list.len() <= w.changed_max_files =>
            {
                list.iter()
                    .map(|p| p.trim_start_matches("./").trim_start_matches('/'))
                    .collect()
            }
            _ => HashSet::new(),
        }
    }

    /// Scores the candidates and orders them (file saturation included).
    pub(super) fn rank(
        &self,
        survivors: &[Candidate],
        tokenizer: &mut CodeTokenizer,
    ) -> Result<Vec<Scored>> {
        let w = self.weights;
        let norm = Normalizer::of(survivors, w.dense_spread_min);
        let mut names = NameMatcher::new(self.analysis);
        let mut scored: Vec<Scored> = survivors
            .iter()
            .map(|c| self.score(c, &norm, &mut names, tokenizer))
            .collect();
        if self.tuning.path
            && w.path_words_idf
            && self.analysis.kind != QueryKind::Identifier
            && !self.analysis.words.is_empty()
        {
            self.path_words_idf(&mut scored);
        }
        if self.tuning.coherence && w.file_coherence > 0.0 && !self.analysis.terms.is_empty() {
            self.coherence_boost(&mut scored);
        }
        if let (true, Some(vectors)) = (
            self.tuning.file_vector
                && w.file_vector > 0.0
                && self.analysis.kind != QueryKind::Identifier,
            self.vectors,
        ) {
            self.file_vector_boost(&mut scored, vectors)?;
        }
        if self.tuning.file_words
            && (w.file_names > 0.0 || w.file_doc > 0.0)
            && self.analysis.kind != QueryKind::Identifier
            && !self.analysis.words.is_empty()
        {
            self.file_words_boost(&mut scored)?;
        }
        if self.tuning.centrality
            && w.file_centrality > 0.0
            && self.analysis.kind != QueryKind::Identifier
        {
            self.centrality_boost(&mut scored)?;
        }
        if self.tuning.names && self.analysis.kind != QueryKind::Identifier {
            let mut covered = NameCover::new(self.analysis, self.related, w);
            self.name_cover_boost(&mut scored, &mut covered, tokenizer);
        }
        if let (true, Some(cue)) = (self.tuning.kind, self.analysis.asks_for) {
            self.promote_kind(&mut scored, cue);
        }
        self.sort(&mut scored);
        // Grouped results cap the groups of a file already; a further decay there only
        // pushes a file's second relevant symbol below weaker ones elsewhere. Raw chunks
        // have no cap, so they decay.
        if self.tuning.saturation && self.req.result_mode == ResultMode::Raw {
            // The k-th chunk of a file keeps file_saturation^k of its score.
            let mut seen: HashMap<u32, i32> = HashMap::new();
            for s in &mut scored {
                let k = seen.entry(self.ix.chunk(s.ord).file).or_insert(0);
                s.score *= w.file_saturation.powi(*k);
                *k += 1;
            }
            self.sort(&mut scored);
        }
        Ok(scored)
    }

    /// The score of one candidate.
    fn score<'g>(
        &self,
        c: &Candidate,
        norm: &Normalizer,
        names: &mut NameMatcher<'_, 'g>,
        tokenizer: &mut CodeTokenizer,
    ) -> Scored
    where
        'a: 'g,
    {
        let (w, tuning, analysis) = (self.weights, self.tuning, self.analysis);
        let chunk = self.ix.chunk(c.ord);
        let file = self.ix.file(chunk.file);
        let facts = self.ix.facts(chunk.file);
        let fused = norm.fused(c, tuning.fusion, blend(w, analysis.kind), w.rrf_k);
        // Definition and path signals are about names. For an identifier query they are
        // decisive; in a question, words that happen to be names (`get`, `request`) are
        // noise, so only an explicitly code-shaped identifier counts, and less.
        let ident_q = analysis.kind == QueryKind::Identifier;
        let definition = if tuning.definition {
            let d = definition_boost(chunk, facts, analysis, names, tokenizer, w);
            if ident_q {
                d
            } else if self.short_question {
                d * w.definition_in_short_question
            } else {
                d * w.definition_in_question
            }
        } else {
            0.0
        };
        let path = match (tuning.path, ident_q) {
            (false, _) => 0.0,
            (true, true) => path_boost(facts, &names.idents, &names.parts, w),
            // Weighed by rarity, the words need every candidate's file: a pass after this one.
            (true, false) if w.path_words_idf => 0.0,
            (true, false) => path_words_boost(facts, &analysis.words, w),
        };
        let mut chunk_category = category::of_chunk(facts.category, file.language, chunk);
        // An older major version kept beside the current one is compat code, unless the
        // query names that version.
        if chunk_category == Category::Runtime
            && let Some(version) = self.ix.superseded_version(chunk.file)
            && !analysis
                .terms
                .iter()
                .any(|t| t.text.eq_ignore_ascii_case(version))
        {
            chunk_category = Category::Compat;
        }
        let category_mult = if tuning.category {
            w.category(self.req.scope, chunk_category).unwrap_or(0.0)
        } else {
            1.0
        };
        let changed_mult = if self.changed.contains(file.path.as_str()) {
            w.changed
        } else {
            1.0
        };
        let mut s = Scored {
            ord: c.ord,
            bm25: c.bm25,
            lexical_rank: c.lexical_rank,
            dense: c.dense,
            dense_rank: c.dense_rank,
            fused,
            definition,
            path,
            coherence: 0.0,
            file_vector: 0.0,
            file_names: 0.0,
            file_doc: 0.0,
            file_centrality: 0.0,
            category: chunk_category,
            category_mult,
            changed_mult,
            rerank: None,
            score: 0.0,
        };
        s.score = s.total();
        s
    }

    /// Adds the name-coverage boost: a question that describes a name rather than spelling
    /// it. Only the best-scoring candidates are considered: the boost is small, so a chunk
    /// further down cannot reach the page through it, and analysing the names of every
    /// candidate (a class chunk defines dozens) would cost more than the rest of the ranking.
    fn name_cover_boost<'g>(
        &self,
        scored: &mut [Scored],
        covered: &mut NameCover<'_, 'g>,
        tokenizer: &mut CodeTokenizer,
    ) where
        'a: 'g,
    {
        let top = self.weights.name_cover_candidates;
        let threshold = if top > 0 && scored.len() > top {
            let mut scores: Vec<f32> = scored.iter().map(|s| s.score).collect();
            let (_, nth, _) = scores.select_nth_unstable_by(top - 1, |a, b| b.total_cmp(a));
            *nth
        } else if top == 0 {
            f32::INFINITY
        } else {
            f32::NEG_INFINITY
        };
        for s in scored.iter_mut() {
            // A chunk that already defines a spelled identifier needs no second boost.
            if s.score < threshold || s.definition != 0.0 {
                continue;
            }
            let boost = covered.boost(self.ix.chunk(s.ord), tokenizer);
            if boost > 0.0 {
                s.definition = boost;
                s.score = s.total();
            }
        }
    }

    /// Adds the file-coherence boost to the best chunk of every file among the candidates.
    /// Both the sums and the choice of the best chunk are independent of the order the
    /// candidates came in, so an index written in another order ranks the same.
    fn coherence_boost(&self, scored: &mut [Scored]) {
        let ix = self.ix;
        // Only the best candidates count towards a file's share: a long file collects many
        // weak matches from a large pool, which says little about where the answer lives.
        let pool = self.weights.coherence_pool;
        let floor = if pool > 0 && scored.len() > pool {
            let mut fused: Vec<f32> = scored.iter().map(|s| s.fused).collect();
            let (_, nth, _) = fused.select_nth_unstable_by(pool - 1, |a, b| b.total_cmp(a));
            *nth
        } else {
            f32::NEG_INFINITY
        };
        let mut files: HashMap<u32, (Vec<f32>, usize)> = HashMap::new();
        for (i, s) in scored.iter().enumerate() {
            let e = files.entry(ix.chunk(s.ord).file).or_insert((Vec::new(), i));
            if s.fused >= floor {
                e.0.push(s.fused);
            }
            let best = &scored[e.1];
            let better = s.score.total_cmp(&best.score).then_with(|| {
                ix.chunk(best.ord)
                    .start_line
                    .cmp(&ix.chunk(s.ord).start_line)
            });
            if better.is_gt() {
                e.1 = i;
            }
        }
        let damping = self.weights.coherence_size_damping;
        let sums: Vec<(f32, usize)> = files
            .into_iter()
            .map(|(file, (mut parts, best))| {
                parts.sort_by(|a, b| b.total_cmp(a));
                let sum: f32 = parts.iter().sum();
                let size = if damping > 0.0 {
                    (ix.file_chunks(file).len().max(1) as f32).powf(damping)
                } else {
                    1.0
                };
                (sum / size, best)
            })
            .collect();
        let top = sums.iter().map(|&(sum, _)| sum).fold(0.0f32, f32::max);
        if top <= 0.0 {
            return;
        }
        for (sum, best) in sums {
            let s = &mut scored[best];
            s.coherence = self.weights.file_coherence * sum / top;
            s.score = s.total();
        }
    }

    /// Adds the file-vector boost to the best chunk of each of the leading files: the mean
    /// cosine of all the file's chunks with the query, min-max normalised over the files
    /// compared. The files are those of the best `file_vector_files` candidates (by score so
    /// far): the boost decides among files already in view, and the cosines of every chunk
    /// of every candidate file would cost more than the search.
    fn file_vector_boost(
        &self,
        scored: &mut [Scored],
        (query, vectors): (&QueryVector, &dyn VectorIndex),
    ) -> Result<()> {
        let w = self.weights;
        let files = leading_files(self.ix, scored, w.file_vector_files);
        if files.len() < 2 {
            return Ok(());
        }
        // One request for all the rows: a remote index answers it in one trip.
        let mut rows: Vec<u32> = Vec::new();
        let mut spans: Vec<(usize, usize)> = Vec::with_capacity(files.len());
        for &(file, _) in &files {
            let ords = self.ix.file_chunks(file);
            let ords = &ords[..ords.len().min(w.file_vector_chunks)];
            spans.push((rows.len(), ords.len()));
            rows.extend_from_slice(ords);
        }
        let mut cosines = Vec::with_capacity(rows.len());
        vectors.cosines(query, &rows, &mut cosines)?;
        let means: Vec<f32> = spans
            .iter()
            .map(|&(at, n)| {
                if n == 0 {
                    0.0
                } else {
                    cosines[at..at + n].iter().sum::<f32>() / n as f32
                }
            })
            .collect();
        let (lo, hi) = means
            .iter()
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &m| {
                (lo.min(m), hi.max(m))
            });
        if hi <= lo {
            return Ok(());
        }
        for (&(_, best), mean) in files.iter().zip(means) {
            let s = &mut scored[best];
            s.file_vector = w.file_vector * (mean - lo) / (hi - lo);
            s.score = s.total();
        }
        Ok(())
    }

    /// Recomputes the path-words boost with each question word weighed by how few of the
    /// candidates' files it names: a word that names many of them (`serde` in a package of
    /// `serde_*` directories, `test` among tests) tells them apart less than one that names a
    /// few (`blocking`, `logger`).
    fn path_words_idf(&self, scored: &mut [Scored]) {
        let w = self.weights;
        let words = &self.analysis.words;
        let mut masks: HashMap<u32, Vec<bool>> = HashMap::new();
        for s in scored.iter() {
            let file = self.ix.chunk(s.ord).file;
            masks.entry(file).or_insert_with(|| {
                let facts = self.ix.facts(file);
                words
                    .iter()
                    .map(|word| {
                        facts
                            .stem_tokens
                            .iter()
                            .chain(&facts.parent_tokens)
                            .any(|t| prefix_related(word, t))
                    })
                    .collect()
            });
        }
        let n = masks.len().max(1) as f32;
        let weight: Vec<f32> = (0..words.len())
            .map(|i| {
                let m = masks.values().filter(|u| u[i]).count().max(1) as f32;
                (1.0 + n / m).ln()
            })
            .collect();
        let total: f32 = weight.iter().sum();
        if total <= 0.0 {
            return;
        }
        for s in scored.iter_mut() {
            let mask = &masks[&self.ix.chunk(s.ord).file];
            let share = mask
                .iter()
                .zip(&weight)
                .filter(|(u, _)| **u)
                .map(|(_, x)| x)
                .sum::<f32>()
                / total;
            s.path = if share >= w.path_words_min && mask.iter().any(|u| *u) {
                w.path_words * share
            } else {
                0.0
            };
            s.score = s.total();
        }
    }

    /// Adds the file-words boosts to the best chunk of each of the leading files: the share of
    /// the question's words that the names the file defines use (in any of its chunks, found
    /// or not), and the share its opening documentation uses. A file whose definitions or
    /// whose own description speak the question's words is about what is asked, even when no
    /// single chunk says it all ("how tasks that are not Send run on a single thread" ~ the
    /// file that defines `LocalSet` and `spawn_local`, and opens with "runs `!Send` futures
    /// on the current thread").
    fn file_words_boost(&self, scored: &mut [Scored]) -> Result<()> {
        let w = self.weights;
        let files = leading_files(self.ix, scored, w.file_vector_files);
        if w.file_names > 0.0 {
            let shares = self.word_shares(&files, |file| Ok(self.ix.file_names(file)))?;
            for (&(_, best), share) in files.iter().zip(shares) {
                if share >= w.file_names_min && share > 0.0 {
                    scored[best].file_names = w.file_names * share;
                }
            }
        }
        if w.file_doc > 0.0 {
            let shares = self.word_shares(&files, |file| self.ix.file_doc(file))?;
            for (&(_, best), share) in files.iter().zip(shares) {
                if share >= w.file_doc_min && share > 0.0 {
                    scored[best].file_doc = w.file_doc * share;
                }
            }
        }
        for &(_, best) in &files {
            let s = &mut scored[best];
            s.score = s.total();
        }
        Ok(())
    }

    /// Adds the file-centrality boost to the best chunk of each of the leading files:
    /// `ln(1 + n) / ln(1 + max)`, where `n` is how many other files call into the file or
    /// import it and `max` the largest `n` among the leading files. A log, because the
    /// difference between a file nothing reaches and one that five files reach says more
    /// than the one between fifty and a hundred; relative to the leading files, because
    /// the boost decides among the files in view, whatever the codebase's size.
    fn centrality_boost(&self, scored: &mut [Scored]) -> Result<()> {
        let files = leading_files(self.ix, scored, self.weights.file_vector_files);
        let counts: Vec<u32> = files
            .iter()
            .map(|&(file, _)| self.ix.file_centrality(file))
            .collect::<Result<_>>()?;
        let top = counts.iter().copied().max().unwrap_or(0);
        if top == 0 || files.len() < 2 {
            return Ok(());
        }
        let scale = (1.0 + top as f32).ln();
        let gate = self.weights.file_centrality_gate;
        let lead = files
            .iter()
            .map(|&(_, best)| scored[best].score)
            .fold(0.0f32, f32::max);
        for (&(_, best), n) in files.iter().zip(counts) {
            let s = &mut scored[best];
            let share = if gate > 0.0 && lead > 0.0 {
                (s.score / lead).clamp(0.0, 1.0).powf(gate)
            } else {
                1.0
            };
            s.file_centrality =
                self.weights.file_centrality * share * (1.0 + n as f32).ln() / scale;
            s.score = s.total();
        }
        Ok(())
    }

    /// For each file, the share of the question's words its tokens use. A word the tokens
    /// of many leading files use tells them apart less than one only a few use (`value`,
    /// `type` against `blocking`): with `file_names_idf`, each word weighs the log of the
    /// inverse share of the files that use it (a word none uses, the most).
    fn word_shares<'t>(
        &self,
        files: &[(u32, usize)],
        tokens_of: impl Fn(u32) -> Result<std::borrow::Cow<'t, super::words::Words>>,
    ) -> Result<Vec<f32>>
    where
        'a: 't,
    {
        let words = &self.analysis.words;
        let uses: Vec<Vec<bool>> = files
            .iter()
            .map(|&(file, _)| {
                let tokens = tokens_of(file)?;
                Ok(words
                    .iter()
                    .map(|word| tokens.iter().any(|t| prefix_related(word, t)))
                    .collect())
            })
            .collect::<Result<_>>()?;
        let n = files.len().max(1) as f32;
        let weight: Vec<f32> = (0..words.len())
            .map(|i| {
                if self.weights.file_names_idf {
                    let m = uses.iter().filter(|u| u[i]).count().max(1) as f32;
                    (1.0 + n / m).ln()
                } else {
                    1.0
                }
            })
            .collect();
        let total: f32 = weight.iter().sum();
        Ok(uses
            .iter()
            .map(|used| {
                if total <= 0.0 {
                    return 0.0;
                }
                used.iter()
                    .zip(&weight)
                    .filter(|(u, _)| **u)
                    .map(|(_, x)| x)
                    .sum::<f32>()
                    / total
            })
            .collect())
    }

    /// Moves each chunk of the kind a question asks for to the top of its file, when it
    /// scores at least `kind_promote` of the file's best chunk: its score becomes the best
    /// one's, raised by a hair that keeps the promoted chunks in their own order. Only the
    /// order within a file changes (the best score of a file moves by at most 0.01 %).
    fn promote_kind(&self, scored: &mut [Scored], cue: KindCue) {
        let share = self.weights.kind_promote;
        if share < 0.0 {
            return;
        }
        // The share is judged on the chunks' own merit: the coherence boost is the file's,
        // and given to whichever chunk led, so it must not decide which chunk leads.
        let mut best: HashMap<u32, (f32, f32)> = HashMap::new();
        for s in scored.iter() {
            let b = best.entry(self.ix.chunk(s.ord).file).or_insert((0.0, 0.0));
            *b = (b.0.max(s.score), b.1.max(s.merit()));
        }
        for s in scored.iter_mut() {
            let chunk = self.ix.chunk(s.ord);
            let (b, merit) = best[&chunk.file];
            let asked = chunk
                .symbol
                .as_ref()
                .is_some_and(|sym| cue.matches(sym.kind));
            if asked && merit > 0.0 && s.merit() >= share * merit {
                s.score = b * (1.0 + 1e-4 * (s.merit() / merit));
            }
        }
    }

    /// Sorts again after a later stage (the reranker) rewrote scores.
    pub(super) fn resort(&self, scored: &mut [Scored]) {
        self.sort(scored);
    }

    /// Score descending, then file, start line, symbol label and ordinal ascending.
    fn sort(&self, scored: &mut [Scored]) {
        let ix = self.ix;
        scored.sort_by(|a, b| {
            let (ca, cb) = (ix.chunk(a.ord), ix.chunk(b.ord));
            b.score
                .total_cmp(&a.score)
                .then_with(|| ix.file(ca.file).path.cmp(&ix.file(cb.file).path))
                .then(ca.start_line.cmp(&cb.start_line))
                .then_with(|| label(ca).cmp(label(cb)))
                .then(a.ord.cmp(&b.ord))
        });
    }
}

/// The files of the best `top` candidates (by score so far), each with its best candidate's
/// position, best file first.
fn leading_files(ix: &Index, scored: &[Scored], top: usize) -> Vec<(u32, usize)> {
    let mut order: Vec<usize> = (0..scored.len()).collect();
    order.sort_by(|&a, &b| {
        scored[b]
            .score
            .total_cmp(&scored[a].score)
            .then(scored[a].ord.cmp(&scored[b].ord))
    });
    let mut files: Vec<(u32, usize)> = Vec::new();
    for &i in order.iter().take(top) {
        let file = ix.chunk(scored[i].ord).file;
        if !files.iter().any(|&(f, _)| f == file) {
            files.push((file, i));
        }
    }
    files
}

fn label(c: &ChunkEntry) -> &str {
    c.symbol.as_ref().map_or("", |s| s.label.as_str())
}

/// How the retrieval scores of one search are brought to [0, 1] and fused.
struct Normalizer {
    /// The best BM25 score among the candidates.
    top: f32,
    /// The cosine range among the candidates (infinite when none has a cosine).
    dmin: f32,
    dmax: f32,
}

impl Normalizer {
    fn of(survivors: &[Candidate], spread_min: f32) -> Normalizer {
        let top = survivors.iter().map(|c| c.bm25).fold(0.0f32, f32::max);
        // Cosines are min-max normalised over the candidates: their absolute level says
        // little (a static model's cosines bunch together), their spread among candidates
        // says much. Not below `spread_min`, though: among a few near-equal candidates (the
        // same definition in two directories) a difference in the third decimal would
        // otherwise become the whole dense weight.
        let (lo, dmax) = survivors
            .iter()
            .filter_map(|c| c.dense)
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), d| {
                (lo.min(d), hi.max(d))
            });
        let dmin = if dmax.is_finite() {
            lo.min(dmax - spread_min)
        } else {
            lo
        };
        Normalizer { top, dmin, dmax }
    }

    fn fused(
        &self,
        c: &Candidate,
        fusion: Fusion,
        (w_lexical, w_dense): (f32, f32),
        rrf_k: f32,
    ) -> f32 {
        let Normalizer { top, dmin, dmax } = *self;
        let has_dense = dmax.is_finite();
        let lexical = if top > 0.0 { c.bm25 / top } else { 0.0 };
        let dense = match c.dense {
            Some(d) if has_dense && dmax > dmin => (d - dmin) / (dmax - dmin),
            Some(_) if has_dense => 1.0,
            _ => 0.0,
        };
        if top <= 0.0 && !has_dense {
            // Operator-only searches have no retrieval score: every candidate starts equal.
            1.0
        } else if !has_dense {
            lexical
        } else if top <= 0.0 {
            dense
        } else {
            match fusion {
                Fusion::Blend => w_lexical * lexical + w_dense * dense,
                Fusion::Rrf => {
                    let rr = |r: Option<usize>| r.map_or(0.0, |r| 1.0 / (rrf_k + 1.0 + r as f32));
                    (rr(c.lexical_rank) + rr(c.dense_rank)) / (2.0 / (rrf_k + 1.0))
                }
            }
        }
    }
}

/// How strongly a chunk defines what the query names.
fn definition_boost<'g>(
    chunk: &'g ChunkEntry,
    facts: &FileFacts,
    analysis: &Analysis,
    names: &mut NameMatcher<'_, 'g>,
    tokenizer: &mut CodeTokenizer,
    w: &Weights,
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
    let mut folded = false;
    for n in chunk_names() {
        match names.spells(n) {
            Some(true) => {
                return w.definition_exact + qualified_boost(chunk, facts, &names.qualified, w);
            }
            Some(false) => folded = true,
            None => {}
        }
    }
    if folded {
        return w.definition_exact * w.definition_case_folded
            + qualified_boost(chunk, facts, &names.qualified, w);
    }
    // Beyond exact identifiers, only an identifier query's words and parts name things.
    if analysis.kind != QueryKind::Identifier {
        return 0.0;
    }
    if chunk_names().any(|n| analysis.words.iter().any(|word| lower_eq(n, word))) {
        return w.definition_word;
    }
    if names.parts.is_empty() {
        return 0.0;
    }
    let found = chunk_names().fold(0u128, |acc, n| acc | names.parts_of(n, tokenizer));
    w.definition_parts * found.count_ones() as f32 / names.parts.len() as f32
}

/// Bonus for defining a name the query wrote with its qualifier (`ExUnit.Test`,
/// `DBImpl::Write`, `connectionpool.HTTPConnectionPool`) inside that qualifier: the chunk's
/// symbol is the name and its innermost enclosing scope, or its file, is the qualifier; or
/// the chunk (small definitions merged into one) defines both. Among the many definitions of
/// a common name (`Test`, `Write`, `Error`), that is the one the query means.
fn qualified_boost(
    chunk: &ChunkEntry,
    facts: &FileFacts,
    qualified: &[(String, String)],
    w: &Weights,
) -> f32 {
    if qualified.is_empty() || w.definition_qualified == 0.0 {
        return 0.0;
    }
    let defines = |n: &str| {
        chunk.defines.iter().any(|d| normalized_eq(d, n))
            || chunk
                .symbol
                .as_ref()
                .is_some_and(|s| normalized_eq(&s.name, n))
    };
    let meant = qualified.iter().any(|(qualifier, name)| {
        if !defines(name) {
            return false;
        }
        if defines(qualifier) || facts.stem_norm == *qualifier {
            return true;
        }
        // The symbol's innermost scope, by its last segment (`Case` of `ExUnit.Case`).
        chunk.symbol.as_ref().is_some_and(|s| {
            normalized_eq(&s.name, name)
                && s.scope
                    .last()
                    .and_then(|sc| sc.rsplit(['.', ':']).find(|p| !p.is_empty()))
                    .is_some_and(|sc| normalized_eq(sc, qualifier))
        })
    });
    if meant { w.definition_qualified } else { 0.0 }
}

/// Bonus for a question's words naming the file or its directory: the share of the words
/// found among the tokens of the file's stem and of its parent directory's name.
fn path_words_boost(facts: &FileFacts, words: &[String], w: &Weights) -> f32 {
    if words.is_empty() || w.path_words == 0.0 {
        return 0.0;
    }
    let names_word = |word: &str| {
        facts
            .stem_tokens
            .iter()
            .chain(&facts.parent_tokens)
            .any(|t| prefix_related(word, t))
    };
    let share = words.iter().filter(|word| names_word(word)).count() as f32 / words.len() as f32;
    if share >= w.path_words_min {
        w.path_words * share
    } else {
        0.0
    }
}

/// Equal, or one starts with the other and the shorter has at least three characters
/// (`route` ~ `router`, `dependencies` ~ `depend`).
fn prefix_related(a: &str, b: &str) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    short == long || (short.len() >= 3 && long.starts_with(short))
}

/// Bonus for query terms naming the file or its directories.
fn path_boost(facts: &FileFacts, idents: &[String], parts: &[&str], w: &Weights) -> f32 {
    let mut boost = 0.0;
    if facts
        .stem_tokens
        .iter()
        .any(|t| parts.contains(&t.as_str()))
    {
        boost += w.path_stem;
    }
    if !facts.stem_norm.is_empty() && idents.contains(&facts.stem_norm) {
        boost += w.path_stem_exact;
    }
    if facts.dir_tokens.iter().any(|t| parts.contains(&t.as_str())) {
        boost += w.path_dir;
    }
    boost
}
