"""rawdev.ops: every op declared once, in a file per family; the public names are generated.

Each family file declares its ops with registry.declare; `methods.install()` puts them on rawdev.Tensor, and
`rawdev`/`nn.functional` export registry.names(...). Backends: cpu.py (numpy) and cuda.py (shipped PTX), chosen by
dispatch.py; both star-import the per-family backend files: a family folder's own cpu.py and cuda.py
(normalization/, conv/, resample/, embedding_bag/, gather_scatter/, select/, reduce/, rnn/, dropout/,
index_along_dim/, optim_steps/), or the files beside them (cpu_math.py /
cuda_math.py for binary_math.py, cuda_scan_sort.py and cuda_sortlong.py for scan_sort.py, ...).

Families (the family name is the file's or the folder's; "composed" files hold ops built from declared ops, with
no kernels of their own, so both devices and autograd come with them):
- elementwise: unary.py (exp, log, trig, relu, ...: kernels), binary.py (add, sub, mul, div, pow, comparisons),
  binary_math.py (atan2, fmod, remainder, floor division, copysign, hypot, lerp, logical and bitwise ops,
  isnan/isinf/..., nan_to_num, isclose), pointwise_composed.py (logit, xlogy, sinc, logaddexp, gcd/lcm, shifts,
  square, fmax/fmin, ldexp/frexp, ...), gamma.py (lgamma, digamma, polygamma, erfinv, igamma),
  dtype_queries.py (result_type, promote_types, can_cast, is_floating_point, numel, type_as, the complex queries);
- reductions and orderings: reduce/ (sum, mean, max, min, argmax, argmin), reduce_composed.py (prod, var/std,
  norm, logsumexp, amax/amin, all/any, nansum, median/mode, sum_to_size), scan_sort.py (cumsum/cumprod, sort, topk,
  kthvalue, unique, bincount, histc, histogram), order_stats.py (searchsorted, isin, quantile, nanmedian, aminmax),
  covariance.py (cov, corrcoef);
- shapes and indexing: shape.py (views of every element: view/reshape, transpose, permute, expand, squeeze, ...;
  clone/contiguous), slice_views.py (narrow, select, diagonal, as_strided, Tensor.unfold, unbind), view_copies.py
  (the *_copy forms, ravel), join.py (cat/stack, splits, repeat, roll, flip), structure.py (diff, kron, diag,
  diag_embed, tril_indices, rot90, ...), index.py (x[...], index_put), index_along_dim/ (index_select/add/copy),
  gather_scatter/ (gather, scatter*, take, *_scatter, put, one_hot), select/ (where, masked_fill, clamp,
  maximum/minimum, nonzero, argwhere);
- creation.py (tril/triu, meshgrid, Tensor.new_*), random_ops.py (normal, bernoulli, multinomial, random fills),
  windows.py (hann_window and family), host_callbacks.py (Tensor.apply_ / map_);
- linear algebra: linalg.py (linear, mm, matmul), products.py (outer, dot, mv, bmm, addmm, einsum, bilinear, trace,
  matrix_exp, ...), decomp.py (LU, Cholesky, QR, the triangular solves),
  solve_inv_det.py (solve, inv, det, slogdet, lstsq, matrix_power), spectral.py (eigh, svd, pinv, norms);
- nn.functional: activation.py (softmax, prelu, glu, threshold/shrinks, rrelu, gumbel_softmax), dropout/ (dropout,
  dropout1d/2d/3d, alpha_dropout, feature_alpha_dropout),
  loss.py (cross_entropy, nll, mse, the reduction handling), loss_pointwise.py (l1, smooth_l1, huber, bce,
  bce_with_logits, kl_div: the pointwise_loss kernels), loss_margin.py (margin_ranking, cosine_embedding,
  triplet_margin, hinge_embedding, soft_margin, multi(label)_margin, triplet_margin_with_distance),
  loss_likelihood.py (poisson_nll, gaussian_nll, ctc), distance.py (normalize, cosine_similarity,
  pairwise_distance, cdist, pdist),
  conv/ (convolution, pooling, unfold/fold and the 3-d forms), pooling_composed.py (lp_pool, max_unpool,
  local_response_norm),
  normalization/ (layer, rms, group, instance and batch norm), embedding.py, embedding_bag/, resample/
  (interpolate, pad, pixel/channel shuffle), grid.py (affine_grid, grid_sample), attention/, rnn/.
"""
from typing import TYPE_CHECKING, Any

