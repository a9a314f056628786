"""A kernel that meets bad data reports it as PyTorch's device-side assert does: cross_entropy with a class
target out of range (and not ignore_index) fails `assert(t >= 0 && t < n_classes)` in loss.ptx, the device
reports CUDA_ERROR_ASSERT (710, "device-side assert triggered") at the next synchronizing call, the context
stays unusable (sticky) and the error names kernel, block, thread and the condition -- never a silent NaN.
On the cpu the same call raises PyTorch's IndexError. On the simulator; a real GPU runs the case in a
subprocess (an assert leaves the process's context unusable)."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import rawdev
import rawdev.nn.functional as F
from rawdev import sim
from rawdev.errors import CudaError, DeviceAssertError
from rawdev.ops import cuda as cuda_ops
from rawdev.runtime import reset_for_tests
from rawdev.sim.ptx import PtxModule

from _refs import HANG_GUARD_S

RNG = np.random.default_rng(7)
COND = "Assertion `t >= 0 && t < n_classes` failed."


@pytest.fixture
def simgpu():
    reset_for_tests("sim")
    cuda_ops.set_poison(True)
    yield
    cuda_ops.set_poison(False)
    reset_for_tests("sim")   # the next test gets a power-on device, not this one's sticky error


def logits(rows=4, C=5):
    return RNG.standard_normal((rows, C)).astype(np.float32)


@pytest.mark.parametrize("bad", [7, 5, -3])
def test_out_of_range_target_is_a_device_side_assert_at_the_next_sync(simgpu, capsys, bad):
    x = rawdev.tensor(logits(), device="cuda")
    t = rawdev.tensor(np.array([1, bad, 3, 0]), device="cuda")
    loss = F.cross_entropy(x, t)          # launched, not run: kernels are asynchronous
    with pytest.raises(DeviceAssertError) as e:
        loss.item()
    err = e.value
    assert isinstance(err, CudaError) and err.code == 710 and err.name == "CUDA_ERROR_ASSERT"
    msg = str(err)
    assert "CUDA_ERROR_ASSERT (710): device-side assert triggered" in msg
    assert "while copying" in msg                                      # what rawdev was doing
    # row 1 is handled by lane 0 of the block's second warp: thread 32 of block 0
    assert "kernel cross_entropy_ws_fwd" in msg and "block: [0,0,0], thread: [32,0,0]" in msg and COND in msg
    assert "loss.cu:" in msg
    assert "asynchronously" in msg and "CUDA_LAUNCH_BLOCKING=1" in msg
    # the driver's own line, once per failing thread, on stderr
    err_out = capsys.readouterr().err.splitlines()
    assert [ln for ln in err_out if COND in ln] == [ln for ln in err_out if "thread: [32,0,0]" in ln]
    assert len([ln for ln in err_out if COND in ln]) == 1


def test_every_failing_row_is_printed(simgpu, capsys):
    x = rawdev.tensor(logits(20, 3), device="cuda")
    t = np.zeros(20, np.int64)
    t[[2, 11, 19]] = [3, -1, 99]
    with pytest.raises(DeviceAssertError, match=r"thread: \[64,0,0\].*\(2 more thread\(s\) failed it too\)"):
        F.cross_entropy(x, rawdev.tensor(t, device="cuda"), reduction="none").cpu()
    lines = [ln for ln in capsys.readouterr().err.splitlines() if COND in ln]
    # rows 2 and 11 in block 0 (8 rows a block), row 19 in block 2
    assert [ln.split(": block: ")[1].split(" Assertion")[0] for ln in lines] == [
        "[0,0,0], thread: [64,0,0]", "[1,0,0], thread: [96,0,0]", "[2,0,0], thread: [96,0,0]"]


@pytest.mark.parametrize("kw", [dict(weight=True), dict(label_smoothing=0.2), dict(weight=True, label_smoothing=0.1),
                                dict(reduction="sum"), dict(reduction="none")])
def test_weighted_smoothed_and_unreduced_variants_assert_too(simgpu, kw):
    kw = dict(kw)
    if kw.pop("weight", False):
        kw["weight"] = rawdev.tensor(RNG.uniform(0.5, 2, 5).astype(np.float32), device="cuda")
    x = rawdev.tensor(logits(), device="cuda")
    t = rawdev.tensor(np.array([0, 1, 2, 5]), device="cuda")
    loss = F.cross_entropy(x, t, **kw)
    with pytest.raises(DeviceAssertError, match=r"thread: \[96,0,0\] Assertion `t >= 0 && t < n_classes` failed"):
        loss.sum().item()


@pytest.mark.parametrize("ignore_index", [-100, -3, 7, 2])
def test_ignore_index_targets_do_not_trip_it(simgpu, ignore_index):
    a = logits()
    tt = np.array([1, ignore_index, 3, 0])
    xs = [rawdev.tensor(a, device=d, requires_grad=True) for d in ("cuda", "cpu")]
    got, ref = (F.cross_entropy(x, rawdev.tensor(tt, device=x.device), ignore_index=ignore_index, label_smoothing=0.1)
                for x in xs)
    got.backward()
    ref.backward()
    assert np.isfinite(got.item()) and abs(got.item() - ref.item()) <= 1e-5 * abs(ref.item())
    g = np.asarray(xs[0].grad.cpu())
    assert np.abs(g - np.asarray(xs[1].grad)).max() <= 1e-6 and (g[1] == 0).all()
    assert sim.sticky_error() is None


def test_the_fault_is_sticky_until_reset(simgpu):
    x = rawdev.tensor(logits(), device="cuda")
    F.cross_entropy(x, rawdev.tensor(np.array([0, 9, 0, 0]), device="cuda"))
    with pytest.raises(DeviceAssertError):
        rawdev.cuda.synchronize()
    R = sim.sticky_error()
    assert R is not None and int(R) == 710
    detail = sim.last_error_detail()
    assert "cross_entropy_ws_fwd" in detail and "block: [0,0,0], thread: [32,0,0]" in detail and COND in detail
    # every later call returns it, whatever it is, and rawdev raises it each time
    assert int(sim.cuCtxSynchronize()[0]) == 710
    assert int(sim.cuMemGetInfo()[0]) == 710
    for later in (lambda: rawdev.tensor([1.0, 2.0], device="cuda").sum().item(), lambda: x.cpu(),
                  lambda: rawdev.cuda.synchronize()):
        with pytest.raises(DeviceAssertError, match="device-side assert triggered"):
            later()
    assert sim.last_error_detail() == detail
    reset_for_tests("sim")   # the simulator's power cycle (a GPU needs a new process)
    assert sim.sticky_error() is None
    good = F.cross_entropy(rawdev.tensor(logits(), device="cuda"), rawdev.tensor(np.array([0, 4, 1, 2]), device="cuda"))
    assert np.isfinite(good.item())


def test_cuda_launch_blocking_reports_it_at_the_launch(simgpu, monkeypatch):
    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "1")
    reset_for_tests("sim")   # the driver reads it at start-up
    x = rawdev.tensor(logits(), device="cuda")
    t = rawdev.tensor(np.array([0, 1, -2, 0]), device="cuda")
    with pytest.raises(DeviceAssertError) as e:
        F.cross_entropy(x, t)
    assert e.value.call == "cuLaunchKernel" and "thread: [64,0,0]" in str(e.value)
    monkeypatch.delenv("CUDA_LAUNCH_BLOCKING")


@pytest.mark.parametrize("bad", [7, 5, -3])
def test_cpu_raises_pytorchs_index_error(bad):
    x = rawdev.tensor(logits())
    t = rawdev.tensor(np.array([1, bad, 3, 0]))
    with pytest.raises(IndexError, match=rf"^Target {bad} is out of bounds\.$"):
        F.cross_entropy(x, t)
    with pytest.raises(IndexError, match=rf"^Target {bad} is out of bounds\.$"):
        F.cross_entropy(x, t, weight=rawdev.ones(5), label_smoothing=0.3)


def test_index_select_out_of_range_asserts_too(simgpu):
    x = rawdev.tensor(np.arange(10, dtype=np.float32), device="cuda")
    y = x.index_select(0, rawdev.tensor(np.array([1, 12, 3]), device="cuda"))
    with pytest.raises(DeviceAssertError, match=r"thread: \[1,0,0\] Assertion `index >= -size && index < size` failed"):
        y.cpu()


# ------------------------------------------------------------------ the simulator's side: PTX calls
ASSERT_PTX = """
.version 8.0
.target sm_75
.address_size 64
.extern .func __assertfail
(
	.param .b64 __assertfail_param_0,
	.param .b64 __assertfail_param_1,
	.param .b32 __assertfail_param_2,
	.param .b64 __assertfail_param_3,
	.param .b64 __assertfail_param_4
)
;
.global .align 1 .b8 $str[6] = {120, 32, 60, 32, 50, 0};
.global .align 1 .b8 $str$1[5] = {116, 46, 99, 117, 0};
.global .align 1 .b8 __unnamed_1[2] = {102, 0};

