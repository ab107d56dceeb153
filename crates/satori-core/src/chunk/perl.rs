//! Perl outline, read from the lines: no Perl grammar builds against the tree-sitter this
//! crate uses, and Perl's syntax is regular enough at the level an outline needs. Packages
//! (`package Foo::Bar;` up to the next package, or a `package Foo { ... }` block), named subs
//! (to the brace that closes them) and POD sections (`=head1 ...` up to the next heading of its
//! level or above, or `=cut`) become definitions, so a Perl file gets chunks along its subs, an outline, and
//! definition search; its documentation becomes chunks of its own instead of windows that mix
//! prose with code.
//!
//! Braces are counted outside comments, quoted strings, heredocs, POD and the data after
//! `__END__`. Perl can still hide a brace from that count (a regex like `/[{]/`), so a sub
//! also ends, at the latest, where the next one at its indentation (or less) begins.

use super::RawSymbol;
use super::SymbolKind;
use super::label::truncate_label;
use super::lines::Lines;
use super::split::{Outline, Unit};
use crate::lang::collapse;

/// What a line is, for the brace count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineKind {
    Code,
    /// A line of POD; `head` is set on `=head1`..`=head4` and on a block's first line.
    Pod {
        head: bool,
    },
    /// Inside a heredoc, or data after `__END__`/`__DATA__` (the marker line included).
    Data,
}

/// The brace structure of a file, line by line.
struct Scan {
    kinds: Vec<LineKind>,
    /// Brace depth after each line.
    depth: Vec<i32>,
    /// Whether a line opens a brace.
    opens: Vec<bool>,
    /// Where code ends: the `__END__`/`__DATA__` line, or the number of lines.
    code_end: usize,
}

impl Scan {
    fn new(lines: &Lines) -> Scan {
        let n = lines.len();
        let mut scan = Scan {
            kinds: Vec::with_capacity(n),
            depth: Vec::with_capacity(n),
            opens: Vec::with_capacity(n),
            code_end: n,
        };
        let mut depth = 0i32;
        let mut in_pod = false;
        let mut data = false;
        let mut heredoc: Option<(String, bool)> = None;
        for i in 0..n {
            let line = lines.line(i);
            let mut opens = false;
            let kind = if let Some((tag, indented)) = &heredoc {
                let body = if *indented { line.trim() } else { line };
                if body == tag {
                    heredoc = None;
                }
                LineKind::Data
            } else if in_pod {
                if line.starts_with("=cut") {
                    in_pod = false;
                }
                LineKind::Pod {
                    head: is_pod_heading(line),
                }
            } else if starts_pod(line) {
                in_pod = !line.starts_with("=cut");
                LineKind::Pod {
                    head: in_pod && block_starts_section(lines, i),
                }
            } else if data {
                LineKind::Data
            } else if matches!(line.trim_end(), "__END__" | "__DATA__") {
                data = true;
                scan.code_end = i;
                LineKind::Data
            } else {
                let counted = count_braces(line);
                depth += counted.net;
                opens = counted.opens;
                heredoc = counted.heredoc;
                LineKind::Code
            };
            scan.kinds.push(kind);
            scan.depth.push(depth);
            scan.opens.push(opens);
        }
        scan
    }

    fn depth_before(&self, i: usize) -> i32 {
        if i == 0 { 0 } else { self.depth[i - 1] }
    }
}

/// A POD block starts with `=` and a letter in the first column.
fn starts_pod(line: &str) -> bool {
    let mut chars = line.chars();
    chars.next() == Some('=') && chars.next().is_some_and(|c| c.is_ascii_alphabetic())
}

/// Whether a POD block's first line starts a section of its own: a heading does, and so
/// does any other command (`=pod`, `=begin`) unless a heading follows it before any text.
fn block_starts_section(lines: &Lines, i: usize) -> bool {
    if is_pod_heading(lines.line(i)) {
        return true;
    }
    let next = (i + 1..lines.len()).find(|&j| !lines.is_blank(j));
    !next.is_some_and(|j| is_pod_heading(lines.line(j)))
}

/// The level of a section's first line: N for `=headN`, 1 for any other command.
fn pod_level(line: &str) -> u32 {
    line.strip_prefix("=head")
        .and_then(|r| r.chars().next())
        .and_then(|c| c.to_digit(10))
        .unwrap_or(1)
}

