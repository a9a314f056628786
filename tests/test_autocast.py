"""rawdev.autocast against PyTorch's autocast tables: for every listed op rawdev has, the output dtype for inputs in
float32 and in the region's lower precision, on the cpu (bfloat16 and float16) and on cuda (the simulator, one
small case per op); nested and disabled regions, the weight-cast cache, the binary_cross_entropy refusal,
gradients reaching float32 parameters in float32, the lists as data, and bfloat16's promotion table."""
import warnings

import numpy as np
import pytest
import rawdev as torch
import rawdev.nn.functional as F
from rawdev.amp import lists
from rawdev.ops import autocast_mode as M

SEED = int(np.random.default_rng().integers(2 ** 31))


def factory(device, dtype):
    g = np.random.default_rng(SEED)

    def X(*shape):   # values in (0.5, 1.5): inside every op's domain that matters here
        return torch.tensor(g.uniform(0.5, 1.5, size=shape).astype(np.float32), device=device).to(dtype)
    return X


def L(values, device):
    return torch.tensor(values, dtype=torch.int64, device=device)


def _unary(name):
    return lambda X, d: getattr(torch, name)(X(5))


def _spd(X, d):
    return X(3, 3) * 0.1 + 3 * torch.eye(3, device=d)


# op name as autocast's lists spell it -> the call (X makes inputs of the case's dtype on the case's device)
CASES = {
    # lower_precision_fp
    "conv1d": lambda X, d: F.conv1d(X(1, 2, 5), X(3, 2, 3)),
    "conv2d": lambda X, d: F.conv2d(X(1, 2, 4, 4), X(3, 2, 3, 3), X(3)),
    "conv3d": lambda X, d: F.conv3d(X(1, 1, 3, 3, 3), X(2, 1, 2, 2, 2)),
    "conv_transpose1d": lambda X, d: F.conv_transpose1d(X(1, 2, 4), X(2, 3, 3)),
    "conv_transpose2d": lambda X, d: F.conv_transpose2d(X(1, 2, 3, 3), X(2, 3, 2, 2)),
    "conv_transpose3d": lambda X, d: F.conv_transpose3d(X(1, 1, 2, 2, 2), X(1, 2, 2, 2, 2)),
    "prelu": lambda X, d: F.prelu(X(2, 3), X(1)),
    "addmm": lambda X, d: torch.addmm(X(2, 3), X(2, 4), X(4, 3)),
    "addmv": lambda X, d: torch.addmv(X(2), X(2, 3), X(3)),
    "addr": lambda X, d: torch.addr(X(2, 3), X(2), X(3)),
    "matmul": lambda X, d: X(2, 3) @ X(3, 4),
    "einsum": lambda X, d: torch.einsum("ij,jk->ik", X(2, 3), X(3, 4)),
    "mm": lambda X, d: torch.mm(X(2, 3), X(3, 4)),
    "mv": lambda X, d: torch.mv(X(2, 3), X(3)),
    "linear": lambda X, d: F.linear(X(2, 3), X(4, 3), X(4)),
    "addbmm": lambda X, d: torch.addbmm(X(3, 4), X(2, 3, 5), X(2, 5, 4)),
    "baddbmm": lambda X, d: torch.baddbmm(X(2, 3, 4), X(2, 3, 5), X(2, 5, 4)),
    "bmm": lambda X, d: torch.bmm(X(2, 3, 5), X(2, 5, 4)),
    "chain_matmul": lambda X, d: torch.chain_matmul(X(2, 3), X(3, 4), X(4, 2)),
    "lstm_cell": lambda X, d: torch.ops.lstm_cell(X(2, 3), (X(2, 4), X(2, 4)), X(16, 3), X(16, 4), X(16), X(16)),
    "gru_cell": lambda X, d: torch.ops.gru_cell(X(2, 3), X(2, 4), X(12, 3), X(12, 4), X(12), X(12)),
    "rnn_tanh_cell": lambda X, d: torch.ops.rnn_tanh_cell(X(2, 3), X(2, 4), X(4, 3), X(4, 4), X(4), X(4)),
    "rnn_relu_cell": lambda X, d: torch.ops.rnn_relu_cell(X(2, 3), X(2, 4), X(4, 3), X(4, 4), X(4), X(4)),
    "scaled_dot_product_attention": lambda X, d: F.scaled_dot_product_attention(X(1, 2, 3, 4), X(1, 2, 3, 4),
                                                                                X(1, 2, 3, 4)),
    "linalg_vecdot": lambda X, d: torch.linalg.vecdot(X(2, 3), X(2, 3)),
    "linalg_multi_dot": lambda X, d: torch.linalg.multi_dot([X(2, 3), X(3, 4), X(4, 2)]),
    # fp32
    **{n: _unary(n)
       for n in ("acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal",
                 "rsqrt", "sinh", "tan")},
    "pow": lambda X, d: X(3) ** 2,
    "softplus": lambda X, d: F.softplus(X(3)),
    "layer_norm": lambda X, d: F.layer_norm(X(2, 4), (4,), X(4), X(4)),
    "group_norm": lambda X, d: F.group_norm(X(2, 4, 3), 2, X(4), X(4)),
    "cosine_similarity": lambda X, d: F.cosine_similarity(X(2, 3), X(2, 3)),
    "poisson_nll_loss": lambda X, d: F.poisson_nll_loss(X(4), X(4)),
    "cosine_embedding_loss": lambda X, d: F.cosine_embedding_loss(X(2, 3), X(2, 3), L([1, -1], d)),
    "nll_loss": lambda X, d: F.nll_loss(X(2, 3), L([0, 2], d)),
    "hinge_embedding_loss": lambda X, d: F.hinge_embedding_loss(X(4), X(4)),
    "kl_div": lambda X, d: F.kl_div(X(4), X(4), reduction="batchmean"),
    "l1_loss": lambda X, d: F.l1_loss(X(4), X(4)),
    "smooth_l1_loss": lambda X, d: F.smooth_l1_loss(X(4), X(4)),
    "huber_loss": lambda X, d: F.huber_loss(X(4), X(4)),
    "mse_loss": lambda X, d: F.mse_loss(X(4), X(4)),
    "margin_ranking_loss": lambda X, d: F.margin_ranking_loss(X(4), X(4), X(4)),
    "multilabel_margin_loss": lambda X, d: F.multilabel_margin_loss(X(2, 3), L([[0, 1, -1], [2, -1, 0]], d)),
    "soft_margin_loss": lambda X, d: F.soft_margin_loss(X(4), X(4)),
    "triplet_margin_loss": lambda X, d: F.triplet_margin_loss(X(2, 3), X(2, 3), X(2, 3)),
    "multi_margin_loss": lambda X, d: F.multi_margin_loss(X(2, 3), L([0, 2], d)),
    "binary_cross_entropy_with_logits": lambda X, d: F.binary_cross_entropy_with_logits(X(4), X(4) - 0.5),
    "dist": lambda X, d: torch.dist(X(3), X(3)),
    "pdist": lambda X, d: F.pdist(X(3, 2)),
    "cdist": lambda X, d: torch.cdist(X(2, 3), X(4, 3)),
    "renorm": lambda X, d: torch.renorm(X(2, 3), 2, 0, 1.0),
    "logsumexp": lambda X, d: torch.logsumexp(X(2, 3), 1),
    "interpolate": lambda X, d: F.interpolate(X(1, 1, 4), scale_factor=2),
    "cross_entropy": lambda X, d: F.cross_entropy(X(2, 3), L([0, 2], d)),
    "trace": lambda X, d: torch.trace(X(3, 3)),
    "inverse": lambda X, d: torch.inverse(X(3, 3) + 3 * torch.eye(3, device=d)),
    "linalg_inv": lambda X, d: torch.linalg.inv(X(3, 3) + 3 * torch.eye(3, device=d)),
    "avg_pool3d": lambda X, d: F.avg_pool3d(X(1, 1, 2, 2, 2), 2),
    "max_pool3d": lambda X, d: F.max_pool3d(X(1, 1, 2, 2, 2), 2),
    "adaptive_avg_pool3d": lambda X, d: F.adaptive_avg_pool3d(X(1, 1, 2, 2, 2), 1),
    "quantile": lambda X, d: torch.quantile(X(5), 0.5),
    "nanquantile": lambda X, d: torch.nanquantile(X(5), 0.5),
    "adaptive_max_pool3d": lambda X, d: F.adaptive_max_pool3d(X(1, 1, 2, 2, 2), 1),
    "max_unpool2d": lambda X, d: F.max_unpool2d(X(1, 1, 1, 1), L([[[[3]]]], d), 2),
    "ctc_loss": lambda X, d: F.ctc_loss(X(4, 1, 3).log_softmax(2), L([[1, 2]], d), (4,), (2,)),
    "upsample": lambda X, d: F.upsample(X(1, 1, 4), scale_factor=2),
    "upsample_nearest": lambda X, d: F.upsample_nearest(X(1, 1, 4, 4), scale_factor=2),
    "upsample_bilinear": lambda X, d: F.upsample_bilinear(X(1, 1, 4, 4), scale_factor=2),
    "pinverse": lambda X, d: torch.pinverse(X(3, 2)),
    "qr": lambda X, d: torch.qr(X(3, 2))[0],
    "svd": lambda X, d: torch.svd(X(3, 2))[1],
    "triangular_solve": lambda X, d: torch.triangular_solve(X(3, 1), X(3, 3) + 3 * torch.eye(3, device=d))[0],
    "cholesky": lambda X, d: torch.cholesky(_spd(X, d)),
    "cholesky_inverse": lambda X, d: torch.cholesky_inverse(torch.linalg.cholesky(_spd(X, d))),
    "cholesky_solve": lambda X, d: torch.cholesky_solve(X(3, 1), torch.linalg.cholesky(_spd(X, d))),
    "linalg_cholesky": lambda X, d: torch.linalg.cholesky(_spd(X, d)),
    "linalg_cholesky_ex": lambda X, d: torch.linalg.cholesky_ex(_spd(X, d))[0],
    "linalg_cond": lambda X, d: torch.linalg.cond(_spd(X, d)),
    "linalg_eigh": lambda X, d: torch.linalg.eigh(_spd(X, d))[0],
    "linalg_eigvalsh": lambda X, d: torch.linalg.eigvalsh(_spd(X, d)),
    "linalg_inv_ex": lambda X, d: torch.linalg.inv_ex(_spd(X, d))[0],
    "linalg_lstsq": lambda X, d: torch.linalg.lstsq(X(3, 2), X(3, 1))[0],
    "linalg_matrix_rank": lambda X, d: torch.linalg.matrix_rank(_spd(X, d)),
    "linalg_qr": lambda X, d: torch.linalg.qr(X(3, 2))[0],
    "linalg_solve": lambda X, d: torch.linalg.solve(_spd(X, d), X(3)),
    "linalg_svd": lambda X, d: torch.linalg.svd(X(3, 2), full_matrices=False)[1],
    "linalg_svdvals": lambda X, d: torch.linalg.svdvals(X(3, 2)),
    "linalg_tensorinv": lambda X, d: torch.linalg.tensorinv(_spd(X, d), ind=1),
    "linalg_tensorsolve": lambda X, d: torch.linalg.tensorsolve(_spd(X, d), X(3)),
    # fp32_set_opt_dtype / fp32_append_dtype
    "prod": lambda X, d: torch.prod(X(3)),
    "softmax": lambda X, d: F.softmax(X(2, 3), 1),
    "log_softmax": lambda X, d: X(2, 3).log_softmax(1),
    "cumprod": lambda X, d: torch.cumprod(X(3), 0),
    "cumsum": lambda X, d: X(3).cumsum(0),
    "sum": lambda X, d: X(2, 3).sum(),
    "softmin": lambda X, d: F.softmin(X(2, 3), 1),
    "linalg_vector_norm": lambda X, d: torch.linalg.vector_norm(X(3)),
    "linalg_matrix_norm": lambda X, d: torch.linalg.matrix_norm(X(2, 3)),
    "norm": lambda X, d: torch.norm(X(3)),
    # promote
    "addcdiv": lambda X, d: torch.addcdiv(X(3), X(3), X(3)),
    "addcmul": lambda X, d: torch.addcmul(X(3), X(3), X(3)),
    "atan2": lambda X, d: torch.atan2(X(3), X(3)),
    "bilinear": lambda X, d: F.bilinear(X(2, 3), X(2, 4), X(5, 3, 4), X(5)),
    "cross": lambda X, d: torch.cross(X(2, 3), X(2, 3), dim=1),
    "dot": lambda X, d: torch.dot(X(3), X(3)),
    "vdot": lambda X, d: torch.vdot(X(3), X(3)),
    "index_put": lambda X, d: X(4).index_put((L([0, 2], d),), X(2)),
    "tensordot": lambda X, d: torch.tensordot(X(2, 3), X(3, 2), dims=1),
    "scatter_add": lambda X, d: X(4).scatter_add(0, L([0, 1], d), X(2)),
    "grid_sample": lambda X, d: F.grid_sample(X(1, 1, 3, 3), X(1, 2, 2, 2) - 1.0, align_corners=False),
    "cat": lambda X, d: torch.cat([X(2), X(3)]),
    "stack": lambda X, d: torch.stack([X(2), X(2)]),
    "index_copy": lambda X, d: X(4).index_copy(0, L([0, 1], d), X(2)),
}


