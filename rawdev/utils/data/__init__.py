"""rawdev.utils.data, shaped like torch.utils.data: datasets (dataset.py), samplers (sampler.py), the
DataLoader with real worker processes (dataloader.py, _worker.py), default_collate / default_convert, and
DeviceLoader (device_loader.py), which overlaps the host-to-device copy of the next batch with the current
batch's compute."""
from . import distributed  # noqa: F401  (torch.utils.data.distributed)
from ._collate import default_collate, default_convert
from ._worker import WorkerInfo, get_worker_info
from .dataloader import DataLoader
from .dataset import (
                      ChainDataset,
                      ConcatDataset,
                      Dataset,
                      IterableDataset,
                      StackDataset,
                      Subset,
                      TensorDataset,
                      random_split,
)
from .device_loader import DeviceLoader
from .sampler import (
                      BatchSampler,
                      DistributedSampler,
                      RandomSampler,
                      Sampler,
                      SequentialSampler,
                      SubsetRandomSampler,
                      WeightedRandomSampler,
)

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset", "ChainDataset", "Subset",
           "random_split", "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler", "DataLoader", "DeviceLoader", "default_collate",
           "default_convert", "get_worker_info", "WorkerInfo", "DistributedSampler"]
