//! File discovery: which files of a codebase get indexed.
//!
//! Honours `.gitignore` (also outside git repositories), `.satoriignore`, the user's
//! `ignorePatterns`, and the built-in lists of `policy` (VCS directories, dependencies, build
//! outputs, lockfiles, secrets), plus minified bundles, binaries and huge files.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use ignore::WalkState;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::overrides::{Override, OverrideBuilder};

use crate::lang::Language;
use crate::layout::SkipReason;
use crate::policy::{DEPENDENCY_DIRS, GENERATED_DIRS, NOISE_FILES, Policy, VCS_DIRS};
use crate::util::system_time_ms;
use crate::{Error, Result};

/// Files larger than this are skipped (generated data, vendored bundles).
pub const DEFAULT_MAX_FILE_BYTES: u64 = 1024 * 1024;

/// Options of one walk.
#[derive(Debug, Clone, Default)]
pub struct WalkOptions {
    /// Extra extensions to index as plain text (`.vue`, `proto`); with or without the dot.
    pub custom_extensions: Vec<String>,
    /// Extra gitignore-syntax patterns, relative to the root.
    pub ignore_patterns: Vec<String>,
    /// Size cap in bytes; `0` means [`DEFAULT_MAX_FILE_BYTES`].
    pub max_file_bytes: u64,
    /// The secrets rules and the state directory to keep out.
    pub policy: Policy,
}

/// A file chosen for indexing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// Root-relative path with `/` separators.
    pub rel_path: String,
    pub abs_path: PathBuf,
    pub language: Language,
    pub size: u64,
    pub mtime_ms: u64,
}

/// What a walk found, sorted by path, plus what it skipped and why (partial success is data).
#[derive(Debug, Clone, Default)]
pub struct WalkReport {
    pub files: Vec<SourceFile>,
    /// `(path, reason)` for files passed over for size, unreadable metadata, or a name that
    /// is not UTF-8 (paths are UTF-8 everywhere in the index, and a lossy conversion would
    /// let two names collide).
    pub skipped: Vec<(String, String)>,
    /// The paths (shown lossily) of the files and directories passed over because their
    /// name is not UTF-8: also in `skipped`, and counted apart so that the index's status
    /// can say that they exist.
    pub non_utf8_names: Vec<String>,
    /// `(path, reason)` for what the walk could not read at all (a directory it may not
    /// list, a root that vanished): files below it are unknown, not absent.
    pub errors: Vec<(String, String)>,
    /// Every directory the walk listed, with its modification time as seen before listing
    /// it, and the files it passed over for their size, with their size and modification
    /// time: with the files, what a later sync stats to learn that nothing changed without
    /// walking again (see [`TreeStamp`]).
    pub dirs: Vec<(PathBuf, Option<SystemTime>)>,
    pub oversized: Vec<(PathBuf, u64, Option<SystemTime>)>,
    /// When the walk started.
    pub started: Option<SystemTime>,
}

impl WalkReport {
    /// Fails with [`Error::ScanIncomplete`] (or [`Error::RootVanished`]) unless the walk saw
    /// the whole tree under `root` and the root is still a directory.
    pub fn ensure_complete(&self, root: &Path) -> Result<()> {
        if !root.is_dir() {
            return Err(Error::RootVanished(root.to_path_buf()));
        }
        match self.errors.first() {
            None => Ok(()),
            Some((first, reason)) => Err(Error::ScanIncomplete {
                root: root.to_path_buf(),
                count: self.errors.len(),
                first: first.clone(),
                reason: reason.clone(),
            }),
        }
    }
}

