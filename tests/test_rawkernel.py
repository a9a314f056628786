"""Users' kernels: RawKernel/RawModule programs written the way CuPy's RawKernel examples are (only the import
differs), compiled with NVRTC and run on the simulated GPU (and on a GPU when there is one: the `cuda` marker)
against float64 numpy; PTX input; the argument checks; the on-disk cache across processes; NVRTC missing."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import rawdev
from rawdev.errors import IllegalAddressError
from rawdev.runtime import nvrtc

ROOT = Path(__file__).resolve().parent.parent


def _nvrtc_missing():
    try:
        nvrtc.load()
        return None
    except nvrtc.NvrtcNotFoundError as e:
        return str(e).splitlines()[0]


needs_nvrtc = pytest.mark.skipif(_nvrtc_missing() is not None, reason=f"needs NVRTC (rawdev[kernels]): "
                                                                       f"{_nvrtc_missing()}")
SEED = int(np.random.SeedSequence().entropy % 2**32)


@pytest.fixture
def rng():
    print(f"seed {SEED}")
    return np.random.default_rng(SEED)


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    """Each test compiles into its own cache directory (a shared ~/.cache would make compiles untestable)."""
    monkeypatch.setenv("RAWDEV_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def rel_err(got, ref):
    return float(np.abs(np.asarray(got, np.float64) - ref).max() / max(np.abs(ref).max(), 1e-30))


VECTOR_ADD = r'''
extern "C" __global__
void saxpy(const float* x, const float* y, float* out, float a, int n) {
    int tid = blockDim.x * blockIdx.x + threadIdx.x;
    if (tid < n) {
        out[tid] = a * x[tid] + y[tid];
    }
}
'''

REDUCE = r'''
extern "C" __global__
void block_sum(const float* x, float* partial, int n) {
    extern __shared__ float buf[];
    unsigned int t = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x * 2 + threadIdx.x;
    float v = 0.0f;
    if (i < n) v += x[i];
    if (i + blockDim.x < n) v += x[i + blockDim.x];
    buf[t] = v;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) buf[t] += buf[t + s];
        __syncthreads();
    }
    if (t == 0) partial[blockIdx.x] = buf[0];
}
'''

MATMUL = r'''
#define TILE 16
extern "C" __global__
void matmul(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[threadIdx.y][threadIdx.x] = (row < M && k0 + threadIdx.x < K) ? A[row * K + k0 + threadIdx.x] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (col < N && k0 + threadIdx.y < K) ? B[(k0 + threadIdx.y) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
'''

SCAN = r'''
extern "C" __global__
void block_scan(const float* x, float* out, int n) {
    __shared__ float warp_totals[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float v = i < n ? x[i] : 0.0f;
    for (int d = 1; d < 32; d <<= 1) {            // inclusive scan inside the warp
        float up = __shfl_up_sync(0xffffffff, v, d);
        if (lane >= d) v += up;
    }
    if (lane == 31) warp_totals[warp] = v;
    __syncthreads();
    if (warp == 0) {                               // scan of the warp totals by the first warp
        float w = lane < (blockDim.x >> 5) ? warp_totals[lane] : 0.0f;
        for (int d = 1; d < 32; d <<= 1) {
            float up = __shfl_up_sync(0xffffffff, w, d);
            if (lane >= d) w += up;
        }
        warp_totals[lane] = w;
    }
    __syncthreads();
    if (warp > 0) v += warp_totals[warp - 1];
    if (i < n) out[i] = v;
}
'''


@needs_nvrtc
@pytest.mark.cuda
def test_vector_add(device, rng):
    n = 1000
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    saxpy = rawdev.RawKernel(VECTOR_ADD, "saxpy")
    xd, yd = rawdev.tensor(x, device=device), rawdev.tensor(y, device=device)
    out = rawdev.empty_like(xd)
    saxpy(((n + 255) // 256,), (256,), (xd, yd, out, 2.5, n))
    ref = 2.5 * x.astype(np.float64) + y
    assert rel_err(out.cpu().numpy(), ref) < 1e-6, SEED


@needs_nvrtc
@pytest.mark.cuda
def test_shared_memory_reduction(device, rng):
    n, threads = 3000, 128
    x = rng.standard_normal(n).astype(np.float32)
    blocks = (n + 2 * threads - 1) // (2 * threads)
    k = rawdev.RawKernel(REDUCE, "block_sum")
    partial = rawdev.zeros(blocks, device=device)
    k((blocks,), (threads,), (rawdev.tensor(x, device=device), partial, n), shared_mem=threads * 4)
    got = partial.cpu().numpy().astype(np.float64)
    ref = x.astype(np.float64).reshape(-1)
    ref = np.array([ref[b * 2 * threads:(b + 1) * 2 * threads].sum() for b in range(blocks)])
    assert np.abs(got - ref).max() < 1e-4 * np.abs(x).sum() / blocks, SEED


@needs_nvrtc
@pytest.mark.cuda
def test_tiled_matmul(device, rng):
    M, K, N = 37, 29, 23    # not multiples of the tile: the edge tiles are exercised
    a, b = rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((K, N)).astype(np.float32)
    mod = rawdev.RawModule(code=MATMUL)
    mm = mod.get_function("matmul")
    c = rawdev.empty(M, N, device=device)
    mm(((N + 15) // 16, (M + 15) // 16), (16, 16), (rawdev.tensor(a, device=device), rawdev.tensor(b, device=device),
                                                   c, M, N, K))
    assert rel_err(c.cpu().numpy(), a.astype(np.float64) @ b.astype(np.float64)) < 1e-5, SEED


@needs_nvrtc
@pytest.mark.cuda
def test_warp_shuffle_scan(device, rng):
    n, threads = 300, 128
    x = rng.standard_normal(n).astype(np.float32)
    k = rawdev.RawKernel(SCAN, "block_scan")
    out = rawdev.empty(n, device=device)
    k(((n + threads - 1) // threads,), (threads,), (rawdev.tensor(x, device=device), out, n))
    x64 = x.astype(np.float64)
    ref = np.concatenate([np.cumsum(x64[s:s + threads]) for s in range(0, n, threads)])
    assert np.abs(out.cpu().numpy() - ref).max() < 1e-5 * np.abs(x64).sum(), SEED


@needs_nvrtc
@pytest.mark.cuda
def test_python_floats_become_float_or_double_as_the_parameters_say(device):
    """CuPy packs a Python float as a double whatever the parameter: a `float` parameter then reads garbage.
    Here the .param type decides: 0.1 is a float for `float a` and a double for `double b`."""
    src = r'''
    extern "C" __global__ void mix(double* out, float a, double b, float* out32) {
        out[0] = (double)a; out[1] = b; out32[0] = a;
    }'''
    k = rawdev.RawKernel(src, "mix")
    out, out32 = rawdev.zeros(2, dtype=rawdev.float64, device=device), rawdev.zeros(1, device=device)
    k(1, 1, (out, 0.1, 0.1, out32))
    np.testing.assert_array_equal(out.cpu().numpy(), [np.float64(np.float32(0.1)), 0.1])
    k(1, 1, (out, np.float32(1.5), np.float64(-2.25), out32))
    np.testing.assert_array_equal(out.cpu().numpy(), [1.5, -2.25])
    k(1, 1, (out, 3, 4, out32))   # Python ints convert exactly to the float parameters
    np.testing.assert_array_equal(out.cpu().numpy(), [3.0, 4.0])


@needs_nvrtc
@pytest.mark.cuda
def test_templates_by_name_expression(device, rng):
    src = r'''
    template<typename T> __global__ void scale(T* x, T a, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) x[i] *= a;
    }'''
    mod = rawdev.RawModule(code=src, name_expressions=("scale<float>", "scale<double>"))
    x = rng.standard_normal(50)
    xf, xd = rawdev.tensor(x.astype(np.float32), device=device), rawdev.tensor(x, device=device)
    mod.get_function("scale<float>")((1,), (64,), (xf, -3.0, 50))
    mod.get_function("scale<double>")((1,), (64,), (xd, -3.0, 50))
    assert rel_err(xf.cpu().numpy(), -3 * x) < 1e-6, SEED
    np.testing.assert_array_equal(xd.cpu().numpy(), -3 * x)
    with pytest.raises(TypeError, match=r"argument 1 .*needs a 64-bit float: got numpy.float32"):
        mod.get_function("scale<double>")((1,), (64,), (xd, np.float32(2), 50))


PTX_SCALE = """
.version 7.0
.target sm_75
.address_size 64

