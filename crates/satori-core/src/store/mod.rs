//! One index generation on disk: the tantivy index with the code-aware tokenizer, the
//! compact chunk table, and the vectors. Storage only: nothing here knows how results are
//! ranked.
//!
//! A generation directory is written once by [`GenerationWriter`] and then only read through
//! [`Generation`], whose read API is what search uses: BM25 candidates for a
//! [`LexicalQuery`], the chunks holding a term, the chunk and file tables, chunk contents,
//! and the vector index behind the [`VectorIndex`] trait. The engine owns everything around
//! a generation (manifest, completion marker, the `CURRENT` pointer); this module owns only
//! what is inside `<gen>/lexical/`, `<gen>/chunks*` and `<gen>/overlay.bin`. The vectors are
//! the vector backend's (`crate::dense`): the writer hands them to its sink by chunk key, and
//! opens them through it, addressed by ordinal. A generation held in memory (the changes
//! layered over a published one) keeps its vectors in the embedded matrix whatever the
//! backend: they live as long as the process.
//!
//! A generation is either written from scratch or *derived* from the previous one
//! ([`GenerationWriter::derive`]): the previous tantivy files are hard-linked (tantivy never
//! rewrites a file in place: new files are created exclusively, `meta.json` and
//! `.managed.json` are replaced by atomic rename, deletes go to new `.del` files), the
//! documents of dropped files are deleted by key, and new documents are added. The chunk
//! table, dense matrix and call graph are not rewritten either while the changes are small:
//! the derived generation links the *base* files it shares with its predecessor and stores
//! only the rows added since the base and the base rows gone (see `overlay`); once those
//! pass a share of the base ([`OVERLAY_MAX_SHARE`]), the derive writes them compact again
//! (kept rows copied as stored). Either way a reader sees one compact table: documents are
//! named by key in the index, by ordinal everywhere else (see `table`).

pub mod overlay;
pub mod table;
pub mod tokenizer;

use std::path::{Path, PathBuf};

use tantivy::collector::TopDocs;
use tantivy::query::{Bm25StatisticsProvider, BooleanQuery, BoostQuery, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions, Value,
};
use tantivy::{
    DocAddress, DocSet, Index, IndexWriter, ReloadPolicy, Searcher, TERMINATED, TantivyDocument,
    Term,
};

use crate::chunk::ChunkedFile;
use crate::dense::{
    ChunkKeys, DenseWriter, EmbeddedVectors, OpenSpec, SinkBase, VECTORS_DIR, VectorBackend,
    VectorIndex, VectorSink, VectorStore,
};
use crate::graph::{FileGraph, GRAPH_FILE, GraphDelta, GraphFile};
use crate::lang::Language;
use crate::{Error, Result};

use self::overlay::{DELTA_TABLE_FILE, Overlay};
use self::table::{ChunkEntry, ChunkTable, Chunks, FileEntry, TABLE_FILE, TABLE_VERSION};
use self::tokenizer::{CODE_TOKENIZER, CodeTokenizer};

/// Sub-directory of a generation holding the tantivy index.
pub const LEXICAL_DIR: &str = "lexical";

/// Indexing memory budget shared by tantivy's indexing threads: big enough that a typical
/// repository is indexed in one flush per thread, small enough for small machines.
const WRITER_MEMORY_BYTES: usize = 96 * 1024 * 1024;

/// Indexing memory of a generation held in memory: tantivy's minimum for one thread, since
/// it holds the few files a watcher saw change.
const IN_MEMORY_WRITER_BYTES: usize = 15 * 1024 * 1024;

/// What errors call a generation held in memory, in place of its directory.
const IN_MEMORY: &str = "<in-memory generation>";

/// Name of the indexed fast field carrying the chunk key (indexed so that a derived
/// generation can delete documents by key).
const KEY_FIELD: &str = "key";

/// Tantivy's lock files: they belong to the process holding them, never to a copy.
const TANTIVY_LOCKS: &[&str] = &[".tantivy-writer.lock", ".tantivy-meta.lock"];

/// The text fields of the lexical index, as readers name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextField {
    /// The chunk's text.
    Content,
    /// What the chunk defines and where it sits: symbol name and label, defined names,
    /// breadcrumbs.
    Symbols,
    /// The file's root-relative path.
    Path,
}

/// Whether a clause of a [`LexicalQuery::Bool`] must match or only adds to the score.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Occur {
    Should,
    Must,
}

/// A BM25 query over the text fields, in tantivy's boolean model: the caller decides the
/// terms and their boosts, the generation scores them.
#[derive(Debug, Clone)]
pub enum LexicalQuery {
    /// One (already analysed) term in one field, its BM25 score multiplied by `boost`.
    Term {
        field: TextField,
        text: String,
        boost: f32,
    },
    /// The sum of the matching clauses; a document must match every `Must` clause, and at
    /// least one `Should` clause when there is no `Must`.
    Bool(Vec<(Occur, LexicalQuery)>),
}

/// The fields of the lexical index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fields {
    pub key: Field,
    /// Chunk text; the only stored field (content is fetched for the final hits only).
    pub content: Field,
    /// Symbol name and label, defined names and breadcrumbs.
    pub symbols: Field,
    /// The root-relative path.
    pub path: Field,
}

