//! The one policy of what Satori may walk, index, read and return, shared by the indexer and
//! `read_file` so that nothing the indexer keeps out can be read another way.
//!
//! - Roots (`roots.rs`): which directories may be tracked at all.
//! - Paths: VCS internals and dependency directories are never read or indexed; build
//!   outputs and caches are not indexed (reading them is harmless); secrets are refused by
//!   name (`.env`, private keys, credential files, cloud configuration).
//! - Content (`content.rs`): files holding a private key or a token of a known format are
//!   neither indexed nor returned.
//! - Opening (`open.rs`): a file judged by its path is opened without following links, so
//!   what is read is what was judged.
//!
//! Secrets rules (names and content) can be switched off for users who index test fixtures
//! full of fake keys; VCS and dependency rules cannot.

mod content;
mod open;
mod roots;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use globset::{GlobSet, GlobSetBuilder};

pub use content::{SecretKind, find_secret};
pub use open::open_unlinked;
pub use roots::RootRefusal;

/// Version of the rules below: raised whenever they change what is indexed, so that indexes
/// built under older rules are rebuilt by their next sync (see [`Policy::signature`]).
pub const POLICY_VERSION: u32 = 3;

/// Version-control internals: never indexed, never read (`.git/config` holds tokens).
pub const VCS_DIRS: &[&str] = &[".git", ".hg", ".svn"];

/// Third-party code installed into a project: never indexed, never read.
pub const DEPENDENCY_DIRS: &[&str] = &["node_modules", "bower_components", ".venv", "venv", ".tox"];

/// Generated output, caches and editor settings: not indexed (noise), but readable.
pub const GENERATED_DIRS: &[&str] = &[
    ".satori",
    "target",
    "dist",
    "build",
    "out",
    "coverage",
    ".nyc_output",
    ".next",
    ".nuxt",
    ".cache",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".gradle",
    ".idea",
    ".vscode",
];

/// File patterns never indexed (gitignore syntax): lockfiles, bundles, logs. Secrets are
/// in [`SECRET_NAMES`].
pub const NOISE_FILES: &[&str] = &[
    "*.min.js",
    "*.min.css",
    "*.map",
    "*.bundle.js",
    "*.chunk.js",
    "package-lock.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "Cargo.lock",
    "poetry.lock",
    "Pipfile.lock",
    "composer.lock",
    "Gemfile.lock",
    "go.sum",
    "*.lock",
    "*.log",
];

/// Secret files by name (globs on the file name, case-insensitive).
pub const SECRET_NAMES: &[&str] = &[
    ".env",
    ".env.*",
    "*.env",
    ".envrc",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.ppk",
    "*.kdbx",
    "*.tfstate",
    "*.tfstate.*",
    "*.tfvars",
    "*.tfvars.json",
    "credentials",
    "credentials*.json",
    "client_secret*.json",
    ".netrc",
    "_netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".htpasswd",
    ".git-credentials",
    "kubeconfig*",
    "secrets.yml",
    "secrets.yaml",
    "secrets.json",
    "secrets.toml",
    "database.yml",
    "appsettings*.json",
];

/// Names matched by [`SECRET_NAMES`] that are templates or public halves, not secrets.
pub const SECRET_NAME_EXCEPTIONS: &[&str] = &[
    ".env.example",
    ".env.sample",
    ".env.template",
    ".env.dist",
    "example.env",
    "sample.env",
    "template.env",
    "*.pub",
];

/// Directories whose whole content is credentials, and credential files known by their
/// place (globs on the `/`-separated path).
pub const SECRET_PATHS: &[&str] = &[
    ".ssh/**",
    ".aws/**",
    ".gnupg/**",
    ".azure/**",
    ".docker/config.json",
    ".kube/config",
    ".config/gcloud/**",
    ".config/gh/hosts.yml",
    ".cargo/credentials",
    ".cargo/credentials.toml",
];

/// Suffixes editors and people add to a copy of a file (`.env~`, `secrets.yaml.bak`): the
/// copy of a secret is judged as the secret.
const BACKUP_SUFFIXES: &[&str] = &[
    "~", ".bak", ".backup", ".orig", ".old", ".save", ".tmp", ".swp", ".swo",
];

/// Why a path or a file is kept out of indexes and reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// Inside a version-control directory (named).
    Vcs(String),
    /// Inside a dependency directory (named).
    Dependency(String),
    /// Inside Satori's state directory.
    StateDirectory,
    /// A secret by name; the pattern that matched.
    SecretName(&'static str),
    /// A secret by content.
    SecretContent(SecretKind),
}

