//! The embedded backend's matrix: one unit vector per chunk (row = chunk ordinal), stored
//! as a flat int8 matrix with one scale per row, memory-mapped. Search reaches it only
//! through the [`VectorIndex`] trait; queries arrive as f32 vectors and are quantised here,
//! once per call.
//!
//! Small matrices are scanned exhaustively: int8 rows are a quarter of the bytes of f32
//! rows, the integer dot product vectorises, and the scan is one pass over contiguous
//! memory. Quantising each row with its own scale keeps the cosine error around 1e-3, far
//! below the score differences ranking cares about.
//!
//! A large matrix is memory-bound (100k rows of 256 bytes are 25 MB per query), so each row
//! also has a sketch: one bit per dimension (see [`super::sketch`]). A query first estimates
//! every row's score from the sketches (32 bytes per row, popcounts), then rescores only the
//! best few thousand rows with the int8 dot product. The sketches only choose what to
//! rescore; every score returned is the int8 cosine.
//!
//! ```text
//! vectors/matrix.bin:  "SATVEC03" | dim u32 | pad u32 | count u64 | reserved u64
//!                      | count × f32 scales | count × dim i8 rows
//!                      | pad to 8 | dim × f32 mean | count × ⌈dim/64⌉ u64 sketches
//!                                                                        (little-endian)
//! ```
//!
//! `SATVEC02` files (sign sketches, written by earlier versions) have the same layout and are
//! still read, with the sketch they hold.
//!
//! A generation derived by a sync may keep the previous generation's matrix (a hard link)
//! and add a small second matrix of the rows it adds ([`DenseIndex::with_overlay`]): its
//! rows, in ordinal order, are the kept rows of the first matrix, then every row of the
//! second. A scan reads both and skips the dropped rows, so a sync writes only the rows
//! that changed; ordinals, scores and tie order are those of one compact matrix.

use std::collections::BinaryHeap;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::sketch::{self, Code, Probe, words};
use super::{Neighbor, QueryVector, VectorIndex};
use crate::{Error, Result};

/// File of the matrix inside `<gen>/vectors/`.
pub const MATRIX_FILE: &str = "matrix.bin";

/// The matrix of the rows a derived generation adds over the base it shares, inside
/// `vectors/` (see `store::overlay`).
pub const DELTA_MATRIX_FILE: &str = "matrix.delta.bin";

const MAGIC: &[u8; 8] = b"SATVEC03";
/// The magic of matrices with sign sketches, still read.
const MAGIC_SIGN: &[u8; 8] = b"SATVEC02";
const HEADER: usize = 32;
/// Up to this many rows, or when most rows are wanted anyway, the scan is exhaustive.
const EXACT_MAX_ROWS: usize = 16_384;
/// Rows rescored after the sketch prefilter: at least this many, and at least
/// `RESCORE_PER_K` × k.
const RESCORE_MIN: usize = 6_144;
const RESCORE_PER_K: usize = 64;
/// The ordinal of a row of an overlaid matrix that is no longer part of it.
const DEAD: u32 = u32::MAX;

/// Byte offsets of the sections of a matrix with `count` rows of `dim`.
struct Layout {
    scales: usize,
    rows: usize,
    mean: usize,
    sketches: usize,
    end: usize,
}

impl Layout {
    fn of(dim: usize, count: usize) -> Option<Layout> {
        let scales = HEADER;
        let rows = scales.checked_add(count.checked_mul(4)?)?;
        let rows_end = rows.checked_add(count.checked_mul(dim)?)?;
        let mean = rows_end.checked_add(7)? & !7;
        let sketches = mean.checked_add(dim.checked_mul(4)?)?;
        let end = sketches.checked_add(count.checked_mul(words(dim) * 8)?)?;
        Some(Layout {
            scales,
            rows,
            mean,
            sketches,
            end,
        })
    }
}

/// Quantises a vector to int8 with the scale that maps its largest component to ±127.
pub fn quantize(v: &[f32], out: &mut Vec<i8>) -> f32 {
    let max = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    out.clear();
    if max == 0.0 {
        out.resize(v.len(), 0);
        return 0.0;
    }
    let inv = 127.0 / max;
    out.extend(
        v.iter()
            .map(|x| (x * inv).round().clamp(-127.0, 127.0) as i8),
    );
    max / 127.0
}

/// Writes the matrix of a new generation, row by row in ordinal order.
pub struct DenseWriter {
    path: PathBuf,
    dim: usize,
    scales: Vec<f32>,
    rows: Vec<i8>,
    buf: Vec<i8>,
}

impl DenseWriter {
    /// A writer for `dim`-dimensional rows into `<dir>/matrix.bin` (`dir` is created).
    pub fn create(dir: &Path, dim: usize) -> Result<DenseWriter> {
        DenseWriter::create_named(dir, MATRIX_FILE, dim)
    }

