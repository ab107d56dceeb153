//! The files a git working tree has changed, per codebase root, cached briefly: search gives
//! them a small boost, and asking git on every search would cost more than the search.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// How long a `git diff` answer is reused. Spawning git costs milliseconds, more than the
/// search itself; a working tree rarely changes between the searches of one burst, and the
/// boost it feeds is a small tie-breaker.
const CHANGED_TTL: std::time::Duration = std::time::Duration::from_secs(2);

/// When a list was taken, and the list (`None`: not a git work tree, or git failed).
type ChangedEntry = (Instant, Option<Vec<String>>);

/// Recent changed-file lists per root.
#[derive(Default)]
pub(crate) struct ChangedCache {
    entries: std::sync::Mutex<HashMap<PathBuf, ChangedEntry>>,
}

impl ChangedCache {
    pub(crate) fn get(&self, root: &Path) -> Option<Vec<String>> {
        let now = Instant::now();
        {
            let map = self.entries.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((at, v)) = map.get(root)
                && now.duration_since(*at) < CHANGED_TTL
            {
                return v.clone();
            }
        }
        // Outside a git work tree there is nothing to ask (and no process to spawn).
        let v = if root.ancestors().any(|d| d.join(".git").exists()) {
            changed_files(root)
        } else {
            None
        };
        let mut map = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        map.insert(root.to_path_buf(), (now, v.clone()));
        v
    }
}

/// Files modified in the git working tree, relative to `root` (tracked files only).
fn changed_files(root: &Path) -> Option<Vec<String>> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["diff", "--name-only", "--relative", "HEAD", "--"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    Some(
        text.lines()
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect(),
    )
}
