//! The scale-out configuration end to end: the official MCP Python SDK starts the `satori`
//! binary with the environment an MCP configuration gives it (`EMBEDDING_PROVIDER=OpenAI`
//! pointed at a loopback server that speaks OpenAI's embeddings API, `MILVUS_ADDRESS` at a
//! real Milvus), indexes this repository and searches it; a second server process searches
//! again without asking the API for anything it embedded before.

mod support;

use std::path::PathBuf;

#[test]
fn sdk_scale_out() {
    let python = match support::python_with_sdk() {
        Ok(python) => python,
        Err(skipped) => {
            assert!(std::env::var_os("CI").is_none(), "{skipped}");
            #[allow(clippy::print_stderr)]
            {
                eprintln!("{skipped}");
            }
            return;
        }
    };
    let Some(milvus) = satori_milvus::testing::server() else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap();
    let seen = support::run_sdk_script(
        &python,
        "sdk_scale_out.py",
        &[milvus.address.as_ref(), repo.as_os_str()],
        home.path(),
    );
    assert_eq!(seen["state"], "indexed", "{seen}");
    // Every chunk went through the API once (thousands of them).
    assert!(seen["textsAfterIndex"].as_u64().unwrap() > 1000, "{seen}");
    let want = "crates/satori-milvus/src/grpc.rs";
    for run in ["first", "second"] {
        let files: Vec<&str> = seen[run]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap())
            .collect();
        assert!(files.contains(&want), "{run}: {seen}");
    }
    // The second process found the query's vector in the home's cache.
    assert_eq!(seen["textsForSecondSearch"], 0, "{seen}");
    // The index's vectors are in Milvus, not in the generation directory.
    let indexes = home.path().join("indexes");
    let codebase = std::fs::read_dir(&indexes)
        .unwrap()
        .flatten()
        .find(|e| e.path().join("CURRENT").is_file())
        .unwrap()
        .path();
    let current = std::fs::read_to_string(codebase.join("CURRENT")).unwrap();
    let generation = codebase.join(current.trim());
    assert!(generation.join(satori_milvus::VECTORS_FILE).is_file());
    assert!(!generation.join("vectors").exists());
}
