"""Decode a parsed PTX function ONCE into executable basic blocks.

Each basic block (straight-line instructions up to a label, branch, exit, barrier or warp-wide
instruction) becomes two Python functions generated from the instructions' decoded form and
compiled once at load:

* ``full(R, X)``: all lanes of the chunk run it (the fast path: no masks, no gathers);
* ``part(R, X, idx)``: only the lanes in ``idx`` (sorted thread indices) run it: the registers the
  block reads are gathered once at entry, the ones it writes are scattered back once at exit.

``R`` is the register file (a list, one numpy array per register slot, one element per thread),
``X`` the launch context (memory, shared memory, params). Registers are stored in their declared
type (.f32 → float32, .b32 → uint32, .pred → bool, .f16 → uint16 bits …) and reinterpreted with
``.view`` when an instruction uses another type of the same width.

Barriers (``bar.sync``) and warp-wide instructions (``shfl.sync``, ``vote.sync``, ``activemask``)
are blocks of their own, run by the scheduler in :mod:`rawdev.sim.ptx.interp`.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import ops
from .inst_classes import class_counts
from .parser import TYPE_SIZES, Addr, Args, Imm, Inst, Label, NegPred, Pipe, Reg, RegDecl, Sym, VarDecl, Vec

STORE = {
    "pred": np.bool_, "b8": np.uint8, "u8": np.uint8, "s8": np.int8,
    "b16": np.uint16, "u16": np.uint16, "s16": np.int16, "f16": np.uint16, "bf16": np.uint16,
    "b32": np.uint32, "u32": np.uint32, "s32": np.int32, "f32": np.float32,
    "f16x2": np.uint32, "bf16x2": np.uint32, "tf32": np.uint32,
    "b64": np.uint64, "u64": np.uint64, "s64": np.int64, "f64": np.float64,
}
DTNAME = {np.dtype(np.bool_): "_b", np.dtype(np.uint8): "u8", np.dtype(np.int8): "s8",
          np.dtype(np.uint16): "u16", np.dtype(np.int16): "s16", np.dtype(np.uint32): "u32",
          np.dtype(np.int32): "s32", np.dtype(np.uint64): "u64", np.dtype(np.int64): "s64",
          np.dtype(np.float16): "h16", np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
SIGNED_OF = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}
UNSIGNED_OF = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}

SPECIAL_DT = np.uint32
SPECIALS = {
    "%tid.x", "%tid.y", "%tid.z", "%ntid.x", "%ntid.y", "%ntid.z",
    "%ctaid.x", "%ctaid.y", "%ctaid.z", "%nctaid.x", "%nctaid.y", "%nctaid.z",
    "%laneid", "%warpid", "%nwarpid", "%smid", "%nsmid", "%gridid",
    "%lanemask_eq", "%lanemask_le", "%lanemask_lt", "%lanemask_ge", "%lanemask_gt",
    "%clock", "%clock64", "%globaltimer", "%globaltimer_lo", "%globaltimer_hi",
    "%dynamic_smem_size", "%total_smem_size",
}
CALL_PARAM = "$param."   # register slots of call arguments: "$param.param0"
SBASE = "$sbase"   # pseudo-register: byte offset of the thread's block in the shared-memory array
LBASE = "$lbase"   # pseudo-register: byte offset of the thread's frame in the local-memory array

CACHE_MODS = {"nc", "ca", "cg", "cs", "lu", "cv", "wb", "wt", "volatile", "relaxed", "acquire", "release",
              "acq_rel", "weak", "sys", "gpu", "cta", "cluster", "unified", "mmio", "sc"}
SPACES = {"global", "shared", "local", "param", "const"}

_IMPLEMENTED = {
    "add", "sub", "mul", "mad", "fma", "div", "rem", "abs", "neg", "min", "max", "and", "or", "xor", "not",
    "cnot", "shl", "shr", "popc", "clz", "bfind", "brev", "bfe", "bfi", "prmt", "copysign", "testp", "rcp",
    "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos", "tanh", "setp", "set", "selp", "slct", "cvt", "cvta", "mov",
    "ld", "ldu", "st", "atom", "red", "bar", "barrier", "membar", "fence", "shfl", "vote", "activemask",
    "bra", "ret", "exit", "trap", "nanosleep", "mul24", "mad24", "sad", "prefetch", "prefetchu", "brkpt",
    "pmevent", "call", "cp", "mma", "ldmatrix",
}


def implemented_opcodes():
    return sorted(_IMPLEMENTED)


class DecodeError(NotImplementedError):
    pass


@dataclass
class Param:
    name: str
    type: str
    size: int
    align: int
    offset: int


@dataclass
class Block:
    index: int
    kind: str                 # 'code', 'bar', 'warp'
    ninst: int = 0
    term: str = "fall"        # fall | bra | cbra | exit | cexit
    target: int | None = None
    nxt: int | None = None
    full: object = None
    part: object = None
    warp: object = None       # for 'warp' blocks: fn(R, X, idx)
    classes: object = None    # instructions per class (inst_classes.CLASSES order): the stats mode adds these
    build: object = None
    line: int = 0
    text: str = ""
    source: str = ""
    gen: object = None
    uses: set = field(default_factory=set)
    defs: set = field(default_factory=set)
    live_out: set = field(default_factory=set)


@dataclass
class EntryCode:
    name: str
    params: list
    param_size: int
    blocks: list = field(default_factory=list)
    slot_names: list = field(default_factory=list)
    slot_dtypes: list = field(default_factory=list)
    specials: dict = field(default_factory=dict)
    shared_static: int = 0
    shared_syms: dict = field(default_factory=dict)
    dyn_shared_offset: int = 0
    local_size: int = 0
    local_syms: dict = field(default_factory=dict)
    insts: list = field(default_factory=list)     # iid -> (line, text)
    opcodes: set = field(default_factory=set)
    text_lines: list = field(default_factory=list, repr=False)   # the module's lines (for .loc, on reports only)

    def source_line(self, iid):
        """The CUDA source "file:line" of instruction ``iid`` from the nearest ``.loc`` above it (NVRTC's
        -lineinfo), or None. Read from the text when a report needs it: decoding keeps no line table."""
        lines = self.text_lines
        k = self.insts[iid][0] - 1 if 0 <= iid < len(self.insts) else -1
        while 0 <= k < len(lines):
            t = lines[k].strip()
            if t.startswith(".loc"):
                f = t.split()
                if len(f) >= 3 and f[1].isdigit() and f[2].isdigit():
                    return f"{_file_names(lines).get(int(f[1]), f'file {f[1]}')}:{int(f[2])}"
                return None
            if t.startswith((".entry", ".visible", ".func")):
                return None
            k -= 1
        return None


def _align(x, a):
    return -(-x // a) * a


def _file_names(lines):
    """{index: name} of the module's ``.file N "name"`` directives."""
    out = {}
    for ln in lines:
        t = ln.strip()
        if t.startswith(".file"):
            f = t.split(None, 2)
            if len(f) == 3 and f[1].isdigit():
                out[int(f[1])] = f[2].split('"')[1] if '"' in f[2] else f[2]
    return out


def _err(inst, msg):
    raise DecodeError(f"{msg} (PTX line {inst.line}: {inst.text})")


class _ModuleSyms:
    """Module-scope symbols: .const bank layout, .global variables, module-level .shared."""

    def __init__(self, mod_ast):
        self.const_syms = {}
        self.global_syms = {}      # name -> index into X.gaddr
        self.global_vars = []      # VarDecl
        self.shared_vars = []
        cb = bytearray()
        for v in mod_ast.variables:
            if v.space == "const":
                off = _align(len(cb), v.align)
                cb.extend(b"\0" * (off - len(cb)))
                cb.extend(_init_bytes(v))
                self.const_syms[v.name] = off
            elif v.space == "global":
                self.global_syms[v.name] = len(self.global_vars)
                self.global_vars.append(v)
            elif v.space == "shared":
                self.shared_vars.append(v)
            else:
                raise DecodeError(f"module-scope .{v.space} variable {v.name} is not supported (line {v.line})")
        self.const_bank = bytes(cb)


def _init_bytes(v: VarDecl):
    n = v.count if v.count is not None else len(v.init or [])
    size = n * v.elem_size
    if not v.init:
        return b"\0" * size
    dt = np.dtype(STORE[v.type]) if v.type not in ("f16", "bf16") else np.dtype(np.uint16)
    vals = list(v.init) + [0] * (n - len(v.init))
    if v.type == "f32":
        arr = np.array(vals, dtype=np.float64).astype(np.float32)
    elif v.type == "f64":
        arr = np.array(vals, dtype=np.float64)
    else:
        arr = np.array([int(x) & ((1 << (8 * v.elem_size)) - 1) for x in vals], dtype=UNSIGNED_OF[v.elem_size])
        arr = arr.view(dt) if dt.kind != "b" else arr
    return arr.tobytes()[:size]


# ============================================================================== block code generation
class _Gen:
    """Generates the Python source of one code block."""

    def __init__(self, dec, bindex):
        self.dec = dec
        self.b = bindex
        self.lines = []
        self.reads = []
        self.read_set = set()
        self.defined = set()
        self.written = []
        self.written_set = set()
        self.tmp = 0
        self.ret_expr = None

    # --- registers
    def use(self, slot):
        if slot not in self.defined and slot not in self.read_set:
            self.read_set.add(slot)
            self.reads.append(slot)
        return f"v{slot}"

    def define(self, slot):
        self.defined.add(slot)
        if slot not in self.written_set:
            self.written_set.add(slot)
            self.written.append(slot)
        return f"v{slot}"

    def new_tmp(self):
        self.tmp += 1
        return f"t{self.tmp}"

    def emit(self, line):
        self.lines.append(line)


