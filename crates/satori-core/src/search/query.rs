//! Reading a query: the operator prefix block (`lang:`, `path:`, `-path:`, `must:`,
//! `exclude:`), the classification of the remaining text (identifier, natural language or
//! mixed), and the weighted lexical terms that retrieval searches for.

use std::collections::{HashMap, HashSet};

use super::weights::Weights;
use crate::SymbolKind;
use crate::store::tokenizer::{CodeTokenizer, TokenKind};

/// Only this many characters at the start of a query are scanned for operators, so a long
/// pasted snippet cannot be misread as a wall of operators.
pub const OPERATOR_PREFIX_MAX_CHARS: usize = 200;

/// The operator block and the free text of a query.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedQuery {
    /// `lang:` values, lower-cased, as written (aliases are resolved by the filter).
    pub lang: Vec<String>,
    /// `path:` include globs.
    pub path: Vec<String>,
    /// `-path:` exclude globs.
    pub exclude_path: Vec<String>,
    /// `must:` tokens.
    pub must: Vec<String>,
    /// `exclude:` tokens.
    pub exclude: Vec<String>,
    /// The free text after the block, trimmed.
    pub text: String,
    /// Characters consumed by the operator block.
    pub prefix_block_chars: usize,
}

impl ParsedQuery {
    /// True when an operator narrows the search enough to rank without free text.
    pub fn can_rank_without_text(&self) -> bool {
        !self.must.is_empty() || !self.path.is_empty() || !self.lang.is_empty()
    }
}

/// Parses the operator prefix block of `query`.
pub fn parse(query: &str) -> ParsedQuery {
    let mut parsed = ParsedQuery::default();
    // Byte offset where the scanned prefix ends (the first 200 characters).
    let limit = query
        .char_indices()
        .nth(OPERATOR_PREFIX_MAX_CHARS)
        .map_or(query.len(), |(i, _)| i);
    let mut pos = 0usize;
    loop {
        let rest = &query[pos..];
        let start = pos + (rest.len() - rest.trim_start().len());
        if start >= query.len() {
            pos = start;
            break;
        }
        let Some((key, value, end)) = operator_at(query, start, limit) else {
            pos = start;
            break;
        };
        match key {
            "lang" => parsed.lang.push(value.to_lowercase()),
            "path" => parsed.path.push(value),
            "-path" => parsed.exclude_path.push(value),
            "must" => parsed.must.push(value),
            _ => parsed.exclude.push(value),
        }
        pos = end;
    }
    parsed.prefix_block_chars = query[..pos].chars().count();
    let text = &query[pos..];
    // A backslash in front of the first free token only says "this is text".
    let text = text.strip_prefix('\\').unwrap_or(text);
    parsed.text = text.trim().to_string();
    parsed
}

/// Recognises one `key:value` operator starting at byte `start`; returns the key, the
/// unquoted value and the byte offset after it. The operator must end within `limit`.
fn operator_at(query: &str, start: usize, limit: usize) -> Option<(&'static str, String, usize)> {
    const KEYS: [&str; 5] = ["lang", "path", "-path", "must", "exclude"];
    let rest = &query[start..];
    let key = KEYS
        .into_iter()
        .find(|k| rest.starts_with(k) && rest[k.len()..].starts_with(':'))?;
    let value_start = start + key.len() + 1;
    let (value, end) = if query[value_start..].starts_with('"') {
        quoted(query, value_start + 1)?
    } else {
        let tail = &query[value_start..];
        let len = tail.find(char::is_whitespace).unwrap_or(tail.len());
        (tail[..len].to_string(), value_start + len)
    };
    if value.is_empty() || end > limit {
        return None;
    }
    // The operator must be a whole token: `path:"a"b` is not one.
    if query[end..]
        .chars()
        .next()
        .is_some_and(|c| !c.is_whitespace())
    {
        return None;
    }
    Some((key, value, end))
}

/// Reads a double-quoted value whose body starts at byte `from`; `\"` and `\\` are escapes.
/// Returns the value and the offset after the closing quote, or `None` when unterminated.
fn quoted(query: &str, from: usize) -> Option<(String, usize)> {
    let mut value = String::new();
    let mut chars = query[from..].char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((value, from + i + 1)),
            '\\' => match chars.next() {
                Some((_, e @ ('"' | '\\'))) => value.push(e),
                Some((_, other)) => {
                    value.push('\\');
                    value.push(other);
                }
                None => return None,
            },
            _ => value.push(c),
        }
    }
    None
}

