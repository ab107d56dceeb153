//! The per-user server `satori-cli` attaches to when it is given no endpoint: the second call
//! is answered by the server the first one started; `SATORI_DAEMON=off` and `--no-daemon`
//! keep one process per call; a stale socket is replaced and a live foreign one is never
//! touched; clients racing to start end with one server; a call it dies under is answered by
//! a server of the call's own; it exits when idle, drains when a newer build replaces it, and
//! `daemon stop` during a build hands the build off.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use satori_e2e::{binary, json_output, small_repo, write_files};
use serde_json::{Value, json};

/// A home whose per-user servers are stopped when the test ends, whatever happened.
struct Home {
    dir: tempfile::TempDir,
    server_bin: PathBuf,
}

impl Home {
    fn new() -> Home {
        Home {
            dir: tempfile::tempdir().unwrap(),
            server_bin: binary("satori"),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `satori-cli ARGS` over this home, with the per-user server on.
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(binary("satori-cli"));
        cmd.env("SATORI_HOME", self.path())
            .env("SATORI_SERVER_BIN", &self.server_bin)
            .env_remove("SATORI_DAEMON")
            .env("SATORI_DAEMON_IDLE_SECS", "120")
            .args(args);
        cmd
    }

    fn cli(&self, args: &[&str], env: &[(&str, &str)]) -> (Output, Value) {
        json_output(&mut self.command(args), env)
    }

    /// A call that finds no per-user server and starts it; the new server's pid.
    fn start(&self) -> u64 {
        let (out, doc) = self.cli(&["--debug", "tools", "list"], &[]);
        assert_eq!(out.status.code(), Some(0), "{doc} {}", stderr(&out));
        assert!(started(&out), "{}", stderr(&out));
        self.wait_running()
    }

    /// `daemon status`'s document.
    fn status(&self) -> Value {
        let (out, doc) = self.cli(&["daemon", "status"], &[]);
        assert_eq!(out.status.code(), Some(0), "{doc}");
        doc
    }

    /// The pid of the server this caller attaches to, when it runs.
    fn running_pid(&self) -> Option<u64> {
        let doc = self.status();
        doc["current"]["running"]
            .as_bool()
            .unwrap_or(false)
            .then(|| doc["current"]["pid"].as_u64())
            .flatten()
    }

    /// The pid of the server this caller attaches to, once it listens (a call that starts it
    /// does not wait for it: it runs in a server of its own).
    fn wait_running(&self) -> u64 {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(pid) = self.running_pid() {
                return pid;
            }
            assert!(
                Instant::now() < deadline,
                "the per-user server never listened"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn run_dir(&self) -> PathBuf {
        self.path().join("run")
    }

    fn pid_files(&self) -> usize {
        std::fs::read_dir(self.run_dir()).map_or(0, |d| {
            d.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                .count()
        })
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        let _ = Command::new(binary("satori-cli"))
            .env("SATORI_HOME", self.path())
            .args(["daemon", "stop"])
            .output();
    }
}

fn alive(pid: u64) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| s.split_whitespace().nth(2) == Some("Z"))
}

fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A small repository in a directory of its own, and its canonical path.
fn small_repo_dir() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    small_repo(dir.path());
    let path = dir.path().canonicalize().unwrap();
    (dir, path.to_str().unwrap().to_owned())
}

/// Whether a `--debug` call started the per-user server.
fn started(out: &Output) -> bool {
    stderr(out).contains("started the per-user server")
}

