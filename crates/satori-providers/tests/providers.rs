//! Each provider against a fake of its API on loopback (the request and response shapes of
//! OpenAI, VoyageAI, Gemini and Ollama, their keys in their headers, their failures): the
//! probe learns the dimension, batches come back in order and at unit length, the engine
//! indexes and answers a dense-only search through each, and every refusal is a typed error
//! that names the provider and the fix.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use satori_core::embed::{Embeddings, ModelSource};
use satori_core::search::{RetrievalMode, SearchOutcome, SearchRequest, SearchTuning};
use satori_core::{Engine, Home, IndexOptions};
use satori_providers::{
    Config, EmbedError, Embedder, Error, Provider, RemoteEmbedder, known_dimension,
};
use serde_json::{Value, json};

const KEY: &str = "key-for-tests";
const DIM: usize = 48;

/// A canned answer the fake gives instead of embedding: status, extra header lines, body.
type Canned = (u16, &'static str, &'static str);

struct Fake {
    base: String,
    canned: Arc<Mutex<VecDeque<Canned>>>,
    /// Answer vectors of this many values (a model swapped behind the address).
    dim: Arc<Mutex<usize>>,
    /// Texts embedded so far (by every API).
    texts: Arc<AtomicUsize>,
}

impl Fake {
    fn start() -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let canned: Arc<Mutex<VecDeque<Canned>>> = Arc::default();
        let dim = Arc::new(Mutex::new(DIM));
        let texts: Arc<AtomicUsize> = Arc::default();
        let (c, d, t) = (Arc::clone(&canned), Arc::clone(&dim), Arc::clone(&texts));
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (c, d, t) = (Arc::clone(&c), Arc::clone(&d), Arc::clone(&t));
                std::thread::spawn(move || answer(stream, &c, *d.lock().unwrap(), &t));
            }
        });
        Fake {
            base,
            canned,
            dim,
            texts,
        }
    }

    fn config(&self, provider: Provider, model: &str) -> Config {
        let base = match provider {
            Provider::OpenAi | Provider::VoyageAi => format!("{}/v1", self.base),
            Provider::Gemini | Provider::Ollama => self.base.clone(),
        };
        let vars = [
            ("EMBEDDING_PROVIDER", provider.name().to_string()),
            ("EMBEDDING_MODEL", model.to_string()),
            ("EMBEDDING_BATCH_SIZE", "4".to_string()),
            ("OPENAI_API_KEY", KEY.to_string()),
            ("VOYAGEAI_API_KEY", KEY.to_string()),
            ("GEMINI_API_KEY", KEY.to_string()),
            ("OPENAI_BASE_URL", base.clone()),
            ("VOYAGEAI_BASE_URL", base.clone()),
            ("GEMINI_BASE_URL", base.clone()),
            ("OLLAMA_HOST", base),
        ];
        Config::from_env(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.clone())
        })
        .unwrap()
        .unwrap()
    }

    fn next(&self, canned: Canned) {
        self.canned.lock().unwrap().push_back(canned);
    }
}

/// A bag-of-words vector: texts that share words are close.
fn words_vector(text: &str, dim: usize) -> Vec<f32> {
    let mut v = vec![0.0f32; dim];
    for word in text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| w.len() > 2)
    {
        let h = word
            .to_ascii_lowercase()
            .bytes()
            .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64));
        v[(h % dim as u64) as usize] += 3.0; // not unit length: the client scales it
    }
    v[0] += 0.5;
    v
}

/// Reads one HTTP/1.1 request and answers it as the API its path names would.
fn answer(
    mut stream: TcpStream,
    canned: &Mutex<VecDeque<Canned>>,
    dim: usize,
    counted: &AtomicUsize,
) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        let Some((name, value)) = line.trim_end().split_once(':') else {
            break;
        };
        headers.push((name.to_ascii_lowercase(), value.trim().to_string()));
    }
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    let mut body = vec![0u8; header("content-length").unwrap_or("0").parse().unwrap()];
    reader.read_exact(&mut body).unwrap();
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let texts = request["input"]
        .as_array()
        .or(request["requests"].as_array())
        .map_or(0, Vec::len);
    counted.fetch_add(texts, Ordering::SeqCst);
    let (status, extra, text) = match canned.lock().unwrap().pop_front() {
        Some((status, extra, body)) => (status, extra, body.to_string()),
        None => embed(
            &path,
            &request,
            header("authorization"),
            header("x-goog-api-key"),
            dim,
        ),
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n{text}",
        text.len()
    );
}

