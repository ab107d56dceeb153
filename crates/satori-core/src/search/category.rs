//! Path categories (runtime code, tests, fixtures, docs, examples, generated, vendored,
//! compat/legacy, benchmarks, type declarations). How much each one counts under a search
//! scope is in `weights.rs`.
//!
//! A category comes from the path alone (plus the language's category hints, in its file
//! under `lang/`: Perl's `.t` test scripts, Go's `doc` packages, which plain-text files are
//! prose), so it is computed once per file when a generation is opened. Exceptions are made
//! per chunk: Rust keeps unit tests inside source files (`#[cfg(test)] mod tests`), and
//! those chunks are tests wherever they live; Perl's POD sections are documentation.

use crate::lang::Language;
use crate::store::table::ChunkEntry;
use crate::symbol::SymbolKind;

/// What part of a codebase a file belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Category {
    Runtime,
    Tests,
    Fixtures,
    Docs,
    Examples,
    Generated,
    Vendored,
    /// Compatibility shims and legacy code (`compat/`, `legacy/`, `deprecated/`), and, decided
    /// at search time, an older major version kept beside a newer one (`v3/` beside `v4/`).
    Compat,
    Bench,
    /// Type declarations without implementation (`.d.ts`, `.pyi`): they repeat the names and
    /// signatures of the code they describe, so they compete with it for every query.
    Declarations,
}

impl Category {
    /// Every category, in declaration order.
    pub const ALL: [Category; 10] = [
        Category::Runtime,
        Category::Tests,
        Category::Fixtures,
        Category::Docs,
        Category::Examples,
        Category::Generated,
        Category::Vendored,
        Category::Compat,
        Category::Bench,
        Category::Declarations,
    ];

    /// The stable id reported in score components and noise reports.
    pub fn id(self) -> &'static str {
        match self {
            Category::Runtime => "runtime",
            Category::Tests => "tests",
            Category::Fixtures => "fixtures",
            Category::Docs => "docs",
            Category::Examples => "examples",
            Category::Generated => "generated",
            Category::Vendored => "vendored",
            Category::Compat => "compat",
            Category::Bench => "bench",
            Category::Declarations => "declarations",
        }
    }

    /// Categories that, when they dominate the top results, suggest ignore rules.
    pub fn is_noise(self) -> bool {
        matches!(
            self,
            Category::Tests | Category::Fixtures | Category::Docs | Category::Generated
        )
    }
}

/// Directory names per category. Checked in the order of [`categorize`].
const GENERATED_DIRS: &[&str] = &["__generated__", "coverage", "dist", "gen", "generated"];
const VENDORED_DIRS: &[&str] = &[
    "bower_components",
    "node_modules",
    "third-party",
    "third_party",
    "thirdparty",
    "vendor",
    "vendored",
];
const FIXTURE_DIRS: &[&str] = &[
    "__fixtures__",
    "__snapshots__",
    "fixture",
    "fixtures",
    "test_data",
    "testdata",
];
const TEST_DIRS: &[&str] = &[
    "__mocks__",
    "__tests__",
    "e2e",
    "spec",
    "specs",
    "test",
    "testing",
    "tests",
];
const DOC_DIRS: &[&str] = &["doc", "docs", "documentation"];
const EXAMPLE_DIRS: &[&str] = &["demo", "demos", "example", "examples", "sample", "samples"];
const BENCH_DIRS: &[&str] = &["bench", "benches", "benchmark", "benchmarks"];
/// Words that name a category as the first or last word of a compound directory name
/// (`integration-tests`, `typing-examples`). Only unambiguous ones: `doc_predicate_query`
/// is code, `spec-1.1.0` may be anything, `sample_rate` is audio. Every benchmark name is
/// unambiguous, so [`BENCH_DIRS`] serves as its own word list.
const TEST_WORDS: &[&str] = &["test", "tests"];
const EXAMPLE_WORDS: &[&str] = &["example", "examples", "samples", "demos"];
const COMPAT_DIRS: &[&str] = &["compat", "deprecated", "legacy"];