.visible .entry ptx_scale(
    .param .u64 ptx_scale_param_0,
    .param .f32 ptx_scale_param_1,
    .param .u32 ptx_scale_param_2
)
{
    .reg .pred %p<2>;
    .reg .f32 %f<3>;
    .reg .b32 %r<5>;
    .reg .b64 %rd<5>;

    ld.param.u64 %rd1, [ptx_scale_param_0];
    ld.param.f32 %f1, [ptx_scale_param_1];
    ld.param.u32 %r2, [ptx_scale_param_2];
    mov.u32 %r3, %ctaid.x;
    mov.u32 %r4, %ntid.x;
    mov.u32 %r1, %tid.x;
    mad.lo.s32 %r1, %r3, %r4, %r1;
    setp.ge.s32 %p1, %r1, %r2;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.s32 %rd3, %r1, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.f32 %f2, [%rd4];
    mul.f32 %f2, %f2, %f1;
    st.global.f32 [%rd4], %f2;
DONE:
    ret;
}
"""


@pytest.mark.cuda
def test_ptx_text_and_file(device, tmp_path, rng):
    """PTX needs no compiler: as text to RawKernel, and as a file to RawModule(path=)."""
    x = rng.standard_normal(70).astype(np.float32)
    t = rawdev.tensor(x, device=device)
    k = rawdev.RawKernel(PTX_SCALE, "ptx_scale")
    k((2,), (64,), (t, 0.5, 70))
    np.testing.assert_array_equal(t.cpu().numpy(), x * np.float32(0.5))
    assert k.max_threads_per_block >= 64 and k.attributes["ptx_version"] == 70
    path = tmp_path / "scale.ptx"
    path.write_text(PTX_SCALE)
    mod = rawdev.RawModule(path=str(path))
    mod.get_function("ptx_scale")((1,), (128,), (t, 4.0, 70))
    np.testing.assert_array_equal(t.cpu().numpy(), x * np.float32(0.5) * np.float32(4))
    # from PTX alone a .u64 may be a pointer or a size_t: a tensor is taken, a float is not
    with pytest.raises(TypeError, match=r"argument 0 \(ptx_scale_param_0 \(\.u64\)\) of ptx_scale is an integer: "
                                        r"got float 1\.5"):
        k(1, 32, (1.5, 0.5, 70))
    with pytest.raises(AttributeError, match=r"no kernel named 'scale' in this module; its kernels: ptx_scale"):
        mod.get_function("scale")(1, 1, ())


@needs_nvrtc
@pytest.mark.cuda
def test_argument_mismatches_name_the_parameter(device):
    k = rawdev.RawKernel(VECTOR_ADD, "saxpy")
    x = rawdev.zeros(8, device=device)
    with pytest.raises(TypeError, match=r"saxpy takes 5 argument\(s\), got 4\n  kernel signature: saxpy\(float\* x "
                                        r"\(\.u64\), float\* y \(\.u64\), float\* out \(\.u64\), float a \(\.f32\), "
                                        r"int n \(\.u32\)\)"):
        k(1, 8, (x, x, x, 1.0))
    with pytest.raises(TypeError, match=r"argument 1 \(float\* y \(\.u64\)\) of saxpy is a pointer: got float 2\.0"):
        k(1, 8, (x, 2.0, x, 1.0, 8))
    with pytest.raises(TypeError, match=r"argument 4 \(int n \(\.u32\)\) of saxpy is a value, not a pointer: got a "
                                        r"Tensor"):
        k(1, 8, (x, x, x, 1.0, x))
    with pytest.raises(TypeError, match=r"argument 0 \(float\* x \(\.u64\)\) of saxpy is a tensor on cpu: a kernel "
                                        r"reads device memory only; move it with \.cuda\(\)"):
        k(1, 8, (rawdev.zeros(8), x, x, 1.0, 8))
    with pytest.raises(TypeError, match=r"argument 2 \(float\* out \(\.u64\)\) of saxpy points to float \(float32\): "
                                        r"got a Tensor of dtype float64"):
        k(1, 8, (x, x, x.double(), 1.0, 8))
    with pytest.raises(TypeError, match=r"argument 4 \(int n \(\.u32\)\) of saxpy is an integer: got float 8\.0"):
        k(1, 8, (x, x, x, 1.0, 8.0))
    with pytest.raises(TypeError, match=r"argument 4 .* needs a 32-bit integer: got numpy\.int64"):
        k(1, 8, (x, x, x, 1.0, np.int64(8)))
    with pytest.raises(ValueError, match=r"argument 4 .* 4294967296 does not fit in 32 bits"):
        k(1, 8, (x, x, x, 1.0, 2**32))
    with pytest.raises(ValueError, match=r"block must be a positive int or a tuple of 1 to 3 positive ints"):
        k(1, (8, 0), (x, x, x, 1.0, 8))
    k(1, 8, (x, x, x, 1.0, np.int32(8)))   # the right width is fine


@needs_nvrtc
@pytest.mark.cuda
def test_launches_go_through_the_runtime(device):
    """A user kernel's launch is a driver call like rawdev's own: in rawdev.trace(), owned by the kernel's name."""
    k = rawdev.RawKernel(VECTOR_ADD, "saxpy")
    x = rawdev.ones(8, device=device)
    k(1, 8, (x, x, x, 1.0, 8))   # compiled and loaded
    with rawdev.trace() as t:
        k(1, 8, (x, x, x, 1.0, 8))
    launches = [c for c in t.calls if c.fn == "cuLaunchKernel"]
    assert len(launches) == 1 and launches[0].owner == "saxpy" and "compute" in launches[0].stream
    np.testing.assert_array_equal(x.cpu().numpy(), np.full(8, 4.0))   # x = x + x, twice
    from rawdev.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        k(1, 8, (x, x, x, 1.0, 8))
    rows = {e.key: e.count for e in prof.key_averages()}
    assert rows.get("saxpy") == 1, rows


