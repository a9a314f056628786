"""rawdev.hub's download half and rawdev.utils.model_zoo.load_url against a local HTTP server (127.0.0.1, in a
thread) and file:// URLs: the cache directory rules (TORCH_HOME, XDG_CACHE_HOME, set_dir), downloads renamed
into place, the SHA-256 prefix check (PyTorch's wording, nothing left behind), the cache (a second call
fetches nothing), and checkpoints loaded through rawdev.load (rawdev.save files and PyTorch's own .pt files).
hub.load/list/help, which run a downloaded hubconf.py, stay refused."""
import functools
import hashlib
import http.server
import os
import threading
import urllib.error
import zipfile

import numpy as np
import pytest
import rawdev
import rawdev.hub as hub
import rawdev.utils.model_zoo as model_zoo
from rawdev.serialization import CheckpointError

from _refs import rng

PT_DATA = os.path.join(os.path.dirname(__file__), "data", "pt")


class _Handler(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):
        self.server.gets.append(self.path)
        super().do_GET()

    def log_message(self, *args):
        pass


@pytest.fixture
def served(tmp_path):
    """(directory served, base URL, list of GET paths) of a server on 127.0.0.1 for this test."""
    root = tmp_path / "www"
    root.mkdir()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Handler, directory=str(root)))
    server.gets = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{server.server_address[1]}", server.gets
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=60)


@pytest.fixture(autouse=True)
def _no_hub_dir(monkeypatch):
    monkeypatch.setattr(hub, "_hub_dir", None)   # set_dir in a test stays in that test
    for var in ("TORCH_HOME", "XDG_CACHE_HOME", "TORCH_HUB", "TORCH_MODEL_ZOO"):
        monkeypatch.delenv(var, raising=False)


def sha256(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def test_get_dir_follows_torch_home_xdg_and_set_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert hub.get_dir() == str(tmp_path / "home" / ".cache" / "torch" / "hub")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert hub.get_dir() == str(tmp_path / "xdg" / "torch" / "hub")
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "th"))
    assert hub.get_dir() == str(tmp_path / "th" / "hub")
    hub.set_dir("~/mine")
    assert hub.get_dir() == str(tmp_path / "home" / "mine")


def test_download_url_to_file_writes_the_bytes_and_checks_the_hash_prefix(served, tmp_path, capsys):
    root, base, gets = served
    payload = rng().integers(0, 256, 300_000).astype(np.uint8).tobytes()   # more than one read chunk
    (root / "blob.bin").write_bytes(payload)
    digest = hashlib.sha256(payload).hexdigest()
    dst = tmp_path / "out" / "blob.bin"
    dst.parent.mkdir()
    hub.download_url_to_file(f"{base}/blob.bin", str(dst), hash_prefix=digest[:10])
    assert dst.read_bytes() == payload and os.listdir(dst.parent) == ["blob.bin"]
    assert "100.0%" in capsys.readouterr().err
    hub._download_url_to_file(f"{base}/blob.bin", str(tmp_path / "out" / "again.bin"), progress=False)
    assert (tmp_path / "out" / "again.bin").read_bytes() == payload
    assert capsys.readouterr().err == ""
    assert gets == ["/blob.bin", "/blob.bin"]


def test_a_hash_mismatch_raises_and_leaves_nothing(served, tmp_path):
    root, base, _ = served
    (root / "blob.bin").write_bytes(b"not what you expected")
    digest = hashlib.sha256(b"not what you expected").hexdigest()
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(RuntimeError, match=rf'^invalid hash value \(expected "deadbeef", got "{digest}"\)$'):
        hub.download_url_to_file(f"{base}/blob.bin", str(out / "blob.bin"), hash_prefix="deadbeef", progress=False)
    assert os.listdir(out) == []


def test_a_missing_url_raises_http_error_and_leaves_nothing(served, tmp_path):
    _, base, _ = served
    with pytest.raises(urllib.error.HTTPError, match="404"):
        hub.download_url_to_file(f"{base}/nope.pt", str(tmp_path / "nope.pt"), progress=False)
    assert os.listdir(tmp_path) == ["www"]


def _save_weights(path):
    g = rng()
    sd = {"fc.weight": rawdev.tensor(g.standard_normal((4, 3)).astype(np.float32)),
          "fc.bias": rawdev.tensor(g.standard_normal(4).astype(np.float32)),
          "steps": rawdev.tensor([3], dtype=rawdev.int64)}
    rawdev.save(sd, str(path))
    return sd


