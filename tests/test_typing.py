"""rawdev's public API is typed (py.typed, annotations on Tensor, Module, Optimizer, DataLoader, save/load,
rawdev.cuda and the runtime's classes): a PyTorch-style user program type-checks cleanly with mypy, and the
key APIs have the types PyTorch's do. The generated ops (x.relu(), rawdev.cat, F.cross_entropy) are Any to a
type checker, by a TYPE_CHECKING __getattr__ on Tensor and on the namespaces."""
import os
import textwrap
from pathlib import Path

import pytest

api = pytest.importorskip("mypy.api", reason="mypy is not installed (pip install -e '.[lint]')")
ROOT = Path(__file__).resolve().parent.parent

PROGRAM = '''
import rawdev as torch
import rawdev.nn as nn
import rawdev.nn.functional as F
from rawdev.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.relu(self.fc1(x)))


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
data = TensorDataset(torch.randn(32, 4), torch.randint(0, 3, (32,)))
loader = DataLoader(data, batch_size=8, shuffle=True)
for x, y in loader:
    opt.zero_grad()
    loss = F.cross_entropy(model(x.to(device)), y.to(device))
    loss.backward()
    opt.step()
torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, "ckpt.pt")
state = torch.load("ckpt.pt", weights_only=True)
model.load_state_dict(state["model"])
n_params: int = sum(p.numel() for p in model.parameters())
value: float = float(loss.item())
mem: int = torch.cuda.memory_allocated() if torch.cuda.is_available() else 0
reveal_type(model)
reveal_type(model.eval())
reveal_type(torch.zeros(2, 3).shape)
reveal_type(torch.zeros(2, 3).cuda())
reveal_type(model.state_dict())
reveal_type(next(model.parameters()))
reveal_type(opt.state_dict())
reveal_type(len(loader))
reveal_type(torch.zeros(1).grad)
reveal_type(torch.cuda.get_device_capability())
'''

EXPECTED = ["Net", "Net", "rawdev.tensor.size.Size", "rawdev.tensor.core.Tensor",
            "builtins.dict[builtins.str, Any]", "rawdev.nn.parameter.Parameter", "builtins.dict[builtins.str, Any]",
            "builtins.int", "rawdev.tensor.core.Tensor | None", "tuple[builtins.int, builtins.int]"]


def test_a_user_program_type_checks(tmp_path, monkeypatch):
    # the package under test, by path: an editable install's import hook is invisible to mypy
    monkeypatch.setenv("MYPYPATH", str(ROOT))
    prog = tmp_path / "train.py"
    prog.write_text(textwrap.dedent(PROGRAM))
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        out, err, status = api.run([str(prog), "--no-incremental", "--cache-dir", str(tmp_path / ".mypy_cache"),
                                    "--python-version", "3.10", "--follow-imports", "silent"])
    finally:
        os.chdir(cwd)
    lines = [ln for ln in out.splitlines() if "train.py" in ln]
    errors = [ln for ln in lines if ": error:" in ln]
    assert not errors, "\n".join(errors)
    revealed = [ln.split('Revealed type is "', 1)[1].rstrip('"') for ln in lines if "Revealed type is" in ln]
    revealed = [r.replace("train.", "").replace("builtins.", "") for r in revealed]   # mypy versions differ
    assert revealed == [e.replace("builtins.", "") for e in EXPECTED], revealed


def test_py_typed_ships():
    assert (ROOT / "rawdev" / "py.typed").is_file()
