//! Per-language knowledge of syntax trees: which nodes are definitions, what kind they are,
//! where their name and body are, and how to print a one-line label for them.

use tree_sitter::Node;

use super::SymbolKind;
use crate::lang::Language;

/// Labels longer than this are cut (with `...`).
const MAX_LABEL_CHARS: usize = 120;

/// Where a node sits, as far as classification cares.
pub(crate) struct Ctx<'a> {
    /// Kind of the innermost enclosing definition.
    pub parent: Option<SymbolKind>,
    pub parent_name: Option<&'a str>,
    /// Scope of the innermost enclosing definition (its own, without its name).
    pub parent_scope: &'a [String],
    /// Inside a function body: local constants are not outline symbols.
    pub in_function: bool,
}

/// A definition recognised in a syntax tree.
pub(crate) struct Def<'t> {
    pub kind: SymbolKind,
    pub name: String,
    /// The node the label starts at (the whole declaration, e.g. `const x = ...` for `x`).
    pub decl: Node<'t>,
    /// The body; the label stops where it starts.
    pub body: Option<Node<'t>>,
    /// Scope given by the syntax rather than by nesting (a Go method's receiver type).
    pub scope: Option<Vec<String>>,
    /// The last node of a definition written as several sibling clauses (Haskell equations,
    /// Elixir function heads), when it is not `decl`.
    pub last: Option<Node<'t>>,
}

fn text<'s>(src: &'s str, n: Node) -> &'s str {
    src.get(n.byte_range()).unwrap_or("")
}

fn field_text(src: &str, n: Node, field: &str) -> Option<String> {
    let t = collapse(text(src, n.child_by_field_name(field)?));
    (!t.is_empty()).then_some(t)
}

fn def<'t>(kind: SymbolKind, name: String, decl: Node<'t>) -> Def<'t> {
    Def {
        kind,
        name,
        decl,
        body: decl.child_by_field_name("body"),
        scope: None,
        last: None,
    }
}

/// For a definition written as clauses (`f [] = ...` then `f (x:xs) = ...`): `None` when `n`
/// continues the definition of an earlier sibling (`same_def` tells whether a sibling
/// defines the same name), else the last sibling clause of the run `n` starts. Siblings of
/// the kinds in `between` (comments, documentation) may sit between clauses.
fn clauses<'t>(
    n: Node<'t>,
    between: &[&str],
    same_def: &dyn Fn(Node<'t>) -> bool,
) -> Option<Node<'t>> {
    let step = |from: Node<'t>, back: bool| {
        let mut cur = if back {
            from.prev_named_sibling()
        } else {
            from.next_named_sibling()
        };
        while let Some(c) = cur.filter(|c| between.contains(&c.kind())) {
            cur = if back {
                c.prev_named_sibling()
            } else {
                c.next_named_sibling()
            };
        }
        cur.filter(|c| same_def(*c))
    };
    if step(n, true).is_some() {
        return None;
    }
    let mut last = n;
    while let Some(next) = step(last, false) {
        last = next;
    }
    Some(last)
}

/// `decl` is a spec inside a declaration (`const a = 1`, `type T struct{}`): when it is the
/// only one, the label and span start at the declaration keyword.
fn single_spec_parent(n: Node) -> Node {
    match n.parent() {
        Some(p) if p.named_child_count() == 1 => p,
        _ => n,
    }
}

/// Top-level or namespace-level: where constants are outline symbols.
fn module_level(ctx: &Ctx) -> bool {
    !ctx.in_function
        && matches!(
            ctx.parent,
            None | Some(SymbolKind::Module | SymbolKind::Namespace)
        )
}

/// A function directly inside one of `scopes` is a method.
fn function_or_method(ctx: &Ctx, scopes: &[SymbolKind]) -> SymbolKind {
    if ctx.parent.is_some_and(|p| scopes.contains(&p)) {
        SymbolKind::Method
    } else {
        SymbolKind::Function
    }
}