    /// A writer for `dim`-dimensional rows into `<dir>/<name>` (`dir` is created).
    pub fn create_named(dir: &Path, name: &str, dim: usize) -> Result<DenseWriter> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io("create directory", dir, e))?;
        Ok(DenseWriter {
            path: dir.join(name),
            dim,
            scales: Vec::new(),
            rows: Vec::new(),
            buf: Vec::with_capacity(dim),
        })
    }

    /// A writer whose matrix stays in memory ([`DenseWriter::finish_in_memory`]); `label`
    /// names it in errors.
    pub fn in_memory(label: &Path, dim: usize) -> DenseWriter {
        DenseWriter {
            path: label.to_path_buf(),
            dim,
            scales: Vec::new(),
            rows: Vec::new(),
            buf: Vec::with_capacity(dim),
        }
    }

    /// Appends one row; `v` must have the writer's dimension.
    pub fn push(&mut self, v: &[f32]) {
        debug_assert_eq!(v.len(), self.dim);
        let scale = quantize(v, &mut self.buf);
        self.scales.push(scale);
        self.rows.extend_from_slice(&self.buf);
    }

    /// Appends a row already quantised (a row of an earlier generation, copied as it is:
    /// re-quantising its dequantised values could move a component by one step).
    pub fn push_quantized(&mut self, scale: f32, row: &[i8]) {
        debug_assert_eq!(row.len(), self.dim);
        self.scales.push(scale);
        self.rows.extend_from_slice(row);
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Rows written so far.
    pub fn len(&self) -> usize {
        self.scales.len()
    }

    pub fn is_empty(&self) -> bool {
        self.scales.is_empty()
    }

    /// Writes the file (rows, then the mean and the sketches) and fsyncs it.
    pub fn finish(self) -> Result<()> {
        let path = self.path.clone();
        let bytes = self.encode()?;
        let mut f = std::fs::File::create(&path).map_err(|e| Error::io("create", &path, e))?;
        f.write_all(&bytes)
            .and_then(|()| f.sync_all())
            .map_err(|e| Error::io("write", &path, e))?;
        Ok(())
    }

    /// The matrix as an opened index in anonymous memory, in the same layout as the file,
    /// for a generation that is never written to disk.
    pub fn finish_in_memory(self) -> Result<DenseIndex> {
        let path = self.path.clone();
        let bytes = self.encode()?;
        let mut map = memmap2::MmapMut::map_anon(bytes.len())
            .map_err(|e| Error::io("map anonymous memory for", &path, e))?;
        map.copy_from_slice(&bytes);
        let map = map
            .make_read_only()
            .map_err(|e| Error::io("protect", &path, e))?;
        DenseIndex::from_map(map, &path)
    }

    /// The bytes of the matrix: rows, then the mean and the sketches.
    fn encode(self) -> Result<Vec<u8>> {
        let (dim, count) = (self.dim, self.scales.len());
        let layout = Layout::of(dim, count).ok_or_else(|| Error::Corrupt {
            what: "dense index",
            path: self.path.clone(),
            reason: "size overflow".into(),
        })?;
        let mut bytes = Vec::with_capacity(layout.end);
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&(dim as u32).to_le_bytes());
        bytes.extend_from_slice(&0u32.to_le_bytes());
        bytes.extend_from_slice(&(count as u64).to_le_bytes());
        bytes.extend_from_slice(&0u64.to_le_bytes());
        for s in &self.scales {
            bytes.extend_from_slice(&s.to_le_bytes());
        }
        bytes.extend(self.rows.iter().map(|&b| b as u8));
        bytes.resize(layout.mean, 0);
        let mut mean = vec![0f64; dim];
        for (row, &scale) in self.rows.chunks_exact(dim.max(1)).zip(&self.scales) {
            for (m, &x) in mean.iter_mut().zip(row) {
                *m += f64::from(x) * f64::from(scale);
            }
        }
        let mean: Vec<f32> = mean
            .iter()
            .map(|m| (m / count.max(1) as f64) as f32)
            .collect();
        for m in &mean {
            bytes.extend_from_slice(&m.to_le_bytes());
        }
        let (mut v, mut scratch) = (vec![0f32; dim], Vec::with_capacity(dim));
        let mut sk = Vec::with_capacity(words(dim));
        for (row, &scale) in self.rows.chunks_exact(dim.max(1)).zip(&self.scales) {
            for (o, &x) in v.iter_mut().zip(row) {
                *o = f32::from(x) * scale;
            }
            sketch::encode(&v, &mean, &mut scratch, &mut sk);
            for w in &sk {
                bytes.extend_from_slice(&w.to_le_bytes());
            }
        }
        debug_assert_eq!(bytes.len(), layout.end);
        Ok(bytes)
    }
}

