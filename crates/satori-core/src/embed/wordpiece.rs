//! A BERT WordPiece tokenizer read from a Hugging Face `tokenizer.json`, bit-for-bit equal
//! to the `tokenizers` library for the pipeline BERT models use (BertNormalizer,
//! BertPreTokenizer, WordPiece). Static embedding models are lookup tables indexed by token
//! id, so a tokenizer that splits one word differently silently changes every vector: parity
//! is checked against ids produced by the reference library (`tests/embed.rs`).
//!
//! Only what embedding needs is implemented: ids of a text without special tokens, no
//! offsets, no truncation. Source code is mostly ASCII, so ASCII runs take a fast path that
//! does the same as the Unicode path without its per-character table lookups.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use rustc_hash::FxHashMap;
use serde::Deserialize;
use unicode_categories::UnicodeCategories;
use unicode_normalization::UnicodeNormalization;

use super::piece_table;

/// Why a `tokenizer.json` cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenizerError(pub String);

impl std::fmt::Display for TokenizerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The BertNormalizer options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Normalizer {
    clean_text: bool,
    handle_chinese_chars: bool,
    strip_accents: bool,
    lowercase: bool,
}

/// A WordPiece tokenizer.
#[derive(Debug, Clone, PartialEq)]
pub struct WordPiece {
    normalizer: Option<Normalizer>,
    pieces: Pieces,
    unk_id: u32,
    max_chars_per_word: usize,
    vocab_size: usize,
}

/// A vocabulary laid out at build time by [`piece_table`]: the text of `vocab.txt`, where
/// each of its lines starts (`u32` little-endian, one more for the end), and the slots.
#[derive(Debug, Clone, Copy)]
pub struct PieceTable {
    pub text: &'static str,
    pub offsets: &'static [u8],
    pub slots: &'static [u8],
}

impl PieceTable {
    fn lines(&self) -> usize {
        (self.offsets.len() / 4).saturating_sub(1)
    }

    /// The line of `id`, without its line break.
    fn line(&self, id: usize) -> &'static str {
        let at = |i: usize| {
            let b = &self.offsets[i * 4..i * 4 + 4];
            u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize
        };
        self.text[at(id)..at(id + 1)].trim_end_matches('\n')
    }

    fn get(&self, continuation: bool, piece: &str) -> Option<u32> {
        let slots = self.slots.len() / 4;
        let hash = piece_table::hash(continuation, piece);
        let mut at = hash as usize & (slots - 1);
        loop {
            let b = &self.slots[at * 4..at * 4 + 4];
            let slot = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            let id = (slot & 0xffff).checked_sub(1)? as usize;
            if slot == piece_table::slot(id, hash)
                && piece_table::key(self.line(id)) == (continuation, piece)
            {
                return Some(id as u32);
            }
            at = (at + 1) & (slots - 1);
        }
    }
}

/// Where pieces are looked up: maps built from a tokenizer file, or a table of the binary.
#[derive(Debug, Clone)]
enum Pieces {
    Maps(Maps),
    /// The table, and maps built from it once a process tokenizes in bulk: the table costs
    /// nothing to start but a lookup in it costs more than in a map, which indexing, with
    /// millions of lookups, would feel.
    Table(PieceTable, Arc<OnceLock<Maps>>),
}

/// Maps from pieces that may start a word, and from pieces that continue one (without
/// their `##`), to their ids.
type Maps = (
    FxHashMap<Cow<'static, str>, u32>,
    FxHashMap<Cow<'static, str>, u32>,
);

impl Pieces {
    fn get(&self, continuation: bool, piece: &str) -> Option<u32> {
        let (starts, continues) = match self {
            Pieces::Maps(maps) => maps,
            Pieces::Table(t, maps) => match maps.get() {
                Some(maps) => maps,
                None => return t.get(continuation, piece),
            },
        };
        let map = if continuation { continues } else { starts };
        map.get(piece).copied()
    }

