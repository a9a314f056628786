"""The entry points of a PTX text and their `.param` lists, read from the text itself.

rawdev's own kernels get their parameter lists from ptx/manifest.json; users' kernels (RawKernel,
RawModule) have no manifest, so their PTX is read here: every `.entry` (`.visible` for `extern "C"`
kernels, `.weak` for template instances) with each parameter's name and PTX type. A struct passed by
value (`.param .align A .b8 name[N]`) has the type "b8[N]", as in the manifest.
"""
import re

PTX_TYPES = {"u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "f16", "f32", "f64", "b8", "b16", "b32", "b64"}
ENTRY_RE = re.compile(r"\.entry\s+([\w$]+)\s*\((.*?)\)", re.S)
PARAM_RE = re.compile(r"\.param\s+((?:\.[\w]+\s+(?:\d+\s+)?)+)([\w$]+)(?:\[(\d+)\])?")
COMMENT_RE = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def entries(ptx):
    """{entry name: [(param name, ptx type)]} for every kernel in `ptx` (PTX source text).

    Args:
        ptx: the PTX text.

    Returns:
        A dict from each `.entry` name to its parameters in order; a struct passed by value has type "b8[N]".

    Example:
        >>> entries(".visible .entry k(.param .u64 k_param_0, .param .f32 k_param_1) { ret; }")
        {'k': [('k_param_0', 'u64'), ('k_param_1', 'f32')]}
    """
    out = {}
    for name, plist in ENTRY_RE.findall(COMMENT_RE.sub("", ptx)):
        params = []
        for quals, pname, count in PARAM_RE.findall(plist):
            tys = [q.lstrip(".") for q in quals.split() if q.lstrip(".") in PTX_TYPES]
            if len(tys) != 1:
                raise ValueError(f"{name}: cannot read the type of parameter {pname} from {quals.strip()!r}")
            ty = tys[0]
            if count:
                if ty not in ("b8", "u8", "s8"):
                    raise ValueError(f"{name}: parameter {pname} is an array of .{ty}: only .b8[N] (a struct passed "
                                     "by value) is supported")
                ty = f"b8[{count}]"
            params.append((pname, ty))
        out[name] = params
    return out
