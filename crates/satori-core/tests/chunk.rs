//! Chunker contract tests over one realistic fixture per language: a snapshot of the chunk
//! spans and the symbol outline, and properties every chunking must have (coverage, exact
//! content, bounded size, unique and stable ids, determinism).

use std::collections::HashSet;
use std::fmt::Write;
use std::path::{Path, PathBuf};

use satori_core::{ChunkOptions, ChunkedFile, Language, chunk_file, hash16};

/// Smaller than the defaults so that the fixtures (a few dozen lines each) exercise splitting
/// of large definitions and merging of small ones.
const SMALL: ChunkOptions = ChunkOptions {
    max_chars: 900,
    target_chars: 450,
    fallback_lines: 8,
    fallback_overlap: 2,
};

fn fixtures() -> Vec<(String, Language, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/chunk");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixture dir")
        .map(|e| e.expect("dir entry").path())
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let name = p.file_name().expect("name").to_string_lossy().into_owned();
            let lang = Language::from_path(&name).unwrap_or(Language::Text);
            let text = std::fs::read_to_string(&p).expect("fixture text");
            (name, lang, text)
        })
        .collect()
}

/// One line per chunk, then the outline.
fn render(out: &ChunkedFile) -> String {
    let mut s = String::from("chunks:\n");
    for c in &out.chunks {
        let (kind, name) = match &c.symbol {
            Some(sym) => (sym.kind.id(), sym.name.as_str()),
            None => ("-", "-"),
        };
        let _ = writeln!(
            s,
            "  L{}-{} {kind} {name} [{}] {}",
            c.start_line,
            c.end_line,
            c.defines.join(", "),
            c.breadcrumbs.join(" > ")
        );
    }
    s.push_str("symbols:\n");
    for sym in &out.symbols {
        let mut qualified = sym.scope.clone();
        qualified.push(sym.name.clone());
        let _ = writeln!(
            s,
            "  L{}-{} {} {} | {}",
            sym.start_line,
            sym.end_line,
            sym.kind.id(),
            qualified.join("::"),
            sym.label
        );
    }
    s
}

#[test]
fn fixture_snapshots() {
    for (name, lang, text) in fixtures() {
        let out = chunk_file(&name, lang, &text, &SMALL);
        insta::assert_snapshot!(name.clone(), render(&out));
    }
}

/// The properties every chunking has, whatever the language and options.
#[track_caller]
fn check(name: &str, lang: Language, text: &str, opts: &ChunkOptions) {
    let out = chunk_file(name, lang, text, opts);
    let lines: Vec<&str> = text.lines().collect();
    let fallback = out.symbols.is_empty() && out.chunks.iter().all(|c| c.symbol.is_none());

    // Every non-blank line in a chunk (exactly one, except the fallback's overlap); chunks in
    // order, never starting or ending on a blank line.
    let mut owners = vec![0usize; lines.len()];
    let mut prev_start = 0;
    for c in &out.chunks {
        assert!(
            c.start_line >= 1 && c.start_line <= c.end_line,
            "{name}: span {c:?}"
        );
        assert!(c.start_line > prev_start, "{name}: chunks out of order");
        prev_start = c.start_line;
        let (s, e) = (c.start_line as usize - 1, c.end_line as usize - 1);
        assert!(
            !lines[s].trim().is_empty() && !lines[e].trim().is_empty(),
            "{name}: blank edge"
        );
        for o in &mut owners[s..=e] {
            *o += 1;
        }
        // Content is exactly those lines, and hashed.
        assert_eq!(
            c.content,
            lines[s..=e].join("\n"),
            "{name}: content of L{}",
            c.start_line
        );
        assert_eq!(c.content_hash, hash16(c.content.as_bytes()));
        assert_eq!(c.file, name);
        assert_eq!(c.language, lang);
        // Bounded: over max only when a single line is longer than max.
        let size: usize = lines[s..=e].iter().map(|l| l.chars().count() + 1).sum();
        assert!(
            size <= opts.max_chars || s == e,
            "{name}: L{s}-{e} has {size} chars"
        );
        assert!(c.breadcrumbs.len() <= 2);
        for d in &c.defines {
            assert!(
                out.symbols.iter().any(|sym| &sym.name == d),
                "{name}: unknown define {d}"
            );
        }
    }
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            assert!(
                owners[i] <= 1 || fallback,
                "{name}: blank line {} twice",
                i + 1
            );
        } else if fallback {
            assert!(owners[i] >= 1, "{name}: line {} not covered", i + 1);
        } else {
            assert_eq!(
                owners[i],
                1,
                "{name}: line {} owned by {} chunks",
                i + 1,
                owners[i]
            );
        }
    }

    // Symbols: unique ids, sorted, sane spans and labels.
    let ids: HashSet<&str> = out.symbols.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids.len(), out.symbols.len(), "{name}: duplicate symbol ids");
    for w in out.symbols.windows(2) {
        let key =
            |s: &satori_core::Symbol| (s.start_line, s.end_line, s.label.clone(), s.id.clone());
        assert!(key(&w[0]) <= key(&w[1]), "{name}: symbols not sorted");
    }
    for sym in &out.symbols {
        assert!(
            sym.id.starts_with("sym_") && sym.id.len() == 20,
            "{}",
            sym.id
        );
        assert!(sym.start_line <= sym.end_line && sym.end_line as usize <= lines.len());
        assert!(sym.label.chars().count() <= 120 && !sym.label.contains('\n'));
        assert!(!sym.name.is_empty(), "{name}: empty symbol name");
    }

    // Deterministic.
    assert_eq!(
        chunk_file(name, lang, text, opts),
        out,
        "{name}: not deterministic"
    );

    // Inserting lines at the top moves spans but keeps every id.
    let shifted = chunk_file(name, lang, &format!("\n\n\n{text}"), opts);
    let before: Vec<(&str, u32)> = out
        .symbols
        .iter()
        .map(|s| (s.id.as_str(), s.start_line))
        .collect();
    let after: Vec<(&str, u32)> = shifted
        .symbols
        .iter()
        .map(|s| (s.id.as_str(), s.start_line - 3))
        .collect();
    assert_eq!(
        before, after,
        "{name}: ids or spans changed when lines were inserted above"
    );
}

