//! The provider configuration read from the environment, with the original Satori's
//! variable names and defaults.

use std::fmt;

use crate::Error;

/// An embedding API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    OpenAi,
    VoyageAi,
    Gemini,
    Ollama,
}

impl Provider {
    /// The name `EMBEDDING_PROVIDER` takes (matched without regard to case).
    pub fn name(self) -> &'static str {
        match self {
            Provider::OpenAi => "OpenAI",
            Provider::VoyageAi => "VoyageAI",
            Provider::Gemini => "Gemini",
            Provider::Ollama => "Ollama",
        }
    }

    fn parse(s: &str) -> Option<Provider> {
        [
            Provider::OpenAi,
            Provider::VoyageAi,
            Provider::Gemini,
            Provider::Ollama,
        ]
        .into_iter()
        .find(|p| p.name().eq_ignore_ascii_case(s.trim()))
    }

    /// The model used when `EMBEDDING_MODEL` (or `OLLAMA_MODEL`) is unset.
    fn default_model(self) -> &'static str {
        match self {
            Provider::OpenAi => "text-embedding-3-small",
            Provider::VoyageAi => "voyage-code-3",
            Provider::Gemini => "gemini-embedding-001",
            Provider::Ollama => "nomic-embed-text",
        }
    }

    /// The API's base URL when none is configured.
    fn default_base(self) -> &'static str {
        match self {
            Provider::OpenAi => "https://api.openai.com/v1",
            Provider::VoyageAi => "https://api.voyageai.com/v1",
            Provider::Gemini => "https://generativelanguage.googleapis.com",
            Provider::Ollama => "http://127.0.0.1:11434",
        }
    }

    /// The variable that holds the key (Ollama has none).
    pub fn key_var(self) -> Option<&'static str> {
        match self {
            Provider::OpenAi => Some("OPENAI_API_KEY"),
            Provider::VoyageAi => Some("VOYAGEAI_API_KEY"),
            Provider::Gemini => Some("GEMINI_API_KEY"),
            Provider::Ollama => None,
        }
    }

    /// The variable that overrides the base URL.
    fn base_var(self) -> &'static str {
        match self {
            Provider::OpenAi => "OPENAI_BASE_URL",
            Provider::VoyageAi => "VOYAGEAI_BASE_URL",
            Provider::Gemini => "GEMINI_BASE_URL",
            Provider::Ollama => "OLLAMA_HOST",
        }
    }

    /// Texts per request the API accepts at most.
    fn batch_limit(self) -> usize {
        match self {
            Provider::OpenAi => 2048,
            Provider::VoyageAi => 1000,
            Provider::Gemini => 100,
            Provider::Ollama => 512,
        }
    }

    /// Requests in flight at once: a hosted API serves several, a local Ollama one.
    fn concurrency(self) -> usize {
        match self {
            Provider::OpenAi | Provider::VoyageAi => 4,
            Provider::Gemini => 2,
            Provider::Ollama => 1,
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where and how to embed. The key is kept out of `Debug`.
#[derive(Clone)]
pub struct Config {
    pub provider: Provider,
    pub model: String,
    /// The API's base URL, without a trailing `/`.
    pub base_url: String,
    pub key: Option<String>,
    /// The dimension asked of the API (`EMBEDDING_OUTPUT_DIMENSION`), when it can reduce one.
    pub output_dimension: Option<usize>,
    /// Texts per request.
    pub batch: usize,
    pub concurrency: usize,
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("provider", &self.provider)
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("key", &self.key.as_ref().map(|_| "<set>"))
            .field("output_dimension", &self.output_dimension)
            .field("batch", &self.batch)
            .field("concurrency", &self.concurrency)
            .finish()
    }
}

/// The largest `EMBEDDING_BATCH_SIZE` honoured.
const MAX_BATCH: usize = 1000;
/// Texts per request when `EMBEDDING_BATCH_SIZE` is unset.
const DEFAULT_BATCH: usize = 100;

/// The API address of `provider` (its base variable, or its default), without a trailing
/// `/`; an error naming the variable when it is not http(s). `value` reads one variable,
/// trimmed, `None` when unset or empty.
pub(crate) fn base_url(
    provider: Provider,
    value: &impl Fn(&str) -> Option<String>,
) -> Result<String, Error> {
    let base_url = value(provider.base_var())
        .unwrap_or_else(|| provider.default_base().to_string())
        .trim_end_matches('/')
        .to_string();
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(Error::Config(format!(
            "{}={base_url} is not an http:// or https:// URL",
            provider.base_var()
        )));
    }
    Ok(base_url)
}

