//! Every number ranking uses, in one value: fusion weights per query kind, field boosts,
//! term weights, signal bonuses, category multipliers per scope, saturation, caps and
//! candidate counts.
//!
//! [`Weights::default`] is what Satori ships (the benchmark's choices, with the reasons next
//! to each field). A benchmark run overrides some of them without a rebuild: the server
//! reads a JSON object of the fields to change from `SATORI_SEARCH_WEIGHTS` and passes it to
//! [`Weights::with_overrides`]. A new ranking signal adds its weight here, its computation to
//! `rank.rs`, and nothing else.

use serde::Deserialize;

use super::Scope;
use super::category::Category;

/// The weights and thresholds of ranking. Field names are the keys of the JSON override.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Weights {
    // --- Fusion of the two retrievers -------------------------------------------------------
    /// Weight of the normalised BM25 score for an identifier query (an identifier is best
    /// found by its exact spelling, and the definition boost carries it). 0.8 before; 0.6
    /// with the cosine at 0.4 raised the independent suite's symbol queries from 0.906 to
    /// 0.919 (its tuning half) and left the blind suite's tuning packages level.
    pub identifier_lexical: f32,
    /// Weight of the normalised cosine for an identifier query.
    pub identifier_dense: f32,
    /// Weight of the normalised BM25 score for a question (natural language or mixed). A
    /// question weighs its words and its meaning equally since the static model was
    /// fine-tuned on doc comments of eight languages (0.7/0.3 and 0.6/0.4 before).
    pub question_lexical: f32,
    /// Weight of the normalised cosine for a question.
    pub question_dense: f32,
    /// The constant of reciprocal-rank fusion (the `rrf` switch).
    pub rrf_k: f32,
    /// The smallest spread of cosines the min-max normalisation divides by: candidates
    /// whose cosines differ by less stay nearly level on the dense side. Real candidate
    /// pools spread wider: 0.05 and 0.1 change no query of either tuning set; the same type
    /// kept in `v3/` and `v4/` (cosines 0.002 apart) needs it.
    pub dense_spread_min: f32,

    // --- The BM25 query ---------------------------------------------------------------------
    /// Boost of the defined-names field. The names a chunk defines are also part of its body,
    /// so they count twice already: a further boost (2.5 was tried) made questions worse on
    /// the benchmark (hand-written nDCG@10 0.560 → 0.597 at 1.0), and identifier queries are
    /// carried by the definition boost instead.
    pub symbols_field: f32,
    /// Boost of the path field: a match in the path says more than one in the body.
    pub path_field: f32,
    /// Boost of the chunk's text.
    pub content_field: f32,
    /// Term weight of an identifier as written (the strongest evidence there is).
    pub identifier_term: f32,
    /// Term weight of one part of an identifier (`user` in `getUserById`).
    pub identifier_part_term: f32,
    /// Term weight of a plain word's exact form when it has a different stem (the stem,
    /// which matches inflections, weighs [`Weights::word_term`]).
    pub word_exact_term: f32,
    /// Term weight of a plain word (or its stem).
    pub word_term: f32,
    /// Term weight of a code word related to a question word (`put` → `set`).
    pub related_term: f32,
    /// Term weight of two adjacent question words joined into one (`call back` → `callback`).
    pub joined_term: f32,

    // --- Candidate counts -------------------------------------------------------------------
    /// Smallest first candidate pool (10 × the limit, within these bounds).
    pub pool_min: usize,
    /// Largest first candidate pool.
    pub pool_first_max: usize,
    /// Ceiling of the retries that grow the pool (× 4) when filters leave too little.
    pub pool_max: usize,

    // --- Signals ----------------------------------------------------------------------------
    /// Added to the normalised retrieval score (at most 1) of a chunk that defines a queried
    /// identifier, so the definition outranks every chunk that merely mentions it.
    pub definition_exact: f32,
    /// A plain word of an identifier query that is exactly a defined name.
    pub definition_word: f32,
    /// Scaled by the share of an identifier query's parts found among the defined names' parts.
    pub definition_parts: f32,
    /// Share of the exact boost for a name that matches a capitalised identifier of the query
    /// only with its first letter in lower case: `Serialize` asks for the trait, and every
    /// `impl Serialize` defines a method `serialize`; `Channel` asks for the module, not the
    /// `channel` macro. 0.5 before; 0.3 on the independent suite's tuning half.
    pub definition_case_folded: f32,
    /// Added to the exact boost when the query wrote the name with its qualifier and the
    /// definition is in that scope or file (`ExUnit.Test` is `Test` inside `ExUnit`).
    pub definition_qualified: f32,
    /// Share of the definition boost an identifier gets when it appears inside a question:
    /// there, words that happen to be names (`get`, `request`) are noise. 0.3 before the
    /// split below; 0.1 raised the independent suite's tuning half from 0.819 to 0.821 ("v3
    /// compatibility error types and ZodError" is about errors, not one definition), and
    /// cost the blind suite's lookups like "OneOf validator", which the short form keeps.
    pub definition_in_question: f32,
    /// The same share for a short question that names an identifier: a name and a word or
    /// two is a lookup of the name ("Entry struct", "OneOf validator").
    pub definition_in_short_question: f32,
    /// At most this many words make a question short.
    pub short_question_words: usize,
    /// Scaled by the share of a defined name's words that a question mentions (or relates
    /// to): "put the bucket into the cache" describes `set_bucket`. 0.15 before the
    /// independent suite; there a name that shares one or two words with a long question
    /// (`run_task` for "how tasks ... run on a single thread") often beat the file asked
    /// for, and 0.08 with coherence at 0.25 raised its tuning half from 0.800 to 0.803 and
    /// left the blind suite's tuning packages level (0.875); 0 lost (0.795).
    pub name_covered: f32,
    /// Names less covered than this get nothing: one common word in a long name says little.
    pub name_covered_min: f32,
    /// Question words this long are looked for inside names spelled as two words
    /// ("filesystem" in `FileSystem`).
    pub joined_stem_min: usize,
    /// How many of the best candidates the name-coverage boost looks at: the boost is small,
    /// so a chunk further down cannot reach the page through it.
    pub name_cover_candidates: usize,
    /// An identifier query's part is a word of the file's stem.
    pub path_stem: f32,
    /// An identifier query names the file's stem exactly (`UserService` ~ `user_service.ts`).
    pub path_stem_exact: f32,
    /// An identifier query's part names one of the file's directories. Off: at 0.1 a type
    /// named like a directory (`Router` in `router/`) lost to files of that directory that
    /// merely mention it (independent suite's tuning half, symbol queries).
    pub path_dir: f32,
    /// Scaled by the share of a question's words that name the file's stem or its parent
    /// directory ("how are routes matched" ~ `router.go`, `routing/`): a file named for what
    /// is asked is usually where it lives. Prefixes of at least three letters count, so
    /// inflections match. Off until the independent suite (questions the project did not
    /// write): 0.3 there raised semantic questions most ("running blocking code" ~
    /// `blocking.rs`), with coherence and the category multipliers below; 0.4, with the
    /// weaker name coverage, raised its tuning half from 0.803 to 0.807 and left the blind
    /// suite's tuning packages level (0.875); 0.5 did no better. With the words weighed by
    /// rarity ([`Weights::path_words_idf`]) and the file-words boosts, 0.6 did best on both
    /// tuning sets (0.8 lost architecture questions to files named for one common word).
    pub path_words: f32,
    /// Questions with a smaller share of their words in the path get nothing.
    pub path_words_min: f32,
    /// Weigh each question word by how few of the candidates' files it names: a word that
    /// names many (`runtime` in a runtime's tree) tells them apart less than one that names
    /// a few (`blocking`). With it and path words at 0.6, the tuning half went from 0.8151
    /// to 0.8163 and the blind suite's tuning packages from 0.8885 to 0.8909.
    pub path_words_idf: bool,
    /// Added to the best chunk of each file, scaled by the file's share of the candidates'
    /// retrieval score (relative to the best file's): a file where many chunks match is
    /// more likely the place than one lucky chunk elsewhere. This is the file-level evidence
    /// an architecture question needs ("JSON request binding" ~ the file where binding
    /// lives): at 0.05 it rarely moved a file; at 0.2 it lifted architecture questions of the
    /// independent suite from 0.628 to 0.687 and of the blind suite's tuning packages from
    /// 0.738 to 0.784 (with saturation 0.5). 0.3 and 0.4 helped the first and hurt the second;
    /// 0.25 goes with the weaker name-coverage boost (see [`Weights::name_covered`]).
    pub file_coherence: f32,
    /// How many of the best candidates (by retrieval score) count towards a file's share
    /// (0: all of them).
    pub coherence_pool: usize,
    /// A file's sum is divided by its number of chunks to this power: a very long file
    /// collects many weak matches whatever is asked (0: no damping). Off: the long file is
    /// as often the one asked for (sinatra's `base.rb`, fmt's `format.h`); on the tuning half
    /// 0.25 lowered nDCG@10 from 0.815 to 0.812 and 0.5 to 0.805.
    pub coherence_size_damping: f32,
    /// Added to the best chunk of each leading file, scaled by how close the file as a whole
    /// is to the query in the embedding space (the mean cosine of all its chunks, min-max
    /// normalised over the files compared). Coherence counts the chunks retrieval found, so
    /// a long file that touches the subject in many places wins it; this counts every chunk
    /// of the file, so a file that is about the subject wins it, whatever its length. Off:
    /// with the bundled static model it lowered the independent suite's tuning half at every
    /// setting tried (nDCG@10 0.798 → 0.795 at 0.1, 0.793 at 0.2, 0.790 at 0.3; architecture
    /// 0.734 → 0.699 at 0.2; the first chunk or three of a file instead of all, or ten files
    /// instead of forty, did no better). It is kept for a code-trained model.
    pub file_vector: f32,
    /// Added to the best chunk of each leading file, scaled by the share of a question's
    /// words that the names the file defines use (its vocabulary of definitions, in every
    /// chunk of it, found or not). Architecture questions of the independent suite's tuning
    /// half: 0.743 → 0.755 at 0.2 (weighed by rarity); the blind suite's tuning packages
    /// 0.875 → 0.878. 0.3 and more let files with many names win on common words.
    pub file_names: f32,
    /// Files whose names use a smaller share of the question's words get nothing.
    pub file_names_min: f32,
    /// Weigh each question word by how few of the leading files use it.
    pub file_names_idf: bool,
    /// Added to the best chunk of each leading file, scaled by the share of a question's
    /// words that the file's opening documentation (the comments and doc strings of its
    /// first chunks: a module doc, a class's doc comment after the imports) uses. With the
    /// file names at 0.2: the blind suite's tuning packages 0.878 → 0.889 at 0.2, the
    /// independent tuning half 0.814 → 0.815 (0.1 and 0.3 did worse on both).
    pub file_doc: f32,
    /// Files whose documentation uses a smaller share of the question's words get nothing.
    pub file_doc_min: f32,
    /// Added to the best chunk of each leading file, scaled by how many other files of the
    /// codebase call into it or import it (its in-degree in the file graph, see
    /// `graph::Centrality`), on a log scale relative to the most central of the leading
    /// files: the file where a concept lives is often one the rest of the code reaches.
    /// Off: it lifts architecture questions a little and costs semantic ones more, at every
    /// setting tried. Ungated, 0.2 took the independent suite's tuning half from 0.821 to
    /// 0.819 (architecture 0.755 → 0.756, semantic 0.800 → 0.793) and the blind suite's
    /// tuning packages from 0.891 to 0.872 (architecture 0.800 → 0.821, semantic 0.895 →
    /// 0.851); 0.05, 0.1 and 0.3 did no better. Gated (below), the loss shrinks and so does
    /// the gain: at 0.3 with gate 8, 0.821 and 0.879. Answers a question asks for ("how are
    /// errors reported") live in a leaf as often as in a hub.
    pub file_centrality: f32,
    /// The centrality boost is scaled by the file's score so far relative to the best
    /// leading file's, to this power (0: not scaled): centrality is a prior, which should
    /// tell apart files the question already points to, not lift one it does not. 8 lost
    /// least of 1, 2, 4 and 8 on both tuning sets.
    pub file_centrality_gate: f32,
    /// How many of the best candidates' files the file vector, the file words and the file
    /// centrality compare.
    pub file_vector_files: usize,
    /// At most this many chunks of a file count towards its mean cosine (the first ones).
    pub file_vector_chunks: usize,
    /// How many chunks defining an identifier of the query are looked up by name, whether
    /// or not retrieval found them, so a definition whose body shares few words with the
    /// query still competes (0: off).
    pub definition_lookup: usize,
    /// Multiplier of files changed in the working tree (`auto_changed_first`).
    pub changed: f32,
    /// The changed-files boost applies only to working-tree changes of at most this many files.
    pub changed_max_files: usize,
    /// Each further raw chunk of the same file keeps this share of the previous one's weight.
    /// Relevant code often sits in several chunks of one file, but a page of raw results
    /// that shows other files answers more questions: 0.5 beat 0.9 (and 0.7) on both
    /// tuning suites once coherence put the right file's best chunk first (grouped results
    /// cap groups per file instead, and a decay there cost 0.006 nDCG@10).
    pub file_saturation: f32,
    /// The same for grouped results: each further group of a file keeps this share of the
    /// score, so one file does not take the places of others that also answer.
    pub group_file_decay: f32,
    /// A question that names the kind of definition it asks for ("which struct holds ...",
    /// "the function that ...") moves each chunk of that kind to the top of its file when
    /// it scores at least this share of the file's best chunk (negative: off). Files keep
    /// their places, so a page shows the same files; within a file, the definition asked
    /// for comes first. Tuning half, symbol questions, span-level nDCG@10: 0.794 without,
    /// 0.805 at 0.7 and 0.825 at 0.8 (cue among the first four words), 0.809 at 0.9 (cue
    /// anywhere); file level unchanged (0.885).
    pub kind_promote: f32,
    /// How many of a question's first content words may name the kind. Further in, "class"
    /// or "function" is part of what is described rather than what is asked for:
    /// architecture questions lost 0.011 when the whole question counted, 0.010 with six
    /// words, nothing with four.
    pub kind_cue_words: usize,
    /// How much the reranker's order counts in the rank fusion with the engine's (whose
    /// weight is 1); negative: the reranker's own ([`Reranker::weight`](super::rerank::Reranker::weight)).
    pub rerank_weight: f32,

    // --- Category multipliers per scope (a category a scope leaves out has none) -------------
    pub runtime_runtime: f32,
    pub runtime_compat: f32,
    pub runtime_declarations: f32,
    pub runtime_bench: f32,
    pub runtime_examples: f32,
    pub runtime_vendored: f32,
    pub runtime_generated: f32,
    pub mixed_runtime: f32,
    pub mixed_compat: f32,
    pub mixed_bench: f32,
    pub mixed_declarations: f32,
    pub mixed_tests: f32,
    pub mixed_docs: f32,
    pub mixed_examples: f32,
    pub mixed_fixtures: f32,
    pub mixed_vendored: f32,
    pub mixed_generated: f32,
    pub docs_docs: f32,
    pub docs_tests: f32,
    /// Fixtures are the data of the tests, so the docs scope keeps them, below the tests.
    pub docs_fixtures: f32,

    // --- Grouped results --------------------------------------------------------------------
    /// Groups shown per file.
    pub groups_per_file: usize,
    /// Groups per file when the strict cap leaves the page short.
    pub groups_per_file_relaxed: usize,
    /// Groups shown per symbol.
    pub groups_per_symbol: usize,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            identifier_lexical: 0.6,
            identifier_dense: 0.4,
            question_lexical: 0.5,
            question_dense: 0.5,
            rrf_k: 60.0,
            dense_spread_min: 0.1,

            symbols_field: 1.0,
            path_field: 1.5,
            content_field: 1.0,
            identifier_term: 2.0,
            identifier_part_term: 0.6,
            word_exact_term: 0.5,
            word_term: 1.0,
            related_term: 0.35,
            joined_term: 0.5,

            pool_min: 100,
            pool_first_max: 300,
            pool_max: 2000,

            definition_exact: 1.0,
            definition_word: 0.3,
            definition_parts: 0.3,
            definition_case_folded: 0.3,
            definition_qualified: 0.5,
            definition_in_question: 0.1,
            definition_in_short_question: 0.3,
            short_question_words: 3,
            name_covered: 0.08,
            name_covered_min: 0.5,
            joined_stem_min: 6,
            name_cover_candidates: 60,
            path_stem: 0.2,
            path_stem_exact: 0.1,
            path_dir: 0.0,
            path_words: 0.6,
            path_words_min: 0.1,
            path_words_idf: true,
            file_coherence: 0.25,
            coherence_pool: 0,
            coherence_size_damping: 0.0,
            file_vector: 0.0,
            file_names: 0.2,
            file_names_min: 0.3,
            file_names_idf: true,
            file_doc: 0.2,
            file_doc_min: 0.3,
            file_centrality: 0.0,
            file_centrality_gate: 8.0,
            file_vector_files: 40,
            file_vector_chunks: 512,
            definition_lookup: 16,
            changed: 1.1,
            changed_max_files: 50,
            file_saturation: 0.5,
            group_file_decay: 0.9,
            kind_promote: 0.8,
            kind_cue_words: 4,
            rerank_weight: -1.0,

            runtime_runtime: 1.0,
            runtime_compat: 0.7,
            runtime_declarations: 0.7,
            runtime_bench: 0.7,
            runtime_examples: 0.6,
            runtime_vendored: 0.5,
            runtime_generated: 0.4,
            mixed_runtime: 1.0,
            mixed_compat: 0.9,
            mixed_bench: 0.9,
            mixed_declarations: 0.9,
            // A question in mixed scope is answered by code first: tests and prose that
            // mention every word of it came before the code at 0.85 (independent suite,
            // +0.006 nDCG@10 for each of 0.6 and 0.7, +0.013 for both).
            mixed_tests: 0.6,
            mixed_docs: 0.6,
            mixed_examples: 0.85,
            mixed_fixtures: 0.75,
            mixed_vendored: 0.7,
            mixed_generated: 0.6,
            docs_docs: 1.0,
            docs_tests: 0.9,
            docs_fixtures: 0.8,

            groups_per_file: 2,
            groups_per_file_relaxed: 3,
            groups_per_symbol: 1,
        }
    }
}

