//! TOML: detection only (no grammar: its files are chunked by size).

use super::{Kind, Language, Spec};

pub(super) const SPEC: Spec = Spec {
    language: Language::Toml,
    id: "toml",
    extensions: &["toml"],
    kind: Kind::Data,
    ..Spec::DETECTED
};
