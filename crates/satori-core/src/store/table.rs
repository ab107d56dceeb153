//! The chunk table: per-chunk and per-file metadata kept in memory, so a reader (search, for
//! its candidates) never reads the document store for it.
//!
//! On disk it is one binary file (`<gen>/chunks.bin`, see `codec`); generations written
//! before it hold one JSON document (`<gen>/chunks.json`), still read. Chunk `i` of the table has ordinal
//! `i`, which is also the row of the dense matrix under `<gen>/vectors/`, so per-ordinal
//! scores from any retriever can be combined by indexing into plain vectors.
//!
//! Every chunk also has a *key*: a number given once and never reused, carried by its
//! document in the lexical index. Keys let a derived generation keep the previous one's
//! tantivy segments (and delete documents by key) while the table is rewritten compact:
//! the table is sorted by key, so a reader maps a document to its ordinal by key.
//!
//! A derived generation may store its table as the base table it shares with earlier
//! generations plus the chunks added since (see `overlay`); [`ChunkTable::load`] composes
//! the two into the one table readers see.

use std::path::Path;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::overlay::{DELTA_TABLE_FILE, Overlay};
use crate::lang::Language;
use crate::symbol::Symbol;
use crate::{Error, Result};

/// File name of the table inside a generation directory.
pub const TABLE_FILE: &str = "chunks.bin";

/// The table of a generation written before the binary form.
const JSON_TABLE_FILE: &str = "chunks.json";

/// Bumped whenever the table's layout changes incompatibly.
pub const TABLE_VERSION: u32 = 4;

/// The version of the JSON tables of older generations.
const JSON_TABLE_VERSION: u32 = 2;

/// One file of the generation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileEntry {
    pub path: String,
    pub language: Language,
    pub size: u64,
    pub mtime_ms: u64,
    pub indexed_at_ms: u64,
}

/// One chunk of the generation, without its content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkEntry {
    /// The chunk's key: unique in this generation and every generation derived from it.
    pub key: u64,
    /// Index into the file table.
    pub file: u32,
    pub start_line: u32,
    pub end_line: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol: Option<Symbol>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub defines: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub breadcrumbs: Vec<String>,
    pub content_hash: String,
}

/// The whole table: files, then chunks in ordinal order (which is ascending key order).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChunkTable {
    pub version: u32,
    /// The key the next new chunk gets; above every key this generation or any generation
    /// it was derived from ever used.
    pub next_key: u64,
    pub files: Vec<FileEntry>,
    pub chunks: Chunks,
}

/// The chunks of a table, in ordinal order. A table read from disk decodes a chunk's
/// variable part (symbol, names, hash) the first time it is asked for: a search reads a few
/// thousand of a large codebase's hundred thousand chunks, and a process started for one
/// search (each `satori-cli` call) must not decode them all. Keys and file ids are read up
/// front, for the checks of [`ChunkTable::load`] and for mapping documents by key.
#[derive(Default)]
pub struct Chunks {
    keys: Vec<u64>,
    files: Vec<u32>,
    cells: Vec<OnceLock<Box<ChunkEntry>>>,
    /// Where undecoded chunks are read from.
    source: Option<codec::Source>,
    /// A table composed over a base: the base position of each ordinal below its length
    /// (the base's live chunks), and the table the ordinals after them are read from, in
    /// order.
    base_pos: Vec<u32>,
    added: Option<codec::Source>,
}

impl Chunks {
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The key of chunk `i`.
    pub fn key(&self, i: usize) -> u64 {
        self.keys[i]
    }

    /// The file id of chunk `i`.
    pub fn file(&self, i: usize) -> u32 {
        self.files[i]
    }

    /// The ordinal of the chunk with `key` (the chunks are in ascending key order).
    pub fn position(&self, key: u64) -> Option<usize> {
        self.keys.binary_search(&key).ok()
    }