.visible .entry k(.param .u32 k_param_0)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<4>;
	.reg .b64 	%rd<8>;
	ld.param.u32 	%r1, [k_param_0];
	mov.u32 	%r2, %tid.x;
	setp.lt.u32 	%p1, %r2, %r1;
	@%p1 bra 	$L__BB0_2;
	mov.u64 	%rd1, $str;
	cvta.global.u64 	%rd2, %rd1;
	mov.u64 	%rd3, $str$1;
	cvta.global.u64 	%rd4, %rd3;
	mov.u64 	%rd5, __unnamed_1;
	cvta.global.u64 	%rd6, %rd5;
	mov.u32 	%r3, 12;
	mov.u64 	%rd7, 1;
	{ // callseq 0, 0
	.reg .b32 temp_param_reg;
	.param .b64 param0;
	st.param.b64 	[param0+0], %rd2;
	.param .b64 param1;
	st.param.b64 	[param1+0], %rd4;
	.param .b32 param2;
	st.param.b32 	[param2+0], %r3;
	.param .b64 param3;
	st.param.b64 	[param3+0], %rd6;
	.param .b64 param4;
	st.param.b64 	[param4+0], %rd7;
	call.uni
	__assertfail,
	(
	param0,
	param1,
	param2,
	param3,
	param4
	);
	} // callseq 0