impl Fields {
    fn schema() -> (Schema, Fields) {
        let mut b = Schema::builder();
        let indexing = TextFieldIndexing::default()
            .set_tokenizer(CODE_TOKENIZER)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions);
        let indexed = TextOptions::default().set_indexing_options(indexing);
        let key = b.add_u64_field(
            KEY_FIELD,
            NumericOptions::default().set_fast().set_indexed(),
        );
        let content = b.add_text_field("content", indexed.clone().set_stored());
        let symbols = b.add_text_field("symbols", indexed.clone());
        let path = b.add_text_field("path", indexed);
        (
            b.build(),
            Fields {
                key,
                content,
                symbols,
                path,
            },
        )
    }

    fn text(&self, field: TextField) -> Field {
        match field {
            TextField::Content => self.content,
            TextField::Symbols => self.symbols,
            TextField::Path => self.path,
        }
    }

    fn from_schema(schema: &Schema, dir: &Path) -> Result<Fields> {
        let get = |name: &str| {
            schema.get_field(name).map_err(|_| Error::Corrupt {
                what: "lexical index",
                path: dir.to_path_buf(),
                reason: format!("missing field '{name}'"),
            })
        };
        Ok(Fields {
            key: get(KEY_FIELD)?,
            content: get("content")?,
            symbols: get("symbols")?,
            path: get("path")?,
        })
    }
}

/// The ordinal recorded for a deleted document.
const DELETED: u32 = u32::MAX;

/// A derived generation keeps sharing its base while the base chunks gone and the chunks
/// added since are together at most 1/`OVERLAY_MAX_SHARE` of the base: a sync then writes
/// what changed since the base, and a search scans at most that share of dropped rows.
/// Past it, the derive writes the table, matrix and graph compact, as the new base.
pub const OVERLAY_MAX_SHARE: usize = 8;

/// Makes the files of the tantivy index in `from` appear in the empty directory `to`: hard
/// links (the files are immutable), copies where linking fails (another filesystem, no
/// link support). Lock files are left behind.
fn link_files(from: &Path, to: &Path) -> Result<()> {
    let entries = std::fs::read_dir(from).map_err(|e| Error::io("read directory", from, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io("read directory", from, e))?;
        let name = entry.file_name();
        if TANTIVY_LOCKS.iter().any(|l| name == *l) {
            continue;
        }
        let is_file = entry.file_type().map(|t| t.is_file()).unwrap_or(false);
        if !is_file {
            continue;
        }
        link_file(&entry.path(), &to.join(&name))?;
    }
    Ok(())
}

use crate::util::link_file;

fn register_tokenizer(index: &Index) {
    index
        .tokenizers()
        .register(CODE_TOKENIZER, CodeTokenizer::default());
}

/// What the engine knows of a file when it hands its chunks to the writer.
#[derive(Debug, Clone)]
pub struct FileRecord {
    /// Root-relative path with `/` separators.
    pub path: String,
    pub language: Language,
    pub size: u64,
    pub mtime_ms: u64,
    /// When this file's chunks were produced (ms since the Unix epoch).
    pub indexed_at_ms: u64,
}

/// Counts reported when a generation is finished.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GenerationStats {
    pub files: u64,
    pub chunks: u64,
}

/// What [`GenerationWriter::finish_all`] hands back.
pub struct Finished {
    pub stats: GenerationStats,
    /// The chunk table as written, for opening the generation without reading it again
    /// (see [`Generation::open_with`]).
    pub table: ChunkTable,
    /// Where the vectors went, for the manifest (`None` without vectors).
    pub vectors: Option<VectorStore>,
}

/// The vector of one chunk handed to [`GenerationWriter::add_file_rows`].
#[derive(Debug, Clone, Copy)]
pub enum Row<'a> {
    /// A freshly embedded vector.
    Embedded(&'a [f32]),
    /// The vector of the previous generation's chunk with this key, reused because the
    /// text it embeds is unchanged.
    Previous(u64),
}

/// Where a writer's vectors go.
enum VectorsOut<'a> {
    /// The backend's sink, for a generation on disk.
    Sink {
        sink: Box<dyn VectorSink + 'a>,
        dim: usize,
    },
    /// The embedded matrix, for a generation held in memory.
    Memory(DenseWriter),
}

impl VectorsOut<'_> {
    fn dim(&self) -> usize {
        match self {
            VectorsOut::Sink { dim, .. } => *dim,
            VectorsOut::Memory(w) => w.dim(),
        }
    }

    /// Stores the vector of the chunk `key` (see [`VectorSink`]).
    fn add(&mut self, key: u64, row: Row) -> Result<()> {
        match (self, row) {
            (VectorsOut::Sink { sink, .. }, Row::Embedded(v)) => sink.put(key, v),
            (VectorsOut::Sink { sink, .. }, Row::Previous(from)) => sink.carry(key, from),
            (VectorsOut::Memory(w), Row::Embedded(v)) => {
                w.push(v);
                Ok(())
            }
            (VectorsOut::Memory(_), Row::Previous(_)) => Err(Error::Vectors(
                "a generation held in memory has no earlier vectors".into(),
            )),
        }
    }
}

impl ChunkKeys for Chunks {
    fn len(&self) -> usize {
        Chunks::len(self)
    }

    fn key(&self, ordinal: usize) -> u64 {
        Chunks::key(self, ordinal)
    }

    fn ordinal(&self, key: u64) -> Option<usize> {
        self.position(key)
    }
}