/// Categorises a root-relative path (`/` separated). The first matching rule wins, most
/// specific first: generated and vendored code stay so wherever they live, and fixtures
/// under `tests/` are fixtures.
pub fn categorize(path: &str, language: Language) -> Category {
    let mut components: Vec<&str> = path.split('/').collect();
    let name = components.pop().unwrap_or(path);
    let dirs: Vec<String> = components.iter().map(|d| d.to_ascii_lowercase()).collect();
    let in_dir = |set: &[&str]| dirs.iter().any(|d| set.contains(&d.as_str()));
    // Compound directory names say what they hold in their first or last word.
    let in_dir_word = |words: &[&str]| {
        dirs.iter().any(|d| {
            let mut parts = d.split(['-', '_']).filter(|p| !p.is_empty());
            let first = parts.next();
            let last = parts.next_back();
            [first, last]
                .into_iter()
                .flatten()
                .any(|w| words.contains(&w))
        })
    };
    let lower = name.to_ascii_lowercase();
    let stem = name.split('.').next().unwrap_or(name);
    let hints = &language.spec().category;

    let ends_with = |suffixes: &[&str]| suffixes.iter().any(|s| lower.ends_with(s));
    if in_dir(GENERATED_DIRS) || is_generated_name(&lower) || ends_with(hints.generated_suffixes) {
        Category::Generated
    } else if in_dir(VENDORED_DIRS) {
        Category::Vendored
    } else if in_dir(FIXTURE_DIRS) || lower.ends_with(".snap") {
        Category::Fixtures
    } else if in_dir(TEST_DIRS)
        || in_dir_word(TEST_WORDS)
        || is_test_name(&lower, stem)
        || ends_with(hints.test_suffixes)
    {
        Category::Tests
    } else if (language.is_docs() && hints.is_prose.is_none_or(|is_prose| is_prose(&lower)))
        || (in_dir(DOC_DIRS) && !hints.doc_dirs_hold_code)
        || ["readme", "changelog", "contributing", "license"]
            .iter()
            .any(|p| lower.starts_with(p))
    {
        Category::Docs
    } else if in_dir(EXAMPLE_DIRS) || in_dir_word(EXAMPLE_WORDS) {
        Category::Examples
    } else if in_dir_word(BENCH_DIRS) || lower.starts_with("bench_") || lower.contains("_bench.") {
        Category::Bench
    } else if ends_with(hints.declaration_suffixes) {
        Category::Declarations
    } else if in_dir(COMPAT_DIRS) {
        Category::Compat
    } else {
        Category::Runtime
    }
}

/// Generated files by name, in any language (the languages' own conventions, `_pb2.py` or
/// `.pb.go`, are their category hints).
fn is_generated_name(lower: &str) -> bool {
    lower.contains(".generated.") || lower.contains(".gen.")
}

fn is_test_name(lower: &str, stem: &str) -> bool {
    let lower_stem = stem.to_ascii_lowercase();
    lower.contains(".test.")
        || lower.contains(".spec.")
        || lower_stem.starts_with("test_")
        || lower_stem.ends_with("_test")
        || lower_stem.ends_with("_tests")
        || lower_stem.ends_with("_spec")
        || lower_stem == "conftest"
        // JVM and .NET conventions are case-sensitive: `UserServiceTest.java`, not `latest`.
        || (stem.len() > 4 && (stem.ends_with("Test") || stem.ends_with("Tests")))
}

