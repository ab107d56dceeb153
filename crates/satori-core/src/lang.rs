//! Languages Satori recognises: one table ([`TABLE`]) says, per language, its id and aliases,
//! how a file's language is detected, what kind of text it is, and which tree-sitter grammar
//! parses it. Everything else about a language (node kinds, labels) lives in `chunk`.

use serde::{Deserialize, Serialize};

/// A language (or text format) of an indexed file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    TypeScript,
    Tsx,
    JavaScript,
    Python,
    Rust,
    Go,
    Java,
    C,
    Cpp,
    CSharp,
    Ruby,
    Php,
    Kotlin,
    Scala,
    Swift,
    Elixir,
    Haskell,
    Lua,
    Zig,
    Shell,
    Perl,
    Sql,
    Html,
    Css,
    Markdown,
    Yaml,
    Toml,
    Json,
    Text,
}

/// What kind of text a language is: code, prose (documentation), or data and markup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Code,
    Prose,
    Data,
}

/// One row of [`TABLE`]: everything Satori knows of a language outside `chunk`'s node rules.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    pub language: Language,
    /// The stable lower-case id used in envelopes and in `lang:` operators.
    pub id: &'static str,
    /// Other names accepted by `lang:` (besides the id).
    pub aliases: &'static [&'static str],
    /// File extensions (lower case, without the dot).
    pub extensions: &'static [&'static str],
    /// Whole file names that have this language whatever their extension.
    pub file_names: &'static [&'static str],
    pub kind: Kind,
    /// The tree-sitter grammar Satori ships for it; a language with a grammar yields symbols.
    pub grammar: Option<fn() -> tree_sitter::Language>,
}