/// Lists the indexable files under `root`, sorted by relative path.
pub fn walk(root: &Path, opts: &WalkOptions) -> Result<WalkReport> {
    if !root.exists() {
        return Err(Error::NotFound(root.to_path_buf()));
    }
    if !root.is_dir() {
        return Err(Error::NotADirectory(root.to_path_buf()));
    }
    let max_bytes = if opts.max_file_bytes == 0 {
        DEFAULT_MAX_FILE_BYTES
    } else {
        opts.max_file_bytes
    };
    let custom = normalized_extensions(&opts.custom_extensions);
    let user_ignore = user_ignore_matcher(root, &opts.ignore_patterns)?;
    let overrides = default_excludes(root)?;

    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .hidden(true)
        .parents(false)
        .git_ignore(true)
        .git_global(false)
        .git_exclude(true)
        .require_git(false)
        .ignore(false)
        .add_custom_ignore_filename(".satoriignore")
        .overrides(overrides)
        .follow_links(false)
        .threads(
            std::thread::available_parallelism()
                .map_or(2, |n| n.get())
                .min(8),
        );

    let found: Mutex<WalkReport> = Mutex::new(WalkReport {
        started: Some(SystemTime::now()),
        ..WalkReport::default()
    });
    builder.build_parallel().run(|| {
        let found = &found;
        let custom = &custom;
        let user_ignore = &user_ignore;
        let policy = &opts.policy;
        Box::new(move |entry| {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    push_error(found, root, &e);
                    return WalkState::Continue;
                }
            };
            let Some(ft) = entry.file_type() else {
                return WalkState::Continue;
            };
            let path = entry.path();
            let Ok(rel) = path.strip_prefix(root) else {
                return WalkState::Continue;
            };
            let Some(rel_path) = to_slash_utf8(rel) else {
                push_skip(
                    found,
                    to_slash(rel),
                    "the name is not valid UTF-8".to_string(),
                );
                if let Ok(mut f) = found.lock() {
                    f.non_utf8_names.push(to_slash(rel));
                }
                return if ft.is_dir() {
                    WalkState::Skip
                } else {
                    WalkState::Continue
                };
            };
            if rel_path.is_empty() {
                push_dir(found, path, &entry);
                return WalkState::Continue;
            }
            if user_ignore
                .matched_path_or_any_parents(rel, ft.is_dir())
                .is_ignore()
            {
                return if ft.is_dir() {
                    WalkState::Skip
                } else {
                    WalkState::Continue
                };
            }
            if ft.is_dir() {
                // Credential directories (by their place in the codebase or on the machine:
                // a root at `~/.config` holds `gcloud/`), and the state directory when it
                // lies inside a codebase: the index must never hold Satori's own files.
                let own_state = policy.state_dir().is_some_and(|s| path == s);
                if own_state || policy.skips_dir(&rel_path) || policy.skips_dir(&to_slash(path)) {
                    return WalkState::Skip;
                }
                push_dir(found, path, &entry);
                return WalkState::Continue;
            }
            if !ft.is_file()
                || policy.path_rule(&rel_path).is_some()
                || policy.place_rule(&to_slash(path)).is_some()
            {
                return WalkState::Continue;
            }
            let Some(language) = detect_language(&rel_path, custom) else {
                return WalkState::Continue;
            };
            let meta = match entry.metadata() {
                Ok(m) => m,
                Err(e) => {
                    push_skip(found, rel_path, format!("unreadable: {e}"));
                    return WalkState::Continue;
                }
            };
            if meta.len() > max_bytes {
                push_skip(found, rel_path, format!("larger than {max_bytes} bytes"));
                if let Ok(mut f) = found.lock() {
                    f.oversized
                        .push((path.to_path_buf(), meta.len(), meta.modified().ok()));
                }
                return WalkState::Continue;
            }
            let file = SourceFile {
                rel_path,
                abs_path: path.to_path_buf(),
                language,
                size: meta.len(),
                mtime_ms: meta.modified().map(system_time_ms).unwrap_or(0),
            };
            if let Ok(mut f) = found.lock() {
                f.files.push(file);
            }
            WalkState::Continue
        })
    });
    let mut report = found.into_inner().unwrap_or_default();
    report.files.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
    report.skipped.sort();
    report.non_utf8_names.sort();
    report.errors.sort();
    Ok(report)
}

/// A directory whose modification time lies this close to the start of the walk may have
/// changed again, right after it was listed, without its time moving (file times are
/// coarse): a stamp holding one is never trusted.
const RACY: Duration = Duration::from_secs(2);

/// The repository's exclude file, read at the root. Like the ignore files the walk reads in
/// every directory it lists ([`IGNORE_CONTROL_FILES`]), editing it changes what the walk
/// finds without touching any directory's time, so a stamp records it.
const GIT_EXCLUDE: &str = ".git/info/exclude";

/// What a complete walk saw, reduced to what `stat` can confirm: every directory it listed
/// (a file added, removed or renamed changes its directory's time), the ignore files in
/// them, every file it chose and every file it passed over for its size. While all of them
/// still have the times and sizes recorded, a new walk would find exactly the same files:
/// a sync of an unchanged tree stats instead of listing and matching ignore rules again.
#[derive(Debug, Clone)]
pub struct TreeStamp {
    root: PathBuf,
    /// Paths relative to the root (the root itself is `.`), with what they were.
    entries: Vec<(RelPath, Seen)>,
    /// The repository's exclude file and what it was (absent: `None`).
    exclude: (PathBuf, Option<(u64, SystemTime)>),
}

/// What a stamped path was when the walk saw it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Seen {
    /// A directory with this modification time.
    Dir(SystemTime),
    /// A regular file with this size and modification time (compared in milliseconds, the
    /// precision the manifest keeps).
    File(u64, SystemTime),
}

