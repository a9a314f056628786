"""One self-contained HTML page for a memory snapshot: an SVG timeline of live memory stacked by owner, and
a map of the pool's segments and blocks. Hover shows owner, size, address and the allocating stack. No
network resources: inline CSS, inline SVG, a few lines of inline JavaScript for the tooltip."""
import html
import json

from ..runtime.trace import fmt_bytes
from . import snapshot as _snap

PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
           "#9c755f", "#86bcb6", "#d37295", "#a0cbe8", "#ffbe7d", "#8cd17d", "#f1ce63", "#499894"]
OTHER = "#bab0ac"
FREE = "#eeeeee"

CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.sub{color:#555;margin-bottom:16px} .figs{display:flex;flex-wrap:wrap;gap:10px;margin:10px 0}
.fig{border:1px solid #ddd;border-radius:6px;padding:8px 12px;min-width:120px;background:#fafafa}
.fig b{display:block;font-size:18px} .fig span{color:#666;font-size:12px}
table{border-collapse:collapse;margin-top:6px} td,th{padding:3px 10px;text-align:left;border-bottom:1px solid #eee}
td.n{text-align:right;font-variant-numeric:tabular-nums} th{background:#f4f4f4}
.sw{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:6px;vertical-align:-1px}
.legend{display:flex;flex-wrap:wrap;gap:4px 16px;margin:8px 0;font-size:13px}
#tip{position:fixed;pointer-events:none;background:#222;color:#fff;padding:6px 9px;border-radius:4px;font-size:12px;
 white-space:pre;max-width:720px;display:none;z-index:10;font-family:ui-monospace,"DejaVu Sans Mono",monospace}
svg text{font-family:inherit} .note{color:#666;font-size:13px}
[data-tip]:hover{stroke:#000;stroke-width:1.5}
"""

JS = """
var tip=document.getElementById('tip');
document.addEventListener('mousemove',function(ev){var t=ev.target.closest?ev.target.closest('[data-tip]'):null;
 if(!t){tip.style.display='none';return;} tip.textContent=t.getAttribute('data-tip'); tip.style.display='block';
 var x=ev.clientX+14,y=ev.clientY+14; if(x+tip.offsetWidth>innerWidth)x=ev.clientX-tip.offsetWidth-10;
 if(y+tip.offsetHeight>innerHeight)y=ev.clientY-tip.offsetHeight-10; tip.style.left=x+'px'; tip.style.top=y+'px';});
"""


def _e(s):
    return html.escape(str(s), quote=True)


def _stack_text(frames, n=8):
    if not frames:
        return ""
    return "\n" + "\n".join(f"  {f['filename'].rsplit('/', 1)[-1]}:{f['line']} in {f['name']}" +
                            (f": {f['code'][:60]}" if f.get("code") else "") for f in frames[:n])


def _user_frames(frames):
    import os
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    user = [f for f in frames or [] if not f["filename"].startswith(pkg)]
    return user or frames or []


class _Colors:
    def __init__(self, owners, n=len(PALETTE)):
        self.map = {w: PALETTE[i] for i, w in enumerate(owners[:n])}

    def __call__(self, who):
        return "#d9d9d9" if who.startswith("padding in ") else self.map.get(who, OTHER)


def _timeline_svg(snap, dev, colors, width=1100, height=300, max_owners=12):
    events, owners, series = _snap.timeline(snap, dev)
    if not series:
        return ('<p class="note">No history was recorded, so there is no timeline. Record one with '
                '<code>rawdev mem run SCRIPT.py --snapshot out.json</code> or '
                '<code>rawdev.cuda.memory.record_history()</code> before the work.</p>')
    shown = [w for w in owners if not w.startswith("padding in ")][:max_owners]
    n = len(series)
    cols = min(n, 800)
    idx = [min(n - 1, int(i * n / cols)) for i in range(cols)] if n > cols else list(range(n))
    totals = [sum(series[i].values()) for i in range(n)]
    ymax = max(totals) or 1
    p2 = 1 << max(0, int(ymax / 4).bit_length() - 1)   # ticks at 4 nice steps: 1, 1.25 … 2 x a power of two
    ymax = 4 * min(m * p2 for m in (1, 1.25, 1.5, 1.75, 2) if m * p2 * 4 >= ymax)
    L, R, T, B = 70, 10, 10, 36
    pw, ph = width - L - R, height - T - B
    y = lambda v: T + ph - v * ph / ymax
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
             f'role="img" aria-label="live memory over time, stacked by owner">',
             f'<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="#fcfcfc" stroke="#ccc"/>']
    for k in range(5):   # grid lines and labels
        v = ymax * k / 4
        parts.append(f'<line x1="{L}" x2="{L + pw}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#e4e4e4"/>'
                     f'<text x="{L - 6}" y="{y(v) + 4:.1f}" text-anchor="end" font-size="11" fill="#555">{_e(fmt_bytes(v))}</text>')
    base = [0.0] * len(idx)
    groups = shown + (["other (incl. arena padding)"] if len(owners) > len(shown) else [])
    for who in groups:
        vals = []
        for k, i in enumerate(idx):
            s = series[i]
            vals.append(sum(v for w, v in s.items() if w not in shown) if who.startswith("other") else s.get(who, 0))
        if not any(vals):
            continue
        top = [b + v for b, v in zip(base, vals)]
        cw0 = pw / len(idx)
        upper, lower = [], []
        for k in range(len(idx)):   # steps: memory is constant between events
            x0, x1 = L + k * cw0, L + (k + 1) * cw0
            upper += [f"{x0:.1f},{y(top[k]):.1f}", f"{x1:.1f},{y(top[k]):.1f}"]
            lower += [f"{x0:.1f},{y(base[k]):.1f}", f"{x1:.1f},{y(base[k]):.1f}"]
        pts = upper + lower[::-1]
        peak = max(vals)
        tipt = f"{who}\npeak {fmt_bytes(peak)}"
        parts.append(f'<polygon points="{" ".join(pts)}" fill="{OTHER if who.startswith("other") else colors(who)}" '
                     f'fill-opacity="0.9" stroke="#fff" stroke-width="0.3" data-tip="{_e(tipt)}"><title>{_e(tipt)}</title></polygon>')
        base = top
    # an invisible column per sample: hover tells the total and the biggest owners at that event
    cw = pw / len(idx)
    for k, i in enumerate(idx):
        e = events[i]
        s = sorted(series[i].items(), key=lambda kv: -kv[1])[:6]
        t = (f"event {i}: {e['action'].replace('_requested', '')} {fmt_bytes(e['size'])} {e.get('owner') or ''}\n"
             f"live {fmt_bytes(totals[i])}\n" + "\n".join(f"  {w}: {fmt_bytes(v)}" for w, v in s) +
             (_stack_text(_user_frames(e.get("frames")), 4) if e.get("frames") else ""))
        parts.append(f'<rect x="{L + k * cw:.1f}" y="{T}" width="{cw:.2f}" height="{ph}" fill="transparent" data-tip="{_e(t)}"/>')
    parts.append(f'<text x="{L + pw / 2}" y="{height - 6}" text-anchor="middle" font-size="12" fill="#444">'
                 f'allocator events (alloc / free), {n} in all</text>')
    for k in range(6):
        i = int(k * (n - 1) / 5)
        parts.append(f'<text x="{L + (i + 0.5) * pw / n:.1f}" y="{T + ph + 14}" text-anchor="middle" font-size="11" '
                     f'fill="#555">{i}</text>')
    parts.append("</svg>")
    legend = '<div class="legend">' + "".join(
        f'<span><i class="sw" style="background:{OTHER if w.startswith("other") else colors(w)}"></i>{_e(w)}</span>' for w in groups) + "</div>"
    return "\n".join(parts) + legend


def _segments_svg(snap, dev, colors, width=1100):
    segs = [s for s in snap.get("segments", []) if s.get("device", 0) == dev]
    if not segs:
        return '<p class="note">No live blocks: the pool holds no segments with rawdev allocations.</p>'
    L, rowh, gap = 160, 34, 22
    pw = width - L - 10
    height = len(segs) * (rowh + gap) + 10
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
           f'role="img" aria-label="pool segments and blocks">']
    for r, s in enumerate(segs):
        y0 = 5 + r * (rowh + gap)
        act = [b for b in s["blocks"] if b["state"] == "active_allocated"]
        span_end = max(b["address"] + b["size"] for b in act) if act else s["address"] + s["total_size"]
        size = max(1, span_end - s["address"])
        trailing = s["address"] + s["total_size"] - span_end
        out.append(f'<text x="{L - 8}" y="{y0 + 11}" text-anchor="end" font-size="12" fill="#333">0x{s["address"]:x}</text>'
                   f'<text x="{L - 8}" y="{y0 + 24}" text-anchor="end" font-size="11" fill="#777">{_e(fmt_bytes(s["total_size"]))}, '
                   f'{len(act)} blocks</text>')
        out.append(f'<text x="{L + pw}" y="{y0 + rowh + 11}" text-anchor="end" font-size="11" fill="#777">'
                   f'shown: 0x{s["address"]:x} to the end of the last block ({_e(fmt_bytes(size))}); '
                   f'{_e(fmt_bytes(trailing))} free after it in this segment</text>')
        out.append(f'<rect x="{L}" y="{y0}" width="{pw}" height="{rowh}" fill="{FREE}" stroke="#bbb"/>')
        x_at = lambda a: L + (a - s["address"]) * pw / size
        for b in s["blocks"]:
            x0 = x_at(b["address"])
            w = max(b["size"] * pw / size, 1.5)
            if b["state"] != "active_allocated":
                if b["address"] >= span_end:
                    continue
                t = f"free: {fmt_bytes(b['size'])} at 0x{b['address']:x}"
                out.append(f'<rect x="{x0:.2f}" y="{y0}" width="{w:.2f}" height="{rowh}" fill="{FREE}" data-tip="{_e(t)}"/>')
                continue
            stack = _stack_text(_user_frames(b.get("frames")))
            pieces = b.get("parts") or [dict(offset=0, size=b["size"], owner=b.get("owner"))]
            for p in pieces:
                px = x_at(b["address"] + p["offset"])
                pw_ = max(p["size"] * pw / size, 1.5)
                who = p["owner"] or "unnamed"
                fill = "#d9d9d9" if who.startswith("padding in ") else colors(who)
                t = (f"{who}\n{fmt_bytes(p['size'])} at 0x{b['address'] + p['offset']:x}"
                     + (f" (offset {p['offset']} in {b.get('owner')})" if b.get("parts") else "")
                     + f"\nstream {b.get('stream')}" + stack)
                out.append(f'<rect x="{px:.2f}" y="{y0 + 1}" width="{pw_:.2f}" height="{rowh - 2}" fill="{fill}" '
                           f'stroke="#fff" stroke-width="0.4" data-tip="{_e(t)}"><title>{_e(t)}</title></rect>')
                if pw_ > 7 * len(who) and not who.startswith("padding in "):
                    out.append(f'<text x="{px + 4:.1f}" y="{y0 + rowh / 2 + 4:.1f}" font-size="11" fill="#fff" '
                               f'pointer-events="none">{_e(who)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def render(snap, title="rawdev memory"):
    """The HTML page (a string) for a snapshot dict."""
    body = []
    devs = snap.get("devices") or []
    for d in devs:
        i = d["index"]
        _, owners_t, _ = _snap.timeline(snap, i)
        owners_now = [o["owner"] for o in d["owners"]]
        order = list(dict.fromkeys([w for w in owners_t if not w.startswith("padding in ")][:12] +
                                   [w for w in owners_now if not w.startswith("padding in ")]))
        colors = _Colors(order)
        figs = [("allocated", fmt_bytes(d["allocated"])), ("peak allocated", fmt_bytes(d["peak_allocated"])),
                ("reserved (pool)", fmt_bytes(d["reserved"])), ("cached", fmt_bytes(d["cached"])),
                ("device free", f"{fmt_bytes(d['free'])} / {fmt_bytes(d['total'])}"), ("blocks", d["blocks"]),
                ("OOMs", d["num_ooms"])]
        body.append(f'<h2>cuda:{i} — {_e(d["name"])} (sm_{d["capability"][0]}{d["capability"][1]})</h2>')
        body.append('<div class="figs">' + "".join(f'<div class="fig"><b>{_e(v)}</b><span>{_e(k)}</span></div>'
                                                   for k, v in figs) + "</div>")
        body.append("<h2>Live memory over time, by owner</h2>")
        body.append(_timeline_svg(snap, i, colors))
        body.append("<h2>Pool segments and blocks (2 MiB granules; grey = free)</h2>")
        body.append(_segments_svg(snap, i, colors))
        body.append("<h2>Top owners now</h2><table><tr><th>owner</th><th>bytes</th><th>blocks</th></tr>")
        for o in d["owners"][:25]:
            body.append(f'<tr><td><i class="sw" style="background:{colors(o["owner"])}"></i>{_e(o["owner"])}</td>'
                        f'<td class="n">{_e(fmt_bytes(o["bytes"]))}</td><td class="n">{o["blocks"]}</td></tr>')
        body.append("</table>")
        traces = snap.get("device_traces") or []
        ooms = [e for e in (traces[i] if i < len(traces) else []) if e["action"] == "oom"]
        if ooms:
            body.append("<h2>Out-of-memory events</h2><ul>" + "".join(
                f"<li>{_e(fmt_bytes(e['size']))} for {_e(e.get('owner'))}{_e(_stack_text(_user_frames(e.get('frames')), 3))}</li>"
                for e in ooms) + "</ul>")
    sub = f"{snap.get('driver', '?')} driver · {len(snap.get('segments', []))} segments"
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
            f"<style>{CSS}</style></head><body><h1>{_e(title)}</h1><div class=\"sub\">{_e(sub)}</div>"
            + "\n".join(body) + f'<div id="tip"></div><script>{JS}</script>'
            f'<script type="application/json" id="snapshot-meta">{_e(json.dumps({"devices": len(devs)}))}</script>'
            "</body></html>")


def write(snap, path, title=None):
    import os
    with open(path, "w") as f:
        f.write(render(snap, title or f"rawdev memory — {os.path.basename(str(path))}"))
    return path
