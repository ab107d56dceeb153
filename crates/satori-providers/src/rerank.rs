//! VoyageAI's rerank API as the engine's [`Reranker`]: configured by the variables the
//! original Satori's users already set (`VOYAGEAI_API_KEY`, `VOYAGEAI_RERANKER_MODEL`, and
//! `VOYAGEAI_BASE_URL` as for embeddings), one request per search, no retry: a search that
//! waits on a reranker must not wait long, and a failure only keeps the engine's order.

use std::time::Duration;

use serde_json::{Value, json};

use satori_core::search::rerank::{RerankError, Reranker};

use crate::{Error, Provider};

/// The models the rerank API serves; the first is the default.
pub const VOYAGE_RERANK_MODELS: [&str; 4] =
    ["rerank-2.5", "rerank-2.5-lite", "rerank-2", "rerank-2-lite"];
/// Longest wait for a connection and for an answer: a search is waiting.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// VoyageAI's rerank API.
pub struct VoyageReranker {
    agent: ureq::Agent,
    base_url: String,
    key: String,
    model: String,
    id: String,
}

impl std::fmt::Debug for VoyageReranker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VoyageReranker")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("key", &"<set>")
            .finish()
    }
}

impl VoyageReranker {
    /// The reranker the environment asks for (`get` reads one variable): `None` without
    /// `VOYAGEAI_API_KEY`; an error for a model the API does not serve or an address that
    /// is not http(s).
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Option<VoyageReranker>, Error> {
        let value = |name: &str| {
            get(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let Some(key) = value("VOYAGEAI_API_KEY") else {
            return Ok(None);
        };
        let model = value("VOYAGEAI_RERANKER_MODEL").unwrap_or(VOYAGE_RERANK_MODELS[0].to_owned());
        if !VOYAGE_RERANK_MODELS.contains(&model.as_str()) {
            return Err(Error::Config(format!(
                "VOYAGEAI_RERANKER_MODEL={model} is not a VoyageAI rerank model (one of {})",
                VOYAGE_RERANK_MODELS.join(", ")
            )));
        }
        let base_url = crate::config::base_url(Provider::VoyageAi, &value)?;
        Ok(Some(VoyageReranker {
            agent: crate::remote::agent(CONNECT_TIMEOUT, REQUEST_TIMEOUT),
            id: format!("voyageai/{model}"),
            base_url,
            key,
            model,
        }))
    }

    /// The model this reranker asks for.
    pub fn model(&self) -> &str {
        &self.model
    }
}

impl Reranker for VoyageReranker {
    fn id(&self) -> &str {
        &self.id
    }

    fn scores(&self, query: &str, documents: &[String]) -> Result<Vec<f32>, RerankError> {
        let body = json!({
            "query": query,
            "documents": documents,
            "model": self.model,
            "top_k": documents.len(),
            "truncation": true,
            "return_documents": false,
        });
        let mut response = self
            .agent
            .post(format!("{}/rerank", self.base_url))
            .content_type("application/json")
            .header("Authorization", format!("Bearer {}", self.key))
            .send(body.to_string())
            .map_err(|e| {
                RerankError::Call(format!(
                    "VoyageAI at {} cannot be reached ({e})",
                    self.base_url
                ))
            })?;
        let status = response.status().as_u16();
        let text = response.body_mut().read_to_string().map_err(|e| {
            RerankError::Call(format!("VoyageAI: the answer could not be read ({e})"))
        })?;
        if status != 200 {
            let msg = crate::wire::message(&text);
            return Err(RerankError::Call(match status {
                401 | 403 => format!("VoyageAI refused the key in VOYAGEAI_API_KEY ({msg})"),
                429 => format!("VoyageAI is rate limiting the reranker ({msg})"),
                _ => format!("VoyageAI answered HTTP {status} ({msg})"),
            }));
        }
        scores_of(&text, documents.len())
    }
}

/// The scores of a rerank answer, in the documents' order: `data` holds `{index,
/// relevance_score}` for each document, best first.
fn scores_of(body: &str, n: usize) -> Result<Vec<f32>, RerankError> {
    let bad = |what: &str| RerankError::Answer(format!("VoyageAI's rerank answer {what}"));
    let v: Value = serde_json::from_str(body).map_err(|_| bad("is not JSON"))?;
    let data = v["data"]
        .as_array()
        .ok_or_else(|| bad("has no data list"))?;
    let mut scores = vec![None; n];
    for item in data {
        let index = item["index"]
            .as_u64()
            .and_then(|i| usize::try_from(i).ok())
            .filter(|&i| i < n)
            .ok_or_else(|| bad("names a document that was not sent"))?;
        let score = item["relevance_score"]
            .as_f64()
            .filter(|s| s.is_finite())
            .ok_or_else(|| bad("has an entry without a relevance score"))?;
        if scores[index].replace(score as f32).is_some() {
            return Err(bad("scores a document twice"));
        }
    }
    scores
        .into_iter()
        .collect::<Option<Vec<f32>>>()
        .ok_or_else(|| bad(&format!("scores {} of {n} documents", data.len())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(body: &str, n: usize, want: Result<Vec<f32>, &str>) {
        let got = scores_of(body, n).map_err(|e| e.to_string());
        match want {
            Ok(w) => assert_eq!(got, Ok(w), "{body}"),
            Err(part) => assert!(
                got.as_ref().is_err_and(|e| e.contains(part)),
                "{body}: {got:?}"
            ),
        }
    }

    #[test]
    fn answers() {
        let ok = r#"{"object":"list","data":[{"index":1,"relevance_score":0.9},{"index":0,"relevance_score":0.2}],"model":"rerank-2.5","usage":{"total_tokens":10}}"#;
        check(ok, 2, Ok(vec![0.2, 0.9]));
        check("nope", 2, Err("is not JSON"));
        check(r#"{"detail":"x"}"#, 2, Err("has no data list"));
        check(
            r#"{"data":[{"index":5,"relevance_score":1}]}"#,
            2,
            Err("not sent"),
        );
        check(
            r#"{"data":[{"index":0}]}"#,
            1,
            Err("without a relevance score"),
        );
        check(
            r#"{"data":[{"index":0,"relevance_score":1},{"index":0,"relevance_score":1}]}"#,
            2,
            Err("twice"),
        );
        check(
            r#"{"data":[{"index":0,"relevance_score":1}]}"#,
            2,
            Err("scores 1 of 2"),
        );
    }

    #[test]
    fn configuration() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        assert!(VoyageReranker::from_env(env(&[])).unwrap().is_none());
        let r = VoyageReranker::from_env(env(&[("VOYAGEAI_API_KEY", "k")]))
            .unwrap()
            .unwrap();
        assert_eq!(r.id(), "voyageai/rerank-2.5");
        assert!(!format!("{r:?}").contains("\"k\""));
        let r = VoyageReranker::from_env(env(&[
            ("VOYAGEAI_API_KEY", "k"),
            ("VOYAGEAI_RERANKER_MODEL", "rerank-2-lite"),
            ("VOYAGEAI_BASE_URL", "http://127.0.0.1:9/v1/"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(
            (r.id(), r.base_url.as_str()),
            ("voyageai/rerank-2-lite", "http://127.0.0.1:9/v1")
        );
        let e = VoyageReranker::from_env(env(&[
            ("VOYAGEAI_API_KEY", "k"),
            ("VOYAGEAI_RERANKER_MODEL", "rerank-9"),
        ]))
        .unwrap_err();
        assert!(e.to_string().contains("rerank-2.5, rerank-2.5-lite"), "{e}");
        let e = VoyageReranker::from_env(env(&[
            ("VOYAGEAI_API_KEY", "k"),
            ("VOYAGEAI_BASE_URL", "ftp://x"),
        ]))
        .unwrap_err();
        assert!(e.to_string().contains("not an http"), "{e}");
    }
}