impl TreeStamp {
    /// The stamp of a complete walk of `root`; `None` when it could not be trusted later (an
    /// incomplete walk, a directory without a readable time or changed just now).
    pub fn of(root: &Path, report: &WalkReport) -> Option<TreeStamp> {
        if !report.errors.is_empty() {
            return None;
        }
        let recent = report.started?.checked_sub(RACY)?;
        let rel = |p: &Path| -> Option<RelPath> {
            let r = p.strip_prefix(root).ok()?;
            rel_path(if r.as_os_str().is_empty() {
                Path::new(".")
            } else {
                r
            })
        };
        let mut entries = Vec::with_capacity(report.dirs.len() * 2 + report.files.len());
        for (dir, mtime) in &report.dirs {
            let mtime = (*mtime)?;
            if mtime >= recent {
                return None;
            }
            entries.push((rel(dir)?, Seen::Dir(mtime)));
            for name in IGNORE_CONTROL_FILES {
                let p = dir.join(name);
                if let Ok(m) = std::fs::symlink_metadata(&p) {
                    entries.push((rel(&p)?, Seen::File(m.len(), m.modified().ok()?)));
                }
            }
        }
        for f in &report.files {
            let t = SystemTime::UNIX_EPOCH + Duration::from_millis(f.mtime_ms);
            entries.push((rel(&f.abs_path)?, Seen::File(f.size, t)));
        }
        for (p, len, t) in &report.oversized {
            entries.push((rel(p)?, Seen::File(*len, (*t)?)));
        }
        let exclude = root.join(GIT_EXCLUDE);
        let seen = std::fs::symlink_metadata(&exclude)
            .ok()
            .map(|m| m.modified().map(|t| (m.len(), t)))
            .transpose()
            .ok()?;
        Some(TreeStamp {
            root: root.to_path_buf(),
            entries,
            exclude: (exclude, seen),
        })
    }

    /// Appends the stamp to `out` in the form [`TreeStamp::decode`] reads (the root is not
    /// part of it: the reader knows it); `None` when a recorded time predates 1970.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) -> Option<()> {
        let (_, exclude) = &self.exclude;
        match exclude {
            None => out.push(0),
            Some((len, t)) => {
                out.push(1);
                put_u64(out, *len);
                put_time(out, *t)?;
            }
        }
        put_u64(out, self.entries.len() as u64);
        for (p, seen) in &self.entries {
            match seen {
                Seen::Dir(t) => {
                    out.push(0);
                    put_time(out, *t)?;
                }
                Seen::File(len, t) => {
                    out.push(1);
                    put_u64(out, *len);
                    put_time(out, *t)?;
                }
            }
            put_bytes(out, rel_bytes(p)?);
        }
        Some(())
    }

    /// Reads a stamp of `root` that [`TreeStamp::encode`] wrote; `None` when the bytes are
    /// not one (a torn or foreign file is only a stamp less: the next sync walks).
    pub(crate) fn decode(root: &Path, input: &mut &[u8]) -> Option<TreeStamp> {
        let exclude = match take_u8(input)? {
            0 => None,
            1 => Some((take_u64(input)?, take_time(input)?)),
            _ => return None,
        };
        let n = take_u64(input)?;
        // Each entry takes at least 17 bytes: a count beyond that is a damaged file.
        if n > input.len() as u64 / 17 {
            return None;
        }
        let mut entries = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let seen = match take_u8(input)? {
                0 => Seen::Dir(take_time(input)?),
                1 => Seen::File(take_u64(input)?, take_time(input)?),
                _ => return None,
            };
            entries.push((rel_from_bytes(take_bytes(input)?)?, seen));
        }
        Some(TreeStamp {
            root: root.to_path_buf(),
            entries,
            exclude: (root.join(GIT_EXCLUDE), exclude),
        })
    }

    /// True when every directory, ignore file and file still has the time and size the
    /// stamp recorded: a walk now would find the files it found, unchanged.
    pub fn holds(&self) -> bool {
        let (exclude, seen) = &self.exclude;
        let now = std::fs::symlink_metadata(exclude)
            .ok()
            .and_then(|m| Some((m.len(), m.modified().ok()?)));
        if now != *seen {
            return false;
        }
        let Some(stat) = Stat::at(&self.root) else {
            return false;
        };
        // Stat calls are all of the work: two threads halve it on a machine with two cores.
        let (a, b) = self.entries.split_at(self.entries.len() / 2);
        let part = |part: &[(RelPath, Seen)]| part.iter().all(|(p, seen)| stat.is(p, *seen));
        std::thread::scope(|s| {
            let other = s.spawn(|| part(a));
            let mine = part(b);
            other.join().unwrap_or(false) && mine
        })
    }
}

/// A path relative to the stamp's root, in the form [`Stat`] passes to the system (made once
/// when the stamp is taken, not on every check).
#[cfg(target_os = "linux")]
type RelPath = std::ffi::CString;
#[cfg(not(target_os = "linux"))]
type RelPath = PathBuf;

