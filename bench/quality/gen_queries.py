#!/usr/bin/env python3
"""Generate the synthetic retrieval-quality queries from the fetched corpus.

Two kinds of query are derived, deterministically (seeded), from the source of every package
in corpus.json and written to bench/quality/generated/<repo>.jsonl:

  docstring   the first sentence of a function's doc comment; the gold is the function's
              span, and `blank` lists the doc comment's lines, which the benchmark blanks out
              in the copy it indexes (so the answer cannot be found by matching the comment)
  identifier  the bare name of a function, method, class or type that is defined exactly once
              in the package; the gold is the definition's span

Definitions are found by per-language extractors for the languages of EXTENSIONS; a package
in another language gets an empty file (its hand-written queries alone are run).

Only runtime source files are used (no tests, docs, examples, benchmarks, generated or
vendored code: the same path rules as the engine's `runtime` search scope, plus a few
directories of this corpus that hold scripts or fixtures).

Usage:
  bench/quality/gen_queries.py                 # all packages; JSON summary on stdout
  bench/quality/gen_queries.py --only c-lua,rb-thor
  bench/quality/gen_queries.py --show 5        # also print 5 queries per language with
                                               # the source at their gold lines (stderr)
  bench/quality/gen_queries.py --check         # compare with the committed files, write nothing

The corpus is fetched first when it is not in the cache (see fetch_corpus.py). Python 3.11
standard library only.
"""
import argparse
import ast
import bisect
import json
import os
import random
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fetch_corpus  # noqa: E402

GENERATED_DIR = os.path.join(HERE, "generated")
DEFAULT_SEED = 20240601
DOCSTRING_PER_REPO = 25
IDENTIFIER_PER_REPO = 15
MIN_WORDS, MAX_WORDS = 4, 40
MIN_IDENT_LEN = 6

EXTENSIONS = {
    "python": (".py", ".pyi"),
    "rust": (".rs",),
    "javascript": (".js", ".mjs", ".cjs"),
    "typescript": (".ts", ".mts", ".cts"),
    "go": (".go",),
    "ruby": (".rb",),
    "java": (".java",),
    "c": (".c", ".h"),
}


def log(msg):
    print(f"gen_queries: {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- which files count

# The engine's path categories (crates/satori-core/src/search/category.rs): only files it
# files under "runtime" are searched by the default scope, so only those can hold a gold.
GENERATED_DIRS = {"__generated__", "coverage", "dist", "gen", "generated"}
VENDORED_DIRS = {"bower_components", "node_modules", "third-party", "third_party",
                 "thirdparty", "vendor", "vendored"}
FIXTURE_DIRS = {"__fixtures__", "__snapshots__", "fixture", "fixtures", "test_data",
                "testdata"}
TEST_DIRS = {"__mocks__", "__tests__", "e2e", "spec", "specs", "test", "testing", "tests"}
DOC_DIRS = {"doc", "docs", "documentation"}
EXAMPLE_DIRS = {"demo", "demos", "example", "examples", "sample", "samples"}
BENCH_DIRS = {"bench", "benches", "benchmark", "benchmarks"}
COMPAT_DIRS = {"compat", "deprecated", "legacy"}
# Directories of this corpus that are runtime by those rules but are not library code:
# build and release scripts, doc-test snippets, test servers, typing examples, the CLI tool.
EXTRA_EXCLUDED_DIRS = {"scripts", "build", "integration", "compile_fail", "dummyserver",
                       "typing-examples", "bin", "tools", "locales", "v3"}


def is_generated_name(lower):
    return (".generated." in lower or ".gen." in lower or lower.endswith(".min.js")
            or lower.endswith("_pb2.py") or lower.endswith(".pb.go")
            or lower.endswith("_generated.go"))


def is_test_name(name):
    lower = name.lower()
    stem = name.split(".")[0]
    ls = stem.lower()
    return (".test." in lower or ".spec." in lower or ls.startswith("test_")
            or ls.endswith("_test") or ls.endswith("_tests") or ls.endswith("_spec")
            or ls == "conftest"
            or (len(stem) > 4 and (stem.endswith("Test") or stem.endswith("Tests"))))


def is_runtime_path(rel):
    """True when the engine categorises rel as runtime code and it is library code."""
    parts = rel.split("/")
    name, dirs = parts[-1], [d.lower() for d in parts[:-1]]
    lower = name.lower()
    if any(d in GENERATED_DIRS for d in dirs) or is_generated_name(lower):
        return False
    for group in (VENDORED_DIRS, FIXTURE_DIRS, TEST_DIRS, DOC_DIRS, EXAMPLE_DIRS,
                  BENCH_DIRS, COMPAT_DIRS, EXTRA_EXCLUDED_DIRS):
        if any(d in group for d in dirs):
            return False
    if is_test_name(name) or lower.startswith(("readme", "changelog", "license")):
        return False
    if lower.startswith("bench_") or "_bench." in lower:
        return False
    if lower.endswith(".d.ts") or lower.endswith(".pyi"):
        return False  # declarations: their definitions live elsewhere
    return True


def list_files(root, language):
    exts = EXTENSIONS[language]
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".")
                             and d != "node_modules")
        for fn in sorted(filenames):
            if fn.endswith(exts) and not fn.endswith(".min.js"):
                path = os.path.join(dirpath, fn)
                if os.path.isfile(path) and not os.path.islink(path):
                    out.append(os.path.relpath(path, root).replace(os.sep, "/"))
    return out


def read_text(path):
    with open(path, "rb") as f:
        data = f.read()
    if b"\0" in data[:8192] or len(data) > 1 << 20:
        return None
    return data.decode("utf-8", errors="replace")


# ---------------------------------------------------------------- definitions

class Def:
    """One definition found in a file. Lines are 1-based and inclusive."""

    __slots__ = ("name", "kind", "path", "start", "end", "doc", "doc_start", "doc_end")

    def __init__(self, name, kind, path, start, end=None):
        self.name, self.kind, self.path = name, kind, path
        self.start, self.end = start, end
        self.doc = self.doc_start = self.doc_end = None

    @property
    def is_function(self):
        return self.kind in ("function", "method")


class Source:
    """A file's text, a copy with comments and string contents masked, and line maps."""

    def __init__(self, text, language):
        self.text = text
        self.lines = text.split("\n")
        self.language = language
        self.masked = mask_code(text, language) if language not in ("python", "ruby") else text
        self.mlines = self.masked.split("\n")
        self.starts = [0]
        for line in self.lines[:-1]:
            self.starts.append(self.starts[-1] + len(line) + 1)

    def line_of(self, offset):  # 1-based
        return bisect.bisect_right(self.starts, offset)

    def offset(self, line, col=0):
        return self.starts[line - 1] + col

    def eol(self, offset):
        j = self.masked.find("\n", offset)
        return len(self.masked) if j < 0 else j