    /// Builds the maps of a table, if not done yet.
    fn prepare_bulk(&self) {
        if let Pieces::Table(t, maps) = self {
            maps.get_or_init(|| {
                let mut starts = FxHashMap::default();
                let mut continues = FxHashMap::default();
                starts.reserve(t.lines());
                for id in 0..t.lines() {
                    let (continuation, piece) = piece_table::key(t.line(id));
                    let map = if continuation {
                        &mut continues
                    } else {
                        &mut starts
                    };
                    map.insert(Cow::Borrowed(piece), id as u32);
                }
                (starts, continues)
            });
        }
    }

    /// Every key and its id, for comparing two vocabularies however they are stored.
    fn entries(&self) -> std::collections::BTreeMap<(bool, &str), u32> {
        match self {
            Pieces::Maps((starts, continues)) => starts
                .iter()
                .map(|(k, &v)| ((false, k.as_ref()), v))
                .chain(continues.iter().map(|(k, &v)| ((true, k.as_ref()), v)))
                .collect(),
            Pieces::Table(t, _) => (0..t.lines())
                .map(|id| (piece_table::key(t.line(id)), id as u32))
                .filter(|&(key, id)| t.get(key.0, key.1) == Some(id))
                .collect(),
        }
    }
}

impl PartialEq for Pieces {
    fn eq(&self, other: &Pieces) -> bool {
        self.entries() == other.entries()
    }
}

#[derive(Deserialize)]
struct FileJson {
    normalizer: Option<NormalizerJson>,
    pre_tokenizer: Option<TypeOnly>,
    model: ModelJson,
}

#[derive(Deserialize)]
struct TypeOnly {
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct NormalizerJson {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default = "yes")]
    clean_text: bool,
    #[serde(default = "yes")]
    handle_chinese_chars: bool,
    #[serde(default)]
    strip_accents: Option<bool>,
    #[serde(default = "yes")]
    lowercase: bool,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
struct ModelJson {
    #[serde(rename = "type")]
    kind: Option<String>,
    /// Parsed straight into owned pairs: a `serde_json::Value` tree of 30k entries would
    /// cost as much again as the parse itself.
    #[serde(default, deserialize_with = "vocab_map")]
    vocab: Option<Vocab>,
    #[serde(default = "default_unk")]
    unk_token: String,
    #[serde(default = "default_prefix")]
    continuing_subword_prefix: String,
    #[serde(default = "default_max_chars")]
    max_input_chars_per_word: usize,
}

/// The pairs as they come: the pieces are moved into the tokenizer's maps afterwards, so
/// they are hashed and allocated once.
type Vocab = Vec<(String, u64)>;

/// A WordPiece vocabulary (a map of piece to id); any other shape (a Unigram model's list)
/// reads as absent, so that the model type can be reported instead of a parse error.
fn vocab_map<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vocab>, D::Error> {
    struct V;
    impl<'de> serde::de::Visitor<'de> for V {
        type Value = Option<Vocab>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a vocabulary")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut m: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = Vocab::with_capacity(m.size_hint().unwrap_or(0));
            while let Some(pair) = m.next_entry::<String, u64>()? {
                out.push(pair);
            }
            Ok(Some(out))
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut s: A,
        ) -> Result<Self::Value, A::Error> {
            while s.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            Ok(None)
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
    }
    d.deserialize_any(V)
}

fn default_unk() -> String {
    "[UNK]".into()
}
fn default_prefix() -> String {
    "##".into()
}
fn default_max_chars() -> usize {
    100
}

