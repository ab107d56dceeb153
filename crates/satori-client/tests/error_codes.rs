//! The npm package's `ErrorCode` type (`npm/satori-mcp/index.d.ts`) is generated from
//! `satori-client`'s error-code table. This test fails when the file holds another text, and
//! writes the file as it should be beside it (`index.d.ts.new`), to be moved over it.

use std::path::PathBuf;

use satori_client::{ErrorCode, typescript_union};

const DECLARATION: &str = "export type ErrorCode =";

fn types_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../npm/satori-mcp/index.d.ts")
}

/// The `ErrorCode` declaration of a `.d.ts` text (up to its `;` and newline), and where it
/// starts.
fn declaration(text: &str) -> Option<(usize, &str)> {
    let start = text.find(DECLARATION)?;
    let end = start + text[start..].find(";\n")? + 2;
    Some((start, &text[start..end]))
}

#[test]
fn the_npm_error_code_type_is_the_tables() {
    let path = types_file();
    let text = std::fs::read_to_string(&path).expect("index.d.ts is readable");
    let (start, found) = declaration(&text).expect("index.d.ts declares ErrorCode");
    let want = typescript_union();
    if found != want {
        let fixed = format!("{}{want}{}", &text[..start], &text[start + found.len()..]);
        let new = path.with_extension("ts.new");
        std::fs::write(&new, fixed).expect("write index.d.ts.new");
        panic!(
            "index.d.ts's ErrorCode differs from the error-code table; the generated file is {} (move it over index.d.ts)\nfound:\n{found}\nwant:\n{want}",
            new.display()
        );
    }
}

#[test]
fn the_generated_union_names_every_library_token_once() {
    let union = typescript_union();
    for code in ErrorCode::ALL {
        let quoted = format!("\"{}\"", code.token());
        let count = union.matches(&quoted).count();
        let want = usize::from(code.reaches_libraries());
        assert_eq!(count, want, "{code} in\n{union}");
    }
    // A drifted file is found: the check reads what it compares.
    let drifted = union.replace("\"E_CALL_TIMEOUT\"", "\"E_TIMEOUT\"");
    assert_ne!(declaration(&drifted).map(|(_, d)| d), Some(union.as_str()));
}
