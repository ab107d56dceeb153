//! A second vector backend: brute-force f32 vectors held in memory and keyed by chunk key,
//! as a remote store keeps them. The engine builds, syncs and searches through it, and a
//! sync hands it every kept chunk by key: chunks carried over keep their vectors, unchanged
//! chunks of a changed file take the vector of their old key, and only the rest is put anew.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use satori_core::dense::{
    BackendId, Neighbor, OpenSpec, QueryVector, SinkBase, VectorBackend, VectorIndex, VectorSink,
    VectorStore,
};
use satori_core::embed::hub::HubOptions;
use satori_core::embed::{Embeddings, ModelSource};
use satori_core::search::{RetrievalMode, SearchRequest, SearchTuning};
use satori_core::{Backends, Engine, Error, Home, IndexOptions, SyncControl};

type Vectors = HashMap<u64, Vec<f32>>;

/// What one sink was handed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct SinkReport {
    put: usize,
    /// `carry(key, key)`: a chunk carried over as it is.
    carried: usize,
    /// `carry(key, from)` with another key: an unchanged chunk of a changed file.
    reused: usize,
}

/// Every generation's vectors by generation directory, and a report per sink finished.
#[derive(Debug, Default)]
struct MemoryVectors {
    generations: Arc<Mutex<HashMap<PathBuf, Vectors>>>,
    reports: Arc<Mutex<Vec<SinkReport>>>,
}

impl MemoryVectors {
    fn vectors(&self, gen_dir: &Path) -> Vectors {
        self.generations.lock().unwrap()[gen_dir].clone()
    }

    fn last_report(&self) -> SinkReport {
        self.reports.lock().unwrap().last().cloned().unwrap()
    }
}

impl VectorBackend for MemoryVectors {
    fn id(&self) -> BackendId {
        BackendId::Named("memory".into())
    }

    fn sink<'a>(
        &self,
        gen_dir: &Path,
        dim: usize,
        base: Option<SinkBase<'a>>,
    ) -> satori_core::Result<Box<dyn VectorSink + 'a>> {
        let base = base.map(|b| self.vectors(b.gen_dir)).unwrap_or_default();
        Ok(Box::new(MemorySink {
            generations: Arc::clone(&self.generations),
            reports: Arc::clone(&self.reports),
            gen_dir: gen_dir.to_path_buf(),
            dim,
            base,
            vectors: BTreeMap::new(),
            report: SinkReport::default(),
        }))
    }

    fn open(&self, spec: OpenSpec<'_>) -> satori_core::Result<Option<Box<dyn VectorIndex>>> {
        let generations = self.generations.lock().unwrap();
        let Some(by_key) = generations.get(spec.gen_dir) else {
            return Ok(None);
        };
        // Ordinal order, through the generation's keys.
        let rows = (0..spec.keys.len())
            .map(|ord| {
                let key = spec.keys.key(ord);
                by_key
                    .get(&key)
                    .cloned()
                    .ok_or_else(|| Error::Vectors(format!("no vector for chunk {key}")))
            })
            .collect::<satori_core::Result<Vec<_>>>()?;
        let dim = rows.first().map_or(0, Vec::len);
        Ok(Some(Box::new(MemoryIndex { dim, rows })))
    }
}

struct MemorySink {
    generations: Arc<Mutex<HashMap<PathBuf, Vectors>>>,
    reports: Arc<Mutex<Vec<SinkReport>>>,
    gen_dir: PathBuf,
    dim: usize,
    base: Vectors,
    vectors: BTreeMap<u64, Vec<f32>>,
    report: SinkReport,
}

impl VectorSink for MemorySink {
    fn put(&mut self, key: u64, vector: &[f32]) -> satori_core::Result<()> {
        assert_eq!(vector.len(), self.dim);
        assert!(self.vectors.insert(key, vector.to_vec()).is_none());
        self.report.put += 1;
        Ok(())
    }

    fn carry(&mut self, key: u64, from: u64) -> satori_core::Result<()> {
        let v = self
            .base
            .get(&from)
            .cloned()
            .ok_or_else(|| Error::Vectors(format!("no earlier vector of chunk {from}")))?;
        assert!(self.vectors.insert(key, v).is_none());
        if key == from {
            self.report.carried += 1;
        } else {
            self.report.reused += 1;
        }
        Ok(())
    }

    fn finish(self: Box<Self>) -> satori_core::Result<VectorStore> {
        let this = *self;
        let generation = this.gen_dir.file_name().unwrap().to_string_lossy().into();
        let vectors = this.vectors.into_iter().collect();
        this.generations
            .lock()
            .unwrap()
            .insert(this.gen_dir.clone(), vectors);
        this.reports.lock().unwrap().push(this.report);
        Ok(VectorStore::External {
            name: "memory".into(),
            collection: "tests".into(),
            generation,
        })
    }
}

/// Exact f32 cosines over every row.
#[derive(Debug)]
struct MemoryIndex {
    dim: usize,
    rows: Vec<Vec<f32>>,
}

impl MemoryIndex {
    fn cosine(&self, query: &QueryVector, row: usize) -> f32 {
        let Some(r) = self.rows.get(row) else {
            return 0.0;
        };
        r.iter().zip(query.values()).map(|(a, b)| a * b).sum()
    }
}

impl VectorIndex for MemoryIndex {
    fn dim(&self) -> usize {
        self.dim
    }

