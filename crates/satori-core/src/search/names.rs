//! Matching the names a chunk defines against a query: spelled identifiers (normalised, so
//! `parse_header`, `parseHeader` and `ParseHeader` meet), identifier parts, and questions that
//! describe a name in words ("put the bucket into the cache" ~ `set_bucket`). Everything is
//! memoised per name: names recur across candidates, and analysing one means tokenising and
//! stemming it.

use super::query::{self, Analysis, QueryKind};
use super::weights::Weights;
use crate::store::table::ChunkEntry;
use crate::store::tokenizer::{CodeTokenizer, TokenKind, may_stem_to};

/// Lower-cases and drops separators so `parse_header`, `parseHeader` and `ParseHeader` meet.
pub(super) fn normalize_identifier(s: &str) -> String {
    s.chars()
        .filter(|c| !matches!(c, '_' | '-' | '$'))
        .flat_map(char::to_lowercase)
        .collect()
}

/// Whether `raw` equals an identifier already passed through [`normalize_identifier`],
/// compared without allocating: a search scores hundreds of candidates.
pub(super) fn normalized_eq(raw: &str, norm: &str) -> bool {
    if raw.is_ascii() {
        // The common case, byte by byte: separators dropped, letters folded.
        return raw
            .bytes()
            .filter(|b| !matches!(b, b'_' | b'-' | b'$'))
            .map(|b| b.to_ascii_lowercase())
            .eq(norm.bytes());
    }
    raw.chars()
        .filter(|c| !matches!(c, '_' | '-' | '$'))
        .flat_map(char::to_lowercase)
        .eq(norm.chars())
}

/// Whether `raw` lower-cased equals the lower-case `word`, without allocating.
pub(super) fn lower_eq(raw: &str, word: &str) -> bool {
    if raw.is_ascii() {
        return raw.len() == word.len() && raw.eq_ignore_ascii_case(word);
    }
    raw.chars().flat_map(char::to_lowercase).eq(word.chars())
}

/// The query side of name matching, prepared once per search: normalised identifiers, the
/// distinct stemmed parts, and which parts each chunk name contains (names recur across
/// candidates, and analysing one means tokenising and stemming it).
pub(super) struct NameMatcher<'q, 'g> {
    pub(super) idents: Vec<String>,
    /// Whether each of `idents` was written with a capital first letter (`Serialize`, a type)
    /// rather than in lower case (`serialize`, a function, or a query typed without care).
    capitalized: Vec<bool>,
    /// The query's qualified names (qualifier, name), normalised.
    pub(super) qualified: Vec<(String, String)>,
    /// At most 128 distinct parts, so a name's matches fit one bit mask.
    pub(super) parts: Vec<&'q str>,
    memo: rustc_hash::FxHashMap<&'g str, u128>,
}

impl<'q, 'g> NameMatcher<'q, 'g> {
    pub(super) fn new(analysis: &'q Analysis) -> Self {
        let mut parts: Vec<&str> = Vec::new();
        for p in &analysis.parts {
            if parts.len() < 128 && !parts.contains(&p.as_str()) {
                parts.push(p);
            }
        }
        NameMatcher {
            idents: analysis
                .identifiers
                .iter()
                .map(|i| normalize_identifier(i))
                .collect(),
            capitalized: analysis
                .identifiers
                .iter()
                .map(|i| i.chars().next().is_some_and(char::is_uppercase))
                .collect(),
            qualified: analysis
                .qualified
                .iter()
                .map(|(q, n)| (normalize_identifier(q), normalize_identifier(n)))
                .collect(),
            parts,
            memo: rustc_hash::FxHashMap::with_capacity_and_hasher(1024, Default::default()),
        }
    }

    /// How a defined name meets the query's identifiers: `Some(true)` when it spells one of
    /// them, `Some(false)` when it does only with the case of its first letter changed (the
    /// query wrote the type `Serialize`; the name is the method `serialize`), `None` otherwise.
    pub(super) fn spells(&self, name: &str) -> Option<bool> {
        let mut folded = None;
        for (ident, &capital) in self.idents.iter().zip(&self.capitalized) {
            if normalized_eq(name, ident) {
                let lower = name.chars().next().is_some_and(char::is_lowercase);
                if !(capital && lower) {
                    return Some(true);
                }
                folded = Some(false);
            }
        }
        folded
    }

    /// The bit mask of query parts among the tokens of `name`.
    pub(super) fn parts_of(&mut self, name: &'g str, tokenizer: &mut CodeTokenizer) -> u128 {
        if let Some(&mask) = self.memo.get(name) {
            return mask;
        }
        // Every token starts with (the lower case of) some letter of the name, so a name
        // without any part's first letter has none of the parts.
        if name.is_ascii()
            && !name.bytes().any(|b| {
                let b = b.to_ascii_lowercase();
                self.parts.iter().any(|p| p.as_bytes().first() == Some(&b))
            })
        {
            return 0;
        }
        let parts = &self.parts;
        let may_stem_to = |seg: &str| parts.iter().any(|p| may_stem_to(seg, p));
        let mut mask = 0u128;
        tokenizer.scan(name, &may_stem_to, &mut |word| {
            if let Some(i) = parts.iter().position(|p| *p == word) {
                mask |= 1 << i;
            }
        });
        self.memo.insert(name, mask);
        mask
    }
}

/// How much of a defined name a question's words cover, memoised per name.
pub(super) struct NameCover<'q, 'g> {
    /// The question's stems and their related stems.
    stems: Vec<&'q str>,
    memo: rustc_hash::FxHashMap<&'g str, f32>,
    /// The boost per covered share, the least share that counts, and the length from which
    /// question words are looked for inside names spelled as two words.
    scale: f32,
    min: f32,
    joined_min: usize,
}

