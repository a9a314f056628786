"""`torch.utils.tensorboard.summary`: the TensorBoard `Summary` protobufs SummaryWriter writes — scalars,
histograms, images, text, hyperparameters, custom-scalar layouts, precision-recall curves and audio — built
with the tensorboard package's own protos (imported when a function runs: the package is optional)."""
import io
from typing import Any

import numpy as np

from ._convert import convert_to_HWC, make_np
from ._require import require_tensorboard

__all__ = ["scalar", "histogram_raw", "histogram", "make_histogram", "image", "make_image", "text", "hparams",
           "custom_scalars", "pr_curve", "pr_curve_raw", "compute_curve", "audio"]


def _protos() -> Any:
    require_tensorboard()
    from tensorboard.compat.proto import summary_pb2
    return summary_pb2


def scalar(name: str, tensor: Any, collections: Any = None, new_style: bool = False,
           double_precision: bool = False) -> Any:
    """A Summary holding one scalar value.

    Args:
        name: the tag.
        tensor: one number (a rawdev tensor of one element, a numpy value or a Python number).
        collections: unused (PyTorch's signature).
        new_style: store it in the tensor field (plugin "scalars") rather than simple_value.
        double_precision: with new_style, store a DT_DOUBLE rather than a DT_FLOAT.

    Returns:
        tensorboard.compat.proto.summary_pb2.Summary.

    Example:
        >>> scalar("loss", 0.5)   # doctest: +SKIP
    """
    pb = _protos()
    from tensorboard.compat.proto.tensor_pb2 import TensorProto
    arr = make_np(tensor).squeeze()
    if arr.ndim != 0:
        raise AssertionError(f"Tensor should contain one element (0 dimensions). Was given size: {arr.size} and "
                             f"{arr.ndim} dimensions.")
    value = float(arr)
    if not new_style:
        return pb.Summary(value=[pb.Summary.Value(tag=name, simple_value=value)])
    proto = (TensorProto(double_val=[value], dtype="DT_DOUBLE") if double_precision
             else TensorProto(float_val=[value], dtype="DT_FLOAT"))
    meta = pb.SummaryMetadata(plugin_data=pb.SummaryMetadata.PluginData(plugin_name="scalars"))
    return pb.Summary(value=[pb.Summary.Value(tag=name, tensor=proto, metadata=meta)])


def histogram_raw(name: str, min: Any, max: Any, num: Any, sum: Any, sum_squares: Any, bucket_limits: Any,
                  bucket_counts: Any) -> Any:
    """A Summary holding a histogram given by its statistics and buckets.

    Args:
        name: the tag.
        min: smallest value.
        max: largest value.
        num: number of values.
        sum: sum of the values.
        sum_squares: sum of their squares.
        bucket_limits: upper limit of each bucket.
        bucket_counts: count in each bucket.

    Returns:
        tensorboard.compat.proto.summary_pb2.Summary.

    Example:
        >>> histogram_raw("h", 0, 1, 2, 1, 1, [0.5, 1.0], [1, 1])   # doctest: +SKIP
    """
    pb = _protos()
    hist = pb.HistogramProto(min=min, max=max, num=num, sum=sum, sum_squares=sum_squares,
                             bucket_limit=list(bucket_limits), bucket=list(bucket_counts))
    return pb.Summary(value=[pb.Summary.Value(tag=name, histo=hist)])


def histogram(name: str, values: Any, bins: Any, max_bins: Any = None) -> Any:
    """A Summary holding the histogram of values (numpy.histogram's bins: a count, edges or a rule name).

    Args:
        name: the tag.
        values: any-shaped numbers (rawdev tensor, numpy array).
        bins: as numpy.histogram takes it.
        max_bins: merge neighbouring buckets until there are at most this many.

    Returns:
        tensorboard.compat.proto.summary_pb2.Summary.

    Example:
        >>> histogram("w", np.arange(10.0), bins=5)   # doctest: +SKIP
    """
    pb = _protos()
    hist = make_histogram(make_np(values).astype(float), bins, max_bins)
    return pb.Summary(value=[pb.Summary.Value(tag=name, histo=hist)])


