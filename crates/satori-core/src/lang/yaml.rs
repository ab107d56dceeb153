//! YAML: detection only (no grammar: its files are chunked by size).

use super::{Kind, Language, Spec};

pub(super) const SPEC: Spec = Spec {
    language: Language::Yaml,
    id: "yaml",
    aliases: &["yml"],
    extensions: &["yaml", "yml"],
    kind: Kind::Data,
    ..Spec::DETECTED
};