impl<'q, 'g> NameCover<'q, 'g> {
    pub(super) fn new(analysis: &'q Analysis, related: &'q [String], weights: &Weights) -> Self {
        let mut stems: Vec<&str> = Vec::new();
        if matches!(analysis.kind, QueryKind::NaturalLanguage | QueryKind::Mixed) {
            for s in analysis.parts.iter().chain(related) {
                if !stems.contains(&s.as_str()) {
                    stems.push(s);
                }
            }
        }
        NameCover {
            stems,
            memo: rustc_hash::FxHashMap::default(),
            scale: weights.name_covered,
            min: weights.name_covered_min,
            joined_min: weights.joined_stem_min,
        }
    }

    /// The boost of the best-covered name the chunk defines.
    pub(super) fn boost(&mut self, chunk: &'g ChunkEntry, tokenizer: &mut CodeTokenizer) -> f32 {
        if self.stems.is_empty() {
            return 0.0;
        }
        let mut best = 0.0f32;
        for name in chunk
            .symbol
            .iter()
            .map(|s| s.name.as_str())
            .chain(chunk.defines.iter().map(String::as_str))
        {
            best = best.max(self.cover(name, tokenizer));
        }
        if best >= self.min {
            self.scale * best
        } else {
            0.0
        }
    }

    /// Share of the distinct words of `name` (stop words aside) among the question's stems.
    fn cover(&mut self, name: &'g str, tokenizer: &mut CodeTokenizer) -> f32 {
        if let Some(&c) = self.memo.get(name) {
            return c;
        }
        // Most names share no word with the question: a filtered scan (no allocation, only
        // segments that could stem to a question word are stemmed) rules them out before
        // the full analysis that counts the name's words.
        let (stems, joined_min) = (&self.stems, self.joined_min);
        let mut shares = false;
        tokenizer.scan(
            name,
            &|seg| stems.iter().any(|s| may_stem_to(seg, s)),
            &mut |word| shares |= stems.contains(&word),
        );
        // A name may share only a compound with the question (`FileSystem`, `call_back` and
        // "filesystem", "callback"): look for long question words in the name's letters.
        if !shares && stems.iter().any(|s| s.len() >= joined_min) {
            let flat: Vec<u8> = name
                .bytes()
                .filter(u8::is_ascii_alphanumeric)
                .map(|b| b.to_ascii_lowercase())
                .collect();
            shares = stems
                .iter()
                .any(|s| s.len() >= joined_min && flat.windows(s.len()).any(|w| w == s.as_bytes()));
        }
        if !shares {
            self.memo.insert(name, 0.0);
            return 0.0;
        }
        let tokens = tokenizer.analyze(name);
        let has_parts = tokens.iter().any(|t| t.kind == TokenKind::Part);
        let mut words: Vec<&str> = Vec::new();
        let mut seq: Vec<&str> = Vec::new();
        for t in &tokens {
            let wanted = if has_parts {
                t.kind == TokenKind::Part
            } else {
                t.kind == TokenKind::Whole
            };
            if wanted && seq.last() != Some(&t.text.as_str()) {
                seq.push(&t.text);
            }
            if wanted
                && t.text.len() >= 2
                && !query::is_stop_word(&t.text)
                && !words.contains(&t.text.as_str())
            {
                words.push(&t.text);
            }
        }
        let mut covered: Vec<&str> = words
            .iter()
            .copied()
            .filter(|w| self.stems.contains(w))
            .collect();
        // A question writes as one word what a name spells as two: "filesystem" covers
        // `FileSystem`, "callback" covers `call_back`.
        let mut joined = String::new();
        for pair in seq.windows(2) {
            joined.clear();
            joined.push_str(pair[0]);
            joined.push_str(pair[1]);
            if self.stems.contains(&joined.as_str()) {
                for w in pair {
                    if words.contains(w) && !covered.contains(w) {
                        covered.push(w);
                    }
                }
            }
        }
        let c = if words.is_empty() {
            0.0
        } else {
            covered.len() as f32 / words.len() as f32
        };
        self.memo.insert(name, c);
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::vocab;

    /// How much of `name` the question covers.
    #[track_caller]
    fn check(question: &str, name: &str, expected: f32) {
        let mut tokenizer = CodeTokenizer::default();
        let weights = Weights::default();
        let mut analysis = query::analyze(question, &mut tokenizer, &weights);
        let related = vocab::expand(&mut analysis, question, &mut tokenizer, &weights);
        let mut cover = NameCover::new(&analysis, &related, &weights);
        let got = cover.cover(name, &mut tokenizer);
        assert!(
            (got - expected).abs() < 1e-6,
            "{question:?} covers {got} of {name:?}, expected {expected}"
        );
    }

    #[test]
    fn name_coverage() {
        check("put the bucket into the cache", "set_bucket", 1.0);
        check("put the bucket into the cache", "BucketMap", 0.5);
        check(
            "which loader reads templates from the filesystem",
            "FileSystemLoader",
            1.0,
        );
        check(
            "which loader reads templates from the disk",
            "FileSystemLoader",
            1.0 / 3.0,
        );
        check(
            "register a callback for the event",
            "call_back_registry",
            2.0 / 3.0,
        );
        check("when is the callback run", "call_back", 1.0);
        check("when is the callback run", "back_call", 0.0);
        check("register a callback for the event", "parse_header", 0.0);
    }
}
