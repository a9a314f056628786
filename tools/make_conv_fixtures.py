#!/usr/bin/env python3
"""Write tests/data/conv/*.safetensors with PyTorch: for each layer, its state_dict ("state.<name>"), an input,
PyTorch's output and the input's gradient for the loss sum(output * gout). rawdev's tests load the state_dicts
with strict=True and compare, without PyTorch installed. Run with a PyTorch environment:

    python tools/make_conv_fixtures.py
"""
from pathlib import Path

import torch
from safetensors.torch import save_file

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "conv"


def cnn():
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2), torch.nn.BatchNorm2d(6), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(6, 3))


CASES = {   # name: (module factory, input shape, train steps before the eval pass)
    "conv1d": (lambda: torch.nn.Conv1d(3, 5, 4, stride=2, padding=1, dilation=2), (2, 3, 17), 0),
    "conv2d": (lambda: torch.nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 0), groups=2), (2, 4, 9, 7), 0),
    "conv2d_same": (lambda: torch.nn.Conv2d(3, 2, 4, padding="same", bias=False), (1, 3, 8, 9), 0),
    "conv_transpose2d": (lambda: torch.nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1),
                         (2, 4, 5, 5), 0),
    "batchnorm1d": (lambda: torch.nn.BatchNorm1d(5), (8, 5), 3),
    "batchnorm2d": (lambda: torch.nn.BatchNorm2d(3, momentum=None), (4, 3, 5, 5), 3),
    "cnn": (cnn, (3, 1, 12, 12), 2),
}


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for name, (make, shape, steps) in CASES.items():
        torch.manual_seed(len(name))
        m = make()
        for _ in range(steps):        # running statistics that are not the initial ones
            m.train()
            m(torch.randn(shape) * 2 + 1)
        m.eval()
        with torch.no_grad():         # non-trivial affine parameters
            for p in m.parameters():
                p.add_(torch.randn_like(p) * 0.1)
        x = torch.randn(shape, requires_grad=True)
        y = m(x)
        gout = torch.randn_like(y)
        (y * gout).sum().backward()
        tensors = {f"state.{k}": v.detach().clone().contiguous() for k, v in m.state_dict().items()}
        tensors.update(input=x.detach(), output=y.detach(), gout=gout, grad_input=x.grad)
        save_file(tensors, str(OUT / f"{name}.safetensors"), metadata={"module": repr(m), "torch": torch.__version__})
        print(f"wrote {name}.safetensors")


if __name__ == "__main__":
    main()
