#!/usr/bin/env python3
"""Build rawdev's PTX kernels with NVRTC 12.0 (loaded via ctypes from the pinned wheel).

    python tools/build_ptx.py           # compile ptx/src/*.cu -> ptx/<family>.ptx + ptx/manifest.json
    python tools/build_ptx.py --check   # rebuild into a temp dir, fail (exit 1) on any difference;
                                        # with ptxas on PATH also write ptx/REPORT.md and fail on gemm spills
                                        # (ptxas runs only for files whose text changed; --fresh-report: all)
    python tools/build_ptx.py --check --no-report   # the rebuild and comparison only (the test suite's check)

Output is `.version 8.0` / `.target sm_75` (loads on drivers >= R525, GPUs >= Turing); a source named
`<name>_sm80.cu` is built for compute_80 (tensor cores) and the manifest records `min_cc` for its file.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import ctypes
import difflib
import hashlib
import importlib
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PTX_DIR = ROOT / "ptx"
SRC_DIR = PTX_DIR / "src"
NVRTC_PIN = "nvidia-cuda-nvrtc-cu12==12.0.140"
OPTIONS = ["--std=c++17"]
ARCHS = ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90"]


def file_sm(path: Path) -> int:
    """The architecture a source is built for: `<name>_sm80.cu` needs sm_80 (tensor-core kernels), the rest sm_75."""
    m = re.search(r"_sm(\d+)$", path.stem)
    return int(m.group(1)) if m else 75
PTX_TYPES = {"u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "f16", "f32", "f64", "b8", "b16", "b32", "b64"}


# ---------------------------------------------------------------------------------------- NVRTC
def load_nvrtc() -> ctypes.CDLL:
    try:
        mod = importlib.import_module("nvidia.cuda_nvrtc")
    except ImportError:
        print(f"NVRTC 12.0 not found; install it with: pip install {NVRTC_PIN}", file=sys.stderr)
        sys.exit(2)
    libdir = Path(list(mod.__path__)[0]) / "lib"
    lib = ctypes.CDLL(str(libdir / "libnvrtc.so.12"))
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    if (major.value, minor.value) != (12, 0):
        sys.exit(f"need NVRTC 12.0, found {major.value}.{minor.value}; pip install {NVRTC_PIN}")
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p
    return lib


def compile_cu(lib: ctypes.CDLL, path: Path) -> str:
    def ok(res: int, what: str) -> None:
        if res != 0:
            raise RuntimeError(f"{what}: {lib.nvrtcGetErrorString(res).decode()}")

    prog = ctypes.c_void_p()
    # the shared device code (ptx/src/*.cuh) goes in as headers: `#include "storage.cuh"` resolves to it
    hdrs = sorted(path.parent.glob("*.cuh"))
    texts = (ctypes.c_char_p * len(hdrs))(*[h.read_bytes() for h in hdrs])
    names = (ctypes.c_char_p * len(hdrs))(*[h.name.encode() for h in hdrs])
    ok(lib.nvrtcCreateProgram(ctypes.byref(prog), path.read_bytes(), path.name.encode(), len(hdrs), texts, names),
       "nvrtcCreateProgram")
    try:
        options = [f"--gpu-architecture=compute_{file_sm(path)}"] + OPTIONS
        opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
        res = lib.nvrtcCompileProgram(prog, len(options), opts)
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        text = log.value.decode(errors="replace").strip()
        if res != 0:
            raise RuntimeError(f"{path.name}: compile failed\n{text}")
        if text:
            print(f"{path.name}: {text}", file=sys.stderr)
        ok(lib.nvrtcGetPTXSize(prog, ctypes.byref(size)), "nvrtcGetPTXSize")
        buf = ctypes.create_string_buffer(size.value)
        ok(lib.nvrtcGetPTX(prog, buf), "nvrtcGetPTX")
        return strip_nv_target(buf.value.decode())
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


NV_TARGET_RE = re.compile(r"^\.global \.align \d+ \.\w+ (_ZN\w*nv6target\w*)(?:\[\d+\])?(?: = [^;]*)?;\n", re.M)


def strip_nv_target(ptx: str) -> str:
    """NVRTC 12.0 emits the unused `nv::target` constants of its builtin headers as .global data in
    every module; drop them (after checking nothing refers to them) so the PTX is just our kernels."""
    out = NV_TARGET_RE.sub("", ptx)
    for sym in NV_TARGET_RE.findall(ptx):
        assert sym not in out, f"{sym} is referenced; cannot strip it"
    return out


# ------------------------------------------------------------------------------------- manifest
ENTRY_RE = re.compile(r"\.visible\s+\.entry\s+(\w+)\s*\((.*?)\)", re.S)
PARAM_RE = re.compile(r"\.param\s+((?:\.align\s+\d+\s+)?(?:\.\w+\s+)+)(\w+)(?:\[(\d+)\])?")
CSIG_RE = re.compile(r'extern\s+"C"\s+__global__\s+(?:__launch_bounds__\([^)]*\)\s+)?void\s+(\w+)\s*\(([^)]*)\)')


def ptx_entries(ptx: str) -> dict[str, list[str]]:
    out = {}
    for name, plist in ENTRY_RE.findall(ptx):
        types = []
        for quals, _pname, count in PARAM_RE.findall(plist):
            tys = [q for q in quals.split() if q.lstrip(".") in PTX_TYPES]
            if len(tys) != 1:
                raise RuntimeError(f"{name}: cannot parse param type from {quals!r}")
            if count and tys[0] != ".b8":
                raise RuntimeError(f"{name}: array parameter of {tys[0]}: only .b8[N] (a struct by value) is supported")
            # a struct passed by value is `.param .align A .b8 name[N]`: its type is "b8[N]"
            types.append(tys[0].lstrip(".") + (f"[{count}]" if count else ""))
        out[name] = types
    return out


DEFINE_RE = re.compile(r"^#define[ \t]+(\w+)\(([^)]*)\)((?:[^\n]*\\\n)*[^\n]*)", re.M)
DOC_COMMENT_RE = re.compile(r"/\*\s*doc:((?:(?!\*/).)*)\*/\s*$")


def split_args(text: str) -> list[str]:
    """Macro arguments: split at the commas outside parentheses."""
    args, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
            continue
        depth += (ch == "(") - (ch == ")")
        cur += ch
    return args + [cur.strip()]


def expand_kernel_macros(src: str) -> str:
    """Expand the function-like macros that define kernels (a `#define` whose body has `__global__`) where
    they are invoked at the start of a line, so that their kernels and their `/* doc: */` comments can be
    read like hand-written ones. The macro definitions become blank lines (line numbers are kept); NVRTC
    still compiles the original source, and build() checks that both name the same kernels."""
    macros = {}
    for m in DEFINE_RE.finditer(src):
        if "__global__" in m.group(3):
            params = [p.strip() for p in m.group(2).split(",")]
            body = re.sub(r"\\\n", " ", m.group(3))
            macros[m.group(1)] = (params, body)
    if not macros:
        return src
    src = DEFINE_RE.sub(lambda m: "\n" * m.group(0).count("\n") if m.group(1) in macros else m.group(0), src)

    def expand(m: re.Match) -> str:
        params, body = macros[m.group(1)]
        args = split_args(m.group(2))
        if len(args) != len(params):
            raise RuntimeError(f"{m.group(1)} takes {len(params)} arguments, got {len(args)}: {m.group(0)!r}")
        sub = dict(zip(params, args))
        text = re.sub(r"\b(" + "|".join(map(re.escape, params)) + r")\b", lambda p: sub[p.group(1)], body)
        return re.sub(r"\s*##\s*", "", text)

    call_re = re.compile(r"^(" + "|".join(map(re.escape, macros)) + r")\((.*)\)[ \t]*;?[ \t]*$", re.M)
    return call_re.sub(expand, src)


def c_signatures(src: str) -> dict[str, tuple[list[str], str]]:
    """name -> (param names, doc) from `extern "C" __global__ void name(...)` and `// doc:` lines above
    (or, for kernels defined by a macro, a `/* doc: */` comment right before `extern "C"`)."""
    src = expand_kernel_macros(src)
    lines = src.splitlines()
    out = {}
    for m in CSIG_RE.finditer(src):
        names = []
        for p in m.group(2).split(","):
            ids = re.findall(r"[A-Za-z_]\w*", p.split("=")[0])
            if ids:
                ctype = " ".join(i for i in ids[:-1] if i not in ("__restrict__", "const"))
                names.append((ids[-1], ctype + "*" * p.count("*")))
        if d := DOC_COMMENT_RE.search(src[src.rfind("\n", 0, m.start()) + 1:m.start()]):
            out[m.group(1)] = (names, " ".join(d.group(1).split()))
            continue
        lineno = src.count("\n", 0, m.start())
        doc = []
        while lineno > 0 and lines[lineno - 1].lstrip().startswith("//"):
            lineno -= 1
            doc.insert(0, lines[lineno].strip()[2:].strip())
        text = " ".join(doc)
        if not text.startswith("doc:"):
            raise RuntimeError(f"kernel {m.group(1)} has no `// doc:` comment right above it")
        out[m.group(1)] = (names, text[4:].strip())
    return out


def _compile_in_worker(path: str) -> str:
    """compile_cu in a fresh process (one per file): NVRTC numbers some things it emits (the `// callseq N`
    comments around calls) by a counter that lives as long as the loaded library, so a file's PTX would depend on
    which files the same process compiled before it. A process per file makes each file's PTX its own."""
    return compile_cu(load_nvrtc(), Path(path))


