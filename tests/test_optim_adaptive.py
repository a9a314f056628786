"""The adaptive-step optimizers beyond SGD/Adam/AdamW (those: test_optim.py): RMSprop, Adagrad, Adadelta, Adamax,
NAdam, RAdam: update sequences written out as literal numbers (and re-derived here by float64 numpy loops of
PyTorch's documented algorithms), cpu float64 and cuda (float32 kernels) against them, state_dict round trips
mid-training, and one fused kernel launch per parameter arena per step on cuda."""
import math

import numpy as np
import pytest
import rawdev
import rawdev.optim as optim
from rawdev import nn
from rawdev.nn.parameter import Parameter
from rawdev.tensor.factory import from_numpy

RNG = np.random.default_rng(21)


def _wd(p, g, lr, weight_decay, maximize, decoupled=False):
    g = -g if maximize else g
    if weight_decay:
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
    return p, g


def ref_rmsprop(p, grads, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                maximize=False):
    p = np.array(p, np.float64)
    v = np.zeros_like(p)
    b = np.zeros_like(p)
    ga = np.zeros_like(p)
    out = []
    for g in grads:
        p, g = _wd(p, np.array(g, np.float64), lr, weight_decay, maximize)
        v = alpha * v + (1 - alpha) * g * g
        vt = v
        if centered:
            ga = alpha * ga + (1 - alpha) * g
            vt = v - ga * ga
        if momentum > 0:
            b = momentum * b + g / (np.sqrt(vt) + eps)
            p = p - lr * b
        else:
            p = p - lr * g / (np.sqrt(vt) + eps)
        out.append(p)
    return out


def ref_adagrad(p, grads, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                maximize=False):
    p = np.array(p, np.float64)
    s = np.full_like(p, initial_accumulator_value)
    out = []
    for t, g in enumerate(grads, 1):
        p, g = _wd(p, np.array(g, np.float64), lr, weight_decay, maximize)
        clr = lr / (1 + (t - 1) * lr_decay)
        s = s + g * g
        p = p - clr * g / (np.sqrt(s) + eps)
        out.append(p)
    return out


def ref_adadelta(p, grads, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, maximize=False):
    p = np.array(p, np.float64)
    v = np.zeros_like(p)
    u = np.zeros_like(p)
    out = []
    for g in grads:
        p, g = _wd(p, np.array(g, np.float64), lr, weight_decay, maximize)
        v = rho * v + (1 - rho) * g * g
        dx = np.sqrt(u + eps) / np.sqrt(v + eps) * g
        u = rho * u + (1 - rho) * dx * dx
        p = p - lr * dx
        out.append(p)
    return out


def ref_adamax(p, grads, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, maximize=False):
    p = np.array(p, np.float64)
    m = np.zeros_like(p)
    u = np.zeros_like(p)
    b1, b2 = betas
    out = []
    for t, g in enumerate(grads, 1):
        p, g = _wd(p, np.array(g, np.float64), lr, weight_decay, maximize)
        m = b1 * m + (1 - b1) * g
        u = np.maximum(b2 * u, np.abs(g) + eps)
        p = p - lr / (1 - b1 ** t) * m / u
        out.append(p)
    return out


def ref_nadam(p, grads, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
              decoupled_weight_decay=False, maximize=False):
    """mu_product is kept in float32, as PyTorch keeps it in a default-dtype (float32) scalar tensor."""
    p = np.array(p, np.float64)
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    b1, b2 = betas
    prod = np.float32(1.0)
    out = []
    for t, g in enumerate(grads, 1):
        p, g = _wd(p, np.array(g, np.float64), lr, weight_decay, maximize, decoupled_weight_decay)
        mu = b1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
        prod = np.float32(prod * np.float32(mu))
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        denom = np.sqrt(v / (1 - b2 ** t)) + eps
        p = p - lr * (1 - mu) / (1 - float(prod)) * g / denom
        p = p - lr * mu_next / (1 - float(prod) * mu_next) * m / denom
        out.append(p)
    return out


