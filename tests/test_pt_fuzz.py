"""Malformed checkpoints: mutated PyTorch .pt zips and rawdev safetensors files must end in a CheckpointError
that says what is wrong (or, for a mutation that leaves the file meaning the same, load) — never another
exception, never a hang — and a model a failed load was meant for keeps its weights."""
import io
import os
import random
import struct
import time
import zipfile

import numpy as np
import pytest
import rawdev
from rawdev import nn
from rawdev.serialization import CheckpointError

DATA = os.path.join(os.path.dirname(__file__), "data", "pt")
SOURCES = ["mlp.pt", "shared.pt", "dtypes.pt", "adam.pt", "misc.pt"]


def read(name):
    with open(os.path.join(DATA, name), "rb") as fh:
        return fh.read()


def entries(blob):
    with zipfile.ZipFile(io.BytesIO(blob)) as z:
        return [(i.filename, z.read(i.filename)) for i in z.infolist()]


def rezip(items):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for name, data in items:
            z.writestr(name, data)
    return buf.getvalue()


def flip_bits(rng, blob):
    b = bytearray(blob)
    for _ in range(rng.randint(1, 8)):
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
    return bytes(b)


def truncate(rng, blob):
    return blob[:rng.randrange(len(blob))]


def remove_entry(rng, blob):
    items = entries(blob)
    keep = [x for x in items if not x[0].endswith(("version", "serialization_id", "format_version",
                                                    "storage_alignment", "byteorder"))]
    victim = rng.choice(keep)
    return rezip([x for x in items if x is not victim])


def rename_entry(rng, blob):
    items = entries(blob)
    i = rng.choice([k for k, x in enumerate(items) if "/data" in x[0]])
    name, data = items[i]
    items[i] = (name + rng.choice(["x", "/", ".bak"]) if rng.random() < 0.5 else name.replace("/", "_", 1), data)
    return rezip(items)


def shrink_storage(rng, blob):
    items = entries(blob)
    i = rng.choice([k for k, x in enumerate(items) if "/data/" in x[0] and x[1]])
    name, data = items[i]
    items[i] = (name, data[:rng.randrange(len(data))])
    return rezip(items)


def mutate_pickle(rng, blob):
    items = entries(blob)
    i = next(k for k, x in enumerate(items) if x[0].endswith("/data.pkl"))
    name, pkl = items[i]
    b = bytearray(pkl)
    for _ in range(rng.randint(1, 4)):
        op = rng.random()
        j = rng.randrange(len(b))
        if op < 0.4:
            b[j] = rng.randrange(256)
        elif op < 0.6:
            b.insert(j, rng.randrange(256))
        elif op < 0.8:
            del b[j]
        else:   # an opcode the pickle uses, somewhere else
            b[j] = rng.choice(b"cRQbsutq(h]}.\x85\x86\x87KJX")
    items[i] = (name, bytes(b))
    return rezip(items)


def bad_byteorder(rng, blob):
    items = [(n, rng.choice([b"middle", b"", b"\xff"]) if n.endswith("/byteorder") else d) for n, d in entries(blob)]
    return rezip(items)


PT_MUTATIONS = [flip_bits, truncate, remove_entry, rename_entry, shrink_storage, mutate_pickle, bad_byteorder]
MUST_FAIL = {truncate, shrink_storage, bad_byteorder}


def safetensors_blob():
    torch_model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    buf = io.BytesIO()
    rawdev.save(torch_model.state_dict(), buf)
    return buf.getvalue()


def st_header_edit(rng, blob):
    n = struct.unpack("<Q", blob[:8])[0]
    head = bytearray(blob[8:8 + n])
    for _ in range(rng.randint(1, 3)):
        j = rng.randrange(len(head))
        head[j] = rng.choice(b'{}[]",:0123456789-eE FIBU')
    return blob[:8] + bytes(head) + blob[8 + n:]