class Decoder:
    def __init__(self, mod_ast, msyms: _ModuleSyms, fn_ast):
        self.mod = mod_ast
        self.msyms = msyms
        self.fn = fn_ast
        self.ns: dict[str, Any] = {"np": np, "ops": ops}
        for dt, name in DTNAME.items():
            self.ns[name] = dt.type
        self.consts: dict[Any, Any] = {}
        self.slots: dict[Any, Any] = {}
        self.code: Any = None

    # ----------------------------------------------------------------- constants / slots
    def const(self, value, dt):
        dt = np.dtype(dt)
        key = (value.tobytes() if isinstance(value, np.generic) else repr(value), dt.str)
        name = self.consts.get(key)
        if name is None:
            name = f"k{len(self.consts)}"
            self.consts[key] = name
            self.ns[name] = value if not isinstance(value, (int, float, bool, np.generic)) else dt.type(value)
        return name

    def slot(self, name, inst=None):
        s = self.slots.get(name)
        if s is None:
            if name in SPECIALS or name in (SBASE, LBASE):
                s = len(self.code.slot_names)
                self.slots[name] = s
                self.code.slot_names.append(name)
                self.code.slot_dtypes.append(np.dtype(np.uint64 if name in (SBASE, LBASE, "%clock64",
                                                                            "%globaltimer") else SPECIAL_DT))
                self.code.specials[name] = s
            else:
                if inst is not None:
                    _err(inst, f"undeclared register {name}")
                raise DecodeError(f"undeclared register {name}")
        return s

    def imm_value(self, imm: Imm, t):
        """Python/numpy value of an immediate for PTX type t."""
        dt = np.dtype(STORE[t]) if t in STORE else np.dtype(t)
        v: Any = imm.value
        if dt.kind in "iub":
            if dt.kind == "b":
                return dt.type(bool(v))
            if imm.kind in ("f32", "f64") and isinstance(v, np.floating) and dt.itemsize == v.itemsize:
                v = int(np.array(v).view(UNSIGNED_OF[v.itemsize]))
            elif imm.kind in ("f32", "f64", "float") and t not in ("f16", "bf16"):
                if isinstance(v, (float, np.floating)):
                    v = float(v)
                    fmt = {4: ("<f", "<I"), 8: ("<d", "<Q"), 2: None}[dt.itemsize] if dt.itemsize in (4, 8) else None
                    if fmt is None:
                        v = int(v)
                    else:
                        v = struct.unpack(fmt[1], struct.pack(fmt[0], v))[0]
            if t in ("f16", "bf16") and isinstance(v, (float, np.floating)):
                if t == "f16":
                    v = int(np.array(v, np.float16).view(np.uint16))
                else:
                    v = int(ops.f32_to_bf16(np.array([v], np.float32))[0])
            bits = 8 * dt.itemsize
            if isinstance(v, (float, np.floating)):
                v = int(v)
            v = int(v) & ((1 << bits) - 1)
            if dt.kind == "i" and v >= 1 << (bits - 1):
                v -= 1 << bits
            return dt.type(v)
        if isinstance(v, np.floating) and v.dtype == dt:
            return v   # exact bits (NaN payloads) of a 0f/0d immediate
        return dt.type(v)

    # ----------------------------------------------------------------- operand access
    def src(self, g: _Gen, op, t, inst):
        """(expr, kind) reading operand ``op`` as PTX type ``t``; kind: 'alias' | 'arr' | 'scalar'."""
        T = np.dtype(STORE[t]) if t in STORE else np.dtype(t)
        if isinstance(op, Reg):
            if op.name in SPECIALS:
                s = self.slot(op.name)
            else:
                s = self.slot(op.name, inst)
            v = g.use(s)
            D = self.code.slot_dtypes[s]
            if D == T:
                return v, "alias"
            if D.itemsize == T.itemsize:
                return f"{v}.view({DTNAME[T]})", "alias"
            if T.kind == "b":
                return f"({v} != 0)", "arr"
            if D.kind == "b":
                return f"{v}.astype({DTNAME[T]})", "arr"
            if T.itemsize < D.itemsize and D.kind == "f":
                _err(inst, f"cannot read {D} register {op.name} as .{t}")
            if T.itemsize > D.itemsize and D.kind in "iu" and T.kind in "iu":
                # widen per the instruction's signedness
                src_dt = SIGNED_OF[D.itemsize] if T.kind == "i" else UNSIGNED_OF[D.itemsize]
                return f"{v}.view({DTNAME[np.dtype(src_dt)]}).astype({DTNAME[T]})", "arr"
            if T.itemsize < D.itemsize and D.kind in "iu" and T.kind in "iu":
                return f"{v}.astype({DTNAME[T]})", "arr"
            if T.kind == "f" and D.kind in "iu" and T.itemsize < D.itemsize:
                return f"{v}.astype({DTNAME[np.dtype(UNSIGNED_OF[T.itemsize])]}).view({DTNAME[T]})", "arr"
            return f"{v}.astype({DTNAME[T]})", "arr"
        if isinstance(op, NegPred):
            s = self.slot(op.name, inst)
            return f"(~{g.use(s)})", "arr"
        if isinstance(op, Imm):
            return self.const(self.imm_value(op, t), T), "scalar"
        if isinstance(op, Sym):
            return self.const(self.sym_address(op.name, inst) + op.offset, T) if op.name not in self.msyms.global_syms \
                else f"{DTNAME[T]}(X.gaddr[{self.msyms.global_syms[op.name]}] + {op.offset})", "scalar"
        _err(inst, f"unsupported operand {op!r}")

    def sym_address(self, name, inst):
        c = self.code
        if name in c.shared_syms:
            return c.shared_syms[name]
        if name in c.local_syms:
            return c.local_syms[name]
        if name in self.msyms.const_syms:
            return self.msyms.const_syms[name]
        for p in c.params:
            if p.name == name:
                return p.offset
        _err(inst, f"unknown symbol {name}")

    def sym_space(self, name):
        c = self.code
        if name in c.shared_syms:
            return "shared"
        if name in c.local_syms:
            return "local"
        if name in self.msyms.const_syms:
            return "const"
        if name in self.msyms.global_syms:
            return "global"
        if any(p.name == name for p in c.params):
            return "param"
        return None

    def dst(self, g: _Gen, op, t, expr, kind, inst, guard=None):
        """Emit an assignment of ``expr`` (a value of PTX type t) to register operand ``op``."""
        if op is None:
            return
        if not isinstance(op, Reg):
            _err(inst, f"destination must be a register, got {op!r}")
        T = np.dtype(STORE[t]) if t in STORE else np.dtype(t)
        s = self.slot(op.name, inst)
        D = self.code.slot_dtypes[s]
        if op.name in self.code.specials:
            _err(inst, f"cannot write special register {op.name}")
        if kind == "scalar":
            expr = f"np.full(n, {expr}, {DTNAME[T]})"
            kind = "arr"
        if D == T:
            e = expr
        elif D.itemsize == T.itemsize and D.kind != "b" and T.kind != "b":
            e = f"({expr}).view({DTNAME[D]})"
        elif D.kind == "b":
            e = f"(({expr}) != 0)"
            kind = "arr"
        elif T.kind == "b":
            e = f"({expr}).astype({DTNAME[D]})"
            kind = "arr"
        elif D.itemsize > T.itemsize:
            if T.kind == "i":
                e = f"({expr}).astype({DTNAME[np.dtype(SIGNED_OF[D.itemsize])]})"
                if D.kind != "i":
                    e += f".view({DTNAME[D]})"
            elif T.kind == "f":
                e = f"({expr}).view({DTNAME[np.dtype(UNSIGNED_OF[T.itemsize])]}).astype({DTNAME[D]})"
            else:
                e = f"({expr}).astype({DTNAME[D]})"
            kind = "arr"
        else:
            if T.kind == "f":
                e = f"({expr}).view({DTNAME[np.dtype(UNSIGNED_OF[T.itemsize])]}).astype({DTNAME[D]})"
            else:
                e = f"({expr}).astype({DTNAME[D]})"
            kind = "arr"
        if guard is not None:
            old = g.use(s)
            g.define(s)
            g.emit(f"{old} = np.where({guard}, {e}, {old})")
            return
        if kind == "alias":
            e = f"({e}).copy()"
        v = g.define(s)
        g.emit(f"{v} = {e}")

    def guard_expr(self, g, inst):
        if inst.pred is None:
            return None
        s = self.slot(inst.pred, inst)
        v = g.use(s)
        return f"(~{v})" if inst.pred_neg else v

    # ----------------------------------------------------------------- function decode
    def decode(self):
        fn = self.fn
        params = []
        off = 0
        for p in fn.params:
            size = p.count * p.elem_size
            off = _align(off, p.align)
            params.append(Param(p.name, p.type, size, p.align, off))
            off += size
        code = self.code = EntryCode(fn.name, params, off)
        code.text_lines = self.mod.lines
        # registers and local/shared variables
        shared_off = 0
        for v in self.msyms.shared_vars:
            if v.extern:
                continue
            shared_off = _align(shared_off, v.align)
            code.shared_syms[v.name] = shared_off
            shared_off += v.size
        extern_shared = [v for v in self.msyms.shared_vars if v.extern]
        local_off = 0
        for st in fn.body:
            if isinstance(st, RegDecl):
                D = np.dtype(STORE[st.type])
                for name in st.names:
                    if name in self.slots:
                        if code.slot_dtypes[self.slots[name]] != D:
                            raise DecodeError(f"register {name} redeclared with another type (line {st.line})")
                        continue
                    self.slots[name] = len(code.slot_names)
                    code.slot_names.append(name)
                    code.slot_dtypes.append(D)
            elif isinstance(st, VarDecl):
                if st.space == "shared":
                    if st.extern:
                        extern_shared.append(st)
                        continue
                    shared_off = _align(shared_off, st.align)
                    code.shared_syms[st.name] = shared_off
                    shared_off += st.size
                elif st.space == "local":
                    local_off = _align(local_off, st.align)
                    code.local_syms[st.name] = local_off
                    local_off += st.size
                elif st.space == "param":
                    # a call's argument (NVRTC declares them in a { callseq } scope and reuses the names):
                    # held per thread as the raw bits of one register, written by st.param, read by call
                    if st.count != 1:
                        raise DecodeError(f".param {st.name}: array (by-value aggregate) call arguments are not "
                                          f"supported (line {st.line})")
                    name = CALL_PARAM + st.name
                    if name not in self.slots:
                        self.slots[name] = len(code.slot_names)
                        code.slot_names.append(name)
                        code.slot_dtypes.append(np.dtype(np.uint64))
                else:
                    raise DecodeError(f".{st.space} variable inside a function is not supported (line {st.line})")
        dyn_align = max([16] + [v.align for v in extern_shared])
        code.dyn_shared_offset = _align(shared_off, dyn_align) if extern_shared else shared_off
        for v in extern_shared:
            code.shared_syms[v.name] = code.dyn_shared_offset
        code.shared_static = shared_off
        code.local_size = _align(local_off, 16) if local_off else 0

        # split into basic blocks
        stmts = [s for s in fn.body if isinstance(s, (Inst, Label))]
        label_block = {}
        groups = []           # list of (kind, [insts])
        cur = []

        def close():
            nonlocal cur
            if cur:
                groups.append(("code", cur))
            cur = []

        pending_labels = []
        for st in stmts:
            if isinstance(st, Label):
                close()
                pending_labels.append(st.name)
                continue
            base = st.opcode.split(".")[0]
            if base not in _IMPLEMENTED:
                raise DecodeError(f"PTX opcode '{st.opcode}' is not implemented by the simulator "
                                  f"(line {st.line}: {st.text})")
            code.opcodes.add(st.opcode)
            special = (base in ("bar", "barrier") and "warp" not in st.opcode.split(".")) or \
                base in ("shfl", "vote", "activemask", "mma", "ldmatrix")
            if special:
                close()
                for lb in pending_labels:
                    label_block[lb] = len(groups)
                pending_labels = []
                groups.append(("bar" if base in ("bar", "barrier") else "warp", [st]))
                continue
            if not cur:
                for lb in pending_labels:
                    label_block[lb] = len(groups)
                pending_labels = []
            cur.append(st)
            if base in ("bra", "ret", "exit", "trap"):
                close()
        close()
        for lb in pending_labels:
            label_block[lb] = len(groups)
        nblocks = len(groups)
        # an implicit exit block at the end
        groups.append(("code", []))
        self.label_block = label_block

        iid = 0
        for bi, (kind, insts) in enumerate(groups):
            blk = Block(index=bi, kind=kind)
            blk.nxt = bi + 1 if bi + 1 < len(groups) else None
            if insts:
                blk.line, blk.text = insts[0].line, insts[0].text
            if kind == "code":
                self._gen_code_block(blk, insts, iid)
                if bi == nblocks:   # the implicit end: exit
                    blk.term = "exit"
            elif kind == "bar":
                inst = insts[0]
                if inst.pred is not None:
                    _err(inst, "predicated barriers are not supported")
                ops_ = inst.operands
                if len(ops_) > 1:
                    _err(inst, "bar.sync with a thread count is not supported")
                blk.ninst = 1
                code.insts.append((inst.line, inst.text))
            else:
                blk.warp = self._warp_op(insts[0])
                blk.uses = {self.slot(r, insts[0]) for r in _regs_of(insts[0])} | {self.slot("%laneid")}
                blk.ninst = 1
                code.insts.append((insts[0].line, insts[0].text))
            blk.classes = class_counts(st.opcode for st in insts)
            iid += len(insts)
            code.blocks.append(blk)
        _liveness(code.blocks)
        for blk in code.blocks:
            if blk.kind == "code":
                _make_lazy(self, blk, code)
        return code

    # ----------------------------------------------------------------- code blocks
    def _gen_code_block(self, blk, insts, iid0):
        g = _Gen(self, blk.index)
        code = self.code
        for inst in insts:
            iid = len(code.insts)
            code.insts.append((inst.line, inst.text))
            base = inst.opcode.split(".")[0]
            if base == "bra":
                tgt = inst.operands[0]
                if not isinstance(tgt, Sym) or tgt.name not in self.label_block:
                    _err(inst, "branch to an unknown label")
                blk.target = self.label_block[tgt.name]
                if inst.pred is None:
                    blk.term = "bra"
                else:
                    blk.term = "cbra"
                    g.ret_expr = self.guard_expr(g, inst)
                continue
            if base in ("ret", "exit"):
                if inst.pred is None:
                    blk.term = "exit"
                else:
                    blk.term = "cexit"
                    g.ret_expr = self.guard_expr(g, inst)
                continue
            try:
                self._inst(g, inst, iid)
            except DecodeError:
                raise
            except (KeyError, IndexError, ValueError, TypeError, AttributeError) as e:
                raise DecodeError(f"cannot decode '{inst.opcode}': {type(e).__name__}: {e} "
                                  f"(PTX line {inst.line}: {inst.text})") from None
        blk.ninst = len(insts)
        blk.gen = g
        blk.uses = set(g.reads)
        blk.defs = set(g.written)

    # ----------------------------------------------------------------- instruction table
    def _inst(self, g, inst, iid):
        parts = inst.opcode.split(".")
        base = parts[0]
        mods = parts[1:]
        h = getattr(self, f"_op_{base}", None)
        if h is None:
            raise DecodeError(f"PTX opcode '{inst.opcode}' is not implemented by the simulator "
                              f"(line {inst.line}: {inst.text})")
        h(g, inst, mods, iid)

    # helpers
    def _ops(self, inst, n):
        if len(inst.operands) != n:
            _err(inst, f"expected {n} operands")
        return inst.operands

    def _simple(self, g, inst, t, fmt, nsrc, dst_t=None, src_ts=None):
        ops_ = self._ops(inst, nsrc + 1)
        srcs = []
        any_arr = False
        for i, op in enumerate(ops_[1:]):
            st = src_ts[i] if src_ts else t
            e, k = self.src(g, op, st, inst)
            any_arr |= k != "scalar"
            srcs.append(e)
        expr = fmt.format(*srcs)
        guard = self.guard_expr(g, inst)
        self.dst(g, ops_[0], dst_t or t, expr, "arr" if any_arr else "scalar", inst, guard)

    @staticmethod
    def _type(mods, inst):
        t = mods[-1] if mods else None
        if t not in TYPE_SIZES:
            _err(inst, "missing or unknown type")
        return t

    # -- arithmetic
    def _f_round(self, mods):
        for r in ("rn", "rz", "rm", "rp"):
            if r in mods:
                return r
        return None

    def _float_binop(self, g, inst, mods, t, npop):
        rnd = self._f_round(mods)
        ftz = "ftz" in mods
        sat = "sat" in mods
        if t in ("f16", "bf16", "f16x2", "bf16x2"):
            return self._half_op(g, inst, mods, t, npop, 2)
        if rnd in (None, "rn"):
            fmt = "({0} %s {1})" % npop
        else:
            W = "f64" if t == "f32" else "np.longdouble"
            fn = "ops.round_f32" if t == "f32" else "ops.round_f64"
            fmt = "%s(np.asarray({0}, %s) %s np.asarray({1}, %s), '%s')" % (fn, W, npop, W, rnd)
        if ftz:
            fmt = fmt.replace("{0}", "ops.ftz32({0})").replace("{1}", "ops.ftz32({1})")
            fmt = f"ops.ftz32({fmt})"
        if sat:
            fmt = f"ops.sat01({fmt})"
        self._simple(g, inst, t, fmt, 2)

    def _half_op(self, g, inst, mods, t, npop, nsrc):
        conv_in = {"f16": "np.asarray({x}).view(h16).astype(f32)", "bf16": "ops.bf16_to_f32({x})"}
        if t in ("f16x2", "bf16x2"):
            _err(inst, f"packed .{t} arithmetic is not supported")
        ci = conv_in[t]
        args = [ci.format(x="{%d}" % i) for i in range(nsrc)]
        if npop == "fma":
            expr = f"ops.fma32({args[0]}, {args[1]}, {args[2]})"
        elif npop in ("min", "max"):
            expr = f"ops.f{npop}({args[0]}, {args[1]})"
        else:
            expr = f"({args[0]} {npop} {args[1]})"
        if "sat" in mods:
            expr = f"ops.sat01({expr})"
        if t == "f16":
            expr = f"({expr}).astype(h16).view(u16)"
        else:
            expr = f"ops.f32_to_bf16({expr})"
        self._simple(g, inst, t, expr, nsrc)

    def _op_add(self, g, inst, mods, iid):
        t = self._type(mods, inst)
        if t[0] in "fb" and t.startswith(("f", "bf")):
            return self._float_binop(g, inst, mods, t, "+")
        if "sat" in mods:
            return self._simple(g, inst, t, "np.clip({0}.astype(s64) + {1}, -2**31, 2**31-1).astype(s32)", 2)
        if "cc" in mods or inst.opcode.startswith("addc"):
            _err(inst, "carry arithmetic is not supported")
        self._simple(g, inst, t, "({0} + {1})", 2)

    def _op_sub(self, g, inst, mods, iid):
        t = self._type(mods, inst)
        if t.startswith(("f", "bf")):
            return self._float_binop(g, inst, mods, t, "-")
        if "sat" in mods:
            return self._simple(g, inst, t, "np.clip({0}.astype(s64) - {1}, -2**31, 2**31-1).astype(s32)", 2)
        self._simple(g, inst, t, "({0} - {1})", 2)

    def _wide(self, t):
        return {"u16": "u32", "s16": "s32", "u32": "u64", "s32": "s64"}[t]

    def _op_mul(self, g, inst, mods, iid):
        t = self._type(mods, inst)
        if t.startswith(("f", "bf")):
            return self._float_binop(g, inst, mods, t, "*")
        if "wide" in mods:
            w = self._wide(t)
            return self._simple(g, inst, t, "({0}.astype(%s) * {1}.astype(%s))" % (w, w), 2, dst_t=w)
        if "hi" in mods:
            return self._simple(g, inst, t, "ops.mulhi({0}, {1}, %s)" % DTNAME[np.dtype(STORE[t])], 2)
        self._simple(g, inst, t, "({0} * {1})", 2)

    def _op_mul24(self, g, inst, mods, iid):
        t = self._type(mods, inst)
        if "hi" in mods:
            _err(inst, "mul24.hi is not supported")
        sh = 8
        self._simple(g, inst, t, "(({0} << %s(%d)) >> %s(%d)) * (({1} << %s(%d)) >> %s(%d))" %
                     ((DTNAME[np.dtype(STORE[t])], sh) * 4), 2)

    def _op_mad24(self, g, inst, mods, iid):
        t = self._type(mods, inst)
        if "hi" in mods:
            _err(inst, "mad24.hi is not supported")
        d = DTNAME[np.dtype(STORE[t])]
        self._simple(g, inst, t, f"((({{0}} << {d}(8)) >> {d}(8)) * (({{1}} << {d}(8)) >> {d}(8)) + {{2}})", 3)

    def _op_mad(self, g, inst, mods, iid):
        t = self._type(mods, inst)
        if t.startswith(("f", "bf")):
            return self._op_fma(g, inst, mods, iid)
        if "wide" in mods:
            w = self._wide(t)
            return self._simple(g, inst, t, "({0}.astype(%s) * {1}.astype(%s) + {2})" % (w, w), 3, dst_t=w,
                                src_ts=[t, t, w])
        if "hi" in mods:
            return self._simple(g, inst, t, "(ops.mulhi({0}, {1}, %s) + {2})" % DTNAME[np.dtype(STORE[t])], 3)
        if "cc" in mods:
            _err(inst, "carry arithmetic is not supported")
        self._simple(g, inst, t, "({0} * {1} + {2})", 3)

    def _op_fma(self, g, inst, mods, iid):
        t = self._type(mods, inst)
        rnd = self._f_round(mods) or "rn"
        if t in ("f16", "bf16", "f16x2", "bf16x2"):
            return self._half_op(g, inst, mods, t, "fma", 3)
        if t == "f32":
            if rnd != "rn":
                fmt = "ops.round_f32(np.multiply({0}, {1}, dtype=np.longdouble) + {2}, '%s')" % rnd
            else:
                fmt = "ops.fma32({0}, {1}, {2})"
            if "ftz" in mods:
                fmt = "ops.ftz32(%s)" % fmt.replace("{0}", "ops.ftz32({0})").replace("{1}", "ops.ftz32({1})") \
                    .replace("{2}", "ops.ftz32({2})")
        else:
            fmt = "ops.fma64({0}, {1}, {2})" if rnd == "rn" else \
                "ops.round_f64(np.asarray({0}, np.longdouble) * {1} + {2}, '%s')" % rnd
        if "sat" in mods:
            fmt = f"ops.sat01({fmt})"
        self._simple(g, inst, t, fmt, 3)

    def _op_div(self, g, inst, mods, iid):
        t = self._type(mods, inst)
        if t.startswith("f"):
            rnd = self._f_round(mods)
            if rnd in (None, "rn") or "approx" in mods or "full" in mods:
                fmt = "({0} / {1})"
            else:
                W = "f64" if t == "f32" else "np.longdouble"
                fn = "ops.round_f32" if t == "f32" else "ops.round_f64"
                fmt = "%s(np.asarray({0}, %s) / np.asarray({1}, %s), '%s')" % (fn, W, W, rnd)
            if "ftz" in mods:
                fmt = "ops.ftz32(%s)" % fmt.replace("{0}", "ops.ftz32({0})").replace("{1}", "ops.ftz32({1})")
            return self._simple(g, inst, t, fmt, 2)
        if t[0] == "s":
            return self._simple(g, inst, t, "ops.sdiv({0}, {1})", 2)
        self._simple(g, inst, t, "ops.udiv({0}, {1})", 2)

    def _op_rem(self, g, inst, mods, iid):
        t = self._type(mods, inst)
        self._simple(g, inst, t, "ops.srem({0}, {1})" if t[0] == "s" else "ops.urem({0}, {1})", 2)

    def _op_sad(self, g, inst, mods, iid):
        t = self._type(mods, inst)
        self._simple(g, inst, t, "(np.maximum({0}, {1}) - np.minimum({0}, {1}) + {2})", 3)

    def _op_abs(self, g, inst, mods, iid):
        t = self._type(mods, inst)
        fmt = "np.abs({0})"
        if t in ("f16", "bf16"):
            fmt = "({0} & u16(0x7FFF))"
        elif "ftz" in mods:
            fmt = "ops.ftz32(np.abs({0}))"
        self._simple(g, inst, t, fmt, 1)

    def _op_neg(self, g, inst, mods, iid):
        t = self._type(mods, inst)
        fmt = "np.negative({0})"
        if t in ("f16", "bf16"):
            fmt = "({0} ^ u16(0x8000))"
        elif "ftz" in mods:
            fmt = "ops.ftz32(np.negative({0}))"
        self._simple(g, inst, t, fmt, 1)

    def _op_min(self, g, inst, mods, iid):
        self._minmax(g, inst, mods, "min")

    def _op_max(self, g, inst, mods, iid):
        self._minmax(g, inst, mods, "max")

    def _minmax(self, g, inst, mods, which):
        t = self._type(mods, inst)
        if t in ("f16", "bf16", "f16x2", "bf16x2"):
            return self._half_op(g, inst, mods, t, which, 2)
        if t.startswith("f"):
            if "NaN" in mods:
                fmt = "np.%simum({0}, {1})" % which
            else:
                fmt = "ops.f%s({0}, {1})" % which
            if "ftz" in mods:
                fmt = f"ops.ftz32({fmt})"
            return self._simple(g, inst, t, fmt, 2)
        self._simple(g, inst, t, "np.%simum({0}, {1})" % which, 2)

    def _op_and(self, g, inst, mods, iid):
        self._simple(g, inst, self._type(mods, inst), "({0} & {1})", 2)

    def _op_or(self, g, inst, mods, iid):
        self._simple(g, inst, self._type(mods, inst), "({0} | {1})", 2)

    def _op_xor(self, g, inst, mods, iid):
        self._simple(g, inst, self._type(mods, inst), "({0} ^ {1})", 2)

    def _op_not(self, g, inst, mods, iid):
        self._simple(g, inst, self._type(mods, inst), "(~{0})", 1)

    def _op_cnot(self, g, inst, mods, iid):
        t = self._type(mods, inst)
        self._simple(g, inst, t, "({0} == 0).astype(%s)" % DTNAME[np.dtype(STORE[t])], 1)

    def _op_shl(self, g, inst, mods, iid):
        self._shift(g, inst, mods, "shl")

    def _op_shr(self, g, inst, mods, iid):
        self._shift(g, inst, mods, "shr")

    def _shift(self, g, inst, mods, which):
        t = self._type(mods, inst)
        d, a, b = self._ops(inst, 3)
        W = TYPE_SIZES[t] * 8
        T = np.dtype(STORE[t])
        ea, ka = self.src(g, a, t, inst)
        guard = self.guard_expr(g, inst)
        if isinstance(b, Imm):
            k = int(b.value)
            if k >= W:
                if which == "shr" and T.kind == "i":
                    expr = f"({ea} >> {self.const(W - 1, T)})"
                else:
                    expr = f"np.zeros_like({ea})" if ka != "scalar" else self.const(0, T)
            else:
                op = "<<" if which == "shl" else ">>"
                expr = f"({ea} {op} {self.const(k, T)})"
            return self.dst(g, d, t, expr, ka if ka != "alias" else "arr", inst, guard)
        eb, kb = self.src(g, b, "u32", inst)
        expr = f"ops.{which}({ea}, {eb}, {W})"
        self.dst(g, d, t, expr, "arr", inst, guard)

    def _op_popc(self, g, inst, mods, iid):
        t = self._type(mods, inst)
        self._simple(g, inst, t, "ops.popc({0})", 1, dst_t="u32")

    def _op_clz(self, g, inst, mods, iid):
        t = self._type(mods, inst)
        self._simple(g, inst, t, "ops.clz({0}, %d)" % (TYPE_SIZES[t] * 8), 1, dst_t="u32")

    def _op_bfind(self, g, inst, mods, iid):
        t = self._type(mods, inst)
        self._simple(g, inst, t, "ops.bfind({0}, %d, %s, %s)" % (TYPE_SIZES[t] * 8, t[0] == "s",
                                                                 "shiftamt" in mods), 1, dst_t="u32")

    def _op_brev(self, g, inst, mods, iid):
        t = self._type(mods, inst)
        self._simple(g, inst, t, "ops.brev({0}, %d)" % (TYPE_SIZES[t] * 8), 1)

    def _op_bfe(self, g, inst, mods, iid):
        t = self._type(mods, inst)
        self._simple(g, inst, t, "ops.bfe({0}, {1}, {2}, %d, %s)" % (TYPE_SIZES[t] * 8, t[0] == "s"), 3,
                     src_ts=[t, "u32", "u32"])

    def _op_bfi(self, g, inst, mods, iid):
        t = self._type(mods, inst)
        self._simple(g, inst, t, "ops.bfi({0}, {1}, {2}, {3}, %d)" % (TYPE_SIZES[t] * 8), 4,
                     src_ts=[t, t, "u32", "u32"])

    def _op_prmt(self, g, inst, mods, iid):
        mode = None
        for m in mods:
            if m in ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16"):
                mode = m
        if mode is not None:
            _err(inst, f"prmt.{mode} is not supported")
        self._simple(g, inst, "b32", "ops.prmt({0}, {1}, {2})", 3)

    def _op_copysign(self, g, inst, mods, iid):
        t = self._type(mods, inst)
        self._simple(g, inst, t, "np.copysign({1}, {0})", 2)

    def _op_testp(self, g, inst, mods, iid):
        t = self._type(mods, inst)
        mode = mods[0]
        self._simple(g, inst, t, "ops.testp({0}, '%s')" % mode, 1, dst_t="pred")

    def _unary_f(self, g, inst, mods, fmt32, fmt64=None):
        t = self._type(mods, inst)
        if t == "f64":
            fmt = fmt64 or fmt32
        else:
            fmt = fmt32
            if "ftz" in mods:
                fmt = "ops.ftz32(%s)" % fmt.replace("{0}", "ops.ftz32({0})")
        self._simple(g, inst, t, fmt, 1)

    def _op_rcp(self, g, inst, mods, iid):
        t = self._type(mods, inst)
        rnd = self._f_round(mods)
        if rnd in (None, "rn") or "approx" in mods:
            return self._unary_f(g, inst, mods, "(%s / {0})" % self.const(1.0, STORE[t]))
        fn = "ops.round_f32" if t == "f32" else "ops.round_f64"
        W = "f64" if t == "f32" else "np.longdouble"
        self._unary_f(g, inst, mods, "%s(1.0 / np.asarray({0}, %s), '%s')" % (fn, W, rnd))

    def _op_sqrt(self, g, inst, mods, iid):
        t = self._type(mods, inst)
        rnd = self._f_round(mods)
        if rnd in (None, "rn") or "approx" in mods:
            return self._unary_f(g, inst, mods, "np.sqrt({0})")
        fn = "ops.round_f32" if t == "f32" else "ops.round_f64"
        W = "f64" if t == "f32" else "np.longdouble"
        self._unary_f(g, inst, mods, "%s(np.sqrt(np.asarray({0}, %s)), '%s')" % (fn, W, rnd))

    def _op_rsqrt(self, g, inst, mods, iid):
        t = self._type(mods, inst)
        self._unary_f(g, inst, mods, "(1.0 / np.sqrt(np.asarray({0}, f64))).astype(%s)" % DTNAME[np.dtype(STORE[t])])

    def _op_ex2(self, g, inst, mods, iid):
        self._unary_f(g, inst, mods, "np.exp2({0})")

    def _op_lg2(self, g, inst, mods, iid):
        self._unary_f(g, inst, mods, "np.log2({0})")

    def _op_sin(self, g, inst, mods, iid):
        self._unary_f(g, inst, mods, "np.sin({0})")

    def _op_cos(self, g, inst, mods, iid):
        self._unary_f(g, inst, mods, "np.cos({0})")

    def _op_tanh(self, g, inst, mods, iid):
        self._unary_f(g, inst, mods, "np.tanh({0})")

    # -- comparisons / selection
    _CMP_INT = {"eq": "({0} == {1})", "ne": "({0} != {1})", "lt": "({0} < {1})", "le": "({0} <= {1})",
                "gt": "({0} > {1})", "ge": "({0} >= {1})", "lo": "({0} < {1})", "ls": "({0} <= {1})",
                "hi": "({0} > {1})", "hs": "({0} >= {1})"}
    _CMP_F = {"eq": "({0} == {1})", "ne": "(({0} < {1}) | ({0} > {1}))", "lt": "({0} < {1})",
              "le": "({0} <= {1})", "gt": "({0} > {1})", "ge": "({0} >= {1})",
              "equ": "(~(({0} < {1}) | ({0} > {1})))", "neu": "({0} != {1})", "ltu": "(~({0} >= {1}))",
              "leu": "(~({0} > {1}))", "gtu": "(~({0} <= {1}))", "geu": "(~({0} < {1}))",
              "num": "(({0} == {0}) & ({1} == {1}))", "nan": "(({0} != {0}) | ({1} != {1}))"}

    def _cmp(self, g, inst, cmp, t, a, b):
        ftz = False
        if t in ("f16", "bf16"):
            conv = "np.asarray({x}).view(h16)" if t == "f16" else "ops.bf16_to_f32({x})"
            ea, ka = self.src(g, a, t, inst)
            eb, kb = self.src(g, b, t, inst)
            ea, eb = conv.format(x=ea), conv.format(x=eb)
            table = self._CMP_F
        else:
            ea, ka = self.src(g, a, t, inst)
            eb, kb = self.src(g, b, t, inst)
            table = self._CMP_F if t.startswith("f") else self._CMP_INT
        if cmp not in table:
            _err(inst, f"unknown comparison .{cmp}")
        if (ka == "scalar" and kb == "scalar"):
            ea = f"np.full(n, {ea})"
        return table[cmp].format(ea, eb), ftz

    def _op_setp(self, g, inst, mods, iid):
        t = self._type(mods, inst)
        cmp = mods[0]
        boolop = mods[1] if len(mods) > 2 and mods[1] in ("and", "or", "xor") else None
        ops_ = inst.operands
        d = ops_[0]
        q = None
        if isinstance(d, Pipe):
            d, q = d.first, d.second
        a, b = ops_[1], ops_[2]
        expr, _ = self._cmp(g, inst, cmp, t, a, b)
        guard = self.guard_expr(g, inst)
        c = None
        if boolop:
            if len(ops_) != 4:
                _err(inst, "setp with a boolean operation needs a predicate operand")
            c, _ = self.src(g, ops_[3], "pred", inst)
        tmp = g.new_tmp()
        g.emit(f"{tmp} = {expr}")
        pyop = {"and": "&", "or": "|", "xor": "^"}.get(boolop)
        if q is not None:
            tq = g.new_tmp()
            g.emit(f"{tq} = ~{tmp}")
            if boolop:
                g.emit(f"{tq} = {tq} {pyop} {c}")
        if boolop:
            g.emit(f"{tmp} = {tmp} {pyop} {c}")
        self.dst(g, d, "pred", tmp, "arr", inst, guard)
        if q is not None:
            self.dst(g, q, "pred", tq, "arr", inst, guard)

    def _op_set(self, g, inst, mods, iid):
        cmp = mods[0]
        boolop = mods[1] if mods[1] in ("and", "or", "xor") else None
        dt_, st_ = mods[-2], mods[-1]
        ops_ = inst.operands
        expr, _ = self._cmp(g, inst, cmp, st_, ops_[1], ops_[2])
        if boolop:
            c, _ = self.src(g, ops_[3], "pred", inst)
            expr = f"({expr} {({'and': '&', 'or': '|', 'xor': '^'})[boolop]} {c})"
        T = np.dtype(STORE[dt_])
        one = self.const(1.0, T) if T.kind == "f" else self.const((1 << (8 * T.itemsize)) - 1 if T.kind == "u"
                                                                  else -1, T)
        zero = self.const(0, T)
        self.dst(g, ops_[0], dt_, f"np.where({expr}, {one}, {zero})", "arr", inst, self.guard_expr(g, inst))

    def _op_selp(self, g, inst, mods, iid):
        t = self._type(mods, inst)
        d, a, b, c = self._ops(inst, 4)
        ea, _ = self.src(g, a, t, inst)
        eb, _ = self.src(g, b, t, inst)
        ec, kc = self.src(g, c, "pred", inst)
        self.dst(g, d, t, f"np.where({ec}, {ea}, {eb})", "arr" if kc != "scalar" else "scalar", inst,
                 self.guard_expr(g, inst))

    def _op_slct(self, g, inst, mods, iid):
        t, ct = mods[-2], mods[-1]
        d, a, b, c = self._ops(inst, 4)
        ea, _ = self.src(g, a, t, inst)
        eb, _ = self.src(g, b, t, inst)
        ec, _ = self.src(g, c, ct, inst)
        self.dst(g, d, t, f"np.where({ec} >= 0, {ea}, {eb})", "arr", inst, self.guard_expr(g, inst))

    # -- conversions / moves
    def _op_cvt(self, g, inst, mods, iid):
        dt_, at = mods[-2], mods[-1]
        flags = set(mods[:-2])
        d, a = self._ops(inst, 2)
        ea, ka = self.src(g, a, at, inst)
        D = np.dtype(STORE[dt_])
        Dn = DTNAME[D]
        rnd = next((m for m in ("rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi") if m in flags), None)
        ftz, sat = "ftz" in flags, "sat" in flags
        isf = lambda t: t in ("f16", "bf16", "f32", "f64")  # noqa: E731
        # source value as a real float / int array
        if at == "f16":
            val = f"np.asarray({ea}).view(h16).astype(f32)"
            vt = "f32"
        elif at == "bf16":
            val = f"ops.bf16_to_f32({ea})"
            vt = "f32"
        else:
            val, vt = ea, at
        if ftz and vt == "f32":
            val = f"ops.ftz32({val})"
        if dt_ == "tf32":
            if at != "f32" or rnd != "rna" and "rna" not in flags:
                _err(inst, "only cvt.rna.tf32.f32 is supported")
            expr = f"ops.f32_to_tf32_rna({val})"
        elif isf(dt_) and isf(at):
            if dt_ in ("f16", "bf16"):
                src64 = f"np.asarray({val})"
                if rnd not in (None, "rn") and dt_ == "f16":
                    _err(inst, f"cvt.{rnd}.f16 is not supported")
                if dt_ == "f16":
                    expr = f"{src64}.astype(h16).view(u16)"
                else:
                    expr = f"ops.f32_to_bf16({src64}.astype(f32))" if vt == "f32" else \
                        f"ops.f32_to_bf16(ops.round_f32(np.asarray({val}, f64), 'rz'))"
                if sat:
                    expr = expr.replace(src64, f"ops.sat01({src64})", 1)
            elif rnd in ("rni", "rzi", "rmi", "rpi"):
                expr = f"ops.f2f_int({val}, '{rnd}')"
                if vt != dt_:
                    expr = f"np.asarray({expr}).astype({Dn})"
            elif dt_ == "f32" and vt == "f64":
                expr = f"ops.round_f32({val}, '{rnd or 'rn'}')"
            else:
                expr = f"np.asarray({val}).astype({Dn})"
            if sat and dt_ not in ("f16", "bf16"):
                expr = f"ops.sat01({expr})"
            if ftz and dt_ == "f32":
                expr = f"ops.ftz32({expr})"
        elif isf(dt_):  # int → float
            if dt_ in ("f16", "bf16"):
                expr = f"np.asarray({val}).astype(f32)"
                expr = f"({expr}).astype(h16).view(u16)" if dt_ == "f16" else f"ops.f32_to_bf16({expr})"
            else:
                expr = (f"ops.i2f({val}, {rnd!r}, {Dn})" if rnd not in (None, "rn")
                        else f"np.asarray({val}).astype({Dn})")
            if sat:
                expr = f"ops.sat01({expr})"
        elif isf(at):   # float → int
            if rnd is None:
                _err(inst, "float-to-int cvt needs a rounding modifier")
            expr = f"ops.f2i({val}, '{rnd}', {Dn})"
        else:           # int → int
            if sat:
                lo, hi = np.iinfo(D).min, np.iinfo(D).max
                expr = f"np.clip(np.asarray({val}).astype(np.float64), {lo}, {hi}).astype({Dn})"
                if np.dtype(STORE[at]).itemsize == 8:
                    expr = f"np.clip(np.asarray({val}), {self.const(max(lo, 0) if at[0] == 'u' else lo, STORE[at])}, " \
                           f"{self.const(min(hi, np.iinfo(STORE[at]).max), STORE[at])}).astype({Dn})"
            elif np.dtype(STORE[at]) == D:
                expr = val
                if ka != "scalar":
                    ka = "alias"
            else:
                expr = f"{val}.astype({Dn})" if ka != "scalar" else f"{Dn}({val})"
        kind = "scalar" if ka == "scalar" else ("alias" if expr == ea and ka == "alias" else "arr")
        self.dst(g, d, dt_, expr, kind, inst, self.guard_expr(g, inst))

    def _op_cp(self, g, inst, mods, iid):
        """cp.async.{ca,cg}.shared.global [dst], [src], cp-size{, src-size}; cp.async.commit_group;
        cp.async.wait_group N; cp.async.wait_all (the copies land at the wait: rawdev.sim.ptx.interp)."""
        if not mods or mods[0] != "async":
            _err(inst, f"{inst.opcode} is not supported")
        rest = mods[1:]
        if rest in (["commit_group"], ["wait_group"], ["wait_all"]):
            if inst.pred is not None:
                _err(inst, f"a predicated {inst.opcode} is not supported")
            if rest == ["commit_group"]:
                g.emit("X.cp_commit()")
            elif rest == ["wait_all"]:
                g.emit("X.cp_wait(0, True)")
            else:
                op = inst.operands[0]
                if not isinstance(op, Imm):
                    _err(inst, "cp.async.wait_group takes an immediate")
                g.emit(f"X.cp_wait({int(self.imm_value(op, 'u32'))})")
            return
        if "shared" not in rest or "global" not in rest or not ({"ca", "cg"} & set(rest)):
            _err(inst, f"{inst.opcode} is not supported")
        ops_ = inst.operands
        if len(ops_) not in (3, 4) or not isinstance(ops_[2], Imm):
            _err(inst, "cp.async needs [dst], [src], cp-size{, src-size}")
        size = int(self.imm_value(ops_[2], "u32"))
        if size not in (4, 8, 16) or ("cg" in rest and size != 16):
            _err(inst, f"cp.async copies 4, 8 or 16 bytes (.cg: 16), not {size}")
        dbase, doff, _ = self._addr(g, inst, ops_[0], "shared")
        sbase, soff, _ = self._addr(g, inst, ops_[1], "global")
        sb, _lb = self._base_regs(g, "shared")
        ssz = self.src(g, ops_[3], "u32", inst)[0] if len(ops_) == 4 else "None"
        m = self.guard_expr(g, inst) or "None"
        g.emit(f"X.cp_async(n, {dbase or 'None'}, {doff}, {sbase or 'None'}, {soff}, {size}, {ssz}, {iid}, {m}, {sb})")

    _WIN = {"shared": "X.SHWIN", "local": "X.LCWIN", "const": "X.CWIN", "param": "X.PWIN"}

    def _op_cvta(self, g, inst, mods, iid):
        t = self._type(mods, inst)
        to = "to" in mods
        space = next((m for m in mods if m in SPACES), None)
        d, a = self._ops(inst, 2)
        ea, ka = self.src(g, a, t, inst)
        T = DTNAME[np.dtype(STORE[t])]
        if space == "global":
            expr, kind = ea, ka
        else:
            win = self._WIN[space]
            expr = f"({ea} - {T}({win}))" if to else f"({ea} + {T}({win}))"
            kind = "arr" if ka != "scalar" else "scalar"
            if ka == "scalar":
                expr = f"{T}({expr})"
        self.dst(g, d, t, expr, kind, inst, self.guard_expr(g, inst))

    def _op_mov(self, g, inst, mods, iid):
        t = self._type(mods, inst)
        d, a = self._ops(inst, 2)
        guard = self.guard_expr(g, inst)
        if isinstance(d, Vec):   # unpack
            T = np.dtype(STORE[t])
            n = len(d.items)
            piece = T.itemsize // n
            ea, _ = self.src(g, a, t, inst)
            tmp = g.new_tmp()
            pdt = UNSIGNED_OF[piece]
            g.emit(f"{tmp} = ops.unpack({ea}, {n}, {DTNAME[np.dtype(pdt)]})")
            ptype = {1: "b8", 2: "b16", 4: "b32"}[piece]
            for i, it in enumerate(d.items):
                if it is not None:
                    self.dst(g, it, ptype, f"{tmp}[{i}]", "arr", inst, guard)
            return
        if isinstance(a, Vec):   # pack
            T = np.dtype(STORE[t])
            n = len(a.items)
            piece = T.itemsize // n
            ptype = {1: "b8", 2: "b16", 4: "b32"}[piece]
            parts = []
            for it in a.items:
                e, k = self.src(g, it, ptype, inst)
                if k == "scalar":
                    e = f"np.full(n, {e})"
                parts.append(e)
            self.dst(g, d, t, f"ops.pack([{', '.join(parts)}], {DTNAME[T]})", "arr", inst, guard)
            return
        if isinstance(a, Sym) and self.sym_space(a.name) is None and a.name in self.label_block:
            _err(inst, "mov of a label address is not supported")
        ea, ka = self.src(g, a, t, inst)
        self.dst(g, d, t, ea, ka, inst, guard)

    # -- memory
    def _mem_parse(self, inst, mods):
        space = "generic"
        vec = 1
        t = None
        for m in mods:
            if m in SPACES:
                space = m
            elif m in ("v2", "v4", "v8"):
                vec = int(m[1:])
            elif m in TYPE_SIZES:
                t = m
            elif m in CACHE_MODS or m.startswith(("L1::", "L2::", "level::")) or m in ("sync", "aligned"):
                pass
        if t is None:
            _err(inst, "missing type")
        return space, vec, t

    def _addr(self, g, inst, op, space):
        """(base_expr or None, offset int, space) for an address operand."""
        if not isinstance(op, Addr):
            _err(inst, "expected an address operand [..]")
        if isinstance(op.base, Reg):
            s = self.slot(op.base.name, inst)
            return g.use(s), op.offset, space
        if isinstance(op.base, Sym):
            name = op.base.name
            sp = self.sym_space(name)
            if sp is None:
                _err(inst, f"unknown symbol {name}")
            if space == "generic":
                space = sp
            if sp == "global":
                return f"u64(X.gaddr[{self.msyms.global_syms[name]}])", op.offset + op.base.offset, space
            return None, self.sym_address(name, inst) + op.base.offset + op.offset, space
        return None, op.offset, space

    def _base_regs(self, g, space):
        sb = g.use(self.slot(SBASE)) if space in ("shared", "generic") else "None"
        lb = g.use(self.slot(LBASE)) if space in ("local", "generic") else "None"
        return sb, lb

    def _op_ld(self, g, inst, mods, iid):
        space, vec, t = self._mem_parse(inst, mods)
        d, a = self._ops(inst, 2)
        base, off, space = self._addr(g, inst, a, space)
        guard = self.guard_expr(g, inst)
        T = np.dtype(STORE[t])
        if space == "param" and base is None:
            if vec != 1:
                tmp = g.new_tmp()
                loads = ", ".join(f"X.ldparam({off + i * T.itemsize}, {DTNAME[T]})" for i in range(vec))
                g.emit(f"{tmp} = [{loads}]")
                for i, it in enumerate(d.items):
                    if it is not None:
                        self.dst(g, it, t, f"{tmp}[{i}]", "scalar", inst, guard)
                return
            self.dst(g, d, t, f"X.ldparam({off}, {DTNAME[T]})", "scalar", inst, guard)
            return
        sb, lb = self._base_regs(g, space)
        m = guard or "None"
        call = f"X.ld('{space}', n, {base}, {off}, {DTNAME[T]}, {vec}, {iid}, {m}, {sb}, {lb})"
        if vec == 1:
            if isinstance(d, Vec):
                d = d.items[0]
            return self.dst(g, d, t, call, "arr", inst, guard)
        tmp = g.new_tmp()
        g.emit(f"{tmp} = {call}")
        for i, it in enumerate(d.items):
            if it is not None:
                self.dst(g, it, t, f"{tmp}[{i}]", "arr", inst, guard)

    _op_ldu = _op_ld

    def _op_st(self, g, inst, mods, iid):
        space, vec, t = self._mem_parse(inst, mods)
        a, v = self._ops(inst, 2)
        if space == "param" and isinstance(a, Addr) and isinstance(a.base, Sym) \
                and CALL_PARAM + a.base.name in self.slots:
            if vec != 1 or a.offset or a.base.offset:
                _err(inst, "only whole scalar call arguments are supported")
            e, k = self.src(g, v, t, inst)
            return self.dst(g, Reg(CALL_PARAM + a.base.name), t, e, k, inst, self.guard_expr(g, inst))
        base, off, space = self._addr(g, inst, a, space)
        guard = self.guard_expr(g, inst)
        if space in ("param", "const"):
            _err(inst, f"st.{space} is not supported")
        sb, lb = self._base_regs(g, space)
        items = v.items if isinstance(v, Vec) else (v,)
        vals = []
        for it in items:
            e, k = self.src(g, it, t, inst)
            vals.append(e)
        T = np.dtype(STORE[t])
        m = guard or "None"
        g.emit(f"X.st('{space}', n, {base}, {off}, [{', '.join(vals)}], {DTNAME[T]}, {iid}, {m}, {sb}, {lb})")

    def _atom_common(self, g, inst, mods, iid, ret):
        space = next((m for m in mods if m in SPACES), "generic")
        t = self._type(mods, inst)
        opn = next((m for m in mods if m in ("add", "min", "max", "and", "or", "xor", "exch", "cas", "inc",
                                            "dec")), None)
        if opn is None:
            _err(inst, "unknown atomic operation")
        if t in ("f16", "bf16", "f16x2", "bf16x2") or "v2" in mods or "v4" in mods:
            _err(inst, f"atomic .{t} is not supported")
        ops_ = inst.operands
        if ret:
            d, a = ops_[0], ops_[1]
            rest = ops_[2:]
        else:
            d, a = None, ops_[0]
            rest = ops_[1:]
        base, off, space = self._addr(g, inst, a, space)
        if space not in ("global", "shared", "generic"):
            _err(inst, f"atomics on .{space} are not supported")
        guard = self.guard_expr(g, inst)
        sb, _ = self._base_regs(g, space)
        T = np.dtype(STORE[t])
        if opn == "cas":
            cmp_, _ = self.src(g, rest[0], t, inst)
            val, _ = self.src(g, rest[1], t, inst)
        else:
            val, _ = self.src(g, rest[0], t, inst)
            cmp_ = "None"
        m = guard or "None"
        call = f"X.atom('{space}', n, '{opn}', {base}, {off}, {val}, {cmp_}, {DTNAME[T]}, {iid}, {m}, {sb}, {ret})"
        if ret:
            self.dst(g, d, t, call, "arr", inst, guard)
        else:
            g.emit(call)

    def _op_atom(self, g, inst, mods, iid):
        self._atom_common(g, inst, mods, iid, True)

    def _op_red(self, g, inst, mods, iid):
        self._atom_common(g, inst, mods, iid, False)

    # -- no-ops and control
    def _noop(self, g, inst, mods, iid):
        pass

    _op_membar = _noop
    _op_fence = _noop
    _op_nanosleep = _noop
    _op_prefetch = _noop
    _op_prefetchu = _noop
    _op_pmevent = _noop
    _op_brkpt = _noop

    def _op_bar(self, g, inst, mods, iid):
        if "warp" in mods:
            # __syncwarp: lanes of a converged group execute together anyway; the sanitizer's context takes it
            # as the warp's barrier (racecheck) and checks its membermask (synccheck)
            m = self.guard_expr(g, inst) or "None"
            mask = self.src(g, inst.operands[0], "b32", inst)[0] if inst.operands else "0xFFFFFFFF"
            g.emit(f"X.warp_sync(n, {iid}, {m}, {mask})")
            return
        _err(inst, "barrier inside a code block")

    _op_barrier = _op_bar

    def _op_trap(self, g, inst, mods, iid):
        m = self.guard_expr(g, inst) or "None"
        g.emit(f"X.trap(n, {iid}, {m})")

    # extern functions the driver provides, and the types of their arguments
    EXTERN_FUNCS = {"__assertfail": ("u64", "u64", "u32", "u64", "u64")}

    def _op_call(self, g, inst, mods, iid):
        """``call.uni __assertfail, (param0, ..., param4);``: the only call NVRTC emits into rawdev's kernels
        (assert()). The driver's __assertfail prints the message and stops the kernel with
        CUDA_ERROR_ASSERT; X.assertfail does the same for the lanes that reach it."""
        ops_ = inst.operands
        if ops_ and isinstance(ops_[0], Args):
            _err(inst, "calls with a return value are not supported")
        if len(ops_) != 2 or not isinstance(ops_[0], Sym) or not isinstance(ops_[1], Args):
            _err(inst, "expected call f, (args)")
        name, args = ops_[0].name, ops_[1].names
        if name in self.mod.functions:
            _err(inst, f"call of device function {name}: device functions are not supported by the simulator")
        if name not in self.mod.declared:
            _err(inst, f"call of undeclared function {name}")
        sig = self.EXTERN_FUNCS.get(name)
        if sig is None:
            _err(inst, f"call of extern function {name}: the simulator implements only "
                       f"{', '.join(self.EXTERN_FUNCS)}")
        if len(args) != len(sig) or len(self.mod.declared[name].params) != len(sig):
            _err(inst, f"{name} takes {len(sig)} arguments")
        vals = []
        for a, t in zip(args, sig):
            if CALL_PARAM + a not in self.slots:
                _err(inst, f"call argument {a} is not a declared .param")
            vals.append(self.src(g, Reg(CALL_PARAM + a), t, inst)[0])
        m = self.guard_expr(g, inst) or "None"
        g.emit(f"X.assertfail(n, {iid}, {m}, {', '.join(vals[:4])})")

    # ----------------------------------------------------------------- warp-wide instructions
    def _warp_op(self, inst):
        parts = inst.opcode.split(".")
        base, mods = parts[0], parts[1:]
        code = self.code
        lane_slot = self.slot("%laneid")
        wiid = len(code.insts)   # this instruction's index (appended by decode() right after)

        def getter(op, t):
            if op is None:
                return lambda R, lanes: None
            if isinstance(op, Imm):
                val = self.imm_value(op, t)
                return lambda R, lanes: np.full(lanes.shape[0], val)
            if isinstance(op, NegPred):
                s = self.slot(op.name, inst)
                return lambda R, lanes: ~R[s][lanes]
            if isinstance(op, Reg):
                s = self.slot(op.name, inst)
                T = np.dtype(STORE[t])
                D = code.slot_dtypes[s]
                if D == T:
                    return lambda R, lanes: R[s][lanes]
                return lambda R, lanes: R[s][lanes].view(T) if D.itemsize == T.itemsize else R[s][lanes].astype(T)
            _err(inst, "unsupported operand")

        def setter(op, t):
            if op is None:
                return lambda R, lanes, val, full: None
            s = self.slot(op.name, inst)
            D = code.slot_dtypes[s]

            def set_(R, lanes, val, full):
                val = np.asarray(val)
                if val.dtype != D:
                    val = val.view(D) if val.dtype.itemsize == D.itemsize and D.kind != "b" else val.astype(D)
                if full:
                    R[s] = val.copy()
                else:
                    a = R[s]
                    if not a.flags.writeable:
                        a = R[s] = a.copy()
                    a[lanes] = val
            return set_

        pred_slot = self.slot(inst.pred, inst) if inst.pred else None
        pred_neg = inst.pred_neg

        def active(R, X, idx):
            lanes = X.all_lanes if idx is None else idx
            full = idx is None
            if pred_slot is not None:
                p = R[pred_slot][lanes]
                if pred_neg:
                    p = ~p
                if not p.all():
                    lanes = lanes[p]
                    full = False
            return lanes, full

        if base == "shfl":
            mode = next(m for m in mods if m in ("up", "down", "bfly", "idx"))
            t = mods[-1]
            ops_ = inst.operands
            d = ops_[0]
            pdst = None
            if isinstance(d, Pipe):
                d, pdst = d.first, d.second
            ga, gb, gc = getter(ops_[1], t), getter(ops_[2], "u32"), getter(ops_[3], "u32")
            gm = getter(ops_[4], "u32") if len(ops_) > 4 else None
            sd, sp = setter(d, t), setter(pdst, "pred") if pdst is not None else None

            def shfl(R, X, idx):
                lanes, full = active(R, X, idx)
                if X.synccheck and gm is not None:
                    X.check_membermask(lanes, gm(R, lanes), idx, wiid)
                lane = R[lane_slot][lanes].astype(np.int64)
                b = gb(R, lanes).astype(np.int64) & 31
                c = gc(R, lanes).astype(np.int64)
                cval = c & 31
                segmask = (c >> 8) & 31
                maxlane = (lane & segmask) | (cval & ~segmask)
                minlane = lane & segmask
                if mode == "up":
                    j = lane - b
                    pval = j >= maxlane
                elif mode == "down":
                    j = lane + b
                    pval = j <= maxlane
                elif mode == "bfly":
                    j = lane ^ b
                    pval = j <= maxlane
                else:
                    j = minlane | (b & ~segmask)
                    pval = j <= maxlane
                j = np.where(pval, j, lane)
                src = lanes - lane + j
                # lanes past the end of a partial warp do not exist: read own value
                bad = (j >= X.warp_size_of(lanes)) | (src < 0) | (src >= X.n)
                src = np.where(bad, lanes, src)
                val = ga(R, src)
                sd(R, lanes, val, full)
                if sp is not None:
                    sp(R, lanes, pval, full)
            return shfl
        if base == "vote":
            mode = next(m for m in mods if m in ("all", "any", "uni", "ballot"))
            ops_ = inst.operands
            d = ops_[0]
            gp = getter(ops_[1], "pred")
            gm = getter(ops_[2], "u32") if len(ops_) > 2 else None
            sd = setter(d, "b32" if mode == "ballot" else "pred")

            def vote(R, X, idx):
                lanes, full = active(R, X, idx)
                if X.synccheck and gm is not None:
                    X.check_membermask(lanes, gm(R, lanes), idx, wiid)
                p = gp(R, lanes)
                w = X.warp_of(lanes)
                lane = R[lane_slot][lanes].astype(np.int64)
                bits = np.where(p, np.left_shift(1, lane), 0).astype(np.int64)
                uw, inv = np.unique(w, return_inverse=True)
                ballot = np.zeros(uw.shape[0], np.int64)
                np.bitwise_or.at(ballot, inv, bits)
                actv = np.zeros(uw.shape[0], np.int64)
                np.bitwise_or.at(actv, inv, np.left_shift(1, lane))
                b = ballot[inv]
                if mode == "ballot":
                    res = b.astype(np.uint32)
                elif mode == "any":
                    res = b != 0
                elif mode == "all":
                    res = b == actv[inv]
                else:
                    res = (b == 0) | (b == actv[inv])
                sd(R, lanes, res, full)
            return vote
        if base == "activemask":
            d = inst.operands[0]
            sd = setter(d, "b32")

            def activemask(R, X, idx):
                lanes, full = active(R, X, idx)
                w = X.warp_of(lanes)
                lane = R[lane_slot][lanes].astype(np.int64)
                uw, inv = np.unique(w, return_inverse=True)
                actv = np.zeros(uw.shape[0], np.int64)
                np.bitwise_or.at(actv, inv, np.left_shift(1, lane))
                sd(R, lanes, actv[inv].astype(np.uint32), full)
            return activemask
        if base == "mma":
            return self._mma(inst, mods, getter, setter, active, lane_slot)
        if base == "ldmatrix":
            return self._ldmatrix(inst, mods, getter, setter, active, lane_slot)
        _err(inst, "unsupported warp instruction")

    def _ldmatrix(self, inst, mods, getter, setter, active, lane_slot):
        """ldmatrix.sync.aligned.m8n8.x{1,2,4}{.trans}.shared.b16 d, [addr]: lanes 8i..8i+7 give the row addresses
        (16 bytes each) of 8x8 matrix i; lane l receives in d_i row l/4, columns 2(l%4) and 2(l%4)+1 (the lower
        column in the low half), or with .trans the same positions of the transposed matrix (PTX ISA, ldmatrix).
        Every lane of the warp must execute it; addresses must be 16-byte aligned inside the shared window."""
        num = next((int(m[1:]) for m in mods if m in ("x1", "x2", "x4")), None)
        if mods[:3] != ["sync", "aligned", "m8n8"] or num is None or "b16" not in mods or \
                not any(m.startswith("shared") for m in mods):
            _err(inst, "only ldmatrix.sync.aligned.m8n8.x{1,2,4}{.trans}.shared.b16 is supported")
        trans = "trans" in mods
        d, a = inst.operands
        dregs = list(d.items) if isinstance(d, Vec) else [d]
        if len(dregs) != num or not isinstance(a, Addr) or not isinstance(a.base, Reg):
            _err(inst, f"ldmatrix .x{num} takes {num} destination registers and a [register] address")
        ga = getter(Reg(a.base.name), "u32" if self.code.slot_dtypes[self.slot(a.base.name, inst)].itemsize == 4
                    else "u64")
        sd = [setter(r, "b32") for r in dregs]
        sb_slot, off, line = self.slot(SBASE), a.offset, inst.line
        lg, lt = np.arange(32) >> 2, np.arange(32) & 3

        def ldmatrix(R, X, idx):
            lanes, full = active(R, X, idx)
            if lanes.shape[0] % 32 or (R[lane_slot][lanes].astype(np.int64).reshape(-1, 32) != np.arange(32)).any():
                raise DecodeError(f"line {line}: ldmatrix.sync.aligned executed by a partial warp")
            nw = lanes.shape[0] // 32
            rel = ga(R, lanes).astype(np.int64) + off
            if (rel & 15).any() or (rel < 0).any() or (rel + 16 > X.shsize).any():
                raise DecodeError(f"line {line}: ldmatrix row address not 16-byte aligned inside the shared window")
            byte = (rel + np.asarray(R[sb_slot][lanes]).astype(np.int64)).reshape(nw, 32)
            for i, set_ in enumerate(sd):
                rows = byte[:, 8 * i:8 * i + 8]
                m8 = X.S[rows[..., None] + np.arange(16)].view(np.uint16).reshape(nw, 8, 8)
                if trans:
                    m8 = m8.transpose(0, 2, 1)
                lo, hi = m8[:, lg, 2 * lt], m8[:, lg, 2 * lt + 1]
                set_(R, lanes, (lo.astype(np.uint32) | (hi.astype(np.uint32) << 16)).reshape(-1), full)
        return ldmatrix

    def _mma(self, inst, mods, getter, setter, active, lane_slot):
        """mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32, mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32
        (the sm_75 form) and mma.sync.aligned.m16n8k16.row.col.f32.T.T.f32 (T = .bf16 or .f16, both operands the
        same): one warp's D = A·B + C, D and C float32 16x8.
        Fragments (PTX ISA, "Matrix Fragments for mma.m16n8k8" / "... for mma.m16n8k16 with floating point
        type"), lane = 4·g + t:
        m16n8k8 .tf32: A[g][t]=a0, A[g+8][t]=a1, A[g][t+4]=a2, A[g+8][t+4]=a3; B[t][g]=b0, B[t+4][g]=b1.
        16-bit forms, each .b32 register two elements, the lower index in the low half:
        m16n8k8 .f16: a0 = A[g][2t, 2t+1], a1 = A[g+8][2t, 2t+1]; b0 = B[2t, 2t+1][g] (the first half of the
        m16n8k16 fragments below);
        m16n8k16 .f16/.bf16: a0 = A[g][2t, 2t+1], a1 = A[g+8][2t, 2t+1], a2 = A[g][2t+8, 2t+9],
        a3 = A[g+8][2t+8, 2t+9]; b0 = B[2t, 2t+1][g], b1 = B[2t+8, 2t+9][g].
        C/D (both): [g][2t]=c0, [g][2t+1]=c1, [g+8][2t]=c2, [g+8][2t+1]=c3.
        Modelled: TF32 operands ignore the low 13 bits of their register; 16-bit operands are read exactly
        (their products are exact in float64); each D element is the float64 sum of its K products and C,
        rounded once to float32 (round to nearest even). Not modelled: a tensor core's internal accumulation
        order and the truncation of its intermediate sums, so D can differ from a GPU's in the last bits of
        float32."""
        kinds = {("m16n8k8", "tf32"): 8, ("m16n8k8", "f16"): 8, ("m16n8k16", "bf16"): 16, ("m16n8k16", "f16"): 16}
        shape = next((m for m in mods if m in ("m16n8k8", "m16n8k16")), None)
        ab = mods[-3] if len(mods) >= 4 else None
        if mods[:2] != ["sync", "aligned"] or shape is None or "row" not in mods or "col" not in mods \
                or len(mods) < 4 or mods[-4] != "f32" or mods[-1] != "f32" or mods[-2] != ab \
                or (shape, ab) not in kinds:
            _err(inst, "only mma.sync.aligned.m16n8k8.row.col.f32.{tf32,f16}.{tf32,f16}.f32 and "
                       "mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32 (same A and B type) are "
                       "supported")
        K = kinds[(shape, ab)]
        na, nb = (2, 1) if (shape, ab) == ("m16n8k8", "f16") else (4, 2)   # .b32 registers of A and B
        ops_ = inst.operands
        if len(ops_) != 4 or not all(isinstance(o, Vec) for o in ops_) or \
                [len(o.items) for o in ops_] != [4, na, nb, 4]:
            _err(inst, f"mma.sync {shape} {ab} takes {{4 f32}}, {{{na} b32}}, {{{nb} b32}}, {{4 f32}} registers")
        d, a, b, c = ops_
        ga = [getter(r, "b32") for r in a.items]
        gb = [getter(r, "b32") for r in b.items]
        gc = [getter(r, "f32") for r in c.items]
        sd = [setter(r, "f32") for r in d.items]
        kernel_line = inst.line
        lg, lt = np.arange(32) >> 2, np.arange(32) & 3

        def halves(u):
            """The two 16-bit elements of each .b32 register as float64 (low half first)."""
            u = np.asarray(u).astype(np.uint32)
            lo, hi = (u & np.uint32(0xFFFF)).astype(np.uint16), (u >> np.uint32(16)).astype(np.uint16)
            if ab == "f16":
                return lo.view(np.float16).astype(np.float64), hi.view(np.float16).astype(np.float64)
            return ops.bf16_to_f32(lo).astype(np.float64), ops.bf16_to_f32(hi).astype(np.float64)

        def mma(R, X, idx):
            lanes, full = active(R, X, idx)
            w = X.warp_of(lanes)
            _, counts = np.unique(w, return_counts=True)
            if lanes.shape[0] % 32 or (counts != 32).any() or \
                    (R[lane_slot][lanes].astype(np.int64).reshape(-1, 32) != np.arange(32)).any():
                raise DecodeError(f"line {kernel_line}: mma.sync.aligned executed by a partial warp (every lane "
                                  f"of the warp must execute it together)")
            nw = lanes.shape[0] // 32
            A = np.zeros((nw, 16, K))
            B = np.zeros((nw, K, 8))
            C = np.zeros((nw, 16, 8))
            if ab == "tf32":
                av = [ops.tf32_operand(f(R, lanes)).astype(np.float64).reshape(nw, 32) for f in ga]
                bv = [ops.tf32_operand(f(R, lanes)).astype(np.float64).reshape(nw, 32) for f in gb]
                A[:, lg, lt], A[:, lg + 8, lt], A[:, lg, lt + 4], A[:, lg + 8, lt + 4] = av
                B[:, lt, lg], B[:, lt + 4, lg] = bv
            else:
                # m16n8k8 .f16 reads the first na (nb) of these positions: its K is the first 8 of m16n8k16's
                for i, (row, col) in enumerate(((lg, 2 * lt), (lg + 8, 2 * lt), (lg, 2 * lt + 8),
                                                (lg + 8, 2 * lt + 8))[:na]):
                    lo, hi = halves(ga[i](R, lanes))
                    A[:, row, col], A[:, row, col + 1] = lo.reshape(nw, 32), hi.reshape(nw, 32)
                for i, row in enumerate((2 * lt, 2 * lt + 8)[:nb]):
                    lo, hi = halves(gb[i](R, lanes))
                    B[:, row, lg], B[:, row + 1, lg] = lo.reshape(nw, 32), hi.reshape(nw, 32)
            cv = [np.asarray(f(R, lanes), np.float32).astype(np.float64).reshape(nw, 32) for f in gc]
            C[:, lg, 2 * lt], C[:, lg, 2 * lt + 1], C[:, lg + 8, 2 * lt], C[:, lg + 8, 2 * lt + 1] = cv
            with np.errstate(invalid="ignore", over="ignore"):
                D = (A @ B + C).astype(np.float32)
            outs = (D[:, lg, 2 * lt], D[:, lg, 2 * lt + 1], D[:, lg + 8, 2 * lt], D[:, lg + 8, 2 * lt + 1])
            for set_, v in zip(sd, outs):
                set_(R, lanes, v.reshape(-1), full)
        return mma