impl Config {
    /// The configuration the environment asks for (`get` reads one variable): `None` when
    /// `EMBEDDING_PROVIDER` is unset or empty (the embedded model is used), an error naming
    /// the variable when a value cannot be used or a key is missing.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Option<Config>, Error> {
        let value = |name: &str| {
            get(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let Some(name) = value("EMBEDDING_PROVIDER") else {
            return Ok(None);
        };
        let provider = Provider::parse(&name).ok_or_else(|| {
            Error::Config(format!(
                "EMBEDDING_PROVIDER={name} is not a provider; use OpenAI, VoyageAI, Gemini or Ollama, or unset it for the embedded model"
            ))
        })?;
        let model = match provider {
            Provider::Ollama => value("OLLAMA_MODEL").or_else(|| value("EMBEDDING_MODEL")),
            _ => value("EMBEDDING_MODEL"),
        }
        .unwrap_or_else(|| provider.default_model().to_string());
        let base_url = base_url(provider, &value)?;
        let key = match provider.key_var() {
            Some(var) => Some(value(var).ok_or_else(|| {
                Error::Config(format!(
                    "EMBEDDING_PROVIDER={} needs {var}: set it to the provider's API key",
                    provider.name()
                ))
            })?),
            None => None,
        };
        let number = |var: &str, max: usize| -> Result<Option<usize>, Error> {
            value(var)
                .map(|v| match v.parse::<usize>() {
                    Ok(n) if n >= 1 && n <= max => Ok(n),
                    _ => Err(Error::Config(format!(
                        "{var}={v} must be a whole number from 1 to {max}"
                    ))),
                })
                .transpose()
        };
        let output_dimension = number("EMBEDDING_OUTPUT_DIMENSION", 65_536)?;
        let batch = number("EMBEDDING_BATCH_SIZE", MAX_BATCH)?
            .unwrap_or(DEFAULT_BATCH)
            .min(provider.batch_limit());
        Ok(Some(Config {
            provider,
            model,
            base_url,
            key,
            output_dimension,
            batch,
            concurrency: provider.concurrency(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(vars: &[(&str, &str)]) -> Result<Option<Config>, Error> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_env(|name| map.get(name).cloned())
    }

    /// `vars` give `Ok(expected)` (its Debug rendering) or an error containing `expected`.
    fn check(vars: &[(&str, &str)], expected: &str) {
        let got = match config(vars) {
            Ok(c) => format!("{c:?}"),
            Err(e) => e.to_string(),
        };
        assert!(got.contains(expected), "{vars:?}: {got}");
    }

    #[test]
    fn from_env() {
        check(&[], "None");
        check(&[("EMBEDDING_PROVIDER", " ")], "None");
        check(
            &[("EMBEDDING_PROVIDER", "openai"), ("OPENAI_API_KEY", "sk-1")],
            r#"provider: OpenAi, model: "text-embedding-3-small", base_url: "https://api.openai.com/v1", key: Some("<set>"), output_dimension: None, batch: 100, concurrency: 4"#,
        );
        check(
            &[
                ("EMBEDDING_PROVIDER", "OpenAI"),
                ("OPENAI_API_KEY", "sk-1"),
                ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/"),
                ("EMBEDDING_MODEL", "m"),
                ("EMBEDDING_OUTPUT_DIMENSION", "256"),
                ("EMBEDDING_BATCH_SIZE", "3000"),
            ],
            "EMBEDDING_BATCH_SIZE=3000 must be a whole number from 1 to 1000",
        );
        check(
            &[
                ("EMBEDDING_PROVIDER", "Gemini"),
                ("GEMINI_API_KEY", "g"),
                ("EMBEDDING_BATCH_SIZE", "500"),
            ],
            "batch: 100, concurrency: 2",
        );
        check(
            &[
                ("EMBEDDING_PROVIDER", "Ollama"),
                ("EMBEDDING_MODEL", "a"),
                ("OLLAMA_MODEL", "b"),
                ("OLLAMA_HOST", "http://localhost:11434/"),
            ],
            r#"model: "b", base_url: "http://localhost:11434", key: None"#,
        );
        check(
            &[("EMBEDDING_PROVIDER", "VoyageAI")],
            "EMBEDDING_PROVIDER=VoyageAI needs VOYAGEAI_API_KEY",
        );
        check(
            &[("EMBEDDING_PROVIDER", "Cohere")],
            "EMBEDDING_PROVIDER=Cohere is not a provider",
        );
        check(
            &[
                ("EMBEDDING_PROVIDER", "Ollama"),
                ("OLLAMA_HOST", "localhost:11434"),
            ],
            "OLLAMA_HOST=localhost:11434 is not an http:// or https:// URL",
        );
        check(
            &[
                ("EMBEDDING_PROVIDER", "OpenAI"),
                ("OPENAI_API_KEY", "k"),
                ("EMBEDDING_OUTPUT_DIMENSION", "0"),
            ],
            "EMBEDDING_OUTPUT_DIMENSION=0 must be a whole number",
        );
    }

    #[test]
    fn the_key_stays_out_of_debug() {
        let c = config(&[
            ("EMBEDDING_PROVIDER", "OpenAI"),
            ("OPENAI_API_KEY", "sk-secret-123"),
        ])
        .unwrap()
        .unwrap();
        assert!(!format!("{c:?}").contains("sk-secret-123"));
    }
}
