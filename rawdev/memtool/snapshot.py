"""Reading a snapshot (the JSON that rawdev.cuda.memory.dump_snapshot writes): timeline and text summary."""
import collections
import json
import os
import stat

from ..runtime.trace import fmt_bytes

# The most `load` reads. A snapshot holds the allocation table (one entry per live block) and at most
# record_history's ring of events: 100,000 by default, about 1 KiB each with ordinary stacks (some 100 MiB).
# Anything larger (a sparse file, /dev/zero behind a symlink) is refused before it is parsed, so reading a
# snapshot never takes more memory than a snapshot can need; a snapshot of a larger ring with deep stacks can
# raise the bound with RAWDEV_MEM_SHOW_MAX_BYTES.
MAX_SNAPSHOT_BYTES = 1 << 30
_CHUNK = 1 << 20


class SnapshotError(ValueError):
    """A file that is not a snapshot `rawdev mem show` can read; the message says what is wrong in one line."""


def _read_bounded(path, limit):
    """The file's text, read in chunks and never more than `limit` bytes; SnapshotError past that."""
    with open(path, "rb") as f:
        st = os.fstat(f.fileno())
        if stat.S_ISDIR(st.st_mode):
            raise SnapshotError(f"{path} is a directory, not a snapshot file")
        if stat.S_ISREG(st.st_mode) and st.st_size > limit:
            raise SnapshotError(f"{path} is {fmt_bytes(st.st_size)}, larger than any rawdev memory snapshot can be "
                                f"(rawdev mem show reads at most {fmt_bytes(limit)}; RAWDEV_MEM_SHOW_MAX_BYTES "
                                f"raises the bound)")
        parts, n = [], 0
        while True:
            chunk = f.read(_CHUNK)
            if not chunk:
                break
            if not parts and chunk.lstrip()[:1] not in (b"{", b""):
                # a snapshot is a JSON object: anything else (/dev/zero, a binary file) is refused at once
                raise SnapshotError(f"{path} is not a rawdev memory snapshot (not a JSON object)")
            n += len(chunk)
            if n > limit:
                raise SnapshotError(f"{path} is larger than any rawdev memory snapshot can be (rawdev mem show "
                                    f"reads at most {fmt_bytes(limit)}; RAWDEV_MEM_SHOW_MAX_BYTES raises the bound)")
            parts.append(chunk)
    return b"".join(parts)


def _check_shape(path, snap):
    """Refuse JSON that is not shaped like dump_snapshot's output, naming the first field that is wrong."""
    def bad(what):
        return SnapshotError(f"{path} is not a well-formed rawdev memory snapshot: {what}")

    def records(obj, where, fields):
        if not isinstance(obj, list):
            raise bad(f"'{where}' is {type(obj).__name__}, not a list")
        for i, r in enumerate(obj):
            if not isinstance(r, dict):
                raise bad(f"{where}[{i}] is {type(r).__name__}, not an object")
            for k, types in fields.items():
                if k not in r:
                    raise bad(f"{where}[{i}] has no '{k}'")
                if not isinstance(r[k], types) or isinstance(r[k], bool):
                    raise bad(f"{where}[{i}].{k} is {type(r[k]).__name__}")

    if not isinstance(snap, dict) or "segments" not in snap:
        raise SnapshotError(f"{path} is not a rawdev memory snapshot (expected a JSON object with 'segments')")
    records(snap["segments"], "segments", {"address": int, "total_size": int, "allocated_size": int, "blocks": list})
    for i, s in enumerate(snap["segments"]):
        if not isinstance(s.get("device", 0), int):
            raise bad(f"segments[{i}].device is {type(s['device']).__name__}")
        records(s["blocks"], f"segments[{i}].blocks", {"address": int, "size": int, "state": str})
        for j, b in enumerate(s["blocks"]):
            _check_parts(b, f"segments[{i}].blocks[{j}]", bad)
    num = (int, float)
    records(snap.get("devices", []), "devices",
            {"index": int, "name": str, "allocated": num, "blocks": int, "peak_allocated": num, "used": num,
             "reserved": num, "reserved_high": num, "cached": num, "free": num, "total": num, "num_ooms": int,
             "owners": list})
    for i, d in enumerate(snap.get("devices", [])):
        records(d["owners"], f"devices[{i}].owners", {"owner": str, "bytes": num, "blocks": int})
    traces = snap.get("device_traces") or []
    if not isinstance(traces, list):
        raise bad(f"'device_traces' is {type(traces).__name__}, not a list")
    for i, events in enumerate(traces):
        records(events, f"device_traces[{i}]", {"action": str})
        for j, e in enumerate(events):
            if e["action"] in ("alloc", "free_requested", "oom"):
                for k in ("size",) if e["action"] == "oom" else ("size", "addr"):
                    if not isinstance(e.get(k), int) or isinstance(e[k], bool):
                        raise bad(f"device_traces[{i}][{j}] has no integer '{k}'")
                _check_parts(e, f"device_traces[{i}][{j}]", bad)


def _check_parts(r, where, bad):
    if r.get("parts"):
        if not isinstance(r["parts"], list) or not all(
                isinstance(p, dict) and isinstance(p.get("size"), int)
                and isinstance(p.get("owner", ""), (str, type(None)))
                for p in r["parts"]):
            raise bad(f"{where}.parts is not a list of {{owner, size}} objects")
    if not isinstance(r.get("owner", ""), (str, type(None))):
        raise bad(f"{where}.owner is {type(r['owner']).__name__}")