/// How the free text of a query reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueryKind {
    Identifier,
    NaturalLanguage,
    Mixed,
    /// No free text (an operator-only query).
    #[default]
    Empty,
}

impl QueryKind {
    pub fn id(self) -> &'static str {
        match self {
            QueryKind::Identifier => "identifier",
            QueryKind::NaturalLanguage => "natural_language",
            QueryKind::Mixed => "mixed",
            QueryKind::Empty => "empty",
        }
    }
}

/// One lexical term to retrieve, with its weight.
#[derive(Debug, Clone, PartialEq)]
pub struct WeightedTerm {
    pub text: String,
    pub weight: f32,
}

/// What retrieval and ranking need to know about the free text.
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    pub kind: QueryKind,
    /// Terms to search, best-weighted first, deduplicated.
    pub terms: Vec<WeightedTerm>,
    /// Identifiers the user typed (the last segment of `Foo::bar` / `x.y`), as written; the
    /// first [`MAX_NAMES`] distinct ones, as are `words` and `parts`.
    pub identifiers: Vec<String>,
    /// For identifiers written with their qualifier (`ExUnit.Test`, `DBImpl::Write`), the
    /// qualifier's last segment and the name, as written: a definition of the name in that
    /// scope (or file) is the one meant.
    pub qualified: Vec<(String, String)>,
    /// Plain words (not stop words), lower-cased: candidates for a weaker definition match.
    pub words: Vec<String>,
    /// Stemmed parts of every term-bearing token, for path and symbol-part matches.
    pub parts: Vec<String>,
    /// The kind of definition a question names near its start, if any.
    pub asks_for: Option<KindCue>,
}

/// The kind of definition a question asks for by naming it: "which struct holds ...", "the
/// interface for ..." ask for a type; "the function that ...", "the helper that ..." for
/// something callable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KindCue {
    Type,
    Callable,
}

impl KindCue {
    /// The cue among a question's first `head` content words (in order, stop words left
    /// out): none when they name no kind, or both.
    pub fn of(words: &[String], head: usize) -> Option<KindCue> {
        let (mut ty, mut callable) = (false, false);
        for word in words.iter().take(head) {
            match word.as_str() {
                "class" | "classes" | "struct" | "structs" | "structure" | "structures"
                | "interface" | "interfaces" | "trait" | "traits" | "enum" | "enums" | "record"
                | "records" | "protocol" | "protocols" | "type" | "types" | "typeclass" => {
                    ty = true
                }
                "function" | "functions" | "method" | "methods" | "helper" | "helpers"
                | "routine" | "constructor" => callable = true,
                _ => {}
            }
        }
        match (ty, callable) {
            (true, false) => Some(KindCue::Type),
            (false, true) => Some(KindCue::Callable),
            _ => None,
        }
    }

    /// Whether a definition of this kind is what the cue asks for.
    pub fn matches(self, kind: SymbolKind) -> bool {
        use SymbolKind as K;
        match self {
            KindCue::Type => matches!(
                kind,
                K::Class | K::Struct | K::Enum | K::Interface | K::Trait | K::Type
            ),
            KindCue::Callable => {
                matches!(kind, K::Function | K::Method | K::Constructor | K::Macro)
            }
        }
    }
}

/// Words that carry no meaning in a question about code.
const STOP_WORDS: &[&str] = &[
    "a", "about", "all", "an", "and", "any", "are", "as", "at", "be", "been", "by", "can", "code",
    "could", "do", "does", "done", "for", "from", "get", "gets", "has", "have", "how", "i", "if",
    "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "should", "so", "some", "that",
    "the", "their", "there", "these", "this", "those", "to", "use", "used", "uses", "using", "via",
    "was", "we", "what", "when", "where", "which", "who", "why", "will", "with", "would", "you",
];

/// At most this many terms are searched: more only adds noise and time.
const MAX_TERMS: usize = 24;

/// At most this many identifiers, words and parts are kept (the first ones of the query):
/// ranking compares each candidate against them, so a pasted snippet of thousands of tokens
/// must not make every candidate cost thousands of comparisons.
pub const MAX_NAMES: usize = 128;

