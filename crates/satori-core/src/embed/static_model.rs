//! Static (model2vec-format) embedding models: a text's vector is the normalised mean of the
//! table rows of its tokens. No neural network runs at indexing or query time, which is
//! what makes embedding tens of thousands of chunks per second possible on a laptop.
//!
//! A model2vec model is a directory with `model.safetensors` (tensor `embeddings`
//! [vocab, dim], optionally `weights` [vocab] and `mapping` [vocab] for vocabulary-quantised
//! models), `tokenizer.json` and `config.json`. The same files can be embedded in the binary
//! (the bundled default) or read from a directory.

use std::borrow::Cow;

use serde::Deserialize;

use super::safetensors::{Dtype, SafeTensors};
use super::wordpiece::{WordPiece, split_camel};

/// Why a model cannot be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelError(pub String);

impl std::fmt::Display for ModelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The files of a model2vec model.
#[derive(Debug, Clone, Copy)]
pub struct ModelFiles<'a> {
    pub safetensors: &'a [u8],
    pub tokenizer: &'a [u8],
    pub config: Option<&'a [u8]>,
}

#[derive(Deserialize, Default)]
struct ConfigJson {
    #[serde(default)]
    normalize: Option<bool>,
    /// Our own key: split camelCase before tokenizing (the model was distilled that way).
    #[serde(default)]
    split_camel: Option<bool>,
    #[serde(default)]
    preprocessing: Option<String>,
}

/// The embedding table, kept in the type it was stored in when that is compact.
#[derive(Debug)]
enum Table {
    F32(Vec<f32>),
    /// Integer rows (the bytes of `i8`s) times one global scale (the scale does not matter
    /// after normalisation, but keeps un-normalised models exact). Borrowed when the model
    /// is part of the binary: a process that embeds one query then reads a few rows of it
    /// instead of copying megabytes.
    I8(Cow<'static, [u8]>, f32),
}

/// A loaded static model.
#[derive(Debug)]
pub struct StaticModel {
    tokenizer: WordPiece,
    table: Table,
    dim: usize,
    rows: usize,
    /// Token id → table row (vocabulary-quantised models); identity when absent.
    mapping: Option<Vec<u32>>,
    /// Per-token weight applied before averaging; 1 when absent.
    weights: Option<Vec<f32>>,
    normalize: bool,
    split_camel: bool,
}

/// Reusable buffers of one embedding thread.
#[derive(Debug, Default)]
pub struct Scratch {
    text: String,
    ids: Vec<u32>,
}

impl StaticModel {
    /// Loads a model from its files, checking that they fit together.
    pub fn load(files: ModelFiles<'_>) -> Result<StaticModel, ModelError> {
        let tokenizer = WordPiece::from_json(files.tokenizer)
            .map_err(|e| ModelError(format!("tokenizer.json: {e}")))?;
        Self::load_with(tokenizer, files, |bytes| Cow::Owned(bytes.to_vec()))
    }

    /// [`StaticModel::load`] for files that live as long as the process (compiled in), with
    /// the tokenizer already made: an integer table is used where it is instead of being
    /// copied. `files.tokenizer` is not read.
    pub fn load_static(
        tokenizer: WordPiece,
        files: ModelFiles<'static>,
    ) -> Result<StaticModel, ModelError> {
        Self::load_with(tokenizer, files, Cow::Borrowed)
    }

