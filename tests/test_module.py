"""nn.Module semantics and wording (PyTorch's torch/nn/modules/module.py is the reference), and nn.ParameterList /
nn.ParameterDict (registration, state_dict keys, moves, repr)."""
import copy
from collections import OrderedDict

import pytest
import rawdev
from rawdev import dtypes, nn
from rawdev.nn import Buffer, Module, ModuleDict, ModuleList, Parameter, Sequential
from rawdev.tensor import ones, zeros

from _models import BN, Act, Lin


class raises_key:
    """pytest.raises(KeyError) comparing the exact message (str(KeyError) adds quotes)."""

    def __init__(self, msg):
        self.msg = msg

    def __enter__(self):
        return self

    def __exit__(self, tp, value, tb):
        assert tp is KeyError, f"expected KeyError({self.msg!r}), got {tp}"
        assert value.args[0] == self.msg
        return True


# ------------------------------------------------------------------------------------------ __setattr__ routing
def test_setattr_routes_parameters_buffers_modules():
    m = Module()
    p, b, c = Parameter(zeros(2)), zeros(3), Lin(1, 1)
    m.p = p
    m.register_buffer("b", b)
    m.c = c
    m.x = 5
    assert m._parameters["p"] is p and m._buffers["b"] is b and m._modules["c"] is c and m.__dict__["x"] == 5
    assert m.p is p and m.b is b and m.c is c
    m.b = ones(3)                       # reassigning a buffer keeps it a buffer
    assert "b" in m._buffers and m.b.tolist() == [1, 1, 1]
    m.b = None
    assert m._buffers["b"] is None
    m.p = None
    assert m._parameters["p"] is None
    m.c = None
    assert m._modules["c"] is None
    # a Parameter assigned over a plain attribute / module moves it into _parameters
    m.x = Parameter(zeros(1))
    assert "x" in m._parameters and "x" not in m.__dict__
    m.buf = Buffer(zeros(2), persistent=False)
    assert "buf" in m._buffers and "buf" in m._non_persistent_buffers_set and type(m.buf).__name__ == "Tensor"


def test_setattr_errors_match_pytorch():
    m = Module()
    m.p = Parameter(zeros(1))
    with pytest.raises(TypeError, match=r"cannot assign 'rawdev.FloatTensor' as parameter 'p' "
                                        r"\(torch.nn.Parameter or None expected\)"):
        m.p = zeros(1)
    m.c = Lin(1, 1)
    with pytest.raises(TypeError,
                       match=r"cannot assign 'int' as child module 'c' \(torch.nn.Module or None expected\)"):
        m.c = 3
    m.register_buffer("b", zeros(1))
    with pytest.raises(TypeError,
                       match=r"cannot assign 'str' as buffer 'b' \(torch.nn.Buffer, torch.Tensor or None expected\)"):
        m.b = "x"


class NoInit(Module):
    def __init__(self):
        self.p = Parameter(zeros(1))


class NoInitModule(Module):
    def __init__(self):
        self.c = Lin(1, 1)


def test_assign_before_init():
    with pytest.raises(AttributeError, match=r"cannot assign parameters before Module.__init__\(\) call"):
        NoInit()
    with pytest.raises(AttributeError, match=r"cannot assign module before Module.__init__\(\) call"):
        NoInitModule()


def test_getattr_delattr():
    m = Lin(2, 2)
    with pytest.raises(AttributeError, match="'Lin' object has no attribute 'nope'"):
        m.nope  # noqa: B018  (the attribute access is what raises)
    del m.weight
    assert "weight" not in m._parameters
    m.register_buffer("b", zeros(1), persistent=False)
    del m.b
    assert "b" not in m._buffers and "b" not in m._non_persistent_buffers_set
    assert "bias" in dir(m)