#[cfg(target_os = "linux")]
fn rel_path(p: &Path) -> Option<RelPath> {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(p.as_os_str().as_bytes()).ok()
}

#[cfg(not(target_os = "linux"))]
fn rel_path(p: &Path) -> Option<RelPath> {
    Some(p.to_path_buf())
}

#[cfg(target_os = "linux")]
fn rel_bytes(p: &RelPath) -> Option<&[u8]> {
    Some(p.as_bytes())
}

#[cfg(not(target_os = "linux"))]
fn rel_bytes(p: &RelPath) -> Option<&[u8]> {
    p.to_str().map(str::as_bytes)
}

#[cfg(target_os = "linux")]
fn rel_from_bytes(b: &[u8]) -> Option<RelPath> {
    std::ffi::CString::new(b).ok()
}

#[cfg(not(target_os = "linux"))]
fn rel_from_bytes(b: &[u8]) -> Option<RelPath> {
    std::str::from_utf8(b).ok().map(PathBuf::from)
}

/// The pieces of a stored stamp, little-endian, strings as a length and their bytes.
pub(crate) fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub(crate) fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_u64(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn put_time(out: &mut Vec<u8>, t: SystemTime) -> Option<()> {
    let d = t.duration_since(SystemTime::UNIX_EPOCH).ok()?;
    put_u64(out, d.as_secs());
    out.extend_from_slice(&d.subsec_nanos().to_le_bytes());
    Some(())
}

fn take_u8(input: &mut &[u8]) -> Option<u8> {
    let (&b, rest) = input.split_first()?;
    *input = rest;
    Some(b)
}

pub(crate) fn take_u64(input: &mut &[u8]) -> Option<u64> {
    let (head, rest) = input.split_at_checked(8)?;
    *input = rest;
    Some(u64::from_le_bytes(head.try_into().ok()?))
}

pub(crate) fn take_bytes<'a>(input: &mut &'a [u8]) -> Option<&'a [u8]> {
    let len = usize::try_from(take_u64(input)?).ok()?;
    let (head, rest) = input.split_at_checked(len)?;
    *input = rest;
    Some(head)
}

fn take_time(input: &mut &[u8]) -> Option<SystemTime> {
    let secs = take_u64(input)?;
    let (head, rest) = input.split_at_checked(4)?;
    *input = rest;
    let nanos = u32::from_le_bytes(head.try_into().ok()?);
    if nanos >= 1_000_000_000 {
        return None;
    }
    SystemTime::UNIX_EPOCH.checked_add(Duration::new(secs, nanos))
}

/// Stats paths relative to a root. On Linux through a descriptor of the root, so that each
/// call resolves only the relative part: a path lookup per component is what a stat of a
/// deep tree spends most of its time on.
struct Stat {
    #[cfg(target_os = "linux")]
    fd: std::os::fd::OwnedFd,
    #[cfg(not(target_os = "linux"))]
    root: PathBuf,
}

impl Stat {
    #[cfg(target_os = "linux")]
    fn at(root: &Path) -> Option<Stat> {
        use std::os::fd::FromRawFd;
        use std::os::unix::ffi::OsStrExt;
        let path = std::ffi::CString::new(root.as_os_str().as_bytes()).ok()?;
        // SAFETY: `path` is a valid C string; a non-negative result is a descriptor that
        // nothing else owns.
        let fd = unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        // SAFETY: see above; the descriptor is closed when `Stat` is dropped.
        (fd >= 0).then(|| Stat {
            fd: unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) },
        })
    }

    #[cfg(target_os = "linux")]
    fn is(&self, rel: &RelPath, seen: Seen) -> bool {
        use std::os::fd::AsRawFd;
        // SAFETY: `st` is written by the call before it is read; the descriptor is open for
        // the life of `self`.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        let r = unsafe {
            libc::fstatat(
                self.fd.as_raw_fd(),
                rel.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if r != 0 || st.st_mtime < 0 {
            return false;
        }
        let mtime =
            SystemTime::UNIX_EPOCH + Duration::new(st.st_mtime as u64, st.st_mtime_nsec as u32);
        match seen {
            Seen::Dir(t) => st.st_mode & libc::S_IFMT == libc::S_IFDIR && mtime == t,
            Seen::File(len, t) => {
                st.st_mode & libc::S_IFMT == libc::S_IFREG
                    && st.st_size as u64 == len
                    && system_time_ms(mtime) == system_time_ms(t)
            }
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn at(root: &Path) -> Option<Stat> {
        Some(Stat {
            root: root.to_path_buf(),
        })
    }

    #[cfg(not(target_os = "linux"))]
    fn is(&self, rel: &RelPath, seen: Seen) -> bool {
        let Ok(m) = std::fs::symlink_metadata(self.root.join(rel)) else {
            return false;
        };
        let Ok(mtime) = m.modified() else {
            return false;
        };
        match seen {
            Seen::Dir(t) => m.is_dir() && mtime == t,
            Seen::File(len, t) => {
                m.is_file() && m.len() == len && system_time_ms(mtime) == system_time_ms(t)
            }
        }
    }
}

/// The text of a file chosen by [`walk`], from its bytes; `None` for binary or minified
/// content, which is skipped rather than indexed.
pub fn read_text(bytes: Vec<u8>) -> Result<String, SkipReason> {
    if looks_binary(&bytes) {
        return Err(SkipReason::Binary);
    }
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    if looks_minified(&text) {
        return Err(SkipReason::Minified);
    }
    Ok(text)
}

/// True when the first 8 KiB contain a NUL byte (the heuristic git uses).
pub fn looks_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(8192)].contains(&0)
}

