"""One self-contained HTML page for a memory snapshot: an SVG timeline of live memory stacked by owner, and
a map of the pool's segments and blocks. Hover shows owner, size, address and the allocating stack. No
network resources: inline CSS, inline SVG, a few lines of inline JavaScript for the tooltip."""
import html
import json
import re

from ..runtime.trace import fmt_bytes
from . import snapshot as _snap

FREE = "#eeeeee"
PADDING = "#e3e3e3"
ROLES = ("weights", "grads", "optimizer state", "activations")
_ROLE_LIGHT = {"weights": 34, "grads": 50, "optimizer state": 64, "activations": 78}
PHASE_FILL = {"forward": "#dbe9f6", "backward": "#fbe3cf", "optimizer step": "#dcefd8"}
_OPT_STATE = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq", "momentum_buffer", "square_avg", "sum", "step")


def _module_of(path):
    """"0.weight" -> "0", "encoder.fc1.bias" -> "encoder.fc1"; None for a name that is no parameter path."""
    if " " in path or "." not in path:
        return None
    return path.rsplit(".", 1)[0]


def classify(owner):
    """(layer, role) of an owner tag: "0.weight" -> ("0", "weights"), "0.weight.grad" -> ("0", "grads"),
    "exp_avg of 0.weight" -> ("0", "optimizer state"), "Linear 0 output" -> ("0", "activations");
    owners with no module path -> (None, role): activations ("… output", "… grad", …), "padding", or "other"."""
    who = owner or "unnamed"
    if who.startswith("padding in "):
        return None, "padding"
    state, _, target = who.partition(" of ")
    if target and state in _OPT_STATE:
        return _module_of(target), "optimizer state"
    if who.endswith(".grad") and " " not in who:
        return _module_of(who[:-5]), "grads"
    if _module_of(who):
        return _module_of(who), "weights"
    words = who.split()
    if len(words) >= 2 and re.fullmatch(r"\d+(\.\d+)*", words[1]) and words[0][:1].isupper():
        return words[1], "activations"   # "Linear 0 output"
    if who.startswith(("tensor at ", "batch ", "staging")) or who in ("loss", "output", "unnamed"):
        return None, "other"
    return None, "activations"


def group_name(layer, role):
    if role == "padding":
        return "arena padding"
    if role == "other":
        return "inputs and other tensors"
    if layer is None:
        return "activations (no layer named)" if role == "activations" else f"{role} (no layer named)"
    return f"layer {layer} · {role}"


def _hsl(h, s, light):
    """#rrggbb of an HSL colour (h in degrees, s and light in percent)."""
    import colorsys
    r, g, b = colorsys.hls_to_rgb((h % 360) / 360, light / 100, s / 100)
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


class Palette:
    """Colours that keep owners apart: one hue per layer (spread round the wheel), a lightness per role (weights
    dark, grads, optimizer state, activations light), and small steps of lightness between the owners of one
    (layer, role) group. Owners with no layer: a blue-grey family for activations, a warm grey family for the
    rest, light grey for arena padding. `group(owner)` names the stacked group an owner belongs to."""

    def __init__(self, owners):
        owners = list(dict.fromkeys(o or "unnamed" for o in owners))
        layers = sorted({classify(o)[0] for o in owners} - {None}, key=_layer_key)
        n = max(1, len(layers))
        self.hue = {lay: 210 + k * 360 / n + (15 if n > 6 and k % 2 else 0) for k, lay in enumerate(layers)}
        self.map, members = {}, {}
        for o in owners:
            members.setdefault(classify(o), []).append(o)
        for (layer, role), names in members.items():
            m = len(names)
            for k, o in enumerate(sorted(names)):
                f = k / (m - 1) if m > 1 else 0.5     # 0..1 across the group's owners
                if role == "padding":
                    self.map[o] = PADDING
                elif layer is None:   # no layer: a family of its own, spread over a band of hues and lightness
                    h0, sat = (25, 22) if role == "other" else (175, 24)
                    self.map[o] = _hsl(h0 + 70 * f, sat + 10 * (k % 2), 40 + 36 * ((k * 7) % m) / max(1, m - 1))
                else:                 # the layer's hue; the role's lightness; owners a few points apart
                    self.map[o] = _hsl(self.hue[layer] + (k % 2) * 10 - 5, 62 if role != "activations" else 55,
                                       _ROLE_LIGHT[role] - 5 + 10 * f)

    def __call__(self, owner):
        return self.map.get(owner or "unnamed") or _hsl(0, 0, 70)

    def group(self, owner):
        return group_name(*classify(owner))

    def group_color(self, group, owners):
        """The colour of a group: that of its first owner (shades inside are close)."""
        return self(sorted(owners)[0]) if owners else PADDING


def _layer_key(layer):
    return [int(x) if x.isdigit() else x for x in re.split(r"[.]", layer)]


CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:24px;color:#222;
 background:#fff}
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


def _marks(snap, events):
    """[(event index, name, stage)] of the recorded marks, placed between the allocator events by time."""
    import bisect
    times = [e.get("time", 0) for e in events]
    out = []
    for a in snap.get("external_annotations") or []:
        out.append((bisect.bisect_right(times, a.get("time", 0)), a["name"], a.get("stage", "START")))
    return out


def _groups(series, colors):
    """{group: [owners]} over the whole history, in stacking order: by layer, then role, then the rest."""
    groups = {}
    for s in series:
        for who in s:
            groups.setdefault(colors.group(who), set()).add(who)

    def key(g):
        layer, role = classify(sorted(groups[g])[0])
        rank = {"padding": 3, "other": 2}.get(role, 1 if layer is None else 0)
        order = ROLES.index(role) if role in ROLES else 9
        return (rank, _layer_key(layer) if layer is not None else [], order, g)
    return {g: sorted(groups[g]) for g in sorted(groups, key=key)}


def _timeline_svg(snap, dev, colors, width=1100, height=340):
    events, owners, series = _snap.timeline(snap, dev)
    if not series:
        return ('<p class="note">No history was recorded, so there is no timeline. Record one with '
                '<code>rawdev mem run SCRIPT.py --snapshot out.json</code> or '
                '<code>rawdev.cuda.memory.record_history()</code> before the work.</p>')
    n = len(series)
    cols = min(n, 800)
    idx = [min(n - 1, int(i * n / cols)) for i in range(cols)] if n > cols else list(range(n))
    totals = [sum(series[i].values()) for i in range(n)]
    ymax = max(totals) or 1
    p2 = 1 << max(0, int(ymax / 4).bit_length() - 1)   # ticks at 4 nice steps: 1, 1.25 … 2 x a power of two
    ymax = 4 * min(m * p2 for m in (1, 1.25, 1.5, 1.75, 2) if m * p2 * 4 >= ymax)
    L, R, T, B = 70, 10, 30, 40
    pw, ph = width - L - R, height - T - B

    def y(v):
        return T + ph - v * ph / ymax

    def x_of(i):   # left edge of event i's column
        return L + i * pw / n
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="live memory over time, stacked by owner group">',
             f'<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="#fcfcfc" stroke="#ccc"/>']
    marks = _marks(snap, events)
    phases = [(i, name) for i, name, stage in marks if stage == "PHASE"]
    for k, (i, name) in enumerate(phases):   # shaded bands: forward / backward / optimizer step
        end = phases[k + 1][0] if k + 1 < len(phases) else n
        if end > i:
            parts.append(f'<rect x="{x_of(i):.1f}" y="{T}" width="{x_of(end) - x_of(i):.1f}" height="{ph}" '
                         f'fill="{PHASE_FILL.get(name, "#eee")}" data-tip="{_e(name)}: events {i} to {end - 1}"/>')
    for k in range(5):   # grid lines and labels
        v = ymax * k / 4
        parts.append(f'<line x1="{L}" x2="{L + pw}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#d8d8d8"/>'
                     f'<text x="{L - 6}" y="{y(v) + 4:.1f}" text-anchor="end" font-size="11" fill="#555">'
                     f'{_e(fmt_bytes(v))}</text>')
    groups = _groups(series, colors)
    base = [0.0] * len(idx)
    for g, members in groups.items():
        mset = set(members)
        vals = [sum(v for w, v in series[i].items() if w in mset) for i in idx]
        if not any(vals):
            continue
        top = [b + v for b, v in zip(base, vals)]
        cw0 = pw / len(idx)
        upper, lower = [], []
        for k in range(len(idx)):   # steps: memory is constant between events
            x0, x1 = L + k * cw0, L + (k + 1) * cw0
            upper += [f"{x0:.1f},{y(top[k]):.1f}", f"{x1:.1f},{y(top[k]):.1f}"]
            lower += [f"{x0:.1f},{y(base[k]):.1f}", f"{x1:.1f},{y(base[k]):.1f}"]
        tipt = f"{g}\npeak {fmt_bytes(max(vals))}\n" + "\n".join(f"  {w}" for w in members[:12]) + (
            f"\n  … {len(members) - 12} more" if len(members) > 12 else "")
        parts.append(f'<polygon points="{" ".join(upper + lower[::-1])}" fill="{colors.group_color(g, members)}" '
                     f'stroke="#fff" stroke-width="0.3" data-tip="{_e(tipt)}"><title>{_e(tipt)}</title></polygon>')
        base = top
    # an invisible column per sample: hover tells the total and the biggest owners at that event
    cw = pw / len(idx)
    for k, i in enumerate(idx):
        e = events[i]
        s = sorted(series[i].items(), key=lambda kv: -kv[1])[:6]
        t = (f"event {i}: {e['action'].replace('_requested', '')} {fmt_bytes(e['size'])} {e.get('owner') or ''}\n"
             f"live {fmt_bytes(totals[i])}\n" + "\n".join(f"  {w}: {fmt_bytes(v)}" for w, v in s) +
             (_stack_text(_user_frames(e.get("frames")), 4) if e.get("frames") else ""))
        parts.append(f'<rect x="{L + k * cw:.1f}" y="{T}" width="{cw:.2f}" height="{ph}" fill="transparent" '
                     f'data-tip="{_e(t)}"/>')
    # phase names above their band (where there is room), user marks as labelled lines, ranges as brackets
    free_from = -1e9   # phase labels left to right, skipping one that would overlap the previous
    for i, name in phases:
        x, w = x_of(i) + 2, 6 * len(name) + 6
        if x + w > L + pw:
            x = L + pw - w
        if x >= free_from:
            parts.append(f'<text x="{x:.1f}" y="{T - 4}" font-size="10" fill="#555">{_e(name)}</text>')
            free_from = x + w
    open_at = {}
    for i, name, stage in marks:
        if stage == "PHASE":
            continue
        if stage == "END" and name in open_at:
            i0 = open_at.pop(name)
            parts.append(f'<line x1="{x_of(i0):.1f}" x2="{x_of(i):.1f}" y1="{T + 17}" y2="{T + 17}" stroke="#222" '
                         f'stroke-width="2" data-tip="{_e(name)}: events {i0} to {i - 1}"/>'
                         f'<line x1="{x_of(i):.1f}" x2="{x_of(i):.1f}" y1="{T + 12}" y2="{T + 22}" stroke="#222" '
                         f'stroke-width="2"/>')
            continue
        if stage == "START":
            open_at[name] = i
        parts.append(f'<line x1="{x_of(i):.1f}" x2="{x_of(i):.1f}" y1="{T}" y2="{T + ph}" stroke="#222" '
                     f'stroke-dasharray="4 3"/><text x="{x_of(i) + 3:.1f}" y="{T + 12}" font-size="11" '
                     f'font-weight="600" fill="#222">{_e(name)}</text>')
    parts.append(f'<text x="{L + pw / 2}" y="{height - 4}" text-anchor="middle" font-size="12" fill="#444">'
                 f'allocator events (alloc / free), {n} in all</text>')
    for k in range(6):
        i = int(k * (n - 1) / 5)
        parts.append(f'<text x="{L + (i + 0.5) * pw / n:.1f}" y="{T + ph + 14}" text-anchor="middle" '
                     f'font-size="11" fill="#555">{i}</text>')
    parts.append("</svg>")
    legend = '<div class="legend">' + "".join(
        f'<span><i class="sw" style="background:{colors.group_color(g, m)}"></i>{_e(g)} '
        f'<small>({len(m)})</small></span>' for g, m in groups.items())
    legend += "".join(f'<span><i class="sw" style="background:{c};border:1px solid #ccc"></i>{_e(p)}</span>'
                      for p, c in PHASE_FILL.items() if any(name == p for _, name in phases))
    return "\n".join(parts) + legend + "</div>"


