//! One codebase's collection: created on first use with the schema and index the backend
//! reads, checked against the dimension a build embeds with, and the few operations the
//! backend needs (insert rows, delete by expression, score a vector against filtered rows,
//! read rows' vectors).

use std::sync::Arc;
use std::time::{Duration, Instant};

use prost::Message;

use crate::Error;
use crate::grpc::Client;
use crate::proto::{self, FieldData, HasStatus, kv};

/// Field names of the collection's schema.
pub const ID: &str = "id";
pub const LINEAGE: &str = "lineage";
pub const KEY: &str = "key";
pub const VECTOR: &str = "vector";

/// The most rows one search returns (Milvus's `topk` limit).
pub const MAX_TOPK: usize = 16_384;
/// Longest wait for a new collection to load.
const LOAD_TIMEOUT: Duration = Duration::from_secs(120);

/// A collection of one Milvus.
#[derive(Debug, Clone)]
pub struct Collection {
    pub client: Arc<Client>,
    pub name: String,
}

/// Raises a response's failed status as an error naming what was asked.
fn checked<R: HasStatus>(r: R, what: &str) -> Result<R, Error> {
    match r.status() {
        Some(s) if !s.ok() => Err(refusal(s, what)),
        _ => Ok(r),
    }
}

fn refusal(s: &proto::Status, what: &str) -> Error {
    let reason = s.reason.trim();
    let lower = reason.to_ascii_lowercase();
    if lower.contains("auth") || lower.contains("permission") || lower.contains("privilege") {
        return Error::Auth(format!(
            "Milvus refused to {what} ({reason}); set MILVUS_TOKEN to credentials allowed to"
        ));
    }
    if lower.contains("collection") && (lower.contains("not found") || lower.contains("not exist"))
    {
        return Error::Protocol(format!(
            "Milvus refused to {what}: the collection is gone ({reason}); it was dropped, or MILVUS_ADDRESS names another server than the one this index was built on: index the codebase again"
        ));
    }
    Error::Protocol(format!(
        "Milvus refused to {what} ({reason}, code {})",
        s.code.max(s.error_code)
    ))
}

