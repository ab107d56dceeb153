//! Line windows of files too large to load: counting lines and copying one window out with
//! a byte cap, streaming through a fixed buffer so memory stays bounded whatever the size.

use std::io::{BufRead, BufReader, Read};

/// Buffer of one streaming pass.
const BLOCK: usize = 64 * 1024;

/// The lines of a file as `read_file` counts them: split on `\n`, a final line without a
/// newline counted, a trailing empty line not.
pub(crate) fn count_lines(reader: impl Read) -> std::io::Result<usize> {
    let mut reader = BufReader::with_capacity(BLOCK, reader);
    let mut newlines = 0usize;
    let mut last = None;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        newlines += memchr::memchr_iter(b'\n', buf).count();
        last = buf.last().copied();
        let n = buf.len();
        reader.consume(n);
    }
    Ok(match last {
        None => 0,
        Some(b'\n') => newlines,
        Some(_) => newlines + 1,
    })
}

/// A window copied out of a file.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Window {
    /// The lines `from..=to` joined with `\n` (`\r\n` endings become `\n`).
    pub text: String,
    /// The last line included (whole or, with `line_cut`, in part).
    pub to: usize,
    /// The window stopped before the requested end because of the byte cap.
    pub capped: bool,
    /// Line `to` was longer than the cap and only its start is included.
    pub line_cut: bool,
}

/// Copies lines `from..=to` (1-based) out of `reader`, stopping before `max_bytes` would be
/// exceeded. A first line longer than the cap is cut at the cap (on a character boundary).
pub(crate) fn window(
    reader: impl Read,
    from: usize,
    to: usize,
    max_bytes: usize,
) -> std::io::Result<Window> {
    let mut reader = BufReader::with_capacity(BLOCK, reader);
    let mut line = 1usize;
    let mut out: Vec<u8> = Vec::new();
    let mut current: Vec<u8> = Vec::new();
    let mut last_included = from.saturating_sub(1);
    let mut capped = false;
    let mut line_cut = false;
    // Lines already in `out` (an empty first line leaves `out` empty but needs a separator).
    let mut kept = 0usize;
    'read: loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let n = buf.len();
        let mut pos = 0;
        while pos < n {
            let end = memchr::memchr(b'\n', &buf[pos..]).map(|i| pos + i);
            let piece = &buf[pos..end.unwrap_or(n)];
            if (from..=to).contains(&line) {
                // Room left for this line: the cap minus what is kept and its separator.
                let sep = usize::from(kept > 0);
                let room = max_bytes.saturating_sub(out.len() + sep + current.len());
                if piece.len() > room {
                    if kept == 0 {
                        current.extend_from_slice(&piece[..room]);
                        line_cut = true;
                        last_included = line;
                    }
                    capped = true;
                    break 'read;
                }
                current.extend_from_slice(piece);
            }
            match end {
                Some(e) => {
                    if (from..=to).contains(&line) {
                        if current.last() == Some(&b'\r') {
                            current.pop();
                        }
                        if kept > 0 {
                            out.push(b'\n');
                        }
                        out.append(&mut current);
                        kept += 1;
                        last_included = line;
                    }
                    line += 1;
                    pos = e + 1;
                    if line > to {
                        break 'read;
                    }
                }
                None => pos = n,
            }
        }
        reader.consume(n);
    }
    // A last line without a newline ends at the end of the file.
    if !capped && !current.is_empty() && (from..=to).contains(&line) {
        if kept > 0 {
            out.push(b'\n');
        }
        out.append(&mut current);
        last_included = line;
    } else if line_cut {
        out.append(&mut current);
    }
    let text = match String::from_utf8(out) {
        Ok(t) => t,
        Err(e) => {
            // A cut can split a character: drop the broken tail, keep the rest readable.
            let valid = e.utf8_error().valid_up_to();
            let bytes = e.into_bytes();
            if line_cut && bytes.len() - valid < 4 {
                String::from_utf8_lossy(&bytes[..valid]).into_owned()
            } else {
                String::from_utf8_lossy(&bytes).into_owned()
            }
        }
    };
    Ok(Window {
        text,
        to: last_included,
        capped,
        line_cut,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(text: &str, from: usize, to: usize, cap: usize, expect: (&str, usize, bool, bool)) {
        let w = window(text.as_bytes(), from, to, cap).unwrap();
        assert_eq!(
            (w.text.as_str(), w.to, w.capped, w.line_cut),
            expect,
            "{text:?} {from}..={to} cap {cap}"
        );
    }

    #[test]
    fn windows() {
        let t = "one\ntwo\r\nthree\nfour";
        check(t, 1, 1, 100, ("one", 1, false, false));
        check(t, 2, 3, 100, ("two\nthree", 3, false, false));
        check(t, 3, 4, 100, ("three\nfour", 4, false, false));
        check(t, 1, 4, 7, ("one", 1, true, false));
        check(t, 1, 4, 8, ("one\ntwo", 2, true, false));
        check(t, 3, 4, 2, ("th", 3, true, true));
        check("\n\nx\n", 2, 3, 100, ("\nx", 3, false, false));
        check("é\n", 1, 1, 1, ("", 1, true, true));
    }

    #[test]
    fn counts() {
        for (text, n) in [("", 0), ("a", 1), ("a\n", 1), ("a\nb", 2), ("a\n\n", 2)] {
            assert_eq!(count_lines(text.as_bytes()).unwrap(), n, "{text:?}");
        }
    }

    #[test]
    fn small_blocks_span_lines() {
        // Lines longer than the reader's buffer are assembled across refills.
        let long = "x".repeat(BLOCK * 2 + 10);
        let text = format!("a\n{long}\nb\n");
        let w = window(text.as_bytes(), 2, 3, usize::MAX).unwrap();
        assert_eq!(w.text, format!("{long}\nb"));
        assert_eq!(count_lines(text.as_bytes()).unwrap(), 3);
    }
}
