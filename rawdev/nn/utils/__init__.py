"""rawdev.nn.utils: clip_grad_norm_ / clip_grad_value_ (and its two steps get_total_norm /
clip_grads_with_norm_), parameters_to_vector / vector_to_parameters, conv/linear + batch-norm fusion, skip_init, and
rnn (padding and packed sequences), parametrize / parametrizations (weight_norm, spectral_norm) and the hook forms
weight_norm / spectral_norm, at PyTorch's import paths."""
from . import clip_grad, convert_parameters, fusion, parametrizations, parametrize, prune, rnn
from .clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights
from .init import skip_init
from .parametrizations import old_spectral_norm as spectral_norm
from .parametrizations import old_weight_norm as weight_norm
from .parametrizations import remove_spectral_norm, remove_weight_norm

__all__ = ["clip_grad", "convert_parameters", "rnn", "clip_grad_norm", "clip_grad_norm_", "clip_grad_value_",
           "parameters_to_vector", "vector_to_parameters", "parametrize", "parametrizations", "weight_norm",
           "remove_weight_norm", "spectral_norm", "remove_spectral_norm", "prune", "get_total_norm",
           "clip_grads_with_norm_", "fusion", "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights", "skip_init"]
