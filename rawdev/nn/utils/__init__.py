"""rawdev.nn.utils: clip_grad_norm_ / clip_grad_value_, parameters_to_vector / vector_to_parameters, and
rnn (padding and packed sequences), parametrize / parametrizations (weight_norm, spectral_norm) and the hook forms
weight_norm / spectral_norm, at PyTorch's import paths."""
from . import clip_grad, convert_parameters, parametrizations, parametrize, prune, rnn
from .clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .parametrizations import old_spectral_norm as spectral_norm
from .parametrizations import old_weight_norm as weight_norm
from .parametrizations import remove_spectral_norm, remove_weight_norm

__all__ = ["clip_grad", "convert_parameters", "rnn", "clip_grad_norm", "clip_grad_norm_", "clip_grad_value_",
           "parameters_to_vector", "vector_to_parameters", "parametrize", "parametrizations", "weight_norm",
           "remove_weight_norm", "spectral_norm", "remove_spectral_norm", "prune"]
