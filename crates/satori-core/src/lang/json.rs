//! JSON: detection only (no grammar: its files are chunked by size).

use super::{Kind, Language, Spec};

pub(super) const SPEC: Spec = Spec {
    language: Language::Json,
    id: "json",
    extensions: &["json", "jsonc"],
    kind: Kind::Data,
    ..Spec::DETECTED
};
