#!/usr/bin/env python3
"""Fuzz rawdev.load with mutated real checkpoints and classify how every case ends.

Each case takes one of rawdev's own checkpoints (a float32 MLP, and a module holding every dtype rawdev
stores), applies 1-3 mutations (truncation, appended or flipped bytes, header length edits, header JSON
edits: bad or foreign dtypes, huge or malformed shapes, overlapping/reversed/out-of-range offsets,
removed/extra/duplicated keys, odd metadata; and valid headers that claim a huge tensor backed by a
sparse file), then runs `model.load_state_dict(rawdev.load(path))` on a model of that architecture.

Outcomes:
  loaded           the mutated file is still a valid checkpoint (e.g. only data bytes changed) and loaded
  rawdev error     rawdev.load raised CheckpointError (or a RuntimeError of its own, "rawdev.load: ..."),
                   or load_state_dict refused the dict with its documented RuntimeError (wrong shapes/keys)
                   — and the model is bit-identical to before
  model changed    something raised, and the model is no longer what it was
  foreign          any other exception type (KeyError, ValueError from numpy, SafetensorError, ...)
  panic            safetensors' PanicException (a BaseException) escaped
  hang             a case ran past --timeout seconds (the worker is killed and restarted)
  crash            the worker process died

Cases run in a worker subprocess so that a hang or a crash is observed, not suffered. The case for
index i is a pure function of (--seed, i): `--case i` replays one and prints its traceback.

    python tools/fuzz_checkpoints.py --cases 10000 [--seed 1] [--json out.json]
"""
import argparse
import json
import os
import random
import select
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

OUTCOMES = ("loaded", "rawdev error", "model changed", "foreign", "panic", "hang", "crash")
ST_DTYPES = ["F32", "F16", "BF16", "F64", "I64", "I32", "U8", "BOOL", "I8", "I16", "U16", "U32", "U64",
             "F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3", "C64"]
WEIRD_DTYPES = ["", "f32", "float32", "F128", "X" * 300, 7, None, ["F32"], {"F32": 1}, "F32\u0000", "Ｆ32"]


# ----------------------------------------------------------------------------------------- base files
def base_models():
    """name -> zero-argument constructor of a module whose state_dict is a base checkpoint."""
    import numpy as np
    import rawdev
    from rawdev import dtypes, nn

    def mlp():
        rawdev.manual_seed(0)
        return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))

    class AllDtypes(nn.Module):
        def __init__(self):
            super().__init__()
            r = np.random.default_rng(0)
            self.w = nn.Parameter(rawdev.tensor(r.standard_normal((3, 5)).astype(np.float32)))
            self.register_buffer("f16", rawdev.tensor(r.standard_normal(6).astype(np.float16)))
            self.register_buffer("bf", rawdev.tensor(r.standard_normal(4).astype(np.float32), dtype=dtypes.bfloat16))
            self.register_buffer("dbl", rawdev.tensor(r.standard_normal(2)))
            self.register_buffer("count", rawdev.tensor(np.array(7, np.int64)))
            self.register_buffer("idx", rawdev.tensor(np.arange(5, dtype=np.int32)))
            self.register_buffer("mask", rawdev.tensor(np.array([True, False, True])))
            self.register_buffer("u8", rawdev.tensor(np.arange(9, dtype=np.uint8)))
            self.register_buffer("empty", rawdev.tensor(np.zeros((0, 3), np.float32)))

    return {"mlp": mlp, "all_dtypes": AllDtypes}


def base_bytes(tmpdir):
    """name -> the bytes rawdev.save writes for that base model."""
    import rawdev
    out = {}
    for name, make in base_models().items():
        p = os.path.join(tmpdir, f"base_{name}.safetensors")
        rawdev.save(make().state_dict(), p)
        out[name] = Path(p).read_bytes()
    return out


# ------------------------------------------------------------------------------------------ mutations
def split(data):
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n]), data[8 + n:]


def join(header, body, pad=True):
    text = json.dumps(header).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + body


def _tensor_names(header):
    return [k for k in header if k != "__metadata__"]


def m_truncate(data, r):
    return data[:r.randrange(len(data))], None


def m_append(data, r):
    return data + bytes(r.randrange(256) for _ in range(r.choice([1, 7, 8, 100, 4096]))), None


def m_flip(data, r):
    b = bytearray(data)
    n = struct.unpack("<Q", data[:8])[0]
    zone = r.choice(["header", "data", "anywhere"])
    lo, hi = {"header": (8, 8 + n), "data": (8 + n, len(b)), "anywhere": (0, len(b))}[zone]
    for _ in range(r.choice([1, 1, 2, 5, 20])):
        if hi > lo:
            b[r.randrange(lo, hi)] = r.randrange(256)
    return bytes(b), None