impl Rule {
    /// A stable identifier of the rule (`vcs`, `dependency`, `satori_home`,
    /// `secret_name:<pattern>`, `secret_content:<kind>`).
    pub fn id(&self) -> String {
        match self {
            Rule::Vcs(_) => "vcs".into(),
            Rule::Dependency(_) => "dependency".into(),
            Rule::StateDirectory => "satori_home".into(),
            Rule::SecretName(p) => format!("secret_name:{p}"),
            Rule::SecretContent(k) => format!("secret_content:{}", k.id()),
        }
    }

    /// True for the secrets rules (the ones the opt-out lifts).
    pub fn is_secret(&self) -> bool {
        matches!(self, Rule::SecretName(_) | Rule::SecretContent(_))
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::Vcs(dir) => write!(f, "it is inside the version-control directory '{dir}'"),
            Rule::Dependency(dir) => write!(f, "it is inside the dependency directory '{dir}'"),
            Rule::StateDirectory => write!(f, "it is inside Satori's own state directory"),
            Rule::SecretName(p) => write!(f, "its name matches the secret-file pattern '{p}'"),
            Rule::SecretContent(k) => write!(f, "it contains {k}"),
        }
    }
}

/// Glob sets compiled once per process.
struct Matchers {
    names: GlobSet,
    exceptions: GlobSet,
    paths: GlobSet,
}

static MATCHERS: LazyLock<Matchers> = LazyLock::new(|| {
    let build = |globs: &[&str], prefix: &str| {
        let mut b = GlobSetBuilder::new();
        for g in globs {
            // The lists are constants: a pattern that does not compile is caught by the
            // policy's unit tests, and skipping it here keeps the engine running.
            if let Ok(glob) = globset::GlobBuilder::new(&format!("{prefix}{g}"))
                .case_insensitive(true)
                .literal_separator(true)
                .build()
            {
                b.add(glob);
            }
        }
        b.build().unwrap_or_else(|_| GlobSet::empty())
    };
    Matchers {
        names: build(SECRET_NAMES, ""),
        exceptions: build(SECRET_NAME_EXCEPTIONS, ""),
        paths: build(SECRET_PATHS, "**/"),
    }
});

/// The policy in force for one engine.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// The user's home directory (canonical): refused as a root itself.
    user_home: Option<PathBuf>,
    /// Satori's state directory (canonical): refused as a root, never walked or read.
    state_dir: Option<PathBuf>,
    /// The opt-out: secrets rules (names and content) are not applied.
    allow_secrets: bool,
}

impl Policy {
    /// The policy for a user whose home directory is `user_home`; `allow_secrets` lifts the
    /// secrets rules.
    pub fn new(user_home: Option<&Path>, allow_secrets: bool) -> Policy {
        Policy {
            user_home: user_home.map(canonical),
            state_dir: None,
            allow_secrets,
        }
    }

    /// The same policy, protecting `state_dir` (Satori's home) as well.
    pub fn with_state_dir(mut self, state_dir: &Path) -> Policy {
        self.state_dir = Some(canonical(state_dir));
        self
    }

    /// What an index built under this policy depends on: the version of the rules and the
    /// opt-out. Recorded in every manifest; a sync that finds another one rebuilds the index
    /// in full, since a derive would re-read only the files that changed.
    pub fn signature(&self) -> String {
        let secrets = if self.allow_secrets {
            "allowed"
        } else {
            "refused"
        };
        format!("v{POLICY_VERSION};secrets={secrets}")
    }

    /// Whether the secrets rules are lifted.
    pub fn allows_secrets(&self) -> bool {
        self.allow_secrets
    }

    /// Satori's state directory, when known.
    pub fn state_dir(&self) -> Option<&Path> {
        self.state_dir.as_deref()
    }

    /// Why `root` (absolute, canonical) cannot be a codebase root, if it cannot.
    pub fn refuse_root(&self, root: &Path) -> Option<RootRefusal> {
        roots::refuse_root(root, self.user_home.as_deref(), self.state_dir.as_deref())
    }

    /// Why the file at `rel` (`/`-separated, relative to a codebase root, or an absolute
    /// path outside every root) must not be read or indexed, judged by its path alone.
    pub fn path_rule(&self, rel: &str) -> Option<Rule> {
        let parts: Vec<&str> = rel.split('/').filter(|p| !p.is_empty()).collect();
        let (dirs, name) = match parts.split_last() {
            Some((name, dirs)) => (dirs, *name),
            None => return None,
        };
        for dir in dirs {
            if let Some(d) = VCS_DIRS.iter().find(|d| d.eq_ignore_ascii_case(dir)) {
                return Some(Rule::Vcs((*d).to_owned()));
            }
            if let Some(d) = DEPENDENCY_DIRS.iter().find(|d| *d == dir) {
                return Some(Rule::Dependency((*d).to_owned()));
            }
        }
        if self.allow_secrets {
            return None;
        }
        secret_name(name, &parts.join("/"))
    }

