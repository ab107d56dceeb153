//! Opening a published generation without trusting its bytes: the index library's checksums
//! are verified, a panic inside it (which a damaged term dictionary or column can cause) is
//! caught here at the engine boundary, and every failure that a rebuild would repair becomes
//! [`Error::Damaged`] naming the damaged file — never a panic reaching the caller.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use tantivy::Index as Lexical;
use tantivy::index::SegmentComponent;

use crate::dense::VectorBackend;
use crate::layout::Manifest;
use crate::search;
use crate::store::{Generation, LEXICAL_DIR};
use crate::{Error, Result};

/// The files every segment of the lexical index has (deletes and custom components are
/// optional).
const SEGMENT_FILES: [SegmentComponent; 6] = [
    SegmentComponent::Postings,
    SegmentComponent::Positions,
    SegmentComponent::FastFields,
    SegmentComponent::FieldNorms,
    SegmentComponent::Terms,
    SegmentComponent::Store,
];

/// The record, in a generation directory, of the lexical files as they were when their
/// checksums last passed.
const VERIFIED: &str = "lexical.verified";

/// Verifies and opens the generation in `gen_dir` for search: the manifest parses, every
/// file of the lexical index is present with a valid checksum, and the generation opens (its
/// chunk table, lexical index and vectors agree).
///
/// Reading every byte of the lexical index for its checksums costs more than the rest of the
/// open on a large codebase, and every `satori-cli` call opens the index afresh. A generation
/// is written once and never modified, so the checksums run when a process first meets it,
/// and again only when a file of its lexical index no longer has the size and modification
/// time recorded after they last passed (a damaged file was written to, or is missing).
pub(super) fn open(gen_dir: &Path, vectors: &dyn VectorBackend) -> Result<search::Index> {
    Manifest::check(gen_dir).map_err(|e| damaged(gen_dir, e))?;
    let stamp = lexical_stamp(gen_dir);
    let recorded = std::fs::read_to_string(gen_dir.join(VERIFIED)).ok();
    if stamp.is_none() || recorded != stamp {
        checksums(gen_dir)?;
        if let Some(stamp) = &stamp {
            // A reader without write access to the home verifies every time instead.
            let _ = crate::util::write_atomic(&gen_dir.join(VERIFIED), stamp.as_bytes());
        }
    }
    guarded(gen_dir, || {
        Generation::open_in(gen_dir, vectors).map(search::Index::new)
    })
}

/// Name, size and modification time (ns) of every file of the lexical index, one per line
/// in name order; lock and bookkeeping files (their names start with a dot) are left out.
fn lexical_stamp(gen_dir: &Path) -> Option<String> {
    let mut lines = Vec::new();
    for entry in std::fs::read_dir(gen_dir.join(LEXICAL_DIR)).ok()? {
        let entry = entry.ok()?;
        let name = entry.file_name().into_string().ok()?;
        if name.starts_with('.') {
            continue;
        }
        let meta = entry.metadata().ok()?;
        let mtime = meta
            .modified()
            .ok()?
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?
            .as_nanos();
        lines.push(format!("{name} {} {mtime}\n", meta.len()));
    }
    lines.sort();
    Some(lines.concat())
}

/// Runs `f`, which reads the generation in `gen_dir`, turning a panic of the index library
/// into [`Error::Damaged`] and naming the damaged file when the checksums find one. Other
/// errors that mean damage (a corrupt or missing file) become [`Error::Damaged`] as well.
pub(super) fn guarded<T>(gen_dir: &Path, f: impl FnOnce() -> Result<T>) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(damaged(gen_dir, e)),
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            Err(checksums(gen_dir).err().unwrap_or_else(|| Error::Damaged {
                file: gen_dir.join(LEXICAL_DIR),
                reason: format!("the index library failed reading it: {what}"),
            }))
        }
    }
}

/// Maps the errors that mean "this generation is damaged" to [`Error::Damaged`]; anything
/// else (a permission problem, a cancelled request) is passed on unchanged.
fn damaged(gen_dir: &Path, e: Error) -> Error {
    match e {
        Error::Corrupt { path, reason, .. } => Error::Damaged { file: path, reason },
        Error::Io { path, source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            Error::Damaged {
                file: path,
                reason: "missing".to_owned(),
            }
        }
        Error::Lexical(reason) => checksums(gen_dir).err().unwrap_or(Error::Damaged {
            file: gen_dir.join(LEXICAL_DIR),
            reason,
        }),
        other => other,
    }
}

/// Checks the lexical index of `gen_dir` with the index library's own checksums (every file
/// of every segment carries a CRC32 of its content in its footer) and that no file of a
/// segment is missing. The first problem found is returned as [`Error::Damaged`].
fn checksums(gen_dir: &Path) -> Result<()> {
    let dir = gen_dir.join(LEXICAL_DIR);
    let check = || -> Result<Option<(PathBuf, String)>> {
        let index = Lexical::open_in_dir(&dir).map_err(|e| Error::Damaged {
            file: dir.join("meta.json"),
            reason: e.to_string(),
        })?;
        // The checksums below cover only the files that exist: check the ones every
        // segment has first.
        for meta in index.searchable_segment_metas()? {
            for component in SEGMENT_FILES {
                let file = meta.relative_path(component);
                if !dir.join(&file).is_file() {
                    return Ok(Some((file, "missing".to_owned())));
                }
            }
        }
        let mut bad: Vec<PathBuf> = index.validate_checksum()?.into_iter().collect();
        bad.sort();
        Ok(bad
            .into_iter()
            .next()
            .map(|file| (file, "checksum mismatch".to_owned())))
    };
    match catch_unwind(AssertUnwindSafe(check)) {
        Ok(Ok(None)) => Ok(()),
        Ok(Ok(Some((file, reason)))) => Err(Error::Damaged {
            file: dir.join(file),
            reason,
        }),
        Ok(Err(Error::Lexical(reason))) => Err(Error::Damaged { file: dir, reason }),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(Error::Damaged {
            file: dir,
            reason: "the index library failed verifying it".to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A panic while reading (what a damaged term dictionary does to the index library) is
    /// caught and becomes a damage report; other errors keep their kind.
    #[test]
    fn a_panic_reading_becomes_a_damage_report() {
        let gen_dir = tempfile::tempdir().unwrap();
        // An intact (empty) lexical index: the checksums find nothing, so the panic is the
        // only evidence.
        let lexical = gen_dir.path().join(LEXICAL_DIR);
        std::fs::create_dir_all(&lexical).unwrap();
        Lexical::create_in_dir(&lexical, tantivy::schema::Schema::builder().build()).unwrap();
        let caught = guarded(gen_dir.path(), || -> Result<()> {
            panic!("index out of bounds: the len is 3 but the index is 7")
        });
        match caught {
            Err(Error::Damaged { file, reason }) => {
                assert!(file.starts_with(gen_dir.path()), "{}", file.display());
                assert!(reason.contains("index out of bounds"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        let cancelled = guarded(gen_dir.path(), || -> Result<()> { Err(Error::Cancelled) });
        assert!(matches!(cancelled, Err(Error::Cancelled)));
    }
}