/// An opened matrix.
pub struct DenseIndex {
    map: memmap2::Mmap,
    dim: usize,
    /// Rows of this file (not counting an overlay's).
    count: usize,
    layout: Layout,
    mean: Vec<f32>,
    code: Code,
    overlay: Option<Box<Overlay>>,
}

/// The second matrix of an overlaid one, and which rows of the first are still rows.
struct Overlay {
    added: DenseIndex,
    /// Row of the first matrix → its ordinal, or [`DEAD`].
    ord_of: Vec<u32>,
    /// Ordinal → row of the first matrix, for the ordinals below `row_of.len()`; the
    /// ordinals after them are the rows of `added`, in order.
    row_of: Vec<u32>,
}

impl std::fmt::Debug for DenseIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DenseIndex")
            .field("dim", &self.dim)
            .field("count", &self.len())
            .finish()
    }
}

impl VectorIndex for DenseIndex {
    fn dim(&self) -> usize {
        self.dim
    }

    fn len(&self) -> usize {
        DenseIndex::len(self)
    }

    fn top_k(&self, query: &QueryVector, k: usize) -> Result<Vec<Neighbor>> {
        Ok(DenseIndex::top_k(self, query, k))
    }

    fn cosines(&self, query: &QueryVector, rows: &[u32], out: &mut Vec<f32>) -> Result<()> {
        let query = Quantized::of(query);
        out.extend(rows.iter().map(|&row| self.score_q(&query, row)));
        Ok(())
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}

impl DenseIndex {
    /// Opens `<dir>/matrix.bin`, checking its header and size.
    pub fn open(dir: &Path) -> Result<DenseIndex> {
        DenseIndex::open_file(&dir.join(MATRIX_FILE))
    }

    /// Opens the matrix file at `path`, checking its header and size.
    pub fn open_file(path: &Path) -> Result<DenseIndex> {
        let path = path.to_path_buf();
        let file = std::fs::File::open(&path).map_err(|e| Error::io("open", &path, e))?;
        // SAFETY: generations are written once and never modified after publication; a
        // truncated or replaced file is detected by the size check below before any access.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io("map", &path, e))?;
        DenseIndex::from_map(map, &path)
    }

    /// The index over a mapped matrix (`path` names it in errors), checking its header and
    /// size.
    fn from_map(map: memmap2::Mmap, path: &Path) -> Result<DenseIndex> {
        let corrupt = |reason: &str| Error::Corrupt {
            what: "dense index",
            path: path.to_path_buf(),
            reason: reason.to_string(),
        };
        let code = match map.get(..8) {
            Some(m) if m == MAGIC => Code::Rotated,
            Some(m) if m == MAGIC_SIGN => Code::Sign,
            _ => return Err(corrupt("not a vector matrix")),
        };
        if map.len() < HEADER {
            return Err(corrupt("not a vector matrix"));
        }
        let dim = u32::from_le_bytes(map[8..12].try_into().unwrap_or_default()) as usize;
        let count = u64::from_le_bytes(map[16..24].try_into().unwrap_or_default()) as usize;
        let layout = Layout::of(dim, count).ok_or_else(|| corrupt("size overflow"))?;
        if dim == 0 || map.len() != layout.end {
            return Err(corrupt(&format!(
                "expected {} bytes for {count} rows of {dim}, found {}",
                layout.end,
                map.len()
            )));
        }
        // A search of a large matrix reads a few thousand rows scattered over it: without
        // this, each one faults its neighbours in too, and a serving process soon holds every
        // row. (A small matrix is scanned whole, which read-ahead serves best.) The range
        // starts on a 64 KiB boundary, a multiple of every page size; advice is only advice.
        #[cfg(unix)]
        if count > EXACT_MAX_ROWS {
            let rows_from = layout.rows.next_multiple_of(1 << 16);
            if rows_from < layout.mean {
                let len = layout.mean - rows_from;
                let _ = map.advise_range(memmap2::Advice::Random, rows_from, len);
            }
        }
        let mean = map[layout.mean..layout.sketches]
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        Ok(DenseIndex {
            map,
            dim,
            count,
            layout,
            mean,
            code,
            overlay: None,
        })
    }