/// What a derived generation shares with its predecessor instead of writing it: the base
/// files (linked from `from`) and the overlay over them. The writer's table, matrix and
/// graph then hold only the files added since the base.
struct Carry {
    from: PathBuf,
    /// The overlay of this generation.
    overlay: Overlay,
    /// The first file and the first ordinal of the predecessor that are not in the base.
    first_file: usize,
    first_chunk: usize,
    /// Paths of the base graph's files that are gone.
    removed: Vec<String>,
}

/// Writes a new generation into an empty directory.
pub struct GenerationWriter<'a> {
    dir: PathBuf,
    writer: IndexWriter<TantivyDocument>,
    fields: Fields,
    table: ChunkTable,
    vectors: Option<VectorsOut<'a>>,
    /// Every file's outline and references, saved beside the table (not for in-memory
    /// generations: the call graph reads published generations only).
    graph: Option<GraphFile>,
    /// Set when the generation shares its predecessor's base.
    carry: Option<Carry>,
}

impl<'a> GenerationWriter<'a> {
    /// Creates the writer; `dir` must exist and be empty. With `dim`, every chunk comes with
    /// a vector of that length, kept in the embedded matrix.
    pub fn create(dir: &Path, dim: Option<usize>) -> Result<Self> {
        GenerationWriter::create_in(dir, dim, &EmbeddedVectors)
    }

    /// [`GenerationWriter::create`] keeping the vectors in `backend`.
    pub fn create_in(dir: &Path, dim: Option<usize>, backend: &dyn VectorBackend) -> Result<Self> {
        let lexical = dir.join(LEXICAL_DIR);
        std::fs::create_dir(&lexical).map_err(|e| Error::io("create directory", &lexical, e))?;
        let (schema, fields) = Fields::schema();
        let index = Index::create_in_dir(&lexical, schema)?;
        register_tokenizer(&index);
        let writer = index.writer(WRITER_MEMORY_BYTES)?;
        let vectors = match dim {
            Some(dim) => Some(VectorsOut::Sink {
                sink: backend.sink(dir, dim, None)?,
                dim,
            }),
            None => None,
        };
        Ok(GenerationWriter {
            dir: dir.to_path_buf(),
            writer,
            fields,
            vectors,
            table: ChunkTable {
                version: TABLE_VERSION,
                ..ChunkTable::default()
            },
            graph: Some(GraphFile::new()),
            carry: None,
        })
    }

    /// A writer of a generation held in memory only, never on disk (see
    /// [`GenerationWriter::finish_in_memory`]). With `dim`, every chunk comes with a vector.
    pub fn in_memory(dim: Option<usize>) -> Result<Self> {
        let (schema, fields) = Fields::schema();
        let index = Index::create_in_ram(schema);
        register_tokenizer(&index);
        // One thread: one segment, documents in the order they were added.
        let writer = index.writer_with_num_threads(1, IN_MEMORY_WRITER_BYTES)?;
        Ok(GenerationWriter {
            dir: PathBuf::from(IN_MEMORY),
            writer,
            fields,
            vectors: dim
                .map(|d| VectorsOut::Memory(DenseWriter::in_memory(Path::new(IN_MEMORY), d))),
            table: ChunkTable {
                version: TABLE_VERSION,
                ..ChunkTable::default()
            },
            graph: None,
            carry: None,
        })
    }

