//! Plain text, and whatever Satori detects no other language for: detection (a few
//! well-known file names), the language a script's shebang names, and which of its files
//! are prose.

use super::{CategoryHints, Kind, Language, Spec};

pub(super) const SPEC: Spec = Spec {
    language: Language::Text,
    id: "text",
    aliases: &["txt"],
    extensions: &["txt"],
    file_names: &["Makefile", "Dockerfile", "Jenkinsfile"],
    // Scripts often have no extension: their first line names their language.
    refine: Some(|text| Language::from_shebang(text.lines().next().unwrap_or(""))),
    kind: Kind::Prose,
    category: CategoryHints {
        is_prose: Some(is_prose),
        ..CategoryHints::NONE
    },
    ..Spec::DETECTED
};

/// A file detected as plain text only because Satori has no grammar for it (an OCaml
/// module, a Perl script, a `.proto` schema, a script without an extension) is code, and
/// must be found in the runtime scope like any other. Only `.txt` files are prose, and files
/// named like `AUTHORS` or `NEWS`.
fn is_prose(lower_name: &str) -> bool {
    const PROSE_NAMES: &[&str] = &[
        "authors",
        "changes",
        "copying",
        "credits",
        "history",
        "maintainers",
        "news",
        "notice",
        "thanks",
        "todo",
    ];
    let stem = lower_name.split('.').next().unwrap_or(lower_name);
    lower_name.ends_with(".txt") || PROSE_NAMES.contains(&stem)
}
