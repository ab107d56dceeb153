//! Retrieval: the BM25 query a request asks the generation for, the dense neighbours of the
//! query vector, their union as candidates, and the pool that grows while the filters starve
//! it and the retrievers still have more to give.

use std::collections::{HashMap, HashSet};

use super::SearchDiagnostics;
use super::filter::{Filters, Stage, TokenRuns};
use super::index::Index;
use super::query::Analysis;
use super::weights::Weights;
use crate::Result;
use crate::dense::{Neighbor, QueryVector, VectorIndex};
use crate::store::tokenizer::{CodeTokenizer, TokenKind};
use crate::store::{LexicalQuery, Occur, TextField};

/// A retrieved chunk before scoring.
#[derive(Debug, Clone, Copy)]
pub(super) struct Candidate {
    pub(super) ord: u32,
    pub(super) bm25: f32,
    pub(super) lexical_rank: Option<usize>,
    pub(super) dense: Option<f32>,
    pub(super) dense_rank: Option<usize>,
}

/// The text fields with their boosts.
fn fields(w: &Weights) -> [(TextField, f32); 3] {
    [
        (TextField::Symbols, w.symbols_field),
        (TextField::Path, w.path_field),
        (TextField::Content, w.content_field),
    ]
}

fn term(field: TextField, text: &str, boost: f32) -> LexicalQuery {
    LexicalQuery::Term {
        field,
        text: text.to_string(),
        boost,
    }
}

/// The BM25 query: every term in every field (weighted; in the chunk's text only without
/// `all_fields`, and not in the path without `path_field`), plus each `must:` value as a required clause so that must-heavy searches
/// are not starved by a small pool. `None` when there is nothing to ask.
pub(super) fn lexical_query(
    analysis: &Analysis,
    must_runs: &[TokenRuns],
    all_fields: bool,
    path_field: bool,
    w: &Weights,
) -> Option<LexicalQuery> {
    let mut clauses: Vec<(Occur, LexicalQuery)> = Vec::new();
    for t in &analysis.terms {
        // Without the weighted fields (an ablation), the words are scored on the chunk's
        // text alone: plain BM25. `must:` values keep every field, as their filter does.
        for (field, boost) in fields(w)
            .into_iter()
            .filter(|&(field, _)| all_fields || field == TextField::Content)
            .filter(|&(field, _)| path_field || field != TextField::Path)
        {
            clauses.push((Occur::Should, term(field, &t.text, boost * t.weight)));
        }
    }
    for runs in must_runs {
        clauses.push((Occur::Must, must_clause(runs, w)));
    }
    if clauses.is_empty() {
        None
    } else {
        Some(LexicalQuery::Bool(clauses))
    }
}

/// One `must:` value as a query clause: each run must appear in some field.
fn must_clause(runs: &TokenRuns, w: &Weights) -> LexicalQuery {
    LexicalQuery::Bool(
        runs.iter()
            .map(|spellings| {
                let alternatives = fields(w)
                    .into_iter()
                    .flat_map(|(field, boost)| {
                        spellings
                            .iter()
                            .map(move |s| (Occur::Should, term(field, s, boost)))
                    })
                    .collect();
                (Occur::Must, LexicalQuery::Bool(alternatives))
            })
            .collect(),
    )
}

/// The query that looks up the chunks defining the query's identifiers, by the defined-names
/// field alone; `None` without identifiers or with the lookup off.
pub(super) fn definition_query(
    analysis: &Analysis,
    tokenizer: &mut CodeTokenizer,
    w: &Weights,
) -> Option<LexicalQuery> {
    if w.definition_lookup == 0 {
        return None;
    }
    let clauses: Vec<(Occur, LexicalQuery)> = analysis
        .identifiers
        .iter()
        .flat_map(|ident| tokenizer.analyze(ident))
        .filter(|t| t.kind == TokenKind::Whole)
        .map(|t| (Occur::Should, term(TextField::Symbols, &t.text, 1.0)))
        .collect();
    (!clauses.is_empty()).then_some(LexicalQuery::Bool(clauses))
}

/// What the retrievers are asked.
pub(super) struct Retrieval<'q> {
    /// The BM25 query; `None` with `lexical` on means operator-only (`path:`/`lang:`): every
    /// chunk is a candidate, ranked by the signals that do not need text.
    pub(super) query: Option<LexicalQuery>,
    pub(super) lexical: bool,
    pub(super) vector: Option<(&'q QueryVector, &'q dyn VectorIndex)>,
    /// See [`definition_query`].
    pub(super) definitions: Option<LexicalQuery>,
}

