"""GradScaler: dynamic loss scaling with PyTorch's algorithm, defaults and error wording (torch/amp/grad_scaler.py).

The scale (float32) and the growth tracker (int32) live on the device as 0-dim tensors, so scale(), unscale_()
and update() queue device work only; step() reads found_inf once per device (the one host sync) to decide
whether to run the optimizer's step.

unscale_ is PyTorch's _amp_foreach_non_finite_check_and_unscale_ composed of rawdev's kernels: the optimizer's
gradients are taken per device and dtype as the flat ranges clip_grad_norm_ uses (the gradients of parameters
that share an arena are one range), and per range one in-place multiply by 1/scale; per gradient one reduction
of x*0 (NaN exactly when it holds an inf or a NaN; a plain sum could overflow on large finite values) adds to
found_inf. update is _amp_update_scale_ as a few elementwise ops on the 0-dim tensors.
"""
from collections import abc, defaultdict
from enum import Enum

from .. import dtypes as _dt
from ..autograd.grad_mode import no_grad
from ..ops import where
from ..tensor.core import Tensor
from ..tensor.factory import full

__all__ = ["GradScaler", "OptState"]


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state():
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class _MultiDeviceReplicator:
    """Copies of a tensor per device, made on first request."""

    def __init__(self, master):
        self.master = master
        self._per_device_tensors = {}

    def get(self, device):
        t = self._per_device_tensors.get(device)
        if t is None:
            t = self._per_device_tensors[device] = self.master.to(device=device, non_blocking=True, copy=True)
        return t


def non_finite_check_and_unscale_(grads, found_inf, inv_scale):
    """Multiply every tensor in grads (one device) by inv_scale in place and set found_inf (0-dim float32) to 1.0
    if any holds an inf or a NaN (torch._amp_foreach_non_finite_check_and_unscale_).

    Args:
        grads: list of tensors on one device.
        found_inf: 0-dim float32 tensor on that device; written, never cleared.
        inv_scale: 0-dim float32 tensor on that device.

    Returns:
        None

    Example:
        >>> g = rawdev.tensor([1.0, float("inf")]); f = rawdev.zeros(())
        >>> rawdev.amp.grad_scaler.non_finite_check_and_unscale_([g], f, rawdev.tensor(0.5)); f.item()
        1.0
    """
    if not grads:
        return
    from ..nn.utils.clip_grad import _flat_groups
    with no_grad():
        total = None
        for parts in _flat_groups(grads).values():
            for flat, members in parts:
                flat.mul_(inv_scale if flat.dtype is _dt.float32 else inv_scale.to(dtype=flat.dtype))
                for g in members:       # per gradient: an arena's alignment gaps hold no gradient (poison)
                    probe = g.mul(0).sum(dtype=_dt.float32)     # NaN iff g holds an inf or a NaN
                    total = probe if total is None else total + probe
        found_inf.copy_(where(total != total, 1.0, found_inf))