/// The API's answer to an embedding request: each provider's path, key header, model check
/// and response shape.
fn embed(
    path: &str,
    req: &Value,
    bearer: Option<&str>,
    goog: Option<&str>,
    dim: usize,
) -> (u16, &'static str, String) {
    let texts = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t.as_str().map(str::to_string))
            .collect()
    };
    let bearer_ok = bearer == Some(&format!("Bearer {KEY}"));
    let unauthorized = (
        401,
        "",
        json!({"error": {"message": "Invalid API key"}}).to_string(),
    );
    let unknown = |m: &str| {
        (
            404,
            "",
            json!({"error": {"message": format!("model {m} does not exist")}}).to_string(),
        )
    };
    if path == "/v1/embeddings" {
        if !bearer_ok {
            return unauthorized;
        }
        let model = req["model"].as_str().unwrap_or("");
        if model == "no-such-model" {
            return unknown(model);
        }
        let data: Vec<Value> = texts(&req["input"])
            .iter()
            .enumerate()
            .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": words_vector(t, dim)}))
            .rev() // the index, not the order, says which text a vector is for
            .collect();
        return (
            200,
            "",
            json!({"object": "list", "data": data, "model": model}).to_string(),
        );
    }
    if let Some(rest) = path.strip_prefix("/v1beta/models/") {
        if goog != Some(KEY) {
            return (
                403,
                "",
                json!({"error": {"message": "API key not valid"}}).to_string(),
            );
        }
        let model = rest.trim_end_matches(":batchEmbedContents");
        if model == "no-such-model" {
            return unknown(model);
        }
        let embeddings: Vec<Value> = req["requests"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| json!({"values": words_vector(r["content"]["parts"][0]["text"].as_str().unwrap_or(""), dim)}))
            .collect();
        return (200, "", json!({"embeddings": embeddings}).to_string());
    }
    if path == "/v1/rerank" {
        return rerank(req, bearer_ok);
    }
    if path == "/api/embed" {
        let model = req["model"].as_str().unwrap_or("");
        if model == "no-such-model" {
            return (
                404,
                "",
                json!({"error": format!("model \"{model}\" not found, try pulling it first")})
                    .to_string(),
            );
        }
        let embeddings: Vec<Vec<f32>> = texts(&req["input"])
            .iter()
            .map(|t| words_vector(t, dim))
            .collect();
        return (
            200,
            "",
            json!({"model": model, "embeddings": embeddings}).to_string(),
        );
    }
    (404, "", "404 page not found".to_string())
}

/// VoyageAI's answer to a rerank request: the key, the model, `top_k` and the answer shape
/// (`data` best first, each with the document's `index` and a `relevance_score` in [0, 1]).
/// Relevance is the share of the query's words that the document holds, a stand-in for the
/// model that orders by what the text says rather than by the engine's signals.
fn rerank(req: &Value, bearer_ok: bool) -> (u16, &'static str, String) {
    if !bearer_ok {
        return (
            401,
            "",
            json!({"detail": "Provided API key is invalid."}).to_string(),
        );
    }
    let model = req["model"].as_str().unwrap_or("");
    if !satori_providers::VOYAGE_RERANK_MODELS.contains(&model) {
        return (
            400,
            "",
            json!({"detail": format!("Model {model} is not supported.")}).to_string(),
        );
    }
    let (Some(query), Some(documents)) = (req["query"].as_str(), req["documents"].as_array())
    else {
        return (
            400,
            "",
            json!({"detail": "query and documents are required"}).to_string(),
        );
    };
    let words = |t: &str| -> Vec<String> {
        t.split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| w.len() > 2)
            .map(str::to_ascii_lowercase)
            .collect()
    };
    let asked = words(query);
    let mut data: Vec<(usize, f64)> = documents
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let have = words(d.as_str().unwrap_or(""));
            let shared = asked.iter().filter(|w| have.contains(w)).count();
            (i, shared as f64 / asked.len().max(1) as f64)
        })
        .collect();
    data.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    data.truncate(req["top_k"].as_u64().map_or(data.len(), |k| k as usize));
    let data: Vec<Value> = data
        .iter()
        .map(|(i, s)| json!({"index": i, "relevance_score": s}))
        .collect();
    (
        200,
        "",
        json!({"object": "list", "data": data, "model": model, "usage": {"total_tokens": 1}})
            .to_string(),
    )
}

