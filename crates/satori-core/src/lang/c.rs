//! C: detection (and the `.h` headers written in C++), grammar, definitions (functions,
//! structs, unions, enums, typedefs, macros, constants; C++'s classes, namespaces and
//! out-of-line methods too, since C++ shares these rules), calls and includes.

use tree_sitter::Node;

use super::syntax::{
    Ctx, Def, bare_type, bodiless, collapse, def, field_text, function_or_method, module_level,
    text,
};
use super::{
    CallRules, Callee, Calls, CategoryHints, Kind, Language, Outline, Resolution, Spec, SyntaxRules,
};
use crate::symbol::SymbolKind;

pub(super) const SPEC: Spec = Spec {
    language: Language::C,
    id: "c",
    aliases: &["h"],
    extensions: &["c", "h"],
    refine: Some(refine),
    kind: Kind::Code,
    grammar: Some(|| tree_sitter_c::LANGUAGE.into()),
    outline: OUTLINE,
    calls: Calls::Rules(&CallRules {
        calls: &[("call_expression", Callee::Field("function"))],
        ..INCLUDES
    }),
    resolution: RESOLUTION,
    category: CategoryHints {
        // A header of protocol buffers' C++ output, before its text says it is C++.
        generated_suffixes: &[".pb.h"],
        ..CategoryHints::NONE
    },
    ..Spec::DETECTED
};

/// The definitions of C and C++.
pub(super) const OUTLINE: Outline = Outline::Syntax(SyntaxRules {
    // C++'s `template<...>` before a definition.
    wrappers: &["template_declaration"],
    ..SyntaxRules::new(classify)
});

/// The imports of C and C++.
pub(super) const INCLUDES: CallRules = CallRules {
    imports: &["preproc_include"],
    ..CallRules::NONE
};

/// How calls of C and C++ resolve: a source calls the functions of the header beside it.
pub(super) const RESOLUTION: Resolution = Resolution {
    family: Some(Language::C),
    directory_is_unit: true,
    ..Resolution::PLAIN
};

/// A `.h` header written in C++ is C++. `.h` is shared by both languages, and C++ projects
/// use it for their class declarations; parsed as C, a class is an error node and its
/// members are lost to the outline and to definition search.
fn refine(text: &str) -> Option<Language> {
    looks_like_cpp(text).then_some(Language::Cpp)
}

/// Whether a header's text uses C++: a construct C has no reading for, at the start of a
/// line (a class or namespace, a template, an access label, `using namespace`), or a standard
/// header included without `.h`. `extern "C"` is not evidence: C headers write it for C++
/// callers.
fn looks_like_cpp(text: &str) -> bool {
    const LINE_STARTS: &[&str] = &[
        "namespace ",
        "namespace{",
        "template<",
        "template <",
        "public:",
        "private:",
        "protected:",
        "using namespace ",
    ];
    text.lines().take(2000).any(|line| {
        let line = line.trim_start();
        if LINE_STARTS.iter().any(|s| line.starts_with(s)) {
            return true;
        }
        if let Some(rest) = line.strip_prefix("class ") {
            // `class Name {`, `class Name : public Base`, `class Name;`: C would read
            // `class` as an identifier and never follow it by a name and one of these.
            let rest = rest.trim_start();
            let name_len = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            let after = rest[name_len..].trim_start();
            return name_len > 0
                && (after.is_empty()
                    || after.starts_with(['{', ':', ';'])
                    || after.starts_with("final"));
        }
        if let Some(rest) = line.strip_prefix("#include") {
            let rest = rest.trim_start();
            if let Some(inner) = rest.strip_prefix('<') {
                let name = inner.split('>').next().unwrap_or("");
                return !name.is_empty()
                    && !name.contains('.')
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '/');
            }
        }
        false
    })
}

/// The declarator inside a declarator: its `declarator` field, or the only child of one that
/// has none (a C++ reference declarator, `& name()`).
fn inner_declarator(n: Node) -> Option<Node> {
    n.child_by_field_name("declarator")
        .or_else(|| (n.kind() == "reference_declarator").then(|| n.named_child(0))?)
}

/// The identifier at the bottom of a C declarator (`*buffer_new(void)` -> `buffer_new`).
fn declarator_name(mut n: Node, src: &str) -> Option<String> {
    for _ in 0..16 {
        match n.kind() {
            "identifier"
            | "field_identifier"
            | "type_identifier"
            | "destructor_name"
            | "operator_name"
            | "qualified_identifier" => {
                let t = collapse(text(src, n));
                let last = t.rsplit("::").next().unwrap_or(&t).to_string();
                return (!last.is_empty()).then_some(last);
            }
            _ => n = inner_declarator(n)?,
        }
    }
    None
}

