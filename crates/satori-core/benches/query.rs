//! Cost of a search as its query grows: the query planner must stay linear in the query's
//! length, so a long pasted snippet costs in proportion to its size. Searches this
//! workspace's own Rust sources (chunked and embedded as a build would, with the bundled
//! model) with queries cut from those sources at 1k, 10k, 100k and 1M characters, and prints
//! one JSON line: the median time of each, its ratio to the previous length (linear is about
//! 10x per step, quadratic 100x), and the time at the longest query the server accepts.
//!
//! `cargo bench -p satori-core --bench query`

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use satori_core::embed::{Scratch, bundled, chunk_text};
use satori_core::search::{self, Index, SearchContext, SearchRequest};
use satori_core::{
    ChunkOptions, FileRecord, Generation, GenerationWriter, Language, chunk_file, to_slash,
};

mod common;
use common::{median, rust_files};

/// The Rust sources under `dir`: path and text of each readable one.
fn sources(dir: &Path) -> Vec<(String, String)> {
    rust_files(dir)
        .into_iter()
        .filter_map(|p| Some((to_slash(&p), std::fs::read_to_string(&p).ok()?)))
        .collect()
}

#[allow(clippy::disallowed_methods)] // A benchmark's figures are its output.
fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let files = sources(&root);
    let embedder = bundled::embedder().unwrap();
    let model = embedder.model();
    let dir = tempfile::tempdir().unwrap();
    let mut writer = GenerationWriter::create(dir.path(), Some(model.dim())).unwrap();
    let (mut text, mut scratch) = (String::new(), Scratch::default());
    for (i, (path, content)) in files.iter().enumerate() {
        let chunked = chunk_file(path, Language::Rust, content, &ChunkOptions::default());
        let mut vectors = vec![0.0f32; chunked.chunks.len() * model.dim()];
        for (chunk, v) in chunked
            .chunks
            .iter()
            .zip(vectors.chunks_exact_mut(model.dim()))
        {
            chunk_text(path, &chunk.content, &mut text);
            model.embed_into(&text, &mut scratch, v);
        }
        let record = FileRecord {
            path: path.clone(),
            language: Language::Rust,
            size: content.len() as u64,
            mtime_ms: i as u64,
            indexed_at_ms: 0,
        };
        writer.add_file(&record, &chunked, &vectors).unwrap();
    }
    let stats = writer.finish().unwrap();
    let index = Index::new(Generation::open(dir.path()).unwrap());

    // Real code as the query, as an agent pasting a snippet would send it.
    let all: String = files.iter().map(|(_, t)| t.as_str()).collect();
    let mut figures = Vec::new();
    // The last length is `QUERY_MAX_CHARS` of the protocol, the longest query a client can send.
    for chars in [1_000usize, 10_000, 100_000, 1_000_000, 32_768] {
        let query: String = all.chars().take(chars).collect();
        let request = SearchRequest {
            query,
            limit: 10,
            ..SearchRequest::default()
        };
        let ms = median(
            (0..5)
                .map(|_| {
                    let ctx = SearchContext {
                        embedder: Some(&embedder),
                        ..SearchContext::default()
                    };
                    let t = Instant::now();
                    std::hint::black_box(search::search(&index, &request, ctx).unwrap());
                    t.elapsed().as_secs_f64() * 1e3
                })
                .collect(),
        );
        figures.push((chars, ms));
    }
    let at_limit = figures.pop().expect("the limit was measured");
    let times: Vec<String> = figures
        .iter()
        .map(|(c, ms)| format!("\"{c}\": {ms:.2}"))
        .collect();
    let ratios: Vec<String> = figures
        .windows(2)
        .map(|w| format!("\"{}/{}\": {:.1}", w[1].0, w[0].0, w[1].1 / w[0].1))
        .collect();
    // The figures are this binary's output: JSON on stdout.
    writeln!(
        std::io::stdout().lock(),
        "{{\"files\": {}, \"chunks\": {}, \"searchMsByQueryChars\": {{{}}}, \"ratios\": {{{}}}, \"msAtQueryLimit\": {{\"{}\": {:.2}}}}}",
        stats.files,
        stats.chunks,
        times.join(", "),
        ratios.join(", "),
        at_limit.0,
        at_limit.1
    )
    .unwrap();
}