def ref_radam(p, grads, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
              maximize=False):
    p = np.array(p, np.float64)
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    b1, b2 = betas
    rho_inf = 2 / (1 - b2) - 1
    out = []
    for t, g in enumerate(grads, 1):
        p, g = _wd(p, np.array(g, np.float64), lr, weight_decay, maximize, decoupled_weight_decay)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        mhat = m / (1 - b1 ** t)
        rho_t = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
        if rho_t > 5:
            lt = math.sqrt(1 - b2 ** t) / (np.sqrt(v) + eps)
            r = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            p = p - lr * mhat * lt * r
        else:
            p = p - lr * mhat
        out.append(p)
    return out

REFS = {"RMSprop": ref_rmsprop, "Adagrad": ref_adagrad, "Adadelta": ref_adadelta, "Adamax": ref_adamax,
        "NAdam": ref_nadam, "RAdam": ref_radam}
KERNELS = {"RMSprop": "rmsprop_step", "Adagrad": "adagrad_step", "Adadelta": "adadelta_step",
           "Adamax": "adamax_step", "NAdam": "nadam_step", "RAdam": "radam_step"}
STATE_KEYS = {"RMSprop": {"step", "square_avg", "momentum_buffer", "grad_avg"}, "Adagrad": {"step", "sum"},
              "Adadelta": {"step", "square_avg", "acc_delta"}, "Adamax": {"step", "exp_avg", "exp_inf"},
              "NAdam": {"step", "mu_product", "exp_avg", "exp_avg_sq"}, "RAdam": {"step", "exp_avg", "exp_avg_sq"}}

P0 = [0.5, -1.5, 2.0]
G = [[0.1, -0.2, 0.3], [-0.4, 0.5, 0.25], [0.3, 0.1, -0.6], [0.2, -0.3, 0.05], [-0.1, 0.4, 0.2], [0.5, -0.1, -0.3],
     [0.05, 0.2, 0.1]]

# the parameter after each of the 7 steps (from the loops above; RAdam's steps 6 and 7 are rectified, rho_t > 5)
LITERALS = {
    'RMSprop': ({'lr': 0.01, 'alpha': 0.9, 'momentum': 0.5, 'centered': True, 'weight_decay': 0.1}, [
        [0.4666666740740724, -1.4666666698412696, 1.9666666688888887],
        [0.4798272587321453, -1.473051503541541, 1.9259212014437745],
        [0.46437195175017404, -1.473008743235068, 1.9232106137414149],
        [0.441718005939918, -1.449779246071566, 1.9111848525691408],
        [0.43389883921003397, -1.4506708531130137, 1.8886840264972677],
        [0.4048234486166774, -1.4391804494622304, 1.8821981385319733],
        [0.38586909499362676, -1.4362843120427509, 1.866452099785952],
    ]),
    'Adagrad': ({'lr': 0.1, 'lr_decay': 0.05, 'initial_accumulator_value': 0.2, 'weight_decay': 0.1}, [
        [0.46820006360655075, -1.4383684365680591, 1.9254644007611181],
        [0.5252814293258766, -1.4889702707401318, 1.8730193378258642],
        [0.4786096196139394, -1.482356578229275, 1.914548218054823],
        [0.4490860969355754, -1.4341100993476685, 1.8920956401804525],
        [0.45535695910705687, -1.4593358747710528, 1.860074349782686],
        [0.4075560102190032, -1.4370440920384238, 1.8690211976652062],
        [0.3999471715148241, -1.4419405987126144, 1.8481792887660093],
    ]),
    'Adadelta': ({'lr': 1.0, 'rho': 0.8, 'eps': 0.01, 'weight_decay': 0.1}, [
        [0.37543178021939005, -1.311566334279642, 1.7958758547680684],
        [0.5832094093593964, -1.5139379203044665, 1.5985700708128965],
        [0.3698836887621117, -1.4776848107753713, 1.8058334789246886],
        [0.20919856934995137, -1.2470018162717977, 1.6797504703959047],
        [0.2688410178189334, -1.4132369242090883, 1.4896240244756946],
        [-0.002901556291265317, -1.2611931660028683, 1.5784923204691748],
        [-0.03672472255919386, -1.3122975451549732, 1.430977837199591],
    ]),
    'Adamax': ({'lr': 0.05, 'betas': (0.8, 0.9), 'weight_decay': 0.1}, [
        [0.4500000033333331, -1.4500000014285714, 1.950000001],
        [0.46838810922281715, -1.4558685458553826, 1.8978395082098765],
        [0.45900365317130143, -1.4567929631634184, 1.8845626207876829],
        [0.4387660540946664, -1.4402935017950995, 1.8638681011132967],
        [0.4259403346984439, -1.4369061538221868, 1.8351027518641179],
        [0.4075467918187818, -1.4250139045559316, 1.8163445472821749],
        [0.38993002583734304, -1.4173836654838772, 1.789390145555724],
    ]),
    'NAdam': ({'lr': 0.05, 'betas': (0.8, 0.9), 'momentum_decay': 0.04, 'weight_decay': 0.1}, [
        [0.4452181125289526, -1.4452181104420236, 1.9452181099724646],
        [0.4945069260059402, -1.482068374688425, 1.903902222181671],
        [0.4558474993362403, -1.4767791283991079, 1.9305736193009482],
        [0.42460153165938747, -1.4309543174707076, 1.9073393675834254],
        [0.4275722364127924, -1.453939474143629, 1.870069959931206],
        [0.37048352443419724, -1.4257009761438402, 1.8739647815587157],
        [0.3529961313212816, -1.4289840643801621, 1.841109385381977],
    ]),
    'RAdam': ({'lr': 0.05, 'betas': (0.8, 0.95), 'weight_decay': 0.1}, [
        [0.4925, -1.4825, 1.975],
        [0.49890972222222224, -1.4844930555555556, 1.9514583333333335],
        [0.4955226121357013, -1.4846764714253187, 1.9458610826502734],
        [0.48905606337229773, -1.477201757814428, 1.9380172009610508],
        [0.48527313801636146, -1.4757029797169294, 1.9266493413102674],
        [0.4796657051267683, -1.4730646490056991, 1.9232454950501794],
        [0.4729084561233806, -1.4708668156214197, 1.9174639560449978],
    ]),
}