/// True for machine-written one-liners: long files whose lines average over 300 characters.
fn looks_minified(text: &str) -> bool {
    if text.len() < 4096 {
        return false;
    }
    let lines = text.lines().count().max(1);
    text.len() / lines > 300
}

/// Extensions of files that are never source text: binaries, media, archives, fonts,
/// compiled objects, and text formats that hold data rather than code (lock files, checksum
/// lists, logs, source maps, vector images, tables). Every other file is a candidate: one in
/// a language without a grammar is indexed as text, by line windows, so that no source file
/// is left out because its language is not listed; binary and minified content is still
/// skipped when the file is read.
#[rustfmt::skip]
const NOT_SOURCE: &[&str] = &[
    "png", "jpg", "jpeg", "gif", "bmp", "ico", "icns", "webp", "tif", "tiff", "psd", "heic",
    "avif", "svg", "pdf", "eps", "mp3", "mp4", "m4a", "m4v", "wav", "ogg", "oga", "flac", "mov",
    "avi", "mkv", "webm", "zip", "gz", "tgz", "bz2", "xz", "zst", "7z", "rar", "tar", "jar",
    "war", "ear", "whl", "egg", "nupkg", "gem", "deb", "rpm", "dmg", "iso", "img", "exe", "dll",
    "so", "dylib", "a", "lib", "o", "obj", "class", "pyc", "pyo", "pyd", "wasm", "bin", "dat",
    "db", "sqlite", "sqlite3", "woff", "woff2", "ttf", "otf", "eot", "lock", "sum", "log",
    "map", "csv", "tsv", "parquet", "npy", "npz", "pkl", "pt", "onnx", "safetensors", "snap",
    "patch", "diff", "xcf", "sketch", "fig", "ai", "swp", "swo", "tmp", "bak", "orig", "rej",
];

fn detect_language(rel_path: &str, custom: &[String]) -> Option<Language> {
    if let Some(lang) = Language::from_path(rel_path) {
        return Some(lang);
    }
    let name = rel_path.rsplit('/').next().unwrap_or(rel_path);
    // Editor backups (`main.rs~`).
    if name.ends_with('~') {
        return None;
    }
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => {
            let ext = ext.to_ascii_lowercase();
            (custom.contains(&ext) || !NOT_SOURCE.contains(&ext.as_str())).then_some(Language::Text)
        }
        // No extension: `LICENSE`, `CODEOWNERS`, scripts run by their shebang.
        _ => Some(Language::Text),
    }
}

/// The user's extra extensions, lower-case and without the dot.
fn normalized_extensions(extensions: &[String]) -> Vec<String> {
    extensions
        .iter()
        .map(|e| e.trim().trim_start_matches('.').to_ascii_lowercase())
        .filter(|e| !e.is_empty())
        .collect()
}

/// The built-in excludes (the policy's VCS, dependency and generated directories, and its
/// noise files) as walk
/// overrides.
fn default_excludes(root: &Path) -> Result<Override> {
    let mut overrides = OverrideBuilder::new(root);
    for dir in VCS_DIRS.iter().chain(DEPENDENCY_DIRS).chain(GENERATED_DIRS) {
        add_override(&mut overrides, &format!("!**/{dir}/"))?;
    }
    for file in NOISE_FILES {
        add_override(&mut overrides, &format!("!{file}"))?;
    }
    overrides.build().map_err(|e| Error::Pattern {
        pattern: "<default excludes>".into(),
        reason: e.to_string(),
    })
}

/// The files at a codebase root whose edits change which files are indexed.
pub const IGNORE_CONTROL_FILES: &[&str] = &[".gitignore", ".satoriignore"];