def m_header_len(data, r):
    n = struct.unpack("<Q", data[:8])[0]
    v = r.choice([0, 1, n - 1, n + 1, n + 8, len(data), len(data) - 8, 2 ** 31, 2 ** 63, 2 ** 64 - 1, 100_000_001,
                  r.randrange(2 ** 64)])
    return struct.pack("<Q", max(0, min(v, 2 ** 64 - 1))) + data[8:], None


def m_dtype(data, r):
    h, body = split(data)
    k = r.choice(_tensor_names(h))
    h[k]["dtype"] = r.choice(ST_DTYPES + WEIRD_DTYPES)
    return join(h, body), None


def m_shape(data, r):
    h, body = split(data)
    k = r.choice(_tensor_names(h))
    shape = list(h[k]["shape"])
    h[k]["shape"] = r.choice([
        [2 ** 40], [2 ** 31, 2 ** 31], [2 ** 63], [2 ** 64], [-1], [-(2 ** 63)], shape + [1], shape[:-1], shape[::-1],
        [0] + shape, [1.5], ["3"], [None], [[2]], [True], "4", None, 4, {"0": 4}, [1] * 65, [2 ** 20, 2 ** 20, 2 ** 20],
        [x + 1 for x in shape], [x * 2 for x in shape]])
    return join(h, body), None


def m_offsets(data, r):
    h, body = split(data)
    names = _tensor_names(h)
    k = r.choice(names)
    b, e = h[k]["data_offsets"]
    other = h[r.choice(names)]["data_offsets"]
    h[k]["data_offsets"] = r.choice([
        [e, b], [b - 1, e], [b, e + 1], [b + 1, e + 1], [-8, e], [b, 2 ** 63], [b, 2 ** 64], [2 ** 62, 2 ** 62 + e - b],
        list(other), [other[0], other[0] + e - b], [b, len(body) + 8], [0, e - b], [b], [b, e, e], "0-4", None,
        [float(b), float(e)], [str(b), str(e)], [True, e]])
    return join(h, body), None


def m_keys(data, r):
    h, body = split(data)
    names = _tensor_names(h)
    k = r.choice(names)
    how = r.choice(["drop_tensor", "drop_field", "extra_field", "rename", "entry_type", "header_type", "duplicate"])
    if how == "drop_tensor":
        del h[k]
    elif how == "drop_field":
        del h[k][r.choice(["dtype", "shape", "data_offsets"])]
    elif how == "extra_field":
        h[k]["extra"] = 1
    elif how == "rename":
        h[k + r.choice(["x", "", ".weight", "\u00e9", "\x00"])] = h.pop(k)
    elif how == "entry_type":
        h[k] = r.choice([None, 1, "x", [], [h[k]]])
    elif how == "header_type":
        text = json.dumps(r.choice([[], "x", 1, None, [h]])).encode()
        return struct.pack("<Q", len(text)) + text + body, None
    else:   # the same name twice in the JSON text
        text = json.dumps(h)
        dup = json.dumps({k: h[k]})[1:-1]
        text = "{" + dup + ", " + text[1:]
        enc = text.encode()
        return struct.pack("<Q", len(enc)) + enc + body, None
    return join(h, body), None


def m_metadata(data, r):
    h, body = split(data)
    meta = h.get("__metadata__", {})
    h["__metadata__"] = r.choice([
        None, [], "x", 1, {"format": 1}, {"rawdev.keys": "not json"}, {"rawdev.keys": "[1, 2]"},
        {"rawdev.keys": json.dumps(list(reversed(_tensor_names(h))))}, {"rawdev.keys": json.dumps(["a"] * 3)},
        {"rawdev.keys": "[" * 100000}, dict(meta, extra={"nested": 1}), {}])
    if h["__metadata__"] is None and r.random() < 0.5:
        del h["__metadata__"]
    return join(h, body, pad=r.random() < 0.8), None


def m_header_text(data, r):
    n = struct.unpack("<Q", data[:8])[0]
    text = data[8:8 + n]
    pos = r.randrange(len(text) + 1)
    junk = r.choice([b"\xff\xfe", b"}", b"{", b'"', b"\x00", b"NaN", b"1e999", b"[" * 5000, b" " * 9])
    text = text[:pos] + junk + text[pos:]
    return struct.pack("<Q", len(text)) + text + data[8 + n:], None