const PROVIDERS: [Provider; 4] = [
    Provider::OpenAi,
    Provider::VoyageAi,
    Provider::Gemini,
    Provider::Ollama,
];

#[test]
fn every_provider_embeds_and_serves_a_search() {
    let fake = Fake::start();
    for provider in PROVIDERS {
        let embedder = RemoteEmbedder::connect(fake.config(provider, "m1")).unwrap();
        assert_eq!(embedder.dim(), DIM, "{provider}");
        assert_eq!(embedder.max_batch(), 4, "{provider}");
        assert_eq!(
            embedder.info().id,
            format!("{}/m1", provider.name().to_ascii_lowercase())
        );
        let texts = ["retry with backoff", "parse the header", "render the page"];
        let out = embedder.embed(&texts).unwrap();
        assert_eq!(out.len(), 3, "{provider}");
        for (v, t) in out.iter().zip(texts) {
            let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-4, "{provider}: {norm}");
            let want = words_vector(t, DIM);
            let want_norm = want.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!(
                (v[0] - want[0] / want_norm).abs() < 1e-5,
                "{provider}: vectors out of order"
            );
        }

        // The engine indexes a small tree through it and finds the file by meaning alone.
        let home = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        let root = repo.path().canonicalize().unwrap();
        small_tree(&root);
        let engine = Arc::new(Engine::new(
            Home::new(home.path().to_path_buf()),
            Arc::new(Embeddings::provided(Arc::new(embedder))),
            SearchTuning::parse("dense_only").unwrap(),
        ));
        let out = index_and_search(&engine, &root);
        assert_eq!(
            out.diagnostics.retrieval_mode,
            RetrievalMode::Dense,
            "{provider}"
        );
        assert_eq!(
            out.hits[0].file, "src/retry.rs",
            "{provider}: {:?}",
            out.hits
        );
    }
}