    /// Chunk `i`: the decoded one if it was decoded before, else decoded for the caller only
    /// (not kept), for a pass over many chunks that search will mostly never ask for again.
    pub fn transient(&self, i: usize) -> std::borrow::Cow<'_, ChunkEntry> {
        if let Some(chunk) = self.cells[i].get() {
            return std::borrow::Cow::Borrowed(chunk);
        }
        std::borrow::Cow::Owned(self.decode(i))
    }

    /// Chunk `i`, decoded on first use. The table's checksum was verified when it was read,
    /// so the bytes are the ones written; a chunk that does not decode is a damaged table,
    /// and the panic is caught and reported as one by the search that met it.
    pub fn get(&self, i: usize) -> &ChunkEntry {
        self.cells[i].get_or_init(|| Box::new(self.decode(i)))
    }

    /// Decodes chunk `i` from the bytes it is stored in (see [`Chunks::get`] for why a
    /// failure panics).
    fn decode(&self, i: usize) -> ChunkEntry {
        let (source, at) = match &self.added {
            Some(added) if i >= self.base_pos.len() => (Some(added), i - self.base_pos.len()),
            Some(_) => (self.source.as_ref(), self.base_pos[i] as usize),
            None => (self.source.as_ref(), i),
        };
        let chunk = source
            .expect("an undecoded chunk has a source")
            .chunk(at)
            .unwrap_or_else(|e| panic!("chunk table: chunk {i}: {e}"));
        // File ids are those of the table the chunk was stored in.
        ChunkEntry {
            file: self.files[i],
            ..chunk
        }
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = &ChunkEntry> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    pub fn push(&mut self, c: ChunkEntry) {
        self.keys.push(c.key);
        self.files.push(c.file);
        self.cells.push(OnceLock::from(Box::new(c)));
    }

    pub fn reserve(&mut self, n: usize) {
        self.keys.reserve(n);
        self.files.reserve(n);
        self.cells.reserve(n);
    }
}

impl std::ops::Index<usize> for Chunks {
    type Output = ChunkEntry;
    fn index(&self, i: usize) -> &ChunkEntry {
        self.get(i)
    }
}

impl From<Vec<ChunkEntry>> for Chunks {
    fn from(v: Vec<ChunkEntry>) -> Chunks {
        let mut c = Chunks::default();
        c.reserve(v.len());
        v.into_iter().for_each(|e| c.push(e));
        c
    }
}

impl FromIterator<ChunkEntry> for Chunks {
    fn from_iter<I: IntoIterator<Item = ChunkEntry>>(iter: I) -> Chunks {
        let mut c = Chunks::default();
        iter.into_iter().for_each(|e| c.push(e));
        c
    }
}

impl Clone for Chunks {
    fn clone(&self) -> Chunks {
        self.iter().cloned().collect::<Vec<_>>().into()
    }
}

impl PartialEq for Chunks {
    fn eq(&self, other: &Chunks) -> bool {
        self.len() == other.len() && self.iter().zip(other.iter()).all(|(a, b)| a == b)
    }
}

impl std::fmt::Debug for Chunks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Serialize for Chunks {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for Chunks {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Chunks, D::Error> {
        Vec::<ChunkEntry>::deserialize(d).map(Chunks::from)
    }
}

impl ChunkTable {
    /// Writes the table durably (temporary file, fsync, rename).
    pub fn save(&self, dir: &Path) -> Result<()> {
        self.save_named(dir, TABLE_FILE)
    }

    /// Writes the table durably as `<dir>/<name>`.
    pub fn save_named(&self, dir: &Path, name: &str) -> Result<()> {
        crate::util::write_atomic(&dir.join(name), &codec::encode(self))
    }

    /// Reads and checks the table of a generation (binary, or the JSON of an older one; a
    /// base and the chunks added over it, composed, when the generation has an overlay).
    pub fn load(dir: &Path) -> Result<ChunkTable> {
        let Some(overlay) = Overlay::load(dir)? else {
            return ChunkTable::load_one(dir, TABLE_FILE);
        };
        let base = ChunkTable::load_one(dir, TABLE_FILE)?;
        let added = ChunkTable::load_one(dir, DELTA_TABLE_FILE)?;
        let path = dir.join(super::overlay::OVERLAY_FILE);
        let table = compose(base, added, &overlay).map_err(|reason| Error::Corrupt {
            what: "chunk table",
            path: path.clone(),
            reason,
        })?;
        table.check(&path)?;
        Ok(table)
    }