/// Tells, for one changed path, whether [`walk`] could pick it up: the same built-in
/// excludes, hidden-entry rule, root ignore files, user patterns and language detection, so
/// a file watcher reacts to exactly what the index would see.
///
/// Ignore files in subdirectories are not consulted: a change below one reaches a sync,
/// which then finds nothing to do.
pub struct PathFilter {
    root: PathBuf,
    overrides: Override,
    root_ignores: Vec<Gitignore>,
    user_ignore: Gitignore,
    custom: Vec<String>,
    policy: Policy,
    max_bytes: u64,
}

impl PathFilter {
    /// The rules of a walk of `root` with `opts`, as they stand on disk now.
    pub fn new(root: &Path, opts: &WalkOptions) -> Result<PathFilter> {
        let mut root_ignores = Vec::new();
        for name in IGNORE_CONTROL_FILES
            .iter()
            .copied()
            .chain([".git/info/exclude"])
        {
            let (matcher, _) = Gitignore::new(root.join(name));
            root_ignores.push(matcher);
        }
        Ok(PathFilter {
            root: root.to_path_buf(),
            overrides: default_excludes(root)?,
            root_ignores,
            user_ignore: user_ignore_matcher(root, &opts.ignore_patterns)?,
            custom: normalized_extensions(&opts.custom_extensions),
            policy: opts.policy.clone(),
            max_bytes: if opts.max_file_bytes == 0 {
                DEFAULT_MAX_FILE_BYTES
            } else {
                opts.max_file_bytes
            },
        })
    }

    /// The file at `path` (absolute, below the root) as [`walk`] would list it: a regular
    /// file the rules admit, with a language and within the size cap. `None` for anything
    /// else (gone, a directory, ignored, too large, a name that is not UTF-8).
    pub fn source_file(&self, path: &Path) -> Option<SourceFile> {
        if self.is_ignore_control(path) || !self.is_relevant(path) {
            return None;
        }
        let meta = path.symlink_metadata().ok().filter(|m| m.is_file())?;
        let rel_path = to_slash_utf8(path.strip_prefix(&self.root).ok()?)?;
        let language = detect_language(&rel_path, &self.custom)?;
        (meta.len() <= self.max_bytes).then(|| SourceFile {
            rel_path,
            abs_path: path.to_path_buf(),
            language,
            size: meta.len(),
            mtime_ms: meta.modified().map(system_time_ms).unwrap_or(0),
        })
    }

    /// True for the root's `.gitignore` and `.satoriignore`: editing them changes the set of
    /// indexed files.
    pub fn is_ignore_control(&self, path: &Path) -> bool {
        path.strip_prefix(&self.root)
            .ok()
            .and_then(|rel| rel.to_str())
            .is_some_and(|rel| IGNORE_CONTROL_FILES.contains(&rel))
    }

    /// Whether a change at `path` (absolute, below the root) can change what is indexed. A
    /// path that no longer exists counts as a directory when it has no indexable extension:
    /// a removed or renamed directory takes its files with it.
    pub fn is_relevant(&self, path: &Path) -> bool {
        if self.is_ignore_control(path) {
            return true;
        }
        let Ok(rel) = path.strip_prefix(&self.root) else {
            return false;
        };
        if rel.as_os_str().is_empty() {
            return false;
        }
        // Hidden entries (`.git/` among them) are never walked.
        if rel
            .components()
            .any(|c| c.as_os_str().to_string_lossy().starts_with('.'))
        {
            return false;
        }
        let exists = path.symlink_metadata().ok();
        let is_dir = exists.as_ref().is_some_and(|m| m.is_dir());
        let rel_path = to_slash(rel);
        // Secrets by name are never walked either.
        if self.policy.path_rule(&rel_path).is_some()
            || self.policy.skips_dir(&rel_path)
            || self.policy.place_rule(&to_slash(path)).is_some()
        {
            return false;
        }
        let language = detect_language(&rel_path, &self.custom);
        // A gone path with an extension was a file; without one it may have been a
        // directory.
        let has_extension = rel
            .file_name()
            .is_some_and(|n| n.to_string_lossy().contains('.'));
        let is_dir_like = is_dir || (exists.is_none() && !has_extension);
        if language.is_none() && !is_dir_like {
            return false;
        }
        // Every ancestor directory is checked too: the walk never descends into an
        // excluded one.
        let mut dirs: Vec<&Path> = rel.ancestors().skip(1).collect();
        dirs.retain(|d| !d.as_os_str().is_empty());
        let excluded = |p: &Path, dir: bool| {
            self.overrides.matched(p, dir).is_ignore()
                || self.user_ignore.matched(p, dir).is_ignore()
                || self
                    .root_ignores
                    .iter()
                    .any(|g| g.matched(p, dir).is_ignore())
        };
        !(excluded(rel, is_dir_like) || dirs.iter().any(|d| excluded(d, true)))
    }
}

