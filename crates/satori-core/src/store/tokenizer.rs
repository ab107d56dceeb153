//! The code-aware tokenizer shared by indexing and querying.
//!
//! Source code names things with compound identifiers (`getUserById`, `parse_header`,
//! `HTTPServer`). A search for "user" should find `getUserById`, and a search for
//! `getUserById` should prefer the chunk that contains exactly that identifier. So every
//! identifier run yields:
//! - the whole identifier, lower-cased and *not* stemmed (exact identifier matches), and
//! - its parts split on `_`/`$` and camelCase boundaries, lower-cased and stemmed (so
//!   "retries" in a question meets `retryCount` in code).
//!
//! Parts take consecutive positions (the whole identifier shares the first part's position)
//! so `get user` can be matched as a phrase inside `getUserById`.

use tantivy::tokenizer::{RawTokenizer, Stemmer, Token, TokenFilter, TokenStream, Tokenizer};

/// Name under which the tokenizer is registered on every index.
pub const CODE_TOKENIZER: &str = "code";

/// Longer runs are hashes, base64 blobs or minified noise, never something a person types.
const MAX_RUN_BYTES: usize = 80;

/// Tantivy's English stemmer applied to a single word (a raw tokenizer emits the whole input
/// as one token, the stemmer filter rewrites it).
type WordStemmer = <Stemmer as TokenFilter>::Tokenizer<RawTokenizer>;

/// Whether a token is a whole identifier or one of its parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    Whole,
    Part,
}

/// One token with its kind (used by the query side, which weighs the two kinds differently).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeToken {
    pub text: String,
    pub kind: TokenKind,
    pub position: usize,
    /// Byte span in the analysed text.
    pub offset_from: usize,
    pub offset_to: usize,
}

/// The tokenizer; cheap to clone, as tantivy requires.
#[derive(Clone)]
pub struct CodeTokenizer {
    stemmer: WordStemmer,
    /// Reused between calls so that indexing does not allocate a vector per field value.
    buffer: Vec<Token>,
    /// Scratch for one identifier: its lower-case text, a lower-case segment, the segment
    /// ranges and the characters they are split from.
    whole: String,
    seg: String,
    segments: Vec<(usize, usize)>,
    chars: Vec<(usize, char)>,
}

impl Default for CodeTokenizer {
    fn default() -> Self {
        CodeTokenizer {
            stemmer: Stemmer::default().transform(RawTokenizer::default()),
            buffer: Vec::new(),
            whole: String::new(),
            seg: String::new(),
            segments: Vec::new(),
            chars: Vec::new(),
        }
    }
}

impl CodeTokenizer {
    /// Analyses `text` into tokens with their kinds (whole identifiers and parts).
    pub fn analyze(&mut self, text: &str) -> Vec<CodeToken> {
        let mut out = Vec::new();
        self.run(text, None, &mut |kind, word, position, from, to| {
            out.push(CodeToken {
                text: word.to_string(),
                kind,
                position,
                offset_from: from,
                offset_to: to,
            });
        });
        out
    }

    /// Stems one lower-case word with the English stemmer.
    pub fn stem(&mut self, word: &str) -> String {
        let mut stream = self.stemmer.token_stream(word);
        if stream.advance() {
            stream.token().text.clone()
        } else {
            word.to_string()
        }
    }

    /// Reports the tokens of `text` that could be one of a few wanted words, cheaply: a
    /// segment is stemmed only when `wanted` accepts its lower-case form, and tokens it
    /// rejects are left out. With a `wanted` built on [`may_stem_to`], most stemming is
    /// skipped without missing a wanted word.
    pub fn scan(&mut self, text: &str, wanted: &dyn Fn(&str) -> bool, sink: &mut dyn FnMut(&str)) {
        self.run(text, Some(wanted), &mut |_, word, _, _, _| sink(word));
    }

    /// Walks the identifier runs of `text` and reports every token to `sink` (with a
    /// `filter`, only the stems it lets through; see [`CodeTokenizer::scan`]).
    fn run(
        &mut self,
        text: &str,
        filter: Option<&dyn Fn(&str) -> bool>,
        sink: &mut dyn FnMut(TokenKind, &str, usize, usize, usize),
    ) {
        let mut position = 0usize;
        let mut start: Option<usize> = None;
        for (i, c) in text
            .char_indices()
            .chain(std::iter::once((text.len(), ' ')))
        {
            if is_ident_char(c) && i < text.len() {
                if start.is_none() {
                    start = Some(i);
                }
            } else if let Some(s) = start.take() {
                position = self.identifier(&text[s..i], s, position, filter, sink);
            }
        }
    }

