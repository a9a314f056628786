"""LLVM IR of the native engine's shared pieces: the launch loop, the checked global-address lookup, and the
numeric helpers whose semantics must match :mod:`rawdev.sim.ptx.ops` bit for bit (numpy's float16 rounding,
PTX division by zero, directed rounding through float64 / x87 long double, bfi, prmt)."""

from __future__ import annotations

# what the thread body receives, in order (the launch loop passes them)
SPECIAL_ARGS = ("%tid.x", "%tid.y", "%tid.z", "%ntid.x", "%ntid.y", "%ntid.z",
                "%ctaid.x", "%ctaid.y", "%ctaid.z", "%nctaid.x", "%nctaid.y", "%nctaid.z", "%laneid", "%warpid")

_DECLS = """
declare float @llvm.fma.f32(float, float, float)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
declare float @llvm.fabs.f32(float)
declare double @llvm.fabs.f64(double)
declare float @llvm.sqrt.f32(float)
declare double @llvm.sqrt.f64(double)
declare float @llvm.roundeven.f32(float)
declare double @llvm.roundeven.f64(double)
declare float @llvm.trunc.f32(float)
declare double @llvm.trunc.f64(double)
declare float @llvm.floor.f32(float)
declare double @llvm.floor.f64(double)
declare float @llvm.ceil.f32(float)
declare double @llvm.ceil.f64(double)
declare i8 @llvm.fptosi.sat.i8.f64(double)
declare i16 @llvm.fptosi.sat.i16.f64(double)
declare i32 @llvm.fptosi.sat.i32.f64(double)
declare i64 @llvm.fptosi.sat.i64.f64(double)
declare i8 @llvm.fptoui.sat.i8.f64(double)
declare i16 @llvm.fptoui.sat.i16.f64(double)
declare i32 @llvm.fptoui.sat.i32.f64(double)
declare i64 @llvm.fptoui.sat.i64.f64(double)
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
"""

# the allocation holding [addr, addr+size): a one-entry cache per access site, then a binary search of the
# table (rows of base, end, host pointer; sorted by base); NULL for a misaligned or out-of-bounds access
_GPTR = """
define internal ptr @gptr(ptr %MT, i64 %N, ptr %CACHE, i64 %site, i64 %addr, i64 %size) alwaysinline {
entry:
  %m = sub i64 %size, 1
  %al = and i64 %addr, %m
  %aligned = icmp eq i64 %al, 0
  br i1 %aligned, label %cache, label %fail
cache:
  %cp = getelementptr i64, ptr %CACHE, i64 %site
  %ci = load i64, ptr %cp
  %cok = icmp ult i64 %ci, %N
  br i1 %cok, label %try, label %loop
try:
  %tb = mul i64 %ci, 3
  %bp = getelementptr i64, ptr %MT, i64 %tb
  %b = load i64, ptr %bp
  %ep = getelementptr i64, ptr %bp, i64 1
  %e = load i64, ptr %ep
  %ge = icmp uge i64 %addr, %b
  %lim = sub i64 %e, %size
  %le = icmp ule i64 %addr, %lim
  %hit = and i1 %ge, %le
  br i1 %hit, label %found, label %loop
found:
  %pp = getelementptr i64, ptr %bp, i64 2
  %hp = load i64, ptr %pp
  %off = sub i64 %addr, %b
  %h = add i64 %hp, %off
  %hptr = inttoptr i64 %h to ptr
  ret ptr %hptr
loop:
  %lo = phi i64 [0, %cache], [0, %try], [%lo2, %body]
  %hi = phi i64 [%N, %cache], [%N, %try], [%hi2, %body]
  %more = icmp ult i64 %lo, %hi
  br i1 %more, label %body, label %done
body:
  %sum = add i64 %lo, %hi
  %mid = lshr i64 %sum, 1
  %mb = mul i64 %mid, 3
  %mbp = getelementptr i64, ptr %MT, i64 %mb
  %mbase = load i64, ptr %mbp
  %le2 = icmp ule i64 %mbase, %addr
  %mid1 = add i64 %mid, 1
  %lo2 = select i1 %le2, i64 %mid1, i64 %lo
  %hi2 = select i1 %le2, i64 %hi, i64 %mid
  br label %loop
done:
  %z = icmp eq i64 %lo, 0
  br i1 %z, label %fail, label %check
check:
  %i = sub i64 %lo, 1
  %ib = mul i64 %i, 3
  %ibp = getelementptr i64, ptr %MT, i64 %ib
  %ibase = load i64, ptr %ibp
  %iep = getelementptr i64, ptr %ibp, i64 1
  %iend = load i64, ptr %iep
  %lim2 = sub i64 %iend, %size
  %ok = icmp ule i64 %addr, %lim2
  br i1 %ok, label %hit2, label %fail
hit2:
  store i64 %i, ptr %cp
  %ipp = getelementptr i64, ptr %ibp, i64 2
  %ihp = load i64, ptr %ipp
  %ioff = sub i64 %addr, %ibase
  %ih = add i64 %ihp, %ioff
  %ihptr = inttoptr i64 %ih to ptr
  ret ptr %ihptr
fail:
  ret ptr null
}
"""

