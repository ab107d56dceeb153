//! Type and module lookups: a short query that names a type, trait, interface, class,
//! template or module gets that definition first, in raw and grouped results, even where
//! the name is mentioned far more often elsewhere — by the implementations of a trait, by a
//! method or macro that shares the name in lower case, by the code that uses the type.
//!
//! Each case is a small repository written the way real ones are: the definition in one
//! file, and other files that implement, construct and pass the type around.

use std::path::Path;
use std::sync::Arc;

use satori_core::embed::hub::HubOptions;
use satori_core::embed::{Embeddings, ModelSource};
use satori_core::search::{ResultMode, Scope, SearchRequest, SearchTuning};
use satori_core::{Engine, Home, IndexOptions};

/// One lookup: the files of the repository, the query, and the definition that must come
/// first (its file and the line its chunk starts at or before).
struct Case {
    name: &'static str,
    files: Vec<(&'static str, String)>,
    query: &'static str,
    file: &'static str,
    line: u32,
}

/// A class that two major versions of a package define alike.
const SCHEMA: &str = "/** The base of every schema. */\nexport abstract class Schema<T> {\n  abstract parse(input: unknown): T;\n}\n";

fn repeat(n: usize, f: impl Fn(usize) -> String) -> String {
    (0..n).map(f).collect::<Vec<_>>().join("\n")
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "rust trait against its impls, whose method shares the name in lower case",
            files: vec![
                (
                    "src/ser.rs",
                    "//! Writing values out.\n\n/// A value that can be written to a buffer.\npub trait Serialize {\n    /// Writes the value.\n    fn serialize(&self, out: &mut String);\n}\n".into(),
                ),
                (
                    "src/impls.rs",
                    repeat(8, |i| {
                        format!(
                            "/// Serialize for the {i}th kind.\nimpl Serialize for Kind{i} {{\n    fn serialize(&self, out: &mut String) {{\n        out.push_str(\"kind{i}\");\n        Serialize::serialize(&self.inner, out);\n    }}\n}}\n"
                        )
                    }),
                ),
            ],
            query: "Serialize",
            file: "src/ser.rs",
            line: 4,
        },
        Case {
            name: "rust struct against its constructor function",
            files: vec![
                (
                    "src/config.rs",
                    "/// Settings read at start-up.\npub struct Config {\n    pub name: String,\n    pub retries: u32,\n}\n".into(),
                ),
                (
                    "src/load.rs",
                    repeat(6, |i| {
                        format!(
                            "/// Builds a Config from source {i}.\npub fn config_{i}() -> Config {{\n    let c = Config {{ name: \"c{i}\".into(), retries: {i} }};\n    c\n}}\n"
                        )
                    }) + "\n/// The Config everyone starts from.\npub fn config() -> Config {\n    config_0()\n}\n",
                ),
            ],
            query: "Config",
            file: "src/config.rs",
            line: 2,
        },
        Case {
            name: "elixir module against a macro of the same name",
            files: vec![
                (
                    "lib/demo/channel.ex",
                    "defmodule Demo.Channel do\n  @moduledoc \"Topics that clients join.\"\n\n  def join(topic, payload), do: {:ok, topic, payload}\n\n  def leave(topic), do: {:ok, topic}\nend\n".into(),
                ),
                (
                    "lib/demo/socket.ex",
                    format!(
                        "defmodule Demo.Socket do\n  @moduledoc \"Routes topics to a Channel.\"\n\n  defmacro channel(topic, module) do\n    quote do\n      @channels {{unquote(topic), unquote(module)}}\n    end\n  end\n\n{}\nend\n",
                        repeat(6, |i| format!(
                            "  def route_{i}(topic) do\n    # Each Channel joins through its Channel module.\n    Demo.Channel.join(topic, %{{}})\n  end\n"
                        ))
                    ),
                ),
            ],
            query: "Channel",
            file: "lib/demo/channel.ex",
            line: 1,
        },
        Case {
            name: "typescript interface against the code that passes it around",
            files: vec![
                (
                    "src/types.ts",
                    "/** What a request may be sent with. */\nexport interface RequestOptions {\n  timeout: number;\n  retries: number;\n}\n".into(),
                ),
                (
                    "src/client.ts",
                    repeat(6, |i| {
                        format!(
                            "/** Sends request {i} with its RequestOptions. */\nexport function send{i}(url: string, options: RequestOptions): RequestOptions {{\n  const merged: RequestOptions = {{ ...options }};\n  return merged;\n}}\n"
                        )
                    }) + "\nexport function requestOptions(): RequestOptions {\n  return { timeout: 1, retries: 0 };\n}\n",
                ),
            ],
            query: "RequestOptions",
            file: "src/types.ts",
            line: 2,
        },
        Case {
            name: "typescript type alias against its uses",
            files: vec![
                (
                    "src/handler.ts",
                    "/** A function that answers one request. */\nexport type Handler = (req: Request) => Response;\n".into(),
                ),
                (
                    "src/router.ts",
                    repeat(6, |i| {
                        format!(
                            "/** Registers Handler {i}. */\nexport function register{i}(path: string, handler: Handler): Handler {{\n  const wrapped: Handler = (req) => handler(req);\n  return wrapped;\n}}\n"
                        )
                    }),
                ),
            ],
            query: "Handler",
            file: "src/handler.ts",
            line: 2,
        },
        Case {
            name: "go interface against a method of the same name",
            files: vec![
                (
                    "router.go",
                    "package web\n\n// Router matches requests to handlers.\ntype Router interface {\n\tRoute(path string) Handler\n}\n".into(),
                ),
                (
                    "mux.go",
                    "package web\n\n".to_string()
                        + &repeat(6, |i| {
                            format!(
                                "// Mount{i} attaches a Router.\nfunc (m *Mux) Mount{i}(r Router) Router {{\n\tm.routers = append(m.routers, r)\n\treturn r\n}}\n"
                            )
                        })
                        + "\n// router returns the Router in charge.\nfunc (m *Mux) router() Router {\n\treturn m.routers[0]\n}\n",
                ),
            ],
            query: "Router",
            file: "router.go",
            line: 4,
        },
        Case {
            name: "c++ class template against its uses",
            files: vec![
                (
                    "include/writer.h",
                    "#pragma once\n#include <string>\n\nnamespace fmtlite {\n\n/// Writes formatted text into a buffer of Char.\ntemplate <typename Char>\nclass basic_writer {\n public:\n  void write(const Char* s);\n\n private:\n  std::basic_string<Char> buffer_;\n};\n\n}  // namespace fmtlite\n".into(),
                ),
                (
                    "src/format.cc",
                    "#include \"writer.h\"\n\nnamespace fmtlite {\n\n".to_string()
                        + &repeat(6, |i| {
                            format!(
                                "// Formats value {i} through a basic_writer.\nvoid format_{i}(basic_writer<char>& w, int v) {{\n  basic_writer<char> copy = w;\n  copy.write(\"{i}\");\n}}\n"
                            )
                        })
                        + "\n}  // namespace fmtlite\n",
                ),
            ],
            query: "basic_writer",
            file: "include/writer.h",
            line: 8,
        },
        Case {
            name: "python class against a function of the same name",
            files: vec![
                (
                    "pkg/sessions.py",
                    "\"\"\"Sessions keep settings across requests.\"\"\"\n\n\nclass Session:\n    \"\"\"A persistent set of settings.\"\"\"\n\n    def __init__(self):\n        self.headers = {}\n".into(),
                ),
                (
                    "pkg/api.py",
                    "from .sessions import Session\n\n\ndef session():\n    \"\"\"Returns a new Session.\"\"\"\n    return Session()\n\n\n".to_string()
                        + &repeat(6, |i| {
                            format!(
                                "def get_{i}(url):\n    \"\"\"Fetches url {i} in a fresh Session.\"\"\"\n    with Session() as s:\n        return s.get(url)\n\n"
                            )
                        }),
                ),
            ],
            query: "Session",
            file: "pkg/sessions.py",
            line: 4,
        },
        Case {
            name: "java interface against its implementations",
            files: vec![
                (
                    "src/main/java/demo/Converter.java",
                    "package demo;\n\n/** Turns a string into a value. */\npublic interface Converter<T> {\n    T convert(String value);\n}\n".into(),
                ),
                (
                    "src/main/java/demo/Converters.java",
                    "package demo;\n\npublic final class Converters {\n".to_string()
                        + &repeat(6, |i| {
                            format!(
                                "    /** A Converter for kind {i}. */\n    public static Converter<Integer> converter{i}() {{\n        Converter<Integer> c = Integer::valueOf;\n        return c;\n    }}\n"
                            )
                        })
                        + "}\n",
                ),
            ],
            query: "Converter",
            file: "src/main/java/demo/Converter.java",
            line: 4,
        },
        Case {
            name: "c++ namespace against the code that qualifies names with it",
            files: vec![
                (
                    "include/demo/encoding.h",
                    "#pragma once\n\n/// Text encodings and their conversions.\nnamespace encoding {\n\nint utf8_length(const char* s);\n\n}  // namespace encoding\n".into(),
                ),
                (
                    "src/convert.cpp",
                    repeat(6, |i| {
                        format!(
                            "// Converts buffer {i} with the encoding helpers.\nint convert_{i}(const char* s) {{\n  int n = encoding::utf8_length(s);\n  return encoding::utf8_length(s + n);\n}}\n"
                        )
                    }),
                ),
            ],
            query: "encoding",
            file: "include/demo/encoding.h",
            line: 4,
        },
        Case {
            name: "rust module against the paths that name it",
            files: vec![
                (
                    "src/lib.rs",
                    "//! The crate root.\n\n/// Reading and writing the on-disk cache.\npub mod cache {\n    /// Opens the cache.\n    pub fn open() -> u32 {\n        7\n    }\n}\n".into(),
                ),
                (
                    "src/app.rs",
                    repeat(6, |i| {
                        format!(
                            "/// Step {i}: warm the cache.\npub fn step_{i}() -> u32 {{\n    crate::cache::open() + cache_size_{i}()\n}}\n\nfn cache_size_{i}() -> u32 {{\n    {i}\n}}\n"
                        )
                    }),
                ),
            ],
            query: "cache",
            file: "src/lib.rs",
            line: 4,
        },
        Case {
            name: "typescript class kept in an older major version beside the current one",
            files: vec![
                ("src/v3/schema.ts", SCHEMA.into()),
                ("src/v4/schema.ts", SCHEMA.into()),
            ],
            query: "Schema",
            file: "src/v4/schema.ts",
            line: 2,
        },
        Case {
            name: "the older major version when the query names it",
            files: vec![
                ("src/v3/schema.ts", SCHEMA.into()),
                ("src/v4/schema.ts", SCHEMA.into()),
            ],
            query: "v3 Schema",
            file: "src/v3/schema.ts",
            line: 2,
        },
    ]
}

