"""`torch.hub`'s download half: the cache directory (get_dir/set_dir, TORCH_HOME rules, so caches are shared
with PyTorch), download_url_to_file (SHA-256 prefix check, written to a temporary file then renamed into place)
and load_state_dict_from_url (cached under <hub_dir>/checkpoints, loaded with rawdev.load, whose .pt reader
never runs code from the file). hub.load, hub.list and hub.help, which import and run a downloaded
repository's hubconf.py, are refused: rawdev never runs code from a downloaded file.

Example:
    >>> sd = rawdev.hub.load_state_dict_from_url("https://example.com/resnet18-f37072fd.pth", check_hash=True)
"""
import hashlib
import os
import re
import shutil
import sys
import uuid
import zipfile
from typing import Any
from urllib.parse import urlparse
from urllib.request import Request, urlopen

from .refusals import Refused

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url", "set_dir"]

ENV_TORCH_HOME = "TORCH_HOME"
ENV_XDG_CACHE_HOME = "XDG_CACHE_HOME"
DEFAULT_CACHE_DIR = "~/.cache"
# the hash PyTorch's checkpoint names carry: resnet18-f37072fd.pth -> f37072fd
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")
READ_DATA_CHUNK = 128 * 1024

_hub_dir: Any = None

_WHY = ("it imports and runs a downloaded repository's hubconf.py, and rawdev never runs code from a downloaded "
        "file; build the model from your own code and load its weights with rawdev.hub.load_state_dict_from_url")
load = Refused("torch.hub.load", "torch.hub.load (running a repository's hubconf.py)", _WHY)
list = Refused("torch.hub.list", "torch.hub.list (running a repository's hubconf.py)", _WHY)
help = Refused("torch.hub.help", "torch.hub.help (running a repository's hubconf.py)", _WHY)


def _get_torch_home() -> str:
    return os.path.expanduser(os.getenv(ENV_TORCH_HOME, os.path.join(os.getenv(ENV_XDG_CACHE_HOME,
                                                                               DEFAULT_CACHE_DIR), "torch")))


def get_dir() -> str:
    """The directory downloaded files are cached in: the one set_dir gave, else $TORCH_HOME/hub, else
    $XDG_CACHE_HOME/torch/hub, else ~/.cache/torch/hub (PyTorch's rules, so the cache is shared with it).

    Returns:
        str: the path (not made here).

    Example:
        >>> rawdev.hub.get_dir()   # doctest: +SKIP
        '/home/me/.cache/torch/hub'
    """
    if os.getenv("TORCH_HUB"):
        import warnings
        warnings.warn("TORCH_HUB is deprecated, please use env TORCH_HOME instead", stacklevel=2)
    if _hub_dir is not None:
        return _hub_dir
    return os.path.join(_get_torch_home(), "hub")


def set_dir(d: str | os.PathLike) -> None:
    """Use d (with ~ expanded) as the cache directory from now on.

    Args:
        d: the directory.

    Example:
        >>> rawdev.hub.set_dir("/data/hub")   # doctest: +SKIP
    """
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


class _Progress:
    """Bytes received so far on stderr ("\\r42.0%" when the size is known), as PyTorch prints without tqdm."""

    def __init__(self, total: Any, disable: bool) -> None:
        self.total, self.disable, self.n = total, disable, 0

    def update(self, n: int) -> None:
        if self.disable:
            return
        self.n += n
        if self.total:
            sys.stderr.write(f"\r{100 * self.n / float(self.total):.1f}%")
        else:
            sys.stderr.write(f"\r{self.n} bytes")
        sys.stderr.flush()

    def close(self) -> None:
        if not self.disable:
            sys.stderr.write("\n")