    /// Starts a generation in the empty directory `dir` from `prev`: every file of `prev` for
    /// which `keep` holds is carried over (its documents by linking the tantivy files; its
    /// table entries, vector rows and graph by linking the base files they are stored in, or
    /// by copying them compact when the changes since the base grew too large); the
    /// documents of the others are deleted. Files added next get keys above every key
    /// `prev` used. `dim` must be `prev`'s, and `backend` the one `prev` was opened with.
    pub fn derive(
        prev: &'a Generation,
        dir: &Path,
        dim: Option<usize>,
        keep: &dyn Fn(&FileEntry) -> bool,
        backend: &dyn VectorBackend,
    ) -> Result<Self> {
        if dim != prev.dense_dim() {
            return Err(Error::Lexical(format!(
                "cannot derive a generation of dimension {dim:?} from one of {:?}",
                prev.dense_dim()
            )));
        }
        let lexical = dir.join(LEXICAL_DIR);
        std::fs::create_dir(&lexical).map_err(|e| Error::io("create directory", &lexical, e))?;
        link_files(&prev.dir.join(LEXICAL_DIR), &lexical)?;
        let index = Index::open_in_dir(&lexical)?;
        register_tokenizer(&index);
        let fields = Fields::from_schema(&index.schema(), &lexical)?;
        // One indexing thread: a derive adds few documents, and one thread writes them into
        // one segment instead of one small segment per thread.
        let writer: IndexWriter<TantivyDocument> =
            index.writer_with_num_threads(1, WRITER_MEMORY_BYTES / 4)?;
        // Each derive adds a small segment. The default policy puts every segment under 10k
        // documents in one layer, so the eighth sync of a small codebase would rewrite it
        // whole, and one of a large codebase every segment the syncs made so far: layers
        // start at 1/64 of the index instead, and syncs' segments merge among themselves.
        let mut policy = tantivy::merge_policy::LogMergePolicy::default();
        policy.set_min_layer_size((prev.table.chunks.len() / 64).max(1) as u32);
        writer.set_merge_policy(Box::new(policy));
        let kept: Vec<bool> = prev.table.files.iter().map(keep).collect();
        let carry = Carry::plan(prev, &kept)?;
        let mut vectors = match (dim, &prev.dense) {
            (Some(dim), Some(prev_vectors)) => {
                let base = SinkBase {
                    gen_dir: &prev.dir,
                    vectors: prev_vectors.as_ref(),
                    keys: &prev.table.chunks,
                    shared: carry.as_ref().map(|c| c.first_chunk),
                };
                Some(VectorsOut::Sink {
                    sink: backend.sink(dir, dim, Some(base))?,
                    dim,
                })
            }
            _ => None,
        };
        let mut table = ChunkTable {
            version: TABLE_VERSION,
            next_key: prev.table.next_key,
            ..ChunkTable::default()
        };
        // With a carry, the files and chunks of the base stay where they are stored: only
        // those after it (added since the base) are copied into this generation's own rows.
        let (first_file, first_chunk) = match &carry {
            Some(c) => (c.first_file, c.first_chunk),
            None => (0, 0),
        };
        let mut new_id: Vec<Option<u32>> = vec![None; prev.table.files.len()];
        for (id, f) in prev.table.files.iter().enumerate().skip(first_file) {
            if kept[id] {
                new_id[id] = Some(table.files.len() as u32);
                table.files.push(f.clone());
            }
        }
        let chunks = &prev.table.chunks;
        for ordinal in 0..chunks.len() {
            let file = chunks.file(ordinal) as usize;
            if !kept[file] {
                writer.delete_term(Term::from_field_u64(fields.key, chunks.key(ordinal)));
                continue;
            }
            // Every kept chunk's vector carries over; the sink knows which rows the shared
            // base already holds.
            let key = chunks.key(ordinal);
            if let Some(vectors) = &mut vectors {
                vectors.add(key, Row::Previous(key))?;
            }
            if ordinal < first_chunk {
                continue;
            }
            let file = new_id[file]
                .ok_or_else(|| Error::Lexical(format!("chunk {ordinal} is before its file")))?;
            table.chunks.push(ChunkEntry {
                file,
                ..chunks.get(ordinal).clone()
            });
        }
        let added: std::collections::HashSet<&str> =
            table.files.iter().map(|f| f.path.as_str()).collect();
        let graph = match &carry {
            // The graph of the files added since the base, as the predecessor stored it.
            Some(_) => {
                let mut g = GraphFile::new();
                if let Ok(Some(delta)) = GraphDelta::load(&prev.dir) {
                    g.files = delta.files;
                    g.files.retain(|f| added.contains(f.path.as_str()));
                }
                g
            }
            // The kept files' outlines and references carry over; a previous generation
            // without a graph (older than the call graph) gives a graph of the new and
            // changed files only, which the engine reports as partial until the next full
            // index. A damaged graph file is not worth failing a sync for: it is dropped the
            // same way.
            None => {
                let mut g = match GraphFile::load(&prev.dir) {
                    Ok(Some(g)) => g,
                    _ => GraphFile {
                        complete: false,
                        ..GraphFile::new()
                    },
                };
                g.files.retain(|f| added.contains(f.path.as_str()));
                g
            }
        };
        Ok(GenerationWriter {
            dir: dir.to_path_buf(),
            writer,
            fields,
            table,
            vectors,
            graph: Some(graph),
            carry,
        })
    }

    /// Adds one file's chunks, with their vectors (concatenated, in chunk order) when the
    /// generation has a dense matrix. Called from one thread, in any file order.
    pub fn add_file(
        &mut self,
        file: &FileRecord,
        chunked: &ChunkedFile,
        vectors: &[f32],
    ) -> Result<()> {
        match &self.vectors {
            Some(out) => {
                let dim = out.dim();
                if vectors.len() != chunked.chunks.len() * dim {
                    return Err(Error::Lexical(format!(
                        "{} vectors values for {} chunks of dimension {dim}",
                        vectors.len(),
                        chunked.chunks.len()
                    )));
                }
                let rows: Vec<Row> = vectors.chunks_exact(dim).map(Row::Embedded).collect();
                self.add_file_rows(file, chunked, &rows)
            }
            None => self.add_file_rows(file, chunked, &[]),
        }
    }

    /// Adds one file's chunks with one [`Row`] per chunk when the generation has a dense
    /// matrix (`rows` is ignored otherwise). [`Row::Previous`] needs a derived writer.
    pub fn add_file_rows(
        &mut self,
        file: &FileRecord,
        chunked: &ChunkedFile,
        rows: &[Row],
    ) -> Result<()> {
        if let Some(out) = &self.vectors {
            let dim = out.dim();
            if rows.len() != chunked.chunks.len() {
                return Err(Error::Lexical(format!(
                    "{} vectors for {} chunks",
                    rows.len(),
                    chunked.chunks.len()
                )));
            }
            if let Some(Row::Embedded(v)) = rows
                .iter()
                .find(|r| matches!(r, Row::Embedded(v) if v.len() != dim))
            {
                return Err(Error::Lexical(format!(
                    "a vector of {} values in a matrix of dimension {dim}",
                    v.len()
                )));
            }
        }
        if let Some(graph) = &mut self.graph
            && crate::graph::supports(file.language)
            && (!chunked.symbols.is_empty() || !chunked.refs.calls.is_empty())
        {
            graph.files.push(FileGraph {
                path: file.path.clone(),
                language: file.language,
                symbols: chunked.symbols.clone(),
                refs: chunked.refs.clone(),
            });
        }
        let file_id = u32::try_from(self.table.files.len())
            .map_err(|_| Error::Lexical("too many files in one generation".into()))?;
        self.table.files.push(FileEntry {
            path: file.path.clone(),
            language: file.language,
            size: file.size,
            mtime_ms: file.mtime_ms,
            indexed_at_ms: file.indexed_at_ms,
        });
        for (i, chunk) in chunked.chunks.iter().enumerate() {
            let key = self.table.next_key;
            self.table.next_key += 1;
            if let Some(out) = &mut self.vectors {
                out.add(key, rows[i])?;
            }
            let mut doc = TantivyDocument::new();
            doc.add_u64(self.fields.key, key);
            doc.add_text(self.fields.content, &chunk.content);
            doc.add_text(self.fields.symbols, symbol_text(chunk));
            doc.add_text(self.fields.path, &file.path);
            self.writer.add_document(doc)?;
            self.table.chunks.push(ChunkEntry {
                key,
                file: file_id,
                start_line: chunk.start_line,
                end_line: chunk.end_line,
                symbol: chunk.symbol.clone(),
                defines: chunk.defines.clone(),
                breadcrumbs: chunk.breadcrumbs.clone(),
                content_hash: chunk.content_hash.clone(),
            });
        }
        Ok(())
    }

