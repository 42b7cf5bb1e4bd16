"""The code of lesson 02 · The same fine-tune under DeepSpeed ZeRO

Written by `python tools/export.py` from the cells marked #@save in
notebooks/02_deepspeed_zero.ipynb: edit them there, then rerun the command (tests/test_export.py checks it).
"""

SETUPS = ("stage 0", "stage 1", "stage 2", "stage 3", "stage 2 + offload", "stage 3 + offload")


def paper_bytes(parameters: int, setup: str, gpus: int) -> float:
    """Model-state bytes per GPU by the ZeRO paper's formulas (Rajbhandari et al., 2020, figure 1). Mixed-precision
    Adam keeps 16 bytes a parameter: 2 (16-bit weights) + 2 (16-bit gradients) + 12 (fp32 weights, momentum, variance).

    Defined in notebooks/02_deepspeed_zero.ipynb, section "Memory per GPU, stage by stage".
    """
    psi, n = parameters, gpus
    formulas = {
        "stage 0": 16 * psi,  # every GPU holds everything
        "stage 1": 4 * psi + 12 * psi / n,  # the optimizer's 12 bytes partitioned
        "stage 2": 2 * psi + 14 * psi / n,  # ... and the 16-bit gradients
        "stage 3": 16 * psi / n,  # ... and the 16-bit weights
        "stage 2 + offload": 2 * psi,  # ZeRO-Offload: only the 16-bit weights stay on the GPU
        "stage 3 + offload": 0.0,  # ZeRO-Infinity: every state lives in CPU memory between uses
    }
    return float(formulas[setup])