# ------------------------------------------------------------------------------------------ registration checks
def test_register_parameter_checks():
    m = Module()
    with pytest.raises(TypeError, match="parameter name should be a string. Got int"):
        m.register_parameter(1, None)
    with raises_key('parameter name can\'t contain "."'):
        m.register_parameter("a.b", None)
    with raises_key('parameter name can\'t be empty string ""'):
        m.register_parameter("", None)
    m.attr = 1
    with raises_key("attribute 'attr' already exists"):
        m.register_parameter("attr", None)
    with pytest.raises(TypeError, match=r"cannot assign 'rawdev.FloatTensor' object to parameter 'w' "
                                        r"\(torch.nn.Parameter or None required\)"):
        m.register_parameter("w", zeros(1))
    p = Parameter(zeros(1))
    p.grad_fn = object()
    with pytest.raises(ValueError, match="Cannot assign non-leaf Tensor to parameter 'w'"):
        m.register_parameter("w", p)
    with pytest.raises(AttributeError, match=r"cannot assign parameter before Module.__init__\(\) call"):
        Module.__new__(Module).register_parameter("w", None)


def test_register_buffer_checks():
    m = Module()
    with pytest.raises(TypeError, match="buffer name should be a string. Got float"):
        m.register_buffer(1.0, None)
    with raises_key('buffer name can\'t contain "."'):
        m.register_buffer("a.b", None)
    with raises_key('buffer name can\'t be empty string ""'):
        m.register_buffer("", None)
    m.attr = 1
    with raises_key("attribute 'attr' already exists"):
        m.register_buffer("attr", None)
    with pytest.raises(TypeError, match=r"cannot assign 'list' object to buffer 'b' \(torch Tensor or None required\)"):
        m.register_buffer("b", [1])
    with pytest.raises(AttributeError, match=r"cannot assign buffer before Module.__init__\(\) call"):
        Module.__new__(Module).register_buffer("b", None)


def test_add_module_checks():
    m = Module()
    with pytest.raises(TypeError, match="int is not a Module subclass"):
        m.add_module("a", 3)
    with pytest.raises(TypeError, match="module name should be a string. Got int"):
        m.add_module(3, Act())
    with raises_key('module name can\'t contain ".", got: a.b'):
        m.add_module("a.b", Act())
    with raises_key('module name can\'t be empty string ""'):
        m.add_module("", Act())
    m.attr = 1
    with raises_key("attribute 'attr' already exists"):
        m.add_module("attr", Act())
    m.register_module("r", Act())
    m.add_module("none", None)
    assert list(m._modules) == ["r", "none"]


# ------------------------------------------------------------------------------------------ iteration
def shared_tree():
    shared = Lin(2, 2)
    m = Sequential(shared, BN(2), shared)
    return m, shared


def test_named_parameters_dedup_prefix_recurse():
    m, shared = shared_tree()
    names = [n for n, _ in m.named_parameters()]
    assert names == ["0.weight", "0.bias", "1.weight", "1.bias"]
    all_names = [n for n, _ in m.named_parameters(remove_duplicate=False)]
    assert all_names == ["0.weight", "0.bias", "1.weight", "1.bias", "2.weight", "2.bias"]
    assert [n for n, _ in m.named_parameters(prefix="model")][0] == "model.0.weight"
    assert list(m.named_parameters(recurse=False)) == []
    assert [n for n, _ in m[1].named_parameters(recurse=False)] == ["weight", "bias"]
    assert len(list(m.parameters())) == 4
    # a parameter shared between two modules is yielded once
    a, b = Lin(2, 2), Lin(2, 2)
    b.weight = a.weight
    assert len(list(Sequential(a, b).parameters())) == 3


def test_named_buffers_and_modules_and_children():
    m, shared = shared_tree()
    assert [n for n, _ in m.named_buffers()] == ["1.running_mean", "1.running_var", "1.num_batches_tracked",
                                                 "1.scratch"]
    assert len(list(m.buffers())) == 4
    assert [n for n, _ in m.named_modules()] == ["", "0", "1"]
    assert [n for n, _ in m.named_modules(remove_duplicate=False)] == ["", "0", "1", "2"]
    assert [n for n, _ in m.named_modules(prefix="net")] == ["net", "net.0", "net.1"]
    assert [n for n, _ in m.named_children()] == ["0", "1"]
    assert list(m.children()) == [shared, m[1]]
    assert len(list(m.modules())) == 3


