//! A reranker that runs on this machine, offline, in milliseconds: late interaction over the
//! bundled static model's token vectors. Each word of the question is matched to the closest
//! token of a candidate (cosine of their vectors), and the candidate scores the weighted mean
//! of those best matches, each question token weighted as the model weighs it when it pools a
//! text (rare tokens count more). Where the engine's retrieval embeds a candidate as one
//! pooled vector, this keeps every token apart, so "scheduled" finds `schedule` and
//! `spawn_blocking` finds "blocking" in a chunk whose other tokens say something else.
//!
//! No transformer runs: the cost is one dot product per (question token, distinct candidate
//! token), a few million multiply-adds for fifty candidates.

use std::collections::HashMap;

use super::rerank::{RerankError, Reranker};
use crate::embed::{Scratch, StaticModel};

/// Question tokens considered (the rarest first beyond this many).
const MAX_QUERY_TOKENS: usize = 32;

/// Late interaction over a static model's token vectors.
pub struct LateInteraction {
    model: StaticModel,
    id: String,
}

impl std::fmt::Debug for LateInteraction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LateInteraction")
            .field("id", &self.id)
            .finish()
    }
}

impl LateInteraction {
    /// The reranker over the bundled model.
    pub fn bundled() -> Result<LateInteraction, crate::embed::ModelError> {
        Ok(LateInteraction::new(
            crate::embed::bundled::load()?,
            format!("local/late-interaction-{}", crate::embed::bundled::ID),
        ))
    }

    /// The reranker over `model`, named `id` in debug output and telemetry.
    pub fn new(model: StaticModel, id: String) -> LateInteraction {
        LateInteraction { model, id }
    }

    /// The question's distinct tokens with their weights and unit vectors, the rarest (the
    /// heaviest) first, at most [`MAX_QUERY_TOKENS`].
    fn query_tokens(&self, query: &str, scratch: &mut Scratch) -> Vec<(f32, Vec<f32>)> {
        let mut ids = self.model.token_ids(query, scratch);
        ids.sort_unstable();
        ids.dedup();
        let mut tokens: Vec<(f32, Vec<f32>)> = ids
            .into_iter()
            .filter_map(|id| {
                let w = self.model.token_weight(id);
                let mut v = vec![0.0; self.model.dim()];
                (w > 0.0 && self.model.token_unit(id, &mut v)).then_some((w, v))
            })
            .collect();
        tokens.sort_by(|a, b| b.0.total_cmp(&a.0));
        tokens.truncate(MAX_QUERY_TOKENS);
        tokens
    }
}

impl Reranker for LateInteraction {
    fn id(&self) -> &str {
        &self.id
    }

    /// Its order only nudges the engine's: on the independent tuning half, fused with the
    /// weight 2 of a cross-encoder it took nDCG@10 from 0.821 to 0.679, with 0.6 to 0.777 and
    /// with 0.25 to 0.812 (`bench/quality/README.md`).
    fn weight(&self) -> f32 {
        0.25
    }

    fn scores(&self, query: &str, documents: &[String]) -> Result<Vec<f32>, RerankError> {
        let mut scratch = Scratch::default();
        let q = self.query_tokens(query, &mut scratch);
        let total: f32 = q.iter().map(|(w, _)| w).sum();
        if q.is_empty() || total <= 0.0 {
            // Nothing to match: every candidate ties and the engine's order stands.
            return Ok(vec![0.0; documents.len()]);
        }
        // Each distinct token of the candidates is compared with the question once: its
        // best-match cosine per question token, shared by every candidate that holds it.
        let mut sims: HashMap<u32, Vec<f32>> = HashMap::new();
        let mut unit = vec![0.0; self.model.dim()];
        let mut docs_ids = Vec::with_capacity(documents.len());
        for doc in documents {
            let mut ids = self.model.token_ids(doc, &mut scratch);
            ids.sort_unstable();
            ids.dedup();
            for &id in &ids {
                if sims.contains_key(&id) {
                    continue;
                }
                let row = if self.model.token_unit(id, &mut unit) {
                    q.iter()
                        .map(|(_, qv)| qv.iter().zip(&unit).map(|(a, b)| a * b).sum())
                        .collect()
                } else {
                    Vec::new()
                };
                sims.insert(id, row);
            }
            docs_ids.push(ids);
        }
        let mut best = vec![0.0f32; q.len()];
        let scores = docs_ids
            .iter()
            .map(|ids| {
                best.fill(0.0);
                for row in ids.iter().filter_map(|id| sims.get(id)) {
                    for (b, &s) in best.iter_mut().zip(row) {
                        *b = b.max(s);
                    }
                }
                q.iter().zip(&best).map(|((w, _), b)| w * b).sum::<f32>() / total
            })
            .collect();
        Ok(scores)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_candidate_that_says_what_was_asked_scores_best() {
        let r = LateInteraction::bundled().unwrap();
        let docs = [
            "src/render.rs\nfn draw_widgets(frame: &mut Frame) { layout(frame) }".to_owned(),
            "src/retry.rs\n/// Waits longer after each failed attempt.\nfn backoff(attempt: u32) -> Duration { base * 2u32.pow(attempt) }".to_owned(),
            "src/socket.rs\nfn open_socket(addr: &str) -> TcpStream { TcpStream::connect(addr) }".to_owned(),
        ];
        let s = r
            .scores("retry a failed request with exponential backoff", &docs)
            .unwrap();
        assert_eq!(s.len(), 3);
        assert!(s[1] > s[0] && s[1] > s[2], "{s:?}");
        let s = r.scores("open a tcp connection", &docs).unwrap();
        assert!(s[2] > s[0] && s[2] > s[1], "{s:?}");
        // A question of unknown tokens leaves every candidate tied.
        assert_eq!(r.scores("", &docs).unwrap(), vec![0.0; 3]);
        assert!(s.iter().all(|x| (0.0..=1.0001).contains(x)), "{s:?}");
    }
}