def _regs_of(inst):
    out = []
    if inst.pred:
        out.append(inst.pred)
    for op in inst.operands:
        if isinstance(op, (Reg, NegPred)):
            out.append(op.name)
        elif isinstance(op, Pipe):
            out += [op.first.name, op.second.name]
        elif isinstance(op, Vec):
            out += [it.name for it in op.items if isinstance(it, Reg)]
        elif isinstance(op, Addr) and isinstance(op.base, Reg):
            out.append(op.base.name)
    return out


def _liveness(blocks):
    """Registers live at the end of each block (so dead temporaries are never written back)."""
    succ = []
    for b in blocks:
        if b.kind != "code":
            succ.append([b.nxt] if b.nxt is not None else [])
        elif b.term == "fall":
            succ.append([b.nxt] if b.nxt is not None else [])
        elif b.term == "bra":
            succ.append([b.target])
        elif b.term == "cbra":
            succ.append([b.target] + ([b.nxt] if b.nxt is not None else []))
        elif b.term == "cexit":
            succ.append([b.nxt] if b.nxt is not None else [])
        else:
            succ.append([])
    live_in = [set() for _ in blocks]
    changed = True
    while changed:
        changed = False
        for i in range(len(blocks) - 1, -1, -1):
            b = blocks[i]
            out = set()
            for j in succ[i]:
                out |= live_in[j]
            inn = b.uses | (out - b.defs)
            if out != b.live_out or inn != live_in[i]:
                b.live_out, live_in[i] = out, inn
                changed = True