impl WordPiece {
    /// Reads a `tokenizer.json`. Only WordPiece models with a BERT normalizer (or none) and a
    /// BERT or whitespace-and-punctuation pre-tokenizer are accepted; anything else is an error
    /// naming what was found, rather than a tokenizer that silently differs.
    pub fn from_json(bytes: &[u8]) -> Result<WordPiece, TokenizerError> {
        let file: FileJson = serde_json::from_slice(bytes)
            .map_err(|e| TokenizerError(format!("tokenizer.json is not valid: {e}")))?;
        let kind = file.model.kind.as_deref().unwrap_or("WordPiece");
        if kind != "WordPiece" {
            return Err(TokenizerError(format!(
                "tokenizer model '{kind}' is not supported (only WordPiece)"
            )));
        }
        if let Some(p) = &file.pre_tokenizer
            && p.kind != "BertPreTokenizer"
        {
            return Err(TokenizerError(format!(
                "pre-tokenizer '{}' is not supported (only BertPreTokenizer)",
                p.kind
            )));
        }
        let normalizer = match file.normalizer {
            None => None,
            Some(n) if n.kind == "BertNormalizer" => Some(Normalizer {
                clean_text: n.clean_text,
                handle_chinese_chars: n.handle_chinese_chars,
                strip_accents: n.strip_accents.unwrap_or(n.lowercase),
                lowercase: n.lowercase,
            }),
            Some(n) => {
                return Err(TokenizerError(format!(
                    "normalizer '{}' is not supported (only BertNormalizer)",
                    n.kind
                )));
            }
        };
        let vocab = file
            .model
            .vocab
            .ok_or_else(|| TokenizerError("tokenizer.json has no WordPiece vocabulary".into()))?;
        let prefix = file.model.continuing_subword_prefix.as_str();
        let mut starts = FxHashMap::default();
        let mut continues = FxHashMap::default();
        starts.reserve(vocab.len());
        let mut max_id = 0u32;
        for (piece, id) in vocab {
            let id = u32::try_from(id)
                .map_err(|_| TokenizerError(format!("vocabulary id of '{piece}' is invalid")))?;
            max_id = max_id.max(id);
            match piece.strip_prefix(prefix) {
                Some(rest) if !prefix.is_empty() => {
                    continues.insert(Cow::Owned(rest.to_owned()), id);
                }
                _ => {
                    starts.insert(Cow::Owned(piece), id);
                }
            }
        }
        let unk_id = *starts.get(file.model.unk_token.as_str()).ok_or_else(|| {
            TokenizerError(format!(
                "unknown token '{}' is not in the vocabulary",
                file.model.unk_token
            ))
        })?;
        Ok(WordPiece {
            normalizer,
            pieces: Pieces::Maps((starts, continues)),
            unk_id,
            max_chars_per_word: file.model.max_input_chars_per_word,
            vocab_size: max_id as usize + 1,
        })
    }

    /// The tokenizer of an uncased BERT model (BertNormalizer with its defaults, `[UNK]`,
    /// `##` continuations, words of at most 100 characters) whose vocabulary was laid out
    /// at build time: nothing is built, so a process can embed its first query at once.
    pub fn bert_uncased(table: PieceTable) -> Result<WordPiece, TokenizerError> {
        let lines = table.lines();
        let slots = table.slots.len() / 4;
        if lines == 0
            || slots != piece_table::slot_count(lines)
            || !table.slots.len().is_multiple_of(4)
        {
            return Err(TokenizerError(
                "the vocabulary table does not fit its text".into(),
            ));
        }
        let unk_id = table
            .get(false, "[UNK]")
            .ok_or_else(|| TokenizerError("the vocabulary has no [UNK] piece".into()))?;
        Ok(WordPiece {
            normalizer: Some(Normalizer {
                clean_text: true,
                handle_chinese_chars: true,
                strip_accents: true,
                lowercase: true,
            }),
            pieces: Pieces::Table(table, Arc::default()),
            unk_id,
            max_chars_per_word: 100,
            vocab_size: lines,
        })
    }

    /// Readies this tokenizer for many texts (indexing): lookups get faster at a small
    /// one-time cost that a single query is spared.
    pub fn prepare_bulk(&self) {
        self.pieces.prepare_bulk();
    }

    /// One more than the largest id of the vocabulary.
    pub fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    /// The id of the unknown token.
    pub fn unk_id(&self) -> u32 {
        self.unk_id
    }

    /// Appends the ids of `text` (no special tokens) to `out`.
    pub fn tokenize_into(&self, text: &str, out: &mut Vec<u32>) {
        let mut word = String::new();
        for_each_word(self.normalizer, text, &mut word, |w| {
            self.word_pieces(w, out)
        });
    }

