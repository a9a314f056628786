"""torch._logging.set_logs on rawdev: the component keywords set the levels of real Python loggers named for
rawdev's components and each call resets the others; artifacts must be bools; bad levels and unknown names are
refused with PyTorch's wording; rawdev.compile's INFO line appears on rawdev._dynamo once dynamo is at INFO;
TORCH_LOGS takes precedence (a subprocess, with a hang guard)."""
import logging
import os
import subprocess
import sys
import warnings

import pytest
import rawdev
from rawdev import _logging


@pytest.fixture(autouse=True)
def restore_logging(monkeypatch):
    monkeypatch.delenv("TORCH_LOGS", raising=False)
    yield
    _logging._restore_defaults()


def level(name):
    return logging.getLogger(name).level


def test_levels_are_set_and_reset_by_the_next_call():
    _logging.set_logs(dynamo=logging.INFO, distributed=logging.DEBUG, onnx=logging.ERROR, autograd=logging.INFO)
    assert level("rawdev._dynamo") == logging.INFO and level("rawdev.distributed") == logging.DEBUG
    assert level("rawdev.onnx") == logging.ERROR and level("rawdev.autograd") == logging.INFO
    assert level("rawdev") == logging.WARNING   # `all` left alone: rawdev stays at WARNING
    assert logging.getLogger("rawdev.distributed").getEffectiveLevel() == logging.DEBUG
    assert logging.getLogger("rawdev._inductor").getEffectiveLevel() == logging.WARNING   # follows rawdev
    _logging.set_logs(all=logging.DEBUG)
    assert level("rawdev") == logging.DEBUG and level("rawdev._dynamo") == logging.NOTSET
    assert logging.getLogger("rawdev.onnx").getEffectiveLevel() == logging.DEBUG
    _logging.set_logs()
    assert level("rawdev") == logging.WARNING
    assert all(level(q) == logging.NOTSET for q in ("rawdev._dynamo", "rawdev.distributed", "rawdev.onnx"))
    loggers = {log.name for log in _logging.get_loggers()}
    assert {"rawdev", "rawdev._dynamo", "rawdev.distributed", "rawdev.onnx", "rawdev.autograd"} <= loggers
    assert not logging.getLogger("rawdev._dynamo").propagate   # as PyTorch: its own stderr handler


def test_modules_set_any_importable_module_and_artifacts_are_recorded():
    _logging.set_logs(modules={"rawdev.fx": logging.DEBUG, "dynamo": logging.INFO}, graph_breaks=True,
                      recompiles=True)
    assert level("rawdev.fx") == logging.DEBUG and level("rawdev._dynamo") == logging.INFO
    assert _logging._state.artifacts == {"graph_breaks", "recompiles"}
    _logging.set_logs(**_logging.DEFAULT_LOGGING)
    assert level("rawdev.fx") == logging.NOTSET and level("rawdev.distributed.fsdp") == logging.INFO


def test_bad_values_are_rejected_with_pytorchs_wording():
    with pytest.raises(ValueError, match=r"^Unrecognized log level for log dynamo: verbose, valid level values "
                                         r"are: 50,40,30,20,10,0$"):
        _logging.set_logs(dynamo="verbose")
    with pytest.raises(ValueError, match="Unrecognized log level for log torch: 5"):
        _logging.set_logs(all=5)
    with pytest.raises(ValueError, match=r"^Expected bool to enable artifact graph_breaks, received 1$"):
        _logging.set_logs(graph_breaks=1)
    with pytest.raises(ValueError, match=r"^Unrecognized log or artifact name passed to set_logs: no_such\.mod$"):
        _logging.set_logs(modules={"no_such.mod": logging.INFO})
    with pytest.raises(TypeError):
        _logging.set_logs(logging.INFO)   # keyword-only, as PyTorch's


def test_compile_logs_what_it_does_at_info_on_the_dynamo_logger(caplog, capsys):
    def step(x):
        return x * 2

    log = logging.getLogger("rawdev._dynamo")
    _logging.set_logs(dynamo=logging.INFO)
    log.addHandler(caplog.handler)   # set_logs stops propagation (PyTorch's handlers): listen on the logger itself
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert rawdev.compile(step) is step
            m = rawdev.nn.Linear(2, 2)
            assert rawdev.compile(mode="max-autotune")(m) is m
        _logging.set_logs()   # back to WARNING: no INFO line
        rawdev.compile(step)
    finally:
        log.removeHandler(caplog.handler)
    lines = [(r.name, r.levelno, r.getMessage()) for r in caplog.records]
    assert lines == [("rawdev._dynamo", logging.INFO, "compile: running test_compile_logs_what_it_does_at_info_on_"
                                                      "the_dynamo_logger.<locals>.step eagerly"),
                     ("rawdev._dynamo", logging.INFO, "compile: running Linear eagerly")]
    err = capsys.readouterr().err
    assert "compile: running Linear eagerly" in err and err.startswith("I")   # PyTorch's glog-style line


def test_torch_logs_environment_takes_precedence():
    code = ("import logging, rawdev\n"
            "from rawdev import _logging\n"
            "print(logging.getLogger('rawdev._dynamo').level, logging.getLogger('rawdev.onnx').level)\n"
            "_logging.set_logs(dynamo=logging.ERROR)\n"
            "print(logging.getLogger('rawdev._dynamo').level, sorted(_logging._state.artifacts))\n")
    env = dict(os.environ, TORCH_LOGS="+dynamo,-onnx,graph_breaks", PYTHONDONTWRITEBYTECODE="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["10 40", "10 ['graph_breaks']"]
    assert "Using TORCH_LOGS environment variable for log settings, ignoring call to set_logs" in out.stderr