# more option combinations, checked against the loops above on random data
MORE = [("RMSprop", dict(lr=0.01)), ("RMSprop", dict(lr=0.02, momentum=0.9, maximize=True)),
        ("RMSprop", dict(lr=0.01, centered=True, eps=1e-3)),
        ("Adagrad", dict(lr=0.1)), ("Adagrad", dict(lr=0.05, eps=1e-3, maximize=True)),
        ("Adadelta", dict()), ("Adadelta", dict(lr=0.5, rho=0.95, maximize=True)),
        ("Adamax", dict(lr=0.01)), ("Adamax", dict(lr=0.01, betas=(0.5, 0.99), eps=1e-3, maximize=True)),
        ("NAdam", dict(lr=0.01)), ("NAdam", dict(lr=0.01, weight_decay=0.05, decoupled_weight_decay=True)),
        ("NAdam", dict(lr=0.02, maximize=True)),
        ("RAdam", dict(lr=0.01)), ("RAdam", dict(lr=0.01, weight_decay=0.05, decoupled_weight_decay=True)),
        ("RAdam", dict(lr=0.01, betas=(0.9, 0.9), maximize=True))]


def make(name, kw, dev="cpu", dtype=np.float64, p0=P0):
    p = Parameter(from_numpy(np.array(p0, dtype)).to(dev))
    return p, getattr(optim, name)([p], **kw)


def set_grad(p, g):
    p.grad = from_numpy(np.asarray(g, dtype=np.asarray(p.detach().cpu()).dtype)).to(p.device)


@pytest.mark.parametrize("name", list(LITERALS))
def test_literals_are_pytorchs_algorithm(name):
    kw, want = LITERALS[name]
    for got, w in zip(REFS[name](P0, G, **kw), want):
        np.testing.assert_allclose(got, w, rtol=1e-14, atol=1e-16)


@pytest.mark.parametrize("name", list(LITERALS))
def test_update_sequence_cpu_float64(name):
    kw, want = LITERALS[name]
    p, opt = make(name, kw)
    for g, w in zip(G, want):
        set_grad(p, g)
        opt.step()
        np.testing.assert_allclose(np.asarray(p.detach()), w, rtol=1e-13, atol=1e-15)
    assert set(opt.state_dict()["state"][0]) == STATE_KEYS[name]
    assert opt.state[p]["step"].item() == len(G)


