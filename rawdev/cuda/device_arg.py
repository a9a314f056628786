"""A torch.cuda function's `device` argument (None, an index, "cuda:1", a rawdev.device) resolved to the runtime's
Device. Its own module so that rawdev.cuda's submodules (memory, streams, graphs) can use it without importing
the package that imports them."""


def _dev(device=None):
    from ..device import current_cuda_index
    from ..runtime import get_device
    if device is None:
        return get_device(current_cuda_index())
    if isinstance(device, int):
        return get_device(device)
    if isinstance(device, str):        # before getattr: a str has an .index (the method)
        index = int(device.split(":")[1]) if ":" in device else current_cuda_index()
    else:
        index = getattr(device, "index", None)
    return get_device(index or 0)