def make_histogram(values: np.ndarray, bins: Any, max_bins: Any = None) -> Any:
    """The HistogramProto of values: numpy.histogram's buckets trimmed to the range holding values, with one
    empty bucket kept on the left (TensorBoard records only right limits).

    Args:
        values: float64 array.
        bins: as numpy.histogram takes it.
        max_bins: merge neighbouring buckets until there are at most this many.

    Returns:
        tensorboard.compat.proto.summary_pb2.HistogramProto.

    Example:
        >>> make_histogram(np.arange(4.0), bins=2)   # doctest: +SKIP
    """
    pb = _protos()
    if values.size == 0:
        raise ValueError("The input has no element.")
    values = values.reshape(-1)
    counts, limits = np.histogram(values, bins=bins)
    num_bins = len(counts)
    if max_bins is not None and num_bins > max_bins:
        group = num_bins // max_bins
        # PyTorch's padding rule, kept as it is so the files match: pad when num_bins % group is not 0
        rem = num_bins % group
        if rem != 0:
            counts = np.pad(counts, pad_width=[[0, group - rem]], mode="constant", constant_values=0)
        counts = counts.reshape(-1, group).sum(axis=-1)
        merged = np.empty((counts.size + 1,), limits.dtype)
        merged[:-1] = limits[:-1:group]
        merged[-1] = limits[-1]
        limits = merged
    nonzero_so_far = np.cumsum(np.greater(counts, 0))
    start, end = np.searchsorted(nonzero_so_far, [0, nonzero_so_far[-1] - 1], side="right")
    start, end = int(start), int(end) + 1
    counts = counts[start - 1:end] if start > 0 else np.concatenate([[0], counts[:end]])
    limits = limits[start:end + 1]
    if counts.size == 0 or limits.size == 0:
        raise ValueError("The histogram is empty, please file a bug report.")
    return pb.HistogramProto(min=values.min(), max=values.max(), num=len(values), sum=values.sum(),
                             sum_squares=values.dot(values), bucket_limit=limits.tolist(), bucket=counts.tolist())


def _scale_factor(arr: np.ndarray) -> int:
    return 1 if arr.dtype == np.uint8 else 255


def image(tag: str, tensor: Any, rescale: float = 1, dataformats: str = "NCHW") -> Any:
    """A Summary holding one PNG image: uint8 values as they are, other dtypes taken as [0, 1] and scaled by
    255, clipped to [0, 255]; a batch is tiled into a grid.

    Args:
        tag: the tag.
        tensor: the image (rawdev tensor or numpy array) in `dataformats` layout.
        rescale: resize factor.
        dataformats: NCHW, NHWC, CHW, HWC, HW, ... one letter per dimension.

    Returns:
        tensorboard.compat.proto.summary_pb2.Summary.

    Example:
        >>> image("img", np.zeros((3, 8, 8)), dataformats="CHW")   # doctest: +SKIP
    """
    pb = _protos()
    arr = convert_to_HWC(make_np(tensor), dataformats)
    arr = (arr.astype(np.float32) * _scale_factor(arr)).clip(0, 255).astype(np.uint8)
    return pb.Summary(value=[pb.Summary.Value(tag=tag, image=make_image(arr, rescale=rescale))])


def _pil() -> Any:
    try:
        from PIL import Image
    except ImportError as e:
        raise NotImplementedError("add_image and add_figure encode PNG with Pillow, which is not installed "
                                  "(the tensorboard package normally brings it: pip install pillow)") from e
    return Image


def make_image(tensor: np.ndarray, rescale: float = 1) -> Any:
    """A Summary.Image of an H x W x C uint8 array, encoded as PNG with Pillow.

    Args:
        tensor: H x W x C uint8 array.
        rescale: resize factor.

    Returns:
        tensorboard.compat.proto.summary_pb2.Summary.Image.

    Example:
        >>> make_image(np.zeros((4, 4, 3), np.uint8))   # doctest: +SKIP
    """
    pb = _protos()
    Image = _pil()
    height, width, channel = tensor.shape
    img = Image.fromarray(tensor)
    img = img.resize((int(width * rescale), int(height * rescale)), Image.Resampling.LANCZOS)
    with io.BytesIO() as out:
        img.save(out, format="PNG")
        encoded = out.getvalue()
    return pb.Summary.Image(height=height, width=width, colorspace=channel, encoded_image_string=encoded)


