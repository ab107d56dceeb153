//! Cost of the bundled embedding model: loading it (what a fresh `satori-cli` search pays),
//! and embedding chunks (indexing throughput), against baselines measured in the same run:
//! parsing the same tokenizer bytes as plain JSON, and tokenizing without pooling.
//!
//! `cargo bench -p satori-core --bench embed` — the texts are this workspace's own Rust
//! sources cut into 40-line chunks, prefixed by their path as the indexer does.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use satori_core::embed::{Scratch, bundled, chunk_text};

mod common;
use common::{median, rust_files};

/// The Rust sources under `dir` cut into 40-line chunks, as the model sees them.
fn sources(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for p in rust_files(dir) {
        let Ok(text) = std::fs::read_to_string(&p) else {
            continue;
        };
        let lines: Vec<&str> = text.lines().collect();
        for c in lines.chunks(40) {
            let mut text = String::new();
            chunk_text(&p.to_string_lossy(), &c.join("\n"), &mut text);
            out.push(text);
        }
    }
    out
}

#[allow(clippy::disallowed_methods)] // A benchmark's figures are its output.
fn main() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let chunks = sources(&crates);
    let tokenizer_json =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/model/tokenizer.json"))
            .unwrap();

    let load = median(
        (0..15)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(bundled::load().unwrap());
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect(),
    );
    let json = median(
        (0..15)
            .map(|_| {
                let t = Instant::now();
                let v: serde_json::Value = serde_json::from_slice(&tokenizer_json).unwrap();
                std::hint::black_box(v);
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect(),
    );

    let model = bundled::load().unwrap();
    let mut scratch = Scratch::default();
    let mut out = vec![0f32; model.dim()];
    // A query is embedded with the vocabulary table as loaded; indexing first builds maps
    // from it (`prepare_bulk`), which make each lookup cheaper.
    let t = Instant::now();
    for c in &chunks {
        model.embed_into(c, &mut scratch, &mut out);
    }
    let embed_table = t.elapsed().as_secs_f64();
    let t = Instant::now();
    model.prepare_bulk();
    let prepare_bulk = t.elapsed().as_secs_f64() * 1000.0;
    let tokens_only = median(
        (0..5)
            .map(|_| {
                let t = Instant::now();
                let n: usize = chunks
                    .iter()
                    .map(|c| model.token_ids(c, &mut scratch).len())
                    .sum();
                std::hint::black_box(n);
                t.elapsed().as_secs_f64()
            })
            .collect(),
    );
    let embed = median(
        (0..5)
            .map(|_| {
                let t = Instant::now();
                for c in &chunks {
                    model.embed_into(c, &mut scratch, &mut out);
                }
                t.elapsed().as_secs_f64()
            })
            .collect(),
    );
    let n = chunks.len() as f64;
    // The figures are this binary's output: JSON on stdout.
    writeln!(
        std::io::stdout().lock(),
        "{{\"chunks\": {n}, \"loadMs\": {load:.2}, \"parseTokenizerJsonMs\": {json:.2}, \"loadRatioToJsonParse\": {:.2}, \"prepareBulkMs\": {prepare_bulk:.2}, \"embedTableChunksPerSec\": {:.0}, \"embedChunksPerSec\": {:.0}, \"tokenizeOnlyChunksPerSec\": {:.0}, \"embedRatioToTokenize\": {:.2}}}",
        load / json,
        n / embed_table,
        n / embed,
        n / tokens_only,
        embed / tokens_only
    )
    .unwrap();
}
