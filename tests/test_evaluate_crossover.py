"""Crossovers found numerically as the sign changes of their defining equality, and the branch
that holds at the root solved for its closed form: against hand-made functions, against SymPy's
own substitution, and on a setting whose branch has not been solved before."""

import dataclasses
import math

import pytest
from sympy import Max, Min

from roofline.api import setting
from roofline.derive.crossovers import crossovers
from roofline.evaluate import crossover_value
from roofline.evaluate.roots import sign_changes
from roofline.symbols import T


def test_a_regime_narrower_than_a_step_of_the_grid_is_found():
    # the grid has 8 points a decade (a step of 33 %): a regime from 1,000 to 1,020 tokens
    # opens and closes between two grid points, and the parabola's vertex finds it
    roots = sign_changes(lambda x: (x - 1000.0) * (1020.0 - x))
    assert roots == [pytest.approx(1000.0, rel=1e-12), pytest.approx(1020.0, rel=1e-12)]


def test_a_regime_open_from_the_start_closes_at_its_root():
    # ahead from the start: no opening crossing, so the first sign change (a closing one) is
    # not reported as the crossover
    assert sign_changes(lambda x: 5.0 - x) == []
    assert sign_changes(lambda x: x - 5.0) == [pytest.approx(5.0, rel=1e-12)]


def test_points_that_cannot_be_evaluated_are_skipped():
    assert sign_changes(lambda x: math.nan if x < 1 else x - 7.0) == [pytest.approx(7.0)]


def _atoms_hold(c, choice, values, root):
    """Every Max/Min of the equality takes the chosen argument at the root (SymPy's numbers)."""
    at = {**values, c.unknown: root}
    for atom, arg in c.branch(choice).choices:
        a, b = float(atom.xreplace(at)), float(arg.xreplace(at))
        if abs(a - b) > 1e-9 * max(abs(a), abs(b)):
            return False
    return True


@pytest.mark.parametrize("batch", [1, 64])
def test_each_value_is_its_branch_closed_form_and_the_branch_holds_there(batch):
    s = setting("A100-80GB-SXM", "Mixtral-8x7B", attention="tiled_fa2", batch=batch)
    solved = crossovers(s.architecture, s.caches)
    values = s.values()
    for name in ("prefill_compute_bound_tokens.tiled_fa2", "attention_dominates_time_tokens.tiled",
                 "projection_compute_bound_tokens"):
        v = crossover_value(s, name)
        assert v.exists, name
        c = solved[name]
        choice = tuple(int(i) for i in v.branch.split(","))
        closed = complex(c.branch(choice).root.xreplace(values))
        assert closed.real == pytest.approx(v.value, rel=1e-9) and abs(closed.imag) < 1e-9
        assert _atoms_hold(c, choice, values, v.value), name
        # and the equality itself is zero there, up to rounding of its two sides
        grows, other = (float(e.xreplace({**values, c.unknown: v.value}))
                        for e in (c.grows, c.other))
        assert grows == pytest.approx(other, rel=1e-9)


def test_a_branch_not_solved_before_is_solved_when_needed():
    # a device whose ridge is 1 FLOP/byte: Mixtral's projections reach it at about 1 token,
    # whose 2 experts are fewer than all 8: Min(n_e, B·T·n_a) takes B·T·n_a, a branch no
    # shipped device needs
    base = setting("H100-SXM", "Mixtral-8x7B")
    hw = dataclasses.replace(base.hardware, memory_bandwidth=base.peak)
    s = dataclasses.replace(base, hardware=hw)
    v = crossover_value(s, "projection_compute_bound_tokens")
    form = s.crossover_forms["projection_compute_bound_tokens"]
    assert v.exists and v.value < 4 and v.branch != form["main"]
    assert v.branch not in form["roots"]  # not solved until its closed form is read
    assert v.expr and v.branch in form["roots"]  # solved by SymPy now, and kept
    c = crossovers(s.architecture, s.caches)["projection_compute_bound_tokens"]
    choice = tuple(int(i) for i in v.branch.split(","))
    (moe,) = [arg for atom, arg in c.branch(choice).choices if isinstance(atom, Min)]
    assert moe.has(T)  # the experts that receive a token: B·T·n_a
    assert float(c.branch(choice).root.subs(s.values())) == pytest.approx(v.value, rel=1e-9)
    assert _atoms_hold(c, choice, s.values(), v.value)


def test_closed_forms_solved_together_are_those_solved_one_by_one():
    """A new architecture: the closed forms its crossover table reads, solved together (half of
    them in a forked process where the machine has several cores), are those SymPy gives for
    each branch alone, and the table's JSON carries them."""
    from roofline.api import crossovers as table
    from roofline.evaluate import solved

    model = dataclasses.replace(setting("H100-SXM", "Llama-3-8B").model, gated_mlp=False,
                                activation="relu")
    t = table("H100-SXM", model)
    s = t.setting
    wanted = [(v.name, v.branch) for v in t.values.values()]
    assert len(wanted) >= 8  # enough to share
    out = t.as_dict()["crossovers"]
    for name, key in wanted:
        alone = solved._solve(s.architecture, s.caches, name, key)
        kept = solved.branch_root(s.architecture, s.caches, name, key)
        assert (kept["root"], kept["latex"]) == (alone["root"], alone["latex"]), name
        if t.values[name].exists:  # a crossover that never happens prints no formula
            assert out[name]["expr"] == alone["root"] and out[name]["latex"] == alone["latex"]
        else:
            assert out[name]["expr"] == out[name]["latex"] == ""
    assert any(out[name]["expr"] for name, _ in wanted)


def test_a_tie_inside_a_min_is_no_second_root():
    # MI300X fp8: 64 KiB / (4·128·1 byte) = 128 = H, a tie inside Min(B_c, H) at every T
    s = setting("MI300X", "Mixtral-8x7B", dtype="fp8", attention="tiled_fa2")
    v = crossover_value(s, "prefill_compute_bound_tokens.tiled_fa2")
    assert v.exists and (v.ends_at is None or v.ends_at > 80_000)
    c = crossovers(s.architecture, s.caches)["prefill_compute_bound_tokens.tiled_fa2"]
    assert any(isinstance(a, Max) for a in c.atoms)


def test_a_device_without_sram_leaves_the_tiled_crossovers_unevaluated():
    """The tiled schedules need the SRAM per SM (M_sram): a device without it gives them no
    value and says why, neither "never" nor a number; the crossovers that do not use M_sram
    are evaluated as before."""
    from roofline.evaluate import crossover_values

    s = setting("H100-SXM", "Llama-3-8B")
    bare = dataclasses.replace(s, hardware=dataclasses.replace(s.hardware, sram_per_sm=None))
    values, before = crossover_values(bare), crossover_values(s)
    tiled = values["prefill_compute_bound_tokens.tiled"]
    assert not tiled.evaluated and not tiled.exists and "no on-chip SRAM" in tiled.reason
    ideal = values["prefill_compute_bound_tokens.ideal"]
    assert ideal.evaluated and ideal.value == before["prefill_compute_bound_tokens.ideal"].value
