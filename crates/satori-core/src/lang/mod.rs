//! Languages Satori recognises. Each language is one file of this module exporting its
//! [`Spec`]: how a file is detected as that language, its tree-sitter grammar, which syntax
//! nodes are definitions (chunk classification), which are calls and imports (the call
//! graph), how the resolver widens its imports, and how search categorises its files and
//! chunks. [`TABLE`] lists the specs. The machinery that uses them (the chunker's tree walk,
//! the reference walk, the resolver's tiers, the categoriser) lives in `chunk`, `graph` and
//! `search`, and keeps no language list of its own.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use tree_sitter::Node;

pub(crate) use syntax::{Ctx, Def, collapse};

mod syntax;

mod c;
mod cpp;
mod csharp;
mod css;
mod elixir;
mod go;
mod haskell;
mod html;
mod java;
mod javascript;
mod json;
mod kotlin;
mod lua;
mod markdown;
mod perl;
mod php;
mod python;
mod ruby;
mod rust;
mod scala;
mod shell;
mod sql;
mod swift;
mod text;
mod toml;
mod tsx;
mod typescript;
mod yaml;
mod zig;

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

/// Everything Satori knows of one language, exported by the language's file.
#[derive(Clone, Copy)]
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
    /// Interpreters a shebang line names for a script of this language (`python` for
    /// `#!/usr/bin/env python3`: versions and paths are dropped before comparing).
    pub interpreters: &'static [&'static str],
    /// What a file's text says beyond its name: the language it is really written in, when
    /// not this one.
    pub refine: Option<fn(&str) -> Option<Language>>,
    pub kind: Kind,
    /// The tree-sitter grammar Satori ships for it; a language with a grammar yields symbols.
    pub grammar: Option<fn() -> tree_sitter::Language>,
    /// Where its outline comes from.
    pub outline: Outline,
    /// What the call graph reads in its syntax trees.
    pub calls: Calls,
    /// How the resolver matches its calls with definitions.
    pub resolution: Resolution,
    /// How search categorises its files and chunks.
    pub category: CategoryHints,
}

impl Spec {
    /// A language Satori only detects: no grammar, no outline, no call rules, no hints.
    /// Language files start from it (`..Spec::DETECTED`).
    pub const DETECTED: Spec = Spec {
        language: Language::Text,
        id: "",
        aliases: &[],
        extensions: &[],
        file_names: &[],
        interpreters: &[],
        refine: None,
        kind: Kind::Data,
        grammar: None,
        outline: Outline::None,
        calls: Calls::None("no grammar: nothing parses its calls"),
        resolution: Resolution::PLAIN,
        category: CategoryHints::NONE,
    };
}

/// Where a language's outline (its symbols) comes from.
#[derive(Clone, Copy)]
pub enum Outline {
    /// Definitions recognised in the syntax tree of its grammar.
    Syntax(SyntaxRules),
    /// Read from its lines by one of `chunk`'s line readers (no grammar). `definitions` says
    /// whether the outline has definitions a caller can look up, or only sections.
    Lines {
        reader: LineReader,
        definitions: bool,
    },
    /// No outline: the file is chunked by size.
    None,
}

/// The line readers of `chunk` (`chunk/markdown.rs`, `chunk/perl.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineReader {
    /// Headings.
    Markdown,
    /// Packages, subs and POD sections.
    Perl,
}

/// Recognises a definition node (kind, name, declaration, body, scope).
pub type Classify = for<'t> fn(Node<'t>, &str, &Ctx) -> Option<Def<'t>>;

