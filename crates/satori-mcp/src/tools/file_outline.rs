//! `file_outline`: the symbols of one file of an indexed codebase with their handles, or one
//! symbol resolved exactly. The outline is parsed from the file as it is now (ids do not
//! depend on positions, so they match the index's; spans are always current), behind the
//! same gate as a search and the same path, secrets and binary rules as `read_file`.
//!
//! Also home of what the other navigation tools share: finding a codebase's file from the
//! relative path a handle carries, and matching symbols exactly.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use rmcp::model::CallToolResult;

use satori_core::{Language, Rule, Symbol};
use satori_protocol::envelope::{FileOutlineEnvelope, Hint, NavHints, Outline, Status, reasons};
use satori_protocol::file_outline::LIMIT_SYMBOLS_MAX;
use satori_protocol::{FILE_OUTLINE, FileOutlineParams, ResolveMode};

use super::gate::{Verb, gate};
use super::source::{HEAD_BYTES, not_regular, open_regular, refusal};
use super::{canonical_or_normal, invalid_field, reply, require_absolute};
use crate::ctx::Ctx;
use crate::to_proto::{self, display};

/// How the gate's messages name an outline.
const OUTLINES: Verb = Verb {
    verb: "outline files",
    done: "used",
};

pub(crate) fn handle(ctx: &Ctx, p: FileOutlineParams) -> CallToolResult {
    let abs = match require_absolute(FILE_OUTLINE, &p.path) {
        Ok(a) => a,
        Err(r) => return r,
    };
    let answer =
        |status: Status, reason: Option<&str>, message: Option<String>| FileOutlineEnvelope {
            status,
            path: p.path.clone(),
            codebase_root: None,
            file: p.file.clone(),
            outline: None,
            has_more: false,
            reason: reason.map(str::to_owned),
            message,
            warnings: Vec::new(),
            hints: NavHints::default(),
            compatibility: None,
        };
    let t = match gate(ctx, &p.path, &canonical_or_normal(&abs), OUTLINES) {
        Ok(t) => t,
        Err(mut stop) => {
            let hints = stop.nav_hints();
            let mut v = answer(stop.status, stop.reason, Some(stop.message));
            v.hints = hints;
            v.compatibility = stop.compatibility;
            return reply(&v, stop.is_error);
        }
    };
    let root_shown = display(&t.root);
    // From here on the codebase is known: every answer names the root its files are under.
    let answer =
        |status: Status, reason: Option<&str>, message: Option<String>| FileOutlineEnvelope {
            codebase_root: Some(root_shown.clone()),
            ..answer(status, reason, message)
        };
    let file = match codebase_file(&t.root, t.prefix.as_deref(), &p.file) {
        Ok(f) => f,
        Err(FileProblem::Invalid(problem)) => {
            return invalid_field(FILE_OUTLINE, "file", &problem);
        }
        Err(FileProblem::Missing) => {
            let mut v = answer(
                Status::NotFound,
                Some(reasons::FILE_NOT_FOUND),
                Some(format!(
                    "'{}' is not a file of '{root_shown}' (moved, renamed or deleted?). Search again for a fresh path.",
                    p.file
                )),
            );
            v.hints.search = Some(Hint::search_codebase(&root_shown, &search_words(&p.file)));
            return reply(&v, false);
        }
        Err(FileProblem::Outside(real)) => {
            let v = answer(
                Status::Blocked,
                Some(reasons::OUTSIDE_CODEBASE),
                Some(format!(
                    "'{}' leads outside '{root_shown}' (to '{}'); Satori reads only inside indexed codebases.",
                    p.file,
                    display(&real)
                )),
            );
            return reply(&v, false);
        }
    };
    // The file as found, relative to the root like every file of the answer (the caller may
    // have named it relative to a subdirectory `path`).
    let answer =
        |status: Status, reason: Option<&str>, message: Option<String>| FileOutlineEnvelope {
            file: file.rel.clone(),
            ..answer(status, reason, message)
        };
    let text = match read_source(ctx, FILE_OUTLINE, &file) {
        Ok(text) => text,
        Err(u) => {
            let mut v = answer(u.status, Some(u.reason), Some(u.message));
            v.hints.read_file = u.read_file;
            return reply(&v, u.is_error);
        }
    };
    let (language, mut symbols) = ctx.engine.outline_of(&file.rel, &text);
    if !language.has_symbols() {
        let mut v = answer(
            Status::Unsupported,
            Some(reasons::UNSUPPORTED_LANGUAGE),
            Some(format!(
                "'{}' is {}, which has no grammar, so it has no outline; read it instead.",
                file.rel,
                language_name(language)
            )),
        );
        v.hints.read_file = Some(read_hint(ctx, &file, &text));
        return reply(&v, false);
    }
    sort_outline(&mut symbols);
    let listed = |symbols: Vec<&Symbol>| Outline {
        symbols: symbols
            .into_iter()
            .map(|s| to_proto::outline_symbol(&file.rel, language, s))
            .collect(),
    };
    match p.resolve_mode {
        ResolveMode::Exact => {
            let found = matching(
                &symbols,
                p.symbol_id_exact.as_deref(),
                p.symbol_label_exact.as_deref(),
            );
            match found.len() {
                1 => {
                    let mut v = answer(Status::Ok, None, None);
                    v.outline = Some(listed(found));
                    reply(&v, false)
                }
                0 => {
                    let mut v = answer(
                        Status::NotFound,
                        Some(reasons::SYMBOL_NOT_FOUND),
                        Some(format!(
                            "No symbol of '{}' matches; a handle from before an edit that renamed or moved the symbol is stale. Search again for a fresh one.",
                            file.rel
                        )),
                    );
                    let words = p
                        .symbol_label_exact
                        .as_deref()
                        .map_or_else(|| search_words(&file.rel), name_in_label);
                    v.hints.search = Some(Hint::search_codebase(&root_shown, &words));
                    reply(&v, false)
                }
                n => {
                    let mut v = answer(
                        Status::Ambiguous,
                        Some(reasons::AMBIGUOUS_SYMBOL),
                        Some(format!(
                            "{n} symbols of '{}' match; call again with the symbolIdExact of the one you want.",
                            file.rel
                        )),
                    );
                    v.outline = Some(listed(found));
                    reply(&v, false)
                }
            }
        }
        ResolveMode::Outline => {
            let from = p.start_line.unwrap_or(1);
            let to = p.end_line.unwrap_or(u32::MAX);
            let window: Vec<&Symbol> = symbols
                .iter()
                .filter(|s| s.end_line >= from && s.start_line <= to)
                .collect();
            let limit = p.limit_symbols.min(LIMIT_SYMBOLS_MAX) as usize;
            let mut v = answer(Status::Ok, None, None);
            v.has_more = window.len() > limit;
            v.outline = Some(listed(window.into_iter().take(limit).collect()));
            reply(&v, false)
        }
    }
}

