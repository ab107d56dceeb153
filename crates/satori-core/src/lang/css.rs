//! CSS (and Sass, Less): detection (no grammar: its files are chunked by size), and its
//! minified files as generated.

use super::{CategoryHints, Kind, Language, Spec};

pub(super) const SPEC: Spec = Spec {
    language: Language::Css,
    id: "css",
    aliases: &["scss", "less"],
    extensions: &["css", "scss", "sass", "less"],
    kind: Kind::Data,
    category: CategoryHints {
        generated_suffixes: &[".min.css"],
        ..CategoryHints::NONE
    },
    ..Spec::DETECTED
};
