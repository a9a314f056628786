"""Autocast's op lists: which dtype each op runs in inside an autocast region, per device type, as data.

The names and policies are PyTorch's (aten/src/ATen/autocast_mode.h and autocast_mode.cpp): the aten names,
plus the name rawdev declares where its public op is one op and PyTorch's is a composite whose parts are listed
(`cross_entropy` is log_softmax + nll_loss on cuda: float32; `interpolate` / `upsample*` are the upsample_* ops;
`softmin` is softmax of the negation; `rnn_layer`, one layer of nn.RNN/LSTM/GRU, is _cudnn_rnn on cuda
(PyTorch's AutocastRNN.cpp casts it to float16) and mkldnn_rnn_layer on the cpu). An op in no list runs on
the dtypes it is given (PyTorch's fallthrough:
add of a float16 and a float32 tensor gives float32 by ordinary promotion).

Policies:
    lower_precision_fp   cast every floating tensor argument on the device to the region's dtype
    fp32                 cast them to float32
    fp32_set_opt_dtype   when the first argument is eligible and no dtype is given, pass dtype=float32
    fp32_append_dtype    the same for the overloads without a dtype (torch.norm)
    promote              cast to the widest floating dtype among the arguments (float32 over the region's dtype)
    banned               refuse (binary_cross_entropy on cuda)

`rawdev.amp.lists` is this module: read `CUDA` / `CPU` (policy -> set of names) or `policy_of(device, op)`,
and change them with `set_policy(device, op, policy)` (None removes the op) or by editing the sets;
`reset()` restores PyTorch's lists. Lookups happen only while an autocast region is active.

Example:
    >>> rawdev.amp.lists.policy_of("cuda", "mm"), rawdev.amp.lists.policy_of("cpu", "sum")
    ('lower_precision_fp', None)
"""
import copy

__all__ = ["POLICIES", "CUDA", "CPU", "BANNED_MESSAGE", "policy_of", "set_policy", "reset", "lists_for"]

POLICIES = ("lower_precision_fp", "fp32", "fp32_set_opt_dtype", "fp32_append_dtype", "promote", "banned")

BANNED_MESSAGE = (
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
    "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
    "safe to autocast.")


def _names(text):
    return frozenset(text.split())


# AT_FORALL_LOWER_PRECISION_FP, AT_FORALL_FP32, AT_FORALL_FP32_SET_OPT_DTYPE, the norm overloads of
# AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE, AT_FORALL_PROMOTE and the banned binary_cross_entropy (AutocastCUDA).
_CUDA = {
    "lower_precision_fp": _names("""
        _convolution convolution conv1d conv2d conv3d conv_tbc conv_transpose1d conv_transpose2d conv_transpose3d
        cudnn_convolution cudnn_convolution_transpose prelu addmm addmv addr matmul einsum mm mv linalg_vecdot
        linear addbmm baddbmm bmm chain_matmul linalg_multi_dot _thnn_fused_lstm_cell _thnn_fused_gru_cell
        lstm_cell gru_cell rnn_tanh_cell rnn_relu_cell _scaled_dot_product_flash_attention
        scaled_dot_product_attention _cudnn_rnn
        rnn_layer"""),
    "fp32": _names("""
        acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan pow softplus layer_norm
        native_layer_norm group_norm frobenius_norm nuclear_norm cosine_similarity poisson_nll_loss
        cosine_embedding_loss nll_loss nll_loss2d hinge_embedding_loss kl_div l1_loss smooth_l1_loss huber_loss
        mse_loss margin_ranking_loss multilabel_margin_loss soft_margin_loss triplet_margin_loss multi_margin_loss
        binary_cross_entropy_with_logits dist pdist cdist renorm logsumexp
        upsample_nearest1d _upsample_nearest_exact1d upsample_nearest2d _upsample_nearest_exact2d
        upsample_nearest3d _upsample_nearest_exact3d upsample_linear1d upsample_bilinear2d _upsample_bilinear2d_aa
        upsample_trilinear3d upsample_bicubic2d _upsample_bicubic2d_aa
        cross_entropy interpolate upsample upsample_nearest upsample_bilinear"""),
    "fp32_set_opt_dtype": _names("""
        prod softmax log_softmax cumprod cumsum linalg_vector_norm linalg_matrix_norm sum
        softmin"""),
    "fp32_append_dtype": _names("norm"),
    "promote": _names("addcdiv addcmul atan2 bilinear cross dot vdot grid_sampler index_put tensordot scatter_add "
                      "grid_sample"),
    "banned": _names("binary_cross_entropy"),
}

