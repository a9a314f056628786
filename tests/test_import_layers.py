"""Imports point down only: every import in rawdev/ — module level and inside functions — goes to a layer
at or below its own. The layers, bottom to top:

    errors, dtypes, device, data, flags, distributed, multiprocessing  <  sim  <  runtime  <  tensor (+ random)
      <  autograd, ops  <  nn  <  optim, utils, serialization, cuda, models, profiler, rawkernel  <  memtool, demo,
      cli, pytest_plugin, rawdev/__init__

and only rawdev.runtime and rawdev.sim import cuda-python.
"""
import ast
import sys
from pathlib import Path

import rawdev

ROOT = Path(rawdev.__file__).parent

LAYERS = [
    ("rawdev.errors", 0), ("rawdev.dtypes", 0), ("rawdev.data", 0), ("rawdev._ptx", 0), ("rawdev.device", 0),
    ("rawdev.flags", 0), ("rawdev.distributed", 0), ("rawdev.multiprocessing", 0),
    ("rawdev.sim", 1),
    ("rawdev.runtime", 2),
    ("rawdev.tensor", 3), ("rawdev.random", 3),
    ("rawdev.autograd", 4), ("rawdev.ops", 4),
    ("rawdev.nn", 5), ("rawdev.ao", 5),
    ("rawdev.optim", 6), ("rawdev.utils", 6), ("rawdev.serialization", 6),
    ("rawdev.load_placement", 6), ("rawdev.cuda", 6),
    ("rawdev.models", 6), ("rawdev.distributions", 6),
    ("rawdev.backends", 6), ("rawdev.accelerator", 6), ("rawdev.amp", 6), ("rawdev.cpu", 6), ("rawdev.linalg", 6),
    ("rawdev.config", 6), ("rawdev.profiler", 6), ("rawdev.rawkernel", 6), ("rawdev.onnx", 6),
    ("rawdev.safe_globals", 0), ("rawdev.refusals", 0), ("rawdev.object_graph", 6), ("rawdev.sparse", 6),
    ("rawdev.autograd.profiler", 6), ("rawdev.distributed.checkpoint", 6), ("rawdev.futures", 0),
    ("rawdev.fx", 6), ("rawdev.hub", 6),
    ("rawdev.distributed.tensor", 6), ("rawdev.distributed._tensor", 6), ("rawdev.distributed.fsdp", 6),
    ("rawdev.distributed.rpc", 6), ("rawdev.distributed.pipeline", 6), ("rawdev.distributed.autograd", 6),
    ("rawdev.distributed.optim", 6), ("rawdev.distributed.nn", 6),
    ("rawdev.distributed.algorithms", 6),
    ("rawdev.memtool", 7), ("rawdev.demo", 7), ("rawdev.cli", 7), ("rawdev.driver_choice", 7),
    ("rawdev.pytest_plugin", 7),
    ("rawdev", 7),   # the package's public API, which the user-facing tools (memtool, demo, cli) use
]

# (importer, imported): the few upward imports that stay, each with its reason.
ALLOWED = set()


def layer(mod):
    best = None
    for prefix, n in LAYERS:
        if mod == prefix or mod.startswith(prefix + "."):
            if best is None or len(prefix) > len(best[0]):
                best = (prefix, n)
    return best[1] if best else None


def module_name(path, root=ROOT):
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _dynamic_import(func):
    if isinstance(func, ast.Name):
        return func.id in ("__import__", "import_module")
    return isinstance(func, ast.Attribute) and func.attr == "import_module"


def imports(path, root=ROOT):
    """(line, absolute module) for every import in the file, nested ones included."""
    mod = module_name(path, root)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str) and _dynamic_import(node.func)):
            yield node.lineno, node.args[0].value   # __import__("rawdev.x") / importlib.import_module("rawdev.x")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            if node.module is None or node.level:
                # `from . import x` may name submodules: check each
                for a in node.names:
                    sub = f"{target}.{a.name}"
                    yield node.lineno, sub if layer(sub) is not None else target
            else:
                yield node.lineno, target


def test_imports_point_down_only():
    bad = []
    for path in sorted(ROOT.rglob("*.py")):
        mod = module_name(path)
        mine = layer(mod)
        for line, target in imports(path):
            if not (target == "rawdev" or target.startswith("rawdev.")):
                continue
            theirs = layer(target)
            if theirs is not None and theirs > mine and (mod, target) not in ALLOWED:
                bad.append(f"{path.relative_to(ROOT.parent)}:{line}: {mod} (layer {mine}) imports {target} "
                           f"(layer {theirs})")
    assert not bad, "imports that point up:\n" + "\n".join(bad)