fn user_ignore_matcher(root: &Path, patterns: &[String]) -> Result<Gitignore> {
    let mut b = GitignoreBuilder::new(root);
    for p in patterns {
        let p = p.trim();
        if p.is_empty() {
            continue;
        }
        b.add_line(None, p).map_err(|e| Error::Pattern {
            pattern: p.to_string(),
            reason: e.to_string(),
        })?;
    }
    b.build().map_err(|e| Error::Pattern {
        pattern: patterns.join(", "),
        reason: e.to_string(),
    })
}

fn add_override(b: &mut OverrideBuilder, glob: &str) -> Result<()> {
    b.add(glob).map(|_| ()).map_err(|e| Error::Pattern {
        pattern: glob.to_string(),
        reason: e.to_string(),
    })
}

/// Records what the walker could not read, with the root-relative path when it names one.
fn push_error(found: &Mutex<WalkReport>, root: &Path, e: &ignore::Error) {
    let mut path = None;
    let mut inner = e;
    loop {
        match inner {
            ignore::Error::WithPath { path: p, err } => {
                path = Some(p.clone());
                inner = err;
            }
            ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
                inner = err;
            }
            _ => break,
        }
    }
    let shown = match &path {
        Some(p) => match p.strip_prefix(root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
            Ok(rel) => to_slash(rel),
            Err(_) => p.to_string_lossy().into_owned(),
        },
        None => ".".to_string(),
    };
    if let Ok(mut f) = found.lock() {
        f.errors.push((shown, inner.to_string()));
    }
}

fn push_dir(found: &Mutex<WalkReport>, path: &Path, entry: &ignore::DirEntry) {
    let mtime = entry.metadata().ok().and_then(|m| m.modified().ok());
    if let Ok(mut f) = found.lock() {
        f.dirs.push((path.to_path_buf(), mtime));
    }
}

fn push_skip(found: &Mutex<WalkReport>, path: String, reason: String) {
    if let Ok(mut f) = found.lock() {
        f.skipped.push((path, reason));
    }
}

/// A relative path as a `/`-separated string, `None` when a component is not UTF-8.
fn to_slash_utf8(rel: &Path) -> Option<String> {
    let mut s = String::new();
    for (i, c) in rel.components().enumerate() {
        if i > 0 {
            s.push('/');
        }
        s.push_str(c.as_os_str().to_str()?);
    }
    Some(s)
}

