//! HTML (and Vue and Svelte components): detection only (no grammar: its files are chunked by size).

use super::{Kind, Language, Spec};

pub(super) const SPEC: Spec = Spec {
    language: Language::Html,
    id: "html",
    extensions: &["html", "htm", "vue", "svelte"],
    kind: Kind::Data,
    ..Spec::DETECTED
};