_HELPERS = {
    # ops.ftz32: |x| < FLT_MIN -> x * 0 (a zero of x's sign)
    "ftz32": """
define internal float @ftz32(float %x) alwaysinline {
  %a = call float @llvm.fabs.f32(float %x)
  %c = fcmp olt float %a, 0x3810000000000000
  %z = fmul float %x, 0.0
  %r = select i1 %c, float %z, float %x
  ret float %r
}""",
    # ops.sat01: NaN -> +0, else numpy's clip to [0, 1] (which keeps -0)
    **{f"sat_{t}": f"""
define internal {t} @sat_{t}({t} %x) alwaysinline {{
  %n = fcmp uno {t} %x, %x
  %lo = fcmp olt {t} %x, 0.0
  %hi = fcmp ogt {t} %x, 1.0
  %a = select i1 %hi, {t} 1.0, {t} %x
  %b = select i1 %lo, {t} 0.0, {t} %a
  %r = select i1 %n, {t} 0.0, {t} %b
  ret {t} %r
}}""" for t in ("float", "double")},
    # ops.round_f32: round to nearest, then one step toward zero / -inf / +inf (mode 0/1/2) when that overshot
    "round_f32": """
define internal float @round_f32(double %s, i32 %mode) alwaysinline {
  %r = fptrunc double %s to float
  %back = fpext float %r to double
  %as = call double @llvm.fabs.f64(double %s)
  %ab = call double @llvm.fabs.f64(double %back)
  %fz = fcmp ogt double %ab, %as
  %fm = fcmp ogt double %back, %s
  %fp = fcmp olt double %back, %s
  %isz = icmp eq i32 %mode, 0
  %ism = icmp eq i32 %mode, 1
  %f1 = select i1 %ism, i1 %fm, i1 %fp
  %fix = select i1 %isz, i1 %fz, i1 %f1
  %dir = select i1 %isz, i32 0, i32 %mode
  %n = call float @nextafter_dir(float %r, i32 %dir)
  %out = select i1 %fix, float %n, float %r
  ret float %out
}""",
    # the same from an x87 long double (the interpreter's fma.rm/rz/rp.f32), mode 0..3 = rn/rz/rm/rp
    "round_f32_x": """
define internal float @round_f32_x(x86_fp80 %s, i32 %mode) alwaysinline {
  %r = fptrunc x86_fp80 %s to float
  %isn = icmp eq i32 %mode, 0
  br i1 %isn, label %done, label %dir
dir:
  %back = fpext float %r to x86_fp80
  %ns = fneg x86_fp80 %s
  %neg = fcmp olt x86_fp80 %s, 0xK00000000000000000000
  %as = select i1 %neg, x86_fp80 %ns, x86_fp80 %s
  %nb = fneg x86_fp80 %back
  %bneg = fcmp olt x86_fp80 %back, 0xK00000000000000000000
  %ab = select i1 %bneg, x86_fp80 %nb, x86_fp80 %back
  %fz = fcmp ogt x86_fp80 %ab, %as
  %fm = fcmp ogt x86_fp80 %back, %s
  %fp = fcmp olt x86_fp80 %back, %s
  %isz = icmp eq i32 %mode, 1
  %ism = icmp eq i32 %mode, 2
  %f1 = select i1 %ism, i1 %fm, i1 %fp
  %fix = select i1 %isz, i1 %fz, i1 %f1
  %d = sub i32 %mode, 1
  %n = call float @nextafter_dir(float %r, i32 %d)
  %out = select i1 %fix, float %n, float %r
  ret float %out
done:
  ret float %r
}""",
    # numpy's float32 -> float16 (npy_floatbits_to_halfbits: round half to even, NaN payload kept and kept NaN)
    "f32_to_f16": """
define internal i16 @f32_to_f16(float %x) alwaysinline {
entry:
  %f = bitcast float %x to i32
  %sgn32 = and i32 %f, 2147483648
  %sgn32s = lshr i32 %sgn32, 16
  %hs = trunc i32 %sgn32s to i16
  %fexp = and i32 %f, 2139095040
  %big = icmp uge i32 %fexp, 1199570944
  br i1 %big, label %over, label %notover
over:
  %isinfnan = icmp eq i32 %fexp, 2139095040
  %fsig = and i32 %f, 8388607
  %isnan = icmp ne i32 %fsig, 0
  %nan = and i1 %isinfnan, %isnan
  br i1 %nan, label %nanc, label %infc
nanc:
  %s13 = lshr i32 %fsig, 13
  %r0 = add i32 %s13, 31744
  %r0e = icmp eq i32 %r0, 31744
  %r1 = select i1 %r0e, i32 31745, i32 %r0
  %r1t = trunc i32 %r1 to i16
  %rn = add i16 %hs, %r1t
  ret i16 %rn
infc:
  %ri = add i16 %hs, 31744
  ret i16 %ri
notover:
  %small = icmp ule i32 %fexp, 939524096
  br i1 %small, label %under, label %normal
under:
  %zero = icmp ult i32 %fexp, 855638016
  br i1 %zero, label %zc, label %subn
zc:
  ret i16 %hs
subn:
  %e = lshr i32 %fexp, 23
  %m = and i32 %f, 8388607
  %sig = add i32 %m, 8388608
  %sh = sub i32 113, %e
  %sig2 = lshr i32 %sig, %sh
  %low = and i32 %sig2, 16383
  %ne = icmp ne i32 %low, 4096
  %fl = and i32 %f, 2047
  %flnz = icmp ne i32 %fl, 0
  %add = or i1 %ne, %flnz
  %inc = select i1 %add, i32 4096, i32 0
  %sig3 = add i32 %sig2, %inc
  %hsig = lshr i32 %sig3, 13
  %hsigt = trunc i32 %hsig to i16
  %rs = add i16 %hs, %hsigt
  ret i16 %rs
normal:
  %hexp0 = sub i32 %fexp, 939524096
  %hexp = lshr i32 %hexp0, 13
  %nsig = and i32 %f, 8388607
  %nlow = and i32 %nsig, 16383
  %nne = icmp ne i32 %nlow, 4096
  %ninc = select i1 %nne, i32 4096, i32 0
  %nsig2 = add i32 %nsig, %ninc
  %nh = lshr i32 %nsig2, 13
  %nsum = add i32 %nh, %hexp
  %nsumt = trunc i32 %nsum to i16
  %rr = add i16 %hs, %nsumt
  ret i16 %rr
}""",
    # float16 bits -> float32 (exact)
    "f16_to_f32": """
define internal float @f16_to_f32(i16 %h16) alwaysinline {
entry:
  %h = zext i16 %h16 to i32
  %hexp = and i32 %h, 31744
  %sgn = and i32 %h, 32768
  %fsgn = shl i32 %sgn, 16
  %iszero = icmp eq i32 %hexp, 0
  br i1 %iszero, label %sub, label %notsub
sub:
  %sig = and i32 %h, 1023
  %sf = uitofp i32 %sig to float
  %v = fmul float %sf, 0x3E70000000000000
  %vb = bitcast float %v to i32
  %vs = or i32 %vb, %fsgn
  %r1 = bitcast i32 %vs to float
  ret float %r1
notsub:
  %isinf = icmp eq i32 %hexp, 31744
  br i1 %isinf, label %infnan, label %norm
infnan:
  %s2 = and i32 %h, 1023
  %s2s = shl i32 %s2, 13
  %b2 = or i32 %fsgn, 2139095040
  %b3 = or i32 %b2, %s2s
  %r2 = bitcast i32 %b3 to float
  ret float %r2
norm:
  %m = and i32 %h, 32767
  %m2 = add i32 %m, 114688
  %m3 = shl i32 %m2, 13
  %b4 = or i32 %fsgn, %m3
  %r3 = bitcast i32 %b4 to float
  ret float %r3
}""",
    # ops.f32_to_bf16: round half to even on the top 16 bits, NaN -> 0x7FC0
    "f32_to_bf16": """
define internal i16 @f32_to_bf16(float %x) alwaysinline {
  %u32 = bitcast float %x to i32
  %u = zext i32 %u32 to i64
  %lsb0 = lshr i64 %u, 16
  %lsb = and i64 %lsb0, 1
  %a = add i64 %u, 32767
  %b = add i64 %a, %lsb
  %c = lshr i64 %b, 16
  %t = trunc i64 %c to i16
  %nan = fcmp uno float %x, %x
  %r = select i1 %nan, i16 32704, i16 %t
  ret i16 %r
}""",
    "bfi": """
define internal i64 @bfi(i64 %a, i64 %b, i32 %pos32, i32 %len32, i64 %W) alwaysinline {
  %p0 = and i32 %pos32, 255
  %l0 = and i32 %len32, 255
  %pos = zext i32 %p0 to i64
  %ln0 = zext i32 %l0 to i64
  %room0 = sub i64 %W, %pos
  %neg = icmp slt i64 %room0, 0
  %room = select i1 %neg, i64 0, i64 %room0
  %lt = icmp slt i64 %ln0, %room
  %ln = select i1 %lt, i64 %ln0, i64 %room
  %ge64 = icmp sge i64 %ln, 64
  %l63c = icmp slt i64 %ln, 63
  %l63 = select i1 %l63c, i64 %ln, i64 63
  %one = shl i64 1, %l63
  %mk = sub i64 %one, 1
  %mask = select i1 %ge64, i64 -1, i64 %mk
  %p63c = icmp slt i64 %pos, 63
  %p = select i1 %p63c, i64 %pos, i64 63
  %ms = shl i64 %mask, %p
  %nms = xor i64 %ms, -1
  %bk = and i64 %b, %nms
  %am = and i64 %a, %mask
  %ams = shl i64 %am, %p
  %res = or i64 %bk, %ams
  %out = icmp sge i64 %pos, %W
  %r = select i1 %out, i64 %b, i64 %res
  ret i64 %r
}""",
}