impl Weights {
    /// The default weights with the fields of a JSON object replaced (`{"rrf_k": 30}`).
    /// Unknown keys, values of the wrong type and unusable values are errors.
    pub fn with_overrides(json: &str) -> Result<Weights, String> {
        let value: serde_json::Value = serde_json::from_str(json).map_err(|e| e.to_string())?;
        // A struct also deserialises from an array (fields by position): only names count.
        if !value.is_object() {
            return Err("not a JSON object".into());
        }
        let w: Weights = serde_json::from_value(value).map_err(|e| e.to_string())?;
        w.check()?;
        Ok(w)
    }

    /// Refuses values that would make ranking meaningless rather than just different.
    fn check(&self) -> Result<(), String> {
        if self.pool_min == 0 || self.pool_min > self.pool_first_max {
            return Err("pool_min must be at least 1 and at most pool_first_max".into());
        }
        if self.pool_first_max > self.pool_max {
            return Err("pool_first_max must be at most pool_max".into());
        }
        if self.groups_per_file == 0 || self.groups_per_symbol == 0 {
            return Err("groups_per_file and groups_per_symbol must be at least 1".into());
        }
        if self.rrf_k < 0.0 {
            return Err("rrf_k must not be negative".into());
        }
        Ok(())
    }

    /// The weight of a category under a scope; `None` when the scope leaves it out.
    pub fn category(&self, scope: Scope, category: Category) -> Option<f32> {
        use Category::*;
        match scope {
            Scope::Runtime => match category {
                Tests | Fixtures | Docs => None,
                Runtime => Some(self.runtime_runtime),
                Compat => Some(self.runtime_compat),
                Declarations => Some(self.runtime_declarations),
                Bench => Some(self.runtime_bench),
                Examples => Some(self.runtime_examples),
                Vendored => Some(self.runtime_vendored),
                Generated => Some(self.runtime_generated),
            },
            Scope::Mixed => Some(match category {
                Runtime => self.mixed_runtime,
                Compat => self.mixed_compat,
                Bench => self.mixed_bench,
                Declarations => self.mixed_declarations,
                Tests => self.mixed_tests,
                Docs => self.mixed_docs,
                Examples => self.mixed_examples,
                Fixtures => self.mixed_fixtures,
                Vendored => self.mixed_vendored,
                Generated => self.mixed_generated,
            }),
            Scope::Docs => match category {
                Docs => Some(self.docs_docs),
                Tests => Some(self.docs_tests),
                Fixtures => Some(self.docs_fixtures),
                _ => None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_multipliers() {
        use Category::*;
        let w = Weights::default();
        assert_eq!(w.category(Scope::Runtime, Tests), None);
        assert_eq!(w.category(Scope::Runtime, Docs), None);
        assert_eq!(w.category(Scope::Runtime, Fixtures), None);
        assert_eq!(w.category(Scope::Runtime, Runtime), Some(1.0));
        assert!(w.category(Scope::Runtime, Generated) < w.category(Scope::Runtime, Examples));
        assert_eq!(w.category(Scope::Docs, Runtime), None);
        assert_eq!(w.category(Scope::Docs, Docs), Some(1.0));
        for c in Category::ALL {
            assert!(
                w.category(Scope::Mixed, c)
                    .is_some_and(|m| m > 0.0 && m <= 1.0)
            );
        }
        let ids: std::collections::HashSet<&str> = Category::ALL.iter().map(|c| c.id()).collect();
        assert_eq!(ids.len(), Category::ALL.len());
    }

    #[test]
    fn overrides() {
        let w = Weights::with_overrides(r#"{"rrf_k": 30, "question_dense": 0.4}"#).unwrap();
        assert_eq!(w.rrf_k, 30.0);
        assert_eq!((w.question_lexical, w.question_dense), (0.5, 0.4));
        assert_eq!(
            Weights {
                rrf_k: 60.0,
                question_dense: 0.5,
                ..w
            },
            Weights::default()
        );
        assert_eq!(Weights::with_overrides("{}").unwrap(), Weights::default());
        let unknown = Weights::with_overrides(r#"{"rrf": 30}"#).unwrap_err();
        assert!(unknown.contains("unknown field `rrf`"), "{unknown}");
        assert!(Weights::with_overrides(r#"{"pool_min": "many"}"#).is_err());
        assert!(Weights::with_overrides(r#"{"pool_min": 0}"#).is_err());
        assert!(Weights::with_overrides("[1]").is_err());
    }
}
