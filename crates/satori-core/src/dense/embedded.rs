//! The embedded vector backend: each generation's vectors in its own `vectors/` directory as
//! the memory-mapped int8 matrix of `matrix`, in ordinal order (= key order).
//!
//! Its sink writes the rows in the order the chunks come (ascending keys, which is the
//! order of the generation's table). A chunk carried over copies its predecessor's row as
//! stored (re-quantising dequantised values could move a component by one step). When the
//! store shares its predecessor's base files, the rows of the shared base stay in the base
//! matrix (a hard link) and only the others are written, to the delta matrix.

use std::path::{Path, PathBuf};

use super::matrix::{DELTA_MATRIX_FILE, DenseIndex, DenseWriter, MATRIX_FILE};
use super::{
    BackendId, ChunkKeys, OpenSpec, SinkBase, VectorBackend, VectorIndex, VectorSink, VectorStore,
};
use crate::{Error, Result};

/// Sub-directory of a generation holding its matrix (row = chunk ordinal).
pub const VECTORS_DIR: &str = "vectors";

/// The vectors of every generation kept inside it, on the local disk.
#[derive(Debug, Default, Clone, Copy)]
pub struct EmbeddedVectors;

impl VectorBackend for EmbeddedVectors {
    fn id(&self) -> BackendId {
        BackendId::Embedded
    }

    fn sink<'a>(
        &self,
        gen_dir: &Path,
        dim: usize,
        base: Option<SinkBase<'a>>,
    ) -> Result<Box<dyn VectorSink + 'a>> {
        let dir = gen_dir.join(VECTORS_DIR);
        let prev = match base {
            None => None,
            Some(b) => {
                let index = b
                    .vectors
                    .as_any()
                    .and_then(|a| a.downcast_ref::<DenseIndex>());
                let index = index.ok_or_else(|| {
                    Error::Vectors(format!(
                        "'{}' holds no embedded vectors to derive from",
                        b.gen_dir.display()
                    ))
                })?;
                Some(Prev {
                    index,
                    keys: b.keys,
                    shared: b
                        .shared
                        .map(|n| (n, b.gen_dir.join(VECTORS_DIR).join(MATRIX_FILE))),
                    cursor: 0,
                })
            }
        };
        let writer = match prev.as_ref().and_then(|p| p.shared.as_ref()) {
            Some(_) => DenseWriter::create_named(&dir, DELTA_MATRIX_FILE, dim)?,
            None => DenseWriter::create(&dir, dim)?,
        };
        Ok(Box::new(EmbeddedSink { dir, writer, prev }))
    }

    fn open(&self, spec: OpenSpec<'_>) -> Result<Option<Box<dyn VectorIndex>>> {
        let vectors = spec.gen_dir.join(VECTORS_DIR);
        if !vectors.is_dir() {
            return Ok(None);
        }
        let base = DenseIndex::open(&vectors)?;
        let index = match spec.dropped {
            Some(dropped) => {
                let path = vectors.join(DELTA_MATRIX_FILE);
                let added = DenseIndex::open_file(&path)?;
                DenseIndex::with_overlay(base, added, dropped, &path)?
            }
            None => base,
        };
        Ok(Some(Box::new(index)))
    }
}

/// The predecessor a sink copies carried rows from.
struct Prev<'a> {
    index: &'a DenseIndex,
    keys: &'a dyn ChunkKeys,
    /// The ordinals of the base shared with the new generation, and the base matrix.
    shared: Option<(usize, PathBuf)>,
    /// The ordinal after the last one looked up: carried chunks come in key order, so the
    /// next is usually there.
    cursor: usize,
}

impl Prev<'_> {
    fn ordinal(&mut self, key: u64) -> Option<usize> {
        let at = self.cursor;
        let ordinal = if at < self.keys.len() && self.keys.key(at) == key {
            at
        } else {
            self.keys.ordinal(key)?
        };
        self.cursor = ordinal + 1;
        Some(ordinal)
    }
}

struct EmbeddedSink<'a> {
    dir: PathBuf,
    writer: DenseWriter,
    prev: Option<Prev<'a>>,
}

impl VectorSink for EmbeddedSink<'_> {
    fn put(&mut self, _key: u64, vector: &[f32]) -> Result<()> {
        let dim = self.writer.dim();
        if vector.len() != dim {
            return Err(Error::Vectors(format!(
                "a vector of {} values in a matrix of dimension {dim}",
                vector.len()
            )));
        }
        self.writer.push(vector);
        Ok(())
    }

    fn carry(&mut self, key: u64, from: u64) -> Result<()> {
        let prev = self.prev.as_mut().ok_or_else(|| {
            Error::Vectors(format!("no earlier generation to carry chunk {from} from"))
        })?;
        let ordinal = prev
            .ordinal(from)
            .ok_or_else(|| Error::Vectors(format!("no earlier vector of chunk {from}")))?;
        if key == from && prev.shared.as_ref().is_some_and(|(n, _)| ordinal < *n) {
            // Its row stays where it is, in the shared base matrix.
            return Ok(());
        }
        let (scale, row) = prev
            .index
            .quantized(ordinal)
            .ok_or_else(|| Error::Vectors(format!("no vector row {ordinal} to carry over")))?;
        self.writer.push_quantized(scale, row);
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<VectorStore> {
        if let Some((_, base)) = self.prev.as_ref().and_then(|p| p.shared.as_ref()) {
            crate::util::link_file(base, &self.dir.join(MATRIX_FILE))?;
        }
        self.writer.finish()?;
        crate::util::sync_dir(&self.dir);
        Ok(VectorStore::Embedded)
    }
}
