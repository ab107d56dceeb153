//! The workspace's dependency rules, checked on every test run: the engine knows nothing of
//! MCP or command lines, the contract depends on nothing of ours, and clients reach the engine
//! only through MCP.

use std::process::Command;

use serde_json::Value;

/// `(crate, forbidden dependency)` pairs, for normal and build dependencies.
const FORBIDDEN: &[(&str, &[&str])] = &[
    (
        "satori-core",
        &[
            "satori-protocol",
            "satori-mcp",
            "satori-client",
            "satori-cli",
            "rmcp",
            "clap",
            "napi",
            "napi-derive",
        ],
    ),
    (
        "satori-protocol",
        &[
            "satori-core",
            "satori-mcp",
            "satori-client",
            "satori-cli",
            "rmcp",
            "tokio",
        ],
    ),
    (
        "satori-client",
        &["satori-core", "satori-mcp", "satori-cli"],
    ),
    ("satori-cli", &["satori-core", "satori-mcp"]),
];

#[test]
fn forbidden_edges_are_absent() {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .output()
        .expect("cargo metadata");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("metadata JSON");
    let packages = meta["packages"].as_array().expect("packages");
    let mut violations = Vec::new();
    for (krate, banned) in FORBIDDEN {
        let pkg = packages
            .iter()
            .find(|p| p["name"] == *krate)
            .unwrap_or_else(|| panic!("package {krate} not found"));
        for dep in pkg["dependencies"].as_array().expect("dependencies") {
            let name = dep["name"].as_str().unwrap_or_default();
            let kind = dep["kind"].as_str();
            if kind != Some("dev") && banned.contains(&name) {
                violations.push(format!("{krate} -> {name}"));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "forbidden dependency edges: {violations:?}"
    );
}
