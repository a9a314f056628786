"""The sanitizer through rawdev: rawdev.sim.sanitize(...) and RAWDEV_SANITIZE choose the checkers, a finding
raises a CudaError from the launch (launch-blocking) or the next synchronizing call with the kernel, block,
thread and PTX line (and the CUDA source line of a -lineinfo kernel), and is kept in sanitizer_findings();
rawdev's own kernels run a training step without a finding."""
from pathlib import Path

import numpy as np
import pytest
import rawdev
import rawdev.sim
from rawdev import nn, optim
from rawdev.errors import CudaError

FIXTURES = (Path(__file__).resolve().parent / "data" / "ptx" / "sanitizer_fixtures.ptx").read_text()


def _nvrtc_missing():
    try:
        from rawdev.runtime import nvrtc
        nvrtc._import_nvrtc()
    except Exception as e:   # noqa: BLE001  (any failure to load NVRTC means: skip)
        return str(e) or type(e).__name__
    return None


needs_nvrtc = pytest.mark.skipif(_nvrtc_missing() is not None, reason=f"needs NVRTC (rawdev[kernels]): "
                                                                       f"{_nvrtc_missing()}")


@pytest.fixture(autouse=True)
def fresh_findings(tmp_path, monkeypatch):
    monkeypatch.setenv("RAWDEV_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("RAWDEV_SANITIZE", raising=False)   # these tests choose the checkers (read at the reset)
    rawdev.sim.clear_sanitizer_findings()
    yield
    rawdev.sim.clear_sanitizer_findings()


def kernel(name):
    return rawdev.RawKernel(FIXTURES, name)


def test_a_race_raises_at_the_next_sync_and_is_kept(sim, device):
    x = rawdev.randn(256, device=device)
    out = rawdev.empty(2, device=device)
    with rawdev.sim.sanitize("racecheck") as findings:
        kernel("sum_nobar")((2,), (128,), (out, x))     # queued: the launch itself succeeds
        with pytest.raises(CudaError, match=r"(?s)CUDA_ERROR_LAUNCH_FAILED.*kernel sum_nobar grid=\(2, 1, 1\).*"
                                            r"racecheck: read-after-write hazard in kernel sum_nobar, thread "
                                            r"\(\d+,0,0\) of block \(\d,0,0\), at PTX line \d+"):
            rawdev.cuda.synchronize()
    got = rawdev.sim.sanitizer_findings()
    assert findings == got and len(got) == 1, got
    f = got[0]
    assert (f.tool, f.kernel, f.ptx.split()[0]) == ("racecheck", "sum_nobar", "ld.shared.f32"), f
    assert str(f) in rawdev.sim.last_error_detail()


def test_launch_blocking_raises_from_the_launch(sim, device, monkeypatch):
    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "1")
    from rawdev.runtime import reset_for_tests
    reset_for_tests("sim")
    with rawdev.sim.sanitize("initcheck"):
        x = rawdev.empty(256, device=device)      # never written (a block allocated while initcheck is on)
        y = rawdev.empty(256, device=device)
        with pytest.raises(CudaError, match=r"(?s)launching twice.*initcheck: uninitialized read in kernel twice, "
                                            r"thread \(0,0,0\) of block \(0,0,0\).*0 bytes into the 1024-byte "
                                            r"allocation"):
            kernel("twice")((2,), (128,), (y, x, 256))


def test_blocks_allocated_before_the_block_count_as_written(sim, device):
    x = rawdev.empty(256, device=device)          # unknown to initcheck: it was not on when x was allocated
    y = rawdev.empty(256, device=device)
    with rawdev.sim.sanitize("initcheck"):
        kernel("twice")((2,), (128,), (y, x, 256))
        rawdev.cuda.synchronize()


def test_outside_the_block_nothing_is_checked(sim, device):
    x = rawdev.randn(256, device=device)
    out = rawdev.empty(2, device=device)
    kernel("sum_nobar")((2,), (128,), (out, x))
    kernel("swap_pairs")((1,), (64,), (out, x, 1, 0xFFFFFFFF))
    rawdev.cuda.synchronize()
    assert rawdev.sim.sanitizer_findings() == []


