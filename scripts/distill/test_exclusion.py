#!/usr/bin/env python3
"""Tests of `exclusion.py`: no listed project's files reach the training data.

Each case plants something in a package tree (a listed project under another name, in a
vendored directory, behind a repository URL, as a copy of a benchmark text) and runs the real
readers of the training inputs over it: the frequency corpus (`Exclusions.admit`, as
`distill.py` reads it), the tuning pairs (`pairs.collect`) and the mined pairs
(`mine.mine_package`). A planted text that comes out of any of them fails the test. The
committed corpora and manifests are checked against today's list too.

  python3 scripts/distill/test_exclusion.py      # standard library only
"""
import io
import json
import os
import sys
import tarfile
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import exclusion  # noqa: E402
import pairs  # noqa: E402
import mine  # noqa: E402

# A benchmark text: twelve code lines no other project writes.
BENCH = "\n".join(f"pub fn planted_benchmark_step_{i}(value: u64) -> u64 {{ value.rotate_left({i}) ^ {i} }}"
                  for i in range(12)) + "\n"
OWN = "/// Parses the package's own header line.\npub fn own_header(line: &str) -> usize {\n    line.len()\n}\n"


def planted_exclusions():
    fp = exclusion.Fingerprints()
    fp.add_text("planted benchmark", BENCH)
    return exclusion.Exclusions(exclusion.Exclusions.load(fingerprint=False).projects, fp)


def write_tree(root, files):
    for rel, body in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(body)


def through_every_reader(ex, files):
    """What each training reader takes from a package of `files`: the frequency texts, the
    tuning pairs and the mined pairs, all as one string, and the ledgers."""
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "pkg-1.0")
        write_tree(root, files)
        freq = exclusion.Ledger("frequency", ex)
        texts = [t for _, _, t in ex.admit([({"name": "pkg"}, root)], lambda r: r.endswith(".rs"), freq)]
        tune = exclusion.Ledger("tune", ex)
        tuned = pairs.collect([("pkg-1.0", root, "pkg")], ex, tune)
        archive = os.path.join(tmp, "pkg.tar.gz")
        with tarfile.open(archive, "w:gz") as t:
            for rel, body in files.items():
                data = body.encode()
                info = tarfile.TarInfo("pkg-1.0/" + rel)
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
        mined_ledger = exclusion.Ledger("mine", ex)
        mined = mine.mine_package({"name": "pkg"}, archive, ex, mined_ledger)
    out = "\n".join(texts) + "\n".join(q + c for q, c in tuned) + "\n".join(
        p["description"] + p["code"] for p in mined)
    return out, (freq, tune, mined_ledger)


class Leakage(unittest.TestCase):
    def check(self, files, planted, why, whole_package=False):
        """The planted marker reaches no reader, the package's own file reaches them all (none
        when the whole package is refused), and every ledger says why."""
        ex = planted_exclusions()
        out, ledgers = through_every_reader(ex, files)
        self.assertNotIn(planted, out, "a planted file reached the training data")
        if not whole_package:
            self.assertIn("own_header", out, "the package's own file was left out too")
        for ledger in ledgers:
            reasons = [r["why"] for r in ledger.refused] if whole_package else [
                s["why"] for s in ledger.skipped]
            self.assertTrue(any(why in r for r in reasons), f"{ledger.corpus}: {reasons}")

    def test_a_copy_of_a_benchmark_text(self):
        edited = "// Copied here, lightly edited.\n" + BENCH.replace("step_3", "step_three")
        self.check({"src/own.rs": OWN, "src/util/helpers.rs": edited}, "planted_benchmark", "copy of")

    def test_a_vendored_directory(self):
        self.check({"src/own.rs": OWN, "third_party/thing/lib.rs": "pub fn vendored_marker() {}\n" * 3},
                   "vendored_marker", "vendored directory")

    def test_a_directory_named_after_a_listed_project(self):
        self.check({"src/own.rs": OWN, "src/tokio/rt.rs": "/// Runs it.\npub fn tokio_marker() {\n}\n"},
                   "tokio_marker", "tokio")

    def test_a_header_naming_a_listed_repository(self):
        self.check({"src/own.rs": OWN,
                    "src/json.rs": "// Adapted from https://github.com/nlohmann/json (MIT).\n"
                                   "/// Reads it.\npub fn header_marker() {\n}\n"},
                   "header_marker", "nlohmann/json")

    def test_metadata_naming_a_listed_repository(self):
        self.check({"Cargo.toml": '[package]\nname = "renamed"\nrepository = "https://github.com/serde-rs/serde"\n',
                    "src/own.rs": OWN.replace("own_header", "metadata_marker")},
                   "metadata_marker", "serde-rs/serde", whole_package=True)