# -- masking: comments and string contents become spaces, so brace matching and the
# -- definition patterns only ever see code. Line breaks and lengths are kept.

REGEX_PREFIX_WORDS = {"return", "typeof", "case", "do", "else", "in", "of", "new", "delete",
                      "void", "throw", "yield", "await", "instanceof"}
RUST_CHAR = re.compile(r"'(?:\\(?:u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^'\\\n])'")


def mask_code(text, lang):
    out = list(text)
    n = len(text)
    js = lang in ("javascript", "typescript")

    def blank(a, b):
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    def scan_quoted(i, quote, multiline=False):
        """End offset (exclusive) of the string literal whose quote is at i."""
        j = i + 1
        while j < n:
            ch = text[j]
            if ch == "\\":
                j += 2
                continue
            if ch == quote:
                return j + 1
            if ch == "\n" and not multiline:
                return j
            j += 1
        return n

    def scan_template(i):
        j = i + 1
        while j < n:
            ch = text[j]
            if ch == "\\":
                j += 2
            elif ch == "`":
                return j + 1
            elif text.startswith("${", j):
                j = scan_braced(j + 2)
            else:
                j += 1
        return n

    def scan_braced(j):
        depth = 1
        while j < n:
            ch = text[j]
            if ch in "'\"":
                j = scan_quoted(j, ch)
            elif ch == "`":
                j = scan_template(j)
            elif ch == "{":
                depth += 1
                j += 1
            elif ch == "}":
                depth -= 1
                j += 1
                if depth == 0:
                    return j
            else:
                j += 1
        return n

    def scan_regex(i):
        """End of a JS regex literal starting at i, or None when it is not one."""
        j, in_class = i + 1, False
        while j < n:
            ch = text[j]
            if ch == "\n":
                return None
            if ch == "\\":
                j += 2
                continue
            if in_class:
                if ch == "]":
                    in_class = False
            elif ch == "[":
                in_class = True
            elif ch == "/":
                j += 1
                while j < n and (text[j].isalnum()):
                    j += 1
                return j
            j += 1
        return None

    i = 0
    prev_sig, prev_word = "", ""
    while i < n:
        c = text[i]
        if c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
            continue
        if c == "/" and i + 1 < n and text[i + 1] == "*":
            if lang == "rust":
                depth, j = 1, i + 2
                while j < n and depth:
                    if text.startswith("/*", j):
                        depth, j = depth + 1, j + 2
                    elif text.startswith("*/", j):
                        depth, j = depth - 1, j + 2
                    else:
                        j += 1
            else:
                j = text.find("*/", i + 2)
                j = n if j < 0 else j + 2
            blank(i, j)
            i = j
            continue
        if js and c == "/" and (prev_sig == "" or prev_sig in "(,=:[!&|?{};+-*%<>~^"
                                 or prev_word in REGEX_PREFIX_WORDS):
            j = scan_regex(i)
            if j is not None:
                blank(i + 1, j - 1)
                i, prev_sig, prev_word = j, "/", ""
                continue
        if c == '"':
            if lang == "java" and text.startswith('"""', i):
                j = text.find('"""', i + 3)
                j = n if j < 0 else j + 3
            else:
                j = scan_quoted(i, '"', multiline=lang in ("rust", "go"))
            blank(i + 1, j - 1)
            i, prev_sig, prev_word = j, '"', ""
            continue
        if c == "'":
            if lang == "rust":
                m = RUST_CHAR.match(text, i)
                if m is None:  # a lifetime
                    i += 1
                    continue
                j = m.end()
            else:
                j = scan_quoted(i, "'")
            blank(i + 1, j - 1)
            i, prev_sig, prev_word = j, "'", ""
            continue
        if c == "`" and (js or lang == "go"):
            j = scan_template(i) if js else (lambda k: n if k < 0 else k + 1)(text.find("`", i + 1))
            blank(i + 1, j - 1)
            i, prev_sig, prev_word = j, "`", ""
            continue
        if lang == "rust" and c in "rb" and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.compile(r'b?r(#*)"').match(text, i)
            if m:
                closing = '"' + m.group(1)
                j = text.find(closing, m.end())
                j = n if j < 0 else j + len(closing)
                blank(m.end(), j - len(closing))
                i, prev_sig, prev_word = j, '"', ""
                continue
        if c.isalnum() or c == "_" or c == "$":
            j = i
            while j < n and (text[j].isalnum() or text[j] in "_$"):
                j += 1
            prev_word, prev_sig = text[i:j], text[j - 1]
            i = j
            continue
        if not c.isspace():
            prev_sig, prev_word = c, ""
        i += 1
    return "".join(out)


def match_brace(masked, i):
    """Offset of the } closing the { at i (masked text), or None."""
    depth = 0
    for j in range(i, len(masked)):
        ch = masked[j]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return j
    return None


CONTINUATION_ENDINGS = ("=>", ",", "(", ":", "|", "&", "=", "<", "?")


def find_body(src, start_off, lang, max_lines=25):
    """(open, close) offsets of the body braces of the definition starting at start_off.

    The body is the first '{' outside parentheses that ends its line (the usual layout of a
    multi-line body), or a '{...}' that opens and closes on one line and ends it (a one-line
    body). Braces that are followed by more code on their line are type literals (`{a: T}`,
    `interface{}`) and are skipped. A ';' outside parentheses first means a declaration.
    """
    m = src.masked
    depth = 0
    first_line = src.line_of(start_off)
    i = start_off
    while i < len(m):
        ch = m[i]
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
            if depth < 0:
                return None
        elif ch == ";" and depth == 0:
            return None
        elif ch == "=" and depth == 0 and lang in ("c", "java") and m[i + 1:i + 2] != "=":
            return None
        elif ch == "\n":
            if src.line_of(i) - first_line >= max_lines:
                return None
            if depth == 0:
                before = m[src.starts[src.line_of(i) - 1]:i].rstrip()
                if lang == "go":
                    return None
                if lang in ("javascript", "typescript") and not before.endswith(CONTINUATION_ENDINGS):
                    return None
        elif ch == "{" and depth == 0:
            close = match_brace(m, i)
            if close is None:
                return None
            if not m[i + 1:src.eol(i)].strip():
                return i, close
            after = m[close + 1:src.eol(close)].strip()
            if src.line_of(close) == src.line_of(i) and after in ("", ",", ";", ")", ");", "})"):
                return i, close
            i = close + 1
            continue
        i += 1
    return None