def test_apply_train_eval_requires_grad_zero_grad():
    m = Sequential(Lin(2, 3), Sequential(Lin(3, 3), Act()))
    seen = []
    assert m.apply(lambda mod: seen.append(type(mod).__name__)) is m
    assert seen == ["Lin", "Lin", "Act", "Sequential", "Sequential"]  # children first
    assert m.training and m.eval() is m and not any(x.training for x in m.modules())
    m.train()
    assert all(x.training for x in m.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        m.train(1)
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    m.requires_grad_()
    for p in m.parameters():
        p.grad = ones(p.shape)
    m.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.numpy().any() for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())


def test_forward_and_hooks():
    with pytest.raises(NotImplementedError, match=r'Module \[Module\] is missing the required "forward" function'):
        Module()(1)
    m = Act()
    h = m.register_forward_hook(lambda mod, args, out: out + 1)
    m.register_forward_pre_hook(lambda mod, args: (args[0] * 10,))
    assert m(2) == 21
    h.remove()
    assert m(2) == 20


def test_get_submodule_parameter_buffer():
    m = Sequential(Lin(1, 1), Sequential(BN(2)))
    assert m.get_submodule("1.0") is m[1][0]
    assert m.get_parameter("1.0.weight") is m[1][0].weight
    assert m.get_buffer("1.0.running_mean") is m[1][0].running_mean
    with pytest.raises(AttributeError, match="Sequential has no attribute `9`"):
        m.get_submodule("9")
    with pytest.raises(AttributeError, match="`running_mean` is not an nn.Parameter"):
        m.get_parameter("1.0.running_mean")


def test_deepcopy_module():
    m = Sequential(Lin(2, 2), BN(2))
    c = copy.deepcopy(m)
    assert c[0].weight is not m[0].weight and c[0].weight.tolist() == m[0].weight.tolist()
    assert isinstance(c[0].weight, Parameter)


# ------------------------------------------------------------------------------------------ repr
def test_repr_layout():
    m = Sequential(Lin(2, 3), Act(), Sequential(Lin(3, 3, bias=False)))
    assert repr(m) == (
        "Sequential(\n"
        "  (0): Lin(in_features=2, out_features=3, bias=True)\n"
        "  (1): Act()\n"
        "  (2): Sequential(\n"
        "    (0): Lin(in_features=3, out_features=3, bias=False)\n"
        "  )\n"
        ")")


def test_modulelist_repr_compresses_repeats():
    ml = ModuleList([Lin(2, 2), Lin(2, 2), Lin(2, 2), Act()])
    assert repr(ml) == ("ModuleList(\n"
                        "  (0-2): 3 x Lin(in_features=2, out_features=2, bias=True)\n"
                        "  (3): Act()\n"
                        ")")
    assert repr(ModuleList()) == "ModuleList()"


# ------------------------------------------------------------------------------------------ containers
def test_sequential():
    a, b, c = Act(), Lin(1, 1), Act()
    s = Sequential(a, b, c)
    assert len(s) == 3 and s[0] is a and s[-1] is c and list(s) == [a, b, c]
    assert isinstance(s[1:], Sequential) and list(s[1:]) == [b, c]
    with pytest.raises(IndexError, match="index 3 is out of range"):
        s[3]
    del s[0]
    assert list(s._modules) == ["0", "1"] and s[0] is b
    s.append(a)
    s.insert(0, Act())
    assert len(s) == 4
    named = Sequential(OrderedDict([("conv", Lin(1, 1)), ("act", Act())]))
    assert list(named._modules) == ["conv", "act"] and named.conv is named[0]
    assert len(s + named) == 6
    assert s.pop(0) is not None and len(s) == 3
    with pytest.raises(ValueError, match="add operator supports only objects of Sequential class"):
        s + 1
    assert Sequential(Act(), Act())(5) == 5


def test_modulelist():
    ml = ModuleList([Act(), Lin(1, 1)])
    ml.append(Act())
    ml.extend([Act()])
    ml += [Act()]
    assert len(ml) == 5 and list(ml._modules) == ["0", "1", "2", "3", "4"]
    assert isinstance(ml[1], Lin) and isinstance(ml[-4], Lin) and isinstance(ml[:2], ModuleList)
    with pytest.raises(IndexError, match="index 5 is out of range"):
        ml[5]
    del ml[0]
    assert isinstance(ml[0], Lin) and list(ml._modules) == ["0", "1", "2", "3"]
    ml.insert(1, BN(2))
    assert isinstance(ml[1], BN)
    with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable, but got int"):
        ml.extend(1)
    assert len(list(ml.parameters())) == 4
    assert len(ml + ModuleList([Act()])) == 6


