//! Bridging the words of a question and the words of code: a question says "put" where the
//! code says `set`, "configuration" where it says `cfg`, "call back" where it says
//! `callback`. Each question word brings in its related code words as weaker lexical terms.
//!
//! The table is general programming vocabulary (verbs of the usual operations and the usual
//! abbreviations), not tuned to any repository: a related word only ever adds a term
//! weighted well below the words the user typed.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::query::{Analysis, QueryKind, WeightedTerm, is_stop_word};
use super::weights::Weights;
use crate::store::tokenizer::{CodeTokenizer, TokenKind};

/// Only short words are joined: code compounds are short words run together (`filename`,
/// `timeout`, `namespace`), and long ones only add noise.
const JOINED_WORD_MAX: usize = 7;
/// Only this many leading words of a query are expanded.
const MAX_WORDS: usize = 64;
/// At most this many terms are added to a query.
const MAX_ADDED: usize = 16;

/// Groups of words code uses interchangeably. Every word of a group relates to every other.
const GROUPS: &[&[&str]] = &[
    // Operations.
    &["fetch", "retrieve", "obtain"],
    &["set", "put", "assign", "store"],
    &["create", "make", "construct", "instantiate", "build"],
    &["delete", "remove", "erase", "discard", "unlink"],
    &["clear", "reset"],
    &["check", "validate", "verify", "ensure"],
    &["convert", "transform", "coerce", "cast"],
    &["serialize", "encode", "marshal", "dump"],
    &["deserialize", "decode", "unmarshal"],
    &["start", "begin", "launch"],
    &["stop", "halt", "terminate", "shutdown"],
    &["end", "finish", "complete"],
    &["find", "search", "lookup", "locate"],
    &["add", "append", "push", "insert"],
    &["execute", "exec", "invoke"],
    &["compute", "calculate"],
    &["generate", "gen", "emit"],
    &["initialize", "init", "setup"],
    &["compare", "cmp"],
    &["copy", "clone", "duplicate"],
    &["split", "divide"],
    &["join", "concat", "concatenate", "merge"],
    &["escape", "quote"],
    &["wait", "await"],
    &["notify", "signal", "wake"],
    &["print", "write"],
    &["replace", "substitute"],
    &["register", "subscribe"],
    &["retry", "attempt"],
    &["skip", "ignore"],
    &["truncate", "trim", "strip"],
    &["uppercase", "upper"],
    &["lowercase", "lower"],
    // Things and their abbreviations.
    &["error", "err", "exception", "failure"],
    &["configuration", "config", "cfg", "options", "opts"],
    &["message", "msg"],
    &["request", "req"],
    &["response", "resp", "reply"],
    &["argument", "arg"],
    &["parameter", "param"],
    &["context", "ctx"],
    &["buffer", "buf"],
    &["string", "str"],
    &["number", "num"],
    &["index", "idx"],
    &["length", "len"],
    &["character", "char", "chr"],
    &["pointer", "ptr"],
    &["value", "val"],
    &["directory", "dir", "folder"],
    &["temporary", "temp", "tmp"],
    &["attribute", "attr"],
    &["reference", "ref"],
    &["function", "func", "fn", "callable"],
    &["current", "cur", "curr"],
    &["previous", "prev"],
    &["source", "src"],
    &["destination", "dest", "dst"],
    &["environment", "env"],
    &["document", "doc"],
    &["information", "info"],
    &["maximum", "max"],
    &["minimum", "min"],
    &["count", "cnt"],
    &["library", "lib"],
    &["utility", "helper"],
    &["connection", "conn"],
    &["database", "db"],
    &["address", "addr"],
    &["command", "cmd"],
    &["object", "obj"],
    &["expression", "expr"],
    &["statement", "stmt"],
    &["sequence", "seq"],
    &["position", "pos"],
    &["column", "col"],
    &["variable", "var"],
    &["specification", "spec"],
    &["description", "desc"],
    &["authentication", "auth", "login", "credentials"],
    &["authorization", "permission"],
    &["certificate", "cert"],
    &["identifier", "id"],
    &["template", "tmpl", "tpl"],
    &["manager", "mgr"],
    &["callback", "handler", "hook", "listener"],
    &["equal", "eq"],
    &["boolean", "bool"],
    &["integer", "int"],
    &["dictionary", "dict", "mapping"],
    &["size", "capacity"],
    &["timeout", "deadline"],
    &["cache", "memoize", "memo"],
    &["regular", "regex", "regexp"],
    &["thread", "worker"],
    &["asynchronous", "async"],
    &["synchronous", "sync"],
    &["millisecond", "ms", "millis"],
    &["second", "sec"],
    &["memory", "mem"],
    &["statistics", "stats"],
    &["application", "app"],
    &["header", "hdr"],
    &["directive", "pragma"],
    &["children", "child"],
    &["parent", "ancestor"],
    &["whitespace", "space", "blank"],
    &["newline", "linebreak"],
];

