//! The generated README tool reference and the marker-based replacement.

use satori_protocol::docs::{
    END_MARKER, START_MARKER, render_tool_reference, replace_tool_reference,
};
use satori_protocol::tools;

#[test]
fn tool_reference_snapshot() {
    insta::assert_snapshot!("tool_reference", render_tool_reference(tools()));
}

#[test]
fn replaces_only_the_marked_section() {
    let rendered = render_tool_reference(tools());
    let cases = [
        (
            "# Title\n\nintro\n\n<!-- TOOLS_START -->\nold stuff\n<!-- TOOLS_END -->\n\n## After\n",
            Some(format!("# Title\n\nintro\n\n{rendered}\n## After\n")),
        ),
        (
            "<!-- TOOLS_START --><!-- TOOLS_END -->",
            Some(rendered.clone()),
        ),
        ("no markers here\n", None),
        ("<!-- TOOLS_END -->\n<!-- TOOLS_START -->\n", None),
        ("<!-- TOOLS_START -->\nunterminated\n", None),
    ];
    for (readme, expected) in cases {
        assert_eq!(
            replace_tool_reference(readme, &rendered),
            expected,
            "{readme:?}"
        );
    }
}

#[test]
fn replacing_is_idempotent() {
    let rendered = render_tool_reference(tools());
    let readme = format!("# Satori\n\n{START_MARKER}\n{END_MARKER}\n\nrest\n");
    let once = replace_tool_reference(&readme, &rendered).expect("markers present");
    let twice = replace_tool_reference(&once, &rendered).expect("markers still present");
    assert_eq!(once, twice);
    assert!(once.ends_with("\nrest\n"));
}
