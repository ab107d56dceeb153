//! Languages Satori recognises, how a file's language is detected, and which ones have a
//! tree-sitter grammar. Everything else about a language (node kinds, labels) lives in `chunk`.

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
    Shell,
    Sql,
    Html,
    Css,
    Markdown,
    Yaml,
    Toml,
    Json,
    Text,
}

impl Language {
    /// Every language, in a fixed order.
    pub const ALL: [Language; 24] = [
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
        Language::Kotlin,
        Language::Scala,
        Language::Swift,
        Language::Shell,
        Language::Sql,
        Language::Html,
        Language::Css,
        Language::Markdown,
        Language::Yaml,
        Language::Toml,
        Language::Json,
        Language::Text,
    ];

    /// The stable lower-case id used in envelopes and in `lang:` operators.
    pub fn id(self) -> &'static str {
        match self {
            Language::TypeScript => "typescript",
            Language::Tsx => "tsx",
            Language::JavaScript => "javascript",
            Language::Python => "python",
            Language::Rust => "rust",
            Language::Go => "go",
            Language::Java => "java",
            Language::C => "c",
            Language::Cpp => "cpp",
            Language::CSharp => "csharp",
            Language::Ruby => "ruby",
            Language::Php => "php",
            Language::Kotlin => "kotlin",
            Language::Scala => "scala",
            Language::Swift => "swift",
            Language::Shell => "shell",
            Language::Sql => "sql",
            Language::Html => "html",
            Language::Css => "css",
            Language::Markdown => "markdown",
            Language::Yaml => "yaml",
            Language::Toml => "toml",
            Language::Json => "json",
            Language::Text => "text",
        }
    }

    /// Parses an id or a common alias (`ts`, `js`, `py`, `rs`, `c++`, `cs`, `md`, ...).
    pub fn from_id(id: &str) -> Option<Language> {
        let id = id.trim().to_ascii_lowercase();
        let lang = match id.as_str() {
            "typescript" | "ts" => Language::TypeScript,
            "tsx" => Language::Tsx,
            "javascript" | "js" | "jsx" | "node" => Language::JavaScript,
            "python" | "py" => Language::Python,
            "rust" | "rs" => Language::Rust,
            "go" | "golang" => Language::Go,
            "java" => Language::Java,
            "c" | "h" => Language::C,
            "cpp" | "c++" | "cxx" | "cc" | "hpp" => Language::Cpp,
            "csharp" | "c#" | "cs" => Language::CSharp,
            "ruby" | "rb" => Language::Ruby,
            "php" => Language::Php,
            "kotlin" | "kt" => Language::Kotlin,
            "scala" => Language::Scala,
            "swift" => Language::Swift,
            "shell" | "sh" | "bash" | "zsh" => Language::Shell,
            "sql" => Language::Sql,
            "html" => Language::Html,
            "css" | "scss" | "less" => Language::Css,
            "markdown" | "md" => Language::Markdown,
            "yaml" | "yml" => Language::Yaml,
            "toml" => Language::Toml,
            "json" => Language::Json,
            "text" | "txt" => Language::Text,
            _ => return None,
        };
        Some(lang)
    }

    /// Detects the language from a file extension (without the dot, any case).
    pub fn from_extension(ext: &str) -> Option<Language> {
        let ext = ext.to_ascii_lowercase();
        let lang = match ext.as_str() {
            "ts" | "mts" | "cts" => Language::TypeScript,
            "tsx" => Language::Tsx,
            "js" | "jsx" | "mjs" | "cjs" => Language::JavaScript,
            "py" | "pyi" => Language::Python,
            "rs" => Language::Rust,
            "go" => Language::Go,
            "java" => Language::Java,
            "c" | "h" => Language::C,
            "cc" | "cpp" | "cxx" | "c++" | "hh" | "hpp" | "hxx" | "h++" | "ipp" => Language::Cpp,
            "cs" => Language::CSharp,
            "rb" | "rake" | "gemspec" => Language::Ruby,
            "php" => Language::Php,
            "kt" | "kts" => Language::Kotlin,
            "scala" | "sc" => Language::Scala,
            "swift" => Language::Swift,
            "sh" | "bash" | "zsh" => Language::Shell,
            "sql" => Language::Sql,
            "html" | "htm" | "vue" | "svelte" => Language::Html,
            "css" | "scss" | "sass" | "less" => Language::Css,
            "md" | "markdown" | "mdx" | "rst" | "adoc" => Language::Markdown,
            "yaml" | "yml" => Language::Yaml,
            "toml" => Language::Toml,
            "json" | "jsonc" => Language::Json,
            "txt" => Language::Text,
            _ => return None,
        };
        Some(lang)
    }

    /// Detects the language of a path from its extension or a few well-known file names.
    pub fn from_path(path: &str) -> Option<Language> {
        let name = path.rsplit('/').next().unwrap_or(path);
        match name {
            "Makefile" | "Dockerfile" | "Jenkinsfile" => return Some(Language::Text),
            "Rakefile" | "Gemfile" => return Some(Language::Ruby),
            _ => {}
        }
        let (stem, ext) = name.rsplit_once('.')?;
        if stem.is_empty() {
            return None;
        }
        Language::from_extension(ext)
    }

    /// True for programming languages (as opposed to documentation, data and config formats).
    pub fn is_code(self) -> bool {
        !matches!(
            self,
            Language::Markdown
                | Language::Yaml
                | Language::Toml
                | Language::Json
                | Language::Text
                | Language::Html
                | Language::Css
        )
    }

    /// True for prose formats (documentation).
    pub fn is_docs(self) -> bool {
        matches!(self, Language::Markdown | Language::Text)
    }
}

impl std::fmt::Display for Language {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
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
    fn detection() {
        check("src/main.rs", Some("rust"));
        check("a/b/c.tsx", Some("tsx"));
        check("x.mjs", Some("javascript"));
        check("include/vec.hpp", Some("cpp"));
        check("lib/x.h", Some("c"));
        check("README.md", Some("markdown"));
        check("Makefile", Some("text"));
        check(".gitignore", None);
        check("image.png", None);
    }

    #[test]
    fn ids_round_trip() {
        for lang in Language::ALL {
            assert_eq!(Language::from_id(lang.id()), Some(lang));
        }
    }
}
