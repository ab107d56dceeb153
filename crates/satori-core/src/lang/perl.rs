//! Perl: detection (`.t` test scripts, `.pod` documentation), its outline read from lines
//! (no grammar), its test scripts and POD sections as categories.

use super::{Calls, CategoryHints, Kind, Language, LineReader, Outline, Spec};

pub(super) const SPEC: Spec = Spec {
    language: Language::Perl,
    id: "perl",
    aliases: &["pl"],
    // `.t` is Perl's test script, `.psgi` a PSGI application, `.pod` documentation.
    extensions: &["pl", "pm", "t", "psgi", "pod"],
    interpreters: &["perl"],
    kind: Kind::Code,
    // No Perl grammar builds against this tree-sitter; its outline is read from its lines
    // (`chunk/perl.rs`): packages, subs and POD sections.
    grammar: None,
    outline: Outline::Lines {
        reader: LineReader::Perl,
        definitions: true,
    },
    calls: Calls::None("no grammar builds against this tree-sitter: its calls are not parsed"),
    category: CategoryHints {
        // Test scripts are `.t` files, by convention under `t/`.
        test_suffixes: &[".t"],
        // Its POD sections are its documentation.
        sections_are_docs: true,
        ..CategoryHints::NONE
    },
    ..Spec::DETECTED
};