    /// Commits and fsyncs everything; the directory is complete when this returns.
    pub fn finish(self) -> Result<GenerationStats> {
        self.finish_all().map(|f| f.stats)
    }

    /// [`GenerationWriter::finish`], handing back the chunk table as written, so that the
    /// writer's process can open the generation without reading the table again (see
    /// [`Generation::open_with`]), and where the vectors went.
    pub fn finish_all(mut self) -> Result<Finished> {
        self.writer.commit()?;
        // Merges run in the background after a commit; the generation must be final (and its
        // files no longer touched) before the engine publishes it.
        self.writer.wait_merging_threads()?;
        if let Some(graph) = &mut self.graph {
            // File order is the order files finished chunking, which varies between runs.
            graph.files.sort_by(|a, b| a.path.cmp(&b.path));
        }
        match &self.carry {
            Some(carry) => {
                link_file(&carry.from.join(TABLE_FILE), &self.dir.join(TABLE_FILE))?;
                link_file(&carry.from.join(GRAPH_FILE), &self.dir.join(GRAPH_FILE))?;
                self.table.save_named(&self.dir, DELTA_TABLE_FILE)?;
                if let Some(graph) = self.graph.take() {
                    GraphDelta {
                        removed: carry.removed.clone(),
                        files: graph.files,
                        ..GraphDelta::new()
                    }
                    .save(&self.dir)?;
                }
                carry.overlay.save(&self.dir)?;
            }
            None => {
                self.table.save(&self.dir)?;
                if let Some(graph) = &self.graph {
                    graph.save(&self.dir)?;
                }
            }
        }
        let vectors = match self.vectors {
            Some(VectorsOut::Sink { sink, .. }) => Some(sink.finish()?),
            Some(VectorsOut::Memory(_)) => {
                return Err(Error::Vectors(
                    "a generation held in memory is finished in memory".into(),
                ));
            }
            None => None,
        };
        crate::util::sync_dir(&self.dir.join(LEXICAL_DIR));
        crate::util::sync_dir(&self.dir);
        // Readers see the base and the rows added over it as one table.
        let table = match self.carry {
            Some(_) => ChunkTable::load(&self.dir)?,
            None => self.table,
        };
        let stats = GenerationStats {
            files: table.files.len() as u64,
            chunks: table.chunks.len() as u64,
        };
        Ok(Finished {
            stats,
            table,
            vectors,
        })
    }
}

impl Carry {
    /// What a generation derived from `prev`, keeping the files for which `kept` holds,
    /// shares of `prev`'s base; `None` when it must be written compact: `prev` has no
    /// stored base to share (a graph or table of an older layout), or the changes since the
    /// base would pass [`OVERLAY_MAX_SHARE`].
    fn plan(prev: &Generation, kept: &[bool]) -> Result<Option<Carry>> {
        let from = prev.dir.clone();
        if !from.join(TABLE_FILE).is_file() || !from.join(GRAPH_FILE).is_file() {
            return Ok(None);
        }
        let chunks = &prev.table.chunks;
        let old = match &prev.overlay {
            Some(o) => o.clone(),
            None => Overlay {
                base_files: prev.table.files.len() as u32,
                base_chunks: chunks.len() as u32,
                ..Overlay::default()
            },
        };
        let mut removed = match GraphDelta::load(&from) {
            Ok(Some(d)) => d.removed,
            Ok(None) => Vec::new(),
            Err(_) => return Ok(None),
        };
        let mut overlay = old.clone();
        // The live base files and chunks are the first of `prev`'s table, in base order.
        let live_files = Overlay::live(old.base_files, &old.dropped_files);
        for (id, base_id) in live_files.enumerate() {
            if !kept[id] {
                overlay.dropped_files.push(base_id);
                removed.push(prev.table.files[id].path.clone());
            }
        }
        let live_chunks = Overlay::live(old.base_chunks, &old.dropped_chunks);
        for (ordinal, base_pos) in live_chunks.enumerate() {
            if !kept[chunks.file(ordinal) as usize] {
                overlay.dropped_chunks.push(base_pos);
            }
        }
        overlay.dropped_files.sort_unstable();
        overlay.dropped_chunks.sort_unstable();
        let carried = (old.live_chunks()..chunks.len())
            .filter(|&o| kept[chunks.file(o) as usize])
            .count();
        let changed = overlay.dropped_chunks.len() + carried;
        if changed * OVERLAY_MAX_SHARE > old.base_chunks as usize {
            return Ok(None);
        }
        removed.sort();
        removed.dedup();
        Ok(Some(Carry {
            from,
            overlay,
            first_file: old.live_files(),
            first_chunk: old.live_chunks(),
            removed,
        }))
    }
}