#[test]
fn fixture_properties() {
    let options = [
        ChunkOptions::default(),
        SMALL,
        ChunkOptions {
            max_chars: 200,
            target_chars: 100,
            fallback_lines: 3,
            fallback_overlap: 1,
        },
    ];
    for (name, lang, text) in fixtures() {
        for opts in &options {
            check(&name, lang, &text, opts);
        }
        // The same file with CRLF line endings: same spans, same contents.
        let crlf = text.replace('\n', "\r\n");
        let a = chunk_file(&name, lang, &text, &SMALL);
        let b = chunk_file(&name, lang, &crlf, &SMALL);
        assert_eq!(a, b, "{name}: CRLF changes the chunking");
    }
}

#[test]
fn every_fixture_language_is_covered() {
    let langs: HashSet<Language> = fixtures().into_iter().map(|(_, l, _)| l).collect();
    for lang in [
        Language::TypeScript,
        Language::Tsx,
        Language::JavaScript,
        Language::Python,
        Language::Rust,
        Language::Go,
        Language::Java,
        Language::C,
        Language::Cpp,
        Language::CSharp,
        Language::Ruby,
        Language::Php,
        Language::Markdown,
        Language::Kotlin,
    ] {
        assert!(langs.contains(&lang), "no fixture for {lang}");
    }
}

/// Moving a function below another keeps both ids; a doc comment is part of its function.
#[test]
fn ids_survive_moves_and_docs_stay_attached() {
    let a = "/// Adds.\nfn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\nfn sub(a: i32, b: i32) -> i32 {\n    a - b\n}\n";
    let b = "fn sub(a: i32, b: i32) -> i32 {\n    a - b\n}\n\n/// Adds.\nfn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n";
    let opts = ChunkOptions {
        target_chars: 10,
        ..ChunkOptions::default()
    };
    let ca = chunk_file("m.rs", Language::Rust, a, &opts);
    let cb = chunk_file("m.rs", Language::Rust, b, &opts);
    let ids = |c: &ChunkedFile| {
        let mut v: Vec<(String, String)> = c
            .symbols
            .iter()
            .map(|s| (s.name.clone(), s.id.clone()))
            .collect();
        v.sort();
        v
    };
    assert_eq!(ids(&ca), ids(&cb));
    let add = cb
        .chunks
        .iter()
        .find(|c| c.defines == ["add"])
        .expect("add chunk");
    assert_eq!((add.start_line, add.end_line), (5, 8));
    assert!(add.content.starts_with("/// Adds."));
    // The file name is part of the id.
    let other = chunk_file("n.rs", Language::Rust, a, &opts);
    assert_ne!(ids(&ca), ids(&other));
}
