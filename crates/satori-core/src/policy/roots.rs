//! Which directories may be tracked as codebases: not the filesystem root, not system
//! directories, not the user's home directory itself, not a credential directory (`.ssh`,
//! `.aws`, `.config/gcloud`, ...), not Satori's own state directory.
//!
//! A codebase root decides what `read_file` may read and what the indexer walks, so a root
//! such as `/etc` or `~` would turn a code search tool into a reader of the whole machine.

use std::fmt;
use std::path::{Component, Path, PathBuf};

/// Why a directory cannot be a codebase root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootRefusal {
    /// The filesystem root (`/`, a drive root such as `C:\`).
    FilesystemRoot,
    /// A system directory, or a directory inside one (the system directory is named).
    System(PathBuf),
    /// A directory that holds other people's or the system's trees (`/home`, `/tmp`,
    /// `/usr`): its subdirectories may be projects, the directory itself is not.
    Container(PathBuf),
    /// The user's home directory itself (its subdirectories are fine).
    UserHome(PathBuf),
    /// Satori's state directory, or a directory inside it.
    StateDirectory(PathBuf),
    /// A directory of keys and tokens (`~/.ssh`, `~/.aws`, `~/.config/gcloud`, ...), or a
    /// directory inside one (the credential directory is named).
    Credentials(PathBuf),
}

impl RootRefusal {
    /// A stable identifier of the refusal, for wire reasons and tests.
    pub fn id(&self) -> &'static str {
        match self {
            RootRefusal::FilesystemRoot => "filesystem_root",
            RootRefusal::System(_) => "system_directory",
            RootRefusal::Container(_) => "system_directory",
            RootRefusal::UserHome(_) => "home_directory",
            RootRefusal::StateDirectory(_) => "satori_home",
            RootRefusal::Credentials(_) => "credential_directory",
        }
    }
}

impl fmt::Display for RootRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RootRefusal::FilesystemRoot => write!(f, "it is the filesystem root"),
            RootRefusal::System(dir) => {
                write!(f, "it is part of the system directory '{}'", dir.display())
            }
            RootRefusal::Container(dir) => write!(
                f,
                "'{}' is a system directory that holds other trees, not a project (a project inside it can be indexed)",
                dir.display()
            ),
            RootRefusal::UserHome(dir) => write!(
                f,
                "'{}' is the home directory itself (index a project inside it instead)",
                dir.display()
            ),
            RootRefusal::StateDirectory(dir) => write!(
                f,
                "it is inside Satori's own state directory '{}'",
                dir.display()
            ),
            RootRefusal::Credentials(dir) => write!(
                f,
                "'{}' is a credential directory, which holds keys and tokens, not a project",
                dir.display()
            ),
        }
    }
}

/// Unix and macOS directories refused together with everything inside them: the operating
/// system's own files, kernel interfaces, devices and machine-wide configuration.
const SYSTEM_TREES: &[&str] = &[
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/proc",
    "/run",
    "/sbin",
    "/snap",
    "/sys",
    "/usr/bin",
    "/usr/include",
    "/usr/lib",
    "/usr/lib32",
    "/usr/lib64",
    "/usr/libexec",
    "/usr/sbin",
    "/usr/share",
    "/var/backups",
    "/var/cache",
    "/var/db",
    "/var/lib",
    "/var/log",
    "/var/mail",
    "/var/run",
    "/var/spool",
    // macOS: `/etc` and `/var` are links into `/private`, and roots arrive canonical.
    "/private/etc",
    "/private/var/db",
    "/private/var/log",
    "/private/var/root",
    "/System",
    "/Library",
    "/Applications",
    "/cores",
];

/// Directories refused themselves whose subdirectories are commonly projects
/// (`/home/ana/app`, `/var/www/site`, `/tmp/checkout`, `/opt/service`).
const CONTAINERS: &[&str] = &[
    "/home",
    "/Users",
    "/root",
    "/tmp",
    "/usr",
    "/usr/local",
    "/var",
    "/opt",
    "/srv",
    "/mnt",
    "/media",
    "/Volumes",
    "/private",
    "/private/tmp",
    "/private/var",
    "/private/var/folders",
];

/// Directories of keys, tokens and registry logins, refused with everything inside them
/// wherever they are (not only in the home directory: a copied `.ssh` is as secret), as
/// runs of path components compared case-insensitively. The policy's secret places
/// (`SECRET_PATHS`) keep their files out of any root above them too.
const CREDENTIAL_DIRS: &[&[&str]] = &[
    &[".ssh"],
    &[".aws"],
    &[".gnupg"],
    &[".azure"],
    &[".docker"],
    &[".kube"],
    &[".config", "gcloud"],
    &[".config", "gh"],
];

/// Windows directories refused with everything inside them (compared case-insensitively,
/// after the drive).
const WINDOWS_SYSTEM_TREES: &[&str] = &[
    "windows",
    "program files",
    "program files (x86)",
    "programdata",
    "$recycle.bin",
    "system volume information",
];

/// Windows directories refused themselves (after the drive).
const WINDOWS_CONTAINERS: &[&str] = &["users"];

