//! A second [`Embedder`]: a client of an OpenAI-style embedding API (`POST /v1/embeddings`)
//! served by a fake on loopback. The engine indexes and searches through it (the index job
//! cuts the chunks into the embedder's batches), and the API's failures come back as typed
//! [`EmbedError`]s: 429 with Retry-After is rate-limited (and waited out by the index job),
//! 401 is an authentication failure that fails the build.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use satori_core::embed::{EmbedError, Embedder, Embeddings, ModelInfo};
use satori_core::search::{RetrievalMode, SearchRequest, SearchTuning};
use satori_core::{Engine, Error, Home, IndexOptions, IndexState};

const DIM: usize = 64;
const KEY: &str = "test-key";

/// What the fake API saw, and the failures it is told to answer next.
#[derive(Default)]
struct ApiState {
    /// Status and extra header lines answered to the next requests, before any embedding.
    failures: VecDeque<(u16, String)>,
    requests: usize,
    /// Texts per successful request.
    batches: Vec<usize>,
}

struct FakeApi {
    url: String,
    state: Arc<Mutex<ApiState>>,
}

impl FakeApi {
    fn start() -> FakeApi {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1/embeddings", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(ApiState::default()));
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = Arc::clone(&shared);
                std::thread::spawn(move || serve(stream, &state));
            }
        });
        FakeApi { url, state }
    }

    fn fail_next(&self, status: u16, headers: &str) {
        let mut st = self.state.lock().unwrap();
        st.failures.push_back((status, headers.to_string()));
    }

    fn requests(&self) -> usize {
        self.state.lock().unwrap().requests
    }

    fn embedder(&self, key: &str) -> HttpEmbedder {
        HttpEmbedder {
            url: self.url.clone(),
            key: key.to_string(),
            agent: ureq::Agent::config_builder()
                .http_status_as_error(false)
                .proxy(None)
                .build()
                .new_agent(),
            info: ModelInfo {
                provider: "openai-compatible".into(),
                id: "fake-embedding-small".into(),
                sha256: "0123456789abcdef0123456789abcdef".into(),
                dim: DIM,
            },
        }
    }
}

/// One request: the API's JSON in, the fake's answer out (the connection closes after it).
fn serve(mut stream: TcpStream, state: &Mutex<ApiState>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let (mut length, mut auth, mut line) = (0usize, String::new(), String::new());
    reader.read_line(&mut line).unwrap();
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().unwrap(),
                "authorization" => auth = value.trim().to_string(),
                _ => {}
            }
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).unwrap();
    let request: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let failure = {
        let mut st = state.lock().unwrap();
        st.requests += 1;
        st.failures.pop_front()
    };
    let (status, headers, answer) = match failure {
        Some((status, headers)) => (status, headers, r#"{"error":{"message":"no"}}"#.into()),
        None if auth != format!("Bearer {KEY}") => (
            401,
            String::new(),
            r#"{"error":{"message":"Incorrect API key provided"}}"#.into(),
        ),
        None => {
            let inputs: Vec<&str> = request["input"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap())
                .collect();
            state.lock().unwrap().batches.push(inputs.len());
            let data: Vec<serde_json::Value> = inputs
                .iter()
                .enumerate()
                .map(|(i, t)| serde_json::json!({"object": "embedding", "index": i, "embedding": words_vector(t)}))
                .collect();
            let answer = serde_json::json!({
                "object": "list",
                "data": data,
                "model": request["model"],
                "usage": {"prompt_tokens": 0, "total_tokens": 0},
            });
            (200, String::new(), answer.to_string())
        }
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n{headers}\r\n{answer}",
        answer.len()
    );
}

/// The fake model: each word hashed to a signed dimension, normalised.
fn words_vector(text: &str) -> Vec<f32> {
    let mut v = vec![0f32; DIM];
    for word in text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| w.len() > 2)
    {
        let h = word
            .to_ascii_lowercase()
            .bytes()
            .fold(0xcbf29ce484222325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
            });
        v[(h % DIM as u64) as usize] += if h & (1 << 40) == 0 { 1.0 } else { -1.0 };
    }
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
    v
}

/// The client: what a remote embedding provider would look like.
#[derive(Debug)]
struct HttpEmbedder {
    url: String,
    key: String,
    agent: ureq::Agent,
    info: ModelInfo,
}

impl Embedder for HttpEmbedder {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn max_batch(&self) -> usize {
        8
    }

    fn concurrency(&self) -> usize {
        2
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let body = serde_json::json!({"model": self.info.id, "input": texts}).to_string();
        let mut response = self
            .agent
            .post(&self.url)
            .header("Authorization", &format!("Bearer {}", self.key))
            .content_type("application/json")
            .send(&body)
            .map_err(|e| EmbedError::Unavailable(e.to_string()))?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|e| EmbedError::Unavailable(e.to_string()))?;
        match status {
            200 => {}
            401 | 403 => return Err(EmbedError::Auth(text)),
            429 => return Err(EmbedError::RateLimited { retry_after }),
            400 | 413 | 422 => return Err(EmbedError::InvalidInput(text)),
            _ => return Err(EmbedError::Unavailable(format!("HTTP {status}: {text}"))),
        }
        let answer: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| EmbedError::Unavailable(e.to_string()))?;
        let mut data: Vec<(u64, Vec<f32>)> = answer["data"]
            .as_array()
            .ok_or_else(|| EmbedError::Unavailable("no data".into()))?
            .iter()
            .map(|d| {
                let values = d["embedding"].as_array().into_iter().flatten();
                let v = values.filter_map(|x| x.as_f64()).map(|x| x as f32);
                (d["index"].as_u64().unwrap_or(0), v.collect())
            })
            .collect();
        data.sort_by_key(|(i, _)| *i);
        Ok(data.into_iter().map(|(_, v)| v).collect())
    }
}

