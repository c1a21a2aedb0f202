"""What the numbers were measured on: CPU, BLAS, threads, allocator settings.

threadpoolctl is not a dependency. The BLAS that NumPy was built with comes from
``np.show_config``; the core type and thread count OpenBLAS chose at run time
are asked from the loaded library itself (through ctypes) when it exports them.
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys

import numpy as np

# Variables that change what BLAS or malloc do; recorded as they were.
ENV_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
            "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "MALLOC_MMAP_THRESHOLD_",
            "MALLOC_TRIM_THRESHOLD_", "MALLOC_ARENA_MAX", "PYTHONHASHSEED")


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load_average() -> str:
    try:
        return " ".join(f"{v:.1f}" for v in os.getloadavg())
    except OSError:
        return "unknown"


def numpy_blas() -> dict:
    """Name, version and build configuration of the BLAS NumPy was built with."""
    try:
        cfg = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return {k: cfg.get(k, "") for k in ("name", "version", "openblas configuration")}
    except Exception:  # older NumPy: no dict mode
        return {"name": "unknown"}


def _openblas_lib():
    """The OpenBLAS shared library loaded into this process, if there is one."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower() and "/" in line}
    except OSError:
        return None
    for path in sorted(paths):
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


def openblas_runtime() -> dict:
    """Core type, configuration and thread count that the loaded OpenBLAS reports."""
    lib = _openblas_lib()
    if lib is None:
        return {}
    out = {}
    for prefix in ("scipy_openblas_", "openblas_"):
        for suffix in ("64_", "_64_", ""):
            try:
                corename = getattr(lib, f"{prefix}get_corename{suffix}")
                config = getattr(lib, f"{prefix}get_config{suffix}")
                threads = getattr(lib, f"{prefix}get_num_threads{suffix}")
            except AttributeError:
                continue
            corename.restype = config.restype = ctypes.c_char_p
            threads.restype = ctypes.c_int
            out = {"corename": corename().decode(), "config": config().decode().strip(),
                   "threads": int(threads())}
            return out
    return out


def torch_info() -> dict:
    try:
        import torch
    except ImportError:
        return {}
    blas = "MKL" if torch.backends.mkl.is_available() else "other"
    return {"version": torch.__version__, "threads": torch.get_num_threads(), "blas": blas}


def collect(with_torch: bool = True) -> dict:
    """Everything RESULTS.md records about the machine and the libraries."""
    info = {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "load average": load_average(),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "numpy blas": numpy_blas(),
        "openblas at run time": openblas_runtime(),
        "env": {k: os.environ.get(k, "(unset)") for k in ENV_VARS},
    }
    if with_torch:
        info["torch"] = torch_info()
    return info
