//! SQL: detection only (no grammar: its files are chunked by size).

use super::{Kind, Language, Spec};

pub(super) const SPEC: Spec = Spec {
    language: Language::Sql,
    id: "sql",
    extensions: &["sql"],
    kind: Kind::Code,
    ..Spec::DETECTED
};