    /// Reads and checks one stored table.
    fn load_one(dir: &Path, name: &str) -> Result<ChunkTable> {
        let binary = dir.join(name);
        let (path, decoded) = match std::fs::File::open(&binary) {
            Ok(file) => {
                // Generations are never written again once published (a new one replaces
                // them), so the mapping cannot change under the reader.
                let bytes = unsafe { memmap2::Mmap::map(&file) }
                    .map_err(|e| Error::io("map", &binary, e))?;
                let decoded = codec::decode(bytes, |len| crc_of_file(&file, len));
                (binary, decoded)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && name == TABLE_FILE => {
                let path = dir.join(JSON_TABLE_FILE);
                let bytes = std::fs::read(&path).map_err(|e| Error::io("read", &path, e))?;
                let decoded = serde_json::from_slice::<ChunkTable>(&bytes)
                    .map_err(|e| e.to_string())
                    .and_then(|t| match t.version {
                        JSON_TABLE_VERSION => Ok(ChunkTable {
                            version: TABLE_VERSION,
                            ..t
                        }),
                        v => Err(format!("version {v} (expected {JSON_TABLE_VERSION})")),
                    });
                (path, decoded)
            }
            Err(e) => return Err(Error::io("read", &binary, e)),
        };
        let corrupt = |reason: String| Error::Corrupt {
            what: "chunk table",
            path: path.clone(),
            reason,
        };
        let table = decoded.map_err(corrupt)?;
        table.check(&path)?;
        Ok(table)
    }

    /// Checks what every reader relies on: file ids in range, keys ascending below the next.
    fn check(&self, path: &Path) -> Result<()> {
        let corrupt = |reason: String| Error::Corrupt {
            what: "chunk table",
            path: path.to_path_buf(),
            reason,
        };
        let files = self.files.len();
        if let Some(bad) = self.chunks.files.iter().position(|&f| f as usize >= files) {
            return Err(corrupt(format!("chunk {bad} points to a missing file")));
        }
        let keys = &self.chunks.keys;
        let ascending = keys.windows(2).all(|w| w[0] < w[1]);
        if !ascending || keys.last().is_some_and(|&k| k >= self.next_key) {
            return Err(corrupt(
                "chunk keys are not ascending below the next key".into(),
            ));
        }
        Ok(())
    }
}

/// The table readers see of a base and the chunks added over it: the base's live files and
/// chunks in base order, then the added ones (file ids renumbered to match).
fn compose(
    base: ChunkTable,
    added: ChunkTable,
    overlay: &Overlay,
) -> std::result::Result<ChunkTable, String> {
    if base.files.len() != overlay.base_files as usize
        || base.chunks.len() != overlay.base_chunks as usize
    {
        return Err(format!(
            "the overlay is over {} files and {} chunks, the base has {} and {}",
            overlay.base_files,
            overlay.base_chunks,
            base.files.len(),
            base.chunks.len()
        ));
    }
    let mut file_id = vec![u32::MAX; base.files.len()];
    let mut files = Vec::with_capacity(overlay.live_files() + added.files.len());
    for id in Overlay::live(overlay.base_files, &overlay.dropped_files) {
        file_id[id as usize] = files.len() as u32;
        files.push(base.files[id as usize].clone());
    }
    let live_files = files.len() as u32;
    files.extend(added.files);
    let n = overlay.live_chunks() + added.chunks.len();
    let mut chunks = Chunks {
        keys: Vec::with_capacity(n),
        files: Vec::with_capacity(n),
        base_pos: Vec::with_capacity(overlay.live_chunks()),
        ..Chunks::default()
    };
    let mut dropped = overlay.dropped_chunks.iter().peekable();
    for pos in 0..base.chunks.len() {
        let file = file_id[base.chunks.files[pos] as usize];
        let is_dropped = dropped.peek().is_some_and(|&&d| d as usize == pos);
        // A chunk leaves with its file, never alone.
        if is_dropped != (file == u32::MAX) {
            return Err(format!(
                "base chunk {pos} and its file disagree on being dropped"
            ));
        }
        if is_dropped {
            dropped.next();
            continue;
        }
        chunks.keys.push(base.chunks.keys[pos]);
        chunks.files.push(file);
        chunks.base_pos.push(pos as u32);
    }
    for pos in 0..added.chunks.len() {
        chunks.keys.push(added.chunks.keys[pos]);
        chunks.files.push(live_files + added.chunks.files[pos]);
    }
    chunks.cells = (0..n).map(|_| OnceLock::new()).collect();
    chunks.source = Some(
        base.chunks
            .source
            .ok_or("the base chunks are not a stored table")?,
    );
    chunks.added = Some(
        added
            .chunks
            .source
            .ok_or("the added chunks are not a stored table")?,
    );
    Ok(ChunkTable {
        version: TABLE_VERSION,
        next_key: added.next_key,
        files,
        chunks,
    })
}

/// The crc32 of the first `len` bytes of `file`, read through a small buffer. Hashing the
/// mapping instead would fault every page of it into the process, and a serving process
/// would then hold the whole table resident although a search decodes a few thousand chunks.
fn crc_of_file(file: &std::fs::File, len: usize) -> std::result::Result<u32, String> {
    use std::io::Read;
    let mut reader = std::io::BufReader::with_capacity(1 << 16, file).take(len as u64);
    let mut hasher = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("read for its checksum: {e}")),
        }
    }
    Ok(hasher.finalize())
}