_FMA32_LINE = re.compile(r"^(v\d+) = ops\.fma32\((\w+), (\w+), (\w+)\)$")


def _fuse_fma32(lines):
    """Runs of independent `vD = ops.fma32(vA, vB, vC)` lines (none reads another's result) become one
    ops.fma32_rows call over all of them: its fixed cost once per run instead of once per instruction."""
    out, run = [], []

    def flush():
        if len(run) == 1:
            out.append(run[0][0])
        elif run:
            dst = ", ".join(m[1] for _, m in run)
            cols = [", ".join(m[i] for _, m in run) for i in (2, 3, 4)]
            out.append(f"{dst}, = ops.fma32_rows(({cols[0]},), ({cols[1]},), ({cols[2]},))")
        run.clear()

    for ln in lines:
        m = _FMA32_LINE.match(ln)
        if m is None:
            flush()
            out.append(ln)
            continue
        written = {mm[1] for _, mm in run}
        if m[1] in written or {m[2], m[3], m[4]} & written:
            flush()
        run.append((ln, m))
    flush()
    return out


def _block_source(blk):
    g = blk.gen
    body = _fuse_fma32(g.lines)
    ret = f"    return {g.ret_expr}" if g.ret_expr else "    return None"
    wb = [s for s in g.written if s in blk.live_out]
    full = [f"def full_{blk.index}(R, X):", "    n = X.n"]
    full += [f"    v{s} = R[{s}]" for s in g.reads]
    full += ["    " + ln for ln in body]
    full += [f"    R[{s}] = v{s}" for s in wb]
    full.append(ret)
    part = [f"def part_{blk.index}(R, X, idx):", "    n = idx.shape[0]"]
    part += [f"    v{s} = R[{s}][idx]" for s in g.reads]
    part += ["    " + ln for ln in body]
    part += [f"    _wb(R, {s}, idx, v{s})" for s in wb]
    part.append(ret)
    return "\n".join(full) + "\n", "\n".join(part) + "\n"


