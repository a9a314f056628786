"""Per-kernel statistics from the simulator (rawdev.sim.kernel_stats, `rawdev kernel-stats`): hand-written PTX kernels
whose instruction classes, global bytes, divergence and bank conflicts are known exactly, a Linear forward checked
against its shapes, the statistics mode beside the sanitizer, and the command line."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import rawdev
from rawdev.sim.ptx.inst_classes import CLASSES, inst_class

ROOT = Path(__file__).resolve().parent.parent
SEED = int(np.random.SeedSequence().entropy % 2**32)

HEAD = ".version 7.0\n.target sm_75\n.address_size 64\n"

# y[i] = a * x[i] + y[i] for i < n. Blocks: entry (10 instructions, ends in the bounds branch), body (9), DONE (ret).
SAXPY = HEAD + """
.visible .entry saxpy(.param .u64 y_p, .param .u64 x_p, .param .f32 a_p, .param .u32 n_p)
{
    .reg .pred %p<2>;
    .reg .f32 %f<5>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [y_p];
    ld.param.u64 %rd2, [x_p];
    ld.param.f32 %f1, [a_p];
    ld.param.u32 %r2, [n_p];
    mov.u32 %r3, %ctaid.x;
    mov.u32 %r4, %ntid.x;
    mov.u32 %r5, %tid.x;
    mad.lo.s32 %r1, %r3, %r4, %r5;
    setp.ge.u32 %p1, %r1, %r2;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mul.wide.u32 %rd5, %r1, 4;
    add.s64 %rd6, %rd3, %rd5;
    add.s64 %rd7, %rd4, %rd5;
    ld.global.f32 %f2, [%rd7];
    ld.global.f32 %f3, [%rd6];
    fma.rn.f32 %f4, %f1, %f2, %f3;
    st.global.f32 [%rd6], %f4;
DONE:
    ret;
}
"""

# out[tid] = 1 for odd threads, 2 for even ones: an if/else on threadIdx splits every warp in two.
PARITY = HEAD + """
.visible .entry parity(.param .u64 out_p)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    mov.u32 %r1, %tid.x;
    ld.param.u64 %rd1, [out_p];
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd3, %rd2, %rd3;
    and.b32 %r2, %r1, 1;
    setp.eq.u32 %p1, %r2, 0;
    @%p1 bra EVEN;
    mov.u32 %r3, 1;
    st.global.u32 [%rd3], %r3;
    bra.uni END;
EVEN:
    mov.u32 %r3, 2;
    st.global.u32 [%rd3], %r3;
