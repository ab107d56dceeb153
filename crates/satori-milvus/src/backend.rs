//! The [`VectorBackend`] over Milvus: sinks that insert a generation's new vectors into the
//! codebase's collection, indexes that search it filtered to the generation's lineage and
//! keys, and the record (`milvus.json` in the generation directory) that ties the two.

use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use satori_core::dense::{
    BackendId, Neighbor, OpenSpec, QueryVector, SinkBase, VectorBackend, VectorIndex, VectorSink,
    VectorStore,
};

use crate::Error;
use satori_core::embed::{Embedder, ModelInfo};

use crate::grpc::{Client, Endpoint};
use crate::store::{self, Collection, MAX_TOPK};

/// The backend's name, in fingerprints and manifests.
pub const NAME: &str = "milvus";
/// What a generation directory records of its vectors.
pub const VECTORS_FILE: &str = "milvus.json";
/// Rows per insert request.
const INSERT_ROWS: usize = 512;
/// Keys per `key in [...]` expression.
const EXPR_KEYS: usize = 1024;

/// Vectors in Milvus: `MILVUS_ADDRESS`, `MILVUS_TOKEN`, and a prefix for the collection
/// names (`SATORI_MILVUS_PREFIX`) when several users share a cluster.
#[derive(Debug, Clone)]
pub struct MilvusBackend {
    client: Arc<Client>,
    prefix: String,
}

/// `milvus.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    collection: String,
    lineage: String,
    dim: usize,
    /// Keys of the base generation this one no longer holds: their rows are deleted by the
    /// sink of the next generation, once this one is published and its base retired.
    dropped: Vec<u64>,
    /// The timestamp of the generation's last insert: a search guaranteed at it sees every
    /// row of the generation without waiting for the server's newest writes (0: unknown,
    /// search strongly).
    #[serde(default)]
    written: u64,
}

impl Record {
    fn read(gen_dir: &Path) -> Result<Option<Record>, Error> {
        let path = gen_dir.join(VECTORS_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(Error::Protocol(format!(
                    "cannot read '{}': {e}",
                    path.display()
                )));
            }
        };
        serde_json::from_str(&text).map(Some).map_err(|e| {
            Error::Protocol(format!(
                "'{}' is damaged ({e}): index the codebase again",
                path.display()
            ))
        })
    }
}

impl MilvusBackend {
    /// The backend of the Milvus at `endpoint`; nothing is sent until a build or a search
    /// needs it.
    pub fn new(endpoint: Endpoint, prefix: &str) -> Result<MilvusBackend, Error> {
        if !prefix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
            || prefix.starts_with(|c: char| c.is_ascii_digit())
            || prefix.len() > 64
        {
            return Err(Error::Config(format!(
                "SATORI_MILVUS_PREFIX={prefix} may hold only letters, digits and '_', not first a digit, at most 64"
            )));
        }
        Ok(MilvusBackend {
            client: Arc::new(Client::new(endpoint)?),
            prefix: prefix.to_string(),
        })
    }

    /// The collection of the codebase whose generations live in `gen_dir`'s parent:
    /// `<prefix>satori_<codebase id>_<home id>`. The home id keeps two homes that index
    /// the same path (two machines, two users) out of each other's rows.
    fn collection(&self, gen_dir: &Path) -> Result<Collection, Error> {
        let codebase_dir = gen_dir.parent().unwrap_or(gen_dir);
        let id = codebase_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let id = name_part(&id);
        // `<home>/indexes/<codebase id>`.
        let home = codebase_dir
            .parent()
            .and_then(Path::parent)
            .unwrap_or(codebase_dir);
        Ok(Collection {
            client: Arc::clone(&self.client),
            name: format!("{}satori_{id}_{}", self.prefix, home_id(home)?),
        })
    }

    /// The collection a codebase's vectors are in, given its directory under
    /// `SATORI_HOME/indexes` (for tools that list or drop it).
    pub fn collection_name(&self, codebase_dir: &Path) -> Result<String, Error> {
        Ok(self.collection(&codebase_dir.join("gen"))?.name)
    }

    /// `inner` (a remote provider's embedder) asking first the collection of vectors shared
    /// by everyone who embeds with its model (see [`crate::SharedVectors`]).
    pub fn share(&self, inner: Arc<dyn Embedder>) -> Arc<dyn Embedder> {
        Arc::new(crate::shared::SharedVectors::new(
            inner,
            Arc::clone(&self.client),
            &self.prefix,
        ))
    }

