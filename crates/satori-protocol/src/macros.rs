//! The `string_enum!` macro: closed sets of wire strings (statuses, actions, modes).
//!
//! Every such enum needs the same things — serde names that are exactly the wire strings,
//! a JSON Schema `enum`, `as_str()` for building messages, `ALL` for docs and tests — so one
//! macro keeps them from drifting apart. Variants must not carry `///` docs: schemars turns
//! documented variants into `oneOf` with `const`s, which wrapper clients cannot map to flags.

/// Defines a `Copy` enum whose variants serialise as the given string literals.
macro_rules! string_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $($(#[$vmeta:meta])* $variant:ident = $value:literal,)+
        }
    ) => {
        $(#[$meta])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord,
            serde::Serialize, serde::Deserialize, schemars::JsonSchema,
        )]
        $vis enum $name {
            $($(#[$vmeta])* #[serde(rename = $value)] $variant,)+
        }

        impl $name {
            /// Every value, in declaration (= schema) order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The wire string of this value.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $value,)+
                }
            }

            /// The value whose wire string is `s`, if any.
            pub fn from_wire(s: &str) -> Option<Self> {
                match s {
                    $($value => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