fn engine(home: &Path) -> Arc<Engine> {
    let home = Home::new(home.to_path_buf());
    let embeddings = Embeddings::new(
        ModelSource::Bundled,
        &home.models_dir(),
        HubOptions::default(),
    )
    .unwrap();
    Arc::new(Engine::new(
        home,
        Arc::new(embeddings),
        SearchTuning::default(),
    ))
}

/// The first hit of `query` in `mode`, as (file, start line, end line).
fn first(
    engine: &Engine,
    root: &Path,
    query: &str,
    mode: ResultMode,
) -> Option<(String, u32, u32)> {
    let req = SearchRequest {
        query: query.to_string(),
        scope: Scope::Mixed,
        result_mode: mode,
        limit: 10,
        ..SearchRequest::default()
    };
    let hits = engine.search(root, &req).unwrap().hits;
    hits.first()
        .map(|h| (h.file.clone(), h.start_line, h.end_line))
}

fn check(case: &Case, engine: &Arc<Engine>) -> Vec<String> {
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path().canonicalize().unwrap();
    for (path, text) in &case.files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    engine
        .start_index(&root, IndexOptions::default())
        .unwrap()
        .run(|_| {})
        .unwrap();
    let mut failures = Vec::new();
    for mode in [ResultMode::Raw, ResultMode::Grouped] {
        let got = first(engine, &root, case.query, mode);
        let found = got
            .as_ref()
            .is_some_and(|(f, s, e)| f == case.file && *s <= case.line && case.line <= *e);
        if !found {
            failures.push(format!(
                "{} ({mode:?}): {:?} first, want {}:{}",
                case.name, got, case.file, case.line
            ));
        }
    }
    failures
}

#[test]
fn a_named_type_comes_first() {
    let home = tempfile::tempdir().unwrap();
    let engine = engine(home.path());
    let failures: Vec<String> = cases().iter().flat_map(|c| check(c, &engine)).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
