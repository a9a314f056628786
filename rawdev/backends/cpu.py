"""torch.backends.cpu: the vector instruction set the cpu path uses (rawdev's cpu path is numpy, which picks its
own; the answer is read from numpy's build when it says, else PyTorch's "DEFAULT")."""
__all__ = ["get_cpu_capability"]


def get_cpu_capability() -> str:
    """'AVX512', 'AVX2' or 'DEFAULT', as PyTorch spells them."""
    import importlib
    feats: dict = {}
    for where in ("numpy._core._multiarray_umath", "numpy.core._multiarray_umath"):
        try:
            feats = getattr(importlib.import_module(where), "__cpu_features__", {})
            break
        except ImportError:
            continue
    if feats.get("AVX512F"):
        return "AVX512"
    return "AVX2" if feats.get("AVX2") else "DEFAULT"