class Names(unittest.TestCase):
    CASES = [
        # every packaging of a listed project
        ("python3-requests", "requests"), ("libgoogle-gson-java", "gson"), ("libuv1", "libuv"),
        ("libjackson2-databind-java", "jackson-databind"), ("golang-github-spf13-cobra-dev", "cobra"),
        ("@trpc/server", "trpc"), ("libcurl4", "curl"), ("librust-serde-dev", "serde"),
        ("serde_json", "serde"), ("tokio-util", "tokio"), ("node-axios", "axios"),
        ("ruby-rack", "rack"), ("libghc-aeson-dev", "aeson"), ("elixir-plug", "plug"),
        ("libcommons-lang3-java", "commons-lang"), ("nlohmann-json3-dev", "nlohmann-json"),
        ("golang-github-gin-gonic-gin-dev", "gin"), ("php-guzzlehttp-guzzle", "guzzle"),
        ("lua-telescope", "telescope.nvim"),
        # the dev and blind suites' packages
        ("ws", "ws"), ("python3-marshmallow", "marshmallow"), ("jansson", "jansson"),
        # different projects that share a word or a prefix
        ("commons-io", None), ("ruby-concurrent", None), ("plugin", None), ("json-c", None),
        ("golang-github-prometheus-client-golang-dev", None), ("golang-gopkg-yaml.v3-dev", None),
        ("numpy", None), ("openjdk-17", None), ("golang-1.19", None),
    ]

    def test_names(self):
        ex = exclusion.Exclusions.load(fingerprint=False)
        for name, want in self.CASES:
            hit = ex.name(name)
            with self.subTest(name=name):
                self.assertEqual(hit.name if hit else None, want)

    def test_every_listed_project_is_caught_by_its_own_names(self):
        ex = exclusion.Exclusions.load(fingerprint=False)
        for name, upstream in exclusion._read_tsv(exclusion.PROJECTS):
            for n in [name] + ([upstream, upstream.split("/")[-1]] if upstream else []):
                with self.subTest(name=n):
                    self.assertIsNotNone(ex.name(n))
        for suite, pin in exclusion.suite_pins():
            for n in (pin["name"], pin["package"]):
                with self.subTest(suite=suite, name=n):
                    self.assertIsNotNone(ex.name(n))

    def test_urls_in_any_punctuation(self):
        ex = exclusion.Exclusions.load(fingerprint=False)
        for text in ["see https://github.com/psf/requests.", "[r](https://github.com/psf/requests)",
                     "https://raw.githubusercontent.com/psf/requests/main/x.py",
                     "git@github.com:psf/requests.git"]:
            with self.subTest(text=text):
                self.assertIsNotNone(ex.url(text))
        # A dependency is someone else's place, not the package's own.
        self.assertIsNone(ex.metadata("go.mod", "module example.com/x\nrequire github.com/spf13/cobra v1.6.1\n"))
        self.assertIsNotNone(ex.metadata("go.mod", "module github.com/spf13/cobra\n"))

    def test_a_copy_of_a_project_in_two_benchmark_sources_is_still_a_copy(self):
        fp = exclusion.Fingerprints()
        fp.add_text("independent benchmark: cobra", BENCH)
        fp.add_text("dev suite: go-cobra", BENCH)
        self.assertIsNotNone(fp.copy_of(BENCH))
        fp.add_text("dev suite: another", BENCH)  # in three sources: an idiom
        self.assertIsNone(fp.copy_of(BENCH))

    def test_language_directories_are_not_project_names(self):
        ex = exclusion.Exclusions.load(fingerprint=False)
        for rel in ["src/main/kotlin/a/B.kt", "src/main/scala/a/B.scala", "lib/lua/x.lua"]:
            with self.subTest(rel=rel):
                self.assertIsNone(ex.path(rel))

    def test_the_committed_corpora_are_clean(self):
        ex = exclusion.Exclusions.load(fingerprint=False)
        for corpus in ("corpus.json", "tune_corpus.json", "mine_corpus.json"):
            with open(os.path.join(HERE, corpus), encoding="utf-8") as f:
                pins = json.load(f)["packages"]
            with self.subTest(corpus=corpus):
                self.assertEqual([p["name"] for p in pins if ex.pin(p)], [])

    def test_the_committed_manifests_hold_no_refused_package(self):
        ex = exclusion.Exclusions.load(fingerprint=False)
        manifests = sorted(f for f in os.listdir(exclusion.MANIFESTS) if f.endswith(".json"))
        self.assertIn("frequency.json", manifests)
        self.assertIn("tune.json", manifests)
        for name in manifests:
            with open(os.path.join(exclusion.MANIFESTS, name), encoding="utf-8") as f:
                doc = json.load(f)
            for package, entry in doc["packages"].items():
                pin = dict(entry, name=package)
                with self.subTest(manifest=name, package=package):
                    self.assertIsNone(ex.pin(pin))

    def test_a_project_missing_from_the_copy_stops_the_run(self):
        with tempfile.TemporaryDirectory() as tmp:
            bench = os.path.join(tmp, "shared", "bench", "semble-tune")
            os.makedirs(bench)
            with open(exclusion.PROJECTS, encoding="utf-8") as f:
                listed = f.read()
            with open(os.path.join(bench, "EXCLUDE.tsv"), "w", encoding="utf-8") as f:
                f.write(listed + "newproject\tgo\tsomeone/newproject\n")
            short = os.path.join(tmp, "projects.tsv")
            with open(short, "w", encoding="utf-8") as f:
                f.write(listed)
            quality = os.path.join(tmp, "bench", "quality")
            os.makedirs(quality)
            with open(os.path.join(quality, "corpus.json"), "w", encoding="utf-8") as f:
                json.dump({"packages": []}, f)
            with self.assertRaises(exclusion.Refused) as caught:
                exclusion.Exclusions.load(root=tmp, projects_tsv=short, fingerprint=False)
            self.assertIn("newproject", str(caught.exception))

    def test_the_copy_matches_the_benchmark_list_when_it_is_here(self):
        theirs = exclusion.benchmark_exclude_tsv()
        if theirs is None:
            print("\ntest_exclusion: the benchmark's EXCLUDE.tsv is not beside the repository; "
                  "the copy is checked against it where it is", file=sys.stderr)
            return
        exclusion.Exclusions.load(fingerprint=False)  # raises when the copy lacks a project


if __name__ == "__main__":
    unittest.main(verbosity=1)
