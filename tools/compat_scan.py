"""How much of what real PyTorch programs reference resolves in rawdev: a static scan with Python's `ast`.

For every .py file under the given folders (a corpus of public PyTorch programs, fetched outside the
repository; tools/compat_corpus.txt lists its sources), the scan collects each torch reference:

  import     `import torch.x.y`, `from torch.x import y`: rawdev.x.y must import / rawdev.x must have y
  attr       attribute chains on a name bound to torch or one of its parts, aliases resolved
             (`import torch.nn as nn`, `import torch.nn.functional as F`, `from torch import nn, optim`,
             `from torch.utils.data import DataLoader`): torch.nn.functional.relu -> rawdev.nn.functional.relu
  kwarg      a keyword argument of a call to a resolved torch callable, checked with inspect.signature
             (a callable taking **kwargs, or one without a signature, accepts any keyword)
  method     a call `x.name(...)` whose receiver is not a torch alias nor a name bound to another import or a
             literal, where `name` is a torch.Tensor method (tools/torch_tensor_methods.txt, from PyTorch's
             docs) or an nn.Module / Optimizer method: the name must exist on rawdev.Tensor, rawdev.nn.Module or
             rawdev.optim.Optimizer. The receiver's type is not inferred (the heuristic): a list's `.sort()`
             counts as a Tensor.sort reference, which only makes the scan count more references, all common
             names that rawdev has; a name missing from all three is a real gap for any receiver.

  index      indexing forms seen in subscripts (any receiver: the type is not inferred): a `range(...)`, a list
             literal, `None` or `...` among the indices, read (`x[...]`) or written (`x[...] = v`); each form is
             checked by running it on a small rawdev tensor (PROBES)

Each (program, reference) pair counts once. A reference "resolves" when the lookup succeeds; it is "refused"
when the lookup raises NotImplementedError (a feature rawdev declines, with its reason); else "missing".
Known gaps carry a status (planned / refused, and why) in STATUS below.

    python tools/compat_scan.py /work/corpus --list tools/compat_corpus.txt --out docs/COMPAT_SCAN.md
"""
import argparse
import ast
import collections
import importlib
import inspect
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

MODULE_METHODS = {
    "add_module", "apply", "buffers", "children", "eval", "extra_repr", "get_buffer", "get_parameter",
    "get_submodule", "load_state_dict", "modules", "named_buffers", "named_children", "named_modules",
    "named_parameters", "parameters", "register_backward_hook", "register_buffer", "register_forward_hook",
    "register_forward_pre_hook", "register_full_backward_hook", "register_full_backward_pre_hook",
    "register_module", "register_parameter", "state_dict", "to_empty", "train", "zero_grad", "share_memory",
}
OPTIMIZER_METHODS = {"add_param_group", "step", "zero_grad", "state_dict", "load_state_dict",
                     "register_step_pre_hook", "register_step_post_hook"}

# Indexing forms: what the scan calls them -> a statement run on rawdev (x, a 3x4 float tensor, exists).
PROBES = {
    "x[range(...)]": "y = x[range(2)]",
    "x[range(...)] = v": "x[range(3), rawdev.tensor([0, 1, 2])] = 5.0",
    "x[[list]]": "y = x[[0, 2]]",
    "x[[list]] = v": "x[[0, 2]] = 1.0",
    "x[None]": "y = x[None, :, None]",
    "x[None] = v": "x[None] = x.clone()",
    "x[...]": "y = x[..., 1]",
    "x[...] = v": "x[..., 1] = 2.0",
}

# Known gaps: name -> (status, reason). "refused" names raise NotImplementedError naming the feature; "missing"
# ones carry why they stay missing.
_TORCH_OPS = ("an operator of a C++ extension library (torch.ops.<library>): rawdev loads no C++ libraries, so "
              "their namespaces hold nothing (torch.ops.aten and torch.ops.profiler answer from rawdev's ops)")
_NOT_IN_PYTORCH = "not in PyTorch's torch.functional either (it is in torch.nn.functional): the program's own slip"
STATUS = {
    "torch.functional.relu": ("missing", _NOT_IN_PYTORCH),
    "torch.functional.log_softmax": ("missing", _NOT_IN_PYTORCH),
    "torch.functional.log_softmax(dim=)": ("missing", _NOT_IN_PYTORCH),
    "torch.functional.max_pool2d": ("missing", _NOT_IN_PYTORCH),
}


