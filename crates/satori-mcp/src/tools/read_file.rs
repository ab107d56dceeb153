//! `read_file`: line ranges with a truncation hint, symbol opening, an annotated mode with
//! the file's outline, confinement to tracked codebases, the path and secrets policy of
//! `satori_core::Policy`, binary refusal, and a byte cap (larger files are streamed).

use std::io::Seek;
use std::path::Path;

use rmcp::model::CallToolResult;

use satori_core::{FileKind, ReadPurpose, ReadRefusal};
use satori_protocol::envelope::{
    AnnotatedRead, Hint, IndexingProgress, OpenSymbolFailure, Outline, PlainRead, ReadFileNotReady,
    ReadHints, ReadWindow, Status,
};
use satori_protocol::{ManageAction, READ_FILE, ReadFileParams, ReadMode, env};

use super::gate::{Verb, inside_roots};
use super::source::refusal;
use super::{lines, text};
use super::{reply, require_absolute};
use crate::service::Service;
use crate::session::Session;
use crate::to_proto::{self, display, manage_hint};

/// How the refusal of the client's roots names a read.
const READS: Verb = Verb {
    verb: "read files",
    done: "read",
};

pub(crate) fn handle(session: &Session, p: ReadFileParams) -> CallToolResult {
    let service = session.service();
    let abs = match require_absolute(READ_FILE, &p.path) {
        Ok(a) => a,
        Err(r) => return r,
    };
    let shown = display(&abs);
    // The client's roots confine before anything is opened, judged where links lead; a
    // missing file outside them is refused the same way, so its absence is not told.
    if let Err(stop) = inside_roots(session, &shown, &abs, READS) {
        return text(format!("Error: {}", stop.message), true);
    }
    let limits = service.read_limits();
    let readable = match service
        .engine
        .open_for_read(&abs, ReadPurpose::Lines, limits)
    {
        Ok(r) => r,
        Err(refusal) => return refused_read(service, shown, refusal),
    };
    // Outline handles are relative to the codebase root, which the answer names.
    let codebase_root = readable.owner.as_ref().map(|t| display(&t.root));
    let rel = readable
        .owner
        .as_ref()
        .and_then(|t| t.prefix.clone())
        .unwrap_or_else(|| shown.clone());
    let max_bytes = service.config.read_max_bytes;
    // A file within the byte cap is read whole (its outline needs all of it); a larger one
    // is streamed from the open handle, and has no outline.
    let whole = readable.text.as_deref();
    let lines = whole.map(split_lines);

    // The file's outline, computed on the spot from its current text, and only when the answer
    // uses it: a plain window of lines needs no parse, however large the file.
    let needs_outline = p.mode == ReadMode::Annotated
        || p.open_symbol
            .as_ref()
            .is_some_and(|o| o.start_line.is_none());
    let (language, symbols) = match whole.filter(|_| needs_outline) {
        Some(content) => {
            let (language, symbols) = service.engine.outline_of(&rel, content);
            (language, Some(symbols).filter(|s| !s.is_empty()))
        }
        None => (satori_core::Language::Text, None),
    };

    let (mut start, mut end) = (p.start_line, p.end_line);
    if let Some(open) = &p.open_symbol {
        if let Some(s) = open.start_line {
            start = Some(s);
            end = open.end_line.or(Some(s));
        } else {
            // The rule of file_outline's exact mode.
            let matches = super::navigation::matching(
                symbols.as_deref().unwrap_or_default(),
                open.symbol_id.as_deref(),
                open.symbol_label.as_deref(),
            );
            match matches.as_slice() {
                [one] => {
                    start = Some(one.start_line);
                    end = Some(one.end_line);
                }
                [] => {
                    let message = if whole.is_some() {
                        "No symbol in this file matches open_symbol; its id may be stale after an edit. Search again (or read with annotated mode) to get a fresh handle.".to_owned()
                    } else {
                        format!(
                            "The file is larger than {max_bytes} bytes, so it has no outline to resolve open_symbol against; pass open_symbol.start_line or a line range instead."
                        )
                    };
                    let answer = OpenSymbolFailure {
                        status: Status::NotFound,
                        path: shown,
                        codebase_root,
                        file: rel,
                        message,
                        matches: Vec::new(),
                        warnings: Vec::new(),
                        hints: ReadHints::default(),
                    };
                    return reply(&answer, true);
                }
                many => {
                    let matches = many
                        .iter()
                        .map(|s| to_proto::outline_symbol(&rel, language, s))
                        .collect();
                    let answer = OpenSymbolFailure {
                        status: Status::Ambiguous,
                        path: shown,
                        codebase_root,
                        file: rel,
                        message: "Several symbols match open_symbol; pass the symbolId of the one you want.".to_owned(),
                        matches,
                        warnings: Vec::new(),
                        hints: ReadHints::default(),
                    };
                    return reply(&answer, true);
                }
            }
        }
    }

    let max = service.config.read_max_lines;
    let (total, from, to, truncated, mut body, cut) = match &lines {
        Some(lines) => {
            let total = lines.len();
            let (from, to, truncated) = window(total, start, end, max);
            let body = lines
                .get(from.saturating_sub(1)..to.min(total))
                .map(|l| l.join("\n"))
                .unwrap_or_default();
            (total, from, to, truncated, body, None)
        }
        None => {
            // Both passes read the file already open and checked, never the path again.
            let file = readable.file();
            let counted = (&*file).rewind().and_then(|()| lines::count_lines(file));
            let total = match counted {
                Ok(n) => n,
                Err(e) => return text(format!("Error: cannot read '{shown}': {e}."), true),
            };
            let (from, to, truncated) = window(total, start, end, max);
            let streamed = (&*file)
                .rewind()
                .and_then(|()| lines::window(file, from, to, max_bytes));
            let w = match streamed {
                Ok(w) => w,
                Err(e) => return text(format!("Error: cannot read '{shown}': {e}."), true),
            };
            if let Err(refusal) = readable.admit(&w.text) {
                return refused_read(service, shown, refusal);
            }
            let cut = (w.capped).then_some(w.line_cut);
            (total, from, w.to.min(to), truncated, w.text, cut)
        }
    };
    match cut {
        Some(true) => {
            body.push_str(&format!(
                "\n\n(Line {to} is longer than READ_FILE_MAX_BYTES ({max_bytes} bytes); only its start is shown. To read on, call read_file with path=\"{shown}\" and start_line={}.)",
                to + 1
            ));
        }
        Some(false) => {
            body.push_str(&format!(
                "\n\n(File truncated at line {to}: READ_FILE_MAX_BYTES ({max_bytes} bytes) reached. To read more, call read_file with path=\"{shown}\" and start_line={}.)",
                to + 1
            ));
        }
        None if truncated => {
            body.push_str(&format!(
                "\n\n(File truncated at line {to}. To read more, call read_file with path=\"{shown}\" and start_line={}.)",
                to + 1
            ));
        }
        None => {}
    }
    let span = ReadWindow {
        start_line: u32::try_from(from).unwrap_or(u32::MAX),
        end_line: u32::try_from(to).unwrap_or(u32::MAX),
        total_lines: u32::try_from(total).unwrap_or(u32::MAX),
    };
    let has_more = to < total;
    match p.mode {
        // The text block is the file itself (what agents read); the structured copy exists
        // because a tool with an outputSchema must answer with conforming structured content.
        ReadMode::Plain => {
            let mut result = text(body.clone(), false);
            let answer = PlainRead {
                path: shown,
                mode: ReadMode::Plain,
                content: body,
                has_more,
                span,
            };
            result.structured_content = serde_json::to_value(&answer).ok();
            result
        }
        ReadMode::Annotated => {
            let (outline_status, outline) = match &symbols {
                Some(symbols) => (
                    Status::Ok,
                    Some(Outline {
                        symbols: symbols
                            .iter()
                            .filter(|s| s.end_line as usize >= from && s.start_line as usize <= to)
                            .map(|s| to_proto::outline_symbol(&rel, language, s))
                            .collect(),
                    }),
                ),
                None => (Status::Unsupported, None),
            };
            let next = has_more
                .then(|| Hint::read_file(&shown, to as u32 + 1, (to + max).min(total) as u32));
            let answer = AnnotatedRead {
                path: shown,
                codebase_root,
                mode: ReadMode::Annotated,
                content: body,
                outline_status,
                outline,
                has_more,
                span,
                warnings: Vec::new(),
                hints: ReadHints { status: None, next },
            };
            reply(&answer, false)
        }
    }
}