/// The binary form of the table (`chunks.bin`): reading it is a walk over length-prefixed
/// fields instead of a JSON parse, and a reader decodes only the fixed-size records up front:
/// each record says where its chunk's variable part is, decoded when the chunk is first
/// asked for (see [`Chunks`]). Tables of the previous layout (`SATTBL04`) are decoded whole.
///
/// ```text
/// "SATTBL05" | next_key u64 | files u32 | chunks u32
/// | files × (path str | language str | size u64 | mtime_ms u64 | indexed_at_ms u64)
/// | chunks × (key u64 | file u32 | start_line u32 | end_line u32 | 0 u32 | at u64)
/// | chunks × (has_symbol u8
///             | [symbol: id str | name str | label str | kind str | start u32 | end u32
///                       | scope strs]
///             | defines strs | breadcrumbs strs | content_hash str)   (chunk i at its `at`)
/// | crc32 of everything before it, u32
/// ```
/// All integers little-endian; `str` is a u32 byte length and UTF-8 bytes, `strs` a u32
/// count and that many `str`.
mod codec {
    use std::sync::OnceLock;

    use super::{ChunkEntry, ChunkTable, Chunks, FileEntry, TABLE_VERSION};
    use crate::lang::Language;
    use crate::symbol::{Symbol, SymbolKind};

    pub(super) const MAGIC: &[u8; 8] = b"SATTBL05";
    /// The previous layout: chunks in blocks, every chunk written whole in turn.
    const MAGIC_V4: &[u8; 8] = b"SATTBL04";
    /// Bytes of one fixed-size chunk record.
    const RECORD: usize = 32;

    /// The bytes a table is read from: the mapped file.
    pub(super) type Bytes = memmap2::Mmap;

    /// Where the chunks of a table read from disk are decoded from.
    pub(in crate::store) struct Source {
        bytes: Bytes,
        /// Offset of the first fixed-size record.
        records: usize,
        /// Length of the checked bytes (everything before the checksum).
        body: usize,
    }

    impl Source {
        /// Decodes chunk `i` whole.
        pub(super) fn chunk(&self, i: usize) -> Result<ChunkEntry, String> {
            self.read(i).map(|(c, _)| c)
        }

        /// Where chunk `i`'s bytes end.
        fn chunk_end(&self, i: usize) -> Result<usize, String> {
            self.read(i).map(|(_, end)| end)
        }

        fn read(&self, i: usize) -> Result<(ChunkEntry, usize), String> {
            let body = &self.bytes[..self.body];
            let mut r = Reader {
                buf: body,
                at: self.records + i * RECORD,
            };
            let (key, file, start_line, end_line) = (r.u64()?, r.u32()?, r.u32()?, r.u32()?);
            r.u32()?;
            r.at = r.u64()? as usize;
            let chunk = variable(&mut r, key, file, start_line, end_line)?;
            Ok((chunk, r.at))
        }
    }

