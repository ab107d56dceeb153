"""What no model of Satori may be trained or tuned on, and the one place that applies it.

Every script that feeds a model (the vocabulary frequencies and tuning pairs of `distill.py`,
the pairs `mine.py` mines for the teacher, the bundle `pack.py` packs for it, and so the
targets of `tokenlearn.py`) goes through `Exclusions`:

- the projects of the independent code-search benchmark, both halves and the rest of its set
  (`excluded-projects.tsv`, a copy of the benchmark's `EXCLUDE.tsv`; when the benchmark's own
  file is found beside the repository, a project it lists that the copy lacks stops the run);
- the packages of the retrieval benchmark (`bench/quality/corpus.json`, the dev suite) and of
  the blind suite (`pin` of `bench/quality/blind/annotations/*.json`).

They are matched four ways:

1. By name, in every packaging: registry and distro names are normalised (`python3-requests`,
   `libgoogle-gson-java`, `libuv1`, `golang-github-spf13-cobra-dev`, `@trpc/server`,
   `libjackson2-databind-java`) and a package is refused when its name is, extends, or holds
   as whole words an excluded name (`serde-json` is serde's, `google-gson` is gson).
2. By upstream repository: a package whose metadata (`Cargo.toml`, `package.json`,
   `PKG-INFO`, `setup.cfg`, `pyproject.toml`, `*.gemspec`, `*.cabal`, `composer.json`,
   `pom.xml`, `debian/upstream/metadata`, …) names an excluded project's repository is
   refused whatever it is called.
3. By place: files under vendored directories (`vendor`, `third_party`, `node_modules`, …) or
   under a directory named after an excluded project are skipped.
4. By content, for copies the first three cannot see: a file whose first lines name an
   excluded project's repository URL is skipped, and so is a file whose lines are mostly
   lines of a benchmark text: every text of the benchmarks that is at hand (the dev and blind
   suites' packages, fetched from their pins, and the independent benchmark's tuning half,
   read from its archives when they are beside the repository) is cut into normalised lines,
   and a file of at least `MIN_LINES` such lines of which `COPY_FRACTION` or more are among
   them is a copy. The held-out half of the independent benchmark is not here: its projects
   are caught by name, repository and URL only.

Whatever is left out is written to a `Ledger`, committed as the training data's manifest.
Standard library only.
"""
import glob
import hashlib
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROJECTS = os.path.join(HERE, "excluded-projects.tsv")
MANIFESTS = os.path.join(HERE, "manifests")

VENDOR_DIRS = {"vendor", "_vendor", "vendored", "_vendored", "third_party", "third-party",
               "thirdparty", "3rdparty", "node_modules", "external", "bower_components",
               "site-packages", "deps"}

PREFIXES = ("python3-", "python-", "py-", "pypi-", "node-", "ruby-", "rb-", "php-", "lua-",
            "haskell-", "hs-", "libghc-", "golang-", "go-", "rust-", "rs-", "js-", "ts-",
            "java-", "cpp-", "c-", "perl-", "r-cran-", "elixir-", "kotlin-", "scala-",
            "swift-", "csharp-", "cs-", "zig-", "librust-")
SUFFIXES = ("-dev", "-java", "-perl", "-js", "-lang", "-go", "-rs", "-py", "-php", "-lua",
            "-rb", "-cpp", "-nvim", "-csharp", "-source", "-src", "-doc", "-common")

# Excluded names that are also ordinary words of package and directory names (`java/lang`,
# `Lib/json`, `net/http`, `json-c`): they count only as a whole name, never as a word in one.
COMMON_WORDS = {"json", "http", "lang", "framework", "lua", "yaml", "commons", "concurrent",
                "mini", "lazy", "ios", "mux", "fmt", "plug", "lib", "core", "server", "client",
                "test", "utils", "cli"}

