"""The estimate's numbers from a device file's ``[estimate]`` section, by symbol name: what
:mod:`roofline.evaluate.estimate` adds to the bound (launch and host overhead, kernel tiles,
achievable fractions), each value with its source in the file."""

from __future__ import annotations

from .hardware import Hardware

__all__ = ["SYMBOLS", "estimate_numbers"]

# [estimate] key → the symbol it gives (roofline.symbols)
SYMBOLS = {"launch": "t_launch", "host_step": "t_host", "gemm_tile_m": "B_m",
           "gemm_tile_n": "B_n", "attention_tile": "B_r", "ctas_per_sm": "n_cta",
           "flops": "eta_c", "bandwidth": "eta_m"}


def estimate_numbers(hw: Hardware) -> dict[str, float]:
    """The estimate's symbols by name (with N_sm, the SMs its waves run over); empty where the
    file has no ``[estimate]``."""
    if not hw.estimate:
        return {}
    out: dict[str, float] = {SYMBOLS[k]: v for k, v in hw.estimate.items()}
    out["N_sm"] = hw.sm_count
    return out