/// The category of one chunk of a file of category `file`: the file's, except where the
/// language's category hints say otherwise for a runtime file: chunks in a test module
/// (Rust's `mod tests`, by convention the `#[cfg(test)]` one) are tests, and outline sections
/// (Perl's POD) are documentation.
pub fn of_chunk(file: Category, language: Language, chunk: &ChunkEntry) -> Category {
    if file != Category::Runtime {
        return file;
    }
    let Some(sym) = &chunk.symbol else {
        return file;
    };
    let hints = &language.spec().category;
    if hints.sections_are_docs && sym.kind == SymbolKind::Section {
        return Category::Docs;
    }
    let is_test_mod = |name: &str| hints.test_modules.contains(&name);
    if (sym.kind == SymbolKind::Module && is_test_mod(&sym.name))
        || sym.scope.iter().any(|s| is_test_mod(s))
    {
        Category::Tests
    } else {
        file
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(path: &str, expected: Category) {
        let lang = Language::from_path(path).unwrap_or(Language::Text);
        assert_eq!(categorize(path, lang), expected, "{path}");
    }

    #[test]
    fn categories() {
        use Category::*;
        check("src/auth/session.ts", Runtime);
        check("src/latest.ts", Runtime);
        check("src/contest/score.py", Runtime);
        check("tests/test_session.py", Tests);
        check("src/__tests__/session.ts", Tests);
        check("pkg/session_test.go", Tests);
        check("lib/test_utils.py", Tests);
        check("src/session.test.ts", Tests);
        check("src/session.spec.js", Tests);
        check("src/main/java/UserServiceTest.java", Tests);
        check("spec/models/user_spec.rb", Tests);
        check("conftest.py", Tests);
        check("tests/fixtures/users.json", Fixtures);
        check("src/__fixtures__/a.ts", Fixtures);
        check("pkg/testdata/input.go", Fixtures);
        check("README.md", Docs);
        check("notes/design.txt", Docs);
        check("lib/solver.ml", Runtime);
        check("proto/billing.proto", Runtime);
        check("bin/deploy", Runtime);
        check("script/release.pl", Runtime);
        check("NEWS", Docs);
        check("AUTHORS", Docs);
        check("docs/guide/setup.py", Docs);
        check("docs/guide/setup.md", Docs);
        check("doc/md_docs.go", Runtime);
        check("doc/README.md", Docs);
        check("notes.txt", Docs);
        check("examples/basic.rs", Examples);
        check("samples/app.py", Examples);
        check("typing-examples/baseline.py", Examples);
        check("integration-tests/src/lib.rs", Tests);
        check("test_utils/helpers.py", Tests);
        check("perf_benches/walk.rs", Bench);
        check("src/query/doc_predicate_query/mod.rs", Runtime);
        check("src/contest_entries/score.py", Runtime);
        check("src/latest-examples-index/x.ts", Runtime);
        check("src/sample_rate/convert.rs", Runtime);
        check("demo_mode/toggle.go", Runtime);
        check("code-samples/auth.py", Examples);
        check("api/user.pb.go", Generated);
        check("proto/user_pb2.py", Generated);
        check("proto/user_pb2_grpc.py", Generated);
        check("proto/user.pb.cc", Generated);
        check("proto/user.pb.h", Generated);
        check("pkg/zz_generated.go", Generated);
        check("static/app.min.js", Generated);
        check("static/site.min.css", Generated);
        check("static/app.js", Runtime);
        check("src/schema.generated.ts", Generated);
        check("gen/client.ts", Generated);
        check("coverage/lcov-report/index.js", Generated);
        check("vendor/github.com/x/y.go", Vendored);
        check("node_modules/lodash/index.js", Vendored);
        check("third_party/zlib/inflate.c", Vendored);
        check("src/compat/v1.ts", Compat);
        check("legacy/old.py", Compat);
        check("benches/search.rs", Bench);
        check("types/instance.d.ts", Declarations);
        check("src/attr/__init__.pyi", Declarations);
        check("types/index.d.mts", Declarations);
        // A `.pb.h` header whose text made it C++ is generated too.
        assert_eq!(categorize("proto/user.pb.h", Language::Cpp), Generated);
        check("src/index.ts", Runtime);
        check("t/Plack-Request/upload.t", Tests);
        check("xt/author/pod.t", Tests);
        check("lib/Plack/Util.pm", Runtime);
    }
}
