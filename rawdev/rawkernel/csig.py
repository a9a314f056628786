"""What the CUDA C++ source says about a kernel's parameters (PTX cannot tell a pointer from a size_t).

PTX gives each parameter a width (`.u64`, `.f32`...), not a C type: `float* x` and `size_t n` are both
`.u64`. When the source is at hand, the `__global__` function's parameter list says which parameters
are pointers and to what, so a tensor passed for `n`, an int passed for `x`, or a float64 tensor passed
for `float* x` is an error naming the parameter instead of a wrong result.
"""
import re

GLOBAL_RE = re.compile(r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+(?:__\w+\s+)*([A-Za-z_]\w*)\s*\(")
COMMENT_RE = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "struct", "signed"}

# the C element type of a pointer -> rawdev dtype name
C_DTYPES = {"float": "float32", "double": "float64", "__half": "float16", "half": "float16",
            "__nv_bfloat16": "bfloat16", "nv_bfloat16": "bfloat16",
            "int": "int32", "int32_t": "int32", "long long": "int64", "long long int": "int64", "int64_t": "int64",
            "long": "int64", "short": "int16", "int16_t": "int16", "char": "int8", "int8_t": "int8",
            "unsigned char": "uint8", "uint8_t": "uint8", "bool": "bool",
            "unsigned int": "uint32", "uint32_t": "uint32", "unsigned": "uint32",
            "unsigned long long": "uint64", "uint64_t": "uint64", "size_t": "uint64",
            "unsigned short": "uint16", "uint16_t": "uint16"}


def _balanced(text, start):
    """The text from `start` (just after an opening parenthesis) to its closing one."""
    depth = 1
    for i in range(start, len(text)):
        depth += (text[i] == "(") - (text[i] == ")")
        if depth == 0:
            return text[start:i]
    return text[start:]


def _split(params):
    out, depth, cur = [], 0, ""
    for ch in params:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += (ch in "<([") - (ch in ">)]")
        cur += ch
    if cur.strip():
        out.append(cur.strip())
    return [] if out in ([], ["void"]) else out


def kernel_params(source, name):
    """[(C name, is pointer, element/value type or None)] of the `__global__` function `name` in `source`;
    None when the source has no such kernel, or several (overloads: the PTX decides).

    Args:
        source: CUDA C++ text.
        name: the kernel's C++ name without template arguments ("scale" for "scale<float>").

    Returns:
        A list with one (name, pointer?, base type) per parameter, or None.

    Example:
        >>> kernel_params('extern "C" __global__ void k(const float* x, int n) {}', "k")
        [('x', True, 'float'), ('n', False, 'int')]
    """
    text = COMMENT_RE.sub("", source)
    found = [m for m in GLOBAL_RE.finditer(text) if m.group(1) == name]
    if len(found) != 1:
        return None
    out = []
    for p in _split(_balanced(text, found[0].end())):
        p = p.split("=")[0].strip()   # a default argument
        pointer = "*" in p or "[" in p
        words = re.findall(r"[A-Za-z_]\w*(?:::\w+)*", p.replace("*", " * "))
        words = [w for w in words if w not in QUALIFIERS]
        if not words:
            return None
        pname = words[-1] if len(words) > 1 else ""
        base = " ".join(words[:-1] if len(words) > 1 else words)
        out.append((pname, pointer, base or None))
    return out


def dtype_of(ctype):
    """The rawdev dtype name of a C element type ('float' -> 'float32'), or None (a template parameter,
    a struct: not checked)."""
    return C_DTYPES.get(ctype) if ctype else None
