"""What loading a valid PTX module learned, kept on disk so that the next process skips parsing it.

Parsing and decoding a big kernel file costs seconds (gemm.ptx: 3.3 MB of PTX), in every process,
before anything runs. After a module parsed and decoded once, its *index* is written here as JSON: the
``.version``/``.target``, the constant bank and module globals, the opcodes it uses, and per ``.entry``
its parameter layout, static shared/local sizes and where its body lies in the text. A later load of
the same text (same SHA-256) by the same simulator code (a hash of rawdev/sim/ptx's sources) reads the
index instead, and each kernel is parsed and decoded from its own lines only when it is first launched
(the other bodies blanked, so line numbers in faults stay the file's). Only modules that decoded
completely are indexed, so a load that would fail still fails at load.

The index is plain data (no pickle, nothing executed from the file); a missing, unreadable or foreign
file is ignored and rewritten. ``RAWDEV_CACHE_DIR`` (default ``~/.cache/rawdev``) chooses the folder;
``RAWDEV_SIM_DISK_CACHE=0`` turns it off.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from pathlib import Path

FORMAT = 1
_VERSION: str | None = None


def sim_version() -> str:
    """A hash of the interpreter's own source files: a changed parser/decoder never reads an old index."""
    global _VERSION
    if _VERSION is None:
        h = hashlib.sha256(str(FORMAT).encode())
        here = Path(__file__).resolve().parent
        for p in sorted(here.glob("*.py")):
            h.update(p.name.encode() + b"\0" + p.read_bytes())
        _VERSION = h.hexdigest()[:16]
    return _VERSION


def cache_dir() -> Path | None:
    """The folder of module indexes, or None when the disk cache is off."""
    if os.environ.get("RAWDEV_SIM_DISK_CACHE", "1") == "0":
        return None
    root = os.environ.get("RAWDEV_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "rawdev")
    return Path(root) / "sim-ptx" / sim_version()


def load(key: str) -> dict | None:
    """The index stored for the module whose text hashes to ``key``, or None."""
    d = cache_dir()
    if d is None:
        return None
    try:
        rec = json.loads((d / f"{key}.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(rec, dict) or rec.get("format") != FORMAT or rec.get("key") != key:
        return None
    return rec


def save(key: str, rec: dict) -> None:
    """Write the index atomically (a temporary file renamed over the name: concurrent processes are safe);
    a folder that cannot be written only means no cache."""
    d = cache_dir()
    if d is None:
        return
    rec = dict(rec, format=FORMAT, key=key)
    try:
        d.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{key[:16]}-", suffix=".tmp", dir=d)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(rec, f, separators=(",", ":"))
            os.replace(tmp, d / f"{key}.json")
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError:
        pass


_ENTRY_HEAD = re.compile(r"\.entry\s+([\w$]+)\s*\(")


def body_spans(text: str) -> dict:
    """{entry name: (start, end)}: the characters strictly inside each .entry's outer braces. Comments and
    string literals are skipped while matching braces."""
    spans = {}
    for m in _ENTRY_HEAD.finditer(text):
        i, depth = m.end(), 1
        while depth:                      # the parameter list's closing parenthesis
            c = text[i]
            depth += (c == "(") - (c == ")")
            i += 1
        start = end = None
        depth = 0
        n = len(text)
        while i < n:
            c = text[i]
            if c == "/" and text.startswith("//", i):
                i = text.find("\n", i)
                i = n if i < 0 else i
                continue
            if c == "/" and text.startswith("/*", i):
                i = text.find("*/", i + 2)
                i = n if i < 0 else i + 2
                continue
            if c == '"':
                i = text.find('"', i + 1)
                i = n if i < 0 else i + 1
                continue
            if c == ";" and depth == 0:   # a prototype: no body
                break
            if c == "{":
                depth += 1
                if depth == 1:
                    start = i + 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    end = i
                    break
            i += 1
        if start is not None and end is not None:
            spans[m[1]] = (start, end)
    return spans


def _whole_entry(text: str, a: int, b: int) -> tuple:
    """From a body span (a, b) to the whole definition: the start of the line holding its `.entry` (with
    `.visible`/`.weak` before it, the parameter list and the performance directives after it) to past its `}`."""
    head = text.rfind(".entry", 0, a)
    line = text.rfind("\n", 0, head) + 1
    lead = text[line:head].split()
    return (line if all(w in (".visible", ".weak", ".extern") for w in lead) else head), b + 1


def only_entry(text: str, spans: dict, name: str) -> str:
    """The text with every .entry but ``name`` blanked, its header and parameter list too, so that the parser
    reads one kernel and the module's own declarations (newlines kept, so line numbers hold)."""
    out, pos = [], 0
    for other, (a, b) in sorted(spans.items(), key=lambda kv: kv[1][0]):
        if other == name:
            continue
        a, b = _whole_entry(text, a, b)
        out.append(text[pos:a])
        out.append("\n" * text.count("\n", a, b))
        pos = b
    out.append(text[pos:])
    return "".join(out)
