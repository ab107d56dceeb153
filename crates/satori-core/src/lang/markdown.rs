//! Markdown (and reStructuredText, AsciiDoc): detection, and its outline of headings read
//! from lines (`chunk/markdown.rs`).

use super::{Kind, Language, LineReader, Outline, Spec};

pub(super) const SPEC: Spec = Spec {
    language: Language::Markdown,
    id: "markdown",
    aliases: &["md"],
    extensions: &["md", "markdown", "mdx", "rst", "adoc"],
    kind: Kind::Prose,
    // Headings are sections, not definitions a caller looks up.
    outline: Outline::Lines {
        reader: LineReader::Markdown,
        definitions: false,
    },
    ..Spec::DETECTED
};