    fn load_with<'a>(
        tokenizer: WordPiece,
        files: ModelFiles<'a>,
        keep: impl FnOnce(&'a [u8]) -> Cow<'static, [u8]>,
    ) -> Result<StaticModel, ModelError> {
        let config: ConfigJson = match files.config {
            Some(bytes) => serde_json::from_slice(bytes)
                .map_err(|e| ModelError(format!("config.json is not valid: {e}")))?,
            None => ConfigJson::default(),
        };
        let st = SafeTensors::parse(files.safetensors)
            .map_err(|e| ModelError(format!("model.safetensors: {e}")))?;
        let emb = st.get("embeddings").ok_or_else(|| {
            ModelError(format!(
                "model.safetensors has no 'embeddings' tensor (found: {})",
                st.names().join(", ")
            ))
        })?;
        let [rows, dim] = emb.shape[..] else {
            return Err(ModelError(format!(
                "'embeddings' must be a matrix, its shape is {:?}",
                emb.shape
            )));
        };
        if rows == 0 || dim == 0 {
            return Err(ModelError("'embeddings' is empty".into()));
        }
        let table = match emb.dtype {
            Dtype::I8 => Table::I8(keep(emb.data), 1.0),
            Dtype::F32 | Dtype::F16 | Dtype::BF16 => Table::F32(emb.to_f32()),
            Dtype::I64 => {
                return Err(ModelError(
                    "'embeddings' cannot be an integer tensor".into(),
                ));
            }
        };
        let vocab = tokenizer.vocab_size();
        let mapping = match st.get("mapping") {
            None => {
                if rows < vocab {
                    return Err(ModelError(format!(
                        "'embeddings' has {rows} rows but the tokenizer has {vocab} tokens"
                    )));
                }
                None
            }
            Some(m) => {
                let ids = m
                    .to_i64()
                    .ok_or_else(|| ModelError("'mapping' must be an integer tensor".into()))?;
                if ids.len() < vocab || ids.iter().any(|&r| r < 0 || r as usize >= rows) {
                    return Err(ModelError("'mapping' does not fit the embeddings".into()));
                }
                Some(ids.into_iter().map(|r| r as u32).collect())
            }
        };
        let weights = match st.get("weights") {
            None => None,
            Some(w) => {
                let w = w.to_f32();
                if w.len() < vocab {
                    return Err(ModelError("'weights' has fewer entries than tokens".into()));
                }
                Some(w)
            }
        };
        let split_camel = config.split_camel.unwrap_or(false)
            || config.preprocessing.as_deref() == Some("split_camel");
        Ok(StaticModel {
            tokenizer,
            table,
            dim,
            rows,
            mapping,
            weights,
            normalize: config.normalize.unwrap_or(true),
            split_camel,
        })
    }

    /// Vector length.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Rows of the embedding table.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Whether texts are camelCase-split before tokenizing.
    pub fn splits_camel(&self) -> bool {
        self.split_camel
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &WordPiece {
        &self.tokenizer
    }

    /// Token ids of `text` as this model sees it (preprocessing included, unknown tokens
    /// dropped as model2vec does).
    pub fn token_ids(&self, text: &str, scratch: &mut Scratch) -> Vec<u32> {
        self.fill_ids(text, scratch);
        scratch.ids.clone()
    }

    fn fill_ids(&self, text: &str, scratch: &mut Scratch) {
        scratch.ids.clear();
        if self.split_camel {
            split_camel(text, &mut scratch.text);
            self.tokenizer
                .tokenize_into(&scratch.text, &mut scratch.ids);
        } else {
            self.tokenizer.tokenize_into(text, &mut scratch.ids);
        }
        let unk = self.tokenizer.unk_id();
        scratch.ids.retain(|&id| id != unk);
    }

    /// Writes the embedding of `text` into `out` (length [`dim`](Self::dim)). A text
    /// without known tokens embeds as the zero vector. Returns the number of tokens used.
    /// Readies the model for embedding many texts (see [`WordPiece::prepare_bulk`]).
    pub fn prepare_bulk(&self) {
        self.tokenizer.prepare_bulk();
    }

    pub fn embed_into(&self, text: &str, scratch: &mut Scratch, out: &mut [f32]) -> usize {
        self.fill_ids(text, scratch);
        self.pool(&scratch.ids, out);
        scratch.ids.len()
    }

    /// Mean of the rows of `ids` (weighted when the model has weights), then normalised.
    pub fn pool(&self, ids: &[u32], out: &mut [f32]) {
        debug_assert_eq!(out.len(), self.dim);
        out.fill(0.0);
        let mut n = 0usize;
        for &id in ids {
            let row = match &self.mapping {
                Some(m) => m.get(id as usize).copied(),
                None => Some(id),
            };
            let Some(row) = row.filter(|&r| (r as usize) < self.rows) else {
                continue;
            };
            let w = self
                .weights
                .as_ref()
                .and_then(|w| w.get(id as usize).copied())
                .unwrap_or(1.0);
            let at = row as usize * self.dim;
            match &self.table {
                Table::F32(t) => {
                    for (o, &v) in out.iter_mut().zip(&t[at..at + self.dim]) {
                        *o += w * v;
                    }
                }
                Table::I8(t, scale) => {
                    let w = w * scale;
                    for (o, &v) in out.iter_mut().zip(&t[at..at + self.dim]) {
                        *o += w * f32::from(v as i8);
                    }
                }
            }
            n += 1;
        }
        if n == 0 {
            return;
        }
        let inv = 1.0 / n as f32;
        out.iter_mut().for_each(|o| *o *= inv);
        if self.normalize {
            normalize(out);
        }
    }
}

impl StaticModel {
    /// The table row of token `id`, if it has one.
    fn row_of(&self, id: u32) -> Option<usize> {
        let row = match &self.mapping {
            Some(m) => m.get(id as usize).copied()?,
            None => id,
        };
        ((row as usize) < self.rows).then_some(row as usize)
    }

