"""`rawdev.trace()`: a record of every driver call rawdev makes, printable as a table."""
import functools
from dataclasses import dataclass

from . import seam


@dataclass
class Call:
    fn: str
    nbytes: int | None
    stream: str | None
    owner: str | None
    seconds: float
    result: int

    def __str__(self):
        size = fmt_bytes(self.nbytes) if self.nbytes is not None else ""
        line = (f"{self.fn:<26}{size:>10}  {self.stream or '-':<16}{self.seconds * 1e6:9.1f} us  "
                f"{self.owner or '-'}")
        return line + (f"  -> error {self.result}" if self.result else "")


HEADER = f"{'driver call':<26}{'bytes':>10}  {'stream':<16}{'time':>12}  owner"


def fmt_bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


class trace:
    """Record driver calls. `with rawdev.trace() as t: model.cuda()` then `print(t)`; also a decorator.

    rawdev.trace(tensor) is PyTorch's torch.trace instead: the sum of the matrix's main diagonal (tensor.trace()).
    """

    def __new__(cls, *args, **kwargs):
        if cls is trace and args:          # rawdev.trace(tensor): torch.trace (subclasses keep their arguments)
            return args[0].trace()
        return super().__new__(cls)

    def __init__(self, input=None):  # noqa: A002
        self.calls = []

    def _record(self, fn, nbytes, stream, owner, seconds, result):
        name = seam.stream_names.get(int(stream), f"0x{int(stream):x}") if stream is not None else None
        self.calls.append(Call(fn, nbytes, name, owner, seconds, result))

    def __enter__(self):
        seam._tracers.append(self)
        return self

    def __exit__(self, *exc):
        seam._tracers.remove(self)
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*a, **kw):
            with self:
                return func(*a, **kw)
        return wrapper

    def count(self, fn):
        """How many calls of driver function `fn` were recorded."""
        return sum(c.fn == fn for c in self.calls)

    def __iter__(self):
        return iter(self.calls)

    def __len__(self):
        return len(self.calls)

    def __str__(self):
        if not self.calls:
            return "(no driver calls)"
        total = sum(c.seconds for c in self.calls)
        return "\n".join([HEADER, *map(str, self.calls),
                          f"{len(self.calls)} driver calls, {total * 1e3:.3f} ms in the driver"])

    __repr__ = __str__
