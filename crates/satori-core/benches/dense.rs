//! Scan speed of the dense matrix: `top_k` (sketch prefilter + int8 rescoring) and the exact
//! scan over 100k rows of 256 dimensions, against the baseline of reading the matrix bytes
//! once (a sum), measured in the same run; plus the prefilter's recall of the exact top 2000.
//!
//! `cargo bench -p satori-core --bench dense` (plain `harness = false` binary: no framework,
//! so it builds with the workspace's existing dependencies).

use std::io::Write;
use std::time::Instant;

use satori_core::dense::{DenseIndex, DenseWriter, Quantized};

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
    let q = Quantized::new(&v);
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
    let scan = time(&mut || index.top_k(&q, 2000).len() as u64);
    let scan300 = time(&mut || index.top_k(&q, 300).len() as u64);
    let exact = time(&mut || index.exact_top_k(&q, 2000).len() as u64);
    let want = index.exact_top_k(&q, 2000);
    let got = index.top_k(&q, 2000);
    let recall = got.iter().filter(|n| want.contains(n)).count() as f64 / want.len() as f64;
    // The figures are this binary's output: JSON on stdout.
    writeln!(
        std::io::stdout().lock(),
        "{{\"rows\": {rows}, \"dim\": {dim}, \"topKMs\": {scan:.3}, \"topK300Ms\": {scan300:.3}, \"exactMs\": {exact:.3}, \"readBytesMs\": {read:.3}, \"topKRatioToRead\": {:.2}, \"exactRatioToRead\": {:.2}, \"recallAt2000\": {recall:.3}}}",
        scan / read,
        exact / read
    )
    .unwrap();
}