def tensor_methods():
    with open(os.path.join(HERE, "torch_tensor_methods.txt")) as fh:
        return {ln.strip() for ln in fh if ln.strip() and not ln.startswith("#")}


class _Refs(ast.NodeVisitor):
    """The torch references of one module."""

    def __init__(self, methods, stored=()):
        self.stored = set(stored)   # names the module also assigns (a loop variable `data` shadows torch's)
        self.alias = {}          # local name -> dotted torch path ("torch.nn")
        self.other = set()       # names bound to non-torch imports (np, os, plt, ...)
        self.refs = set()        # (kind, name)
        self.methods = methods

    # --- imports --------------------------------------------------------------------------------------
    def visit_Import(self, node):
        for a in node.names:
            if a.name == "torch" or a.name.startswith("torch."):
                if a.name != "torch":
                    self.refs.add(("import", a.name))
                if a.asname:
                    self.alias[a.asname] = a.name
                else:
                    self.alias["torch"] = "torch"
            else:
                self.other.add(a.asname or a.name.split(".")[0])

    def visit_ImportFrom(self, node):
        mod = node.module or ""
        if node.level == 0 and (mod == "torch" or mod.startswith("torch.")):
            for a in node.names:
                if a.name == "*":
                    continue
                full = f"{mod}.{a.name}"
                self.refs.add(("import", full))
                self.alias[a.asname or a.name] = full
        else:
            for a in node.names:
                self.other.add(a.asname or a.name)

    # --- attribute chains and calls ---------------------------------------------------------------------
    def _chain(self, node):
        """'torch.nn.functional.relu' for an Attribute/Name chain rooted at a torch alias, else None."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id in self.alias and node.id not in self.stored:
            return ".".join([self.alias[node.id]] + parts[::-1])
        return None

    def _root(self, node):
        while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
            node = node.func if isinstance(node, ast.Call) else node.value
        return node

    def visit_Subscript(self, node):
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        suffix = " = v" if isinstance(node.ctx, ast.Store) else ""
        for it in items:
            form = None
            if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range":
                form = "x[range(...)]"
            elif isinstance(it, ast.List):
                form = "x[[list]]"
            elif isinstance(it, ast.Constant) and it.value is None:
                form = "x[None]"
            elif isinstance(it, ast.Constant) and it.value is Ellipsis:
                form = "x[...]"
            if form is not None:
                self.refs.add(("index", form + suffix))
        self.generic_visit(node)

    def visit_Attribute(self, node):
        name = self._chain(node)
        if name is not None:
            self.refs.add(("attr", name))
            return   # the longest chain only: its prefixes resolve on the way
        self.generic_visit(node)

    def visit_Call(self, node):
        fn = node.func
        name = self._chain(fn) if isinstance(fn, ast.Attribute) else (
            self.alias.get(fn.id) if isinstance(fn, ast.Name) else None)
        if name is not None:
            for kw in node.keywords:
                if kw.arg is not None:
                    self.refs.add(("kwarg", f"{name}({kw.arg}=)"))
        elif isinstance(fn, ast.Attribute):
            root = self._root(fn.value)
            evident_other = (isinstance(root, ast.Name) and root.id in self.other) or isinstance(
                root, (ast.Constant, ast.List, ast.Dict, ast.Tuple, ast.Set, ast.ListComp, ast.DictComp,
                       ast.JoinedStr))
            if not evident_other:
                if fn.attr in self.methods:
                    self.refs.add(("method", f"Tensor.{fn.attr}"))
                elif fn.attr in MODULE_METHODS:
                    self.refs.add(("method", f"Module.{fn.attr}"))
                elif fn.attr in OPTIMIZER_METHODS:
                    self.refs.add(("method", f"Optimizer.{fn.attr}"))
        self.generic_visit(node)


def scan_source(text, methods=None):
    """The set of (kind, name) torch references in one program's source (a SyntaxError propagates)."""
    tree = ast.parse(text)
    stored = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    stored |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments)
               for a in n.posonlyargs + n.args + n.kwonlyargs}
    v = _Refs(tensor_methods() if methods is None else methods, stored)
    v.visit(tree)
    return v.refs