/// The language table, in [`Language::ALL`] order. Adding a language is adding a row here
/// (and a variant above); its definition rules, if it has a grammar, go to `chunk/langs.rs`.
pub const TABLE: [Spec; 29] = [
    Spec {
        language: Language::TypeScript,
        id: "typescript",
        aliases: &["ts"],
        extensions: &["ts", "mts", "cts"],
        file_names: &[],
        kind: Kind::Code,
        grammar: Some(|| tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into()),
    },
    Spec {
        language: Language::Tsx,
        id: "tsx",
        aliases: &[],
        extensions: &["tsx"],
        file_names: &[],
        kind: Kind::Code,
        grammar: Some(|| tree_sitter_typescript::LANGUAGE_TSX.into()),
    },
    Spec {
        language: Language::JavaScript,
        id: "javascript",
        aliases: &["js", "jsx", "node"],
        extensions: &["js", "jsx", "mjs", "cjs"],
        file_names: &[],
        kind: Kind::Code,
        grammar: Some(|| tree_sitter_javascript::LANGUAGE.into()),
    },
    Spec {
        language: Language::Python,
        id: "python",
        aliases: &["py"],
        extensions: &["py", "pyi"],
        file_names: &[],
        kind: Kind::Code,
        grammar: Some(|| tree_sitter_python::LANGUAGE.into()),
    },
    Spec {
        language: Language::Rust,
        id: "rust",
        aliases: &["rs"],
        extensions: &["rs"],
        file_names: &[],
        kind: Kind::Code,
        grammar: Some(|| tree_sitter_rust::LANGUAGE.into()),
    },
    Spec {
        language: Language::Go,
        id: "go",
        aliases: &["golang"],
        extensions: &["go"],
        file_names: &[],
        kind: Kind::Code,
        grammar: Some(|| tree_sitter_go::LANGUAGE.into()),
    },
    Spec {
        language: Language::Java,
        id: "java",
        aliases: &[],
        extensions: &["java"],
        file_names: &[],
        kind: Kind::Code,
        grammar: Some(|| tree_sitter_java::LANGUAGE.into()),
    },
    Spec {
        language: Language::C,
        id: "c",
        aliases: &["h"],
        extensions: &["c", "h"],
        file_names: &[],
        kind: Kind::Code,
        grammar: Some(|| tree_sitter_c::LANGUAGE.into()),
    },
    Spec {
        language: Language::Cpp,
        id: "cpp",
        aliases: &["c++", "cxx", "cc", "hpp"],
        extensions: &[
            "cc", "cpp", "cxx", "c++", "hh", "hpp", "hxx", "h++", "ipp", "inl", "tcc", "tpp", "cu",
            "cuh",
        ],
        file_names: &[],
        kind: Kind::Code,
        grammar: Some(|| tree_sitter_cpp::LANGUAGE.into()),
    },
    Spec {
        language: Language::CSharp,
        id: "csharp",
        aliases: &["c#", "cs"],
        extensions: &["cs"],
        file_names: &[],
        kind: Kind::Code,
        grammar: Some(|| tree_sitter_c_sharp::LANGUAGE.into()),
    },
    Spec {
        language: Language::Ruby,
        id: "ruby",
        aliases: &["rb"],
        extensions: &["rb", "rake", "gemspec"],
        file_names: &["Rakefile", "Gemfile"],
        kind: Kind::Code,
        grammar: Some(|| tree_sitter_ruby::LANGUAGE.into()),
    },
    Spec {
        language: Language::Php,
        id: "php",
        aliases: &[],
        extensions: &["php"],
        file_names: &[],
        kind: Kind::Code,
        grammar: Some(|| tree_sitter_php::LANGUAGE_PHP.into()),
    },
    Spec {
        language: Language::Kotlin,
        id: "kotlin",
        aliases: &["kt"],
        extensions: &["kt", "kts"],
        file_names: &[],
        kind: Kind::Code,
        grammar: Some(|| tree_sitter_kotlin_ng::LANGUAGE.into()),
    },
    Spec {
        language: Language::Scala,
        id: "scala",
        aliases: &[],
        extensions: &["scala", "sc"],
        file_names: &[],
        kind: Kind::Code,
        grammar: Some(|| tree_sitter_scala::LANGUAGE.into()),
    },
    Spec {
        language: Language::Swift,
        id: "swift",
        aliases: &[],
        extensions: &["swift"],
        file_names: &[],
        kind: Kind::Code,
        grammar: Some(|| tree_sitter_swift::LANGUAGE.into()),
    },
    Spec {
        language: Language::Elixir,
        id: "elixir",
        aliases: &["ex"],
        extensions: &["ex", "exs"],
        file_names: &[],
        kind: Kind::Code,
        grammar: Some(|| tree_sitter_elixir::LANGUAGE.into()),
    },
    Spec {
        language: Language::Haskell,
        id: "haskell",
        aliases: &["hs"],
        extensions: &["hs", "hs-boot"],
        file_names: &[],
        kind: Kind::Code,
        grammar: Some(|| tree_sitter_haskell::LANGUAGE.into()),
    },
    Spec {
        language: Language::Lua,
        id: "lua",
        aliases: &[],
        extensions: &["lua"],
        file_names: &[],
        kind: Kind::Code,
        grammar: Some(|| tree_sitter_lua::LANGUAGE.into()),
    },
    Spec {
        language: Language::Zig,
        id: "zig",
        aliases: &[],
        extensions: &["zig", "zon"],
        file_names: &[],
        kind: Kind::Code,
        grammar: Some(|| tree_sitter_zig::LANGUAGE.into()),
    },
    Spec {
        language: Language::Shell,
        id: "shell",
        aliases: &["sh", "bash", "zsh"],
        extensions: &["sh", "bash", "zsh"],
        file_names: &[],
        kind: Kind::Code,
        grammar: Some(|| tree_sitter_bash::LANGUAGE.into()),
    },
    Spec {
        language: Language::Perl,
        id: "perl",
        aliases: &["pl"],
        // `.t` is Perl's test script, `.psgi` a PSGI application, `.pod` documentation.
        extensions: &["pl", "pm", "t", "psgi", "pod"],
        file_names: &[],
        kind: Kind::Code,
        // No Perl grammar builds against this tree-sitter; its outline is read from its
        // lines (`chunk/perl.rs`).
        grammar: None,
    },
    Spec {
        language: Language::Sql,
        id: "sql",
        aliases: &[],
        extensions: &["sql"],
        file_names: &[],
        kind: Kind::Code,
        grammar: None,
    },
    Spec {
        language: Language::Html,
        id: "html",
        aliases: &[],
        extensions: &["html", "htm", "vue", "svelte"],
        file_names: &[],
        kind: Kind::Data,
        grammar: None,
    },
    Spec {
        language: Language::Css,
        id: "css",
        aliases: &["scss", "less"],
        extensions: &["css", "scss", "sass", "less"],
        file_names: &[],
        kind: Kind::Data,
        grammar: None,
    },
    Spec {
        language: Language::Markdown,
        id: "markdown",
        aliases: &["md"],
        extensions: &["md", "markdown", "mdx", "rst", "adoc"],
        file_names: &[],
        kind: Kind::Prose,
        grammar: None,
    },
    Spec {
        language: Language::Yaml,
        id: "yaml",
        aliases: &["yml"],
        extensions: &["yaml", "yml"],
        file_names: &[],
        kind: Kind::Data,
        grammar: None,
    },
    Spec {
        language: Language::Toml,
        id: "toml",
        aliases: &[],
        extensions: &["toml"],
        file_names: &[],
        kind: Kind::Data,
        grammar: None,
    },
    Spec {
        language: Language::Json,
        id: "json",
        aliases: &[],
        extensions: &["json", "jsonc"],
        file_names: &[],
        kind: Kind::Data,
        grammar: None,
    },
    Spec {
        language: Language::Text,
        id: "text",
        aliases: &["txt"],
        extensions: &["txt"],
        file_names: &["Makefile", "Dockerfile", "Jenkinsfile"],
        kind: Kind::Prose,
        grammar: None,
    },
];

