"""roofline.measure.predict: the model's predictions against hand-worked numbers, through the
evaluation core; the crossover solved by the derivation layer against its closed form."""

from __future__ import annotations

import pytest

from roofline.measure import predict as V

P, BETA = 1e9, 1e9  # round numbers for hand-worked predictions


def test_predict_projection_by_hand() -> None:
    # T=2, 3→5 fp32: F = 2·2·3·5 = 60; Q = 4·3·5 + 4·2·(3+5) = 124 bytes
    f, q, t = V.predict_projection(2, 3, 5, P, BETA, t_call=1e-6)
    assert (f, q) == (60.0, 124.0)
    assert t == pytest.approx(1e-6 + 124e-9)
    f, q, t = V.predict_projection(1000, 3, 5, 1e3, 1e9)  # compute-bound
    assert t == pytest.approx(f / 1e3)


def test_projection_crossover_closed_form() -> None:
    # intensity 2·T·d²/(4d² + 8·T·d) = I  ⇒  T = 4·I·d / (2d − 8·I)
    d, ridge = 4096, 320e9 / 20e9
    expected = 4 * ridge * d / (2 * d - 8 * ridge)
    assert V.projection_crossover(d, d, 320e9, 20e9) == pytest.approx(expected)
    f, q, _ = V.predict_projection(round(expected), d, d, P, BETA)
    assert f / q == pytest.approx(ridge, rel=0.02)
    assert V.projection_crossover(8, 8, 1e12, 1.0) is None  # ridge above the T → ∞ limit d/4


def test_predict_attention_by_hand() -> None:
    # T=4, one head, H=2, fp32. naive: F = 4·H·T² = 128; Q = 4·(4·H·T + 4·T²) = 384 bytes
    f, q, t = V.predict_attention("naive", 4, 1, 2, 64.0, P, BETA, t_call=1e-6, calls=9)
    assert (f, q) == (128.0, 384.0) and t == pytest.approx(9e-6 + 384e-9)
    # blocked, M = 64 bytes = 16 elements: B_c = 16/(4·2) = 2 = B_r; T_c = 2; causal rows
    # visited 4·2 − 2·2·1/2 = 6; per head 2TH + TH + 2T + 6·(3H + 4) = 16 + 16 + 60 = 92 elements
    f, q, _ = V.predict_attention("blocked", 4, 1, 2, 64.0, P, BETA)
    assert (f, q) == (2 * 2 * 4 * 5, 4 * 92.0)  # causal F = 2·H·T·(T+1)
    with pytest.raises(ValueError, match="unknown attention form 'flash'"):
        V.predict_attention("flash", 4, 1, 2, 64.0, P, BETA)


def test_block_sizes() -> None:
    assert V.block_sizes(64, 2 * 2**20) == (2048, 64)  # 2 MiB / 4 B = 2^19 elements / 256
    assert V.block_sizes(2, 64) == (2, 2)
    assert V.block_sizes(128, 48 * 1024) == (24, 24)  # 12288 elements / 512


def test_projection_crossover_edge() -> None:
    # d_in = d_out = 4, fp32: the intensity tends to 2·16/(4·8) = 1 as T → ∞; a ridge of exactly
    # 1 is never reached (the closed form's denominator vanishes), a hair below it is, very late
    assert V.projection_crossover(4, 4, 1.0, 1.0) is None
    assert V.projection_crossover(4, 4, 1.0, 1.0 + 1e-7) == pytest.approx(2e7, rel=1e-3)


def test_predictions_go_through_the_evaluation_core(monkeypatch: pytest.MonkeyPatch) -> None:
    import roofline.evaluate as E

    seen: list[tuple[float, ...]] = []

    def spy(flops: float, nbytes: float, peak: float, bandwidth: float) -> float:
        seen.append((flops, nbytes, peak, bandwidth))
        return 42.0

    monkeypatch.setattr(E, "roofline_time", spy)
    assert V.predict_projection(2, 3, 5, P, BETA, t_call=1.0)[2] == 43.0
    assert V.predict_attention("naive", 4, 1, 2, 64.0, P, BETA, t_call=1.0, calls=2)[2] == 44.0
    assert seen == [(60.0, 124.0, P, BETA), (128.0, 384.0, P, BETA)]


def test_no_model_of_its_own() -> None:
    """The measurement package makes no number by substitution or solving of its own: the
    evaluation core and the derivation layer do."""
    import re
    from pathlib import Path

    import roofline.measure

    folder = Path(roofline.measure.__file__).parent
    found = {f"{p.name}: {m.group(0)}" for p in folder.glob("*.py")
             for m in re.finditer(r"\.subs\(|\.xreplace\(|lambdify|\bsolve\(",
                                  p.read_text())}
    assert found == set()


def test_import_is_light() -> None:
    import subprocess
    import sys

    code = ("import sys, roofline.measure; "
            "print(sorted(m for m in ('numpy', 'matplotlib', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
