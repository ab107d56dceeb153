//! What the navigation tools share (`file_outline`, `call_graph`, `read_file`): a
//! codebase's file found from the relative path a handle carries (no `..`, links resolved,
//! never outside the root), the exact symbol match of `file_outline`'s exact mode and
//! `read_file`'s `open_symbol`, and the words of navigation answers (what to search for to
//! find a file or a symbol again, a language's name).

use std::path::{Component, Path, PathBuf};

use satori_core::{Language, Symbol};

use crate::to_proto::display;

/// The symbols an exact request names: the id must be equal when given, and the label must
/// be the symbol's label or its bare name when given. `read_file`'s `open_symbol` resolves
/// with the same rule.
pub(crate) fn matching<'s>(
    symbols: &'s [Symbol],
    id: Option<&str>,
    label: Option<&str>,
) -> Vec<&'s Symbol> {
    symbols
        .iter()
        .filter(|s| id.is_none_or(|id| id == s.id))
        .filter(|s| label.is_none_or(|l| l == s.label || l == s.name))
        .collect()
}

/// A file of a codebase, as a handle names it.
pub(crate) struct CodebaseFile {
    /// Relative to the root, `/`-separated, as the index and the ids know it.
    pub rel: String,
    /// The root joined with `rel`: the file as named, links not resolved.
    pub asked: PathBuf,
    /// The file with links resolved (inside the root).
    pub real: PathBuf,
}

/// Why a handle's file cannot be used.
pub(crate) enum FileProblem {
    /// Not a usable relative path (the message says why).
    Invalid(String),
    /// No such file.
    Missing,
    /// A link that leaves the codebase (where it leads).
    Outside(PathBuf),
}

/// Finds `file` — relative to the codebase root as results give it, or absolute inside the
/// root; relative to the subdirectory the caller named (`prefix`) when only that exists.
/// `..` is refused and links are resolved: nothing outside the root is ever reached.
pub(crate) fn codebase_file(
    root: &Path,
    prefix: Option<&str>,
    file: &str,
) -> Result<CodebaseFile, FileProblem> {
    let asked = Path::new(file.trim());
    let relative = if asked.is_absolute() {
        super::normalize(asked)
            .strip_prefix(root)
            .map(Path::to_path_buf)
            .map_err(|_| {
                FileProblem::Invalid(format!(
                    "must be relative to the codebase root '{}', got '{file}'",
                    display(root)
                ))
            })?
    } else {
        asked.to_path_buf()
    };
    let mut parts: Vec<String> = Vec::new();
    for c in relative.components() {
        match c {
            Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
            Component::CurDir => {}
            _ => {
                return Err(FileProblem::Invalid(format!(
                    "must be a path inside the codebase without '..', got '{file}'"
                )));
            }
        }
    }
    if parts.is_empty() {
        return Err(FileProblem::Invalid(format!(
            "must name a file inside the codebase, got '{file}'"
        )));
    }
    let mut rel = parts.join("/");
    if !root.join(&rel).exists()
        && let Some(prefix) = prefix
    {
        let under = format!("{prefix}/{rel}");
        if root.join(&under).exists() {
            rel = under;
        }
    }
    let path = root.join(&rel);
    let Ok(real) = path.canonicalize() else {
        return Err(FileProblem::Missing);
    };
    if !real.starts_with(root) {
        return Err(FileProblem::Outside(real));
    }
    if real.is_dir() {
        return Err(FileProblem::Invalid(format!(
            "'{rel}' is a directory; name a file inside it"
        )));
    }
    Ok(CodebaseFile {
        rel,
        asked: path,
        real,
    })
}

/// What to search for to find a file again: its name without the extension, as words.
pub(crate) fn search_words(file: &str) -> String {
    let name = file.rsplit('/').next().unwrap_or(file);
    let stem = name.split_once('.').map_or(name, |(stem, _)| stem);
    stem.replace(['_', '-'], " ")
}

/// The name a symbol label shows (`route_request` of `def route_request(self, request)`,
/// `Router` of `class Router`): what to search for to find the symbol again.
pub(crate) fn name_in_label(label: &str) -> String {
    let head = label
        .split(['(', '<', ':', '=', '{'])
        .next()
        .unwrap_or(label);
    head.split_whitespace()
        .last()
        .map_or_else(|| label.trim().to_owned(), str::to_owned)
}

/// A language as messages name it.
pub(crate) fn language_name(language: Language) -> String {
    match language {
        Language::Text => "plain text".to_owned(),
        other => format!("{} text", other.id()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(label: &str, name: &str) {
        assert_eq!(name_in_label(label), name);
    }

    #[test]
    fn names_in_labels() {
        check("def route_request(self, request)", "route_request");
        check("class Router", "Router");
        check("get(): Token", "get");
        check("pub fn parse<T: Read>(input: T) -> Result<T>", "parse");
        check("interface Token", "Token");
        check("const LIMIT = 5", "LIMIT");
        check("route_request", "route_request");
    }
}