impl Language {
    /// Every language, in a fixed order (the order of [`TABLE`]).
    pub const ALL: [Language; 29] = {
        let mut all = [Language::Text; 29];
        let mut i = 0;
        while i < TABLE.len() {
            all[i] = TABLE[i].language;
            i += 1;
        }
        all
    };

    /// The row of this language in [`TABLE`].
    pub fn spec(self) -> &'static Spec {
        // The table is in declaration order (checked by a test), so the discriminant is the row.
        &TABLE[self as usize]
    }

    /// The stable lower-case id used in envelopes and in `lang:` operators.
    pub fn id(self) -> &'static str {
        self.spec().id
    }

    /// Parses an id or a common alias (`ts`, `js`, `py`, `rs`, `c++`, `cs`, `md`, ...).
    pub fn from_id(id: &str) -> Option<Language> {
        let id = id.trim().to_ascii_lowercase();
        TABLE
            .iter()
            .find(|s| s.id == id || s.aliases.contains(&id.as_str()))
            .map(|s| s.language)
    }

    /// Detects the language from a file extension (without the dot, any case).
    pub fn from_extension(ext: &str) -> Option<Language> {
        let ext = ext.to_ascii_lowercase();
        TABLE
            .iter()
            .find(|s| s.extensions.contains(&ext.as_str()))
            .map(|s| s.language)
    }

    /// Detects the language of a script from its first line (`#!/bin/sh`,
    /// `#!/usr/bin/env python3`): the interpreter's name, versions and `env` flags aside.
    pub fn from_shebang(first_line: &str) -> Option<Language> {
        let rest = first_line.strip_prefix("#!")?.trim();
        let mut words = rest.split_whitespace();
        let mut program = words.next()?.rsplit('/').next()?;
        if program == "env" {
            program = words.find(|w| !w.starts_with('-') && !w.contains('='))?;
        }
        let name = program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
        let language = match name {
            "sh" | "bash" | "zsh" | "dash" | "ksh" | "ash" | "mksh" => Language::Shell,
            "python" | "pypy" => Language::Python,
            "ruby" | "jruby" => Language::Ruby,
            "node" | "nodejs" | "deno" | "bun" => Language::JavaScript,
            "ts-node" | "tsx" => Language::TypeScript,
            "php" => Language::Php,
            "lua" | "luajit" => Language::Lua,
            "elixir" => Language::Elixir,
            "runghc" | "runhaskell" => Language::Haskell,
            "swift" => Language::Swift,
            "kotlin" => Language::Kotlin,
            "scala" => Language::Scala,
            "perl" => Language::Perl,
            _ => return None,
        };
        Some(language)
    }

    /// `self`, refined by what the file says: a file detected as plain text takes the
    /// language its shebang line names (scripts often have no extension), and a `.h` header
    /// written in C++ is C++. `.h` is shared by both languages, and C++ projects use it for
    /// their class declarations; parsed as C, a class is an error node and its members are
    /// lost to the outline and to definition search.
    pub fn refined(self, text: &str) -> Language {
        match self {
            Language::Text => {
                let first = text.lines().next().unwrap_or("");
                Language::from_shebang(first).unwrap_or(self)
            }
            Language::C if looks_like_cpp(text) => Language::Cpp,
            _ => self,
        }
    }

    /// Detects the language of a path from its extension or a few well-known file names.
    pub fn from_path(path: &str) -> Option<Language> {
        let name = path.rsplit('/').next().unwrap_or(path);
        if let Some(s) = TABLE.iter().find(|s| s.file_names.contains(&name)) {
            return Some(s.language);
        }
        let (stem, ext) = name.rsplit_once('.')?;
        if stem.is_empty() {
            return None;
        }
        Language::from_extension(ext)
    }

    /// True for programming languages (as opposed to documentation, data and config formats).
    pub fn is_code(self) -> bool {
        self.spec().kind == Kind::Code
    }

    /// True for prose formats (documentation).
    pub fn is_docs(self) -> bool {
        self.spec().kind == Kind::Prose
    }

    /// The tree-sitter grammar Satori ships for this language, if any.
    pub fn grammar(self) -> Option<tree_sitter::Language> {
        self.spec().grammar.map(|g| g())
    }

    /// True for languages whose definitions Satori reads: those with a grammar, and Perl,
    /// whose outline is read from its lines.
    pub fn has_symbols(self) -> bool {
        self.spec().grammar.is_some() || self == Language::Perl
    }
}

