"""The code of lesson 00 · What hardware and software do you have?

Written by `python tools/export.py` from the cells marked #@save in
notebooks/00_gpu_check.ipynb: edit them there, then rerun the command (tests/test_export.py checks it).
"""

import time
from importlib import metadata


LIBRARIES = ("torch", "transformers", "datasets", "accelerate", "deepspeed", "evaluate", "tokenizers")


def library_versions(names: tuple[str, ...] = LIBRARIES) -> dict[str, str]:
    """Installed version of each library, or 'not installed'.

    Defined in notebooks/00_gpu_check.ipynb, section "The library stack".
    """
    versions = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def compile_check(device: str, backend: str = "inductor") -> dict:
    """Can ``torch.compile`` build and run kernels on ``device``? Lesson 04 compiles its model on a GPU,
    and inductor needs a C++ compiler (and Triton on a GPU) to do it: this finds out in seconds instead
    of at the first pretraining step. Returns {"compiles", "seconds", "error"}.

    Defined in notebooks/00_gpu_check.ipynb, section "Can torch.compile build kernels here?".
    """
    import torch

    def scaled_gelu(x):
        return torch.nn.functional.gelu(x) * 2.0

    start = time.perf_counter()
    try:
        x = torch.randn(64, 64, device=device)
        compiled = torch.compile(scaled_gelu, backend=backend, fullgraph=True)
        ok = torch.allclose(compiled(x), scaled_gelu(x), atol=1e-5)
        error = "" if ok else "the compiled function gave other values than the eager one"
    except Exception as exc:  # noqa: BLE001 - any failure to build is the answer
        ok, error = False, " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
    return {"compiles": bool(ok), "seconds": round(time.perf_counter() - start, 2), "error": error}