#[test]
fn refusals_are_typed_and_name_the_fix() {
    let fake = Fake::start();
    let text = |e: &EmbedError| e.to_string();
    // Connecting: a wrong key, an unknown model, an address that is down.
    for provider in PROVIDERS {
        let mut cfg = fake.config(provider, "no-such-model");
        let err = RemoteEmbedder::connect(cfg.clone())
            .unwrap_err()
            .to_string();
        let fix = if provider == Provider::Ollama {
            "ollama pull no-such-model"
        } else {
            "set EMBEDDING_MODEL"
        };
        assert!(
            err.contains(provider.name()) && err.contains(fix),
            "{provider}: {err}"
        );
        if provider != Provider::Ollama {
            cfg.model = "m1".into();
            cfg.key = Some("wrong".into());
            let err = RemoteEmbedder::connect(cfg.clone()).unwrap_err();
            let Error::Probe {
                source: EmbedError::Auth(msg),
                ..
            } = &err
            else {
                panic!("{provider}: {err}");
            };
            assert!(
                msg.contains(provider.key_var().unwrap()) && !msg.contains("wrong"),
                "{provider}: {msg}"
            );
        }
    }
    let mut down = fake.config(Provider::Ollama, "m1");
    down.base_url = "http://127.0.0.1:9".into();
    let err = RemoteEmbedder::connect(down).unwrap_err().to_string();
    assert!(err.contains("cannot be reached"), "{err}");
    let mut dim = fake.config(Provider::OpenAi, "m1");
    dim.output_dimension = Some(256);
    let err = RemoteEmbedder::connect(dim).unwrap_err().to_string();
    assert!(
        err.contains("EMBEDDING_OUTPUT_DIMENSION=256") && err.contains(&format!("set it to {DIM}")),
        "{err}"
    );

    // Embedding: each canned answer gives its typed error.
    let embedder = RemoteEmbedder::connect(fake.config(Provider::OpenAi, "m1")).unwrap();
    type Expect<'a> = &'a dyn Fn(&EmbedError) -> bool;
    let cases: [(Canned, Expect); 6] = [
        (
            (
                429,
                "Retry-After: 7\r\n",
                r#"{"error":{"message":"Rate limit reached"}}"#,
            ),
            &|e| matches!(e, EmbedError::RateLimited { retry_after: Some(d) } if *d == Duration::from_secs(7)),
        ),
        (
            (
                429,
                "",
                r#"{"error":{"message":"You exceeded your current quota","code":"insufficient_quota"}}"#,
            ),
            &|e| matches!(e, EmbedError::Unavailable(m) if m.contains("quota") && m.contains("billing")),
        ),
        (
            (503, "", "upstream overloaded"),
            &|e| matches!(e, EmbedError::Unavailable(m) if m.contains("HTTP 503") && m.contains("upstream overloaded")),
        ),
        (
            (
                400,
                "",
                r#"{"error":{"message":"maximum context length is 8192 tokens"}}"#,
            ),
            &|e| matches!(e, EmbedError::InvalidInput(m) if m.contains("8192")),
        ),
        (
            (200, "", "<html>proxy</html>"),
            &|e| matches!(e, EmbedError::Unavailable(m) if m.contains("not JSON")),
        ),
        (
            (200, "", r#"{"data":[]}"#),
            &|e| matches!(e, EmbedError::Unavailable(m) if m.contains("0 vectors for 1 texts")),
        ),
    ];
    for (canned, ok) in cases {
        // A failure that passes is tried four times before it is reported.
        let times = if canned.0 == 503 { 4 } else { 1 };
        for _ in 0..times {
            fake.next(canned);
        }
        let err = embedder.embed(&["x"]).unwrap_err();
        assert!(ok(&err), "{canned:?}: {}", text(&err));
        assert!(!text(&err).contains(KEY));
    }
    // One that passes within the attempts is not seen at all.
    fake.next((502, "", "bad gateway"));
    fake.next((503, "", "upstream overloaded"));
    assert_eq!(embedder.embed(&["x"]).unwrap().len(), 1);

    // A model swapped behind the address answers another dimension: an error, not a
    // corrupt index.
    *fake.dim.lock().unwrap() = DIM / 2;
    let err = embedder.embed(&["x"]).unwrap_err();
    assert!(text(&err).contains("reindex"), "{}", text(&err));
}

/// Indexes `root` and searches it for the text of `src/retry.rs`'s doc line.
fn index_and_search(engine: &Arc<Engine>, root: &std::path::Path) -> SearchOutcome {
    engine
        .start_index(root, IndexOptions::default())
        .unwrap()
        .run(|_| {})
        .unwrap();
    let req = SearchRequest {
        query: "exponential backoff between attempts".into(),
        limit: 2,
        ..SearchRequest::default()
    };
    engine.search(root, &req).unwrap()
}

/// Writes a small tree of five files, each defining one function described by its doc line.
fn small_tree(root: &std::path::Path) {
    std::fs::create_dir_all(root.join("src")).unwrap();
    for (name, body) in [
        (
            "retry",
            "retries a request with exponential backoff between attempts",
        ),
        ("header", "parses one header line at its colon"),
        ("page", "renders the page layout and its widgets"),
        ("queue", "pushes jobs onto a bounded work queue"),
        ("socket", "opens a socket and reads the stream"),
    ] {
        std::fs::write(
            root.join(format!("src/{name}.rs")),
            format!("/// {body}\npub fn {name}() {{}}\n"),
        )
        .unwrap();
    }
}

#[test]
fn a_known_model_starts_without_the_network_and_a_rebuild_asks_nothing_again() {
    let fake = Fake::start();
    let home = tempfile::tempdir().unwrap();
    let cache = home.path().join("embed-cache");

    // A known model's dimension is declared, not probed: nothing is sent at start, even to
    // an address that is down; the first embedding says what is wrong.
    let mut down = fake.config(Provider::OpenAi, "text-embedding-3-small");
    down.base_url = "http://127.0.0.1:9".into();
    let embeddings = RemoteEmbedder::embeddings(down, cache.clone(), None).unwrap();
    assert_eq!(embeddings.info().dim, 1536);
    assert_eq!(
        known_dimension(Provider::OpenAi, "text-embedding-3-small"),
        Some(1536)
    );
    let embedder = embeddings.embedder(&cache).unwrap();
    let err = embedder.embed(&["x"]).unwrap_err().to_string();
    assert!(err.contains("cannot be reached"), "{err}");
    assert_eq!(fake.texts.load(Ordering::SeqCst), 0);

    // The fake answers 48 values where 1536 are expected: the fix is named.
    let embeddings = RemoteEmbedder::embeddings(
        fake.config(Provider::OpenAi, "text-embedding-3-small"),
        cache.clone(),
        None,
    )
    .unwrap();
    let embedder = embeddings.embedder(&cache).unwrap();
    let err = embedder.embed(&["x"]).unwrap_err().to_string();
    assert!(
        err.contains(&format!("EMBEDDING_OUTPUT_DIMENSION={DIM}")),
        "{err}"
    );
    assert_eq!(fake.texts.load(Ordering::SeqCst), 1);

    // Declared right, it indexes; a clear and a second build ask the API for nothing.
    let mut cfg = fake.config(Provider::OpenAi, "text-embedding-3-small");
    cfg.output_dimension = Some(DIM);
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path().canonicalize().unwrap();
    small_tree(&root);
    let build = |expect_texts: usize| {
        let engine = Arc::new(Engine::new(
            Home::new(home.path().to_path_buf()),
            Arc::new(RemoteEmbedder::embeddings(cfg.clone(), cache.clone(), None).unwrap()),
            SearchTuning::parse("dense_only").unwrap(),
        ));
        let before = fake.texts.load(Ordering::SeqCst);
        let out = index_and_search(&engine, &root);
        assert_eq!(out.hits[0].file, "src/retry.rs", "{:?}", out.hits);
        assert_eq!(fake.texts.load(Ordering::SeqCst) - before, expect_texts);
        engine.clear(&root).unwrap();
    };
    // Five chunks and the query.
    build(5 + 1);
    build(0);

    // A build the API fails midway (one of its two batches refused) keeps what the other
    // batch embedded: the next build asks only for the refused batch's texts.
    let fresh_home = tempfile::tempdir().unwrap();
    let fresh_cache = fresh_home.path().join("embed-cache");
    let engine = Arc::new(Engine::new(
        Home::new(fresh_home.path().to_path_buf()),
        Arc::new(RemoteEmbedder::embeddings(cfg.clone(), fresh_cache.clone(), None).unwrap()),
        SearchTuning::parse("dense_only").unwrap(),
    ));
    fake.next((400, "", r#"{"error":{"message":"maximum context length"}}"#));
    let before = fake.texts.load(Ordering::SeqCst);
    let err = engine
        .start_index(&root, IndexOptions::default())
        .unwrap()
        .run(|_| {})
        .unwrap_err();
    assert!(err.to_string().contains("maximum context length"), "{err}");
    let first = fake.texts.load(Ordering::SeqCst) - before;
    let before = fake.texts.load(Ordering::SeqCst);
    engine
        .start_index(&root, IndexOptions::default())
        .unwrap()
        .run(|_| {})
        .unwrap();
    let again = fake.texts.load(Ordering::SeqCst) - before;
    // Batches of four: the refused one held four texts or one. (Had the failure stopped the
    // other batch before it was sent, nothing would be kept.)
    assert!(
        (first == 5 && (again == 4 || again == 1)) || (first < 5 && again == 5),
        "{first} then {again}"
    );
}

/// The engine over `root` (indexed, bundled model) with VoyageAI's reranker at the fake,
/// reranking by default.
fn reranking_engine(
    fake: &Fake,
    home: &std::path::Path,
    root: &std::path::Path,
    key: &str,
) -> Arc<Engine> {
    let vars = [
        ("VOYAGEAI_API_KEY", key.to_string()),
        ("VOYAGEAI_BASE_URL", format!("{}/v1", fake.base)),
    ];
    let reranker = satori_providers::VoyageReranker::from_env(|name| {
        vars.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.clone())
    })
    .unwrap()
    .unwrap();
    let engine = Arc::new(
        Engine::new(
            Home::new(home.to_path_buf()),
            Arc::new(
                Embeddings::new(
                    ModelSource::Bundled,
                    &home.join("models"),
                    Default::default(),
                )
                .unwrap(),
            ),
            SearchTuning::default(),
        )
        .with_reranker(Arc::new(reranker), true),
    );
    engine
        .start_index(root, IndexOptions::default())
        .unwrap()
        .run(|_| {})
        .unwrap();
    engine
}

fn rerank_search(
    engine: &Engine,
    root: &std::path::Path,
    query: &str,
    use_reranker: Option<bool>,
) -> SearchOutcome {
    let req = SearchRequest {
        query: query.into(),
        limit: 5,
        debug: true,
        use_reranker,
        ..SearchRequest::default()
    };
    engine.search(root, &req).unwrap()
}

#[test]
fn voyage_reranks_a_search_and_its_failures_keep_the_order() {
    let fake = Fake::start();
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path().canonicalize().unwrap();
    small_tree(&root);
    let engine = reranking_engine(&fake, home.path(), &root, KEY);
    let files = |o: &SearchOutcome| o.hits.iter().map(|h| h.file.clone()).collect::<Vec<_>>();
    let report = |o: &SearchOutcome| o.diagnostics.rerank.clone().unwrap();

    // By default a described behaviour is reranked: every candidate is scored, the one the
    // reranker scores best comes first, and the debug output says so.
    let query = "which function opens a socket and reads the stream";
    let plain = rerank_search(&engine, &root, query, Some(false));
    assert_eq!(report(&plain).decision, "disabled");
    assert!(plain.hits.iter().all(|h| {
        h.components
            .as_ref()
            .is_some_and(|c| c.rerank_score.is_none())
    }));
    let out = rerank_search(&engine, &root, query, None);
    let r = report(&out);
    assert_eq!(
        (r.decision, r.reranker.as_deref()),
        ("applied", Some("voyageai/rerank-2.5"))
    );
    assert_eq!(r.candidates, 5);
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert_eq!(out.hits[0].file, "src/socket.rs", "{:?}", files(&out));
    let c = out.hits[0].components.as_ref().unwrap();
    assert_eq!(c.rerank_rank, Some(0));
    assert!(c.rerank_score.unwrap() > 0.5, "{c:?}");

    // An identifier is not reranked unless asked; asked, it is.
    let ident = rerank_search(&engine, &root, "parse_header", None);
    assert_eq!(report(&ident).decision, "identifier_query");
    let forced = rerank_search(&engine, &root, "parse_header", Some(true));
    assert_eq!(report(&forced).decision, "applied");

    // The API failing (a 500, then an answer that is not one score per document) keeps the
    // engine's order, with the warning and the phase.
    for (canned, phase) in [
        ((500, "", r#"{"detail":"internal"}"#), "api_call"),
        (
            (200, "", r#"{"data":[{"index":0,"relevance_score":1.0}]}"#),
            "parse_results",
        ),
    ] {
        fake.next(canned);
        let failed = rerank_search(&engine, &root, query, None);
        let r = report(&failed);
        assert_eq!(
            (r.decision, r.failure_phase),
            ("failed", Some(phase)),
            "{r:?}"
        );
        assert_eq!(failed.warnings, ["RERANKER_FAILED"]);
        assert_eq!(files(&failed), files(&plain));
    }

    // A refused key is named in the error, and the order is kept too.
    let other_home = tempfile::tempdir().unwrap();
    let refused = reranking_engine(&fake, other_home.path(), &root, "wrong-key");
    let out = rerank_search(&refused, &root, query, None);
    let r = report(&out);
    assert!(
        r.error.as_deref().unwrap().contains("VOYAGEAI_API_KEY"),
        "{r:?}"
    );
    assert_eq!(files(&out), files(&plain));
}