# composites in PyTorch whose parts are listed on that device: chain_matmul, multi_dot, einsum and tensordot
# are mm's / bmm's on the cpu
COMPOSITE_LOW = {("cpu", "chain_matmul"), ("cpu", "linalg_multi_dot"), ("cpu", "einsum"), ("cpu", "tensordot")}


def expected(device_type, op, low, given):
    policy = lists.policy_of(device_type, op)
    if (device_type, op) in COMPOSITE_LOW:
        return low
    if op == "linalg_matrix_rank":
        return torch.int64     # a count, whatever it computed in
    if policy == "lower_precision_fp":
        return low
    if policy in ("fp32", "fp32_set_opt_dtype", "fp32_append_dtype"):
        return torch.float32
    return given       # promote with one input dtype, or no policy: the op runs in what it is given


def run_case(op, device, low, given):
    X = factory(device, given)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # chain_matmul's deprecation
        with torch.autocast(device.split(":")[0], dtype=low):
            out = CASES[op](X, device)
    return out[0] if isinstance(out, tuple) else out


@pytest.mark.parametrize("low", [torch.bfloat16, torch.float16], ids=["bfloat16", "float16"])
@pytest.mark.parametrize("given", ["float32", "low"])
@pytest.mark.parametrize("op", sorted(CASES))
def test_cpu_table(op, low, given):
    given = torch.float32 if given == "float32" else low
    want = expected("cpu", op, low, given)
    out = run_case(op, "cpu", low, given)
    assert out.dtype is want, (op, "cpu", low, given, lists.policy_of("cpu", op), f"seed={SEED}")