/// Recognises a definition node of `lang`.
pub(crate) fn classify<'t>(lang: Language, n: Node<'t>, src: &str, ctx: &Ctx) -> Option<Def<'t>> {
    match lang {
        Language::TypeScript | Language::Tsx | Language::JavaScript => classify_js(n, src, ctx),
        Language::Python => classify_python(n, src, ctx),
        Language::Rust => classify_rust(n, src, ctx),
        Language::Go => classify_go(n, src, ctx),
        Language::Java => classify_java(n, src),
        Language::C | Language::Cpp => classify_c(n, src, ctx),
        Language::CSharp => classify_csharp(n, src),
        Language::Ruby => classify_ruby(n, src, ctx),
        Language::Php => classify_php(n, src, ctx),
        Language::Kotlin => classify_kotlin(n, src, ctx),
        Language::Scala => classify_scala(n, src, ctx),
        Language::Swift => classify_swift(n, src, ctx),
        Language::Elixir => classify_elixir(n, src),
        Language::Haskell => classify_haskell(n, src, ctx),
        Language::Lua => classify_lua(n, src, ctx),
        Language::Zig => classify_zig(n, src, ctx),
        Language::Shell => classify_shell(n, src),
        _ => None,
    }
}

fn is_js_function(kind: &str) -> bool {
    matches!(
        kind,
        "arrow_function" | "function_expression" | "function" | "generator_function"
    )
}

fn classify_js<'t>(n: Node<'t>, src: &str, ctx: &Ctx) -> Option<Def<'t>> {
    let name = || field_text(src, n, "name");
    let kind = match n.kind() {
        // Overload signatures and `declare function` in declaration files count too.
        "function_declaration" | "generator_function_declaration" | "function_signature" => {
            SymbolKind::Function
        }
        "class_declaration" | "abstract_class_declaration" => SymbolKind::Class,
        "interface_declaration" => SymbolKind::Interface,
        "enum_declaration" => SymbolKind::Enum,
        "type_alias_declaration" => SymbolKind::Type,
        "internal_module" => SymbolKind::Namespace,
        "module" => SymbolKind::Module,
        "method_definition" => {
            let name = name()?;
            let kind = if name == "constructor" {
                SymbolKind::Constructor
            } else {
                SymbolKind::Method
            };
            return Some(def(kind, name, n));
        }
        "public_field_definition" | "field_definition" => {
            // Class fields holding functions (`onClick = () => {...}`) act as methods.
            let value = n.child_by_field_name("value")?;
            if !is_js_function(value.kind()) {
                return None;
            }
            let name = field_text(src, n, "name").or_else(|| field_text(src, n, "property"))?;
            let mut d = def(SymbolKind::Method, name, n);
            d.body = value.child_by_field_name("body");
            return Some(d);
        }
        "variable_declarator" => return classify_js_variable(n, src, ctx),
        "assignment_expression" => return classify_js_assignment(n, src),
        "pair" => {
            // `{ handle: function () {...} }`: an object literal's function-valued key.
            let value = n.child_by_field_name("value")?;
            if !is_js_function(value.kind()) {
                return None;
            }
            let key = n.child_by_field_name("key")?;
            let name = text(src, key)
                .trim_matches(|c| c == '"' || c == '\'')
                .to_string();
            if name.is_empty() || key.kind() == "computed_property_name" {
                return None;
            }
            let mut d = def(SymbolKind::Method, name, n);
            d.body = value.child_by_field_name("body");
            return Some(d);
        }
        _ => return None,
    };
    let name = name()?;
    let name = name.trim_matches(|c| c == '"' || c == '\'').to_string();
    Some(def(kind, name, n))
}

fn classify_js_variable<'t>(n: Node<'t>, src: &str, ctx: &Ctx) -> Option<Def<'t>> {
    let name_node = n.child_by_field_name("name")?;
    if name_node.kind() != "identifier" {
        return None;
    }
    let name = text(src, name_node).to_string();
    let decl = single_spec_parent(n);
    let value = n.child_by_field_name("value");
    if let Some(v) = value.filter(|v| is_js_function(v.kind())) {
        return Some(Def {
            kind: SymbolKind::Function,
            name,
            decl,
            body: v.child_by_field_name("body"),
            scope: None,
            last: None,
        });
    }
    let is_const = n
        .parent()
        .and_then(|p| p.child(0))
        .is_some_and(|k| k.kind() == "const");
    if !is_const || !module_level(ctx) {
        return None;
    }
    // `const fs = require("fs")` is an import, not a constant worth listing.
    if let Some(v) = value
        && v.kind() == "call_expression"
        && v.child_by_field_name("function")
            .is_some_and(|f| text(src, f) == "require")
    {
        return None;
    }
    Some(Def {
        kind: SymbolKind::Constant,
        name,
        decl,
        body: None,
        scope: None,
        last: None,
    })
}

