"""torch.backends.cpu: the vector instruction set the cpu path uses (rawdev's cpu path is numpy, which picks its
own; the answer is read from numpy's build when it says, else PyTorch's "DEFAULT")."""
__all__ = ["get_cpu_capability"]


def get_cpu_capability() -> str:
    """'AVX512', 'AVX2' or 'DEFAULT', as PyTorch spells them."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as feats
    except ImportError:
        try:
            from numpy.core._multiarray_umath import __cpu_features__ as feats
        except ImportError:
            return "DEFAULT"
    if feats.get("AVX512F"):
        return "AVX512"
    return "AVX2" if feats.get("AVX2") else "DEFAULT"