def build(out_dir: Path) -> None:
    load_nvrtc()   # here first, so a missing or wrong NVRTC is one message, not one per worker
    sources = sorted(SRC_DIR.glob("*.cu"))
    # the compiles in parallel (they are the whole cost: about a minute for every file on one core), the largest
    # sources first so that no long compile starts last; the results are taken in source order
    workers = max(1, min(len(sources), os.cpu_count() or 1))
    with multiprocessing.get_context("spawn").Pool(workers, maxtasksperchild=1) as pool:
        pending = {cu: pool.apply_async(_compile_in_worker, (str(cu),))
                   for cu in sorted(sources, key=lambda c: -c.stat().st_size)}
        ptxs = [pending[cu].get() for cu in sources]
    files = {}
    for cu, ptx in zip(sources, ptxs):
        for needle in (".version 8.0", f".target sm_{file_sm(cu)}"):
            assert re.search(rf"^{re.escape(needle)}\s*$", ptx, re.M), f"{cu.name}: no `{needle}` in PTX"
        entries, sigs = ptx_entries(ptx), c_signatures(cu.read_text())
        if set(entries) != set(sigs):
            raise RuntimeError(f"{cu.name}: PTX entries {sorted(entries)} != C kernels {sorted(sigs)}")
        man = {}
        for name in sorted(entries):
            pnames, doc = sigs[name]
            if len(pnames) != len(entries[name]):
                raise RuntimeError(f"{name}: {len(pnames)} C params but {len(entries[name])} PTX params")
            man[name] = {"params": [{"name": n, "type": t, "ctype": c} for (n, c), t in zip(pnames, entries[name])],
                         "doc": doc}
        fname = cu.stem + ".ptx"
        (out_dir / fname).write_text(ptx)
        files[fname] = {"sha256": hashlib.sha256(ptx.encode()).hexdigest(), "source": f"src/{cu.name}",
                        "entries": man}
        if file_sm(cu) != 75:   # loaded only on devices of at least this compute capability
            files[fname]["min_cc"] = file_sm(cu)
    manifest = {"nvrtc": "12.0", "files": files}
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


