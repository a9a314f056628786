"""Small torch names the corpus scan found and rawdev builds: torch.onnx._export (export's private alias),
torch.jit.script_method, torch.backends.cuda.SDPBackend, torch.functional, and torch.cuda.memory's private
_record_memory_history/_snapshot (on the simulated GPU)."""
import numpy as np
import pytest
import rawdev
import rawdev.functional as TF
from rawdev.backends.cuda import SDPBackend, sdp_kernel


def test_onnx_private_export_alias():
    assert rawdev.onnx._export is rawdev.onnx.export


def test_jit_script_method_leaves_the_method():
    class M(rawdev.nn.Module):
        @rawdev.jit.script_method
        def forward(self, x):
            return x * 2

    x = rawdev.tensor([1.0, -2.0])
    assert np.array_equal(M()(x).numpy(), [2.0, -4.0])


def test_sdp_backend_values_and_use_as_switch_keys():
    assert [int(b) for b in (SDPBackend.ERROR, SDPBackend.MATH, SDPBackend.FLASH_ATTENTION,
                             SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION)] == [-1, 0, 1, 2, 3]
    switches = {SDPBackend.MATH: {"enable_math": True, "enable_flash": False, "enable_mem_efficient": False}}
    with sdp_kernel(**switches[SDPBackend.MATH]):
        assert rawdev.backends.cuda.math_sdp_enabled() and not rawdev.backends.cuda.flash_sdp_enabled()
    assert rawdev.backends.cuda.flash_sdp_enabled()


def test_torch_functional_holds_pytorchs_names():
    a = rawdev.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert np.allclose(TF.einsum("ij,jk->ik", a, a).numpy(), np.array([[7.0, 10.0], [15.0, 22.0]]))
    assert [t.shape for t in TF.split(a, 1)] == [(1, 2), (1, 2)]
    assert TF.unique is rawdev.unique
    with pytest.raises(AttributeError, match="has no attribute 'relu'"):   # torch.nn.functional's, in PyTorch too
        TF.relu  # noqa: B018


def test_cuda_memory_private_history_and_snapshot(driver):
    mem = rawdev.cuda.memory
    try:
        mem._record_memory_history(enabled="all")
        x = rawdev.ones(16, device="cuda")
        snap = mem._snapshot()
        assert snap["segments"] and any(ev for trace in snap["device_traces"] for ev in trace)
        del x
    finally:
        mem._record_memory_history(enabled=None)
    assert not mem._history.enabled
    with pytest.raises(ValueError, match="Invalid enabled value"):
        mem._record_memory_history(enabled="sometimes")