from . import activation, binary, index, linalg, loss, shape, unary  # noqa: F401  (they declare)
from .index_along_dim import functions as _index_along_dim  # noqa: F401,E402  (it declares)
from . import slice_views  # noqa: F401,E402  (it declares)
from .reduce import functions as _reduce  # noqa: F401,E402  (it declares)
from . import binary_math, creation, distance, embedding, join, random_ops  # noqa: F401,E402  (they declare)
from .select import functions as _select  # noqa: F401,E402  (it declares)
from .normalization import functions as _normalization  # noqa: F401,E402  (it declares)
from .conv import functions as _conv, pooling as _pooling  # noqa: F401,E402  (they declare)
from .attention import functions as _attention  # noqa: F401,E402  (it declares)
from .rnn import functions as _rnn  # noqa: F401,E402  (it declares)
from .dropout import functions as _dropout  # noqa: F401,E402  (it declares)
from .gather_scatter import functions as _gather_scatter  # noqa: F401,E402  (it declares)
from .embedding_bag import functions as _embedding_bag  # noqa: F401,E402  (it declares)
from .resample import functions as _resample  # noqa: F401,E402  (it declares)
from . import reduce_composed, scan_sort  # noqa: F401,E402  (they declare)
from .conv import conv3d as _conv3d  # noqa: F401,E402  (it declares)
from . import covariance, decomp, dtype_queries, gamma, grid, host_callbacks  # noqa: F401,E402  (they declare)
from . import solve_inv_det  # noqa: F401,E402  (it declares)
from . import loss_likelihood, loss_margin, order_stats, pointwise_composed, pooling_composed  # noqa: F401,E402,E501
from . import loss_pointwise  # noqa: F401,E402  (it declares)
from . import view_copies  # noqa: F401,E402  (it declares)
from . import spectral, structure  # noqa: F401,E402  (they declare)
from . import products, windows  # noqa: F401,E402  (they declare)
from . import methods as _methods
from .registry import names as _names

_methods.install()
from . import sparse_coo as _sparse_coo  # noqa: E402  (after the methods: it adds Tensor.to_sparse)

_sparse_coo.install()

globals().update(_names("torch"))
from .overlap import guard_inplace_methods as _guard  # noqa: E402
_guard(globals())   # in-place writes into expanded tensors raise, as PyTorch's

if TYPE_CHECKING:
    # the declared ops are put in this namespace at import (rawdev.ops.registry): Any to a type checker
    def __getattr__(name: str) -> Any: ...
else:
    def __getattr__(name: str) -> Any:
        """`torch.ops.<namespace>`: any other public name is an op namespace (rawdev.ops.torch_ops), except the
        names of this package's own modules, which the import system must still find and import."""
        import importlib.util
        if name.startswith("_") or importlib.util.find_spec(f"{__name__}.{name}") is not None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        return _torch_ops.namespace(name)

__all__ = sorted(_names("torch"))

from . import torch_ops as _torch_ops  # noqa: E402

aten = _torch_ops.namespace("aten")

from ..refusals import Refused  # noqa: E402

# torch.ops is also where users reach PyTorch's dispatcher; the one name of it that programs call outside an op
# namespace is load_library, which rawdev refuses: a C++ library's operators need the ATen dispatcher to run
load_library = Refused("torch.ops.load_library", "loading C++ extensions (torch.ops.load_library)",
                       "C++ operator libraries register into PyTorch's ATen dispatcher, which rawdev does not have; "
                       "write the op as a Python function over rawdev tensors instead")
