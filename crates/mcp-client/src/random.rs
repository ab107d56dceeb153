//! Random values from the operating system's generator: JSON-RPC request ids, the proxy's
//! session ids and nonce, PKCE verifiers, OAuth `state` and assertion ids. When the
//! generator fails, the command fails: a value derived from the clock or the pid would be
//! guessable (a PKCE verifier, a `state`) or could repeat across processes (a request id).

use crate::error::{Error, Result};

/// Fills a buffer with random bytes, or fails. The operating system's generator in use;
/// a parameter where a test must see what happens when it fails.
pub(crate) type Source = fn(&mut [u8]) -> std::result::Result<(), String>;

/// The operating system's generator: the `getrandom` system call on Linux, `/dev/urandom`
/// on other unix systems, aws-lc (already rustls's provider) elsewhere. Not aws-lc on unix:
/// its generator seeds a jitter-entropy source on first use, about 40 ms of CPU that a
/// one-shot command drawing one request id would spend on every run.
pub(crate) fn os(buf: &mut [u8]) -> std::result::Result<(), String> {
    #[cfg(target_os = "linux")]
    {
        let mut filled = 0;
        while filled < buf.len() {
            let rest = &mut buf[filled..];
            // SAFETY: the pointer and length describe `rest`, which the call may write.
            let n = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(format!("the system's random number generator failed: {e}"));
            }
            filled += n as usize;
        }
        Ok(())
    }
    #[cfg(all(unix, not(target_os = "linux")))]
    {
        use std::io::Read;
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(buf))
            .map_err(|e| format!("the system's random number generator failed: {e}"))
    }
    #[cfg(not(unix))]
    {
        aws_lc_rs::rand::fill(buf).map_err(|_| "the system's random number generator failed".into())
    }
}

/// `n` random bytes from `source`, for `what` (named in the error).
pub(crate) fn bytes_from(source: Source, n: usize, what: &str) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; n];
    source(&mut buf).map_err(|why| Error::Random(format!("cannot draw {what}: {why}")))?;
    Ok(buf)
}

/// `n` random bytes from the operating system, for `what`.
pub(crate) fn bytes(n: usize, what: &str) -> Result<Vec<u8>> {
    bytes_from(os, n, what)
}

/// `n` random bytes as lowercase hex, for `what`.
pub(crate) fn hex(n: usize, what: &str) -> Result<String> {
    Ok(bytes(n, what)?.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_source_is_an_error_and_a_working_one_differs_each_time() {
        let failing: Source = |_| Err("no entropy".into());
        let e = bytes_from(failing, 16, "a nonce").unwrap_err();
        assert!(matches!(e, Error::Random(_)), "{e:?}");
        assert!(
            e.to_string()
                .starts_with("cannot draw a nonce: no entropy;"),
            "{e}"
        );
        let a = hex(16, "a nonce").unwrap();
        let b = hex(16, "a nonce").unwrap();
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }
}