/// Which nodes of a syntax tree define what, for the chunker's tree walk.
#[derive(Clone, Copy)]
pub struct SyntaxRules {
    pub classify: Classify,
    /// Whether `[Attribute]` in front of a definition is an attribute (C#), which labels drop
    /// like `@Annotation` and `#[attr]`.
    pub bracket_attributes: bool,
    /// Whether items inside item-level macro calls (`cfg_x! { ... }`) are parsed as items
    /// (Rust; the unwrapping is `chunk/ts.rs`'s).
    pub item_macros: bool,
    /// Node kinds besides comments that document or annotate the node after them and stay
    /// with it (attributes, decorators, documentation).
    pub leading: &'static [&'static str],
    /// Node kinds that only wrap a definition (`export`, a decorated definition, a
    /// template): the symbol's span starts at the wrapper.
    pub wrappers: &'static [&'static str],
}

impl SyntaxRules {
    /// `classify`, with no attributes in brackets, no macros to unwrap, no leading node
    /// but comments and no wrappers.
    pub const fn new(classify: Classify) -> SyntaxRules {
        SyntaxRules {
            classify,
            bracket_attributes: false,
            item_macros: false,
            leading: &[],
            wrappers: &[],
        }
    }
}

/// The call graph's view of a language.
#[derive(Clone, Copy)]
pub enum Calls {
    /// Its calls and imports are read by these rules.
    Rules(&'static CallRules),
    /// It has none, and why (a test requires the reason).
    None(&'static str),
}

/// Where a call node keeps what it calls.
#[derive(Debug, Clone, Copy)]
pub enum Callee {
    /// An expression in this field (`f`, `obj.f`, `pkg::f`) holds the name.
    Field(&'static str),
    /// The name and the receiver are fields of the call itself (Java's `obj.f()`).
    Split {
        name: &'static str,
        receiver: &'static str,
    },
    /// The first named child is the called expression (grammars without fields).
    First,
}

/// Node kinds and names the reference walk (`graph/extract.rs`) looks for.
#[derive(Clone, Copy)]
pub struct CallRules {
    /// Call node kinds and where each keeps its callee.
    pub calls: &'static [(&'static str, Callee)],
    /// Import statement node kinds.
    pub imports: &'static [&'static str],
    /// The field of an import node that holds its path, by node kind, where the path is not
    /// a string (the whole statement is read otherwise).
    pub import_path_fields: &'static [(&'static str, &'static str)],
    /// Import node kinds that hold code instead when they have a body (`mod x { ... }`).
    pub code_when_bodied: &'static [&'static str],
    /// Calls that are imports (`require("x")`, `source lib.sh`).
    pub import_calls: ImportCalls,
    /// Names the grammar parses as calls that are syntax (definitions, control flow).
    pub keyword_calls: &'static [&'static str],
    /// Calls that define a function, whose first argument is the head of the definition and
    /// not a call (Elixir's `def name(args)`).
    pub definition_calls: &'static [&'static str],
    /// A call that constructs (Ruby's `Ledger.new`).
    pub constructor: Option<Constructor>,
    /// Macro arguments left as flat tokens, read back for the calls written in them.
    pub macro_tokens: Option<MacroTokens>,
}

impl CallRules {
    /// No rules; language files start from it (`..CallRules::NONE`).
    pub const NONE: CallRules = CallRules {
        calls: &[],
        imports: &[],
        import_path_fields: &[],
        code_when_bodied: &[],
        import_calls: ImportCalls::NONE,
        keyword_calls: &[],
        definition_calls: &[],
        constructor: None,
        macro_tokens: None,
    };
}

/// Reads a call of `name` on the receiver written as one that constructs: the class's name
/// and the receiver left (a namespace), as if the class were called; `None` when it does
/// not construct.
pub type Constructor = fn(name: &str, receiver: &str) -> Option<(String, Option<String>)>;

/// Calls that import a file or module.
#[derive(Clone, Copy)]
pub struct ImportCalls {
    /// The names of such calls.
    pub names: &'static [&'static str],
    /// Whether the identifiers written in the call are the names it brings in (Elixir's
    /// `alias Acme.Ledger`); else it brings in none.
    pub binds_names: bool,
    /// The field that holds the path when it is a bare word, not a string (`. lib/x.sh`).
    pub bare_path_field: Option<&'static str>,
}

