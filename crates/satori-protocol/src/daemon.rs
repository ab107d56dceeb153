//! The pid file of the per-user server (`satori --pid-file PATH`): what the server writes once
//! it listens and what its clients read to list, drain and stop it. One type, so that the
//! writer and the readers cannot drift apart.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Who a listening per-user server is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PidFile {
    pub pid: u32,
    pub version: String,
    pub executable: Option<PathBuf>,
    /// [`executable_stamp`] of the executable when the server started: a client tells a newer
    /// build at the same path by it.
    pub executable_stamp: Option<String>,
    /// Where it listens (`unix:///…`, `http://…/mcp`).
    pub address: String,
    pub started_at: String,
}

/// The size and modification time of an executable (`"<bytes>:<ns since the epoch>"`), or
/// `None` when it cannot be read: what changes when a build replaces it in place.
pub fn executable_stamp(exe: &Path) -> Option<String> {
    let meta = std::fs::metadata(exe).ok()?;
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    Some(format!("{}:{modified}", meta.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pid_file_reads_back_and_a_stamp_follows_the_file() {
        let file = PidFile {
            pid: 7,
            version: "1.2.3".into(),
            executable: Some("/opt/satori".into()),
            executable_stamp: Some("10:20".into()),
            address: "unix:///s.sock".into(),
            started_at: "2026-01-01T00:00:00.000Z".into(),
        };
        let text = serde_json::to_string(&file).unwrap();
        assert!(text.contains("\"executableStamp\":\"10:20\""), "{text}");
        assert_eq!(serde_json::from_str::<PidFile>(&text).unwrap(), file);

        let dir = std::env::temp_dir().join(format!("satori-stamp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let exe = dir.join("exe");
        std::fs::write(&exe, b"one").unwrap();
        let before = executable_stamp(&exe).unwrap();
        assert!(before.starts_with("3:"), "{before}");
        std::fs::write(&exe, b"a longer one").unwrap();
        assert_ne!(executable_stamp(&exe).unwrap(), before);
        assert_eq!(executable_stamp(&dir.join("missing")), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