def test_the_environment_variable_turns_checkers_on_at_reset(sim, device, monkeypatch):
    from rawdev.runtime import reset_for_tests
    monkeypatch.setenv("RAWDEV_SANITIZE", "memcheck,synccheck")
    reset_for_tests("sim")
    x = rawdev.randn(64, device=device)
    y = rawdev.empty(64, device=device)
    kernel("swap_pairs")((1,), (64,), (y, x, 20, 0xFFFFFFFF))
    with pytest.raises(CudaError, match=r"synccheck: invalid warp synchronization in kernel swap_pairs.*lane\(s\) "
                                        r"20-31"):
        rawdev.cuda.synchronize()
    assert [f.tool for f in rawdev.sim.sanitizer_findings()] == ["synccheck"]
    monkeypatch.setenv("RAWDEV_SANITIZE", "")
    reset_for_tests("sim")
    x = rawdev.randn(64, device=device)
    y = rawdev.empty(64, device=device)
    kernel("swap_pairs")((1,), (64,), (y, x, 20, 0xFFFFFFFF))
    rawdev.cuda.synchronize()


def test_unknown_checker_names_are_refused():
    with pytest.raises(ValueError, match=r"unknown checker 'racechek' \(known: memcheck, initcheck, racecheck, "
                                         r"synccheck, all\)"):
        with rawdev.sim.sanitize("racechek"):
            pass
    from rawdev.sim.sanitizer import parse_tools
    assert parse_tools("all") == parse_tools("memcheck,initcheck,racecheck,synccheck")
    assert parse_tools("0") == parse_tools("") == frozenset()


def test_initcheck_follows_copies_memsets_and_pool_reuse(sim, device):
    n = 256
    rng = np.random.default_rng()
    with rawdev.sim.sanitize("initcheck"):
        xs = rng.standard_normal(n).astype(np.float32)
        x = rawdev.tensor(xs, device=device)               # a copy wrote it
        z = rawdev.zeros(n, device=device)                 # a memset (or a kernel) wrote it
        y = rawdev.empty(n, device=device)
        kernel("twice")((2,), (128,), (y, x, n))
        kernel("twice")((2,), (128,), (z, y, n))           # y: written by the first kernel
        np.testing.assert_array_equal(z.cpu().numpy(), xs * 4)
        del y
        w = rawdev.empty(n, device=device)                 # may reuse y's block: fresh again all the same
        kernel("twice")((2,), (128,), (z, w, n))
        with pytest.raises(CudaError, match="initcheck: uninitialized read in kernel twice"):
            rawdev.cuda.synchronize()


def test_a_training_step_of_rawdevs_own_kernels_is_clean(sim, device):
    rawdev.manual_seed(0)
    rng = np.random.default_rng()
    with rawdev.sim.sanitize():
        # parameters made on the device (each its own block), so no arena padding is involved
        model = nn.Sequential(nn.Linear(24, 40, device=device), nn.ReLU(), nn.LayerNorm(40, device=device),
                              nn.Linear(40, 5, device=device))
        opt = optim.Adam(model.parameters(), lr=1e-2)
        x = rawdev.tensor(rng.standard_normal((12, 24)).astype(np.float32), device=device)
        y = rawdev.tensor(rng.integers(0, 5, 12), device=device)
        for _ in range(2):
            opt.zero_grad()
            loss = nn.CrossEntropyLoss()(model(x), y)
            loss.backward()
            opt.step()
        assert np.isfinite(loss.item())
        rawdev.cuda.synchronize()
    assert rawdev.sim.sanitizer_findings() == []


def test_an_optimizer_step_on_a_moved_model_reads_no_padding(sim, device):
    """A moved module's parameters, and so their grads, share one arena with 256-byte aligned offsets; the
    optimizer updates the whole span in one launch, gaps included: the grad arena is zeroed when it is made."""
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10)).to(device)
    opt = optim.SGD(model.parameters(), lr=0.1)
    x = rawdev.randn(16, 64, device=device)
    y = rawdev.randint(0, 10, (16,), device=device)
    with rawdev.sim.sanitize("initcheck"):
        nn.CrossEntropyLoss()(model(x), y).backward()
        opt.step()
        rawdev.cuda.synchronize()
    assert rawdev.sim.sanitizer_findings() == []


