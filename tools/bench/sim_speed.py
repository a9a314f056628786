#!/usr/bin/env python3
"""Simulator throughput: thread-instructions per second of the PTX interpreter (rawdev.sim.ptx).

    python tools/bench/sim_speed.py            # ≥ 64K threads per kernel
    python tools/bench/sim_speed.py --quick    # tiny sizes (smoke test)

Runs shared-memory tiled kernels from the shipped ptx/ (testkernels' tiled_transpose, a gemm
variant when present; else the committed test fixture) plus saxpy, checks each result against
numpy, and prints one line per kernel and a summary line. Timing is the launch only (module
decoding is reported separately).
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rawdev.sim.memory import DeviceMemory  # noqa: E402
from rawdev.sim.ptx import PtxModule  # noqa: E402

FMT = {"u64": "<Q", "s64": "<q", "u32": "<I", "s32": "<i", "f32": "<f", "f64": "<d", "b64": "<Q", "b32": "<I"}


def pack(entry, *vals):
    buf = bytearray(entry.param_size)
    for p, v in zip(entry.params, vals):
        struct.pack_into(FMT[p.type], buf, p.offset, v)
    return bytes(buf)


class Dev:
    def __init__(self):
        self.mem = DeviceMemory(4 << 30)

    def up(self, a):
        a = np.ascontiguousarray(a)
        addr = self.mem.alloc(a.nbytes)
        self.mem.write(addr, a.tobytes())
        return addr

    def down(self, addr, shape, dt):
        n = int(np.prod(shape))
        return np.frombuffer(self.mem.read(addr, n * np.dtype(dt).itemsize), dt).reshape(shape).copy()


def load(name):
    p = ROOT / "ptx" / name
    if not p.exists():
        p = ROOT / "tests" / "data" / "ptx" / name
    if not p.exists():
        return None, 0.0
    t = time.perf_counter()
    m = PtxModule(p.read_text())
    return m, time.perf_counter() - t


REPS = 2


def run(m, name, grid, block, params):
    best = None
    for _ in range(REPS):
        st = m.launch(name, grid, block, params=params, memory=DEV.mem)
        best = st if best is None or st.seconds < best.seconds else best
    return best


def bench_transpose(quick):
    m, _ = load("testkernels.ptx")
    if m is None or "tiled_transpose" not in m.entries:
        return None
    rows, cols = (45, 70) if quick else (515, 1025)       # ≥ 64K threads (17 x 33 blocks of 256)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    dx, dout = DEV.up(x), DEV.up(np.full((cols, rows), np.nan, np.float32))
    e = m.entries["tiled_transpose"]
    grid = (-(-cols // 32), -(-rows // 32), 1)
    st = run(m, "tiled_transpose", grid, (32, 8, 1), pack(e, dout, dx, rows, cols))
    ok = np.array_equal(DEV.down(dout, (cols, rows), np.float32), x.T)
    return st, ok, grid[0] * grid[1] * 256


def bench_gemm(quick):
    m, dec = load("gemm.ptx")
    if m is None:
        return None
    name = "gemm_nn_f32_64x64"
    if name not in m.entries:
        return None
    M, N, K = (70, 65, 33) if quick else (1025, 1025, 64)  # 17 x 17 blocks of 256 = 73984 threads
    rng = np.random.default_rng(2)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    da, db, dy = DEV.up(a), DEV.up(b), DEV.up(np.full((M, N), np.nan, np.float32))
    e = m.entries[name]
    grid = (-(-N // 64), -(-M // 64), 1)
    st = run(m, name, grid, (256, 1, 1), pack(e, dy, da, db, 0, M, N, K, K, N, N, 1.0, 0.0, 0))
    ref = a.astype(np.float64) @ b
    out = DEV.down(dy, (M, N), np.float32)
    ok = np.linalg.norm(out - ref) / np.linalg.norm(ref) < 1e-5
    return st, ok, grid[0] * grid[1] * 256


def bench_saxpy(quick):
    m, _ = load("testkernels.ptx")
    if m is None or "saxpy" not in m.entries:
        return None
    n = 1000 if quick else 1 << 18
    rng = np.random.default_rng(3)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    dx, dy = DEV.up(x), DEV.up(y)
    e = m.entries["saxpy"]
    grid = (-(-n // 256) // 4 or 1, 1, 1)
    st = run(m, "saxpy", grid, (256, 1, 1), pack(e, dy, dx, 1.25, n))
    out = DEV.down(dy, (n,), np.float32)
    ref = y.astype(np.float64)
    for _ in range(REPS):   # every launch adds 1.25*x again
        ref = 1.25 * x.astype(np.float64) + ref
    ok = np.allclose(out, ref, rtol=1e-5, atol=1e-5)
    return st, ok, grid[0] * 256


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    ap.add_argument("--json", action="store_true", help="one JSON line per kernel and one for the summary")
    args = ap.parse_args(argv)
    say = (lambda *a, **k: None) if args.json else print
    global DEV
    DEV = Dev()
    total_ti = 0
    total_s = 0.0
    ok_all = True
    for label, fn in (("tiled_transpose (testkernels, shared tile)", bench_transpose),
                      ("gemm_nn_f32_64x64 (gemm, shared tiles)", bench_gemm),
                      ("saxpy (testkernels, grid-stride)", bench_saxpy)):
        r = fn(args.quick)
        if r is None:
            say(f"{label:45s} skipped (PTX not present)")
            continue
        st, ok, threads = r
        total_ti += st.thread_instructions
        total_s += st.seconds
        ok_all &= bool(ok)
        if args.json:
            print(json.dumps({"bench": "sim_speed", "kernel": label.split()[0], "threads": threads,
                              "thread_instructions": st.thread_instructions, "seconds": round(st.seconds, 4),
                              "m_thread_instr_per_s": round(st.rate / 1e6, 1), "correct": bool(ok)}), flush=True)
        say(f"{label:45s} threads={threads:7d} grid={st.grid} block={st.block} "
              f"thread-instr={st.thread_instructions:11d} time={st.seconds:7.3f}s "
              f"rate={st.rate / 1e6:7.1f} M thread-instr/s  {'ok' if ok else 'WRONG RESULT'}")
    rate = total_ti / total_s if total_s else 0.0
    if args.json:
        print(json.dumps({"bench": "sim_speed", "kernel": "summary", "quick": args.quick,
                          "thread_instructions": total_ti, "seconds": round(total_s, 4),
                          "m_thread_instr_per_s": round(rate / 1e6, 1), "correct": ok_all}))
    say(f"summary: {total_ti} thread-instructions in {total_s:.3f}s = {rate / 1e6:.1f} M thread-instr/s "
          f"({'all results correct' if ok_all else 'SOME RESULTS WRONG'})")
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
