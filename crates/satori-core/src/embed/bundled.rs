//! The static model compiled into Satori: distilled from all-MiniLM-L6-v2 (Apache-2.0; see
//! `assets/model/LICENSE` and `NOTICE`) and fine-tuned on doc-comment/code pairs by
//! `scripts/distill/distill.py`. Being part of the binary, it needs no download and no file
//! next to the executable.
//!
//! Its identity is a constant so that the fingerprint of every index can be computed without
//! hashing 8 MB at each start; `tests::identity_matches_the_bytes` fails when the files and
//! the constant disagree.
//!
//! The binary carries the tokenizer as `vocab.txt` (one piece per line, in id order) with a
//! hash table of its pieces laid out by the build script, rather than `tokenizer.json`:
//! parsing half a megabyte of JSON, or even building maps of its 30,000 pieces, is work
//! every `satori-cli` search would pay before embedding its query.
//! `tests::vocab_matches_the_tokenizer` fails when the two files disagree.

use super::wordpiece::{PieceTable, WordPiece};
use super::{ModelError, ModelFiles, ModelInfo, StaticModel};

const SAFETENSORS: &[u8] = include_bytes!("../../assets/model/model.safetensors");
/// The tokenizer's vocabulary, laid out by the build script (`build.rs`).
const VOCAB: PieceTable = PieceTable {
    text: include_str!("../../assets/model/vocab.txt"),
    offsets: include_bytes!(concat!(env!("OUT_DIR"), "/vocab_offsets.bin")),
    slots: include_bytes!(concat!(env!("OUT_DIR"), "/vocab_slots.bin")),
};
const CONFIG: &[u8] = include_bytes!("../../assets/model/config.json");

/// Readable id of the bundled model.
pub const ID: &str = "satori-static-minilm-l6";
/// `files_sha256` of the bundled files.
pub const SHA256: &str = "691abdd76aaec3fd8f50e1e7c0c1f387fc0048d4eba5b88574419afcd039015e";
/// Its dimension.
pub const DIM: usize = 256;

/// The bundled model's identity.
pub fn info() -> ModelInfo {
    ModelInfo {
        provider: "embedded".into(),
        id: ID.into(),
        sha256: SHA256.into(),
        dim: DIM,
    }
}

/// Loads the bundled model.
pub fn load() -> Result<StaticModel, ModelError> {
    let tokenizer =
        WordPiece::bert_uncased(VOCAB).map_err(|e| ModelError(format!("bundled model: {e}")))?;
    StaticModel::load_static(
        tokenizer,
        ModelFiles {
            safetensors: SAFETENSORS,
            tokenizer: &[],
            config: Some(CONFIG),
        },
    )
    .map_err(|e| ModelError(format!("bundled model: {e}")))
}

/// The bundled model as an [`Embedder`](super::Embedder), with its identity.
pub fn embedder() -> Result<super::LocalEmbedder, ModelError> {
    Ok(super::LocalEmbedder::new(load()?, info()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokenizer_json() -> Vec<u8> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/model/tokenizer.json");
        std::fs::read(path).unwrap()
    }

    #[test]
    fn identity_matches_the_bytes() {
        assert_eq!(
            super::super::files_sha256(SAFETENSORS, &tokenizer_json(), CONFIG),
            SHA256
        );
        let m = load().unwrap();
        assert_eq!(m.dim(), DIM);
    }

    #[test]
    fn bulk_lookups_tokenize_as_the_table_does() {
        let m = load().unwrap();
        let text = "fn parseHttpHeader(value: &str) -> Result<Header, ParseError> { déjà vu 中文 }";
        let mut scratch = crate::embed::Scratch::default();
        let from_table = m.token_ids(text, &mut scratch);
        m.prepare_bulk();
        assert_eq!(m.token_ids(text, &mut scratch), from_table);
        assert!(from_table.len() > 10, "{from_table:?}");
    }

    #[test]
    fn vocab_matches_the_tokenizer() {
        let from_json = WordPiece::from_json(&tokenizer_json()).unwrap();
        assert_eq!(WordPiece::bert_uncased(VOCAB).unwrap(), from_json);
    }
}
