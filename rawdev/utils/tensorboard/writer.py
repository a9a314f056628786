"""`torch.utils.tensorboard.writer`: SummaryWriter and FileWriter, which write TensorBoard event files with
the tensorboard package's EventFileWriter (its protos and record format; nothing here writes records itself).
The package is optional: importing this module works without it, building a writer raises ImportError."""
import os
import time
from typing import Any

from . import summary as _summary
from ._convert import make_np
from ._require import require_tensorboard

__all__ = ["FileWriter", "SummaryWriter"]


def _default_bins() -> list:
    """TensorBoard's default histogram buckets: +-1e-12 growing by 10% to 1e20, and 0."""
    v, pos = 1e-12, []
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    return [-b for b in reversed(pos)] + [0] + pos


class FileWriter:
    """Writes Event protobufs to one event file in log_dir (through tensorboard's EventFileWriter, which
    queues them and flushes from a thread).

    Args:
        log_dir: directory of the event file (made if missing).
        max_queue: events queued before an add forces a flush.
        flush_secs: how often the queue is flushed, in seconds.
        filename_suffix: added to the event file's name.

    Example:
        >>> fw = FileWriter("runs/exp")   # doctest: +SKIP
    """

    def __init__(self, log_dir: Any, max_queue: int = 10, flush_secs: int = 120, filename_suffix: str = "") -> None:
        require_tensorboard()
        from tensorboard.summary.writer.event_file_writer import EventFileWriter
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs, filename_suffix)

    def get_logdir(self) -> str:
        """Return the directory the event file is written in."""
        return self.event_writer.get_logdir()

    def add_event(self, event: Any, step: Any = None, walltime: Any = None) -> None:
        """Add an Event protobuf, stamped with walltime (now by default) and step (as an int) when given.

        Args:
            event: tensorboard.compat.proto.event_pb2.Event.
            step: global step.
            walltime: seconds since the epoch.
        """
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary: Any, global_step: Any = None, walltime: Any = None) -> None:
        """Add a Summary protobuf, wrapped in an Event.

        Args:
            summary: tensorboard.compat.proto.summary_pb2.Summary.
            global_step: global step.
            walltime: seconds since the epoch.
        """
        from tensorboard.compat.proto import event_pb2
        self.add_event(event_pb2.Event(summary=summary), global_step, walltime)

    def add_graph(self, graph_profile: Any, walltime: Any = None) -> None:
        """Add a (GraphDef, RunMetadata) pair: the graph, then its step stats tagged "step1".

        Args:
            graph_profile: (tensorboard GraphDef, tensorboard RunMetadata).
            walltime: seconds since the epoch.
        """
        from tensorboard.compat.proto import event_pb2
        graph_def, stats = graph_profile
        self.add_event(event_pb2.Event(graph_def=graph_def.SerializeToString()), None, walltime)
        tagged = event_pb2.TaggedRunMetadata(tag="step1", run_metadata=stats.SerializeToString())
        self.add_event(event_pb2.Event(tagged_run_metadata=tagged), None, walltime)

    def flush(self) -> None:
        """Write the queued events to disk."""
        self.event_writer.flush()

    def close(self) -> None:
        """Flush and close the event file."""
        self.event_writer.close()