    /// How many rows the shared collection of the model `info` holds.
    pub fn shared_rows(&self, info: &ModelInfo) -> Result<u64, Error> {
        Collection {
            client: Arc::clone(&self.client),
            name: crate::shared::collection_name(&self.prefix, info),
        }
        .count("id != \"\"")
    }

    /// How many vectors the collection of the codebase in `codebase_dir` holds, of every
    /// lineage.
    pub fn rows(&self, codebase_dir: &Path) -> Result<u64, Error> {
        self.collection(&codebase_dir.join("gen"))?
            .count(&format!("{} >= 0", store::KEY))
    }

    /// Drops the collection of the codebase in `codebase_dir`.
    pub fn drop_codebase(&self, codebase_dir: &Path) -> Result<(), Error> {
        self.collection(&codebase_dir.join("gen"))?
            .drop_collection()
    }
}

/// The id of a Satori home among the homes that share a Milvus: eight hex digits drawn when
/// the home first uses one, kept in `<home>/milvus-id`.
fn home_id(home: &Path) -> Result<String, Error> {
    let path = home.join("milvus-id");
    let valid = |s: &str| s.len() == 8 && s.chars().all(|c| c.is_ascii_hexdigit());
    if let Ok(s) = std::fs::read_to_string(&path)
        && valid(s.trim())
    {
        return Ok(s.trim().to_string());
    }
    let drawn = {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        h.write_u32(std::process::id());
        format!("{:08x}", h.finish() as u32)
    };
    let io = |e: std::io::Error| {
        Error::Config(format!(
            "cannot keep the home's Milvus id in '{}': {e}",
            path.display()
        ))
    };
    std::fs::create_dir_all(home).map_err(io)?;
    // The first process to write it wins; the others read what it wrote.
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
    {
        Ok(mut f) => {
            use std::io::Write;
            f.write_all(drawn.as_bytes()).map_err(io)?;
            f.sync_all().map_err(io)?;
            Ok(drawn)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            for _ in 0..50 {
                if let Ok(s) = std::fs::read_to_string(&path)
                    && valid(s.trim())
                {
                    return Ok(s.trim().to_string());
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(Error::Config(format!(
                "'{}' does not hold a Milvus id (eight hex digits): delete it and index again",
                path.display()
            )))
        }
        Err(e) => Err(io(e)),
    }
}

/// A lineage id from the directory of the generation that starts it: `[a-z0-9_]`.
fn lineage_of(gen_dir: &Path) -> String {
    let name = gen_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    name_part(&name)
        .to_ascii_lowercase()
        .chars()
        .take(40)
        .collect()
}

/// `s` with every character a Milvus name may not hold turned into `_`.
fn name_part(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

impl VectorBackend for MilvusBackend {
    fn id(&self) -> BackendId {
        BackendId::Named(NAME.into())
    }

    fn sink<'a>(
        &self,
        gen_dir: &Path,
        dim: usize,
        base: Option<SinkBase<'a>>,
    ) -> satori_core::Result<Box<dyn VectorSink + 'a>> {
        let collection = self.collection(gen_dir)?;
        collection.ensure(dim)?;
        let (lineage, base, written) = match base {
            None => (lineage_of(gen_dir), None, 0),
            Some(b) => {
                let record = Record::read(b.gen_dir)?.ok_or_else(|| {
                    satori_core::Error::Vectors(format!(
                        "'{}' holds no Milvus vectors to derive from",
                        b.gen_dir.display()
                    ))
                })?;
                if record.collection != collection.name || record.dim != dim {
                    return Err(satori_core::Error::Vectors(format!(
                        "the base generation's vectors are in {} ({} values), not {} ({dim})",
                        record.collection, record.dim, collection.name
                    )));
                }
                // The base is published and its own base retired: rows nothing will
                // search again go now (older lineages, keys the base dropped, and keys past
                // the base's, left by a sync that never published).
                collection.delete(&format!("{} != \"{}\"", store::LINEAGE, record.lineage))?;
                for keys in record.dropped.chunks(EXPR_KEYS) {
                    collection.delete(&format!(
                        "{} and {}",
                        store::of_lineage(&record.lineage),
                        store::keys_in(keys)
                    ))?;
                }
                let max = (0..b.keys.len()).map(|i| b.keys.key(i)).max();
                let past = match max {
                    Some(m) => format!("{} > {m}", store::KEY),
                    None => format!("{} >= 0", store::KEY),
                };
                collection.delete(&format!(
                    "{} and {past}",
                    store::of_lineage(&record.lineage)
                ))?;
                let base_keys: Vec<u64> = (0..b.keys.len()).map(|i| b.keys.key(i)).collect();
                (record.lineage, Some(base_keys), record.written)
            }
        };
        if base.is_none() {
            // A full build of a lineage that a crashed build may have begun.
            collection.delete(&store::of_lineage(&lineage))?;
        }
        Ok(Box::new(MilvusSink {
            gen_dir: gen_dir.to_path_buf(),
            collection,
            lineage,
            dim,
            base_keys: base,
            carried: Vec::new(),
            copies: Vec::new(),
            keys: Vec::new(),
            values: Vec::new(),
            written,
        }))
    }

    /// Drops the codebase's collection (its other lineages and crashed syncs' rows too).
    fn forget(&self, codebase_dir: &Path) -> satori_core::Result<()> {
        self.drop_codebase(codebase_dir).map_err(|e| {
            satori_core::Error::Vectors(format!(
                "the index is kept, because its Milvus collection could not be dropped: {e}. Clear again once Milvus answers, or without MILVUS_ADDRESS to remove only the local index"
            ))
        })
    }

    fn open(&self, spec: OpenSpec<'_>) -> satori_core::Result<Option<Box<dyn VectorIndex>>> {
        let Some(record) = Record::read(spec.gen_dir)? else {
            return Ok(None);
        };
        let keys: Vec<u64> = (0..spec.keys.len()).map(|i| spec.keys.key(i)).collect();
        Ok(Some(Box::new(MilvusIndex {
            collection: Collection {
                client: Arc::clone(&self.client),
                name: record.collection,
            },
            lineage: record.lineage,
            dim: record.dim,
            slack: record.dropped.len(),
            written: record.written,
            keys,
        })))
    }
}

struct MilvusSink {
    gen_dir: std::path::PathBuf,
    collection: Collection,
    lineage: String,
    dim: usize,
    /// The base generation's keys (ascending), when derived.
    base_keys: Option<Vec<u64>>,
    /// Base keys carried as themselves.
    carried: Vec<u64>,
    /// New keys whose vector is a base key's: (key, from).
    copies: Vec<(u64, u64)>,
    /// Rows waiting to be inserted.
    keys: Vec<u64>,
    values: Vec<f32>,
    /// The newest insert's timestamp (the base's when nothing new was written).
    written: u64,
}

impl MilvusSink {
    fn flush(&mut self) -> Result<(), Error> {
        let keys = std::mem::take(&mut self.keys);
        let values = std::mem::take(&mut self.values);
        let ts = self
            .collection
            .insert(&self.lineage, &keys, self.dim, values)?;
        self.written = self.written.max(ts);
        Ok(())
    }

    fn push(&mut self, key: u64, vector: &[f32]) -> Result<(), Error> {
        self.keys.push(key);
        self.values.extend_from_slice(vector);
        if self.keys.len() >= INSERT_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    /// Inserts the copied rows: the vectors of their sources read back, a batch at a time.
    fn copy_rows(&mut self) -> Result<(), Error> {
        let copies = std::mem::take(&mut self.copies);
        for batch in copies.chunks(EXPR_KEYS) {
            let froms: Vec<u64> = batch.iter().map(|&(_, f)| f).collect();
            let expr = format!(
                "{} and {}",
                store::of_lineage(&self.lineage),
                store::keys_in(&froms)
            );
            let found: std::collections::HashMap<u64, Vec<f32>> = self
                .collection
                .vectors(&expr, self.dim)?
                .into_iter()
                .collect();
            for &(key, from) in batch {
                let v = found.get(&from).ok_or_else(|| {
                    Error::Protocol(format!(
                        "Milvus has no vector of chunk {from} to carry over; index the codebase again"
                    ))
                })?;
                self.push(key, v)?;
            }
        }
        Ok(())
    }
}

impl VectorSink for MilvusSink {
    fn put(&mut self, key: u64, vector: &[f32]) -> satori_core::Result<()> {
        if vector.len() != self.dim {
            return Err(satori_core::Error::Vectors(format!(
                "a vector of {} values in a collection of dimension {}",
                vector.len(),
                self.dim
            )));
        }
        Ok(self.push(key, vector)?)
    }

    fn carry(&mut self, key: u64, from: u64) -> satori_core::Result<()> {
        if self.base_keys.is_none() {
            return Err(satori_core::Error::Vectors(format!(
                "no earlier generation to carry chunk {from} from"
            )));
        }
        if key == from {
            self.carried.push(key);
        } else {
            self.copies.push((key, from));
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> satori_core::Result<VectorStore> {
        self.copy_rows()?;
        self.flush()?;
        let dropped = match &self.base_keys {
            None => Vec::new(),
            Some(base) => {
                let mut carried = std::mem::take(&mut self.carried);
                carried.sort_unstable();
                base.iter()
                    .copied()
                    .filter(|k| carried.binary_search(k).is_err())
                    .collect()
            }
        };
        let record = Record {
            collection: self.collection.name.clone(),
            lineage: self.lineage.clone(),
            dim: self.dim,
            dropped,
            written: self.written,
        };
        let path = self.gen_dir.join(VECTORS_FILE);
        let text = serde_json::to_string(&record).expect("a record serialises");
        std::fs::write(&path, text).map_err(|e| {
            satori_core::Error::Vectors(format!("cannot write '{}': {e}", path.display()))
        })?;
        Ok(VectorStore::External {
            name: NAME.into(),
            collection: record.collection,
            generation: record.lineage,
        })
    }
}

/// A generation's vectors: the rows of its lineage whose keys it holds.
#[derive(Debug)]
struct MilvusIndex {
    collection: Collection,
    lineage: String,
    dim: usize,
    /// Rows of the lineage within the key range that the generation does not hold (those it
    /// dropped, deleted only by the next sync): asked for beyond `k`.
    slack: usize,
    /// What every search must see (see `Record::written`).
    written: u64,
    /// The generation's keys by ordinal (ascending).
    keys: Vec<u64>,
}

impl MilvusIndex {
    fn ordinal(&self, key: u64) -> Option<u32> {
        self.keys.binary_search(&key).ok().map(|o| o as u32)
    }

    fn in_range(&self) -> String {
        let max = self.keys.last().copied().unwrap_or(0);
        format!(
            "{} and {} <= {max}",
            store::of_lineage(&self.lineage),
            store::KEY
        )
    }
}

impl VectorIndex for MilvusIndex {
    fn dim(&self) -> usize {
        self.dim
    }

    fn len(&self) -> usize {
        self.keys.len()
    }

    fn top_k(&self, query: &QueryVector, k: usize) -> satori_core::Result<Vec<Neighbor>> {
        if k == 0 || self.keys.is_empty() || query.is_zero() {
            return Ok(Vec::new());
        }
        let limit = (k + self.slack).min(MAX_TOPK);
        let found =
            self.collection
                .search(query.values(), &self.in_range(), limit, self.written)?;
        let mut out: Vec<Neighbor> = found
            .into_iter()
            .filter_map(|(key, score)| self.ordinal(key).map(|row| Neighbor { score, row }))
            .collect();
        // Best first; equal scores keep the lower row, as the embedded index does.
        out.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.row.cmp(&b.row)));
        out.truncate(k);
        Ok(out)
    }

    fn cosines(
        &self,
        query: &QueryVector,
        rows: &[u32],
        out: &mut Vec<f32>,
    ) -> satori_core::Result<()> {
        let start = out.len();
        out.resize(start + rows.len(), 0.0);
        if query.is_zero() {
            return Ok(());
        }
        let keys: Vec<u64> = rows
            .iter()
            .filter_map(|&r| self.keys.get(r as usize).copied())
            .collect();
        let mut scores = std::collections::HashMap::with_capacity(keys.len());
        for batch in keys.chunks(EXPR_KEYS.min(MAX_TOPK)) {
            let expr = format!(
                "{} and {}",
                store::of_lineage(&self.lineage),
                store::keys_in(batch)
            );
            for (key, score) in
                self.collection
                    .search(query.values(), &expr, batch.len(), self.written)?
            {
                scores.insert(key, score);
            }
        }
        for (i, &r) in rows.iter().enumerate() {
            if let Some(s) = self.keys.get(r as usize).and_then(|k| scores.get(k)) {
                out[start + i] = *s;
            }
        }
        Ok(())
    }
}
