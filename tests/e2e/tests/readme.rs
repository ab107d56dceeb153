//! The README's tool reference is generated from the live tool schemas, and its CLI section
//! from `satori-cli help`; this test fails when either drifts. Regenerate with
//! `SATORI_UPDATE_DOCS=1 cargo test -p satori-e2e --test readme`.

use std::path::PathBuf;

#[test]
fn readme_generated_sections_match_their_sources() {
    let readme_path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let readme = std::fs::read_to_string(&readme_path).expect("README.md");
    let rendered = satori_protocol::docs::render_tool_reference(satori_protocol::tools());
    let updated = satori_protocol::docs::replace_tool_reference(&readme, &rendered)
        .expect("README.md has the tool reference markers");
    let updated = satori_cli::help::replace_contract_section(
        &updated,
        &satori_cli::help::contract_markdown(),
    )
    .expect("README.md has the CLI section markers");
    if std::env::var_os("SATORI_UPDATE_DOCS").is_some() {
        std::fs::write(&readme_path, &updated).expect("write README.md");
        return;
    }
    assert!(
        updated == readme,
        "README.md's generated sections are out of date; run: SATORI_UPDATE_DOCS=1 cargo test -p satori-e2e --test readme"
    );
}
