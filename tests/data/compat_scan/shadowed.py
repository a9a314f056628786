# torch.utils.data bound as `data`, then `data` reassigned: data.sort is a list's method, not torch's.
import torch.backends
from torch.utils import data

data = [3, 1, 2]  # noqa: F811  (the shadowing is the point)
data.sort(key=None)
x = torch.backends
