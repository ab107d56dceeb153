//! The three log domains (`app`, `auth`, `mcp`), silent unless `--log DOMAIN[:LEVEL]` asks:
//! lines go to stderr, or to `--log-file` (and to stderr too with `--log-stderr`), never to
//! stdout. What is logged is concise (method, endpoint, outcome, time) and never a token.

use std::io::Write;
use std::sync::{Mutex, OnceLock};

use crate::error::{Error, Result};

/// A level, most verbose last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Error,
    Warn,
    Info,
    Debug,
}

/// A domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Domain {
    App,
    Auth,
    Mcp,
}

#[derive(Debug, Default)]
struct Sink {
    levels: Vec<(Domain, Level)>,
    stderr: bool,
    file: Option<std::fs::File>,
}

static SINK: OnceLock<Mutex<Sink>> = OnceLock::new();

/// Parses `app`, `mcp:debug`, ...
pub fn parse_spec(spec: &str) -> Result<(Domain, Level)> {
    let (d, l) = spec.split_once(':').unwrap_or((spec, "info"));
    let domain = match d {
        "app" => Domain::App,
        "auth" => Domain::Auth,
        "mcp" => Domain::Mcp,
        other => {
            return Err(Error::Usage(format!(
                "unknown log domain '{other}' (use app, auth or mcp, optionally :error, :warn, :info or :debug)"
            )));
        }
    };
    let level = match l {
        "error" => Level::Error,
        "warn" => Level::Warn,
        "info" => Level::Info,
        "debug" => Level::Debug,
        other => {
            return Err(Error::Usage(format!(
                "unknown log level '{other}' (use error, warn, info or debug)"
            )));
        }
    };
    Ok((domain, level))
}

/// Configures logging once per process.
pub fn init(specs: &[String], stderr: bool, file: Option<&std::path::Path>) -> Result<()> {
    let mut levels = Vec::new();
    for s in specs {
        for part in s.split(',').filter(|p| !p.is_empty()) {
            levels.push(parse_spec(part)?);
        }
    }
    let file = match file {
        Some(p) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(|e| Error::io("open the log file", p, e))?,
        ),
        None => None,
    };
    let stderr = stderr || file.is_none();
    let _ = SINK.set(Mutex::new(Sink {
        levels,
        stderr,
        file,
    }));
    Ok(())
}

/// Logs one line if its domain is enabled at that level.
pub fn log(domain: Domain, level: Level, msg: impl FnOnce() -> String) {
    let Some(sink) = SINK.get() else { return };
    let Ok(mut sink) = sink.lock() else { return };
    if !sink.levels.iter().any(|(d, l)| *d == domain && level <= *l) {
        return;
    }
    let name = match domain {
        Domain::App => "app",
        Domain::Auth => "auth",
        Domain::Mcp => "mcp",
    };
    let level = match level {
        Level::Error => "error",
        Level::Warn => "warn",
        Level::Info => "info",
        Level::Debug => "debug",
    };
    let line = format!("mcat {name} {level}: {}\n", msg());
    if sink.stderr {
        let _ = std::io::stderr().write_all(line.as_bytes());
    }
    if let Some(f) = sink.file.as_mut() {
        let _ = f.write_all(line.as_bytes());
    }
}