    /// How much token `id` counts when a text is pooled (its frequency weight; 1 for a
    /// model without weights, 0 for a token without a row).
    pub fn token_weight(&self, id: u32) -> f32 {
        if self.row_of(id).is_none() {
            return 0.0;
        }
        self.weights
            .as_ref()
            .and_then(|w| w.get(id as usize).copied())
            .unwrap_or(1.0)
    }

    /// Writes the unit vector of token `id`'s row into `out` (length [`dim`](Self::dim));
    /// false, and `out` untouched, for a token without a row or with a zero row.
    pub fn token_unit(&self, id: u32, out: &mut [f32]) -> bool {
        let Some(row) = self.row_of(id) else {
            return false;
        };
        let at = row * self.dim;
        match &self.table {
            Table::F32(t) => out.copy_from_slice(&t[at..at + self.dim]),
            Table::I8(t, _) => {
                for (o, &v) in out.iter_mut().zip(&t[at..at + self.dim]) {
                    *o = f32::from(v as i8);
                }
            }
        }
        let norm = out.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm == 0.0 {
            return false;
        }
        out.iter_mut().for_each(|x| *x /= norm);
        true
    }
}

/// Scales `v` to unit length (the zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        let inv = 1.0 / norm;
        v.iter_mut().for_each(|x| *x *= inv);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn safetensors(dtype: &str, shape: [usize; 2], data: &[u8]) -> Vec<u8> {
        let header = format!(
            r#"{{"embeddings":{{"dtype":"{dtype}","shape":[{},{}],"data_offsets":[0,{}]}}}}"#,
            shape[0],
            shape[1],
            data.len()
        );
        let mut v = (header.len() as u64).to_le_bytes().to_vec();
        v.extend_from_slice(header.as_bytes());
        v.extend_from_slice(data);
        v
    }

    const TOKENIZER: &str = r###"{"normalizer":{"type":"BertNormalizer","lowercase":true},
        "pre_tokenizer":{"type":"BertPreTokenizer"},
        "model":{"type":"WordPiece","vocab":{"[UNK]":0,"user":1,"get":2,"##x":3}}}"###;

    #[test]
    fn mean_of_rows_is_normalised_and_unknowns_are_dropped() {
        let rows: [f32; 8] = [9.0, 9.0, 1.0, 0.0, 0.0, 1.0, 5.0, 5.0];
        let data: Vec<u8> = rows.iter().flat_map(|f| f.to_le_bytes()).collect();
        let st = safetensors("F32", [4, 2], &data);
        let config = br#"{"normalize": true, "split_camel": true}"#;
        let m = StaticModel::load(ModelFiles {
            safetensors: &st,
            tokenizer: TOKENIZER.as_bytes(),
            config: Some(config),
        })
        .unwrap();
        let mut s = Scratch::default();
        let mut out = [0.0f32; 2];
        // "getUser" splits into get + user; "zzz" is unknown and dropped.
        assert_eq!(m.embed_into("getUser zzz", &mut s, &mut out), 2);
        let h = std::f32::consts::FRAC_1_SQRT_2;
        assert!(
            (out[0] - h).abs() < 1e-6 && (out[1] - h).abs() < 1e-6,
            "{out:?}"
        );
        assert_eq!(m.embed_into("zzz", &mut s, &mut out), 0);
        assert_eq!(out, [0.0, 0.0]);
    }

    #[test]
    fn mismatched_files_are_explained() {
        let st = safetensors("F32", [2, 2], &[0u8; 16]);
        let err = StaticModel::load(ModelFiles {
            safetensors: &st,
            tokenizer: TOKENIZER.as_bytes(),
            config: None,
        })
        .unwrap_err();
        assert!(
            err.0.contains("2 rows but the tokenizer has 4 tokens"),
            "{err}"
        );
    }
}
