"""optim.swa_utils: AveragedModel (SWA and EMA averages of a model's parameters), SWALR (the annealing schedule
to a constant SWA learning rate) and update_bn (BatchNorm statistics recomputed for the averaged weights), as
PyTorch's."""
import copy
import math

from ..autograd.grad_mode import no_grad
from ..nn.module import Module
from .lr_scheduler import LRScheduler

__all__ = ["AveragedModel", "SWALR", "update_bn", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn", "get_ema_avg_fn",
           "get_swa_avg_fn"]


def get_ema_avg_fn(decay=0.999):
    """avg_fn for an exponential moving average: decay·avg + (1 − decay)·param."""
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    """avg_fn for the running mean of the iterates."""
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


def get_ema_multi_avg_fn(decay=0.999):
    def ema_update(ema_param_list, current_param_list, _):
        for e, c in zip(ema_param_list, current_param_list):
            e.copy_(decay * e + (1 - decay) * c)
    return ema_update


def get_swa_multi_avg_fn():
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        n = float(num_averaged.item()) if hasattr(num_averaged, "item") else float(num_averaged)
        for a, c in zip(averaged_param_list, current_param_list):
            a.copy_(a + (c - a) / (n + 1))
    return swa_update


class AveragedModel(Module):
    """A copy of model whose parameters are the average of the model's over the update_parameters calls
    (running mean by default; avg_fn or multi_avg_fn for others, e.g. get_ema_multi_avg_fn). state_dict keys are
    PyTorch's: "n_averaged" and "module.<name>".

    Example:
        >>> swa_model = torch.optim.swa_utils.AveragedModel(model)
        >>> swa_model.update_parameters(model)
    """

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        from ..tensor.factory import tensor
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, device=device))
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model):
        """Fold model's current parameters (and buffers with use_buffers=True) into the average."""
        import itertools
        ours = (itertools.chain(self.module.parameters(), self.module.buffers()) if self.use_buffers
                else self.parameters())
        theirs = (itertools.chain(model.parameters(), model.buffers()) if self.use_buffers else model.parameters())
        ours = [p for p in ours if p is not self.n_averaged]
        pairs = [(a.detach(), c.detach().to(device=a.device)) for a, c in zip(ours, theirs)]
        n = int(self.n_averaged.item())
        with no_grad():
            if n == 0:
                for a, c in pairs:
                    a.copy_(c)
            elif self.multi_avg_fn is not None:
                self.multi_avg_fn([a for a, _ in pairs], [c for _, c in pairs], self.n_averaged.to(pairs[0][0].device))
            else:
                fn = self.avg_fn or get_swa_avg_fn()
                for a, c in pairs:
                    a.copy_(fn(a, c, self.n_averaged.to(a.device)))
        if not self.use_buffers:
            # buffers (BatchNorm statistics) are copied as they are; update_bn recomputes them for the average
            with no_grad():
                for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                    b_swa.copy_(b_model.detach().to(device=b_swa.device))
        self.n_averaged += 1


class SWALR(LRScheduler):
    """Anneal each group's lr to swa_lr over anneal_epochs ('cos' or 'linear'), then hold it.

    Example:
        >>> swa_scheduler = torch.optim.swa_utils.SWALR(optimizer, swa_lr=0.05)
    """

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        lrs = swa_lr if isinstance(swa_lr, (list, tuple)) else [swa_lr] * len(optimizer.param_groups)
        if len(lrs) != len(optimizer.param_groups):
            raise ValueError(f"swa_lr must have the same length as optimizer.param_groups: swa_lr has {len(lrs)}, "
                             f"optimizer.param_groups has {len(optimizer.param_groups)}")
        for lr, group in zip(lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError("anneal_strategy must by one of 'cos' or 'linear', instead got " + str(anneal_strategy))
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(self.optimizer.param_groups, prev_lrs)]


def update_bn(loader, model, device=None):
    """Recompute every BatchNorm's running statistics with one pass over loader (cumulative averages, as
    momentum=None), then restore the momenta. Batches may be tensors or (input, ...) tuples/lists."""
    from ..nn.layers.batchnorm import _BatchNorm
    momenta = {}
    for m in model.modules():
        if isinstance(m, _BatchNorm) and m.track_running_stats:
            m.reset_running_stats()
            momenta[m] = m.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for m in momenta:
        m.momentum = None
    with no_grad():
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
    for m, mom in momenta.items():
        m.momentum = mom
    model.train(was_training)