/// The answer to a read the engine refused: what is not there or not a regular file, a
/// codebase not ready or not served, a file outside every codebase, a policy rule (secrets
/// rules name the opt-out the user, not the caller, can set), binary content.
fn refused_read(service: &Service, shown: String, why: ReadRefusal) -> CallToolResult {
    let message = match why {
        ReadRefusal::NotFound => format!("Error: File '{shown}' not found."),
        ReadRefusal::NotRegular(FileKind::Directory) => format!("Error: '{shown}' is not a file."),
        ReadRefusal::NotRegular(kind) => format!(
            "Error: '{shown}' is {}, not a regular file; read_file reads regular files only.",
            kind.describe()
        ),
        ReadRefusal::Outside { real } => outside_message(service, &real, &shown),
        ReadRefusal::Indexing {
            root,
            percentage,
            phase,
        } => {
            let root_shown = display(&root);
            let pct = service.indexing_percentage(&root, percentage);
            let answer = ReadFileNotReady::new(
                shown,
                root_shown.clone(),
                format!(
                    "'{root_shown}' is being indexed for the first time ({pct:.0}%); read again once it is ready."
                ),
                ReadHints {
                    status: Some(manage_hint(ManageAction::Status, &root_shown)),
                    next: None,
                },
                IndexingProgress {
                    progress_pct: to_proto::percentage(pct),
                    phase: phase.map(|p| p.id().to_owned()),
                },
            );
            return reply(&answer, false);
        }
        ReadRefusal::Blocked { root, refusal } => format!(
            "Error: read_file refuses '{shown}': it is inside '{}', which Satori does not serve ({refusal}).",
            display(&root)
        ),
        ReadRefusal::Rule(rule) => refusal(READ_FILE, &shown, &rule),
        ReadRefusal::Binary { size } => format!(
            "Error: '{shown}' is a binary file ({size} bytes); read_file returns text only."
        ),
        // Lines are streamed past the cap: never refused for their size.
        ReadRefusal::TooLarge { size } => {
            format!("Error: '{shown}' is too large to read ({size} bytes).")
        }
        ReadRefusal::Io(e) => format!("Error: cannot read '{shown}': {e}."),
    };
    text(message, true)
}

