"""torch.utils.benchmark's fuzzers on rawdev: a seed gives the same parameters and tensors every time, drawn from
a numpy RandomState in PyTorch's order (checked against a replay of that order here); constraints and the element
and allocation limits reject parameter sets; probability_contiguous 0 and 1 give the memory orders they promise;
steps stride the tensor; the ready-made op fuzzers keep PyTorch's limits; and the tutorials' loop (Timer over
fuzzed inputs, Compare) runs."""
import numpy as np
import pytest
import rawdev
from rawdev.utils import benchmark
from rawdev.utils.benchmark import FuzzedParameter, FuzzedTensor, Fuzzer, ParameterAlias
from rawdev.utils.benchmark.fuzzer import prod
from rawdev.utils.benchmark.op_fuzzers import binary, spectral, unary


def small_fuzzer(seed, p_contiguous=0.5, **tensor_kwargs):
    return Fuzzer(parameters=[FuzzedParameter("n", minval=2, maxval=64, distribution="loguniform"),
                              FuzzedParameter("m", minval=2, maxval=9, distribution="uniform")],
                  tensors=[FuzzedTensor("x", size=("n", "m"), probability_contiguous=p_contiguous, **tensor_kwargs)],
                  seed=seed)


def test_the_same_seed_gives_the_same_parameters_and_tensors():
    a = list(small_fuzzer(7).take(6))
    b = list(small_fuzzer(7).take(6))
    again = list(small_fuzzer(7).take(6))[:3]   # take restarts from the seed
    for (ta, pa, qa), (tb, pb, qb) in zip(a, b):
        assert qa == qb and pa["x"]["numel"] == pb["x"]["numel"]
        np.testing.assert_array_equal(ta["x"].numpy(), tb["x"].numpy())
        assert ta["x"].stride() == tb["x"].stride()
    assert [q for _, _, q in again] == [q for _, _, q in a[:3]]
    other = [q for _, _, q in small_fuzzer(8).take(6)]
    assert other != [q for _, _, q in a]


def test_draws_follow_pytorchs_order_of_randomstate_calls():
    # replay by hand: the seed for rawdev's generators, then per step each parameter in order, then per tensor
    # its contiguity draw (and a permutation when that draw says non-contiguous)
    seed = 12345
    got = [q for _, _, q in small_fuzzer(seed).take(4)]
    st = np.random.RandomState(seed)
    st.randint(low=0, high=2 ** 63, dtype=np.int64)
    want = []
    for _ in range(4):
        n = min(max(int(2 ** st.uniform(low=np.log2(2), high=np.log2(64))), 2), 64)
        m = int(st.randint(low=2, high=10))
        want.append({"n": n, "m": m})
        if st.rand() > 0.5:
            order = np.arange(2)
            while np.all(order == np.arange(2)):
                order = st.permutation(2)
    assert got == want


def test_values_come_from_rawdevs_generator_seeded_by_the_fuzzer():
    (tensors, _, _), = small_fuzzer(3, p_contiguous=1.0).take(1)
    st = np.random.RandomState(3)
    rawdev.manual_seed(int(st.randint(low=0, high=2 ** 63, dtype=np.int64)))
    x = tensors["x"]
    np.testing.assert_array_equal(x.numpy(), rawdev.rand(tuple(x.shape)).numpy())
    assert 0.0 <= float(x.min()) and float(x.max()) < 1.0


def test_constraints_reject_parameter_sets_and_are_counted():
    f = Fuzzer(parameters=[FuzzedParameter("n", minval=1, maxval=100, distribution="uniform")],
               tensors=[FuzzedTensor("x", size=("n",))], constraints=[lambda p: p["n"] % 5 == 0], seed=1)
    ns = [q["n"] for _, _, q in f.take(20)]
    assert all(n % 5 == 0 for n in ns) and len(set(ns)) > 3
    assert 0.5 < f.rejection_rate < 1.0
    never = Fuzzer(parameters=[FuzzedParameter("n", minval=1, maxval=4, distribution="uniform")],
                   tensors=[], constraints=[lambda p: False], seed=0)
    with pytest.raises(ValueError, match="Failed to generate a set of valid parameters."):
        next(never.take(1))


