//! Each API's request and response shapes: pure functions from texts to an HTTP request and
//! from a response body to vectors, so every shape is tested without a network.

use serde_json::{Value, json};

use crate::config::{Config, Provider};

/// One HTTP request, the key among its headers.
pub(crate) struct Request {
    pub url: String,
    pub headers: Vec<(&'static str, String)>,
    pub body: String,
}

/// The request that embeds `texts`.
pub(crate) fn request(cfg: &Config, texts: &[&str]) -> Request {
    let key = cfg.key.clone().unwrap_or_default();
    let (url, headers, body) = match cfg.provider {
        Provider::OpenAi => {
            let mut body = json!({"model": cfg.model, "input": texts, "encoding_format": "float"});
            if let Some(d) = cfg.output_dimension {
                body["dimensions"] = json!(d);
            }
            let auth = vec![("Authorization", format!("Bearer {key}"))];
            (format!("{}/embeddings", cfg.base_url), auth, body)
        }
        Provider::VoyageAi => {
            let mut body = json!({"model": cfg.model, "input": texts});
            if let Some(d) = cfg.output_dimension {
                body["output_dimension"] = json!(d);
            }
            let auth = vec![("Authorization", format!("Bearer {key}"))];
            (format!("{}/embeddings", cfg.base_url), auth, body)
        }
        Provider::Gemini => {
            let model = format!("models/{}", cfg.model);
            let requests: Vec<Value> = texts
                .iter()
                .map(|t| {
                    let mut r = json!({"model": model, "content": {"parts": [{"text": t}]}});
                    if let Some(d) = cfg.output_dimension {
                        r["outputDimensionality"] = json!(d);
                    }
                    r
                })
                .collect();
            // The key goes in a header: a URL ends up in logs and error messages.
            let auth = vec![("x-goog-api-key", key)];
            let url = format!("{}/v1beta/{model}:batchEmbedContents", cfg.base_url);
            (url, auth, json!({"requests": requests}))
        }
        Provider::Ollama => {
            let body = json!({"model": cfg.model, "input": texts});
            (format!("{}/api/embed", cfg.base_url), Vec::new(), body)
        }
    };
    Request {
        url,
        headers,
        body: body.to_string(),
    }
}

/// The vectors of a successful response to a request of `n` texts, in order.
pub(crate) fn vectors(provider: Provider, body: &str, n: usize) -> Result<Vec<Vec<f32>>, String> {
    let answer: Value =
        serde_json::from_str(body).map_err(|e| format!("the answer is not JSON ({e})"))?;
    let floats = |v: &Value| -> Option<Vec<f32>> {
        v.as_array()?
            .iter()
            .map(|x| x.as_f64().map(|x| x as f32))
            .collect()
    };
    let out: Option<Vec<Vec<f32>>> = match provider {
        Provider::OpenAi | Provider::VoyageAi => answer["data"].as_array().and_then(|data| {
            let mut rows: Vec<(u64, Vec<f32>)> = data
                .iter()
                .enumerate()
                .map(|(i, d)| {
                    Some((
                        d["index"].as_u64().unwrap_or(i as u64),
                        floats(&d["embedding"])?,
                    ))
                })
                .collect::<Option<_>>()?;
            rows.sort_by_key(|(i, _)| *i);
            Some(rows.into_iter().map(|(_, v)| v).collect())
        }),
        Provider::Gemini => answer["embeddings"]
            .as_array()
            .and_then(|e| e.iter().map(|x| floats(&x["values"])).collect()),
        Provider::Ollama => answer["embeddings"]
            .as_array()
            .and_then(|e| e.iter().map(floats).collect()),
    };
    let out = out.ok_or_else(|| "the answer does not have the API's shape".to_string())?;
    if out.len() != n {
        return Err(format!(
            "the answer has {} vectors for {n} texts",
            out.len()
        ));
    }
    Ok(out)
}

/// The API's own words for a failure: `error.message`, `error` or `detail` of a JSON body,
/// else the start of the body.
pub(crate) fn message(body: &str) -> String {
    let from_json = serde_json::from_str::<Value>(body).ok().and_then(|v| {
        [
            &v["error"]["message"],
            &v["error"],
            &v["detail"],
            &v["message"],
        ]
        .into_iter()
        .find_map(|m| m.as_str().map(str::to_string))
    });
    let text = from_json.unwrap_or_else(|| body.trim().to_string());
    text.chars().take(300).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(provider: Provider, dim: Option<usize>) -> Config {
        Config {
            provider,
            model: "m".into(),
            base_url: "http://h".into(),
            key: Some("k".into()),
            output_dimension: dim,
            batch: 10,
            concurrency: 1,
        }
    }

    #[test]
    fn requests() {
        // (provider, dimension, url, key header, body)
        let cases = [
            (
                Provider::OpenAi,
                Some(8),
                "http://h/embeddings",
                Some(("Authorization", "Bearer k")),
                r#"{"dimensions":8,"encoding_format":"float","input":["a","b"],"model":"m"}"#,
            ),
            (
                Provider::VoyageAi,
                None,
                "http://h/embeddings",
                Some(("Authorization", "Bearer k")),
                r#"{"input":["a","b"],"model":"m"}"#,
            ),
            (
                Provider::Gemini,
                Some(8),
                "http://h/v1beta/models/m:batchEmbedContents",
                Some(("x-goog-api-key", "k")),
                r#"{"requests":[{"content":{"parts":[{"text":"a"}]},"model":"models/m","outputDimensionality":8},{"content":{"parts":[{"text":"b"}]},"model":"models/m","outputDimensionality":8}]}"#,
            ),
            (
                Provider::Ollama,
                None,
                "http://h/api/embed",
                None,
                r#"{"input":["a","b"],"model":"m"}"#,
            ),
        ];
        for (provider, dim, url, header, body) in cases {
            let r = request(&config(provider, dim), &["a", "b"]);
            assert_eq!(r.url, url, "{provider}");
            let headers: Vec<(&str, &str)> =
                r.headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
            assert_eq!(
                headers,
                header.into_iter().collect::<Vec<_>>(),
                "{provider}"
            );
            let sorted: Value = serde_json::from_str(&r.body).unwrap();
            assert_eq!(
                sorted,
                serde_json::from_str::<Value>(body).unwrap(),
                "{provider}"
            );
            assert!(!r.url.contains('k') || provider == Provider::Gemini && !r.url.contains("key"));
        }
    }

    #[test]
    fn responses() {
        // (provider, body, vectors or an error containing the text)
        type Case<'a> = (Provider, &'a str, Result<Vec<Vec<f32>>, &'a str>);
        let cases: [Case; 7] = [
            (
                Provider::OpenAi,
                r#"{"data":[{"index":1,"embedding":[3,4]},{"index":0,"embedding":[1,2]}]}"#,
                Ok(vec![vec![1.0, 2.0], vec![3.0, 4.0]]),
            ),
            (
                Provider::VoyageAi,
                r#"{"data":[{"embedding":[1,2],"index":0},{"embedding":[3,4],"index":1}]}"#,
                Ok(vec![vec![1.0, 2.0], vec![3.0, 4.0]]),
            ),
            (
                Provider::Gemini,
                r#"{"embeddings":[{"values":[1,2]},{"values":[3,4]}]}"#,
                Ok(vec![vec![1.0, 2.0], vec![3.0, 4.0]]),
            ),
            (
                Provider::Ollama,
                r#"{"model":"m","embeddings":[[1,2],[3,4]]}"#,
                Ok(vec![vec![1.0, 2.0], vec![3.0, 4.0]]),
            ),
            (
                Provider::Ollama,
                r#"{"embeddings":[[1,2]]}"#,
                Err("1 vectors for 2 texts"),
            ),
            (
                Provider::OpenAi,
                r#"{"data":[{"embedding":"x"}]}"#,
                Err("does not have the API's shape"),
            ),
            (Provider::Gemini, "<html>", Err("not JSON")),
        ];
        for (provider, body, expected) in cases {
            match (vectors(provider, body, 2), expected) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{provider}"),
                (Err(got), Err(want)) => assert!(got.contains(want), "{provider}: {got}"),
                (got, want) => panic!("{provider}: {got:?} against {want:?}"),
            }
        }
    }

    #[test]
    fn messages() {
        assert_eq!(message(r#"{"error":{"message":"bad key"}}"#), "bad key");
        assert_eq!(message(r#"{"error":"model not found"}"#), "model not found");
        assert_eq!(message(r#"{"detail":"quota"}"#), "quota");
        assert_eq!(message("  plain  "), "plain");
    }
}