@needs_nvrtc
def test_an_overrun_is_caught_by_the_sanitizer(sanitize, device):
    src = r'''
    extern "C" __global__ void fill(float* x, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i <= n) x[i] = 1.0f;   // one past the end
    }'''
    k = rawdev.RawKernel(src, "fill")
    x = rawdev.empty(256, device=device)
    with pytest.raises(IllegalAddressError, match=r"(?s)launching fill .*illegal address in kernel fill, thread "
                                                  r"\(0,0,0\) of block \(1,0,0\).* 0 bytes past the end of the "
                                                  r"1024-byte allocation"):
        k((2,), (256,), (x, 256))   # raised by the launch itself: the fixture makes launches blocking


@needs_nvrtc
def test_compile_errors_carry_nvrtc_log_with_line_numbers(device):
    src = 'extern "C" __global__ void bad(float* x) {\n    x[0] = undefined_name;\n}\n'
    k = rawdev.RawKernel(src, "bad")
    with pytest.raises(rawdev.rawkernel.CompileError, match=r"kernel\.cu\(2\): error: identifier \"undefined_name\" "
                                                             r"is undefined") as e:
        k(1, 1, (rawdev.zeros(1, device=device),))
    assert "undefined_name" in e.value.log


@needs_nvrtc
def test_the_cache_serves_a_second_process_without_nvrtc(cache):
    script = textwrap.dedent(f"""
        import rawdev, numpy as np
        from rawdev.runtime import nvrtc
        rawdev.use_driver("sim")
        k = rawdev.RawKernel({VECTOR_ADD!r}, "saxpy", options=("-lineinfo",))
        x = rawdev.ones(4, device="cuda")
        k(1, 4, (x, x, x, 2.0, 4))
        assert x.cpu().numpy().tolist() == [3.0] * 4
        print("compiles", nvrtc.stats["compiles"], "hits", nvrtc.stats["cache_hits"])
        """)
    env = dict(os.environ, RAWDEV_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))

    def run():
        r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout.split()[-4:]

    assert run() == ["compiles", "1", "hits", "0"]
    files = sorted(cache.rglob("*.ptx"))
    assert len(files) == 1 and ".loc" in files[0].read_text()
    mtime = files[0].stat().st_mtime_ns
    assert run() == ["compiles", "0", "hits", "1"]
    assert files[0].stat().st_mtime_ns == mtime
    # other options, another architecture, other source: other entries; the same again: a hit
    before = dict(nvrtc.stats)
    nvrtc.compile_to_ptx(VECTOR_ADD, options=("-lineinfo", "-DX=1"))
    ptx80, _ = nvrtc.compile_to_ptx(VECTOR_ADD, options=("-lineinfo",), arch="compute_80")
    nvrtc.compile_to_ptx(VECTOR_ADD + "\n", options=("-lineinfo",))
    assert ".target sm_80" in ptx80 and len(list(cache.rglob("*.ptx"))) == 4
    assert nvrtc.compile_to_ptx(VECTOR_ADD, options=("-lineinfo",), arch="compute_80")[0] == ptx80
    assert (nvrtc.stats["compiles"] - before["compiles"], nvrtc.stats["cache_hits"] - before["cache_hits"]) == (3, 1)


