"""`torch.utils.model_zoo`: load_url, the older name of rawdev.hub.load_state_dict_from_url (a checkpoint
downloaded into the hub cache once, then loaded with rawdev.load).

Example:
    >>> sd = rawdev.utils.model_zoo.load_url("https://example.com/vgg16-397923af.pth")   # doctest: +SKIP
"""
from ..hub import (
    _download_url_to_file,  # noqa: F401  (older PyTorch programs import it from here)
    load_state_dict_from_url,
)

load_url = load_state_dict_from_url

__all__ = ["load_url"]
