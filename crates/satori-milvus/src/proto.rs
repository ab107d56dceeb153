//! The messages of Milvus's gRPC API (`milvus.proto.milvus.MilvusService`) that the backend
//! sends and reads, declared by hand with their field numbers from Milvus's published
//! `.proto` files (`common.proto`, `schema.proto`, `milvus.proto`). Fields this crate never
//! sets or reads are left out: protobuf skips unknown fields on reading, and an unset field
//! is its default on the wire.

use prost::Message;

/// `common.Status`: `code` 0 is success; `error_code` is the older form of the same.
#[derive(Clone, PartialEq, Message)]
pub struct Status {
    #[prost(int32, tag = "1")]
    pub error_code: i32,
    #[prost(string, tag = "2")]
    pub reason: String,
    #[prost(int32, tag = "3")]
    pub code: i32,
}

impl Status {
    pub fn ok(&self) -> bool {
        self.code == 0 && self.error_code == 0
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct KeyValuePair {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

pub fn kv(key: &str, value: impl Into<String>) -> KeyValuePair {
    KeyValuePair {
        key: key.into(),
        value: value.into(),
    }
}

/// `schema.DataType` values used here.
pub mod data_type {
    pub const INT64: i32 = 5;
    pub const VARCHAR: i32 = 21;
    pub const FLOAT_VECTOR: i32 = 101;
}

/// `common.PlaceholderType.FloatVector`.
pub const PLACEHOLDER_FLOAT_VECTOR: i32 = 101;
/// `common.DslType.BoolExprV1`.
pub const DSL_BOOL_EXPR: i32 = 1;
/// `common.ConsistencyLevel.Strong`.
pub const CONSISTENCY_STRONG: i32 = 0;
/// `common.ConsistencyLevel.Bounded`.
pub const CONSISTENCY_BOUNDED: i32 = 2;
/// `common.ConsistencyLevel.Customized`: the request's `guarantee_timestamp` says what it
/// must see.
pub const CONSISTENCY_CUSTOMIZED: i32 = 4;
/// `common.LoadState.Loaded`.
pub const LOAD_STATE_LOADED: i32 = 3;

#[derive(Clone, PartialEq, Message)]
pub struct FieldSchema {
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(bool, tag = "3")]
    pub is_primary_key: bool,
    #[prost(string, tag = "4")]
    pub description: String,
    #[prost(int32, tag = "5")]
    pub data_type: i32,
    #[prost(message, repeated, tag = "6")]
    pub type_params: Vec<KeyValuePair>,
    #[prost(bool, tag = "8")]
    pub auto_id: bool,
}

impl FieldSchema {
    /// A field of a collection we create (`primary`: its primary key; never auto-id).
    pub fn new(name: &str, data_type: i32, params: Vec<KeyValuePair>, primary: bool) -> Self {
        FieldSchema {
            name: name.into(),
            is_primary_key: primary,
            description: String::new(),
            data_type,
            type_params: params,
            auto_id: false,
        }
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct CollectionSchema {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub description: String,
    #[prost(message, repeated, tag = "4")]
    pub fields: Vec<FieldSchema>,
}

#[derive(Clone, PartialEq, Message)]
pub struct LongArray {
    #[prost(int64, repeated, tag = "1")]
    pub data: Vec<i64>,
}

#[derive(Clone, PartialEq, Message)]
pub struct FloatArray {
    #[prost(float, repeated, tag = "1")]
    pub data: Vec<f32>,
}

#[derive(Clone, PartialEq, Message)]
pub struct StringArray {
    #[prost(string, repeated, tag = "1")]
    pub data: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum ScalarData {
    #[prost(message, tag = "3")]
    Long(LongArray),
    #[prost(message, tag = "6")]
    String(StringArray),
}

#[derive(Clone, PartialEq, Message)]
pub struct ScalarField {
    #[prost(oneof = "ScalarData", tags = "3, 6")]
    pub data: Option<ScalarData>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum VectorData {
    #[prost(message, tag = "2")]
    Float(FloatArray),
}

#[derive(Clone, PartialEq, Message)]
pub struct VectorField {
    #[prost(int64, tag = "1")]
    pub dim: i64,
    #[prost(oneof = "VectorData", tags = "2")]
    pub data: Option<VectorData>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Field {
    #[prost(message, tag = "3")]
    Scalars(ScalarField),
    #[prost(message, tag = "4")]
    Vectors(VectorField),
}

#[derive(Clone, PartialEq, Message)]
pub struct FieldData {
    #[prost(int32, tag = "1")]
    pub r#type: i32,
    #[prost(string, tag = "2")]
    pub field_name: String,
    #[prost(oneof = "Field", tags = "3, 4")]
    pub field: Option<Field>,
}

impl FieldData {
    pub fn longs(name: &str, data: Vec<i64>) -> FieldData {
        FieldData {
            r#type: data_type::INT64,
            field_name: name.into(),
            field: Some(Field::Scalars(ScalarField {
                data: Some(ScalarData::Long(LongArray { data })),
            })),
        }
    }

    pub fn strings(name: &str, data: Vec<String>) -> FieldData {
        FieldData {
            r#type: data_type::VARCHAR,
            field_name: name.into(),
            field: Some(Field::Scalars(ScalarField {
                data: Some(ScalarData::String(StringArray { data })),
            })),
        }
    }

    pub fn floats(name: &str, dim: usize, data: Vec<f32>) -> FieldData {
        FieldData {
            r#type: data_type::FLOAT_VECTOR,
            field_name: name.into(),
            field: Some(Field::Vectors(VectorField {
                dim: dim as i64,
                data: Some(VectorData::Float(FloatArray { data })),
            })),
        }
    }

    /// The values of an Int64 field.
    pub fn as_longs(&self) -> Option<&[i64]> {
        match &self.field {
            Some(Field::Scalars(ScalarField {
                data: Some(ScalarData::Long(a)),
            })) => Some(&a.data),
            _ => None,
        }
    }

    /// The values of a VarChar field.
    pub fn as_strings(&self) -> Option<&[String]> {
        match &self.field {
            Some(Field::Scalars(ScalarField {
                data: Some(ScalarData::String(a)),
            })) => Some(&a.data),
            _ => None,
        }
    }

    /// The values of a float vector field, row after row.
    pub fn as_floats(&self) -> Option<&[f32]> {
        match &self.field {
            Some(Field::Vectors(VectorField {
                data: Some(VectorData::Float(a)),
                ..
            })) => Some(&a.data),
            _ => None,
        }
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct PlaceholderValue {
    #[prost(string, tag = "1")]
    pub tag: String,
    #[prost(int32, tag = "2")]
    pub r#type: i32,
    #[prost(bytes = "vec", repeated, tag = "3")]
    pub values: Vec<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
pub struct PlaceholderGroup {
    #[prost(message, repeated, tag = "1")]
    pub placeholders: Vec<PlaceholderValue>,
}

// Requests and responses of MilvusService.

#[derive(Clone, PartialEq, Message)]
pub struct CreateCollectionRequest {
    #[prost(string, tag = "3")]
    pub collection_name: String,
    #[prost(bytes = "vec", tag = "4")]
    pub schema: Vec<u8>,
    #[prost(int32, tag = "5")]
    pub shards_num: i32,
    #[prost(int32, tag = "6")]
    pub consistency_level: i32,
}

#[derive(Clone, PartialEq, Message)]
pub struct CollectionName {
    #[prost(string, tag = "3")]
    pub collection_name: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct BoolResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(bool, tag = "2")]
    pub value: bool,
}

#[derive(Clone, PartialEq, Message)]
pub struct DescribeCollectionResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(message, optional, tag = "2")]
    pub schema: Option<CollectionSchema>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ShowCollectionsRequest {}

#[derive(Clone, PartialEq, Message)]
pub struct ShowCollectionsResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(string, repeated, tag = "2")]
    pub collection_names: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct CreateIndexRequest {
    #[prost(string, tag = "3")]
    pub collection_name: String,
    #[prost(string, tag = "4")]
    pub field_name: String,
    #[prost(message, repeated, tag = "5")]
    pub extra_params: Vec<KeyValuePair>,
    #[prost(string, tag = "6")]
    pub index_name: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct GetLoadStateRequest {
    #[prost(string, tag = "2")]
    pub collection_name: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct GetLoadStateResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(int32, tag = "2")]
    pub state: i32,
}

#[derive(Clone, PartialEq, Message)]
pub struct InsertRequest {
    #[prost(string, tag = "3")]
    pub collection_name: String,
    #[prost(message, repeated, tag = "5")]
    pub fields_data: Vec<FieldData>,
    #[prost(uint32, tag = "7")]
    pub num_rows: u32,
}

#[derive(Clone, PartialEq, Message)]
pub struct MutationResult {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(int64, tag = "6")]
    pub insert_cnt: i64,
    #[prost(int64, tag = "7")]
    pub delete_cnt: i64,
    /// The write's timestamp: a search guaranteed at it sees the write.
    #[prost(uint64, tag = "9")]
    pub timestamp: u64,
}

#[derive(Clone, PartialEq, Message)]
pub struct DeleteRequest {
    #[prost(string, tag = "3")]
    pub collection_name: String,
    #[prost(string, tag = "5")]
    pub expr: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct SearchRequest {
    #[prost(string, tag = "3")]
    pub collection_name: String,
    #[prost(string, tag = "5")]
    pub dsl: String,
    #[prost(bytes = "vec", tag = "6")]
    pub placeholder_group: Vec<u8>,
    #[prost(int32, tag = "7")]
    pub dsl_type: i32,
    #[prost(string, repeated, tag = "8")]
    pub output_fields: Vec<String>,
    #[prost(message, repeated, tag = "9")]
    pub search_params: Vec<KeyValuePair>,
    #[prost(uint64, tag = "11")]
    pub guarantee_timestamp: u64,
    #[prost(int64, tag = "12")]
    pub nq: i64,
    #[prost(int32, tag = "14")]
    pub consistency_level: i32,
}

#[derive(Clone, PartialEq, Message)]
pub struct SearchResultData {
    #[prost(int64, tag = "1")]
    pub num_queries: i64,
    #[prost(message, repeated, tag = "3")]
    pub fields_data: Vec<FieldData>,
    #[prost(float, repeated, tag = "4")]
    pub scores: Vec<f32>,
    #[prost(int64, repeated, tag = "6")]
    pub topks: Vec<i64>,
}

#[derive(Clone, PartialEq, Message)]
pub struct SearchResults {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(message, optional, tag = "2")]
    pub results: Option<SearchResultData>,
}

#[derive(Clone, PartialEq, Message)]
pub struct QueryRequest {
    #[prost(string, tag = "3")]
    pub collection_name: String,
    #[prost(string, tag = "4")]
    pub expr: String,
    #[prost(string, repeated, tag = "5")]
    pub output_fields: Vec<String>,
    #[prost(message, repeated, tag = "9")]
    pub query_params: Vec<KeyValuePair>,
    #[prost(int32, tag = "11")]
    pub consistency_level: i32,
}

#[derive(Clone, PartialEq, Message)]
pub struct QueryResults {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(message, repeated, tag = "2")]
    pub fields_data: Vec<FieldData>,
}

/// What every response carries: its status.
pub trait HasStatus {
    fn status(&self) -> Option<&Status>;
}

macro_rules! has_status {
    ($($t:ty),*) => {$(
        impl HasStatus for $t {
            fn status(&self) -> Option<&Status> {
                self.status.as_ref()
            }
        }
    )*};
}

has_status!(
    BoolResponse,
    DescribeCollectionResponse,
    ShowCollectionsResponse,
    GetLoadStateResponse,
    MutationResult,
    SearchResults,
    QueryResults
);

/// A bare `common.Status` answer (CreateCollection, CreateIndex, LoadCollection, ...).
impl HasStatus for Status {
    fn status(&self) -> Option<&Status> {
        Some(self)
    }
}
