//! Vectors a remote model already gave, kept on disk by the content of the text embedded, so
//! that building an index again (after `clear`, a crash or a lost connection mid-build, a
//! change of chunking rules that leaves most chunks as they were) asks the API only for texts
//! it has never seen.
//!
//! One file per model identity, `<dir>/<model sha16>-<dim>.bin`: a header (magic, dimension)
//! then records of a 16-byte text digest and the vector as little-endian f32. Records are
//! appended once a batch is embedded and flushed before the batch is handed back, so a killed
//! process keeps every batch it finished; a torn last record is cut off when the file is
//! opened. Only the digests and their offsets are held in memory; a hit reads its vector
//! from the file. A file past [`MAX_BYTES`] starts over (the cache is a saving, never the
//! only copy of a vector).

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use sha2::{Digest, Sha256};

use super::{EmbedError, Embedder, ModelInfo};

const MAGIC: &[u8; 8] = b"SATEMBC1";
const HEADER: u64 = 12;
/// The largest cache file kept: beyond it the file is started again.
pub const MAX_BYTES: u64 = 1 << 30;

/// An embedder that answers texts it has embedded before from its cache file and asks its
/// inner embedder for the others.
pub struct CachedEmbedder {
    inner: Arc<dyn Embedder>,
    path: PathBuf,
    dim: usize,
    file: File,
    /// Digest → offset of the record's vector.
    index: RwLock<HashMap<[u8; 16], u64>>,
    /// Serialises appends (the offset of the next record is the file's length).
    append: Mutex<u64>,
}

impl std::fmt::Debug for CachedEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedEmbedder")
            .field("inner", &self.inner)
            .field("path", &self.path)
            .finish()
    }
}

/// Reads `buf.len()` bytes at `offset` without moving a cursor shared by other threads.
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
    }
    #[cfg(windows)]
    {
        let (mut done, mut buf) = (0u64, buf);
        while !buf.is_empty() {
            let n = std::os::windows::fs::FileExt::seek_read(file, buf, offset + done)?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            buf = &mut buf[n..];
            done += n as u64;
        }
        Ok(())
    }
}

fn digest(text: &str) -> [u8; 16] {
    let d = Sha256::digest(text.as_bytes());
    let mut out = [0u8; 16];
    out.copy_from_slice(&d[..16]);
    out
}

impl CachedEmbedder {
    /// The cache of `inner`'s model in `dir` (created when missing). An unreadable or foreign
    /// file is started again rather than trusted.
    pub fn open(inner: Arc<dyn Embedder>, dir: &Path) -> std::io::Result<CachedEmbedder> {
        let info: &ModelInfo = inner.info();
        let dim = inner.dim();
        std::fs::create_dir_all(dir)?;
        let sha = &info.sha256[..info.sha256.len().min(16)];
        let path = dir.join(format!("{sha}-{dim}.bin"));
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)?;
        let record = 16 + 4 * dim as u64;
        let mut len = file.metadata()?.len();
        let mut header = [0u8; HEADER as usize];
        let valid = (HEADER..=MAX_BYTES).contains(&len)
            && read_exact_at(&file, &mut header, 0).is_ok()
            && &header[..8] == MAGIC
            && u32::from_le_bytes(header[8..12].try_into().unwrap()) as usize == dim;
        if !valid {
            file.set_len(0)?;
            let mut h = MAGIC.to_vec();
            h.extend_from_slice(&(dim as u32).to_le_bytes());
            file.write_all(&h)?;
            file.sync_data()?;
            len = HEADER;
        }
        // A record torn by a crash is dropped.
        let whole = HEADER + (len - HEADER) / record * record;
        if whole != len {
            file.set_len(whole)?;
        }
        let mut index = HashMap::new();
        let mut reader = std::io::BufReader::with_capacity(1 << 20, &file);
        reader.seek(SeekFrom::Start(HEADER))?;
        let mut key = [0u8; 16];
        let mut at = HEADER;
        while at < whole {
            reader.read_exact(&mut key)?;
            reader.seek_relative(4 * dim as i64)?;
            index.insert(key, at + 16);
            at += record;
        }
        drop(reader);
        Ok(CachedEmbedder {
            inner,
            path,
            dim,
            file,
            index: RwLock::new(index),
            append: Mutex::new(whole),
        })
    }

    /// The cache file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many vectors the cache holds.
    pub fn len(&self) -> usize {
        self.index.read().unwrap().len()
    }

    /// True when the cache holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn read(&self, offset: u64) -> Option<Vec<f32>> {
        let mut bytes = vec![0u8; 4 * self.dim];
        read_exact_at(&self.file, &mut bytes, offset).ok()?;
        Some(
            bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
                .collect(),
        )
    }

    /// Appends the new vectors; a failure to write loses the saving, never the vectors.
    fn store(&self, new: &[([u8; 16], &[f32])]) {
        let mut end = self.append.lock().unwrap();
        if *end >= MAX_BYTES {
            return;
        }
        let mut buf = Vec::with_capacity(new.len() * (16 + 4 * self.dim));
        for (key, v) in new {
            buf.extend_from_slice(key);
            for x in v.iter() {
                buf.extend_from_slice(&x.to_le_bytes());
            }
        }
        let mut f = &self.file;
        if f.write_all(&buf).and_then(|_| f.sync_data()).is_err() {
            // A partial record is cut off the next time the file is opened.
            return;
        }
        let mut index = self.index.write().unwrap();
        let mut at = *end;
        for (key, _) in new {
            index.insert(*key, at + 16);
            at += 16 + 4 * self.dim as u64;
        }
        *end = at;
    }
}

