//! The optional reranking stage of a search: the best candidates, each as its path and
//! text, are scored by a [`Reranker`] (a model on this machine or a rerank API), and the
//! reranker's order is fused with the engine's by rank, so that neither scale has to be
//! trusted against the other.
//!
//! Whether it runs is decided here, from the caller's `useReranker` (true forces it, false
//! turns it off) and, when that is omitted, the engine's default, which still leaves out what
//! a reranker does not help: `docs` scope and identifier queries. A reranker that fails leaves
//! the engine's order as it was, with the `RERANKER_FAILED` warning.

use std::collections::BTreeSet;
use std::time::Instant;

use super::index::Index;
use super::rank::Scored;
use super::{QueryKind, Scope, SearchRequest};
use crate::Result;

/// Candidates handed to the reranker: the best of the engine's order.
pub const TOP_K: usize = 50;
/// A candidate's text is cut to this many lines and characters (its path comes first).
pub const DOC_MAX_LINES: usize = 200;
pub const DOC_MAX_CHARS: usize = 4000;
/// Rank fusion: a candidate at (0-based) rank r of an order earns `weight / (RRF_K + r + 1)`,
/// the engine's order with weight 1 and the reranker's with its own weight
/// ([`Reranker::weight`], by default `RERANK_WEIGHT`): a cross-encoder reads each candidate's
/// text against the question, which is what it is there for, so its order leads and the
/// engine's breaks its near-ties.
pub const RRF_K: f32 = 10.0;
pub const RERANK_WEIGHT: f32 = 2.0;

/// A model or service that scores documents by their relevance to a query.
pub trait Reranker: Send + Sync + std::fmt::Debug {
    /// What reranks, as `provider/model`, for debug output and telemetry.
    fn id(&self) -> &str;

    /// How much its order counts in the rank fusion, the engine's counting 1 (a cross-encoder
    /// reads each candidate against the question and leads; a weaker reranker only nudges).
    fn weight(&self) -> f32 {
        RERANK_WEIGHT
    }

    /// One relevance score per document, in the documents' order (higher is more relevant).
    fn scores(
        &self,
        query: &str,
        documents: &[String],
    ) -> std::result::Result<Vec<f32>, RerankError>;
}

/// Why a reranker gave no scores.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RerankError {
    /// The reranker could not be asked (unreachable, refused, timed out).
    #[error("{0}")]
    Call(String),
    /// It answered something that is not one score per document.
    #[error("{0}")]
    Answer(String),
}

impl RerankError {
    /// Where it failed, as the debug output names it.
    pub fn phase(&self) -> &'static str {
        match self {
            RerankError::Call(_) => "api_call",
            RerankError::Answer(_) => "parse_results",
        }
    }
}

/// What the reranking stage did in one search (debug output and telemetry).
#[derive(Debug, Clone, PartialEq)]
pub struct RerankReport {
    /// The reranker the engine has, if any (`provider/model`).
    pub reranker: Option<String>,
    /// What the caller asked (`useReranker`), `None` when omitted.
    pub requested: Option<bool>,
    /// Whether the engine reranks when the caller does not say.
    pub by_default: bool,
    /// `applied`, `failed`, or why it did not run: `disabled` (asked off, or off by default),
    /// `unavailable` (no reranker), `docs_scope`, `identifier_query`, `no_candidates`.
    pub decision: &'static str,
    /// Candidates handed to the reranker.
    pub candidates: usize,
    /// Time the reranker took.
    pub millis: f64,
    /// `api_call` or `parse_results` when it failed.
    pub failure_phase: Option<&'static str>,
    pub error: Option<String>,
}

/// The reranking setup of a search: the engine's reranker and its default.
#[derive(Clone, Copy)]
pub struct RerankSetup<'a> {
    pub reranker: Option<&'a dyn Reranker>,
    pub by_default: bool,
    /// The reranker's weight in the fusion when not negative (`Weights::rerank_weight`);
    /// negative: the reranker's own.
    pub weight: f32,
}