END:
    ret;
}
"""

# Odd threads store to shared word 8 * tid, after an if on threadIdx: in each warp the 16 storing lanes hit 2 banks
# (8 * tid mod 32 is 8 or 24) with 8 distinct words each, so the store takes 8 passes (7 extra) per warp.
ODD_SHARED = HEAD + """
.visible .entry odd_shared(.param .u64 out_p)
{
    .reg .pred %p<2>;
    .reg .b32 %r<5>;
    .reg .b64 %rd<2>;
    .shared .align 4 .b8 tile[2048];
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 1;
    setp.eq.u32 %p1, %r2, 0;
    @%p1 bra END;
    shl.b32 %r3, %r1, 5;
    mov.u32 %r4, tile;
    add.u32 %r3, %r3, %r4;
    st.shared.u32 [%r3], %r1;
END:
    ret;
}
"""


@pytest.fixture
def rng():
    print(f"seed {SEED}")
    return np.random.default_rng(SEED)


def _vector(blocks):
    """{class: count} summed over (per-warp class counts, warps) pairs."""
    out = dict.fromkeys(CLASSES, 0)
    for counts, warps in blocks:
        for c, k in counts.items():
            out[c] += k * warps
    return out


def test_inst_class_of_opcodes():
    want = {"ld.global.v4.f32": "global_mem", "st.shared.u32": "shared_mem", "ld.local.u64": "local_mem",
            "ld.param.u64": "other_mem", "ld.u32": "other_mem", "atom.global.add.f32": "global_mem",
            "cp.async.ca.shared.global": "global_mem", "cp.async.wait_group": "sync", "fma.rn.f32": "fp32",
            "add.rn.f16x2": "fp32", "mul.f64": "fp64", "setp.lt.f64": "fp64", "mad.lo.s32": "int",
            "setp.ge.u32": "int", "mov.u32": "move", "cvt.rn.f32.s32": "move", "bra.uni": "control", "ret": "control",
            "bar.sync": "sync", "membar.gl": "sync", "shfl.sync.bfly.b32": "special",
            "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32": "special"}
    assert {op: inst_class(op) for op in want} == want


def test_saxpy_counts_exactly(sim, device, rng):
    n, block = 1000, 128
    grid = -(-n // block)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    tx, ty = rawdev.tensor(x, device=device), rawdev.tensor(y, device=device)
    k = rawdev.RawKernel(SAXPY, "saxpy")
    with sim.kernel_stats() as ks:
        k((grid,), (block,), (ty, tx, np.float32(2.5), n))
    np.testing.assert_allclose(ty.cpu().numpy(), 2.5 * x.astype(np.float64) + y, rtol=1e-6)
    assert len(ks.launches) == 1
    s = ks.launches[0]
    assert (s.kernel, s.grid, s.block) == ("saxpy", (grid, 1, 1), (block, 1, 1))
    assert s.global_bytes_read == 8 * n and s.global_bytes_written == 4 * n and s.global_atomic_bytes == 0
    warps = grid * block // 32                     # 32 warps; 1000 threads in bounds: warp 31 runs the body with 8
    entry = {"other_mem": 4, "move": 3, "int": 2, "control": 1}
    body = {"move": 2, "int": 3, "global_mem": 3, "fp32": 1}
    done = {"control": 1}
    assert s.instructions == _vector([(entry, warps), (body, warps), (done, warps)])
    threads = grid * block
    assert s.thread_instructions == threads * 10 + n * 9 + threads * 1
    # the entry and DONE (where both sides of the bounds branch meet) run on every lane; the body on a subset
    assert (s.full_executions, s.partial_executions) == (2, 1)
    assert s.active_lanes == s.thread_instructions and s.lane_slots == threads * 20
    assert s.active_lane_fraction == pytest.approx((threads * 11 + n * 9) / (threads * 20))
    assert s.bank_conflicts == 0 and s.shared_requests == 0


def test_divergence_of_an_if_on_thread_index(sim, device):
    out = rawdev.zeros(64, dtype=rawdev.int32, device=device)
    k = rawdev.RawKernel(PARITY, "parity")
    with sim.kernel_stats() as ks:
        k((1,), (64,), (out,))
    assert out.cpu().numpy().tolist() == [2, 1] * 32
    s = ks.launches[0]
    # entry (8) on all 64 lanes; odd side (3) and even side (2) each on half of both warps; END (ret) on all again
    assert (s.full_executions, s.partial_executions) == (2, 2)
    assert s.active_lanes == 64 * 8 + 32 * 3 + 32 * 2 + 64 * 1
    assert s.lane_slots == 64 * (8 + 3 + 2 + 1)
    assert s.active_lane_fraction == pytest.approx(736 / 896)
    assert s.instructions == _vector([({"move": 2, "other_mem": 1, "int": 4, "control": 1}, 2),
                                      ({"move": 1, "global_mem": 1, "control": 1}, 2),
                                      ({"move": 1, "global_mem": 1}, 2), ({"control": 1}, 2)])
    assert s.global_bytes_written == 64 * 4 and s.global_bytes_read == 0


@pytest.mark.parametrize("mode,extra", [(0, 0), (1, 2 * 31), (2, 0), (3, 2 * 1)])
def test_bank_conflicts_of_known_patterns(sim, device, mode, extra):
    """k_banks (tests/data/ptx/interp_fixtures.ptx): 64 threads fill shared memory in 32 conflict-free warp stores,
    then each warp loads by `mode`: consecutive, 32-way conflicting, broadcast, 2-way conflicting."""
    text = (ROOT / "tests" / "data" / "ptx" / "interp_fixtures.ptx").read_text()
    out = rawdev.zeros(1024, dtype=rawdev.float32, device=device)
    k = rawdev.RawModule(code=text).get_function("k_banks")
    with sim.kernel_stats() as ks:
        k((1,), (64,), (out, np.uint32(mode)))
    s = ks.launches[0]
    assert s.shared_requests == 34 and s.bank_conflicts == extra
    assert s.instructions["shared_mem"] > 0


def test_bank_conflicts_in_a_divergent_block(sim, device):
    out = rawdev.zeros(1, device=device)
    k = rawdev.RawKernel(ODD_SHARED, "odd_shared")
    with sim.kernel_stats() as ks:
        k((1,), (64,), (out,))
    s = ks.launches[0]
    assert (s.full_executions, s.partial_executions) == (2, 1)
    assert s.shared_requests == 2 and s.bank_conflicts == 2 * 7
    assert s.instructions["shared_mem"] == 2


def test_aggregation_and_table(sim, device, rng):
    k = rawdev.RawKernel(SAXPY, "saxpy")
    x = rawdev.tensor(rng.standard_normal(300).astype(np.float32), device=device)
    y = rawdev.zeros(300, device=device)
    with sim.kernel_stats() as outer:
        k((3,), (128,), (y, x, np.float32(1.0), 300))
        with sim.kernel_stats() as inner:
            k((2,), (128,), (y, x, np.float32(1.0), 200))
    assert [s.grid for s in outer.launches] == [(3, 1, 1), (2, 1, 1)] and len(inner.launches) == 1
    agg = outer.by_kernel()["saxpy"]
    assert agg.launches == 2 and agg.global_bytes_read == 8 * 500 and agg.global_bytes_written == 4 * 500
    assert agg.warp_instructions == sum(s.warp_instructions for s in outer.launches)
    assert outer.launches[0].launches == 1   # aggregating copies: the launches themselves are unchanged
    table = outer.table().splitlines()
    assert table[0].split()[:3] == ["kernel", "launches", "warp_inst"] and "shared_mem" not in table[0]
    row = dict(zip(table[0].split(), table[1].split()))
    assert row["kernel"] == "saxpy" and row["launches"] == "2" and row["gld_bytes"] == "4000"
    assert row["gst_bytes"] == "2000" and row["partial/full"] == f"{agg.partial_executions}/{agg.full_executions}"
    assert len(outer.table(per_launch=True).splitlines()) == 3
    with sim.kernel_stats() as empty:
        pass
    assert empty.table() == "(no kernel launches)"


def test_outside_the_block_nothing_is_counted(sim, device):
    k = rawdev.RawKernel(SAXPY, "saxpy")
    y = rawdev.zeros(64, device=device)
    with sim.kernel_stats() as ks:
        pass
    k((1,), (64,), (y, y, np.float32(1.0), 64))
    rawdev.cuda.synchronize()
    assert ks.launches == []


def test_stats_beside_the_sanitizer(sim, device, rng):
    """The counting context builds on whichever context the launch has: under the sanitizer the counts agree."""
    k = rawdev.RawKernel(SAXPY, "saxpy")
    x = rawdev.tensor(rng.standard_normal(500).astype(np.float32), device=device)
    y = rawdev.zeros(500, device=device)
    with sim.kernel_stats() as plain:
        k((4,), (128,), (y, x, np.float32(1.0), 500))
    with sim.sanitize("initcheck", "racecheck"), sim.kernel_stats() as checked:
        k((4,), (128,), (y, x, np.float32(1.0), 500))
    assert checked.launches == plain.launches


def test_linear_forward_totals_follow_the_shapes(sim, device, rng):
    M, K, N = 16, 64, 32
    lin = rawdev.nn.Linear(K, N).to(device)
    x = rawdev.tensor(rng.standard_normal((M, K)).astype(np.float32), device=device)
    rawdev.cuda.synchronize()
    with sim.kernel_stats() as ks:
        y = lin(x)
    assert tuple(y.shape) == (M, N)
    total = ks.launches
    assert total and any(s.kernel.startswith("gemm") for s in total)
    written = sum(s.global_bytes_written for s in total)
    read = sum(s.global_bytes_read for s in total)
    assert written == 4 * M * N                          # the output, once
    assert 4 * (M * K + N * K + N) <= read <= 2 * 4 * (M * K + N * K + N)   # x, weight and bias, at least once
    # every multiply-add of the product is an fp32 instruction of some lane: at least M*N*K / 32 per warp
    assert sum(s.instructions["fp32"] for s in total) >= M * N * K // 32
    assert all(s.bank_conflicts == 0 for s in total)


def test_cli_prints_the_table_per_kernel(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent("""
        import sys
        import rawdev
        n = int(sys.argv[1])
        x = rawdev.ones(n, device="cuda")
        print("total", float((x * 3).sum()))
        sys.exit(3)
    """))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "rawdev.cli", "kernel-stats", str(script), "100"], capture_output=True,
                       text=True, env=env, timeout=600, cwd=tmp_path)
    assert r.returncode == 3, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "total 300.0"
    head = lines[1].split()
    rows = {ln.split()[0]: dict(zip(head, ln.split())) for ln in lines[2:]}
    assert head[:3] == ["kernel", "launches", "warp_inst"] and "scale" in rows
    assert rows["scale"]["gld_bytes"] == "400" and rows["scale"]["gst_bytes"] == "400"
