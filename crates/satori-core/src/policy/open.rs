//! Opening a file the policy judged by its path, so that what is read is that file: a file
//! or a directory on its way swapped for a symbolic link after the check (to a key outside
//! the codebase, say) makes the open fail instead of following the link.

use std::fs::File;
use std::io;
use std::path::Path;

/// Opens `path` (absolute and canonical: links already resolved, as the checks saw it) for
/// reading, refusing to follow any symbolic link on the way. Each component is opened from
/// the directory before it, without following links, so a swap anywhere on the path after
/// the check fails the open. `nonblocking` opens without waiting, for a path that may have
/// been replaced by a named pipe.
#[cfg(unix)]
pub fn open_unlinked(path: &Path, nonblocking: bool) -> io::Result<File> {
    use std::ffi::CString;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    use std::path::Component;

    let invalid = |why: &str| io::Error::new(io::ErrorKind::InvalidInput, why.to_owned());
    let mut components = path.components();
    if components.next() != Some(Component::RootDir) {
        return Err(invalid("the path is not absolute"));
    }
    let mut names = Vec::new();
    for c in components {
        match c {
            Component::Normal(name) => names.push(CString::new(name.as_bytes())?),
            _ => return Err(invalid("the path is not canonical")),
        }
    }
    let Some((file_name, dirs)) = names.split_last() else {
        return Err(invalid("the path names no file"));
    };
    // Directories are opened only to look names up in them.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let dir_access = libc::O_PATH | libc::O_DIRECTORY;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let dir_access = libc::O_RDONLY | libc::O_DIRECTORY;
    let open_at = |dir: libc::c_int, name: &CString, flags: libc::c_int| {
        let flags = flags | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: `name` is a valid C string and `dir` an open descriptor (or AT_FDCWD); a
        // non-negative result is a new descriptor that nothing else owns.
        let fd = unsafe { libc::openat(dir, name.as_ptr(), flags) };
        if fd < 0 {
            let e = io::Error::last_os_error();
            return Err(match e.raw_os_error() {
                // A link (or a file) where the judged path had a file or a directory.
                Some(libc::ELOOP | libc::ENOTDIR) => io::Error::other(
                    "it changed after it was checked (a symbolic link or another file now stands in its path)",
                ),
                _ => e,
            });
        }
        // SAFETY: see above; the descriptor is closed when dropped.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    };
    let mut dir = open_at(libc::AT_FDCWD, &CString::new("/")?, dir_access)?;
    for name in dirs {
        dir = open_at(dir.as_raw_fd(), name, dir_access)?;
    }
    let extra = if nonblocking { libc::O_NONBLOCK } else { 0 };
    let fd = open_at(dir.as_raw_fd(), file_name, libc::O_RDONLY | extra)?;
    Ok(File::from(fd))
}

/// Opens `path` for reading. Making a symbolic link takes a privilege on Windows, so the
/// swap guarded against on Unix is left to the checks made before.
#[cfg(not(unix))]
pub fn open_unlinked(path: &Path, _nonblocking: bool) -> io::Result<File> {
    File::open(path)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn links_on_the_way_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("repo/src")).unwrap();
        std::fs::write(root.join("repo/src/a.txt"), "inside").unwrap();
        std::fs::write(root.join("secret.txt"), "outside").unwrap();
        std::os::unix::fs::symlink(root.join("secret.txt"), root.join("repo/src/b.txt")).unwrap();
        std::os::unix::fs::symlink(root.join("repo/src"), root.join("repo/lib")).unwrap();
        let read = |rel: &str| {
            open_unlinked(&root.join(rel), false)
                .and_then(std::io::read_to_string)
                .map_err(|e| e.to_string())
        };
        assert_eq!(read("repo/src/a.txt").as_deref(), Ok("inside"));
        for rel in ["repo/src/b.txt", "repo/lib/a.txt"] {
            let err = read(rel).unwrap_err();
            assert!(err.contains("symbolic link"), "{rel}: {err}");
        }
        assert!(read("repo/src/none.txt").is_err());
        assert!(open_unlinked(Path::new("repo/src/a.txt"), false).is_err());
    }
}