@pytest.mark.parametrize("name", list(LITERALS))
def test_update_sequence_cuda_float32(driver, name):
    kw, want = LITERALS[name]
    p, opt = make(name, kw, "cuda", np.float32)
    for g, w in zip(G, want):
        set_grad(p, g)
        with rawdev.trace() as t:
            opt.step()
        assert [c.owner for c in t.calls if c.fn == "cuLaunchKernel"] == [KERNELS[name]]
        got = np.asarray(p.detach().cpu())
        assert got.dtype == np.float32
        assert np.abs(got - w).max() / np.abs(w).max() < 1e-5


@pytest.mark.parametrize("name,kw", MORE, ids=[f"{n}-{i}" for i, (n, _) in enumerate(MORE)])
def test_options_against_reference(name, kw):
    p0 = RNG.standard_normal(11)
    grads = [RNG.standard_normal(11) for _ in range(8)]
    p, opt = make(name, kw, p0=p0)
    for g in grads:
        set_grad(p, g)
        opt.step()
    want = REFS[name](p0, grads, **kw)[-1]
    np.testing.assert_allclose(np.asarray(p.detach()), want, rtol=1e-12, atol=1e-14)


def _model(dev):
    rawdev.manual_seed(3)
    return nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3)).to(dev)


def _train(model, opt, xs, ts):
    for x, y in zip(xs, ts):
        opt.zero_grad()
        ((model(x) - y) * (model(x) - y)).sum().backward()
        opt.step()


OPTS = [("RMSprop", dict(lr=0.01, momentum=0.9, centered=True)), ("Adagrad", dict(lr=0.05, lr_decay=0.01)),
        ("Adadelta", dict(weight_decay=0.01)), ("Adamax", dict(lr=0.01)),
        ("NAdam", dict(lr=0.01, weight_decay=0.01, decoupled_weight_decay=True)), ("RAdam", dict(lr=0.01))]


@pytest.mark.parametrize("name,kw", OPTS, ids=[n for n, _ in OPTS])
def test_cuda_arena_is_one_launch_per_step_and_matches_cpu(driver, name, kw):
    xs = [from_numpy(RNG.standard_normal((6, 5)).astype(np.float32)) for _ in range(7)]
    ts = [from_numpy(RNG.standard_normal((6, 3)).astype(np.float32)) for _ in range(7)]
    cpu = _model("cpu")
    _train(cpu, getattr(optim, name)(cpu.parameters(), **kw), xs, ts)
    dev = _model("cuda")
    opt = getattr(optim, name)(dev.parameters(), **kw)
    launches = []
    for x, y in zip(xs, ts):
        opt.zero_grad()
        x, y = x.cuda(), y.cuda()
        ((dev(x) - y) * (dev(x) - y)).sum().backward()
        with rawdev.trace() as t:
            opt.step()
        launches.append([c.owner for c in t.calls if c.fn == "cuLaunchKernel"])
    # the module's 4 parameters live in one arena (their grads and each state tensor too): one launch a step
    assert launches == [[KERNELS[name]]] * 7
    for a, b in zip(dev.parameters(), cpu.parameters()):
        a, b = np.asarray(a.detach().cpu()), np.asarray(b.detach())
        assert np.abs(a - b).max() / np.abs(b).max() < 1e-5