    /// The ids of `text` (no special tokens).
    pub fn tokenize(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        self.tokenize_into(text, &mut out);
        out
    }

    /// Greedy longest-match-first split of one pre-token; a word that cannot be split
    /// completely, or is too long, is one unknown token.
    fn word_pieces(&self, word: &str, out: &mut Vec<u32>) {
        if word.chars().count() > self.max_chars_per_word {
            out.push(self.unk_id);
            return;
        }
        let mark = out.len();
        let mut start = 0;
        while start < word.len() {
            let continuation = start > 0;
            let mut end = word.len();
            let mut found = None;
            while end > start {
                if let Some(id) = self.pieces.get(continuation, &word[start..end]) {
                    found = Some(id);
                    break;
                }
                end -= 1;
                while !word.is_char_boundary(end) {
                    end -= 1;
                }
            }
            match found {
                Some(id) => {
                    out.push(id);
                    start = end;
                }
                None => {
                    out.truncate(mark);
                    out.push(self.unk_id);
                    return;
                }
            }
        }
    }
}

/// Normalizes `text` and calls `f` with every pre-token (a run of non-space,
/// non-punctuation characters, or a single punctuation character).
fn for_each_word(
    normalizer: Option<Normalizer>,
    text: &str,
    word: &mut String,
    mut f: impl FnMut(&str),
) {
    word.clear();
    let emit = |word: &mut String, f: &mut dyn FnMut(&str)| {
        if !word.is_empty() {
            f(word);
            word.clear();
        }
    };
    let push = |c: char, word: &mut String, f: &mut dyn FnMut(&str)| {
        if c.is_whitespace() {
            emit(word, f);
        } else if is_punctuation(c) {
            emit(word, f);
            let mut b = [0u8; 4];
            f(c.encode_utf8(&mut b));
        } else {
            word.push(c);
        }
    };
    let Some(n) = normalizer else {
        for c in text.chars() {
            push(c, word, &mut f);
        }
        emit(word, &mut f);
        return;
    };
    let mut buf = String::new();
    for c in text.chars() {
        if c.is_ascii() {
            // ASCII: cleaning drops control bytes and maps \t \n \r to spaces; accents and
            // Chinese characters cannot occur; lower-casing is byte-wise.
            if n.clean_text && c.is_ascii_control() && !matches!(c, '\t' | '\n' | '\r') {
                continue;
            }
            let c = if n.lowercase {
                c.to_ascii_lowercase()
            } else {
                c
            };
            push(c, word, &mut f);
            continue;
        }
        // The reference applies each step to the whole string in turn; every step maps one
        // character to characters independently of its neighbours, so doing all steps per
        // character gives the same result.
        buf.clear();
        if n.clean_text {
            if c == '\u{fffd}' || is_control(c) {
                continue;
            }
            if is_bert_whitespace(c) {
                push(' ', word, &mut f);
                continue;
            }
        }
        if n.handle_chinese_chars && is_chinese_char(c) {
            push(' ', word, &mut f);
            push(c, word, &mut f);
            push(' ', word, &mut f);
            continue;
        }
        if n.strip_accents {
            buf.extend(std::iter::once(c).nfd().filter(|d| !d.is_mark_nonspacing()));
        } else {
            buf.push(c);
        }
        if n.lowercase {
            let lowered: String = buf.chars().flat_map(char::to_lowercase).collect();
            buf = lowered;
        }
        for d in buf.chars() {
            push(d, word, &mut f);
        }
    }
    emit(word, &mut f);
}

/// Whitespace as the BERT normalizer sees it.
fn is_bert_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || c.is_whitespace()
}

/// Control characters the BERT normalizer drops: Cc, Cf and Co, except tab and newlines.
fn is_control(c: char) -> bool {
    !matches!(c, '\t' | '\n' | '\r') && c.is_other()
}

/// What the BERT pre-tokenizer isolates: ASCII punctuation and symbols, and Unicode
/// punctuation.
fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation() || c.is_punctuation()
}

