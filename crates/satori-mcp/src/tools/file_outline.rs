//! `file_outline`: the symbols of one file of an indexed codebase with their handles, or one
//! symbol resolved exactly. The outline is parsed from the file as it is now (ids do not
//! depend on positions, so they match the index's; spans are always current), behind the
//! same gate as a search and the same path, secrets and binary rules as `read_file`.

use rmcp::model::CallToolResult;

use satori_core::{ReadPurpose, ReadRefusal, Symbol};
use satori_protocol::envelope::{FileOutlineEnvelope, Hint, NavHints, Outline, Status, reasons};
use satori_protocol::file_outline::LIMIT_SYMBOLS_MAX;
use satori_protocol::{FILE_OUTLINE, FileOutlineParams, ResolveMode};

use super::gate::{Verb, gate};
use super::navigation::{
    CodebaseFile, FileProblem, codebase_file, language_name, matching, name_in_label, search_words,
};
use super::source::refusal;
use super::{invalid_field, reply, require_absolute};
use crate::service::Service;
use crate::session::Session;
use crate::to_proto::{self, display};

/// How the gate's messages name an outline.
const OUTLINES: Verb = Verb {
    verb: "outline files",
    done: "used",
};

pub(crate) fn handle(session: &Session, p: FileOutlineParams) -> CallToolResult {
    let service = session.service();
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
    let t = match gate(session, &p.path, &abs, OUTLINES) {
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
    let text = match read_source(service, FILE_OUTLINE, &file) {
        Ok(text) => text,
        Err(u) => {
            let mut v = answer(u.status, Some(u.reason), Some(u.message));
            v.hints.read_file = u.read_file;
            return reply(&v, u.is_error);
        }
    };
    let (language, mut symbols) = service.engine.outline_of(&file.rel, &text);
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
        v.hints.read_file = Some(read_hint(service, &file, &text));
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
fn sort_outline(symbols: &mut [Symbol]) {
    symbols.sort_by(|a, b| {
        (a.start_line, a.end_line, &a.label, &a.id).cmp(&(
            b.start_line,
            b.end_line,
            &b.label,
            &b.id,
        ))
    });
}

/// Why a file's text is not used.
struct Unreadable {
    pub status: Status,
    pub reason: &'static str,
    pub message: String,
    pub is_error: bool,
    /// Read it with `read_file` instead (a file too large to parse whole).
    pub read_file: Option<Hint>,
}

/// The text of a codebase file under `read_file`'s rules ([`satori_core::Engine::open_for_read`]):
/// the path and secrets policy, regular files only, text only, at most `READ_FILE_MAX_BYTES`.
fn read_source(service: &Service, tool: &str, file: &CodebaseFile) -> Result<String, Unreadable> {
    let shown = display(&file.real);
    let asked =
        service
            .engine
            .open_for_read(&file.asked, ReadPurpose::Whole, service.read_limits());
    let unreadable = |status: Status, reason: &'static str, message: String| Unreadable {
        status,
        reason,
        message,
        is_error: false,
        read_file: None,
    };
    let why = match asked {
        Ok(readable) => return Ok(readable.text.unwrap_or_default()),
        Err(why) => why,
    };
    Err(match why {
        ReadRefusal::Rule(rule) => unreadable(
            Status::Blocked,
            reasons::POLICY_REFUSED,
            refusal(tool, &file.rel, &rule),
        ),
        ReadRefusal::NotFound => unreadable(
            Status::NotFound,
            reasons::FILE_NOT_FOUND,
            format!(
                "'{}' is not a file of its codebase (moved, renamed or deleted?).",
                file.rel
            ),
        ),
        ReadRefusal::NotRegular(_) => unreadable(
            Status::Unsupported,
            reasons::FILE_NOT_FOUND,
            format!("'{}' is not a regular file.", file.rel),
        ),
        ReadRefusal::Binary { .. } => unreadable(
            Status::Unsupported,
            reasons::BINARY_FILE,
            format!("'{}' is a binary file; it has no outline.", file.rel),
        ),
        ReadRefusal::TooLarge { .. } => Unreadable {
            read_file: Some(Hint::read_file(
                &shown,
                1,
                service.config.read_max_lines as u32,
            )),
            ..unreadable(
                Status::Unsupported,
                reasons::FILE_TOO_LARGE,
                format!(
                    "'{}' is larger than READ_FILE_MAX_BYTES ({} bytes), so it is not parsed for an outline; read it in windows instead.",
                    file.rel, service.config.read_max_bytes
                ),
            )
        },
        // The gate let the codebase through; a codebase nested in it and not ready, or not
        // served, stops the read.
        ReadRefusal::Indexing { root, .. } => unreadable(
            Status::NotReady,
            reasons::INDEXING,
            format!(
                "'{}' is being indexed for the first time; try again once it is ready.",
                display(&root)
            ),
        ),
        ReadRefusal::Blocked { root, refusal } => unreadable(
            Status::Blocked,
            reasons::POLICY_REFUSED,
            format!(
                "'{}' is inside '{}', which Satori does not serve ({refusal}).",
                file.rel,
                display(&root)
            ),
        ),
        ReadRefusal::Outside { .. } => unreadable(
            Status::Blocked,
            reasons::OUTSIDE_CODEBASE,
            format!("'{}' is outside every indexed codebase.", file.rel),
        ),
        ReadRefusal::Io(e) => Unreadable {
            is_error: true,
            ..unreadable(
                Status::Error,
                reasons::IO_ERROR,
                format!("Error: cannot read '{shown}': {e}."),
            )
        },
    })
}

/// `read_file` of the start of a file already read.
fn read_hint(service: &Service, file: &CodebaseFile, text: &str) -> Hint {
    let lines = text.lines().count().max(1);
    let to = lines.min(service.config.read_max_lines);
    Hint::read_file(&display(&file.real), 1, to as u32)
}