def test_every_listed_op_rawdev_has_is_in_the_table():
    """The table covers each op on the lists that rawdev declares (under its own or its aten name)."""
    from rawdev.ops import registry
    declared = {d.name for d in registry.decls()} | {"linalg_" + n for n in dir(torch.linalg)}
    listed = set().union(*lists.CUDA.values(), *lists.CPU.values()) - {"binary_cross_entropy"}
    assert sorted((listed & declared) - set(CASES)) == []


CUDA_CASES = sorted(op for op in CASES if lists.policy_of("cuda", op) is not None)


# one op per policy and kind for the default run; the whole cuda table (about two minutes on the simulator) is slow
CUDA_QUICK = ["mm", "linear", "conv2d", "scaled_dot_product_attention", "lstm_cell", "exp", "pow", "layer_norm",
              "cross_entropy", "mse_loss", "softmax", "sum", "norm", "addcmul", "index_put"]


def _cuda_table(ops):
    wrong = []
    for op in ops:
        out = run_case(op, "cuda", torch.float16, torch.float32)
        if out.dtype is not expected("cuda", op, torch.float16, torch.float32):
            wrong.append((op, out.dtype))
    assert wrong == [], f"seed={SEED}"


def test_cuda_table_one_op_per_policy(driver):
    """float32 inputs in a float16 region on the simulator: dtypes as PyTorch's table."""
    _cuda_table(CUDA_QUICK)


