"""matplotlib figures as CHW uint8 images, for SummaryWriter.add_figure (matplotlib imported when used)."""
from typing import Any

import numpy as np


def figure_to_image(figures: Any, close: bool = True) -> np.ndarray:
    """Render a matplotlib figure (or a list of them) with the Agg backend.

    Args:
        figures: a Figure or a list of Figures.
        close: close each figure after rendering.

    Returns:
        numpy.ndarray: one 3 x H x W uint8 image, or N x 3 x H x W for a list.

    Example:
        >>> figure_to_image(fig).shape   # doctest: +SKIP
        (3, 480, 640)
    """
    import matplotlib.backends.backend_agg as agg
    import matplotlib.pyplot as plt

    def render(fig: Any) -> np.ndarray:
        canvas = agg.FigureCanvasAgg(fig)
        canvas.draw()
        rgba = np.frombuffer(canvas.buffer_rgba(), dtype=np.uint8)
        w, h = fig.canvas.get_width_height()
        chw = np.moveaxis(rgba.reshape([h, w, 4])[:, :, 0:3], source=2, destination=0)
        if close:
            plt.close(fig)
        return chw

    if isinstance(figures, list):
        return np.stack([render(f) for f in figures])
    return render(figures)