    fn len(&self) -> usize {
        self.rows.len()
    }

    fn top_k(&self, query: &QueryVector, k: usize) -> satori_core::Result<Vec<Neighbor>> {
        let mut all: Vec<Neighbor> = (0..self.rows.len())
            .map(|row| Neighbor {
                score: self.cosine(query, row),
                row: row as u32,
            })
            .collect();
        all.sort();
        all.truncate(k);
        Ok(all)
    }

    fn cosines(
        &self,
        query: &QueryVector,
        rows: &[u32],
        out: &mut Vec<f32>,
    ) -> satori_core::Result<()> {
        out.extend(rows.iter().map(|&r| self.cosine(query, r as usize)));
        Ok(())
    }
}

/// Three functions about `topic`, each a chunk of its own; `changed` rewrites the last one.
fn body(topic: &str, changed: bool) -> String {
    let mut s = String::new();
    for f in 0..3 {
        for line in 0..10 {
            s.push_str(&format!(
                "/// Line {line} about the {topic} step {f}: it explains what the step does.\n"
            ));
        }
        let extra = if changed && f == 2 {
            "    total += 7; // reshuffled\n"
        } else {
            ""
        };
        s.push_str(&format!(
            "pub fn {topic}_step_{f}(input: &str) -> usize {{\n    let mut total = {f};\n{extra}    total += input.len();\n    total\n}}\n\n"
        ));
    }
    s
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// The vectors of the chunks of `path` in the published generation, by key.
fn file_vectors(engine: &Engine, root: &Path, backend: &MemoryVectors, path: &str) -> Vectors {
    let gen_dir = engine.home().codebase(root).current_dir().unwrap();
    let all = backend.vectors(&gen_dir);
    let index = engine.generation(root).unwrap();
    let g = index.generation();
    let chunks = g.chunks();
    (0..chunks.len())
        .filter(|&o| g.files()[chunks.file(o) as usize].path == path)
        .map(|o| (chunks.key(o), all[&chunks.key(o)].clone()))
        .collect()
}

fn top_file(engine: &Engine, root: &Path, query: &str) -> (String, RetrievalMode) {
    let req = SearchRequest {
        query: query.into(),
        limit: 3,
        ..SearchRequest::default()
    };
    let out = engine.search(root, &req).unwrap();
    (out.hits[0].file.clone(), out.diagnostics.retrieval_mode)
}

#[test]
fn the_engine_builds_syncs_and_searches_through_another_vector_backend() {
    let (home, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let root = dir.path().canonicalize().unwrap();
    write(&root, "src/retry.rs", &body("retry", false));
    write(&root, "src/render.rs", &body("render", false));
    write(&root, "src/queue.rs", &body("queue", false));
    let home = Home::new(home.path().to_path_buf());
    let embeddings = Embeddings::new(
        ModelSource::Bundled,
        &home.models_dir(),
        HubOptions::default(),
    )
    .unwrap();
    let backend = Arc::new(MemoryVectors::default());
    let backends = Backends {
        embeddings: Arc::new(embeddings),
        vectors: Arc::clone(&backend) as Arc<dyn VectorBackend>,
    };
    let tuning = SearchTuning::parse("dense_only").unwrap();
    let engine = Arc::new(Engine::new(home, backends, tuning));
    assert_eq!(
        engine.fingerprint().vector_backend,
        BackendId::Named("memory".into())
    );
    engine
        .start_index(&root, IndexOptions::default())
        .unwrap()
        .run(|_| {})
        .unwrap();
    let first = backend.last_report();
    assert_eq!((first.carried, first.reused), (0, 0));
    assert_eq!(first.put, 9);
    let manifest = engine.manifest(&root).unwrap();
    assert!(
        matches!(&manifest.vectors, Some(VectorStore::External { name, .. }) if name == "memory"),
        "{:?}",
        manifest.vectors
    );
    assert_eq!(
        top_file(&engine, &root, "render step"),
        ("src/render.rs".into(), RetrievalMode::Dense)
    );
    let retry_before = file_vectors(&engine, &root, &backend, "src/retry.rs");
    let render_before = file_vectors(&engine, &root, &backend, "src/render.rs");

    // One function of render.rs changes and a file arrives; retry.rs and queue.rs stay.
    write(&root, "src/render.rs", &body("render", true));
    write(&root, "src/socket.rs", &body("socket", false));
    let summary = engine.sync(&root, &SyncControl::default()).unwrap();
    assert!(summary.derived, "{summary:?}");
    assert_eq!((summary.reused_vectors, summary.embedded_chunks), (2, 4));
    assert_eq!(
        backend.last_report(),
        SinkReport {
            put: 1 + 3,
            carried: 6,
            reused: 2,
        }
    );
    // Carried chunks keep their keys and their vectors.
    assert_eq!(
        file_vectors(&engine, &root, &backend, "src/retry.rs"),
        retry_before
    );
    // The unchanged chunks of render.rs have new keys and their old vectors.
    let render_after = file_vectors(&engine, &root, &backend, "src/render.rs");
    assert!(render_after.keys().all(|k| !render_before.contains_key(k)));
    let kept = render_after
        .values()
        .filter(|v| render_before.values().any(|old| old == *v))
        .count();
    assert_eq!(kept, 2);
    assert_eq!(
        top_file(&engine, &root, "socket step"),
        ("src/socket.rs".into(), RetrievalMode::Dense)
    );
}
