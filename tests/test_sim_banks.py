"""The simulator counts shared-memory bank passes (PtxModule.launch(..., count_banks=True)): per warp access the
most distinct 4-byte words any bank serves (16-byte accesses in phases of 8 lanes), broadcasts free. With it, the
GEMM tiles' shared-memory traffic is checked free of bank conflicts: the transposing stores of K-contiguous
operands conflicted 2-way in the 64x64 and 32x32 tiles (1024-4096 extra passes at 128^3) until the tiles were
swizzled (ptx/src/gemm.cu, swz)."""
import struct
from pathlib import Path

import pytest
from rawdev.sim.memory import DeviceMemory
from rawdev.sim.ptx import PtxModule

ROOT = Path(__file__).resolve().parent.parent
FMT = {"u64": "<Q", "s32": "<i", "f32": "<f", "u32": "<I", "b64": "<Q"}


def _launch(m, mem, name, grid, block, *vals):
    e = m.entries[name]
    buf = bytearray(e.param_size)
    for p, v in zip(e.params, vals):
        struct.pack_into(FMT[p.type], buf, p.offset, v)
    return m.launch(name, grid, block, params=bytes(buf), memory=mem, count_banks=True)


def test_bank_passes_of_known_patterns():
    m = PtxModule((ROOT / "tests" / "data" / "ptx" / "interp_fixtures.ptx").read_text())
    mem = DeviceMemory(1 << 24)
    out = mem.alloc(4096)
    # 64 threads = 2 warps; the fill loop is 32 conflict-free warp stores, then one load per warp
    want = {0: 0, 1: 2 * 31, 2: 0, 3: 2 * 1}     # consecutive, 32-way, broadcast, 2-way
    for mode, extra in want.items():
        st = _launch(m, mem, "k_banks", (1, 1, 1), (64, 1, 1), out, mode)
        assert st.shared_requests == 34 and st.bank_conflicts == extra, (mode, st)


@pytest.mark.parametrize("layout", ["nt", "nn", "tn"])
@pytest.mark.parametrize("tile,threads,variant", [(128, 256, ""), (128, 256, "_grid"), (128, 256, "_bk16"),
                                                   (64, 256, ""), (32, 64, "")])
def test_gemm_tiles_have_no_bank_conflicts(layout, tile, threads, variant):
    m = PtxModule((ROOT / "ptx" / "gemm.ptx").read_text())
    mem = DeviceMemory(1 << 26)
    M = N = K = 128
    A, B, Y = mem.alloc(M * K * 4), mem.alloc(N * K * 4), mem.alloc(M * N * 4)
    lda = K if layout != "tn" else M
    ldb = K if layout == "nt" else N
    st = _launch(m, mem, f"gemm_{layout}_f32_{tile}x{tile}{variant}", (N // tile, M // tile, 1), (threads, 1, 1),
                 Y, A, B, 0, M, N, K, lda, ldb, N, 1.0, 0.0, 0)
    assert st.shared_requests > 0 and st.bank_conflicts == 0, st
