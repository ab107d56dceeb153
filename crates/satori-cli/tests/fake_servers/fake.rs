//! The scriptable fake `satori` server (`mcp_fake.py`) as the CLI and client
//! tests start it: the script's path, and the tool list it serves, written
//! from `satori_protocol::tools()` so that its schemas are the contract's
//! (the fake refuses to start without them).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::{Value, json};

/// Environment variable that points the fake at its tool list.
pub const TOOLS_FILE_ENV: &str = "FAKE_TOOLS_FILE";

/// The fake MCP server script, made executable (a checkout may not keep the bit).
pub fn fake_server() -> PathBuf {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../satori-cli/tests/fake_servers/mcp_fake.py");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mut perms = std::fs::metadata(&path)
            .expect("fake server exists")
            .permissions();
        if perms.mode() & 0o111 != 0o111 {
            perms.set_mode(0o755);
            std::fs::set_permissions(&path, perms).expect("chmod fake server");
        }
    }
    path
}

/// The contract's tools as `tools/list` entries, in registry order.
pub fn protocol_tools() -> Vec<Value> {
    satori_protocol::tools()
        .iter()
        .map(|def| {
            json!({
                "name": def.name,
                "title": def.title,
                "description": def.description,
                "inputSchema": def.input_schema,
            })
        })
        .collect()
}

/// A file holding [`protocol_tools`], for the fake's `FAKE_TOOLS_FILE`.
/// Written once per test process; the rename makes it appear whole to a
/// fake started by a concurrent test binary.
pub fn tools_file() -> &'static Path {
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    FILE.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let path = dir.join("fake-satori-tools.json");
        let partial = dir.join(format!("fake-satori-tools.json.{}", std::process::id()));
        let text = serde_json::to_string(&protocol_tools()).expect("tools serialize");
        std::fs::write(&partial, text).expect("write the fake's tool list");
        std::fs::rename(&partial, &path).expect("publish the fake's tool list");
        path
    })
}
