"""The simulator's on-disk module index (rawdev.sim.ptx.module_cache): a second load of the same PTX skips parsing,
each kernel decodes from its own lines on first use, and what runs is exactly what a fresh parse runs."""

import json
import struct

import numpy as np
import pytest
from rawdev.sim.memory import DeviceMemory
from rawdev.sim.ptx import DecodeError, KernelFault, PtxError, PtxModule, interp, module_cache

# two kernels, a module .global with an initializer and a .const bank: what the index has to carry
TEXT = r"""
.version 8.0
.target sm_75
.address_size 64

.const .align 4 .b8 cscale[4] = {0, 0, 192, 63};
.global .align 4 .u32 gadd[1] = {7};

.visible .entry k_first(.param .u64 out, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    setp.ge.u32 %p1, %r2, %r1;   // a comment with a brace { that must not confuse the body scan
    @%p1 bra DONE;
    mul.wide.u32 %rd2, %r2, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r2;
DONE:
    ret;
}

.visible .entry k_second(.param .u64 out, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<3>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    setp.ge.u32 %p1, %r2, %r1;
    @%p1 bra END;
    ld.const.f32 %f1, [cscale];
    mov.u64 %rd4, gadd;
    ld.global.u32 %r3, [%rd4];
    add.u32 %r4, %r2, %r3;
    cvt.rn.f32.u32 %f2, %r4;
    mul.f32 %f2, %f2, %f1;
    mul.wide.u32 %rd2, %r2, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.f32 [%rd3], %f2;
END:
    ret;
}
"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RAWDEV_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("RAWDEV_SIM_DISK_CACHE", raising=False)
    monkeypatch.setattr(interp, "_CACHE", {})   # a fresh process, as far as the module cache is concerned
    return tmp_path


def _run(m, name, n, threads=32, out_words=None):
    mem = DeviceMemory(1 << 22)
    words = out_words or threads
    out = mem.alloc(4 * words)
    mem.write(out, b"\xff" * (4 * words))
    buf = bytearray(m.entries[name].param_size)
    struct.pack_into("<QI", buf, 0, out, n)
    m.launch(name, (1, 1, 1), (threads, 1, 1), params=bytes(buf), memory=mem)
    return mem.read(out, 4 * words)


def test_second_load_reads_the_index_and_runs_the_same_bytes(cache):
    first = PtxModule(TEXT)
    assert all(e._code is not None for e in first.entries.values())   # decoded at the first load
    files = list(cache.rglob("*.json"))
    assert len(files) == 1
    rec = json.loads(files[0].read_text())                             # plain JSON data
    assert [e[0] for e in rec["entries"]] == ["k_first", "k_second"]
    ref = {k: _run(first, k, 20) for k in ("k_first", "k_second")}
    np.testing.assert_allclose(np.frombuffer(ref["k_second"], np.float32)[:20], (np.arange(20) + 7) * 1.5)

    interp._CACHE.clear()
    again = PtxModule(TEXT)
    assert all(e._code is None for e in again.entries.values())        # nothing parsed at load
    assert again.opcodes == first.opcodes and again._const_bank == first._const_bank
    assert [(p.size, p.offset) for p in again.entries["k_second"].params] == \
        [(p.size, p.offset) for p in first.entries["k_second"].params]
    assert _run(again, "k_second", 20) == ref["k_second"]
    assert again.entries["k_first"]._code is None                       # only the launched kernel decoded
    assert _run(again, "k_first", 20) == ref["k_first"]


def test_faults_from_an_indexed_module_keep_the_file_line(cache):
    PtxModule(TEXT)
    interp._CACHE.clear()
    m = PtxModule(TEXT)
    with pytest.raises(KernelFault) as ei:   # 32 threads write 32 words into an 8-word buffer
        _run(m, "k_second", 32, out_words=8)
    line = next(i for i, s in enumerate(TEXT.split("\n"), 1) if "st.global.f32" in s)
    assert ei.value.line == line and ei.value.kernel == "k_second"


def test_disk_cache_off_writes_nothing(cache, monkeypatch):
    monkeypatch.setenv("RAWDEV_SIM_DISK_CACHE", "0")
    PtxModule(TEXT)
    assert not list(cache.rglob("*.json"))


def test_a_damaged_index_is_ignored(cache):
    PtxModule(TEXT)
    (f,) = cache.rglob("*.json")
    f.write_text("{not json")
    interp._CACHE.clear()
    m = PtxModule(TEXT)
    assert all(e._code is not None for e in m.entries.values())   # parsed afresh, and the index rewritten
    assert json.loads(f.read_text())["entries"]


def test_an_index_that_disagrees_with_the_text_refuses_to_run(cache):
    PtxModule(TEXT)
    (f,) = cache.rglob("*.json")
    rec = json.loads(f.read_text())
    rec["entries"][1][2] += 8       # k_second's parameter buffer size
    f.write_text(json.dumps(rec))
    interp._CACHE.clear()
    m = PtxModule(TEXT)
    with pytest.raises(DecodeError, match="disagrees"):
        m.entries["k_second"].code  # noqa: B018 (decoding is what raises)


def test_a_module_that_fails_to_load_is_not_indexed(cache):
    bad = TEXT.replace("ret;\n}\n\n.visible", "frobnicate.u32 %r1;\n    ret;\n}\n\n.visible", 1)
    for _ in range(2):   # fails the same way every time: never served from an index
        with pytest.raises((PtxError, NotImplementedError)):
            interp._CACHE.clear()
            PtxModule(bad)
    assert not list(cache.rglob("*.json"))


def test_body_spans_skip_comments_and_prototypes():
    text = ('.extern .func (.param .b32 r) vprintf(.param .b64 a);\n'
            '.visible .entry a(.param .u32 x)\n{ // }\n ret; }\n.visible .entry b()\n{\n ret;\n}\n')
    spans = module_cache.body_spans(text)
    assert set(spans) == {"a", "b"}
    assert text[spans["a"][0]:spans["a"][1]] == " // }\n ret; "
    only_b = module_cache.only_entry(text, spans, "b")
    assert only_b.count("\n") == text.count("\n") and "ret; }" not in only_b and only_b.endswith("{\n ret;\n}\n")


def test_one_entry_text_holds_that_kernel_and_the_module_declarations_at_their_lines():
    from rawdev.sim.ptx.parser import parse
    spans = module_cache.body_spans(TEXT)
    whole = parse(TEXT)
    for name in ("k_first", "k_second"):
        one = module_cache.only_entry(TEXT, spans, name)
        assert one.count("\n") == TEXT.count("\n")
        ast = parse(one)
        assert list(ast.functions) == [name]            # the other kernel's header and parameters are gone too
        other = "k_second" if name == "k_first" else "k_first"
        assert other not in one and ".visible" in one
        assert [(i.line, i.opcode) for i in ast.functions[name].body if hasattr(i, "opcode")] == \
               [(i.line, i.opcode) for i in whole.functions[name].body if hasattr(i, "opcode")]
        assert "cscale" in one and "gadd" in one        # the module's .const and .global stay