/// Twelve small files (a chunk each), one of them about retrying with backoff.
fn tree(root: &Path) {
    let topics = [
        "render", "parse", "cache", "token", "socket", "queue", "layout", "stream", "shader",
        "bucket", "ledger", "retry",
    ];
    for t in topics {
        let mut text = String::new();
        for f in 0..3 {
            for line in 0..8 {
                text.push_str(&format!("/// Line {line} of the {t} helper {f}.\n"));
            }
            let words = match t {
                "retry" => "exponential backoff between attempts",
                _ => "plain work",
            };
            text.push_str(&format!(
                "/// {words}\npub fn {t}_{f}(n: usize) -> usize {{\n    n + {f}\n}}\n\n"
            ));
        }
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join(format!("src/{t}.rs")), text).unwrap();
    }
}

struct Setup {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    root: std::path::PathBuf,
    engine: Arc<Engine>,
}

fn setup(embedder: HttpEmbedder, tuning: &str) -> Setup {
    let (home, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let root = dir.path().canonicalize().unwrap();
    tree(&root);
    let embeddings = Embeddings::provided(Arc::new(embedder));
    let engine = Engine::new(
        Home::new(home.path().to_path_buf()),
        Arc::new(embeddings),
        SearchTuning::parse(tuning).unwrap(),
    );
    Setup {
        _dirs: (home, dir),
        root,
        engine: Arc::new(engine),
    }
}

fn index(s: &Setup) -> satori_core::Result<()> {
    let job = s.engine.start_index(&s.root, IndexOptions::default())?;
    job.run(|_| {}).map(|_| ())
}

#[test]
fn an_http_embedder_indexes_and_answers_searches() {
    let api = FakeApi::start();
    let s = setup(api.embedder(KEY), "dense_only");
    index(&s).unwrap();
    let fp = s.engine.fingerprint();
    assert_eq!(fp.embedding_provider, "openai-compatible");
    assert_eq!(fp.embedding_dimension, DIM as u32);
    let (requests, batches) = {
        let st = api.state.lock().unwrap();
        (st.requests, st.batches.clone())
    };
    // Every chunk, in batches of at most the embedder's limit.
    let chunks = s
        .engine
        .generation(&s.root)
        .unwrap()
        .generation()
        .chunks()
        .len();
    assert!(batches.len() >= 2, "{batches:?}");
    assert!(batches.iter().all(|&n| (1..=8).contains(&n)), "{batches:?}");
    assert_eq!(batches.iter().sum::<usize>(), chunks, "{batches:?}");
    let req = SearchRequest {
        query: "exponential backoff between attempts".into(),
        limit: 3,
        ..SearchRequest::default()
    };
    let out = s.engine.search(&s.root, &req).unwrap();
    assert_eq!(out.diagnostics.retrieval_mode, RetrievalMode::Dense);
    assert_eq!(out.hits[0].file, "src/retry.rs", "{:?}", out.hits);
    // The query went to the API too.
    assert_eq!(api.requests(), requests + 1);
}

#[test]
fn the_api_failures_are_typed_and_the_index_job_waits_out_rate_limits() {
    let api = FakeApi::start();
    let embedder = api.embedder(KEY);
    for (status, headers, want) in [
        (
            429,
            "Retry-After: 0\r\n",
            EmbedError::RateLimited {
                retry_after: Some(Duration::ZERO),
            },
        ),
        (429, "", EmbedError::RateLimited { retry_after: None }),
        (
            401,
            "",
            EmbedError::Auth(r#"{"error":{"message":"no"}}"#.into()),
        ),
        (
            400,
            "",
            EmbedError::InvalidInput(r#"{"error":{"message":"no"}}"#.into()),
        ),
    ] {
        api.fail_next(status, headers);
        assert_eq!(embedder.embed(&["retry"]), Err(want), "{status}");
    }
    api.fail_next(503, "");
    assert!(matches!(
        embedder.embed(&["retry"]),
        Err(EmbedError::Unavailable(_))
    ));

    // Rate-limited twice: the build waits as told and goes on.
    let s = setup(api.embedder(KEY), "");
    api.fail_next(429, "Retry-After: 0\r\n");
    api.fail_next(429, "Retry-After: 0\r\n");
    index(&s).unwrap();
    let st = s.engine.states().unwrap();
    assert_eq!(st[&s.root].state, IndexState::Indexed);

    // A key the API refuses fails the build with the typed error.
    let s = setup(api.embedder("wrong-key"), "");
    let err = index(&s).unwrap_err();
    assert!(matches!(err, Error::Embed(EmbedError::Auth(_))), "{err}");
    let st = s.engine.states().unwrap();
    assert_eq!(st[&s.root].state, IndexState::IndexFailed);
}