def test_sizes_stay_within_element_and_allocation_limits():
    f = Fuzzer(parameters=[[FuzzedParameter(f"k{i}", minval=1, maxval=256, distribution="loguniform")
                            for i in range(3)],
                           FuzzedParameter("s", distribution={1: 0.5, 4: 0.5})],
               tensors=[FuzzedTensor("x", size=("k0", "k1", "k2"), steps=("s", 1, 1), min_elements=64,
                                     max_elements=4096, max_allocation_bytes=4 * 8192)], seed=5)
    for tensors, props, q in f.take(25):
        x = tensors["x"]
        assert tuple(x.shape) == (q["k0"], q["k1"], q["k2"])
        assert 64 <= x.numel() <= 4096 and props["x"]["numel"] == x.numel()
        assert prod((q["k0"] * q["s"], q["k1"], q["k2"])) * 4 <= 4 * 8192
    assert f.rejection_rate > 0


def test_probability_contiguous_one_and_zero():
    for tensors, props, _ in small_fuzzer(11, p_contiguous=1.0).take(8):
        assert tensors["x"].is_contiguous() and props["x"]["is_contiguous"]
        assert list(props["x"]["order"]) == [0, 1]
    for tensors, props, q in small_fuzzer(11, p_contiguous=0.0).take(8):
        x = tensors["x"]   # n, m >= 2: the permuted copy is column-major
        assert not x.is_contiguous() and not props["x"]["is_contiguous"]
        assert list(props["x"]["order"]) == [1, 0] and x.stride() == (1, q["n"])


def test_steps_slice_a_larger_allocation():
    seen = []

    def constructor(size, dtype, **params):
        seen.append((size, dtype, params))
        return rawdev.arange(prod(size), dtype=dtype).reshape(size)

    f = Fuzzer(parameters=[FuzzedParameter("n", minval=3, maxval=6, distribution="uniform")],
               tensors=[FuzzedTensor("x", size=("n", 4), steps=(2, 3), probability_contiguous=1.0,
                                     dtype=rawdev.float64, tensor_constructor=constructor)], seed=2)
    (tensors, props, q), = f.take(1)
    n = q["n"]
    assert seen == [((2 * n, 12), rawdev.float64, q)]
    ref = np.arange(2 * n * 12, dtype=np.float64).reshape(2 * n, 12)[::2, ::3]
    np.testing.assert_array_equal(tensors["x"].numpy(), ref)
    assert props["x"]["steps"] == (2, 3) and not props["x"]["is_contiguous"]


def test_dim_parameter_truncates_and_integer_dtypes():
    f = Fuzzer(parameters=[FuzzedParameter("d", distribution={1: 0.5, 3: 0.5}),
                           FuzzedParameter("k", minval=2, maxval=5, distribution="uniform")],
               tensors=[FuzzedTensor("x", size=("k", "k"), dim_parameter="d", dtype=rawdev.int32)], seed=4)
    dims = set()
    for tensors, _, q in f.take(10):
        x = tensors["x"]
        dims.add(x.dim())
        assert tuple(x.shape) == ((q["k"],) if q["d"] == 1 else (q["k"], q["k"], 1))
        assert x.dtype == rawdev.int32 and 1 <= int(x.min()) and int(x.max()) < 127
    assert dims == {1, 3}


def test_aliases_distributions_and_their_errors():
    f = Fuzzer(parameters=[FuzzedParameter("a", minval=10, maxval=20, distribution="uniform"),
                           FuzzedParameter("b", distribution={ParameterAlias("a"): 0.5, 1: 0.5}),
                           FuzzedParameter("c", distribution={ParameterAlias("b"): 1.0})],
               tensors=[], seed=0)
    bs = set()
    for _, _, q in f.take(20):
        assert q["b"] in (1, q["a"]) and q["c"] == q["b"]
        bs.add(q["b"] == 1)
    assert bs == {True, False}
    assert repr(ParameterAlias("a")) == "ParameterAlias[alias_to: a]"
    cyc = Fuzzer(parameters=[FuzzedParameter("a", distribution={ParameterAlias("b"): 1.0}),
                             FuzzedParameter("b", distribution={ParameterAlias("a"): 1.0})], tensors=[], seed=0)
    with pytest.raises(ValueError, match="ParameterAlias cycle detected"):
        next(cyc.take(1))
    with pytest.raises(AssertionError, match="Unknown distribution: gauss"):
        FuzzedParameter("x", 0, 1, distribution="gauss")
    with pytest.raises(AssertionError, match="Distribution is not normalized"):
        FuzzedParameter("x", distribution={1: 0.5, 2: 0.2})
    with pytest.raises(AssertionError, match="Probabilities cannot be negative"):
        FuzzedParameter("x", distribution={1: 1.5, 2: -0.5})
    with pytest.raises(AssertionError, match="'minval' must be None"):
        FuzzedParameter("x", minval=1, distribution={1: 1.0})
    with pytest.raises(ValueError, match="Duplicate names in parameters and tensors"):
        Fuzzer(parameters=[FuzzedParameter("x", 1, 2, "uniform")], tensors=[FuzzedTensor("x", size=(2,))])
    u = FuzzedParameter("u", minval=0.5, maxval=1.5, distribution="uniform").sample(np.random.RandomState(0))
    assert isinstance(u, float) and 0.5 <= u <= 1.5


