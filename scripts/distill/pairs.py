"""(description, code) pairs for fine-tuning the static model, mined from doc comments.

Each documented item (a Rust `///` item, a Python function or class with a docstring, a
JSDoc-commented JavaScript or TypeScript function, a Javadoc-commented Java member, a C
function after its block comment, a commented Go or Ruby definition) gives one pair: the
first sentence of its documentation, and the item's code as Satori would embed a chunk of it
(`path` newline `code`) with the documentation itself removed, so the model must learn to
find code from what it does rather than from its own comment.

Which files may be read is decided by `exclusion.py`, as for every other training input:
vendored directories, directories named after an excluded project and copies of benchmark
texts are skipped. Standard library only.
"""
import ast
import os
import re

# Items longer than this many lines are not used: their code says too many things at once.
MAX_ITEM_LINES = 150
SOURCE_LANGUAGES = {".rs": "rust", ".py": "python", ".js": "javascript", ".mjs": "javascript",
                    ".go": "go", ".ts": "typescript", ".java": "java", ".c": "c", ".rb": "ruby"}
ITEM_RUST = re.compile(r"\s*(pub(\([^)]*\))?\s+)?((async|const|unsafe|default)\s+|extern\s+\"C\"\s+)*"
                       r"(fn|struct|enum|trait|impl|type|mod|union|macro_rules!)\b")
ITEM_JS = re.compile(r"(\bfunction\b|=>|^\s*(static\s+)?(async\s+)?[\w$]+\s*\([^)]*\)\s*\{)")
ITEM_GO = re.compile(r"(func|type)\b")
ITEM_TS = re.compile(r"\s*(export\s+)?(default\s+)?(declare\s+)?"
                     r"((public|private|protected|static|readonly|async|abstract)\s+)*"
                     r"(function\b|class\b|interface\b|[\w$]+\s*(<[^>]*>)?\s*\()")
ITEM_JAVA = re.compile(r"\s*((public|protected|private|static|final|abstract|synchronized|native|"
                       r"default|sealed|strictfp)\s+)*(<[^>]+>\s+)?"
                       r"(class\b|interface\b|enum\b|record\b|[\w<>\[\],.? ]+\s+\w+\s*\()")
# A C definition starts in column 0 (a statement inside a function never does).
ITEM_C = re.compile(r"(?!(return|if|for|while|switch|else|do|case|goto|typedef)\b)[A-Za-z_]")
ITEM_RUBY = re.compile(r"\s*(def|class|module)\s")


def first_sentence(doc):
    """The first sentence of the first paragraph, on one line."""
    para = re.split(r"\n\s*\n", doc.strip())[0]
    para = " ".join(para.split())
    m = re.search(r"(.+?[.!?])(\s|$)", para)
    return (m.group(1) if m else para).strip()


def usable(query):
    words = query.split()
    return 3 <= len(words) <= 40 and not query.startswith(("#", "```", "@", "<", "TODO"))


def item_end(lines, start, blank_ends=False):
    """Index of the last line of the brace-delimited (or `;`-terminated) item at `start`.
    With `blank_ends`, an item that has opened no brace when it reaches a blank line ends
    before it (expression bodies, declarations without `;`), and character literals are
    blanked like strings, so that `'{'` opens nothing."""
    depth, opened = 0, False
    for j in range(start, min(len(lines), start + MAX_ITEM_LINES)):
        if blank_ends and not opened and j > start and not lines[j].strip():
            return j - 1
        line = re.sub(r'"(\\.|[^"\\])*"', '""', lines[j])
        if blank_ends:
            line = re.sub(r"'(\\.|[^'\\])'", "''", line)
        line = re.sub(r"//.*", "", line)
        for c in line:
            if c == "{":
                depth += 1
                opened = True
            elif c == "}":
                depth -= 1
        if opened and depth <= 0:
            return j
        if not opened and line.rstrip().endswith(";"):
            return j
    return None


def ruby_end(lines, start):
    """Index of the `end` that closes the Ruby item at `start` (same indentation)."""
    indent = len(lines[start]) - len(lines[start].lstrip())
    for k in range(start + 1, min(len(lines), start + MAX_ITEM_LINES)):
        line = lines[k]
        if line.strip() == "end" and len(line) - len(line.lstrip()) == indent:
            return k
    return None