def test_moduledict():
    md = ModuleDict({"a": Act(), "b": Lin(1, 1)})
    assert list(md) == ["a", "b"] and "a" in md and len(md) == 2 and isinstance(md["b"], Lin)
    md["c"] = Act()
    md.update([("d", Act())])
    assert list(md.keys()) == ["a", "b", "c", "d"]
    assert md.pop("a") is not None and "a" not in md
    with pytest.raises(TypeError, match="ModuleDict.update should be called with an iterable of key/value pairs, "
                                        "but got int"):
        md.update(1)
    with pytest.raises(ValueError, match="ModuleDict update sequence element #0 has length 3; 2 is required"):
        md.update([("x", Act(), 1)])
    md.clear()
    assert len(md) == 0


def test_module_float_half_cpu():
    m = Sequential(Lin(2, 2), BN(2))
    m.half()
    assert m[0].weight.dtype is dtypes.float16 and m[1].num_batches_tracked.dtype is dtypes.int64
    assert isinstance(m[0].weight, Parameter)
    m.float()
    assert m[0].weight.dtype is dtypes.float32
    assert m.cpu() is m and m.to("cpu") is m


def test_sequential_times_int_repeats_the_same_modules():
    """PyTorch's Sequential * n / n * Sequential / *=: the modules repeated (shared), renumbered."""
    from rawdev.nn import ReLU, Sequential, Tanh
    s = Sequential(ReLU(), Tanh())
    d = s * 2
    assert list(d._modules) == ["0", "1", "2", "3"] and d[2] is s[0] and d[3] is s[1]
    assert list((2 * s)._modules) == ["0", "1", "2", "3"]
    t = s
    t *= 2
    assert t is s and len(s) == 4
    with pytest.raises(ValueError, match="^Non-positive multiplication factor 0 for "):
        s * 0
    with pytest.raises(TypeError, match=r"^unsupported operand type\(s\) for \*: "):
        s * 1.5


def test_parameter_list_and_dict_register_and_move(driver):
    pl = nn.ParameterList([nn.Parameter(rawdev.randn(3, 4)), rawdev.zeros(2)])
    assert isinstance(pl[1], nn.Parameter) and pl[1].requires_grad        # a plain tensor is wrapped
    pl.append(rawdev.ones(1)).extend([rawdev.ones(2)])
    assert len(pl) == 4 and [n for n, _ in pl.named_parameters()] == ["0", "1", "2", "3"]
    assert list(pl.state_dict()) == ["0", "1", "2", "3"] and pl[-1].shape == (2,)
    assert repr(pl).splitlines()[1] == "    (0): Parameter containing: [rawdev.float32 of size 3x4]"
    pd = nn.ParameterDict({"a": nn.Parameter(rawdev.randn(2)), "b": rawdev.zeros(3)})
    pd["c"] = rawdev.ones(1)
    assert list(pd) == ["a", "b", "c"] and list(pd.state_dict()) == ["a", "b", "c"] and "c" in pd
    assert repr(pd).splitlines()[1] == "    (a): Parameter containing: [rawdev.FloatTensor of size 2]"
    assert pd.pop("a").shape == (2,) and list(pd.keys()) == ["b", "c"]

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.ps = nn.ParameterList([nn.Parameter(rawdev.ones(2)) for _ in range(2)])
            self.pd = nn.ParameterDict({"w": nn.Parameter(rawdev.ones(3))})

    m = M()
    assert [n for n, _ in m.named_parameters()] == ["ps.0", "ps.1", "pd.w"]
    first = m.ps[0]
    m.cuda()
    assert m.ps[0] is first and first.is_cuda and m.pd["w"].is_cuda     # moved in place, objects kept
    (m.ps[0].sum() + m.pd["w"].sum()).backward()
    assert m.ps[0].grad.cpu().tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="should not be called"):
        m.ps()