impl Collection {
    fn call<Req: Message, Resp: Message + Default + HasStatus + 'static>(
        &self,
        method: &'static str,
        req: &Req,
        what: &str,
    ) -> Result<Resp, Error> {
        checked(self.client.call::<Req, Resp>(method, req)?, what)
    }

    fn named(&self) -> proto::CollectionName {
        proto::CollectionName {
            collection_name: self.name.clone(),
        }
    }

    /// Makes sure the collection exists, holds vectors of `dim` values and is loaded:
    /// created when missing, refused when its dimension differs. Called before a build
    /// embeds anything, so that a full cluster is reported before money is spent.
    pub fn ensure(&self, dim: usize) -> Result<(), Error> {
        self.ensure_with(dim, |dim| codebase_schema(&self.name, dim))
    }

    /// [`Collection::ensure`] with the schema `schema` gives for a dimension (its vector
    /// field is `vector`).
    pub fn ensure_with(
        &self,
        dim: usize,
        schema: impl FnOnce(usize) -> proto::CollectionSchema,
    ) -> Result<(), Error> {
        let has: proto::BoolResponse =
            self.call("HasCollection", &self.named(), "look up a collection")?;
        if has.value {
            let existing = self.dimension()?;
            if existing != Some(dim) {
                return Err(Error::Dimension(format!(
                    "the Milvus collection {} holds vectors of {} values, but the model embeds {dim}: clear the codebase (manage_index clear) and index it again, or use the model it was built with",
                    self.name,
                    existing.map_or("unknown".to_string(), |d| d.to_string())
                )));
            }
        } else {
            self.create(schema(dim))?;
        }
        self.load()
    }

    /// The dimension of the collection's vector field.
    fn dimension(&self) -> Result<Option<usize>, Error> {
        let d: proto::DescribeCollectionResponse =
            self.call("DescribeCollection", &self.named(), "describe a collection")?;
        Ok(d.schema.and_then(|s| {
            s.fields
                .iter()
                .find(|f| f.name == VECTOR)
                .and_then(|f| f.type_params.iter().find(|p| p.key == "dim"))
                .and_then(|p| p.value.parse().ok())
        }))
    }

    fn create(&self, schema: proto::CollectionSchema) -> Result<(), Error> {
        let req = proto::CreateCollectionRequest {
            collection_name: self.name.clone(),
            schema: schema.encode_to_vec(),
            shards_num: 1,
            consistency_level: proto::CONSISTENCY_STRONG,
        };
        let status: proto::Status = self.client.call("CreateCollection", &req)?;
        if !status.ok() {
            if is_limit(&status.reason) {
                let existing = self.list().unwrap_or_default();
                return Err(limit_refusal(&self.name, &status.reason, &existing));
            }
            return Err(refusal(&status, "create a collection"));
        }
        let index = proto::CreateIndexRequest {
            collection_name: self.name.clone(),
            field_name: VECTOR.into(),
            index_name: VECTOR.into(),
            extra_params: vec![
                kv("index_type", "AUTOINDEX"),
                kv("metric_type", "COSINE"),
                kv("params", "{}"),
            ],
        };
        let status: proto::Status = self.client.call("CreateIndex", &index)?;
        if !status.ok() {
            return Err(refusal(&status, "index the vector field"));
        }
        Ok(())
    }

    /// Loads the collection and waits until it is searchable.
    fn load(&self) -> Result<(), Error> {
        let state = || -> Result<i32, Error> {
            let r: proto::GetLoadStateResponse = self.call(
                "GetLoadState",
                &proto::GetLoadStateRequest {
                    collection_name: self.name.clone(),
                },
                "read a collection's load state",
            )?;
            Ok(r.state)
        };
        if state()? == proto::LOAD_STATE_LOADED {
            return Ok(());
        }
        let _: proto::Status = self.call("LoadCollection", &self.named(), "load a collection")?;
        let start = Instant::now();
        while state()? != proto::LOAD_STATE_LOADED {
            if start.elapsed() > LOAD_TIMEOUT {
                return Err(Error::Unavailable(format!(
                    "Milvus did not load the collection {} within {} s",
                    self.name,
                    LOAD_TIMEOUT.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(())
    }

    /// Every collection's name.
    pub fn list(&self) -> Result<Vec<String>, Error> {
        let r: proto::ShowCollectionsResponse = self.call(
            "ShowCollections",
            &proto::ShowCollectionsRequest {},
            "list collections",
        )?;
        Ok(r.collection_names)
    }

    /// Drops the collection (nothing when it does not exist).
    pub fn drop_collection(&self) -> Result<(), Error> {
        let has: proto::BoolResponse =
            self.call("HasCollection", &self.named(), "look up a collection")?;
        if !has.value {
            return Ok(());
        }
        let _: proto::Status = self.call("DropCollection", &self.named(), "drop a collection")?;
        Ok(())
    }

    /// Inserts rows of `lineage`: `keys[i]` with the `dim` values of `vectors` at `i * dim`.
    /// Returns the write's timestamp (0 when nothing was written).
    pub fn insert(
        &self,
        lineage: &str,
        keys: &[u64],
        dim: usize,
        vectors: Vec<f32>,
    ) -> Result<u64, Error> {
        if keys.is_empty() {
            return Ok(0);
        }
        debug_assert_eq!(vectors.len(), keys.len() * dim);
        let req = proto::InsertRequest {
            collection_name: self.name.clone(),
            num_rows: keys.len() as u32,
            fields_data: vec![
                FieldData::strings(ID, keys.iter().map(|k| row_id(lineage, *k)).collect()),
                FieldData::strings(LINEAGE, vec![lineage.to_string(); keys.len()]),
                FieldData::longs(KEY, keys.iter().map(|&k| k as i64).collect()),
                FieldData::floats(VECTOR, dim, vectors),
            ],
        };
        let r: proto::MutationResult = self.call("Insert", &req, "insert vectors")?;
        if r.insert_cnt as usize != keys.len() {
            return Err(Error::Protocol(format!(
                "Milvus stored {} of {} vectors",
                r.insert_cnt,
                keys.len()
            )));
        }
        Ok(r.timestamp)
    }

    /// How many rows `expr` selects.
    pub fn count(&self, expr: &str) -> Result<u64, Error> {
        let req = proto::QueryRequest {
            collection_name: self.name.clone(),
            expr: expr.into(),
            output_fields: vec!["count(*)".into()],
            query_params: vec![],
            consistency_level: proto::CONSISTENCY_STRONG,
        };
        let r: proto::QueryResults = self.call("Query", &req, "count vectors")?;
        Ok(r.fields_data
            .iter()
            .find_map(FieldData::as_longs)
            .and_then(|v| v.first().copied())
            .unwrap_or(0) as u64)
    }

    /// Deletes the rows `expr` selects.
    pub fn delete(&self, expr: &str) -> Result<(), Error> {
        let req = proto::DeleteRequest {
            collection_name: self.name.clone(),
            expr: expr.into(),
        };
        let _: proto::MutationResult = self.call("Delete", &req, "delete vectors")?;
        Ok(())
    }

    /// The `limit` rows `expr` selects that are most similar to `vector`, as (key, cosine),
    /// best first. `seen` is the timestamp of the last write the search must see (0: every
    /// write so far, which makes the server wait for its latest tick).
    pub fn search(
        &self,
        vector: &[f32],
        expr: &str,
        limit: usize,
        seen: u64,
    ) -> Result<Vec<(u64, f32)>, Error> {
        let mut bytes = Vec::with_capacity(vector.len() * 4);
        for x in vector {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
        let group = proto::PlaceholderGroup {
            placeholders: vec![proto::PlaceholderValue {
                tag: "$0".into(),
                r#type: proto::PLACEHOLDER_FLOAT_VECTOR,
                values: vec![bytes],
            }],
        };
        let req = proto::SearchRequest {
            collection_name: self.name.clone(),
            dsl: expr.into(),
            placeholder_group: group.encode_to_vec(),
            dsl_type: proto::DSL_BOOL_EXPR,
            output_fields: vec![KEY.into()],
            search_params: vec![
                kv("anns_field", VECTOR),
                kv("topk", limit.clamp(1, MAX_TOPK).to_string()),
                kv("metric_type", "COSINE"),
                kv("params", "{}"),
                kv("round_decimal", "-1"),
            ],
            nq: 1,
            guarantee_timestamp: seen,
            consistency_level: if seen > 0 {
                proto::CONSISTENCY_CUSTOMIZED
            } else {
                proto::CONSISTENCY_STRONG
            },
        };
        let r: proto::SearchResults = self.call("Search", &req, "search vectors")?;
        let Some(data) = r.results else {
            return Ok(Vec::new());
        };
        let keys = field(&data.fields_data, KEY)
            .and_then(FieldData::as_longs)
            .unwrap_or(&[]);
        Ok(keys
            .iter()
            .zip(&data.scores)
            .map(|(&k, &s)| (k as u64, s))
            .collect())
    }

    /// The vectors of the rows `expr` selects, by key.
    pub fn vectors(&self, expr: &str, dim: usize) -> Result<Vec<(u64, Vec<f32>)>, Error> {
        let req = proto::QueryRequest {
            collection_name: self.name.clone(),
            expr: expr.into(),
            output_fields: vec![KEY.into(), VECTOR.into()],
            query_params: vec![],
            consistency_level: proto::CONSISTENCY_STRONG,
        };
        let r: proto::QueryResults = self.call("Query", &req, "read vectors")?;
        Ok(rows(&r.fields_data, KEY, FieldData::as_longs, dim)?
            .into_iter()
            .map(|(&k, v)| (k as u64, v.to_vec()))
            .collect())
    }
}

/// The field `name` of an answer.
pub fn field<'a>(fields: &'a [FieldData], name: &str) -> Option<&'a FieldData> {
    fields.iter().find(|f| f.field_name == name)
}

/// The rows of a query's answer: each one's id (the field `id`, read by `ids`) with its
/// vector of `dim` values (the field `vector`).
pub fn rows<'a, T>(
    fields: &'a [FieldData],
    id: &str,
    ids: impl Fn(&'a FieldData) -> Option<&'a [T]>,
    dim: usize,
) -> Result<Vec<(&'a T, &'a [f32])>, Error> {
    let ids = field(fields, id).and_then(ids).unwrap_or(&[]);
    let values = field(fields, VECTOR)
        .and_then(FieldData::as_floats)
        .unwrap_or(&[]);
    if values.len() != ids.len() * dim {
        return Err(Error::Protocol(format!(
            "Milvus answered {} values for {} vectors of {dim}",
            values.len(),
            ids.len()
        )));
    }
    Ok(ids.iter().zip(values.chunks_exact(dim.max(1))).collect())
}

/// Whether a refused creation was refused for a limit on collections (Milvus's
/// `maxCollectionNum`, a Zilliz Cloud plan's).
fn is_limit(reason: &str) -> bool {
    let lower = reason.to_ascii_lowercase();
    lower.contains("limit") || lower.contains("exceed") || lower.contains("quota")
}

/// The error of a creation refused for a limit: which limit, how many collections there are
/// (and how many are Satori's), and how to free a slot.
fn limit_refusal(name: &str, reason: &str, existing: &[String]) -> Error {
    let ours = existing.iter().filter(|n| n.contains("satori_")).count();
    Error::CollectionLimit(format!(
        "Milvus cannot create the collection {name} for this codebase: {} ({} collections exist, {ours} of them Satori's). Free a slot: drop the satori_ collection of a codebase you no longer search, or another unused collection, or raise the limit (rootCoord.maxCollectionNum, or a larger Zilliz Cloud plan)",
        reason.trim(),
        existing.len(),
    ))
}

/// The schema of a codebase's collection.
fn codebase_schema(name: &str, dim: usize) -> proto::CollectionSchema {
    let field = |name: &str, data_type: i32, params: Vec<proto::KeyValuePair>| {
        proto::FieldSchema::new(name, data_type, params, name == ID)
    };
    proto::CollectionSchema {
        name: name.into(),
        description: "Satori: chunk vectors of one codebase".into(),
        fields: vec![
            field(ID, proto::data_type::VARCHAR, vec![kv("max_length", "64")]),
            field(
                LINEAGE,
                proto::data_type::VARCHAR,
                vec![kv("max_length", "40")],
            ),
            field(KEY, proto::data_type::INT64, vec![]),
            field(
                VECTOR,
                proto::data_type::FLOAT_VECTOR,
                vec![kv("dim", dim.to_string())],
            ),
        ],
    }
}

/// The primary key of a row.
pub fn row_id(lineage: &str, key: u64) -> String {
    format!("{lineage}/{key}")
}

/// `lineage == "<lineage>"`: lineages are made of `[a-z0-9_]` only, so they need no escaping.
pub fn of_lineage(lineage: &str) -> String {
    format!("{LINEAGE} == \"{lineage}\"")
}

/// `key in [..]` of at most a few thousand keys.
pub fn keys_in(keys: &[u64]) -> String {
    let list: Vec<String> = keys.iter().map(u64::to_string).collect();
    format!("{KEY} in [{}]", list.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A refusal with `reason` reads as `expected` (a fragment of the error).
    fn check(reason: &str, expected: &str) {
        let status = proto::Status {
            error_code: 0,
            reason: reason.into(),
            code: 65535,
        };
        let got = if is_limit(reason) {
            limit_refusal(
                "satori_ab_cd",
                reason,
                &["satori_x_1".into(), "other".into(), "satori_y_2".into()],
            )
        } else {
            refusal(&status, "create a collection")
        };
        let text = got.to_string();
        assert!(text.contains(expected), "{reason}: {text}");
    }

    #[test]
    fn refusals_read_clearly() {
        // The words Zilliz Cloud and Milvus use for a full cluster or plan.
        check(
            "exceeded the limit number of collections[dbName=default][limit=5]",
            "3 collections exist, 2 of them Satori's). Free a slot",
        );
        check(
            "failed to create collection: quota exceeded",
            "raise the limit (rootCoord.maxCollectionNum",
        );
        check(
            "access denied: user has no privilege CreateCollection",
            "set MILVUS_TOKEN to credentials allowed to",
        );
        check(
            "collection name invalid",
            "Milvus refused to create a collection (collection name invalid, code 65535)",
        );
    }
}
