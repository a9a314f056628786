"""Every torch submodule programs import exists as a module: torch.backends as a package (cudnn, cuda, mps, cpu,
mkldnn, openmp with PyTorch's spellings), torch.nn.modules.<file>.<Class> paths, torch.onnx, and the
torch.distributed names a program's surroundings use."""
import importlib

import pytest
import rawdev

# PyTorch's torch/nn/modules files and the classes each holds (those rawdev has; the rest are listed as missing in
# the file's docstring)
FILES = {
    "linear": ["Identity", "Linear", "Bilinear", "LazyLinear"],
    "conv": ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"],
    "activation": ["ReLU", "GELU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "MultiheadAttention", "PReLU"],
    "dropout": ["Dropout", "Dropout2d", "AlphaDropout"],
    "normalization": ["LayerNorm", "GroupNorm", "LocalResponseNorm"],
    "batchnorm": ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "_BatchNorm"],
    "instancenorm": ["InstanceNorm1d", "InstanceNorm2d"],
    "rnn": ["RNN", "LSTM", "GRU", "LSTMCell", "GRUCell", "RNNCell"],
    "sparse": ["Embedding", "EmbeddingBag"],
    "transformer": ["Transformer", "TransformerEncoder", "TransformerEncoderLayer", "TransformerDecoderLayer"],
    "container": ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"],
    "loss": ["CrossEntropyLoss", "MSELoss", "NLLLoss", "BCEWithLogitsLoss", "_Loss", "_WeightedLoss"],
    "pooling": ["MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d"],
    "padding": ["ZeroPad2d", "ReflectionPad2d"],
    "pixelshuffle": ["PixelShuffle"],
    "upsampling": ["Upsample"],
    "flatten": ["Flatten", "Unflatten"],
    "distance": ["CosineSimilarity", "PairwiseDistance"],
    "fold": ["Fold", "Unfold"],
    "channelshuffle": ["ChannelShuffle"],
    "module": ["Module"],
}


@pytest.mark.parametrize("file", sorted(FILES))
def test_nn_modules_files_hold_pytorchs_classes(file):
    mod = importlib.import_module(f"rawdev.nn.modules.{file}")
    for name in FILES[file]:
        assert getattr(mod, name) is getattr(rawdev.nn, name, None) or name.startswith("_"), (file, name)
        assert getattr(rawdev.nn.modules, name, getattr(mod, name)) is getattr(mod, name)


def test_issue_repro_nn_modules_dropout_path():
    assert rawdev.nn.modules.dropout.Dropout is rawdev.nn.Dropout
    from rawdev.nn.modules.utils import _pair, consume_prefix_in_state_dict_if_present
    assert _pair(3) == (3, 3) and _pair((1, 2)) == (1, 2)
    sd = {"module.w": 1, "b": 2}
    consume_prefix_in_state_dict_if_present(sd, "module.")
    assert sd == {"w": 1, "b": 2}


def test_backends_is_a_package_with_pytorchs_flags():
    import rawdev.backends.cudnn as cudnn
    old = cudnn.benchmark
    cudnn.benchmark = True
    try:
        assert rawdev.backends.cudnn.benchmark is True
    finally:
        cudnn.benchmark = old
    assert cudnn.is_available() is False and cudnn.version() is None and cudnn.enabled is True
    with cudnn.flags(enabled=False, deterministic=True):
        assert cudnn.enabled is False and cudnn.deterministic is True
    assert cudnn.enabled is True and cudnn.deterministic is False
    import rawdev.backends.cuda as bcuda
    assert bcuda.matmul is rawdev.flags.matmul and bcuda.matmul.allow_tf32 is False
    assert bcuda.is_built() is True and bcuda.flash_sdp_enabled() is True
    bcuda.enable_flash_sdp(False)
    assert bcuda.flash_sdp_enabled() is False
    bcuda.enable_flash_sdp(True)
    with bcuda.sdp_kernel(enable_math=False):
        assert bcuda.math_sdp_enabled() is False
    assert bcuda.math_sdp_enabled() is True
    assert bcuda.cufft_plan_cache.size == 0
    from rawdev.backends import cpu, mkldnn, mps, openmp
    assert mps.is_available() is False and mps.is_built() is False
    assert cpu.get_cpu_capability() in ("DEFAULT", "AVX2", "AVX512")
    assert mkldnn.is_available() is False and openmp.is_available() is False
    from rawdev.backends import mha, opt_einsum
    assert mha.get_fastpath_enabled() is True and opt_einsum.is_available() is False


def test_import_onnx():
    import rawdev.onnx
    assert callable(rawdev.onnx.export)
