//! What the client tests share: the scriptable fake server of the CLI tests.

use std::path::{Path, PathBuf};

/// The fake MCP server script, made executable (a fresh checkout may not keep the bit).
pub fn fake_server() -> PathBuf {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../satori-cli/tests/fake_servers/mcp_fake.py");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mut perms = std::fs::metadata(&path).expect("fake exists").permissions();
        perms.set_mode(0o755);
        std::fs::set_permissions(&path, perms).expect("chmod fake");
    }
    path
}
