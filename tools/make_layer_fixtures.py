#!/usr/bin/env python3
"""Write tests/data/layers/*.safetensors from PyTorch (run with a PyTorch interpreter, never by the tests):

    /path/to/torch/python tools/make_layer_fixtures.py

Each file holds one layer's case: `state.<key>` (the PyTorch module's state_dict, parameters perturbed from
their init so a wrong mapping shows), `input.<i>` (the forward's tensor arguments), `gout` (the weight of the
loss sum(output * gout)), `output` and `grad.<i>` (the gradient of that loss for each floating input), all
float32 (integer inputs int64, masks bool/float). The metadata's "case" is JSON: the nn class name, its
constructor args/kwargs, "call", how the test calls it (`_call` in tests/test_layer_fixtures.py), "state_keys",
the state_dict's key order (safetensors stores keys sorted), and the torch version.
"""
import json
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "layers"


def causal(n):
    return torch.triu(torch.full((n, n), float("-inf")), diagonal=1)


# name: (class, args, kwargs, call, inputs)
CASES = {
    "linear": ("Linear", [6, 3], {}, "x", lambda: [torch.randn(4, 6)]),
    "layernorm": ("LayerNorm", [8], {}, "x", lambda: [torch.randn(3, 4, 8) * 2 + 1]),
    "rmsnorm": ("RMSNorm", [8], {"eps": 1e-6}, "x", lambda: [torch.randn(3, 8)]),
    "groupnorm": ("GroupNorm", [3, 6], {}, "x", lambda: [torch.randn(2, 6, 5) + 3]),
    "groupnorm2d": ("GroupNorm", [2, 4], {"eps": 1e-4}, "x", lambda: [torch.randn(2, 4, 3, 5)]),
    "instancenorm2d": ("InstanceNorm2d", [3], {"affine": True}, "x", lambda: [torch.randn(2, 3, 4, 5)]),
    "embedding": ("Embedding", [10, 4], {"padding_idx": 0}, "x",
                  lambda: [torch.tensor([[1, 0, 3, 9, 3], [2, 2, 5, 0, 7]])]),
    "embeddingbag_mean": ("EmbeddingBag", [10, 4], {"mode": "mean"}, "bag",
                          lambda: [torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 3, 3, 6])]),
    "embeddingbag_sum_psw": ("EmbeddingBag", [10, 4], {"mode": "sum"}, "bag_psw",
                             lambda: [torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 2, 5]),
                                      torch.rand(8)]),
    "embeddingbag_max_2d": ("EmbeddingBag", [10, 4], {"mode": "max"}, "x",
                            lambda: [torch.tensor([[1, 2, 4], [5, 4, 3], [2, 9, 9]])]),
    "upsample_nearest": ("Upsample", [], {"scale_factor": 2, "mode": "nearest"}, "x",
                         lambda: [torch.randn(2, 3, 3, 4)]),
    "upsample_bilinear": ("Upsample", [], {"size": (5, 7), "mode": "bilinear"}, "x",
                          lambda: [torch.randn(2, 3, 3, 4)]),
    "upsample_bilinear_ac": ("Upsample", [], {"scale_factor": 1.5, "mode": "bilinear", "align_corners": True},
                             "x", lambda: [torch.randn(1, 2, 4, 5)]),
    "mha": ("MultiheadAttention", [8, 2], {"batch_first": True}, "mha", lambda: [torch.randn(2, 5, 8)]),
    "lstm": ("LSTM", [5, 7], {"num_layers": 2, "batch_first": True}, "rnn", lambda: [torch.randn(3, 4, 5)]),
    "gru": ("GRU", [5, 6], {"bidirectional": True}, "rnn", lambda: [torch.randn(4, 3, 5)]),
    "rnn": ("RNN", [4, 5], {"nonlinearity": "relu"}, "rnn", lambda: [torch.randn(4, 2, 4)]),
    "encoder_layer": ("TransformerEncoderLayer", [16, 2], {"dim_feedforward": 24, "dropout": 0.0,
                                                           "batch_first": True}, "enc_mask",
                      lambda: [torch.randn(2, 5, 16), causal(5)]),
    "encoder_layer_norm_first_gelu": ("TransformerEncoderLayer", [16, 4],
                                      {"dim_feedforward": 20, "dropout": 0.0, "norm_first": True,
                                       "activation": "gelu"}, "enc_kpm",
                                      lambda: [torch.randn(6, 2, 16),
                                               torch.tensor([[False] * 6, [False] * 4 + [True] * 2])]),
    "decoder_layer": ("TransformerDecoderLayer", [16, 2], {"dim_feedforward": 24, "dropout": 0.0}, "dec_mask",
                      lambda: [torch.randn(4, 2, 16), torch.randn(5, 2, 16), causal(4)]),
    "transformer": ("Transformer", [], {"d_model": 8, "nhead": 2, "num_encoder_layers": 2, "num_decoder_layers": 1,
                                        "dim_feedforward": 12, "dropout": 0.0, "batch_first": True}, "seq2seq",
                    lambda: [torch.randn(2, 5, 8), torch.randn(2, 3, 8), causal(3)]),
    "decoder_layer_all_masks": ("TransformerDecoderLayer", [16, 4], {"dim_feedforward": 24, "dropout": 0.0,
                                                                      "batch_first": True, "norm_first": True},
                                "dec_all", lambda: [torch.randn(3, 4, 16), torch.randn(3, 5, 16), causal(4),
                                                    torch.randn(4, 5),
                                                    torch.tensor([[False] * 4, [False] * 3 + [True], [False] * 4]),
                                                    torch.tensor([[False] * 5, [False] * 5,
                                                                  [False] * 2 + [True] * 3])]),
}