# Words that match only as a whole name: the common ones and the packaging words themselves
# (`golang` is no prefix of the project `golang-github-spf13-pflag-dev`).
LOOSE_WORDS = COMMON_WORDS | {p.strip("-") for p in PREFIXES + SUFFIXES} | {"golang", "github"}

# Languages, which name directories of every project (`src/main/kotlin`, `lib/lua`) and are
# also names of listed projects (Kotlin's and Scala's standard libraries are dev-suite pins).
LANGUAGE_WORDS = {"kotlin", "scala", "zig", "lua", "elixir", "swift", "rust", "go", "python",
                  "java", "ruby", "haskell", "perl", "php", "c", "cpp", "csharp", "typescript",
                  "javascript"}

# Package metadata that names the package's own repository.
METADATA = re.compile(r"(^|/)(Cargo\.toml|package\.json|PKG-INFO|METADATA|setup\.cfg|setup\.py|"
                      r"pyproject\.toml|[^/]+\.gemspec|[^/]+\.cabal|composer\.json|pom\.xml|"
                      r"build\.gradle(\.kts)?|mix\.exs|go\.mod|debian/upstream/metadata|"
                      r"debian/control|debian/copyright|[^/]+\.rockspec)$")
URL = re.compile(r"(?:github\.com|gitlab\.com|codeberg\.org|bitbucket\.org|"
                 r"raw\.githubusercontent\.com)[/:]([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)", re.I)
HEADER_LINES = 60
# A metadata line that names the package's own repository or home.
OWN_PLACE = re.compile(r"(?i)^\s*(module\s|\"?(repository|homepage|home[-_]page|source|url|"
                       r"project[-_]url|upstream[-_]contact|repository[-_]browse|bug[-_]database|"
                       r"bugs)\"?\s*[:=]|<url>|<connection>|<developerConnection>|"
                       r"s\.homepage|spec\.homepage|spec\.metadata|homepage:|source-repository)")


def is_package_metadata(rel):
    """Whether a file (relative to the package root) is the package's own metadata: it lies at
    the top (or in `debian/`, `*.egg-info/`); a manifest deeper down belongs to an example or
    a fixture."""
    if METADATA.search(rel) is None:
        return False
    return "/" not in rel or rel.split("/")[0] == "debian" or rel.split("/")[0].endswith(".egg-info")

# Content matching: a line counts when, whitespace collapsed, it has this many characters and
# a letter; a file is a copy when it has MIN_LINES counted lines and COPY_FRACTION of them are
# lines of a benchmark text.
MIN_LINE_CHARS = 24
MIN_LINES = 8
COPY_FRACTION = 0.5


