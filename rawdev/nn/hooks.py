"""Module backward hooks (PyTorch's torch.utils.hooks.BackwardHook): register_full_backward_hook and
register_full_backward_pre_hook.

Module.__call__ passes the tensors going into forward, and those coming out, through an identity autograd
Function (BackwardHookFunctionBackward). When the gradients reach the outputs' identity node, the pre-hooks
see grad_output (and may replace it); when they reach the inputs' identity node, the hooks see
(grad_input, grad_output) and may replace grad_input. grad_input / grad_output have one entry per positional
argument / output (None where it is not a tensor or gets no gradient).
"""
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from ..tensor.core import Tensor

__all__ = ["BackwardHook"]


class BackwardHookFunction(Function):
    differentiable_backward = True     # an identity: its backward is the hooks' own (recorded) arithmetic

    @staticmethod
    def forward(ctx, callback, *tensors):
        ctx.callback = callback
        ctx.set_materialize_grads(False)
        fixed = [t for t in tensors if not t.requires_grad]
        ctx.mark_non_differentiable(*fixed)
        return tuple(t if not t.requires_grad else t.detach() for t in tensors)

    @staticmethod
    def backward(ctx, *grads):
        return (None,) + tuple(ctx.callback(grads))


def _pack_with_none(indices, values, size):
    res = [None] * size
    for i, v in zip(indices, values):
        res[i] = v
    return tuple(res)


class BackwardHook:
    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module, self.user_hooks, self.user_pre_hooks = module, user_hooks, user_pre_hooks
        self.grad_outputs = None
        self.n_inputs = self.n_outputs = -1
        self.input_tensors_index = self.output_tensors_index = None

    @staticmethod
    def _apply_on_tensors(fn, args):
        idx = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tensors = [args[i] for i in idx]
        if not (is_grad_enabled() and any(t.requires_grad for t in tensors)):
            return args, None
        new = BackwardHookFunction.apply(fn, *tensors)
        res = list(args)
        for i, t in zip(idx, new):
            res[i] = t
        return tuple(res), idx

    def setup_input_hook(self, args):
        def fn(grads):
            return self._input_hook(grads)
        self.n_inputs = len(args)
        res, self.input_tensors_index = self._apply_on_tensors(fn, args)
        return res

    def _input_hook(self, grads):
        if not self.user_hooks:
            self.grad_outputs = None
            return grads
        grad_input = _pack_with_none(self.input_tensors_index, grads, self.n_inputs)
        for hook in self.user_hooks:
            res = hook(self.module, grad_input, self.grad_outputs)
            if res is None:
                continue
            if not isinstance(res, (tuple, list)):
                res = (res,)
            if len(res) != len(grad_input):
                raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got {len(res)}, but "
                                   f"expected {len(grad_input)}")
            grad_input = tuple(res)
        self.grad_outputs = None
        return tuple(grad_input[i] for i in self.input_tensors_index)

    def setup_output_hook(self, result):
        is_tuple = isinstance(result, tuple)
        outs = result if is_tuple else (result,)

        def fn(grads):
            grad_output = _pack_with_none(self.output_tensors_index, grads, self.n_outputs)
            for hook in self.user_pre_hooks:
                res = hook(self.module, grad_output)
                if res is None:
                    continue
                if not isinstance(res, (tuple, list)):
                    res = (res,)
                if len(res) != len(grad_output):
                    raise RuntimeError(f"Backward pre hook returned an invalid number of grad_output, got "
                                       f"{len(res)}, but expected {len(grad_output)}")
                grad_output = tuple(res)
            self.grad_outputs = grad_output
            if self.input_tensors_index is None:     # no input needs a gradient: the hooks run now
                grad_inputs = _pack_with_none([], [], self.n_inputs)
                for hook in self.user_hooks:
                    res = hook(self.module, grad_inputs, self.grad_outputs)
                    if res is not None and not (isinstance(res, tuple) and all(el is None for el in res)):
                        raise RuntimeError("Backward hook for Modules where no input requires gradient should "
                                           "always return None or None for all gradients.")
                self.grad_outputs = None
            return tuple(grad_output[i] for i in self.output_tensors_index)

        self.n_outputs = len(outs)
        res, self.output_tensors_index = self._apply_on_tensors(fn, outs)
        return res if is_tuple else res[0]
