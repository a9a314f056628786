"""Every opcode in every shipped ptx/*.ptx and every test fixture tests/data/ptx/*.ptx must be one
the simulator's PTX interpreter implements: decoding the whole module must succeed."""

from pathlib import Path

import pytest
from rawdev.sim.ptx import PtxModule
from rawdev.sim.ptx.parser import Inst, parse

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted((ROOT / "ptx").glob("*.ptx")) + sorted((ROOT / "tests" / "data" / "ptx").glob("*.ptx"))


def test_there_is_ptx_to_check():
    assert any(f.parent.name == "ptx" and f.parent.parent.name == "data" for f in FILES)


@pytest.mark.parametrize("path", FILES, ids=[str(f.relative_to(ROOT)) for f in FILES])
def test_every_opcode_decodes(path):
    text = path.read_text()
    ast = parse(text)
    opcodes = {st.opcode for fn in ast.functions.values() for st in fn.body if isinstance(st, Inst)}
    assert opcodes
    try:
        m = PtxModule(text)   # decodes every instruction; unknown ones raise NotImplementedError with the line
    except NotImplementedError as e:
        pytest.fail(f"{path.name}: {e}")
    assert m.opcodes == opcodes
    assert set(m.entries) == {n for n, fn in ast.functions.items() if fn.kind == "entry"}