def _limit():
    try:
        return int(os.environ.get("RAWDEV_MEM_SHOW_MAX_BYTES", MAX_SNAPSHOT_BYTES))
    except ValueError:
        return MAX_SNAPSHOT_BYTES


def load(path, limit=None):
    """The snapshot at `path` (what dump_snapshot wrote), read without ever taking more than `limit` bytes of
    input and checked for the fields the summary and the HTML page use.

    Args:
        path: the JSON file.
        limit: the most bytes read (default: RAWDEV_MEM_SHOW_MAX_BYTES, else MAX_SNAPSHOT_BYTES, 1 GiB).

    Returns:
        The snapshot as a dict.

    Raises:
        SnapshotError (a ValueError) naming what is wrong; OSError when the file cannot be read.

    Example:
        >>> snap = load("train.mem.json")
    """
    data = _read_bounded(path, _limit() if limit is None else limit)
    try:
        snap = json.loads(data)
    except RecursionError:
        raise SnapshotError(f"{path} is not a rawdev memory snapshot: its JSON is nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise SnapshotError(f"{path} is not a rawdev memory snapshot: not valid JSON ({str(e)[:120]})") from None
    _check_shape(path, snap)
    return snap


def _pieces(e):
    """[(owner, bytes)] of one alloc/free event (arena parts separately)."""
    if e.get("parts"):
        return [(p["owner"] or "unnamed", p["size"]) for p in e["parts"]]
    return [(e.get("owner") or "unnamed", e["size"])]


def timeline(snap, device=0):
    """(events, owners, series): series[i] = {owner: live bytes} after event i, from the recorded history.

    Blocks already live when recording started are not in the history; they are counted from the start
    (live at the end but never seen allocated)."""
    traces = snap.get("device_traces") or []
    events = [e for e in (traces[device] if device < len(traces) else []) if e["action"] in ("alloc", "free_requested")]
    seen_alloc = {e["addr"] for e in events if e["action"] == "alloc"}
    live = collections.Counter()
    for seg in snap.get("segments", []):   # live now but allocated before recording began
        if seg.get("device", 0) != device:
            continue
        for b in seg["blocks"]:
            if b["state"] == "active_allocated" and b["address"] not in seen_alloc:
                for who, n in _pieces(b):
                    live[who] += n
    for e in events:   # frees of blocks allocated before recording began: they were live at the start
        if e["action"] == "free_requested" and e["addr"] not in seen_alloc:
            for who, n in _pieces(e):
                live[who] += n
    series = []
    for e in events:
        sign = 1 if e["action"] == "alloc" else -1
        for who, n in _pieces(e):
            live[who] += sign * n
            if live[who] <= 0:
                del live[who]
        series.append(dict(live))
    owners = collections.Counter()
    for s in series:
        for who, n in s.items():
            owners[who] = max(owners[who], n)
    return events, [w for w, _ in owners.most_common()], series


def summary(snap):
    """Text: devices and pool figures, top owners, segments, and what the history shows."""
    out = [f"rawdev memory snapshot ({snap.get('driver', '?')} driver)"]
    for d in snap.get("devices", []):
        out.append(f"cuda:{d['index']} {d['name']}: allocated {fmt_bytes(d['allocated'])} in {d['blocks']} blocks "
                   f"(peak {fmt_bytes(d['peak_allocated'])}); pool used {fmt_bytes(d['used'])}, reserved "
                   f"{fmt_bytes(d['reserved'])} (peak {fmt_bytes(d['reserved_high'])}), "
                   f"cached {fmt_bytes(d['cached'])}; "
                   f"device free {fmt_bytes(d['free'])} of {fmt_bytes(d['total'])}; OOMs {d['num_ooms']}")
        if d["owners"]:
            out.append("  top owners:")
            for o in d["owners"][:15]:
                out.append(f"    {o['owner'][:50]:<50} {fmt_bytes(o['bytes']):>10} {o['blocks']:>4} block(s)")
        segs = [s for s in snap["segments"] if s.get("device", 0) == d["index"]]
        out.append(f"  segments: {len(segs)}")
        for s in segs[:20]:
            act = [b for b in s["blocks"] if b["state"] == "active_allocated"]
            free = sum(b["size"] for b in s["blocks"] if b["state"] == "inactive")
            out.append(f"    0x{s['address']:x} {fmt_bytes(s['total_size']):>10}: {len(act)} block(s) "
                       f"{fmt_bytes(s['allocated_size'])} allocated, {fmt_bytes(free)} free between/after them")
        events, owners, series = timeline(snap, d["index"])
        traces = snap.get("device_traces") or []
        allev = traces[d["index"]] if d["index"] < len(traces) else []
        if allev:
            totals = [sum(s.values()) for s in series] or [0]
            peak_i = max(range(len(totals)), key=totals.__getitem__)
            out.append(f"  history: {len(allev)} events ({sum(e['action'] == 'alloc' for e in allev)} allocs, "
                       f"{sum(e['action'] == 'free_requested' for e in allev)} frees, "
                       f"{sum(e['action'] == 'oom' for e in allev)} OOMs); peak live {fmt_bytes(totals[peak_i])} "
                       f"at event {peak_i}")
            if series:
                top = sorted(series[peak_i].items(), key=lambda kv: -kv[1])[:5]
                out.append("    at the peak: " + ", ".join(f"{w} {fmt_bytes(n)}" for w, n in top))
            for e in allev:
                if e["action"] == "oom":
                    out.append(f"    OOM: {fmt_bytes(e['size'])} for {e.get('owner')}")
        else:
            out.append("  history: none recorded (rawdev mem run, or rawdev.cuda.memory.record_history())")
    return "\n".join(out)