def text(tag: str, text: str) -> Any:
    """A Summary holding a string for TensorBoard's text plugin (tag `<tag>/text_summary`).

    Args:
        tag: the tag.
        text: the string (markdown).

    Returns:
        tensorboard.compat.proto.summary_pb2.Summary.

    Example:
        >>> text("notes", "hello")   # doctest: +SKIP
    """
    pb = _protos()
    from tensorboard.compat.proto.tensor_pb2 import TensorProto
    from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
    from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData
    meta = pb.SummaryMetadata(plugin_data=pb.SummaryMetadata.PluginData(
        plugin_name="text", content=TextPluginData(version=0).SerializeToString()))
    proto = TensorProto(dtype="DT_STRING", string_val=[text.encode(encoding="utf_8")],
                        tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    return pb.Summary(value=[pb.Summary.Value(tag=tag + "/text_summary", metadata=meta, tensor=proto)])


def _hparam_entry(k: str, v: Any, discrete: dict, ssi: Any, struct_pb2: Any, info: Any, data_type: Any) -> Any:
    """Record one hyperparameter in SessionStartInfo and return its HParamInfo (PyTorch's order of checks:
    a bool is an int first, so it is stored as a number)."""
    from ...tensor import Tensor
    if isinstance(v, (int, float)):
        ssi.hparams[k].number_value = v
        domain = (struct_pb2.ListValue(values=[struct_pb2.Value(number_value=d) for d in discrete[k]])
                  if k in discrete else None)
        return info(name=k, type=data_type.Value("DATA_TYPE_FLOAT64"), domain_discrete=domain)
    if isinstance(v, str):
        ssi.hparams[k].string_value = v
        domain = (struct_pb2.ListValue(values=[struct_pb2.Value(string_value=d) for d in discrete[k]])
                  if k in discrete else None)
        return info(name=k, type=data_type.Value("DATA_TYPE_STRING"), domain_discrete=domain)
    if isinstance(v, Tensor):
        ssi.hparams[k].number_value = make_np(v).reshape(-1)[0]
        return info(name=k, type=data_type.Value("DATA_TYPE_FLOAT64"))
    raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")


def hparams(hparam_dict: Any = None, metric_dict: Any = None, hparam_domain_discrete: Any = None) -> Any:
    """The three Summaries TensorBoard's hparams plugin reads: the experiment (hyperparameter and metric names),
    the session start (the values) and the session end (success).

    Args:
        hparam_dict: name -> value (int, float, str, bool or a one-element tensor; None entries are skipped).
        metric_dict: name -> value of the metrics (their names go into the experiment).
        hparam_domain_discrete: name -> list of the values that hyperparameter can take.

    Returns:
        (experiment, session_start_info, session_end_info) Summaries.

    Example:
        >>> exp, ssi, sei = hparams({"lr": 0.1}, {"hparam/loss": 1.0})   # doctest: +SKIP
    """
    pb = _protos()
    from google.protobuf import struct_pb2
    from tensorboard.plugins.hparams import metadata as hp_meta
    from tensorboard.plugins.hparams.api_pb2 import DataType, Experiment, HParamInfo, MetricInfo, MetricName, Status
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData, SessionEndInfo, SessionStartInfo
    if not isinstance(hparam_dict, dict):
        raise TypeError("parameter: hparam_dict should be a dictionary, nothing logged.")
    if not isinstance(metric_dict, dict):
        raise TypeError("parameter: metric_dict should be a dictionary, nothing logged.")
    discrete = hparam_domain_discrete or {}
    if not isinstance(discrete, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing logged.")
    for k, v in discrete.items():
        if k not in hparam_dict or not isinstance(v, list) or not all(isinstance(d, type(hparam_dict[k]))
                                                                      for d in v):
            raise TypeError(f"parameter: hparam_domain_discrete[{k}] should be a list of same type as "
                            f"hparam_dict[{k}].")
    version = hp_meta.PLUGIN_DATA_VERSION
    ssi = SessionStartInfo()
    infos = [_hparam_entry(k, v, discrete, ssi, struct_pb2, HParamInfo, DataType)
             for k, v in hparam_dict.items() if v is not None]

    def wrap(tag: str, content: Any) -> Any:
        meta = pb.SummaryMetadata(plugin_data=pb.SummaryMetadata.PluginData(
            plugin_name=hp_meta.PLUGIN_NAME, content=content.SerializeToString()))
        return pb.Summary(value=[pb.Summary.Value(tag=tag, metadata=meta)])

    start = wrap(hp_meta.SESSION_START_INFO_TAG, HParamsPluginData(session_start_info=ssi, version=version))
    exp = Experiment(hparam_infos=infos, metric_infos=[MetricInfo(name=MetricName(tag=k)) for k in metric_dict])
    experiment = wrap(hp_meta.EXPERIMENT_TAG, HParamsPluginData(experiment=exp, version=version))
    end = wrap(hp_meta.SESSION_END_INFO_TAG, HParamsPluginData(
        session_end_info=SessionEndInfo(status=Status.Value("STATUS_SUCCESS")), version=version))
    return experiment, start, end


def custom_scalars(layout: dict) -> Any:
    """A Summary holding a custom-scalars layout: {category: {chart: ["Multiline" | "Margin", tags]}}.

    Args:
        layout: the layout; a Margin chart names exactly 3 tags (value, lower, upper).

    Returns:
        tensorboard.compat.proto.summary_pb2.Summary.

    Example:
        >>> custom_scalars({"loss": {"both": ["Multiline", ["train", "val"]]}})   # doctest: +SKIP
    """
    pb = _protos()
    from tensorboard.compat.proto.tensor_pb2 import TensorProto
    from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
    from tensorboard.plugins.custom_scalar import layout_pb2
    categories = []
    for category, charts_of in layout.items():
        charts = []
        for title, (kind, tags) in charts_of.items():
            if kind == "Margin":
                if len(tags) != 3:
                    raise AssertionError("len(tags) != 3")
                content = layout_pb2.MarginChartContent(series=[layout_pb2.MarginChartContent.Series(
                    value=tags[0], lower=tags[1], upper=tags[2])])
                charts.append(layout_pb2.Chart(title=title, margin=content))
            else:
                charts.append(layout_pb2.Chart(title=title, multiline=layout_pb2.MultilineChartContent(tag=tags)))
        categories.append(layout_pb2.Category(title=category, chart=charts))
    proto = TensorProto(dtype="DT_STRING", string_val=[layout_pb2.Layout(category=categories).SerializeToString()],
                        tensor_shape=TensorShapeProto())
    meta = pb.SummaryMetadata(plugin_data=pb.SummaryMetadata.PluginData(plugin_name="custom_scalars"))
    return pb.Summary(value=[pb.Summary.Value(tag="custom_scalars__config__", tensor=proto, metadata=meta)])


def compute_curve(labels: np.ndarray, predictions: np.ndarray, num_thresholds: Any = None,
                  weights: Any = None) -> np.ndarray:
    """The 6 x num_thresholds precision-recall table (tp, fp, tn, fn, precision, recall) of binary labels
    against predicted probabilities in [0, 1].

    Args:
        labels: 0/1 array.
        predictions: probabilities, same shape.
        num_thresholds: number of thresholds.
        weights: optional weight of each element.

    Returns:
        numpy.ndarray of shape (6, num_thresholds).

    Example:
        >>> compute_curve(np.array([0, 1]), np.array([0.2, 0.9]), num_thresholds=3).shape
        (6, 3)
    """
    tiny = 1e-7
    w = 1.0 if weights is None else weights
    bucket = np.int32(np.floor(predictions * (num_thresholds - 1)))
    lab = labels.astype(np.float64)
    span = (0, num_thresholds - 1)
    tp_b, _ = np.histogram(bucket, bins=num_thresholds, range=span, weights=lab * w)
    fp_b, _ = np.histogram(bucket, bins=num_thresholds, range=span, weights=(1.0 - lab) * w)
    tp = np.cumsum(tp_b[::-1])[::-1]
    fp = np.cumsum(fp_b[::-1])[::-1]
    tn = fp[0] - fp
    fn = tp[0] - tp
    return np.stack((tp, fp, tn, fn, tp / np.maximum(tiny, tp + fp), tp / np.maximum(tiny, tp + fn)))


def _pr_summary(tag: str, data: np.ndarray, num_thresholds: int) -> Any:
    pb = _protos()
    from tensorboard.compat.proto.tensor_pb2 import TensorProto
    from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
    from tensorboard.plugins.pr_curve.plugin_data_pb2 import PrCurvePluginData
    meta = pb.SummaryMetadata(plugin_data=pb.SummaryMetadata.PluginData(
        plugin_name="pr_curves",
        content=PrCurvePluginData(version=0, num_thresholds=num_thresholds).SerializeToString()))
    proto = TensorProto(dtype="DT_FLOAT", float_val=data.reshape(-1).tolist(), tensor_shape=TensorShapeProto(
        dim=[TensorShapeProto.Dim(size=data.shape[0]), TensorShapeProto.Dim(size=data.shape[1])]))
    return pb.Summary(value=[pb.Summary.Value(tag=tag, metadata=meta, tensor=proto)])


def pr_curve(tag: str, labels: Any, predictions: Any, num_thresholds: int = 127, weights: Any = None) -> Any:
    """A Summary holding a precision-recall curve (at most 127 thresholds, as PyTorch).

    Args:
        tag: the tag.
        labels: 0/1 ground truth.
        predictions: probabilities in [0, 1].
        num_thresholds: number of thresholds (capped at 127).
        weights: optional weight of each element.

    Returns:
        tensorboard.compat.proto.summary_pb2.Summary.

    Example:
        >>> pr_curve("pr", np.array([0, 1]), np.array([0.2, 0.9]))   # doctest: +SKIP
    """
    num_thresholds = min(num_thresholds, 127)
    data = compute_curve(make_np(labels), make_np(predictions), num_thresholds=num_thresholds, weights=weights)
    return _pr_summary(tag, data, num_thresholds)


def pr_curve_raw(tag: str, tp: Any, fp: Any, tn: Any, fn: Any, precision: Any, recall: Any,
                 num_thresholds: int = 127, weights: Any = None) -> Any:
    """A Summary holding a precision-recall curve given by its six rows.

    Args:
        tag: the tag.
        tp: true positive counts.
        fp: false positive counts.
        tn: true negative counts.
        fn: false negative counts.
        precision: precision per threshold.
        recall: recall per threshold.
        num_thresholds: number of thresholds (capped at 127).
        weights: unused (PyTorch's signature).

    Returns:
        tensorboard.compat.proto.summary_pb2.Summary.

    Example:
        >>> pr_curve_raw("pr", [1], [0], [0], [0], [1.0], [1.0], 1)   # doctest: +SKIP
    """
    num_thresholds = min(num_thresholds, 127)
    rows = [make_np(r) if not isinstance(r, (list, tuple)) else np.asarray(r) for r in (tp, fp, tn, fn, precision,
                                                                                        recall)]
    return _pr_summary(tag, np.stack(rows), num_thresholds)


def audio(tag: str, tensor: Any, sample_rate: int = 44100) -> Any:
    """A Summary holding mono audio as a 16-bit WAV (values in [-1, 1]; louder ones are clipped).

    Args:
        tag: the tag.
        tensor: 1-D samples (or shape (1, L)).
        sample_rate: samples per second.

    Returns:
        tensorboard.compat.proto.summary_pb2.Summary.

    Example:
        >>> audio("a", np.zeros(100))   # doctest: +SKIP
    """
    import wave
    pb = _protos()
    arr = make_np(tensor).squeeze()
    if abs(arr).max() > 1:
        print("warning: audio amplitude out of range, auto clipped.")
        arr = arr.clip(-1, 1)
    if arr.ndim != 1:
        raise AssertionError("input tensor should be 1 dimensional.")
    pcm = (arr * np.iinfo(np.int16).max).astype("<i2")
    with io.BytesIO() as fio:
        with wave.open(fio, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(sample_rate)
            w.writeframes(pcm.tobytes())
        encoded = fio.getvalue()
    clip = pb.Summary.Audio(sample_rate=sample_rate, num_channels=1, length_frames=pcm.shape[-1],
                            encoded_audio_string=encoded, content_type="audio/wav")
    return pb.Summary(value=[pb.Summary.Value(tag=tag, audio=clip)])