def call(m, how, ins):
    if how == "x":
        return m(ins[0])
    if how == "bag":
        return m(ins[0], ins[1])
    if how == "bag_psw":
        return m(ins[0], ins[1], per_sample_weights=ins[2])
    if how == "mha":
        return m(ins[0], ins[0], ins[0], need_weights=False)[0]
    if how == "rnn":
        return m(ins[0])[0]
    if how == "enc_mask":
        return m(ins[0], src_mask=ins[1])
    if how == "enc_kpm":
        return m(ins[0], src_key_padding_mask=ins[1])
    if how == "dec_mask":
        return m(ins[0], ins[1], tgt_mask=ins[2])
    if how == "dec_all":
        return m(ins[0], ins[1], tgt_mask=ins[2], memory_mask=ins[3], tgt_key_padding_mask=ins[4],
                 memory_key_padding_mask=ins[5])
    if how == "seq2seq":
        return m(ins[0], ins[1], tgt_mask=ins[2])
    raise ValueError(how)


def main(only=()):
    OUT.mkdir(parents=True, exist_ok=True)
    for i, (name, (cls, args, kwargs, how, make)) in enumerate(CASES.items()):
        if only and name not in only:
            continue
        torch.manual_seed(1000 + i)
        m = getattr(torch.nn, cls)(*args, **kwargs)
        with torch.no_grad():
            for p in m.parameters():
                p.add_(torch.randn_like(p) * 0.1)
        m.eval()
        ins = [t.clone() for t in make()]
        for t in ins:
            if t.is_floating_point() and not (how.startswith(("enc", "dec", "seq")) and t.ndim == 2):   # not masks
                t.requires_grad_(True)
        out = call(m, how, ins)
        gout = torch.randn_like(out)
        (out * gout).sum().backward()
        tensors = {f"state.{k}": v.detach().clone().contiguous() for k, v in m.state_dict().items()}
        for j, t in enumerate(ins):
            tensors[f"input.{j}"] = t.detach().clone()
            if t.grad is not None:
                tensors[f"grad.{j}"] = t.grad.clone()
        tensors["gout"], tensors["output"] = gout.contiguous(), out.detach().contiguous()
        tensors = {k: v.contiguous() for k, v in tensors.items()}
        # one metadata key: safetensors writes several in no fixed order, and the files should rebuild identically
        meta = {"case": json.dumps({"class": cls, "args": args, "kwargs": kwargs, "call": how,
                                    "state_keys": list(m.state_dict()), "torch": torch.__version__})}
        save_file(tensors, str(OUT / f"{name}.safetensors"), metadata=meta)
    total = sum(p.stat().st_size for p in OUT.glob("*.safetensors"))
    print(f"wrote {len(list(OUT.glob('*.safetensors')))} fixtures, {total / 1024:.1f} KiB, in {OUT}")


if __name__ == "__main__":
    main(tuple(sys.argv[1:]))
