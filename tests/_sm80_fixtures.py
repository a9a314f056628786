"""A bare interpreter device for the sm_80 fixture kernels (tests/data/ptx/sm80_fixtures_sm80.ptx, built from
tests/data/ptx/src/sm80_fixtures_sm80.cu): upload arrays, launch an entry with pointer and integer parameters,
read results back. No driver, no runtime: the PTX interpreter alone. Dev(path) loads another fixture module the
same way (tests/data/ptx/sm75_fixtures.ptx)."""
import struct
from pathlib import Path

import numpy as np
from rawdev.sim.memory import DeviceMemory
from rawdev.sim.ptx import PtxModule

FIXTURES = Path(__file__).resolve().parent / "data" / "ptx" / "sm80_fixtures_sm80.ptx"


class Dev:
    def __init__(self, path=FIXTURES):
        self.m = PtxModule(Path(path).read_text())
        self.mem = DeviceMemory(1 << 28)

    def up(self, a):
        a = np.ascontiguousarray(a)
        addr = self.mem.alloc(max(a.nbytes, 1))
        self.mem.write(addr, a.tobytes())
        return addr

    def down(self, addr, shape, dt):
        n = int(np.prod(shape))
        return np.frombuffer(self.mem.read(addr, n * np.dtype(dt).itemsize), dt).reshape(shape).copy()

    def launch(self, name, grid, block, *args):
        e = self.m.entries[name]
        buf = bytearray(e.param_size)
        for p, v in zip(e.params, args):
            struct.pack_into({"u64": "<Q", "u32": "<I", "s32": "<i"}[p.type], buf, p.offset, v)
        return self.m.launch(name, grid, block, params=bytes(buf), memory=self.mem)
