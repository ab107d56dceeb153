//! C++: detection, grammar and calls (with `new`); its definitions, includes and resolution
//! are C's (`c.rs`), whose definitions it calls.

use super::{CallRules, Callee, Calls, CategoryHints, Kind, Language, Spec, c};

pub(super) const SPEC: Spec = Spec {
    language: Language::Cpp,
    id: "cpp",
    aliases: &["c++", "cxx", "cc", "hpp"],
    extensions: &[
        "cc", "cpp", "cxx", "c++", "hh", "hpp", "hxx", "h++", "ipp", "inl", "tcc", "tpp", "cu",
        "cuh",
    ],
    kind: Kind::Code,
    grammar: Some(|| tree_sitter_cpp::LANGUAGE.into()),
    outline: c::OUTLINE,
    calls: Calls::Rules(&CallRules {
        calls: &[
            ("call_expression", Callee::Field("function")),
            ("new_expression", Callee::Field("type")),
        ],
        ..c::INCLUDES
    }),
    resolution: c::RESOLUTION,
    category: CategoryHints {
        // Protocol buffers' C++ output; its `.pb.h` headers are C++ (and detected as C
        // until their text is read).
        generated_suffixes: &[".pb.cc", ".pb.h"],
        ..CategoryHints::NONE
    },
    ..Spec::DETECTED
};