def _prmt():
    lines = ["define internal i32 @prmt(i32 %a, i32 %b, i32 %c) alwaysinline {",
             "  %xa = zext i32 %a to i64", "  %xb0 = zext i32 %b to i64", "  %xb = shl i64 %xb0, 32",
             "  %x = or i64 %xa, %xb"]
    acc = "0"
    for i in range(4):
        lines += [f"  %s{i}a = lshr i32 %c, {4 * i}", f"  %s{i} = and i32 %s{i}a, 15",
                  f"  %k{i} = and i32 %s{i}, 7", f"  %k{i}b = shl i32 %k{i}, 3", f"  %k{i}w = zext i32 %k{i}b to i64",
                  f"  %v{i}a = lshr i64 %x, %k{i}w", f"  %v{i}b = trunc i64 %v{i}a to i32",
                  f"  %v{i} = and i32 %v{i}b, 255", f"  %sg{i}a = and i32 %s{i}, 8",
                  f"  %sg{i} = icmp ne i32 %sg{i}a, 0",
                  f"  %hb{i}a = and i32 %v{i}, 128", f"  %hb{i} = icmp ne i32 %hb{i}a, 0",
                  f"  %f{i} = select i1 %hb{i}, i32 255, i32 0", f"  %w{i} = select i1 %sg{i}, i32 %f{i}, i32 %v{i}",
                  f"  %y{i} = shl i32 %w{i}, {8 * i}", f"  %acc{i} = or i32 {acc}, %y{i}"]
        acc = f"%acc{i}"
    lines += [f"  ret i32 {acc}", "}"]
    return "\n".join(lines)


def _divrem(name, lt):
    """ops.sdiv/udiv/srem/urem: x/0 is -1 (signed) or all ones (unsigned), x%0 is x; MIN/-1 wraps, MIN%-1 is 0."""
    signed, div = name[0] == "s", name[1:4] == "div"
    zero_val = ("-1" if signed else "-1") if div else "%a"
    op = ("sdiv" if signed else "udiv") if div else ("srem" if signed else "urem")
    lines = [f"define internal {lt} @{name}_{lt}({lt} %a, {lt} %b) alwaysinline {{", "entry:",
             f"  %z = icmp eq {lt} %b, 0", "  br i1 %z, label %zero, label %nz", "zero:",
             f"  ret {lt} {zero_val}", "nz:"]
    if signed:
        lines += [f"  %m1 = icmp eq {lt} %b, -1", "  br i1 %m1, label %minus, label %plain", "minus:",
                  f"  %ng = sub {lt} 0, %a", f"  ret {lt} {'%ng' if div else '0'}", "plain:"]
    lines += [f"  %q = {op} {lt} %a, %b", f"  ret {lt} %q", "}"]
    return "\n".join(lines)