$L__BB0_2:
	ret;
}
"""


def test_interpreter_call_of_assertfail(capsys):
    from rawdev.sim.memory import DeviceMemory
    from rawdev.sim.ptx import KernelFault
    m = PtxModule(ASSERT_PTX)
    assert "call.uni" in m.opcodes
    mem = DeviceMemory(1 << 20)
    m.launch("k", (2, 1, 1), (64, 1, 1), params=np.array([64], np.uint32).tobytes(), memory=mem)   # no thread >= 64
    with pytest.raises(KernelFault) as e:
        m.launch("k", (2, 1, 1), (64, 1, 1), params=np.array([60], np.uint32).tobytes(), memory=mem)
    f = e.value
    assert f.code_name == "CUDA_ERROR_ASSERT" and f.space == "assert" and f.assertion == "x < 2"
    assert f.thread == (60, 0, 0) and f.block == (0, 0, 0)
    assert "t.cu:12: f: block: [0,0,0], thread: [60,0,0] Assertion `x < 2` failed." in str(f)
    assert "(7 more thread(s) failed it too)" in str(f)
    assert capsys.readouterr().err.splitlines() == [
        f"t.cu:12: f: block: [{b},0,0], thread: [{i},0,0] Assertion `x < 2` failed." for b in (0, 1)
        for i in range(60, 64)]


@pytest.mark.parametrize("edit,why", [
    (lambda p: p.replace("call.uni\n\t__assertfail", "call.uni\n\tvprintf").replace(
        ".extern .func __assertfail", ".extern .func vprintf"), "vprintf"),
    (lambda p: p.replace(".extern .func __assertfail\n", ".extern .func __assertfail_other\n"), "undeclared"),
    (lambda p: p.replace("\tparam4\n\t);", "\tparam9\n\t);"), "param9"),
])
def test_interpreter_refuses_calls_it_does_not_model(edit, why):
    with pytest.raises(NotImplementedError, match=why):
        PtxModule(edit(ASSERT_PTX))


@pytest.mark.gpu
def test_on_a_real_gpu_in_a_subprocess():
    from conftest import real_gpu
    if real_gpu():
        pytest.skip(f"needs a real GPU: {real_gpu().split(': install')[0]}")
    script = textwrap.dedent("""
        import numpy as np, rawdev, rawdev.nn.functional as F
        from rawdev.errors import DeviceAssertError
        x = rawdev.tensor(np.zeros((4, 5), np.float32), device="cuda")
        loss = F.cross_entropy(x, rawdev.tensor(np.array([1, 7, 3, 0]), device="cuda"))
        try:
            loss.item()
        except DeviceAssertError as e:
            print("RAISED", e.code, e.name)
        """)
    env = dict(os.environ, RAWDEV_DRIVER="cuda")
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert "RAISED 710 CUDA_ERROR_ASSERT" in r.stdout, r.stdout + r.stderr
    assert "block: [0,0,0], thread: [32,0,0] Assertion `t >= 0 && t < n_classes` failed." in r.stderr + r.stdout