/// The contract's order: by span, then label, then id.
pub(crate) fn sort_outline(symbols: &mut [Symbol]) {
    symbols.sort_by(|a, b| {
        (a.start_line, a.end_line, &a.label, &a.id).cmp(&(
            b.start_line,
            b.end_line,
            &b.label,
            &b.id,
        ))
    });
}

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
    /// The file with links resolved (inside the root).
    pub real: PathBuf,
    /// `real` relative to the root, `/`-separated: where a link named `rel` leads.
    pub resolved: String,
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
    let resolved = real
        .strip_prefix(root)
        .map(satori_core::to_slash)
        .unwrap_or_default();
    Ok(CodebaseFile {
        rel,
        real,
        resolved,
    })
}

/// Why a file's text is not used.
pub(crate) struct Unreadable {
    pub status: Status,
    pub reason: &'static str,
    pub message: String,
    pub is_error: bool,
    /// Read it with `read_file` instead (a file too large to parse whole).
    pub read_file: Option<Hint>,
}

/// The text of a codebase file under `read_file`'s rules: the path and secrets policy,
/// regular files only, text only, at most `READ_FILE_MAX_BYTES`.
pub(crate) fn read_source(
    ctx: &Ctx,
    tool: &str,
    file: &CodebaseFile,
) -> Result<String, Unreadable> {
    let shown = display(&file.real);
    let policy = ctx.engine.policy();
    let own_state = policy.state_dir().is_some_and(|s| file.real.starts_with(s));
    let refused = |rule: Rule| Unreadable {
        status: Status::Blocked,
        reason: reasons::POLICY_REFUSED,
        message: refusal(tool, &file.rel, &rule),
        is_error: false,
        read_file: None,
    };
    // As `read_file`: the name asked for, where a link leads, and the secret places on the
    // whole path.
    if let Some(rule) = own_state
        .then_some(Rule::StateDirectory)
        .or_else(|| policy.path_rule(&file.rel))
        .or_else(|| policy.path_rule(&file.resolved))
        .or_else(|| policy.place_rule(&satori_core::to_slash(&file.real)))
    {
        return Err(refused(rule));
    }
    let failed = |e: std::io::Error| Unreadable {
        status: Status::Error,
        reason: reasons::IO_ERROR,
        message: format!("Error: cannot read '{shown}': {e}."),
        is_error: true,
        read_file: None,
    };
    let handle = open_regular(&file.real).map_err(failed)?;
    let meta = handle.metadata().map_err(failed)?;
    if not_regular(&shown, &meta).is_some() {
        return Err(Unreadable {
            status: Status::Unsupported,
            reason: reasons::FILE_NOT_FOUND,
            message: format!("'{}' is not a regular file.", file.rel),
            is_error: false,
            read_file: None,
        });
    }
    let max = ctx.config.read_max_bytes;
    let mut bytes = Vec::new();
    (&handle)
        .take(max as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(failed)?;
    if satori_core::looks_binary(&bytes[..bytes.len().min(HEAD_BYTES)]) {
        return Err(Unreadable {
            status: Status::Unsupported,
            reason: reasons::BINARY_FILE,
            message: format!("'{}' is a binary file; it has no outline.", file.rel),
            is_error: false,
            read_file: None,
        });
    }
    if bytes.len() > max {
        return Err(Unreadable {
            status: Status::Unsupported,
            reason: reasons::FILE_TOO_LARGE,
            message: format!(
                "'{}' is larger than READ_FILE_MAX_BYTES ({max} bytes), so it is not parsed for an outline; read it in windows instead.",
                file.rel
            ),
            is_error: false,
            read_file: Some(Hint::read_file(&shown, 1, ctx.config.read_max_lines as u32)),
        });
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    if let Some(rule) = policy.content_rule(&text) {
        return Err(refused(rule));
    }
    Ok(text)
}

/// `read_file` of the start of a file already read.
fn read_hint(ctx: &Ctx, file: &CodebaseFile, text: &str) -> Hint {
    let lines = text.lines().count().max(1);
    let to = lines.min(ctx.config.read_max_lines);
    Hint::read_file(&display(&file.real), 1, to as u32)
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
