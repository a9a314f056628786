"""Op declarations, and what is generated from them: rawdev.<name>, Tensor.<name>, nn.functional.<name>,
the in-place form Tensor.<name>_ and the export lists.

A family file declares each op once with `declare(...)`: the public function, and which public names it gets;
its `family=` is the file's name. The families (rawdev/ops/__init__.py lists what each holds): unary, binary,
binary_math, pointwise_composed, gamma, dtype_queries, reduce, reduce_composed, scan_sort, order_stats, covariance,
shape, slice_views, view_copies, join, structure, index, index_along_dim, gather_scatter, select, creation,
random_ops, windows, host_callbacks, linalg, products, decomp, solve_inv_det, spectral, activation, loss,
loss_pointwise, loss_margin, loss_likelihood, distance, conv, conv3d, pooling_composed, normalization
(rawdev/ops/normalization/functions.py), embedding, embedding_bag, resample, grid, attention and rnn.
`install()` puts the methods on Tensor; `rawdev`, `rawdev.ops` and `rawdev.nn.functional` take their
names from `names(...)`. Nothing else lists ops.

Those public callables are the op boundary autocast acts at: each is the declared function behind
`autocast_mode.hook` (one global check outside autocast regions). The in-place forms and the ops' own calls to
each other use the plain functions, as PyTorch's autocast covers out-of-place ops only.
"""
import dataclasses

__all__ = ["Decl", "declare", "names", "get", "install", "inplace_form", "public"]


@dataclasses.dataclass
class Decl:
    name: str
    fn: object                  # the public function: fn(input, ...)
    family: str
    method: object = True       # True: Tensor.<name> is fn; a callable: that method; False: none
    torch: bool = True          # rawdev.<name>
    functional: bool = False    # rawdev.nn.functional.<name>
    inplace: bool = False       # Tensor.<name>_ (and rawdev.<name>_ / F.<name>_ where those exist)
    aliases: tuple = ()         # more names for the same op (rawdev, Tensor and F alike)


_DECLS: dict = {}


def declare(name, fn=None, *, family, **kw):
    """Declare an op; usable as a decorator (`@declare("relu", family="unary", functional=True)`)."""
    def add(f):
        if name in _DECLS:
            raise ValueError(f"op {name!r} is declared twice ({_DECLS[name].family} and {family})")
        _DECLS[name] = Decl(name, f, family, **kw)
        return f
    return add(fn) if fn is not None else add


def get(name):
    return _DECLS[name]


def decls():
    return list(_DECLS.values())


def public(d):
    """The op's public callable: its function behind the autocast hook (one per declaration, cached)."""
    if isinstance(d, str):
        d = _DECLS[d]
    cached = d.__dict__.get("_public")
    if cached is None:
        from .autocast_mode import hook
        cached = d.__dict__["_public"] = hook(d.name, d.fn)
    return cached


def names(where):
    """{public name: callable} for where in ("torch", "functional")."""
    out = {}
    for d in _DECLS.values():
        if not getattr(d, where):
            continue
        for n in (d.name,) + d.aliases:
            out[n] = public(d)
        if d.inplace:
            for n in (d.name,) + d.aliases:       # arccos_ as acos_, as PyTorch
                out[n + "_"] = inplace_form(d)
    return out


def inplace_form(d):
    """x.<name>_(...): the op's result written into x (same dtype, any layout)."""
    cached = d.__dict__.get("_inplace")
    if cached is None:
        from .inplace import apply_inplace

        def cached(input, *args, **kwargs):  # noqa: A002
            return apply_inplace(input, d.fn, d.name + "_", args, kwargs)
        cached.__name__ = cached.__qualname__ = d.name + "_"
        cached.__doc__ = f"In-place {d.name}: writes {d.name}(input, ...) into input and returns it."
        d.__dict__["_inplace"] = cached
    return cached


def install(tensor_cls):
    """Put every declared op's method (and in-place form) on the Tensor class."""
    for d in _DECLS.values():
        if d.method is False:
            continue
        if d.method is True:
            meth = public(d)
        elif callable(d.method):
            from .autocast_mode import hook
            meth = hook(d.name, d.method)
        else:
            meth = d.method                       # a property (T, mT)
        for n in (d.name,) + d.aliases:
            setattr(tensor_cls, n, meth)
        if d.inplace:
            for n in (d.name,) + d.aliases:
                setattr(tensor_cls, n + "_", inplace_form(d))