@pytest.mark.slow
def test_cuda_table(driver):
    """One float32-input case per op on cuda's lists (float16), on the simulator: dtypes as PyTorch's table."""
    _cuda_table(CUDA_CASES)


def test_cuda_bfloat16_low_inputs(driver):
    """bfloat16 regions on cuda: bfloat16 inputs go to float32 for the float32 ops, stay for matrix products."""
    X = factory("cuda", torch.bfloat16)
    Y = factory("cuda", torch.float32)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        assert torch.mm(Y(2, 3), Y(3, 2)).dtype is torch.bfloat16
        assert F.softmax(X(2, 3), 1).dtype is torch.float32
        assert X(3).sum().dtype is torch.float32
        assert X(3).sum(dtype=torch.bfloat16).dtype is torch.bfloat16   # a given dtype is kept
        assert torch.cat([X(2), Y(2)]).dtype is torch.float32            # cat promotes natively on cuda
        assert torch.addcmul(X(3), X(3), Y(3)).dtype is torch.float32    # promote: float32 wins
        assert torch.addcmul(X(3), X(3), X(3)).dtype is torch.bfloat16
        assert torch.nn.LSTM(3, 4).cuda()(Y(5, 2, 3))[0].dtype is torch.bfloat16
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            F.binary_cross_entropy(torch.sigmoid(X(4)), X(4) - 0.5)


