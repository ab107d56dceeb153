//! The state file's compatibility: a `state.json` written before state, phase, index status
//! and reindex reason became enums (and the fingerprint's vector backend) loads with the same
//! meaning and is written back byte for byte, so files of earlier versions and of other
//! processes keep working.

use std::path::Path;

use satori_core::dense::BackendId;
use satori_core::{
    CodebaseState, Home, IndexState, IndexStatus, Phase, ReindexReason, StateFile, StateStore,
};

const FIXTURE: &str = include_str!("fixtures/state/state.json");

fn load_fixture() -> StateFile {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("state.json"), FIXTURE).unwrap();
    let file = StateStore::new(Home::new(home.path().to_path_buf()))
        .load()
        .unwrap();
    // A file that failed to parse would have been quarantined and rebuilt (empty here).
    assert!(!home.path().read_dir().unwrap().any(|e| {
        e.unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with("state.json.corrupt-")
    }));
    file
}

fn get<'a>(file: &'a StateFile, root: &str) -> &'a CodebaseState {
    &file.codebases[Path::new(root)]
}

#[test]
fn a_state_file_of_the_string_era_loads_with_its_meaning() {
    let file = load_fixture();
    assert_eq!(file.codebases.len(), 7);

    let alpha = get(&file, "/repos/alpha");
    assert_eq!(alpha.state, IndexState::Indexing);
    assert_eq!(alpha.phase, Some(Phase::Chunking));
    assert!(alpha.searchable_during_indexing);
    assert_eq!(alpha.files_done, 10);

    let beta = get(&file, "/repos/beta");
    assert_eq!(beta.state, IndexState::SyncCompleted);
    assert_eq!(beta.index_status, Some(IndexStatus::LimitReached));
    assert_eq!((beta.added, beta.removed, beta.modified), (1, 2, 3));

    let delta = get(&file, "/repos/delta");
    assert_eq!(delta.state, IndexState::IndexFailed);
    assert_eq!(delta.phase, None);

    let epsilon = get(&file, "/repos/epsilon");
    assert_eq!(epsilon.state, IndexState::Indexed);
    assert_eq!(epsilon.index_status, Some(IndexStatus::Completed));
    assert_eq!(epsilon.fingerprint, None);

    let reasons: Vec<(IndexState, Option<ReindexReason>, Option<Phase>)> =
        ["/repos/eta", "/repos/gamma", "/repos/zeta"]
            .iter()
            .map(|r| get(&file, r))
            .map(|c| (c.state, c.reason, c.phase))
            .collect();
    assert_eq!(
        reasons,
        vec![
            (
                IndexState::RequiresReindex,
                Some(ReindexReason::FingerprintMismatch),
                Some(Phase::Publishing)
            ),
            (
                IndexState::RequiresReindex,
                Some(ReindexReason::LegacyUnverifiedFingerprint),
                None
            ),
            (
                IndexState::RequiresReindex,
                Some(ReindexReason::MissingFingerprint),
                None
            ),
        ]
    );
    assert_eq!(
        get(&file, "/repos/gamma")
            .fingerprint
            .as_ref()
            .map(|f| f.schema_version.as_str()),
        Some("hybrid_v0")
    );
}

#[test]
fn a_state_file_of_the_string_era_is_written_back_unchanged() {
    let file = load_fixture();
    let written = serde_json::to_string_pretty(&file).unwrap();
    assert_eq!(written, FIXTURE.trim_end());
}

#[test]
fn every_enum_value_is_persisted_as_its_id() {
    for s in [
        IndexState::Indexing,
        IndexState::Indexed,
        IndexState::IndexFailed,
        IndexState::SyncCompleted,
        IndexState::RequiresReindex,
    ] {
        assert_eq!(json(&s), format!("\"{}\"", s.id()));
    }
    for p in [
        Phase::Scanning,
        Phase::Chunking,
        Phase::Writing,
        Phase::Publishing,
    ] {
        assert_eq!(json(&p), format!("\"{}\"", p.id()));
    }
    for s in [IndexStatus::Completed, IndexStatus::LimitReached] {
        assert_eq!(json(&s), format!("\"{}\"", s.id()));
    }
    for r in [
        ReindexReason::FingerprintMismatch,
        ReindexReason::MissingFingerprint,
        ReindexReason::LegacyUnverifiedFingerprint,
    ] {
        assert_eq!(json(&r), format!("\"{}\"", r.id()));
    } // The fingerprint's vector backend is the string it always was.
    for (b, id) in [
        (BackendId::None, "none"),
        (BackendId::Embedded, "embedded"),
        (BackendId::Named("milvus".into()), "milvus"),
    ] {
        assert_eq!(json(&b), format!("\"{id}\""));
        assert_eq!(serde_json::from_str::<BackendId>(&json(&b)).unwrap(), b);
    }
}

/// The JSON form of a value.
fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap()
}