    /// Why the file at `abs` (absolute, `/`-separated) must not be read or indexed because of
    /// where it lies on the machine: the secret places ([`SECRET_PATHS`]) judged on the whole
    /// path, so that a root above one (`~/.config`) does not expose `gcloud/credentials.db`.
    pub fn place_rule(&self, abs: &str) -> Option<Rule> {
        if self.allow_secrets {
            return None;
        }
        secret_place(abs)
    }

    /// Whether the walker must not descend into the directory at `rel` (relative to the
    /// root, or absolute: the walker asks both, see [`Policy::place_rule`]).
    pub fn skips_dir(&self, rel: &str) -> bool {
        !self.allow_secrets && MATCHERS.paths.is_match(format!("{rel}/x"))
    }

    /// Why `text` must not be read or indexed, judged by its content.
    pub fn content_rule(&self, text: &str) -> Option<Rule> {
        if self.allow_secrets {
            return None;
        }
        find_secret(text).map(Rule::SecretContent)
    }

    /// The indexer's gate on a file's text: false when it holds a secret (the file is then
    /// skipped).
    pub fn admits(&self, text: &str) -> bool {
        self.content_rule(text).is_none()
    }
}

/// The secret-name rule `name` (a file name) or `path` (its `/`-separated path) matches,
/// either as they are or as the original of a backup copy.
fn secret_name(name: &str, path: &str) -> Option<Rule> {
    let m = &*MATCHERS;
    if let Some(rule) = secret_place(path) {
        return Some(rule);
    }
    let originals = backup_originals(name);
    if m.exceptions.is_match(name) || originals.iter().any(|n| m.exceptions.is_match(n)) {
        return None;
    }
    std::iter::once(name)
        .chain(originals.iter().map(String::as_str))
        .find_map(|n| m.names.matches(n).first().copied())
        .map(|i| Rule::SecretName(SECRET_NAMES[i]))
}

/// The secret place ([`SECRET_PATHS`]) `path` (`/`-separated) lies in, as it is or as the
/// original of a backup copy.
fn secret_place(path: &str) -> Option<Rule> {
    let m = &*MATCHERS;
    std::iter::once(path.to_owned())
        .chain(backup_originals(path))
        .find_map(|p| m.paths.matches(&p).first().copied())
        .map(|i| Rule::SecretName(SECRET_PATHS[i]))
}

/// What `path` (a file name, or a `/`-separated path whose last part is one) may be a backup
/// copy of, its name with the marks of a copy taken off: `secrets.yaml` of
/// `secrets.yaml.bak~`, `.env` of `#.env#` (Emacs); of a Vim swap file both the name and
/// the name without the dot Vim puts before it (`secrets.yaml` of `.secrets.yaml.swp`).
/// Empty when the name carries no such mark.
fn backup_originals(path: &str) -> Vec<String> {
    let (dir, mut name) = match path.rsplit_once('/') {
        Some((dir, name)) => (Some(dir), name),
        None => (None, path),
    };
    let mut swap = false;
    loop {
        let before = name;
        if let Some(inner) = name
            .strip_prefix('#')
            .and_then(|n| n.strip_suffix('#'))
            .filter(|n| !n.is_empty())
        {
            name = inner;
        }
        for suffix in BACKUP_SUFFIXES {
            let lower = name.to_ascii_lowercase();
            if lower.len() > suffix.len() && lower.ends_with(suffix) {
                name = &name[..name.len() - suffix.len()];
                swap |= matches!(*suffix, ".swp" | ".swo");
            }
        }
        if name == before {
            break;
        }
    }
    if name.len() == path.len() - dir.map_or(0, |d| d.len() + 1) {
        return Vec::new();
    }
    let mut names = vec![name];
    if swap && let Some(shown) = name.strip_prefix('.').filter(|n| !n.is_empty()) {
        names.push(shown);
    }
    names
        .into_iter()
        .map(|n| dir.map_or_else(|| n.to_owned(), |d| format!("{d}/{n}")))
        .collect()
}

/// `path` with symlinks resolved; when it does not exist (yet), its parent resolved and the
/// name kept, so that a state directory created later is recognised.
fn canonical(path: &Path) -> PathBuf {
    if let Ok(c) = path.canonicalize() {
        return c;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => parent
            .canonicalize()
            .map_or_else(|_| path.to_path_buf(), |p| p.join(name)),
        _ => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests;
