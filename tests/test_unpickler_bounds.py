"""The .pt unpickler's work is bounded by the file's size: hostile pickles that share objects (a chain of slices
walked once per path, dict keys made of shared tuples) are refused or loaded in a number of steps linear in the
pickle's length, the opcodes torch.load(weights_only=True) refuses are refused, and a seeded fuzzer of opcode
streams holds every file to that bound (the bound is the unpickler's own step count, never the wall clock)."""
import os
import random
import struct
import zipfile

import numpy as np
import pytest
import rawdev
from rawdev.serialization import CheckpointError
from rawdev.utils import ptfile

WORK_PER_BYTE = 600   # a dict key or set element may be checked (and hashed) through at most 257 nodes
SEED = int(os.environ.get("RAWDEV_TEST_SEED", "20261204"))
FOUR_FLOATS = np.arange(4, dtype="<f4").tobytes()


@pytest.fixture
def contexts(monkeypatch):
    """Every _Ctx read_pt makes, to read its step count after the load."""
    made = []

    class Recording(ptfile._Ctx):
        def __init__(self, name):
            super().__init__(name)
            made.append(self)

    monkeypatch.setattr(ptfile, "_Ctx", Recording)
    return made


def pt_file(path, pkl, storage=FOUR_FLOATS):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("f/data.pkl", pkl)
        z.writestr("f/data/0", storage)
        z.writestr("f/byteorder", b"little")
    return path


def load_bounded(path, pkl, contexts):
    """Load; return 'loaded' or 'refused' (a CheckpointError); assert the steps taken are linear in the pickle."""
    del contexts[:]
    try:
        rawdev.load(path)
        got = "loaded"
    except CheckpointError as e:
        assert str(e).startswith("rawdev.load:"), e
        got = "refused"
    work = sum(c.work for c in contexts)
    assert work <= WORK_PER_BYTE * len(pkl) + 1000, (work, len(pkl))
    return got


def binput(i):
    return b"r" + struct.pack("<I", i)


def binget(i):
    return b"j" + struct.pack("<I", i)


def slice_chain(depth):
    """s[0] = None; s[i] = slice(s[i-1], s[i-1], s[i-1]): 3**depth paths through a 14 * depth byte pickle."""
    out = b"\x80\x02N" + binput(0)
    for i in range(1, depth + 1):
        out += b"cbuiltins\nslice\n" + binget(i - 1) * 3 + b"\x87R" + binput(i)
    return out + b"."


def tuple_chain(depth):
    """t[0] = (1,); t[i] = (t[i-1], t[i-1]): hashing t[depth] takes 2**depth steps."""
    out = b"\x80\x02K\x01\x85" + binput(0)
    for i in range(1, depth + 1):
        out += binget(i - 1) * 2 + b"\x86" + binput(i)
    return out


@pytest.mark.parametrize("depth", [2, 40])
def test_a_chain_of_shared_slices_is_refused_as_pytorch_does(tmp_path, contexts, depth):
    pkl = slice_chain(depth)
    with pytest.raises(CheckpointError, match="refusing to load global 'builtins.slice'"):
        rawdev.load(pt_file(tmp_path / "slices.pt", pkl))
    assert load_bounded(tmp_path / "slices.pt", pkl, contexts) == "refused"


@pytest.mark.parametrize("depth", [2, 40])
def test_the_dict_opcode_is_refused_before_its_keys_are_hashed(tmp_path, contexts, depth):
    pkl = tuple_chain(depth) + b"(" + binget(depth) + b"K\x01d."   # DICT: {t[depth]: 1}
    with pytest.raises(CheckpointError, match=r"opcode DICT \(100\), which torch.load\(weights_only=True\) refuses"):
        rawdev.load(pt_file(tmp_path / "dict.pt", pkl))
    assert load_bounded(tmp_path / "dict.pt", pkl, contexts) == "refused"


@pytest.mark.parametrize("op,name", [(b"l", "LIST"), (b"\x91", "FROZENSET"), (b"\x94", "MEMOIZE"), (b"0", "POP"),
                                     (b"2", "DUP"), (b"\x93", "STACK_GLOBAL"), (b"I1\n", "INT"),
                                     (b"\x8c\x01a", "SHORT_BINUNICODE"), (b"\x8b\x01\x00\x00\x00\x01", "LONG4")])