impl Default for RerankSetup<'_> {
    /// No reranker.
    fn default() -> Self {
        RerankSetup {
            reranker: None,
            by_default: false,
            weight: -1.0,
        }
    }
}

impl std::fmt::Debug for RerankSetup<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RerankSetup")
            .field("reranker", &self.reranker.map(|r| r.id()))
            .field("by_default", &self.by_default)
            .field("weight", &self.weight)
            .finish()
    }
}

/// Reranks `scored` (sorted best first) in place when the setup and the request say so, and
/// reports what it did; a failure adds `RERANKER_FAILED` to `warnings`.
pub(super) fn rerank(
    ix: &Index,
    scored: &mut [Scored],
    query: &str,
    kind: QueryKind,
    req: &SearchRequest,
    setup: RerankSetup<'_>,
    warnings: &mut BTreeSet<String>,
) -> Result<RerankReport> {
    let (scope, requested) = (req.scope, req.use_reranker);
    let mut report = RerankReport {
        reranker: setup.reranker.map(|r| r.id().to_owned()),
        requested,
        by_default: setup.by_default,
        decision: "disabled",
        candidates: 0,
        millis: 0.0,
        failure_phase: None,
        error: None,
    };
    let forced = requested == Some(true);
    report.decision = match (requested.unwrap_or(setup.by_default), setup.reranker) {
        (false, _) => return Ok(report),
        (true, None) => "unavailable",
        _ if !forced && scope == Scope::Docs => "docs_scope",
        _ if !forced && kind == QueryKind::Identifier => "identifier_query",
        _ if scored.is_empty() => "no_candidates",
        (true, Some(_)) => "applied",
    };
    let Some(reranker) = setup.reranker.filter(|_| report.decision == "applied") else {
        return Ok(report);
    };
    let top = scored.len().min(TOP_K);
    let mut documents = Vec::with_capacity(top);
    for s in &scored[..top] {
        let chunk = ix.chunk(s.ord);
        documents.push(document(
            &ix.file(chunk.file).path,
            &ix.chunk_content(s.ord)?,
        ));
    }
    report.candidates = top;
    let started = Instant::now();
    // A reranker that panics is a failed reranker, not a damaged index (the search runs
    // under the guard that reads a panic as damage).
    let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        reranker.scores(query, &documents)
    }))
    .unwrap_or_else(|_| Err(RerankError::Call(format!("{} panicked", reranker.id()))))
    .and_then(|scores| {
        if scores.len() != top {
            Err(RerankError::Answer(format!(
                "{} scores for {top} documents",
                scores.len()
            )))
        } else if scores.iter().any(|s| !s.is_finite()) {
            Err(RerankError::Answer(
                "a score that is not a number".to_owned(),
            ))
        } else {
            Ok(scores)
        }
    });
    report.millis = started.elapsed().as_secs_f64() * 1000.0;
    match answer {
        Ok(scores) => {
            let weight = if setup.weight >= 0.0 {
                setup.weight
            } else {
                reranker.weight()
            };
            fuse(&mut scored[..top], &scores, weight);
        }
        Err(e) => {
            report.decision = "failed";
            report.failure_phase = Some(e.phase());
            report.error = Some(e.to_string());
            warnings.insert("RERANKER_FAILED".to_owned());
        }
    }
    Ok(report)
}