impl Embedder for CachedEmbedder {
    fn info(&self) -> &ModelInfo {
        self.inner.info()
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn max_batch(&self) -> usize {
        self.inner.max_batch()
    }

    fn concurrency(&self) -> usize {
        self.inner.concurrency()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let keys: Vec<[u8; 16]> = texts.iter().map(|t| digest(t)).collect();
        let mut out: Vec<Option<Vec<f32>>> = {
            let index = self.index.read().unwrap();
            keys.iter()
                .map(|k| index.get(k).and_then(|&at| self.read(at)))
                .collect()
        };
        let missing: Vec<usize> = (0..texts.len()).filter(|&i| out[i].is_none()).collect();
        if !missing.is_empty() {
            let asked: Vec<&str> = missing.iter().map(|&i| texts[i]).collect();
            let got = self.inner.embed(&asked)?;
            if got.len() != asked.len() || got.iter().any(|v| v.len() != self.dim) {
                return Err(EmbedError::Unavailable(format!(
                    "the model answered {} vectors for {} texts, or vectors of another dimension than {}",
                    got.len(),
                    asked.len(),
                    self.dim
                )));
            }
            let new: Vec<([u8; 16], &[f32])> = missing
                .iter()
                .zip(&got)
                .map(|(&i, v)| (keys[i], v.as_slice()))
                .collect();
            self.store(&new);
            for (&i, v) in missing.iter().zip(got) {
                out[i] = Some(v);
            }
        }
        Ok(out.into_iter().map(Option::unwrap).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A model that counts the texts it is asked for.
    #[derive(Debug)]
    struct Counting {
        info: ModelInfo,
        asked: AtomicUsize,
    }

    impl Embedder for Counting {
        fn info(&self) -> &ModelInfo {
            &self.info
        }
        fn max_batch(&self) -> usize {
            8
        }
        fn concurrency(&self) -> usize {
            1
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            self.asked.fetch_add(texts.len(), Ordering::SeqCst);
            Ok(texts
                .iter()
                .map(|t| vec![t.len() as f32, 1.0, -0.5])
                .collect())
        }
    }

    fn counting() -> Arc<Counting> {
        Arc::new(Counting {
            info: ModelInfo {
                provider: "test".into(),
                id: "test/counting".into(),
                sha256: "0123456789abcdef0123".into(),
                dim: 3,
            },
            asked: AtomicUsize::new(0),
        })
    }

    /// After embedding `first`, a fresh cache over the same directory embeds `then`
    /// asking the model for `expected_asked` texts, and answers what the model would.
    fn check(first: &[&str], then: &[&str], expected_asked: usize, tear: bool) {
        let dir = tempfile::tempdir().unwrap();
        let model = counting();
        let cache = CachedEmbedder::open(model.clone(), dir.path()).unwrap();
        cache.embed(first).unwrap();
        let path = cache.path().to_path_buf();
        drop(cache);
        if tear {
            let f = OpenOptions::new().write(true).open(&path).unwrap();
            let len = f.metadata().unwrap().len();
            f.set_len(len - 5).unwrap();
        }
        let model2 = counting();
        let cache = CachedEmbedder::open(model2.clone(), dir.path()).unwrap();
        let got = cache.embed(then).unwrap();
        let want = model.embed(then).unwrap();
        assert_eq!(got, want, "{first:?} then {then:?}");
        assert_eq!(
            model2.asked.load(Ordering::SeqCst),
            expected_asked,
            "{first:?} then {then:?} (torn: {tear})"
        );
    }

    #[test]
    fn asks_only_for_new_texts() {
        check(&["a", "bb"], &["a", "bb"], 0, false);
        check(&["a", "bb"], &["bb", "ccc", "a"], 1, false);
        check(&[], &["x"], 1, false);
        // The torn record (the last text's) is asked again; the others are kept.
        check(&["a", "bb", "ccc"], &["a", "bb", "ccc"], 1, true);
    }

    #[test]
    fn a_foreign_file_starts_over() {
        let dir = tempfile::tempdir().unwrap();
        let model = counting();
        let cache = CachedEmbedder::open(model.clone(), dir.path()).unwrap();
        cache.embed(&["a"]).unwrap();
        let path = cache.path().to_path_buf();
        drop(cache);
        std::fs::write(&path, b"not a cache file at all").unwrap();
        let cache = CachedEmbedder::open(model.clone(), dir.path()).unwrap();
        assert!(cache.is_empty());
        assert_eq!(cache.embed(&["a"]).unwrap(), vec![vec![1.0, 1.0, -0.5]]);
        assert_eq!(cache.len(), 1);
    }
}
