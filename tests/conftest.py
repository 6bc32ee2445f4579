"""Checks that several test modules share."""

import math

import pytest


@pytest.fixture(scope="session")
def crossovers_hold():
    """A check: at each crossover of a setting that exists, grows = other (its defining
    equality), evaluated from the equality's own text at the root, independently of the solved
    closed form."""
    from roofline.evaluate import arith, crossover_values

    def check(s) -> None:
        for name, c in crossover_values(s).items():
            if not c.exists:
                continue
            form = s.crossover_forms[name]
            vals = s.numbers(batch=form["unknown"] != "B")
            if form["unknown"] != "T":  # a batch crossover: at the model's context limit
                vals["T"] = s.model.max_position
            at = {**vals, form["unknown"]: c.value}
            grows, other = arith.value(form["grows"], at), arith.value(form["other"], at)
            assert math.isclose(grows, other, rel_tol=1e-6), (name, c.value, grows, other)
    return check
