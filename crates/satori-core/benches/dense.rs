//! Scan speed of the dense matrix: `top_k` (sketch prefilter + int8 rescoring) and the exact
//! scan over 100k rows of 256 dimensions, against the baseline of reading the matrix bytes
//! once (a sum), measured in the same run; plus the prefilter's recall of the exact top 100.
//!
//! `cargo bench -p satori-core --bench dense` (plain `harness = false` binary: no framework,
//! so it builds with the workspace's existing dependencies).
//!
//! Random rows are the prefilter's worst case (no structure for the sketch to find). With
//! `SATORI_BENCH_VECTORS=<generation>/vectors` the bench also measures, on a real index, the
//! prefilter's recall of the exact top 50 and top 100 (a search's first candidate pool) and
//! the time of a top 100, for the matrix as it is and as this build writes it (see
//! [`real`]).

use std::io::Write;
use std::time::Instant;

use satori_core::dense::{DenseIndex, DenseWriter, QueryVector};
use satori_core::embed::{Scratch, bundled};

const QUERIES: &[&str] = &[
    "accept incoming tcp connections in a loop",
    "merge segments in the background when the index grows",
    "parse a json-rpc message from a line of stdin",
    "sleep until a deadline and wake the task",
    "tokenize text into lowercase terms",
    "graceful shutdown of a child process",
    "retry a request with exponential backoff",
    "serialize a struct to json",
    "spawn_blocking",
    "read the whole file into a buffer",
];

/// The real matrix at `dir` as it is and rewritten by this build's writer (so a matrix of an
/// older sketch is measured beside the current one, in the same run): for each, the mean
/// recall of the prefiltered top 50 and top 100 against the exact ones, and the median time
/// of a top 100 (the two timed query by query in turn; their ratio is printed too). Queries are embedded by the bundled model: the lines of
/// `SATORI_BENCH_QUERIES` if set, else [`QUERIES`].
fn real(dir: &std::path::Path) -> String {
    let model = bundled::load().unwrap();
    let texts: Vec<String> = match std::env::var_os("SATORI_BENCH_QUERIES") {
        Some(f) => std::fs::read_to_string(f)
            .unwrap()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_owned)
            .collect(),
        None => QUERIES.iter().map(|q| (*q).to_owned()).collect(),
    };
    let (mut scratch, mut v) = (Scratch::default(), vec![0f32; model.dim()]);
    let queries: Vec<QueryVector> = texts
        .iter()
        .map(|q| {
            model.embed_into(q, &mut scratch, &mut v);
            QueryVector::new(&v)
        })
        .collect();
    let as_is = DenseIndex::open(dir).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut w = DenseWriter::create(tmp.path(), as_is.dim()).unwrap();
    for row in 0..as_is.len() {
        let (scale, values) = as_is.quantized(row).unwrap();
        w.push_quantized(scale, values);
    }
    w.finish().unwrap();
    let current = DenseIndex::open(tmp.path()).unwrap();
    let recall = |index: &DenseIndex, k: usize| {
        let sum: f64 = queries
            .iter()
            .map(|q| {
                let want = index.exact_top_k(q, k);
                let got = index.top_k(q, k);
                got.iter().filter(|n| want.contains(n)).count() as f64 / want.len().max(1) as f64
            })
            .sum();
        sum / queries.len().max(1) as f64
    };
    // The two matrices answer each query in turn, so that both see the same machine noise.
    let (mut ms_as_is, mut ms_current) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        for q in &queries {
            for (index, ms) in [(&as_is, &mut ms_as_is), (&current, &mut ms_current)] {
                let t = Instant::now();
                std::hint::black_box(index.top_k(q, 100));
                ms.push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
    let median = |ms: &mut Vec<f64>| {
        ms.sort_by(f64::total_cmp);
        ms[ms.len() / 2]
    };
    let (t_as_is, t_current) = (median(&mut ms_as_is), median(&mut ms_current));
    let figures = |index: &DenseIndex, ms: f64| {
        format!(
            "{{\"recallAt50\": {:.4}, \"recallAt100\": {:.4}, \"topK100Ms\": {ms:.3}}}",
            recall(index, 50),
            recall(index, 100),
        )
    };
    format!(
        ", \"realRows\": {}, \"realQueries\": {}, \"realAsIs\": {}, \"realRewritten\": {}, \"realTopK100Ratio\": {:.2}",
        as_is.len(),
        queries.len(),
        figures(&as_is, t_as_is),
        figures(&current, t_current),
        t_current / t_as_is
    )
}

#[allow(clippy::disallowed_methods)] // A benchmark's figures are its output.
fn main() {
    let (rows, dim) = (100_000usize, 256usize);
    let dir = tempfile::tempdir().unwrap();
    let mut w = DenseWriter::create(dir.path(), dim).unwrap();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    let mut v = vec![0f32; dim];
    for _ in 0..rows {
        v.iter_mut().for_each(|x| *x = next());
        w.push(&v);
    }
    w.finish().unwrap();
    let index = DenseIndex::open(dir.path()).unwrap();
    v.iter_mut().for_each(|x| *x = next());
    let q = QueryVector::new(&v);
    let bytes = std::fs::read(dir.path().join(satori_core::dense::MATRIX_FILE)).unwrap_or_default();

    let reps = 50;
    let time = |f: &mut dyn FnMut() -> u64| {
        let mut samples: Vec<f64> = (0..reps)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(f());
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        samples.sort_by(f64::total_cmp);
        samples[reps / 2]
    };
    let read = time(&mut || bytes.iter().map(|&b| u64::from(b)).sum());
    let scan = time(&mut || index.top_k(&q, 100).len() as u64);
    let scan300 = time(&mut || index.top_k(&q, 300).len() as u64);
    let exact = time(&mut || index.exact_top_k(&q, 100).len() as u64);
    let want = index.exact_top_k(&q, 100);
    let got = index.top_k(&q, 100);
    let recall = got.iter().filter(|n| want.contains(n)).count() as f64 / want.len() as f64;
    let real = std::env::var_os("SATORI_BENCH_VECTORS")
        .map_or(String::new(), |d| real(std::path::Path::new(&d)));
    // The figures are this binary's output: JSON on stdout.
    writeln!(
        std::io::stdout().lock(),
        "{{\"rows\": {rows}, \"dim\": {dim}, \"topKMs\": {scan:.3}, \"topK300Ms\": {scan300:.3}, \"exactMs\": {exact:.3}, \"readBytesMs\": {read:.3}, \"topKRatioToRead\": {:.2}, \"exactRatioToRead\": {:.2}, \"recallAt100\": {recall:.3}{real}}}",
        scan / read,
        exact / read
    )
    .unwrap();
}