/// The text a reranker reads for one candidate: its path, a newline, and its first lines.
fn document(path: &str, content: &str) -> String {
    let mut out = String::with_capacity(path.len() + 1 + content.len().min(DOC_MAX_CHARS));
    out.push_str(path);
    out.push('\n');
    for line in content.lines().take(DOC_MAX_LINES) {
        if out.len() + line.len() + 1 > DOC_MAX_CHARS {
            let room = DOC_MAX_CHARS.saturating_sub(out.len());
            let cut = (0..=room.min(line.len()))
                .rev()
                .find(|&i| line.is_char_boundary(i))
                .unwrap_or(0);
            out.push_str(&line[..cut]);
            break;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Fuses the engine's order of `top` (sorted, best first) with the reranker's `scores` by
/// rank, and hands the candidates, in the fused order, the engine's own scores of those
/// places: the scale of scores stays the engine's (grouping decays a file's later groups by a
/// share of their score) and the reranked candidates keep their places above the rest.
fn fuse(top: &mut [Scored], scores: &[f32], weight: f32) {
    let f = fused(scores, weight);
    let mut order: Vec<usize> = (0..top.len()).collect();
    order.sort_by(|&a, &b| f[b].0.total_cmp(&f[a].0).then(a.cmp(&b)));
    let places: Vec<f32> = top.iter().map(|s| s.score).collect();
    let mut assigned = vec![0.0f32; top.len()];
    let mut prev = f32::INFINITY;
    for (place, &i) in order.iter().enumerate() {
        // Strictly decreasing, so that equal engine scores do not hand the order back to
        // the tie-breaks of the engine's sort.
        let mut v = places[place];
        if v >= prev {
            v = prev - prev.abs().max(1.0) * 1e-6;
        }
        assigned[i] = v;
        prev = v;
    }
    for (i, s) in top.iter_mut().enumerate() {
        s.rerank = Some((scores[i], f[i].1));
        s.score = assigned[i];
    }
}

/// For candidates in the engine's order with the reranker's `scores`: each one's fused
/// score and its rank in the reranker's order (ties keep the engine's order).
fn fused(scores: &[f32], weight: f32) -> Vec<(f32, usize)> {
    let mut by_rerank: Vec<usize> = (0..scores.len()).collect();
    by_rerank.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    let mut rank = vec![0usize; scores.len()];
    for (r, &i) in by_rerank.iter().enumerate() {
        rank[i] = r;
    }
    (0..scores.len())
        .map(|i| {
            let engine = 1.0 / (RRF_K + i as f32 + 1.0);
            let reranker = weight / (RRF_K + rank[i] as f32 + 1.0);
            (engine + reranker, rank[i])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fused order of candidates given in the engine's order with these reranker scores.
    fn order(scores: &[f32]) -> Vec<usize> {
        let f = fused(scores, RERANK_WEIGHT);
        let mut idx: Vec<usize> = (0..scores.len()).collect();
        idx.sort_by(|&a, &b| f[b].0.total_cmp(&f[a].0).then(a.cmp(&b)));
        idx
    }

    #[test]
    fn the_reranker_leads_and_the_engine_breaks_its_ties() {
        // The reranker's favourite comes first even from the engine's last place.
        assert_eq!(order(&[0.1, 0.2, 0.3, 0.9]), [3, 2, 1, 0]);
        // Equal reranker scores keep the engine's order.
        assert_eq!(order(&[0.5, 0.5, 0.5]), [0, 1, 2]);
        // One place in the reranker's order is worth less than two in the engine's: the
        // engine's second (the reranker's last) stays above its last (the reranker's third).
        assert_eq!(order(&[0.8, 0.1, 0.9, 0.7]), [2, 0, 1, 3]);
        assert_eq!(fused(&[0.2, 0.9], RERANK_WEIGHT)[1].1, 0);
        // A weak weight only breaks the engine's near-ties.
        let f = fused(&[0.1, 0.9], 0.25);
        assert!(f[0].0 > f[1].0, "{f:?}");
    }

    #[test]
    fn documents_are_cut_by_lines_and_characters() {
        let long: String = (0..500).map(|i| format!("line {i}\n")).collect();
        let d = document("src/a.rs", &long);
        assert!(d.starts_with("src/a.rs\nline 0\n"));
        assert_eq!(d.lines().count(), DOC_MAX_LINES + 1);
        let wide = "é".repeat(5000);
        let d = document("a", &wide);
        assert!(d.len() <= DOC_MAX_CHARS, "{}", d.len());
        assert!(d.starts_with("a\n"));
    }
}
