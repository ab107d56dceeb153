//! Helpers shared by the end-to-end tests: where the built binaries are, and a fixture repo.

use std::path::{Path, PathBuf};

/// The path of a workspace binary built next to the running test (`target/<profile>/<name>`).
pub fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile> directory");
    let path = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.is_file(),
        "{} is missing: build the workspace binaries first (cargo build --workspace --bins)",
        path.display()
    );
    path
}

/// Writes `files` under `root`.
pub fn write_files(root: &Path, files: &[(&str, &str)]) {
    for (rel, body) in files {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, body).expect("write");
    }
}

/// A small repository with code worth searching.
pub fn small_repo(root: &Path) {
    write_files(
        root,
        &[
            (
                "src/retry.py",
                "def retry_with_backoff(fn, attempts=3):\n    \"\"\"Calls fn, sleeping longer after each failure.\"\"\"\n    for i in range(attempts):\n        try:\n            return fn()\n        except Exception:\n            sleep(2 ** i)\n",
            ),
            (
                "src/config.rs",
                "/// Loads the configuration file.\npub fn load_config(path: &str) -> String {\n    std::fs::read_to_string(path).unwrap_or_default()\n}\n",
            ),
            ("README.md", "# Demo\n\nA demo repository.\n"),
        ],
    );
}
