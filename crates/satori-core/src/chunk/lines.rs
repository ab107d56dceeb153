//! The line index of one file: where each line starts and ends, how many characters it holds,
//! and whether it is blank. Every chunker works in whole lines, so this is their shared view
//! of the text. Only `\n` ends a line (as in tree-sitter's rows); a `\r` before it is part of
//! the terminator, so CRLF files get the same line numbers and contents as LF files.

/// A file split into lines, with O(1) sizes of line ranges.
pub(crate) struct Lines<'a> {
    text: &'a str,
    /// Byte offset where each line starts.
    starts: Vec<usize>,
    /// Byte offset where each line's text ends (before `\r\n` or `\n`).
    ends: Vec<usize>,
    /// `sizes[i]` = characters (plus one per newline) of lines `0..i`.
    sizes: Vec<usize>,
    blank: Vec<bool>,
}

impl<'a> Lines<'a> {
    pub(crate) fn new(text: &'a str) -> Lines<'a> {
        let mut starts = Vec::new();
        let mut ends = Vec::new();
        let mut sizes = vec![0];
        let mut blank = Vec::new();
        let mut pos = 0;
        while pos < text.len() {
            let rest = &text[pos..];
            let (line_len, next) = match rest.find('\n') {
                Some(i) => (i, pos + i + 1),
                None => (rest.len(), text.len()),
            };
            let mut end = pos + line_len;
            if text[pos..end].ends_with('\r') {
                end -= 1;
            }
            let line = &text[pos..end];
            starts.push(pos);
            ends.push(end);
            let total = sizes.last().copied().unwrap_or(0);
            sizes.push(total + line.chars().count() + 1);
            blank.push(line.trim().is_empty());
            pos = next;
        }
        Lines {
            text,
            starts,
            ends,
            sizes,
            blank,
        }
    }

    /// Number of lines (a trailing newline does not start another line).
    pub(crate) fn len(&self) -> usize {
        self.starts.len()
    }

    /// The text of line `i` (0-based), without its terminator.
    pub(crate) fn line(&self, i: usize) -> &'a str {
        &self.text[self.starts[i]..self.ends[i]]
    }

    pub(crate) fn is_blank(&self, i: usize) -> bool {
        self.blank[i]
    }

    /// Characters in lines `s..=e`, counting one per line for its newline.
    pub(crate) fn size(&self, s: usize, e: usize) -> usize {
        if s > e || e >= self.len() {
            return 0;
        }
        self.sizes[e + 1] - self.sizes[s]
    }

    /// The text of lines `s..=e` joined with `\n`, without a trailing newline.
    pub(crate) fn content(&self, s: usize, e: usize) -> String {
        let raw = &self.text[self.starts[s]..self.ends[e]];
        if !raw.contains('\r') {
            return raw.to_string();
        }
        // CRLF (or stray CR) text: rebuild from the terminator-free lines.
        let mut out = String::with_capacity(raw.len());
        for i in s..=e {
            if i > s {
                out.push('\n');
            }
            out.push_str(self.line(i));
        }
        out
    }

    /// Narrows `s..=e` to its first and last non-blank lines; `None` if all are blank.
    pub(crate) fn trim(&self, s: usize, e: usize) -> Option<(usize, usize)> {
        let e = e.min(self.len().checked_sub(1)?);
        let first = (s..=e).find(|&i| !self.blank[i])?;
        let last = (first..=e).rev().find(|&i| !self.blank[i])?;
        Some((first, last))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crlf_and_trailing_newline() {
        let l = Lines::new("a\r\n\r\nbé\r\n");
        assert_eq!(l.len(), 3);
        assert_eq!(l.line(0), "a");
        assert!(l.is_blank(1));
        assert_eq!(l.line(2), "bé");
        assert_eq!(l.content(0, 2), "a\n\nbé");
        assert_eq!(l.size(2, 2), 3);
        assert_eq!(l.trim(1, 2), Some((2, 2)));
        assert_eq!(l.trim(1, 1), None);
    }

    #[test]
    fn empty_and_unterminated() {
        assert_eq!(Lines::new("").len(), 0);
        assert_eq!(Lines::new("").trim(0, 0), None);
        let l = Lines::new("x\ny");
        assert_eq!(l.len(), 2);
        assert_eq!(l.content(0, 1), "x\ny");
    }
}