/// `Foo.prototype.bar = function () {...}`, `exports.bar = () => {...}`, `Foo.bar = ...`:
/// the pre-class way of defining methods and exports, still common in JavaScript.
fn classify_js_assignment<'t>(n: Node<'t>, src: &str) -> Option<Def<'t>> {
    let value = n.child_by_field_name("right")?;
    if !is_js_function(value.kind()) {
        return None;
    }
    let left = n.child_by_field_name("left")?;
    if left.kind() != "member_expression" {
        return None;
    }
    let property = left.child_by_field_name("property")?;
    if property.kind() != "property_identifier" {
        return None;
    }
    let name = text(src, property).to_string();
    let object = collapse(text(src, left.child_by_field_name("object")?));
    let owner = object.strip_suffix(".prototype").unwrap_or(&object);
    // Exports and `this.x = ...` have no owner worth naming; `Foo.bar` and
    // `Foo.prototype.bar` belong to `Foo`.
    let is_owner = !owner.is_empty()
        && !matches!(owner, "exports" | "module.exports" | "this" | "module")
        && owner
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '$' | '.'));
    let decl = n
        .parent()
        .filter(|p| p.kind() == "expression_statement")
        .unwrap_or(n);
    Some(Def {
        kind: if is_owner {
            SymbolKind::Method
        } else {
            SymbolKind::Function
        },
        name,
        decl,
        body: value.child_by_field_name("body"),
        scope: is_owner.then(|| owner.split('.').map(str::to_string).collect()),
        last: None,
    })
}

fn classify_python<'t>(n: Node<'t>, src: &str, ctx: &Ctx) -> Option<Def<'t>> {
    match n.kind() {
        "function_definition" => {
            let name = field_text(src, n, "name")?;
            let kind = match ctx.parent {
                Some(SymbolKind::Class) if name == "__init__" => SymbolKind::Constructor,
                Some(SymbolKind::Class) => SymbolKind::Method,
                _ => SymbolKind::Function,
            };
            Some(def(kind, name, n))
        }
        "class_definition" => Some(def(SymbolKind::Class, field_text(src, n, "name")?, n)),
        "assignment" if module_level(ctx) => {
            // Module-level UPPER_CASE names are constants by convention.
            let left = n.child_by_field_name("left")?;
            let name = text(src, left);
            let is_constant = left.kind() == "identifier"
                && name.chars().any(|c| c.is_ascii_uppercase())
                && !name.chars().any(|c| c.is_lowercase());
            let stmt = n.parent().filter(|p| p.kind() == "expression_statement")?;
            is_constant.then(|| Def {
                kind: SymbolKind::Constant,
                name: name.to_string(),
                decl: stmt,
                body: None,
                scope: None,
                last: None,
            })
        }
        _ => None,
    }
}

/// A type's name without generic arguments (`Foo<T>` -> `Foo`).
fn bare_type(t: &str) -> String {
    collapse(t.split('<').next().unwrap_or(t))
}

fn classify_rust<'t>(n: Node<'t>, src: &str, ctx: &Ctx) -> Option<Def<'t>> {
    let kind = match n.kind() {
        "function_item" => function_or_method(ctx, &[SymbolKind::Impl, SymbolKind::Trait]),
        "function_signature_item" => SymbolKind::Method,
        "struct_item" | "union_item" => SymbolKind::Struct,
        "enum_item" => SymbolKind::Enum,
        "trait_item" => SymbolKind::Trait,
        "mod_item" => SymbolKind::Module,
        "type_item" => SymbolKind::Type,
        "macro_definition" => SymbolKind::Macro,
        "const_item" if !ctx.in_function => SymbolKind::Constant,
        "static_item" if !ctx.in_function => SymbolKind::Variable,
        "impl_item" => {
            let ty = bare_type(text(src, n.child_by_field_name("type")?));
            // Trait impls are named `Trait for Type` so that the methods of `impl Display for
            // Foo` and `impl Debug for Foo` get distinct scopes (and ids).
            let name = match n.child_by_field_name("trait") {
                Some(t) => format!("{} for {ty}", bare_type(text(src, t))),
                None => ty,
            };
            return Some(def(SymbolKind::Impl, name, n));
        }
        _ => return None,
    };
    Some(def(kind, field_text(src, n, "name")?, n))
}