def test_without_nvrtc_the_message_names_the_extra_and_ptx_still_works(monkeypatch, driver):
    def missing():
        raise ImportError("libnvrtc.so.12: cannot open shared object file")

    monkeypatch.setattr(nvrtc, "_import_nvrtc", missing)
    monkeypatch.setattr(nvrtc, "_nvrtc", None)
    k = rawdev.RawKernel(VECTOR_ADD, "saxpy")
    x = rawdev.ones(4, device="cuda")
    with pytest.raises(nvrtc.NvrtcNotFoundError, match=r"pip install 'rawdev\[kernels\]'") as e:
        k(1, 4, (x, x, x, 1.0, 4))
    assert "PTX input works without it" in str(e.value)
    rawdev.RawKernel(PTX_SCALE, "ptx_scale")(1, 4, (x, 3.0, 4))
    np.testing.assert_array_equal(x.cpu().numpy(), [3.0] * 4)


def test_constructor_checks():
    with pytest.raises(TypeError, match="exactly one of code= .* and path="):
        rawdev.RawModule()
    with pytest.raises(ValueError, match="NVRTC only"):
        rawdev.RawKernel(VECTOR_ADD, "saxpy", backend="nvcc")
    with pytest.raises(NotImplementedError, match="translate_cucomplex"):
        rawdev.RawKernel(VECTOR_ADD, "saxpy", translate_cucomplex=True)
    with pytest.raises(NotImplementedError, match="cuLaunchKernel"):
        rawdev.RawKernel(VECTOR_ADD, "saxpy", enable_cooperative_groups=True)
    with pytest.raises(ValueError, match="loads PTX only"):
        rawdev.RawModule(path="kernels.cubin")