impl ImportCalls {
    pub const NONE: ImportCalls = ImportCalls {
        names: &[],
        binds_names: false,
        bare_path_field: None,
    };
}

/// The token trees a language leaves macro arguments in, and the keywords that stand before
/// a parenthesis there without being calls.
#[derive(Clone, Copy)]
pub struct MacroTokens {
    pub kind: &'static str,
    pub keywords: &'static [&'static str],
}

/// What the resolver (`graph/resolve.rs`) needs to know of a language beyond its names.
#[derive(Clone, Copy)]
pub struct Resolution {
    /// The language whose definitions its files call by name, when not its own: one per
    /// runtime (TypeScript calls JavaScript, C++ calls C, Kotlin and Scala call Java).
    pub family: Option<Language>,
    /// A call without a receiver (`f()`) never runs a method: methods are only ever called
    /// on something (`self.f()`, `this.f()`, `Type::f()`).
    pub bare_calls_are_functions: bool,
    /// No free functions: a bare call runs a method of the caller's own type, of a parent of
    /// it, or one imported statically; and static methods are called on types, not values.
    pub bare_calls_are_own: bool,
    /// The unit of code is the directory (a Go or Java package, a C# namespace, a C source
    /// beside its header): code calls across its files without importing them.
    pub directory_is_unit: bool,
    /// Every file of a module sees every other, without imports (Swift).
    pub whole_module_visible: bool,
    /// `super` in a call path names the parent module, not the parent type (Rust).
    pub super_is_module: bool,
    /// The receivers that are types: capitalised names (`None`), or only these keywords (C#,
    /// where a capitalised name is as often a property as a type).
    pub type_keywords: Option<&'static [&'static str]>,
    /// The separator of a path whose first part is a name an import may bind (`::` in
    /// `task::spawn()`, `.` in `Lists.of()`); `None` where imports are not followed so.
    pub path_separator: Option<&'static str>,
    /// First parts of a path that name the standard library, never in a codebase.
    pub library_roots: &'static [&'static str],
    /// Overloads are signatures followed by the one implementation that runs for all of
    /// them, written last (TypeScript).
    pub overloads_share_body: bool,
    /// How its imports name files.
    pub imports: ImportExpansion,
}

impl Resolution {
    /// A language whose calls reach its own definitions, with none of the special cases.
    pub const PLAIN: Resolution = Resolution {
        family: None,
        bare_calls_are_functions: false,
        bare_calls_are_own: false,
        directory_is_unit: false,
        whole_module_visible: false,
        super_is_module: false,
        type_keywords: None,
        path_separator: None,
        library_roots: &[],
        overloads_share_body: false,
        imports: ImportExpansion::PLAIN,
    };
}

/// How a language's imports name the files they reach, beyond the parts of their path.
#[derive(Clone, Copy)]
pub struct ImportExpansion {
    /// An import names a whole directory (a Go package, a C# namespace).
    pub names_directory: bool,
    /// How a part of an import path is written in a file name (`LedgerBook` →
    /// `ledger_book` in Elixir).
    pub part: Option<fn(&str) -> String>,
    /// What else the language's imports reach or bind, added after the parts of each path.
    pub expand: Option<for<'a> fn(&[WrittenImport<'a>], &mut ImportReach<'a>)>,
}

impl ImportExpansion {
    pub const PLAIN: ImportExpansion = ImportExpansion {
        names_directory: false,
        part: None,
        expand: None,
    };
}

/// One import of a file, as the resolver hands it to [`ImportExpansion::expand`].
pub struct WrittenImport<'a> {
    /// As written (`crate::ledger::{Book, Entry}`).
    pub path: &'a str,
    /// The identifiers written in the statement.
    pub names: &'a [String],
    /// The parts of the path without relative markers (`ledger`).
    pub parts: Vec<String>,
}