def st_length(rng, blob):
    n = struct.unpack("<Q", blob[:8])[0]
    return struct.pack("<Q", rng.choice([0, 1, n - 1, n + 1, n + 8, 2 ** 40, 2 ** 63, rng.randrange(2 ** 64)])) + \
        blob[8:]


ST_MUTATIONS = [flip_bits, truncate, st_header_edit, st_length]


def check_one(blob, what, tmp_path):
    """Load the mutated bytes (through a file); a CheckpointError must name the problem."""
    p = tmp_path / "fuzz.pt"
    p.write_bytes(blob)
    t0 = time.perf_counter()
    try:
        rawdev.load(p, weights_only=True)
    except CheckpointError as e:
        msg = str(e)
        assert msg.startswith("rawdev.load:") and len(msg) > 40, (what, msg)
        assert "fuzz.pt" in msg, (what, msg)
        return "refused"
    except Exception as e:   # noqa: BLE001 - any other exception type is the defect under test
        pytest.fail(f"{what}: {type(e).__name__}: {e}")
    finally:
        assert time.perf_counter() - t0 < 10, f"{what}: took too long"
    return "loaded"


def fuzz(count, seed, tmp_path):
    rng = random.Random(seed)
    pts = {n: read(n) for n in SOURCES}
    st = safetensors_blob()
    outcome = {"refused": 0, "loaded": 0}
    for i in range(count):
        if i % 5 == 4:
            m = rng.choice(ST_MUTATIONS)
            blob, what = m(rng, st), f"safetensors #{i} {m.__name__}"
        else:
            name = rng.choice(SOURCES)
            m = rng.choice(PT_MUTATIONS)
            blob, what = m(rng, pts[name]), f"{name} #{i} {m.__name__}"
        got = check_one(blob, what, tmp_path)
        if m in MUST_FAIL:
            assert got == "refused", f"{what} loaded"
        outcome[got] += 1
    return outcome


def test_a_thousand_malformed_checkpoints_end_in_checkpoint_errors(tmp_path):
    outcome = fuzz(1100, 1234, tmp_path)
    assert outcome["refused"] > 900, outcome


@pytest.mark.slow
def test_many_more_malformed_checkpoints(tmp_path):
    for seed in range(5):
        fuzz(4000, 99 + seed, tmp_path)


@pytest.mark.parametrize("mutation", [truncate, shrink_storage, remove_entry, mutate_pickle])
def test_a_failed_load_leaves_the_model_unchanged(mutation, tmp_path):
    rng = random.Random(7)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    before = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    src = read("mlp.pt")
    failures = 0
    for _ in range(30):
        p = tmp_path / "bad.pt"
        p.write_bytes(mutation(rng, src))
        try:
            model.load_state_dict(rawdev.load(p), strict=True)
        except CheckpointError:
            failures += 1
            for k, v in model.state_dict().items():
                np.testing.assert_array_equal(v.detach().numpy(), before[k])
        except RuntimeError as e:   # it loaded, but not as this model's state_dict: PyTorch's load_state_dict error
            assert "Error(s) in loading state_dict" in str(e) or "size mismatch" in str(e), e
        else:
            before = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    assert failures > 0


def test_named_problems(tmp_path):
    items = entries(read("mlp.pt"))
    cases = {
        "has no zip entry": [x for x in items if not x[0].endswith("/data/0")],
        "holds 3 bytes but FloatStorage of 128 elements needs 512":
            [(n, d[:3] if n.endswith("/data/0") else d) for n, d in items],
        "data.pkl' entries": [x for x in items if not x[0].endswith("data.pkl")],
        "not a valid pickle": [(n, d[:len(d) // 2] if n.endswith("data.pkl") else d) for n, d in items],
    }
    for want, its in cases.items():
        p = tmp_path / "named.pt"
        p.write_bytes(rezip(its))
        with pytest.raises(CheckpointError, match=want.replace("(", r"\(").replace(".", r"\.")):
            rawdev.load(p)
    p.write_bytes(read("mlp.pt")[:100])
    with pytest.raises(CheckpointError, match="zip"):
        rawdev.load(p)