class GradScaler:
    """torch.amp.GradScaler: scales the loss so float16 gradients do not underflow, unscales them before the
    optimizer step, skips the step when they hold an inf or a NaN, and adapts the scale (backoff on inf, growth
    after growth_interval clean steps).

    Args:
        device: "cuda" or "cpu" (the device type of the scale).
        init_scale: the first scale (2**16).
        growth_factor: scale multiplier after growth_interval steps without inf/NaN (2.0; must be > 1).
        backoff_factor: scale multiplier after a step with inf/NaN (0.5; must be < 1).
        growth_interval: consecutive clean steps before a growth (2000).
        enabled: False makes every method a pass-through (step just steps).

    Example:
        >>> model = rawdev.nn.Linear(4, 1); opt = rawdev.optim.SGD(model.parameters(), lr=0.1)
        >>> scaler = rawdev.amp.GradScaler("cpu")
        >>> scaler.scale(model(rawdev.randn(8, 4)).square().mean()).backward()
        >>> scaler.step(opt); scaler.update(); scaler.get_scale()
        65536.0
    """

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = device
        self._enabled = enabled
        if device == "cuda" and enabled:
            from ..runtime import is_available
            if not is_available():
                import warnings
                warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                              stacklevel=2)
                self._enabled = False
        if self._enabled:
            assert growth_factor > 1.0, "The growth factor must be > 1.0."
            assert backoff_factor < 1.0, "The backoff factor must be < 1.0."
            self._init_scale = init_scale
            self._scale = None                   # made on the first scale(), on the outputs' device
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        assert self._scale is not None, f"Attempted {funcname} but _scale is None.  " + fix
        assert self._growth_tracker is not None, f"Attempted {funcname} but _growth_tracker is None.  " + fix
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev):
        assert self._growth_tracker is None, "_growth_tracker initialized before _scale"
        self._scale = full((), self._init_scale, dtype=_dt.float32, device=dev)
        self._growth_tracker = full((), self._init_growth_tracker, dtype=_dt.int32, device=dev)

    def scale(self, outputs):
        """Multiply a tensor, or the tensors of a (nested) list/tuple/iterable, by the scale.

        Args:
            outputs: a Tensor or an iterable of them.

        Returns:
            The scaled outputs (the same container type for lists and tuples); outputs unchanged when disabled.

        Example:
            >>> rawdev.amp.GradScaler("cpu", init_scale=4.0).scale(rawdev.tensor(2.0)).item()
            8.0
        """
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(device=outputs.device, non_blocking=True)
        stash = []

        def apply_scale(val):
            if isinstance(val, Tensor):
                if not stash:
                    if self._scale is None:
                        self._lazy_init_scale_growth_tracker(val.device)
                    stash.append(_MultiDeviceReplicator(self._scale))
                return val * stash[0].get(val.device)
            if isinstance(val, abc.Iterable):
                iterable = map(apply_scale, val)
                if isinstance(val, (list, tuple)):
                    return type(val)(iterable)
                return iterable
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        per_device_inv_scale = _MultiDeviceReplicator(inv_scale)
        per_device_found_inf = _MultiDeviceReplicator(found_inf)
        grouped = defaultdict(lambda: defaultdict(list))
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if param.grad is None:
                        continue
                    if not allow_fp16 and param.grad.dtype is _dt.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    grouped[param.grad.device][param.grad.dtype].append(param.grad)
            for device, per_dtype in grouped.items():
                for grads in per_dtype.values():
                    non_finite_check_and_unscale_(grads, per_device_found_inf.get(device),
                                                  per_device_inv_scale.get(device))
        return per_device_found_inf._per_device_tensors

    def unscale_(self, optimizer):
        """Divide the optimizer's gradients by the scale in place (once per step), recording inf/NaN per device.
        Call it before clipping or inspecting gradients; step() calls it when you have not.

        Args:
            optimizer: the optimizer whose parameters' gradients are unscaled.

        Returns:
            None

        Example:
            >>> # scaler.scale(loss).backward(); scaler.unscale_(opt); clip_grad_norm_(...); scaler.step(opt)
        """
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        elif optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # PyTorch takes the reciprocal in float64; rawdev's cuda kernels have no float64 reciprocal, and for the
        # powers of two the scale holds unless update(new_scale) sets another value, float32's is exact too
        inv_scale = self._scale.reciprocal()
        found_inf = full((), 0.0, dtype=_dt.float32, device=self._scale.device)
        optimizer_state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, False)
        optimizer_state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer, optimizer_state, *args, **kwargs):
        if not sum(v.item() for v in optimizer_state["found_inf_per_device"].values()):
            return optimizer.step(*args, **kwargs)
        return None

    def step(self, optimizer, *args, **kwargs):
        """Unscale the gradients (unless unscale_ ran) and run optimizer.step(*args, **kwargs) if none holds an
        inf or a NaN; otherwise skip it.

        Args:
            optimizer: the optimizer to step.
            *args, **kwargs: passed to optimizer.step (a closure is refused, as PyTorch).

        Returns:
            optimizer.step's return value, or None when the step was skipped.

        Example:
            >>> # scaler.scale(loss).backward(); scaler.step(opt); scaler.update()
        """
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if optimizer_state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        assert len(optimizer_state["found_inf_per_device"]) > 0, "No inf checks were recorded for this optimizer."
        retval = self._maybe_opt_step(optimizer, optimizer_state, *args, **kwargs)
        optimizer_state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None):
        """Adapt the scale for the next iteration: times backoff_factor if any step this iteration saw inf/NaN,
        times growth_factor after growth_interval clean steps in a row; or set it to new_scale.

        Args:
            new_scale: a float or a 1-element tensor (requires_grad False), or None.

        Returns:
            None

        Example:
            >>> # after scaler.step(opt): scaler.update()
        """
        if not self._enabled:
            return
        _scale, _growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if not isinstance(new_scale, Tensor):
                self._scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                          "torch.FloatTensor with requires_grad=False.")
                assert new_scale.device.type == self._device, reason
                assert new_scale.numel() == 1, reason
                assert new_scale.requires_grad is False, reason
                self._scale.copy_(new_scale.reshape(()))
        else:
            found_infs = [found_inf.to(device=_scale.device, non_blocking=True)
                          for state in self._per_optimizer_states.values()
                          for found_inf in state["found_inf_per_device"].values()]
            assert len(found_infs) > 0, "No inf checks were recorded prior to update."
            found_inf_combined = found_infs[0]
            for extra in found_infs[1:]:
                found_inf_combined = found_inf_combined + extra
            self._update_scale(found_inf_combined)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _update_scale(self, found_inf):
        """torch._amp_update_scale_ on the device, without a host sync: backoff and reset the tracker on inf;
        otherwise count the step, and at growth_interval grow the scale (if the grown value is finite) and reset."""
        with no_grad():
            scale, tracker = self._scale, self._growth_tracker
            bad = found_inf > 0
            successful = tracker + 1
            grow = (successful == self._growth_interval) & ~bad
            grown = scale * self._growth_factor
            new_scale = where(bad, scale * self._backoff_factor, where(grow & grown.isfinite(), grown, scale))
            new_tracker = where(bad | grow, 0, successful)
            scale.copy_(new_scale)
            tracker.copy_(new_tracker)

    def get_scale(self):
        """The current scale as a Python float (a host sync); 1.0 when disabled.

        Returns:
            float

        Example:
            >>> rawdev.amp.GradScaler("cpu").get_scale()
            65536.0
        """
        if self._enabled:
            return self._init_scale if self._scale is None else float(self._scale.item())
        return 1.0

    def get_growth_factor(self):
        """The growth factor.

        Returns:
            float

        Example:
            >>> rawdev.amp.GradScaler("cpu").get_growth_factor()
            2.0
        """
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        """Set the growth factor.

        Args:
            new_factor: float.

        Returns:
            None

        Example:
            >>> rawdev.amp.GradScaler("cpu").set_growth_factor(4.0)
        """
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        """The backoff factor.

        Returns:
            float

        Example:
            >>> rawdev.amp.GradScaler("cpu").get_backoff_factor()
            0.5
        """
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        """Set the backoff factor.

        Args:
            new_factor: float.

        Returns:
            None

        Example:
            >>> rawdev.amp.GradScaler("cpu").set_backoff_factor(0.25)
        """
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        """The growth interval.

        Returns:
            int

        Example:
            >>> rawdev.amp.GradScaler("cpu").get_growth_interval()
            2000
        """
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        """Set the growth interval.

        Args:
            new_interval: int.

        Returns:
            None

        Example:
            >>> rawdev.amp.GradScaler("cpu").set_growth_interval(100)
        """
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if self._enabled:
            return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker.item())
        return 0

    def is_enabled(self):
        """Whether this scaler scales.

        Returns:
            bool

        Example:
            >>> rawdev.amp.GradScaler("cpu", enabled=False).is_enabled()
            False
        """
        return self._enabled

    def state_dict(self):
        """scale, growth_factor, backoff_factor, growth_interval and _growth_tracker ({} when disabled).

        Returns:
            dict of Python numbers

        Example:
            >>> sorted(rawdev.amp.GradScaler("cpu").state_dict())
            ['_growth_tracker', 'backoff_factor', 'growth_factor', 'growth_interval', 'scale']
        """
        if self._enabled:
            return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                    "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                    "_growth_tracker": self._get_growth_tracker()}
        return {}

    def load_state_dict(self, state_dict):
        """Restore what state_dict() returned (a no-op when disabled).

        Args:
            state_dict: a dict from state_dict().

        Returns:
            None

        Example:
            >>> s = rawdev.amp.GradScaler("cpu"); s.load_state_dict(rawdev.amp.GradScaler("cpu").state_dict())
        """
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])
