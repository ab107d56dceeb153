//! Parity of Satori's embedding path with the reference it was distilled against.
//!
//! The fixtures are written by `scripts/distill/distill.py` from the reference `tokenizers`
//! library and a numpy implementation of the pooling: token ids of 430 texts (code lines of
//! a corpus plus Unicode and camelCase edge cases) and the vectors of the bundled model for
//! a few texts. If tokenisation drifts by one id, or pooling by more than rounding, the
//! index and the queries would silently live in a different space than the model's.

use satori_core::embed::{Scratch, bundled, split_camel};
use serde_json::Value;

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/embed/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn wordpiece_matches_the_reference_tokenizer() {
    let model = bundled::load().unwrap();
    let mut checked = 0;
    for line in fixture("wordpiece_cases.jsonl").lines() {
        let case: Value = serde_json::from_str(line).unwrap();
        let text = case["text"].as_str().unwrap();
        let want: Vec<u32> = case["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as u32)
            .collect();
        assert_eq!(model.tokenizer().tokenize(text), want, "ids of {text:?}");
        let mut split = String::new();
        split_camel(text, &mut split);
        assert_eq!(
            split,
            case["camel"].as_str().unwrap(),
            "camel split of {text:?}"
        );
        checked += 1;
    }
    assert!(checked >= 400, "only {checked} cases");
}

#[test]
fn bundled_vectors_match_the_reference_pooling() {
    let model = bundled::load().unwrap();
    let golden: Value = serde_json::from_str(&fixture("static_golden.json")).unwrap();
    let mut scratch = Scratch::default();
    let mut out = vec![0f32; model.dim()];
    for case in golden["cases"].as_array().unwrap() {
        let text = case["text"].as_str().unwrap();
        let tokens = model.embed_into(text, &mut scratch, &mut out);
        assert_eq!(
            tokens as u64,
            case["tokens"].as_u64().unwrap(),
            "tokens of {text:?}"
        );
        let want = case["vector"].as_array().unwrap();
        assert_eq!(want.len(), out.len());
        for (i, (w, got)) in want.iter().zip(&out).enumerate() {
            let w = w.as_f64().unwrap() as f32;
            assert!((w - got).abs() < 2e-5, "{text:?} dim {i}: {got} vs {w}");
        }
    }
}

#[test]
fn related_code_is_closer_than_unrelated_code() {
    // A sanity check of the distilled space itself, not of the arithmetic.
    let model = bundled::load().unwrap();
    let mut scratch = Scratch::default();
    let embed = |text: &str, scratch: &mut Scratch| {
        let mut v = vec![0f32; model.dim()];
        model.embed_into(text, scratch, &mut v);
        v
    };
    let cos = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    let query = embed("retry the request with exponential backoff", &mut scratch);
    let retry = embed(
        "fn retry_with_backoff(attempt: u32) -> Duration { let delay = base * 2u32.pow(attempt); sleep(delay) }",
        &mut scratch,
    );
    let colour = embed(
        "fn parse_color(hex: &str) -> Rgb { let r = u8::from_str_radix(&hex[1..3], 16) }",
        &mut scratch,
    );
    assert!(cos(&query, &retry) > cos(&query, &colour) + 0.05);
}