    /// Emits the tokens of one identifier run starting at byte `base`; returns the next
    /// free position.
    fn identifier(
        &mut self,
        run: &str,
        base: usize,
        position: usize,
        filter: Option<&dyn Fn(&str) -> bool>,
        sink: &mut dyn FnMut(TokenKind, &str, usize, usize, usize),
    ) -> usize {
        let skip = |word: &str| filter.is_some_and(|f| !f(word));
        if run.len() > MAX_RUN_BYTES || run.chars().all(|c| c == '_' || c == '$') {
            return position;
        }
        // Scratch buffers are taken out of `self` for the call (stemming borrows `self`)
        // and put back after: the tokenizer runs for every line indexed and every name
        // ranked, and allocating per identifier dominated it.
        let mut whole = std::mem::take(&mut self.whole);
        let mut seg = std::mem::take(&mut self.seg);
        let mut segments = std::mem::take(&mut self.segments);
        lower_into(run, &mut whole);
        sink(TokenKind::Whole, &whole, position, base, base + run.len());
        split_segments(run, &mut self.chars, &mut segments);
        for (i, &(from, to)) in segments.iter().enumerate() {
            lower_into(&run[from..to], &mut seg);
            let pos = position + i;
            let (abs_from, abs_to) = (base + from, base + to);
            let alphabetic = seg.chars().all(char::is_alphabetic);
            if alphabetic && skip(&seg) {
                continue;
            }
            let stemmed;
            let word: &str = if alphabetic {
                stemmed = self.stem(&seg);
                &stemmed
            } else {
                &seg
            };
            // A one-part identifier already produced its text as the whole token.
            if !(segments.len() == 1 && word == whole) {
                sink(TokenKind::Part, word, pos, abs_from, abs_to);
            }
            if !alphabetic {
                // `utf8`, `sha256`, `parse2d`: the letters alone are what people search for.
                for (lf, lt) in letter_runs(&seg) {
                    if lt - lf >= 2 && lt - lf < seg.len() && !skip(&seg[lf..lt]) {
                        let letters = self.stem(&seg[lf..lt]);
                        if letters != word {
                            sink(TokenKind::Part, &letters, pos, abs_from, abs_to);
                        }
                    }
                }
            }
        }
        let next = position + segments.len().max(1);
        self.whole = whole;
        self.seg = seg;
        self.segments = segments;
        next
    }
}

/// Lower-cases `s` into `buf` (ASCII in place; anything else exactly as `str::to_lowercase`).
fn lower_into(s: &str, buf: &mut String) {
    buf.clear();
    if s.is_ascii() {
        buf.push_str(s);
        buf.make_ascii_lowercase();
    } else {
        buf.push_str(&s.to_lowercase());
    }
}

/// Whether the lower-case `segment` could stem to `word`: English stems keep a word's first
/// letter and are never longer than the word. The filter for [`CodeTokenizer::scan`].
pub fn may_stem_to(segment: &str, word: &str) -> bool {
    segment.len() >= word.len() && segment.chars().next() == word.chars().next()
}

