#!/usr/bin/env python3
"""Mines (description, code) pairs for fine-tuning a code-aware teacher.

Three kinds of pair are taken from the registry packages pinned in `mine_corpus.json`:

  doc      a doc comment or docstring and the definition it documents, with the comment
           removed from the code (the rules of `pairs.py`, plus C++, C#, PHP, Kotlin, Scala,
           Swift, Haskell and Lua);
  readme   a Markdown or reStructuredText section (its heading and first paragraph, or a
           Sphinx `.. function:: name` directive and its text) and the definition or source
           file it names, when exactly one identifier or module of the package matches;
  test     a test name and the function under test, when the name contains, token for
           token, an identifier defined exactly once outside the tests of the same package
           (`test_parse_header` -> `parse_header`, `TestParseHeader` -> `ParseHeader`,
           `it("parseHeader rejects ...")` -> `parseHeader`).

The code side is what Satori embeds for a chunk: the path, a newline, then the code (at
most 60 lines and 2,000 characters); descriptions have at most 64 words.

What may be mined is decided by `exclusion.py`, as for every other training input: the run
refuses to start when a pin is an excluded project (by name in any packaging, or by URL), a
package whose metadata names an excluded project's repository gives nothing, and files are
skipped by place (vendored directories, directories named after an excluded project) and by
content (copies of benchmark texts). What each package gave and lost is merged into
`manifests/mine.json`.

Usage:
  scripts/distill/mine.py                       # fetch, verify, mine, merge
  scripts/distill/mine.py --only NAME,NAME      # a subset of the pins
  scripts/distill/mine.py --self-test           # extraction rules and the exclusion check

Downloads are cached under --cache and each package's pairs are written once under
--out/packages/, so a re-run skips finished packages; the merge into one deduplicated JSONL
file per language and stats.json is redone at the end of every run. Progress goes to
stderr, a JSON summary to stdout. Python 3.11 standard library only.
"""
import argparse
import ast
import glob
import hashlib
import io
import json
import os
import re
import sys
import tarfile
import time
import urllib.request
import zipfile
from concurrent.futures import ProcessPoolExecutor, as_completed

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import pairs  # noqa: E402  (the doc-comment rules of the tuning step)
import exclusion  # noqa: E402  (the one list of what no model is trained on)

sys.path.insert(0, os.path.join(ROOT, "bench", "quality"))
from fetch_corpus import sha256_of  # noqa: E402  (one way to hash an archive)

DEFAULT_CORPUS = os.path.join(HERE, "mine_corpus.json")
DEFAULT_CACHE = os.path.join("~", ".cache", "satori-distill", "mine")
DEFAULT_OUT = os.path.join("~", ".cache", "satori-distill", "pairs")
USER_AGENT = "satori-distill-mine/1"
MAX_WORDS = 64
MAX_CODE_LINES = 60
MAX_CODE_CHARS = 2000
MAX_FILE_BYTES = 512 * 1024

LANGUAGES = dict(pairs.SOURCE_LANGUAGES)
LANGUAGES.update({".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp",
                  ".hxx": "cpp", ".h": "c", ".cs": "csharp", ".php": "php", ".kt": "kotlin",
                  ".scala": "scala", ".swift": "swift", ".hs": "haskell", ".lua": "lua",
                  ".tsx": "typescript", ".cjs": "javascript", ".jsx": "javascript"})
DOC_FILES = (".md", ".markdown", ".rst", ".txt")


