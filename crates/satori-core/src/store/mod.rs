//! One index generation on disk: the tantivy index with the code-aware tokenizer, the
//! compact chunk table, and the vectors. Storage only: nothing here knows how results are
//! ranked.
//!
//! A generation directory is written once by [`GenerationWriter`] and then only read through
//! [`Generation`], whose read API is what search uses: BM25 candidates for a
//! [`LexicalQuery`], the chunks holding a term, the chunk and file tables, chunk contents,
//! and the vector index behind the [`VectorIndex`] trait. The engine owns everything around
//! a generation (manifest, completion marker, the `CURRENT` pointer); this module owns only
//! what is inside `<gen>/lexical/` and `<gen>/chunks*`. The dense matrix under
//! `<gen>/vectors/` (rows in the same ordinal order) is written and opened alongside, by
//! `crate::dense`.

pub mod table;
pub mod tokenizer;

use std::path::{Path, PathBuf};

use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, BoostQuery, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions, Value,
};
use tantivy::{
    DocAddress, DocSet, Index, IndexWriter, ReloadPolicy, Searcher, TERMINATED, TantivyDocument,
    Term,
};

use crate::chunk::ChunkedFile;
use crate::dense::{DenseIndex, DenseWriter, VectorIndex};
use crate::lang::Language;
use crate::{Error, Result};

use self::table::{ChunkEntry, ChunkTable, FileEntry, TABLE_VERSION};
use self::tokenizer::{CODE_TOKENIZER, CodeTokenizer};

/// Sub-directory of a generation holding the tantivy index.
pub const LEXICAL_DIR: &str = "lexical";

/// Sub-directory of the dense matrix (row = chunk ordinal).
pub const VECTORS_DIR: &str = "vectors";

/// Indexing memory budget shared by tantivy's indexing threads: big enough that a typical
/// repository is indexed in one flush per thread, small enough for small machines.
const WRITER_MEMORY_BYTES: usize = 96 * 1024 * 1024;

/// Name of the fast field carrying the chunk ordinal.
const ORD_FIELD: &str = "ord";

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
#[derive(Debug, Clone, Copy)]
struct Fields {
    pub ord: Field,
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
        let ord = b.add_u64_field(ORD_FIELD, NumericOptions::default().set_fast());
        let content = b.add_text_field("content", indexed.clone().set_stored());
        let symbols = b.add_text_field("symbols", indexed.clone());
        let path = b.add_text_field("path", indexed);
        (
            b.build(),
            Fields {
                ord,
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
            ord: get(ORD_FIELD)?,
            content: get("content")?,
            symbols: get("symbols")?,
            path: get("path")?,
        })
    }
}

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

/// Writes a new generation into an empty directory.
pub struct GenerationWriter {
    dir: PathBuf,
    writer: IndexWriter<TantivyDocument>,
    fields: Fields,
    table: ChunkTable,
    dense: Option<DenseWriter>,
}

