//! One search, stage by stage: read the query, build the filters, embed the query, retrieve
//! and filter candidates, rank them, and turn the ranked chunks into hits. Each stage lives
//! in its own module; this one only sequences them and fills the diagnostics.

use std::collections::BTreeSet;

use super::filter::{self, Filters, TokenRuns};
use super::group;
use super::index::Index;
use super::query;
use super::rank::{self, Ranker};
use super::rerank;
use super::retrieve::{self, Retrieval};
use super::vocab;
use super::{
    Fusion, FusionReport, Hit, NoiseReport, ResultMode, RetrievalMode, Scope, SearchContext,
    SearchDiagnostics, SearchOutcome, SearchRequest,
};
use crate::Result;
use crate::dense::{QueryVector, VectorIndex};
use crate::store::tokenizer::CodeTokenizer;

/// Runs one search over an index.
pub fn search(ix: &Index, req: &SearchRequest, ctx: SearchContext<'_>) -> Result<SearchOutcome> {
    let limit = req.page_size();
    let tuning = &ctx.tuning;
    let weights = &tuning.weights;

    // The query: operators, kind, weighted terms, related words.
    let parsed = query::parse(&req.query);
    let mut tokenizer = CodeTokenizer::default();
    let mut analysis = query::analyze(&parsed.text, &mut tokenizer, weights);
    let related = if tuning.expansion {
        vocab::expand(&mut analysis, &parsed.text, &mut tokenizer, weights)
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

    // The filters.
    let must_runs: Vec<TokenRuns> = parsed
        .must
        .iter()
        .map(|v| filter::token_runs(v, &mut tokenizer))
        .collect();
    let mut filters = Filters::new(
        ix,
        req,
        &parsed,
        &must_runs,
        weights,
        &mut tokenizer,
        &mut warnings,
    )?;
    let has_text = !analysis.terms.is_empty();
    if !has_text && !parsed.can_rank_without_text() {
        warnings.insert("EMPTY_QUERY".to_string());
        diagnostics.retrieval_mode = RetrievalMode::Skipped;
        return Ok(finish(Vec::new(), warnings, diagnostics, None));
    }

    // The query embedding, when the generation has vectors and dense retrieval is on.
    let layered = ix.vectors();
    let vectors = layered.as_ref().map(|v| v as &dyn VectorIndex);
    let qvec = match (ctx.embedder, vectors) {
        (Some(embedder), Some(v)) if tuning.dense && has_text && embedder.dim() == v.dim() => {
            let values = embedder.embed(&[parsed.text.as_str()])?.pop();
            values
                .filter(|values| values.len() == v.dim())
                .map(|values| QueryVector::new(&values))
                .filter(|q| !q.is_zero())
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

    // Retrieval and filtering.
    let retrieval = Retrieval {
        query: if use_lexical {
            retrieve::lexical_query(
                &analysis,
                &must_runs,
                tuning.fields,
                tuning.path_field,
                weights,
            )
        } else {
            None
        },
        lexical: use_lexical,
        vector: qvec.as_ref().zip(vectors),
        definitions: if tuning.definition && use_lexical {
            retrieve::definition_query(&analysis, &mut tokenizer, weights)
        } else {
            None
        },
    };
    let survivors = retrieve::retrieve(
        ix,
        &retrieval,
        &mut filters,
        limit,
        weights,
        &mut diagnostics,
    )?;
    diagnostics.after_filters = survivors.len();
    if !parsed.must.is_empty() && survivors.is_empty() {
        warnings.insert("FILTER_MUST_UNSATISFIED".to_string());
    }

    // Ranking.
    let (w_lexical, w_dense) = rank::blend(weights, analysis.kind);
    diagnostics.fusion = Some(match tuning.fusion {
        Fusion::Blend => FusionReport::Blend {
            lexical_weight: w_lexical,
            dense_weight: w_dense,
        },
        Fusion::Rrf => FusionReport::Rrf { k: weights.rrf_k },
    });
    let ranker = Ranker {
        ix,
        req,
        analysis: &analysis,
        related: &related,
        changed: Ranker::changed_files(req, tuning, weights),
        tuning,
        weights,
        vectors: qvec.as_ref().zip(vectors),
        short_question: Ranker::is_short_question(&analysis, &parsed.text, weights),
    };
    let mut scored = ranker.rank(&survivors, &mut tokenizer)?;

    // Reranking, before grouping: it may change which chunk stands for a group.
    let report = rerank::rerank(
        ix,
        &mut scored,
        &parsed.text,
        analysis.kind,
        req,
        rerank::RerankSetup {
            weight: weights.rerank_weight,
            ..ctx.rerank
        },
        &mut warnings,
    )?;
    if report.decision == "applied" {
        ranker.resort(&mut scored);
    }
    diagnostics.rerank = Some(report);

    // Hits.
    let hits = match req.result_mode {
        ResultMode::Raw => group::raw_hits(ix, req, &scored, limit)?,
        ResultMode::Grouped => group::grouped_hits(
            ix,
            req,
            &scored,
            &analysis,
            tuning,
            &mut tokenizer,
            &mut diagnostics,
        )?,
    };
    // In docs scope tests and docs are what was asked for, not noise.
    let noise = if req.scope == Scope::Docs {
        None
    } else {
        group::noise_report(&hits)
    };
    Ok(finish(hits, warnings, diagnostics, noise))
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