def log(msg):
    print(f"exclusion: {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ names

def normalise(name):
    """Registry or project name -> a comparable key: lower case, separators as `-`, the usual
    packaging prefixes and suffixes stripped (`golang-github-spf13-cobra-dev` -> `cobra`,
    `libcommons-cli-java` -> `commons-cli`, `@scope/name` -> `name`)."""
    n = name.strip().lower().rsplit("/", 1)[-1]
    n = re.sub(r"[._\s+]+", "-", n).strip("-")
    m = re.match(r"golang-(github|gitlab|bitbucket)-(com-|org-)?[^-]+-(.+)$", n)
    if m:
        n = m.group(3)
    m = re.match(r"golang-(golang-org-x|gopkg-in|go-uber-org|google-golang-org)-(.+)$", n)
    if m:
        n = m.group(2)
    if n.startswith("lib") and n.endswith(("-java", "-perl")):  # libcommons-cli-java
        n = n[3:]
    changed = True
    while changed:
        changed = False
        for p in PREFIXES:
            if n.startswith(p) and re.search(r"[a-z]", n[len(p):]):
                n, changed = n[len(p):], True
        for s in SUFFIXES:
            if n.endswith(s) and len(n) > len(s):
                n, changed = n[:-len(s)], True
    return n


def name_keys(name):
    """Every key a package name may stand for: the normalised name; without the version digits
    that distros append to a word (`libuv1`, `jackson2`); without a `lib` before a word
    (`libcurl4` -> `curl`); an npm scope alone (`@trpc/server` -> `trpc`); and each tail of a
    Go import path name, whose organisation may hold dashes (`golang-github-gin-gonic-gin`)."""
    keys = {normalise(name), _light(name)}
    if name.startswith("@") and "/" in name:
        keys.add(normalise(name[1:].split("/")[0]))
    if name.lower().startswith("golang-"):
        parts = re.sub(r"-dev$", "", name.lower()).split("-")
        keys.update(normalise("-".join(parts[k:])) for k in range(2, len(parts)))
    for k in list(keys):
        words = [re.sub(r"(?<=[a-z])\d+$", "", w) for w in k.split("-")]
        keys.add("-".join(words))
        keys.add("-".join(w[3:] if w.startswith("lib") and len(w) > 5 else w for w in words))
    keys.discard("")
    return keys


def _light(name):
    """A name in lower case with separators unified, nothing stripped."""
    return re.sub(r"[._\s+]+", "-", name.strip().lower().rsplit("/", 1)[-1]).strip("-")


def _holds_words(key, name):
    """Whether `name`'s words are whole consecutive words of `key` (`google-gson` holds gson)."""
    kw, nw = key.split("-"), name.split("-")
    return any(kw[i:i + len(nw)] == nw for i in range(len(kw) - len(nw) + 1))


class Project:
    """One thing never to train on: its name, where it was listed, its upstream repository."""

    def __init__(self, name, listed_in, upstream=None, packaging=False):
        self.name = name
        self.listed_in = listed_in
        self.upstream = upstream.lower() if upstream else None
        # The name as written (separators unified) always counts, and so does the upstream
        # repository's name. A packaging (`golang-github-gorilla-mux-dev`, `py-marshmallow`)
        # also counts by the names it stands for, except the common and packaging words
        # among them (`scala-concurrent` must not become `concurrent`, `go-mux` not `mux`); a
        # project's own name is never stripped (`zig-clap` is not the Rust `clap`).
        self.keys = set()
        for n in [name] + ([self.upstream.split("/")[-1]] if self.upstream else []):
            light = _light(n)
            self.keys.add(light)
            self.keys.add("-".join(re.sub(r"(?<=[a-z])\d+$", "", w) for w in light.split("-")))
            if packaging:
                self.keys.update(k for k in name_keys(n) if k not in LOOSE_WORDS)
        self.keys.discard("")

    def __repr__(self):
        return f"{self.name} ({self.listed_in})"


# ------------------------------------------------------------------ content

# Lines that say nothing of where code comes from: comments (licence headers are shared by
# whole ecosystems) and imports.
BOILERPLATE = re.compile(r"^(\*|/\*|//|#|--|;|<!--|\"\"\"|'''|import\s|from\s\S+\s+import\s|"
                         r"use\s|using\s|package\s|require[\s(]|@import\s)")


def _norm_line(line):
    s = " ".join(line.split())
    if len(s) < MIN_LINE_CHARS or not re.search(r"[A-Za-z]", s) or BOILERPLATE.match(s):
        return None
    return s


def _line_key(s):
    return hashlib.blake2b(s.encode("utf-8", "replace"), digest_size=8).digest()


class Fingerprints:
    """The normalised lines of benchmark texts, each with the first source it came from."""

    def __init__(self):
        self.lines = {}
        self.sources = []

    def add_text(self, source, text):
        for line in text.split("\n"):
            s = _norm_line(line)
            if s is not None:
                key = _line_key(s)
                # A line of three benchmark sources is an idiom, not a fingerprint of any; two
                # may be one project packaged twice (cobra in both halves' sources).
                seen = self.lines.get(key, False)
                if seen is False:
                    self.lines[key] = (source, None)
                elif seen is not None and source not in seen:
                    self.lines[key] = (seen[0], source) if seen[1] is None else None

    def add_tree(self, source, root):
        files = 0
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted(filenames):
                try:
                    with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                        self.add_text(source, f.read())
                    files += 1
                except (UnicodeDecodeError, OSError):
                    continue
        self.sources.append({"source": source, "files": files})

    def add_tar(self, source, path):
        import tarfile
        files = 0
        with tarfile.open(path, "r:*") as t:
            for member in t:
                if member.isfile() and member.size <= 2 * 1024 * 1024:
                    data = t.extractfile(member).read()
                    try:
                        self.add_text(source, data.decode("utf-8"))
                        files += 1
                    except UnicodeDecodeError:
                        continue
        self.sources.append({"source": source, "files": files})

    def copy_of(self, text):
        """The benchmark source most of this text's lines come from, with the fraction, when
        the text counts as a copy; else None."""
        counted, found = 0, {}
        for line in text.split("\n"):
            s = _norm_line(line)
            if s is None:
                continue
            counted += 1
            src = self.lines.get(_line_key(s), False)
            if src is None:  # an idiom of several sources: counts on neither side
                counted -= 1
            elif src is not False:
                src = src[0]
                found[src] = found.get(src, 0) + 1
        hits = sum(found.values())
        if counted < MIN_LINES or hits < COPY_FRACTION * counted:
            return None
        return max(found, key=found.get), hits / counted


# ------------------------------------------------------------------ the list

def _read_tsv(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            cols = line.rstrip("\n").split("\t")
            rows.append((cols[0].strip(), cols[2].strip() if len(cols) > 2 else ""))
    return rows


def benchmark_exclude_tsv(root=ROOT):
    """The independent benchmark's own EXCLUDE.tsv when it lies beside the repository."""
    for p in (os.path.join(root, "shared", "bench", "semble-tune", "EXCLUDE.tsv"),
              os.path.join(os.path.dirname(root), "shared", "bench", "semble-tune", "EXCLUDE.tsv")):
        if os.path.exists(p):
            return p
    return None


def benchmark_archives(root=ROOT):
    """The independent benchmark's tuning-half archives (`corpus/<repo>.tar.gz`), if at hand."""
    tsv = benchmark_exclude_tsv(root)
    if tsv is None:
        return []
    return sorted(glob.glob(os.path.join(os.path.dirname(tsv), "corpus", "*.tar.gz")))


def suite_pins(root=ROOT):
    """The dev suite's and the blind suite's pinned packages, each with the suite's name."""
    pins = []
    with open(os.path.join(root, "bench", "quality", "corpus.json"), encoding="utf-8") as f:
        doc = json.load(f)
    pins += [("dev suite", p) for p in (doc["packages"] if isinstance(doc, dict) else doc)]
    for path in sorted(glob.glob(os.path.join(root, "bench", "quality", "blind", "annotations",
                                              "*.json"))):
        with open(path, encoding="utf-8") as f:
            pin = json.load(f).get("pin")
        if pin:
            pins.append(("blind suite", pin))
    return pins


class Refused(SystemExit):
    pass


def fetch_suites(root=ROOT, cache=None):
    """Fetches the dev and blind suites' packages with the benchmark's fetcher (into its cache,
    where the benchmark reads them too) and returns the directory that holds them by name."""
    import subprocess
    import tempfile
    fetch = os.path.join(root, "bench", "quality", "fetch_corpus.py")
    cache_args = ["--cache", cache] if cache else []
    blind = [pin for suite, pin in suite_pins(root) if suite == "blind suite"]
    with tempfile.TemporaryDirectory() as tmp:
        blind_corpus = os.path.join(tmp, "blind-corpus.json")
        with open(blind_corpus, "w", encoding="utf-8") as f:
            json.dump({"packages": blind}, f)
        src = None
        for corpus in (os.path.join(root, "bench", "quality", "corpus.json"), blind_corpus):
            out = subprocess.run([sys.executable, fetch, "--corpus", corpus, *cache_args],
                                 check=True, stdout=subprocess.PIPE, text=True).stdout
            src = os.path.join(json.loads(out)["cache"], "src")
    return src


class Exclusions:
    """The projects never to train on, and the checks of packages, paths and texts."""

    def __init__(self, projects, fingerprints=None):
        self.projects = projects
        self.fingerprints = fingerprints
        self.upstreams = {p.upstream: p for p in projects if p.upstream}

    @classmethod
    def load(cls, root=ROOT, projects_tsv=PROJECTS, fingerprint=True, suite_src=None):
        """The list from `excluded-projects.tsv` and the suites of `root`. With `fingerprint`,
        the content of every benchmark text at hand: the tuning half's archives and the
        suites' packages extracted under `suite_src` (`<suite_src>/<pin name>/`)."""
        projects = [Project(n, "independent benchmark", u) for n, u in _read_tsv(projects_tsv)]
        theirs = benchmark_exclude_tsv(root)
        if theirs:
            ours = {(n, u) for n, u in _read_tsv(projects_tsv)}
            missing = [n for n, u in _read_tsv(theirs) if (n, u) not in ours]
            if missing:
                raise Refused(f"exclusion: {os.path.relpath(projects_tsv, root)} lacks projects of "
                              f"the benchmark's EXCLUDE.tsv: {', '.join(missing)}")
        for suite, pin in suite_pins(root):
            projects.append(Project(pin["package"], suite, packaging=True))
            projects.append(Project(pin["name"], suite, packaging=True))
        fp = None
        if fingerprint:
            fp = Fingerprints()
            for path in benchmark_archives(root):
                fp.add_tar("independent benchmark: " + os.path.basename(path)[:-len(".tar.gz")], path)
            if suite_src:
                for suite, pin in suite_pins(root):
                    src = os.path.join(suite_src, pin["name"])
                    if not os.path.isdir(src):
                        raise Refused(f"exclusion: {suite} package {pin['name']} is not fetched under "
                                      f"{suite_src} (bench/quality/fetch_corpus.py fetches it)")
                    fp.add_tree(f"{suite}: {pin['name']}", src)
            log(f"{len(fp.lines):,} benchmark lines from {len(fp.sources)} sources")
        return cls(projects, fp)

    def signature(self):
        """What decides these exclusions (the projects, the rules, the content sources): work
        done under another signature is redone."""
        h = hashlib.sha256()
        with open(os.path.abspath(__file__), "rb") as f:  # the rules themselves
            h.update(f.read())
        for p in sorted(self.projects, key=repr):
            h.update(f"{p!r}|{p.upstream}\n".encode())
        h.update(json.dumps([MIN_LINE_CHARS, MIN_LINES, COPY_FRACTION, HEADER_LINES,
                             sorted(VENDOR_DIRS), sorted(COMMON_WORDS), BOILERPLATE.pattern,
                             self.fingerprints.sources if self.fingerprints else None]).encode())
        return h.hexdigest()[:16]

    # -- packages

    def name(self, name):
        """The excluded project a package name stands for, or None."""
        keys = name_keys(name)
        for p in self.projects:
            for e in p.keys:
                for k in keys:
                    if k == e:
                        return p
                    # A common word names a project only as the whole name (`plug`).
                    if e in LOOSE_WORDS or k in LOOSE_WORDS:
                        continue
                    if k.startswith(e + "-") or e.startswith(k + "-"):
                        return p
                    if len(e) >= 3 and _holds_words(k, e):
                        return p
        return None

    def pin(self, pin):
        """Why a pinned package is refused (its names or its URL), or None."""
        for field in ("package", "name"):
            if pin.get(field):
                hit = self.name(pin[field])
                if hit:
                    return f"name {pin[field]!r} is {hit!r}"
        hit = self.url(pin.get("url", ""))
        if hit:
            return hit
        return None

    def refuse_pins(self, pins, what):
        """Stop the run when a pin is refused: a list that names an excluded project is a
        mistake to fix in the list, not data to drop silently."""
        bad = [f"{p['name']}: {why}" for p in pins for why in [self.pin(p)] if why]
        if bad:
            raise Refused(f"{what}: refusing to run, pinned packages are excluded projects:\n  "
                          + "\n  ".join(bad))

    def refuse_packages(self, names, pins, what):
        """Stop when data to train on comes from a package that is not one of `pins` or whose
        pin is refused (data mined before a project joined the list)."""
        by_name = {p["name"]: p for p in pins}
        bad = [f"{n}: not a pin of the corpus" if n not in by_name else f"{n}: {self.pin(by_name[n])}"
               for n in names if n not in by_name or self.pin(by_name[n])]
        if bad:
            raise Refused(f"{what}: refusing to train on excluded packages:\n  " + "\n  ".join(bad))

    def url(self, text):
        """Why a text naming a repository URL of an excluded project is refused, or None."""
        for m in URL.finditer(text or ""):
            # The name runs to the first character a repository name cannot hold; a `.git`
            # suffix and the punctuation of a sentence are not part of it.
            repo = re.sub(r"(\.git)?[.]*$", "", m.group(2))
            key = f"{m.group(1)}/{repo}".lower()
            if key in self.upstreams:
                return f"names {key}, the repository of {self.upstreams[key]!r}"
        return None

    def metadata(self, rel, text):
        """Why a package is refused by what one of its metadata files says, or None. Of core
        metadata (`PKG-INFO`, `METADATA`) only the header counts: the body is the README,
        which may name any project."""
        if not METADATA.search(rel):
            return None
        if rel.endswith(("PKG-INFO", "METADATA")):
            text = text.split("\n\n", 1)[0]
        # Only the lines that say where the package itself lives: a dependency (`require
        # github.com/spf13/cobra` in a go.mod, a git dependency in a Cargo.toml) or a link in
        # a comment names someone else's.
        own = [line for line in text.split("\n") if OWN_PLACE.search(line)]
        return self.url("\n".join(own))

    # -- files

    def directory(self, name):
        """Why a directory is skipped (vendored, or named after an excluded project), or None."""
        low = name.lower()
        if low in VENDOR_DIRS:
            return "vendored directory"
        light = re.sub(r"[._\s]+", "-", low)
        for k in {light, normalise(name)}:
            # Common and language words name directories of every project (`src/main/kotlin`).
            if k in LOOSE_WORDS or k in LANGUAGE_WORDS:
                continue
            for p in self.projects:
                if k in p.keys:
                    return f"directory named after {p!r}"
        return None

    def path(self, rel):
        """Why a file is skipped by where it lies, or None."""
        parts = rel.replace(os.sep, "/").split("/")
        for d in parts[:-1]:
            if d.startswith(".") and d not in (".", ".."):
                return "hidden directory"
            why = self.directory(d)
            if why:
                return why
        stem = os.path.splitext(parts[-1])[0]
        why = self.directory(stem)
        if why and why != "vendored directory":
            return why.replace("directory", "file")
        return None

    def text(self, text):
        """Why a file is skipped by what it holds, or None."""
        head = "\n".join(text.split("\n", HEADER_LINES)[:HEADER_LINES])
        why = self.url(head)
        if why:
            return "header " + why
        if self.fingerprints is not None:
            copy = self.fingerprints.copy_of(text)
            if copy:
                return f"copy of {copy[0]} ({copy[1]:.0%} of its lines)"
        return None

    def file(self, rel, text):
        return self.path(rel) or self.text(text)

    def admit(self, sources, wanted, ledger=None):
        """(root, relative path, text) of every wanted file of a corpus, given as (pin, source
        root) pairs, that the exclusions admit; each pin is recorded in the ledger."""
        for pin, root in sources:
            if ledger is not None:
                ledger.pin(pin)
            for rel, text in self.walk(pin["name"], root, wanted, ledger):
                yield root, rel, text

    def walk(self, package, root, wanted, ledger=None):
        """The admitted files under `root` as (relative path, text), `wanted(rel)` choosing
        the kinds of file; refused metadata refuses the whole package (nothing is yielded)."""
        found = []
        for dirpath, dirnames, filenames in os.walk(root):
            rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
            keep = []
            for d in sorted(dirnames):
                rel = d if rel_dir == "." else f"{rel_dir}/{d}"
                why = self.path(rel + "/x")
                if why and ledger is not None:
                    ledger.skip(package, rel + "/", why)
                if not why:
                    keep.append(d)
            dirnames[:] = keep
            for name in sorted(filenames):
                rel = name if rel_dir == "." else f"{rel_dir}/{name}"
                meta = is_package_metadata(rel)
                if not meta and not wanted(rel):
                    continue
                try:
                    with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                        text = f.read()
                except (UnicodeDecodeError, OSError):
                    continue
                if meta:
                    why = self.metadata(rel, text)
                    if why:
                        if ledger is not None:
                            ledger.refuse(package, f"{rel} {why}")
                        return
                    if not wanted(rel):
                        continue
                found.append((rel, text))
        for rel, text in found:
            why = self.file(rel, text)
            if why:
                if ledger is not None:
                    ledger.skip(package, rel, why)
                continue
            if ledger is not None:
                ledger.use(package, rel, text)
            yield rel, text


# ------------------------------------------------------------------ the manifest

class Ledger:
    """What went into one training corpus and what was left out, with why: the manifest."""

    def __init__(self, corpus, exclusions):
        self.corpus = corpus
        self.exclusions = exclusions
        self.packages = {}
        self.refused = []
        self.skipped = []

    def _pkg(self, package):
        return self.packages.setdefault(package, {"files": 0, "bytes": 0})

    def pin(self, pin):
        entry = self._pkg(pin["name"])
        for k in ("registry", "package", "version", "sha256"):
            if k in pin:
                entry[k] = pin[k]

    def use(self, package, rel, text):
        e = self._pkg(package)
        e["files"] += 1
        e["bytes"] += len(text.encode("utf-8"))

    def skip(self, package, rel, why):
        self.skipped.append({"package": package, "path": rel, "why": why})

    def refuse(self, package, why):
        self.packages.pop(package, None)
        self.refused.append({"package": package, "why": why})

    def state(self):
        """The ledger as plain data, to be merged into another (`merge`)."""
        return {"packages": self.packages, "refused": self.refused, "skipped": self.skipped}

    def merge(self, state):
        for name, entry in state["packages"].items():
            self.packages[name] = entry
        self.refused += state["refused"]
        self.skipped += state["skipped"]

    def summary(self):
        by_reason = {}
        for s in self.skipped:
            key = re.sub(r" \(\d+% of its lines\)$", "", s["why"])
            by_reason[key] = by_reason.get(key, 0) + 1
        return {"packages": len(self.packages), "files": sum(p["files"] for p in self.packages.values()),
                "refused_packages": len(self.refused), "skipped": len(self.skipped),
                "skipped_by_reason": dict(sorted(by_reason.items()))}

    def write(self, path, extra=None):
        ex = self.exclusions
        doc = {
            "corpus": self.corpus,
            "excluded": {
                "projects": sorted({f"{p.name} ({p.listed_in})" for p in ex.projects}),
                "content_sources": ex.fingerprints.sources if ex.fingerprints else [],
                "rules": {"min_line_chars": MIN_LINE_CHARS, "min_lines": MIN_LINES,
                          "copy_fraction": COPY_FRACTION, "header_lines": HEADER_LINES},
            },
            "summary": self.summary(),
            "packages": dict(sorted(self.packages.items())),
            "refused_packages": self.refused,
            "skipped": sorted(self.skipped, key=lambda s: (s["package"], s["path"])),
        }
        if extra:
            doc.update(extra)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1, ensure_ascii=False)
            f.write("\n")