#[test]
fn the_second_call_is_answered_by_the_server_the_first_started() {
    let home = Home::new();
    let (repo_dir, repo) = small_repo_dir();
    let repo = repo.as_str();

    let pid = home.start();
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let socket = PathBuf::from(home.status()["current"]["socket"].as_str().unwrap());
        assert_eq!(mode(&socket), 0o600, "only this user may connect");
        assert_eq!(mode(&home.run_dir()), 0o700);
    }

    let create = json!({"action": "create", "path": repo}).to_string();
    let (out, doc) = home.cli(
        &[
            "--debug",
            "tool",
            "call",
            "manage_index",
            "--args-json",
            &create,
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{doc} {}", stderr(&out));
    assert!(
        stderr(&out).contains("attached to the per-user server"),
        "{}",
        stderr(&out)
    );
    let (out, doc) = home.cli(
        &[
            "search_codebase",
            "--path",
            repo,
            "--query",
            "load the configuration file",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{doc} {}", stderr(&out));
    assert!(doc.to_string().contains("load_config"), "{doc}");
    assert_eq!(home.running_pid(), Some(pid), "the same server answered");
    assert_eq!(home.pid_files(), 1);

    // An edit made just before a call is seen by it (the watcher, or the walk).
    write_files(
        repo_dir.path(),
        &[(
            "src/fresh.rs",
            "/// Rotates the signing keys.\npub fn rotate_signing_keys() {}\n",
        )],
    );
    let (out, doc) = home.cli(
        &[
            "search_codebase",
            "--path",
            repo,
            "--query",
            "rotate_signing_keys",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{doc} {}", stderr(&out));
    assert!(doc.to_string().contains("fresh.rs"), "{doc}");
}

#[test]
fn off_keeps_one_process_per_call() {
    let home = Home::new();
    for (args, env) in [
        (vec!["tools", "list"], vec![("SATORI_DAEMON", "off")]),
        (vec!["--no-daemon", "tools", "list"], vec![]),
        // Telemetry lines asked for on stderr come only from a server of the call's own.
        (vec!["tools", "list"], vec![("SATORI_TELEMETRY", "stderr")]),
    ] {
        let (out, doc) = home.cli(&args, &env);
        assert_eq!(out.status.code(), Some(0), "{doc}");
        assert_eq!(home.pid_files(), 0, "{args:?} {env:?}");
    }
    let (_, doc) = home.cli(&["daemon", "status"], &[("SATORI_DAEMON", "off")]);
    assert_eq!(doc["current"]["off"], "SATORI_DAEMON=off");
    let (out, doc) = home.cli(&["tools", "list"], &[("SATORI_DAEMON", "maybe")]);
    assert_eq!(out.status.code(), Some(2), "{doc}");
    assert!(
        stderr(&out).contains("SATORI_DAEMON must be 'on' or 'off'"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_stale_socket_is_replaced_and_a_live_foreign_one_left_alone() {
    use std::os::unix::fs::MetadataExt;
    let home = Home::new();
    let socket = PathBuf::from(home.status()["current"]["socket"].as_str().unwrap());
    std::fs::create_dir_all(socket.parent().unwrap()).unwrap();

    // A socket left by a server that was killed: nobody listens.
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    let pid = home.start();
    let (out, _) = home.cli(&["daemon", "stop"], &[]);
    assert_eq!(out.status.code(), Some(0));
    assert!(!alive(pid));

    // Something else listens there and does not speak MCP: the call runs in a server of its
    // own, says why, and the socket is not touched.
    let foreign = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let inode = std::fs::metadata(&socket).unwrap().ino();
    std::thread::spawn(move || {
        for stream in foreign.incoming().flatten() {
            drop(stream);
        }
    });
    let (out, doc) = home.cli(&["tools", "list"], &[]);
    assert_eq!(out.status.code(), Some(0), "{doc} {}", stderr(&out));
    assert!(
        stderr(&out).contains("[DAEMON_RECOVERY]"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::metadata(&socket).unwrap().ino(), inode);
}

#[test]
fn clients_racing_to_start_end_with_one_server() {
    let home = Home::new();
    let at_once: Vec<_> = (0..4)
        .map(|_| {
            let mut cmd = home.command(&["--debug", "tools", "list"]);
            std::thread::spawn(move || cmd.output().unwrap())
        })
        .collect();
    let mut starts = 0;
    for h in at_once {
        let out = h.join().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        starts += usize::from(started(&out));
    }
    assert_eq!(
        starts, 1,
        "four at once: one started the server, three attached"
    );
    assert_eq!(home.pid_files(), 1);
}

/// The per-user server dies while a call waits on it (stopped, so the call is surely in
/// flight, then killed): the call is answered by a server of its own, says so on stderr, and
/// the next call starts a new per-user server.
#[test]
fn a_server_that_dies_under_a_call_leaves_it_answered() {
    let home = Home::new();
    let (_repo_dir, repo) = small_repo_dir();
    let repo = repo.as_str();
    let create = json!({"action": "create", "path": repo}).to_string();
    let (out, doc) = home.cli(
        &["tool", "call", "manage_index", "--args-json", &create],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{doc} {}", stderr(&out));
    let pid = home.wait_running();

    let signal = |sig| {
        // SAFETY: a plain kill(2) of the server this test started.
        let rc = unsafe { libc::kill(pid as libc::pid_t, sig) };
        assert_eq!(rc, 0, "signal {sig} to {pid}");
    };
    signal(libc::SIGSTOP);
    let call = home
        .command(&[
            "search_codebase",
            "--path",
            repo,
            "--query",
            "load the configuration file",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The call connects (the kernel queues it) and waits for an answer that cannot come; a
    // call that had not connected yet would find no server and start one, not recover.
    std::thread::sleep(Duration::from_millis(1500));
    signal(libc::SIGKILL);
    let out = call.wait_with_output().unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(out.status.code(), Some(0), "{doc} {}", stderr(&out));
    assert!(doc.to_string().contains("load_config"), "{doc}");
    assert!(
        stderr(&out).contains("[DAEMON_RECOVERY]"),
        "{}",
        stderr(&out)
    );
    wait_until(
        "the killed server to be gone",
        Duration::from_secs(10),
        || !alive(pid),
    );

    let (out, doc) = home.cli(&["--debug", "tools", "list"], &[]);
    assert_eq!(out.status.code(), Some(0), "{doc} {}", stderr(&out));
    assert!(started(&out), "{}", stderr(&out));
    // The new server listens before it replaces the dead one's pid file.
    wait_until("the new server", Duration::from_secs(30), || {
        home.running_pid().is_some_and(|p| p != pid)
    });
}

#[test]
fn an_idle_server_exits() {
    let home = Home::new();
    for _ in 0..2 {
        let (out, _) = home.cli(&["tools", "list"], &[("SATORI_DAEMON_IDLE_SECS", "1")]);
        assert_eq!(out.status.code(), Some(0));
    }
    let pid = home.status()["servers"][0]["pid"]
        .as_u64()
        .expect("the server the first call started");
    wait_until("the idle server to exit", Duration::from_secs(20), || {
        !alive(pid)
    });
    assert_eq!(home.pid_files(), 0, "its pid file is removed");
}

#[test]
fn a_new_build_of_the_server_gets_its_own_and_the_old_one_drains() {
    let mut home = Home::new();
    let bin_dir = tempfile::tempdir().unwrap();
    let bin = bin_dir.path().join("satori");
    std::fs::copy(binary("satori"), &bin).unwrap();
    home.server_bin = bin.clone();
    let (out, _) = home.cli(&["tools", "list"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let old = home.wait_running();

    // The same path, a new executable (as an upgrade in place leaves it).
    std::fs::remove_file(&bin).unwrap();
    std::fs::copy(binary("satori"), &bin).unwrap();
    let later = std::time::SystemTime::now() + Duration::from_secs(5);
    std::fs::File::options()
        .write(true)
        .open(&bin)
        .unwrap()
        .set_modified(later)
        .unwrap();
    let new = home.start();
    assert_ne!(new, old);
    wait_until("the old server to drain", Duration::from_secs(20), || {
        !alive(old)
    });
    assert!(alive(new));
}

#[test]
fn a_server_of_another_environment_is_its_own_and_stays() {
    let home = Home::new();
    let (out, _) = home.cli(&["tools", "list"], &[]);
    assert_eq!(out.status.code(), Some(0));
    let first = home.wait_running();
    // Twice: the first call starts the server of this environment, the second attaches.
    let other = [("READ_FILE_MAX_LINES", "999")];
    for _ in 0..2 {
        let (out, _) = home.cli(&["tools", "list"], &other);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    wait_until(
        "the second server to listen",
        Duration::from_secs(30),
        || home.pid_files() == 2,
    );
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        alive(first),
        "a server of the same build and another environment is not drained"
    );
    assert_eq!(
        home.running_pid(),
        Some(first),
        "this environment's server is the first one"
    );
}

#[test]
fn stopping_the_server_during_a_build_hands_the_build_off() {
    let home = Home::new();
    let repo_dir = tempfile::tempdir().unwrap();
    let files: Vec<(String, String)> = (0..1500)
        .map(|i| {
            (
                format!("src/m{i}.rs"),
                format!(
                    "/// Module {i}.\npub fn handler_{i}(x: u32) -> u32 {{ x + {i} }}\n\npub struct Record{i} {{ pub id: u32 }}\n"
                ),
            )
        })
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    write_files(repo_dir.path(), &refs);
    let repo = repo_dir.path().canonicalize().unwrap();
    let repo = repo.to_str().unwrap().to_owned();

    let (out, _) = home.cli(&["tools", "list"], &[]);
    assert_eq!(out.status.code(), Some(0));
    let pid = home.wait_running();
    let create = json!({"action": "create", "path": repo}).to_string();
    let mut building = home
        .command(&["tool", "call", "manage_index", "--args-json", &create])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let status_args = json!({"action": "status", "path": repo}).to_string();
    let status = |home: &Home| {
        let (_, doc) = home.cli(
            &[
                "--no-daemon",
                "tool",
                "call",
                "manage_index",
                "--args-json",
                &status_args,
            ],
            &[],
        );
        doc.to_string()
    };
    wait_until("the build to start", Duration::from_secs(60), || {
        status(&home).contains("indexing")
    });
    let (out, doc) = home.cli(&["daemon", "stop"], &[]);
    assert_eq!(out.status.code(), Some(0), "{doc}");
    assert!(!alive(pid));
    wait_until(
        "the handed-off build to finish",
        Duration::from_secs(300),
        || {
            let s = status(&home);
            s.contains("\"indexed\"") || s.contains("failed")
        },
    );
    assert!(status(&home).contains("\"indexed\""), "{}", status(&home));
    let _ = building.kill();
    let _ = building.wait();
}