def test_cuda_values_match_float32(driver):
    """The float16 autocast result of a linear layer is the float32 result rounded (kernels compute in float32)."""
    g = np.random.default_rng(SEED)
    x, w, b = (g.standard_normal(s).astype(np.float32) for s in ((5, 7), (3, 7), (3,)))
    ref = x.astype(np.float64) @ w.T.astype(np.float64) + b
    with torch.autocast("cuda"):
        y = F.linear(*(torch.tensor(a, device="cuda") for a in (x, w, b)))
    assert y.dtype is torch.float16
    err = np.linalg.norm(y.float().cpu().numpy() - ref) / np.linalg.norm(ref)
    assert err < 2e-3, f"seed={SEED}"


def test_promote_mixed_and_fallthrough_ops():
    X, Y = factory("cpu", torch.bfloat16), factory("cpu", torch.float32)
    with torch.autocast("cpu"):
        assert torch.cat([X(2), Y(2)]).dtype is torch.float32
        assert torch.stack([X(2), X(2)]).dtype is torch.bfloat16
        assert torch.cat([X(2), Y(2).double()]).dtype is torch.float64   # float64 is never autocast
        assert (X(2) + Y(2)).dtype is torch.float32                        # not listed: ordinary promotion
        assert torch.mm(Y(2, 2).double(), Y(2, 2).double()).dtype is torch.float64
        assert torch.mm(L([[1]], "cpu"), L([[2]], "cpu")).dtype is torch.int64   # integers are not eligible


def test_bfloat16_promotes_as_pytorch():
    """PyTorch's table: bfloat16 with float32 gives float32 whichever side it is on, with float16 float32."""
    b = torch.ones(2, dtype=torch.bfloat16)
    assert (b + torch.ones(2)).dtype is torch.float32
    assert (b * torch.ones(2)).dtype is torch.float32
    assert (b + torch.ones(2, dtype=torch.float16)).dtype is torch.float32
    assert (b + torch.ones(2, dtype=torch.float64)).dtype is torch.float64
    assert (b + torch.ones((), dtype=torch.float32)).dtype is torch.bfloat16    # a 0-dim tensor does not lift
    assert torch.promote_types(torch.bfloat16, torch.float32) is torch.float32


def test_binary_cross_entropy_refused_on_cuda_float32_on_cpu(driver):
    p = torch.full((4,), 0.25, device="cuda")
    with torch.autocast("cuda"):
        with pytest.raises(RuntimeError) as e:
            F.binary_cross_entropy(p, torch.ones(4, device="cuda"))
        with pytest.raises(RuntimeError):
            torch.nn.BCELoss()(p, torch.ones(4, device="cuda"))
    assert str(e.value) == lists.BANNED_MESSAGE
    assert lists.BANNED_MESSAGE.startswith("torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are "
                                           "unsafe to autocast.\nMany models use a sigmoid layer")
    with torch.autocast("cpu"):
        assert F.binary_cross_entropy(torch.full((4,), 0.25).bfloat16(), torch.ones(4)).dtype is torch.float32
    assert F.binary_cross_entropy(p, torch.ones(4, device="cuda")).dtype is torch.float32   # outside: allowed