    pub(super) fn encode(t: &ChunkTable) -> Vec<u8> {
        let mut w = Writer(Vec::with_capacity(64 + t.chunks.len() * 160));
        w.0.extend_from_slice(MAGIC);
        w.u64(t.next_key);
        w.u32(t.files.len() as u32);
        w.u32(t.chunks.len() as u32);
        write_files(&mut w, &t.files);
        let records = w.0.len();
        w.0.resize(records + t.chunks.len() * RECORD, 0);
        for (i, c) in t.chunks.iter().enumerate() {
            let at = w.0.len() as u64;
            let mut rec = Writer(Vec::with_capacity(RECORD));
            rec.u64(c.key);
            rec.u32(c.file);
            rec.u32(c.start_line);
            rec.u32(c.end_line);
            rec.u32(0);
            rec.u64(at);
            w.0[records + i * RECORD..records + (i + 1) * RECORD].copy_from_slice(&rec.0);
            variable_part(&mut w, c);
        }
        let crc = crc32fast::hash(&w.0);
        w.u32(crc);
        w.0
    }

    /// The previous layout, for the test that it is still read.
    #[cfg(test)]
    pub(super) fn encode_v4(t: &ChunkTable) -> Vec<u8> {
        let mut w = Writer(MAGIC_V4.to_vec());
        w.u64(t.next_key);
        w.u32(t.files.len() as u32);
        w.u32(t.chunks.len() as u32);
        w.u32(t.chunks.len().div_ceil(8192) as u32);
        write_files(&mut w, &t.files);
        let first = (w.0.len() + 8) as u64;
        w.u64(first);
        for c in t.chunks.iter() {
            w.u64(c.key);
            w.u32(c.file);
            w.u32(c.start_line);
            w.u32(c.end_line);
            variable_part(&mut w, c);
        }
        let crc = crc32fast::hash(&w.0);
        w.u32(crc);
        w.0
    }

    fn write_files(w: &mut Writer, files: &[FileEntry]) {
        for f in files {
            w.str(&f.path);
            w.str(f.language.id());
            w.u64(f.size);
            w.u64(f.mtime_ms);
            w.u64(f.indexed_at_ms);
        }
    }

    fn variable_part(w: &mut Writer, c: &ChunkEntry) {
        match &c.symbol {
            Some(s) => {
                w.0.push(1);
                w.str(&s.id);
                w.str(&s.name);
                w.str(&s.label);
                w.str(s.kind.id());
                w.u32(s.start_line);
                w.u32(s.end_line);
                w.strs(&s.scope);
            }
            None => w.0.push(0),
        }
        w.strs(&c.defines);
        w.strs(&c.breadcrumbs);
        w.str(&c.content_hash);
    }

    /// Checks and reads a table: the header, the files and every chunk's record now, the
    /// chunks' variable parts when they are asked for. `crc_of` gives the checksum of the first `n` bytes of the file without reading them
    /// through the mapping (see `crc_of_file`).
    pub(super) fn decode(
        bytes: Bytes,
        crc_of: impl FnOnce(usize) -> Result<u32, String>,
    ) -> Result<ChunkTable, String> {
        let body_len = bytes
            .len()
            .checked_sub(4)
            .filter(|&n| n >= MAGIC.len())
            .ok_or("too short")?;
        let (body, crc) = bytes.split_at(body_len);
        let magic = &body[..MAGIC.len()];
        if magic != MAGIC && magic != MAGIC_V4 {
            return Err("not a chunk table".into());
        }
        if crc_of(body_len)?.to_le_bytes() != crc {
            return Err("checksum mismatch".into());
        }
        if magic == MAGIC_V4 {
            return decode_v4(body);
        }
        let mut r = Reader {
            buf: body,
            at: MAGIC.len(),
        };
        let next_key = r.u64()?;
        let (n_files, n_chunks) = (r.u32()? as usize, r.u32()? as usize);
        let files = read_files(&mut r, n_files)?;
        let records = r.at;
        let variable = n_chunks
            .checked_mul(RECORD)
            .and_then(|n| n.checked_add(records))
            .filter(|&end| end <= body.len())
            .ok_or_else(|| format!("{n_chunks} chunk records do not fit"))?;
        let mut chunks = Chunks::default();
        chunks.keys.reserve(n_chunks);
        chunks.files.reserve(n_chunks);
        let mut last_at = variable;
        for i in 0..n_chunks {
            let key = r.u64()?;
            let file = r.u32()?;
            r.take(12)?;
            let at = r.u64()? as usize;
            // Variable parts follow each other in chunk order, after the records.
            if at < last_at || at >= body.len() {
                return Err(format!("chunk {i} points outside its table"));
            }
            last_at = at;
            chunks.keys.push(key);
            chunks.files.push(file);
        }
        chunks.cells = (0..n_chunks).map(|_| OnceLock::new()).collect();
        let source = Source {
            records,
            body: body_len,
            bytes,
        };
        // The last chunk must end where the checked bytes do: a table cut short is refused
        // now, not when its last chunk is first read.
        let end = match n_chunks.checked_sub(1) {
            Some(last) => source.chunk_end(last)?,
            None => variable,
        };
        if end != body_len {
            return Err(format!(
                "{} bytes after the last chunk",
                body_len.abs_diff(end)
            ));
        }
        chunks.source = Some(source);
        Ok(ChunkTable {
            version: TABLE_VERSION,
            next_key,
            files,
            chunks,
        })
    }

