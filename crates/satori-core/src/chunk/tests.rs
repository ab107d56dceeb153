//! Edge cases of `chunk_file`: inputs that must never panic and must keep line numbers right.

use super::*;

/// Chunks `text` and checks the invariants that hold for every input: chunks in order, within
/// the file, content equal to the lines, every non-blank line covered.
#[track_caller]
fn check(lang: Language, text: &str, opts: &ChunkOptions) -> ChunkedFile {
    let out = chunk_file("x", lang, text, opts);
    let lines: Vec<&str> = text.lines().collect();
    let mut covered = vec![false; lines.len()];
    for c in &out.chunks {
        let (s, e) = (c.start_line as usize, c.end_line as usize);
        assert!(
            s >= 1 && s <= e && e <= lines.len(),
            "span {s}-{e} of {}",
            lines.len()
        );
        assert_eq!(c.content, lines[s - 1..e].join("\n"));
        covered[s - 1..e].iter_mut().for_each(|c| *c = true);
    }
    for (i, l) in lines.iter().enumerate() {
        assert!(
            covered[i] || l.trim().is_empty(),
            "line {} not covered",
            i + 1
        );
    }
    out
}

#[test]
fn empty_and_blank_files_have_no_chunks() {
    for lang in [
        Language::Rust,
        Language::Markdown,
        Language::Kotlin,
        Language::Python,
    ] {
        for text in ["", "\n", "  \n\t\n", "\r\n\r\n"] {
            assert_eq!(
                check(lang, text, &ChunkOptions::default()),
                ChunkedFile::default()
            );
        }
    }
}

#[test]
fn only_comments() {
    let text = "// one\n// two\n\n/* three\n   four */\n";
    let out = check(Language::JavaScript, text, &ChunkOptions::default());
    assert!(out.symbols.is_empty());
    assert_eq!(out.chunks.len(), 1);
    assert_eq!((out.chunks[0].start_line, out.chunks[0].end_line), (1, 5));
}

#[test]
fn crlf_keeps_line_numbers() {
    let text = "import os\r\n\r\n\r\ndef f(x):\r\n    return x\r\n\r\nclass A:\r\n    pass\r\n";
    let opts = ChunkOptions {
        target_chars: 1,
        ..ChunkOptions::default()
    };
    let out = check(Language::Python, text, &opts);
    let spans: Vec<_> = out
        .symbols
        .iter()
        .map(|s| (s.name.as_str(), s.start_line, s.end_line))
        .collect();
    assert_eq!(spans, vec![("f", 4, 5), ("A", 7, 8)]);
    assert!(out.chunks.iter().all(|c| !c.content.contains('\r')));
    assert_eq!(
        out.chunks.last().map(|c| c.content.as_str()),
        Some("class A:\n    pass")
    );
}

#[test]
fn invalid_syntax_still_chunks() {
    let text = "fn broken( {\n    let x = ;\n}\n}}}\nstruct Ok { a: u8 }\nimpl {{{{\n";
    let out = check(Language::Rust, text, &ChunkOptions::default());
    assert!(!out.chunks.is_empty());
}

#[test]
fn ten_thousand_lines() {
    let mut text = String::new();
    for i in 0..2500 {
        text.push_str(&format!("def f{i}(x):\n    y = x + {i}\n    return y\n\n"));
    }
    let out = check(Language::Python, &text, &ChunkOptions::default());
    assert_eq!(out.symbols.len(), 2500);
    assert!(out.chunks.iter().all(|c| c.content.len() <= 2400));
    // Unknown languages too.
    check(Language::Kotlin, &text, &ChunkOptions::default());
}

#[test]
fn one_huge_line() {
    let long = "x".repeat(50_000);
    for (lang, text) in [
        (
            Language::JavaScript,
            format!("const s = \"{long}\";\nfunction f() {{}}\n"),
        ),
        (
            Language::Kotlin,
            format!("val s = \"{long}\"\nfun f() {{}}\n"),
        ),
        (Language::Markdown, format!("# T\n{long}\n## U\ntext\n")),
    ] {
        let out = check(lang, &text, &ChunkOptions::default());
        assert!(out.chunks.iter().any(|c| c.start_line == 1));
    }
}

#[test]
fn non_ascii_text() {
    let text = "/// Grüße — 日本語 🚀\nfn grüßen(name: &str) -> String {\n    format!(\"こんにちは {name}\")\n}\n";
    let out = check(Language::Rust, text, &ChunkOptions::default());
    assert_eq!(out.symbols[0].name, "grüßen");
    assert_eq!(out.symbols[0].start_line, 1);
    // Labels are cut on character boundaries.
    let params: String = (0..80).map(|i| format!("é{i}: u8, ")).collect();
    let text = format!("fn wide({params}) {{}}\n");
    let out = check(Language::Rust, &text, &ChunkOptions::default());
    assert_eq!(out.symbols[0].label.chars().count(), 120);
    assert!(out.symbols[0].label.ends_with("..."));
}

#[test]
fn deep_nesting_does_not_overflow() {
    let text = format!("x = {}1{}\n", "[".repeat(5000), "]".repeat(5000));
    check(
        Language::Python,
        &text,
        &ChunkOptions {
            max_chars: 100,
            ..ChunkOptions::default()
        },
    );
    let text = format!("{}\n{}\n", "{".repeat(3000), "}".repeat(3000));
    check(Language::C, &text, &ChunkOptions::default());
}