impl GenerationWriter<'_> {
    /// Commits a writer made by [`GenerationWriter::in_memory`] and opens what it wrote.
    pub fn finish_in_memory(mut self) -> Result<Generation> {
        self.writer.commit()?;
        let index = self.writer.index().clone();
        self.writer.wait_merging_threads()?;
        let dense: Option<Box<dyn VectorIndex>> = match self.vectors {
            Some(VectorsOut::Memory(d)) => Some(Box::new(d.finish_in_memory()?)),
            Some(VectorsOut::Sink { .. }) => {
                return Err(Error::Vectors(
                    "a generation on disk is finished with finish".into(),
                ));
            }
            None => None,
        };
        Generation::assemble(&self.dir, &index, self.table, dense)
    }
}

/// The text indexed in the `symbols` field: what a chunk defines and where it sits.
fn symbol_text(chunk: &crate::chunk::Chunk) -> String {
    let mut parts: Vec<&str> = Vec::new();
    if let Some(sym) = &chunk.symbol {
        parts.push(&sym.name);
        parts.push(&sym.label);
    }
    parts.extend(chunk.defines.iter().map(String::as_str));
    parts.extend(chunk.breadcrumbs.iter().map(String::as_str));
    parts.join("\n")
}

/// A finished generation opened for reading. Cheap to share between threads.
///
/// Chunks are named by their ordinal everywhere: index into [`Generation::chunks`], row of
/// the vector index. The lexical index names them by key; `open` maps the two.
pub struct Generation {
    dir: PathBuf,
    table: ChunkTable,
    searcher: Searcher,
    fields: Fields,
    /// Segment ordinal → doc id → chunk ordinal; [`DELETED`] for deleted documents (postings
    /// still list them until their segment is merged).
    ord_of: Vec<Vec<u32>>,
    /// Documents deleted but still present in segments.
    deleted_docs: u64,
    /// Chunk ordinal → where its document lives in the index.
    addr_of: Vec<DocAddress>,
    /// The vectors, when the generation was built with an embedding model.
    dense: Option<Box<dyn VectorIndex>>,
    /// Which rows of the shared base are gone, when the generation shares one.
    overlay: Option<Overlay>,
}

impl Generation {
    /// Opens a finished generation directory whose vectors are in the embedded matrix.
    pub fn open(dir: &Path) -> Result<Self> {
        Generation::open_in(dir, &EmbeddedVectors)
    }

    /// Opens a finished generation directory, its vectors through `backend`.
    pub fn open_in(dir: &Path, backend: &dyn VectorBackend) -> Result<Self> {
        Generation::open_with(dir, ChunkTable::load(dir)?, backend)
    }

    /// Opens a finished generation directory whose chunk table is `table` (the one
    /// [`GenerationWriter::finish_all`] wrote there), its vectors through `backend`.
    pub fn open_with(dir: &Path, table: ChunkTable, backend: &dyn VectorBackend) -> Result<Self> {
        let lexical = dir.join(LEXICAL_DIR);
        let index = Index::open_in_dir(&lexical)?;
        register_tokenizer(&index);
        let overlay = Overlay::load(dir)?;
        let dense = backend.open(OpenSpec {
            gen_dir: dir,
            keys: &table.chunks,
            dropped: overlay.as_ref().map(|o| o.dropped_chunks.as_slice()),
        })?;
        let mut generation = Generation::assemble(dir, &index, table, dense)?;
        generation.overlay = overlay;
        Ok(generation)
    }

    /// A generation from its parts, checked against each other: every live document of
    /// `index` has a key of `table`, every chunk a document, and `dense` one row per chunk.
    fn assemble(
        dir: &Path,
        index: &Index,
        table: ChunkTable,
        dense: Option<Box<dyn VectorIndex>>,
    ) -> Result<Self> {
        let lexical = dir.join(LEXICAL_DIR);
        let fields = Fields::from_schema(&index.schema(), &lexical)?;
        // The generation never changes once written: no reload thread is needed.
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        let searcher = reader.searcher();
        let corrupt = |reason: String| Error::Corrupt {
            what: "lexical index",
            path: lexical.clone(),
            reason,
        };
        let n = table.chunks.len();
        // Small tables are common and a hash map costs more than it saves there; the table
        // is sorted by key, so a binary search finds any key.
        let position = |key: u64| table.chunks.position(key);
        let mut addr_of = vec![DocAddress::new(u32::MAX, 0); n];
        let mut ord_of = Vec::with_capacity(searcher.segment_readers().len());
        let mut deleted_docs = 0u64;
        for (seg, reader) in searcher.segment_readers().iter().enumerate() {
            let column = reader.fast_fields().u64(KEY_FIELD)?;
            let alive = reader.alive_bitset();
            let mut ords = Vec::with_capacity(reader.max_doc() as usize);
            for doc in 0..reader.max_doc() {
                if alive.is_some_and(|a| a.is_deleted(doc)) {
                    deleted_docs += 1;
                    ords.push(DELETED);
                    continue;
                }
                let key = column
                    .first(doc)
                    .ok_or_else(|| corrupt(format!("document {seg}/{doc} has no key")))?;
                let ord = position(key).ok_or_else(|| {
                    corrupt(format!(
                        "document {seg}/{doc} has key {key}, not in the table"
                    ))
                })?;
                if addr_of[ord].segment_ord != u32::MAX {
                    return Err(corrupt(format!("key {key} is indexed twice")));
                }
                addr_of[ord] = DocAddress::new(seg as u32, doc);
                ords.push(ord as u32);
            }
            ord_of.push(ords);
        }
        if let Some(missing) = addr_of.iter().position(|a| a.segment_ord == u32::MAX) {
            return Err(corrupt(format!(
                "chunk {missing} is missing from the index"
            )));
        }
        if let Some(d) = &dense
            && d.len() != n
        {
            return Err(Error::Corrupt {
                what: "dense index",
                path: dir.join(VECTORS_DIR),
                reason: format!("{} rows for {n} chunks", d.len()),
            });
        }
        Ok(Generation {
            dir: dir.to_path_buf(),
            table,
            searcher,
            fields,
            ord_of,
            deleted_docs,
            addr_of,
            dense,
            overlay: None,
        })
    }