/// The CJK blocks the BERT normalizer pads with spaces.
fn is_chinese_char(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF
        | 0x3400..=0x4DBF
        | 0x20000..=0x2A6DF
        | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F
        | 0x2B920..=0x2CEAF
        | 0xF900..=0xFAFF
        | 0x2F800..=0x2FA1F)
}

/// Splits camelCase identifiers before tokenizing, so `getUserById` is embedded as the
/// words get, user, by, id rather than the word pieces of `getuserbyid`. A space goes
/// between two ASCII characters a, b when a is a lower-case letter or a digit and b an
/// upper-case letter (`getUser`, `utf8Decoder`), or when both are upper case and the
/// character after b is lower case (`HTTPServer`).
pub fn split_camel(text: &str, out: &mut String) {
    out.clear();
    out.reserve(text.len() + text.len() / 8);
    let bytes = text.as_bytes();
    let mut last = 0;
    for i in 1..bytes.len() {
        let (a, b) = (bytes[i - 1], bytes[i]);
        if !b.is_ascii_uppercase() {
            continue;
        }
        let split = a.is_ascii_lowercase()
            || a.is_ascii_digit()
            || (a.is_ascii_uppercase() && bytes.get(i + 1).is_some_and(u8::is_ascii_lowercase));
        if split {
            // `i` is on a char boundary: both neighbours are ASCII.
            out.push_str(&text[last..i]);
            out.push(' ');
            last = i;
        }
    }
    out.push_str(&text[last..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_that_does_not_fit_its_text_is_refused() {
        let text = "[UNK]\nget\n";
        let offsets: Vec<u8> = [0u32, 6, 10].iter().flat_map(|o| o.to_le_bytes()).collect();
        let offsets: &'static [u8] = Box::leak(offsets.into_boxed_slice());
        for slots in [&[][..], &[0u8; 12][..], &[0u8; 17][..]] {
            let table = PieceTable {
                text,
                offsets,
                slots,
            };
            assert!(WordPiece::bert_uncased(table).is_err(), "{slots:?}");
        }
        // Two lines need four slots; without [UNK] in them the vocabulary is refused too.
        let empty = PieceTable {
            text,
            offsets,
            slots: &[0u8; 16],
        };
        assert_eq!(
            WordPiece::bert_uncased(empty).unwrap_err().0,
            "the vocabulary has no [UNK] piece"
        );
    }

    fn tiny() -> WordPiece {
        let json = serde_json::json!({
            "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 12,
                "vocab": {"[UNK]": 0, "get": 1, "user": 2, "##user": 3, "##by": 4, "##id": 5, "(": 6, "cafe": 7, "中": 8, "_": 9, "by": 10, "id": 11}}
        });
        WordPiece::from_json(json.to_string().as_bytes()).unwrap()
    }

    fn check(text: &str, ids: &[u32]) {
        assert_eq!(tiny().tokenize(text), ids, "{text:?}");
    }

    #[test]
    fn pieces_normalization_and_unknowns() {
        check("getUserById(", &[1, 3, 4, 5, 6]);
        check("get_user", &[1, 9, 2]);
        check("  Café\t中 ", &[7, 8]);
        check("getx", &[0]);
        // Longer than max_input_chars_per_word: unknown even though it would split.
        check("getuseruserby", &[0]);
        check("a\u{0}b", &[0]);
        check("", &[]);
    }

    #[test]
    fn camel_split() {
        let mut out = String::new();
        for (input, want) in [
            ("getUserById", "get User By Id"),
            ("parseHTTPHeader2Value", "parse HTTP Header2 Value"),
            ("HTTPServer", "HTTP Server"),
            ("utf8Decoder", "utf8 Decoder"),
            ("snake_case UPPER été", "snake_case UPPER été"),
            ("ÉtéX", "ÉtéX"),
        ] {
            split_camel(input, &mut out);
            assert_eq!(out, want);
        }
    }

    #[test]
    fn unsupported_models_are_named() {
        let err = WordPiece::from_json(br#"{"model":{"type":"Unigram","vocab":[]}}"#).unwrap_err();
        assert!(err.0.contains("'Unigram'"), "{err}");
    }
}
