//! Every fuzz target on its seeds (`fuzz/corpus/<target>/`), on every input a fuzzing run
//! found to crash it (`fuzz/regressions/<target>/`), and on seeded mutations of the seeds, on
//! stable Rust in every CI run. A panicking input is written to the system's temporary folder
//! and named in the failure, ready to become a regression file.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

/// Mutated inputs per seed (the coverage-guided search is `scripts/fuzz.sh`'s job).
const MUTATIONS: usize = 150;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

fn inputs(folder: &Path) -> Vec<(String, Vec<u8>)> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    let mut out: Vec<(String, Vec<u8>)> = entries
        .flatten()
        .filter(|e| e.path().is_file())
        .map(|e| {
            (
                e.path().display().to_string(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

/// xorshift64*: the mutations are the same in every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Bytes that matter to the parsers: JSON structure, escapes, separators of the targets,
/// long runs and invalid UTF-8.
const TOKENS: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b"\\",
    b"\\u0000",
    b":",
    b",",
    b"\n",
    b"\r\n",
    b"\xFF",
    b"\xEF\xBB\xBF",
    b"\xC3",
    b"null",
    b"true",
    b"-1",
    b"1e999",
    b"9223372036854775808",
    b"0.5",
    b"\"id\":",
    b"\"method\":\"tools/call\"",
    b"lang:",
    b"path:",
    b"-path:",
    b"must:",
    b"exclude:",
    b"--",
    b"=",
    b"Origin: http://",
    b"Authorization: Bearer ",
    b"[::1]",
    b"{\"type\":\"array\",\"items\":{}}",
    b"\"properties\":{",
    b"\"enum\":[]",
];

fn mutate(rng: &mut Rng, seed: &[u8], other: &[u8]) -> Vec<u8> {
    let mut v = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(v.len() + 1);
        match rng.below(6) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 => {
                let t = TOKENS[rng.below(TOKENS.len())];
                v.splice(at..at, t.iter().copied());
            }
            2 if !v.is_empty() => {
                let end = (at + 1 + rng.below(16)).min(v.len());
                v.drain(at.min(end)..end);
            }
            3 if !other.is_empty() => {
                let from = rng.below(other.len());
                let to = (from + 1 + rng.below(64)).min(other.len());
                v.splice(at..at, other[from..to].iter().copied());
            }
            4 => {
                let byte = [b'a', b'0', b'{', b'[', b' '][rng.below(5)];
                let run = std::iter::repeat_n(byte, 1 + rng.below(300));
                v.splice(at..at, run);
            }
            _ => v.truncate(at),
        }
    }
    v
}

/// Runs `target` on `data`; a panic fails with the input saved where it can be picked up.
fn check(name: &str, target: fn(&[u8]), what: &str, data: &[u8]) {
    if catch_unwind(AssertUnwindSafe(|| target(data))).is_err() {
        let saved = std::env::temp_dir().join(format!(
            "satori-fuzz-{name}-{:016x}",
            data.iter()
                .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ *b as u64)
                    .wrapping_mul(0x100_0000_01b3))
        ));
        std::fs::write(&saved, data).unwrap();
        panic!(
            "target {name} panicked on {what}; the input is in {}",
            saved.display()
        );
    }
}

#[test]
fn every_target_survives_its_seeds_regressions_and_mutations() {
    for &(name, target) in satori_fuzz::TARGETS {
        let seeds = inputs(&fuzz_dir().join("corpus").join(name));
        assert!(!seeds.is_empty(), "fuzz/corpus/{name} has no seeds");
        for (path, data) in &seeds {
            check(name, target, path, data);
        }
        for (path, data) in inputs(&fuzz_dir().join("regressions").join(name)) {
            check(name, target, &path, &data);
        }
        let mut rng = Rng(0x5EED ^ name.len() as u64);
        for (i, (path, seed)) in seeds.iter().enumerate() {
            let other = &seeds[(i + 1) % seeds.len()].1;
            for n in 0..MUTATIONS {
                let data = mutate(&mut rng, seed, other);
                check(name, target, &format!("mutation {n} of {path}"), &data);
            }
        }
    }
}

/// The libFuzzer wrappers and the targets list stay in step: one wrapper per target, each
/// calling the function of its name.
#[test]
fn every_target_has_a_libfuzzer_wrapper() {
    let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml")).unwrap();
    for &(name, _) in satori_fuzz::TARGETS {
        let wrapper =
            std::fs::read_to_string(fuzz_dir().join("fuzz_targets").join(format!("{name}.rs")))
                .unwrap_or_else(|e| panic!("fuzz/fuzz_targets/{name}.rs: {e}"));
        assert!(
            wrapper.contains(&format!("satori_fuzz::{name}(data)")),
            "{wrapper}"
        );
        assert!(
            manifest.contains(&format!("name = \"{name}\"")),
            "fuzz/Cargo.toml lacks [[bin]] {name}"
        );
    }
}