def _wb(R, s, idx, v):
    a = R[s]
    if not a.flags.writeable:
        a = R[s] = a.copy()
    a[idx] = v


def _make_lazy(dec, blk, code):
    """The block's functions are compiled from its decoded form the first time each runs: `full` (every lane
    of the chunk) when the block first runs, `part` (a subset of lanes) only if a branch ever diverges there,
    since compiling Python source is most of a kernel's first-launch cost."""
    ns = dec.ns
    ns["_wb"] = _wb
    texts = []

    def source():
        if not texts:
            texts.extend(_block_source(blk))
            blk.source = texts[0] + "\n" + texts[1]
        return texts

    def build_full():
        exec(compile(source()[0], f"<ptx {code.name} block {blk.index} line {blk.line}>", "exec"), ns)
        blk.full = ns[f"full_{blk.index}"]

    def build_part():
        exec(compile(source()[1], f"<ptx {code.name} block {blk.index} line {blk.line}>", "exec"), ns)
        blk.part = ns[f"part_{blk.index}"]

    def build():
        if blk.full is lazy_full:
            build_full()
        if blk.part is lazy_part:
            build_part()

    def lazy_full(R, X):
        if blk.full is lazy_full:
            build_full()
        return blk.full(R, X)

    def lazy_part(R, X, idx):
        if blk.part is lazy_part:
            build_part()
        return blk.part(R, X, idx)
    blk.full, blk.part, blk.build = lazy_full, lazy_part, build


def compile_blocks(dec: Decoder, code: EntryCode):
    """Compile every block now (normally they compile lazily on first execution)."""
    for b in code.blocks:
        if b.kind == "code":
            b.build()
    return code