_NEXTAFTER = """
define internal float @nextafter_dir(float %r, i32 %dir) alwaysinline {
  ; one float32 step from r toward 0 (dir 0), -inf (dir 1) or +inf (dir 2); r is finite or an overshooting inf
  %u = bitcast float %r to i32
  %mag = and i32 %u, 2147483647
  %iszero = icmp eq i32 %mag, 0
  %neg = icmp slt i32 %u, 0
  %up = add i32 %u, 1
  %down = sub i32 %u, 1
  %away1 = select i1 %neg, i32 %up, i32 %down
  %tow2 = select i1 %neg, i32 %down, i32 %up
  %z1 = select i1 %iszero, i32 2147483649, i32 %away1
  %z2 = select i1 %iszero, i32 1, i32 %tow2
  %isd1 = icmp eq i32 %dir, 1
  %isd2 = icmp eq i32 %dir, 2
  %a = select i1 %isd1, i32 %z1, i32 %down
  %b = select i1 %isd2, i32 %z2, i32 %a
  %r2 = bitcast i32 %b to float
  ret float %r2
}
"""


def mma_helper(shape, ab):
    """``@mma_<shape>_<ab>(exchange, lane, words per lane, first word, c0..c3)``: lane ``lane``'s four D elements of
    one warp's mma from the copy half of the exchange (lane l's A fragment elements as floats from the first word
    on, then its B's: each lane converts its own elements once, before the yield), as the
    interpreter's ``_mma``: D[r][n] = (sum over k of A[r][k]·B[k][n] in float64, from zero in order of k) + C[r][n],
    rounded once to float32. Fragments (PTX ISA), lane = 4g + t: C/D [g][2t], [g][2t+1], [g+8][2t], [g+8][2t+1];
    .tf32 A[g][t]=a0, A[g+8][t]=a1, A[g][t+4]=a2, A[g+8][t+4]=a3, B[t][g]=b0, B[t+4][g]=b1 (low 13 bits ignored);
    16-bit a0 = A[g][2t..2t+1], a1 = A[g+8][2t..], a2 = A[g][2t+8..], a3 = A[g+8][2t+8..], b0 = B[2t..2t+1][g],
    b1 = B[2t+8..2t+9][g], the lower index in the low half."""
    K = 8 if shape == "m16n8k8" else 16
    na = 2 if (shape, ab) == ("m16n8k8", "f16") else 4
    lines = [f"define internal {{float, float, float, float}} @mma_{shape}_{ab}(ptr %X, i32 %lane, i64 %xw, i32 %base, "
             f"float %c0, float %c1, float %c2, float %c3) {{", "entry:",
             "  %g = lshr i32 %lane, 2", "  %t = and i32 %lane, 3", "  %xw32 = trunc i64 %xw to i32",
             "  %copy0 = mul i32 %xw32, 32", "  %copy = add i32 %copy0, %base"]
    n = [0]

    def tmp():
        n[0] += 1
        return f"%v{n[0]}"

    def elem(lane_expr, word, half):
        """(lines, double value) of a fragment element: the float its owner lane ``lane_expr`` (an i32 SSA name)
        put at word ``2 * word + half`` (16-bit types: each register's two elements as two floats) or ``word``."""
        o, p, x = tmp(), tmp(), tmp()
        w = word if ab == "tf32" else 2 * word + half
        return [f"  {o} = mul i32 {lane_expr}, %xw32", f"  {o}b = add i32 {o}, %copy", f"  {o}c = add i32 {o}b, {w}",
                f"  {p} = getelementptr float, ptr %X, i32 {o}c", f"  {x}f = load float, ptr {p}",
                f"  {x} = fpext float {x}f to double"], x

    # each fragment element this lane needs, converted once: A rows g and g+8, B columns 2t and 2t+1, every k
    def a_at(hi_row, k):
        if ab == "tf32":
            return k % 4, int(hi_row) + 2 * (k >= 4), 0
        return (k % 8) // 2, int(hi_row) + 2 * (k >= 8), k % 2

    def b_at(k):
        if ab == "tf32":
            return k % 4, na + int(k >= 4), 0
        return (k % 8) // 2, na + int(k >= 8), k % 2

    lines += ["  %g4 = shl i32 %g, 2", "  %t2 = shl i32 %t, 1", "  %c0l = shl i32 %t2, 2", "  %c1l = add i32 %c0l, 4"]
    A, B = {}, {}
    for hi_row in (False, True):
        for k in range(K):
            tk, w, half = a_at(hi_row, k)
            la = tmp()
            lines.append(f"  {la} = add i32 %g4, {tk}")
            code, A[hi_row, k] = elem(la, w, half)
            lines += code
    for col_odd in (0, 1):
        for k in range(K):
            tk, w, half = b_at(k)
            lb = tmp()
            lines.append(f"  {lb} = add i32 %c{col_odd}l, {tk}")
            code, B[col_odd, k] = elem(lb, w, half)
            lines += code
    outs = []
    for j in range(4):
        hi_row, col_odd = j >= 2, j % 2
        acc = "0.0"
        for k in range(K):
            prod, s_ = tmp(), tmp()
            lines += [f"  {prod} = fmul double {A[hi_row, k]}, {B[col_odd, k]}", f"  {s_} = fadd double {acc}, {prod}"]
            acc = s_
        cd, r = tmp(), tmp()
        lines += [f"  {cd} = fpext float %c{j} to double", f"  {r}d = fadd double {acc}, {cd}",
                  f"  {r} = fptrunc double {r}d to float"]
        outs.append(r)
    agg = "undef"
    for j, r in enumerate(outs):
        x = tmp()
        lines.append(f"  {x} = insertvalue {{float, float, float, float}} {agg}, float {r}, {j}")
        agg = x
    lines += [f"  ret {{float, float, float, float}} {agg}", "}"]
    return "\n".join(lines) + "\n"