    fn read_files(r: &mut Reader, n_files: usize) -> Result<Vec<FileEntry>, String> {
        // Counts are checked against the bytes left before anything is reserved for them.
        let mut files = Vec::with_capacity(n_files.min(r.buf.len() / 32));
        for _ in 0..n_files {
            let path = r.str()?;
            let language = r.str()?;
            files.push(FileEntry {
                path,
                language: Language::from_id(&language)
                    .ok_or_else(|| format!("unknown language '{language}'"))?,
                size: r.u64()?,
                mtime_ms: r.u64()?,
                indexed_at_ms: r.u64()?,
            });
        }
        Ok(files)
    }

    /// The previous layout, decoded whole: files, block offsets, then every chunk in turn.
    fn decode_v4(body: &[u8]) -> Result<ChunkTable, String> {
        const BLOCK: usize = 8192;
        let mut r = Reader {
            buf: body,
            at: MAGIC_V4.len(),
        };
        let next_key = r.u64()?;
        let (n_files, n_chunks, n_blocks) =
            (r.u32()? as usize, r.u32()? as usize, r.u32()? as usize);
        if n_blocks != n_chunks.div_ceil(BLOCK) {
            return Err(format!("{n_blocks} blocks for {n_chunks} chunks"));
        }
        let files = read_files(&mut r, n_files)?;
        let first = r.at + n_blocks * 8;
        for i in 0..n_blocks {
            let at = r.u64()? as usize;
            if i == 0 && at != first {
                return Err("the first block is not where the offsets end".into());
            }
        }
        let mut chunks = Chunks::default();
        chunks.reserve(n_chunks.min(body.len() / 16));
        for _ in 0..n_chunks {
            let (key, file, start_line, end_line) = (r.u64()?, r.u32()?, r.u32()?, r.u32()?);
            chunks.push(variable(&mut r, key, file, start_line, end_line)?);
        }
        if r.at != body.len() {
            return Err(format!("{} bytes after the last chunk", body.len() - r.at));
        }
        Ok(ChunkTable {
            version: TABLE_VERSION,
            next_key,
            files,
            chunks,
        })
    }

    fn variable(
        r: &mut Reader,
        key: u64,
        file: u32,
        start_line: u32,
        end_line: u32,
    ) -> Result<ChunkEntry, String> {
        let symbol = match r.u8()? {
            0 => None,
            1 => {
                let (id, name, label, kind) = (r.str()?, r.str()?, r.str()?, r.str()?);
                Some(Symbol {
                    id,
                    name,
                    label,
                    kind: SymbolKind::from_id(&kind)
                        .ok_or_else(|| format!("unknown symbol kind '{kind}'"))?,
                    start_line: r.u32()?,
                    end_line: r.u32()?,
                    scope: r.strs()?,
                })
            }
            other => return Err(format!("bad symbol flag {other}")),
        };
        Ok(ChunkEntry {
            key,
            file,
            start_line,
            end_line,
            symbol,
            defines: r.strs()?,
            breadcrumbs: r.strs()?,
            content_hash: r.str()?,
        })
    }

    struct Writer(Vec<u8>);

    impl Writer {
        fn u32(&mut self, v: u32) {
            self.0.extend_from_slice(&v.to_le_bytes());
        }
        fn u64(&mut self, v: u64) {
            self.0.extend_from_slice(&v.to_le_bytes());
        }
        fn str(&mut self, s: &str) {
            self.u32(s.len() as u32);
            self.0.extend_from_slice(s.as_bytes());
        }
        fn strs(&mut self, v: &[String]) {
            self.u32(v.len() as u32);
            for s in v {
                self.str(s);
            }
        }
    }

