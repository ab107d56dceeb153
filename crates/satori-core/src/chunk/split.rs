//! The size policy shared by the syntax and markdown chunkers: cut a line range into pieces
//! along an outline (syntax nodes, or heading sections), keeping whole units together where they
//! fit, splitting oversized ones into their own units, merging small neighbours, and cutting by
//! lines only as a last resort.
//!
//! The outline is abstract (`Outline`) so the same policy serves tree-sitter trees and markdown
//! sections. Pieces always partition the range they were asked to cover: coverage of every line
//! holds by construction, and blank edges are trimmed only when chunks are emitted.

use super::ChunkOptions;
use super::lines::Lines;

/// Deeper nesting than this is cut by lines: it protects the stack against pathological input
/// (thousands of nested brackets) and no real definition nests that deep.
const MAX_DEPTH: usize = 48;

/// One part of an outline node, as a 0-based inclusive line range.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Unit<S> {
    pub start: usize,
    pub end: usize,
    /// The structure inside the unit, to split it further if it is too large.
    pub src: S,
}

/// A tree of line ranges the splitter can descend into.
pub(crate) trait Outline {
    type Src: Copy;
    /// The parts of `src` in file order. They may overlap or leave gaps; the splitter merges
    /// overlaps and gives gap lines to the neighbouring unit.
    fn units(&self, src: Self::Src) -> Vec<Unit<Self::Src>>;

    /// Whether two neighbouring units must not share a piece, however small they are
    /// (documentation and the code beside it).
    fn apart(&self, _a: Self::Src, _b: Self::Src) -> bool {
        false
    }
}

/// Cuts lines `0..len` into pieces (0-based inclusive line ranges, in order, covering every
/// line). The root is always split into its units, merged up to `target_chars`, so that a small
/// file still gets one chunk per group of definitions rather than one chunk in all.
pub(crate) fn split_file<O: Outline>(
    lines: &Lines,
    opts: &ChunkOptions,
    outline: &O,
    root: O::Src,
) -> Vec<(usize, usize)> {
    let mut s = Splitter {
        lines,
        max: opts.max_chars.max(1),
        target: opts.target_chars.clamp(1, opts.max_chars.max(1)),
        outline,
        out: Vec::new(),
    };
    if lines.len() > 0 {
        s.split(Some(root), 0, lines.len() - 1, 0, true);
    }
    absorb_crumbs(lines, s.out, s.max, s.target / 4)
}

/// Merges pieces smaller than `min` characters into a neighbour when the result still fits
/// `max`: a lone `export default App;` or the closing lines of a split function are useless
/// as search results on their own.
fn absorb_crumbs(
    lines: &Lines,
    pieces: Vec<(usize, usize)>,
    max: usize,
    min: usize,
) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(pieces.len());
    for (s, e) in pieces {
        if let Some(last) = out.last_mut() {
            let small = lines.size(s, e) < min || lines.size(last.0, last.1) < min;
            if small && lines.size(last.0, e) <= max {
                last.1 = e;
                continue;
            }
        }
        out.push((s, e));
    }
    out
}

struct Splitter<'a, 'l, O: Outline> {
    lines: &'a Lines<'l>,
    max: usize,
    target: usize,
    outline: &'a O,
    out: Vec<(usize, usize)>,
}

impl<O: Outline> Splitter<'_, '_, O> {
    /// Covers lines `s..=e`, whose structure is `src`. `force` splits even when it fits (root).
    fn split(&mut self, src: Option<O::Src>, s: usize, e: usize, depth: usize, force: bool) {
        if s > e {
            return;
        }
        let size = self.lines.size(s, e);
        if !force && size <= self.max {
            self.out.push((s, e));
            return;
        }
        let Some(src) = src.filter(|_| depth < MAX_DEPTH) else {
            self.split_lines(s, e);
            return;
        };
        let mut units = normalise(self.outline.units(src), s, e);
        match units.len() {
            0 => {
                if size <= self.max {
                    self.out.push((s, e));
                } else {
                    self.split_lines(s, e);
                }
                return;
            }
            // Nothing to split at this level (a class whose only big child is its body):
            // look one level deeper with the same range.
            1 => return self.split(Some(units[0].src), s, e, depth + 1, false),
            _ => {}
        }
        // Gap lines (blank lines, closing braces) go to the unit before them, header lines to
        // the first unit, footer lines to the last, so the units partition `s..=e`.
        units[0].start = s;
        for i in 1..units.len() {
            units[i - 1].end = units[i].start - 1;
        }
        if let Some(last) = units.last_mut() {
            last.end = e;
        }

        // The group being merged: its lines, its size, and its last unit.
        let mut group: Option<(usize, usize, usize, O::Src)> = None;
        for u in units {
            let usize_ = self.lines.size(u.start, u.end);
            if usize_ > self.max {
                if let Some((gs, ge, _, _)) = group.take() {
                    self.out.push((gs, ge));
                }
                self.split(Some(u.src), u.start, u.end, depth + 1, false);
                continue;
            }
            group = match group {
                Some((gs, _, gsize, last))
                    if gsize + usize_ <= self.target && !self.outline.apart(last, u.src) =>
                {
                    Some((gs, u.end, gsize + usize_, u.src))
                }
                Some((gs, ge, _, _)) => {
                    self.out.push((gs, ge));
                    Some((u.start, u.end, usize_, u.src))
                }
                None => Some((u.start, u.end, usize_, u.src)),
            };
        }
        if let Some((gs, ge, _, _)) = group {
            self.out.push((gs, ge));
        }
    }

    /// The last resort: pieces of about equal size, each at most `max` characters (unless a
    /// single line is longer), cut after a blank line where one is near the cut.
    fn split_lines(&mut self, s: usize, e: usize) {
        let mut start = s;
        while start <= e {
            let remaining = self.lines.size(start, e);
            if remaining <= self.max {
                self.out.push((start, e));
                return;
            }
            let pieces = remaining.div_ceil(self.max);
            let budget = remaining.div_ceil(pieces);
            let mut end = start;
            let mut size = self.lines.size(start, start);
            while end < e && size + self.lines.size(end + 1, end + 1) <= budget {
                end += 1;
                size += self.lines.size(end, end);
            }
            if end < e {
                let floor = start + (end - start) / 2;
                if let Some(b) = (floor.max(start + 1)..=end)
                    .rev()
                    .find(|&i| self.lines.is_blank(i))
                {
                    end = b;
                }
            }
            self.out.push((start, end));
            start = end + 1;
        }
    }
}

/// Clamps units to `s..=e`, drops empty ones and merges units that share a line (a trailing
/// comment, `} else {`, two statements on one line): a line belongs to one piece only.
fn normalise<S: Copy>(units: Vec<Unit<S>>, s: usize, e: usize) -> Vec<Unit<S>> {
    // Each unit with the line count of its widest part, the structure to descend into.
    let mut out: Vec<(Unit<S>, usize)> = Vec::with_capacity(units.len());
    for mut u in units {
        u.start = u.start.max(s);
        u.end = u.end.min(e);
        if u.start > u.end {
            continue;
        }
        match out.last_mut() {
            Some((prev, widest)) if u.start <= prev.end => {
                if u.end - u.start > *widest {
                    *widest = u.end - u.start;
                    prev.src = u.src;
                }
                prev.end = prev.end.max(u.end);
            }
            _ => out.push((u, u.end - u.start)),
        }
    }
    out.into_iter().map(|(u, _)| u).collect()
}