# TORCH_LIBRARY_IMPL(aten, AutocastCPU, m): its own, shorter lists (no fp32_set_opt_dtype: sum of a bfloat16
# tensor stays bfloat16 on the cpu; binary_cross_entropy is float32 there, not refused).
_CPU = {
    "lower_precision_fp": _names("""
        conv1d conv2d conv3d bmm mm linalg_vecdot baddbmm addmm _addmm_activation addbmm linear _convolution matmul
        conv_tbc mkldnn_rnn_layer conv_transpose1d conv_transpose2d conv_transpose3d prelu
        scaled_dot_product_attention _native_multi_head_attention
        rnn_layer"""),
    "fp32": _names("""
        avg_pool3d binary_cross_entropy grid_sampler polar prod quantile nanquantile stft cdist grid_sampler_2d
        _grid_sampler_2d_cpu_fallback grid_sampler_3d trace view_as_complex cholesky cholesky_inverse
        cholesky_solve inverse lu_solve orgqr ormqr pinverse max_pool3d max_unpool2d max_unpool3d
        adaptive_avg_pool3d reflection_pad1d reflection_pad2d replication_pad1d replication_pad2d replication_pad3d
        mse_loss cosine_embedding_loss nll_loss nll_loss2d hinge_embedding_loss poisson_nll_loss smooth_l1_loss
        cross_entropy_loss l1_loss huber_loss margin_ranking_loss soft_margin_loss triplet_margin_loss
        multi_margin_loss ctc_loss kl_div multilabel_margin_loss binary_cross_entropy_with_logits
        fft_fft fft_ifft fft_fft2 fft_ifft2 fft_fftn fft_ifftn fft_rfft fft_irfft fft_rfft2 fft_irfft2 fft_rfftn
        fft_irfftn fft_hfft fft_ihfft linalg_cond linalg_matrix_rank linalg_solve linalg_cholesky linalg_svdvals
        linalg_eigvals linalg_eigvalsh linalg_inv linalg_householder_product linalg_tensorinv linalg_tensorsolve
        fake_quantize_per_tensor_affine geqrf _lu_with_info qr svd triangular_solve fractional_max_pool2d
        fractional_max_pool3d adaptive_max_pool3d multilabel_margin_loss_forward linalg_qr linalg_cholesky_ex
        linalg_svd linalg_eig linalg_eigh linalg_lstsq linalg_inv_ex
        cross_entropy grid_sample"""),
    "fp32_set_opt_dtype": frozenset(),
    "fp32_append_dtype": frozenset(),
    "promote": _names("stack cat index_copy"),
    "banned": frozenset(),
}

CUDA: dict = {}
CPU: dict = {}


def reset():
    """Restore PyTorch's lists (undo set_policy and edits).

    Returns:
        None

    Example:
        >>> rawdev.amp.lists.reset()
    """
    for live, default in ((CUDA, _CUDA), (CPU, _CPU)):
        live.clear()
        live.update({p: set(copy.copy(default[p])) for p in POLICIES})


reset()


def lists_for(device_type):
    """The policy -> set-of-op-names dict for "cuda" or "cpu" (None for a device type autocast does not know).

    Args:
        device_type: "cuda" or "cpu".

    Returns:
        The live dict (edits take effect in the next autocast call), or None.

    Example:
        >>> "mm" in rawdev.amp.lists.lists_for("cpu")["lower_precision_fp"]
        True
    """
    return CUDA if device_type == "cuda" else CPU if device_type == "cpu" else None


def policy_of(device_type, op):
    """The policy autocast applies to op (its rawdev or aten name) on device_type, or None (runs as given).

    Args:
        device_type: "cuda" or "cpu".
        op: the op's name, e.g. "mm", "softmax", "cat".

    Returns:
        One of POLICIES, or None.

    Example:
        >>> rawdev.amp.lists.policy_of("cuda", "softmax")
        'fp32_set_opt_dtype'
    """
    table = lists_for(device_type)
    if table is None:
        return None
    for policy in POLICIES:
        if op in table[policy]:
            return policy
    return None


def set_policy(device_type, op, policy):
    """Put op in policy's list for device_type (out of any other list); policy None takes it out of all.

    Args:
        device_type: "cuda" or "cpu".
        op: the op's name (as rawdev declares it: rawdev.<op>, Tensor.<op> or nn.functional.<op>).
        policy: one of POLICIES, or None.

    Returns:
        None

    Example:
        >>> rawdev.amp.lists.set_policy("cuda", "gelu", "fp32")   # gelu in float32 under cuda autocast
    """
    table = lists_for(device_type)
    if table is None:
        raise ValueError(f"autocast has no op lists for device type {device_type!r} (it knows 'cuda' and 'cpu')")
    if policy is not None and policy not in POLICIES:
        raise ValueError(f"unknown autocast policy {policy!r}; expected one of {', '.join(POLICIES)} or None")
    for p in POLICIES:
        table[p].discard(op)
    if policy is not None:
        table[policy].add(op)