@pytest.mark.parametrize("dev", ["cpu", "cuda"])
@pytest.mark.parametrize("name,kw", OPTS, ids=[n for n, _ in OPTS])
def test_state_dict_round_trip_mid_training(driver, dev, name, kw):
    xs = [from_numpy(RNG.standard_normal((6, 5)).astype(np.float32)).to(dev) for _ in range(6)]
    ts = [from_numpy(RNG.standard_normal((6, 3)).astype(np.float32)).to(dev) for _ in range(6)]
    straight = _model(dev)
    _train(straight, getattr(optim, name)(straight.parameters(), **kw), xs, ts)
    first = _model(dev)
    o1 = getattr(optim, name)(first.parameters(), **kw)
    _train(first, o1, xs[:3], ts[:3])
    sd = o1.state_dict()
    assert set(sd["state"][0]) == STATE_KEYS[name]
    assert sd["state"][0]["step"].item() == 3
    resumed = _model(dev)
    with rawdev.no_grad():
        for a, b in zip(resumed.parameters(), first.parameters()):
            a.copy_(b)
    o2 = getattr(optim, name)(resumed.parameters(), **{k: v for k, v in kw.items() if k != "lr"}, lr=0.5)
    o2.load_state_dict(sd)
    assert o2.param_groups[0]["lr"] == o1.param_groups[0]["lr"] != 0.5      # the saved hyperparameters win
    _train(resumed, o2, xs[3:], ts[3:])
    for a, b in zip(resumed.parameters(), straight.parameters()):
        np.testing.assert_array_equal(np.asarray(a.detach().cpu()), np.asarray(b.detach().cpu()))


def test_adagrad_state_exists_before_the_first_step():
    p = Parameter(from_numpy(np.zeros(3)))
    opt = optim.Adagrad([p], initial_accumulator_value=0.25)
    sd = opt.state_dict()
    assert set(sd["state"][0]) == {"step", "sum"} and sd["state"][0]["step"].item() == 0
    np.testing.assert_array_equal(np.asarray(sd["state"][0]["sum"]), 0.25)


def test_nadam_mu_product_and_radam_rectification():
    p, opt = make("NAdam", dict(momentum_decay=0.04, betas=(0.8, 0.9)))
    prod = 1.0
    for t in range(1, 4):
        set_grad(p, [0.1, 0.2, 0.3])
        opt.step()
        prod = float(np.float32(np.float32(prod) * np.float32(0.8 * (1 - 0.5 * 0.96 ** (t * 0.04)))))
        assert opt.state[p]["mu_product"].item() == prod
    # rho_inf = 2/(1-0.95) - 1 = 39; rho_t = 39 - 2t·0.95^t/(1-0.95^t): 5.70 at t = 6 (first rectified step)
    rho = [39 - 2 * t * 0.95 ** t / (1 - 0.95 ** t) for t in range(1, 8)]
    assert [r > 5 for r in rho] == [False] * 5 + [True] * 2
    assert math.isclose(rho[5], 5.7011, rel_tol=1e-4)


DEFAULTS = {"RMSprop": dict(lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                            maximize=False),
            "Adagrad": dict(lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                            maximize=False),
            "Adadelta": dict(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, maximize=False),
            "Adamax": dict(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, maximize=False),
            "NAdam": dict(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                          decoupled_weight_decay=False, maximize=False),
            "RAdam": dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                          maximize=False)}


@pytest.mark.parametrize("name", list(DEFAULTS))
def test_defaults_and_errors(name):
    p = Parameter(from_numpy(np.zeros(2)))
    opt = getattr(optim, name)([p])
    for k, v in DEFAULTS[name].items():
        assert opt.defaults[k] == v, k
    with pytest.raises(ValueError, match=r"^Invalid learning rate: -1$"):
        getattr(optim, name)([p], lr=-1)
    with pytest.raises(ValueError, match=r"^Invalid weight_decay value: -0.5$"):
        getattr(optim, name)([p], weight_decay=-0.5)


def test_specific_errors():
    p = [Parameter(from_numpy(np.zeros(2)))]
    for call, msg in [(lambda: optim.RMSprop(p, alpha=-1), "Invalid alpha value: -1"),
                      (lambda: optim.RMSprop(p, momentum=-1), "Invalid momentum value: -1"),
                      (lambda: optim.Adagrad(p, lr_decay=-1), "Invalid lr_decay value: -1"),
                      (lambda: optim.Adagrad(p, initial_accumulator_value=-1),
                       "Invalid initial_accumulator_value value: -1"),
                      (lambda: optim.Adadelta(p, rho=1.5), "Invalid rho value: 1.5"),
                      (lambda: optim.Adamax(p, betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
                      (lambda: optim.NAdam(p, momentum_decay=-1), "Invalid momentum_decay value: -1"),
                      (lambda: optim.RAdam(p, eps=-1), "Invalid epsilon value: -1")]:
        with pytest.raises(ValueError, match="^" + msg.replace(".", r"\.") + "$"):
            call()