fn classify_go<'t>(n: Node<'t>, src: &str, ctx: &Ctx) -> Option<Def<'t>> {
    match n.kind() {
        "function_declaration" => Some(def(SymbolKind::Function, field_text(src, n, "name")?, n)),
        "method_declaration" => {
            let mut d = def(SymbolKind::Method, field_text(src, n, "name")?, n);
            // Go methods are written at top level; their receiver type is their scope.
            d.scope = go_receiver(n, src).map(|r| vec![r]);
            Some(d)
        }
        "type_spec" | "type_alias" => {
            let kind = match n.child_by_field_name("type").map(|t| t.kind()) {
                Some("struct_type") if n.kind() == "type_spec" => SymbolKind::Struct,
                Some("interface_type") if n.kind() == "type_spec" => SymbolKind::Interface,
                _ => SymbolKind::Type,
            };
            let mut d = def(kind, field_text(src, n, "name")?, single_spec_parent(n));
            d.body = None;
            Some(d)
        }
        "const_spec" | "var_spec" if !ctx.in_function => {
            let kind = if n.kind() == "const_spec" {
                SymbolKind::Constant
            } else {
                SymbolKind::Variable
            };
            let name = text(src, n.child_by_field_name("name")?).to_string();
            Some(Def {
                kind,
                name,
                decl: single_spec_parent(n),
                body: None,
                scope: None,
                last: None,
            })
        }
        _ => None,
    }
}

/// The receiver type of a Go method (`func (p *Pool) ...` -> `Pool`).
fn go_receiver(n: Node, src: &str) -> Option<String> {
    let params = n.child_by_field_name("receiver")?;
    let param = params.named_child(0)?;
    let ty = text(src, param.child_by_field_name("type")?);
    let ty = bare_type(ty.trim_start_matches('*'));
    let ty = ty.split('[').next().unwrap_or(&ty).trim().to_string();
    (!ty.is_empty()).then_some(ty)
}

fn classify_java<'t>(n: Node<'t>, src: &str) -> Option<Def<'t>> {
    let kind = match n.kind() {
        "class_declaration" | "record_declaration" => SymbolKind::Class,
        "interface_declaration" | "annotation_type_declaration" => SymbolKind::Interface,
        "enum_declaration" => SymbolKind::Enum,
        "method_declaration" => SymbolKind::Method,
        "constructor_declaration" | "compact_constructor_declaration" => SymbolKind::Constructor,
        "field_declaration" => {
            // `static final` fields are Java's constants.
            let mut cursor = n.walk();
            let mods = n
                .children(&mut cursor)
                .find(|c| c.kind() == "modifiers")
                .map(|m| text(src, m))
                .unwrap_or("");
            let words: Vec<&str> = mods.split_whitespace().collect();
            if !(words.contains(&"static") && words.contains(&"final")) {
                return None;
            }
            let name = field_text(src, n.child_by_field_name("declarator")?, "name")?;
            return Some(def(SymbolKind::Constant, name, n));
        }
        _ => return None,
    };
    Some(def(kind, field_text(src, n, "name")?, n))
}

/// The declarator inside a declarator: its `declarator` field, or the only child of one that
/// has none (a C++ reference declarator, `& name()`).
fn inner_declarator(n: Node) -> Option<Node> {
    n.child_by_field_name("declarator")
        .or_else(|| (n.kind() == "reference_declarator").then(|| n.named_child(0))?)
}