def statement_end(src, start_off, max_lines=400):
    """Offset of the end of a statement (all brackets closed, then ';' or a line end)."""
    m = src.masked
    depth = 0
    first_line = src.line_of(start_off)
    for i in range(start_off, len(m)):
        ch = m[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == ";" and depth <= 0:
            return i
        elif ch == "\n" and depth <= 0:
            before = m[src.starts[src.line_of(i) - 1]:i].rstrip()
            nxt = m[i + 1:src.eol(i + 1)].strip()
            if not before.endswith(CONTINUATION_ENDINGS) and not nxt.startswith(("|", "&", ".", "?", ":")):
                return i - 1
        if src.line_of(i) - first_line > max_lines:
            return None
    return None


def indent_of(line):
    return len(line) - len(line.lstrip())


def body_span(src, d, lang, start_off, allow_decl=False):
    """Set d.end from the body of the definition; False when it cannot be found reliably."""
    body = find_body(src, start_off, lang)
    if body is None:
        if allow_decl:
            end = statement_end(src, start_off)
            if end is not None:
                d.end = src.line_of(end)
                return True
        return False
    open_, close = body
    end_line = src.line_of(close)
    start_line_text = src.mlines[d.start - 1]
    if end_line != src.line_of(open_):
        # The closing brace should sit at the indentation of the definition's first line;
        # anything else means the masking or the matching went wrong.
        closing = src.mlines[end_line - 1]
        if indent_of(closing) != indent_of(start_line_text) or not closing.strip().startswith("}"):
            return False
    d.end = end_line
    return True


# -- doc comments

def doc_above(src, line, lang, skip_re=None):
    """(first_line, last_line, text) of the doc comment right above `line` (1-based)."""
    lines = src.lines
    k = line - 1  # index of the definition line
    # Attributes, annotations and decorators may sit between the comment and the definition.
    while k - 1 >= 0 and skip_re is not None and skip_re.match(lines[k - 1]):
        k -= 1
    j = k - 1
    if j < 0:
        return None
    last = lines[j].rstrip()
    if lang in ("rust",):
        if not re.match(r"\s*///(?!/)", last):
            return None
        first = j
        while first - 1 >= 0 and re.match(r"\s*///(?!/)", lines[first - 1]):
            first -= 1
        text = [re.sub(r"^\s*///\s?", "", lines[x]) for x in range(first, j + 1)]
        return first + 1, j + 1, text
    if lang in ("go", "ruby") or (lang == "c" and last.lstrip().startswith("//")):
        marker = "#" if lang == "ruby" else "//"
        pat = re.compile(r"\s*" + re.escape(marker) + ("(?![#!])" if lang == "ruby" else "(?!/)"))
        if not pat.match(last):
            return None
        first = j
        while first - 1 >= 0 and pat.match(lines[first - 1]):
            first -= 1
        text = [re.sub(r"^\s*" + re.escape(marker) + r"\s?", "", lines[x]) for x in range(first, j + 1)]
        return first + 1, j + 1, text
    # Block comments: /** ... */ (JS/TS/Java) or /* ... */ (C).
    if not last.endswith("*/"):
        return None
    opener = "/**" if lang in ("java", "javascript", "typescript") else "/*"
    first = j
    while first >= 0:
        stripped = lines[first].lstrip()
        if stripped.startswith("/*"):
            break
        if j - first > 200:
            return None
        first -= 1
    if first < 0 or not lines[first].lstrip().startswith(opener):
        return None
    if lines[first].lstrip().startswith("/**/"):
        return None
    body = "\n".join(lines[first:j + 1]).strip()
    if body.count("/*") != 1 or body.count("*/") != 1:
        return None  # a single comment only; never code between two comments
    text = []
    for x in range(first, j + 1):
        s = lines[x].strip()
        if x == first:
            s = re.sub(r"^/\*+!?", "", s)
        if x == j:
            s = re.sub(r"\*+/$", "", s)
        s = re.sub(r"^\*+\s?", "", s.strip())
        text.append(s)
    return first + 1, j + 1, text


def attach_doc(src, d, lang, skip_re=None):
    found = doc_above(src, d.start, lang, skip_re)
    if found:
        d.doc_start, d.doc_end, d.doc = found


# -- per language

def defs_python(src, path):
    try:
        tree = ast.parse(src.text)
    except (SyntaxError, ValueError):
        return []
    out = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                is_class = isinstance(child, ast.ClassDef)
                kind = "class" if is_class else ("method" if isinstance(node, ast.ClassDef) else "function")
                d = Def(child.name, kind, path, child.lineno, child.end_lineno)
                d.doc = None
                body = child.body
                if (not in_function and body and isinstance(body[0], ast.Expr)
                        and isinstance(body[0].value, ast.Constant)
                        and isinstance(body[0].value.value, str) and len(body) >= 2):
                    e = body[0]
                    before = src.lines[e.lineno - 1][:e.col_offset]
                    after = src.lines[e.end_lineno - 1][e.end_col_offset:]
                    if not before.strip() and (not after.strip() or after.strip().startswith("#")) \
                            and e.lineno > child.lineno:
                        d.doc_start, d.doc_end = e.lineno, e.end_lineno
                        doc = ast.get_docstring(child, clean=True) or ""
                        d.doc = doc.split("\n")
                if not in_function:
                    out.append(d)
                visit(child, in_function or not is_class)
            elif not isinstance(child, (ast.Lambda,)):
                visit(child, in_function)

    visit(tree, False)
    return out


RS_FN = re.compile(r"^\s*(?:pub(?:\s*\([^)]*\))?\s+)?(?:default\s+)?(?:const\s+)?(?:async\s+)?"
                   r"(?:unsafe\s+)?(?:extern\s+(?:\"[^\"]*\"\s+)?)?fn\s+([A-Za-z_]\w*)")
RS_TYPE = re.compile(r"^\s*(?:pub(?:\s*\([^)]*\))?\s+)?(?:unsafe\s+)?(?:auto\s+)?"
                     r"(struct|enum|trait|union|type)\s+([A-Za-z_]\w*)")
RS_MACRO = re.compile(r"^\s*(?:#\[macro_export\]\s*)?macro_rules!\s*([A-Za-z_]\w*)")
RS_ATTR = re.compile(r"^\s*#!?\[")
RS_TEST_MOD = re.compile(r"^\s*mod\s+tests?\b|^\s*mod\s+\w*test\w*\s*\{")


def defs_rust(src, path):
    out, test_ranges = [], []
    for idx, line in enumerate(src.mlines):
        if RS_TEST_MOD.match(line) or (line.strip().startswith("mod ") and idx > 0
                                       and "cfg(test)" in src.lines[idx - 1]):
            open_ = src.masked.find("{", src.offset(idx + 1))
            if open_ >= 0 and src.line_of(open_) == idx + 1:
                close = match_brace(src.masked, open_)
                if close is not None:
                    test_ranges.append((idx + 1, src.line_of(close)))
    for idx, line in enumerate(src.mlines):
        ln = idx + 1
        if any(a <= ln <= b for a, b in test_ranges):
            continue
        m = RS_FN.match(line)
        if m:
            d = Def(m.group(1), "function" if indent_of(line) == 0 else "method", path, ln)
            if body_span(src, d, "rust", src.offset(ln, m.end())):
                attach_doc(src, d, "rust", RS_ATTR)
            out.append(d)
            continue
        m = RS_TYPE.match(line)
        if m:
            d = Def(m.group(2), m.group(1), path, ln)
            body_span(src, d, "rust", src.offset(ln, m.end()), allow_decl=True)
            out.append(d)
            continue
        m = RS_MACRO.match(line)
        if m:
            d = Def(m.group(1), "macro", path, ln)
            body_span(src, d, "rust", src.offset(ln, m.end()))
            out.append(d)
    return out


GO_FUNC = re.compile(r"^func\s+(?:\([^)]*\)\s*)?([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*\(")
GO_TYPE = re.compile(r"^type\s+([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)?(struct|interface)?")
GO_DIRECTIVE = re.compile(r"^//go:")


def defs_go(src, path):
    out = []
    for idx, line in enumerate(src.mlines):
        ln = idx + 1
        m = GO_FUNC.match(line)
        if m:
            d = Def(m.group(1), "method" if line.startswith("func (") else "function", path, ln)
            if body_span(src, d, "go", src.offset(ln, m.end() - 1)):
                attach_doc(src, d, "go", GO_DIRECTIVE)
            out.append(d)
            continue
        m = GO_TYPE.match(line)
        if m:
            d = Def(m.group(1), "type", path, ln)
            if m.group(2):
                body_span(src, d, "go", src.offset(ln, m.start(2)))
            elif line.rstrip().endswith(("(", "{")):
                body_span(src, d, "go", src.offset(ln, m.end()))
            else:
                d.end = ln
            out.append(d)
    return out


JAVA_MODS = (r"(?:(?:public|protected|private|static|final|abstract|synchronized|native|default"
             r"|strictfp|transient|@[\w.]+(?:\([^)]*\))?)\s+)*")
JAVA_CLASS = re.compile(r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*" + JAVA_MODS +
                        r"(?:sealed\s+|non-sealed\s+)?(class|interface|enum|record|@interface)\s+([A-Za-z_]\w*)")
JAVA_METHOD = re.compile(r"^\s+(?:@\w+(?:\([^)]*\))?\s+)*" + JAVA_MODS +
                         r"(?:<[^>]*(?:<[^>]*>[^>]*)*>\s+)?([\w.$]+(?:\s*<[^()]*>)?(?:\s*\[\s*\])*)\s+([A-Za-z_$][\w$]*)\s*\(")
JAVA_CTOR = re.compile(r"^\s+(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|protected|private)\s+)?([A-Z][\w$]*)\s*\(")
JAVA_ANNOT = re.compile(r"^\s*@\w+(?:\(.*\))?\s*$")
JAVA_NOT_TYPES = {"return", "new", "else", "throw", "case", "yield", "package", "import", "assert"}


def defs_java(src, path):
    out = []
    for idx, line in enumerate(src.mlines):
        ln = idx + 1
        m = JAVA_CLASS.match(line)
        if m:
            d = Def(m.group(2), m.group(1).lstrip("@"), path, ln)
            body_span(src, d, "java", src.offset(ln, m.end()))
            out.append(d)
            continue
        m = JAVA_METHOD.match(line)
        name = None
        if m and m.group(1) not in JAVA_NOT_TYPES:
            name, end = m.group(2), m.end()
        else:
            m = JAVA_CTOR.match(line)
            if m and m.group(1) not in JAVA_NOT_TYPES:
                name, end = m.group(1), m.end()
        if name and name not in JAVA_NOT_TYPES and name not in ("if", "for", "while", "switch", "catch", "synchronized"):
            d = Def(name, "method", path, ln)
            open_paren = src.offset(ln, end - 1)
            close = _match_paren(src.masked, open_paren)
            if close is None:
                continue
            term = re.compile(r"[{;]").search(src.masked, close + 1)
            if term is None:
                continue
            rest = src.masked[close + 1:term.start()].strip()
            if term.group() == ";":
                if not rest or rest.startswith(("throws", "default")):
                    out.append(d)  # an abstract or interface method: a definition, no body
                continue
            if rest and not rest.startswith("throws"):
                continue  # code between ')' and '{': not a method header
            if body_span(src, d, "java", open_paren):
                attach_doc(src, d, "java", JAVA_ANNOT)
            out.append(d)
    return out


def _match_paren(masked, i):
    depth = 0
    for j in range(i, min(len(masked), i + 5000)):
        ch = masked[j]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return j
    return None


JS_ID = r"[A-Za-z_$][\w$]*"
JS_FUNC = re.compile(r"^\s*(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:async\s+)?function\s*\*?\s*(" + JS_ID + r")\s*[<(]")
JS_CLASS = re.compile(r"^\s*(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:abstract\s+)?class\s+(" + JS_ID + r")")
TS_INTERFACE = re.compile(r"^\s*(?:export\s+)?(?:declare\s+)?interface\s+(" + JS_ID + r")")
TS_TYPE = re.compile(r"^\s*(?:export\s+)?(?:declare\s+)?type\s+(" + JS_ID + r")\s*(?:<.*?>)?\s*=")
TS_ENUM = re.compile(r"^\s*(?:export\s+)?(?:declare\s+)?(?:const\s+)?enum\s+(" + JS_ID + r")")
JS_CONST = re.compile(r"^\s*(?:export\s+)?(?:const|let|var)\s+(" + JS_ID + r")\s*(?::[^=]+)?=(?!=)\s*(.*)$")
JS_METHOD = re.compile(r"^(\s+)(?:(?:public|private|protected|static|async|override|readonly|abstract|get|set|declare)\s+)*\*?\s*(#?" + JS_ID + r")\s*(?:<[^>(]*>)?\s*\(")
JS_PROP_FN = re.compile(r"^\s+(" + JS_ID + r")\s*:\s*(?:async\s+)?(?:function\b|\([^)]*\)\s*=>|" + JS_ID + r"\s*=>)")
JS_ASSIGN_FN = re.compile(r"^\s*(?:module\.)?(?:exports|[\w$]+(?:\.prototype)?)\.(" + JS_ID + r")\s*=\s*(?:async\s+)?function\b")
JS_KEYWORDS = {"if", "for", "while", "switch", "catch", "function", "with", "return", "else",
               "do", "try", "typeof", "new", "await", "yield", "super", "constructor", "import",
               "require", "delete", "void", "throw"}
JS_DECORATOR = re.compile(r"^\s*@[\w$.]+(?:\(.*\))?\s*$")


def defs_js(src, path, lang):
    out = []
    for idx, line in enumerate(src.mlines):
        ln = idx + 1
        m = JS_FUNC.match(line)
        if m:
            d = Def(m.group(1), "function", path, ln)
            # Without a body it is a TypeScript overload signature or a declaration: the
            # implementation is the definition.
            if body_span(src, d, lang, src.offset(ln, m.end() - 1)):
                attach_doc(src, d, lang, JS_DECORATOR)
                out.append(d)
            continue
        m = JS_CLASS.match(line)
        if m:
            d = Def(m.group(1), "class", path, ln)
            body_span(src, d, lang, src.offset(ln, m.end()))
            out.append(d)
            continue
        if lang == "typescript":
            m = TS_INTERFACE.match(line) or TS_ENUM.match(line)
            if m:
                d = Def(m.group(1), "type", path, ln)
                body_span(src, d, lang, src.offset(ln, m.end()))
                out.append(d)
                continue
            m = TS_TYPE.match(line)
            if m:
                d = Def(m.group(1), "type", path, ln)
                end = statement_end(src, src.offset(ln, m.end()))
                if end is not None:
                    d.end = src.line_of(end)
                out.append(d)
                continue
        m = JS_CONST.match(line)
        if m:
            d = Def(m.group(1), "const", path, ln)
            value = m.group(2)
            is_fn = bool(re.match(r"(?:async\s+)?(?:function\b|\(|" + JS_ID + r"\s*=>|<)", value)) and (
                "=>" in line or "function" in value or line.rstrip().endswith(("(", ",")))
            end = statement_end(src, src.offset(ln, m.start(2)))
            if end is not None:
                d.end = src.line_of(end)
                if is_fn:
                    d.kind = "function"
                    if d.end > ln:
                        closing = src.mlines[d.end - 1]
                        if indent_of(closing) != indent_of(line):
                            d.end = None
                    if d.end is not None:
                        attach_doc(src, d, lang, JS_DECORATOR)
            if indent_of(line) == 0 or is_fn:
                out.append(d)
            continue
        m = JS_ASSIGN_FN.match(line)
        if m:
            d = Def(m.group(1), "function", path, ln)
            if body_span(src, d, lang, src.offset(ln, m.end())):
                attach_doc(src, d, lang, JS_DECORATOR)
            out.append(d)
            continue
        m = JS_PROP_FN.match(line)
        if m:
            d = Def(m.group(1), "method", path, ln)
            if body_span(src, d, lang, src.offset(ln, m.end() - 1)):
                attach_doc(src, d, lang, JS_DECORATOR)
                out.append(d)
            continue
        m = JS_METHOD.match(line)
        if m and m.group(2).lstrip("#") not in JS_KEYWORDS:
            paren = src.offset(ln, m.end() - 1)
            close = _match_paren(src.masked, paren)
            if close is None:
                continue
            brace = src.masked.find("{", close)
            between = src.masked[close + 1:brace].strip() if brace >= 0 else ";"
            if between and not (lang == "typescript" and between.startswith(":")):
                continue
            d = Def(m.group(2).lstrip("#"), "method", path, ln)
            if body_span(src, d, lang, paren):
                attach_doc(src, d, lang, JS_DECORATOR)
                out.append(d)
    return out


RB_DEF = re.compile(r"^(\s*)def\s+(?:self\.)?([A-Za-z_]\w*[?!=]?)")
RB_CLASS = re.compile(r"^(\s*)(class|module)\s+(?:[A-Z]\w*::)*([A-Z]\w*)")


def ruby_end(src, idx, indent):
    """Line (1-based) of the `end` closing the block opened at line index idx."""
    for j in range(idx + 1, len(src.lines)):
        line = src.lines[j]
        if not line.strip():
            continue
        ind = indent_of(line)
        stripped = line.strip()
        if ind == indent and re.match(r"end\b", stripped):
            return j + 1
        if ind <= indent and not stripped.startswith(("#", "rescue", "ensure", "else", "elsif", "when", "=begin", "=end")):
            return None
    return None


def defs_ruby(src, path):
    out = []
    heredoc_until = None
    for idx, line in enumerate(src.lines):
        ln = idx + 1
        if heredoc_until:
            if line.strip() == heredoc_until:
                heredoc_until = None
            continue
        h = re.search(r"<<[~-]?(['\"]?)([A-Z_]+)\1", line)
        if h and not line.lstrip().startswith("#"):
            heredoc_until = h.group(2)
        m = RB_DEF.match(line)
        if m:
            d = Def(m.group(2), "method", path, ln)
            rest = line[m.end():]
            if ";" in rest or re.search(r"\)\s*=[^=]|^\s*=[^=]", rest) or re.search(r"\bend\s*$", rest):
                d.end = ln  # one-line method
            else:
                d.end = ruby_end(src, idx, len(m.group(1)))
                if d.end is not None:
                    attach_doc(src, d, "ruby")
            out.append(d)
            continue
        m = RB_CLASS.match(line)
        if m and "<<" not in line.split("#")[0][:m.end() + 2]:
            d = Def(m.group(3), m.group(2), path, ln)
            d.end = ruby_end(src, idx, len(m.group(1)))
            out.append(d)
    return out


C_KEYWORDS = {"if", "else", "while", "for", "do", "switch", "return", "case", "sizeof",
              "typedef", "goto", "break", "continue", "default"}
C_STRUCT = re.compile(r"^(?:typedef\s+)?(struct|union|enum)\s+([A-Za-z_]\w*)\s*\{")
C_TYPEDEF_END = re.compile(r"^\}\s*([A-Za-z_]\w*)\s*;")
C_TYPEDEF = re.compile(r"^typedef\s+[^;{]*?\(?\**\s*([A-Za-z_]\w*)\s*\)?\s*(?:\(.*\))?\s*;")
C_DEFINE = re.compile(r"^\s*#\s*define\s+([A-Za-z_]\w*)")
C_SKIP_ABOVE = re.compile(r"^\s*(?:static\s+)?(?:BROTLI_\w+|LUAI?_\w+|l_\w+)\s*$")


def defs_c(src, path):
    out = []
    lines = src.mlines
    idx = 0
    while idx < len(lines):
        line = lines[idx]
        ln = idx + 1
        m = C_DEFINE.match(line)
        if m:
            out.append(Def(m.group(1), "macro", path, ln, ln))
            idx += 1
            continue
        m = C_STRUCT.match(line)
        if m:
            d = Def(m.group(2), m.group(1), path, ln)
            body_span(src, d, "c", src.offset(ln, m.end() - 1))
            out.append(d)
            if d.end:
                t = C_TYPEDEF_END.match(lines[d.end - 1])
                if t and line.startswith("typedef"):
                    out.append(Def(t.group(1), "type", path, ln, d.end))
            idx += 1
            continue
        m = C_TYPEDEF.match(line)
        if m:
            out.append(Def(m.group(1), "type", path, ln, ln))
            idx += 1
            continue
        if not line or not (line[0].isalpha() or line[0] == "_") or line.startswith(("typedef", "extern \"")):
            idx += 1
            continue
        first_word = re.match(r"\w+", line).group(0)
        if first_word in C_KEYWORDS:
            idx += 1
            continue
        # Gather the header up to the first '{' or ';' (at most 8 lines).
        start_off = src.offset(ln)
        header_end = None
        for j in range(start_off, min(len(src.masked), start_off + 2000)):
            if src.masked[j] in "{;":
                header_end = j
                break
        if header_end is None or src.masked[header_end] == ";" or src.line_of(header_end) - ln > 8:
            idx += 1
            continue
        header = src.masked[start_off:header_end]
        if "=" in header or "#" in header:
            idx += 1
            continue
        hm = re.match(r"^([^()]*?)\b([A-Za-z_]\w*)\s*\(\s*([A-Za-z_]\w*)\s*\)\s*\(", header) \
            or re.match(r"^([^()]*?)\(\s*([A-Za-z_]\w*)\s*\)\s*\(", header) \
            or re.match(r"^([^()]*?)\b([A-Za-z_]\w*)\s*\(", header)
        if not hm:
            idx += 1
            continue
        groups = hm.groups()
        name = groups[2] if len(groups) == 3 and groups[2] and re.fullmatch(r"[A-Z_]+", groups[1]) else groups[1]
        if not hm.group(1).strip() and header.lstrip().startswith(name + "(") and idx > 0 \
                and not lines[idx - 1].strip():
            # A bare `Name(...)` at column 0 with nothing before: a macro call, not a definition.
            idx += 1
            continue
        # The text after the parameter list must be empty: `) {`.
        close = header.rfind(")")
        if close < 0 or header[close + 1:].strip():
            idx += 1
            continue
        d = Def(name, "function", path, ln)
        if body_span(src, d, "c", start_off + close + 1):
            # Closing brace at column 0 is the C layout of every package here.
            attach_doc(src, d, "c", C_SKIP_ABOVE)
            out.append(d)
            idx = d.end
            continue
        idx += 1
    return out


def extract_defs(src, path, language):
    if language == "python":
        return defs_python(src, path)
    if language == "rust":
        return defs_rust(src, path)
    if language == "go":
        return defs_go(src, path)
    if language == "java":
        return defs_java(src, path)
    if language in ("javascript", "typescript"):
        return defs_js(src, path, language)
    if language == "ruby":
        return defs_ruby(src, path)
    if language == "c":
        return defs_c(src, path)
    raise ValueError(language)


# ---------------------------------------------------------------- query text

STOPWORDS = set("""a an the of to in on for and or is are be this that it its with by from as at
returns return get gets set sets new create creates given if when whether into true false
value values object function method instance specified current""".split())
BAD_START = ("see ", "an alias", "exported for", "same as", "alias", "deprecated", "todo", "fixme", "xxx", "note:", "safety",
             "internal", "private", "inherit", "{@inheritdoc", "@", "#", "overrides", "override",
             "implements", "implementation of", "equivalent to", "like ", "shorthand",
             "helper", "wrapper", "copied from", "ported from", "this is", "used by", "called by",
             "hack", "workaround", "compat", "for backwards", "legacy", "^", "...", "e.g", "eslint",
             "istanbul", "ts-", "prettier", "noinspection", "nolint", "rubocop", ":nodoc:")


def name_words(name):
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    spaced = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", spaced)
    return {w.lower() for w in re.split(r"[\W_]+", spaced) if w}


def clean_doc(lines, language):
    """The first sentence of the first paragraph, or None."""
    para = []
    for raw in lines:
        s = raw.strip()
        if language == "java" or language in ("javascript", "typescript"):
            if s.startswith("@"):
                break
        if language == "ruby" and (s.startswith("====") or re.match(r"@\w+", s)):
            break
        if language == "rust" and s.startswith("#"):
            break
        if language == "python" and re.match(r":(param|returns?|raises?|type|rtype)\b", s):
            break
        if language == "python" and re.match(r"^(Args|Arguments|Returns|Raises|Parameters|Example|Examples)\s*:?$", s):
            break
        if language == "python" and re.match(r"^[-=~]{3,}$", s):
            break
        if not s:
            if para:
                break
            continue
        para.append(s)
    if not para:
        return None
    text = " ".join(para)
    if language == "java":
        text = re.sub(r"\{@(?:link|linkplain|code|literal|value)\s+([^}]*)\}", r"\1", text)
        text = re.sub(r"</?[a-zA-Z][^>]*>", "", text)
        text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    if language in ("javascript", "typescript"):
        text = re.sub(r"\{@(?:link|linkcode|linkplain)\s+([^}|]*)(?:\|[^}]*)?\}", r"\1", text)
    text = re.sub(r"\s+", " ", text).strip()
    # The first sentence: up to a '.', '!' or '?' followed by a space and not part of an
    # abbreviation, or the end of the paragraph.
    m = None
    for m in re.finditer(r"[.!?](?=\s|$)", text):
        before = text[:m.start()].split(" ")[-1].lower()
        if before in ("e.g", "i.e", "etc", "vs", "cf", "resp", "approx", "no", "eg", "ie"):
            continue
        nxt = text[m.end():].lstrip()[:1]
        if nxt and (nxt.islower() or nxt.isdigit()):
            continue
        text = text[:m.end()]
        break
    return text.strip()


def query_from_doc(d, language):
    if not d.doc:
        return None
    text = clean_doc(d.doc, language)
    if not text:
        return None
    words = text.split()
    # Go (and often Ruby and Java) doc comments open with the name they document:
    # "NewRouter returns ...". The name would turn the query into an identifier lookup.
    if words and words[0].strip("`'\"*():,.") == d.name:
        words = words[1:]
        if words and words[0].lower() in ("-", "--", ":", "—"):
            words = words[1:]
    text = " ".join(words)
    low = text.lower()
    if not (MIN_WORDS <= len(words) <= MAX_WORDS):
        return None
    if re.search(r"\btesting purposes\b|\bfor tests? only\b|\bonly for tests?\b", low):
        return None
    if low.startswith(BAD_START) or any(t in text for t in (
            "=", "---", "***", "TODO", "FIXME", "XXX", "{{", "}}", "http://", "https://", "|")):
        return None
    alpha = [w for w in words if re.fullmatch(r"[A-Za-z][A-Za-z'’-]*[.,;:!?)]*", w)]
    if len(alpha) < 0.6 * len(words):
        return None  # code, tables or commented-out statements rather than prose
    content = [w for w in re.findall(r"[a-z0-9]+", low) if w not in STOPWORDS]
    novel = [w for w in content if w not in name_words(d.name)]
    if len(novel) < 2:
        return None  # mostly restates the name
    return text


# ---------------------------------------------------------------- generation

LOOSE_KEYWORD_DEF = re.compile(
    r"\b(?:def|fn|func|class|struct|enum|trait|interface|type|module|union|macro_rules!)\s+"
    r"(?:\([^)]*\)\s*)?(?:self\.)?([A-Za-z_$][\w$]*[?!]?)")
LOOSE_CALL_LIKE = re.compile(r"(?<![\w$.])([A-Za-z_$][\w$]*)\s*(?:<[^<>()]*>)?\s*\(")
LOOSE_NOT_NAMES = JS_KEYWORDS | C_KEYWORDS | {"catch", "synchronized", "elif", "unless", "until"}


def loose_definitions(src):
    """Names on lines that look like a definition by a loose rule: a definition keyword, or
    `name(...)` on a line that opens a block. The identifier queries use it to throw out
    names that the precise patterns may have seen only once but that are defined elsewhere
    too (a form the patterns do not know)."""
    names = []
    for line in src.mlines:
        found = [m.group(1) for m in LOOSE_KEYWORD_DEF.finditer(line)]
        names.extend(found)
        stripped = line.strip()
        if not found and stripped.endswith("{") and "=" not in stripped.split("(")[0]:
            m = LOOSE_CALL_LIKE.search(stripped)
            if m and m.group(1) not in LOOSE_NOT_NAMES and not stripped.startswith(("return", "new ", "} else")):
                names.append(m.group(1))
    return names


def gather(root, language):
    """All definitions of the package, and the runtime file list."""
    defs, runtime = [], []
    loose = {}
    for rel in list_files(root, language):
        text = read_text(os.path.join(root, rel))
        if text is None:
            continue
        src = Source(text, language)
        for name in loose_definitions(src):
            loose[name] = loose.get(name, 0) + 1
        file_defs = extract_defs(src, rel, language)
        for d in file_defs:
            d_runtime = is_runtime_path(rel)
            defs.append((d, d_runtime))
        if is_runtime_path(rel):
            runtime.append(rel)
    return defs, loose


def spread_sample(candidates, k, rng, too_similar=None):
    """Up to k items, spread over files: a shuffled round robin, one per file per round.
    An item too similar to one already taken is passed over."""
    by_file = {}
    for c in candidates:
        first = c[0][0] if isinstance(c[0], list) else c[0]
        by_file.setdefault(first.path, []).append(c)
    files = sorted(by_file)
    rng.shuffle(files)
    for f in files:
        rng.shuffle(by_file[f])
    out = []
    while len(out) < k and any(by_file[f] for f in files):
        for f in files:
            while by_file[f] and len(out) < k:
                c = by_file[f].pop()
                if too_similar is None or not any(too_similar(c, o) for o in out):
                    out.append(c)
                    break
    return out


def word_set(text):
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def near_duplicate(a, b):
    """Queries sharing most of their words ("return the int value of a flag with the given
    name" and its string twin) test the same thing twice."""
    wa, wb = word_set(a[1]), word_set(b[1])
    return len(wa & wb) / max(1, len(wa | wb)) >= 0.6


def doc_template(query):
    words = query.split()
    out = []
    for i, w in enumerate(words):
        identifier_like = ((i > 0 and w[:1].isupper()) or any(ch.isdigit() or ch in "_`[]" for ch in w)
                           or any(ch.isupper() for ch in w[1:]))
        out.append("*" if identifier_like else w.lower())
    return " ".join(out)


def followed_by_gap(d, root):
    with open(os.path.join(root, d.path), encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    nxt = lines[d.end].strip() if d.end < len(lines) else ""
    return nxt == "" or nxt.startswith(("#", "}"))


def generate_repo(pkg, root, seed):
    language = pkg["language"]
    repo = pkg["name"]
    if language not in EXTENSIONS:
        return [], {"docstring": 0, "identifier": 0, "docstring_candidates": 0,
                    "identifier_candidates": 0, "definitions": 0}
    defs, loose = gather(root, language)

    # docstring -> function
    doc_queries = {}
    for d, rt in defs:
        if d.is_function and d.doc is not None:
            q = query_from_doc(d, language)
            if q:
                doc_queries.setdefault(q.lower().rstrip("."), []).append((d, rt, q))
    doc_cands = []
    for key, items in doc_queries.items():
        # The same sentence on two functions (a string and a bytes variant of one API, say)
        # makes both of them right answers; more than two is boilerplate and is left out.
        if len(items) > 2:
            continue
        if not all(rt and d.end is not None and d.end - d.start >= 2 and d.doc_start is not None
                   for d, rt, _ in items):
            continue
        if language == "c" and not all(followed_by_gap(d, root) for d, _, _ in items):
            continue  # a comment over a run of functions describes the group, not this one
        doc_cands.append(([d for d, _, _ in items], items[0][2]))
    doc_cands.sort(key=lambda c: (c[0][0].path, c[0][0].start))
    # Boilerplate docs that differ only in a type or an identifier ("IntVarP is like IntVar,
    # but ...", once per flag type) would crowd out everything else: one per template.
    rng = random.Random(f"satori-bench:{seed}:{repo}:template")
    by_template = {}
    for c in doc_cands:
        by_template.setdefault(doc_template(c[1]), []).append(c)
    doc_cands = [group[rng.randrange(len(group))] if len(group) > 1 else group[0]
                 for group in by_template.values()]
    doc_cands.sort(key=lambda c: (c[0][0].path, c[0][0].start))
    rng = random.Random(f"satori-bench:{seed}:{repo}:docstring")
    picked_doc = spread_sample(doc_cands, DOCSTRING_PER_REPO, rng, near_duplicate)
    picked_doc.sort(key=lambda c: (c[0][0].path, c[0][0].start))

    # identifier -> definition
    counts = {}
    for d, _ in defs:
        counts[d.name] = counts.get(d.name, 0) + 1
    id_cands = []
    for d, rt in defs:
        if (rt and counts[d.name] == 1 and (language == "python" or loose.get(d.name, 0) <= 1)
                and d.end is not None and len(d.name) >= MIN_IDENT_LEN
                and d.kind not in ("macro", "const") and not d.name.startswith("__")
                and not re.fullmatch(r"[A-Z0-9_]+", d.name)):
            id_cands.append((d, d.name))
    id_cands.sort(key=lambda c: (c[0].path, c[0].start))
    rng = random.Random(f"satori-bench:{seed}:{repo}:identifier")
    picked_id = spread_sample(id_cands, IDENTIFIER_PER_REPO, rng)
    picked_id.sort(key=lambda c: (c[0].path, c[0].start))

    out = []
    for i, (ds, q) in enumerate(picked_doc, 1):
        out.append({"id": f"{repo}-doc-{i:02d}", "repo": repo, "kind": "docstring", "query": q,
                    "category": "docstring", "language": language, "symbol": ds[0].name,
                    "gold": [{"path": d.path, "start_line": d.start, "end_line": d.end} for d in ds],
                    "blank": [{"path": d.path, "start_line": d.doc_start, "end_line": d.doc_end}
                              for d in ds]})
    for i, (d, q) in enumerate(picked_id, 1):
        out.append({"id": f"{repo}-id-{i:02d}", "repo": repo, "kind": "identifier", "query": q,
                    "category": "identifier", "language": language, "symbol": d.name,
                    "gold": [{"path": d.path, "start_line": d.start, "end_line": d.end}],
                    "blank": []})
    stats = {"definitions": len(defs), "docstring_candidates": len(doc_cands),
             "identifier_candidates": len(id_cands), "docstring": len(picked_doc),
             "identifier": len(picked_id)}
    return out, stats


COMMENT_LINE = {
    "rust": re.compile(r"^\s*///"),
    "go": re.compile(r"^\s*//"),
    "ruby": re.compile(r"^\s*#"),
}


def validate(queries, root):
    """Problems with the generated spans: blanked lines that are not only comment, a blank
    range that touches the code of the gold, a gold that does not start at its definition or
    does not end where its body closes."""
    problems = []
    cache = {}

    def lines_of(path):
        if path not in cache:
            with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                cache[path] = f.read().split("\n")
        return cache[path]

    for q in queries:
        lang = q["language"]
        for n, g in enumerate(q["gold"]):
            lines = lines_of(g["path"])
            first, last = lines[g["start_line"] - 1], lines[g["end_line"] - 1].strip()
            if n == 0 and q["symbol"] not in first and not (lang == "c" and q["symbol"] in lines[g["start_line"]]):
                problems.append(f"{q['id']}: gold line {g['start_line']} does not name {q['symbol']}")
            if lang in ("rust", "go", "java", "javascript", "typescript", "c") and g["end_line"] > g["start_line"]:
                if not last.startswith("}") and not (lang == "typescript" and last.endswith(";")):
                    problems.append(f"{q['id']}: gold ends at {last!r}")
            if lang == "ruby" and g["end_line"] > g["start_line"] and last != "end":
                problems.append(f"{q['id']}: gold ends at {last!r}")
        for b in q["blank"]:
            lines = lines_of(b["path"])
            block = lines[b["start_line"] - 1:b["end_line"]]
            if lang == "python":
                text = "\n".join(block).strip()
                ok = text[:1] in "\"'rRbBuU" and text[-1:] in "\"'"
            elif lang in COMMENT_LINE:
                ok = all(COMMENT_LINE[lang].match(x) for x in block)
            else:
                text = "\n".join(block).strip()
                ok = text.startswith("/*") and text.endswith("*/") and text.count("*/") == 1
            if not ok:
                problems.append(f"{q['id']}: blank {b['path']}:{b['start_line']}-{b['end_line']} is not a lone comment")
            for g in q["gold"]:
                if g["path"] == b["path"] and b["start_line"] >= g["start_line"] and lang != "python":
                    if b["start_line"] <= g["end_line"]:
                        problems.append(f"{q['id']}: blank range inside the gold span")
    return problems


def show(queries, root, n, out=sys.stderr):
    for q in queries[:n]:
        g = q["gold"][0]
        with open(os.path.join(root, g["path"]), encoding="utf-8", errors="replace") as f:
            lines = f.read().split("\n")
        print(f"--- {q['id']} [{q['kind']}] {q['query']!r}", file=out)
        print(f"    gold {g['path']}:{g['start_line']}-{g['end_line']}", file=out)
        for b in q["blank"][:1]:
            shown = sorted({b["start_line"], b["end_line"]})
            if b["start_line"] > 1:
                print(f"  - {b['start_line'] - 1:5d} {lines[b['start_line'] - 2][:110]}", file=out)
            for ln in shown:
                print(f"  B {ln:5d} {lines[ln - 1][:110]}", file=out)
        for g2 in q["gold"][1:]:
            print(f"    also {g2['path']}:{g2['start_line']}-{g2['end_line']}", file=out)
        s, e = g["start_line"], g["end_line"]
        for ln in range(s, min(e, s + 2) + 1):
            print(f"  G {ln:5d} {lines[ln - 1][:110]}", file=out)
        if e > s + 2:
            print("          ...", file=out)
            print(f"  G {e:5d} {lines[e - 1][:110]}", file=out)
        if e < len(lines):
            print(f"  + {e + 1:5d} {lines[e][:110]}", file=out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", help="corpus cache (default: $SATORI_BENCH_CACHE or ~/.cache/satori-bench/corpus)")
    ap.add_argument("--only", help="comma-separated package names")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--out", default=GENERATED_DIR, help="output directory (default: bench/quality/generated)")
    ap.add_argument("--show", type=int, default=0, metavar="N",
                    help="print N queries per package with the source at their gold (stderr)")
    ap.add_argument("--check", action="store_true",
                    help="compare with the files in --out instead of writing them; exit 1 on a difference")
    args = ap.parse_args(argv)

    try:
        packages = fetch_corpus.select(fetch_corpus.load_corpus(fetch_corpus.DEFAULT_CORPUS), args.only)
    except fetch_corpus.CorpusError as e:
        log(f"error: {e}")
        return 1
    cache = fetch_corpus.resolve_cache(args.cache)
    missing = [p["name"] for p in packages
               if not fetch_corpus.is_ready(p, os.path.join(cache, "src", p["name"]))]
    if missing:
        log(f"fetching {', '.join(missing)}")
        fetch_args = ["--cache", cache, "--only", ",".join(missing)]
        import contextlib
        import io
        with contextlib.redirect_stdout(io.StringIO()):
            rc = fetch_corpus.main(fetch_args)
        if rc != 0:
            log("error: the corpus could not be fetched")
            return 1

    summary, differ = {}, []
    os.makedirs(args.out, exist_ok=True)
    for pkg in packages:
        root = os.path.join(cache, "src", pkg["name"], pkg["root"])
        queries, stats = generate_repo(pkg, root, args.seed)
        problems = validate(queries, root)
        for p in problems:
            log(f"warning: {p}")
        text = "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries)
        dest = os.path.join(args.out, f"{pkg['name']}.jsonl")
        if args.check:
            try:
                with open(dest, encoding="utf-8") as f:
                    same = f.read() == text
            except OSError:
                same = False
            if not same:
                differ.append(pkg["name"])
        else:
            with open(dest, "w", encoding="utf-8") as f:
                f.write(text)
        log(f"{pkg['name']}: {stats['docstring']} docstring, {stats['identifier']} identifier "
            f"queries (from {stats['docstring_candidates']} / {stats['identifier_candidates']} "
            f"candidates, {stats['definitions']} definitions)")
        summary[pkg["name"]] = stats
        if args.show:
            docs = [q for q in queries if q["kind"] == "docstring"]
            ids = [q for q in queries if q["kind"] == "identifier"]
            show(docs[:args.show] + ids[:max(1, args.show // 3)], root, args.show + args.show // 3 + 1)
    result = {"seed": args.seed, "out": os.path.abspath(args.out), "packages": summary,
              "totals": {"docstring": sum(s["docstring"] for s in summary.values()),
                         "identifier": sum(s["identifier"] for s in summary.values())}}
    if args.check:
        result["differ"] = differ
    json.dump(result, sys.stdout, indent=2)
    print()
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
