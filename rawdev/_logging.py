"""`torch._logging`: set_logs, the switchboard of the library's component loggers, on real Python loggers named
for rawdev's components (`rawdev` for all=, `rawdev._dynamo` for dynamo=, `rawdev.distributed`, `rawdev.onnx`,
`rawdev.autograd`, ...; any importable module through modules=). As in PyTorch, the first call (or a TORCH_LOGS
environment variable at import) gives each component logger a stderr handler of its own and stops it
propagating, `rawdev` stays at WARNING, and each call resets every component before applying its arguments.

What logs there: rawdev.compile (which runs eagerly) reports on `rawdev._dynamo` at INFO what it does. rawdev has
no graph compiler, so the artifacts (graph_breaks, recompiles, guards, output_code, ...) are accepted and
recorded but nothing ever emits them, and aot / inductor / dynamic have no messages. The other names of
torch._logging are refused."""
import importlib.util
import itertools
import logging
import os
import re
import sys
import time
from typing import Any
from weakref import WeakSet

from .refusals import refusing_getattr

__all__ = ["set_logs", "get_loggers", "DEFAULT_LOGGING"]

LOG_ENV_VAR = "TORCH_LOGS"
DEFAULT_LOG_LEVEL = logging.WARNING

# set_logs' component keyword -> the loggers it sets (PyTorch's registrations, with torch spelled rawdev)
_LOGS = {
    "torch": ["rawdev"],
    "dynamo": ["rawdev._dynamo"],
    "aot": ["rawdev._functorch.aot_autograd", "rawdev._functorch._aot_autograd"],
    "autograd": ["rawdev.autograd"],
    "dynamic": ["rawdev.fx.experimental.symbolic_shapes", "rawdev.fx.experimental.sym_node"],
    "inductor": ["rawdev._inductor"],
    "distributed": ["rawdev.distributed"],
    "c10d": ["rawdev.distributed.distributed_c10d"],
    "ddp": ["rawdev.nn.parallel.distributed"],
    "fsdp": ["rawdev.distributed.fsdp"],
    "dtensor": ["rawdev.distributed._tensor", "rawdev.distributed.tensor"],
    "onnx": ["rawdev.onnx"],
    "export": ["rawdev._export", "rawdev.export"],
}
_ARTIFACTS = (
    "bytecode", "aot_graphs", "aot_joint_graph", "ddp_graphs", "graph", "graph_code", "graph_code_verbose",
    "graph_breaks", "graph_sizes", "guards", "recompiles", "recompiles_verbose", "trace_source", "trace_call",
    "trace_bytecode", "output_code", "kernel_code", "schedule", "perf_hints", "pre_grad_graphs",
    "post_grad_graphs", "ir_pre_fusion", "ir_post_fusion", "onnx_diagnostics", "fusion", "overlap", "sym_node",
    "cudagraphs", "compiled_autograd", "compiled_autograd_verbose", "cudagraph_static_inputs", "benchmarking",
    "autotuning", "graph_region_expansion", "inductor_metrics", "hierarchical_compile", "compute_dependencies",
    "not_implemented",
)

# sample usage (PyTorch's): set_logs(**DEFAULT_LOGGING)
DEFAULT_LOGGING = {"dynamo": logging.INFO, "aot": logging.INFO, "inductor": logging.INFO, "fsdp": logging.INFO,
                   "ddp_graphs": True, "graph_breaks": True, "guards": True, "recompiles": True,
                   "dynamic": logging.INFO}


class _State:
    """The registry (which names are logs, which artifacts) and the settings of the last call."""

    def __init__(self) -> None:
        self.logs = {alias: list(qnames) for alias, qnames in _LOGS.items()}
        self.child_logs: set = set()
        self.levels: dict = {}          # logger name -> level asked for
        self.artifacts: set = set()     # artifacts asked for (nothing in rawdev emits them)
        self.handlers: WeakSet = WeakSet()
        self.initialized = False

    def qnames(self):
        return set(itertools.chain.from_iterable(self.logs.values()))


_state = _State()


