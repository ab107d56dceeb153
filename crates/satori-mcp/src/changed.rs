//! The files a git working tree has changed, per codebase root, cached briefly: search gives
//! them a small boost, and asking git on every search would cost more than the search.
//!
//! git runs on a thread of its own and a search waits for it only a short while: on a large
//! working tree `git diff` can take hundreds of milliseconds, far more than the boost is
//! worth. A search that does not get the answer in time ranks without it; the answer still
//! arrives and serves the searches after it. An answer past its age is served while a fresh
//! one is asked for.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long a `git diff` answer is fresh. A working tree rarely changes between the
/// searches of one burst, and the boost it feeds is a small tie-breaker.
const CHANGED_TTL: Duration = Duration::from_secs(2);

/// How long a search waits for a first answer.
pub(crate) const CHANGED_WAIT: Duration = Duration::from_millis(20);

/// A changed-file list (`None`: not a git work tree, or git failed).
type Changed = Option<Vec<String>>;

/// What is known of one root: the last answer and when it came, and the question in
/// flight, if any.
#[derive(Default)]
struct Entry {
    answer: Option<(Instant, Changed)>,
    asking: Option<Arc<Pending>>,
}

/// An answer being computed: filled once, waited on with a timeout.
#[derive(Default)]
struct Pending {
    answer: Mutex<Option<Changed>>,
    done: Condvar,
}

/// Recent changed-file lists per root.
#[derive(Default)]
pub(crate) struct ChangedCache {
    entries: Arc<Mutex<HashMap<PathBuf, Entry>>>,
}

impl ChangedCache {
    /// The changed files of `root`, waiting at most `wait` for git when nothing is known
    /// yet; a stale answer is returned at once while a fresh one is asked for.
    pub(crate) fn get(&self, root: &Path, wait: Duration) -> Changed {
        let pending = {
            let mut map = self.entries.lock().unwrap_or_else(|p| p.into_inner());
            let entry = map.entry(root.to_path_buf()).or_default();
            let fresh = entry
                .answer
                .as_ref()
                .is_some_and(|(at, _)| at.elapsed() < CHANGED_TTL);
            if fresh {
                return entry.answer.as_ref().and_then(|(_, v)| v.clone());
            }
            let pending = match &entry.asking {
                Some(p) => Arc::clone(p),
                None => {
                    let p = Arc::new(Pending::default());
                    if !self.ask(root.to_path_buf(), Arc::clone(&p)) {
                        return entry.answer.as_ref().and_then(|(_, v)| v.clone());
                    }
                    entry.asking = Some(Arc::clone(&p));
                    p
                }
            };
            if let Some((_, stale)) = &entry.answer {
                return stale.clone();
            }
            pending
        };
        let answer = pending.answer.lock().unwrap_or_else(|p| p.into_inner());
        let (answer, _) = pending
            .done
            .wait_timeout_while(answer, wait, |a| a.is_none())
            .unwrap_or_else(|p| p.into_inner());
        answer.clone().flatten()
    }

    /// Asks git on a thread of its own and records the answer; false when no thread could
    /// be started (the search then ranks without the boost).
    fn ask(&self, root: PathBuf, pending: Arc<Pending>) -> bool {
        let entries = Arc::clone(&self.entries);
        let run = move || {
            // Outside a git work tree there is nothing to ask (and no process to spawn).
            let v = if root.ancestors().any(|d| d.join(".git").exists()) {
                changed_files(&root)
            } else {
                None
            };
            *pending.answer.lock().unwrap_or_else(|p| p.into_inner()) = Some(v.clone());
            pending.done.notify_all();
            let mut map = entries.lock().unwrap_or_else(|p| p.into_inner());
            let entry = map.entry(root).or_default();
            entry.answer = Some((Instant::now(), v));
            entry.asking = None;
        };
        std::thread::Builder::new()
            .name("satori-git".into())
            .spawn(run)
            .is_ok()
    }
}

/// Files modified in the git working tree, relative to `root` (tracked files only).
fn changed_files(root: &Path) -> Changed {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let ok = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn changed_files_come_from_git_within_the_wait_or_on_a_later_search() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("a.rs"), "fn a() {}\n").unwrap();
        std::fs::write(root.join("b.rs"), "fn b() {}\n").unwrap();
        git(&root, &["init", "-q"]);
        git(&root, &["add", "."]);
        git(
            &root,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-qm",
                "init",
            ],
        );
        std::fs::write(root.join("b.rs"), "fn b() { 1 }\n").unwrap();

        let cache = ChangedCache::default();
        // Not waiting: nothing known yet, so nothing to boost; git is asked all the same.
        assert_eq!(cache.get(&root, Duration::ZERO), None);
        let later = cache.get(&root, Duration::from_secs(30));
        assert_eq!(later, Some(vec!["b.rs".to_string()]));
        // Fresh: answered from the cache at once.
        assert_eq!(cache.get(&root, Duration::ZERO), later);

        // Outside a work tree there is no list.
        let plain = tempfile::tempdir().unwrap();
        assert_eq!(cache.get(plain.path(), Duration::from_secs(30)), None);
    }
}