    struct Reader<'a> {
        buf: &'a [u8],
        at: usize,
    }

    impl Reader<'_> {
        fn take(&mut self, n: usize) -> Result<&[u8], String> {
            let end = self
                .at
                .checked_add(n)
                .filter(|&e| e <= self.buf.len())
                .ok_or_else(|| format!("truncated at byte {}", self.at))?;
            let out = &self.buf[self.at..end];
            self.at = end;
            Ok(out)
        }
        fn u8(&mut self) -> Result<u8, String> {
            Ok(self.take(1)?[0])
        }
        fn u32(&mut self) -> Result<u32, String> {
            let b = self.take(4)?;
            Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        }
        fn u64(&mut self) -> Result<u64, String> {
            let mut a = [0u8; 8];
            a.copy_from_slice(self.take(8)?);
            Ok(u64::from_le_bytes(a))
        }
        fn str(&mut self) -> Result<String, String> {
            let n = self.u32()? as usize;
            let at = self.at;
            let b = self.take(n)?;
            String::from_utf8(b.to_vec()).map_err(|_| format!("invalid UTF-8 at byte {at}"))
        }
        fn strs(&mut self) -> Result<Vec<String>, String> {
            let n = self.u32()? as usize;
            // Each string takes at least its 4-byte length.
            if n > (self.buf.len() - self.at) / 4 {
                return Err(format!("{n} strings cannot fit at byte {}", self.at));
            }
            (0..n).map(|_| self.str()).collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbol::{Symbol, SymbolKind};

    fn table() -> ChunkTable {
        let symbol = Symbol {
            id: "sym_0123456789abcdef".into(),
            name: "parse_header".into(),
            label: "fn parse_header(line: &str) -> Option<(&str, &str)>".into(),
            kind: SymbolKind::Function,
            start_line: 3,
            end_line: 9,
            scope: vec!["Parser".into(), "héllo".into()],
        };
        ChunkTable {
            version: TABLE_VERSION,
            next_key: 42,
            files: vec![
                FileEntry {
                    path: "src/parse.rs".into(),
                    language: Language::Rust,
                    size: 120,
                    mtime_ms: 7,
                    indexed_at_ms: 8,
                },
                FileEntry {
                    path: "docs/ü.md".into(),
                    language: Language::Markdown,
                    size: 0,
                    mtime_ms: u64::MAX,
                    indexed_at_ms: 0,
                },
            ],
            chunks: Chunks::from(vec![
                ChunkEntry {
                    key: 3,
                    file: 0,
                    start_line: 1,
                    end_line: 9,
                    symbol: Some(symbol),
                    defines: vec!["parse_header".into()],
                    breadcrumbs: vec!["impl Parser".into()],
                    content_hash: "00ff".into(),
                },
                ChunkEntry {
                    key: 41,
                    file: 1,
                    start_line: 1,
                    end_line: 1,
                    symbol: None,
                    defines: vec![],
                    breadcrumbs: vec![],
                    content_hash: String::new(),
                },
            ]),
        }
    }

    #[test]
    fn the_binary_table_round_trips_and_rejects_every_damage() {
        let dir = tempfile::tempdir().unwrap();
        let t = table();
        t.save(dir.path()).unwrap();
        assert_eq!(ChunkTable::load(dir.path()).unwrap(), t);
        let bytes = std::fs::read(dir.path().join(TABLE_FILE)).unwrap();
        // Cut anywhere, or with any byte changed, it is refused as corrupt: never a panic,
        // never a different table.
        for cut in 0..bytes.len() {
            std::fs::write(dir.path().join(TABLE_FILE), &bytes[..cut]).unwrap();
            let e = ChunkTable::load(dir.path()).unwrap_err();
            assert!(matches!(e, Error::Corrupt { .. }), "cut at {cut}: {e}");
        }
        for at in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x20;
            std::fs::write(dir.path().join(TABLE_FILE), &damaged).unwrap();
            assert!(ChunkTable::load(dir.path()).is_err(), "byte {at} changed");
        }
    }

    /// Large tables come back whole and in order, each chunk decoded when asked for.
    #[test]
    fn a_large_table_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = table();
        let template = t.chunks[0].clone();
        t.chunks = (0..20_000u64)
            .map(|i| ChunkEntry {
                key: i,
                start_line: i as u32,
                content_hash: format!("{i:x}"),
                ..template.clone()
            })
            .collect();
        t.next_key = 20_000;
        t.save(dir.path()).unwrap();
        assert_eq!(ChunkTable::load(dir.path()).unwrap(), t);
        // A table cut inside its last chunk is refused even with a valid checksum.
        let bytes = codec::encode(&t);
        let cut = &bytes[..bytes.len() - 4 - 100];
        let mut refit = cut.to_vec();
        refit.extend_from_slice(&crc32fast::hash(cut).to_le_bytes());
        std::fs::write(dir.path().join(TABLE_FILE), refit).unwrap();
        assert!(ChunkTable::load(dir.path()).is_err());
    }

    /// A base and the chunks added over it read as the compact table of the same rows;
    /// an overlay that does not fit its base is damage.
    #[test]
    fn a_table_over_a_base_reads_as_the_compact_table() {
        let dir = tempfile::tempdir().unwrap();
        let t = table();
        let chunk = |key: u64, file: u32| ChunkEntry {
            key,
            file,
            ..t.chunks[0].clone()
        };
        let file = |path: &str| FileEntry {
            path: path.into(),
            ..t.files[0].clone()
        };
        let base = ChunkTable {
            version: TABLE_VERSION,
            next_key: 10,
            files: vec![file("a"), file("b"), file("c")],
            chunks: Chunks::from(vec![chunk(1, 0), chunk(2, 1), chunk(3, 1), chunk(4, 2)]),
        };
        let added = ChunkTable {
            version: TABLE_VERSION,
            next_key: 13,
            files: vec![file("b"), file("d")],
            chunks: Chunks::from(vec![chunk(10, 1), chunk(11, 0), chunk(12, 0)]),
        };
        base.save(dir.path()).unwrap();
        added.save_named(dir.path(), DELTA_TABLE_FILE).unwrap();
        let overlay = Overlay {
            base_files: 3,
            base_chunks: 4,
            dropped_files: vec![1],
            dropped_chunks: vec![1, 2],
        };
        overlay.save(dir.path()).unwrap();
        let compact = ChunkTable {
            version: TABLE_VERSION,
            next_key: 13,
            files: vec![file("a"), file("c"), file("b"), file("d")],
            chunks: Chunks::from(vec![
                chunk(1, 0),
                chunk(4, 1),
                chunk(10, 3),
                chunk(11, 2),
                chunk(12, 2),
            ]),
        };
        assert_eq!(ChunkTable::load(dir.path()).unwrap(), compact);
        for bad in [
            Overlay {
                dropped_chunks: vec![1],
                ..overlay.clone()
            },
            Overlay {
                dropped_files: vec![0, 1],
                ..overlay.clone()
            },
            Overlay {
                base_chunks: 5,
                ..overlay.clone()
            },
        ] {
            bad.save(dir.path()).unwrap();
            let e = ChunkTable::load(dir.path()).unwrap_err();
            assert!(matches!(e, Error::Corrupt { .. }), "{bad:?}: {e}");
        }
    }

    #[test]
    fn the_binary_table_of_an_older_generation_is_still_read() {
        let dir = tempfile::tempdir().unwrap();
        let t = table();
        std::fs::write(dir.path().join(TABLE_FILE), codec::encode_v4(&t)).unwrap();
        assert_eq!(ChunkTable::load(dir.path()).unwrap(), t);
    }

    #[test]
    fn the_json_table_of_an_older_generation_is_still_read() {
        let dir = tempfile::tempdir().unwrap();
        let t = table();
        let legacy = ChunkTable {
            version: JSON_TABLE_VERSION,
            ..t.clone()
        };
        let json = serde_json::to_vec(&legacy).unwrap();
        std::fs::write(dir.path().join(JSON_TABLE_FILE), json).unwrap();
        assert_eq!(ChunkTable::load(dir.path()).unwrap(), t);
        std::fs::write(dir.path().join(JSON_TABLE_FILE), "[1,2").unwrap();
        assert!(matches!(
            ChunkTable::load(dir.path()),
            Err(Error::Corrupt { .. })
        ));
    }
}