def test_opcodes_pytorch_refuses_are_refused(tmp_path, op, name):
    pkl = b"\x80\x02(" + op + b"."
    with pytest.raises(CheckpointError, match=f"opcode {name} "):
        rawdev.load(pt_file(tmp_path / "op.pt", pkl))


def test_calls_and_stores_check_their_operands(tmp_path):
    cases = {
        b"\x80\x02ctorch\nfloat32\n)R.": "REDUCE .*not an allowlisted function",
        b"\x80\x02cbuiltins\nset\n]\x85R]K\x01a.": None,
        b"\x80\x02cbuiltins\nset\nK\x01R.": "REDUCE .*arguments 1, not a tuple",
        b"\x80\x02cbuiltins\nset\nX\x03\x00\x00\x00abc\x85R.": "set\\(\\) got 'abc', not a list",
        b"\x80\x02ccollections\nOrderedDict\nX\x02\x00\x00\x00ab\x85R.": "OrderedDict\\(\\) got 'ab'",
        b"\x80\x02)K\x01a.": "APPEND on a tuple, not a list",
        b"\x80\x02](K\x01K\x02u.": "SETITEMS on a list, not a dict",
        b"\x80\x02cbuiltins\ncomplex\nK\x01K\x02\x86R.": None,
        b"\x80\x02cbuiltins\nfrozenset\n.": "global 'builtins.frozenset'",
    }
    for pkl, want in cases.items():
        p = pt_file(tmp_path / "c.pt", pkl)
        if want is None:
            rawdev.load(p)
            continue
        with pytest.raises(CheckpointError, match=want):
            rawdev.load(p)
    assert rawdev.load(pt_file(tmp_path / "c.pt", b"\x80\x02cbuiltins\ncomplex\nK\x01K\x02\x86R.")) == 1 + 2j


@pytest.mark.parametrize("depth", [3, 60])
def test_shared_containers_are_walked_once(tmp_path, contexts, depth):
    # l[0] = [1]; l[i] = [l[i-1], l[i-1], l[i-1]]: accepted (PyTorch loads it), in steps linear in the file
    pkl = b"\x80\x02]K\x01a" + binput(0)
    for i in range(1, depth + 1):
        pkl += b"](" + binget(i - 1) * 3 + b"e" + binput(i)
    pkl += b"."
    assert load_bounded(pt_file(tmp_path / "lists.pt", pkl), pkl, contexts) == "loaded"
    out = rawdev.load(tmp_path / "lists.pt")
    for _ in range(depth):
        assert len(out) == 3 and out[0] is out[2]
        out = out[0]
    assert out == [1]


def test_a_key_of_shared_tuples_is_refused_in_linear_work(tmp_path, contexts):
    for build in (b"}" + binget(60) + b"K\x01s.",                                       # SETITEM
                  b"cbuiltins\nset\n](" + binget(60) + b"e\x85R.",                      # set([key])
                  b"ccollections\nOrderedDict\n](" + binget(60) + b"K\x01\x86e\x85R."):   # OrderedDict([(key, 1)])
        pkl = tuple_chain(60) + build
        assert load_bounded(pt_file(tmp_path / "key.pt", pkl), pkl, contexts) == "refused"


# --- the fuzzer: seeded random opcode streams, most of them nearly well-formed -----------------------------------

GLOBALS = [b"ctorch._utils\n_rebuild_tensor_v2\n", b"ctorch._utils\n_rebuild_parameter\n", b"ctorch\nFloatStorage\n",
           b"ctorch\nSize\n", b"ctorch\ndevice\n", b"ccollections\nOrderedDict\n", b"cbuiltins\nset\n",
           b"cbuiltins\ncomplex\n", b"cbuiltins\nslice\n", b"cbuiltins\nfrozenset\n", b"cbuiltins\ngetattr\n",
           b"c__builtin__\nset\n", b"ctorch\nfloat32\n", b"cos\nsystem\n"]
STORAGE = b"(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x04tQ"
TENSOR = (b"ctorch._utils\n_rebuild_tensor_v2\n(" + STORAGE + b"K\x00K\x04\x85K\x01\x85\x89ccollections\nOrderedDict\n"
          b")RtR")
