//! A real Milvus for tests: the server binary PyPI's `milvus-lite==2.5.1` ships
//! (`milvus_lite/lib/milvus`), started on a free loopback port with a fresh database file and
//! killed when dropped. `SATORI_TEST_MILVUS` names the binary; without it [`server`] says so
//! and gives `None` (the test passes), except under CI (`CI` set), where a missing server is
//! a failure. Compiled only with the `testing` feature, for this crate's tests and the
//! end-to-end tests.

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{Endpoint, MilvusBackend};

/// A Milvus server process, killed when dropped.
pub struct Server {
    child: Child,
    /// `127.0.0.1:<port>`.
    pub address: String,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts a server and waits until it can create a collection.
// A skipped test says why on stderr.
#[allow(clippy::print_stderr)]
pub fn server() -> Option<Server> {
    let Some(bin) = std::env::var_os("SATORI_TEST_MILVUS").map(PathBuf::from) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "SATORI_TEST_MILVUS is unset under CI: .ci/run installs milvus-lite==2.5.1 and sets it"
        );
        eprintln!("skipped: set SATORI_TEST_MILVUS to milvus-lite 2.5.1's milvus_lite/lib/milvus");
        return None;
    };
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let address = format!("127.0.0.1:{port}");
    let lib = bin.parent().unwrap();
    let child = Command::new(&bin)
        .arg(dir.path().join("milvus.db"))
        .arg(&address)
        .arg("ERROR")
        .env("LD_LIBRARY_PATH", lib)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
    let start = Instant::now();
    while TcpStream::connect(&address).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "Milvus did not listen on {address}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Listening is not ready: the server answers before its storage is set up. Ready is
    // when a collection can be made (then dropped).
    let probe = dir.path().join("home/indexes/probe");
    let b = MilvusBackend::new(Endpoint::parse(&address, None).unwrap(), "probe_").unwrap();
    loop {
        use satori_core::dense::VectorBackend;
        match b.sink(&probe.join("gen-probe"), 4, None) {
            Ok(_) => break,
            Err(e) => assert!(
                start.elapsed() < Duration::from_secs(60),
                "Milvus on {address} is not ready: {e}"
            ),
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    b.drop_codebase(&probe).unwrap();
    Some(Server {
        child,
        address,
        _dir: dir,
    })
}