/// The identifier at the bottom of a C declarator (`*buffer_new(void)` -> `buffer_new`).
fn c_declarator_name(mut n: Node, src: &str) -> Option<String> {
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

fn classify_c<'t>(n: Node<'t>, src: &str, ctx: &Ctx) -> Option<Def<'t>> {
    match n.kind() {
        "function_definition" => {
            if let Some(d) = exported_class(n, src) {
                return Some(d);
            }
            let declarator = n.child_by_field_name("declarator")?;
            let name = c_declarator_name(declarator, src)?;
            if let Some(owner) = c_qualifier(declarator, src) {
                return Some(c_out_of_line(n, name, owner, ctx));
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
            let name = c_declarator_name(n.child_by_field_name("declarator")?, src)?;
            let mut d = def(SymbolKind::Type, name, n);
            d.body = None;
            Some(d)
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
            let name = c_declarator_name(n.child_by_field_name("declarator")?, src)?;
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
fn c_qualifier(mut n: Node, src: &str) -> Option<Vec<String>> {
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
fn c_out_of_line<'t>(n: Node<'t>, name: String, owner: Vec<String>, ctx: &Ctx) -> Def<'t> {
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

fn classify_csharp<'t>(n: Node<'t>, src: &str) -> Option<Def<'t>> {
    let kind = match n.kind() {
        "class_declaration" | "record_declaration" | "record_struct_declaration" => {
            SymbolKind::Class
        }
        "interface_declaration" => SymbolKind::Interface,
        "struct_declaration" => SymbolKind::Struct,
        "enum_declaration" => SymbolKind::Enum,
        "namespace_declaration" | "file_scoped_namespace_declaration" => SymbolKind::Namespace,
        "method_declaration" => SymbolKind::Method,
        "constructor_declaration" => SymbolKind::Constructor,
        "delegate_declaration" => SymbolKind::Type,
        _ => return None,
    };
    Some(def(kind, field_text(src, n, "name")?, n))
}

fn classify_ruby<'t>(n: Node<'t>, src: &str, ctx: &Ctx) -> Option<Def<'t>> {
    let kind = match n.kind() {
        "class" => SymbolKind::Class,
        "module" => SymbolKind::Module,
        "singleton_method" => SymbolKind::Method,
        "method" => {
            let name = field_text(src, n, "name")?;
            let kind = match function_or_method(ctx, &[SymbolKind::Class, SymbolKind::Module]) {
                SymbolKind::Method if name == "initialize" => SymbolKind::Constructor,
                k => k,
            };
            return Some(def(kind, name, n));
        }
        "assignment" if !ctx.in_function => {
            let left = n.child_by_field_name("left")?;
            if left.kind() != "constant" {
                return None;
            }
            let mut d = def(SymbolKind::Constant, text(src, left).to_string(), n);
            d.body = None;
            return Some(d);
        }
        _ => return None,
    };
    Some(def(kind, field_text(src, n, "name")?, n))
}

fn classify_php<'t>(n: Node<'t>, src: &str, ctx: &Ctx) -> Option<Def<'t>> {
    let kind = match n.kind() {
        "function_definition" => SymbolKind::Function,
        "class_declaration" => SymbolKind::Class,
        "interface_declaration" => SymbolKind::Interface,
        "trait_declaration" => SymbolKind::Trait,
        "enum_declaration" => SymbolKind::Enum,
        "namespace_definition" => SymbolKind::Namespace,
        "method_declaration" => {
            let name = field_text(src, n, "name")?;
            let kind = if name == "__construct" {
                SymbolKind::Constructor
            } else {
                SymbolKind::Method
            };
            return Some(def(kind, name, n));
        }
        "const_element" if !ctx.in_function => {
            let mut cursor = n.walk();
            let name = n.named_children(&mut cursor).find(|c| c.kind() == "name")?;
            let mut d = def(
                SymbolKind::Constant,
                text(src, name).to_string(),
                single_spec_parent(n),
            );
            d.body = None;
            return Some(d);
        }
        _ => return None,
    };
    Some(def(kind, field_text(src, n, "name")?, n))
}

/// The first named child of `n` whose kind is one of `kinds`.
fn child_of_kind<'t>(n: Node<'t>, kinds: &[&str]) -> Option<Node<'t>> {
    let mut cursor = n.walk();
    n.named_children(&mut cursor)
        .find(|c| kinds.contains(&c.kind()))
}

/// Whether `n` has an anonymous (keyword) child spelled `word`.
fn has_keyword(n: Node, src: &str, word: &str) -> bool {
    let mut cursor = n.walk();
    n.children(&mut cursor)
        .any(|c| !c.is_named() && text(src, c) == word)
}

/// A definition whose body is its first child of one of `bodies` (grammars that do not name
/// the body as a field).
fn def_with_body<'t>(kind: SymbolKind, name: String, decl: Node<'t>, bodies: &[&str]) -> Def<'t> {
    Def {
        body: child_of_kind(decl, bodies),
        ..def(kind, name, decl)
    }
}

const KOTLIN_BODIES: &[&str] = &["class_body", "enum_class_body", "function_body"];

