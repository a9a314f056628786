"""One PTX ``.entry`` (the parser's syntax tree) lowered to LLVM IR for the native engine.

Each thread runs the kernel body as straight native code: PTX registers become LLVM locals (``alloca``, promoted
to SSA by LLVM), labels become basic blocks, and every instruction is lowered to the same arithmetic the
interpreter's numpy code does (:mod:`rawdev.sim.ptx.decoder`, :mod:`rawdev.sim.ptx.ops`) so that results are
bit-identical: float64 and x87 long-double intermediates where the interpreter uses them, numpy's fmin/fmax and
float16 rounding, PTX's clamped shifts, division by zero and saturating conversions.

Threads meet at ``bar.sync`` and ``shfl.sync`` (the launch loop of :mod:`.native_helpers` runs a block in phases
and a warp's threads to the same shfl); shared memory is the block's, local memory the thread's (an ``alloca``),
and ``call __assertfail`` (a device-side ``assert``) records the thread and its message's addresses and ends the
thread. Atomics, traps, tensor-core and async-copy instructions raise :class:`Unsupported` and such a kernel stays
on the interpreter. Every global access goes through ``@gptr``, which finds the allocation holding it (a sorted table
passed in by the launcher, a one-entry cache per access site) and returns NULL for an access the interpreter
would fault on; the access site then records (kind, instruction, address, size) and the thread stops.
"""

from __future__ import annotations

import struct

import numpy as np

from .native_helpers import CP_ENTRY, CP_HEAD, CP_QUEUE, SPECIAL_ARGS, helpers, runner
from .parser import TYPE_SIZES, Addr, Args, Imm, Inst, Label, NegPred, Pipe, Reg, RegDecl, Sym, VarDecl, Vec

# instructions whose first operand is not a register they write
NO_DEF = frozenset(("st", "red", "bar", "barrier", "membar", "fence", "bra", "ret", "exit", "trap", "prefetch",
                    "prefetchu", "cp", "call", "stmatrix"))
IR_VERSION = 4   # part of the disk cache key of compiled kernels
CALL_PARAM = "$param."   # a call argument (``.param .b64 param0`` in a callseq scope) held as a 64-bit register
ASSERTED = -1            # what a thread's body returns when it failed a device-side assert (2 + k: sync point k)


class Unsupported(Exception):
    """This kernel uses something the native engine does not lower; the interpreter runs it."""


FAULT_OOB, FAULT_MISALIGNED, FAULT_VECTOR_MISALIGNED, FAULT_SHARED_OOB, FAULT_SHARED_MISALIGNED = 1, 2, 3, 4, 5
FAULT_LOCAL_OOB, FAULT_LOCAL_MISALIGNED, FAULT_PARAM_OOB, FAULT_PARAM_MISALIGNED = 6, 7, 8, 9
WARP_BATCHED = ("mma", "ldmatrix")   # warp-wide instructions a run of which shares one yield
FAULT_LDMATRIX = 10   # an ldmatrix row address not 16-byte aligned inside the shared window (the decoder's error)
FAULT_CP_MISALIGNED = 11   # a cp.async source not aligned to its copy size
FAULT_CP_QUEUE = 12        # more cp.async copies in flight in one thread than CP_QUEUE holds
# the window checks of the spaces a thread indexes itself: (out of bounds, misaligned) fault kinds
WINDOW_FAULTS = {"shared": (FAULT_SHARED_OOB, FAULT_SHARED_MISALIGNED),
                 "local": (FAULT_LOCAL_OOB, FAULT_LOCAL_MISALIGNED),
                 "param": (FAULT_PARAM_OOB, FAULT_PARAM_MISALIGNED)}
SHWIN = 0x0000_4000_0000_0000     # the interpreter's generic-address window of shared memory
LCWIN = 0x0000_5000_0000_0000     # ... and of local memory
_SPACES = {"global", "shared", "local", "param", "const"}
_IGNORED_MODS = {"nc", "ca", "cg", "cs", "lu", "cv", "wb", "wt", "volatile", "relaxed", "weak", "gpu", "sys",
                 "cta", "uni", "aligned"}


def ltype(t):
    if t == "pred":
        return "i1"
    if t == "f32":
        return "float"
    if t == "f64":
        return "double"
    return f"i{8 * TYPE_SIZES[t]}"


def kind(t):
    """numpy kind of the register/value a PTX type is held in (f16/bf16 are uint16 bits)."""
    if t == "pred":
        return "b"
    if t in ("f32", "f64"):
        return "f"
    if t[0] == "s":
        return "i"
    return "u"


def _int_const(v, bits):
    v = int(v) & ((1 << bits) - 1)
    return str(v - (1 << bits) if v >= 1 << (bits - 1) else v)