def _rawdev_path(name):
    return "rawdev" + name[len("torch"):]


def _lookup(path):
    """Resolve a dotted rawdev path, importing submodules on the way. Returns the object; raises
    AttributeError/ImportError when it is missing, NotImplementedError when rawdev refuses it."""
    parts = path.split(".")
    obj = importlib.import_module(parts[0])
    for i, p in enumerate(parts[1:], 1):
        try:
            obj = getattr(obj, p)
        except AttributeError:
            if inspect.ismodule(obj):
                obj = importlib.import_module(".".join(parts[:i + 1]))
            else:
                raise
    return obj


def _imported_from(path):
    """`from a.b import c` as Python runs it: module a.b (from sys.modules, even where a's attribute b is another
    object, as torch.autograd.gradcheck is the function) and its attribute c; None when that fails."""
    mod, _, attr = path.rpartition(".")
    try:
        return getattr(importlib.import_module(mod), attr)
    except (ImportError, AttributeError):
        return None


def check(kind, name):
    """'ok', 'refused' (NotImplementedError: the reason) or 'missing' for one reference."""
    import rawdev
    try:
        if kind in ("import", "attr"):
            obj = None
            if kind == "import":
                try:
                    obj = importlib.import_module(_rawdev_path(name))
                except ImportError:
                    obj = _imported_from(_rawdev_path(name))
            if obj is None:
                obj = _lookup(_rawdev_path(name))
            refused = getattr(obj, "__rawdev_refused__", None) if not isinstance(obj, type) else None
            return ("refused", refused) if isinstance(refused, str) else ("ok", "")
        if kind == "method":
            owner, attr = name.split(".")
            cls = {"Tensor": rawdev.Tensor, "Module": rawdev.nn.Module, "Optimizer": rawdev.optim.Optimizer}[owner]
            return ("ok", "") if hasattr(cls, attr) else ("missing", "")
        if kind == "index":
            x = rawdev.zeros(3, 4)
            try:
                exec(PROBES[name], {"rawdev": rawdev, "x": x})
            except NotImplementedError as e:
                return "refused", str(e).split("\n")[0][:160]
            except Exception:
                return "missing", ""
            return "ok", ""
        if kind == "kwarg":
            fn_name, kw = name[:-2].split("(")
            fn = _imported_from(_rawdev_path(fn_name))
            if fn is None:
                fn = _lookup(_rawdev_path(fn_name))
            refused = getattr(fn, "__rawdev_refused__", None) if not isinstance(fn, type) else None
            if isinstance(refused, str):
                return "refused", refused
            try:
                sig = inspect.signature(fn)
            except (TypeError, ValueError):
                return "ok", ""
            params = sig.parameters
            if kw in params or any(p.kind is p.VAR_KEYWORD for p in params.values()):
                return "ok", ""
            return "missing", ""
    except NotImplementedError as e:
        return "refused", str(e).split("\n")[0][:160]
    except (AttributeError, ImportError, TypeError, ValueError):
        return "missing", ""
    raise ValueError(kind)


def scan(folders):
    """{program path: set of refs}, [unparsable paths]."""
    methods = tensor_methods()
    programs, skipped = {}, []
    for folder in folders:
        for dirpath, _, files in os.walk(folder):
            for f in sorted(files):
                if not f.endswith(".py"):
                    continue
                p = os.path.join(dirpath, f)
                try:
                    with open(p, encoding="utf-8", errors="replace") as fh:
                        programs[os.path.relpath(p, folder)] = scan_source(fh.read(), methods)
                except SyntaxError:
                    skipped.append(p)
    return programs, skipped


