"""torch.utils.benchmark's Timer, Measurement and Compare for Python statements: the statement is compiled once
and run in a loop timed with timeit's clock, the GPU (when rawdev opened one) synchronized before each reading, as
PyTorch's Timer does, so queued kernels are counted. C++ statements and Callgrind counts are refused: rawdev
compiles no C++ and runs no Valgrind."""
import enum
import statistics
import timeit as _timeit

from ...refusals import Refused

__all__ = ["Timer", "Measurement", "Compare", "Language"]


class Language(enum.Enum):
    """The statement's language (PyTorch's values). rawdev times PYTHON; CPP is refused at Timer()."""
    PYTHON = 0
    CPP = 1


def _synchronize():
    from ... import cuda
    if cuda.is_initialized():
        cuda.synchronize()


def _timer():
    _synchronize()
    return _timeit.default_timer()


class Measurement:
    """The times of a Timer's runs: `raw_times` (seconds per block of `number_per_run` runs), `times` (seconds per
    run), `mean`, `median`, `iqr`, and the Timer's labels. Printed as PyTorch prints one.

    Example:
        >>> m = Timer("x + 1", globals={"x": 1}).timeit(100)
        >>> m.mean > 0
        True
    """

    def __init__(self, number_per_run, raw_times, task_spec, metadata=None):
        self.number_per_run = int(number_per_run)
        self.raw_times = list(raw_times)
        self.task_spec = task_spec
        self.metadata = metadata

    def __getattr__(self, name):
        spec = self.__dict__.get("task_spec")
        if spec is not None and name in spec:
            return spec[name]
        raise AttributeError(f"'Measurement' object has no attribute '{name}'")

    @property
    def times(self):
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def mean(self):
        return statistics.fmean(self.times)

    @property
    def median(self):
        return statistics.median(self.times)

    def _quartiles(self):
        t = sorted(self.times)
        if len(t) < 2:
            return t[0], t[0]
        q = statistics.quantiles(t, n=4, method="inclusive")
        return q[0], q[2]

    @property
    def iqr(self):
        q1, q3 = self._quartiles()
        return q3 - q1

    @property
    def title(self):
        return self.label or self.stmt

    def __repr__(self):
        scale, unit = ((1e6, "us") if self.median < 1e-3 else (1e3, "ms") if self.median < 1 else (1.0, "s"))
        lines = [f"<rawdev.utils.benchmark.Measurement object at {hex(id(self))}>"]
        head = " / ".join(x for x in (self.label, self.sub_label, self.description) if x)
        lines += ([head] if head else []) + [self.stmt]
        if self.setup != "pass":
            lines.append("setup: " + self.setup)
        median = f"{self.median * scale:.2f} {unit}"
        lines.append(f"  Median: {median}" if len(self.times) > 1 else f"  {median}")
        if len(self.times) > 1:
            q1, q3 = self._quartiles()
            lines.append(f"  IQR:    {self.iqr * scale:.2f} {unit} ({q1 * scale:.2f} to {q3 * scale:.2f})")
        lines.append(f"  {len(self.times)} measurement{'s' if len(self.times) != 1 else ''}, "
                     f"{self.number_per_run} runs per measurement, {self.num_threads} thread"
                     f"{'s' if self.num_threads != 1 else ''}")
        return "\n".join(lines)


