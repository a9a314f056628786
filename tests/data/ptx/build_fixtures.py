#!/usr/bin/env python3
"""Compile tests/data/ptx/src/*.cu with NVRTC 12.0 (compute_75; a `<name>_sm80.cu` for compute_80) into
tests/data/ptx/*.ptx.

The generated PTX is committed so the tests need no compiler. Needs the pinned wheel
nvidia-cuda-nvrtc-cu12==12.0.140.
"""
import ctypes
import importlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main():
    mod = importlib.import_module("nvidia.cuda_nvrtc")
    lib = ctypes.CDLL(str(Path(list(mod.__path__)[0]) / "lib" / "libnvrtc.so.12"))
    for src in sorted((HERE / "src").glob("*.cu")):
        prog = ctypes.c_void_p()
        assert lib.nvrtcCreateProgram(ctypes.byref(prog), src.read_bytes(), src.name.encode(), 0, None, None) == 0
        arch = "80" if src.stem.endswith("_sm80") else "75"
        opts = [f"--gpu-architecture=compute_{arch}".encode(), b"--std=c++17"]
        res = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        if res != 0:
            sys.exit(f"{src.name}: compile failed\n{log.value.decode()}")
        lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetPTX(prog, buf)
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
        out = HERE / (src.stem + ".ptx")
        out.write_text(buf.value.decode())
        print(f"{src.name} -> {out.name}")


if __name__ == "__main__":
    main()