    /// The matrix whose rows are the rows of `base` not listed in `dropped` (ascending),
    /// then every row of `added`. `path` names it in errors.
    pub fn with_overlay(
        base: DenseIndex,
        added: DenseIndex,
        dropped: &[u32],
        path: &Path,
    ) -> Result<DenseIndex> {
        let corrupt = |reason: String| Error::Corrupt {
            what: "dense index",
            path: path.to_path_buf(),
            reason,
        };
        if base.overlay.is_some() || added.overlay.is_some() {
            return Err(corrupt("an overlay over an overlay".into()));
        }
        if added.dim != base.dim {
            return Err(corrupt(format!(
                "added rows of dimension {} over rows of {}",
                added.dim, base.dim
            )));
        }
        let ascending = dropped.windows(2).all(|w| w[0] < w[1]);
        if !ascending || dropped.last().is_some_and(|&r| r as usize >= base.count) {
            return Err(corrupt(format!(
                "dropped rows are not ascending below {}",
                base.count
            )));
        }
        let mut ord_of = vec![0u32; base.count];
        let mut row_of = Vec::with_capacity(base.count - dropped.len());
        let mut next = dropped.iter().peekable();
        for (row, ord) in ord_of.iter_mut().enumerate() {
            if next.peek().is_some_and(|&&d| d as usize == row) {
                next.next();
                *ord = DEAD;
            } else {
                *ord = row_of.len() as u32;
                row_of.push(row as u32);
            }
        }
        Ok(DenseIndex {
            overlay: Some(Box::new(Overlay {
                added,
                ord_of,
                row_of,
            })),
            ..base
        })
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Rows (= ordinals), an overlay's included.
    pub fn len(&self) -> usize {
        match &self.overlay {
            Some(o) => o.row_of.len() + o.added.count,
            None => self.count,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Where ordinal `ord` is stored: this file's row, or the overlay's.
    fn locate(&self, ord: usize) -> Option<(&DenseIndex, usize)> {
        match &self.overlay {
            None => (ord < self.count).then_some((self, ord)),
            Some(o) => match o.row_of.get(ord) {
                Some(&row) => Some((self, row as usize)),
                None => {
                    let at = ord - o.row_of.len();
                    (at < o.added.count).then_some((&o.added, at))
                }
            },
        }
    }

    /// One row as stored: its scale and its int8 components (for copying into a derived
    /// generation).
    pub fn quantized(&self, row: usize) -> Option<(f32, &[i8])> {
        self.locate(row).map(|(m, r)| (m.scale(r), m.row(r)))
    }

    fn scale(&self, row: usize) -> f32 {
        let at = self.layout.scales + row * 4;
        f32::from_le_bytes(self.map[at..at + 4].try_into().unwrap_or_default())
    }

    /// The sketches of this file's rows, read in place (the section starts 8-aligned in a
    /// page-aligned map) or, failing that, decoded.
    fn sketches(&self) -> std::borrow::Cow<'_, [u64]> {
        let bytes = &self.map[self.layout.sketches..self.layout.end];
        // SAFETY: any bit pattern is a valid u64; `align_to` only yields the aligned middle.
        let (head, words, tail) = unsafe { bytes.align_to::<u64>() };
        if head.is_empty() && tail.is_empty() && cfg!(target_endian = "little") {
            return std::borrow::Cow::Borrowed(words);
        }
        bytes
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
            .collect()
    }

    fn row(&self, row: usize) -> &[i8] {
        let at = self.layout.rows + row * self.dim;
        let bytes = &self.map[at..at + self.dim];
        // SAFETY: i8 and u8 have the same size and alignment.
        unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<i8>(), bytes.len()) }
    }

    /// The (approximate) cosine of `query` (a unit vector) with one row.
    pub fn score(&self, query: &QueryVector, row: u32) -> f32 {
        self.score_q(&Quantized::of(query), row)
    }

    /// The `k` rows most similar to `query`, best first (ties: lower row first).
    pub fn top_k(&self, query: &QueryVector, k: usize) -> Vec<Neighbor> {
        self.top_k_q(&Quantized::of(query), k)
    }

    /// Every row scored; the reference the prefiltered path approximates.
    pub fn exact_top_k(&self, query: &QueryVector, k: usize) -> Vec<Neighbor> {
        self.exact_top_k_q(&Quantized::of(query), k)
    }

    fn score_q(&self, query: &Quantized, row: u32) -> f32 {
        let Some((m, row)) = self.locate(row as usize) else {
            return 0.0;
        };
        dot_i8(&query.values, m.row(row)) as f32 * query.scale * m.scale(row)
    }