def m_sparse_huge(data, r):
    """A well-formed header whose last tensor claims 64 GiB to 1 TiB, the file extended sparsely to match."""
    h, body = split(data)
    k = max(_tensor_names(h), key=lambda n: h[n]["data_offsets"][1])
    size = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8, "I64": 8, "I32": 4, "U8": 1, "BOOL": 1}[h[k]["dtype"]]
    elems = r.choice([2 ** 36, 2 ** 38, 2 ** 40]) // size
    b = h[k]["data_offsets"][0]
    if not (isinstance(b, int) and 0 <= b <= len(body)):
        raise ValueError("an earlier mutation left this tensor's offsets outside the file")
    h[k]["shape"] = r.choice([[elems], [elems // 1024, 1024], [2, elems // 2]])
    h[k]["data_offsets"] = [b, b + elems * size]
    head = join(h, b"")
    return head + body[:b], len(head) + b + elems * size


MUTATIONS = {"truncate": m_truncate, "append": m_append, "flip": m_flip, "header_len": m_header_len,
             "dtype": m_dtype, "shape": m_shape, "offsets": m_offsets, "keys": m_keys, "metadata": m_metadata,
             "header_text": m_header_text, "sparse_huge": m_sparse_huge}


def mutate(data, r, kinds=None):
    """Apply 1-3 mutations (kinds: their names, else random) to a checkpoint's bytes.

    Returns (bytes, sparse size or None, [kind names]). A mutation that cannot parse what an earlier one
    left (a header no longer JSON) is skipped."""
    kinds = list(kinds) if kinds else [r.choice(list(MUTATIONS)) for _ in range(r.choice([1, 1, 1, 2, 3]))]
    sparse, done = None, []
    for kind in kinds:
        try:
            new, sp = MUTATIONS[kind](data, r)
        except Exception:   # a header an earlier mutation left unparseable (bad JSON, too deep, ...)
            continue
        data, done = new, done + [kind]
        if sp is not None:
            sparse = sp
        elif sparse is not None:
            sparse = max(sparse, len(data))
    return data, sparse, done


def write_case(path, data, sparse):
    with open(path, "wb") as fh:
        fh.write(data)
    if sparse is not None and sparse > len(data):
        try:
            os.truncate(path, sparse)   # a hole: no disk used, but the file's real size matches the header
        except OSError:                 # past what the file system allows: the case stays a short file
            pass


# ------------------------------------------------------------------------------------------ one case
def _state(model):
    return {k: (v.dtype.name, tuple(v.shape), v._storage_copy().tobytes()) for k, v in model.state_dict().items()}


def classify_exception(e):
    from rawdev import serialization
    from rawdev.errors import CudaError
    CheckpointError = getattr(serialization, "CheckpointError", ())
    if type(e).__name__ == "PanicException":
        return "panic"
    if isinstance(e, (CheckpointError, CudaError)):
        return "rawdev error"
    if type(e) is RuntimeError and str(e).startswith(("Error(s) in loading state_dict", "rawdev.load:")):
        return "rawdev error"    # load_state_dict's documented refusal (PyTorch's wording); rawdev.load's own
    return "foreign"


def run_case(path, model_name, model=None):
    """(outcome, detail): load the file at path into a fresh model of model_name and classify."""
    import rawdev
    model = model if model is not None else base_models()[model_name]()
    before = _state(model)
    try:
        sd = rawdev.load(path)
        model.load_state_dict(sd)
        return "loaded", ""
    except BaseException as e:   # PanicException is a BaseException: classify it, never die of it
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        outcome = classify_exception(e)
        if outcome == "rawdev error" and _state(model) != before:
            outcome = "model changed"
        return outcome, f"{type(e).__module__}.{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"


def make_case(seed, i, bases):
    r = random.Random(seed * 1_000_003 + i)
    name = r.choice(sorted(bases))
    data, sparse, kinds = mutate(bases[name], r)
    return name, data, sparse, kinds


# ---------------------------------------------------------------------------------------- the worker
def worker(seed, start, stop, tmpdir):
    os.environ.setdefault("RAWDEV_DRIVER", "sim")
    bases = base_bytes(tmpdir)
    for i in range(start, stop):
        name, data, sparse, kinds = make_case(seed, i, bases)
        path = os.path.join(tmpdir, f"case_{i}.safetensors")
        print(json.dumps({"start": i}), flush=True)
        write_case(path, data, sparse)
        t0 = time.perf_counter()
        try:
            outcome, detail = run_case(path, name)
        finally:
            os.unlink(path)
        print(json.dumps({"case": i, "base": name, "kinds": kinds, "sparse": sparse, "outcome": outcome,
                          "detail": detail, "s": round(time.perf_counter() - t0, 4)}), flush=True)


def _lines(p, timeout):
    """Yield the worker's stdout lines; None when no full line came for `timeout` seconds."""
    fd, buf = p.stdout.fileno(), b""
    while True:
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            yield line.decode()
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            yield None
            return
        chunk = os.read(fd, 65536)
        if not chunk:   # the worker exited
            return
        buf += chunk


def run_campaign(n, seed, timeout, chunk=2000, progress=True):
    results, i = [], 0
    with tempfile.TemporaryDirectory(prefix="rawdev-fuzz-") as tmpdir:
        while i < n:
            stop = min(n, i + chunk)
            cmd = [sys.executable, __file__, "--worker", str(seed), str(i), str(stop), tmpdir]
            with tempfile.TemporaryFile() as err:   # a file, not a pipe: a chatty worker cannot block on it
                p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err)
                current, hung = None, False
                for line in _lines(p, timeout):
                    if line is None:   # no line for `timeout` seconds: the current case hangs
                        hung = True
                        break
                    msg = json.loads(line)
                    if "start" in msg:
                        current = msg["start"]
                    else:
                        results.append(msg)
                        current = None
                        if progress and len(results) % 1000 == 0:
                            print(f"  {len(results)} cases", file=sys.stderr, flush=True)
                if hung:
                    p.kill()
                rc = p.wait()
                err.seek(0)
                tail = err.read()[-3000:].decode(errors="replace")
            if hung and current is None:
                raise SystemExit(f"the fuzz worker did not start a case within {timeout}s: {tail}")
            if hung:
                results.append({"case": current, "outcome": "hang", "detail": f"no answer in {timeout}s"})
                i = current + 1
            elif current is not None:
                results.append({"case": current, "outcome": "crash", "detail": f"worker exit {rc}: {tail[-500:]}"})
                i = current + 1
            elif rc != 0:
                raise SystemExit(f"the fuzz worker failed (exit {rc}):\n{tail}")
            else:
                i = stop
    return results


def summarize(results):
    by = {o: 0 for o in OUTCOMES}
    kinds = {}
    for res in results:
        by[res["outcome"]] += 1
        for k in set(res.get("kinds") or ["?"]):
            kinds.setdefault(k, {o: 0 for o in OUTCOMES})[res["outcome"]] += 1
    return by, kinds


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds one case may take before it counts as a hang")
    ap.add_argument("--json", metavar="PATH", help="write every case's outcome and the summary here")
    ap.add_argument("--case", type=int, help="replay one case in this process and show its outcome")
    ap.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        seed, start, stop, tmpdir = a.worker
        worker(int(seed), int(start), int(stop), tmpdir)
        return 0
    if a.case is not None:
        os.environ.setdefault("RAWDEV_DRIVER", "sim")
        with tempfile.TemporaryDirectory(prefix="rawdev-fuzz-") as tmpdir:
            name, data, sparse, kinds = make_case(a.seed, a.case, base_bytes(tmpdir))
            path = os.path.join(tmpdir, "case.safetensors")
            write_case(path, data, sparse)
            print(f"case {a.case}: base {name}, mutations {kinds}, sparse size {sparse}")
            print(run_case(path, name))
        return 0
    t0 = time.time()
    results = run_campaign(a.cases, a.seed, a.timeout)
    wall = time.time() - t0
    by, kinds = summarize(results)
    print(f"rawdev checkpoint fuzz: {len(results)} cases, seed {a.seed}, {wall:.0f} s")
    for o in OUTCOMES:
        print(f"  {o:<14} {by[o]:>7}")
    print("by mutation (a case with several mutations counts under each):")
    print(f"  {'mutation':<12} " + " ".join(f"{o[:13]:>13}" for o in OUTCOMES))
    for k in sorted(kinds):
        print(f"  {k:<12} " + " ".join(f"{kinds[k][o]:>13}" for o in OUTCOMES))
    bad = [r for r in results if r["outcome"] not in ("loaded", "rawdev error")]
    for r in bad[:20]:
        print(f"  case {r['case']}: {r['outcome']}: {r.get('kinds')} {r.get('detail')}")
    if a.json:
        Path(a.json).write_text(json.dumps({"cases": len(results), "seed": a.seed, "wall_s": round(wall, 1),
                                            "outcomes": by, "by_mutation": kinds, "results": results}, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