CP_QUEUE = 64   # cp.async copies a thread may have in flight (issued, not landed by a wait)
CP_ENTRY = 40   # bytes of one: shared offset, size, group, 16 bytes of data
CP_HEAD = 16    # the queue's header: copies in it, groups committed


def cp_async_helpers(cap, entry, head):
    """The cp.async queue of a thread (at the start of its state buffer): i64 [0] copies in it, [1] groups
    committed (the open group's number); then ``cap`` entries of ``entry`` bytes: shared offset, size, group, data.
    ``@cp_issue`` reads the source now (byte by byte where it is not one allocation's, naming the first byte no
    allocation holds) and returns 0, 1 (a byte outside every allocation, its address in *bad) or 2 (queue full);
    ``@cp_commit`` closes the open group; ``@cp_wait(keep, all)`` lands, in issue order, every copy of a group
    older than the ``keep`` newest committed ones (``all``: commits first, then lands everything)."""
    return f"""
define internal ptr @cp_at(ptr %Q, i64 %i) alwaysinline {{
entry:
  %o = mul i64 %i, {entry}
  %o2 = add i64 %o, {head}
  %e = getelementptr i8, ptr %Q, i64 %o2
  ret ptr %e
}}

define internal i32 @cp_issue(ptr %Q, ptr %MT, i64 %N, ptr %CACHE, i64 %site, i64 %src, i64 %n, i64 %dst, i64 %size,
                              ptr %bad) {{
entry:
  %c = load i64, ptr %Q
  %full = icmp uge i64 %c, {cap}
  br i1 %full, label %over, label %room
over:
  ret i32 2
room:
  %e = call ptr @cp_at(ptr %Q, i64 %c)
  store i64 %dst, ptr %e
  %e1 = getelementptr i64, ptr %e, i64 1
  store i64 %size, ptr %e1
  %gp = getelementptr i64, ptr %Q, i64 1
  %g = load i64, ptr %gp
  %e2 = getelementptr i64, ptr %e, i64 2
  store i64 %g, ptr %e2
  %d = getelementptr i64, ptr %e, i64 3
  call void @llvm.memset.p0.i64(ptr %d, i8 0, i64 16, i1 false)
  %any = icmp ne i64 %n, 0
  br i1 %any, label %first, label %done
first:
  %p = call ptr @gptr(ptr %MT, i64 %N, ptr %CACHE, i64 %site, i64 %src, i64 1)
  %pok = icmp ne ptr %p, null
  br i1 %pok, label %last, label %bytes
last:
  %n1 = sub i64 %n, 1
  %la = add i64 %src, %n1
  %q = call ptr @gptr(ptr %MT, i64 %N, ptr %CACHE, i64 %site, i64 %la, i64 1)
  %pi = ptrtoint ptr %p to i64
  %want = add i64 %pi, %n1
  %qi = ptrtoint ptr %q to i64
  %one = icmp eq i64 %qi, %want
  br i1 %one, label %fast, label %bytes
fast:
  call void @llvm.memcpy.p0.p0.i64(ptr %d, ptr %p, i64 %n, i1 false)
  br label %done
bytes:
  %i = phi i64 [0, %first], [0, %last], [%i1, %byte]
  %more = icmp ult i64 %i, %n
  br i1 %more, label %each, label %done
each:
  %a = add i64 %src, %i
  %bp = call ptr @gptr(ptr %MT, i64 %N, ptr %CACHE, i64 %site, i64 %a, i64 1)
  %bok = icmp ne ptr %bp, null
  br i1 %bok, label %byte, label %fault
byte:
  %bv = load i8, ptr %bp
  %dp = getelementptr i8, ptr %d, i64 %i
  store i8 %bv, ptr %dp
  %i1 = add i64 %i, 1
  br label %bytes
fault:
  store i64 %a, ptr %bad
  ret i32 1
done:
  %c1 = add i64 %c, 1
  store i64 %c1, ptr %Q
  ret i32 0
}}

define internal void @cp_commit(ptr %Q) {{
entry:
  %gp = getelementptr i64, ptr %Q, i64 1
  %g = load i64, ptr %gp
  %g1 = add i64 %g, 1
  store i64 %g1, ptr %gp
  ret void
}}

define internal void @cp_wait(ptr %Q, ptr %SH, i64 %keep, i1 %all) {{
entry:
  br i1 %all, label %commit, label %go
commit:
  call void @cp_commit(ptr %Q)
  br label %go
go:
  %gp = getelementptr i64, ptr %Q, i64 1
  %g = load i64, ptr %gp
  %lim = sub i64 %g, %keep
  %c = load i64, ptr %Q
  br label %loop
loop:
  %i = phi i64 [0, %go], [%i1, %next]
  %j = phi i64 [0, %go], [%j1, %next]
  %more = icmp ult i64 %i, %c
  br i1 %more, label %body, label %end
body:
  %e = call ptr @cp_at(ptr %Q, i64 %i)
  %e2 = getelementptr i64, ptr %e, i64 2
  %eg = load i64, ptr %e2
  %land = icmp slt i64 %eg, %lim
  br i1 %land, label %put, label %keepit
put:
  %dst = load i64, ptr %e
  %e1 = getelementptr i64, ptr %e, i64 1
  %size = load i64, ptr %e1
  %to = getelementptr i8, ptr %SH, i64 %dst
  %d = getelementptr i64, ptr %e, i64 3
  call void @llvm.memcpy.p0.p0.i64(ptr %to, ptr %d, i64 %size, i1 false)
  br label %next
keepit:
  %same = icmp eq i64 %i, %j
  br i1 %same, label %kept, label %move
move:
  %f = call ptr @cp_at(ptr %Q, i64 %j)
  call void @llvm.memcpy.p0.p0.i64(ptr %f, ptr %e, i64 {entry}, i1 false)
  br label %kept
kept:
  %jk = add i64 %j, 1
  br label %next
next:
  %j1 = phi i64 [%j, %put], [%jk, %kept]
  %i1 = add i64 %i, 1
  br label %loop
end:
  store i64 %j, ptr %Q
  ret void
}}
"""