    fn top_k_q(&self, query: &Quantized, k: usize) -> Vec<Neighbor> {
        if k == 0 || self.is_empty() || query.values.len() != self.dim {
            return Vec::new();
        }
        if let Some(o) = &self.overlay {
            return self.overlay_top_k(o, query, k);
        }
        let rescore = k.saturating_mul(RESCORE_PER_K).max(RESCORE_MIN);
        if self.count <= EXACT_MAX_ROWS || rescore >= self.count / 2 {
            return self.exact_top_k_q(query, k);
        }
        let candidates = self.prefilter(query, rescore);
        let dots = self.dots_of(&query.values, &candidates);
        let mut heap: BinaryHeap<Neighbor> = BinaryHeap::with_capacity(k + 1);
        for (row, d) in candidates.into_iter().zip(dots) {
            let score = d as f32 * query.scale * self.scale(row as usize);
            keep(&mut heap, k, Neighbor { score, row });
        }
        sorted(heap)
    }

    /// Integer dot products of `q` with the given rows (each below `count`).
    fn dots_of(&self, q: &[i8], rows: &[u32]) -> Vec<i32> {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU supports AVX2 (checked just above).
                return unsafe { self.dots_of_avx2(q, rows) };
            }
        }
        rows.iter()
            .map(|&r| dot_i8(q, self.row(r as usize)))
            .collect()
    }

    /// The candidates are scattered over a matrix far larger than the caches, so the scan
    /// waits on memory, not arithmetic: each row is prefetched a few candidates ahead.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn dots_of_avx2(&self, q: &[i8], rows: &[u32]) -> Vec<i32> {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        const AHEAD: usize = 8;
        let matrix = &self.map[self.layout.rows..self.layout.rows + self.count * self.dim];
        let mut out = Vec::with_capacity(rows.len());
        for (i, &r) in rows.iter().enumerate() {
            if let Some(&next) = rows.get(i + AHEAD) {
                let at = next as usize * self.dim;
                for line in (0..self.dim).step_by(64) {
                    if let Some(byte) = matrix.get(at + line) {
                        // A prefetch is only a hint; it never faults.
                        _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(byte).cast());
                    }
                }
            }
            out.push(dot_i8(q, self.row(r as usize)));
        }
        out
    }

    /// [`DenseIndex::top_k`] of an overlaid matrix: each file scanned (or prefiltered) on
    /// its own, rows named by their ordinals, the dropped rows skipped. The heap orders by
    /// score then ordinal, so the answer is the one a compact matrix of the same rows gives.
    fn overlay_top_k(&self, o: &Overlay, query: &Quantized, k: usize) -> Vec<Neighbor> {
        let n = self.len();
        let rescore = k.saturating_mul(RESCORE_PER_K).max(RESCORE_MIN);
        let split = o.row_of.len() as u32;
        let mut heap: BinaryHeap<Neighbor> = BinaryHeap::with_capacity(k + 1);
        let exact = n <= EXACT_MAX_ROWS || rescore >= n / 2;
        let parts: [(&DenseIndex, &dyn Fn(u32) -> u32); 2] = [
            (self, &|row| o.ord_of[row as usize]),
            (&o.added, &|row| split + row),
        ];
        for (m, ord) in parts {
            if m.count == 0 {
                continue;
            }
            let (rows, dots): (Vec<u32>, Vec<i32>) = if exact || m.count <= rescore {
                ((0..m.count as u32).collect(), m.all_dots(&query.values))
            } else {
                let rows = m.prefilter(query, rescore);
                let dots = m.dots_of(&query.values, &rows);
                (rows, dots)
            };
            for (row, d) in rows.into_iter().zip(dots) {
                let ord = ord(row);
                if ord != DEAD {
                    let score = d as f32 * query.scale * m.scale(row as usize);
                    keep(&mut heap, k, Neighbor { score, row: ord });
                }
            }
        }
        sorted(heap)
    }

    fn exact_top_k_q(&self, query: &Quantized, k: usize) -> Vec<Neighbor> {
        if k == 0 || self.is_empty() || query.values.len() != self.dim {
            return Vec::new();
        }
        if self.overlay.is_some() {
            let mut heap: BinaryHeap<Neighbor> = BinaryHeap::with_capacity(k + 1);
            for ord in 0..self.len() as u32 {
                let score = self.score_q(query, ord);
                keep(&mut heap, k, Neighbor { score, row: ord });
            }
            return sorted(heap);
        }
        let scales = &self.map[self.layout.scales..self.layout.rows];
        let mut heap: BinaryHeap<Neighbor> = BinaryHeap::with_capacity(k + 1);
        let dots = self.all_dots(&query.values);
        for (i, d) in dots.into_iter().enumerate() {
            let s = f32::from_le_bytes(scales[i * 4..i * 4 + 4].try_into().unwrap_or_default());
            keep(
                &mut heap,
                k,
                Neighbor {
                    score: d as f32 * query.scale * s,
                    row: i as u32,
                },
            );
        }
        sorted(heap)
    }

    /// Integer dot products of `q` with every row of this file, in one pass.
    fn all_dots(&self, q: &[i8]) -> Vec<i32> {
        // SAFETY: see `row`.
        let rows = unsafe {
            std::slice::from_raw_parts(
                self.map[self.layout.rows..].as_ptr().cast::<i8>(),
                self.count * self.dim,
            )
        };
        dot_rows(q, rows, self.dim)
    }

    /// The `m` rows whose sketches estimate the best scores (ties: lower rows), in row
    /// order.
    fn prefilter(&self, query: &Quantized, m: usize) -> Vec<u32> {
        let w = words(self.dim);
        let probe = Probe::new(self.code, query.raw, &self.mean);
        let dist = probe.keys(&self.sketches(), w);
        // Counting selection: keys are small integers, so a histogram finds the cut.
        let mut hist = vec![0usize; sketch::max_key(self.code, w) + 2];
        for &d in &dist {
            hist[d as usize] += 1;
        }
        let (mut cut, mut below) = (0usize, 0usize);
        while cut < hist.len() && below + hist[cut] < m {
            below += hist[cut];
            cut += 1;
        }
        let mut at_cut = m - below;
        let mut out = Vec::with_capacity(m);
        for (row, &d) in dist.iter().enumerate() {
            let d = d as usize;
            if d < cut {
                out.push(row as u32);
            } else if d == cut && at_cut > 0 {
                at_cut -= 1;
                out.push(row as u32);
            }
        }
        out
    }
}

