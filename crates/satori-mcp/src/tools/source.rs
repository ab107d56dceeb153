//! Opening a file a tool was asked to read: regular files only, never blocking on a pipe,
//! and the wording of a policy refusal. Shared by `read_file` and `file_outline`.

use std::fs::{File, Metadata};
use std::path::Path;

use rmcp::model::CallToolResult;
use satori_core::Rule;
use satori_protocol::env;

use super::text;

/// Opens `path` (absolute, with links resolved: the path the policy judged) for reading,
/// without following a link that replaced it or a directory on its way since it was judged
/// (see [`satori_core::open_unlinked`]), and without waiting: a path replaced by a named
/// pipe must not hold the call until some writer appears (the open file is checked again,
/// and only a regular file is read).
pub(crate) fn open_regular(path: &Path) -> std::io::Result<File> {
    satori_core::open_unlinked(path, true)
}

/// The refusal of anything but a regular file, naming what it is: a named pipe, a socket or
/// a device has no size to cap and may never end (or never start) its data.
pub(crate) fn not_regular(shown: &str, meta: &Metadata) -> Option<CallToolResult> {
    let ft = meta.file_type();
    if ft.is_file() {
        return None;
    }
    if ft.is_dir() {
        return Some(text(format!("Error: '{shown}' is not a file."), true));
    }
    let mut kind = "a special file";
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            kind = "a named pipe (FIFO)";
        } else if ft.is_socket() {
            kind = "a socket";
        } else if ft.is_block_device() || ft.is_char_device() {
            kind = "a device";
        }
    }
    Some(text(
        format!(
            "Error: '{shown}' is {kind}, not a regular file; read_file reads regular files only."
        ),
        true,
    ))
}

/// Bytes read first to tell text from binary (the heuristic looks at the first 8 KiB).
pub(crate) const HEAD_BYTES: usize = 8192;

/// `Error: <tool> refuses '<shown>': <rule>.`, with the opt-out of secrets rules.
pub(crate) fn refusal(tool: &str, shown: &str, rule: &Rule) -> String {
    let lift = if rule.is_secret() {
        format!(
            " Files that look like secrets are never returned; the user can start the server with {}=true to lift this rule.",
            env::ALLOW_SECRETS
        )
    } else {
        String::new()
    };
    format!("Error: {tool} refuses '{shown}': {rule}.{lift}")
}