def log(msg):
    print(f"mine: {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ text

def clean_doc(text):
    """Markup out of documentation: XML doc tags, Javadoc inline tags, HTML, Haddock marks."""
    m = re.search(r"<summary>(.*?)</summary>", text, re.S)
    if m:
        text = m.group(1)
    text = re.sub(r"<(?:see|paramref|typeparamref)\s+\w+=[\"'](?:[A-Z]:)?([^\"']+)[\"']\s*/?>", r"\1", text)
    text = re.sub(r"\{@\w+\s+([^}]*)\}", r"\1", text)
    text = re.sub(r"</?[A-Za-z][^>]*>", "", text)
    text = re.sub(r"^\s*[|^$*]\s?", "", text)
    text = re.sub(r"^\s*!", "", text)  # the rest of a `/*!` opener
    # Doxygen and qdoc commands: `\brief text` keeps its text, other `\cmd ...` lines go
    text = re.sub(r"(?m)^\s*[\\@](brief|short|details)\s+", "", text)
    text = re.sub(r"(?m)^\s*[\\@]\w+\b.*$", "", text)
    # a gtk-doc symbol line (`g_list_append:`) before the description
    text = re.sub(r"^\s*(SECTION:)?[\w:.]+:\s*(\([^)]*\)\s*)*(\n\s*\n|$)", "", text.lstrip("\n"))
    return text.strip("\n")


BOILERPLATE = re.compile(r"(copyright|license|licensed|spdx|this file is (part|distributed)|"
                         r"author|\$id|\(c\)|vim:|-\*-|generated|auto-generated|do not edit|"
                         r"todo|fixme|xxx|note:|deprecated)(?!\w)", re.I)


def first_sentence(doc):
    """pairs.first_sentence, not cut at `e.g.`/`i.e.`, without leading rules and bullets."""
    protected = re.sub(r"\b(e\.g|i\.e|etc|vs|cf)\.", lambda m: m.group(1).replace(".", "\x00") + "\x01", doc)
    s = pairs.first_sentence(protected).replace("\x00", ".").replace("\x01", ".")
    return re.sub(r"^[-=*#/\s]+", "", s)


def clip_words(text, n=MAX_WORDS):
    w = text.split()
    return " ".join(w[:n])


def clip_code(path, code):
    lines = code.strip("\n").split("\n")[:MAX_CODE_LINES]
    body = "\n".join(line.rstrip() for line in lines)
    out = path + "\n" + body
    if len(out) > MAX_CODE_CHARS:
        cut = out.rfind("\n", 0, MAX_CODE_CHARS)
        out = out[:cut if cut > len(path) else MAX_CODE_CHARS]
    return out


def split_identifier(name):
    """`parseHTTPHeader_v2` -> ['parse', 'http', 'header', 'v2']."""
    parts = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    parts = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", parts)
    return [p.lower() for p in re.split(r"[^A-Za-z0-9]+", parts) if p]


# ------------------------------------------------------------------ item ends

def brace_end(lines, start):
    """The end of a brace-delimited item; an item with no brace ends at a blank line."""
    return pairs.item_end(lines, start, blank_ends=True)


def keyword_end(lines, start, word="end"):
    """The line holding `end` at the indentation of the item at `start` (Ruby, Lua)."""
    indent = len(lines[start]) - len(lines[start].lstrip())
    if re.search(r"\bend\)?,?\s*$", lines[start]) and start and "function" in lines[start]:
        return start
    for k in range(start + 1, min(len(lines), start + pairs.MAX_ITEM_LINES)):
        line = lines[k]
        if re.match(r"\s*" + word + r"\b", line) and len(line) - len(line.lstrip()) == indent:
            return k
    return None


def haskell_end(lines, start):
    """A top-level Haskell declaration: the signature and the equations that follow, up to
    the next column-0 line of another name."""
    name = lines[start].split()[0] if lines[start].split() else ""
    end = start
    for k in range(start + 1, min(len(lines), start + pairs.MAX_ITEM_LINES)):
        line = lines[k]
        if not line.strip():
            continue
        if line[0] in " \t" or line.startswith(name + " ") or line.startswith("  "):
            end = k
            continue
        break
    else:
        return None if start + pairs.MAX_ITEM_LINES < len(lines) else end
    return end


# ------------------------------------------------------------------ doc rules

ITEM_CPP = re.compile(r"\s*(?!(return|if|for|while|switch|else|do|case|goto|using|#|//|/\*)\b)"
                      r"(template\s*<.*>\s*)?((class|struct|enum|union|namespace)\s+\w|"
                      r"[\w:<>,*&~\s]+\([^;]*$|[\w:<>,*&~\s]+\(.*\)\s*(const)?\s*(override)?\s*\{)")
ITEM_CS = re.compile(r"\s*((public|protected|private|internal|static|sealed|abstract|virtual|"
                     r"override|async|readonly|partial|unsafe|extern|new)\s+)*"
                     r"(class\b|interface\b|enum\b|struct\b|record\b|[\w<>\[\],.? ]+\s+\w+\s*(<[^>]*>)?\s*\()")
ITEM_PHP = re.compile(r"\s*((public|protected|private|static|final|abstract)\s+)*"
                      r"(function\b|class\b|interface\b|trait\b|enum\b)")
ITEM_KT = re.compile(r"\s*((public|private|internal|protected|open|override|suspend|inline|data|"
                     r"sealed|abstract|operator|infix|tailrec|enum|annotation|value|final|"
                     r"implicit|lazy|case|mutating|static|class|@\w+)\s+)*"
                     r"(fun|class|interface|object|trait|def|func|struct|enum|protocol|extension|init)\b")
ITEM_HS = re.compile(r"([a-z_][\w']*\s*::|(data|newtype|class|type)\s+[A-Z])")
ITEM_LUA = re.compile(r"\s*(local\s+)?(function\s+[\w.:]+|[\w.]+\s*=\s*function\b)")


BRIEF = re.compile(r"(/\*[*!]|\*|///|//!)(\s*)[@\\](brief|short)\s+")


def cpp_items(text):
    text = BRIEF.sub(r"\1\2", text)  # `@brief Text` is the text (pairs drops `@` lines)
    for opener in ("/**", "/*!"):  # Doxygen, and Qt's qdoc
        yield from pairs.jsdoc_items(text, ITEM_CPP.match, opener=opener,
                                     between=lambda line: line.strip().startswith("template"))
    yield from pairs.line_comment_items(text, "///", ITEM_CPP,
                                        lambda line: line.strip().startswith("template"),
                                        end_of=brace_end)


def c_items(text):
    text = BRIEF.sub(r"\1\2", text)
    yield from pairs.c_items(text)
    yield from pairs.line_comment_items(text, "///", pairs.ITEM_C, end_of=brace_end)


def cs_items(text):
    for doc, code in pairs.line_comment_items(
            text, "///", ITEM_CS, lambda line: line.strip().startswith("["), end_of=brace_end):
        yield clean_doc(doc), code


def php_items(text):
    return pairs.jsdoc_items(text, ITEM_PHP.match, between=lambda l: l.strip().startswith("#["))


def kotlin_items(text):
    """Kotlin, Scala and Swift: KDoc/Scaladoc blocks and Swift `///` runs."""
    yield from pairs.jsdoc_items(text, ITEM_KT.match,
                                 between=lambda line: line.strip().startswith("@"))
    yield from pairs.line_comment_items(text, "///", ITEM_KT,
                                        lambda line: line.strip().startswith("@"),
                                        end_of=brace_end)


def haskell_items(text):
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if not lines[i].startswith("-- |"):
            i += 1
            continue
        doc = [lines[i][4:].strip()]
        j = i + 1
        while j < len(lines) and lines[j].startswith("--"):
            doc.append(lines[j].lstrip("-").strip())
            j += 1
        if j < len(lines) and ITEM_HS.match(lines[j]):
            end = haskell_end(lines, j)
            if end is not None:
                yield "\n".join(doc), "\n".join(lines[j:end + 1])
        i = j


def lua_items(text):
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if not lines[i].strip().startswith("---"):
            i += 1
            continue
        doc = []
        j = i
        while j < len(lines) and lines[j].strip().startswith("--"):
            body = lines[j].strip().lstrip("-").strip()
            if not body.startswith("@") and not body.startswith("["):
                doc.append(body)
            j += 1
        if j < len(lines) and ITEM_LUA.match(lines[j]):
            end = keyword_end(lines, j)
            if end is not None:
                yield "\n".join(doc), "\n".join(lines[j:end + 1])
        i = j


def js_items(text):
    for doc, code in pairs.jsdoc_items(text):
        yield clean_doc(doc), code


def java_items(text):
    for doc, code in pairs.java_items(text):
        yield clean_doc(doc), code


DOC_RULES = dict(pairs.EXTRACTORS)
DOC_RULES.update({"c": c_items, "cpp": cpp_items, "csharp": cs_items, "php": php_items,
                  "kotlin": kotlin_items, "scala": kotlin_items, "swift": kotlin_items,
                  "haskell": haskell_items, "lua": lua_items, "javascript": js_items,
                  "java": java_items})


# ------------------------------------------------------------------ definitions

KEYWORDS = {"if", "for", "while", "switch", "catch", "return", "function", "else", "do", "case",
            "sizeof", "new", "throw", "typeof", "await", "super", "this", "elif", "match",
            "with", "synchronized", "using", "foreach", "lock", "defined", "assert"}
DEF_RULES = {
    "go": [re.compile(r"func\s+(?:\([^)]*\)\s*)?(\w+)"), re.compile(r"type\s+(\w+)")],
    "rust": [re.compile(r"\s*(?:pub(?:\([^)]*\))?\s+)?(?:(?:async|const|unsafe|extern\s+\"[^\"]*\")\s+)*"
                        r"(?:fn|struct|enum|trait|union)\s+(\w+)")],
    "javascript": [re.compile(r"\s*(?:export\s+)?(?:default\s+)?(?:async\s+)?function\s*\*?\s*(\w+)"),
                   re.compile(r"\s*(?:export\s+)?(?:const|let|var)\s+(\w+)\s*=\s*(?:async\s*)?"
                              r"(?:function\b|\([^)]*\)\s*=>|\w+\s*=>)"),
                   re.compile(r"\s*(?:export\s+)?(?:default\s+)?(?:abstract\s+)?class\s+(\w+)"),
                   re.compile(r"\s+(?:(?:static|async|get|set)\s+)*(\w+)\s*\([^)]*\)\s*\{\s*$")],
    "typescript": [re.compile(r"\s*(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:async\s+)?function\s*\*?\s*(\w+)"),
                   re.compile(r"\s*(?:export\s+)?(?:const|let|var)\s+(\w+)\s*(?::[^=]+)?=\s*(?:async\s*)?"
                              r"(?:function\b|\([^)]*\)\s*(?::[^=]+)?=>|\w+\s*=>)"),
                   re.compile(r"\s*(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:abstract\s+)?"
                              r"(?:class|interface)\s+(\w+)"),
                   re.compile(r"\s+(?:(?:public|private|protected|static|async|readonly|override|"
                              r"abstract|get|set)\s+)*(\w+)\s*(?:<[^>]*>)?\([^)]*\)\s*(?::[^{]+)?\{\s*$")],
    "java": [re.compile(r"\s*(?:(?:public|protected|private|static|final|abstract|synchronized|"
                        r"native|default)\s+)*(?:<[^>]+>\s+)?[\w<>\[\],.?]+\s+(\w+)\s*\([^;]*$"),
             re.compile(r"\s*(?:(?:public|protected|private|static|final|abstract)\s+)*"
                        r"(?:class|interface|enum|record)\s+(\w+)")],
    "csharp": [re.compile(r"\s*(?:(?:public|protected|private|internal|static|sealed|abstract|"
                          r"virtual|override|async|readonly|partial|unsafe|extern|new)\s+)*"
                          r"[\w<>\[\],.?]+\s+(\w+)\s*(?:<[^>]*>)?\([^;]*$"),
               re.compile(r"\s*(?:(?:public|protected|private|internal|static|sealed|abstract|"
                          r"partial)\s+)*(?:class|interface|enum|struct|record)\s+(\w+)")],
    "php": [re.compile(r"\s*(?:(?:public|protected|private|static|final|abstract)\s+)*"
                       r"function\s+&?(\w+)"),
            re.compile(r"\s*(?:(?:final|abstract)\s+)*(?:class|interface|trait|enum)\s+(\w+)")],
    "kotlin": [re.compile(r"\s*(?:(?:public|private|internal|protected|open|override|suspend|"
                          r"inline|operator|infix|tailrec)\s+)*fun\s+(?:<[^>]+>\s+)?(?:[\w.]+\.)?(\w+)"),
               re.compile(r"\s*(?:\w+\s+)*(?:class|interface|object)\s+(\w+)")],
    "scala": [re.compile(r"\s*(?:(?:private|protected|override|final|implicit|lazy)\s+)*def\s+(\w+)"),
              re.compile(r"\s*(?:\w+\s+)*(?:class|trait|object)\s+(\w+)")],
    "swift": [re.compile(r"\s*(?:(?:public|private|internal|open|fileprivate|static|final|"
                         r"override|mutating|@\w+)\s+)*func\s+(\w+)"),
              re.compile(r"\s*(?:\w+\s+)*(?:class|struct|enum|protocol)\s+(\w+)")],
    "c": [re.compile(r"(?!(?:return|if|for|while|switch|else|do|case|goto|typedef|static_assert)\b)"
                     r"[A-Za-z_][\w\s*]*?\b(\w+)\s*\([^;]*$")],
    "cpp": [re.compile(r"(?!(?:return|if|for|while|switch|else|do|case|goto|typedef|using)\b)"
                       r"[A-Za-z_][\w\s*&:<>,~]*?\b(?:\w+::)*~?(\w+)\s*\([^;]*$"),
            re.compile(r"(?:class|struct)\s+(?:\w+\s+)?(\w+)\s*(?:final\s*)?(?::[^;]*)?\{?\s*$")],
    "ruby": [re.compile(r"\s*def\s+(?:self\.)?(\w+[?!=]?)"),
             re.compile(r"\s*(?:class|module)\s+(?:[\w:]+::)?(\w+)")],
    "lua": [re.compile(r"\s*(?:local\s+)?function\s+(?:[\w.]+[.:])?(\w+)"),
            re.compile(r"\s*(?:local\s+)?(?:[\w.]+\.)?(\w+)\s*=\s*function\b")],
    "haskell": [re.compile(r"([a-z_][\w']*)\s*::")],
}


def item_code(lang, lines, start):
    """The code of the definition starting at line `start`, or None."""
    if lang == "ruby":
        end = keyword_end(lines, start)
    elif lang == "lua":
        end = keyword_end(lines, start)
    elif lang == "haskell":
        end = haskell_end(lines, start)
    else:
        end = brace_end(lines, start)
    if end is None or end - start < 1:
        return None
    code = "\n".join(lines[start:end + 1])
    if lang not in ("ruby", "lua", "haskell", "python") and "{" not in code:
        return None  # a prototype, or prose that looked like a definition
    return code


def python_defs(text):
    """(name, qualified name, code without its docstring) of every def and class."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return
    lines = text.split("\n")

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                qual = prefix + child.name
                start = (child.decorator_list[0].lineno if child.decorator_list else child.lineno) - 1
                if child.end_lineno - start < pairs.MAX_ITEM_LINES:
                    body = child.body[0]
                    if ast.get_docstring(child) is not None:
                        code = lines[start:body.lineno - 1] + lines[body.end_lineno:child.end_lineno]
                    else:
                        code = lines[start:child.end_lineno]
                    yield child.name, qual, "\n".join(code)
                yield from walk(child, qual + ".")
    yield from walk(tree, "")


def defs_of(lang, text):
    """(name, line) of each definition line of a source file (Python: (name, qual, code))."""
    rules = DEF_RULES.get(lang)
    if not rules:
        return
    col0 = lang in ("c", "cpp", "haskell", "go")
    for i, line in enumerate(text.split("\n")):
        if col0 and (not line or line[0] in " \t#/*{}"):
            if not (lang == "cpp" and line.startswith(("  ", "\t")) and "(" in line):
                continue
        if len(line) > 300:
            continue
        for rule in rules:
            m = rule.match(line)
            if m and m.group(1) not in KEYWORDS and "~" + m.group(1) not in line:  # no destructors
                yield m.group(1), i
                break


# ------------------------------------------------------------------ tests

TEST_PATH = re.compile(r"(^|/)([\w-]*[_-])?(tests?|testing|spec|specs|__tests__|unittests?|testsuite|"
                       r"testdata|fixtures?)(/|$)|"
                       r"(^|/)test_[^/]*\.py$|_test\.(py|go|cc|cpp|c)$|\.(test|spec)\.[jt]sx?$|"
                       r"(Test|Tests|Spec)\.(java|kt|cs|scala|swift|php)$|_spec\.rb$|_test\.rb$|"
                       r"(^|/)test_[^/]*\.(c|cc|cpp|rb)$|_spec\.lua$|Spec\.hs$", re.I)
TEST_NAMES = {
    "python": [re.compile(r"\s*(?:async\s+)?def\s+test_?(\w+)\s*\(")],
    "go": [re.compile(r"func\s+Test_?(\w+)\s*\(\s*\w+\s+\*testing\.T")],
    "rust": [re.compile(r"\s*(?:async\s+)?fn\s+(?:test_)?(\w+)\s*\(\s*\)")],
    "java": [re.compile(r"\s*(?:public\s+|protected\s+)?(?:static\s+)?void\s+(?:test_?)?(\w+)\s*\(\s*\)")],
    "kotlin": [re.compile(r"\s*fun\s+`?(?:test)?([\w ]+)`?\s*\(\s*\)")],
    "csharp": [re.compile(r"\s*public\s+(?:async\s+)?(?:void|Task)\s+(?:Test_?)?(\w+)\s*\(\s*\)")],
    "php": [re.compile(r"\s*public\s+function\s+test_?(\w+)\s*\(")],
    "ruby": [re.compile(r"\s*def\s+test_(\w+)"),
             re.compile(r"\s*(?:it|test|describe|context)\s*\(?\s*['\"]([^'\"]{3,120})['\"]")],
    "javascript": [re.compile(r"\s*(?:it|test|describe)(?:\.only|\.skip)?\s*\(\s*(['\"`])(.{3,160}?)\1")],
    "typescript": [re.compile(r"\s*(?:it|test|describe)(?:\.only|\.skip)?\s*\(\s*(['\"`])(.{3,160}?)\1")],
    "c": [re.compile(r"(?:static\s+)?(?:void|int|bool)\s+test_(\w+)\s*\(")],
    "cpp": [re.compile(r"\s*TEST(?:_F|_P)?\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)")],
    "lua": [re.compile(r"\s*it\s*\(\s*['\"]([^'\"]{3,120})['\"]")],
}
GENERIC = {"main", "init", "test", "tests", "index", "util", "utils", "config", "setup", "run",
           "get", "set", "new", "build", "update", "value", "values", "data", "name", "type",
           "string", "parse", "error", "errors", "create", "delete", "close", "open", "read",
           "write", "start", "stop", "default", "common", "helpers", "helper", "base", "core",
           "types", "client", "server", "options", "option", "example", "examples", "readme",
           "install", "usage", "license", "changelog", "module", "package", "lib", "src",
           "true", "false", "none", "null", "call", "apply", "check", "load", "save", "add",
           "remove", "reset", "clear", "size", "length", "format", "render", "handle", "process"}


def test_names(lang, line):
    """(description, token list) for a test defined on `line`, or None."""
    for rule in TEST_NAMES.get(lang, ()):
        m = rule.match(line)
        if not m:
            continue
        if lang in ("javascript", "typescript"):
            text = m.group(2)
            return text, [t for w in re.findall(r"[A-Za-z_$][\w$]*", text) for t in [w]]
        if lang in ("ruby", "lua") and not re.fullmatch(r"\w+", m.group(1)):
            text = m.group(1)
            return text, re.findall(r"[A-Za-z_]\w*[?!]?", text)
        if lang == "cpp":
            name = m.group(1) + "_" + m.group(2)
        else:
            name = m.group(1)
        toks = split_identifier(name)
        if toks and toks[0] == "test":
            toks = toks[1:]
        # where an identifier under test may start: the name itself and, for names that
        # join parts with `_` (TestClient_Do, gtest's Suite_Name), each part
        starts = [0]
        if re.search(r"[A-Z]", name) and "_" in name.strip("_"):
            n = 0
            for part in name.split("_")[:-1]:
                n += len(split_identifier(part))
                starts.append(n)
            if split_identifier(name)[:1] == ["test"]:
                starts = [max(0, k - 1) for k in starts]
        return " ".join(toks), sorted(set(starts))
    return None


def code_like(word):
    """A word of prose that is written as an identifier: snake_case, camelCase, a.b, a::b."""
    return bool(re.search(r"[a-z0-9][A-Z]|\w_\w|\w\.\w|::", word))


def distinctive(name):
    """A name specific enough to identify one definition: two words or more (`parse_header`,
    `ParseHeader`), or one long uncommon word."""
    last = re.split(r"\.|::", name)[-1]
    return last.lower() not in GENERIC and (len(split_identifier(last)) >= 2 or len(last) >= 8)


FAMILY = {"c": "c", "cpp": "c", "javascript": "js", "typescript": "js"}


# ------------------------------------------------------------------ README sections

MD_HEADING = re.compile(r"#{1,6}\s+(.+?)\s*#*\s*$")
RST_DIRECTIVE = re.compile(r"\.\.\s+(?:py:|js:|php:|rb:)?(function|method|class|attribute|exception|"
                           r"data|decorator|classmethod|staticmethod|coroutinefunction|"
                           r"coroutinemethod|func|module)::\s+([\w.$]+)")
IDENT = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*")


def plain(text):
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r":\w+:`~?([^`<]+?)(\s*<[^>]*>)?`", r"\1", text)
    text = re.sub(r"[*_]{1,3}([^*_]+)[*_]{1,3}", r"\1", text)
    text = text.replace("``", "`").replace("`", "")
    return " ".join(text.split())


def doc_sections(text, is_rst):
    """(heading, paragraph, names) of each section: Markdown headings (or RST underlined
    titles) and Sphinx object directives."""
    lines = text.split("\n")
    out = []
    fenced = False
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        if fenced:
            continue
        heading = names = None
        m = RST_DIRECTIVE.match(line.strip()) if is_rst else None
        if m:
            heading, names = line.strip()[m.end() - len(m.group(2)):], [m.group(2)]
            if m.group(1) == "module":
                names = ["module:" + m.group(2)]
        elif not is_rst:
            mh = MD_HEADING.match(line)
            if mh and not line.startswith("#!"):
                heading = mh.group(1)
        elif i + 1 < len(lines) and line.strip() and re.fullmatch(r"([=\-~^\"'`#*+])\1{2,}", lines[i + 1].strip()) \
                and len(lines[i + 1].strip()) >= len(line.strip()):
            heading = line.strip()
        if heading is None:
            continue
        para = []
        j = i + 1
        while j < len(lines) and (not lines[j].strip() or re.fullmatch(r"[=\-~^\"'`#*+]{3,}", lines[j].strip())
                                  or lines[j].strip().startswith((":", ".. ", "<"))):
            j += 1
        while j < len(lines) and lines[j].strip() and not lines[j].startswith(("#", "```", "    >>>")) \
                and not lines[j].strip().startswith((".. ", "```", ">>>", "|", "- ", "* ")):
            para.append(lines[j].strip())
            j += 1
        if names is None:
            # names in the heading written as code: `quoted`, call(), snake_case, camelCase
            names = ["`" + n for n in re.findall(r"`([^`]+)`", heading)] + \
                [w for w in IDENT.findall(heading) if code_like(w)] + \
                re.findall(r"([A-Za-z_$][\w$.]*)\(\)", heading)
        out.append((plain(heading), plain(" ".join(para)), names))
    return out


# ------------------------------------------------------------------ one package

def iter_archive(path):
    """(relative path, bytes) of the regular files of an archive, the top directory removed."""
    if path.endswith(".zip"):
        with zipfile.ZipFile(path) as z:
            for info in z.infolist():
                if not info.is_dir() and info.file_size <= MAX_FILE_BYTES:
                    yield info.filename, z.read(info)
        return
    with tarfile.open(path, "r|*") as t:
        for member in t:
            if member.isfile() and member.size <= MAX_FILE_BYTES:
                f = t.extractfile(member)
                if f is not None:
                    yield member.name, f.read()


def wanted(rel):
    name = rel.split("/")[-1]
    ext = os.path.splitext(name)[1]
    if name.endswith((".d.ts", ".min.js")):
        return None
    if ext in LANGUAGES:
        return LANGUAGES[ext]
    if ext.lower() in DOC_FILES and (ext.lower() != ".txt" or "doc" in rel.lower()):
        return "doc"
    return None


def mine_package(pin, archive, exclusions, ledger=None):
    """All pairs of one package: a list of dicts. What the exclusions leave out goes to the
    ledger; a package whose metadata names an excluded project gives nothing."""
    prefix = pin["name"]
    sources, docs = [], []
    for rel, data in iter_archive(archive):
        rel = rel.lstrip("./")
        rel = rel.split("/", 1)[1] if "/" in rel else rel
        kind = wanted(rel)
        meta = exclusion.is_package_metadata(rel)
        if kind is None and not meta:
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if "\r" in text:
            text = text.replace("\r\n", "\n")
        if meta:
            why = exclusions.metadata(rel, text)
            if why:
                if ledger is not None:
                    ledger.refuse(pin["name"], f"{rel} {why}")
                return []
            if kind is None:
                continue
        why = exclusions.file(rel, text)
        if why:
            if ledger is not None:
                ledger.skip(pin["name"], rel, why)
            continue
        if ledger is not None:
            ledger.use(pin["name"], rel, text)
        if kind == "doc":
            docs.append((rel, text))
        else:
            sources.append((rel, kind, text))
    out = []

    def add(kind, lang, desc, path, code):
        desc = clip_words(desc)
        if len(desc.split()) < 2 or code.count("\n") < 1 or leaks(desc, code):
            return
        out.append({"description": desc, "code": clip_code(prefix + "/" + path, code),
                    "kind": kind, "language": lang, "package": pin["name"]})

    # definitions outside the tests: name -> [(path, lang, code getter)]
    defs = {}
    quals = {}
    modules = {}
    test_files = []
    for rel, lang, text in sources:
        if TEST_PATH.search(rel):
            test_files.append((rel, lang, text))
            continue
        stem = os.path.splitext(os.path.basename(rel))[0]
        modules.setdefault(stem, []).append((rel, lang, text))
        if lang == "python":
            for name, qual, code in python_defs(text):
                defs.setdefault(name, []).append((rel, lang, code))
                quals.setdefault(qual, []).append((rel, lang, code))
        else:
            lines = None
            for name, i in defs_of(lang, text):
                if lines is None:
                    lines = text.split("\n")
                defs.setdefault(name, []).append((rel, lang, (lines, i)))

    def code_of(entry):
        rel, lang, ref = entry
        if isinstance(ref, str):
            return ref
        lines, i = ref
        return item_code(lang, lines, i)

    def unique(name):
        hits = defs.get(name, ())
        if not hits:
            return None
        if len(hits) != 1 and len({h[0] for h in hits}) == 1 and len(hits) <= 2:
            hits = hits[:1]  # a declaration and its definition in one file
        return hits[0] if len(hits) == 1 else None

    # 1. doc comments
    for rel, lang, text in sources:
        try:
            items = list(DOC_RULES[lang.split("-")[0]](text)) if lang in DOC_RULES else []
        except RecursionError:
            items = []
        for doc, code in items:
            query = first_sentence(clean_doc(doc))
            if pairs.usable(query) and not BOILERPLATE.match(query):
                add("doc", lang, query, rel, code)

    # 2. README and doc sections
    for rel, text in docs:
        for heading, para, names in doc_sections(text, rel.endswith((".rst", ".txt"))):
            resolved = {}
            for raw in names:
                quoted = raw.startswith("`")
                raw = raw.strip("`").strip().rstrip("()").strip()
                if raw.startswith("module:"):
                    stem = raw[7:].rsplit(".", 1)[-1]
                    if stem.lower() not in GENERIC and len(modules.get(stem, ())) == 1:
                        resolved["m:" + stem] = ("module", modules[stem][0])
                    continue
                if not IDENT.fullmatch(raw):
                    continue
                parts = re.split(r"\.|::", raw)
                last = parts[-1]
                entry = None
                if len(parts) >= 2 and len(quals.get(".".join(parts[-2:]), ())) == 1:
                    entry = quals[".".join(parts[-2:])][0]
                elif distinctive(last):
                    entry = unique(last)
                    if entry is None and quoted and len(modules.get(last, ())) == 1:
                        resolved["m:" + last] = ("module", modules[last][0])
                        continue
                if entry is not None:
                    resolved[entry[0] + ":" + last] = ("def", entry)
            if len(resolved) != 1 or len((heading + " " + para).split()) < 5:
                continue
            what, entry = next(iter(resolved.values()))
            if what == "module":
                path, lang, text2 = entry
                code = strip_header(lang, text2)
            else:
                path, lang = entry[0], entry[1]
                code = code_of(entry)
            if code:
                add("readme", lang, heading + ". " + para if para else heading, path, code)

    # 3. test names
    index = {}
    for name, hits in defs.items():
        toks = split_identifier(name)
        if len(toks) >= 2 and distinctive(name):  # `transport` alone is too vague
            index.setdefault(toks[0] if toks else "", []).append((toks, name))
    for rel, lang, text in test_files:
        for line in text.split("\n"):
            if len(line) > 300:
                continue
            got = test_names(lang, line)
            if got is None:
                continue
            desc, idents = got
            if isinstance(idents, list) and idents and isinstance(idents[0], int):
                starts, idents = idents, None
            elif idents is None:
                starts = [0]
            if idents is not None:  # a test string: identifiers named in it verbatim
                found = [w for w in idents if w in defs and code_like(w) and distinctive(w)
                         and len(split_identifier(w)) >= 2]
                found = [w for w in dict.fromkeys(found) if unique(w)]
                if len(found) != 1:
                    continue
                target = found[0]
            else:
                toks = desc.split()
                best = None
                for k in (k for k in starts if k < len(toks)):
                    for cand_toks, name in index.get(toks[k], ()):
                        if toks[k:k + len(cand_toks)] == cand_toks and unique(name) and \
                                (best is None or len(cand_toks) > len(split_identifier(best))):
                            best = name
                if best is None:
                    continue
                target = best
            entry = unique(target)
            if FAMILY.get(entry[1], entry[1]) != FAMILY.get(lang, lang):
                continue
            code = code_of(entry)
            if code:
                add("test", entry[1], desc, entry[0], code)
    return out


def strip_header(lang, text):
    """A source file without its leading comment or module docstring."""
    if lang == "python":
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        if ast.get_docstring(tree) is not None:
            end = tree.body[0].end_lineno
            text = "\n".join(text.split("\n")[end:])
    lines = text.split("\n")
    i = 0
    in_block = False
    while i < len(lines):
        s = lines[i].strip()
        if in_block:
            in_block = "*/" not in s
        elif s.startswith("/*"):
            in_block = "*/" not in s
        elif not (s == "" or s.startswith(("//", "#", "--", "'use strict'", '"use strict"'))):
            break
        i += 1
    rest = "\n".join(lines[i:])
    return rest if rest.count("\n") >= 1 else None


# ------------------------------------------------------------------ download

def fetch(pin, cache):
    """The verified archive of a pin, downloaded once into the cache."""
    folder = os.path.join(cache, "downloads")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, os.path.basename(pin["url"]))
    if os.path.exists(path) and sha256_of(path) == pin["sha256"]:
        return path
    for attempt in range(3):
        try:
            req = urllib.request.Request(pin["url"], headers={"User-Agent": USER_AGENT})
            with urllib.request.urlopen(req, timeout=120) as r, open(path + ".part", "wb") as f:
                while True:
                    block = r.read(1 << 20)
                    if not block:
                        break
                    f.write(block)
            os.replace(path + ".part", path)
            break
        except OSError as e:
            if attempt == 2:
                raise RuntimeError(f"{pin['name']}: download failed: {e}")
            time.sleep(3 * (attempt + 1))
    got = sha256_of(path)
    if got != pin["sha256"]:
        os.remove(path)
        raise RuntimeError(f"{pin['name']}: sha256 {got}, pinned {pin['sha256']}")
    return path


# The exclusions of this run, set before the worker processes fork (they share it rather than
# receive a pickled copy of a million fingerprints per package).
EXCLUSIONS = None


def run_one(pin, cache, out):
    """Fetches and mines one package, writes its pairs file and its ledger; returns (name,
    count, seconds)."""
    started = time.time()
    archive = fetch(pin, cache)
    ledger = exclusion.Ledger(pin["name"], EXCLUSIONS)
    ledger.pin(pin)
    result = mine_package(pin, archive, EXCLUSIONS, ledger)
    target = os.path.join(out, "packages", pin["name"] + ".jsonl")
    with open(target + ".part", "w", encoding="utf-8") as f:
        for p in result:
            f.write(json.dumps(p, ensure_ascii=False) + "\n")
    with open(target + ".ledger.json", "w", encoding="utf-8") as f:
        json.dump({"signature": EXCLUSIONS.signature(), **ledger.state()}, f)
    os.replace(target + ".part", target)
    return pin["name"], len(result), time.time() - started


def mined_already(pin, out, signature):
    """Whether a package's pairs were mined under these exclusions."""
    target = os.path.join(out, "packages", pin["name"] + ".jsonl")
    try:
        with open(target + ".ledger.json", encoding="utf-8") as f:
            return json.load(f).get("signature") == signature and os.path.exists(target)
    except (OSError, ValueError):
        return False


# ------------------------------------------------------------------ merge

def leaks(description, code):
    """The description is written in the code (a repeated comment, a neighbour's doc)."""
    return len(description) >= 20 and description in code


def norm_code(code):
    body = code.split("\n", 1)[1] if "\n" in code else code
    return hashlib.sha1(" ".join(body.split()).encode()).hexdigest()


def merge(packages, out, signature=None):
    """One deduplicated JSONL per language and stats.json: a pair is dropped when the same
    (description, code) was seen, or when the same code (whitespace-normalised, path aside)
    already has a pair of the same kind. With `signature`, a package mined under other
    exclusions is left out (its re-mining failed or was not asked for), and a language that
    no package gives any more loses its file: the teacher reads every file here."""
    seen_pair, seen_code = set(), set()
    files = {}
    stats = {"pairs": 0, "per_language": {}, "per_kind": {}, "per_package": {},
             "per_language_kind": {}, "dropped_duplicates": 0, "dropped_description_in_code": 0}
    for pin in packages:
        path = os.path.join(out, "packages", pin["name"] + ".jsonl")
        if not os.path.exists(path):
            continue
        if signature is not None and not mined_already(pin, out, signature):
            log(f"{pin['name']}: mined under other exclusions; left out of the merge")
            continue
        kept = 0
        with open(path, encoding="utf-8") as f:
            for line in f:
                p = json.loads(line)
                kp = hashlib.sha1((p["description"] + "\0" + p["code"]).encode()).hexdigest()
                kc = p["kind"] + ":" + norm_code(p["code"])
                if leaks(p["description"], p["code"].split("\n", 1)[1]):
                    stats["dropped_description_in_code"] += 1
                    continue
                if kp in seen_pair or kc in seen_code:
                    stats["dropped_duplicates"] += 1
                    continue
                seen_pair.add(kp)
                seen_code.add(kc)
                lang = p["language"]
                if lang not in files:
                    files[lang] = open(os.path.join(out, lang + ".jsonl.part"), "w", encoding="utf-8")
                files[lang].write(line if line.endswith("\n") else line + "\n")
                kept += 1
                stats["per_language"][lang] = stats["per_language"].get(lang, 0) + 1
                stats["per_kind"][p["kind"]] = stats["per_kind"].get(p["kind"], 0) + 1
                lk = stats["per_language_kind"].setdefault(lang, {})
                lk[p["kind"]] = lk.get(p["kind"], 0) + 1
        stats["per_package"][pin["name"]] = kept
        stats["pairs"] += kept
    for lang, f in files.items():
        f.close()
        os.replace(os.path.join(out, lang + ".jsonl.part"), os.path.join(out, lang + ".jsonl"))
    for stale in glob.glob(os.path.join(out, "*.jsonl")):
        if os.path.basename(stale)[: -len(".jsonl")] not in files:
            os.remove(stale)
    stats["languages"] = len(stats["per_language"])
    with open(os.path.join(out, "stats.json"), "w", encoding="utf-8") as f:
        json.dump(stats, f, indent=1, sort_keys=True)
    return stats


# ------------------------------------------------------------------ self-test

SELF_TEST = {
    "python": ('def parse_header(line):\n    """Split one header line into its name and value."""\n'
               '    name, _, value = line.partition(":")\n    return name, value.strip()\n',
               "Split one header line into its name and value.", "return name, value.strip()"),
    "rust": ("/// Returns the number of bytes left in the buffer.\n#[inline]\npub fn remaining(&self) -> usize {\n"
             "    self.len - self.pos\n}\n", "Returns the number of bytes left in the buffer.", "self.len - self.pos"),
    "go": ("// ParseHeader splits a header line into a key and a value.\nfunc ParseHeader(s string) (string, string) {\n"
           "\treturn s, s\n}\n", "ParseHeader splits a header line into a key and a value.", "return s, s"),
    "javascript": ("/**\n * Merges two sorted arrays into one.\n * @param {Array} a\n */\nfunction merge(a, b) {\n"
                   "  return a.concat(b).sort();\n}\n", "Merges two sorted arrays into one.", "a.concat(b)"),
    "typescript": ("/**\n * Computes the hash of a file path.\n */\nexport function hashPath(p: string): number {\n"
                   "  return p.length;\n}\n", "Computes the hash of a file path.", "p.length"),
    "java": ("  /**\n   * Returns the {@code size} of the queue in elements.\n   */\n  @Override\n"
             "  public int size() {\n    return count;\n  }\n", "Returns the size of the queue in elements.",
             "return count;"),
    "c": ("/* Frees every node of the list and the list itself. */\nvoid list_free(struct list *l)\n{\n"
          "    free(l);\n}\n", "Frees every node of the list and the list itself.", "free(l);"),
    "cpp": ("/// Returns true if the token starts a new statement.\nbool Parser::isStatementStart(Token T) const {\n"
            "  return T.is(tok::kw_if);\n}\n", "Returns true if the token starts a new statement.",
            "T.is(tok::kw_if)"),
    "csharp": ("    /// <summary>\n    /// Reads the next token from the stream.\n    /// </summary>\n"
               "    /// <param name=\"s\">the stream</param>\n    public Token ReadToken(Stream s)\n    {\n"
               "        return null;\n    }\n", "Reads the next token from the stream.", "return null;"),
    "php": ("    /**\n     * Normalizes the given path to forward slashes.\n     */\n"
            "    public static function normalize(string $path): string\n    {\n"
            "        return str_replace('\\\\', '/', $path);\n    }\n",
            "Normalizes the given path to forward slashes.", "str_replace"),
    "ruby": ("# Returns the absolute path of the cache folder.\ndef cache_dir\n  File.expand_path('~/.cache')\nend\n",
             "Returns the absolute path of the cache folder.", "File.expand_path"),
    "haskell": ("-- | Split a list into chunks of the given size.\nchunksOf :: Int -> [a] -> [[a]]\n"
                "chunksOf _ [] = []\nchunksOf n xs = take n xs : chunksOf n (drop n xs)\n\nother = 1\n",
                "Split a list into chunks of the given size.", "chunksOf n xs"),
    "lua": ("--- Trims white space from both ends of a string.\n---@param s string\nfunction M.trim(s)\n"
            "  return (s:gsub('^%s+', ''))\nend\n", "Trims white space from both ends of a string.", "gsub"),
    "kotlin": ("/**\n * Returns the first element matching the predicate.\n */\ninline fun <T> List<T>.findFirst(p: (T) -> Boolean): T? {\n"
               "    return firstOrNull(p)\n}\n", "Returns the first element matching the predicate.", "firstOrNull"),
    "cpp-qdoc": ("/*!\n    \\fn void QList::append(const T &value)\n\n    Inserts \\a value at the end of the list.\n*/\n"
                 "void QList::append(const T &value)\n{\n    insert(size(), value);\n}\n",
                 "Inserts \\a value at the end of the list.", "insert(size(), value);"),
    "c-gtkdoc": ("/**\n * g_list_append:\n * @list: a list\n *\n * Adds a new element on to the end of the list.\n */\n"
                 "GList *\ng_list_append (GList *list)\n{\n  return list;\n}\n",
                 "Adds a new element on to the end of the list.", "return list;"),
    "cpp-brief": ("/** @brief Finds circles in a grayscale image.\n@param image input\n */\n"
                  "void HoughCircles(InputArray image)\n{\n    run(image);\n}\n",
                  "Finds circles in a grayscale image.", "run(image);"),
    "swift": ("/// Decodes a value from the given JSON data.\npublic func decode(_ data: Data) throws -> Value {\n"
              "    return try parse(data)\n}\n", "Decodes a value from the given JSON data.", "parse(data)"),
}


def self_test(excluded):
    failures = []
    for lang, (text, want_doc, want_code) in SELF_TEST.items():
        items = list(DOC_RULES[lang.split("-")[0]](text))
        got = [(first_sentence(clean_doc(d)), c) for d, c in items]
        if not any(q == want_doc and want_code in c and want_doc not in c for q, c in got):
            failures.append(f"doc rule {lang}: got {got!r}")
    # tests and README sections, through a whole package
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        files = {
            "pkg-1.0/src/pkg/headers.py": 'def parse_header(line):\n    """Split a header line."""\n'
                                          '    return line.split(":")\n\n\ndef other():\n    return 1\n',
            "pkg-1.0/tests/test_headers.py": "def test_parse_header_strips_spaces():\n    assert True\n\n"
                                             "def test_parses_header():\n    assert True\n",
            "pkg-1.0/headers_test.go": "package h\n\nfunc TestSplitLines(t *testing.T) {\n}\n",
            "pkg-1.0/lines.go": "package h\n\nfunc SplitLines(s string) []string {\n\treturn nil\n}\n",
            "pkg-1.0/README.md": "# pkg\n\n## Reading headers with `parse_header`\n\n"
                                 "The function takes one raw line and gives back its parts.\n\n"
                                 "## Processing\n\nA plain word in a heading names no code `SplitLines`.\n",
            "pkg-1.0/src/pkg/proc.py": "class Processing:\n    x = 1\n    y = 2\n",
            "pkg-1.0/vendor/dep/x.py": 'def vendored_thing():\n    """Must never be mined from here."""\n    return 1\n',
            "pkg-1.0/gin/y.go": "// Handle serves one request from the router tree.\nfunc Handle() {\n\treturn\n}\n",
        }
        archive = os.path.join(tmp, "pkg.tar.gz")
        with tarfile.open(archive, "w:gz") as t:
            for name, body in files.items():
                data = body.encode()
                info = tarfile.TarInfo(name)
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
        with_gin = exclusion.Exclusions(excluded.projects + [exclusion.Project("gin", "self-test")])
        got = mine_package({"name": "pkg"}, archive, with_gin)
        kinds = {(p["kind"], p["description"]) for p in got}
        for want in [("test", "parse header strips spaces"), ("test", "split lines"),
                     ("readme", "Reading headers with parse_header. The function takes one raw "
                                "line and gives back its parts.")]:
            if want not in kinds:
                failures.append(f"package rule {want}: got {sorted(kinds)}")
        if any(d.startswith("Processing") for _, d in kinds):
            failures.append("a plain heading word was taken for an identifier")
        if first_sentence("Gets the files (i.e. the shown ones) of a folder. More.") != \
                "Gets the files (i.e. the shown ones) of a folder.":
            failures.append("first sentence cut at i.e.")
        if any("parses header" in d for _, d in kinds):
            failures.append("a test name without an exact identifier was taken")
        if any("vendored" in p["code"] or "Handle serves" in p["description"] for p in got):
            failures.append("a vendored or excluded directory was mined")
        if any("Split a header line" in p["code"] for p in got):
            failures.append("a docstring was left in the code")
    # the exclusions, through a whole package: a planted copy and an excluded repository
    with tempfile.TemporaryDirectory() as tmp:
        fp = exclusion.Fingerprints()
        bench_file = "\n".join(f"fn planted_benchmark_function_{i}(x: u32) -> u32 {{ x * {i} }}"
                               for i in range(12))
        fp.add_text("planted benchmark", bench_file)
        planted = exclusion.Exclusions(excluded.projects, fp)
        archive = os.path.join(tmp, "pkg.tar.gz")
        with tarfile.open(archive, "w:gz") as t:
            for name, body in {
                "pkg-1.0/src/copied.rs": "/// Doubles a number for the planted copy.\n" + bench_file + "\n",
                "pkg-1.0/src/own.rs": "/// Parses the own header line.\npub fn own_header() {\n    x();\n}\n",
            }.items():
                data = body.encode()
                info = tarfile.TarInfo(name)
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
        ledger = exclusion.Ledger("self-test", planted)
        got = mine_package({"name": "pkg"}, archive, planted, ledger)
        if any("planted_benchmark" in p["code"] for p in got) or not any("own_header" in p["code"] for p in got):
            failures.append(f"a planted benchmark copy was mined or the own file was not: {got}")
        with tarfile.open(archive, "w:gz") as t:
            for name, body in {"pkg-1.0/Cargo.toml": '[package]\nrepository = "https://github.com/serde-rs/serde"\n',
                               "pkg-1.0/src/own.rs": "/// Parses the own header line.\npub fn own_header() {\n    x();\n}\n"}.items():
                data = body.encode()
                info = tarfile.TarInfo(name)
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
        if mine_package({"name": "pkg"}, archive, planted, ledger):
            failures.append("a package whose metadata names an excluded repository was mined")
    if os.path.exists(DEFAULT_CORPUS):
        with open(DEFAULT_CORPUS, encoding="utf-8") as f:
            bad = [p["name"] for p in json.load(f)["packages"] if excluded.pin(p)]
        if bad:
            failures.append("pinned packages are excluded projects: " + ", ".join(bad))
    for f in failures:
        print("FAIL " + f, file=sys.stderr)
    print(json.dumps({"self_test": "failed" if failures else "passed", "failures": len(failures),
                      "doc_rules": sorted(SELF_TEST)}))
    return 1 if failures else 0


# ------------------------------------------------------------------ main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default=DEFAULT_CORPUS)
    ap.add_argument("--cache", default=os.environ.get("SATORI_DISTILL_CACHE", DEFAULT_CACHE))
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--jobs", type=int, default=2, help="packages mined (and downloaded) at once")
    ap.add_argument("--only", help="comma-separated pin names")
    ap.add_argument("--manifests", default=exclusion.MANIFESTS,
                    help="where the manifest of the mined data goes (default scripts/distill/manifests)")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()

    global EXCLUSIONS
    if args.self_test:
        return self_test(exclusion.Exclusions.load(fingerprint=False))
    EXCLUSIONS = exclusion.Exclusions.load(suite_src=exclusion.fetch_suites())
    with open(args.corpus, encoding="utf-8") as f:
        packages = json.load(f)["packages"]
    EXCLUSIONS.refuse_pins(packages, "mine")
    names = [p["name"] for p in packages]
    if len(set(names)) != len(names):
        sys.exit("mine: duplicate pin names")
    todo = packages
    if args.only:
        only = set(args.only.split(","))
        todo = [p for p in packages if p["name"] in only]
    cache, out = os.path.expanduser(args.cache), os.path.expanduser(args.out)
    os.makedirs(os.path.join(out, "packages"), exist_ok=True)
    signature = EXCLUSIONS.signature()
    todo = [p for p in todo if not mined_already(p, out, signature)]
    log(f"{len(packages)} pins, {len(todo)} to mine, exclusions {signature}")
    started = time.time()
    errors = []
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(run_one, p, cache, out): p["name"] for p in todo}
        for done, fut in enumerate(as_completed(futures), 1):
            try:
                name, count, secs = fut.result()
                log(f"[{done}/{len(todo)}] {name}: {count} pairs in {secs:.0f}s "
                    f"({time.time() - started:.0f}s elapsed)")
            except Exception as e:  # one bad package does not stop the others
                errors.append(f"{futures[fut]}: {e}")
                log(f"[{done}/{len(todo)}] {futures[fut]}: FAILED {e}")
    stats = merge(packages, out, signature)
    ledger = exclusion.Ledger("mine_corpus.json", EXCLUSIONS)
    for pin in packages:
        path = os.path.join(out, "packages", pin["name"] + ".jsonl.ledger.json")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                ledger.merge(json.load(f))
    ledger.write(os.path.join(args.manifests, "mine.json"), {"pairs": stats["pairs"]})
    summary = {"pins": len(packages), "mined_now": len(todo) - len(errors), "errors": errors,
               "pairs": stats["pairs"], "languages": stats["languages"],
               "per_language": stats["per_language"], "per_kind": stats["per_kind"],
               "dropped_duplicates": stats["dropped_duplicates"],
               "dropped_description_in_code": stats["dropped_description_in_code"],
               "seconds": round(time.time() - started), "out": out}
    print(json.dumps(summary, indent=1, sort_keys=True))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