/// Converts a relative path to a `/`-separated string (lossily: for display only).
pub fn to_slash(rel: &Path) -> String {
    let mut s = String::new();
    for (i, c) in rel.components().enumerate() {
        if i > 0 {
            s.push('/');
        }
        s.push_str(&c.as_os_str().to_string_lossy());
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, body: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    }

    #[track_caller]
    fn check(files: &[(&str, &str)], opts: WalkOptions, expect: &[&str]) {
        let dir = tempfile::tempdir().unwrap();
        for (rel, body) in files {
            write(dir.path(), rel, body);
        }
        let got: Vec<String> = walk(dir.path(), &opts)
            .unwrap()
            .files
            .into_iter()
            .map(|f| f.rel_path)
            .collect();
        assert_eq!(got, expect);
    }

    #[test]
    fn default_excludes_and_ignore_files() {
        check(
            &[
                ("src/main.rs", "fn main() {}"),
                ("node_modules/x/index.js", "x"),
                ("target/debug/a.rs", "x"),
                ("web/app.min.js", "x"),
                ("Cargo.lock", "x"),
                ("image.png", "x"),
                (".hidden/a.rs", "x"),
                ("gen/skip.py", "x"),
                ("docs/guide.md", "# Guide"),
                (".gitignore", "gen/\n"),
                ("lib/secret.ts", "x"),
                (".satoriignore", "lib/secret.ts\n"),
            ],
            WalkOptions::default(),
            &["docs/guide.md", "src/main.rs"],
        );
    }

    /// Files of languages without a grammar are walked (and indexed as text); media, data
    /// and editor leftovers are not.
    #[test]
    fn every_text_file_is_a_candidate() {
        check(
            &[
                ("tools/solver.ml", "let x = 1"),
                ("proto/schema.proto", "message A {}"),
                ("LICENSE", "MIT"),
                ("bin/deploy", "#!/bin/sh"),
                ("src/main.rs~", "fn old() {}"),
                ("data/table.CSV", "a,b"),
                ("assets/logo.svg", "<svg/>"),
                ("go.sum", "x"),
            ],
            WalkOptions::default(),
            &[
                "LICENSE",
                "bin/deploy",
                "proto/schema.proto",
                "tools/solver.ml",
            ],
        );
    }

    /// The watcher's filter must agree with the walk on every file of a tree, and judge
    /// paths that are gone by the same rules.
    #[test]
    fn the_path_filter_agrees_with_the_walk() {
        let files = [
            ("src/main.rs", "fn main() {}"),
            ("node_modules/x/index.js", "x"),
            ("target/debug/a.rs", "x"),
            ("web/app.min.js", "x"),
            ("Cargo.lock", "x"),
            ("image.png", "x"),
            (".hidden/a.rs", "x"),
            (".git/config", "x"),
            ("gen/skip.py", "x"),
            ("docs/guide.md", "# Guide"),
            ("lib/secret.ts", "x"),
            ("src/drop_me.rs", "x"),
            ("b.proto", "message X {}"),
            (".gitignore", "gen/\n"),
            (".satoriignore", "lib/secret.ts\n"),
        ];
        let dir = tempfile::tempdir().unwrap();
        for (rel, body) in files {
            write(dir.path(), rel, body);
        }
        let opts = WalkOptions {
            custom_extensions: vec!["proto".into()],
            ignore_patterns: vec!["src/drop_*".into()],
            ..Default::default()
        };
        let walked: Vec<String> = walk(dir.path(), &opts)
            .unwrap()
            .files
            .into_iter()
            .map(|f| f.rel_path)
            .collect();
        let filter = PathFilter::new(dir.path(), &opts).unwrap();
        for (rel, _) in files {
            let control = IGNORE_CONTROL_FILES.contains(&rel);
            assert_eq!(
                filter.is_relevant(&dir.path().join(rel)),
                control || walked.iter().any(|w| w == rel),
                "{rel}"
            );
            assert_eq!(filter.is_ignore_control(&dir.path().join(rel)), control);
        }
        for (gone, relevant) in [
            ("src/removed.rs", true),
            ("src/removed_dir", true),
            ("gen/removed.py", false),
            ("node_modules/y/removed.js", false),
            ("lib/secret.ts", false),
            (".git/index", false),
            ("notes.bin", false),
        ] {
            assert_eq!(
                filter.is_relevant(&dir.path().join(gone)),
                relevant,
                "{gone}"
            );
        }
    }

    #[test]
    fn custom_extensions_and_patterns() {
        check(
            &[
                ("a.vue", "<template/>"),
                ("b.proto", "message X {}"),
                ("src/keep.rs", "x"),
                ("src/drop_me.rs", "x"),
            ],
            WalkOptions {
                custom_extensions: vec![".proto".into()],
                ignore_patterns: vec!["src/drop_*".into()],
                ..Default::default()
            },
            &["a.vue", "b.proto", "src/keep.rs"],
        );
    }

    #[test]
    fn size_cap_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "big.rs", &"x".repeat(200));
        let r = walk(
            dir.path(),
            &WalkOptions {
                max_file_bytes: 100,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(r.files.is_empty());
        assert_eq!(r.skipped.len(), 1);
    }

    /// A root above a credential place (`~/.config`) leaves its files out, as a root above
    /// `.config` would: the places are judged on the whole path.
    #[test]
    fn credential_places_above_the_root_are_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join(".config");
        for rel in [
            "gcloud/application_default_credentials.json",
            "gcloud/configurations/config_default.ini",
            "gh/hosts.yml",
            "gh/config.yml",
            "nvim/init.lua",
        ] {
            write(&root, rel, "x = 1");
        }
        let got: Vec<String> = walk(&root, &WalkOptions::default())
            .unwrap()
            .files
            .into_iter()
            .map(|f| f.rel_path)
            .collect();
        assert_eq!(got, ["gh/config.yml", "nvim/init.lua"]);
    }

    #[cfg(unix)]
    #[test]
    fn non_utf8_names_are_counted() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "ok.rs", "x");
        let bad = std::ffi::OsStr::from_bytes(b"bad\xff.rs");
        std::fs::write(dir.path().join(bad), "x").unwrap();
        let bad_dir = std::ffi::OsStr::from_bytes(b"dir\xfe");
        std::fs::create_dir(dir.path().join(bad_dir)).unwrap();
        write(&dir.path().join(bad_dir), "inner.rs", "x");
        let r = walk(dir.path(), &WalkOptions::default()).unwrap();
        assert_eq!(r.files.len(), 1);
        assert_eq!(r.non_utf8_names, ["bad\u{fffd}.rs", "dir\u{fffd}"]);
    }

    #[test]
    fn missing_root_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = walk(&dir.path().join("nope"), &WalkOptions::default()).unwrap_err();
        assert!(matches!(err, Error::NotFound(_)));
    }

    #[test]
    fn binary_and_minified() {
        assert!(looks_binary(b"abc\0def"));
        assert!(!looks_binary(b"plain text"));
        assert!(looks_minified(&"a".repeat(5000)));
        assert!(!looks_minified(&"line\n".repeat(2000)));
    }
}