impl std::fmt::Display for Language {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

/// Whether a header's text uses C++: a construct C has no reading for, at the start of a
/// line (a class or namespace, a template, an access label, `using namespace`), or a standard
/// header included without `.h`. `extern "C"` is not evidence: C headers write it for C++
/// callers.
fn looks_like_cpp(text: &str) -> bool {
    const LINE_STARTS: &[&str] = &[
        "namespace ",
        "namespace{",
        "template<",
        "template <",
        "public:",
        "private:",
        "protected:",
        "using namespace ",
    ];
    text.lines().take(2000).any(|line| {
        let line = line.trim_start();
        if LINE_STARTS.iter().any(|s| line.starts_with(s)) {
            return true;
        }
        if let Some(rest) = line.strip_prefix("class ") {
            // `class Name {`, `class Name : public Base`, `class Name;`: C would read
            // `class` as an identifier and never follow it by a name and one of these.
            let rest = rest.trim_start();
            let name_len = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            let after = rest[name_len..].trim_start();
            return name_len > 0
                && (after.is_empty()
                    || after.starts_with(['{', ':', ';'])
                    || after.starts_with("final"));
        }
        if let Some(rest) = line.strip_prefix("#include") {
            let rest = rest.trim_start();
            if let Some(inner) = rest.strip_prefix('<') {
                let name = inner.split('>').next().unwrap_or("");
                return !name.is_empty()
                    && !name.contains('.')
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '/');
            }
        }
        false
    })
}

#[cfg(test)]
mod tests {
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
}