def download_url_to_file(url: str, dst: str, hash_prefix: Any = None, progress: bool = True) -> None:
    """Download the object at url to dst: written to a temporary file beside dst and renamed into place only
    when complete (and, with hash_prefix, only when its SHA-256 starts with it).

    Args:
        url: the URL (http, https, file).
        dst: the full path to write.
        hash_prefix: if given, the start of the file's SHA-256 hex digest; a mismatch raises RuntimeError
            and leaves nothing behind.
        progress: show the progress on stderr.

    Example:
        >>> rawdev.hub.download_url_to_file("https://example.com/w.pt", "/tmp/w.pt")   # doctest: +SKIP
    """
    response = urlopen(Request(url, headers={"User-Agent": "torch.hub"}))
    lengths = response.info().get_all("Content-Length")
    file_size = int(lengths[0]) if lengths else None
    dst = os.path.expanduser(dst)
    tmp = None
    for _ in range(100):
        candidate = dst + "." + uuid.uuid4().hex + ".partial"
        try:
            f = open(candidate, "xb")   # closed in the finally below
        except FileExistsError:
            continue
        tmp = candidate
        break
    if tmp is None:
        raise FileExistsError("No usable temporary file name found")
    try:
        sha256 = hashlib.sha256() if hash_prefix is not None else None
        bar = _Progress(file_size, disable=not progress)
        try:
            while True:
                chunk = response.read(READ_DATA_CHUNK)
                if not chunk:
                    break
                f.write(chunk)
                if sha256 is not None:
                    sha256.update(chunk)
                bar.update(len(chunk))
        finally:
            bar.close()
        f.close()
        if sha256 is not None:
            digest = sha256.hexdigest()
            if digest[:len(hash_prefix)] != hash_prefix:
                raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{digest}")')
        shutil.move(tmp, dst)
    finally:
        f.close()
        response.close()
        if os.path.exists(tmp):
            os.remove(tmp)


_download_url_to_file = download_url_to_file


def _is_legacy_zip_format(filename: str) -> bool:
    """A zip holding one file (not a directory): how checkpoints saved before PyTorch 1.6 were shipped."""
    if zipfile.is_zipfile(filename):
        with zipfile.ZipFile(filename) as zf:
            members = zf.infolist()
        return len(members) == 1 and not members[0].is_dir()
    return False


def _legacy_zip_load(filename: str, model_dir: str, map_location: Any, weights_only: bool) -> Any:
    import warnings

    from .serialization import load as rawdev_load
    warnings.warn("Falling back to the old format < 1.6. This support will be deprecated in favor of default "
                  "zipfile format introduced in 1.6. Please redo torch.save() to save it in the new zipfile format.",
                  FutureWarning, stacklevel=3)
    with zipfile.ZipFile(filename) as f:
        members = f.infolist()
        if len(members) != 1:
            raise RuntimeError("Only one file(not dir) is allowed in the zipfile")
        f.extractall(model_dir)
        extracted = os.path.join(model_dir, members[0].filename)
    return rawdev_load(extracted, map_location=map_location, weights_only=weights_only)


def load_state_dict_from_url(url: str, model_dir: Any = None, map_location: Any = None, progress: bool = True,
                             check_hash: bool = False, file_name: Any = None, weights_only: bool = False) -> Any:
    """Load the checkpoint at url (a PyTorch .pt/.pth file or one rawdev.save wrote), downloading it into the
    cache the first time; a file already in the cache is not fetched again.

    Args:
        url: the URL (http, https, file).
        model_dir: the cache directory; default <hub_dir>/checkpoints (see get_dir).
        map_location: as rawdev.load takes it.
        progress: show the download's progress on stderr.
        check_hash: verify the download against the hex digits after the last "-" in the file name
            (name-<sha256 prefix>.ext, PyTorch's convention).
        file_name: the cached file's name; default the URL's.
        weights_only: as rawdev.load takes it.

    Returns:
        what rawdev.load returns (a state_dict for weight files).

    Example:
        >>> model.load_state_dict(rawdev.hub.load_state_dict_from_url(url, map_location="cpu"))   # doctest: +SKIP
    """
    from .serialization import load as rawdev_load
    if os.getenv("TORCH_MODEL_ZOO"):
        import warnings
        warnings.warn("TORCH_MODEL_ZOO is deprecated, please use env TORCH_HOME instead", stacklevel=2)
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name if file_name is not None else os.path.basename(urlparse(url).path)
    cached_file = os.path.join(model_dir, filename)
    if not os.path.exists(cached_file):
        sys.stderr.write(f'Downloading: "{url}" to {cached_file}\n')
        hash_prefix = None
        if check_hash:
            match = HASH_REGEX.search(filename)
            hash_prefix = match.group(1) if match else None
        download_url_to_file(url, cached_file, hash_prefix, progress=progress)
    if _is_legacy_zip_format(cached_file):
        return _legacy_zip_load(cached_file, model_dir, map_location, weights_only)
    return rawdev_load(cached_file, map_location=map_location, weights_only=weights_only)