/// Why `root` (absolute, canonical) cannot be a codebase root, if it cannot. `user_home` and
/// `state_dir` are canonical too (or as given when they do not exist).
pub(crate) fn refuse_root(
    root: &Path,
    user_home: Option<&Path>,
    state_dir: Option<&Path>,
) -> Option<RootRefusal> {
    if root.parent().is_none() {
        return Some(RootRefusal::FilesystemRoot);
    }
    if let Some(state) = state_dir
        && root.starts_with(state)
    {
        return Some(RootRefusal::StateDirectory(state.to_path_buf()));
    }
    if let Some(home) = user_home
        && root == home
    {
        return Some(RootRefusal::UserHome(home.to_path_buf()));
    }
    if let Some(dir) = credential_dir(root) {
        return Some(RootRefusal::Credentials(dir));
    }
    if let Some(drive_rel) = windows_tail(root) {
        let first = drive_rel.first().map(String::as_str).unwrap_or_default();
        if WINDOWS_SYSTEM_TREES.contains(&first) {
            return Some(RootRefusal::System(root.to_path_buf()));
        }
        if drive_rel.len() == 1 && WINDOWS_CONTAINERS.contains(&first) {
            return Some(RootRefusal::Container(root.to_path_buf()));
        }
        return None;
    }
    if let Some(tree) = SYSTEM_TREES.iter().find(|t| root.starts_with(t)) {
        return Some(RootRefusal::System(PathBuf::from(tree)));
    }
    if CONTAINERS.iter().any(|c| root == Path::new(c)) {
        return Some(RootRefusal::Container(root.to_path_buf()));
    }
    None
}

/// The first credential directory on the way to `root` (`/home/ana/.ssh` of
/// `/home/ana/.ssh/keys`), if `root` is one or lies inside one.
fn credential_dir(root: &Path) -> Option<PathBuf> {
    let components: Vec<Component> = root.components().collect();
    let name = |c: &Component| match c {
        Component::Normal(s) => Some(s.to_string_lossy().to_lowercase()),
        _ => None,
    };
    let names: Vec<Option<String>> = components.iter().map(name).collect();
    for start in 0..names.len() {
        for dir in CREDENTIAL_DIRS {
            let end = start + dir.len();
            let hit = end <= names.len()
                && dir
                    .iter()
                    .zip(&names[start..end])
                    .all(|(want, got)| got.as_deref() == Some(*want));
            if hit {
                return Some(components[..end].iter().collect());
            }
        }
    }
    None
}

/// The lower-cased components after the drive of a Windows path (`C:\Windows\x` →
/// `["windows", "x"]`); `None` for paths without a drive prefix.
fn windows_tail(path: &Path) -> Option<Vec<String>> {
    let mut components = path.components();
    if !matches!(components.next(), Some(Component::Prefix(_))) {
        return None;
    }
    Some(
        components
            .filter_map(|c| match c {
                Component::Normal(s) => Some(s.to_string_lossy().to_lowercase()),
                _ => None,
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(root: &str, expect: Option<&str>) {
        let got = refuse_root(
            Path::new(root),
            Some(Path::new("/home/ana")),
            Some(Path::new("/home/ana/.satori")),
        );
        assert_eq!(got.as_ref().map(RootRefusal::id), expect, "{root}");
    }

    #[test]
    fn roots() {
        check("/", Some("filesystem_root"));
        check("/etc", Some("system_directory"));
        check("/etc/nginx", Some("system_directory"));
        check("/proc/self", Some("system_directory"));
        check("/usr", Some("system_directory"));
        check("/usr/lib/python3", Some("system_directory"));
        check("/var", Some("system_directory"));
        check("/var/lib/docker", Some("system_directory"));
        check("/home", Some("system_directory"));
        check("/tmp", Some("system_directory"));
        check("/private/etc", Some("system_directory"));
        check("/home/ana", Some("home_directory"));
        check("/home/ana/.satori", Some("satori_home"));
        check("/home/ana/.satori/indexes/abc", Some("satori_home"));
        check("/home/ana/src/app", None);
        check("/home/ana/.satori-notes", None);
        check("/home/bob", None);
        check("/var/www/site", None);
        check("/usr/local/src/app", None);
        check("/tmp/checkout", None);
        check("/opt/service", None);
        check("/etcetera", None);
        check("/private/var/folders/x/T/tmp1", None);
    }

    #[test]
    fn credential_directories() {
        for (root, dir) in [
            ("/home/ana/.ssh", Some("/home/ana/.ssh")),
            ("/home/ana/.ssh/keys", Some("/home/ana/.ssh")),
            ("/home/ana/.aws", Some("/home/ana/.aws")),
            ("/home/ana/.gnupg", Some("/home/ana/.gnupg")),
            ("/home/ana/.azure", Some("/home/ana/.azure")),
            ("/home/ana/.docker", Some("/home/ana/.docker")),
            ("/home/ana/.kube", Some("/home/ana/.kube")),
            ("/home/ana/.config/gcloud", Some("/home/ana/.config/gcloud")),
            (
                "/home/ana/.config/gcloud/configurations",
                Some("/home/ana/.config/gcloud"),
            ),
            ("/home/ana/.config/gh", Some("/home/ana/.config/gh")),
            // Wherever they are, in any case.
            ("/home/bob/backup/.SSH", Some("/home/bob/backup/.SSH")),
            ("/srv/ci/.kube/cache", Some("/srv/ci/.kube")),
            // Their neighbours are not credentials.
            ("/home/ana/.config", None),
            ("/home/ana/.config/nvim", None),
            ("/home/ana/src/gcloud", None),
            ("/home/ana/src/gh", None),
            ("/home/ana/src/sshd", None),
            ("/home/ana/src/app/.ssh-config-tool", None),
        ] {
            let got = refuse_root(Path::new(root), Some(Path::new("/home/ana")), None);
            let want = dir.map(|d| RootRefusal::Credentials(PathBuf::from(d)));
            assert_eq!(got, want, "{root}");
        }
    }
}