def test_only_the_runtime_and_the_simulator_import_cuda_python():
    bad = []
    for path in sorted(ROOT.rglob("*.py")):
        mod = module_name(path)
        if mod.startswith(("rawdev.runtime", "rawdev.sim")):
            continue
        for line, target in imports(path):
            if target == "cuda" or target.startswith("cuda."):
                bad.append(f"{path.relative_to(ROOT.parent)}:{line}: {mod} imports {target}")
    assert not bad, "\n".join(bad)


def test_the_checker_finds_an_upward_import(tmp_path):
    """The walk sees imports inside functions and resolves relative ones (so the test above can fail). The probe is
    a file of a package of its own named rawdev: written into the real one, the import checks running beside this
    test in another worker would see it."""
    root = tmp_path / "rawdev"
    (root / "runtime").mkdir(parents=True)
    fake = root / "runtime" / "_layer_probe_tmp.py"
    fake.write_text("def f():\n    from ..nn import Module\n")
    found = list(imports(fake, root))
    assert (2, "rawdev.nn.Module") in found or (2, "rawdev.nn") in found
    fake.write_text('def f():\n    __import__("rawdev.cuda.memory")\n'
                    'def g():\n    import importlib\n    importlib.import_module("rawdev.nn")\n')
    found = list(imports(fake, root))
    assert (2, "rawdev.cuda.memory") in found and (5, "rawdev.nn") in found
    assert layer("rawdev.nn") > layer("rawdev.runtime.device")


def test_the_transfer_module_imports_only_the_runtime_and_never_names_a_tensor():
    """rawdev.runtime.transfer moves bytes for moves, state_dict reads and loads without seeing a Tensor: it
    imports rawdev.runtime, rawdev.errors, rawdev.dtypes, numpy and the standard library, nothing else."""
    path = ROOT / "runtime" / "transfer.py"
    allowed = ("rawdev.runtime", "rawdev.errors", "rawdev.dtypes", "numpy")
    bad = [f"{line}: {target}" for line, target in imports(path)
           if not (target.split(".")[0] in sys.stdlib_module_names
                   or any(target == a or target.startswith(a + ".") for a in allowed))]
    assert not bad, "rawdev/runtime/transfer.py imports outside the runtime:\n" + "\n".join(bad)
    tree = ast.parse(path.read_text())
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | \
            {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert not names & {"Tensor", "Parameter", "Module"}


# Import cycles (strongly connected groups of modules) that remain, each to be broken, never to grow: a new cycle,
# or a module joining one of these, fails the test below. None is left: a lower module that needs an upper one's
# code is handed it (autograd.function.GRAD_OPS, tensor.core's _parts) or the shared piece lives below both.
KNOWN_CYCLES: list[set[str]] = []


def import_cycles(root=ROOT):
    """The strongly connected groups (more than one module) of the import graph of the package at root (rawdev's),
    nested imports included (Tarjan's algorithm, iterative)."""
    paths = {module_name(p, root): p for p in root.rglob("*.py")}
    graph = {}
    for mod, path in paths.items():
        deps = set()
        for _, target in imports(path, root):
            while target and target not in paths:
                target = target.rpartition(".")[0]
            if target and target != mod:
                deps.add(target)
        graph[mod] = sorted(deps)
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(graph[w])))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(comp)
    return out


def test_no_new_import_cycle():
    short = [{m.removeprefix("rawdev").removeprefix(".") for m in c} for c in import_cycles()]
    grown = [sorted(c) for c in short if not any(c <= known for known in KNOWN_CYCLES)]
    assert not grown, "import cycles that are new or larger than the known ones:\n" + "\n".join(map(str, grown))


def test_the_cycle_finder_finds_a_cycle(tmp_path):
    # a package of its own (named rawdev, so the layer table applies): probe files written into the real one would
    # show up in test_no_new_import_cycle running beside this test in another worker
    pkg = tmp_path / "rawdev"
    (pkg / "runtime").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "runtime" / "__init__.py").write_text("")
    (pkg / "runtime" / "_cycle_probe_a.py").write_text("from . import _cycle_probe_b\n")
    (pkg / "runtime" / "_cycle_probe_b.py").write_text("def f():\n    from . import _cycle_probe_a\n")
    (pkg / "runtime" / "_no_cycle.py").write_text("from . import _cycle_probe_a\n")
    found = import_cycles(pkg)
    assert found == [{"rawdev.runtime._cycle_probe_a", "rawdev.runtime._cycle_probe_b"}]
