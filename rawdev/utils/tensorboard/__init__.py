"""`torch.utils.tensorboard`: SummaryWriter, which writes TensorBoard event files (scalars, histograms,
images, text, hyperparameters, PR curves, audio, embeddings) with the tensorboard package's protos and event
file writer. The package is an optional extra (`pip install rawdev[tensorboard]`): this module imports
without it, and building a writer without it raises ImportError saying how to install it.

Example:
    >>> from rawdev.utils.tensorboard import SummaryWriter
    >>> with SummaryWriter("runs/exp1") as w:   # doctest: +SKIP
    ...     w.add_scalar("loss", 0.25, 1)
"""
from . import summary, writer
from .writer import FileWriter, SummaryWriter

__all__ = ["FileWriter", "SummaryWriter", "summary", "writer"]
