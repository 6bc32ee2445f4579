"""Every printed closed form reproduces its value: for every shipped device × model (every
attention mode's crossovers, one table), and under tensor parallelism over 2 and 8 devices,
expert parallelism over 8 and context parallelism over 2, each crossover's closed form as
``crossover --json`` prints it (``expr``), with the values it prints beside it (``symbols``),
gives the printed ``value`` to 1e-9, and each of its printed ``conditions`` holds there. The
text is read back by SymPy (not by the tool's generated code), so this is a second method;
where its double-precision value is further off (the small root of a quadratic loses digits to
cancellation: DeepSeek-V3.2's overhead crossover at one token), the form is substituted exactly
(the printed numbers as rationals, evaluated to 30 digits), which decides. A crossover that
never happens prints no formula."""

import math
import warnings
from functools import cache

import pytest
from sympy import Rational, lambdify, oo, parse_expr

from roofline import api
from roofline.errors import InputError
from roofline.specs.hardware import list_hardware, load_hardware
from roofline.specs.model import list_models
from roofline.symbols import local_dict

SPLITS = ({}, {"tp": 2}, {"tp": 8}, {"ep": 8}, {"cp": 2})


@cache
def _function(text: str):
    """The closed form ``text`` read by SymPy, as a function of its symbols by name."""
    expr = parse_expr(text, local_dict=local_dict())
    names = sorted(s.name for s in expr.free_symbols)
    return lambdify([local_dict()[n] for n in names], expr, "math"), names, expr


def _number(v):
    return math.inf if v == "oo" else v


def _holds(condition: str, symbols: dict) -> bool:
    """A printed condition at the printed numbers, with a relative slack for rounding."""
    expr = parse_expr(condition, local_dict=local_dict())
    at = {s: oo if symbols[s.name] == "oo" else symbols[s.name] for s in expr.free_symbols}
    lhs, rhs = (float(side.xreplace(at)) for side in (expr.lhs, expr.rhs))
    slack = 1e-9 * max(abs(lhs), abs(rhs), 1e-300)
    return lhs >= rhs - slack if expr.rel_op == ">=" else lhs <= rhs + slack


def _reproduce(name: str, v: dict) -> None:
    if not v["exists"]:
        assert v["expr"] == "" and v["conditions"] == [], name  # no formula that gives a number
        return
    if not v["expr"]:  # no closed form of degree ≤ 2 on this branch: the value stands alone
        return
    f, names, expr = _function(v["expr"])
    try:
        value = f(*[_number(v["symbols"][n]) for n in names])
    except ZeroDivisionError:  # a Piecewise's other branch, evaluated by the math module
        value = float(expr.xreplace({local_dict()[n]: oo if v["symbols"][n] == "oo"
                                     else v["symbols"][n] for n in names}))
    if not math.isclose(value, v["value"], rel_tol=1e-9):  # exactly, where doubles cancel
        value = float(expr.xreplace({local_dict()[n]: oo if v["symbols"][n] == "oo"
                                     else Rational(v["symbols"][n]) for n in names}).evalf(30))
    assert math.isclose(value, v["value"], rel_tol=1e-9), (name, value, v["value"])
    for condition in v["conditions"]:
        assert _holds(condition["expr"], v["symbols"]), (name, condition["expr"])


def _settings():
    for hw in list_hardware():
        for split in SPLITS:
            yield hw, split
    yield load_hardware("H100-SXM"), {"pp": 3}  # the fullest stage's memory forms (on one
    # device: each costs minutes of the suite)


@pytest.mark.parametrize("hw, split", list(_settings()),
                         ids=lambda v: getattr(v, "name", None) or
                         ",".join(f"{k}{n}" for k, n in v.items()) or "one")
def test_every_closed_form_gives_its_value(hw, split):
    for model in list_models():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                table = api.crossovers(hw, model, **split)
        except InputError:  # a degree the model or the device cannot take
            continue
        for name, v in table.as_dict()["crossovers"].items():
            _reproduce(f"{model.name}: {name}", v)


def test_a_wrong_value_is_caught():
    """A negative control: the check fails on a value that its closed form does not give."""
    table = api.crossovers("H100-SXM", "Llama-3-8B", attention="kernel").as_dict()
    v = dict(table["crossovers"]["prefill_compute_bound_tokens.kernel"])
    _reproduce("as printed", v)
    with pytest.raises(AssertionError):
        _reproduce("off by one token", {**v, "value": v["value"] + 1})


def test_the_readme_example_is_the_hbm_branch():
    """The kernel mode's compute-bound crossover of Llama-3-8B on H100: 411 tokens, by the
    branch whose memory time is the HBM's (the L2's gives 197, a root where the L2 does not
    bind), and its conditions say where that branch holds."""
    v = api.crossovers("H100-SXM", "Llama-3-8B").as_dict()["crossovers"][
        "prefill_compute_bound_tokens.kernel"]
    assert round(v["value"]) == 411
    assert "beta_hbm" in v["expr"] and "beta_l2" not in v["expr"]
    assert v["conditions"] and v["symbols"]["T"] == v["value"]