/// Stem → the stems related to it, built once from [`GROUPS`] with the index's own stemmer,
/// so that inflected question words ("retries", "validated") find their group.
fn related_index() -> &'static HashMap<String, Vec<String>> {
    static INDEX: OnceLock<HashMap<String, Vec<String>>> = OnceLock::new();
    INDEX.get_or_init(|| {
        let mut tokenizer = CodeTokenizer::default();
        let mut index: HashMap<String, Vec<String>> = HashMap::new();
        for group in GROUPS {
            let stems: Vec<String> = group.iter().map(|w| stem(w, &mut tokenizer)).collect();
            for s in &stems {
                let entry = index.entry(s.clone()).or_default();
                for other in &stems {
                    if other != s && !entry.contains(other) {
                        entry.push(other.clone());
                    }
                }
            }
        }
        index
    })
}

/// The term a plain word is indexed under: its stem when it has one, else the word.
fn stem(word: &str, tokenizer: &mut CodeTokenizer) -> String {
    let tokens = tokenizer.analyze(word);
    tokens
        .iter()
        .find(|t| t.kind == TokenKind::Part)
        .or_else(|| tokens.first())
        .map(|t| t.text.clone())
        .unwrap_or_default()
}

/// Adds the related and joined terms of a question's plain words to `analysis` (weighted
/// [`Weights::related_term`] and [`Weights::joined_term`]); returns the stems added.
/// Identifier queries are left alone: their spelling is the point.
pub fn expand(
    analysis: &mut Analysis,
    text: &str,
    tokenizer: &mut CodeTokenizer,
    weights: &Weights,
) -> Vec<String> {
    if matches!(analysis.kind, QueryKind::Identifier | QueryKind::Empty) {
        return Vec::new();
    }
    let index = related_index();
    // The plain words of the question in order; `None` marks a break (a stop word, an
    // identifier, punctuation) that adjacent words must not be joined across.
    let mut words: Vec<Option<String>> = Vec::new();
    // A question is short; a pasted snippet is not a question, and its first words say
    // enough.
    for raw in text.split_whitespace().take(MAX_WORDS) {
        let trimmed = raw.trim_matches(|c: char| !c.is_alphanumeric());
        let plain = !trimmed.is_empty()
            && trimmed.chars().all(|c| c.is_ascii_lowercase())
            && !is_stop_word(trimmed);
        words.push(plain.then(|| trimmed.to_string()));
        if trimmed.len() < raw.len() && raw.ends_with([',', '.', ';', ':', '?', '!', ')']) {
            words.push(None);
        }
    }
    let mut added: Vec<(String, f32)> = Vec::new();
    let mut add = |term: String, weight: f32, analysis: &Analysis| {
        if term.len() >= 2
            && !analysis.terms.iter().any(|t| t.text == term)
            && !added.iter().any(|(t, _)| *t == term)
        {
            added.push((term, weight));
        }
    };
    for word in words.iter().flatten() {
        if let Some(related) = index.get(&stem(word, tokenizer)) {
            for r in related {
                add(r.clone(), weights.related_term, analysis);
            }
        }
    }
    for pair in words.windows(2) {
        if let [Some(a), Some(b)] = pair
            && a.len() <= JOINED_WORD_MAX
            && b.len() <= JOINED_WORD_MAX
        {
            add(
                stem(&format!("{a}{b}"), tokenizer),
                weights.joined_term,
                analysis,
            );
        }
    }
    // Joined words first (they are rarer and weigh more), then in order of appearance.
    added.sort_by(|a, b| b.1.total_cmp(&a.1));
    added.truncate(MAX_ADDED);
    let stems = added.iter().map(|(t, _)| t.clone()).collect();
    analysis.terms.extend(
        added
            .into_iter()
            .map(|(text, weight)| WeightedTerm { text, weight }),
    );
    stems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::query::analyze;

    /// Expands `text` and compares the added terms, rendered `term:weight`.
    #[track_caller]
    fn check(text: &str, expected: &[&str]) {
        let mut tokenizer = CodeTokenizer::default();
        let weights = Weights::default();
        let mut analysis = analyze(text, &mut tokenizer, &weights);
        let before = analysis.terms.len();
        let added = expand(&mut analysis, text, &mut tokenizer, &weights);
        let got: Vec<String> = analysis.terms[before..]
            .iter()
            .map(|t| format!("{}:{}", t.text, t.weight))
            .collect();
        assert_eq!(got, expected, "expansion of {text:?}");
        assert_eq!(added.len(), got.len());
    }

    #[test]
    fn related_and_joined_terms() {
        // An inflected word finds its group through the stemmer.
        check(
            "put the bucket into the cache",
            &[
                "set:0.35",
                "assign:0.35",
                "store:0.35",
                "memoiz:0.35",
                "memo:0.35",
            ],
        );
        check(
            "where is the configuration validated",
            &[
                "config:0.35",
                "cfg:0.35",
                "option:0.35",
                "opt:0.35",
                "check:0.35",
                "verifi:0.35",
                "ensur:0.35",
            ],
        );
        // Adjacent words are joined; a stop word or punctuation between them is a break.
        check("register a call back", &["callback:0.5", "subscrib:0.35"]);
        check("call, back", &[]);
        check("file name of the log", &["filenam:0.5"]);
        // Words the question already has are not added twice.
        check(
            "delete or remove",
            &["eras:0.35", "discard:0.35", "unlink:0.35"],
        );
    }

    #[test]
    fn only_the_leading_words_are_expanded() {
        let long = format!("{} put the bucket", "zebra ".repeat(MAX_WORDS));
        check(&long, &["zebrazebra:0.5"]);
    }

    #[test]
    fn identifiers_are_not_expanded() {
        check("getUserById", &[]);
        check("delete_user", &[]);
        check("", &[]);
    }

    #[test]
    fn every_group_word_finds_its_group() {
        // Words of one group must not share a stem (they would relate to nothing), and a
        // stem must not sit in two groups (it would merge them).
        let mut tokenizer = CodeTokenizer::default();
        let mut owner: HashMap<String, usize> = HashMap::new();
        let mut bad = Vec::new();
        for (g, group) in GROUPS.iter().enumerate() {
            let mut stems: Vec<String> = Vec::new();
            for word in *group {
                let s = stem(word, &mut tokenizer);
                if stems.contains(&s) || owner.get(&s).is_some_and(|&o| o != g) {
                    bad.push(format!("{word} ({s})"));
                }
                owner.insert(s.clone(), g);
                stems.push(s);
            }
        }
        assert!(bad.is_empty(), "ambiguous words: {bad:?}");
    }
}
