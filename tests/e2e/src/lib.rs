//! Helpers shared by the end-to-end tests: where the built binaries are, a fixture repo, and
//! a shared `satori` server started as a real process.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

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

/// A shared `satori` started with `args` over `home` (with `env` added), and the address it
/// printed once it listened. Its later stderr is read and dropped, so it never blocks.
pub fn start_shared(home: &Path, args: &[&str], env: &[(&str, &str)]) -> (Child, String) {
    let mut cmd = Command::new(binary("satori"));
    cmd.args(args)
        .env("SATORI_HOME", home)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut server = cmd.spawn().expect("spawn satori");
    let mut stderr = BufReader::new(server.stderr.take().expect("stderr"));
    let mut line = String::new();
    stderr.read_line(&mut line).expect("read stderr");
    let at = line
        .trim()
        .strip_prefix("satori: serving MCP at ")
        .unwrap_or_else(|| panic!("unexpected first line: {line}"))
        .to_string();
    std::thread::spawn(move || {
        let mut sink = String::new();
        while stderr.read_line(&mut sink).is_ok_and(|n| n > 0) {
            sink.clear();
        }
    });
    (server, at)
}

/// Runs `cmd` with `env` added; its output, and its stdout read as the one JSON document a
/// CLI prints.
pub fn json_output(cmd: &mut Command, env: &[(&str, &str)]) -> (Output, serde_json::Value) {
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run the command");
    let stdout = String::from_utf8(out.stdout.clone()).expect("UTF-8 stdout");
    let doc = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {stdout:?}"));
    (out, doc)
}