/// Characters that make up identifier runs.
fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// Splits an identifier into byte ranges of its parts: on `_`/`$`, lower→upper
/// (`getUser`), and the last capital of an acronym before a lower-case letter (`HTTPServer`).
/// Digits stay attached to their neighbours (`utf8`, `int32`, `base64Encode` → base64, Encode).
fn split_segments(run: &str, chars: &mut Vec<(usize, char)>, segments: &mut Vec<(usize, usize)>) {
    chars.clear();
    chars.extend(run.char_indices());
    segments.clear();
    let mut start: Option<usize> = None;
    for (k, &(i, c)) in chars.iter().enumerate() {
        if c == '_' || c == '$' {
            if let Some(s) = start.take() {
                segments.push((s, i));
            }
            continue;
        }
        if let Some(s) = start {
            let prev = chars[k - 1].1;
            let next = chars.get(k + 1).map(|&(_, n)| n);
            let lower_to_upper = (prev.is_lowercase() || prev.is_ascii_digit()) && c.is_uppercase();
            let acronym_end =
                prev.is_uppercase() && c.is_uppercase() && next.is_some_and(char::is_lowercase);
            if lower_to_upper || acronym_end {
                segments.push((s, i));
                start = Some(i);
            }
        } else {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        segments.push((s, run.len()));
    }
}

/// Byte ranges of the alphabetic runs of a mixed letters-and-digits word.
fn letter_runs(word: &str) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    let mut start = None;
    for (i, c) in word.char_indices() {
        match (c.is_alphabetic(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                runs.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        runs.push((s, word.len()));
    }
    runs
}

/// The token stream handed to tantivy: tokens are computed eagerly into the tokenizer's
/// reusable buffer, then replayed.
pub struct CodeTokenStream<'a> {
    tokens: &'a mut Vec<Token>,
    len: usize,
    next: usize,
}

impl Tokenizer for CodeTokenizer {
    type TokenStream<'a> = CodeTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CodeTokenStream<'a> {
        let mut buffer = std::mem::take(&mut self.buffer);
        let mut len = 0usize;
        self.run(text, None, &mut |_, word, position, from, to| {
            if len == buffer.len() {
                buffer.push(Token::default());
            }
            let token = &mut buffer[len];
            token.text.clear();
            token.text.push_str(word);
            token.position = position;
            token.offset_from = from;
            token.offset_to = to;
            token.position_length = 1;
            len += 1;
        });
        self.buffer = buffer;
        CodeTokenStream {
            tokens: &mut self.buffer,
            len,
            next: 0,
        }
    }
}

impl TokenStream for CodeTokenStream<'_> {
    fn advance(&mut self) -> bool {
        if self.next < self.len {
            self.next += 1;
            true
        } else {
            false
        }
    }

    fn token(&self) -> &Token {
        &self.tokens[self.next.saturating_sub(1)]
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.tokens[self.next.saturating_sub(1)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Renders tokens as `text@position` (parts marked with `~`) for compact expectations.
    #[track_caller]
    fn check(input: &str, expected: &[&str]) {
        let tokens = CodeTokenizer::default().analyze(input);
        let got: Vec<String> = tokens
            .iter()
            .map(|t| match t.kind {
                TokenKind::Whole => format!("{}@{}", t.text, t.position),
                TokenKind::Part => format!("~{}@{}", t.text, t.position),
            })
            .collect();
        assert_eq!(got, expected, "tokens of {input:?}");
        for t in &tokens {
            assert!(t.offset_from < t.offset_to && t.offset_to <= input.len());
        }
    }

    /// `scan` with a first-letter/length filter finds a wanted token exactly when `analyze`
    /// produces it: the filter only skips stems that could not be wanted.
    #[test]
    fn scan_finds_what_analyze_finds() {
        let names = [
            "getUserById",
            "dyingProcess",
            "lying_about_skies",
            "generouslyConflatedRetries",
            "HTTPRequestRetries",
            "utf8Decoder",
            "sha256sum",
            "parse2dHopping",
            "relationalOrganizations",
            "tie_idly_gently",
            "Ünïcödé_names",
            "x",
        ];
        let mut tok = CodeTokenizer::default();
        let wanted: std::collections::BTreeSet<String> = names
            .iter()
            .flat_map(|n| tok.analyze(n))
            .map(|t| t.text)
            .collect();
        for name in names {
            let produced: Vec<String> = tok.analyze(name).into_iter().map(|t| t.text).collect();
            for p in &wanted {
                let filter = |seg: &str| may_stem_to(seg, p);
                let mut found = false;
                tok.scan(name, &filter, &mut |w| found |= w == p);
                assert_eq!(found, produced.contains(p), "{p:?} in {name:?}");
            }
        }
    }

    #[test]
    fn identifiers() {
        check(
            "getUserById",
            &["getuserbyid@0", "~get@0", "~user@1", "~by@2", "~id@3"],
        );
        check("parse_header", &["parse_header@0", "~pars@0", "~header@1"]);
        check("HTTPServer", &["httpserver@0", "~http@0", "~server@1"]);
        check(
            "XMLHttpRequest",
            &["xmlhttprequest@0", "~xml@0", "~http@1", "~request@2"],
        );
        check("__init__", &["__init__@0", "~init@0"]);
        check("MAX_RETRIES", &["max_retries@0", "~max@0", "~retri@1"]);
        check("$scope", &["$scope@0", "~scope@0"]);
    }

    #[test]
    fn single_words_keep_exact_and_stem() {
        check("user", &["user@0"]);
        check("Users", &["users@0", "~user@0"]);
        check("retrying later", &["retrying@0", "~retri@0", "later@1"]);
    }

    #[test]
    fn digits() {
        check("utf8", &["utf8@0", "~utf@0"]);
        check("parse2d", &["parse2d@0", "~pars@0"]);
        check(
            "base64Encode",
            &["base64encode@0", "~base64@0", "~base@0", "~encod@1"],
        );
        check("int32 42", &["int32@0", "~int@0", "42@1"]);
        check("x86_64", &["x86_64@0", "~x86@0", "~64@1"]);
    }

    #[test]
    fn text_and_punctuation() {
        check(
            "fn parse(input: &str) -> Header",
            &["fn@0", "parse@1", "~pars@1", "input@2", "str@3", "header@4"],
        );
        check("a.b::c", &["a@0", "b@1", "c@2"]);
        check(
            "src/auth/user_service.ts",
            &[
                "src@0",
                "auth@1",
                "user_service@2",
                "~user@2",
                "~servic@3",
                "ts@4",
            ],
        );
        check("___ $$ ", &[]);
        check(&"a".repeat(200), &[]);
        check("Größe", &["größe@0"]);
    }

    #[test]
    fn tantivy_stream_matches_analyze() {
        let mut tok = CodeTokenizer::default();
        let expected: Vec<String> = tok
            .analyze("getUserById(id)")
            .into_iter()
            .map(|t| t.text)
            .collect();
        // Twice, to exercise the reused buffer with a shorter second input.
        for text in ["getUserById(id)", "x"] {
            let mut stream = tok.token_stream(text);
            let mut got = Vec::new();
            while stream.advance() {
                got.push(stream.token().text.clone());
            }
            if text == "x" {
                assert_eq!(got, vec!["x".to_string()]);
            } else {
                assert_eq!(got, expected);
            }
        }
    }
}