fn is_pod_heading(line: &str) -> bool {
    ["=head1", "=head2", "=head3", "=head4"]
        .iter()
        .any(|h| line.starts_with(h))
}

/// What one line of code does to the brace depth.
struct Counted {
    net: i32,
    opens: bool,
    /// A heredoc that starts after this line: its terminator, and whether it may be indented.
    heredoc: Option<(String, bool)>,
}

fn count_braces(line: &str) -> Counted {
    let bytes = line.as_bytes();
    let mut out = Counted {
        net: 0,
        opens: false,
        heredoc: None,
    };
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            // `$#array` and `$#{...}` are the last index, not a comment.
            b'#' if i == 0 || bytes[i - 1] != b'$' => break,
            q @ (b'\'' | b'"' | b'`') => {
                // `$h{'key'}`, `"...{..."`: skip to the closing quote on this line; a string
                // that runs past the line leaves the rest of the line uncounted.
                let mut j = i + 1;
                while j < bytes.len() && bytes[j] != q {
                    if bytes[j] == b'\\' {
                        j += 1;
                    }
                    j += 1;
                }
                i = j;
            }
            b'<' if bytes.get(i + 1) == Some(&b'<') => {
                if let Some((tag, indented)) = heredoc_tag(&line[i + 2..]) {
                    out.heredoc = Some((tag, indented));
                }
                i += 1;
            }
            b'{' => {
                out.net += 1;
                out.opens = true;
            }
            b'}' => out.net -= 1,
            _ => {}
        }
        i += 1;
    }
    out
}

/// The terminator of a heredoc whose `<<` precedes `rest`: `<<EOT`, `<<"EOT"`, `<<'EOT'`,
/// and `<<~EOT` (whose terminator may be indented). `1 << 2` is not one.
fn heredoc_tag(rest: &str) -> Option<(String, bool)> {
    let (rest, indented) = match rest.strip_prefix('~') {
        Some(r) => (r, true),
        None => (rest, false),
    };
    let (rest, quote) = match rest.chars().next() {
        Some(q @ ('"' | '\'')) => (&rest[1..], Some(q)),
        _ => (rest, None),
    };
    let len = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    let tag = &rest[..len];
    if tag.is_empty() || tag.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    if let Some(q) = quote
        && !rest[len..].starts_with(q)
    {
        return None;
    }
    Some((tag.to_string(), indented))
}

/// The name after `keyword` at the start of `text` (`sub new`, `package Foo::Bar`), and
/// the text after the name.
fn declared_name<'a>(text: &'a str, keyword: &str) -> Option<(&'a str, &'a str)> {
    let rest = text.strip_prefix(keyword)?;
    if !rest.starts_with([' ', '\t']) {
        return None;
    }
    let rest = rest.trim_start();
    let len = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(rest.len());
    (len > 0).then(|| rest.split_at(len))
}

/// `(name, block form)` of a `package` statement.
fn package_decl(line: &str) -> Option<(&str, bool)> {
    let (name, after) = declared_name(line.trim_start(), "package")?;
    // An optional version: `package Foo 1.02;`.
    let after = after.trim_start();
    let after =
        after.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '_' || c == 'v');
    match after.trim_start().chars().next() {
        Some(';') => Some((name, false)),
        Some('{') => Some((name, true)),
        _ => None,
    }
}

/// The name of a named sub defined on this line (`sub name {`, `sub name;` is a forward
/// declaration and defines nothing).
fn sub_decl(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    for prefix in ["my ", "our ", "state "] {
        if let Some(r) = rest.strip_prefix(prefix) {
            rest = r.trim_start();
        }
    }
    let (name, after) = declared_name(rest, "sub")?;
    (!after.trim_start().starts_with(';')).then_some(name)
}