def test_load_state_dict_from_url_caches_checks_the_name_hash_and_loads(served, tmp_path, monkeypatch, capsys):
    root, base, gets = served
    src = root / "tmp.pt"
    sd = _save_weights(src)
    name = f"net-{sha256(src)[:8]}.pt"
    src.rename(root / name)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "th"))
    got = hub.load_state_dict_from_url(f"{base}/{name}", check_hash=True, progress=False)
    cached = tmp_path / "th" / "hub" / "checkpoints" / name
    assert cached.is_file() and gets == [f"/{name}"]
    assert capsys.readouterr().err == f'Downloading: "{base}/{name}" to {cached}\n'
    assert list(got) == list(sd)
    for k in sd:
        assert got[k].dtype == sd[k].dtype
        np.testing.assert_array_equal(got[k].numpy(), sd[k].numpy())
    again = model_zoo.load_url(f"{base}/{name}", check_hash=True, progress=False)   # from the cache
    assert gets == [f"/{name}"] and capsys.readouterr().err == ""
    np.testing.assert_array_equal(again["fc.weight"].numpy(), sd["fc.weight"].numpy())
    assert model_zoo.load_url is hub.load_state_dict_from_url


def test_a_wrong_hash_in_the_file_name_is_caught_and_nothing_is_cached(served, tmp_path):
    root, base, _ = served
    _save_weights(root / "net-0123abcd.pt")
    with pytest.raises(RuntimeError, match=r'invalid hash value \(expected "0123abcd", got "[0-9a-f]{64}"\)'):
        hub.load_state_dict_from_url(f"{base}/net-0123abcd.pt", model_dir=str(tmp_path / "c"), check_hash=True,
                                     progress=False)
    assert os.listdir(tmp_path / "c") == []
    # without check_hash the same file loads
    assert "fc.bias" in hub.load_state_dict_from_url(f"{base}/net-0123abcd.pt", model_dir=str(tmp_path / "c"),
                                                     progress=False)


def test_a_pytorch_pt_file_loads_through_the_restricted_reader(tmp_path):
    url = "file://" + os.path.join(PT_DATA, "mlp.pt")
    got = model_zoo.load_url(url, model_dir=str(tmp_path), file_name="mlp-copy.pt", progress=False)
    want = rawdev.load(os.path.join(PT_DATA, "mlp.pt"))
    assert list(got) == list(want) and (tmp_path / "mlp-copy.pt").is_file()
    for k in want:
        np.testing.assert_array_equal(got[k].numpy(), want[k].numpy())


def test_a_pt_file_naming_a_forbidden_global_is_refused_even_with_weights_only_false(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(os, "system", lambda *a: calls.append(a))
    url = "file://" + os.path.join(PT_DATA, "evil_os_system.pt")
    with pytest.raises(CheckpointError, match="refusing to load global 'os.system'"):
        hub.load_state_dict_from_url(url, model_dir=str(tmp_path), weights_only=False, progress=False)
    assert calls == []


def test_map_location_puts_the_weights_on_the_device(served, tmp_path, dev):
    root, base, _ = served
    sd = _save_weights(root / "w.pt")
    got = hub.load_state_dict_from_url(f"{base}/w.pt", model_dir=str(tmp_path / "c"), map_location="cuda",
                                       progress=False)
    assert got["fc.weight"].device.type == "cuda"
    np.testing.assert_array_equal(got["fc.weight"].cpu().numpy(), sd["fc.weight"].numpy())


def test_a_legacy_single_file_zip_is_extracted_and_loaded(served, tmp_path):
    root, base, _ = served
    sd = _save_weights(tmp_path / "inner.pt")
    with zipfile.ZipFile(root / "old.zip", "w") as z:
        z.write(tmp_path / "inner.pt", "inner.pt")
    with pytest.warns(FutureWarning, match="Falling back to the old format < 1.6"):
        got = hub.load_state_dict_from_url(f"{base}/old.zip", model_dir=str(tmp_path / "c"), progress=False)
    assert (tmp_path / "c" / "inner.pt").is_file()
    np.testing.assert_array_equal(got["fc.bias"].numpy(), sd["fc.bias"].numpy())


@pytest.mark.parametrize("name", ["load", "list", "help"])
def test_running_a_repositorys_hubconf_stays_refused(name):
    with pytest.raises(NotImplementedError, match=rf"torch\.hub\.{name}: .*hubconf\.py.*rawdev never runs code"):
        getattr(hub, name)("pytorch/vision", "resnet18")
    assert isinstance(getattr(hub, name).__rawdev_refused__, str)
    assert not hasattr(hub, "__rawdev_refused__")   # the module itself is supported
