//! The files a git working tree has changed, per codebase root, cached briefly: search gives
//! them a small boost, and asking git on every search would cost more than the search.
//!
//! git runs on a thread of its own and a search waits for it only a short while: on a large
//! working tree `git diff` can take hundreds of milliseconds, far more than the boost is
//! worth. A search that does not get the answer in time ranks without it; the answer still
//! arrives and serves the searches after it. An answer past its age is served while a fresh
//! one is asked for.
//!
//! A `satori-cli` search is a process of its own, so the last answer is also kept on disk
//! next to the codebase's index: a process that knows nothing yet ranks at once with the
//! list an earlier process got (seconds old, for a small tie-breaker) instead of waiting
//! for git, and refreshes it for the next one.

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

/// Where a root's last answer is kept between processes (`None`: nowhere).
type StoreFor = dyn Fn(&Path) -> Option<PathBuf> + Send + Sync;

/// Recent changed-file lists per root.
#[derive(Default)]
pub(crate) struct ChangedCache {
    entries: Arc<Mutex<HashMap<PathBuf, Entry>>>,
    store_for: Option<Arc<StoreFor>>,
}

impl ChangedCache {
    /// A cache that keeps each root's last answer in the file `store_for` names, when the
    /// directory of that file exists.
    pub(crate) fn with_store(
        store_for: impl Fn(&Path) -> Option<PathBuf> + Send + Sync + 'static,
    ) -> ChangedCache {
        ChangedCache {
            entries: Default::default(),
            store_for: Some(Arc::new(store_for)),
        }
    }