PUSHES = [b"N", b"\x88", b"\x89", b")", b"]", b"}", b"\x8f", b"K\x07", b"M\x01\x02", b"J\xff\xff\xff\xff",
          b"G" + struct.pack(">d", 1.5), b"X\x02\x00\x00\x00ab", b"U\x03xyz", b"\x8a\x02\x01\x80", TENSOR, STORAGE]
COMBINE = [b"\x85", b"\x86", b"\x87", b"a", b"s", b"R", b"b", b"Q", b"\x81"]
CLOSE = [b"t", b"e", b"u", b"l", b"d", b"\x90", b"\x91"]
RAW = [bytes([i]) for i in range(256)]


def random_value(rng, depth, memo):
    """A well-formed pickle fragment pushing one plain value (with shared parts through the memo)."""
    r = rng.random()
    if depth > 3 or r < 0.35:
        if memo[0] and rng.random() < 0.3:
            return binget(rng.randrange(memo[0]))
        return rng.choice(PUSHES[:14] + [TENSOR])
    n = rng.randint(0, 4)
    items = [random_value(rng, depth + 1, memo) for _ in range(n)]
    if r < 0.55:
        body = b"](" + b"".join(items) + b"e"
    elif r < 0.75:
        keys = [rng.choice([b"X\x01\x00\x00\x00k", b"K\x03", b"N", b"K\x01\x85"]) for _ in items]
        body = b"}(" + b"".join(k + v for k, v in zip(keys, items)) + b"u"
    elif r < 0.9:
        body = b"(" + b"".join(items) + b"t"
    else:
        body = b"cbuiltins\nset\n](" + b"".join(x for x in items if len(x) < 12) + b"e\x85R"
    body += binput(memo[0])
    memo[0] += 1
    return body


def random_pickle(rng):
    if rng.random() < 0.4:
        blob = b"\x80\x02" + random_value(rng, 0, [0]) + b"."
        if rng.random() < 0.5:   # one random opcode somewhere
            b = bytearray(blob)
            b.insert(rng.randrange(2, len(b)), rng.randrange(256))
            blob = bytes(b)
        return blob
    out = [b"\x80" + bytes([rng.choice([2, 2, 2, 3, 4, 5, 9])])]
    memo = 0
    for _ in range(rng.randint(1, 60)):
        r = rng.random()
        if r < 0.3:
            out.append(rng.choice(PUSHES))
        elif r < 0.4:
            out.append(rng.choice(GLOBALS))
        elif r < 0.55 and memo:
            out.append(binget(rng.randrange(memo + 1)) * rng.randint(1, 3))   # shared objects, some missing
        elif r < 0.65:
            out.append(binput(memo))
            memo += 1
        elif r < 0.72:
            out.append(b"(")
        elif r < 0.85:
            out.append(rng.choice(COMBINE))
        elif r < 0.95:
            out.append(rng.choice(CLOSE))
        else:
            out.append(rng.choice(RAW) + bytes(rng.randrange(256) for _ in range(rng.randint(0, 4))))
    out.append(b".")
    blob = b"".join(out)
    if rng.random() < 0.1:   # damage the stream itself
        b = bytearray(blob)
        for _ in range(rng.randint(1, 3)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        blob = bytes(b)
    return blob


def fuzz(count, seed, tmp_path, contexts):
    rng = random.Random(seed)
    outcome = {"loaded": 0, "refused": 0}
    for i in range(count):
        pkl = random_pickle(rng)
        try:
            got = load_bounded(pt_file(tmp_path / "fuzz.pt", pkl), pkl, contexts)
        except Exception as e:   # noqa: BLE001 - another exception type, or the work bound broken, is the defect
            pytest.fail(f"seed {seed}, pickle #{i} {pkl!r}: {type(e).__name__}: {e}")
        outcome[got] += 1
    return outcome


def test_fuzzed_opcode_streams_are_accepted_or_refused_in_bounded_work(tmp_path, contexts):
    outcome = fuzz(1500, SEED, tmp_path, contexts)
    assert outcome["loaded"] > 200 and outcome["refused"] > 500, outcome


@pytest.mark.slow
def test_many_more_fuzzed_opcode_streams(tmp_path, contexts):
    for seed in range(5):
        fuzz(5000, SEED + 1 + seed, tmp_path, contexts)