fn keep(heap: &mut BinaryHeap<Neighbor>, k: usize, n: Neighbor) {
    if heap.len() < k {
        heap.push(n);
    } else if heap.peek().is_some_and(|worst| n < *worst) {
        heap.pop();
        heap.push(n);
    }
}

fn sorted(heap: BinaryHeap<Neighbor>) -> Vec<Neighbor> {
    let mut out = heap.into_vec();
    out.sort();
    out
}

/// A query vector quantised like the int8 rows, beside the values it was quantised from
/// (which the sketch prefilter reads).
struct Quantized<'q> {
    values: Vec<i8>,
    scale: f32,
    raw: &'q [f32],
}

impl Quantized<'_> {
    fn of(query: &QueryVector) -> Quantized<'_> {
        let raw = query.values();
        let mut values = Vec::with_capacity(raw.len());
        let scale = quantize(raw, &mut values);
        Quantized { values, scale, raw }
    }
}

/// Integer dot products of `q` with every row of `rows`.
fn dot_rows(q: &[i8], rows: &[i8], dim: usize) -> Vec<i32> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above).
            return unsafe { dot_rows_avx2(q, rows, dim) };
        }
    }
    dot_rows_generic(q, rows, dim)
}

/// The same loop compiled with AVX2 enabled: LLVM turns the widening multiply-add into
/// 256-bit `vpmaddwd`, about twice the throughput of the SSE2 baseline.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot_rows_avx2(q: &[i8], rows: &[i8], dim: usize) -> Vec<i32> {
    dot_rows_generic(q, rows, dim)
}

#[inline(always)]
fn dot_rows_generic(q: &[i8], rows: &[i8], dim: usize) -> Vec<i32> {
    rows.chunks_exact(dim).map(|r| dot_i8(q, r)).collect()
}

