"""rawdev.utils.tensorboard without the tensorboard package (an optional extra): the module imports, and
building a SummaryWriter raises PyTorch's ImportError wording plus how to install the extra. The package's
absence is simulated (sys.modules), so this runs whether or not it is installed."""
import importlib
import sys

import pytest
import rawdev.utils.tensorboard


def test_without_the_package_import_works_and_the_writer_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setattr(rawdev.utils, "tensorboard", rawdev.utils.tensorboard)   # restored after the test
    for name in [n for n in sys.modules if n == "tensorboard" or n.startswith("rawdev.utils.tensorboard")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "tensorboard", None)   # `import tensorboard` now raises ImportError
    mod = importlib.import_module("rawdev.utils.tensorboard")
    with pytest.raises(ImportError, match=r"TensorBoard logging requires TensorBoard version 1\.15 or above "
                                          r".*pip install rawdev\[tensorboard\]"):
        mod.SummaryWriter(tmp_path)
    assert not any(tmp_path.iterdir())
