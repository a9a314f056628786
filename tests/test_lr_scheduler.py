"""LR schedulers: the learning-rate sequences over >= 100 steps equal PyTorch's documented formulas (written out
here in closed form), resumption through state_dict and last_epoch, chaining (ChainedScheduler, SequentialLR,
two schedulers stepped on one optimizer), ReduceLROnPlateau's bookkeeping, and PyTorch's error wording."""
import math
import pickle
import warnings

import numpy as np
import pytest
import rawdev.optim as optim
from rawdev.nn.parameter import Parameter
from rawdev.optim import lr_scheduler as L
from rawdev.tensor.factory import from_numpy

N = 130
LRS = (0.1, 0.03)


def make_opt(cls=optim.SGD, lrs=LRS, **kw):
    ps = [Parameter(from_numpy(np.zeros(2))) for _ in lrs]
    return cls([{"params": [p], "lr": lr} for p, lr in zip(ps, lrs)], lr=lrs[0], **kw)


def run(make, n=N, opt=None):
    """[lrs of each group] for epochs 0..n-1 (get_last_lr before each step, as a training loop sees them),
    checking get_last_lr() against the optimizer's groups."""
    opt = opt or make_opt(momentum=0.9)
    sched = make(opt)
    out = []
    for _ in range(n):
        lrs = sched.get_last_lr()
        assert lrs == [g["lr"] for g in opt.param_groups]
        out.append(list(lrs))
        opt.step()
        sched.step()
    return np.array(out)


def closed(f, n=N, bases=LRS):
    return np.array([[f(e, b) for b in bases] for e in range(n)])


def cyc_ref(e, base, top, up, down, scale):
    """CyclicLR from the paper's definition: a triangle of period up+down, height scaled by scale(cycle, e)."""
    total = up + down
    cycle = math.floor(1 + e / total)
    x = 1 + e / total - cycle
    frac = x / (up / total) if x <= up / total else (1 - x) / (1 - up / total)
    return base + (top - base) * frac * scale(cycle, e)


def onecycle_ref(e, max_lr, total, pct=0.3, div=25.0, final_div=1e4, three_phase=False, strategy="cos"):
    init, low = max_lr / div, max_lr / div / final_div

    def ann(a, b, t):
        return b + (a - b) / 2 * (math.cos(math.pi * t) + 1) if strategy == "cos" else a + (b - a) * t
    up = pct * total - 1
    if three_phase:
        if e <= up:
            return ann(init, max_lr, e / up)
        if e <= 2 * pct * total - 2:
            return ann(max_lr, init, (e - up) / (2 * pct * total - 2 - up))
        return ann(init, low, (e - (2 * pct * total - 2)) / (total - 1 - (2 * pct * total - 2)))
    if e <= up:
        return ann(init, max_lr, e / up)
    return ann(max_lr, low, (e - up) / (total - 1 - up))


def onecycle_momentum_ref(e, total, three_phase, strategy, lo=0.85, hi=0.95, pct=0.3):
    def ann(a, b, t):
        return b + (a - b) / 2 * (math.cos(math.pi * t) + 1) if strategy == "cos" else a + (b - a) * t
    up = pct * total - 1
    if e <= up:
        return ann(hi, lo, e / up)
    if three_phase:
        mid = 2 * pct * total - 2
        return ann(lo, hi, (e - up) / (mid - up)) if e <= mid else hi
    return ann(lo, hi, (e - up) / (total - 1 - up))


def warm_restarts_ref(e, base, T_0, T_mult, eta_min):  # noqa: N803
    t, ti = e, T_0
    while t >= ti:
        t, ti = t - ti, ti * T_mult
    return eta_min + (base - eta_min) * (1 + math.cos(math.pi * t / ti)) / 2


