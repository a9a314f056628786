"""Reading a snapshot (the JSON that rawdev.cuda.memory.dump_snapshot writes): timeline and text summary."""
import collections
import json

from ..runtime.trace import fmt_bytes


def load(path):
    with open(path) as f:
        snap = json.load(f)
    if not isinstance(snap, dict) or "segments" not in snap:
        raise ValueError(f"{path} is not a rawdev memory snapshot (expected JSON with 'segments')")
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