class Timer:
    """torch.utils.benchmark.Timer: time a Python statement.

    Args:
        stmt: the statement timed (a string; default "pass").
        setup: run once before timing, in the same namespace.
        global_setup: C++ only in PyTorch; must stay empty.
        timer: the clock (default timeit.default_timer, the GPU synchronized before each reading).
        globals: the namespace the statement runs in (copied).
        label, sub_label, description, env: labels carried to the Measurement and Compare's table.
        num_threads: recorded in the Measurement (rawdev's cpu ops use numpy's threads).
        language: Language.PYTHON or "py"/"python"; C++ is refused.

    Returns:
        a Timer; timeit(number) and blocked_autorange(min_run_time) return a Measurement.

    Example:
        >>> t = Timer("x * 2", globals={"x": rawdev.ones(4)})
        >>> m = t.timeit(10)
    """

    def __init__(self, stmt="pass", setup="pass", global_setup="", timer=None, globals=None,  # noqa: A002
                 label=None, sub_label=None, description=None, env=None, num_threads=1, language=Language.PYTHON):
        if language in (Language.CPP, "cpp", "c++"):
            raise NotImplementedError("torch.utils.benchmark.Timer(language=Language.CPP): C++ statements are not "
                                      "supported by rawdev: it compiles no C++; time the Python statement instead")
        if language not in (Language.PYTHON, "py", "python"):
            raise ValueError(f"Invalid language `{language}`.")
        if global_setup:
            raise ValueError("global_setup is C++ only.")
        if not isinstance(stmt, str) or not isinstance(setup, str):
            raise ValueError("Currently only a `str` stmt and setup are supported.")
        self._globals = dict(globals or {})
        self._timer = timer or _timer
        self._stmt = compile(stmt, "<rawdev.utils.benchmark stmt>", "exec")
        self._setup = compile(setup, "<rawdev.utils.benchmark setup>", "exec")
        self._spec = {"stmt": stmt, "setup": setup, "label": label, "sub_label": sub_label,
                      "description": description, "env": env, "num_threads": int(num_threads)}

    def _run(self, number):
        ns = self._globals
        code = self._stmt
        start = self._timer()
        for _ in range(number):
            exec(code, ns)  # noqa: S102  (the statement the caller wrote, as timeit runs it)
        return self._timer() - start

    def timeit(self, number=1000000):
        """Run setup once, the statement once to warm up, then `number` times; one measurement."""
        exec(self._setup, self._globals)  # noqa: S102
        self._run(1)
        return Measurement(number, [self._run(number)], dict(self._spec))

    def blocked_autorange(self, callback=None, min_run_time=0.2):
        """Blocks of runs sized to take ~0.1 ms or more each, repeated until `min_run_time` seconds are spent;
        each block is one measurement. callback(number, time) is called after each block."""
        exec(self._setup, self._globals)  # noqa: S102
        self._run(1)
        number = 1
        while True:   # PyTorch's sizing: grow the block until it takes at least 1e-4 s
            t = self._run(number)
            if t >= 1e-4 or number >= 10 ** 9:
                break
            number *= 10
        times, total = [], 0.0
        while total < min_run_time or not times:
            t = self._run(number)
            total += t
            times.append(t)
            if callback is not None:
                callback(number, t)
        return Measurement(number, times, dict(self._spec))

    def adaptive_autorange(self, threshold=0.1, *, min_run_time=0.01, max_run_time=10.0, callback=None):
        """blocked_autorange's blocks until the IQR/median falls under `threshold` (after min_run_time) or
        max_run_time is spent."""
        m = self.blocked_autorange(callback=callback, min_run_time=min_run_time)
        spent = sum(m.raw_times)
        while spent < max_run_time and m.median > 0 and m.iqr / m.median > threshold:
            t = self._run(m.number_per_run)
            m.raw_times.append(t)
            spent += t
        return m

    def autorange(self, callback=None):
        """timeit.Timer.autorange: one block sized to take at least 0.2 s."""
        exec(self._setup, self._globals)  # noqa: S102
        number = 1
        while True:
            t = self._run(number)
            if callback is not None:
                callback(number, t)
            if t >= 0.2:
                return Measurement(number, [t], dict(self._spec))
            number *= 10

    collect_callgrind = Refused("torch.utils.benchmark.Timer.collect_callgrind", "Callgrind instruction counts",
                                "rawdev runs no Valgrind; use blocked_autorange for wall-clock times")


class Compare:
    """torch.utils.benchmark.Compare: a table of Measurements, one row per (label, sub_label), one column per
    description, medians in a common unit. print() or str() shows it."""

    def __init__(self, results):
        self._results = list(results)

    def __str__(self):
        rs = self._results
        if not rs:
            return ""
        med = max(m.median for m in rs)
        scale, unit = (1e6, "us") if med < 1e-3 else (1e3, "ms") if med < 1 else (1.0, "s")
        cols = list(dict.fromkeys(m.description or "" for m in rs))
        rows = list(dict.fromkeys((m.label or "", m.sub_label or m.stmt) for m in rs))
        cell = {((m.label or "", m.sub_label or m.stmt), m.description or ""): m.median * scale for m in rs}
        width = max(len(r[1]) for r in rows) + 2
        out = []
        for label in dict.fromkeys(r[0] for r in rows):
            out.append(f"[{'-' * 10} {label} {'-' * 10}]")
            out.append(" " * width + " | ".join(f"{c:>12}" for c in cols))
            for r in rows:
                if r[0] == label:
                    vals = [f"{cell[(r, c)]:>12.1f}" if (r, c) in cell else " " * 12 for c in cols]
                    out.append(f"{r[1]:<{width}}" + " | ".join(vals))
            out.append("")
        out.append(f"Times are in {'microseconds' if unit == 'us' else 'milliseconds' if unit == 'ms' else 'seconds'}"
                   f" ({unit}).")
        return "\n".join(out)

    def print(self):
        print(str(self))