CASES = {
    "LambdaLR": (lambda o: L.LambdaLR(o, lambda e: 1 / (1 + 0.05 * e)), lambda e, b: b / (1 + 0.05 * e)),
    "LambdaLR-list": (lambda o: L.LambdaLR(o, [lambda e: 0.97 ** e, lambda e: e // 30]),
                      None),   # two groups, two lambdas: checked below
    "MultiplicativeLR": (lambda o: L.MultiplicativeLR(o, lambda e: 0.99 if e % 2 else 0.98),
                         lambda e, b: b * np.prod([0.99 if k % 2 else 0.98 for k in range(1, e + 1)])),
    "StepLR": (lambda o: L.StepLR(o, step_size=30, gamma=0.5), lambda e, b: b * 0.5 ** (e // 30)),
    "MultiStepLR": (lambda o: L.MultiStepLR(o, milestones=[20, 50, 50, 90], gamma=0.3),
                    lambda e, b: b * 0.3 ** sum(e >= m for m in (20, 50, 50, 90))),
    "ExponentialLR": (lambda o: L.ExponentialLR(o, gamma=0.97), lambda e, b: b * 0.97 ** e),
    "CosineAnnealingLR": (lambda o: L.CosineAnnealingLR(o, T_max=40, eta_min=1e-3),
                          lambda e, b: 1e-3 + (b - 1e-3) * (1 + math.cos(math.pi * e / 40)) / 2),
    "CosineAnnealingWarmRestarts": (lambda o: L.CosineAnnealingWarmRestarts(o, T_0=10, T_mult=2, eta_min=1e-4),
                                    lambda e, b: warm_restarts_ref(e, b, 10, 2, 1e-4)),
    "CosineAnnealingWarmRestarts-1": (lambda o: L.CosineAnnealingWarmRestarts(o, T_0=17),
                                      lambda e, b: warm_restarts_ref(e, b, 17, 1, 0.0)),
    "LinearLR": (lambda o: L.LinearLR(o, start_factor=0.1, end_factor=0.9, total_iters=60),
                 lambda e, b: b * (0.1 + 0.8 * min(e, 60) / 60)),
    "ConstantLR": (lambda o: L.ConstantLR(o, factor=0.25, total_iters=45),
                   lambda e, b: b * (0.25 if e < 45 else 1.0)),
    "PolynomialLR": (lambda o: L.PolynomialLR(o, total_iters=100, power=2.0),
                     lambda e, b: b * (1 - min(e, 100) / 100) ** 2),
    "OneCycleLR": (lambda o: L.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=N),
                   None),
    "CyclicLR-triangular": (lambda o: L.CyclicLR(o, base_lr=0.01, max_lr=[0.1, 0.05], step_size_up=15,
                                                 step_size_down=25), None),
}


@pytest.mark.parametrize("name", [k for k, v in CASES.items() if v[1] is not None])
def test_sequence_matches_formula(name):
    make, f = CASES[name]
    np.testing.assert_allclose(run(make), closed(f), rtol=1e-10, atol=1e-15)


def test_lambda_per_group():
    got = run(CASES["LambdaLR-list"][0])
    np.testing.assert_allclose(got[:, 0], [0.1 * 0.97 ** e for e in range(N)], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got[:, 1], [0.03 * (e // 30) for e in range(N)], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("three_phase", [False, True])
@pytest.mark.parametrize("strategy", ["cos", "linear"])
def test_one_cycle(three_phase, strategy):
    opt = make_opt(momentum=0.9)
    sched = L.OneCycleLR(opt, max_lr=[1.0, 0.5], epochs=10, steps_per_epoch=13, three_phase=three_phase,
                         anneal_strategy=strategy)
    lrs, moms = [], []
    for _ in range(N):
        lrs.append(sched.get_last_lr())
        moms.append(opt.param_groups[0]["momentum"])
        opt.step()
        if len(lrs) < N:
            sched.step()
    want = closed(lambda e, b: onecycle_ref(e, b, N, three_phase=three_phase, strategy=strategy), bases=(1.0, 0.5))
    np.testing.assert_allclose(lrs, want, rtol=1e-10, atol=1e-12)
    # momentum runs the other way, between max_momentum 0.95 and base_momentum 0.85
    np.testing.assert_allclose(moms, [onecycle_momentum_ref(e, N, three_phase, strategy) for e in range(N)],
                               rtol=1e-12, atol=1e-14)
    assert moms[0] == 0.95 and min(moms) == pytest.approx(0.85, abs=1e-3)
    assert opt.param_groups[0]["initial_lr"] == 1.0 / 25 and opt.param_groups[1]["min_lr"] == 0.5 / 25 / 1e4
    sched.step()   # the 130th step: one past total_steps
    with pytest.raises(ValueError, match="^Tried to step 131 times. The specified number of total steps is 130$"):
        sched.step()


def test_one_cycle_drives_adam_beta1():
    opt = make_opt(optim.Adam, betas=(0.9, 0.99))
    sched = L.OneCycleLR(opt, max_lr=0.1, total_steps=100, base_momentum=0.8, max_momentum=0.9)
    seen = []
    for _ in range(99):
        seen.append(opt.param_groups[1]["betas"])
        sched.step()
    assert seen[0] == (0.9, 0.99) and all(b[1] == 0.99 for b in seen)
    assert min(b[0] for b in seen) == pytest.approx(0.8, abs=1e-3)


@pytest.mark.parametrize("mode", ["triangular", "triangular2", "exp_range"])
def test_cyclic(mode):
    opt = make_opt(momentum=0.9)
    sched = L.CyclicLR(opt, base_lr=[0.01, 0.002], max_lr=[0.1, 0.05], step_size_up=15, step_size_down=25,
                       mode=mode, gamma=0.99)
    scale = {"triangular": lambda c, e: 1.0, "triangular2": lambda c, e: 1 / 2 ** (c - 1),
             "exp_range": lambda c, e: 0.99 ** e}[mode]
    lrs, moms = [], []
    for _ in range(N):
        lrs.append(sched.get_last_lr())
        moms.append(opt.param_groups[0]["momentum"])
        sched.step()
    want = np.array([[cyc_ref(e, 0.01, 0.1, 15, 25, scale), cyc_ref(e, 0.002, 0.05, 15, 25, scale)]
                     for e in range(N)])
    np.testing.assert_allclose(lrs, want, rtol=1e-10, atol=1e-12)
    # momentum: max_momentum 0.9 minus the same triangle scaled to 0.9 - 0.8
    want_m = [0.9 - (cyc_ref(e, 0.0, 1.0, 15, 25, scale)) * 0.1 for e in range(N)]
    np.testing.assert_allclose(moms, want_m, rtol=1e-10, atol=1e-12)


def test_cyclic_custom_scale_fn_and_state_dict():
    class Halve:
        def __init__(self):
            self.k = 0.5

        def __call__(self, x):
            return self.k ** x
    opt = make_opt(momentum=0.9)
    fn = Halve()
    sched = L.CyclicLR(opt, 0.01, 0.1, step_size_up=4, scale_fn=fn, scale_mode="iterations")
    for _ in range(5):
        sched.step()
    fn.k = 0.25
    sd = sched.state_dict()
    assert sd["_scale_fn_custom"] == {"k": 0.25} and "_scale_fn_ref" not in sd
    pickle.dumps(sd)
    fn.k = 0.5
    sched.load_state_dict(sd)
    assert fn.k == 0.25


def test_cosine_annealing_past_t_max_follows_the_periodic_closed_form():
    got = run(lambda o: L.CosineAnnealingLR(o, T_max=25), n=200)
    want = closed(lambda e, b: b * (1 + math.cos(math.pi * e / 25)) / 2, n=200)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-15)


# ------------------------------------------------------------------ resumption
RESUMABLE = ["LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR",
             "CosineAnnealingWarmRestarts", "LinearLR", "ConstantLR", "PolynomialLR", "OneCycleLR",
             "CyclicLR-triangular"]


@pytest.mark.parametrize("name", RESUMABLE)
def test_state_dict_resumption(name):
    make = CASES[name][0]
    straight = run(make)
    opt = make_opt(momentum=0.9)
    sched = make(opt)
    for _ in range(57):
        opt.step()
        sched.step()
    osd, ssd = opt.state_dict(), pickle.loads(pickle.dumps(sched.state_dict()))
    assert ssd["last_epoch"] == 57 and "optimizer" not in ssd
    opt2 = make_opt(momentum=0.9)
    sched2 = make(opt2)
    opt2.load_state_dict(osd)
    sched2.load_state_dict(ssd)
    assert sched2.last_epoch == 57 and sched2.get_last_lr() == list(straight[57])
    rest = []
    for _ in range(57, N):
        rest.append(list(sched2.get_last_lr()))
        opt2.step()
        sched2.step()
    np.testing.assert_array_equal(rest, straight[57:])


@pytest.mark.parametrize("name", ["StepLR", "MultiStepLR", "ExponentialLR", "LinearLR", "ConstantLR",
                                  "PolynomialLR", "CosineAnnealingLR", "LambdaLR", "MultiplicativeLR"])
def test_last_epoch_resumption(name):
    """A scheduler made with last_epoch=k on an optimizer that carries initial_lr and the lr of epoch k goes on
    as the uninterrupted one (PyTorch: the constructor's step leaves the lr alone)."""
    make = CASES[name][0]
    straight = run(make)
    k = 40
    opt = make_opt(momentum=0.9)
    for g, lr, base in zip(opt.param_groups, straight[k], LRS):
        g["initial_lr"], g["lr"] = base, lr
    sched = {"StepLR": lambda: L.StepLR(opt, 30, 0.5, last_epoch=k - 1),
             "MultiStepLR": lambda: L.MultiStepLR(opt, [20, 50, 50, 90], 0.3, last_epoch=k - 1),
             "ExponentialLR": lambda: L.ExponentialLR(opt, 0.97, last_epoch=k - 1),
             "LinearLR": lambda: L.LinearLR(opt, 0.1, 0.9, 60, last_epoch=k - 1),
             "ConstantLR": lambda: L.ConstantLR(opt, 0.25, 45, last_epoch=k - 1),
             "PolynomialLR": lambda: L.PolynomialLR(opt, 100, 2.0, last_epoch=k - 1),
             "CosineAnnealingLR": lambda: L.CosineAnnealingLR(opt, 40, 1e-3, last_epoch=k - 1),
             "LambdaLR": lambda: L.LambdaLR(opt, lambda e: 1 / (1 + 0.05 * e), last_epoch=k - 1),
             "MultiplicativeLR": lambda: L.MultiplicativeLR(opt, lambda e: 0.99 if e % 2 else 0.98,
                                                            last_epoch=k - 1)}[name]()
    assert sched.last_epoch == k
    got = []
    for _ in range(k, N):
        got.append(list(sched.get_last_lr()))
        sched.step()
    np.testing.assert_allclose(got, straight[k:], rtol=1e-10, atol=1e-15)


def test_resuming_without_initial_lr_raises():
    opt = make_opt()
    with pytest.raises(KeyError, match=r"param 'initial_lr' is not specified in param_groups\[0\] when resuming an "
                                       "optimizer"):
        L.StepLR(opt, 10, last_epoch=5)


def test_lambda_state_dict_keeps_callable_objects_only():
    class Decay:
        def __init__(self):
            self.rate = 0.9

        def __call__(self, e):
            return self.rate ** e
    opt = make_opt()
    obj = Decay()
    sched = L.LambdaLR(opt, [obj, lambda e: 1.0])
    sd = sched.state_dict()
    assert sd["lr_lambdas"] == [{"rate": 0.9}, None] and "optimizer" not in sd
    obj.rate = 0.5
    sched.load_state_dict(sd)
    assert obj.rate == 0.9


# ------------------------------------------------------------------ chaining
def test_two_schedulers_on_one_optimizer_compose():
    opt = make_opt()
    a = L.StepLR(opt, step_size=10, gamma=0.5)
    b = L.ExponentialLR(opt, gamma=0.98)
    got = []
    for _ in range(N):
        got.append([g["lr"] for g in opt.param_groups])
        a.step()
        b.step()
    np.testing.assert_allclose(got, closed(lambda e, lr: lr * 0.5 ** (e // 10) * 0.98 ** e), rtol=1e-10, atol=1e-12)


def test_chained_scheduler():
    opt = make_opt()
    sched = L.ChainedScheduler([L.ConstantLR(opt, factor=0.1, total_iters=20), L.ExponentialLR(opt, gamma=0.9)])
    got = run(lambda o: sched, opt=opt)
    # PyTorch's documented example (lr 0.05): 0.05 at 0, 0.045 at 1, 0.0405 at 2, ..., 0.06078 at 20
    want = closed(lambda e, b: b * (0.1 if e < 20 else 1.0) * 0.9 ** e)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    sd = sched.state_dict()
    assert len(sd["_schedulers"]) == 2 and sd["_schedulers"][1]["gamma"] == 0.9


def test_chained_state_dict_round_trip():
    def make(o):
        return L.ChainedScheduler([L.LinearLR(o, 0.2, total_iters=10), L.CosineAnnealingLR(o, T_max=50)])
    straight = run(make)
    opt = make_opt(momentum=0.9)
    s = make(opt)
    for _ in range(33):
        s.step()
    sd = s.state_dict()
    opt2 = make_opt(momentum=0.9)
    s2 = make(opt2)
    opt2.load_state_dict(opt.state_dict())
    s2.load_state_dict(sd)
    got = []
    for _ in range(33, N):
        got.append(list(s2.get_last_lr()))
        s2.step()
    np.testing.assert_array_equal(got, straight[33:])


def test_sequential_lr():
    def make(o):
        return L.SequentialLR(o, [L.LinearLR(o, start_factor=0.1, total_iters=10),
                                  L.CosineAnnealingLR(o, T_max=60, eta_min=1e-4)], milestones=[10])
    got = run(make)
    want = closed(lambda e, b: b * (0.1 + 0.9 * e / 10) if e < 10
                  else 1e-4 + (b - 1e-4) * (1 + math.cos(math.pi * (e - 10) / 60)) / 2)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-15)
    # PyTorch's documented example: ConstantLR(0.1, 20) then ExponentialLR(0.9) at milestone 20 (lr 0.05):
    # 0.005 until epoch 19, 0.05 at 20, 0.045 at 21, 0.0405 at 22
    opt = make_opt(lrs=(0.05,))
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # no deprecation warning from the milestone switch
        s = L.SequentialLR(opt, [L.ConstantLR(opt, factor=0.1, total_iters=20), L.ExponentialLR(opt, gamma=0.9)],
                           milestones=[20])
        seq = []
        for _ in range(23):
            seq.append(s.get_last_lr()[0])
            s.step()
    np.testing.assert_allclose(seq, [0.005] * 20 + [0.05, 0.045, 0.0405], rtol=1e-12, atol=1e-14)


def test_sequential_state_dict_round_trip():
    def make(o):
        return L.SequentialLR(o, [L.ConstantLR(o, 0.5, total_iters=5), L.ExponentialLR(o, 0.95)], milestones=[30])
    straight = run(make)
    opt = make_opt(momentum=0.9)
    s = make(opt)
    for _ in range(20):
        s.step()
    opt2 = make_opt(momentum=0.9)
    s2 = make(opt2)
    opt2.load_state_dict(opt.state_dict())
    s2.load_state_dict(pickle.loads(pickle.dumps(s.state_dict())))
    got = []
    for _ in range(20, N):
        got.append(list(s2.get_last_lr()))
        s2.step()
    np.testing.assert_allclose(got, straight[20:], rtol=1e-12, atol=1e-14)


def test_chaining_errors():
    opt, other = make_opt(), make_opt()
    a, b = L.StepLR(opt, 3), L.StepLR(other, 3)
    with pytest.raises(ValueError, match="^SequentialLR expects all schedulers to belong to the same optimizer"):
        L.SequentialLR(opt, [a, b], milestones=[2])
    with pytest.raises(ValueError, match="^Sequential Schedulers expects number of schedulers provided to be one "
                                         "more than the number of milestone points, but got number of schedulers 1 "
                                         "and the number of milestones to be equal to 1$"):
        L.SequentialLR(opt, [a], milestones=[2])
    with pytest.raises(ValueError, match="^ChainedScheduler expects at least one scheduler to be chained"):
        L.ChainedScheduler([])
    with pytest.raises(ValueError, match="ReduceLROnPlateau"):
        L.ChainedScheduler([a, L.ReduceLROnPlateau(opt)])


# ------------------------------------------------------------------ ReduceLROnPlateau
def plateau_ref(metrics, lr, mode="min", factor=0.1, patience=10, threshold=1e-4, threshold_mode="rel",
                cooldown=0, min_lr=0.0, eps=1e-8):
    """The documented rule: after more than `patience` epochs without improvement (beyond the threshold),
    lr = max(lr * factor, min_lr) (skipped when the change is <= eps), then `cooldown` epochs of rest."""
    best = math.inf if mode == "min" else -math.inf
    bad = cool = 0
    out = []
    for m in metrics:
        if mode == "min":
            better = m < (best * (1 - threshold) if threshold_mode == "rel" else best - threshold)
        else:
            better = m > (best * (1 + threshold) if threshold_mode == "rel" else best + threshold)
        if better:
            best, bad = m, 0
        else:
            bad += 1
        if cool > 0:
            cool -= 1
            bad = 0
        if bad > patience:
            new = max(lr * factor, min_lr)
            if lr - new > eps:
                lr = new
            cool, bad = cooldown, 0
        out.append(lr)
    return out


@pytest.mark.parametrize("kw", [dict(), dict(patience=3, cooldown=2, factor=0.5, min_lr=0.01),
                                dict(mode="max", threshold_mode="abs", threshold=0.05, patience=2),
                                dict(patience=0, factor=0.7, eps=1e-3)])
def test_reduce_on_plateau(kw):
    rng = np.random.default_rng(5)
    metrics = np.concatenate([np.linspace(1, 0.5, 20), 0.5 + 0.01 * rng.standard_normal(100)])
    if kw.get("mode") == "max":
        metrics = -metrics
    opt = make_opt(lrs=(0.1,))
    sched = L.ReduceLROnPlateau(opt, **kw)
    got = []
    for m in metrics:
        sched.step(m)
        got.append(sched.get_last_lr()[0])
    assert got == plateau_ref(metrics, 0.1, **kw)
    assert len(set(got)) > 1


def test_reduce_on_plateau_state_dict_and_errors():
    opt = make_opt()
    sched = L.ReduceLROnPlateau(opt, patience=1, min_lr=[0.001, 0.002])
    for m in (1.0, 1.0, 1.0, 1.0):
        sched.step(m)
    sd = sched.state_dict()
    assert sd["best"] == 1.0 and sd["last_epoch"] == 4 and "optimizer" not in sd
    s2 = L.ReduceLROnPlateau(make_opt())
    s2.load_state_dict(sd)
    assert s2.patience == 1 and s2.min_lrs == [0.001, 0.002] and s2.num_bad_epochs == sd["num_bad_epochs"]
    with pytest.raises(ValueError, match=r"^Factor should be < 1\.0\.$"):
        L.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="^mode top is unknown!$"):
        L.ReduceLROnPlateau(opt, mode="top")
    with pytest.raises(ValueError, match="^threshold mode x is unknown!$"):
        L.ReduceLROnPlateau(opt, threshold_mode="x")
    with pytest.raises(ValueError, match="^expected 2 min_lrs, got 3$"):
        L.ReduceLROnPlateau(opt, min_lr=[0, 0, 0])


def test_constructor_errors():
    opt = make_opt()
    with pytest.raises(ValueError, match="^Constant multiplicative factor expected to be between 0 and 1.$"):
        L.ConstantLR(opt, factor=2)
    with pytest.raises(ValueError, match="^Starting multiplicative factor expected to be greater than 0 and less "
                                         "or equal to 1.$"):
        L.LinearLR(opt, start_factor=0)
    with pytest.raises(ValueError, match="^Expected positive integer T_0, but got 0$"):
        L.CosineAnnealingWarmRestarts(opt, T_0=0)
    with pytest.raises(ValueError, match="^Expected integer T_mult >= 1, but got 0$"):
        L.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=0)
    with pytest.raises(ValueError, match=r"^You must define either total_steps OR \(epochs AND steps_per_epoch\)$"):
        L.OneCycleLR(opt, max_lr=0.1)
    with pytest.raises(ValueError, match="^anneal_strategy must be one of 'cos' or 'linear', instead got exp$"):
        L.OneCycleLR(opt, max_lr=0.1, total_steps=10, anneal_strategy="exp")
    with pytest.raises(ValueError, match="^max_lr must have the same length as optimizer.param_groups. max_lr has 3 "
                                         "values, param_groups has 2.$"):
        L.OneCycleLR(opt, max_lr=[1, 2, 3], total_steps=10)
    with pytest.raises(ValueError, match="^mode is invalid and scale_fn is None$"):
        L.CyclicLR(opt, 0.1, 1.0, mode="square")
    with pytest.raises(ValueError, match="^optimizer must support momentum or beta1 with `cycle_momentum` option "
                                         "enabled$"):
        L.CyclicLR(make_opt(optim.Adagrad), 0.1, 1.0)
    with pytest.raises(ValueError, match="^Expected 2 lr_lambdas, but got 1$"):
        L.LambdaLR(opt, [lambda e: 1.0])


def test_step_with_epoch_uses_the_closed_form_and_warns():
    opt = make_opt()
    sched = L.StepLR(opt, step_size=10, gamma=0.5)
    with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)` was not necessary"):
        sched.step(35)
    assert sched.get_last_lr() == [0.1 * 0.125, 0.03 * 0.125] and sched.last_epoch == 35
