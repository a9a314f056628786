"""tools/bench/allreduce.py's arithmetic: nccl-tests' algbw and busbw, and the sizes it sweeps (its rows on the
simulator are checked by tests/test_gpu_check.py, which runs it with --quick)."""
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    spec = importlib.util.spec_from_file_location("allreduce_bench", ROOT / "tools" / "bench" / "allreduce.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("world, factor", [(1, 0.0), (2, 1.0), (4, 1.5), (8, 1.75)])
def test_busbw_is_algbw_times_2_n_minus_1_over_n(world, factor):
    algbw, busbw = _bench()._bw(4 << 20, 1e-3, world)      # 4 MiB in 1 ms
    assert algbw == pytest.approx(4.194304, abs=1e-4)
    assert busbw == pytest.approx(4.194304 * factor, abs=1e-4)


def test_sizes_double_from_min_to_max_as_all_reduce_perf_with_f_2():
    b = _bench()
    a = b.argparse.Namespace(min_bytes=8, max_bytes=256 << 20)
    sizes = b._sizes(a)
    assert sizes[0] == 8 and sizes[-1] == 256 << 20 and len(sizes) == 26
    assert all(y == 2 * x for x, y in zip(sizes, sizes[1:]))
