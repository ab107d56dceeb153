//! CSS (and Sass, Less): detection only (no grammar: its files are chunked by size).

use super::{Kind, Language, Spec};

pub(super) const SPEC: Spec = Spec {
    language: Language::Css,
    id: "css",
    aliases: &["scss", "less"],
    extensions: &["css", "scss", "sass", "less"],
    kind: Kind::Data,
    ..Spec::DETECTED
};
