//! Locating the `satori` server executable without depending on the cwd.
//!
//! Order: the `SATORI_SERVER_BIN` environment variable, then a `satori`
//! executable installed next to the running client (after resolving symlinks,
//! so a `~/.local/bin/satori-cli -> /opt/satori/bin/satori-cli` link still finds
//! `/opt/satori/bin/satori`), then a `satori` next to the link itself: package
//! managers that install each program in its own directory and link both into
//! one `bin` (Homebrew's formulas `satori-mcp` and `satori-cli`) have the two
//! side by side only there.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::ClientError;

/// Environment variable that overrides server discovery.
pub const SERVER_BIN_ENV: &str = satori_protocol::env::SERVER_BIN;

/// File stem of the server executable.
pub const SERVER_BIN_NAME: &str = "satori";

/// Find the server executable for this process.
pub fn resolve_server_bin() -> Result<PathBuf, ClientError> {
    resolve_server_bin_from(std::env::var_os(SERVER_BIN_ENV), std::env::current_exe())
}

/// The pure part of [`resolve_server_bin`], with its inputs made explicit so
/// every branch can be tested.
pub fn resolve_server_bin_from(
    env_value: Option<OsString>,
    current_exe: std::io::Result<PathBuf>,
) -> Result<PathBuf, ClientError> {
    if let Some(value) = env_value.filter(|v| !v.is_empty()) {
        let path = PathBuf::from(value);
        // An explicit override that points nowhere is a configuration error;
        // silently falling back to the sibling binary would hide it.
        return if path.is_file() {
            Ok(path)
        } else {
            Err(ClientError::ServerNotFound(format!(
                "{SERVER_BIN_ENV}={} is not a file",
                path.display()
            )))
        };
    }

    let exe = current_exe.map_err(|e| {
        ClientError::ServerNotFound(format!(
            "{SERVER_BIN_ENV} is unset and the running executable's path is unknown ({e})"
        ))
    })?;
    // canonicalize resolves every symlink on the way; if it fails (the binary
    // was deleted while running), the unresolved path is still worth a try.
    let resolved = exe.canonicalize().unwrap_or_else(|_| exe.clone());
    let beside_link = sibling(&exe).filter(|path| path.is_file());
    match sibling(&resolved) {
        Some(path) if path.is_file() => Ok(path),
        Some(path) => beside_link.ok_or_else(|| {
            ClientError::ServerNotFound(format!(
                "{SERVER_BIN_ENV} is unset and {} does not exist",
                path.display()
            ))
        }),
        None => Err(ClientError::ServerNotFound(format!(
            "{SERVER_BIN_ENV} is unset and {} has no parent directory",
            resolved.display()
        ))),
    }
}

/// `<dir of exe>/satori` plus the platform's executable suffix (`.exe`).
fn sibling(exe: &Path) -> Option<PathBuf> {
    let dir = exe.parent()?;
    Some(dir.join(format!("{SERVER_BIN_NAME}{}", std::env::consts::EXE_SUFFIX)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server_name() -> String {
        format!("{SERVER_BIN_NAME}{}", std::env::consts::EXE_SUFFIX)
    }

    #[test]
    fn env_override_wins_when_it_is_a_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bin = dir.path().join("custom-server");
        std::fs::write(&bin, b"").expect("write");
        let got = resolve_server_bin_from(Some(bin.clone().into()), Ok(PathBuf::from("/nope")));
        assert_eq!(got.ok(), Some(bin));
    }

    #[test]
    fn env_override_pointing_nowhere_is_an_error_naming_the_variable() {
        let err = resolve_server_bin_from(Some("does/not/exist".into()), Ok(PathBuf::from("x")))
            .expect_err("must fail");
        let msg = err.to_string();
        assert!(msg.contains("SATORI_SERVER_BIN=does/not/exist"), "{msg}");
    }

    #[test]
    fn sibling_of_the_running_executable_is_found() {
        let dir = tempfile::tempdir().expect("tempdir");
        let exe = dir.path().join("satori-cli");
        std::fs::write(&exe, b"").expect("write");
        std::fs::write(dir.path().join(server_name()), b"").expect("write");
        let got = resolve_server_bin_from(None, Ok(exe)).expect("found");
        assert_eq!(
            got.file_name().and_then(|n| n.to_str()),
            Some(server_name().as_str())
        );
    }

    #[cfg(unix)]
    #[test]
    fn symlinked_executable_resolves_to_the_real_directory() {
        let real = tempfile::tempdir().expect("tempdir");
        let links = tempfile::tempdir().expect("tempdir");
        let exe = real.path().join("satori-cli");
        std::fs::write(&exe, b"").expect("write");
        std::fs::write(real.path().join(server_name()), b"").expect("write");
        let link = links.path().join("satori-cli");
        std::os::unix::fs::symlink(&exe, &link).expect("symlink");
        let got = resolve_server_bin_from(None, Ok(link)).expect("found");
        let want = real
            .path()
            .join(server_name())
            .canonicalize()
            .expect("canon");
        assert_eq!(got, want);
    }

    #[cfg(unix)]
    #[test]
    fn a_server_beside_the_link_is_found_when_none_is_beside_the_target() {
        // Homebrew: Cellar/satori-cli/<v>/bin/satori-cli linked into bin/, next to the
        // server's own link.
        let cellar = tempfile::tempdir().expect("tempdir");
        let bin = tempfile::tempdir().expect("tempdir");
        let exe = cellar.path().join("satori-cli");
        std::fs::write(&exe, b"").expect("write");
        std::fs::write(bin.path().join(server_name()), b"").expect("write");
        let link = bin.path().join("satori-cli");
        std::os::unix::fs::symlink(&exe, &link).expect("symlink");
        let got = resolve_server_bin_from(None, Ok(link)).expect("found");
        assert_eq!(got, bin.path().join(server_name()));
    }

    #[test]
    fn missing_sibling_names_what_was_looked_for() {
        let dir = tempfile::tempdir().expect("tempdir");
        let exe = dir.path().join("satori-cli");
        std::fs::write(&exe, b"").expect("write");
        let msg = resolve_server_bin_from(Some("".into()), Ok(exe))
            .expect_err("must fail")
            .to_string();
        assert!(msg.contains("SATORI_SERVER_BIN is unset"), "{msg}");
        assert!(msg.contains(&server_name()), "{msg}");
    }
}