def test_op_fuzzers_keep_pytorchs_limits():
    for seed in range(6):
        for f in (unary.UnaryOpFuzzer(seed=seed), binary.BinaryOpFuzzer(seed=seed),
                  spectral.SpectralOpFuzzer(seed=seed)):
            q = f._generate(np.random.RandomState(seed))
            x_size = f._tensors[0]._get_size_and_steps(q)[0]
            assert 4 * 1024 <= prod(x_size) <= 32 * 1024 ** 2
            if isinstance(f, binary.BinaryOpFuzzer):
                assert all(q[f"y_k{i}"] in (1, q[f"k{i}"]) for i in range(3))
            if isinstance(f, spectral.SpectralOpFuzzer):
                assert all(q[f"k{i}"] in spectral.REGULAR_SIZES for i in range(3))
    (tensors, props, q), = binary.BinaryOpFuzzer(seed=4).take(1)   # a small draw: (71, 143) and (71, 1)
    x, y = tensors["x"], tensors["y"]
    assert tuple(x.shape) == (q["k0"], q["k1"]) and tuple(y.shape) == (q["y_k0"], q["y_k1"])
    z = x + y   # y broadcasts
    np.testing.assert_allclose(z.numpy(), x.numpy().astype(np.float64) + y.numpy(), rtol=1e-6)
    from rawdev.utils.benchmark.op_fuzzers import sparse_unary
    with pytest.raises(NotImplementedError, match="sparse benchmark fuzzers is not supported by rawdev: .*matrices"):
        sparse_unary.UnaryOpSparseFuzzer(seed=0)
    with pytest.raises(NotImplementedError, match="FuzzedSparseTensor: sparse benchmark fuzzers"):
        benchmark.FuzzedSparseTensor("x", size=(4,))


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        self.now += 1e-3
        return self.now


def test_a_tutorial_loop_times_an_op_over_fuzzed_inputs():
    results = []
    f = Fuzzer(parameters=[FuzzedParameter("n", minval=4, maxval=32, distribution="loguniform")],
               tensors=[FuzzedTensor("x", size=("n", 16), probability_contiguous=0.6)], seed=0)
    for tensors, props, q in f.take(4):
        sub = f"{q['n']:<4} {'' if props['x']['is_contiguous'] else '(discontiguous)'}"
        results.append(benchmark.Timer(stmt="(x * x).sum(-1)", globals=tensors, label="sum of squares",
                                       sub_label=sub, description="mul/sum", timer=FakeClock()).timeit(5))
        ref = (tensors["x"].numpy().astype(np.float64) ** 2).sum(-1)
        np.testing.assert_allclose((tensors["x"] * tensors["x"]).sum(-1).numpy(), ref, rtol=1e-5)
    text = str(benchmark.Compare(results))
    assert "sum of squares" in text and "mul/sum" in text and len(results) == 4


@pytest.mark.cuda
def test_cuda_tensors_are_built_on_the_cpu_and_moved(device):
    def make(cuda):
        return Fuzzer(parameters=[FuzzedParameter("n", minval=2, maxval=8, distribution="uniform")],
                      tensors=[FuzzedTensor("x", size=("n", 3), probability_contiguous=0.0, cuda=cuda)], seed=9)
    (gpu, _, qg), = make(True).take(1)
    (cpu, _, qc), = make(False).take(1)
    assert gpu["x"].device.type == "cuda" and qg == qc and not gpu["x"].is_contiguous()
    assert gpu["x"].stride() == cpu["x"].stride()
    np.testing.assert_array_equal(gpu["x"].cpu().numpy(), cpu["x"].numpy())
