"""The shipped, pre-solved crossovers: fresh, and the same as solving now."""

import pytest

from roofline import arith
from roofline.compiled import SHIPPED, compile_arch, compiled, generate
from roofline.derive.transformer import Architecture


def test_shipped_crossovers_are_fresh():
    from importlib import resources

    shipped = (resources.files("roofline") / SHIPPED).read_text(encoding="utf-8")
    assert shipped == generate(), "run: python -m roofline.compiled"


def test_an_architecture_not_shipped_is_solved_on_first_use():
    arch = Architecture(gated_mlp=False, activation="relu", norm="rms")  # no shipped model
    assert compiled(arch) == compile_arch(arch)


@pytest.mark.parametrize("text", ["__import__('os').system('true')", "x.real", "[1][0]",
                                  "f(1)", "'a'", "lambda: 1", "Max(x, key=1)"])
def test_arithmetic_rejects_anything_but_arithmetic(text):
    with pytest.raises(ValueError, match="^not a"):
        arith.value(text, {"x": 1.0})


def test_arithmetic_matches_sympy():
    from sympy import Max, sqrt, sstr, symbols

    a, b = symbols("P_peak beta_hbm", positive=True)
    expr = Max(a / b, 3) + sqrt(a) / 7 - b**2 / 3
    env = {"P_peak": 2.5, "beta_hbm": 0.5}
    assert arith.value(sstr(expr), env) == pytest.approx(float(expr.subs({a: 2.5, b: 0.5})))
