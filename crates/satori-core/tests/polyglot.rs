//! No file left behind: a repository with one file per language Satori parses (the chunker's
//! fixtures) and files of languages it has no grammar for. Every text file is indexed, by
//! its grammar or by line windows; every definition a grammar finds is found again by
//! searching its name; a C++ header is read as C++; binary files are left out and counted.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use satori_core::embed::hub::HubOptions;
use satori_core::embed::{Embeddings, ModelSource};
use satori_core::search::{Scope, SearchRequest, SearchTuning};
use satori_core::{ChunkOptions, Engine, Home, IndexOptions, Language, chunk_file};

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// The files of the top `limit` results for `query` in every category, best first, each
/// once.
fn files_for(engine: &Engine, root: &Path, query: &str, limit: usize) -> Vec<String> {
    files_in(engine, root, query, limit, Scope::Mixed)
}

fn files_in(engine: &Engine, root: &Path, query: &str, limit: usize, scope: Scope) -> Vec<String> {
    let req = SearchRequest {
        query: query.to_string(),
        scope,
        limit,
        ..SearchRequest::default()
    };
    let mut files: Vec<String> = Vec::new();
    for hit in engine.search(root, &req).unwrap().hits {
        if !files.contains(&hit.file) {
            files.push(hit.file);
        }
    }
    files
}

#[test]
fn every_language_is_indexed_and_every_definition_found() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path().canonicalize().unwrap();
    copy_dir(&fixtures.join("chunk"), &root.join("src"));
    copy_dir(&fixtures.join("polyglot"), &root.join("extra"));
    let home = tempfile::tempdir().unwrap();
    let home = Home::new(home.path().to_path_buf());
    let embeddings = Embeddings::new(
        ModelSource::Bundled,
        &home.models_dir(),
        HubOptions::default(),
    )
    .unwrap();
    let engine = Arc::new(Engine::new(
        home,
        Arc::new(embeddings),
        SearchTuning::default(),
    ));
    engine
        .start_index(&root, IndexOptions::default())
        .unwrap()
        .run(|_| {})
        .unwrap();

    // Every text file is in the index; the image is not walked, the binary file with an
    // unknown extension is read, found binary, and counted.
    let index = engine.generation(&root).unwrap();
    let mut indexed: Vec<(String, Language)> = index
        .generation()
        .files()
        .iter()
        .map(|f| (f.path.clone(), f.language))
        .collect();
    indexed.sort();
    let mut expected: Vec<String> = std::fs::read_dir(root.join("src"))
        .unwrap()
        .map(|e| format!("src/{}", e.unwrap().file_name().to_string_lossy()))
        .chain(
            [
                "extra/Justfile",
                "extra/deploy",
                "extra/schema.proto",
                "extra/solver.ml",
                "extra/texture_atlas.h",
            ]
            .map(String::from),
        )
        .collect();
    expected.sort();
    let paths: Vec<&str> = indexed.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(paths, expected);
    for (path, lang) in &indexed {
        // A script without an extension is known by its shebang line, and a header by
        // the language its text is written in.
        let want = match path.as_str() {
            "extra/deploy" => Language::Shell,
            "extra/texture_atlas.h" => Language::Cpp,
            _ => Language::Text,
        };
        if path.starts_with("extra/") {
            assert_eq!(*lang, want, "{path}");
        }
    }
    let st = engine.state(&root).unwrap().unwrap();
    assert_eq!(st.skipped.binary, 1, "{:?}", st.skipped);

    // Each definition found by a grammar is found by searching its name: in the top 3, or
    // among as many files as define that name.
    let mut defined: Vec<(String, String)> = Vec::new();
    let mut languages = Vec::new();
    for (path, lang) in &indexed {
        if !lang.has_symbols() {
            continue;
        }
        languages.push(*lang);
        let text = std::fs::read_to_string(root.join(path)).unwrap();
        for sym in chunk_file(path, *lang, &text, &ChunkOptions::default()).symbols {
            defined.push((sym.name, path.clone()));
        }
    }
    languages.sort();
    languages.dedup();
    let with_grammar: Vec<Language> = Language::ALL
        .into_iter()
        .filter(|l| l.has_symbols())
        .collect();
    assert_eq!(
        languages, with_grammar,
        "a language with a grammar has no fixture"
    );
    assert!(defined.len() > 150, "{} definitions", defined.len());
    let mut definers: HashMap<&str, usize> = HashMap::new();
    for (name, _) in &defined {
        *definers.entry(name.as_str()).or_default() += 1;
    }
    let mut missed = Vec::new();
    for (name, path) in &defined {
        let within = definers[name.as_str()].max(3);
        let files = files_for(&engine, &root, name, 20);
        if !files.iter().take(within).any(|f| f == path) {
            missed.push(format!(
                "{name} in {path}: {:?}",
                &files[..files.len().min(within)]
            ));
        }
    }
    assert!(
        missed.is_empty(),
        "{} of {} definitions missed:\n{}",
        missed.len(),
        defined.len(),
        missed.join("\n")
    );

    // Files of languages without a grammar, and the C++ header, are found by what they
    // define.
    for (word, path) in [
        ("propagate_constraints", "extra/solver.ml"),
        ("publish_documentation_site", "extra/Justfile"),
        ("BillingGateway", "extra/schema.proto"),
        ("TextureAtlas", "extra/texture_atlas.h"),
        ("ShelfRow", "extra/texture_atlas.h"),
    ] {
        let files = files_for(&engine, &root, word, 5);
        assert!(files.iter().take(3).any(|f| f == path), "{word}: {files:?}");
        // They are code, so the default (runtime) scope finds them too.
        let files = files_in(&engine, &root, word, 5, Scope::Runtime);
        assert!(
            files.iter().take(3).any(|f| f == path),
            "runtime {word}: {files:?}"
        );
    }
}