class SummaryWriter:
    """`torch.utils.tensorboard.SummaryWriter`: logs scalars, histograms, images, text, hyperparameters,
    precision-recall curves, audio and embeddings to TensorBoard event files in log_dir.

    Values may be rawdev tensors (cpu or cuda), numpy arrays or Python numbers.

    Args:
        log_dir: the run's directory; default runs/<Mon DD_HH-MM-SS>_<hostname><comment>.
        comment: suffix of the default log_dir (unused when log_dir is given).
        purge_step: after a crash, the step the run resumes at: TensorBoard hides the events logged at this
            step or later by the earlier run.
        max_queue: events queued before an add forces a flush.
        flush_secs: how often pending events are flushed, in seconds.
        filename_suffix: added to every event file's name.

    Example:
        >>> with SummaryWriter("runs/exp1") as w:   # doctest: +SKIP
        ...     for step in range(100):
        ...         w.add_scalar("loss", 1.0 / (step + 1), step)
    """

    def __init__(self, log_dir: Any = None, comment: str = "", purge_step: Any = None, max_queue: int = 10,
                 flush_secs: int = 120, filename_suffix: str = "") -> None:
        require_tensorboard()
        if not log_dir:
            import socket
            from datetime import datetime
            log_dir = os.path.join("runs", datetime.now().strftime("%b%d_%H-%M-%S") + "_" + socket.gethostname()
                                   + comment)
        self.log_dir = log_dir
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer: Any = None
        self.all_writers: Any = None
        self._get_file_writer()
        self.default_bins = _default_bins()

    def _get_file_writer(self) -> FileWriter:
        """The main FileWriter, made again after close (a new event file in the same directory)."""
        if self.all_writers is None or self.file_writer is None:
            from tensorboard.compat.proto.event_pb2 import Event, SessionLog
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs, self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                step = self.purge_step
                self.file_writer.add_event(Event(step=step, file_version="brain.Event:2"))
                self.file_writer.add_event(Event(step=step, session_log=SessionLog(status=SessionLog.START)))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self) -> str:
        """Return the directory event files are written in."""
        return self.log_dir

    def add_scalar(self, tag: str, scalar_value: Any, global_step: Any = None, walltime: Any = None,
                   new_style: bool = False, double_precision: bool = False) -> None:
        """Log one number under tag at global_step.

        Args:
            tag: the series name.
            scalar_value: a number (Python, numpy or a one-element tensor).
            global_step: the step.
            walltime: seconds since the epoch (default now).
            new_style: store it as a tensor (the "scalars" plugin's tensor field) rather than simple_value.
            double_precision: with new_style, store a float64.

        Example:
            >>> w.add_scalar("loss", loss.item(), step)   # doctest: +SKIP
        """
        summ = _summary.scalar(tag, scalar_value, new_style=new_style, double_precision=double_precision)
        self._get_file_writer().add_summary(summ, global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict, global_step: Any = None,
                    walltime: Any = None) -> None:
        """Log several numbers into one chart: each goes to its own run directory
        <log_dir>/<main_tag with / as _>_<tag>, under the tag main_tag.

        Args:
            main_tag: the chart's tag.
            tag_scalar_dict: name -> number.
            global_step: the step.
            walltime: seconds since the epoch (default now, the same for all).

        Example:
            >>> w.add_scalars("loss", {"train": 0.3, "val": 0.4}, step)   # doctest: +SKIP
        """
        walltime = time.time() if walltime is None else walltime
        root = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            fw_tag = root + "/" + main_tag.replace("/", "_") + "_" + tag
            fw = self.all_writers.get(fw_tag)
            if fw is None:
                fw = FileWriter(fw_tag, self.max_queue, self.flush_secs, self.filename_suffix)
                self.all_writers[fw_tag] = fw
            fw.add_summary(_summary.scalar(main_tag, value), global_step, walltime)

    def add_histogram(self, tag: str, values: Any, global_step: Any = None, bins: Any = "tensorflow",
                      walltime: Any = None, max_bins: Any = None) -> None:
        """Log the histogram of values.

        Args:
            tag: the series name.
            values: any-shaped numbers (tensor or numpy array).
            global_step: the step.
            bins: "tensorflow" (TensorBoard's default exponential buckets) or anything numpy.histogram takes
                ("auto", "fd", a count, edges).
            walltime: seconds since the epoch (default now).
            max_bins: merge neighbouring buckets until there are at most this many.

        Example:
            >>> w.add_histogram("fc.weight", model.fc.weight, step)   # doctest: +SKIP
        """
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._get_file_writer().add_summary(_summary.histogram(tag, values, bins, max_bins=max_bins), global_step,
                                            walltime)

    def add_histogram_raw(self, tag: str, min: Any, max: Any, num: Any, sum: Any, sum_squares: Any,
                          bucket_limits: Any, bucket_counts: Any, global_step: Any = None,
                          walltime: Any = None) -> None:
        """Log a histogram given by its statistics and buckets.

        Args:
            tag: the series name.
            min: smallest value.
            max: largest value.
            num: number of values.
            sum: sum of the values.
            sum_squares: sum of their squares.
            bucket_limits: upper limit of each bucket.
            bucket_counts: count in each bucket (as many as bucket_limits).
            global_step: the step.
            walltime: seconds since the epoch (default now).
        """
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError("len(bucket_limits) != len(bucket_counts), see the document.")
        summ = _summary.histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts)
        self._get_file_writer().add_summary(summ, global_step, walltime)

    def add_image(self, tag: str, img_tensor: Any, global_step: Any = None, walltime: Any = None,
                  dataformats: str = "CHW") -> None:
        """Log one image (PNG, encoded with Pillow, which the tensorboard package brings).

        Args:
            tag: the series name.
            img_tensor: float values in [0, 1] or uint8 in [0, 255]; layout per dataformats.
            global_step: the step.
            walltime: seconds since the epoch (default now).
            dataformats: CHW, HWC, HW, ... one letter per dimension.

        Example:
            >>> w.add_image("input", x[0], step)   # doctest: +SKIP
        """
        self._get_file_writer().add_summary(_summary.image(tag, img_tensor, dataformats=dataformats), global_step,
                                            walltime)

    def add_images(self, tag: str, img_tensor: Any, global_step: Any = None, walltime: Any = None,
                   dataformats: str = "NCHW") -> None:
        """Log a batch of images, tiled into one grid image (8 per row).

        Args:
            tag: the series name.
            img_tensor: float values in [0, 1] or uint8; layout per dataformats.
            global_step: the step.
            walltime: seconds since the epoch (default now).
            dataformats: NCHW, NHWC, ... one letter per dimension.

        Example:
            >>> w.add_images("batch", x, step)   # doctest: +SKIP
        """
        self._get_file_writer().add_summary(_summary.image(tag, img_tensor, dataformats=dataformats), global_step,
                                            walltime)

    def add_figure(self, tag: str, figure: Any, global_step: Any = None, close: bool = True,
                   walltime: Any = None) -> None:
        """Log a matplotlib figure (or a list of them, as a batch) rendered to an image.

        Args:
            tag: the series name.
            figure: a matplotlib Figure or a list of Figures.
            global_step: the step.
            close: close the figure(s) after rendering.
            walltime: seconds since the epoch (default now).
        """
        from ._figure import figure_to_image
        fmt = "NCHW" if isinstance(figure, list) else "CHW"
        self.add_image(tag, figure_to_image(figure, close), global_step, walltime, dataformats=fmt)

    def add_text(self, tag: str, text_string: str, global_step: Any = None, walltime: Any = None) -> None:
        """Log a string (markdown) for the text tab.

        Args:
            tag: the series name (stored as <tag>/text_summary).
            text_string: the text.
            global_step: the step.
            walltime: seconds since the epoch (default now).

        Example:
            >>> w.add_text("config", "lr=0.1", 0)   # doctest: +SKIP
        """
        self._get_file_writer().add_summary(_summary.text(tag, text_string), global_step, walltime)

    def add_audio(self, tag: str, snd_tensor: Any, global_step: Any = None, sample_rate: int = 44100,
                  walltime: Any = None) -> None:
        """Log mono audio (values in [-1, 1]) as a WAV clip.

        Args:
            tag: the series name.
            snd_tensor: shape (1, L) or (L,).
            global_step: the step.
            sample_rate: samples per second.
            walltime: seconds since the epoch (default now).
        """
        self._get_file_writer().add_summary(_summary.audio(tag, snd_tensor, sample_rate=sample_rate), global_step,
                                            walltime)

    def add_pr_curve(self, tag: str, labels: Any, predictions: Any, global_step: Any = None,
                     num_thresholds: int = 127, weights: Any = None, walltime: Any = None) -> None:
        """Log a precision-recall curve of binary labels against predicted probabilities.

        Args:
            tag: the series name.
            labels: 0/1 ground truth.
            predictions: probabilities in [0, 1].
            global_step: the step.
            num_thresholds: number of thresholds (at most 127).
            weights: optional weight of each element.
            walltime: seconds since the epoch (default now).
        """
        summ = _summary.pr_curve(tag, make_np(labels), make_np(predictions), num_thresholds, weights)
        self._get_file_writer().add_summary(summ, global_step, walltime)

    def add_custom_scalars(self, layout: dict) -> None:
        """Log a custom-scalars layout: {category: {chart: ["Multiline" | "Margin", tags]}}.

        Args:
            layout: the layout.
        """
        self._get_file_writer().add_summary(_summary.custom_scalars(layout))

    def add_custom_scalars_multilinechart(self, tags: list, category: str = "default",
                                          title: str = "untitled") -> None:
        """Log a layout with one multiline chart of tags.

        Args:
            tags: the scalar tags.
            category: the category.
            title: the chart's title.
        """
        self.add_custom_scalars({category: {title: ["Multiline", tags]}})

    def add_custom_scalars_marginchart(self, tags: list, category: str = "default",
                                       title: str = "untitled") -> None:
        """Log a layout with one margin chart of 3 tags (value, lower, upper).

        Args:
            tags: the three scalar tags.
            category: the category.
            title: the chart's title.
        """
        if len(tags) != 3:
            raise AssertionError(f"Expected 3 tags, got {len(tags)}.")
        self.add_custom_scalars({category: {title: ["Margin", tags]}})

    def add_hparams(self, hparam_dict: dict, metric_dict: dict, hparam_domain_discrete: Any = None,
                    run_name: Any = None, global_step: Any = None) -> None:
        """Log a set of hyperparameters and the metrics they gave, for the HPARAMS tab; written to the run
        directory <log_dir>/<run_name> (default the current time).

        Args:
            hparam_dict: name -> int, float, str, bool or a one-element tensor.
            metric_dict: name -> number; each is also logged as a scalar there.
            hparam_domain_discrete: name -> list of the values that hyperparameter can take.
            run_name: the sub-run's name.
            global_step: the step.

        Example:
            >>> w.add_hparams({"lr": 0.1, "bsize": 32}, {"hparam/accuracy": 0.9})   # doctest: +SKIP
        """
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        exp, ssi, sei = _summary.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        if not run_name:
            run_name = str(time.time())
        logdir = os.path.join(self._get_file_writer().get_logdir(), run_name)
        with SummaryWriter(log_dir=logdir) as w_hp:
            for summ in (exp, ssi, sei):
                w_hp._get_file_writer().add_summary(summ, global_step)
            for k, v in metric_dict.items():
                w_hp.add_scalar(k, v, global_step)

    def add_graph(self, model: Any, input_to_model: Any = None, verbose: bool = False,
                  use_strict_trace: bool = True) -> None:
        """Log the model's graph for the GRAPHS tab. PyTorch records a TorchScript trace; rawdev, which has no
        TorchScript, traces the module symbolically with rawdev.fx (one node per module call, function and
        method, named by module scope) and runs input_to_model through it once for the output shapes. A model
        rawdev.fx cannot trace (control flow on tensor values) raises NotImplementedError saying so.

        Args:
            model: the nn.Module.
            input_to_model: an example input (a tensor, or a tuple/list of them); None leaves shapes out.
            verbose: print the traced graph.
            use_strict_trace: unused (TorchScript's strict flag).

        Example:
            >>> w.add_graph(model, images)   # doctest: +SKIP
        """
        from ._graph import graph
        self._get_file_writer().add_graph(graph(model, input_to_model, verbose, use_strict_trace))

    @staticmethod
    def _encode(rawstr: str) -> str:
        return rawstr.replace("%", "%25").replace("/", "%2f").replace("\\", "%5c")

    def add_embedding(self, mat: Any, metadata: Any = None, label_img: Any = None, global_step: Any = None,
                      tag: str = "default", metadata_header: Any = None) -> None:
        """Write an embedding for TensorBoard's projector: the vectors, optional labels and label images
        under <log_dir>/<step, 5 digits>/<tag>/ and the entry in projector_config.pbtxt.

        Args:
            mat: N x D matrix, one row per point.
            metadata: N labels (or N rows of columns with metadata_header).
            label_img: N x C x H x W images in [0, 1], one per point.
            global_step: the step (default 0).
            tag: the embedding's name.
            metadata_header: column names of multi-column metadata.

        Example:
            >>> w.add_embedding(features, metadata=labels)   # doctest: +SKIP
        """
        from google.protobuf import text_format
        from tensorboard.plugins.projector.projector_config_pb2 import ProjectorConfig

        from . import _embedding
        mat = make_np(mat)
        if global_step is None:
            global_step = 0
        subdir = f"{str(global_step).zfill(5)}/{self._encode(tag)}"
        root = self._get_file_writer().get_logdir()
        save_path = os.path.join(root, subdir)
        if os.path.exists(save_path):
            if os.path.isdir(save_path):
                print("warning: Embedding dir exists, did you set global_step for add_embedding()?")
            else:
                raise NotADirectoryError(f"Path: `{save_path}` exists, but is a file. Cannot proceed.")
        else:
            os.makedirs(save_path)
        if metadata is not None:
            if mat.shape[0] != len(metadata):
                raise AssertionError("#labels should equal with #data points")
            _embedding.make_tsv(metadata, save_path, metadata_header=metadata_header)
        if label_img is not None:
            if mat.shape[0] != make_np(label_img).shape[0]:
                raise AssertionError("#images should equal with #data points")
            _embedding.make_sprite(label_img, save_path)
        if mat.ndim != 2:
            raise AssertionError("mat should be 2D, where mat.size(0) is the number of data points")
        _embedding.make_mat(mat, save_path)
        if not hasattr(self, "_projector_config"):
            self._projector_config = ProjectorConfig()
        self._projector_config.embeddings.extend([_embedding.embedding_info(metadata, label_img, subdir,
                                                                            global_step, tag)])
        _embedding.write_pbtxt(root, text_format.MessageToString(self._projector_config))

    def flush(self) -> None:
        """Write every pending event to disk."""
        if self.all_writers is None:
            return
        for w in self.all_writers.values():
            w.flush()

    def close(self) -> None:
        """Flush and close every event file (a second close does nothing; a later add opens a new file)."""
        if self.all_writers is None:
            return
        for w in self.all_writers.values():
            w.flush()
            w.close()
        self.file_writer = self.all_writers = None

    def __enter__(self) -> "SummaryWriter":
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        self.close()