fn classify_kotlin<'t>(n: Node<'t>, src: &str, ctx: &Ctx) -> Option<Def<'t>> {
    let scopes = [
        SymbolKind::Class,
        SymbolKind::Interface,
        SymbolKind::Enum,
        SymbolKind::Module,
    ];
    let kind = match n.kind() {
        "class_declaration" => {
            let modifiers = child_of_kind(n, &["modifiers"]).map(|m| text(src, m));
            if has_keyword(n, src, "interface") {
                SymbolKind::Interface
            } else if modifiers.is_some_and(|m| m.split_whitespace().any(|w| w == "enum")) {
                SymbolKind::Enum
            } else {
                SymbolKind::Class
            }
        }
        "object_declaration" | "companion_object" => SymbolKind::Module,
        "function_declaration" => function_or_method(ctx, &scopes),
        "secondary_constructor" => {
            let name = ctx.parent_name.unwrap_or("constructor").to_string();
            return Some(def_with_body(SymbolKind::Constructor, name, n, &["block"]));
        }
        "type_alias" => {
            let name = collapse(text(src, n.child_by_field_name("type")?));
            return Some(def(SymbolKind::Type, name, n));
        }
        "property_declaration" if module_level(ctx) || ctx.parent == Some(SymbolKind::Module) => {
            let var = child_of_kind(n, &["variable_declaration"])?;
            let name = collapse(text(
                src,
                child_of_kind(var, &["identifier"]).unwrap_or(var),
            ));
            let mut d = def(SymbolKind::Constant, name, n);
            d.body = None;
            return Some(d);
        }
        _ => return None,
    };
    let name = match field_text(src, n, "name") {
        Some(name) => name,
        // `companion object { ... }` without a name.
        None if n.kind() == "companion_object" => "Companion".to_string(),
        None => return None,
    };
    Some(def_with_body(kind, name, n, KOTLIN_BODIES))
}

fn classify_scala<'t>(n: Node<'t>, src: &str, ctx: &Ctx) -> Option<Def<'t>> {
    let scopes = [
        SymbolKind::Class,
        SymbolKind::Trait,
        SymbolKind::Module,
        SymbolKind::Enum,
    ];
    let kind = match n.kind() {
        "class_definition" => SymbolKind::Class,
        "trait_definition" => SymbolKind::Trait,
        "object_definition" => SymbolKind::Module,
        "enum_definition" => SymbolKind::Enum,
        "function_definition" | "function_declaration" if !ctx.in_function => {
            function_or_method(ctx, &scopes)
        }
        "type_definition" if !ctx.in_function => SymbolKind::Type,
        "val_definition" | "var_definition"
            if module_level(ctx) || ctx.parent == Some(SymbolKind::Module) =>
        {
            let name = field_text(src, n, "pattern")?;
            let mut d = def(SymbolKind::Constant, name, n);
            d.body = None;
            return Some(d);
        }
        _ => return None,
    };
    Some(def(kind, field_text(src, n, "name")?, n))
}

fn classify_swift<'t>(n: Node<'t>, src: &str, ctx: &Ctx) -> Option<Def<'t>> {
    let scopes = [
        SymbolKind::Class,
        SymbolKind::Struct,
        SymbolKind::Enum,
        SymbolKind::Interface,
        SymbolKind::Impl,
    ];
    let kind = match n.kind() {
        "class_declaration" => {
            let kind = ["class", "struct", "enum", "extension", "actor"]
                .into_iter()
                .find(|w| has_keyword(n, src, w));
            match kind {
                Some("struct") => SymbolKind::Struct,
                Some("enum") => SymbolKind::Enum,
                Some("extension") => SymbolKind::Impl,
                _ => SymbolKind::Class,
            }
        }
        "protocol_declaration" => SymbolKind::Interface,
        "function_declaration" | "protocol_function_declaration" => {
            function_or_method(ctx, &scopes)
        }
        "init_declaration" => {
            let name = ctx.parent_name.unwrap_or("init").to_string();
            return Some(def(SymbolKind::Constructor, name, n));
        }
        "typealias_declaration" => SymbolKind::Type,
        _ => return None,
    };
    Some(def(kind, field_text(src, n, "name")?, n))
}

/// Elixir definitions are macro calls: `defmodule Name do ... end`, `def name(args) do`.
/// The kind and name a call defines, if it is a definition.
fn elixir_head(n: Node, src: &str) -> Option<(SymbolKind, String)> {
    if n.kind() != "call" {
        return None;
    }
    let kind = match text(src, n.child_by_field_name("target")?) {
        "defmodule" | "defprotocol" | "defimpl" => SymbolKind::Module,
        "def" | "defp" | "defdelegate" | "defguard" | "defguardp" => SymbolKind::Function,
        "defmacro" | "defmacrop" => SymbolKind::Macro,
        _ => return None,
    };
    let args = child_of_kind(n, &["arguments"])?;
    let mut cursor = args.walk();
    let first = args.named_children(&mut cursor).next()?;
    let name = match kind {
        SymbolKind::Module => collapse(text(src, first)),
        _ => {
            // `name(args)`, `name(args) when guard`, or a bare `name`.
            let mut head = first;
            if head.kind() == "binary_operator" {
                head = head.child_by_field_name("left")?;
            }
            match head.kind() {
                "call" => text(src, head.child_by_field_name("target")?).to_string(),
                "identifier" => text(src, head).to_string(),
                _ => return None,
            }
        }
    };
    Some((kind, name))
}