def line_comment_items(text, prefix, item, between=lambda line: False, end_of=item_end):
    """Items documented by a run of `prefix` line comments; lines for which `between` holds
    (attributes, blank lines) may separate the comments from the item, which ends where
    `end_of` says."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if not lines[i].strip().startswith(prefix):
            i += 1
            continue
        j = i
        doc = []
        while j < len(lines) and lines[j].strip().startswith(prefix):
            doc.append(lines[j].strip()[len(prefix):].strip())
            j += 1
        k = j
        while k < len(lines) and between(lines[k]):
            k += 1
        if k < len(lines) and item.match(lines[k]):
            end = end_of(lines, k)
            if end is not None:
                yield "\n".join(doc), "\n".join(lines[j:end + 1])
        i = j


def rust_items(text):
    return line_comment_items(text, "///", ITEM_RUST,
                              lambda line: line.strip().startswith("#[") or not line.strip())


def jsdoc_items(text, is_item=ITEM_JS.search, opener="/**", between=lambda line: False):
    """Items after a `/** ... */` block (`opener` may be `/*` for C) whose first line passes
    `is_item`; lines for which `between` holds (annotations) may separate the two."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if not lines[i].strip().startswith(opener):
            i += 1
            continue
        j = i
        doc = []
        while j < len(lines):
            line = lines[j].strip()
            j += 1
            body = re.sub(r"^(/\*+|\*+/|\*+)\s?", "", line).replace("*/", "")
            if not body.strip().startswith("@"):
                doc.append(body)
            if "*/" in line:
                break
        k = j
        while k < len(lines) and between(lines[k]):
            k += 1
        if k < len(lines) and is_item(lines[k]):
            end = item_end(lines, k)
            if end is not None:
                yield "\n".join(doc), "\n".join(lines[k:end + 1])
        i = j


def ts_items(text):
    return jsdoc_items(text, ITEM_TS.match)


def java_items(text):
    return jsdoc_items(text, ITEM_JAVA.match, between=lambda line: line.strip().startswith("@"))


def c_items(text):
    return jsdoc_items(text, ITEM_C.match, opener="/*")


def ruby_items(text):
    # A shebang is not documentation.
    if text.startswith("#!"):
        text = text[text.find("\n"):] if "\n" in text else ""
    return line_comment_items(text, "#", ITEM_RUBY, end_of=ruby_end)


def go_items(text):
    return line_comment_items(text, "//", ITEM_GO)


def python_items(text):
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return
    lines = text.split("\n")
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        doc = ast.get_docstring(node)
        if not doc or node.end_lineno - node.lineno >= MAX_ITEM_LINES:
            continue
        first = node.body[0]
        code = lines[node.lineno - 1:first.lineno - 1] + lines[first.end_lineno:node.end_lineno]
        yield doc, "\n".join(code)


EXTRACTORS = {"rust": rust_items, "python": python_items, "javascript": jsdoc_items,
              "go": go_items, "typescript": ts_items, "java": java_items, "c": c_items,
              "ruby": ruby_items}


def _source(rel):
    return not rel.endswith(".d.ts") and os.path.splitext(rel)[1] in SOURCE_LANGUAGES


def mine(root, prefix, exclusions, ledger=None, package=None):
    """Pairs from the admitted source files under `root`; paths are reported as
    `prefix/relative`, and the ledger records them under `package` (default the prefix)."""
    for rel, text in exclusions.walk(package or prefix, root, _source, ledger):
        language = SOURCE_LANGUAGES[os.path.splitext(rel)[1]]
        for doc, code in EXTRACTORS[language](text):
            query = first_sentence(doc)
            if usable(query) and code.count("\n") >= 1:
                yield query, prefix + "/" + rel + "\n" + code


def collect(roots, exclusions, ledger=None):
    """Pairs from every root (a list of `(prefix, directory)` or `(prefix, directory,
    package)`), the first of each query kept."""
    seen = set()
    out = []
    for prefix, root, *package in roots:
        for query, code in mine(root, prefix, exclusions, ledger, *package):
            if query not in seen:
                seen.add(query)
                out.append((query, code))
    return out