# --------------------------------------------------------------------------------- check / ptxas
def outputs(d: Path) -> list[str]:
    return sorted([p.name for p in d.glob("*.ptx")] + ["manifest.json"])


def compare(fresh: Path) -> list[str]:
    bad = []
    for name in sorted(set(outputs(fresh)) | set(outputs(PTX_DIR))):
        a, b = PTX_DIR / name, fresh / name
        if not a.exists() or not b.exists():
            bad.append(f"{name}: {'missing from ptx/' if not a.exists() else 'no longer built'}")
        elif a.read_text() != b.read_text():
            diff = difflib.unified_diff(a.read_text().splitlines(), b.read_text().splitlines(),
                                        f"committed/{name}", f"rebuilt/{name}", lineterm="", n=1)
            bad.append(f"{name} differs:\n" + "\n".join(list(diff)[:20]))
    return bad


def ptxas_stats(ptx_file: Path, arch: str) -> dict[str, dict[str, int]]:
    with tempfile.TemporaryDirectory() as td:
        res = subprocess.run(["ptxas", "-v", f"-arch={arch}", str(ptx_file), "-o", os.path.join(td, "o.cubin")],
                             capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"ptxas {arch} {ptx_file.name} failed:\n{res.stderr}")
    stats, cur = {}, None
    for line in res.stderr.splitlines():
        if m := re.search(r"(?:Compiling entry function|Function properties for) '?(\w+)'?", line):
            cur = stats.setdefault(m.group(1), {"regs": 0, "smem": 0, "spill_st": 0, "spill_ld": 0})
        elif cur is not None:
            if m := re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line):
                cur["spill_st"], cur["spill_ld"] = int(m.group(1)), int(m.group(2))
            if m := re.search(r"Used (\d+) registers", line):
                cur["regs"] = int(m.group(1))
            if m := re.search(r"(\d+) bytes smem", line):
                cur["smem"] = int(m.group(1))
    return stats


_CELL = re.compile(r"(\d+) r / (\d+) B / (\d+) st / (\d+) ld")