def report(programs):
    """(summary dict, rows for the not-resolved names: (name, kind, programs, status, reason))."""
    results = {}
    users = collections.defaultdict(set)
    for prog, refs in programs.items():
        for r in refs:
            users[r].add(prog)
            if r not in results:
                results[r] = check(*r)
    total = sum(len(refs) for refs in programs.values())
    by = collections.Counter()
    for refs in programs.values():
        for r in refs:
            by[results[r][0]] += 1
    kinds = collections.Counter()
    kinds_ok = collections.Counter()
    for refs in programs.values():
        for r in refs:
            kinds[r[0]] += 1
            kinds_ok[r[0]] += results[r][0] == "ok"
    rows = []
    for r, (state, why) in results.items():
        if state == "ok":
            continue
        status, reason = STATUS.get(r[1], ("refused", why) if state == "refused" else ("missing", ""))
        if status == "missing" and not reason and r[1].startswith("torch.ops."):
            reason = _TORCH_OPS   # an ATen operator or a C++ extension's op, reached through the dispatcher
        rows.append((r[1], r[0], len(users[r]), status, reason or why))
    rows.sort(key=lambda x: (-x[2], x[0]))
    summary = {"programs": len(programs), "references": total, "resolved": by["ok"], "refused": by["refused"],
               "missing": by["missing"], "distinct": len(results),
               "kinds": {k: [kinds_ok[k], kinds[k]] for k in sorted(kinds)}}
    return summary, rows


def markdown(summary, rows, sources):
    pct = 100.0 * summary["resolved"] / max(summary["references"], 1)
    pct_known = 100.0 * (summary["resolved"] + summary["refused"]) / max(summary["references"], 1)
    planned = sum(n for _, _, n, status, _ in rows if status == "planned")
    pct_merged = 100.0 * (summary["resolved"] + summary["refused"] + planned) / max(summary["references"], 1)
    lines = ["# Compatibility scan: what public PyTorch programs reference, resolved in rawdev", "",
             "Generated by `python tools/compat_scan.py <corpus> --list tools/compat_corpus.txt --out "
             "docs/COMPAT_SCAN.md` (the method and its heuristics are in the tool's docstring). The corpus: "
             f"{summary['programs']} programs from {len(sources)} public repositories, listed with their commits "
             "in tools/compat_corpus.txt (" + ", ".join(f"{r}: {n}" for r, n in sorted(sources.items())) + ").",
             "", "The pytorch/tutorials scripts are those of its commit e7563f6 (November 2023) that import torch: the "
             "whole repository's snapshot (5.3 GB) is over the fetch tool's 0.5 GB limit, so they were read from "
             "a fork that holds that commit (titaiwangms/tutorials; the same files, blob for blob, are in "
             "ZhanqiLiu/tutorials).", "",
             f"**{summary['resolved']} of {summary['references']} references resolve: {pct:.2f} %**; "
             f"{summary['refused']} more are refused by design (they import, and using them raises "
             f"NotImplementedError naming the feature and why), so **{pct_known:.2f} % resolve or are refused**; "
             f"{summary['missing']} ({100 - pct_known:.2f} %) are missing. "
             f"({summary['distinct']} distinct references; each counted once per program.)", ""]
    if planned:
        lines += [f"Of the missing, {planned} are built on another branch whose merge is pending (status "
                  f"`planned` below); with them: {pct_merged:.2f} % resolve or are refused.", ""]
    lines += ["| kind | resolved | references |", "|---|---|---|"]
    for k, (ok, n) in summary["kinds"].items():
        lines.append(f"| {k} | {ok} | {n} |")
    lines += ["", "## Not resolved", "",
              "Each name that does not resolve, how many programs use it, and its status.", "",
              "| name | kind | programs | status | reason |", "|---|---|---|---|---|"]
    for name, kind, n, status, reason in rows:
        lines.append(f"| `{name}` | {kind} | {n} | {status} | {reason.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folders", nargs="+")
    ap.add_argument("--list", help="the corpus list (repository path commit per line), for the per-source counts")
    ap.add_argument("--out", help="write the Markdown table here (else stdout)")
    ap.add_argument("--json", help="write the summary and rows as JSON here")
    args = ap.parse_args(argv)
    os.environ.setdefault("RAWDEV_DRIVER", "none")
    programs, skipped = scan(args.folders)
    for p in skipped:
        print(f"skipped (not Python 3): {p}", file=sys.stderr)
    summary, rows = report(programs)
    sources = collections.Counter()
    if args.list:
        with open(args.list) as fh:
            for ln in fh:
                if ln.strip() and not ln.startswith("#"):
                    sources[ln.split()[0]] += 1
    text = markdown(summary, rows, sources)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"summary": summary, "rows": rows}, fh, indent=1)
    print(json.dumps(summary), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