/// Whether a lower-case word is a stop word.
pub fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.binary_search(&word).is_ok()
}

/// Trims punctuation that wraps a token in prose (`(`, `,`, `?`, quotes, backticks, a
/// trailing `()`), keeping what identifiers may contain.
fn trim_token(token: &str) -> &str {
    let t = token.trim_matches(|c: char| {
        matches!(
            c,
            '`' | '\'' | '"' | ',' | ';' | '?' | '!' | '(' | ')' | '[' | ']' | '{' | '}'
        )
    });
    let t = t.strip_suffix("()").unwrap_or(t);
    t.trim_end_matches(['.', ':'])
}

/// True when `token` (already trimmed) is written like code rather than like a word.
fn looks_like_identifier(token: &str, single: bool) -> bool {
    let ident = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
            && !s.starts_with(|c: char| c.is_ascii_digit())
    };
    for sep in ["::", "->", "."] {
        if token.contains(sep) {
            return token.split(sep).all(ident);
        }
    }
    if !ident(token) {
        return false;
    }
    let chars: Vec<char> = token.chars().collect();
    let snake = token.trim_matches('_').contains('_') || token.starts_with("__");
    let camel = chars
        .windows(2)
        .any(|w| w[0].is_lowercase() && w[1].is_uppercase());
    let inner_caps = chars.len() >= 2 && chars.iter().skip(1).any(|c| c.is_uppercase());
    let dollar = token.contains('$');
    let cased = chars.iter().any(|c| c.is_uppercase());
    snake || camel || inner_caps || dollar || (single && (cased || !is_stop_word(token)))
}

/// Classifies the free text and derives the weighted terms.
pub fn analyze(text: &str, tokenizer: &mut CodeTokenizer, weights: &Weights) -> Analysis {
    let analysis = analyze_with(text, tokenizer, weights, true);
    if analysis.terms.is_empty() && !text.trim().is_empty() {
        // A question made only of stop words ("how does it work") still searches for them.
        return analyze_with(text, tokenizer, weights, false);
    }
    analysis
}

fn analyze_with(
    text: &str,
    tokenizer: &mut CodeTokenizer,
    weights: &Weights,
    drop_stop_words: bool,
) -> Analysis {
    let raw: Vec<&str> = text
        .split_whitespace()
        .map(trim_token)
        .filter(|t| !t.is_empty())
        .collect();
    let single = raw.len() == 1;
    let mut analysis = Analysis {
        kind: QueryKind::Empty,
        terms: Vec::new(),
        identifiers: Vec::new(),
        qualified: Vec::new(),
        words: Vec::new(),
        parts: Vec::new(),
        asks_for: None,
    };
    let (mut idents, mut words) = (0usize, 0usize);
    // Everything is deduplicated through hash sets and a term index, so the analysis costs
    // one pass over the query however many distinct tokens it holds.
    let mut seen = Seen::default();
    let mut term_at: HashMap<String, usize> = HashMap::new();
    for token in raw {
        let is_ident = looks_like_identifier(token, single);
        let lower = token.to_lowercase();
        if is_ident {
            idents += 1;
            let mut segments = token
                .rsplit(['.', ':', '>'])
                .filter(|s| !s.trim_end_matches('-').is_empty());
            let last = segments.next().unwrap_or(token);
            if let Some(qualifier) = segments.next()
                && analysis.qualified.len() < MAX_NAMES
            {
                let pair = (
                    qualifier.trim_end_matches('-').to_string(),
                    last.to_string(),
                );
                if !analysis.qualified.contains(&pair) {
                    analysis.qualified.push(pair);
                }
            }
            seen.identifiers
                .push(&mut analysis.identifiers, last.to_string());
        } else {
            words += 1;
            if drop_stop_words && is_stop_word(&lower) {
                continue;
            }
            if lower.chars().count() >= 3 {
                seen.words.push(&mut analysis.words, lower.clone());
            }
        }
        let tokens = tokenizer.analyze(token);
        let parts = tokens.iter().filter(|t| t.kind == TokenKind::Part).count();
        for t in tokens {
            // `get`, `by`, `with` inside `getUserById` / `retry_with_backoff` match everywhere;
            // the whole identifier already carries them.
            if is_ident && t.kind == TokenKind::Part && is_stop_word(&t.text) {
                continue;
            }
            let weight = match (is_ident, t.kind) {
                // The exact identifier is the strongest evidence there is.
                (true, TokenKind::Whole) => weights.identifier_term,
                (true, TokenKind::Part) => weights.identifier_part_term,
                // A plain word: its stem matches inflections; the exact form counts less
                // when a stem exists, or fully when it is its own stem.
                (false, TokenKind::Whole) if parts > 0 => weights.word_exact_term,
                (false, _) => weights.word_term,
            };
            if t.kind == TokenKind::Part || parts == 0 {
                seen.parts.push(&mut analysis.parts, t.text.clone());
            }
            match term_at.get(&t.text) {
                Some(&i) => {
                    let w = &mut analysis.terms[i];
                    w.weight = w.weight.max(weight);
                }
                None => {
                    term_at.insert(t.text.clone(), analysis.terms.len());
                    analysis.terms.push(WeightedTerm {
                        text: t.text,
                        weight,
                    });
                }
            }
        }
    }
    analysis.kind = match (idents > 0, words > 0) {
        (true, true) => QueryKind::Mixed,
        (true, false) => QueryKind::Identifier,
        (false, true) => QueryKind::NaturalLanguage,
        (false, false) => QueryKind::Empty,
    };
    if analysis.kind != QueryKind::Identifier {
        analysis.asks_for = KindCue::of(&analysis.words, weights.kind_cue_words);
    }
    // Keep the strongest terms when a long question would exceed the cap (stable: ties keep
    // their order of appearance).
    analysis.terms.sort_by(|a, b| b.weight.total_cmp(&a.weight));
    analysis.terms.truncate(MAX_TERMS);
    analysis
}

