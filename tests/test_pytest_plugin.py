"""rawdev's pytest plugin, run on generated test files with pytest's own `pytester`: the markers (gpu skipped
with its reason, cuda on the simulator, cc and devices simulated), the device/sim/sanitize fixtures, the
--rawdev-device option, the summary line, and loading it twice (entry point and conftest) without a clash."""
import re

import pytest

pytest_plugins = ["pytester"]

PTX_SCALE = """
.version 7.0
.target sm_75
.address_size 64
.visible .entry ptx_scale(.param .u64 ptx_scale_param_0, .param .f32 ptx_scale_param_1,
                          .param .u32 ptx_scale_param_2)
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

TESTS = '''
import numpy as np
import pytest
import rawdev

PTX = {ptx!r}


@pytest.mark.gpu
def test_needs_a_gpu():
    raise AssertionError("must not run without a GPU")


@pytest.mark.cuda
def test_cuda_marker_runs_on_the_simulator():
    assert rawdev.cuda.is_simulated()
    k = rawdev.RawKernel(PTX, "ptx_scale")
    x = rawdev.ones(40, device="cuda")
    k((1,), (64,), (x, 3.0, 40))
    assert x.cpu().numpy().tolist() == [3.0] * 40


@pytest.mark.cc(">=8.0")
def test_cc_is_simulated():
    assert rawdev.cuda.get_device_capability() == (8, 0)


@pytest.mark.cc(">8.0", "<9.0")
def test_cc_range_takes_the_oldest_fit():
    assert rawdev.cuda.get_device_capability() == (8, 6)


@pytest.mark.devices(3)
def test_devices_are_simulated():
    assert rawdev.cuda.device_count() == 3


def test_a_later_test_gets_the_default_device(device):
    assert str(device) == "cuda:0"
    assert rawdev.cuda.get_device_capability() == (7, 5) and rawdev.cuda.device_count() == 1


def test_sim_fixture_injects_faults(sim, device):
    sim.inject_fault("cuMemAllocFromPoolAsync", 2)
    with pytest.raises(rawdev.OutOfMemoryError):
        rawdev.zeros(10, device=device)


def test_sanitize_reports_the_overrun_at_the_launch(sanitize, device):
    k = rawdev.RawKernel(PTX, "ptx_scale")
    x = rawdev.ones(32, device=device)
    with pytest.raises(rawdev.errors.IllegalAddressError, match="illegal address in kernel ptx_scale"):
        k((1,), (64,), (x, 2.0, 64))
'''


@pytest.fixture
def isolated(monkeypatch):
    for var in ("RAWDEV_TEST_DEVICE", "RAWDEV_GPU_TESTS_ON", "RAWDEV_SIM_CC", "RAWDEV_SIM_DEVICES", "RAWDEV_DRIVER",
                "CUDA_LAUNCH_BLOCKING"):
        monkeypatch.delenv(var, raising=False)


def test_markers_fixtures_and_summary(pytester, isolated):
    from conftest import real_gpu
    if real_gpu() is None:
        pytest.skip("the generated tests expect no GPU (their cuda tests assert the simulator)")
    pytester.makepyfile(test_generated=TESTS.format(ptx=PTX_SCALE))
    result = pytester.runpytest_inprocess("-p", "rawdev.pytest_plugin", "-rs")
    result.assert_outcomes(passed=7, skipped=1)
    result.stdout.fnmatch_lines(["*SKIPPED*needs a real GPU: no CUDA driver found*"])
    line = [s for s in result.stdout.lines if s.startswith("rawdev: ")]
    assert len(line) == 1, result.stdout.str()
    m = re.fullmatch(r"rawdev: (\d+) kernel launch(?:es)? \(1 failed\), devices used: sim, sanitizer findings: 1, "
                     r"simulator time: \d+\.\d\d s", line[0])
    assert m and int(m[1]) >= 1, line[0]


def test_sim_option_and_the_cuda_option_without_a_gpu(pytester, isolated):
    from conftest import real_gpu
    pytester.makepyfile(test_generated="""
        import pytest, rawdev

        @pytest.mark.gpu
        def test_gpu():
            pass

        @pytest.mark.cuda
        def test_cuda():
            assert rawdev.cuda.is_simulated()
        """)
    result = pytester.runpytest_inprocess("-p", "rawdev.pytest_plugin", "--rawdev-device=sim", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*needs a real GPU: --rawdev-device=sim*"])
    if real_gpu() is not None:
        result = pytester.runpytest_inprocess("-p", "rawdev.pytest_plugin", "--rawdev-device=cuda")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["*--rawdev-device=cuda, but no GPU is usable*"])


def test_gpu_tests_on_sim_runs_gpu_marked_tests(pytester, isolated, monkeypatch):
    """RAWDEV_GPU_TESTS_ON=sim (tools/gpu_check --driver sim) runs the gpu-marked tests instead of skipping them."""
    monkeypatch.setenv("RAWDEV_GPU_TESTS_ON", "sim")
    pytester.makepyfile(test_generated="""
        import pytest

        @pytest.mark.gpu
        def test_gpu():
            pass
        """)
    pytester.runpytest_inprocess("-p", "rawdev.pytest_plugin").assert_outcomes(passed=1)


def test_loaded_by_conftest_and_on_the_command_line_at_once(pytester, isolated):
    """An installed rawdev loads the plugin by its entry point, a checkout's conftest names it too: one plugin, no
    "already registered" error, markers and fixtures once."""
    pytester.makeconftest('pytest_plugins = ["rawdev.pytest_plugin"]\n')
    pytester.makepyfile(test_generated="""
        import pytest

        @pytest.mark.cuda
        def test_device(device):
            assert device.type == "cuda"
        """)
    result = pytester.runpytest_inprocess("-p", "rawdev.pytest_plugin", "--strict-markers")
    result.assert_outcomes(passed=1)
    assert sum(s.startswith("rawdev: ") for s in result.stdout.lines) == 1


def test_a_bad_cc_spec_is_a_usage_error(pytester, isolated):
    pytester.makepyfile(test_generated="""
        import pytest

        @pytest.mark.cc("eight")
        def test_x():
            pass
        """)
    result = pytester.runpytest_inprocess("-p", "rawdev.pytest_plugin")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*cc('eight'): expected e.g. '>=8.0'*"])
