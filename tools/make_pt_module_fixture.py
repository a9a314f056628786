"""Write tests/data/pt/sequential_module.pt: a whole `torch.nn.Sequential(Linear(3, 4), ReLU(), Linear(4, 2))` as
torch.save writes it (a zip holding a protocol-2 pickle whose storages are persistent ids), without PyTorch.

The pickle is produced by Python's pickler from stand-ins registered under PyTorch's module names (a class
`torch.nn.modules.linear.Linear` whose instances pickle as NEWOBJ + BUILD of their __dict__, exactly as
torch.nn.Module's default reduction does; tensors and parameters reduce to torch._utils._rebuild_tensor_v2 /
_rebuild_parameter with ('storage', torch.FloatStorage, key, 'cpu', numel) persistent ids), so the opcode
stream has the shape of tests/data/pt/whole_module.pt, which PyTorch itself wrote. Only this tool writes
pickle; rawdev never does. The weights are fixed numbers, listed in tests/test_pt_objects.py.

    python tools/make_pt_module_fixture.py
"""
import io
import os
import pickle
import sys
import types
import zipfile
from collections import OrderedDict

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "pt", "sequential_module.pt")
HOOKS = ("_backward_pre_hooks", "_backward_hooks", "_forward_hooks", "_forward_hooks_with_kwargs",
         "_forward_hooks_always_called", "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs",
         "_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks")
W1 = np.arange(12, dtype=np.float32).reshape(4, 3) / 10 - 0.5
B1 = np.array([0.1, -0.2, 0.3, -0.4], np.float32)
W2 = np.array([[0.5, -1.0, 0.25, 2.0], [-0.75, 0.5, 1.5, -0.25]], np.float32)
B2 = np.array([0.05, -0.05], np.float32)


def _module(name, qualname):
    mod = sys.modules.get(name) or types.ModuleType(name)
    sys.modules[name] = mod
    return mod


def _register(obj, module, qualname):
    obj.__module__, obj.__qualname__, obj.__name__ = module, qualname, qualname
    setattr(_module(module, qualname), qualname, obj)
    return obj


def _rebuild_tensor_v2(*a):   # stand-ins: only their names go into the pickle
    raise AssertionError


def _rebuild_parameter(*a):
    raise AssertionError


class FloatStorage:
    pass


for fn in (_rebuild_tensor_v2, _rebuild_parameter):
    _register(fn, "torch._utils", fn.__name__)
_register(FloatStorage, "torch", "FloatStorage")


class Storage:
    def __init__(self, key, arr):
        self.key, self.arr = key, arr


class Tensor:
    def __init__(self, storage, shape):
        self.storage, self.shape = storage, shape

    def __reduce_ex__(self, proto):
        stride = tuple(int(np.prod(self.shape[i + 1:])) for i in range(len(self.shape)))
        return _rebuild_tensor_v2, (self.storage, 0, self.shape, stride, False, OrderedDict())


class Parameter:
    def __init__(self, data):
        self.data = data

    def __reduce_ex__(self, proto):
        return _rebuild_parameter, (self.data, True, OrderedDict())


def module_state(**attrs):
    d = {"training": True, "_parameters": {}, "_buffers": {}, "_non_persistent_buffers_set": set()}
    for h in HOOKS:
        d[h] = OrderedDict()
    d["_is_full_backward_hook"] = None
    d["_modules"] = {}
    d.update(attrs)
    return d


class Linear:
    pass


class ReLU:
    pass


class Sequential:
    pass


_register(Linear, "torch.nn.modules.linear", "Linear")
_register(ReLU, "torch.nn.modules.activation", "ReLU")
_register(Sequential, "torch.nn.modules.container", "Sequential")


def make(cls, state):
    obj = cls.__new__(cls)
    obj.__dict__.update(state)
    return obj


def main():
    storages = [Storage(str(i), a) for i, a in enumerate((W1, B1, W2, B2))]

    def param(i, arr):
        return Parameter(Tensor(storages[i], tuple(arr.shape)))

    lin1 = make(Linear, module_state(_parameters={"weight": param(0, W1), "bias": param(1, B1)}, in_features=3,
                                     out_features=4))
    relu = make(ReLU, module_state(inplace=False))
    lin2 = make(Linear, module_state(_parameters={"weight": param(2, W2), "bias": param(3, B2)}, in_features=4,
                                     out_features=2))
    seq = make(Sequential, module_state(_modules={"0": lin1, "1": relu, "2": lin2}))

    class P(pickle.Pickler):
        def persistent_id(self, obj):
            if isinstance(obj, Storage):
                return ("storage", FloatStorage, obj.key, "cpu", obj.arr.size)
            return None

    buf = io.BytesIO()
    P(buf, protocol=2).dump(seq)
    with zipfile.ZipFile(OUT, "w", zipfile.ZIP_STORED) as z:
        def put(name, data):
            z.writestr(zipfile.ZipInfo(f"sequential_module/{name}", date_time=(1980, 1, 1, 0, 0, 0)), data)
        put("data.pkl", buf.getvalue())
        put(".format_version", b"1")
        put(".storage_alignment", b"64")
        put("byteorder", b"little")
        for s in storages:
            put(f"data/{s.key}", s.arr.astype("<f4").tobytes())
        put("version", b"3\n")


if __name__ == "__main__":
    main()