/// Why a file outside every tracked codebase is not read. Indexing is suggested only when
/// the file's directory could be indexed: never for `/etc/shadow` or `~/.bashrc`.
fn outside_message(service: &Service, real: &Path, shown: &str) -> String {
    let base = format!(
        "Error: '{shown}' is outside every indexed codebase, and read_file only reads inside them."
    );
    let dir = real.parent().unwrap_or(real);
    if service.engine.refuse_root(dir).is_some() {
        return base;
    }
    format!(
        "{base} Index its codebase with manage_index create, or start the server with {}=true to read any file.",
        env::READ_ANY_FILE
    )
}

/// Lines split on `\n` or `\r\n`, a trailing empty line dropped.
fn split_lines(content: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = content
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    if lines.last() == Some(&"") {
        lines.pop();
    }
    lines
}

/// The 1-based inclusive window to return and whether it was cut by the line cap.
/// No range: the first `max` lines; only start: `max` lines from it; only end: 1..end;
/// both: as asked. Everything is clamped to the file.
fn window(total: usize, start: Option<u32>, end: Option<u32>, max: usize) -> (usize, usize, bool) {
    if total == 0 {
        return (1, 0, false);
    }
    let from = start.map_or(1, |s| (s as usize).clamp(1, total));
    let wanted_end = match (start, end) {
        (_, Some(e)) => (e as usize).max(from),
        (Some(_), None) | (None, None) => from + max - 1,
    };
    let explicit_end = end.is_some();
    let to = wanted_end.min(total);
    let truncated = !explicit_end && to < total;
    (from, to, truncated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(total: usize, start: Option<u32>, end: Option<u32>, expect: (usize, usize, bool)) {
        assert_eq!(window(total, start, end, 10), expect);
    }

    #[test]
    fn windows() {
        check(5, None, None, (1, 5, false));
        check(25, None, None, (1, 10, true));
        check(25, Some(20), None, (20, 25, false));
        check(25, Some(3), None, (3, 12, true));
        check(25, None, Some(4), (1, 4, false));
        check(25, Some(30), Some(40), (25, 25, false));
        check(25, Some(5), Some(2), (5, 5, false));
        check(0, None, None, (1, 0, false));
    }

    #[test]
    fn crlf_lines() {
        assert_eq!(split_lines("a\r\nb\r\n"), vec!["a", "b"]);
        assert_eq!(split_lines("a\n\nb"), vec!["a", "", "b"]);
    }
}