def test_nested_and_disabled_regions_restore_state():
    a = torch.ones(2, 2)
    assert not torch.is_autocast_enabled("cpu")
    with torch.autocast("cpu", dtype=torch.float16):
        assert torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") is torch.float16
        assert torch.mm(a, a).dtype is torch.float16
        with torch.autocast("cpu", enabled=False):
            assert not torch.is_autocast_enabled("cpu")
            assert torch.mm(a, a).dtype is torch.float32
            with torch.autocast("cpu", dtype=torch.bfloat16):
                assert torch.mm(a, a).dtype is torch.bfloat16
            assert torch.mm(a, a).dtype is torch.float32
        assert torch.mm(a, a).dtype is torch.float16 and torch.get_autocast_dtype("cpu") is torch.float16
    assert not torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") is torch.bfloat16
    assert torch.mm(a, a).dtype is torch.float32


def test_region_exits_on_exception_and_decorator_form():
    a = torch.ones(2, 2)
    with pytest.raises(ValueError):
        with torch.autocast("cpu"):
            raise ValueError("inside")
    assert not torch.is_autocast_enabled("cpu") and torch.mm(a, a).dtype is torch.float32

    @torch.amp.autocast("cpu")
    def f(x):
        return torch.mm(x, x), torch.is_autocast_enabled("cpu")
    out, on = f(a)
    assert out.dtype is torch.bfloat16 and on and not torch.is_autocast_enabled("cpu")


def test_cpu_region_ignores_cuda_tensors_and_vice_versa(driver):
    a = torch.ones(2, 2, device="cuda")
    with torch.autocast("cpu"):
        assert torch.mm(a, a).dtype is torch.float32
    with torch.autocast("cuda"):
        assert torch.mm(torch.ones(2, 2), torch.ones(2, 2)).dtype is torch.float32
        assert torch.mm(a, a).dtype is torch.float16


def test_weight_cast_cached_inside_region_fresh_after():
    lin = torch.nn.Linear(3, 2)
    x = torch.ones(4, 3)
    with torch.autocast("cpu"):
        w1 = M._cast(lin.weight, torch.bfloat16, "cpu", M.state())
        with torch.autocast("cpu"):          # nested: the same cache
            w2 = M._cast(lin.weight, torch.bfloat16, "cpu",
                                                     M.state())
        assert w1 is w2 and w1.dtype is torch.bfloat16
        y1, y2 = lin(x), lin(x)
        assert y1.dtype is torch.bfloat16 and torch.equal(y1, y2)
        # only float32 leaves that require grad are cached: an activation is cast afresh
        act = x * 1.0
        s = M.state()
        assert M._cast(act, torch.bfloat16, "cpu", s) is not \
            M._cast(act, torch.bfloat16, "cpu", s)
    assert M.state().cache == {}
    with torch.autocast("cpu"):
        w3 = M._cast(lin.weight, torch.bfloat16, "cpu",
                                                 M.state())
    assert w3 is not w1
    with torch.autocast("cpu", cache_enabled=False):
        s = M.state()
        assert M._cast(lin.weight, torch.bfloat16, "cpu", s) is not \
            M._cast(lin.weight, torch.bfloat16, "cpu", s)


def test_the_cache_is_used_by_ops():
    """Two ops on one weight in a region make one cast: the second op's input is the first's cast tensor."""
    w = torch.nn.Parameter(torch.ones(3, 3))
    with torch.autocast("cpu"):
        torch.mm(w, w)
        cache = M.state().cache
        assert len(cache) == 1
        (src, cast), = cache.values()
        assert src is w and cast.dtype is torch.bfloat16
        torch.matmul(w, w)
        assert len(cache) == 1 and next(iter(cache.values()))[1] is cast


def test_gradients_reach_float32_parameters_in_float32():
    g = np.random.default_rng(SEED)
    lin = torch.nn.Linear(4, 3)
    x = torch.tensor(g.standard_normal((5, 4)).astype(np.float32))
    with torch.autocast("cpu"):
        y = lin(x)
        loss = F.mse_loss(y, torch.zeros(5, 3))
    assert y.dtype is torch.bfloat16 and loss.dtype is torch.float32
    loss.backward()
    assert lin.weight.grad.dtype is torch.float32 and lin.bias.grad.dtype is torch.float32
    w, b = lin.weight.detach().numpy().astype(np.float64), lin.bias.detach().numpy().astype(np.float64)
    xr = x.numpy().astype(np.float64)
    ref_gw = (2 * (xr @ w.T + b) / 15).T @ xr
    err = np.linalg.norm(lin.weight.grad.numpy() - ref_gw) / np.linalg.norm(ref_gw)
    assert err < 3e-2, f"bfloat16 forward: relative error {err} (seed={SEED})"