fn classify<'t>(n: Node<'t>, src: &str, ctx: &Ctx) -> Option<Def<'t>> {
    match n.kind() {
        "function_definition" => {
            if let Some(d) = exported_class(n, src) {
                return Some(d);
            }
            let declarator = n.child_by_field_name("declarator")?;
            let name = declarator_name(declarator, src)?;
            if let Some(owner) = qualifier(declarator, src) {
                return Some(out_of_line(n, name, owner, ctx));
            }
            let kind = if function_or_method(ctx, &[SymbolKind::Class, SymbolKind::Struct])
                == SymbolKind::Method
            {
                let class = ctx.parent_name.unwrap_or("");
                if name == class {
                    SymbolKind::Constructor
                } else {
                    SymbolKind::Method
                }
            } else {
                SymbolKind::Function
            };
            Some(def(kind, name, n))
        }
        "struct_specifier" | "union_specifier" | "class_specifier" | "enum_specifier" => {
            // Only definitions (with a body) count, not uses like `struct buffer *b`.
            n.child_by_field_name("body")?;
            let kind = match n.kind() {
                "class_specifier" => SymbolKind::Class,
                "enum_specifier" => SymbolKind::Enum,
                _ => SymbolKind::Struct,
            };
            Some(def(kind, field_text(src, n, "name")?, n))
        }
        "type_definition" => {
            let name = declarator_name(n.child_by_field_name("declarator")?, src)?;
            Some(bodiless(SymbolKind::Type, name, n))
        }
        "namespace_definition" => Some(def(SymbolKind::Namespace, field_text(src, n, "name")?, n)),
        "preproc_def" | "preproc_function_def" if !ctx.in_function && !is_include_guard(n, src) => {
            Some(def(SymbolKind::Macro, field_text(src, n, "name")?, n))
        }
        "declaration" if module_level(ctx) => {
            let mut cursor = n.walk();
            let is_const = n.children(&mut cursor).any(|c| {
                c.kind() == "type_qualifier" && matches!(text(src, c), "const" | "constexpr")
            });
            if !is_const {
                return None;
            }
            let name = declarator_name(n.child_by_field_name("declarator")?, src)?;
            Some(def(SymbolKind::Constant, name, n))
        }
        _ => None,
    }
}

/// Whether `n` is the `#define NAME` of an include guard (`#ifndef NAME` / `#define NAME`):
/// it defines nothing a reader looks for, and as the first definition of a header it would
/// otherwise name the header's chunks.
fn is_include_guard(n: Node, src: &str) -> bool {
    n.kind() == "preproc_def"
        && n.child_by_field_name("value").is_none()
        && n.parent().is_some_and(|p| {
            p.kind() == "preproc_ifdef" && field_text(src, p, "name") == field_text(src, n, "name")
        })
}

/// The qualifier of a function defined outside its class (`long Ledger::post(...)` →
/// `["Ledger"]`, `Ledger::Ledger(...)` → `["Ledger"]`), without template arguments.
fn qualifier(mut n: Node, src: &str) -> Option<Vec<String>> {
    for _ in 0..16 {
        match n.kind() {
            "qualified_identifier" => {
                let t = collapse(text(src, n));
                let mut parts: Vec<String> = t
                    .split("::")
                    .map(bare_type)
                    .filter(|p| !p.is_empty())
                    .collect();
                parts.pop();
                return (!parts.is_empty()).then_some(parts);
            }
            "identifier" | "field_identifier" | "destructor_name" | "operator_name" => {
                return None;
            }
            _ => n = inner_declarator(n)?,
        }
    }
    None
}

/// A C++ function defined outside its class: a method (or a constructor, when named after the
/// class) whose scope is the enclosing one followed by the qualifier, as if written inside the
/// class, so that it has the same scope as the methods written there.
fn out_of_line<'t>(n: Node<'t>, name: String, owner: Vec<String>, ctx: &Ctx) -> Def<'t> {
    let kind = if owner.last() == Some(&name) {
        SymbolKind::Constructor
    } else {
        SymbolKind::Method
    };
    let mut scope = ctx.parent_scope.to_vec();
    scope.extend(ctx.parent_name.map(str::to_string));
    scope.extend(owner);
    let mut d = def(kind, name, n);
    d.scope = Some(scope);
    d
}

/// `class LEVELDB_EXPORT Status { ... };`: with an export macro between the keyword and
/// the name, the grammar reads a class definition as a function named `Status` returning
/// `class LEVELDB_EXPORT`. Libraries put such macros on most of their public types, so the
/// pattern is read back as the class it is: the macro is an all-caps name without a body,
/// the "function" a bare name.
fn exported_class<'t>(n: Node<'t>, src: &str) -> Option<Def<'t>> {
    let ty = n.child_by_field_name("type")?;
    let kind = match ty.kind() {
        "class_specifier" => SymbolKind::Class,
        "struct_specifier" | "union_specifier" => SymbolKind::Struct,
        _ => return None,
    };
    if ty.child_by_field_name("body").is_some() {
        return None;
    }
    let is_macro = |t: &str| {
        t.len() > 1
            && t.chars().any(|c| c.is_ascii_uppercase())
            && t.chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    };
    if !is_macro(field_text(src, ty, "name")?.as_str()) {
        return None;
    }
    let declarator = n.child_by_field_name("declarator")?;
    if declarator.kind() != "identifier" {
        return None;
    }
    Some(def(kind, text(src, declarator).to_string(), n))
}