def helpers(need):
    out = [_DECLS, _GPTR, _ASSERT_REC]
    for name in sorted(need):
        if name.startswith("mma_"):
            _, shape, ab = name.split("_")
            out.append(mma_helper(shape, ab))
            continue
        if name == "cp_async":
            out.append(cp_async_helpers(CP_QUEUE, CP_ENTRY, CP_HEAD))
            continue
        if name in _HELPERS:
            out.append(_HELPERS[name])
        elif name == "prmt":
            out.append(_prmt())
        elif name in ("exp2f", "log2f"):
            out.append(f"declare float @{name}(float)")
        else:
            base, lt = name.split("_")
            out.append(_divrem(base, lt))
    if need & {"round_f32", "round_f32_x"}:
        out.append(_NEXTAFTER)
    return "\n".join(out) + "\n"


ASSERT_POSITIONS = 256   # failing threads of a device-side assert whose (block, thread) a launch keeps

# out[8]: threads that failed the launch's first failing assert; out[9..13]: its instruction, message, file, line and
# function; out[14..18]: the same of the thread that just returned ASSERTED; out[24 + 2i], out[25 + 2i]: the block and
# thread of the i-th failing thread
_ASSERT_REC = f"""
define internal void @assert_rec(ptr %OUT, i64 %b, i64 %t) {{
entry:
  %np = getelementptr i64, ptr %OUT, i64 8
  %n = load i64, ptr %np
  %mine = getelementptr i64, ptr %OUT, i64 14
  %first = icmp eq i64 %n, 0
  br i1 %first, label %keep, label %cmp
keep:
  %rec = getelementptr i64, ptr %OUT, i64 9
  call void @llvm.memcpy.p0.p0.i64(ptr %rec, ptr %mine, i64 40, i1 false)
  br label %add
cmp:
  %ip = getelementptr i64, ptr %OUT, i64 9
  %i0 = load i64, ptr %ip
  %i1 = load i64, ptr %mine
  %same = icmp eq i64 %i0, %i1
  br i1 %same, label %add, label %out
add:
  %room = icmp ult i64 %n, {ASSERT_POSITIONS}
  br i1 %room, label %pos, label %count
pos:
  %k = shl i64 %n, 1
  %k24 = add i64 %k, 24
  %pb = getelementptr i64, ptr %OUT, i64 %k24
  store i64 %b, ptr %pb
  %pt = getelementptr i64, ptr %pb, i64 1
  store i64 %t, ptr %pt
  br label %count
count:
  %n1 = add i64 %n, 1
  store i64 %n1, ptr %np
  br label %out
out:
  ret void
}}
"""


def _report(prefix, fields):
    """IR that writes a stopped launch's report: ``fields`` is (index into out, i64 value) pairs."""
    return "".join(f"  %{prefix}{i} = getelementptr i64, ptr %OUT, i64 {i}\n  store i64 {v}, ptr %{prefix}{i}\n"
                   for i, v in fields)


