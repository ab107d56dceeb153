//! Markdown outline: ATX headings (`#` to `######`, outside fenced code blocks) nest into
//! sections; a section is its heading, its text and its subsections. The shared splitter then
//! keeps whole sections together where they fit and merges small neighbours.

use super::RawSymbol;
use super::SymbolKind;
use super::label::truncate_label;
use super::lines::Lines;
use super::split::{Outline, Unit};
use crate::lang::collapse;

struct Section {
    level: usize,
    line: usize,
    /// Last line of the section including its subsections.
    end: usize,
    parent: Option<usize>,
    children: Vec<usize>,
    name: String,
}

/// The sections of a markdown file, in order.
pub(crate) struct MdOutline {
    sections: Vec<Section>,
    top: Vec<usize>,
}

impl MdOutline {
    pub(crate) fn new(lines: &Lines) -> MdOutline {
        let mut sections: Vec<Section> = Vec::new();
        let mut top = Vec::new();
        // Open sections, innermost last.
        let mut open: Vec<usize> = Vec::new();
        let mut fence: Option<(char, usize)> = None;
        for i in 0..lines.len() {
            let line = lines.line(i);
            let indent = line.len() - line.trim_start_matches(' ').len();
            let body = line.trim_start_matches(' ');
            if indent <= 3
                && let Some(marker) = fence_marker(body)
            {
                fence = match fence {
                    None => Some(marker),
                    // A fence closes with the same character, at least as long, nothing after.
                    Some((c, n))
                        if marker.0 == c
                            && marker.1 >= n
                            && body.trim_end().chars().all(|x| x == c) =>
                    {
                        None
                    }
                    other => other,
                };
                continue;
            }
            if fence.is_some() || indent > 3 {
                continue;
            }
            let Some((level, name)) = heading(body) else {
                continue;
            };
            while let Some(&j) = open.last() {
                if sections[j].level < level {
                    break;
                }
                sections[j].end = i.saturating_sub(1).max(sections[j].line);
                open.pop();
            }
            let idx = sections.len();
            let parent = open.last().copied();
            match parent {
                Some(p) => sections[p].children.push(idx),
                None => top.push(idx),
            }
            sections.push(Section {
                level,
                line: i,
                end: i,
                parent,
                children: Vec::new(),
                name,
            });
            open.push(idx);
        }
        let last = lines.len().saturating_sub(1);
        for j in open {
            sections[j].end = last;
        }
        // Trailing blank lines belong to no section's span.
        for s in &mut sections {
            if let Some((_, e)) = lines.trim(s.line, s.end) {
                s.end = e;
            }
        }
        MdOutline { sections, top }
    }

    /// One `Section` symbol per heading.
    pub(crate) fn symbols(&self, lines: &Lines) -> Vec<RawSymbol> {
        self.sections
            .iter()
            .map(|s| {
                let mut scope = Vec::new();
                let mut p = s.parent;
                while let Some(i) = p {
                    scope.push(self.sections[i].name.clone());
                    p = self.sections[i].parent;
                }
                scope.reverse();
                RawSymbol {
                    name: s.name.clone(),
                    label: truncate_label(collapse(lines.line(s.line))),
                    kind: SymbolKind::Section,
                    start: s.line,
                    end: s.end,
                    scope,
                    parent: s.parent,
                }
            })
            .collect()
    }
}

/// `(char, length)` of a code fence opener/closer (```` ``` ```` or `~~~`).
fn fence_marker(s: &str) -> Option<(char, usize)> {
    let c = s.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let n = s.chars().take_while(|x| *x == c).count();
    (n >= 3).then_some((c, n))
}

/// `(level, text)` of an ATX heading line (leading indentation already removed).
fn heading(s: &str) -> Option<(usize, String)> {
    let level = s.chars().take_while(|c| *c == '#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &s[level..];
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    // An optional closing sequence of `#`s is not part of the text.
    let mut text = rest.trim();
    let stripped = text.trim_end_matches('#');
    if stripped.is_empty() || stripped.ends_with([' ', '\t']) {
        text = stripped.trim_end();
    }
    Some((level, collapse(text)))
}

impl Outline for MdOutline {
    /// `None` is the whole document.
    type Src = Option<usize>;

    fn units(&self, src: Option<usize>) -> Vec<Unit<Option<usize>>> {
        let ids = match src {
            None => &self.top,
            Some(i) => &self.sections[i].children,
        };
        ids.iter()
            .map(|&i| Unit {
                start: self.sections[i].line,
                end: self.sections[i].end,
                src: Some(i),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings() {
        assert_eq!(heading("## Usage"), Some((2, "Usage".into())));
        assert_eq!(heading("# Title #"), Some((1, "Title".into())));
        assert_eq!(heading("# C#"), Some((1, "C#".into())));
        assert_eq!(heading("#hashtag"), None);
        assert_eq!(heading("####### seven"), None);
        assert_eq!(heading("#"), Some((1, String::new())));
    }

    #[test]
    fn fenced_hashes_are_not_headings() {
        let text = "# A\n```sh\n# not a heading\n```\n## B\ntext\n";
        let lines = Lines::new(text);
        let o = MdOutline::new(&lines);
        let names: Vec<_> = o
            .sections
            .iter()
            .map(|s| (s.name.as_str(), s.line, s.end))
            .collect();
        assert_eq!(names, vec![("A", 0, 5), ("B", 4, 5)]);
    }
}