def committed_report(ver: str) -> dict[tuple[str, str], dict[str, dict[str, dict[str, int]]]]:
    """The committed REPORT.md's rows, when it was written by this ptxas: {(file name, PTX sha256): {arch: {kernel:
    stats}}}. ptxas is deterministic for one release and one PTX text, so a file whose text and ptxas are the same
    as when its rows were written needs no second run (about 2 minutes of ptxas on 2 cores for the whole tree)."""
    path = PTX_DIR / "REPORT.md"
    if not path.exists():
        return {}
    text = path.read_text()
    if f"with ptxas {ver};" not in text:
        return {}
    out: dict = {}
    cur = archs = None
    for line in text.splitlines():
        if m := re.match(r"## (\S+\.ptx) \(sha256 ([0-9a-f]{64})\)$", line):
            cur, archs = out.setdefault((m.group(1), m.group(2)), {}), None
        elif line.startswith("## "):
            cur = None   # a section without its text's hash (an older report): run ptxas for it
        elif cur is not None and line.startswith("| kernel |"):
            archs = [c.strip() for c in line.strip("|").split("|")[1:]]
            for a in archs:
                cur[a] = {}
        elif cur is not None and archs and line.startswith("| ") and not line.startswith("|---"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            for a, c in zip(archs, cells[1:]):
                m = _CELL.fullmatch(c)
                if m:
                    regs, smem, st, ld = map(int, m.groups())
                    cur[a][cells[0]] = {"regs": regs, "smem": smem, "spill_st": st, "spill_ld": ld}
    return out


def report(ptx_dir: Path, fresh: bool = False) -> list[str]:
    """Write ptx/REPORT.md (ptxas -v of every file for every architecture it loads on) and return the gemm spills.

    A file whose text (its sha256, recorded in its section) and ptxas release match the committed report keeps its
    rows without running ptxas again, unless `fresh`."""
    ver = subprocess.run(["ptxas", "--version"], capture_output=True, text=True).stdout
    ver = (re.findall(r"release [\d.]+, V[\d.]+", ver) or ["unknown"])[0]
    def archs(f):
        return [a for a in ARCHS if int(a[3:]) >= file_sm(f)]
    files = sorted(ptx_dir.glob("*.ptx"))
    sha = {f: hashlib.sha256(f.read_bytes()).hexdigest() for f in files}
    known = {} if fresh else committed_report(ver)
    results = {}
    for f in files:
        rows = known.get((f.name, sha[f]), {})
        if all(a in rows for a in archs(f)):
            results.update({(f, a): rows[a] for a in archs(f)})
    jobs = [(f, a) for f in files for a in archs(f) if (f, a) not in results]
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as pool:
        results.update(zip(jobs, pool.map(lambda j: ptxas_stats(*j), jobs)))
    reused = len({f for f in files} - {f for f, _ in jobs})
    print(f"ptxas report: {len(jobs)} ptxas runs; {reused} of {len(files)} files' rows kept from the committed "
          f"report (same PTX text, same ptxas)", file=sys.stderr)
    lines = ["# PTX resource report", "",
             f"Generated by `tools/build_ptx.py --check` with ptxas {ver}; do not edit by hand.",
             "Per kernel and architecture: registers / static shared memory bytes / spill store bytes / "
             "spill load bytes. Each section names the sha256 of the PTX text it describes.", ""]
    problems = []
    for f in files:
        fa = archs(f)
        lines += [f"## {f.name} (sha256 {sha[f]})", "", "| kernel | " + " | ".join(fa) + " |",
                  "|---" * (len(fa) + 1) + "|"]
        for k in sorted(results[(f, fa[0])]):
            cells = []
            for a in fa:
                s = results[(f, a)][k]
                cells.append(f"{s['regs']} r / {s['smem']} B / {s['spill_st']} st / {s['spill_ld']} ld")
                if f.stem.startswith("gemm") and (s["spill_st"] or s["spill_ld"]):
                    problems.append(f"{k} spills on {a}: {s['spill_st']} B stores, {s['spill_ld']} B loads")
            lines.append(f"| {k} | " + " | ".join(cells) + " |")
        lines.append("")
    (PTX_DIR / "REPORT.md").write_text("\n".join(lines))
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="rebuild into a temp dir and compare with ptx/")
    ap.add_argument("--no-report", action="store_true",
                    help="skip the ptxas resource report (registers, spills) that --check and a build also write")
    ap.add_argument("--fresh-report", action="store_true",
                    help="run ptxas for every file, even those whose rows the committed report already holds")
    args = ap.parse_args(argv)
    report_too = bool(shutil.which("ptxas")) and not args.no_report
    if not args.check:
        build(PTX_DIR)
        print(f"wrote {', '.join(outputs(PTX_DIR))} in {PTX_DIR}")
        if report_too:
            for p in report(PTX_DIR, args.fresh_report):
                print("WARNING:", p, file=sys.stderr)
        return 0
    with tempfile.TemporaryDirectory() as td:
        build(Path(td))
        bad = compare(Path(td))
        if report_too:
            bad += report(Path(td), args.fresh_report)
        elif not args.no_report:
            print("ptxas not on PATH: skipped the sm_75..sm_90 resource report", file=sys.stderr)
    for b in bad:
        print("FAIL:", b, file=sys.stderr)
    if not bad:
        print("ptx/ is up to date" + (" (REPORT.md written)" if report_too else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
