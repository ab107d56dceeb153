//! The one-line label of a definition: its declaration up to its body, annotations and
//! attributes dropped, whitespace collapsed, cut to a fixed length. Shared by the syntax
//! outline and the line readers.

use tree_sitter::Node;

use crate::lang::collapse;

/// Labels longer than this are cut (with `...`).
const MAX_LABEL_CHARS: usize = 120;

/// Cuts a label to `MAX_LABEL_CHARS` characters, ending in `...` when cut.
pub(crate) fn truncate_label(s: String) -> String {
    if s.chars().count() <= MAX_LABEL_CHARS {
        return s;
    }
    let mut out: String = s.chars().take(MAX_LABEL_CHARS - 3).collect();
    out.push_str("...");
    out
}

/// Skips a balanced `open ... close` group at the start of `s`; `None` if unbalanced.
fn skip_group(s: &str, open: char, close: char) -> Option<&str> {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth = depth.checked_sub(1)?;
            if depth == 0 {
                return Some(&s[i + c.len_utf8()..]);
            }
        }
    }
    None
}

/// Drops annotations and attributes in front of a signature (`@Override`, `#[inline]`, and
/// `[Obsolete]` where `brackets` says a bracket is an attribute, as in C#): they are not what
/// a reader calls the definition.
fn strip_annotations(mut s: &str, brackets: bool) -> &str {
    loop {
        s = s.trim_start();
        if let Some(rest) = s.strip_prefix('@') {
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '.' | ':')))
                .unwrap_or(rest.len());
            let after = &rest[end..];
            s = if after.starts_with('(') {
                skip_group(after, '(', ')').unwrap_or(after)
            } else {
                after
            };
        } else if s.starts_with("#[") || (brackets && s.starts_with('[')) {
            let from = s.strip_prefix('#').unwrap_or(s);
            match skip_group(from, '[', ']') {
                Some(rest) => s = rest,
                None => return s,
            }
        } else {
            return s;
        }
    }
}

/// The one-line label of a definition: its text from `decl` up to the body (or its first
/// line when it has no body), annotations dropped (and `[attributes]` when
/// `bracket_attributes`), whitespace collapsed, trailing `{`, `:` or `=` removed, at most 120
/// characters.
pub(crate) fn label(bracket_attributes: bool, src: &str, decl: Node, body: Option<Node>) -> String {
    let start = decl.start_byte();
    let end = match body {
        Some(b) if b.start_byte() > start => b.start_byte(),
        _ => decl.end_byte(),
    };
    // Long signatures are cut at 120 characters anyway: do not collapse a whole file.
    let mut end = end.min(start + 2000).min(src.len());
    while end > start && !src.is_char_boundary(end) {
        end -= 1;
    }
    let raw = src.get(start..end).unwrap_or("");
    let mut s = strip_annotations(raw, bracket_attributes);
    if body.is_none() {
        s = s.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    }
    let mut label = collapse(s);
    loop {
        let before = label.len();
        for suffix in ["{", ":", "=>", "=", ";", "; end"] {
            if let Some(rest) = label.strip_suffix(suffix) {
                label = rest.trim_end().to_string();
            }
        }
        if label.len() == before {
            break;
        }
    }
    truncate_label(label)
}