    /// Dimension of the dense matrix, when there is one.
    pub fn dense_dim(&self) -> Option<usize> {
        self.dense.as_ref().map(|d| d.dim())
    }

    /// The vector index (rows = chunk ordinals), when the generation has vectors.
    pub fn vectors(&self) -> Option<&dyn VectorIndex> {
        self.dense.as_deref()
    }

    /// Counts of the generation.
    pub fn stats(&self) -> GenerationStats {
        GenerationStats {
            files: self.table.files.len() as u64,
            chunks: self.table.chunks.len() as u64,
        }
    }

    /// Documents of the lexical index that are deleted but still stored (a derived
    /// generation's leftovers, until tantivy merges their segments away).
    pub fn deleted_docs(&self) -> u64 {
        self.deleted_docs
    }

    /// The generation's directory (a placeholder that names no directory for a generation
    /// held in memory).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The files of the generation, in file-id order.
    pub fn files(&self) -> &[FileEntry] {
        &self.table.files
    }

    /// The chunk metadata, in ordinal order (ordinal = index = row of the dense matrix).
    pub fn chunks(&self) -> &Chunks {
        &self.table.chunks
    }

    /// The content of one chunk, read from the document store.
    pub fn chunk_content(&self, ordinal: usize) -> Result<String> {
        let addr = *self
            .addr_of
            .get(ordinal)
            .ok_or_else(|| Error::Lexical(format!("no chunk with ordinal {ordinal}")))?;
        let doc: TantivyDocument = self.searcher.doc(addr)?;
        Ok(doc
            .get_first(self.fields.content)
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string())
    }

    /// The `limit` best chunks for a BM25 query, as (score, ordinal), best first; equal
    /// scores in file-path, then line order.
    ///
    /// tantivy breaks ties by document address, which depends on how its indexing threads
    /// split the documents into segments (and, once a generation is updated in place, on
    /// which segment a chunk landed in). Two indexes of the same tree would then cut a run of
    /// equal scores at different chunks and answer differently, so the cut is made here:
    /// the run of scores equal to the last one kept is fetched whole, ordered by where the
    /// chunk is, and only then truncated.
    pub fn bm25_top(&self, query: &LexicalQuery, limit: usize) -> Result<Vec<(f32, u32)>> {
        self.bm25_top_scored_by(query, limit, self)
    }