/// The distinct values already kept in each list of an [`Analysis`].
#[derive(Default)]
struct Seen {
    identifiers: Distinct,
    words: Distinct,
    parts: Distinct,
}

/// A list's members, for constant-time "already there?"; the list keeps its order.
#[derive(Default)]
struct Distinct(HashSet<String>);

impl Distinct {
    /// Appends `s` to `list` unless it is there already or the list holds [`MAX_NAMES`].
    fn push(&mut self, list: &mut Vec<String>, s: String) {
        if list.len() < MAX_NAMES && !self.0.contains(&s) {
            self.0.insert(s.clone());
            list.push(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Renders a parse compactly: operators as `key=value`, then `text=...`.
    #[track_caller]
    fn check(query: &str, expected: &str) {
        let p = parse(query);
        let mut out = Vec::new();
        for (k, vs) in [
            ("lang", &p.lang),
            ("path", &p.path),
            ("-path", &p.exclude_path),
            ("must", &p.must),
            ("exclude", &p.exclude),
        ] {
            for v in vs {
                out.push(format!("{k}={v}"));
            }
        }
        out.push(format!("text={}", p.text));
        assert_eq!(out.join(" | "), expected, "parse of {query:?}");
    }

    #[test]
    fn operator_block() {
        check("retry backoff", "text=retry backoff");
        check("lang:rust retry", "lang=rust | text=retry");
        check(
            "lang:TS path:src/** -path:src/gen/** must:retry exclude:mock the query",
            "lang=ts | path=src/** | -path=src/gen/** | must=retry | exclude=mock | text=the query",
        );
        check("lang:rust lang:go x", "lang=rust | lang=go | text=x");
        check(
            r#"path:"src/my dir/**" parse"#,
            "path=src/my dir/** | text=parse",
        );
        check(r#"must:"say \"hi\"" x"#, r#"must=say "hi" | text=x"#);
        check(r"\lang:x find", "text=lang:x find");
        check("find lang:rust", "text=find lang:rust");
        check(
            "lang:rust foo:bar path:x",
            "lang=rust | text=foo:bar path:x",
        );
        check("  must:a   ", "must=a | text=");
        check("lang: x", "text=lang: x");
        check(r#"path:"unterminated x"#, r#"text=path:"unterminated x"#);
        check(r#"path:"a"b x"#, r#"text=path:"a"b x"#);
        check("", "text=");
    }

    #[test]
    fn prefix_is_capped_at_200_chars() {
        let filler = format!("path:{}", "a".repeat(190));
        check(
            &format!("{filler} lang:go x"),
            &format!("path={} | text=lang:go x", "a".repeat(190)),
        );
        let long = format!("path:{}", "b".repeat(200));
        check(&format!("{long} x"), &format!("text={long} x"));
        assert_eq!(parse("lang:go  x").prefix_block_chars, 9);
    }

    #[track_caller]
    fn classify(text: &str, kind: QueryKind, identifiers: &[&str]) {
        let a = analyze(text, &mut CodeTokenizer::default(), &Weights::default());
        assert_eq!(a.kind, kind, "kind of {text:?}");
        assert_eq!(a.identifiers, identifiers, "identifiers of {text:?}");
    }

    #[test]
    fn classification() {
        classify("getUserById", QueryKind::Identifier, &["getUserById"]);
        classify("parse_header", QueryKind::Identifier, &["parse_header"]);
        classify("Foo::bar", QueryKind::Identifier, &["bar"]);
        classify("config.load", QueryKind::Identifier, &["load"]);
        classify("`retry`", QueryKind::Identifier, &["retry"]);
        classify("Parser", QueryKind::Identifier, &["Parser"]);
        classify("how are retries scheduled", QueryKind::NaturalLanguage, &[]);
        classify("How does Parser work", QueryKind::NaturalLanguage, &[]);
        classify(
            "where is parseHeader() called?",
            QueryKind::Mixed,
            &["parseHeader"],
        );
        classify("", QueryKind::Empty, &[]);
    }

    #[test]
    fn qualified_names_keep_their_last_qualifier() {
        let cases: [(&str, &[(&str, &str)]); 6] = [
            ("Foo::bar", &[("Foo", "bar")]),
            ("a::b::Error", &[("b", "Error")]),
            ("where is `ExUnit.Test` defined", &[("ExUnit", "Test")]),
            ("self->next", &[("self", "next")]),
            ("parse_header", &[]),
            ("Foo::bar and Foo::bar again", &[("Foo", "bar")]),
        ];
        for (text, want) in cases {
            let a = analyze(text, &mut CodeTokenizer::default(), &Weights::default());
            let got: Vec<(&str, &str)> = a
                .qualified
                .iter()
                .map(|(q, n)| (q.as_str(), n.as_str()))
                .collect();
            assert_eq!(got, want, "{text:?}");
        }
    }

    #[test]
    fn terms_and_weights() {
        let a = analyze(
            "getUser the retries",
            &mut CodeTokenizer::default(),
            &Weights::default(),
        );
        let terms: Vec<String> = a
            .terms
            .iter()
            .map(|t| format!("{}:{}", t.text, t.weight))
            .collect();
        assert_eq!(terms, ["getuser:2", "retri:1", "user:0.6", "retries:0.5"]);
        assert_eq!(a.words, ["retries"]);
        assert_eq!(a.parts, ["user", "retri"]);
    }

    #[test]
    fn kind_cues() {
        #[track_caller]
        fn cue(query: &str, expected: Option<KindCue>) {
            let analysis = analyze(query, &mut CodeTokenizer::default(), &Weights::default());
            assert_eq!(analysis.asks_for, expected, "cue of {query:?}");
        }
        use KindCue::{Callable, Type};
        cue("Which struct holds the scanner's tokens?", Some(Type));
        cue(
            "the interface for a value computed on first access",
            Some(Type),
        );
        cue("Which classes are the library's errors", Some(Type));
        cue("the type class every window layout implements", Some(Type));
        cue("the helper that divides two integers", Some(Callable));
        cue("Which function decides the server backend", Some(Callable));
        // Too far into the question: what is described, not what is asked for.
        cue(
            "how does the emitter walk the node tree and call each class handler",
            None,
        );
        // Both kinds, or none: no cue.
        cue("the class method that parses headers", None);
        cue("how are failed requests retried", None);
        // An identifier is looked up by name, whatever it is called.
        cue("StructField", None);
    }

    #[test]
    fn kind_cues_match_their_kinds() {
        for kind in SymbolKind::ALL {
            let ty = KindCue::Type.matches(kind);
            let callable = KindCue::Callable.matches(kind);
            assert!(!(ty && callable), "{kind:?} is matched by both cues");
        }
        assert!(KindCue::Type.matches(SymbolKind::Trait));
        assert!(KindCue::Callable.matches(SymbolKind::Method));
        assert!(!KindCue::Type.matches(SymbolKind::Module));
    }

    #[test]
    fn stop_words_are_sorted() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
    }
}