def runner(sites, symbol="run", kinds=(), xw=1):
    """``@<symbol>(params, table, rows, out, dims, shared, state, resume, exchange)``: every thread of blocks
    [dims[6], dims[7]) in order, or in reverse order where dims[8] is set (diff mode's check that a result does not
    depend on the order); dims[9] is the block's shared memory size, dims[10] the bytes of one thread's saved
    registers. ``kinds`` has one entry per synchronization point of the kernel, "bar" (bar.sync), "warp" (shfl) or
    "full" (mma, ldmatrix: every lane of the warp must be there, else the launch stops with 6); ``xw`` is the
    32-bit words each lane puts in its warp's exchange:
    with any, each block runs in phases, warp by warp. A thread runs until it exits or reaches a point (the body
    returns 2 + the point's index, its registers saved in its state). When every running thread of a warp waits at
    one shfl, they go on from there (the values they put in the exchange copied to its second half, which their
    partners read: a thread that runs on to the next shfl overwrites only the first); when every live
    thread of the block waits at one bar.sync, the next phase starts from there. Threads at two barriers (returns
    2), a thread that exits while others wait (3) or threads of a warp at two shfls (4) stop the launch with
    out[0..3] saying which. A thread that fails a device-side assert (the body returns ASSERTED) is recorded by
    @assert_rec and the launch goes on without it; the launch then returns ASSERTED."""
    args = ", ".join(f"i32 %{s[1:].replace('.', '_')}" for s in SPECIAL_ARGS)
    head = f"""
define i32 @{symbol}(ptr %P, ptr %MT, i64 %NMT, ptr %OUT, ptr %DIMS, ptr %SH, ptr %STATE, ptr %RES,
                     ptr %XCH) {{
entry:
  %CACHE = alloca i64, i64 {max(sites, 1)}
  call void @llvm.memset.p0.i64(ptr %CACHE, i8 -1, i64 {8 * max(sites, 1)}, i1 false)
""" + "".join(f"""  %d{i}p = getelementptr i64, ptr %DIMS, i64 {i}
  %{n} = load i64, ptr %d{i}p
""" for i, n in enumerate(("gx", "gy", "gz", "bx", "by", "bz", "b0", "b1", "rev64", "SHSIZE", "SSTRIDE"))) + """
  %rev = icmp ne i64 %rev64, 0
  %bsum = add i64 %b0, %b1
  %blast = sub i64 %bsum, 1
  %bxy = mul i64 %bx, %by
  %T = mul i64 %bxy, %bz
  %tlast = sub i64 %T, 1
  %gxy = mul i64 %gx, %gy
  %ntid_x = trunc i64 %bx to i32
  %ntid_y = trunc i64 %by to i32
  %ntid_z = trunc i64 %bz to i32
  %nctaid_x = trunc i64 %gx to i32
  %nctaid_y = trunc i64 %gy to i32
  %nctaid_z = trunc i64 %gz to i32
  %bv = alloca i64
  %tv = alloca i64
  store i64 %b0, ptr %bv
  %any = icmp ult i64 %b0, %b1
  br i1 %any, label %blk, label %done
blk:
  %bi = load i64, ptr %bv
  %brev = sub i64 %blast, %bi
  %b = select i1 %rev, i64 %brev, i64 %bi
  %cx64 = urem i64 %b, %gx
  %cq = udiv i64 %b, %gx
  %cy64 = urem i64 %cq, %gy
  %cz64 = udiv i64 %b, %gxy
  %ctaid_x = trunc i64 %cx64 to i32
  %ctaid_y = trunc i64 %cy64 to i32
  %ctaid_z = trunc i64 %cz64 to i32
  %shany = icmp ne i64 %SHSIZE, 0
  br i1 %shany, label %shclear, label %blkgo
shclear:
  call void @llvm.memset.p0.i64(ptr %SH, i8 0, i64 %SHSIZE, i1 false)
  br label %blkgo
blkgo:
"""
    thread_t = """
  %ti = load i64, ptr %tv
  %trev = sub i64 %tlast, %ti
  %t = select i1 %rev, i64 %trev, i64 %ti
"""
    thread_ids = """
  %tx64 = urem i64 %t, %bx
  %tq = udiv i64 %t, %bx
  %ty64 = urem i64 %tq, %by
  %tz64 = udiv i64 %t, %bxy
  %tid_x = trunc i64 %tx64 to i32
  %tid_y = trunc i64 %ty64 to i32
  %tid_z = trunc i64 %tz64 to i32
  %t32 = trunc i64 %t to i32
  %laneid = and i32 %t32, 31
  %warpid = lshr i32 %t32, 5
"""
    tail = """
blkend:
  %bn = add i64 %bi, 1
  store i64 %bn, ptr %bv
  %bmore = icmp ult i64 %bn, %b1
  br i1 %bmore, label %blk, label %done
fault:
""" + _report("o", ((5, "%b"), (6, "%t"))) + """  ret i32 1
done:
  %nap = getelementptr i64, ptr %OUT, i64 8
  %na = load i64, ptr %nap
  %anya = icmp ne i64 %na, 0
  %rc = select i1 %anya, i32 -1, i32 0
  ret i32 %rc
}
"""
    if not kinds:
        return head + f"""  store i64 0, ptr %tv
  br label %thr
thr:{thread_t}{thread_ids}
  %r = call i32 @body(ptr %P, ptr %MT, i64 %NMT, ptr %CACHE, ptr %OUT, ptr %SH, i64 %SHSIZE, ptr %STATE, i32 0,
                       ptr %XCH, {args})
  switch i32 %r, label %fault [ i32 0, label %next
                                i32 -1, label %asserted ]
asserted:
  call void @assert_rec(ptr %OUT, i64 %b, i64 %t)
  br label %next
next:
  %tn = add i64 %ti, 1
  store i64 %tn, ptr %tv
  %tmore = icmp ult i64 %tn, %T
  br i1 %tmore, label %thr, label %blkend
""" + tail
    table = ", ".join(f"i8 {('bar', 'warp', 'full').index(k)}" for k in kinds)
    return head + f"""  %resbytes = mul i64 %T, 4
  call void @llvm.memset.p0.i64(ptr %RES, i8 0, i64 %resbytes, i1 false)
  %STAT = getelementptr i8, ptr %RES, i64 %resbytes
  %T31 = add i64 %T, 31
  %NW = lshr i64 %T31, 5
  %NT = shl i64 %NW, 5
  %NW1 = sub i64 %NW, 1
  %xchbytes = mul i64 %NT, {8 * xw}
  call void @llvm.memset.p0.i64(ptr %XCH, i8 0, i64 %xchbytes, i1 false)
  %KINDS = alloca [{len(kinds)} x i8]
  store [{len(kinds)} x i8] [{table}], ptr %KINDS
  %barv = alloca i64
  %arrv = alloca i64
  %exv = alloca i64
  %fexv = alloca i64
  %waitv = alloca i64
  %wjv = alloca i64
  br label %phase
phase:
  store i64 0, ptr %tv
  store i64 -1, ptr %barv
  store i64 0, ptr %arrv
  store i64 0, ptr %exv
  store i64 -1, ptr %fexv
  store i64 0, ptr %waitv
  store i64 -1, ptr %wjv
  call void @llvm.memset.p0.i64(ptr %STAT, i8 0, i64 %resbytes, i1 false)
  br label %thr
thr:
  %ti = load i64, ptr %tv
  %wi = lshr i64 %ti, 5
  %li = and i64 %ti, 31
  %wrev = sub i64 %NW1, %wi
  %w = select i1 %rev, i64 %wrev, i64 %wi
  %lrev = sub i64 31, %li
  %l = select i1 %rev, i64 %lrev, i64 %li
  %wbase = shl i64 %w, 5
  %t = add i64 %wbase, %l
  %exists = icmp ult i64 %t, %T
  br i1 %exists, label %live, label %next
live:
  %rp = getelementptr i32, ptr %RES, i64 %t
  %rv = load i32, ptr %rp
  %gone = icmp slt i32 %rv, 0
  %sp = getelementptr i32, ptr %STAT, i64 %t
  %sv = load i32, ptr %sp
  %held = icmp ne i32 %sv, 0
  %skip = or i1 %gone, %held
  br i1 %skip, label %next, label %go
go:{thread_ids}
  %soff = mul i64 %t, %SSTRIDE
  %st = getelementptr i8, ptr %STATE, i64 %soff
  %xwo = mul i64 %wbase, {2 * xw}
  %xw = getelementptr i32, ptr %XCH, i64 %xwo
  %r = call i32 @body(ptr %P, ptr %MT, i64 %NMT, ptr %CACHE, ptr %OUT, ptr %SH, i64 %SHSIZE, ptr %st, i32 %rv, ptr %xw,
                       {args})
  switch i32 %r, label %parked [ i32 0, label %exited
                                 i32 1, label %fault
                                 i32 -1, label %asserted ]
asserted:
  call void @assert_rec(ptr %OUT, i64 %b, i64 %t)
  store i32 -1, ptr %rp
  br label %next
exited:
  store i32 -1, ptr %rp
  %ex0 = load i64, ptr %exv
  %ex1 = add i64 %ex0, 1
  store i64 %ex1, ptr %exv
  %fe0 = load i64, ptr %fexv
  %fen = icmp slt i64 %fe0, 0
  %fe1 = select i1 %fen, i64 %t, i64 %fe0
  store i64 %fe1, ptr %fexv
  br label %next
parked:
  %k32 = sub i32 %r, 2
  %k = zext i32 %k32 to i64
  %k1 = add i32 %k32, 1
  store i32 %k1, ptr %rp
  %kp = getelementptr i8, ptr %KINDS, i64 %k
  %kk = load i8, ptr %kp
  %iswarp = icmp ne i8 %kk, 0
  br i1 %iswarp, label %warpwait, label %blockpark
warpwait:
  store i32 2, ptr %sp
  %wn0 = load i64, ptr %waitv
  %wn1 = add i64 %wn0, 1
  store i64 %wn1, ptr %waitv
  %wj0 = load i64, ptr %wjv
  %wfirst = icmp slt i64 %wj0, 0
  %wsame = icmp eq i64 %wj0, %k
  %wok = or i1 %wfirst, %wsame
  store i64 %k, ptr %wjv
  br i1 %wok, label %next, label %warpdiv
warpdiv:
{_report('wd', ((0, '%wj0'), (1, '%k'), (5, '%b'), (6, '%t')))}  ret i32 4
blockpark:
  store i32 1, ptr %sp
  %bar0 = load i64, ptr %barv
  %first = icmp slt i64 %bar0, 0
  %same = icmp eq i64 %bar0, %k
  %okb = or i1 %first, %same
  br i1 %okb, label %park, label %divergent
park:
  store i64 %k, ptr %barv
  %ar0 = load i64, ptr %arrv
  %ar1 = add i64 %ar0, 1
  store i64 %ar1, ptr %arrv
  br label %next
divergent:
  %dar = load i64, ptr %arrv
{_report('dv', ((0, '%bar0'), (1, '%k'), (2, '%dar'), (5, '%b'), (6, '%t')))}  ret i32 2
next:
  %wend = icmp eq i64 %li, 31
  %wn = load i64, ptr %waitv
  %wany = icmp ne i64 %wn, 0
  %again = and i1 %wend, %wany
  br i1 %again, label %rewarp, label %advance
rewarp:
  %wjk = load i64, ptr %wjv
  %wkp = getelementptr i8, ptr %KINDS, i64 %wjk
  %wkk = load i8, ptr %wkp
  %wfull = icmp eq i8 %wkk, 2
  %wshort = icmp ne i64 %wn, 32
  %wpartial = and i1 %wfull, %wshort
  br i1 %wpartial, label %partialwarp, label %rewarp2
partialwarp:
{_report('pw', ((0, '%wjk'), (1, '%wn'), (5, '%b'), (6, '%wbase')))}  ret i32 6
rewarp2:
  %xro = mul i64 %wbase, {2 * xw}
  %xr = getelementptr i32, ptr %XCH, i64 %xro
  %xr2 = getelementptr i32, ptr %xr, i64 {32 * xw}
  call void @llvm.memcpy.p0.p0.i64(ptr %xr2, ptr %xr, i64 {128 * xw}, i1 false)
  store i64 0, ptr %waitv
  store i64 -1, ptr %wjv
  %wsp = getelementptr i32, ptr %STAT, i64 %wbase
  br label %relane
relane:
  %x = phi i64 [0, %rewarp2], [%xn, %relnext]
  %xt = add i64 %wbase, %x
  %xin = icmp ult i64 %xt, %T
  br i1 %xin, label %relcheck, label %relnext
relcheck:
  %xp = getelementptr i32, ptr %STAT, i64 %xt
  %xs = load i32, ptr %xp
  %xw2 = icmp eq i32 %xs, 2
  %xs2 = select i1 %xw2, i32 0, i32 %xs
  store i32 %xs2, ptr %xp
  br label %relnext
relnext:
  %xn = add i64 %x, 1
  %xmore = icmp ult i64 %xn, 32
  br i1 %xmore, label %relane, label %relaunch
relaunch:
  %wstart = shl i64 %wi, 5
  store i64 %wstart, ptr %tv
  br label %thr
advance:
  %tn = add i64 %ti, 1
  store i64 %tn, ptr %tv
  %tmore = icmp ult i64 %tn, %NT
  br i1 %tmore, label %thr, label %phaseend
phaseend:
  %arr = load i64, ptr %arrv
  %none = icmp eq i64 %arr, 0
  br i1 %none, label %blkend, label %check
check:
  %exn = load i64, ptr %exv
  %anyex = icmp ne i64 %exn, 0
  br i1 %anyex, label %exitwait, label %phase
exitwait:
  %bw = load i64, ptr %barv
  %fx = load i64, ptr %fexv
{_report('ew', ((0, '%bw'), (1, '%arr'), (2, '%exn'), (3, '%fx'), (5, '%b')))}  ret i32 3
""" + tail