    /// [`Generation::bm25_top`] scored with the term statistics of `stats` (document
    /// frequencies, document count, average length) instead of this generation's own: a
    /// small generation layered over a large one then scores on the same scale as it.
    pub fn bm25_top_scored_by(
        &self,
        query: &LexicalQuery,
        limit: usize,
        stats: &Generation,
    ) -> Result<Vec<(f32, u32)>> {
        // The statistics are looked up by field number: only the same schema can lend them.
        let stats: &dyn Bm25StatisticsProvider = if stats.fields == self.fields {
            &stats.searcher
        } else {
            &self.searcher
        };
        let query = self.tantivy_query(query);
        let limit = limit.max(1);
        let mut fetch = limit + 1;
        let top = loop {
            let top = self.searcher.search_with_statistics_provider(
                &query,
                &TopDocs::with_limit(fetch).order_by_score(),
                stats,
            )?;
            // Done when everything matching is here, or the scores drop after the last one
            // kept.
            let exhausted = top.len() < fetch;
            if exhausted || top[fetch - 1].0 < top[limit - 1].0 {
                break top;
            }
            fetch *= 2;
        };
        let mut top: Vec<(f32, u32)> = top
            .into_iter()
            .map(|(score, addr)| (score, self.ordinal(addr)))
            .collect();
        let place = |ord: u32| {
            let c = &self.table.chunks[ord as usize];
            (
                self.table.files[c.file as usize].path.as_str(),
                c.start_line,
                ord,
            )
        };
        top.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then_with(|| place(a.1).cmp(&place(b.1)))
        });
        top.truncate(limit);
        Ok(top)
    }

    /// Calls `each` with the ordinal of every chunk that has `term` (an analysed token) in
    /// `field`, in no particular order.
    pub fn for_each_chunk_with(
        &self,
        field: TextField,
        term: &str,
        each: &mut dyn FnMut(u32),
    ) -> Result<()> {
        let field = self.fields.text(field);
        let term = Term::from_field_text(field, term);
        for (seg, reader) in self.searcher.segment_readers().iter().enumerate() {
            let inverted = reader.inverted_index(field)?;
            let postings = inverted
                .read_postings(&term, IndexRecordOption::Basic)
                .map_err(|e| Error::Lexical(e.to_string()))?;
            if let Some(mut postings) = postings {
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    let ord = self.ord_of[seg][doc as usize];
                    if ord != DELETED {
                        each(ord);
                    }
                    doc = postings.advance();
                }
            }
        }
        Ok(())
    }

    fn tantivy_query(&self, query: &LexicalQuery) -> Box<dyn Query> {
        match query {
            LexicalQuery::Term { field, text, boost } => {
                let q = TermQuery::new(
                    Term::from_field_text(self.fields.text(*field), text),
                    IndexRecordOption::WithFreqs,
                );
                Box::new(BoostQuery::new(Box::new(q), *boost))
            }
            LexicalQuery::Bool(clauses) => Box::new(BooleanQuery::new(
                clauses
                    .iter()
                    .map(|(occur, q)| {
                        let occur = match occur {
                            Occur::Should => tantivy::query::Occur::Should,
                            Occur::Must => tantivy::query::Occur::Must,
                        };
                        (occur, self.tantivy_query(q))
                    })
                    .collect(),
            )),
        }
    }

    /// The chunk ordinal of a document.
    fn ordinal(&self, addr: DocAddress) -> u32 {
        self.ord_of[addr.segment_ord as usize][addr.doc_id as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn generation_is_shareable() {
        assert_send_sync::<Generation>();
    }

    fn record(path: &str) -> FileRecord {
        FileRecord {
            path: path.to_string(),
            language: Language::Rust,
            size: 1,
            mtime_ms: 1,
            indexed_at_ms: 1,
        }
    }

    fn chunked(path: &str, text: &str) -> ChunkedFile {
        crate::chunk::chunk_file(path, Language::Rust, text, &Default::default())
    }

    /// Ordinals of the chunks holding `term` in their content, through postings and BM25.
    fn holders(g: &Generation, term: &str) -> (Vec<u32>, Vec<u32>) {
        let mut postings = Vec::new();
        g.for_each_chunk_with(TextField::Content, term, &mut |o| postings.push(o))
            .unwrap();
        let q = LexicalQuery::Term {
            field: TextField::Content,
            text: term.to_string(),
            boost: 1.0,
        };
        let bm25 = g
            .bm25_top(&q, 10)
            .unwrap()
            .into_iter()
            .map(|(_, o)| o)
            .collect();
        (postings, bm25)
    }

    #[test]
    fn a_derived_generation_never_returns_deleted_documents() {
        let dir = tempfile::tempdir().unwrap();
        let gens: Vec<PathBuf> = (1..=3).map(|i| dir.path().join(format!("g{i}"))).collect();
        for g in &gens {
            std::fs::create_dir(g).unwrap();
        }
        let v = [1.0, 0.0, 0.0, 0.5];
        let mut w = GenerationWriter::create(&gens[0], Some(4)).unwrap();
        let b = "fn beta() { keepword }";
        w.add_file(&record("b.rs"), &chunked("b.rs", b), &v)
            .unwrap();
        w.finish().unwrap();
        // A derive writes its new documents into one segment: the document deleted next
        // shares it with a live one, so the segment (and the deleted document) stays.
        let g1 = Generation::open(&gens[0]).unwrap();
        let mut w =
            GenerationWriter::derive(&g1, &gens[1], Some(4), &|_| true, &EmbeddedVectors).unwrap();
        for (path, text) in [
            ("a.rs", "fn alpha() { oldword }"),
            ("c.rs", "fn gamma() {}"),
        ] {
            w.add_file(&record(path), &chunked(path, text), &v).unwrap();
        }
        w.finish().unwrap();
        let g2 = Generation::open(&gens[1]).unwrap();
        let keep = |f: &FileEntry| f.path != "a.rs";
        let mut w =
            GenerationWriter::derive(&g2, &gens[2], Some(4), &keep, &EmbeddedVectors).unwrap();
        let a = "fn alpha() { newword }";
        let row = [Row::Embedded(&[0.0, 1.0, 0.0, 0.0])];
        w.add_file_rows(&record("a.rs"), &chunked("a.rs", a), &row)
            .unwrap();
        w.finish().unwrap();
        let g = Generation::open(&gens[2]).unwrap();
        assert_eq!(
            g.deleted_docs(),
            1,
            "the old document is still in its segment"
        );
        assert_eq!(holders(&g, "oldword"), (vec![], vec![]));
        let paths: Vec<&str> = g.files().iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["b.rs", "c.rs", "a.rs"]);
        assert_eq!(holders(&g, "keepword"), (vec![0], vec![0]));
        assert_eq!(holders(&g, "newword"), (vec![2], vec![2]));
        assert_eq!(g.chunk_content(2).unwrap(), a);
        // Kept rows are copied as stored, the new one written from its vector.
        fn matrix(g: &Generation) -> &crate::dense::DenseIndex {
            g.vectors()
                .unwrap()
                .as_any()
                .unwrap()
                .downcast_ref()
                .unwrap()
        }
        let dense = matrix(&g);
        assert_eq!(dense.quantized(0), matrix(&g1).quantized(0));
        assert_eq!(dense.quantized(2).unwrap().1, &[0, 127, 0, 0]);
        // The generation derived from is untouched.
        assert_eq!(holders(&g2, "oldword").0, vec![1]);
        assert_eq!(Generation::open(&gens[1]).unwrap().deleted_docs(), 0);
    }
}
