"""A bounded run of tools/fault_sweep.py: every driver function each registered operation calls is made to
fail (its first and last call), and each case must end in a CudaError with context (or a correct result),
memory back to where it was, the model unchanged or consistent, and the process usable.
`python tools/fault_sweep.py` fails every call of every operation."""
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _sweep_module():
    spec = importlib.util.spec_from_file_location("fault_sweep", ROOT / "tools" / "fault_sweep.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


fs = _sweep_module()
LOADS = ("load_state_dict_cpu", "load_state_dict_cuda")
PER_CALL = {"device_loader": 1, "checkpoint": 1}


def _report(results, allowed):
    return "\n".join(f"{op} {fn}#{n}: {out}: {detail}" for op, fn, n, out, detail in results if out not in allowed)


@pytest.mark.parametrize("op", [o for o in fs.OPERATIONS if o not in LOADS])
def test_every_driver_call_of_an_operation_fails_cleanly(op):
    results = fs.sweep([op], max_per_call=PER_CALL.get(op, 2))
    assert results, f"{op} makes no driver call"
    # a failed backward keeps the gradients it had already written (as PyTorch does): memory held, not leaked
    bad = _report(results, ("ok", "absorbed", "held") if op == "checkpoint" else ("ok", "absorbed"))
    assert not bad, bad


@pytest.mark.parametrize("op", LOADS)
def test_failed_load_state_dict_leaves_the_model_unchanged(op):
    # staged in one arena and switched over only after every call succeeded: all or nothing, like moves
    results = fs.sweep([op], max_per_call=2)
    bad = _report(results, ("ok", "absorbed"))
    assert not bad, bad


def test_the_sweep_sees_a_defect():
    """The checks are live: a move that forgets to free its arena on failure is reported as a leak."""
    from rawdev.runtime import memory
    real = memory.DeviceBuffer.free

    def forgetful(self, stream=None):   # drops the buffer without giving the memory back
        self._unfreed.clear()

    memory.DeviceBuffer.free = forgetful
    try:
        results = fs.sweep(["module_to_cuda"], max_per_call=1)
    finally:
        memory.DeviceBuffer.free = real
    assert any(r[3] == "leak" for r in results), results