/// Integer dot product, written so that it vectorises: i8 → i16 products summed pairwise
/// into i32 lanes (`pmaddwd`).
#[inline(always)]
fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    const LANES: usize = 32;
    let mut acc = [0i32; LANES / 2];
    let (ac, ar) = a.split_at(a.len() - a.len() % LANES);
    let (bc, br) = b.split_at(ac.len().min(b.len()));
    for (x, y) in ac.chunks_exact(LANES).zip(bc.chunks_exact(LANES)) {
        for i in 0..LANES / 2 {
            acc[i] += i32::from(i16::from(x[2 * i]) * i16::from(y[2 * i]))
                + i32::from(i16::from(x[2 * i + 1]) * i16::from(y[2 * i + 1]));
        }
    }
    let mut sum: i32 = acc.iter().sum();
    for (&x, &y) in ar.iter().zip(br) {
        sum += i32::from(x) * i32::from(y);
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    #[test]
    fn round_trip_and_top_k() {
        let dir = tempfile::tempdir().unwrap();
        let dim = 40;
        let rows: Vec<Vec<f32>> = (0..50)
            .map(|i| {
                unit(
                    &(0..dim)
                        .map(|j| ((i * 7 + j * 3) % 11) as f32 - 5.0)
                        .collect::<Vec<_>>(),
                )
            })
            .collect();
        let mut w = DenseWriter::create(dir.path(), dim).unwrap();
        for r in &rows {
            w.push(r);
        }
        w.push(&vec![0.0; dim]);
        w.finish().unwrap();
        let idx = DenseIndex::open(dir.path()).unwrap();
        assert_eq!((idx.len(), idx.dim()), (51, dim));
        let q = QueryVector::new(&rows[17]);
        let top = idx.top_k(&q, 5);
        assert_eq!(top.len(), 5);
        assert!(top.windows(2).all(|w| w[0].score >= w[1].score));
        // Exact cosines in f32, compared with the int8 scores.
        for n in &top {
            let exact: f32 = rows[17]
                .iter()
                .zip(&rows[n.row as usize])
                .map(|(a, b)| a * b)
                .sum();
            assert!((exact - n.score).abs() < 0.02, "{exact} vs {}", n.score);
        }
        assert!((top[0].score - 1.0).abs() < 0.02);
        assert_eq!(idx.score(&q, 50), 0.0);
    }

    #[test]
    fn corrupt_files_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = DenseWriter::create(dir.path(), 4).unwrap();
        w.push(&[1.0, 0.0, 0.0, 0.0]);
        w.finish().unwrap();
        let path = dir.path().join(MATRIX_FILE);
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        let err = DenseIndex::open(dir.path()).unwrap_err().to_string();
        assert!(err.contains("corrupt dense index"), "{err}");
        std::fs::write(&path, b"nonsense").unwrap();
        assert!(DenseIndex::open(dir.path()).is_err());
    }

    /// A seeded stream of numbers in [-0.5, 0.5), the same on every run.
    fn uniform(mut seed: u64) -> impl FnMut() -> f32 {
        move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        }
    }

    /// Writes `n` unit rows of `dim` around 50 random centres into `dir`'s matrix; the centres.
    fn write_clustered(dir: &Path, dim: usize, n: usize, seed: u64) -> Vec<Vec<f32>> {
        let mut rnd = uniform(seed);
        let centres: Vec<Vec<f32>> = (0..50).map(|_| (0..dim).map(|_| rnd()).collect()).collect();
        let mut w = DenseWriter::create(dir, dim).unwrap();
        for i in 0..n {
            let c = &centres[i % centres.len()];
            let v: Vec<f32> = c.iter().map(|x| x + 0.3 * rnd()).collect();
            w.push(&unit(&v));
        }
        w.finish().unwrap();
        centres
    }

    #[test]
    fn prefiltered_top_k_agrees_with_the_exact_scan() {
        // Clustered rows, as real embeddings are: the sketch must find the true neighbours.
        let dir = tempfile::tempdir().unwrap();
        let centres = write_clustered(dir.path(), 64, 40_000, 7);
        let idx = DenseIndex::open(dir.path()).unwrap();
        for probe in [3usize, 1234, 39_999] {
            let q = QueryVector::new(&unit(&centres[probe % centres.len()].clone()));
            let exact = idx.exact_top_k(&q, 100);
            let fast = idx.top_k(&q, 100);
            assert_eq!(fast.len(), 100);
            let found = fast.iter().filter(|n| exact.contains(n)).count();
            assert!(found >= 95, "recall {found}/100");
            assert!(fast.windows(2).all(|w| w[0].score >= w[1].score));
        }
    }

    /// An overlaid matrix answers as the compact matrix of the same rows: the same rows
    /// under the same ordinals, the same exact answers (ties included), and the prefiltered
    /// answer finds the exact neighbours.
    #[test]
    fn an_overlay_answers_as_the_compact_matrix_of_its_rows() {
        let dim = 64;
        let mut rnd = uniform(11u64);
        let centres: Vec<Vec<f32>> = (0..40).map(|_| (0..dim).map(|_| rnd()).collect()).collect();
        for (base_rows, added_rows) in [(3_000usize, 200usize), (30_000, 700), (500, 0)] {
            let dir = tempfile::tempdir().unwrap();
            let mut row = |i: usize| {
                let c = &centres[i % centres.len()];
                unit(&c.iter().map(|x| x + 0.3 * rnd()).collect::<Vec<f32>>())
            };
            let base: Vec<Vec<f32>> = (0..base_rows).map(&mut row).collect();
            // Duplicates of kept rows make exact ties across the two files.
            let mut added: Vec<Vec<f32>> = (0..added_rows).map(&mut row).collect();
            if added_rows > 0 {
                added[0] = base[1].clone();
            }
            let dropped: Vec<u32> = (0..base_rows as u32).filter(|r| r % 7 == 3).collect();
            let write = |name: &str, rows: &mut dyn Iterator<Item = &Vec<f32>>| {
                let mut w = DenseWriter::create_named(dir.path(), name, dim).unwrap();
                rows.for_each(|v| w.push(v));
                w.finish().unwrap();
                DenseIndex::open_file(&dir.path().join(name)).unwrap()
            };
            let overlaid = DenseIndex::with_overlay(
                write("base.bin", &mut base.iter()),
                write("added.bin", &mut added.iter()),
                &dropped,
                dir.path(),
            )
            .unwrap();
            let kept = base
                .iter()
                .enumerate()
                .filter(|(i, _)| !dropped.contains(&(*i as u32)))
                .map(|(_, v)| v);
            let compact = write("compact.bin", &mut kept.chain(added.iter()));
            assert_eq!(overlaid.len(), compact.len());
            for ord in (0..compact.len()).step_by(97) {
                assert_eq!(overlaid.quantized(ord), compact.quantized(ord), "row {ord}");
            }
            assert_eq!(overlaid.quantized(compact.len()), None);
            for probe in [0usize, 5, 17] {
                let q = QueryVector::new(&unit(&centres[probe]));
                let exact = compact.exact_top_k(&q, 50);
                assert_eq!(overlaid.exact_top_k(&q, 50), exact);
                let got = overlaid.top_k(&q, 50);
                if compact.len() <= EXACT_MAX_ROWS {
                    assert_eq!(got, exact, "{base_rows} rows");
                } else {
                    let found = got.iter().filter(|n| exact.contains(n)).count();
                    assert!(found >= 47, "recall {found}/50");
                }
                let rows: Vec<u32> = exact.iter().map(|n| n.row).collect();
                let mut cos = Vec::new();
                VectorIndex::cosines(&overlaid, &q, &rows, &mut cos).unwrap();
                assert!(cos.iter().zip(&exact).all(|(c, n)| *c == n.score));
            }
        }
        // Dropped rows out of order or out of range are damage, not a panic.
        let dir = tempfile::tempdir().unwrap();
        let open = |name: &str| {
            let mut w = DenseWriter::create_named(dir.path(), name, 4).unwrap();
            w.push(&[1.0, 0.0, 0.0, 0.0]);
            w.push(&[0.0, 1.0, 0.0, 0.0]);
            w.finish().unwrap();
            DenseIndex::open_file(&dir.path().join(name)).unwrap()
        };
        for dropped in [&[1u32, 0][..], &[2], &[0, 0]] {
            let e = DenseIndex::with_overlay(open("a"), open("b"), dropped, dir.path());
            assert!(matches!(e, Err(Error::Corrupt { .. })), "{dropped:?}");
        }
    }

    /// A matrix written before the rotated sketch (`SATVEC02`, sign sketches) is still read
    /// with the sketch it holds, and its prefiltered answer still finds the exact neighbours.
    #[test]
    fn a_matrix_of_sign_sketches_is_still_read() {
        let dir = tempfile::tempdir().unwrap();
        let (dim, n) = (64, 30_000);
        let centres = write_clustered(dir.path(), dim, n, 5);
        let current = DenseIndex::open(dir.path()).unwrap();
        assert_eq!(current.code, Code::Rotated);
        // Rewrite the file as an earlier version did: its magic, and sign sketches.
        let mut bytes = std::fs::read(dir.path().join(MATRIX_FILE)).unwrap();
        bytes[..8].copy_from_slice(MAGIC_SIGN);
        let at = current.layout.sketches;
        let wpr = words(dim) * 8;
        for row in 0..n {
            let (scale, values) = current.quantized(row).unwrap();
            let v: Vec<f32> = values.iter().map(|&x| f32::from(x) * scale).collect();
            let mut sign = Vec::new();
            sketch::sign_sketch(&v, &current.mean, &mut sign);
            for (j, word) in sign.iter().enumerate() {
                bytes[at + row * wpr + j * 8..at + row * wpr + j * 8 + 8]
                    .copy_from_slice(&word.to_le_bytes());
            }
        }
        drop(current);
        std::fs::write(dir.path().join(MATRIX_FILE), &bytes).unwrap();
        let old = DenseIndex::open(dir.path()).unwrap();
        assert_eq!(old.code, Code::Sign);
        for probe in [0usize, 11, 42] {
            let q = QueryVector::new(&unit(&centres[probe]));
            let exact = old.exact_top_k(&q, 50);
            let found = old
                .top_k(&q, 50)
                .iter()
                .filter(|n| exact.contains(n))
                .count();
            assert!(found >= 45, "recall {found}/50");
        }
    }

    #[test]
    fn dot_product_matches_scalar() {
        let a: Vec<i8> = (0..77).map(|i| ((i * 37) % 255) as i8).collect();
        let b: Vec<i8> = (0..77).map(|i| ((i * 91 + 5) % 255) as i8).collect();
        let want: i32 = a
            .iter()
            .zip(&b)
            .map(|(&x, &y)| i32::from(x) * i32::from(y))
            .sum();
        assert_eq!(dot_i8(&a, &b), want);
    }
}