/// What a line of code declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decl<'a> {
    /// A package: its name, and whether it is a block.
    Package(&'a str, bool),
    Sub(&'a str),
    None,
}

impl<'a> Decl<'a> {
    fn of(line: &'a str) -> Decl<'a> {
        if let Some((name, block)) = package_decl(line) {
            Decl::Package(name, block)
        } else if let Some(name) = sub_decl(line) {
            Decl::Sub(name)
        } else {
            Decl::None
        }
    }
}

#[derive(Debug)]
struct Item {
    kind: SymbolKind,
    /// The full name (`Plack::Request`, `new`, the heading's text).
    name: String,
    /// The line that declares it, and the first line of its span (comments above a sub).
    line: usize,
    start: usize,
    end: usize,
    parent: Option<usize>,
    children: Vec<usize>,
}

/// The definitions of a Perl file, nested by their spans.
pub(crate) struct PerlOutline {
    items: Vec<Item>,
    top: Vec<usize>,
}

impl PerlOutline {
    pub(crate) fn new(lines: &Lines) -> PerlOutline {
        let n = lines.len();
        let scan = Scan::new(lines);
        let mut items: Vec<Item> = Vec::new();
        let code_end = scan.code_end;
        // What each code line declares, read once: the scans for the ends of definitions
        // look at the same lines again.
        let decls: Vec<Decl> = (0..n)
            .map(|i| match scan.kinds[i] {
                LineKind::Code => Decl::of(lines.line(i)),
                _ => Decl::None,
            })
            .collect();
        let indent = |i: usize| {
            let line = lines.line(i);
            line.len() - line.trim_start().len()
        };
        // Where a definition at indentation `at` ends at the latest: a sub or package that
        // starts at that indentation or less, or POD in the first column.
        let boundary = |j: usize, at: usize| match scan.kinds[j] {
            LineKind::Code => decls[j] != Decl::None && indent(j) <= at,
            LineKind::Pod { .. } => {
                starts_pod(lines.line(j))
                    && (j == 0 || !matches!(scan.kinds[j - 1], LineKind::Pod { .. }))
            }
            LineKind::Data => false,
        };
        // The last line of a braced definition declared on line `i`: where the brace count
        // closes it, or before the next definition at its indentation or less, whichever
        // comes first (so a brace the count missed cannot carry it over its siblings, and
        // no definition scans past them).
        let close = |i: usize| -> usize {
            let d0 = scan.depth_before(i);
            let at = indent(i);
            let mut opened = false;
            for j in i..code_end {
                if j > i && boundary(j, at) {
                    return last_code_line(lines, &scan, i, j - 1);
                }
                if scan.kinds[j] != LineKind::Code {
                    continue;
                }
                opened |= scan.opens[j];
                if opened && scan.depth[j] <= d0 {
                    return j;
                }
            }
            last_code_line(lines, &scan, i, code_end.saturating_sub(1))
        };

        let mut statement_package: Option<usize> = None;
        for (i, decl) in decls.iter().enumerate() {
            let line = lines.line(i);
            match scan.kinds[i] {
                LineKind::Code => match *decl {
                    Decl::Package(name, block) => {
                        // Packages do not nest: a statement package runs to the next package
                        // declared at the top level (or to the end of the code).
                        if scan.depth_before(i) == 0
                            && let Some(p) = statement_package.take()
                        {
                            items[p].end = last_code_line(lines, &scan, items[p].line, i - 1);
                        }
                        if block {
                            items.push(item(SymbolKind::Namespace, name, i, i, close(i)));
                        } else {
                            statement_package = Some(items.len());
                            items.push(item(SymbolKind::Namespace, name, i, i, i));
                        }
                    }
                    Decl::Sub(name) => {
                        let start = comments_above(lines, &scan, i);
                        items.push(item(SymbolKind::Function, name, i, start, close(i)));
                    }
                    Decl::None => {}
                },
                LineKind::Pod { head: true } => {
                    // A section holds the deeper headings that follow it (`=head2` under
                    // `=head1`), as Markdown sections do.
                    let level = pod_level(line);
                    let end = (i + 1..n)
                        .find(|&j| match scan.kinds[j] {
                            LineKind::Pod { head } => head && pod_level(lines.line(j)) <= level,
                            _ => true,
                        })
                        .map_or(n - 1, |j| j - 1);
                    let end = lines.trim(i, end).map_or(i, |(_, e)| e);
                    items.push(item(SymbolKind::Section, &pod_title(line), i, i, end));
                }
                _ => {}
            }
        }
        if let Some(p) = statement_package {
            let last = code_end.max(items[p].line + 1) - 1;
            items[p].end = last_code_line(lines, &scan, items[p].line, last);
        }

        // Nest by span: sorted by start (wider first), each item's parent is the innermost
        // open item that contains it.
        let mut order: Vec<usize> = (0..items.len()).collect();
        order.sort_by(|&a, &b| {
            (items[a].start, std::cmp::Reverse(items[a].end))
                .cmp(&(items[b].start, std::cmp::Reverse(items[b].end)))
        });
        let mut open: Vec<usize> = Vec::new();
        let mut top = Vec::new();
        for &k in &order {
            while let Some(&p) = open.last() {
                if items[p].end >= items[k].end && items[p].start <= items[k].start {
                    break;
                }
                open.pop();
            }
            match open.last() {
                Some(&p) => {
                    items[k].parent = Some(p);
                    items[p].children.push(k);
                }
                None => top.push(k),
            }
            open.push(k);
        }
        PerlOutline { items, top }
    }

    pub(crate) fn symbols(&self, lines: &Lines) -> Vec<RawSymbol> {
        self.items
            .iter()
            .map(|it| {
                // Scopes are the enclosing subs and the innermost package, by full name; a
                // package's own name is split so `Plack::Request` is `Request` in scope `Plack`, as a
                // qualified query writes it.
                let mut scope = Vec::new();
                let mut p = it.parent;
                while let Some(i) = p {
                    // A package's name is already absolute: nothing outside it is scope.
                    if it.kind == SymbolKind::Namespace {
                        break;
                    }
                    scope.push(self.items[i].name.clone());
                    if self.items[i].kind == SymbolKind::Namespace {
                        break;
                    }
                    p = self.items[i].parent;
                }
                scope.reverse();
                let name = match it.kind {
                    SymbolKind::Namespace => match it.name.rsplit_once("::") {
                        Some((outer, last)) => {
                            scope.push(outer.to_string());
                            last.to_string()
                        }
                        None => it.name.clone(),
                    },
                    _ => it.name.clone(),
                };
                let line = lines.line(it.line);
                let label = if it.kind == SymbolKind::Section {
                    collapse(line)
                } else {
                    label(line)
                };
                RawSymbol {
                    name,
                    label: truncate_label(label),
                    kind: it.kind,
                    start: it.start,
                    end: it.end,
                    scope,
                    parent: it.parent,
                }
            })
            .collect()
    }
}

fn item(kind: SymbolKind, name: &str, line: usize, start: usize, end: usize) -> Item {
    Item {
        kind,
        name: name.to_string(),
        line,
        start,
        end: end.max(line),
        parent: None,
        children: Vec::new(),
    }
}

/// The last non-blank code line of `from..=to` (at least `from`).
fn last_code_line(lines: &Lines, scan: &Scan, from: usize, to: usize) -> usize {
    (from..=to.max(from))
        .rev()
        .find(|&j| j < lines.len() && scan.kinds[j] == LineKind::Code && !lines.is_blank(j))
        .unwrap_or(from)
}

/// The first of the comment lines right above line `i` (or `i`).
fn comments_above(lines: &Lines, scan: &Scan, i: usize) -> usize {
    let mut start = i;
    while start > 0
        && scan.kinds[start - 1] == LineKind::Code
        && lines.line(start - 1).trim_start().starts_with('#')
        && !lines.line(start - 1).starts_with("#!")
    {
        start -= 1;
    }
    start
}

/// The label of a declaration line: up to its opening brace (`sub name`, `package Foo`).
fn label(line: &str) -> String {
    let head = line.split('{').next().unwrap_or(line);
    let head = head.trim_end().trim_end_matches(';');
    collapse(head)
}

/// The text of a POD heading (`=head2 new` is `new`), or the command of a block's first line
/// (`=pod`, `=begin`).
fn pod_title(line: &str) -> String {
    let (command, text) = line.split_once([' ', '\t']).unwrap_or((line, ""));
    let text = collapse(text);
    if text.is_empty() {
        command.trim_start_matches('=').to_string()
    } else {
        text
    }
}

impl Outline for PerlOutline {
    /// `None` is the whole file.
    type Src = Option<usize>;

    fn units(&self, src: Option<usize>) -> Vec<Unit<Option<usize>>> {
        let ids = match src {
            None => &self.top,
            Some(i) => &self.items[i].children,
        };
        ids.iter()
            .map(|&i| Unit {
                start: self.items[i].start,
                end: self.items[i].end,
                src: Some(i),
            })
            .collect()
    }

    /// POD and code are kept in pieces of their own: a piece is found either as
    /// documentation or as code, and named after one of them.
    fn apart(&self, a: Option<usize>, b: Option<usize>) -> bool {
        let is_pod =
            |u: Option<usize>| u.is_some_and(|i| self.items[i].kind == SymbolKind::Section);
        is_pod(a) != is_pod(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(text: &str, want: &[(&str, SymbolKind, usize, usize, &[&str])]) {
        let lines = Lines::new(text);
        let got: Vec<(String, SymbolKind, usize, usize, Vec<String>)> = PerlOutline::new(&lines)
            .symbols(&lines)
            .into_iter()
            .map(|s| (s.name, s.kind, s.start, s.end, s.scope))
            .collect();
        let want: Vec<(String, SymbolKind, usize, usize, Vec<String>)> = want
            .iter()
            .map(|(n, k, s, e, sc)| {
                (
                    n.to_string(),
                    *k,
                    *s,
                    *e,
                    sc.iter().map(|x| x.to_string()).collect(),
                )
            })
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn packages_subs_and_pod() {
        use SymbolKind::*;
        let text = "\
package Shop::Cart;
use strict;

# Adds an item.
sub add {
    my ($self, $item) = @_;
    my %seen = ('}' => 1);
    push @{ $self->{items} }, $item; # a } in a comment
    return $self;
}

sub total { my $t = 0; $t += $_->{price} for @{ $_[0]{items} }; $t }

1;
__END__

=head1 NAME

Shop::Cart - a cart

=head2 add

Adds.

=cut
";
        check(
            text,
            &[
                ("Cart", Namespace, 0, 13, &["Shop"]),
                ("add", Function, 3, 9, &["Shop::Cart"]),
                ("total", Function, 11, 11, &["Shop::Cart"]),
                ("NAME", Section, 16, 24, &[]),
                ("add", Section, 20, 24, &["NAME"]),
            ],
        );
    }

    #[test]
    fn heredocs_blocks_and_forward_declarations() {
        use SymbolKind::*;
        let text = "\
package Outer {
    sub inner;
    sub render {
        my $html = <<\"HTML\";
<div>{</div>
HTML
        return $html;
    }
}
sub after { 1 }
";
        check(
            text,
            &[
                ("Outer", Namespace, 0, 8, &[]),
                ("render", Function, 2, 7, &["Outer"]),
                ("after", Function, 9, 9, &[]),
            ],
        );
    }

    #[test]
    fn an_unbalanced_sub_ends_where_the_next_begins() {
        use SymbolKind::*;
        // The regex hides a `{` from the count; the next sub in the first column still ends it.
        let text = "sub odd {\n    $x =~ /[{]/;\n}\n\nsub next_one {\n    2;\n}\n";
        check(
            text,
            &[
                ("odd", Function, 0, 2, &[]),
                ("next_one", Function, 4, 6, &[]),
            ],
        );
        // The same inside a package block: the sibling at the same indentation ends it.
        let text = "package P {\n    sub odd {\n        $x =~ /[{]/;\n    }\n    sub two {\n        2;\n    }\n}\n";
        check(
            text,
            &[
                ("P", Namespace, 0, 7, &[]),
                ("odd", Function, 1, 3, &["P"]),
                ("two", Function, 4, 6, &["P"]),
            ],
        );
    }

    #[test]
    fn declarations() {
        assert_eq!(package_decl("package Foo::Bar;"), Some(("Foo::Bar", false)));
        assert_eq!(package_decl("package Foo 1.02 {"), Some(("Foo", true)));
        assert_eq!(package_decl("packages Foo;"), None);
        assert_eq!(sub_decl("sub new {"), Some("new"));
        assert_eq!(sub_decl("  sub _private($$) {"), Some("_private"));
        assert_eq!(sub_decl("sub forward;"), None);
        assert_eq!(sub_decl("my $f = sub {"), None);
        assert_eq!(heredoc_tag("\"EOT\";"), Some(("EOT".into(), false)));
        assert_eq!(heredoc_tag("~EOT;"), Some(("EOT".into(), true)));
        assert_eq!(heredoc_tag(" 2"), None);
        assert_eq!(pod_title("=head2 new"), "new");
        assert_eq!(pod_title("=pod"), "pod");
    }
}