@pytest.mark.parametrize("cls", ["LSTM", "GRU", "RNN"])
def test_recurrent_layers_run_in_the_lower_precision(cls):
    """nn.LSTM/GRU/RNN: each layer one op under autocast (PyTorch's fused RNN ops are on its lists): outputs and
    states in the region's dtype, float32 gradients for the float32 weights."""
    m = getattr(torch.nn, cls)(3, 4, num_layers=2)
    with torch.autocast("cpu", dtype=torch.float16):
        out, h = m(factory("cpu", torch.float32)(5, 2, 3))
    h = h[0] if isinstance(h, tuple) else h
    assert out.dtype is torch.float16 and h.dtype is torch.float16
    out.float().sum().backward()
    assert m.weight_ih_l0.grad.dtype is torch.float32 and m.weight_hh_l1.grad.dtype is torch.float32


def test_lists_are_data_and_overridable():
    a = torch.ones(3)
    assert lists.policy_of("cuda", "mm") == "lower_precision_fp" and lists.policy_of("cpu", "exp") is None
    try:
        lists.set_policy("cpu", "exp", "fp32")
        with torch.autocast("cpu"):
            assert torch.exp(a.bfloat16()).dtype is torch.float32
        lists.set_policy("cpu", "mm", None)
        with torch.autocast("cpu"):
            assert torch.mm(a.reshape(1, 3), a.reshape(3, 1)).dtype is torch.float32
        with pytest.raises(ValueError, match="unknown autocast policy"):
            lists.set_policy("cpu", "exp", "fp64")
    finally:
        lists.reset()
    assert lists.policy_of("cpu", "exp") is None and lists.policy_of("cpu", "mm") == "lower_precision_fp"


def test_autocast_arguments_and_deprecated_spellings():
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        torch.autocast(torch.device("cpu"))
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'xpu'"):
        torch.autocast("xpu")
    with pytest.warns(UserWarning, match="In CPU autocast, but the target dtype is not supported"):
        ac = torch.autocast("cpu", dtype=torch.float64)
    with ac:
        assert not torch.is_autocast_enabled("cpu")
    with pytest.warns(FutureWarning, match=r"`torch.cpu.amp.autocast\(args...\)` is deprecated"):
        ac = torch.cpu.amp.autocast()
    with ac:
        assert torch.mm(torch.ones(1, 1), torch.ones(1, 1)).dtype is torch.bfloat16
    with pytest.warns(FutureWarning, match=r"`torch.cuda.amp.autocast\(args...\)` is deprecated"):
        torch.cuda.amp.autocast(enabled=False)
    with pytest.warns(FutureWarning, match=r"`torch.cuda.amp.GradScaler\(args...\)` is deprecated"):
        torch.cuda.amp.GradScaler(enabled=False)
    assert torch.get_autocast_gpu_dtype() is torch.float16 and torch.get_autocast_cpu_dtype() is torch.bfloat16


def test_custom_fwd_casts_inputs_and_bwd_reuses_the_state():
    seen = {}

    class Square(torch.autograd.Function):
        @staticmethod
        @torch.amp.custom_fwd(device_type="cpu", cast_inputs=torch.float32)
        def forward(ctx, x):
            seen["fwd"] = (x.dtype, torch.is_autocast_enabled("cpu"))
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @torch.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            seen["bwd"] = torch.is_autocast_enabled("cpu")
            x, = ctx.saved_tensors
            return 2 * x * g

    x = torch.ones(3, dtype=torch.bfloat16, requires_grad=True)
    with torch.autocast("cpu"):
        y = Square.apply(x)
    assert seen["fwd"] == (torch.float32, False) and y.dtype is torch.float32
    y.sum().backward()
    assert seen["bwd"] is False and x.grad.dtype is torch.bfloat16
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        torch.amp.custom_fwd(device_type=None)