    /// The changed files of `root`, waiting at most `wait` for git when nothing is known
    /// yet; a stale answer (from memory, or from disk when this process has none) is
    /// returned at once while a fresh one is asked for.
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
            let store = self.store_for.as_ref().and_then(|f| f(root));
            if entry.answer.is_none()
                && entry.asking.is_none()
                && let Some(kept) = store.as_deref().and_then(read_store)
            {
                // Read once, then remembered as this process's own answer of that age. One
                // another process got moments ago is as good as asking now (and git's own
                // work competes with this search for the processor); an older one is served
                // as stale while git is asked.
                let age = kept.age.unwrap_or(CHANGED_TTL);
                // (`Instant` cannot go back past the machine's boot: then only as stale.)
                let now = Instant::now();
                if let Some(at) = now
                    .checked_sub(age)
                    .or_else(|| now.checked_sub(CHANGED_TTL))
                {
                    entry.answer = Some((at, kept.files.clone()));
                }
                if age < CHANGED_TTL {
                    return kept.files;
                }
            }
            let pending = match &entry.asking {
                Some(p) => Arc::clone(p),
                None => {
                    let p = Arc::new(Pending::default());
                    if !self.ask(root.to_path_buf(), Arc::clone(&p), store.clone()) {
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
    fn ask(&self, root: PathBuf, pending: Arc<Pending>, store: Option<PathBuf>) -> bool {
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
            if let Some(store) = &store {
                write_store(store, &v);
            }
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

/// First word of a kept answer. The header line goes on with the time git answered (ms
/// since the epoch) and the count of lines that follow, so that a file cut short (a process
/// killed while writing) is not taken for a shorter list.
const STORE_HEADER: &str = "satori-git-changed-v2";

/// An answer kept on disk.
#[derive(Debug, PartialEq)]
struct Kept {
    files: Changed,
    /// How long ago git gave it (`None`: in the future, a clock that moved).
    age: Option<Duration>,
}

/// A kept answer, or `None` when there is none or it cannot be trusted.
fn read_store(path: &Path) -> Option<Kept> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut lines = text.lines();
    let mut header = lines.next()?.split(' ');
    if header.next()? != STORE_HEADER {
        return None;
    }
    let at: u64 = header.next()?.parse().ok()?;
    let age = satori_core::now_ms()
        .checked_sub(at)
        .map(Duration::from_millis);
    let files = match header.next()? {
        "none" => None,
        count => {
            let count: usize = count.parse().ok()?;
            let files: Vec<String> = lines.map(str::to_string).collect();
            if files.len() != count {
                return None;
            }
            Some(files)
        }
    };
    Some(Kept { files, age })
}

/// Keeps `answer` for the next process. Best effort and cheap: a hint for ranking is not
/// worth an fsync, and the directory is never created here (a codebase without an index
/// keeps nothing).
fn write_store(path: &Path, answer: &Changed) {
    let Some(dir) = path.parent().filter(|d| d.is_dir()) else {
        return;
    };
    let now = satori_core::now_ms();
    let mut text = match answer {
        None => format!("{STORE_HEADER} {now} none\n"),
        Some(files) => format!("{STORE_HEADER} {now} {}\n", files.len()),
    };
    for file in answer.iter().flatten() {
        text.push_str(file);
        text.push('\n');
    }
    // One temporary name per process, so concurrent writers never share a file.
    let tmp = dir.join(format!(".git-changed.{}", std::process::id()));
    if std::fs::write(&tmp, text).is_err() || std::fs::rename(&tmp, path).is_err() {
        let _ = std::fs::remove_file(&tmp);
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

    /// A git work tree at `root` whose one commit holds `files` (each a one-line function).
    fn committed_repo(root: &Path, files: &[&str]) {
        for f in files {
            std::fs::write(root.join(f), "fn f() {}\n").unwrap();
        }
        git(root, &["init", "-q"]);
        git(root, &["add", "."]);
        let identity = ["-c", "user.name=t", "-c", "user.email=t@t"];
        git(root, &[&identity[..], &["commit", "-qm", "init"]].concat());
    }

    #[test]
    fn changed_files_come_from_git_within_the_wait_or_on_a_later_search() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        committed_repo(&root, &["a.rs", "b.rs"]);
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

    #[test]
    fn a_new_process_ranks_at_once_with_the_list_an_earlier_one_kept() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir(&root).unwrap();
        let root = root.canonicalize().unwrap();
        committed_repo(&root, &["a.rs"]);
        std::fs::write(root.join("a.rs"), "fn a() { 1 }\n").unwrap();
        let kept_dir = dir.path().join("index");
        let store = kept_dir.join("git-changed");
        let cache_at = |store: PathBuf| ChangedCache::with_store(move |_| Some(store.clone()));
        let cache = || cache_at(store.clone());
        let a_changed = Some(vec!["a.rs".to_string()]);

        // Without the index directory nothing is kept, and a new process knows nothing.
        // (Another directory than `kept_dir`: the git these processes start may answer
        // late, and must not write where the checks below read.)
        let absent = dir.path().join("absent").join("git-changed");
        assert_eq!(
            cache_at(absent.clone()).get(&root, Duration::from_secs(30)),
            a_changed
        );
        assert!(!absent.exists());
        assert_eq!(cache_at(absent).get(&root, Duration::ZERO), None);

        std::fs::create_dir(&kept_dir).unwrap();
        assert_eq!(cache().get(&root, Duration::from_secs(30)), a_changed);
        let files = |store: &Path| read_store(store).map(|k| k.files);
        // The answer is kept just after it is handed out.
        let kept = |want: &Changed| {
            let deadline = Instant::now() + Duration::from_secs(30);
            while files(&store).as_ref() != Some(want) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            files(&store)
        };
        assert_eq!(kept(&a_changed), Some(a_changed.clone()));

        // A new process takes an answer kept moments ago as it is, without asking git.
        // (Kept again just now, so that a slow machine cannot age it past the limit.)
        std::fs::write(root.join("b.rs"), "fn b() {}\n").unwrap();
        git(&root, &["add", "b.rs"]);
        let now = satori_core::now_ms();
        std::fs::write(&store, format!("{STORE_HEADER} {now} 1\na.rs\n")).unwrap();
        assert_eq!(cache().get(&root, Duration::from_secs(30)), a_changed);
        assert_eq!(files(&store), Some(a_changed.clone()));

        // An older one it ranks with at once while git is asked, and git's answer replaces
        // it for the process after.
        let old = satori_core::now_ms() - 60_000;
        std::fs::write(&store, format!("{STORE_HEADER} {old} 1\na.rs\n")).unwrap();
        let next = cache();
        assert_eq!(next.get(&root, Duration::ZERO), a_changed);
        let both = Some(vec!["a.rs".to_string(), "b.rs".to_string()]);
        assert_eq!(kept(&both), Some(both.clone()));
        assert_eq!(next.get(&root, Duration::ZERO), both);

        // A kept file cut short, or not ours, is ignored: the process asks git (here about
        // a directory outside any work tree, so that no answer about `root` can arrive).
        let plain = tempfile::tempdir().unwrap();
        let now = satori_core::now_ms();
        for bad in [
            format!("{STORE_HEADER} {now} 3\na.rs\n"),
            format!("{STORE_HEADER} soon 1\na.rs\n"),
            "satori git-changed v1 1\na.rs\n".to_string(),
            "a.rs\n".to_string(),
            String::new(),
        ] {
            let unread = kept_dir.join("unread");
            std::fs::write(&unread, &bad).unwrap();
            assert_eq!(read_store(&unread), None, "{bad:?}");
            std::fs::write(&store, &bad).unwrap();
            assert_eq!(cache().get(plain.path(), Duration::ZERO), None, "{bad:?}");
        }
    }
}
