"""Process-wide switches that kernels read, kept at the bottom of the import layers so any layer may read them.
`rawdev.backends` (torch.backends' shape) exposes them to users: `rawdev.backends.cuda.matmul.allow_tf32` is
`flags.matmul.allow_tf32`, the same object."""
import types

__all__ = ["Flags", "matmul"]


class Flags(types.SimpleNamespace):
    def __repr__(self):
        return f"<rawdev.backends flags {vars(self)}>"


# allow_tf32: float32 GEMMs may use TF32 tensor cores (sm_80+); False by default, as PyTorch
matmul = Flags(allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
               allow_bf16_reduced_precision_reduction=True)