fn classify_elixir<'t>(n: Node<'t>, src: &str) -> Option<Def<'t>> {
    let (kind, name) = elixir_head(n, src)?;
    let mut d = def_with_body(kind, name.clone(), n, &["do_block"]);
    if kind != SymbolKind::Module {
        // Further clauses of the same function (`defp trim([])`, `defp trim(list)`).
        let same =
            |c: Node| elixir_head(c, src).is_some_and(|(k, other)| k == kind && other == name);
        d.last = Some(clauses(n, &["comment", "unary_operator"], &same)?);
    }
    Some(d)
}

fn classify_haskell<'t>(n: Node<'t>, src: &str, ctx: &Ctx) -> Option<Def<'t>> {
    let kind = match n.kind() {
        "data_type" | "newtype" | "type_synonym" | "type_family" => SymbolKind::Type,
        "class" => SymbolKind::Trait,
        "instance" => {
            let class = field_text(src, n, "name")?;
            let name = match field_text(src, n, "patterns") {
                Some(p) => format!("{class} {p}"),
                None => class,
            };
            return Some(def_with_body(
                SymbolKind::Impl,
                name,
                n,
                &["instance_declarations"],
            ));
        }
        "function" | "bind" if !ctx.in_function => {
            let name = field_text(src, n, "name")?;
            // The second and later equations of a function continue its definition.
            let same = |c: Node| {
                matches!(c.kind(), "function" | "bind")
                    && field_text(src, c, "name").as_deref() == Some(&name)
            };
            let last = clauses(n, &["comment", "haddock"], &same)?;
            let kind = match ctx.parent {
                Some(SymbolKind::Trait | SymbolKind::Impl) => SymbolKind::Method,
                _ => SymbolKind::Function,
            };
            let mut d = def_with_body(kind, name, n, &["match"]);
            d.last = Some(last);
            return Some(d);
        }
        _ => return None,
    };
    Some(def(kind, field_text(src, n, "name")?, n))
}

fn classify_lua<'t>(n: Node<'t>, src: &str, ctx: &Ctx) -> Option<Def<'t>> {
    match n.kind() {
        "function_declaration" => {
            let name_node = n.child_by_field_name("name")?;
            let (kind, name) = match name_node.kind() {
                // `function M.f()`, `function M:f()`: a function of the table `M`.
                "method_index_expression" => (
                    SymbolKind::Method,
                    text(src, name_node.child_by_field_name("method")?).to_string(),
                ),
                "dot_index_expression" => (
                    SymbolKind::Function,
                    text(src, name_node.child_by_field_name("field")?).to_string(),
                ),
                _ => (SymbolKind::Function, text(src, name_node).to_string()),
            };
            let mut d = def(kind, name, n);
            if let Some(table) = name_node.child_by_field_name("table") {
                d.scope = Some(vec![text(src, table).to_string()]);
            }
            Some(d)
        }
        // `local f = function(...) ... end`
        "variable_declaration" | "assignment_statement" if !ctx.in_function => {
            let assignment = if n.kind() == "variable_declaration" {
                child_of_kind(n, &["assignment_statement"])?
            } else if n
                .parent()
                .is_some_and(|p| p.kind() == "variable_declaration")
            {
                return None;
            } else {
                n
            };
            let names = child_of_kind(assignment, &["variable_list"])?;
            let values = child_of_kind(assignment, &["expression_list"])?;
            let value = values.named_child(0)?;
            if value.kind() != "function_definition" || names.named_child_count() != 1 {
                return None;
            }
            let name = collapse(text(src, names));
            let mut d = def(SymbolKind::Function, name, n);
            d.body = value.child_by_field_name("body");
            Some(d)
        }
        _ => None,
    }
}