class Lowering:
    """Builds the IR of one entry: ``lower()`` returns the module text with ``@run``."""

    def __init__(self, mod, fn, imm_value, symbol):
        self.mod, self.fn, self.symbol = mod, fn, symbol
        self.cur_label = "entry"
        self.shared: dict[str, int] = {}    # shared variable -> byte offset in the block's shared memory
        self.syncs: list = []              # barriers, in order: (instruction index, group after it)
        self.imm_value = imm_value   # the decoder's immediate rule (same bits as the interpreter)
        self.out: list[str] = []
        self.ntmp = 0
        self.regs: dict[str, str] = {}     # PTX register -> declared PTX type
        self.params: dict[str, tuple] = {}  # name -> (offset, size)
        self.sites = 0                     # global access sites (one cache slot each)
        self.need: set[str] = set()        # helper functions used
        self.xw = 1                        # 32-bit words each lane puts in its warp's exchange (shfl 1, mma up to 6)
        self.cpq = 0                       # bytes of the thread's cp.async queue at the start of its state buffer
        self.local: dict[str, int] = {}    # local variable -> byte offset in the thread's local memory
        self.lsize = 0
        # module .global variables -> index of their device address, passed after the kernel's parameters
        self.globals = {v.name: i for i, v in enumerate(v for v in mod.variables if v.space == "global")}

    # ---------------------------------------------------------------- plumbing
    def t(self):
        self.ntmp += 1
        return f"%t{self.ntmp}"

    def emit(self, s):
        self.out.append("  " + s)

    def label(self, name):
        self.out.append(f"{name}:")
        self.cur_label = name

    @staticmethod
    def rname(name):
        return "%R." + name.lstrip("%").replace("$", "_S")

    # ---------------------------------------------------------------- values
    def const(self, v, t):
        """An SSA value of PTX type t holding the immediate value v (a numpy scalar from imm_value)."""
        lt = ltype(t)
        if lt == "i1":
            return "true" if bool(v) else "false"
        if lt == "float":
            x = self.t()
            self.emit(f"{x} = bitcast i32 {_int_const(np.float32(v).view(np.uint32), 32)} to float")
            return x
        if lt == "double":
            x = self.t()
            self.emit(f"{x} = bitcast i64 {_int_const(np.float64(v).view(np.uint64), 64)} to double")
            return x
        return _int_const(int(np.asarray(v).astype(np.uint64 if np.asarray(v).dtype.kind == "u" else np.int64)),
                          8 * TYPE_SIZES[t])

    def fconst(self, x, lt):
        bits = struct.unpack("<I", struct.pack("<f", x))[0] if lt == "float" else \
            struct.unpack("<Q", struct.pack("<d", x))[0]
        v = self.t()
        self.emit(f"{v} = bitcast {'i32' if lt == 'float' else 'i64'} {_int_const(bits, 32 if lt == 'float' else 64)}"
                  f" to {lt}")
        return v

    def convert(self, v, D, T):
        """A value held as PTX type D read as PTX type T (the decoder's ``src`` rules)."""
        ld, lt = ltype(D), ltype(T)
        kd, kt = kind(D), kind(T)
        if ld == lt:
            return v
        sd, st = (TYPE_SIZES[D] if D != "pred" else 0), (TYPE_SIZES[T] if T != "pred" else 0)
        x = self.t()
        if sd == st and kd != "b" and kt != "b":
            self.emit(f"{x} = bitcast {ld} {v} to {lt}")
        elif kt == "b":
            self.emit(f"{x} = fcmp une {ld} {v}, 0.0" if kd == "f" else f"{x} = icmp ne {ld} {v}, 0")
        elif kd == "b":
            if kt == "f":
                raise Unsupported("a predicate read as a float")
            self.emit(f"{x} = zext i1 {v} to {lt}")
        elif kd in "iu" and kt in "iu":
            op = "trunc" if st < sd else ("sext" if kt == "i" else "zext")
            self.emit(f"{x} = {op} {ld} {v} to {lt}")
        elif kt == "f" and kd in "iu" and st < sd:
            y = self.t()
            self.emit(f"{y} = trunc {ld} {v} to i{8 * st}")
            self.emit(f"{x} = bitcast i{8 * st} {y} to {lt}")
        else:
            raise Unsupported(f"reading a .{D} register as .{T}")
        return x

    def store_conv(self, v, T, D):
        """A value of PTX type T written into a register declared D (the decoder's ``dst`` rules)."""
        ld, lt = ltype(D), ltype(T)
        kd, kt = kind(D), kind(T)
        if ld == lt:
            return v
        sd, st = (TYPE_SIZES[D] if D != "pred" else 0), (TYPE_SIZES[T] if T != "pred" else 0)
        x = self.t()
        if sd == st and kd != "b" and kt != "b":
            self.emit(f"{x} = bitcast {lt} {v} to {ld}")
        elif kd == "b":
            self.emit(f"{x} = fcmp une {lt} {v}, 0.0" if kt == "f" else f"{x} = icmp ne {lt} {v}, 0")
        elif kt == "b":
            if kd == "f":
                raise Unsupported("a predicate written to a float register")
            self.emit(f"{x} = zext i1 {v} to {ld}")
        elif kd == "f":
            raise Unsupported(f"a .{T} value written to a .{D} register")
        elif sd > st:
            if kt == "f":
                y = self.t()
                self.emit(f"{y} = bitcast {lt} {v} to i{8 * st}")
                self.emit(f"{x} = zext i{8 * st} {y} to {ld}")
            else:
                self.emit(f"{x} = {'sext' if kt == 'i' else 'zext'} {lt} {v} to {ld}")
        else:
            if kt == "f":
                y = self.t()
                self.emit(f"{y} = bitcast {lt} {v} to i{8 * st}")
                self.emit(f"{x} = trunc i{8 * st} {y} to {ld}")
            else:
                self.emit(f"{x} = trunc {lt} {v} to {ld}")
        return x

    def src(self, op, t):
        if isinstance(op, Reg):
            if op.name in SPECIAL_ARGS:
                return self.convert("%S." + op.name[1:].replace(".", "_"), "u32", t)
            D = self.regs.get(op.name)
            if D is None:
                raise Unsupported(f"register {op.name}")
            x = self.t()
            self.emit(f"{x} = load {ltype(D)}, ptr {self.rname(op.name)}")
            return self.convert(x, D, t)
        if isinstance(op, NegPred):
            v = self.src(Reg(op.name), "pred")
            x = self.t()
            self.emit(f"{x} = xor i1 {v}, true")
            return self.convert(x, "pred", t)
        if isinstance(op, Imm):
            return self.const(self.imm_value(None, op, t), t)
        if isinstance(op, Sym) and kind(t) in "iu":
            # a symbol's address as the decoder gives it: the offset in its space (shared, local, the kernel's
            # parameters), or a module global's device address
            for space in self.window_syms.values():
                if op.name in space:
                    return self.convert(str(space[op.name] + op.offset), "u64", t)
            if op.name in self.globals:
                p, x = self.t(), self.t()
                self.emit(f"{p} = getelementptr i8, ptr %P, i64 {self.gbase + 8 * self.globals[op.name]}")
                self.emit(f"{x} = load i64, ptr {p}, align 1")
                if op.offset:
                    x = self.op2("add", "i64", x, str(op.offset))
                return self.convert(x, "u64", t)
        raise Unsupported(f"operand {op!r}")

    def dst(self, op, t, v):
        if not isinstance(op, Reg) or op.name not in self.regs:
            raise Unsupported(f"destination {op!r}")
        D = self.regs[op.name]
        v = self.store_conv(v, t, D)
        self.emit(f"store {ltype(D)} {v}, ptr {self.rname(op.name)}")

    def call(self, ret, fn, *args):
        x = self.t()
        self.emit(f"{x} = call {ret} {fn}({', '.join(args)})")
        return x

    def op2(self, op, lt, a, b):
        x = self.t()
        self.emit(f"{x} = {op} {lt} {a}, {b}")
        return x

    def select(self, c, lt, a, b):
        x = self.t()
        self.emit(f"{x} = select i1 {c}, {lt} {a}, {lt} {b}")
        return x

    # ---------------------------------------------------------------- the entry
    def lower(self):
        fn = self.fn
        off = 0
        for p in fn.params:
            size = p.count * p.elem_size
            off = -(-off // p.align) * p.align
            self.params[p.name] = (off, size)
            off += size
        self.param_size = off
        self.gbase = -(-off // 8) * 8   # where the module globals' addresses follow the parameters
        # shared memory laid out as the decoder does: module-level arrays, then the function's, then extern ones
        off, extern = 0, []
        for v in [v for v in self.mod.variables if v.space == "shared"] + \
                 [v for v in fn.body if isinstance(v, VarDecl) and v.space == "shared"]:
            if v.extern:
                extern.append(v)
                continue
            off = -(-off // v.align) * v.align
            self.shared[v.name] = off
            off += v.size
        dyn_align = max([16] + [v.align for v in extern])
        self.dyn_shared_offset = -(-off // dyn_align) * dyn_align if extern else off
        for v in extern:
            self.shared[v.name] = self.dyn_shared_offset
        self.shared_static = off
        stmts = []
        local_off = 0
        for st in fn.body:
            if isinstance(st, RegDecl):
                for name in st.names:
                    self.regs[name] = st.type
            elif isinstance(st, VarDecl):
                if st.space == "local":   # laid out as the decoder does
                    local_off = -(-local_off // st.align) * st.align
                    self.local[st.name] = local_off
                    local_off += st.size
                elif st.space == "param":
                    if st.count != 1:
                        raise Unsupported(f".param array {st.name}")
                    self.regs[CALL_PARAM + st.name] = "u64"
                elif st.space != "shared":
                    raise Unsupported(f".{st.space} variable {st.name}")
            elif isinstance(st, (Inst, Label)):
                stmts.append(st)
        self.lsize = -(-local_off // 16) * 16
        # each window's symbols and their offsets in it (a symbol's address as the decoder gives it)
        self.window_syms = {"shared": self.shared, "local": self.local,
                            "param": {n: o for n, (o, _) in self.params.items()}}
        # groups exactly as the decoder splits blocks (their sizes are the instruction counts); a barrier is a
        # group of its own
        groups, cur, labels, pend = [], [], {}, []
        for st in stmts:
            if isinstance(st, Label):
                if cur:
                    groups.append(cur)
                    cur = []
                pend.append(st.name)
                continue
            parts = st.opcode.split(".")
            if parts[0] in WARP_BATCHED and not cur and not pend and groups and st.pred is None and \
                    self.joins_batch(groups[-1], st):
                groups[-1].append(st)   # one yield for a run of mma/ldmatrix (a GEMM's 32 mma in a row)
                continue
            if (parts[0] in ("bar", "barrier") and "warp" not in parts) or \
                    parts[0] in ("shfl", "vote", "activemask", "mma", "ldmatrix"):
                if cur:
                    groups.append(cur)
                    cur = []
                for lb in pend:
                    labels[lb] = len(groups)
                pend = []
                groups.append([st])
                continue
            if not cur:
                for lb in pend:
                    labels[lb] = len(groups)
                pend = []
            cur.append(st)
            if parts[0] in ("bra", "ret", "exit", "trap"):
                groups.append(cur)
                cur = []
        if cur:
            groups.append(cur)
        for lb in pend:
            labels[lb] = len(groups)
        self.labels, self.groups = labels, groups
        self.live = self.liveness(groups)
        if any(st.opcode.startswith("cp.async") for st in stmts if isinstance(st, Inst)):
            self.cpq = CP_HEAD + CP_QUEUE * CP_ENTRY
        for insts in groups:   # the exchange's words per lane: the widest batch of warp-wide instructions'
            if insts[0].opcode.split(".")[0] in WARP_BATCHED:
                self.xw = max(self.xw, sum(self.exchange_words(i) for i in insts))
        head = []
        for name, t in self.regs.items():
            head.append(f"  {self.rname(name)} = alloca {ltype(t)}")
            head.append(f"  store {ltype(t)} {'false' if t == 'pred' else ('0.0' if kind(t) == 'f' else '0')}, "
                        f"ptr {self.rname(name)}")
        head.append("  %cnt = alloca i64")
        head.append("  store i64 0, ptr %cnt")
        if self.cpq:
            head.append("  %CPBAD = alloca i64")   # where a cp.async source's first unreadable byte is reported
        if self.lsize:   # the thread's local memory, zeroed as the interpreter's is
            head.append(f"  %LOC = alloca [{self.lsize} x i8], align 16")
            head.append(f"  call void @llvm.memset.p0.i64(ptr %LOC, i8 0, i64 {self.lsize}, i1 false)")
        self.emit("br label %DISPATCH")
        iid = 0
        for gi, insts in enumerate(groups):
            self.label(f"G{gi}")
            self.count(len(insts))
            ended = False
            if insts[0].opcode.split(".")[0] in WARP_BATCHED:
                self.warp_batch(insts, iid, gi)
                iid += len(insts)
                continue
            for inst in insts:
                ended = self.inst(inst, iid, gi)
                iid += 1
            if not ended:
                self.emit(f"br label %G{gi + 1}")
        self.label(f"G{len(groups)}")
        self.emit("br label %EXIT")
        if self.lsize and self.syncs:
            raise Unsupported("local memory in a kernel with barriers or shuffles (a yield would lose it)")
        # where a thread starts: at the top, or (RESUME = k + 1) after barrier k with its registers reloaded
        disp = ["DISPATCH:"]
        start = "%G0"
        if self.cpq:   # a thread's first run starts with an empty cp.async queue (it keeps it across its yields)
            start = "%CPINIT"
            disp_init = ["CPINIT:", f"  call void @llvm.memset.p0.i64(ptr %STATE, i8 0, i64 {CP_HEAD}, i1 false)",
                         "  br label %G0"]
        if self.syncs:
            cases = " ".join(f"i32 {k + 1}, label %RES{k}" for k in range(len(self.syncs)))
            disp.append(f"  switch i32 %RESUME, label {start} [ {cases} ]")
            for k, (_, after, _, finish, names) in enumerate(self.syncs):
                disp.append(f"RES{k}:")
                disp += self.reload(names)
                disp += finish   # a shfl's result, read from its partner's slot of the exchange
                disp.append(f"  br label %G{after}")
        else:
            disp.append(f"  br label {start}")
        if self.cpq:
            disp += disp_init
        args = ", ".join(f"i32 %S.{s[1:].replace('.', '_')}" for s in SPECIAL_ARGS)
        body = [f"define internal i32 @body(ptr noalias %P, ptr noalias %MT, i64 %NMT, ptr noalias %CACHE, "
                f"ptr noalias %OUT, ptr noalias %SH, i64 %SHSIZE, ptr noalias %STATE, i32 %RESUME, ptr noalias %XCH, "
                f"{args}) "
                f"alwaysinline {{", "entry:"] + head + self.out + disp + [
            "EXIT:", "  %cnt.x = load i64, ptr %cnt", "  %o4 = getelementptr i64, ptr %OUT, i64 4",
            "  %o4v = load i64, ptr %o4", "  %o4n = add i64 %o4v, %cnt.x", "  store i64 %o4n, ptr %o4",
            "  ret i32 0",
            "FAULT:", "  %cnt.f = load i64, ptr %cnt", "  %o4f = getelementptr i64, ptr %OUT, i64 4",
            "  %o4fv = load i64, ptr %o4f", "  %o4fn = add i64 %o4fv, %cnt.f", "  store i64 %o4fn, ptr %o4f",
            "  ret i32 1", "}"]
        self.state_size = self.cpq + 8 * max([len(sync[4]) for sync in self.syncs] + [1])
        return "\n".join(body) + "\n" + runner(self.sites, self.symbol, [s[2] for s in self.syncs], self.xw) + \
            helpers(self.need)

    def regs_of(self, op):
        """The declared registers an operand names."""
        if isinstance(op, (Reg, NegPred)):
            return {op.name} & self.regs.keys()
        if isinstance(op, Pipe):
            return {op.first.name, op.second.name} & self.regs.keys()
        if isinstance(op, Vec):
            return {i.name for i in op.items if isinstance(i, Reg)} & self.regs.keys()
        if isinstance(op, Addr) and isinstance(op.base, Reg):
            return {op.base.name} & self.regs.keys()
        return set()

    def uses_defs(self, inst):
        """(registers read, registers written unconditionally) by an instruction."""
        base = inst.opcode.split(".")[0]
        ops = inst.operands
        use = {inst.pred} & self.regs.keys() if inst.pred else set()
        if base in NO_DEF or not ops:
            for o in ops:
                use |= self.regs_of(o)
            return use, set()
        for o in ops[1:]:
            use |= self.regs_of(o)
        d = self.regs_of(ops[0])
        if inst.pred is not None:   # a predicated write may not happen: the old value lives on
            use |= d
            return use, set()
        return use, d

    def liveness(self, groups):
        """The registers live on entry to each group (backward dataflow over the groups' branches): what a
        thread must save at a barrier or shfl to go on after it."""
        n = len(groups)
        ud = []
        succ = []
        for gi, insts in enumerate(groups):
            use, kill = set(), set()
            for inst in insts:
                u, d = self.uses_defs(inst)
                use |= u - kill
                kill |= d
            ud.append((use, kill))
            last = insts[-1]
            b = last.opcode.split(".")[0]
            if b == "bra":
                op = last.operands[0]
                tgt = [self.labels[op.name]] if isinstance(op, Sym) and op.name in self.labels else []
                succ.append(tgt + ([gi + 1] if last.pred is not None else []))
            elif b in ("ret", "exit", "trap") and last.pred is None:
                succ.append([])
            else:
                succ.append([gi + 1])
        live = [set() for _ in range(n + 1)]
        changed = True
        while changed:
            changed = False
            for gi in range(n - 1, -1, -1):
                out = set().union(*(live[x] for x in succ[gi] if x <= n))
                use, kill = ud[gi]
                new = use | (out - kill)
                if new != live[gi]:
                    live[gi] = new
                    changed = True
        return live

    def yield_at(self, iid, gi, kind, finish, reads=(), writes=()):
        """End the thread's run at a synchronization point: registers saved, instructions counted, return 2 + the
        point's index; ``finish`` is code that runs on resuming, before the next group, reading the registers
        ``reads`` and writing ``writes``."""
        k = len(self.syncs)
        self.syncs.append((iid, gi + 1, kind, finish, self.saved_at(gi, reads, writes)))
        self.out += self.spill(self.syncs[-1][4])
        c, q, o, n = self.t(), self.t(), self.t(), self.t()
        self.out += [f"  {c} = load i64, ptr %cnt", f"  {q} = getelementptr i64, ptr %OUT, i64 4",
                     f"  {o} = load i64, ptr {q}", f"  {n} = add i64 {o}, {c}", f"  store i64 {n}, ptr {q}"]
        self.emit(f"ret i32 {2 + k}")

    def shfl(self, inst, mods, iid, gi):
        """shfl.sync.{up,down,bfly,idx}.b32 as the interpreter's lane arithmetic: each thread puts its value in its
        warp's exchange and yields; when the warp's threads all wait there they resume and read their source lane's
        slot (their own where the source is out of the segment or past a partial warp's end)."""
        if inst.pred is not None:
            raise Unsupported("predicated shfl")
        mode = next((m for m in mods if m in ("up", "down", "bfly", "idx")), None)
        if mode is None or mods[-1] != "b32" or len(inst.operands) not in (4, 5):
            raise Unsupported(inst.opcode)
        d, pdst = inst.operands[0], None
        if isinstance(d, Pipe):
            d, pdst = d.first, d.second
        a = self.src(inst.operands[1], "b32")
        self.emit(f"store i32 {a}, ptr {self.exchange_slot(0, '%S.laneid', 0)}")
        saved, self.out = self.out, []
        lane = "%S.laneid"
        b = self.op2("and", "i32", self.src(inst.operands[2], "u32"), "31")
        c = self.src(inst.operands[3], "u32")
        cval = self.op2("and", "i32", c, "31")
        seg = self.op2("and", "i32", self.op2("lshr", "i32", c, "8"), "31")
        nseg = self.op2("xor", "i32", seg, "-1")
        maxlane = self.op2("or", "i32", self.op2("and", "i32", lane, seg), self.op2("and", "i32", cval, nseg))
        if mode == "up":
            j = self.op2("sub", "i32", lane, b)
            pval = self.op2("icmp sge", "i32", j, maxlane)
        elif mode == "down":
            j = self.op2("add", "i32", lane, b)
            pval = self.op2("icmp sle", "i32", j, maxlane)
        elif mode == "bfly":
            j = self.op2("xor", "i32", lane, b)
            pval = self.op2("icmp sle", "i32", j, maxlane)
        else:
            j = self.op2("or", "i32", self.op2("and", "i32", lane, seg), self.op2("and", "i32", b, nseg))
            pval = self.op2("icmp sle", "i32", j, maxlane)
        j = self.select(pval, "i32", j, lane)
        # the warp's size: 32, or what is left of the block in its last warp
        nt = self.op2("mul", "i32", self.op2("mul", "i32", "%S.ntid_x", "%S.ntid_y"), "%S.ntid_z")
        left = self.op2("sub", "i32", nt, self.op2("shl", "i32", "%S.warpid", "5"))
        bad = self.op2("icmp uge", "i32", j, left)
        src = self.select(bad, "i32", lane, j)
        v = self.t()   # from the copy taken when the warp's threads all arrived
        self.emit(f"{v} = load i32, ptr {self.exchange_slot(32 * self.xw, src, 0)}")
        self.dst(d, "b32", v)
        if pdst is not None:
            self.dst(pdst, "pred", pval)
        finish, self.out = self.out, saved
        self.yield_at(iid, gi, "warp", finish, reads=inst.operands[2:4], writes=inst.operands[:1])

    @staticmethod
    def exchange_words(inst):
        parts = inst.opcode.split(".")
        if parts[0] == "ldmatrix":
            return 2
        regs = 3 if "m16n8k8" in parts and "f16" in parts else 6
        return regs if "tf32" in parts else 2 * regs   # a 16-bit pair as two floats

    def warp_op_regs(self, inst):
        """(registers read before the yield, registers written after it) by a batched warp-wide instruction."""
        ops_ = inst.operands
        if inst.opcode.startswith("ldmatrix"):
            return self.regs_of(ops_[1]) if len(ops_) == 2 else set(), self.regs_of(ops_[0]) if ops_ else set()
        pre = set().union(set(), *(self.regs_of(o) for o in ops_[1:3]))
        return pre, self.regs_of(ops_[0]) if ops_ else set()

    def joins_batch(self, group, inst):
        """May ``inst`` share the yield of the batch ``group``: a batch of mma/ldmatrix, none of whose results the
        new instruction reads before the yield (an mma's accumulator C may be an earlier one's D: it is read after
        the yield, in program order)."""
        if group[0].opcode.split(".")[0] not in WARP_BATCHED or group[0].pred is not None:
            return False
        written = set().union(set(), *(self.warp_op_regs(i)[1] for i in group))
        return not (self.warp_op_regs(inst)[0] & written)

    def warp_batch(self, insts, iid, gi):
        """A run of mma/ldmatrix as one warp-level point: each instruction's inputs put in the exchange (its own
        words), one yield, then each instruction's results in program order."""
        pre, fin, reads, writes, word = [], [], [], [], 0
        for n, inst in enumerate(insts):
            parts = inst.opcode.split(".")
            op = self.mma if parts[0] == "mma" else self.ldmatrix
            self.out, saved = pre, self.out
            fin_code, r, w = op(inst, parts[1:], iid + n, word)
            self.out = saved
            fin += fin_code
            reads += r
            writes += w
            word += self.exchange_words(inst)
        self.out += pre
        self.yield_at(iid, gi, "full", fin, reads=reads, writes=writes)

    def ldmatrix(self, inst, mods, iid, word):
        """ldmatrix.sync.aligned.m8n8.x{1,2,4}{.trans}.shared.b16: each lane checks its row address (the
        interpreter's alignment and window rule) and puts it in the exchange; resumed, each reads its two 16-bit
        elements of every matrix from the rows its partners named (the interpreter's lane mapping). Emits the code
        before the yield; returns (the code after it, registers it reads, registers it writes)."""
        num = next((int(m[1:]) for m in mods if m in ("x1", "x2", "x4")), None)
        if mods[:3] != ["sync", "aligned", "m8n8"] or num is None or "b16" not in mods or "shared" not in mods:
            raise Unsupported(inst.opcode)
        trans = "trans" in mods
        d, a = self.n_ops(inst, 2)
        dregs = list(d.items) if isinstance(d, Vec) else [d]
        if len(dregs) != num or not isinstance(a, Addr) or not isinstance(a.base, Reg) or a.base.name not in \
                self.regs:
            raise Unsupported(inst.opcode)
        wide = TYPE_SIZES[self.regs[a.base.name]] == 8
        rel = self.src(a.base, "u64" if wide else "u32")
        if not wide:
            rel = self.zext64(rel)
        if a.offset:
            rel = self.op2("add", "i64", rel, str(a.offset))
        bad = self.op2("or", "i1", self.op2("icmp ne", "i64", self.op2("and", "i64", rel, "15"), "0"),
                       self.op2("or", "i1", self.op2("icmp slt", "i64", rel, "0"),
                                self.op2("icmp sgt", "i64", self.op2("add", "i64", rel, "16"), "%SHSIZE")))
        self.fault_unless(self.op2("xor", "i1", bad, "true"), FAULT_LDMATRIX, iid, rel, 16)
        self.emit(f"store i64 {rel}, ptr {self.exchange_slot(0, '%S.laneid', word)}, align 4")
        saved, self.out = self.out, []
        g = self.op2("lshr", "i32", "%S.laneid", "2")
        t = self.op2("and", "i32", "%S.laneid", "3")

        def row(lane):
            x = self.t()
            self.emit(f"{x} = load i64, ptr {self.exchange_slot(32 * self.xw, lane, word)}, align 4")
            return x

        def at(addr, off, lt):
            p, x = self.t(), self.t()
            self.emit(f"{p} = getelementptr i8, ptr %SH, i64 {self.op2('add', 'i64', addr, off)}")
            self.emit(f"{x} = load {lt}, ptr {p}, align 1")
            return x

        for i, dr in enumerate(dregs):
            if not trans:   # row g of matrix i, columns 2t and 2t+1
                v = at(row(self.op2("add", "i32", g, str(8 * i))), self.zext64(self.op2("shl", "i32", t, "2")), "i32")
            else:           # column g of rows 2t and 2t+1
                r0 = self.op2("add", "i32", self.op2("shl", "i32", t, "1"), str(8 * i))
                off = self.zext64(self.op2("shl", "i32", g, "1"))
                lo, hi = at(row(r0), off, "i16"), at(row(self.op2("add", "i32", r0, "1")), off, "i16")
                zl, zh = self.t(), self.t()
                self.emit(f"{zl} = zext i16 {lo} to i32")
                self.emit(f"{zh} = zext i16 {hi} to i32")
                v = self.op2("or", "i32", zl, self.op2("shl", "i32", zh, "16"))
            self.dst(dr, "b32", v)
        finish, self.out = self.out, saved
        return finish, [], [d]

    def zext64(self, v):
        x = self.t()
        self.emit(f"{x} = zext i32 {v} to i64")
        return x

    _MMA = {("m16n8k8", "tf32"): 8, ("m16n8k8", "f16"): 8, ("m16n8k16", "bf16"): 16, ("m16n8k16", "f16"): 16}

    def mma(self, inst, mods, iid, word):
        """mma.sync.aligned.{m16n8k8,m16n8k16}.row.col.f32.T.T.f32 as a warp-level point: each lane puts its A and B
        fragment registers in the exchange; resumed, each computes its four D elements from its partners' fragments
        as the interpreter does (the K products in float64, summed in order from zero, then C, rounded once to
        float32) in a helper per shape and type (:func:`.native_helpers.mma_helper`). Emits the code before the
        yield; returns (the code after it, registers it reads, registers it writes)."""
        shape = next((m for m in mods if m in ("m16n8k8", "m16n8k16")), None)
        ab = mods[-3] if len(mods) >= 4 else None
        if mods[:2] != ["sync", "aligned"] or shape is None or "row" not in mods or "col" not in mods or \
                mods[-4] != "f32" or mods[-1] != "f32" or mods[-2] != ab or (shape, ab) not in self._MMA:
            raise Unsupported(inst.opcode)
        na, nb = (2, 1) if (shape, ab) == ("m16n8k8", "f16") else (4, 2)
        ops_ = inst.operands
        if len(ops_) != 4 or not all(isinstance(o, Vec) for o in ops_) or \
                [len(o.items) for o in ops_] != [4, na, nb, 4] or any(it is None for o in ops_ for it in o.items):
            raise Unsupported(inst.opcode)
        d, a, b, c = ops_
        # each element as the float the tensor core reads (exact for every type), converted once by its owner
        for j, r in enumerate(list(a.items) + list(b.items)):
            v = self.src(r, "b32")
            if ab == "tf32":
                self.emit(f"store i32 {self.op2('and', 'i32', v, '-8192')}, ptr "
                          f"{self.exchange_slot(0, '%S.laneid', word + j)}")
                continue
            for half in (0, 1):
                h = self.t()
                self.emit(f"{h} = trunc i32 {self.op2('lshr', 'i32', v, str(16 * half))} to i16")
                if ab == "f16":
                    self.need.add("f16_to_f32")
                    f = self.call("float", "@f16_to_f32", f"i16 {h}")
                else:
                    z, f = self.t(), self.t()
                    self.emit(f"{z} = zext i16 {h} to i32")
                    self.emit(f"{f} = bitcast i32 {self.op2('shl', 'i32', z, '16')} to float")
                self.emit(f"store float {f}, ptr {self.exchange_slot(0, '%S.laneid', word + 2 * j + half)}")
        saved, self.out = self.out, []
        name = f"mma_{shape}_{ab}"
        self.need.add(name)
        cs = [self.src(r, "f32") for r in c.items]
        res = self.t()
        self.emit(f"{res} = call {{float, float, float, float}} @{name}(ptr %XCH, i32 %S.laneid, i64 {self.xw}, "
                  f"i32 {word}, " + ", ".join(f"float {v}" for v in cs) + ")")
        for j, r in enumerate(d.items):
            x = self.t()
            self.emit(f"{x} = extractvalue {{float, float, float, float}} {res}, {j}")
            self.dst(r, "f32", x)
        finish, self.out = self.out, saved
        return finish, [c], [d]

    def reg_slots(self):
        return {name: i for i, name in enumerate(self.regs)}

    def saved_at(self, gi, reads, writes):
        """The registers a thread must keep across the synchronization point that is group ``gi``: those live after
        it less the ones the resumed thread writes first, and the ones it reads on resuming (a shfl's lane offset
        and clamp, an mma's accumulator)."""
        after = set(self.live[gi + 1]) - set().union(set(), *(self.regs_of(o) for o in writes))
        after |= set().union(set(), *(self.regs_of(o) for o in reads))
        return [name for name in self.regs if name in after]

    def exchange_slot(self, base, lane, word):
        """Pointer to 32-bit word ``word`` of lane ``lane`` (an i32 value) in the exchange half at word ``base``."""
        off = self.op2("add", "i64", self.op2("mul", "i64", self.zext64(lane), str(self.xw)), str(base + word))
        p = self.t()
        self.emit(f"{p} = getelementptr i32, ptr %XCH, i64 {off}")
        return p

    def spill(self, names):
        """The registers ``names`` stored in the thread's state (8 bytes each), for a resume after a barrier."""
        out = []
        for i, name in enumerate(names):
            t = self.regs[name]
            v, p = self.t(), self.t()
            out += [f"  {v} = load {ltype(t)}, ptr {self.rname(name)}",
                    f"  {p} = getelementptr i64, ptr %STATE, i64 {self.cpq // 8 + i}",
                    f"  store {ltype(t)} {v}, ptr {p}"]
        return out

    def reload(self, names):
        out = []
        for i, name in enumerate(names):
            t = self.regs[name]
            v, p = self.t(), self.t()
            out += [f"  {p} = getelementptr i64, ptr %STATE, i64 {self.cpq // 8 + i}",
                    f"  {v} = load {ltype(t)}, ptr {p}",
                    f"  store {ltype(t)} {v}, ptr {self.rname(name)}"]
        return out

    def count(self, n):
        if n:
            a, b = self.t(), self.t()
            self.emit(f"{a} = load i64, ptr %cnt")
            self.emit(f"{b} = add i64 {a}, {n}")
            self.emit(f"store i64 {b}, ptr %cnt")

    # ---------------------------------------------------------------- instructions
    def inst(self, inst, iid, gi):
        """Lower one instruction; True when it ended the block (a branch or exit)."""
        parts = inst.opcode.split(".")
        base, mods = parts[0], parts[1:]
        if base in ("bra", "ret", "exit"):
            nxt = f"%G{gi + 1}"
            tgt = "%EXIT"
            if base == "bra":
                op = inst.operands[0]
                if not isinstance(op, Sym) or op.name not in self.labels:
                    raise Unsupported("branch to an unknown label")
                tgt = f"%G{self.labels[op.name]}"
            if inst.pred is None:
                self.emit(f"br label {tgt}")
            else:
                p = self.src(Reg(inst.pred), "pred")
                a, b = (nxt, tgt) if inst.pred_neg else (tgt, nxt)
                self.emit(f"br i1 {p}, label {a}, label {b}")
            return True
        if base in ("bar", "barrier") and "warp" not in mods:
            if inst.pred is not None or len(inst.operands) > 1 or (
                    inst.operands and not (isinstance(inst.operands[0], Imm) and int(inst.operands[0].value) == 0)):
                raise Unsupported(f"{inst.opcode} with a thread count, another barrier or a predicate")
            if any(m not in ("sync", "aligned") for m in mods):
                raise Unsupported(inst.opcode)
            self.yield_at(iid, gi, "bar", [])
            return True
        if base == "shfl":
            self.shfl(inst, mods, iid, gi)
            return True
        if base in WARP_BATCHED:
            raise Unsupported(f"predicated {base}")
        if base in ("bar", "barrier"):   # bar.warp.sync: threads of a warp run in program order here anyway
            return False
        h = getattr(self, f"op_{base}", None)
        if h is None:
            raise Unsupported(f"opcode {inst.opcode}")
        if inst.pred is not None:
            p = self.src(Reg(inst.pred), "pred")
            a, b = (f"%N{iid}", f"%I{iid}") if inst.pred_neg else (f"%I{iid}", f"%N{iid}")
            self.emit(f"br i1 {p}, label {a}, label {b}")
            self.label(f"I{iid}")
            h(inst, mods, iid)
            self.emit(f"br label %N{iid}")
            self.label(f"N{iid}")
        else:
            h(inst, mods, iid)
        return False

    @staticmethod
    def ty(mods):
        t = mods[-1] if mods else None
        if t not in TYPE_SIZES:
            raise Unsupported("missing type")
        return t

    @staticmethod
    def rnd(mods):
        return next((r for r in ("rn", "rz", "rm", "rp") if r in mods), None)

    def n_ops(self, inst, n):
        if len(inst.operands) != n:
            raise Unsupported("operand count")
        return inst.operands

    # -- float helpers
    def ftz(self, v):
        self.need.add("ftz32")
        return self.call("float", "@ftz32", f"float {v}")

    def sat(self, v, lt):
        self.need.add("sat_" + lt)
        return self.call(lt, f"@sat_{lt}", f"{lt} {v}")

    def fbin(self, inst, mods, t, op):
        if t not in ("f32", "f64"):
            raise Unsupported(f"{inst.opcode}")
        d, a, b = self.n_ops(inst, 3)
        lt = ltype(t)
        va, vb = self.src(a, t), self.src(b, t)
        ftz = "ftz" in mods and t == "f32"
        if ftz:
            va, vb = self.ftz(va), self.ftz(vb)
        r = self.rnd(mods)
        if r in (None, "rn"):
            x = self.op2(op, lt, va, vb)
        elif t == "f32":
            da, db = self.t(), self.t()
            self.emit(f"{da} = fpext float {va} to double")
            self.emit(f"{db} = fpext float {vb} to double")
            s = self.op2(op, "double", da, db)
            self.need.add("round_f32")
            x = self.call("float", "@round_f32", f"double {s}", f"i32 {'zmp'.index(r[1])}")
        else:
            raise Unsupported(f"{inst.opcode}")
        if ftz:
            x = self.ftz(x)
        if "sat" in mods:
            x = self.sat(x, lt)
        self.dst(d, t, x)

    # -- arithmetic
    def op_add(self, inst, mods, iid):
        self.arith(inst, mods, "fadd", "add")

    def op_sub(self, inst, mods, iid):
        self.arith(inst, mods, "fsub", "sub")

    def arith(self, inst, mods, fop, iop):
        t = self.ty(mods)
        if kind(t) == "f" or t in ("f16", "bf16", "f16x2", "bf16x2"):
            return self.fbin(inst, mods, t, fop)
        if "sat" in mods or "cc" in mods:
            raise Unsupported(inst.opcode)
        d, a, b = self.n_ops(inst, 3)
        self.dst(d, t, self.op2(iop, ltype(t), self.src(a, t), self.src(b, t)))

    _WIDE = {"u16": "u32", "s16": "s32", "u32": "u64", "s32": "s64"}

    def ext(self, v, t, w):
        x = self.t()
        self.emit(f"{x} = {'sext' if t[0] == 's' else 'zext'} {ltype(t)} {v} to {ltype(w)}")
        return x

    def mulhi(self, va, vb, t):
        bits = 8 * TYPE_SIZES[t]
        w = f"i{2 * bits}"
        e = "sext" if t[0] == "s" else "zext"
        a2, b2, p, h, x = self.t(), self.t(), self.t(), self.t(), self.t()
        self.emit(f"{a2} = {e} i{bits} {va} to {w}")
        self.emit(f"{b2} = {e} i{bits} {vb} to {w}")
        self.emit(f"{p} = mul {w} {a2}, {b2}")
        self.emit(f"{h} = lshr {w} {p}, {bits}")
        self.emit(f"{x} = trunc {w} {h} to i{bits}")
        return x

    def op_mul(self, inst, mods, iid):
        t = self.ty(mods)
        if kind(t) == "f" or t in ("f16", "bf16", "f16x2", "bf16x2"):
            return self.fbin(inst, mods, t, "fmul")
        d, a, b = self.n_ops(inst, 3)
        va, vb = self.src(a, t), self.src(b, t)
        if "wide" in mods:
            w = self._WIDE[t]
            return self.dst(d, w, self.op2("mul", ltype(w), self.ext(va, t, w), self.ext(vb, t, w)))
        if "hi" in mods:
            return self.dst(d, t, self.mulhi(va, vb, t))
        self.dst(d, t, self.op2("mul", ltype(t), va, vb))

    def op_mad(self, inst, mods, iid):
        t = self.ty(mods)
        if kind(t) == "f" or t in ("f16", "bf16"):
            return self.op_fma(inst, mods, iid)
        if "cc" in mods:
            raise Unsupported(inst.opcode)
        d, a, b, c = self.n_ops(inst, 4)
        va, vb = self.src(a, t), self.src(b, t)
        if "wide" in mods:
            w = self._WIDE[t]
            p = self.op2("mul", ltype(w), self.ext(va, t, w), self.ext(vb, t, w))
            return self.dst(d, w, self.op2("add", ltype(w), p, self.src(c, w)))
        p = self.mulhi(va, vb, t) if "hi" in mods else self.op2("mul", ltype(t), va, vb)
        self.dst(d, t, self.op2("add", ltype(t), p, self.src(c, t)))

    def op_fma(self, inst, mods, iid):
        t = self.ty(mods)
        if t not in ("f32", "f64"):
            raise Unsupported(inst.opcode)
        d, a, b, c = self.n_ops(inst, 4)
        r = self.rnd(mods) or "rn"
        va, vb, vc = self.src(a, t), self.src(b, t), self.src(c, t)
        ftz = "ftz" in mods and t == "f32"
        if ftz:
            va, vb, vc = self.ftz(va), self.ftz(vb), self.ftz(vc)
        if t == "f32" and r == "rn":
            x = self.call("float", "@llvm.fma.f32", f"float {va}", f"float {vb}", f"float {vc}")
        else:
            # the interpreter's long double (x87) product and sum, then one rounding
            lt = ltype(t)
            xa, xb, xc = self.t(), self.t(), self.t()
            for x_, v_ in ((xa, va), (xb, vb), (xc, vc)):
                self.emit(f"{x_} = fpext {lt} {v_} to x86_fp80")
            s = self.op2("fadd", "x86_fp80", self.op2("fmul", "x86_fp80", xa, xb), xc)
            if t == "f64" and r == "rn":
                x = self.t()
                self.emit(f"{x} = fptrunc x86_fp80 {s} to double")
            elif t == "f32":
                self.need.add("round_f32_x")
                x = self.call("float", "@round_f32_x", f"x86_fp80 {s}", f"i32 {'nzmp'.index(r[1])}")
            else:
                raise Unsupported(inst.opcode)
        if ftz:
            x = self.ftz(x)
        if "sat" in mods:
            x = self.sat(x, ltype(t))
        self.dst(d, t, x)

    def op_div(self, inst, mods, iid):
        t = self.ty(mods)
        d, a, b = self.n_ops(inst, 3)
        if kind(t) == "f":
            r = self.rnd(mods)
            if not (r in (None, "rn") or "approx" in mods or "full" in mods):
                raise Unsupported(inst.opcode)
            return self.fbin(inst, [m for m in mods if m not in ("rn", "approx", "full")], t, "fdiv")
        if t in ("f16", "bf16"):
            raise Unsupported(inst.opcode)
        lt = ltype(t)
        va, vb = self.src(a, t), self.src(b, t)
        self.need.add(f"{'s' if t[0] == 's' else 'u'}div_{lt}")
        self.dst(d, t, self.call(lt, f"@{'s' if t[0] == 's' else 'u'}div_{lt}", f"{lt} {va}", f"{lt} {vb}"))

    def op_rem(self, inst, mods, iid):
        t = self.ty(mods)
        d, a, b = self.n_ops(inst, 3)
        lt = ltype(t)
        va, vb = self.src(a, t), self.src(b, t)
        self.need.add(f"{'s' if t[0] == 's' else 'u'}rem_{lt}")
        self.dst(d, t, self.call(lt, f"@{'s' if t[0] == 's' else 'u'}rem_{lt}", f"{lt} {va}", f"{lt} {vb}"))

    def op_abs(self, inst, mods, iid):
        t = self.ty(mods)
        d, a = self.n_ops(inst, 2)
        va = self.src(a, t)
        if t in ("f16", "bf16"):
            return self.dst(d, t, self.op2("and", "i16", va, "32767"))
        if kind(t) == "f":
            x = self.call(ltype(t), f"@llvm.fabs.{'f32' if t == 'f32' else 'f64'}", f"{ltype(t)} {va}")
            return self.dst(d, t, self.ftz(x) if "ftz" in mods and t == "f32" else x)
        lt = ltype(t)
        neg = self.op2("sub", lt, "0", va)
        c = self.op2("icmp slt", lt, va, "0")
        self.dst(d, t, self.select(c, lt, neg, va))

    def op_neg(self, inst, mods, iid):
        t = self.ty(mods)
        d, a = self.n_ops(inst, 2)
        va = self.src(a, t)
        if t in ("f16", "bf16"):
            return self.dst(d, t, self.op2("xor", "i16", va, "-32768"))
        if kind(t) == "f":
            x = self.t()
            self.emit(f"{x} = fneg {ltype(t)} {va}")
            return self.dst(d, t, self.ftz(x) if "ftz" in mods and t == "f32" else x)
        self.dst(d, t, self.op2("sub", ltype(t), "0", va))

    def minmax(self, inst, mods, which):
        t = self.ty(mods)
        d, a, b = self.n_ops(inst, 3)
        lt = ltype(t)
        va, vb = self.src(a, t), self.src(b, t)
        if kind(t) == "f":
            if "NaN" in mods or "xorsign" in mods:
                raise Unsupported(inst.opcode)
            # numpy's fmin/fmax: a if (a < b, resp. a > b) or b is NaN, else b
            c = self.op2(f"fcmp {'olt' if which == 'min' else 'ogt'}", lt, va, vb)
            nb = self.op2("fcmp uno", lt, vb, vb)
            x = self.select(self.op2("or", "i1", c, nb), lt, va, vb)
            return self.dst(d, t, self.ftz(x) if "ftz" in mods and t == "f32" else x)
        if t in ("f16", "bf16", "f16x2", "bf16x2"):
            raise Unsupported(inst.opcode)
        cmp = ("slt" if which == "min" else "sgt") if t[0] == "s" else ("ult" if which == "min" else "ugt")
        self.dst(d, t, self.select(self.op2(f"icmp {cmp}", lt, va, vb), lt, va, vb))

    def op_min(self, inst, mods, iid):
        self.minmax(inst, mods, "min")

    def op_max(self, inst, mods, iid):
        self.minmax(inst, mods, "max")

    def bitop(self, inst, mods, op):
        t = self.ty(mods)
        d, a, b = self.n_ops(inst, 3)
        self.dst(d, t, self.op2(op, ltype(t), self.src(a, t), self.src(b, t)))

    def op_and(self, inst, mods, iid):
        self.bitop(inst, mods, "and")

    def op_or(self, inst, mods, iid):
        self.bitop(inst, mods, "or")

    def op_xor(self, inst, mods, iid):
        self.bitop(inst, mods, "xor")

    def op_not(self, inst, mods, iid):
        t = self.ty(mods)
        d, a = self.n_ops(inst, 2)
        self.dst(d, t, self.op2("xor", ltype(t), self.src(a, t), "true" if t == "pred" else "-1"))

    def shift(self, inst, mods, which):
        t = self.ty(mods)
        d, a, b = self.n_ops(inst, 3)
        W = 8 * TYPE_SIZES[t]
        lt = ltype(t)
        va = self.src(a, t)
        signed = t[0] == "s"
        if isinstance(b, Imm):
            k = int(b.value)
            if k >= W:
                x = self.op2("ashr", lt, va, str(W - 1)) if which == "shr" and signed else "0"
            else:
                x = self.op2("shl" if which == "shl" else ("ashr" if signed else "lshr"), lt, va, str(k))
            return self.dst(d, t, x)
        vb = self.src(b, "u32")
        big = self.op2("icmp uge", "i32", vb, str(W))
        # clamped to W-1 before narrowing to the value's width (a signed shr by >= W is a shift by W-1)
        c32 = self.select(self.op2("icmp ult", "i32", vb, str(W - 1)), "i32", vb, str(W - 1))
        clamped = c32 if W == 32 else self.convert_int(c32, 32, W)
        if which == "shr" and signed:
            return self.dst(d, t, self.op2("ashr", lt, va, clamped))
        x = self.op2("shl" if which == "shl" else "lshr", lt, va, clamped)
        self.dst(d, t, self.select(big, lt, "0", x))

    def convert_int(self, v, frm, to):
        x = self.t()
        self.emit(f"{x} = {'zext' if to > frm else 'trunc'} i{frm} {v} to i{to}")
        return x

    def op_shl(self, inst, mods, iid):
        self.shift(inst, mods, "shl")

    def op_shr(self, inst, mods, iid):
        self.shift(inst, mods, "shr")

    def op_bfi(self, inst, mods, iid):
        t = self.ty(mods)
        d, a, b, c, e = self.n_ops(inst, 5)
        W = 8 * TYPE_SIZES[t]
        va, vb = self.src(a, t), self.src(b, t)
        vp, vl = self.src(c, "u32"), self.src(e, "u32")
        self.need.add("bfi")
        ua = va if W == 64 else self.convert_int(va, 32, 64)
        ub = vb if W == 64 else self.convert_int(vb, 32, 64)
        x = self.call("i64", "@bfi", f"i64 {ua}", f"i64 {ub}", f"i32 {vp}", f"i32 {vl}", f"i64 {W}")
        self.dst(d, t, x if W == 64 else self.convert_int(x, 64, 32))

    def op_prmt(self, inst, mods, iid):
        if any(m in ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16") for m in mods):
            raise Unsupported(inst.opcode)
        d, a, b, c = self.n_ops(inst, 4)
        self.need.add("prmt")
        self.dst(d, "b32", self.call("i32", "@prmt", f"i32 {self.src(a, 'b32')}", f"i32 {self.src(b, 'b32')}",
                                     f"i32 {self.src(c, 'b32')}"))

    # -- transcendentals (the interpreter's numpy float32 functions are libm's here: checked at startup)
    def unary_f(self, inst, mods, make):
        t = self.ty(mods)
        d, a = self.n_ops(inst, 2)
        if t not in ("f32", "f64"):
            raise Unsupported(inst.opcode)
        va = self.src(a, t)
        ftz = "ftz" in mods and t == "f32"
        if ftz:
            va = self.ftz(va)
        x = make(va, ltype(t), t)
        self.dst(d, t, self.ftz(x) if ftz else x)

    def op_rcp(self, inst, mods, iid):
        r = self.rnd(mods)
        if not (r in (None, "rn") or "approx" in mods):
            raise Unsupported(inst.opcode)
        self.unary_f(inst, mods, lambda v, lt, t: self.op2("fdiv", lt, self.fconst(1.0, lt), v))

    def op_sqrt(self, inst, mods, iid):
        r = self.rnd(mods)
        if not (r in (None, "rn") or "approx" in mods):
            raise Unsupported(inst.opcode)
        self.unary_f(inst, mods, lambda v, lt, t: self.call(lt, f"@llvm.sqrt.{t}", f"{lt} {v}"))

    def op_rsqrt(self, inst, mods, iid):
        def make(v, lt, t):   # the interpreter's 1 / sqrt in float64, rounded once to the type
            w = v
            if lt == "float":
                w = self.t()
                self.emit(f"{w} = fpext float {v} to double")
            r = self.op2("fdiv", "double", self.fconst(1.0, "double"), self.call("double", "@llvm.sqrt.f64",
                                                                                 f"double {w}"))
            if lt == "double":
                return r
            x = self.t()
            self.emit(f"{x} = fptrunc double {r} to float")
            return x
        self.unary_f(inst, mods, make)

    def libm32(self, inst, mods, name):
        if self.ty(mods) != "f32":
            raise Unsupported(inst.opcode)
        self.need.add(name)
        self.unary_f(inst, mods, lambda v, lt, t: self.call("float", f"@{name}", f"float {v}"))

    def op_ex2(self, inst, mods, iid):
        self.libm32(inst, mods, "exp2f")

    def op_lg2(self, inst, mods, iid):
        self.libm32(inst, mods, "log2f")

    # -- comparisons / selection
    _ICMP = {"eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge",
             "lo": "ult", "ls": "ule", "hi": "ugt", "hs": "uge"}
    _FCMP = {"eq": "oeq", "ne": "one", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge", "equ": "ueq",
             "neu": "une", "ltu": "ult", "leu": "ule", "gtu": "ugt", "geu": "uge", "num": "ord", "nan": "uno"}

    def compare(self, cmp, t, va, vb):
        lt = ltype(t)
        if kind(t) == "f":
            if cmp not in self._FCMP:
                raise Unsupported(f"setp.{cmp}")
            return self.op2(f"fcmp {self._FCMP[cmp]}", lt, va, vb)
        if t in ("f16", "bf16", "f16x2", "bf16x2") or cmp not in self._ICMP:
            raise Unsupported(f"setp.{cmp}.{t}")
        p = self._ICMP[cmp]
        if p in ("eq", "ne") or p[0] == "u":
            return self.op2(f"icmp {p}", lt, va, vb)
        return self.op2(f"icmp {'s' if t[0] == 's' else 'u'}{p}", lt, va, vb)

    def op_setp(self, inst, mods, iid):
        t = self.ty(mods)
        cmp = mods[0]
        boolop = mods[1] if len(mods) > 2 and mods[1] in ("and", "or", "xor") else None
        ops_ = inst.operands
        d, q = ops_[0], None
        if isinstance(d, Pipe):
            d, q = d.first, d.second
        r = self.compare(cmp, t, self.src(ops_[1], t), self.src(ops_[2], t))
        c = self.src(ops_[3], "pred") if boolop else None
        if q is not None:
            nq = self.op2("xor", "i1", r, "true")
            self.dst(q, "pred", self.op2(boolop, "i1", nq, c) if boolop else nq)
        self.dst(d, "pred", self.op2(boolop, "i1", r, c) if boolop else r)

    def op_selp(self, inst, mods, iid):
        t = self.ty(mods)
        d, a, b, c = self.n_ops(inst, 4)
        va, vb, vc = self.src(a, t), self.src(b, t), self.src(c, "pred")
        self.dst(d, t, self.select(vc, ltype(t), va, vb))

    # -- conversions / moves
    def op_cvt(self, inst, mods, iid):
        dt, at = mods[-2], mods[-1]
        flags = set(mods[:-2])
        d, a = self.n_ops(inst, 2)
        r = next((m for m in ("rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi") if m in flags), None)
        ftz, sat = "ftz" in flags, "sat" in flags
        isf = lambda t: t in ("f16", "bf16", "f32", "f64")  # noqa: E731
        if dt == "tf32" and at == "f32" and r is None and "rna" in flags and not sat:
            return self.cvt_rna_tf32(d, a, ftz)
        if dt in ("tf32",) or at in ("tf32",) or "rna" in flags:
            raise Unsupported(inst.opcode)
        va = self.src(a, at)
        if at == "f16":
            self.need.add("f16_to_f32")
            val, vt = self.call("float", "@f16_to_f32", f"i16 {va}"), "f32"
        elif at == "bf16":
            z, x = self.t(), self.t()
            self.emit(f"{z} = zext i16 {va} to i32")
            s = self.op2("shl", "i32", z, "16")
            self.emit(f"{x} = bitcast i32 {s} to float")
            val, vt = x, "f32"
        else:
            val, vt = va, at
        if ftz and vt == "f32":
            val = self.ftz(val)
        if isf(dt) and isf(at):
            if dt in ("f16", "bf16"):
                if r not in (None, "rn") or vt != "f32":
                    raise Unsupported(inst.opcode)
                if sat:
                    val = self.sat(val, "float")
                self.need.add(f"f32_to_{dt}")
                return self.dst(d, dt, self.call("i16", f"@f32_to_{dt}", f"float {val}"))
            ld = ltype(dt)
            if r in ("rni", "rzi", "rmi", "rpi"):
                if vt != dt:
                    raise Unsupported(inst.opcode)
                fn = {"rni": "roundeven", "rzi": "trunc", "rmi": "floor", "rpi": "ceil"}[r]
                x = self.call(ld, f"@llvm.{fn}.{dt}", f"{ld} {val}")
            elif vt == dt:
                x = val
            elif dt == "f32" and vt == "f64":
                if r not in (None, "rn"):
                    raise Unsupported(inst.opcode)
                x = self.t()
                self.emit(f"{x} = fptrunc double {val} to float")
            elif dt == "f64" and vt == "f32":
                x = self.t()
                self.emit(f"{x} = fpext float {val} to double")
            else:
                raise Unsupported(inst.opcode)
            if sat:
                x = self.sat(x, ld)
            if ftz and dt == "f32":
                x = self.ftz(x)
            return self.dst(d, dt, x)
        if isf(dt):   # int -> float
            if dt not in ("f32", "f64") or r not in (None, "rn") or sat:
                raise Unsupported(inst.opcode)
            x = self.t()
            self.emit(f"{x} = {'sitofp' if at[0] == 's' else 'uitofp'} {ltype(at)} {val} to {ltype(dt)}")
            return self.dst(d, dt, x)
        if isf(at):   # float -> int: round in float64, saturate, NaN -> 0
            if r is None:
                raise Unsupported(inst.opcode)
            if vt == "f32":
                y = self.t()
                self.emit(f"{y} = fpext float {val} to double")
                val = y
            fn = {"rni": "roundeven", "rn": "roundeven", "rzi": "trunc", "rz": "trunc", "rmi": "floor",
                  "rm": "floor", "rpi": "ceil", "rp": "ceil"}[r]
            rr = self.call("double", f"@llvm.{fn}.f64", f"double {val}")
            li = ltype(dt)
            sfx = f"{li}.f64"
            return self.dst(d, dt, self.call(li, f"@llvm.fpto{'s' if dt[0] == 's' else 'u'}i.sat.{sfx}",
                                             f"double {rr}"))
        if sat:   # int -> int
            raise Unsupported(inst.opcode)
        sa, sd = TYPE_SIZES[at], TYPE_SIZES[dt]
        if sa == sd:
            return self.dst(d, dt, val)
        x = self.t()
        op = "trunc" if sd < sa else ("sext" if at[0] == "s" else "zext")
        self.emit(f"{x} = {op} {ltype(at)} {val} to {ltype(dt)}")
        self.dst(d, dt, x)

    def cvt_rna_tf32(self, d, a, ftz):
        """cvt.rna.tf32.f32 as ops.f32_to_tf32_rna: 10 mantissa bits, to nearest with ties away from zero
        (add half an ulp of TF32, clear the low 13 bits); infinities and NaNs cleared only, a NaN whose payload
        was all in the low bits kept a NaN (quiet bit set)."""
        v = self.src(a, "f32")
        if ftz:
            v = self.ftz(v)
        u = self.t()
        self.emit(f"{u} = bitcast float {v} to i32")
        finite = self.op2("icmp ne", "i32", self.op2("and", "i32", u, "2139095040"), "2139095040")
        rounded = self.op2("and", "i32", self.op2("add", "i32", u, "4096"), "-8192")
        r = self.select(finite, "i32", rounded, self.op2("and", "i32", u, "-8192"))
        lost = self.op2("and", "i1", self.op2("xor", "i1", finite, "true"), self.op2(
            "and", "i1", self.op2("icmp ne", "i32", self.op2("and", "i32", u, "8388607"), "0"),
            self.op2("icmp eq", "i32", self.op2("and", "i32", r, "8388607"), "0")))
        self.dst(d, "b32", self.select(lost, "i32", self.op2("or", "i32", r, "4194304"), r))

    def op_cvta(self, inst, mods, iid):
        t = self.ty(mods)
        d, a = self.n_ops(inst, 2)
        if "global" in mods:
            return self.dst(d, t, self.src(a, t))
        win = SHWIN if "shared" in mods else LCWIN if "local" in mods else None
        if win is None:
            raise Unsupported(inst.opcode)
        # generic addresses of shared and local memory lie in the interpreter's windows
        self.dst(d, t, self.op2("sub" if "to" in mods else "add", ltype(t), self.src(a, t), str(win)))

    def op_mov(self, inst, mods, iid):
        t = self.ty(mods)
        d, a = self.n_ops(inst, 2)
        if isinstance(d, Vec) or isinstance(a, Vec):
            size = TYPE_SIZES[t]
            items = (d if isinstance(d, Vec) else a).items
            piece = size // len(items)
            pt = {1: "b8", 2: "b16", 4: "b32"}[piece]
            lw = f"i{8 * size}"
            if isinstance(d, Vec):   # unpack
                w = self.convert(self.src(a, t), t, f"b{8 * size}")
                for i, it in enumerate(items):
                    if it is not None:
                        s = self.op2("lshr", lw, w, str(8 * piece * i))
                        x = self.t()
                        self.emit(f"{x} = trunc {lw} {s} to i{8 * piece}")
                        self.dst(it, pt, x)
                return
            acc = "0"
            for i, it in enumerate(items):
                v = self.src(it, pt)
                z = self.t()
                self.emit(f"{z} = zext i{8 * piece} {v} to {lw}")
                acc = self.op2("or", lw, acc, self.op2("shl", lw, z, str(8 * piece * i)))
            return self.dst(d, t, self.convert(acc, f"b{8 * size}", t))
        self.dst(d, t, self.src(a, t))

    def op_call(self, inst, mods, iid):
        """``call.uni __assertfail, (param0, ..., param4)``: NVRTC's device-side ``assert``. The thread stops: its
        instruction and the assertion's message, file, line and function (as the interpreter reads them) go to
        out[14..18] and the body returns ASSERTED; the launch loop keeps the first such call and every thread
        that fails it."""
        ops_ = inst.operands
        if inst.pred is not None or len(ops_) != 2 or not isinstance(ops_[0], Sym) or \
                ops_[0].name != "__assertfail" or not isinstance(ops_[1], Args) or len(ops_[1].names) != 5:
            raise Unsupported("a call other than __assertfail")
        vals = []
        for a, t in zip(ops_[1].names[:4], ("u64", "u64", "u32", "u64")):
            if CALL_PARAM + a not in self.regs:
                raise Unsupported(f"call argument {a} is not a declared .param")
            v = self.src(Reg(CALL_PARAM + a), t)
            vals.append(self.zext64(v) if t == "u32" else v)
        for i, v in enumerate([str(iid)] + vals):
            q = self.t()
            self.emit(f"{q} = getelementptr i64, ptr %OUT, i64 {14 + i}")
            self.emit(f"store i64 {v}, ptr {q}")
        c, q, o, n = self.t(), self.t(), self.t(), self.t()
        self.out += [f"  {c} = load i64, ptr %cnt", f"  {q} = getelementptr i64, ptr %OUT, i64 4",
                     f"  {o} = load i64, ptr {q}", f"  {n} = add i64 {o}, {c}", f"  store i64 {n}, ptr {q}"]
        self.emit(f"ret i32 {ASSERTED}")
        self.label(f"AC{iid}")   # what follows the call in its group is never reached

    def op_cp(self, inst, mods, iid):
        """cp.async as the interpreter runs it: a copy reads global memory when issued and lands in shared memory at
        the wait that covers its group. Each thread keeps its copies in flight in a queue at the start of its state
        buffer (:func:`.native_helpers` ``cp_issue``/``cp_wait``)."""
        if not mods or mods[0] != "async" or inst.pred is not None:
            raise Unsupported(inst.opcode)
        rest = mods[1:]
        if rest == ["commit_group"]:
            self.need.add("cp_async")
            self.emit("call void @cp_commit(ptr %STATE)")
            return
        if rest in (["wait_group"], ["wait_all"]):
            keep = "0"
            if rest == ["wait_group"]:
                if not inst.operands or not isinstance(inst.operands[0], Imm):
                    raise Unsupported(inst.opcode)
                keep = str(int(self.imm_value(None, inst.operands[0], "u32")))
            self.need.add("cp_async")
            everything = "true" if rest == ["wait_all"] else "false"
            self.emit(f"call void @cp_wait(ptr %STATE, ptr %SH, i64 {keep}, i1 {everything})")
            return
        if "shared" not in rest or "global" not in rest or not ({"ca", "cg"} & set(rest)):
            raise Unsupported(inst.opcode)
        ops_ = inst.operands
        if len(ops_) not in (3, 4) or not isinstance(ops_[2], Imm) or not isinstance(ops_[1], Addr) or \
                not isinstance(ops_[1].base, Reg):
            raise Unsupported(inst.opcode)
        size = int(self.imm_value(None, ops_[2], "u32"))
        if size not in (4, 8, 16) or ("cg" in rest and size != 16):
            raise Unsupported(inst.opcode)
        self.need.add("cp_async")
        # the destination's window check first, as the interpreter's order
        doff = self.window_offset(ops_[0], "shared")
        self.window_ptrs("shared", doff, iid, size, 1)
        saddr = self.src(ops_[1].base, "u64")
        if ops_[1].offset:
            saddr = self.op2("add", "i64", saddr, str(ops_[1].offset))
        al = self.op2("icmp eq", "i64", self.op2("and", "i64", saddr, str(size - 1)), "0")
        self.fault_unless(al, FAULT_CP_MISALIGNED, iid, saddr, size)
        nread = str(size)
        if len(ops_) == 4:
            ss = self.zext64(self.src(ops_[3], "u32"))
            nread = self.select(self.op2("icmp ult", "i64", ss, str(size)), "i64", ss, str(size))
        site = self.sites
        self.sites += 1
        r, badv = self.t(), self.t()
        self.emit(f"{r} = call i32 @cp_issue(ptr %STATE, ptr %MT, i64 %NMT, ptr %CACHE, i64 {site}, i64 {saddr}, "
                  f"i64 {nread}, i64 {doff}, i64 {size}, ptr %CPBAD)")
        self.emit(f"{badv} = load i64, ptr %CPBAD")
        self.fault_unless(self.op2("icmp ne", "i32", r, "1"), FAULT_OOB, iid, badv, 1)
        self.fault_unless(self.op2("icmp ne", "i32", r, "2"), FAULT_CP_QUEUE, iid, str(CP_QUEUE), 0)

    def op_membar(self, inst, mods, iid):
        pass

    op_fence = op_nanosleep = op_prefetch = op_prefetchu = op_pmevent = op_membar

    # -- memory
    def mem_parse(self, inst, mods):
        space, vec, t = "generic", 1, None
        for m in mods:
            if m in _SPACES:
                space = m
            elif m in ("v2", "v4"):
                vec = int(m[1:])
            elif m in TYPE_SIZES:
                t = m
            elif m in _IGNORED_MODS or m.startswith(("L1::", "L2::", "level::")):
                pass
            else:
                raise Unsupported(inst.opcode)
        if t is None or t == "b128":
            raise Unsupported(inst.opcode)
        return space, vec, t

    def gaddr(self, a, iid, size, vec):
        """(pointer, fault label) for a global access of vec elements of size bytes at operand a."""
        if not isinstance(a, Addr) or not isinstance(a.base, Reg):
            raise Unsupported("a global address that is not [register+offset]")
        base = self.src(a.base, "u64")
        addr = self.op2("add", "i64", base, str(a.offset)) if a.offset else base
        ptrs = []
        if vec > 1:   # the whole vector's alignment first (the interpreter's check order)
            bad = self.op2("and", "i64", addr, str(size * vec - 1))
            ok = self.op2("icmp eq", "i64", bad, "0")
            self.fault_unless(ok, FAULT_VECTOR_MISALIGNED, iid, addr, size * vec)
        for k in range(vec):
            ak = self.op2("add", "i64", addr, str(k * size)) if k else addr
            site = self.sites
            self.sites += 1
            p = self.call("ptr", "@gptr", "ptr %MT", "i64 %NMT", "ptr %CACHE", f"i64 {site}", f"i64 {ak}",
                          f"i64 {size}")
            ok = self.op2("icmp ne", "ptr", p, "null")
            kind_ = self.select(self.op2("icmp eq", "i64", self.op2("and", "i64", ak, str(size - 1)), "0"),
                                "i64", str(FAULT_OOB), str(FAULT_MISALIGNED)) if size > 1 else str(FAULT_OOB)
            self.fault_unless(ok, kind_, iid, ak, size)
            ptrs.append(p)
        return ptrs

    def window_offset(self, a, space):
        """The byte offset in ``space``'s window (shared, local, param) that address operand ``a`` names."""
        syms = self.window_syms[space]
        if isinstance(a, Addr) and isinstance(a.base, Sym) and a.base.name in syms:
            return str(syms[a.base.name] + a.base.offset + a.offset)
        if isinstance(a, Addr) and isinstance(a.base, Reg):
            off = self.src(a.base, "u64")
            return self.op2("add", "i64", off, str(a.offset)) if a.offset else off
        raise Unsupported(f"a .{space} address of another form")

    def ptrs(self, a, space, iid, size, vec):
        """Host pointers of the vec elements of an access in ``space`` (global, shared or generic), checked."""
        if space == "global":
            return self.gaddr(a, iid, size, vec)
        if not isinstance(a, Addr):
            raise Unsupported("an address operand that is not [..]")
        if space in WINDOW_FAULTS:
            return self.window_ptrs(space, self.window_offset(a, space), iid, size, vec)
        if space != "generic" or vec != 1 or not isinstance(a.base, Reg):
            raise Unsupported(f"a .{space} access")
        # generic: the shared window, the local one (where the kernel has local memory), else global memory
        addr = self.src(a.base, "u64")
        if a.offset:
            addr = self.op2("add", "i64", addr, str(a.offset))
        self.ntmp += 1
        n = self.ntmp
        incoming = []
        for space_, win in (("shared", SHWIN), ("local", LCWIN)):
            if space_ == "local" and not self.lsize:
                continue
            rel = self.op2("sub", "i64", addr, str(win))
            inwin = self.op2("icmp ult", "i64", rel, str(1 << 40))
            self.emit(f"br i1 {inwin}, label %GW{space_}{n}, label %GN{space_}{n}")
            self.label(f"GW{space_}{n}")
            incoming.append((self.window_ptrs(space_, rel, iid, size, 1)[0], self.cur_label))
            self.emit(f"br label %GJ{n}")
            self.label(f"GN{space_}{n}")
        pg = self.gaddr(Addr(a.base, a.offset), iid, size, 1)[0]
        incoming.append((pg, self.cur_label))
        self.emit(f"br label %GJ{n}")
        self.label(f"GJ{n}")
        x = self.t()
        self.emit(f"{x} = phi ptr " + ", ".join(f"[{p}, %{lb}]" for p, lb in incoming))
        return [x]

    def window_ptrs(self, space, off, iid, size, vec):
        """Pointers into the block's shared memory, the thread's local memory or the kernel's parameters at byte
        offset ``off`` (out of bounds, then alignment, as the interpreter checks a window)."""
        total = size * vec
        limit, base = {"shared": ("%SHSIZE", "%SH"), "local": (str(self.lsize), "%LOC"),
                       "param": (str(self.param_size), "%P")}[space]
        oob, misaligned = WINDOW_FAULTS[space]
        over = self.op2("icmp ugt", "i64", off, limit)
        end = self.op2("add", "i64", off, str(total))
        over2 = self.op2("icmp ugt", "i64", end, limit)
        self.fault_unless(self.op2("xor", "i1", self.op2("or", "i1", over, over2), "true"), oob, iid, off, total)
        if total > 1:
            al = self.op2("and", "i64", off, str(total - 1))
            self.fault_unless(self.op2("icmp eq", "i64", al, "0"), misaligned, iid, off, total)
        out = []
        for k in range(vec):
            p = self.t()
            o = self.op2("add", "i64", off, str(k * size)) if k else off
            self.emit(f"{p} = getelementptr i8, ptr {base}, i64 {o}")
            out.append(p)
        return out

    def fault_unless(self, ok, kind_, iid, addr, size):
        self.ntmp += 1
        good, bad = f"OK{self.ntmp}", f"BAD{self.ntmp}"
        self.emit(f"br i1 {ok}, label %{good}, label %{bad}")
        self.label(bad)
        for i, v in enumerate((kind_, iid, addr, size)):
            q = self.t()
            self.emit(f"{q} = getelementptr i64, ptr %OUT, i64 {i}")
            self.emit(f"store i64 {v}, ptr {q}")
        self.emit("br label %FAULT")
        self.label(good)

    def op_ld(self, inst, mods, iid):
        space, vec, t = self.mem_parse(inst, mods)
        d, a = self.n_ops(inst, 2)
        size = TYPE_SIZES[t]
        lt = ltype(t) if t != "pred" else "i8"
        items = d.items if isinstance(d, Vec) else (d,)
        if len(items) != vec:
            raise Unsupported("vector width")
        if space == "param" and isinstance(a, Addr) and isinstance(a.base, Reg):
            pass   # through a register holding a parameter's offset (a by-value struct): checked as a window
        elif space == "param":
            if not isinstance(a, Addr) or not isinstance(a.base, Sym) or a.base.name not in self.params:
                raise Unsupported("ld.param of something other than a kernel parameter")
            off = self.params[a.base.name][0] + a.base.offset + a.offset
            if off + size * vec > self.param_size:
                raise Unsupported("ld.param past the parameter buffer")
            for k, it in enumerate(items):
                p, x = self.t(), self.t()
                self.emit(f"{p} = getelementptr i8, ptr %P, i64 {off + k * size}")
                self.emit(f"{x} = load {lt}, ptr {p}, align 1")
                if it is not None:
                    self.dst(it, t, x)
            return
        ptrs = self.ptrs(a, space, iid, size, vec)
        for p, it in zip(ptrs, items):
            x = self.t()
            self.emit(f"{x} = load {lt}, ptr {p}, align 1")
            if it is not None:
                self.dst(it, t, x)

    op_ldu = op_ld

    def op_st(self, inst, mods, iid):
        space, vec, t = self.mem_parse(inst, mods)
        a, v = self.n_ops(inst, 2)
        if space == "param":   # a call's argument, held as a register (the decoder's rule)
            if not (isinstance(a, Addr) and isinstance(a.base, Sym) and CALL_PARAM + a.base.name in self.regs) \
                    or vec != 1 or a.offset or a.base.offset:
                raise Unsupported("st.param other than a whole call argument")
            return self.dst(Reg(CALL_PARAM + a.base.name), t, self.src(v, t))
        if space == "const":
            raise Unsupported("st.const")
        size = TYPE_SIZES[t]
        items = v.items if isinstance(v, Vec) else (v,)
        if len(items) != vec:
            raise Unsupported("vector width")
        vals = [self.src(it, t) for it in items]
        ptrs = self.ptrs(a, space, iid, size, vec)
        for p, x in zip(ptrs, vals):
            self.emit(f"store {ltype(t)} {x}, ptr {p}, align 1")


def lower_entry(mod, fn, imm_value, symbol="run"):
    """The lowering of entry ``fn`` of module ``mod`` (both the parser's trees): ``.ir`` is the LLVM IR module text,
    its launch function named ``symbol``; raises :class:`Unsupported`."""
    if fn.kind != "entry":
        raise Unsupported("not an entry")
    low = Lowering(mod, fn, imm_value, symbol)
    low.ir = low.lower()
    return low