def test_a_kernel_outlives_a_device_reset(driver):
    """A RawKernel made once (at import, as in a project's module) loads again on a reopened device: the tests of a
    project reset the simulated GPU between tests."""
    from rawdev.runtime import reset_for_tests
    k = rawdev.RawKernel(PTX_SCALE, "ptx_scale")
    for _ in range(2):
        x = rawdev.ones(4, device="cuda")
        k(1, 4, (x, 2.0, 4))
        np.testing.assert_array_equal(x.cpu().numpy(), [2.0] * 4)
        reset_for_tests(driver)


@pytest.mark.devices(2)
def test_a_second_device_and_a_user_stream(device):
    """The kernel runs where its tensors are (loaded there on first use); `stream=` queues it on a rawdev stream."""
    k = rawdev.RawKernel(PTX_SCALE, "ptx_scale")
    x1 = rawdev.ones(8, device="cuda:1")
    k(1, 8, (x1, 2.0, 8))
    np.testing.assert_array_equal(x1.cpu().numpy(), [2.0] * 8)
    x0 = rawdev.ones(8, device=device)
    s = rawdev.cuda.Stream()
    s.wait_stream(rawdev.cuda.current_stream())   # x0's fill is queued on the compute stream
    k(1, 8, (x0, 3.0, 8), stream=s)
    s.synchronize()
    np.testing.assert_array_equal(x0.cpu().numpy(), [3.0] * 8)
    with pytest.raises(ValueError, match=r"tensor arguments are on cuda:1 but the stream is on cuda:0"):
        k(1, 8, (x1, 3.0, 8), stream=s)
    with pytest.raises(TypeError, match=r"stream must be a rawdev.cuda.Stream \(or None\), not int"):
        k(1, 8, (x0, 3.0, 8), stream=0)


def test_structs_by_value_take_bytes_or_a_numpy_scalar_of_their_size():
    """`__half a` or `float2 v` is `.param .align A .b8 name[N]` in PTX: N bytes, e.g. numpy.float16(1.5)."""
    from rawdev.rawkernel.args import Param, convert
    half, pair = Param("a", "b8[2]", False, "__half"), Param("v", "b8[8]", False, "float2")
    vals, _ = convert("k", [half, pair], (np.float16(1.5), np.array([1.0, -2.0], np.float32).tobytes()))
    assert vals == [np.float16(1.5).tobytes(), np.float32([1.0, -2.0]).tobytes()]
    with pytest.raises(TypeError, match=r"argument 0 \(__half a \(\.b8\[2\]\)\) of k is a struct passed by value: "
                                        r"pass its 2 bytes \(or a numpy scalar of that size\), got float"):
        convert("k", [half, pair], (1.5, b"\0" * 8))
    with pytest.raises(TypeError, match=r"struct passed by value: pass its 8 bytes"):
        convert("k", [half, pair], (np.float16(1), np.float32(1)))


@needs_nvrtc
def test_compiling_leaves_the_text_encoding_alone():
    """NVRTC switches the calling thread to a "C" locale and leaves it there: open() would then read text as ASCII
    (every later read of a UTF-8 file in the process failed). The compiler's caller puts the thread back."""
    import locale
    before = locale.getpreferredencoding(False)
    nvrtc.compile_to_ptx(VECTOR_ADD)   # a compilation: each test has a cache folder of its own
    assert locale.getpreferredencoding(False) == before