def _peak_table(snap, dev, colors, top=15):
    """HTML: the owners live at the peak of the recorded history, biggest first."""
    events, _, series = _snap.timeline(snap, dev)
    if not series:
        return ""
    totals = [sum(s.values()) for s in series]
    p = max(range(len(totals)), key=totals.__getitem__)
    phase = [name for i, name, stage in _marks(snap, events) if stage == "PHASE" and i <= p]
    rows = sorted(series[p].items(), key=lambda kv: -kv[1])
    out = [f"<h2>Top owners at the peak: {_e(fmt_bytes(totals[p]))} live after event {p}"
           + (f" (during {_e(phase[-1])})" if phase else "") + "</h2>",
           "<table><tr><th>owner</th><th>group</th><th>bytes</th><th>share</th></tr>"]
    for who, n in rows[:top]:
        out.append(f'<tr><td><i class="sw" style="background:{colors(who)}"></i>{_e(who)}</td>'
                   f'<td>{_e(colors.group(who))}</td><td class="n">{_e(fmt_bytes(n))}</td>'
                   f'<td class="n">{100 * n / totals[p]:.1f}%</td></tr>')
    if len(rows) > top:
        rest = sum(n for _, n in rows[top:])
        out.append(f'<tr><td>… {len(rows) - top} more</td><td></td><td class="n">{_e(fmt_bytes(rest))}</td>'
                   f'<td class="n">{100 * rest / totals[p]:.1f}%</td></tr>')
    return "\n".join(out) + "</table>"


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
        out.append(f'<text x="{L - 8}" y="{y0 + 11}" text-anchor="end" font-size="12" fill="#333">'
                   f'0x{s["address"]:x}</text>'
                   f'<text x="{L - 8}" y="{y0 + 24}" text-anchor="end" font-size="11" fill="#777">'
                   f'{_e(fmt_bytes(s["total_size"]))}, '
                   f'{len(act)} blocks</text>')
        out.append(f'<text x="{L + pw}" y="{y0 + rowh + 11}" text-anchor="end" font-size="11" fill="#777">'
                   f'shown: 0x{s["address"]:x} to the end of the last block ({_e(fmt_bytes(size))}); '
                   f'{_e(fmt_bytes(trailing))} free after it in this segment</text>')
        out.append(f'<rect x="{L}" y="{y0}" width="{pw}" height="{rowh}" fill="{FREE}" stroke="#bbb"/>')
        def x_at(a, base=s["address"], size=size):
            return L + (a - base) * pw / size
        for b in s["blocks"]:
            x0 = x_at(b["address"])
            w = max(b["size"] * pw / size, 1.5)
            if b["state"] != "active_allocated":
                if b["address"] >= span_end:
                    continue
                t = f"free: {fmt_bytes(b['size'])} at 0x{b['address']:x}"
                out.append(f'<rect x="{x0:.2f}" y="{y0}" width="{w:.2f}" height="{rowh}" fill="{FREE}" '
                           f'data-tip="{_e(t)}"/>')
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
        seg_owners = [p.get("owner") for s in snap.get("segments", []) if s.get("device", 0) == i
                      for b in s["blocks"] for p in (b.get("parts") or [b]) if b["state"] == "active_allocated"]
        colors = Palette(owners_t + [o["owner"] for o in d["owners"]] + seg_owners)
        figs = [("allocated", fmt_bytes(d["allocated"])), ("peak allocated", fmt_bytes(d["peak_allocated"])),
                ("reserved (pool)", fmt_bytes(d["reserved"])), ("cached", fmt_bytes(d["cached"])),
                ("device free", f"{fmt_bytes(d['free'])} / {fmt_bytes(d['total'])}"), ("blocks", d["blocks"]),
                ("OOMs", d["num_ooms"])]
        body.append(f'<h2>cuda:{i} — {_e(d["name"])} (sm_{d["capability"][0]}{d["capability"][1]})</h2>')
        body.append('<div class="figs">' + "".join(f'<div class="fig"><b>{_e(v)}</b><span>{_e(k)}</span></div>'
                                                   for k, v in figs) + "</div>")
        body.append("<h2>Live memory over time, by layer and role</h2>")
        body.append(_timeline_svg(snap, i, colors))
        body.append(_peak_table(snap, i, colors))
        body.append("<h2>Pool segments and blocks (2 MiB granules; grey = free)</h2>")
        body.append(_segments_svg(snap, i, colors))
        body.append("<h2>Top owners at the end</h2><table><tr><th>owner</th><th>bytes</th><th>blocks</th></tr>")
        for o in d["owners"][:25]:
            body.append(f'<tr><td><i class="sw" style="background:{colors(o["owner"])}"></i>{_e(o["owner"])}</td>'
                        f'<td class="n">{_e(fmt_bytes(o["bytes"]))}</td><td class="n">{o["blocks"]}</td></tr>')
        body.append("</table>")
        traces = snap.get("device_traces") or []
        ooms = [e for e in (traces[i] if i < len(traces) else []) if e["action"] == "oom"]
        if ooms:
            body.append("<h2>Out-of-memory events</h2><ul>" + "".join(
                f"<li>{_e(fmt_bytes(e['size']))} for {_e(e.get('owner'))}"
                f"{_e(_stack_text(_user_frames(e.get('frames')), 3))}</li>"
                for e in ooms) + "</ul>")
    sub = f"{snap.get('driver', '?')} driver · {len(snap.get('segments', []))} segments"
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
            f"<style>{CSS}</style></head><body><h1>{_e(title)}</h1><div class=\"sub\">{_e(sub)}</div>"
            + "\n".join(body) + f'<div id="tip"></div><script>{JS}</script>'
            f'<script type="application/json" id="snapshot-meta">{_e(json.dumps({"devices": len(devs)}))}</script>'
            "</body></html>")


def title_of(snap, path=None):
    """The page's title: the script the snapshot describes (rawdev mem run), else the snapshot's file name."""
    import os
    if snap.get("script"):
        return f"{os.path.basename(snap['script'])} — GPU memory (rawdev)"
    return f"GPU memory (rawdev) — {os.path.basename(str(path))}" if path else "GPU memory (rawdev)"


def write(snap, path, title=None, source=None):
    """Write the page for `snap` to `path`; title: the script's name (else `source`, the snapshot's file)."""
    with open(path, "w") as f:
        f.write(render(snap, title or title_of(snap, source or path)))
    return path
