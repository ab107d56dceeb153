//! The overlay of a derived generation: which rows of the base it shares are gone.
//!
//! A sync that changes a few files must not rewrite the chunk table, the matrix and the
//! call graph of the whole codebase. A derived generation therefore hard-links the *base*
//! files of the generation it comes from (`chunks.bin`, `vectors/matrix.bin`, `graph.json`:
//! those of the last generation written whole) and writes only the rows of the files added
//! since the base, in files of their own (`chunks.delta.bin`, `vectors/matrix.delta.bin`,
//! `graph.delta.json`), plus this small record of the base's files and chunks that are no
//! longer part of it (`overlay.bin`). Readers compose the two: ordinals are the base's live
//! chunks in base order, then the added chunks, which is the order a compact rewrite would
//! have given them (added chunks have keys above every base key). When the overlay grows
//! past a share of the base, the next sync writes a new base (see `GenerationWriter`).
//!
//! ```text
//! overlay.bin: "SATOVL01" | base_files u32 | base_chunks u32 | dropped_files u32
//!              | dropped_chunks u32 | dropped file ids × u32 | dropped chunk ordinals × u32
//!              | crc32 of everything before it, u32                        (little-endian)
//! ```

use std::path::Path;

use crate::{Error, Result};

/// File of the overlay inside a generation directory.
pub const OVERLAY_FILE: &str = "overlay.bin";

/// The chunk table of the rows added over the base.
pub const DELTA_TABLE_FILE: &str = "chunks.delta.bin";

const MAGIC: &[u8; 8] = b"SATOVL01";

/// Which rows of the base are gone (both lists ascending, ids and ordinals of the base).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overlay {
    pub base_files: u32,
    pub base_chunks: u32,
    pub dropped_files: Vec<u32>,
    pub dropped_chunks: Vec<u32>,
}

impl Overlay {
    /// Live base files, which are the first files of the composed table.
    pub fn live_files(&self) -> usize {
        self.base_files as usize - self.dropped_files.len()
    }

    /// Live base chunks, which are the first ordinals of the composed table.
    pub fn live_chunks(&self) -> usize {
        self.base_chunks as usize - self.dropped_chunks.len()
    }

    /// The base ids that are not in `dropped` (ascending), among `0..n`.
    pub fn live(n: u32, dropped: &[u32]) -> impl Iterator<Item = u32> + '_ {
        let mut next = dropped.iter().peekable();
        (0..n).filter(move |&id| {
            if next.peek().is_some_and(|&&d| d == id) {
                next.next();
                false
            } else {
                true
            }
        })
    }

    /// Writes `<dir>/overlay.bin` (the generation is published as a whole: a plain write,
    /// made durable with the rest).
    pub fn save(&self, dir: &Path) -> Result<()> {
        let mut b =
            Vec::with_capacity(28 + 4 * (self.dropped_files.len() + self.dropped_chunks.len()));
        b.extend_from_slice(MAGIC);
        for v in [
            self.base_files,
            self.base_chunks,
            self.dropped_files.len() as u32,
            self.dropped_chunks.len() as u32,
        ] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        for v in self.dropped_files.iter().chain(&self.dropped_chunks) {
            b.extend_from_slice(&v.to_le_bytes());
        }
        let crc = crc32fast::hash(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        crate::util::write_atomic(&dir.join(OVERLAY_FILE), &b)
    }

    /// Reads the overlay of the generation in `dir`; `None` for a generation written whole.
    pub fn load(dir: &Path) -> Result<Option<Overlay>> {
        let path = dir.join(OVERLAY_FILE);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io("read", &path, e)),
        };
        Overlay::decode(&bytes)
            .map(Some)
            .map_err(|reason| Error::Corrupt {
                what: "overlay",
                path,
                reason,
            })
    }

    fn decode(bytes: &[u8]) -> std::result::Result<Overlay, String> {
        let body_len = bytes
            .len()
            .checked_sub(4)
            .filter(|&n| n >= MAGIC.len() + 16)
            .ok_or("too short")?;
        let (body, crc) = bytes.split_at(body_len);
        if &body[..MAGIC.len()] != MAGIC {
            return Err("not an overlay".into());
        }
        if crc32fast::hash(body).to_le_bytes() != crc {
            return Err("checksum mismatch".into());
        }
        let words: Vec<u32> = body[MAGIC.len()..]
            .chunks(4)
            .map(|w| w.try_into().map(u32::from_le_bytes))
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| "a partial number")?;
        let (head, lists) = words.split_at(4);
        let (files, chunks) = (head[2] as usize, head[3] as usize);
        if files.checked_add(chunks) != Some(lists.len()) {
            return Err(format!(
                "{} numbers for {files} dropped files and {chunks} dropped chunks",
                lists.len()
            ));
        }
        let overlay = Overlay {
            base_files: head[0],
            base_chunks: head[1],
            dropped_files: lists[..files].to_vec(),
            dropped_chunks: lists[files..].to_vec(),
        };
        let fits = |list: &[u32], n: u32| {
            list.windows(2).all(|w| w[0] < w[1]) && list.last().is_none_or(|&l| l < n)
        };
        if !fits(&overlay.dropped_files, overlay.base_files)
            || !fits(&overlay.dropped_chunks, overlay.base_chunks)
        {
            return Err("dropped rows are not ascending inside the base".into());
        }
        Ok(overlay)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_overlay_round_trips_and_refuses_every_damage() {
        let dir = tempfile::tempdir().unwrap();
        let o = Overlay {
            base_files: 9,
            base_chunks: 40,
            dropped_files: vec![2, 8],
            dropped_chunks: vec![5, 6, 7, 39],
        };
        o.save(dir.path()).unwrap();
        assert_eq!(Overlay::load(dir.path()).unwrap(), Some(o.clone()));
        assert_eq!(
            Overlay::live(9, &o.dropped_files).collect::<Vec<_>>(),
            [0, 1, 3, 4, 5, 6, 7]
        );
        let bytes = std::fs::read(dir.path().join(OVERLAY_FILE)).unwrap();
        for cut in 0..bytes.len() {
            std::fs::write(dir.path().join(OVERLAY_FILE), &bytes[..cut]).unwrap();
            assert!(Overlay::load(dir.path()).is_err(), "cut at {cut}");
        }
        for at in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x10;
            std::fs::write(dir.path().join(OVERLAY_FILE), &damaged).unwrap();
            assert!(Overlay::load(dir.path()).is_err(), "byte {at} changed");
        }
        // Well-formed but inconsistent: a dropped row outside the base.
        Overlay {
            dropped_chunks: vec![40],
            ..o
        }
        .save(dir.path())
        .unwrap();
        assert!(Overlay::load(dir.path()).is_err());
        std::fs::remove_file(dir.path().join(OVERLAY_FILE)).unwrap();
        assert_eq!(Overlay::load(dir.path()).unwrap(), None);
    }
}
