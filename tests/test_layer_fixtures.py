"""Layers saved by PyTorch (tests/data/layers, written by tools/make_layer_fixtures.py): each loads into the rawdev
layer with strict=True and matches PyTorch's outputs and input gradients on the cpu and the simulated GPU."""
import numpy as np
import pytest
import rawdev
from rawdev import nn

# ---------------------------------------------------------------------------------------------- PyTorch fixtures
FIXTURES = __import__("pathlib").Path(__file__).parent / "data" / "layers"


def _call(m, how, ins):
    """The calls of tools/make_layer_fixtures.py's `call`, by the same names."""
    return {
        "x": lambda: m(ins[0]),
        "bag": lambda: m(ins[0], ins[1]),
        "bag_psw": lambda: m(ins[0], ins[1], per_sample_weights=ins[2]),
        "mha": lambda: m(ins[0], ins[0], ins[0], need_weights=False)[0],
        "rnn": lambda: m(ins[0])[0],
        "enc_mask": lambda: m(ins[0], src_mask=ins[1]),
        "enc_kpm": lambda: m(ins[0], src_key_padding_mask=ins[1]),
        "dec_mask": lambda: m(ins[0], ins[1], tgt_mask=ins[2]),
        "seq2seq": lambda: m(ins[0], ins[1], tgt_mask=ins[2]),
        "dec_all": lambda: m(ins[0], ins[1], tgt_mask=ins[2], memory_mask=ins[3], tgt_key_padding_mask=ins[4],
                             memory_key_padding_mask=ins[5]),
    }[how]()


def _load_fixture(path):
    import json

    from safetensors import safe_open
    with safe_open(str(path), "np") as f:
        case = json.loads(f.metadata()["case"])
        arrays = {k: f.get_tensor(k) for k in f.keys()}
    return case, arrays


@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES.glob("*.safetensors")))
def test_pytorch_fixture_loads_strict_and_matches(name, driver):
    case, arrays = _load_fixture(FIXTURES / f"{name}.safetensors")
    if not hasattr(nn, case["class"]):
        pytest.skip(f"nn.{case['class']} is not built yet")
    state = {k[len("state."):]: rawdev.tensor(v) for k, v in arrays.items() if k.startswith("state.")}
    n_in = len([k for k in arrays if k.startswith("input.")])
    for dev, tol in (("cpu", 1e-5), ("cuda", 1e-4)):
        m = getattr(nn, case["class"])(*case["args"], **case["kwargs"])
        res = m.load_state_dict(state, strict=True)
        assert not res.missing_keys and not res.unexpected_keys
        m.to(dev).eval()
        ins = []
        for j in range(n_in):
            a = arrays[f"input.{j}"]
            t = rawdev.tensor(a).to(dev)
            if f"grad.{j}" in arrays:
                t.requires_grad_()
            ins.append(t)
        out = _call(m, case["call"], ins)
        np.testing.assert_allclose(out.detach().cpu().numpy(), arrays["output"], rtol=tol, atol=tol)
        (out * rawdev.tensor(arrays["gout"]).to(dev)).sum().backward()
        for j, t in enumerate(ins):
            if f"grad.{j}" in arrays:
                np.testing.assert_allclose(t.grad.cpu().numpy(), arrays[f"grad.{j}"], rtol=tol, atol=tol,
                                           err_msg=f"{name}: gradient of input {j} on {dev}")
        sd = m.state_dict()
        assert list(sd) == case["state_keys"]