class _GlogFormatter(logging.Formatter):
    """PyTorch's log line: level letter, date and time, process id, file:line], then the message."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.exc_info:
            message += "\n" + self.formatException(record.exc_info)
        stamp = time.strftime("%m%d %H:%M:%S", time.localtime(record.created))
        level = {"DEBUG": "V", "INFO": "I", "WARNING": "W", "ERROR": "E", "CRITICAL": "C"}.get(
            record.levelname, record.levelname)
        prefix = f"{level}{stamp}.{int(record.msecs * 1000):06d} {record.process} {record.filename}:{record.lineno}]"
        return "\n".join(f"{prefix} {line}" for line in message.split("\n"))


def _level_error(alias, val):
    valid = ",".join(str(k) for k in logging._levelToName)
    return ValueError(f"Unrecognized log level for log {alias}: {val}, valid level values are: {valid}")


def _is_valid_module(qname):
    try:
        return importlib.util.find_spec(qname) is not None
    except (ImportError, ValueError):
        return False


def _has_registered_parent(qname):
    registered = _state.qnames()
    log: Any = logging.getLogger(qname)
    while log.parent:
        if log.name in registered:
            return True
        log = log.parent
    return False


def _apply(settings: dict) -> None:
    """Validate `settings` (name -> level or bool), then reset every component and apply them."""
    levels, artifacts = {}, set()
    for alias, val in settings.items():
        if val is None:
            continue
        if alias in _ARTIFACTS:
            if not isinstance(val, bool):
                raise ValueError(f"Expected bool to enable artifact {alias}, received {val}")
            if val:
                artifacts.add(alias)
        elif alias in _state.logs or alias in _state.child_logs:
            if val not in logging._levelToName:
                raise _level_error(alias, val)
            for qname in _state.logs.get(alias, [alias]):
                levels[qname] = val
        elif _is_valid_module(alias):
            if val not in logging._levelToName:
                raise _level_error(alias, val)
            if _has_registered_parent(alias):
                _state.child_logs.add(alias)
            else:
                _state.logs[alias] = [alias]
            levels[alias] = val
        else:
            raise ValueError(f"Unrecognized log or artifact name passed to set_logs: {alias}")
    _state.levels, _state.artifacts = levels, artifacts
    _init_logs()


def _init_logs() -> None:
    for qname in _state.qnames():
        log = logging.getLogger(qname)
        # components follow rawdev's level unless asked otherwise; rawdev itself stays at WARNING
        log.setLevel(DEFAULT_LOG_LEVEL if qname == "rawdev" else logging.NOTSET)
        log.propagate = False
        if not any(h in _state.handlers for h in log.handlers):
            handler = logging.StreamHandler()
            handler.setFormatter(_GlogFormatter())
            handler.setLevel(logging.DEBUG)
            _state.handlers.add(handler)
            log.addHandler(handler)
    for qname in _state.child_logs:
        logging.getLogger(qname).setLevel(logging.NOTSET)
    for qname, level in _state.levels.items():
        logging.getLogger(qname).setLevel(level)
    _state.initialized = True


def set_logs(*, all: Any = None, dynamo: Any = None, aot: Any = None, autograd: Any = None,  # noqa: A002
             dynamic: Any = None, inductor: Any = None, distributed: Any = None, c10d: Any = None, ddp: Any = None,
             fsdp: Any = None, dtensor: Any = None, onnx: Any = None, bytecode: bool = False,
             aot_graphs: bool = False, aot_joint_graph: bool = False, ddp_graphs: bool = False,
             graph: bool = False, graph_code: bool = False, graph_code_verbose: bool = False,
             graph_breaks: bool = False, graph_sizes: bool = False, guards: bool = False,
             recompiles: bool = False, recompiles_verbose: bool = False, trace_source: bool = False,
             trace_call: bool = False, trace_bytecode: bool = False, output_code: bool = False,
             kernel_code: bool = False, schedule: bool = False, perf_hints: bool = False,
             pre_grad_graphs: bool = False, post_grad_graphs: bool = False, ir_pre_fusion: bool = False,
             ir_post_fusion: bool = False, onnx_diagnostics: bool = False, fusion: bool = False,
             overlap: bool = False, export: Any = None, modules: Any = None, cudagraphs: bool = False,
             sym_node: bool = False, compiled_autograd: bool = False, compiled_autograd_verbose: bool = False,
             cudagraph_static_inputs: bool = False, benchmarking: bool = False, autotuning: bool = False,
             graph_region_expansion: bool = False, inductor_metrics: bool = False,
             hierarchical_compile: bool = False, compute_dependencies: bool = False) -> None:
    """Set the log level of rawdev's components and toggle the log artifacts (PyTorch's keywords). Each call
    starts from the defaults: components not named follow `all` (the `rawdev` logger, WARNING by default).
    Ignored, with a warning, when the TORCH_LOGS environment variable is set (it takes precedence, as in
    PyTorch).

    Args:
        all: level of the `rawdev` logger, which every component follows unless set itself.
        dynamo: level of `rawdev._dynamo`, where rawdev.compile says what it does (INFO).
        aot: level of `rawdev._functorch.aot_autograd` (rawdev has no AOTAutograd: nothing logs there).
        autograd: level of `rawdev.autograd`.
        dynamic: level of `rawdev.fx.experimental.symbolic_shapes` (no dynamic shapes in rawdev).
        inductor: level of `rawdev._inductor` (no Inductor in rawdev).
        distributed: level of `rawdev.distributed`.
        c10d: level of `rawdev.distributed.distributed_c10d`.
        ddp: level of `rawdev.nn.parallel.distributed`.
        fsdp: level of `rawdev.distributed.fsdp`.
        dtensor: level of `rawdev.distributed._tensor` and `rawdev.distributed.tensor`.
        onnx: level of `rawdev.onnx`.
        bytecode: artifact switch (as each boolean below): must be a bool; recorded, but rawdev has no graph
            compiler, so no graph_breaks, recompiles, guards or other artifact is ever emitted.
        aot_graphs: artifact switch.
        aot_joint_graph: artifact switch.
        ddp_graphs: artifact switch.
        graph: artifact switch.
        graph_code: artifact switch.
        graph_code_verbose: artifact switch.
        graph_breaks: artifact switch.
        graph_sizes: artifact switch.
        guards: artifact switch.
        recompiles: artifact switch.
        recompiles_verbose: artifact switch.
        trace_source: artifact switch.
        trace_call: artifact switch.
        trace_bytecode: artifact switch.
        output_code: artifact switch.
        kernel_code: artifact switch.
        schedule: artifact switch.
        perf_hints: artifact switch.
        pre_grad_graphs: artifact switch.
        post_grad_graphs: artifact switch.
        ir_pre_fusion: artifact switch.
        ir_post_fusion: artifact switch.
        onnx_diagnostics: artifact switch.
        fusion: artifact switch.
        overlap: artifact switch.
        export: level of `rawdev._export` and `rawdev.export`.
        modules: a dict of more settings: any of the names above, or a fully qualified module name (such as
            "rawdev.fx") with its level.
        cudagraphs: artifact switch.
        sym_node: artifact switch.
        compiled_autograd: artifact switch.
        compiled_autograd_verbose: artifact switch.
        cudagraph_static_inputs: artifact switch.
        benchmarking: artifact switch.
        autotuning: artifact switch.
        graph_region_expansion: artifact switch.
        inductor_metrics: artifact switch.
        hierarchical_compile: artifact switch.
        compute_dependencies: artifact switch.

    Returns:
        None

    Raises:
        ValueError: a level that is not one of logging's ("Unrecognized log level for log dynamo: ..."), an
            artifact value that is not a bool, or an unknown name in modules.

    Example:
        >>> import logging
        >>> rawdev._logging.set_logs(dynamo=logging.INFO)
        >>> f = rawdev.compile(lambda x: x + 1)   # prints "I... compile: running <lambda> eagerly"
    """
    if LOG_ENV_VAR in os.environ:
        logging.getLogger(__name__).warning(
            "Using TORCH_LOGS environment variable for log settings, ignoring call to set_logs")
        return
    settings = {k: v for k, v in locals().items() if k not in ("all", "modules")}
    settings["torch"] = all
    _apply({**settings, **(modules or {})})


def get_loggers() -> list:
    """The component loggers set_logs controls.

    Returns:
        A list of logging.Logger.
    """
    return [logging.getLogger(q) for q in sorted(_state.qnames())]


def _parse_env(text: str) -> dict:
    """TORCH_LOGS ("+dynamo,aot,graph_breaks,-onnx"): names with + (DEBUG), - (ERROR) or nothing (INFO);
    artifacts by name; "all" for rawdev."""
    if not re.fullmatch(r"((\+|-)?[\w\.]+,\s*)*(\+|-)?[\w\.]+", text):
        raise ValueError(f"Invalid log settings: {text}, must be a comma separated list of fully qualified module "
                         "names, registered log names or registered artifact names.")
    settings: dict = {}
    for name in re.sub(r"\s+", "", text).split(","):
        level = logging.DEBUG if name[0] == "+" else logging.ERROR if name[0] == "-" else logging.INFO
        name = name.lstrip("+-")
        name = "torch" if name == "all" else name
        settings[name] = True if name in _ARTIFACTS else level
    return settings


def _restore_defaults() -> None:
    """Undo what set_logs installed (handlers, propagation, levels): tests use it to leave logging as found."""
    for qname in _state.qnames() | _state.child_logs:
        log = logging.getLogger(qname)
        for h in [h for h in log.handlers if h in _state.handlers]:
            log.removeHandler(h)
        log.setLevel(logging.NOTSET)
        log.propagate = True
    _state.__init__()   # type: ignore[misc]


if os.environ.get(LOG_ENV_VAR):   # as PyTorch at import: the environment's settings apply from the start
    try:
        _apply(_parse_env(os.environ[LOG_ENV_VAR]))
    except ValueError as exc:
        print(f"rawdev: ignoring {LOG_ENV_VAR}: {exc}", file=sys.stderr)

_WHY = ("rawdev has no graph compiler (no TorchDynamo, no Inductor), so nothing of theirs to log beyond set_logs' "
        "component loggers")
__getattr__ = refusing_getattr("torch._logging", "compiler logging (torch._logging)", _WHY)