#[test]
fn nested_definitions_stop_at_the_depth_cap() {
    let cap = ts::MAX_DEFINITION_DEPTH;
    for (lang, open, close) in [
        (Language::Rust, "mod m {", "}"),
        (Language::JavaScript, "function f() {", "}"),
        (Language::Cpp, "namespace n {", "}"),
        (Language::TypeScript, "namespace n {", "}"),
        (Language::Kotlin, "class C {", "}"),
    ] {
        for (depth, too_deep) in [(cap, false), (cap + 1, true), (3000, true)] {
            let text = format!("{open}\n").repeat(depth) + &format!("{close}\n").repeat(depth);
            let out = check(lang, &text, &ChunkOptions::default());
            let what = format!("{lang:?} at depth {depth}");
            assert_eq!(out.too_deep, too_deep, "{what}");
            assert_eq!(out.symbols.len(), cap, "{what}");
            let deepest = out.symbols.iter().map(|s| s.scope.len()).max();
            assert_eq!(deepest, Some(cap - 1), "{what}");
            // The outline alone is the chunker's outline.
            assert_eq!(outline_file("x", lang, &text), out.symbols, "{what}");
        }
    }
}

#[test]
fn nested_imports_keep_a_bounded_list_of_names() {
    // Each call imports, and names the other kind of call nested under it.
    let depth = 1500;
    let text = format!("{}A{}\n", "use(import(".repeat(depth), "))".repeat(depth));
    let out = check(Language::Elixir, &text, &ChunkOptions::default());
    assert_eq!(out.refs.imports.len(), 2 * depth);
    for import in &out.refs.imports {
        assert!(import.names.len() <= crate::graph::extract::IMPORT_NAMES_MAX);
    }
}

#[test]
fn degenerate_options() {
    let text = "fn a() {}\n\nfn b() {\n    1\n}\n";
    let zero = ChunkOptions {
        max_chars: 0,
        target_chars: 0,
        fallback_lines: 0,
        fallback_overlap: 9,
    };
    check(Language::Rust, text, &zero);
    check(Language::Kotlin, text, &zero);
    check(Language::Markdown, text, &zero);
}

#[test]
fn large_class_is_split_into_methods_with_header_first() {
    let methods: String = (0..6)
        .map(|i| {
            format!(
                "    /// Method {i}.\n    fn m{i}(&self) -> u32 {{\n{}    }}\n\n",
                "        let _ = 1;\n".repeat(60)
            )
        })
        .collect();
    let text = format!("impl Widget {{\n{methods}}}\n");
    let out = check(Language::Rust, &text, &ChunkOptions::default());
    assert!(out.chunks.len() > 1);
    assert!(out.chunks[0].content.starts_with("impl Widget {"));
    for (i, c) in out.chunks.iter().enumerate() {
        // The first piece starts on the impl's header line, so the impl encloses it.
        let sym = c.symbol.as_ref().expect("symbol");
        let expected = if i == 0 {
            SymbolKind::Impl
        } else {
            SymbolKind::Method
        };
        assert_eq!(sym.kind, expected);
        assert!(
            c.content.trim_start().starts_with("impl")
                || c.content.trim_start().starts_with("/// Method")
        );
        assert_eq!(c.breadcrumbs[0], "impl Widget");
        if i > 0 {
            assert_eq!(sym.scope, vec!["Widget".to_string()]);
            assert_eq!(c.defines.len(), 1);
        }
    }
}

#[test]
fn fallback_cuts_at_blank_lines_and_overlaps() {
    let text: String = (1..=30)
        .map(|i| {
            if i == 9 {
                "\n".to_string()
            } else {
                format!("line {i}\n")
            }
        })
        .collect();
    let opts = ChunkOptions {
        fallback_lines: 10,
        fallback_overlap: 3,
        ..ChunkOptions::default()
    };
    let out = check(Language::Text, &text, &opts);
    let spans: Vec<_> = out
        .chunks
        .iter()
        .map(|c| (c.start_line, c.end_line))
        .collect();
    // Blank line 9 is near the end of the first window: cut there, no overlap; then windows of
    // ten lines overlapping by three.
    assert_eq!(spans, vec![(1, 8), (10, 19), (17, 26), (24, 30)]);
}

#[test]
fn parsers_are_reused_across_threads() {
    let text = "class A { m() { return 1; } }\n";
    let handles: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                chunk_file("a.ts", Language::TypeScript, text, &ChunkOptions::default())
            })
        })
        .collect();
    let first = chunk_file("a.ts", Language::TypeScript, text, &ChunkOptions::default());
    for h in handles {
        assert_eq!(h.join().expect("thread"), first);
    }
}

#[test]
fn a_header_is_named_after_what_it_defines() {
    // The include guard is not a definition, a flag macro with a value is, and the chunk
    // that opens the namespace is named after the largest type it holds.
    let text = "#ifndef STORE_TOKEN_H_\n#define STORE_TOKEN_H_\n\n#include <string>\n\n\
                namespace store {\n#define MAX_TOKEN_PARAMS 4\nenum Mark { kNone };\n\n\
                struct Token {\n  int kind;\n  bool verified;\n  int line;\n};\n\
                }  // namespace store\n\n#endif\n";
    let out = check(Language::Cpp, text, &ChunkOptions::default());
    let names: Vec<&str> = out.symbols.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["store", "MAX_TOKEN_PARAMS", "Mark", "Token"]);
    assert_eq!(out.chunks.len(), 1, "{:?}", out.chunks);
    let main = out.chunks[0].symbol.as_ref().unwrap();
    assert_eq!(
        (main.name.as_str(), main.kind),
        ("Token", SymbolKind::Struct)
    );
    // A guard-like `#ifndef` whose `#define` names something else is no guard.
    let text = "#ifndef BUF_SIZE\n#define BUF_SIZE 512\n#endif\n";
    let out = check(Language::C, text, &ChunkOptions::default());
    assert_eq!(out.symbols[0].name, "BUF_SIZE");
}
