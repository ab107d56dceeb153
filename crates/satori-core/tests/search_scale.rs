//! Search at scale: a synthetic 10,000-chunk generation (500 files of 20 functions), checked
//! for correct definition lookup and timed. Ignored by default because it takes a few seconds
//! to index in a debug build; run with
//! `cargo test -p satori-core --test search_scale -- --ignored --nocapture`.

use std::time::Instant;

use satori_core::search::{self, Index, ResultMode, Scope, SearchContext, SearchRequest};
use satori_core::{
    Chunk, ChunkedFile, FileRecord, Generation, GenerationWriter, Language, Symbol, SymbolKind,
    hash16,
};

const FILES: usize = 500;
const FUNCTIONS_PER_FILE: usize = 20;

/// A small deterministic generator (64-bit LCG), so the corpus is identical on every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) as usize) % n
    }
}

const SYLLABLES: [&str; 24] = [
    "ba", "co", "de", "fi", "gu", "ha", "jo", "ki", "lu", "ma", "ne", "po", "qua", "ri", "so",
    "tu", "ve", "wa", "xi", "yo", "za", "tor", "len", "mir",
];

fn word(rng: &mut Lcg) -> String {
    (0..2 + rng.next(2))
        .map(|_| SYLLABLES[rng.next(SYLLABLES.len())])
        .collect()
}

fn capitalize(w: &str) -> String {
    let mut c = w.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

/// Function `i` of file `f` is named `<word><Word>` deterministically.
fn function_name(f: usize, i: usize) -> String {
    let mut rng = Lcg((f * 1000 + i) as u64);
    format!(
        "{}{}{}",
        word(&mut rng),
        capitalize(&word(&mut rng)),
        f * 100 + i
    )
}

#[test]
#[ignore = "builds a 10k-chunk index; run explicitly"]
fn ten_thousand_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let mut writer = GenerationWriter::create(dir.path(), None).unwrap();
    let mut rng = Lcg(42);
    for f in 0..FILES {
        let path = format!("src/mod{}/file{f}.ts", f % 25);
        let mut chunked = ChunkedFile::default();
        for i in 0..FUNCTIONS_PER_FILE {
            let name = function_name(f, i);
            let start = (i * 30 + 1) as u32;
            let mut lines = vec![format!("export function {name}(input: string) {{")];
            for _ in 0..27 {
                let callee = function_name(rng.next(FILES), rng.next(FUNCTIONS_PER_FILE));
                lines.push(format!(
                    "  const {} = {callee}({}, {});",
                    word(&mut rng),
                    word(&mut rng),
                    word(&mut rng)
                ));
            }
            lines.push("}".into());
            let content = lines.join("\n");
            let end = start + lines.len() as u32 - 1;
            let symbol = Symbol {
                id: format!("sym_{}", hash16(format!("{path}{name}").as_bytes())),
                name: name.clone(),
                label: format!("export function {name}(input: string)"),
                kind: SymbolKind::Function,
                start_line: start,
                end_line: end,
                scope: vec![],
            };
            chunked.symbols.push(symbol.clone());
            chunked.chunks.push(Chunk {
                file: path.clone(),
                language: Language::TypeScript,
                start_line: start,
                end_line: end,
                content_hash: hash16(content.as_bytes()),
                content,
                symbol: Some(symbol),
                defines: vec![name],
                breadcrumbs: vec![],
            });
        }
        let record = FileRecord {
            path,
            language: Language::TypeScript,
            size: 0,
            mtime_ms: 0,
            indexed_at_ms: 0,
        };
        writer.add_file(&record, &chunked, &[]).unwrap();
    }
    let stats = writer.finish().unwrap();
    assert_eq!(stats.chunks as usize, FILES * FUNCTIONS_PER_FILE);
    eprintln!("indexed {} chunks in {:?}", stats.chunks, started.elapsed());

    let started = Instant::now();
    let index = Index::new(Generation::open(dir.path()).unwrap());
    eprintln!("opened in {:?}", started.elapsed());

    let mut queries = Vec::new();
    for k in 0..100 {
        let (f, i) = ((k * 37) % FILES, (k * 11) % FUNCTIONS_PER_FILE);
        queries.push((
            function_name(f, i),
            Some(format!("src/mod{}/file{f}.ts", f % 25)),
        ));
    }
    let mut rng = Lcg(7);
    for _ in 0..100 {
        let text = (0..4).map(|_| word(&mut rng)).collect::<Vec<_>>().join(" ");
        queries.push((text, None));
    }
    for (mode, label) in [(ResultMode::Grouped, "grouped"), (ResultMode::Raw, "raw")] {
        let started = Instant::now();
        for (query, defining_file) in &queries {
            let request = SearchRequest {
                query: query.clone(),
                scope: Scope::Runtime,
                result_mode: mode,
                limit: 10,
                ..SearchRequest::default()
            };
            let outcome = search::search(&index, &request, SearchContext::default()).unwrap();
            if let Some(file) = defining_file {
                assert_eq!(&outcome.hits[0].file, file, "definition of {query} first");
            }
        }
        let per_query = started.elapsed() / queries.len() as u32;
        eprintln!(
            "{label}: {per_query:?} per search over {} queries",
            queries.len()
        );
        // Generous: a debug build on a busy machine; release is far below this.
        assert!(
            per_query.as_millis() < 200,
            "{label} search too slow: {per_query:?}"
        );
    }
}
