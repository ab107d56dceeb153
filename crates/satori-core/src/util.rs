//! Small shared helpers: hashing to short hex ids, wall-clock time, ISO-8601 formatting,
//! atomic file replacement, applying a per-file delta to a list kept in path order, and
//! locking state that survives a panicking holder.

use std::io::Write;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

use crate::{Error, Result};

/// The first 16 hex characters of the sha256 of `bytes`.
pub fn hash16(bytes: &[u8]) -> String {
    hex_prefix(&Sha256::digest(bytes), 16)
}

/// The first `n` hex characters of the sha256 of the parts joined with NUL separators.
pub fn hash_parts(parts: &[&str], n: usize) -> String {
    let mut h = Sha256::new();
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            h.update([0u8]);
        }
        h.update(p.as_bytes());
    }
    hex_prefix(&h.finalize(), n)
}

/// The whole of `digest` in lower-case hex.
pub fn hex(digest: &[u8]) -> String {
    hex_prefix(digest, digest.len() * 2)
}

fn hex_prefix(digest: &[u8], n: usize) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(n);
    for b in digest {
        if s.len() >= n {
            break;
        }
        s.push(HEX[(b >> 4) as usize] as char);
        s.push(HEX[(b & 15) as usize] as char);
    }
    s.truncate(n);
    s
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Milliseconds since the epoch of a `SystemTime` (0 before the epoch).
pub fn system_time_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Formats epoch milliseconds as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn iso8601(ms: u64) -> String {
    let secs = ms / 1000;
    let millis = ms % 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (h, m, s) = (rem / 3600, (rem % 3600) / 60, rem % 60);
    // Civil-from-days (proleptic Gregorian), after Howard Hinnant's algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(mo <= 2);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{m:02}:{s:02}.{millis:03}Z")
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, fsync, rename,
/// then fsync of the directory. Readers see the old content or the new, never a mix.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}-{}", std::process::id(), now_ms()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp).map_err(|e| Error::io("create", &tmp, e))?;
        f.write_all(bytes)
            .map_err(|e| Error::io("write", &tmp, e))?;
        f.sync_all().map_err(|e| Error::io("fsync", &tmp, e))?;
        std::fs::rename(&tmp, path).map_err(|e| Error::io("rename", path, e))?;
        sync_dir(dir);
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Makes the immutable file `from` appear at `to`: a hard link, a copy where linking fails
/// (another filesystem, no link support).
pub fn link_file(from: &Path, to: &Path) -> Result<()> {
    if std::fs::hard_link(from, to).is_err() {
        std::fs::copy(from, to).map_err(|e| Error::io("copy", from, e))?;
    }
    Ok(())
}

/// Best-effort fsync of a directory so a rename inside it is durable.
pub fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// `e`, or [`Error::DiskFull`] when it is a failed write and the filesystem holding `dir`
/// is (all but) full: an index library failure says nothing of the cause, and an I/O error
/// names one file where the user needs to know the device is full.
pub(crate) fn or_disk_full(e: Error, dir: &Path) -> Error {
    /// Below this much free space a failed write is put down to the full disk.
    const NEARLY_FULL: u64 = 4 * 1024 * 1024;
    let write_failure = match &e {
        Error::Lexical(_) => true,
        Error::Io { source, .. } => {
            source.kind() == std::io::ErrorKind::StorageFull
                || source.kind() == std::io::ErrorKind::QuotaExceeded
        }
        _ => false,
    };
    match free_bytes(dir) {
        Some(free_bytes) if write_failure && free_bytes < NEARLY_FULL => Error::DiskFull {
            dir: dir.to_path_buf(),
            free_bytes,
        },
        _ => e,
    }
}

/// Bytes available to this user on the filesystem holding `path`, when the platform says.
#[cfg(target_os = "linux")]
pub fn free_bytes(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs is plain old data; all zeroes is a valid value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid C string and `st` a writable statvfs the call fills in.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

/// Bytes available on the filesystem holding `path`: unknown on this platform.
#[cfg(not(target_os = "linux"))]
pub fn free_bytes(_path: &Path) -> Option<u64> {
    None
}

/// Applies a delta to a list of per-file records kept in path order: the records of removed
/// paths and of the paths the delta holds anew are dropped, the delta's records added, and the
/// list sorted by path again. A derived generation's file list and graph are both stored so.
pub(crate) fn apply_file_delta<T>(
    list: &mut Vec<T>,
    removed: &[String],
    added: Vec<T>,
    path: impl Fn(&T) -> &str,
) {
    let gone: std::collections::HashSet<&str> = removed
        .iter()
        .map(String::as_str)
        .chain(added.iter().map(&path))
        .collect();
    list.retain(|f| !gone.contains(path(f)));
    list.extend(added);
    list.sort_by(|a, b| path(a).cmp(path(b)));
}

/// Locks `m`, taking over a lock poisoned by a panicking holder: for state that is replaced
/// whole, never left half-written, so what a panicking holder left is still sound.
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_dates() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso8601(1_795_219_200_000), "2026-11-21T00:00:00.000Z");
    }

    #[test]
    fn hashes_are_short_hex() {
        assert_eq!(hash16(b"abc"), "ba7816bf8f01cfea");
        assert_eq!(hash_parts(&["a", "b"], 8).len(), 8);
        assert_ne!(hash_parts(&["ab", ""], 16), hash_parts(&["a", "b"], 16));
    }
}
