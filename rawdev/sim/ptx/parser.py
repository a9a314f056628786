"""PTX text → a small syntax tree (the PTX that NVRTC emits; not a general PTX front end).

Produces a :class:`ModuleAST` with module directives, module-scope variables and functions; each
function has its parameters and a flat list of body statements (register declarations, variable
declarations, labels, instructions) with source line numbers. Decoding into executable form is
:mod:`rawdev.sim.ptx.decoder`'s job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np


class PtxError(Exception):
    """The PTX text could not be parsed."""


# ----------------------------------------------------------------------------- operands
@dataclass(frozen=True)
class Reg:
    name: str


_REGS: dict = {}   # name -> its Reg: one object per register name, shared by every instruction that names it


def _reg(name):
    """The Reg for ``name`` (interned: a decoded kernel keeps its parsed instructions, and a big one names its
    registers a few hundred thousand times; one object per name keeps them out of every garbage collection)."""
    r = _REGS.get(name)
    if r is None:
        r = _REGS[name] = Reg(name)
    return r


@dataclass(frozen=True)
class NegPred:  # !%p1 as an operand
    name: str


@dataclass(frozen=True)
class Imm:
    value: object      # int or float
    kind: str          # 'int', 'f32' (0f…), 'f64' (0d…), 'float' (decimal)


@dataclass(frozen=True)
class Sym:
    name: str
    offset: int = 0


@dataclass(frozen=True)
class Vec:
    items: tuple      # of Reg / Imm / None (for '_')


@dataclass(frozen=True)
class Addr:
    base: object       # Reg | Sym | None
    offset: int


@dataclass(frozen=True)
class Args:            # (param0, param1) of a call: the .param variables passed or returned
    names: tuple


@dataclass(frozen=True)
class Pipe:            # %r25|%p7
    first: Reg
    second: Reg


@dataclass
class Inst:
    opcode: str
    operands: list
    pred: str | None
    pred_neg: bool
    line: int
    text: str


@dataclass
class Label:
    name: str
    line: int


@dataclass
class RegDecl:
    type: str
    names: list
    line: int


@dataclass
class VarDecl:
    space: str            # global / shared / const / local
    type: str
    name: str
    align: int
    count: int | None     # number of elements (None: unsized extern array)
    extern: bool
    init: list | None
    line: int
    elem_size: int = 0

    @property
    def size(self):
        return (self.count or 0) * self.elem_size


@dataclass
class ParamDecl:
    name: str
    type: str
    align: int
    count: int
    elem_size: int


@dataclass
class FunctionAST:
    name: str
    kind: str             # 'entry' or 'func'
    params: list
    body: list | None = field(default_factory=list)   # None: a prototype (no body)
    line: int = 0
    visible: bool = True


@dataclass
class ModuleAST:
    version: tuple = (0, 0)
    target: str = ""
    address_size: int = 64
    variables: list = field(default_factory=list)
    functions: dict = field(default_factory=dict)
    declared: dict = field(default_factory=dict)     # name -> FunctionAST of a prototype (.extern .func f(...);)
    lines: list = field(default_factory=list)


TYPE_SIZES = {
    "pred": 1, "b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2,
    "b32": 4, "u32": 4, "s32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4, "tf32": 4,
    "b64": 8, "u64": 8, "s64": 8, "f64": 8, "b128": 16,
}

_TOKEN = re.compile(r'"[^"\n]*"|0[fF][0-9a-fA-F]{8}(?!\w)|0[dD][0-9a-fA-F]{16}(?!\w)'
                    r'|\d+\.\d*(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|0[xX][0-9a-fA-F]+[uU]?|\d+[uU]?'
                    r'|[%.$_a-zA-Z](?:[\w$.%]|::)*|\S')
_BCOMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
_PUNCT = set(";,{}[]():+-@!|<>=*")


class Tok:
    __slots__ = ("kind", "value", "line")

    def __init__(self, kind, value, line):
        self.kind, self.value, self.line = kind, value, line


def _num(s):
    c1 = s[1:2]
    if c1 in ("f", "F") and len(s) == 10:
        return Imm(np.array(int(s[2:], 16), np.uint32).view(np.float32)[()], "f32")   # keeps NaN payloads
    if c1 in ("d", "D") and len(s) == 18:
        return Imm(np.array(int(s[2:], 16), np.uint64).view(np.float64)[()], "f64")
    if "." in s or (("e" in s or "E" in s) and not s.startswith(("0x", "0X"))):
        return Imm(float(s), "float")
    s = s.rstrip("uU")
    if s.startswith(("0x", "0X")):
        return Imm(int(s, 16), "int")
    if len(s) > 1 and s[0] == "0":
        return Imm(int(s, 8), "int")
    return Imm(int(s), "int")


_FAST_INST = re.compile(r"^\s*(?:@(!?)(%\w+)\s+)?([a-z][\w.:]*)(?:\s+([^{};\[\]]*?|[^{};]*?))?\s*;\s*$")
_REG_RE = re.compile(r"^%[\w.]+$")
_ADDR_RE = re.compile(r"^\[\s*([%\w$.]+)?\s*(?:\+\s*(-?\s*(?:0[xX][0-9a-fA-F]+|\d+)))?\s*\]$")
_SYM_RE = re.compile(r"^[$_a-zA-Z][\w$.]*$")


def _fast_operand(t):
    c = t[0]
    if c == "%":
        if "|" in t:
            a, b = t.split("|")
            return Pipe(_reg(a.strip()), _reg(b.strip()))
        return _reg(t) if _REG_RE.match(t) else None
    if c == "[":
        mo = _ADDR_RE.match(t)
        if mo is None:
            return None
        base, off = mo.group(1), mo.group(2)
        offv = 0
        if off:
            off = off.replace(" ", "")
            neg = off.startswith("-")
            offv = int(off.lstrip("-"), 0) if not off.lstrip("-").startswith("0") or off.lstrip("-") == "0" \
                or off.lstrip("-").lower().startswith("0x") else int(off.lstrip("-"), 8)
            offv = -offv if neg else offv
        if base is None:
            return Addr(None, offv)
        if base[0].isdigit():
            return None
        return Addr(_reg(base) if base.startswith("%") else Sym(base), offv)
    if c == "!":
        return NegPred(t[1:].strip())
    if c == "-":
        v = _fast_operand(t[1:].strip())
        return Imm(-v.value, v.kind) if isinstance(v, Imm) else None
    if c.isdigit():
        try:
            return _num(t)
        except ValueError:
            return None
    if _SYM_RE.match(t):
        return Sym(t)
    return None


def _fast_inst(mo, lineno, line):
    """Parse a simple one-line instruction (no vector operands) without the token stream."""
    neg, pred, opcode, rest = mo.groups()
    if opcode.startswith(".") or opcode in ("_",):
        return None
    operands = []
    if rest:
        for t in rest.split(","):
            t = t.strip()
            if not t:
                return None
            op = _fast_operand(t)
            if op is None:
                return None
            operands.append(op)
    return Inst(opcode, operands, pred, neg == "!", lineno, " ".join(line.split()))


def tokenize(text, fast=True):
    fast_ok = fast
    text = _BCOMMENT.sub(lambda m: "\n" * m.group().count("\n"), text)
    toks = []
    append = toks.append
    findall = _TOKEN.findall
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line:   # cheap: a module decoded one entry at a time has every other body blanked to newlines
            continue
        k = line.find("//")
        if k >= 0:
            line = line[:k]
        if fast_ok:
            mo = _FAST_INST.match(line)
            if mo is not None:
                inst = _fast_inst(mo, lineno, line)
                if inst is not None:
                    append(Tok("inst", inst, lineno))
                    continue
        for s in findall(line):
            c = s[0]
            if c.isdigit():
                append(Tok("num", _num(s), lineno))
            elif c == '"':
                append(Tok("string", s, lineno))
            elif c in _PUNCT:
                append(Tok("punct", s, lineno))
            elif c.isalpha() or c in "%.$_":
                append(Tok("ident", s, lineno))
            else:
                raise PtxError(f"line {lineno}: unexpected character {c!r}: {line.strip()}")
    return toks


class _Parser:
    def __init__(self, text):
        self.text = text
        self.lines = text.splitlines()
        self.toks = tokenize(text)
        self.i = 0

    # -- helpers
    def err(self, msg, tok=None):
        tok = tok or self.peek()
        line = tok.line if tok else (len(self.lines))
        src = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        raise PtxError(f"line {line}: {msg}: {src}")

    def peek(self, k=0):
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def next(self):
        t = self.peek()
        if t is None:
            raise PtxError("unexpected end of PTX text")
        self.i += 1
        return t

    def accept(self, value):
        t = self.peek()
        if t is not None and t.kind in ("punct", "ident") and t.value == value:
            self.i += 1
            return True
        return False

    def expect(self, value):
        t = self.peek()
        if t is None or t.value != value:
            self.err(f"expected {value!r}")
        self.i += 1
        return t

    def skip_line(self, line):
        while self.peek() is not None and self.peek().line == line:
            self.i += 1

    def skip_to_semicolon(self):
        while True:
            t = self.next()
            if t.kind == "punct" and t.value == ";":
                return

    def int_value(self):
        neg = self.accept("-")
        t = self.next()
        if t.kind != "num" or t.value.kind != "int":
            self.err("expected an integer", t)
        return -t.value.value if neg else t.value.value

    # -- module
    def parse(self):
        mod = ModuleAST(lines=self.lines)
        while self.peek() is not None:
            t = self.peek()
            if t.kind != "ident":
                self.err("unexpected token at module scope", t)
            v = t.value
            if v == ".version":
                self.next()
                tv = self.next()
                if tv.kind == "num" and tv.value.kind == "float":
                    s = str(tv.value.value)
                    major, minor = s.split(".")
                    mod.version = (int(major), int(minor))
                else:
                    self.err("bad .version", tv)
            elif v == ".target":
                self.next()
                targets = [self.next().value]
                while self.accept(","):
                    targets.append(self.next().value)
                mod.target = targets[0]
            elif v == ".address_size":
                self.next()
                mod.address_size = self.int_value()
            elif v in (".file", ".loc"):
                self.skip_line(t.line)
            elif v == ".section":
                self.next()
                self.next()
                self._skip_braces()
            elif v in (".visible", ".extern", ".weak", ".entry", ".func", ".global", ".const", ".shared",
                       ".local", ".common"):
                self._module_item(mod)
            elif v == ".pragma":
                self.skip_to_semicolon()
            else:
                self.err(f"unknown module directive {v}", t)
        return mod

    def _skip_braces(self):
        self.expect("{")
        depth = 1
        while depth:
            t = self.next()
            if t.kind == "punct" and t.value == "{":
                depth += 1
            elif t.kind == "punct" and t.value == "}":
                depth -= 1

    def _module_item(self, mod):
        linkage = []
        while self.peek().value in (".visible", ".extern", ".weak", ".common"):
            linkage.append(self.next().value)
        t = self.peek()
        if t.value in (".entry", ".func"):
            f = self._function(visible=".visible" in linkage)
            if f.body is None:
                mod.declared[f.name] = f
            else:
                mod.functions[f.name] = f
            return
        var = self._var_decl(extern=".extern" in linkage)
        mod.variables.append(var)

    def _var_decl(self, extern=False):
        start = self.next()
        space = start.value[1:]
        align = 0
        vtype = None
        while True:
            t = self.peek()
            if t.kind == "ident" and t.value == ".align":
                self.next()
                align = self.int_value()
            elif t.kind == "ident" and t.value.startswith(".") and t.value[1:] in TYPE_SIZES:
                vtype = self.next().value[1:]
            elif t.kind == "ident" and t.value in (".v2", ".v4", ".ptr", ".volatile"):
                if t.value in (".v2", ".v4"):
                    self.err("vector variables are not supported", t)
                self.next()
            else:
                break
        if vtype is None:
            self.err("variable declaration without a type", start)
        name_tok = self.next()
        if name_tok.kind != "ident":
            self.err("expected a variable name", name_tok)
        count = 1
        if self.accept("["):
            if self.accept("]"):
                count = None
            else:
                count = self.int_value()
                self.expect("]")
                while self.accept("["):
                    count *= self.int_value()
                    self.expect("]")
        init = None
        if self.accept("="):
            init = self._initializer()
        self.expect(";")
        esz = TYPE_SIZES[vtype]
        return VarDecl(space=space, type=vtype, name=name_tok.value, align=align or esz, count=count,
                       extern=extern, init=init, line=start.line, elem_size=esz)

    def _initializer(self):
        vals = []
        if self.accept("{"):
            if not self.accept("}"):
                while True:
                    vals.extend(self._initializer())
                    if self.accept("}"):
                        break
                    self.expect(",")
            return vals
        neg = self.accept("-")
        t = self.next()
        if t.kind != "num":
            self.err("unsupported initializer (only numeric constants)", t)
        v = t.value.value
        return [-v if neg else v]

    def _function(self, visible):
        kw = self.next()
        kind = kw.value[1:]
        if kind == "func" and self.peek().value == "(":
            # return-value parameter list
            self._param_list()
        name = self.next()
        params = []
        if self.peek() is not None and self.peek().value == "(":
            params = self._param_list()
        f = FunctionAST(name=name.value, kind=kind, params=params, line=kw.line, visible=visible)
        # performance directives up to the body
        while True:
            t = self.peek()
            if t is None:
                self.err("missing function body", kw)
            if t.kind == "punct" and t.value == ";":  # declaration only (prototype)
                self.next()
                f.body = None
                return f
            if t.kind == "punct" and t.value == "{":
                break
            if t.kind == "ident" and t.value in (".maxntid", ".reqntid", ".minnctapersm", ".maxnctapersm",
                                                 ".maxnreg", ".noreturn", ".pragma", ".explicitcluster",
                                                 ".reqnctapercluster", ".maxclusterrank"):
                self.next()
                while self.peek().kind in ("num",) or self.peek().value == ",":
                    self.next()
                if self.peek().value == ";":
                    self.next()
                continue
            if t.kind == "string":
                self.next()
                continue
            self.err("unexpected token before function body", t)
        self._body(f)
        return f

    def _param_list(self):
        self.expect("(")
        params = []
        if self.accept(")"):
            return params
        while True:
            params.append(self._param())
            if self.accept(")"):
                return params
            self.expect(",")

    def _param(self):
        t = self.next()
        if t.value not in (".param", ".reg"):
            self.err("expected .param", t)
        align = 0
        ptype = None
        while True:
            p = self.peek()
            if p.kind == "ident" and p.value == ".align":
                self.next()
                align = self.int_value()
            elif p.kind == "ident" and p.value.startswith(".") and p.value[1:] in TYPE_SIZES:
                ptype = self.next().value[1:]
            elif p.kind == "ident" and p.value in (".ptr", ".global", ".shared", ".const", ".local"):
                self.next()
            else:
                break
        name = self.next()
        count = 1
        if self.accept("["):
            count = self.int_value()
            self.expect("]")
        if ptype is None:
            self.err("parameter without a type", t)
        esz = TYPE_SIZES[ptype]
        return ParamDecl(name=name.value, type=ptype, align=align or esz, count=count, elem_size=esz)

    def _body(self, f):
        self.expect("{")
        depth = 1
        body = f.body
        while True:
            t = self.peek()
            if t is None:
                self.err("unterminated function body")
            if t.kind == "punct" and t.value == "{":
                self.next()
                depth += 1
                continue
            if t.kind == "punct" and t.value == "}":
                self.next()
                depth -= 1
                if depth == 0:
                    return
                continue
            if t.kind == "ident":
                v = t.value
                if v in (".loc", ".file"):
                    self.skip_line(t.line)
                    continue
                if v == ".pragma":
                    self.skip_to_semicolon()
                    continue
                if v == ".reg":
                    body.append(self._reg_decl())
                    continue
                if v in (".shared", ".local", ".global", ".const", ".param"):
                    body.append(self._var_decl())
                    continue
                if v == ".extern":
                    self.next()
                    body.append(self._var_decl(extern=True))
                    continue
                nt = self.peek(1)
                if nt is not None and nt.kind == "punct" and nt.value == ":" and not v.startswith("."):
                    self.next()
                    self.next()
                    body.append(Label(v, t.line))
                    continue
            if t.kind == "inst":
                self.next()
                body.append(t.value)
                continue
            if t.kind == "punct" and t.value == ";":
                self.next()
                continue
            body.append(self._instruction())

    def _reg_decl(self):
        t = self.next()
        rtype = None
        vec = 1
        while (self.peek().kind == "ident" and self.peek().value.startswith(".")
               and not self.peek().value.startswith("%")):
            v = self.next().value
            if v in (".v2", ".v4"):
                vec = int(v[2:])
            elif v[1:] in TYPE_SIZES:
                rtype = v[1:]
            else:
                self.err(f"unknown register attribute {v}", t)
        if vec != 1:
            self.err("vector registers are not supported", t)
        names = []
        while True:
            nt = self.next()
            if nt.kind != "ident":
                self.err("expected a register name", nt)
            if self.accept("<"):
                n = self.int_value()
                self.expect(">")
                names.extend(f"{nt.value}{k}" for k in range(n))
            else:
                names.append(nt.value)
            if self.accept(";"):
                break
            self.expect(",")
        return RegDecl(rtype, names, t.line)

    def _instruction(self):
        first = self.peek()
        line = first.line
        pred = None
        neg = False
        if self.accept("@"):
            neg = self.accept("!")
            pt = self.next()
            pred = pt.value
        op = self.next()
        if op.kind != "ident":
            self.err("expected an instruction", op)
        operands = []
        if not self.accept(";"):
            while True:
                operands.append(self._operand())
                if self.accept(";"):
                    break
                self.expect(",")
        last = self.toks[self.i - 1].line   # a call spans lines: its text is all of them
        if 0 < line <= len(self.lines):
            text = re.sub(r"\(\s+", "(", re.sub(r"\s+\)", ")", " ".join(" ".join(
                ln.split("//")[0] for ln in self.lines[line - 1:last]).split())))
        else:
            text = op.value
        return Inst(op.value, operands, pred, neg, line, text)

    def _operand(self):
        t = self.peek()
        if t.kind == "punct":
            if t.value == "[":
                self.next()
                return self._address()
            if t.value == "{":
                self.next()
                items = []
                while True:
                    it = self.next()
                    if it.kind == "ident" and it.value == "_":
                        items.append(None)
                    elif it.kind == "ident":
                        items.append(_reg(it.value))
                    elif it.kind == "num":
                        items.append(it.value)
                    else:
                        self.err("bad vector operand", it)
                    if self.accept("}"):
                        break
                    self.expect(",")
                return Vec(tuple(items))
            if t.value == "(":
                self.next()
                names = []
                if not self.accept(")"):
                    while True:
                        it = self.next()
                        if it.kind != "ident" or it.value.startswith("%"):
                            self.err("expected a .param name in a call's argument list", it)
                        names.append(it.value)
                        if self.accept(")"):
                            break
                        self.expect(",")
                return Args(tuple(names))
            if t.value == "!":
                self.next()
                return NegPred(self.next().value)
            if t.value == "-":
                self.next()
                nt = self.next()
                if nt.kind != "num":
                    self.err("expected a number after '-'", nt)
                v = nt.value
                return Imm(-v.value, v.kind)
            self.err("unexpected operand", t)
        if t.kind == "num":
            self.next()
            return t.value
        if t.kind == "ident":
            self.next()
            name = t.value
            if self.accept("|"):
                second = self.next()
                return Pipe(_reg(name), _reg(second.value))
            if name.startswith("%"):
                return _reg(name)
            off = 0
            if self.peek() is not None and self.peek().value == "+":
                self.next()
                off = self.int_value()
            return Sym(name, off)
        self.err("unexpected operand", t)

    def _address(self):
        base = None
        off = 0
        t = self.peek()
        if t.kind == "ident":
            self.next()
            base = _reg(t.value) if t.value.startswith("%") else Sym(t.value)
            if self.accept("+"):
                off = self.int_value()
            elif self.peek().value == "-":
                off = self.int_value()
        else:
            off = self.int_value()
        self.expect("]")
        return Addr(base, off)


def parse(text: str) -> ModuleAST:
    return _Parser(text).parse()