impl GenerationWriter {
    /// Creates the writer; `dir` must exist and be empty. With `dim`, every chunk comes with
    /// a vector of that length.
    pub fn create(dir: &Path, dim: Option<usize>) -> Result<Self> {
        let lexical = dir.join(LEXICAL_DIR);
        std::fs::create_dir(&lexical).map_err(|e| Error::io("create directory", &lexical, e))?;
        let (schema, fields) = Fields::schema();
        let index = Index::create_in_dir(&lexical, schema)?;
        register_tokenizer(&index);
        let writer = index.writer(WRITER_MEMORY_BYTES)?;
        let dense = match dim {
            Some(d) => Some(DenseWriter::create(&dir.join(VECTORS_DIR), d)?),
            None => None,
        };
        Ok(GenerationWriter {
            dir: dir.to_path_buf(),
            writer,
            fields,
            dense,
            table: ChunkTable {
                version: TABLE_VERSION,
                ..ChunkTable::default()
            },
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
        if let Some(dense) = &mut self.dense {
            let dim = dense.dim();
            if vectors.len() != chunked.chunks.len() * dim {
                return Err(Error::Lexical(format!(
                    "{} vectors values for {} chunks of dimension {dim}",
                    vectors.len(),
                    chunked.chunks.len()
                )));
            }
            for v in vectors.chunks_exact(dim) {
                dense.push(v);
            }
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
        for chunk in &chunked.chunks {
            let ordinal = self.table.chunks.len() as u64;
            let mut doc = TantivyDocument::new();
            doc.add_u64(self.fields.ord, ordinal);
            doc.add_text(self.fields.content, &chunk.content);
            doc.add_text(self.fields.symbols, symbol_text(chunk));
            doc.add_text(self.fields.path, &file.path);
            self.writer.add_document(doc)?;
            self.table.chunks.push(ChunkEntry {
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
    pub fn finish(mut self) -> Result<GenerationStats> {
        self.writer.commit()?;
        // Merges run in the background after a commit; the generation must be final (and its
        // files no longer touched) before the engine publishes it.
        self.writer.wait_merging_threads()?;
        self.table.save(&self.dir)?;
        if let Some(dense) = self.dense {
            dense.finish()?;
            crate::util::sync_dir(&self.dir.join(VECTORS_DIR));
        }
        crate::util::sync_dir(&self.dir.join(LEXICAL_DIR));
        crate::util::sync_dir(&self.dir);
        Ok(GenerationStats {
            files: self.table.files.len() as u64,
            chunks: self.table.chunks.len() as u64,
        })
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
/// Chunks are named by their ordinal everywhere: index into [`Generation::chunks`], value of
/// the `ord` fast field, row of the vector index.
pub struct Generation {
    table: ChunkTable,
    searcher: Searcher,
    fields: Fields,
    /// Segment ordinal → doc id → chunk ordinal.
    ord_of: Vec<Vec<u32>>,
    /// Chunk ordinal → where its document lives in the index.
    addr_of: Vec<DocAddress>,
    /// The dense matrix, when the generation was built with an embedding model.
    dense: Option<DenseIndex>,
}

impl Generation {
    /// Opens a finished generation directory.
    pub fn open(dir: &Path) -> Result<Self> {
        let table = ChunkTable::load(dir)?;
        let lexical = dir.join(LEXICAL_DIR);
        let index = Index::open_in_dir(&lexical)?;
        register_tokenizer(&index);
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
        let mut addr_of = vec![DocAddress::new(u32::MAX, 0); n];
        let mut ord_of = Vec::with_capacity(searcher.segment_readers().len());
        for (seg, reader) in searcher.segment_readers().iter().enumerate() {
            let column = reader.fast_fields().u64(ORD_FIELD)?;
            let mut ords = Vec::with_capacity(reader.max_doc() as usize);
            for doc in 0..reader.max_doc() {
                let ord = column
                    .first(doc)
                    .filter(|&o| (o as usize) < n)
                    .ok_or_else(|| corrupt(format!("document {seg}/{doc} has no valid ordinal")))?;
                if addr_of[ord as usize].segment_ord != u32::MAX {
                    return Err(corrupt(format!("ordinal {ord} is indexed twice")));
                }
                addr_of[ord as usize] = DocAddress::new(seg as u32, doc);
                ords.push(ord as u32);
            }
            ord_of.push(ords);
        }
        if let Some(missing) = addr_of.iter().position(|a| a.segment_ord == u32::MAX) {
            return Err(corrupt(format!(
                "chunk {missing} is missing from the index"
            )));
        }
        let dense = if dir.join(VECTORS_DIR).is_dir() {
            let d = DenseIndex::open(&dir.join(VECTORS_DIR))?;
            if d.len() != n {
                return Err(Error::Corrupt {
                    what: "dense index",
                    path: dir.join(VECTORS_DIR),
                    reason: format!("{} rows for {n} chunks", d.len()),
                });
            }
            Some(d)
        } else {
            None
        };
        Ok(Generation {
            table,
            searcher,
            fields,
            ord_of,
            addr_of,
            dense,
        })
    }

    /// Dimension of the dense matrix, when there is one.
    pub fn dense_dim(&self) -> Option<usize> {
        self.dense.as_ref().map(DenseIndex::dim)
    }

    /// The vector index (rows = chunk ordinals), when the generation has vectors.
    pub fn vectors(&self) -> Option<&dyn VectorIndex> {
        self.dense.as_ref().map(|d| d as &dyn VectorIndex)
    }

    /// Counts of the generation.
    pub fn stats(&self) -> GenerationStats {
        GenerationStats {
            files: self.table.files.len() as u64,
            chunks: self.table.chunks.len() as u64,
        }
    }

    /// The files of the generation, in file-id order.
    pub fn files(&self) -> &[FileEntry] {
        &self.table.files
    }

    /// The chunk metadata, in ordinal order (ordinal = index = row of the dense matrix).
    pub fn chunks(&self) -> &[ChunkEntry] {
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
        let query = self.tantivy_query(query);
        let limit = limit.max(1);
        let mut fetch = limit + 1;
        let top = loop {
            let top = self
                .searcher
                .search(&query, &TopDocs::with_limit(fetch).order_by_score())?;
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
                    each(self.ord_of[seg][doc as usize]);
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
}