fn classify_zig<'t>(n: Node<'t>, src: &str, ctx: &Ctx) -> Option<Def<'t>> {
    match n.kind() {
        "function_declaration" => {
            let kind = function_or_method(ctx, &[SymbolKind::Struct, SymbolKind::Enum]);
            Some(def(kind, field_text(src, n, "name")?, n))
        }
        "test_declaration" => {
            let name = child_of_kind(n, &["string", "identifier"])
                .map(|s| text(src, s).trim_matches('"').to_string())?;
            Some(def_with_body(SymbolKind::Function, name, n, &["block"]))
        }
        // `const Name = struct { ... };` and the other containers; other top-level
        // constants.
        "variable_declaration" if !ctx.in_function => {
            let name = text(src, child_of_kind(n, &["identifier"])?).to_string();
            let container = child_of_kind(
                n,
                &[
                    "struct_declaration",
                    "enum_declaration",
                    "union_declaration",
                    "opaque_declaration",
                    "error_set_declaration",
                ],
            );
            let kind = match container.map(|c| c.kind()) {
                Some("struct_declaration" | "opaque_declaration") => SymbolKind::Struct,
                Some("enum_declaration") => SymbolKind::Enum,
                Some("union_declaration") => SymbolKind::Type,
                Some(_) => SymbolKind::Type,
                None if has_keyword(n, src, "const") && module_level(ctx) => SymbolKind::Constant,
                None => return None,
            };
            let mut d = def(kind, name, n);
            d.body = container.filter(|c| c.kind() != "error_set_declaration");
            Some(d)
        }
        _ => None,
    }
}

fn classify_shell<'t>(n: Node<'t>, src: &str) -> Option<Def<'t>> {
    (n.kind() == "function_definition")
        .then(|| field_text(src, n, "name"))
        .flatten()
        .map(|name| def(SymbolKind::Function, name, n))
}

/// Collapses every run of whitespace to one space and trims the ends.
pub(crate) fn collapse(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for word in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// Cuts a label to `MAX_LABEL_CHARS` characters, ending in `...` when cut.
pub(crate) fn truncate_label(s: String) -> String {
    if s.chars().count() <= MAX_LABEL_CHARS {
        return s;
    }
    let mut out: String = s.chars().take(MAX_LABEL_CHARS - 3).collect();
    out.push_str("...");
    out
}

/// Skips a balanced `open ... close` group at the start of `s`; `None` if unbalanced.
fn skip_group(s: &str, open: char, close: char) -> Option<&str> {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth = depth.checked_sub(1)?;
            if depth == 0 {
                return Some(&s[i + c.len_utf8()..]);
            }
        }
    }
    None
}

/// Drops annotations and attributes in front of a signature (`@Override`, `#[inline]`,
/// C#'s `[Obsolete]`): they are not what a reader calls the definition.
fn strip_annotations(mut s: &str, lang: Language) -> &str {
    loop {
        s = s.trim_start();
        if let Some(rest) = s.strip_prefix('@') {
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '.' | ':')))
                .unwrap_or(rest.len());
            let after = &rest[end..];
            s = if after.starts_with('(') {
                skip_group(after, '(', ')').unwrap_or(after)
            } else {
                after
            };
        } else if s.starts_with("#[") || (lang == Language::CSharp && s.starts_with('[')) {
            let from = s.strip_prefix('#').unwrap_or(s);
            match skip_group(from, '[', ']') {
                Some(rest) => s = rest,
                None => return s,
            }
        } else {
            return s;
        }
    }
}

/// The one-line label of a definition: its text from `decl` up to the body (or its first
/// line when it has no body), annotations dropped, whitespace collapsed, trailing `{`, `:` or
/// `=` removed, at most 120 characters.
pub(crate) fn label(lang: Language, src: &str, decl: Node, body: Option<Node>) -> String {
    let start = decl.start_byte();
    let end = match body {
        Some(b) if b.start_byte() > start => b.start_byte(),
        _ => decl.end_byte(),
    };
    // Long signatures are cut at 120 characters anyway: do not collapse a whole file.
    let mut end = end.min(start + 2000).min(src.len());
    while end > start && !src.is_char_boundary(end) {
        end -= 1;
    }
    let raw = src.get(start..end).unwrap_or("");
    let mut s = strip_annotations(raw, lang);
    if body.is_none() {
        s = s.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    }
    let mut label = collapse(s);
    loop {
        let before = label.len();
        for suffix in ["{", ":", "=>", "=", ";", "; end"] {
            if let Some(rest) = label.strip_suffix(suffix) {
                label = rest.trim_end().to_string();
            }
        }
        if label.len() == before {
            break;
        }
    }
    truncate_label(label)
}
