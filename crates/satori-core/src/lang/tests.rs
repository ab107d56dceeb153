//! Tests of the language table: detection, refinement, and that every language's spec is
//! complete (detection, a grammar or an outline's source, call rules or why not).

use super::*;

#[track_caller]
fn check(path: &str, expect: Option<&str>) {
    assert_eq!(
        Language::from_path(path).map(Language::id),
        expect,
        "{path}"
    );
}

#[test]
fn shebangs() {
    let cases = [
        ("#!/bin/sh", Some(Language::Shell)),
        ("#!/usr/bin/env bash", Some(Language::Shell)),
        ("#!/usr/bin/env -S python3 -u", Some(Language::Python)),
        ("#! /usr/bin/python3.11", Some(Language::Python)),
        ("#!/usr/bin/env ruby", Some(Language::Ruby)),
        ("#!/usr/bin/env node", Some(Language::JavaScript)),
        ("#!/usr/bin/env ts-node", Some(Language::TypeScript)),
        ("#!/usr/bin/env tsx", Some(Language::TypeScript)),
        ("#!/usr/bin/env LANG=C perl", Some(Language::Perl)),
        ("#!/usr/bin/perl -w", Some(Language::Perl)),
        ("#!/usr/bin/env tclsh", None),
        ("#!/usr/bin/lua5.4", Some(Language::Lua)),
        ("#!/usr/local/bin/elixir", Some(Language::Elixir)),
        ("# not a shebang", None),
        ("#!", None),
    ];
    for (line, want) in cases {
        assert_eq!(Language::from_shebang(line), want, "{line}");
    }
    assert_eq!(
        Language::Text.refined("#!/bin/bash\necho hi\n"),
        Language::Shell
    );
    assert_eq!(Language::Text.refined("plain words\n"), Language::Text);
    assert_eq!(Language::Python.refined("#!/bin/sh\n"), Language::Python);
}

#[test]
fn headers_written_in_cpp_are_cpp() {
    let cases = [
        ("namespace leveldb {\nclass DB;\n}\n", Language::Cpp),
        ("class DBImpl : public DB {\n public:\n};\n", Language::Cpp),
        ("class Arena {\n};\n", Language::Cpp),
        ("template <typename T>\nT max(T a, T b);\n", Language::Cpp),
        ("#include <string>\nvoid f(std::string s);\n", Language::Cpp),
        ("#include <cstdint>\n", Language::Cpp),
        // C headers, including those written to be callable from C++.
        (
            "#ifdef __cplusplus\nextern \"C\" {\n#endif\nint lua_gettop(lua_State *L);\n",
            Language::C,
        ),
        (
            "#include <stdio.h>\n#include <sys/types.h>\nint class_count;\n",
            Language::C,
        ),
        ("struct point { int x, y; };\n", Language::C),
        ("int class = 3;\n", Language::C),
    ];
    for (text, want) in cases {
        assert_eq!(Language::C.refined(text), want, "{text}");
    }
    // Only `.h` (read as C) is refined: a C++ file stays C++ and Python stays Python.
    assert_eq!(Language::Cpp.refined("int main() {}\n"), Language::Cpp);
    assert_eq!(
        Language::Python.refined("class A:\n    pass\n"),
        Language::Python
    );
}

#[test]
fn detection() {
    check("src/main.rs", Some("rust"));
    check("a/b/c.tsx", Some("tsx"));
    check("x.mjs", Some("javascript"));
    check("include/vec.hpp", Some("cpp"));
    check("include/vec.inl", Some("cpp"));
    check("kernels/scan.cu", Some("cpp"));
    check("lib/x.h", Some("c"));
    check("lib/Plack/Util.pm", Some("perl"));
    check("t/00_compile.t", Some("perl"));
    check("README.md", Some("markdown"));
    check("Makefile", Some("text"));
    check("Gemfile", Some("ruby"));
    check(".gitignore", None);
    check("image.png", None);
}

#[test]
fn table_is_in_declaration_order() {
    for (i, spec) in TABLE.iter().enumerate() {
        assert_eq!(spec.language as usize, i, "{}", spec.id);
    }
}

#[test]
fn grammars_yield_symbols() {
    let with: Vec<&str> = TABLE
        .iter()
        .filter(|s| s.language.has_symbols())
        .map(|s| s.id)
        .collect();
    assert_eq!(
        with,
        [
            "typescript",
            "tsx",
            "javascript",
            "python",
            "rust",
            "go",
            "java",
            "c",
            "cpp",
            "csharp",
            "ruby",
            "php",
            "kotlin",
            "scala",
            "swift",
            "elixir",
            "haskell",
            "lua",
            "zig",
            "shell",
            "perl"
        ]
    );
    assert!(Language::Rust.grammar().is_some() && Language::Sql.grammar().is_none());
    // Perl's definitions come from its lines, not from a grammar.
    assert!(Language::Perl.grammar().is_none());
}

#[test]
fn ids_round_trip() {
    for lang in Language::ALL {
        assert_eq!(Language::from_id(lang.id()), Some(lang));
    }
}

/// What one language's spec must hold: a way to be detected, names and interpreters no
/// other language claims, an outline from its grammar exactly when it has one, and call
/// rules when it has a grammar, or else a reason why not.
#[track_caller]
fn check_spec(spec: &Spec) {
    let id = spec.id;
    assert!(!id.is_empty(), "{:?} has no id", spec.language);
    assert!(
        !spec.extensions.is_empty() || !spec.file_names.is_empty(),
        "{id}: no extension or file name detects it"
    );
    for other in TABLE.iter().filter(|o| o.language != spec.language) {
        for ext in spec.extensions {
            assert!(
                !other.extensions.contains(ext),
                "{id} and {}: .{ext}",
                other.id
            );
        }
        for name in spec.interpreters {
            assert!(
                !other.interpreters.contains(name),
                "{id} and {}: {name}",
                other.id
            );
        }
        for alias in spec.aliases.iter().chain([&id]) {
            assert!(
                other.id != *alias && !other.aliases.contains(alias),
                "{id} and {}: {alias}",
                other.id
            );
        }
    }
    let syntax = matches!(spec.outline, Outline::Syntax(_));
    assert_eq!(
        spec.grammar.is_some(),
        syntax,
        "{id}: an outline from the syntax tree needs a grammar, and a grammar is for one"
    );
    match spec.calls {
        Calls::Rules(rules) => {
            assert!(spec.grammar.is_some(), "{id}: call rules need a grammar");
            assert!(!rules.calls.is_empty(), "{id}: call rules without a call");
            assert!(
                spec.language.call_rules().is_some(),
                "{id}: the call graph does not cover it"
            );
        }
        Calls::None(why) => {
            assert!(!why.trim().is_empty(), "{id}: no call rules and no reason");
            assert!(spec.language.call_rules().is_none());
        }
    }
    if let Some(family) = spec.resolution.family {
        assert_eq!(family.family(), family, "{id}: a family names its own root");
    }
}

#[test]
fn every_language_has_a_complete_spec() {
    for spec in &TABLE {
        check_spec(spec);
    }
}