/// What the imports of one file reach.
#[derive(Default)]
pub struct ImportReach<'a> {
    /// Path parts of the files (or directories, when the flag is set) imported.
    pub targets: Vec<(Vec<String>, bool)>,
    /// Directories that count as near as the caller's own (where a module's items are
    /// defined and re-exported from).
    pub module_dirs: Vec<Vec<String>>,
    /// Names an import binds: a call of one runs what the import names.
    pub bound: HashSet<&'a str>,
}

/// Language-specific cases of search's path categories (`search/category.rs`).
#[derive(Clone, Copy)]
pub struct CategoryHints {
    /// File name endings (lower case) of its test scripts (Perl's `.t`).
    pub test_suffixes: &'static [&'static str],
    /// File name endings (lower case) of its generated files (`_pb2.py`, `.min.js`).
    pub generated_suffixes: &'static [&'static str],
    /// File name endings (lower case) of its type declarations without implementation
    /// (`.d.ts`, `.pyi`).
    pub declaration_suffixes: &'static [&'static str],
    /// A `doc/` directory of this language holds code (Go, where `doc` is a package name).
    pub doc_dirs_hold_code: bool,
    /// For a prose language: which files, by lower-case name, are prose; the others are
    /// code it has no grammar for. `None`: all of them.
    pub is_prose: Option<fn(&str) -> bool>,
    /// Modules whose chunks are tests wherever they live (Rust's `mod tests`).
    pub test_modules: &'static [&'static str],
    /// The sections of its outline are its documentation (Perl's POD).
    pub sections_are_docs: bool,
}

impl CategoryHints {
    pub const NONE: CategoryHints = CategoryHints {
        test_suffixes: &[],
        generated_suffixes: &[],
        declaration_suffixes: &[],
        doc_dirs_hold_code: false,
        is_prose: None,
        test_modules: &[],
        sections_are_docs: false,
    };
}

/// The language table, in [`Language::ALL`] order: one row per language file.
pub const TABLE: [Spec; 29] = [
    typescript::SPEC,
    tsx::SPEC,
    javascript::SPEC,
    python::SPEC,
    rust::SPEC,
    go::SPEC,
    java::SPEC,
    c::SPEC,
    cpp::SPEC,
    csharp::SPEC,
    ruby::SPEC,
    php::SPEC,
    kotlin::SPEC,
    scala::SPEC,
    swift::SPEC,
    elixir::SPEC,
    haskell::SPEC,
    lua::SPEC,
    zig::SPEC,
    shell::SPEC,
    perl::SPEC,
    sql::SPEC,
    html::SPEC,
    css::SPEC,
    markdown::SPEC,
    yaml::SPEC,
    toml::SPEC,
    json::SPEC,
    text::SPEC,
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
        TABLE
            .iter()
            .find(|s| s.interpreters.contains(&name))
            .map(|s| s.language)
    }

    /// `self`, refined by what the file says (its spec's `refine`): a file detected as plain
    /// text takes the language its shebang line names, and a `.h` header written in C++ is
    /// C++.
    pub fn refined(self, text: &str) -> Language {
        self.spec()
            .refine
            .and_then(|refine| refine(text))
            .unwrap_or(self)
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

    /// True for languages whose definitions Satori reads: those with a grammar, and those
    /// whose outline of definitions is read from their lines (Perl).
    pub fn has_symbols(self) -> bool {
        match self.spec().outline {
            Outline::Syntax(_) => true,
            Outline::Lines { definitions, .. } => definitions,
            Outline::None => false,
        }
    }

    /// The call graph's rules for this language, if it has any.
    pub(crate) fn call_rules(self) -> Option<&'static CallRules> {
        match self.spec().calls {
            Calls::Rules(rules) if !rules.calls.is_empty() => Some(rules),
            _ => None,
        }
    }

    /// The language whose definitions files of this one call by name.
    pub(crate) fn family(self) -> Language {
        self.spec().resolution.family.unwrap_or(self)
    }
}

impl std::fmt::Display for Language {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

#[cfg(test)]
mod tests;