/// Retrieves candidates and filters them, growing the pool while the filters leave fewer
/// than `needed` and a retriever filled the pool it was given. Returns the survivors, in
/// retrieval order.
pub(super) fn retrieve(
    ix: &Index,
    r: &Retrieval<'_>,
    filters: &mut Filters<'_>,
    limit: usize,
    w: &Weights,
    diagnostics: &mut SearchDiagnostics,
) -> Result<Vec<Candidate>> {
    let needed = limit * 3;
    let mut pool = (limit * 10).clamp(w.pool_min, w.pool_first_max);
    let mut dense_all: Vec<Neighbor> = Vec::new();
    let mut dense_asked = 0;
    let lexical_of = |pool: usize| -> Result<Vec<(f32, u32)>> {
        Ok(match &r.query {
            Some(q) => ix.bm25_top(q, pool)?,
            None if r.lexical => ix.live_ordinals().map(|o| (0.0, o)).collect(),
            None => Vec::new(),
        })
    };
    loop {
        let lexical = match r.vector {
            Some((q, vectors)) if pool > dense_asked => {
                // The two retrievers are independent: on a multi-core machine the vector
                // scan runs beside the BM25 query instead of after it. The calling thread
                // runs the BM25 leg itself, which saves a thread hand-off per search.
                let mut dense = Ok(Vec::new());
                let lexical = rayon::in_place_scope(|s| {
                    s.spawn(|_| dense = vectors.top_k(q, pool));
                    lexical_of(pool)
                });
                dense_all = dense?;
                dense_asked = pool;
                lexical?
            }
            _ => lexical_of(pool)?,
        };
        let dense = &dense_all[..];
        diagnostics.lexical_candidates = lexical.len();
        diagnostics.dense_candidates = dense.len();
        let candidates = merge(&lexical, dense, r.vector)?;
        let mut counts = [0usize; Stage::ALL.len()];
        let mut survivors = Vec::new();
        for c in &candidates {
            let failed_at = filters
                .first_failure(ix, c.ord)
                .map_or(Stage::ALL.len(), |s| s as usize);
            for n in counts.iter_mut().take(failed_at) {
                *n += 1;
            }
            if failed_at == Stage::ALL.len() {
                survivors.push(*c);
            }
        }
        diagnostics.filter_counts = Stage::ALL
            .iter()
            .zip(counts)
            .map(|(s, c)| (s.id().to_string(), c))
            .collect();
        diagnostics.candidates = candidates.len();
        let lexical_done = r.query.is_none() || lexical.len() < pool;
        let dense_done = r.vector.is_none() || dense.len() < pool;
        if survivors.len() >= needed || (lexical_done && dense_done) || pool >= w.pool_max {
            add_definitions(ix, r, filters, w, &mut survivors)?;
            return Ok(survivors);
        }
        pool = (pool * 4).min(w.pool_max);
    }
}

/// Adds the chunks that define the query's identifiers and that retrieval did not find (a
/// long definition whose body shares few words with the query, a name spelled differently
/// in the text), with no retrieval score of their own: the definition signal ranks them.
fn add_definitions(
    ix: &Index,
    r: &Retrieval<'_>,
    filters: &mut Filters<'_>,
    w: &Weights,
    survivors: &mut Vec<Candidate>,
) -> Result<()> {
    let Some(q) = &r.definitions else {
        return Ok(());
    };
    let known: HashSet<u32> = survivors.iter().map(|c| c.ord).collect();
    let mut added: Vec<Candidate> = ix
        .bm25_top(q, w.definition_lookup)?
        .into_iter()
        .filter(|&(_, ord)| !known.contains(&ord) && filters.first_failure(ix, ord).is_none())
        .map(|(_, ord)| Candidate {
            ord,
            bm25: 0.0,
            lexical_rank: None,
            dense: None,
            dense_rank: None,
        })
        .collect();
    if let Some((qv, vectors)) = r.vector {
        let ords: Vec<u32> = added.iter().map(|c| c.ord).collect();
        let mut cosines = Vec::with_capacity(ords.len());
        vectors.cosines(qv, &ords, &mut cosines)?;
        for (c, cosine) in added.iter_mut().zip(cosines) {
            c.dense = Some(cosine);
        }
    }
    survivors.extend(added);
    Ok(())
}

/// The union of both retrievers' candidates: lexical ones in their order, then dense-only
/// ones in theirs. Every candidate gets its cosine when vectors exist, so a chunk found only
/// lexically still has a dense score to blend.
fn merge(
    lexical: &[(f32, u32)],
    dense: &[Neighbor],
    vector: Option<(&QueryVector, &dyn VectorIndex)>,
) -> Result<Vec<Candidate>> {
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
    if let Some((q, vectors)) = vector {
        // One request for all the missing cosines: a remote index answers it in one trip.
        let missing: Vec<u32> = out
            .iter()
            .filter(|c| c.dense.is_none())
            .map(|c| c.ord)
            .collect();
        let mut cosines = Vec::with_capacity(missing.len());
        vectors.cosines(q, &missing, &mut cosines)?;
        for (c, cosine) in out.iter_mut().filter(|c| c.dense.is_none()).zip(cosines) {
            c.dense = Some(cosine);
        }
    }
    Ok(out)
}