@needs_nvrtc
def test_a_lineinfo_kernel_reports_its_cuda_source_line(sim, device):
    src = ("extern \"C\" __global__ void block_sum(float* out, const float* in) {\n"   # line 1
           "    __shared__ float s[128];\n"
           "    int t = threadIdx.x;\n"
           "    s[t] = in[blockIdx.x * blockDim.x + t];\n"
           "    __syncthreads();\n"                                                     # line 5
           "    for (int k = blockDim.x / 2; k > 0; k >>= 1) {\n"
           "        if (t < k) s[t] += s[t + k];\n"                                    # line 7: no barrier after
           "    }\n"
           "    if (t == 0) out[blockIdx.x] = s[0];\n"
           "}\n")
    k = rawdev.RawKernel(src, "block_sum", options=("-lineinfo",))
    x = rawdev.randn(256, device=device)
    out = rawdev.empty(2, device=device)
    with rawdev.sim.sanitize("racecheck"):
        k((2,), (128,), (out, x))
        with pytest.raises(CudaError, match=r"racecheck: .* hazard in kernel block_sum.*\(CUDA source line "
                                            r"[^:)]+:7\)"):
            rawdev.cuda.synchronize()


def test_unique_on_the_device_has_no_write_write_race(sim, device):
    """unique's run starts are scattered one writer per slot (element i that starts no run: its own spare slot)."""
    a = np.random.default_rng().integers(0, 5, 40)
    t = rawdev.tensor(a).to(device)
    with rawdev.sim.sanitize("racecheck"):
        values, inverse, counts = rawdev.unique(t, return_inverse=True, return_counts=True)
        rawdev.cuda.synchronize()
    assert rawdev.sim.sanitizer_findings() == []
    ref, rinv, rcounts = np.unique(a, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(values.cpu().numpy(), ref)
    np.testing.assert_array_equal(inverse.cpu().numpy(), rinv)
    np.testing.assert_array_equal(counts.cpu().numpy(), rcounts)


def test_scatter_with_duplicate_indices_of_equal_values_is_clean(sim, device):
    with rawdev.sim.sanitize("racecheck"):
        out = rawdev.zeros(6, device=device)
        idx = rawdev.tensor([1, 1, 3, 3, 3, 0]).to(device)
        out.scatter_(0, idx, rawdev.full((6,), 2.0, device=device))   # duplicates store the same bytes
        rawdev.cuda.synchronize()
        np.testing.assert_array_equal(out.cpu().numpy(), [2, 2, 0, 2, 0, 0])
        out.scatter_(0, idx, rawdev.arange(6.0, device=device))       # duplicates store different values
        with pytest.raises(CudaError, match=r"racecheck: write-after-write hazard in kernel scatter_b4"):
            rawdev.cuda.synchronize()


@needs_nvrtc
def test_memcheck_names_the_cuda_source_line_too(sim, device):
    src = ("extern \"C\" __global__ void fill(float* x, int n) {\n"
           "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
           "    if (i <= n) x[i] = 1.0f;   // one past the end\n"
           "}\n")
    k = rawdev.RawKernel(src, "fill", options=("-lineinfo",))
    x = rawdev.empty(256, device=device)
    k((2,), (256,), (x, 256))
    with pytest.raises(CudaError, match=r"illegal address in kernel fill, thread \(0,0,0\) of block \(1,0,0\), at PTX "
                                        r"line \d+ `st\.global\.[a-z0-9]+ [^`]*` \(CUDA source line [^:)]+:3\)"):
        rawdev.cuda.synchronize()


def test_the_sanitize_fixture_runs_every_checker_at_the_launch(sanitize, device):
    x = rawdev.randn(256, device=device)
    out = rawdev.empty(2, device=device)
    with pytest.raises(CudaError, match=r"(?s)launching sum_nobar.*racecheck: read-after-write hazard"):
        kernel("sum_nobar")((2,), (128,), (out, x))
    assert [f.tool for f in rawdev.sim.sanitizer_findings()] == ["racecheck"]


def test_nested_blocks_choose_the_innermost_checkers_and_collect_their_findings(sim, device):
    from rawdev.sim.sanitizer import active_tools
    x = rawdev.randn(64, device=device)
    y = rawdev.empty(64, device=device)
    with rawdev.sim.sanitize("racecheck") as outer:
        with rawdev.sim.sanitize("synccheck") as inner:
            assert active_tools() == {"synccheck"}
            kernel("swap_pairs")((1,), (64,), (y, x, 20, 0xFFFFFFFF))
            with pytest.raises(CudaError, match="synccheck"):
                rawdev.cuda.synchronize()
        assert active_tools() == {"racecheck"}
    assert active_tools() == frozenset()
    assert [f.tool for f in inner] == [f.tool for f in outer] == ["synccheck"]
