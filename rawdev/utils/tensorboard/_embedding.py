"""The files add_embedding writes for TensorBoard's projector, laid out as PyTorch writes them: under
<log_dir>/<step, 5 digits>/<tag>/ the vectors (tensors.tsv), the labels (metadata.tsv) and the label images
(sprite.png), and projector_config.pbtxt in the log directory naming each embedding."""
import math
import os
from typing import Any

import numpy as np

from ._convert import make_grid, make_np


def make_tsv(metadata: list, save_path: str, metadata_header: Any = None) -> None:
    """Write metadata.tsv: one label per line, or a header line and tab-separated columns."""
    if not metadata_header:
        lines = [str(x) for x in metadata]
    else:
        if len(metadata_header) != len(metadata[0]):
            raise AssertionError("len of header must be equal to the number of columns in metadata")
        lines = ["\t".join(str(e) for e in row) for row in [metadata_header] + list(metadata)]
    with open(os.path.join(save_path, "metadata.tsv"), "wb") as f:
        f.write(("\n".join(lines) + "\n").encode("utf-8"))


def make_sprite(label_img: Any, save_path: str) -> None:
    """Write sprite.png: the N label images (values in [0, 1]) tiled into a square grid."""
    from .summary import _pil
    Image = _pil()
    imgs = make_np(label_img)
    nrow = int(math.ceil(imgs.shape[0] ** 0.5))
    grid_chw = make_grid(imgs, ncols=nrow)
    side = grid_chw.shape[2]
    square = np.zeros((side, side, 3))
    grid_hwc = grid_chw.transpose(1, 2, 0)
    square[:grid_hwc.shape[0], :, :] = grid_hwc
    Image.fromarray(np.uint8((square * 255).clip(0, 255))).save(os.path.join(save_path, "sprite.png"), format="PNG")


def make_mat(mat: np.ndarray, save_path: str) -> None:
    """Write tensors.tsv: one row of the matrix per line, values tab-separated."""
    with open(os.path.join(save_path, "tensors.tsv"), "wb") as f:
        for row in mat:
            f.write(("\t".join(str(v.item()) for v in row) + "\n").encode("utf-8"))


def embedding_info(metadata: Any, label_img: Any, subdir: str, global_step: int, tag: str) -> Any:
    """The projector's EmbeddingInfo naming this embedding's files (paths relative to the log directory)."""
    from tensorboard.plugins.projector.projector_config_pb2 import EmbeddingInfo
    info = EmbeddingInfo()
    info.tensor_name = f"{tag}:{str(global_step).zfill(5)}"
    info.tensor_path = subdir + "/tensors.tsv"
    if metadata is not None:
        info.metadata_path = subdir + "/metadata.tsv"
    if label_img is not None:
        shape = make_np(label_img).shape
        info.sprite.image_path = subdir + "/sprite.png"
        info.sprite.single_image_dim.extend([shape[3], shape[2]])
    return info


def write_pbtxt(log_dir: str, contents: str) -> None:
    """Write projector_config.pbtxt in the log directory."""
    with open(os.path.join(log_dir, "projector_config.pbtxt"), "wb") as f:
        f.write(contents.encode("utf-8"))
