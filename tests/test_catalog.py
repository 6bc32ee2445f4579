"""The catalogue: exact expressions, sources, round trips through parse_expr."""

import pytest
from sympy import Float, parse_expr

from roofline.catalog import TOPICS, catalogue, get, select
from roofline.errors import UnknownNameError
from roofline.symbols import CATALOGUE, local_dict


def test_every_entry_is_exact_sourced_and_round_trips():
    entries = catalogue()
    assert len(entries) > 80
    for name, e in entries.items():
        assert not e.expr.atoms(Float), name  # no floats in a derivation
        assert e.source and e.meaning and e.unit, name
        assert set(e.symbols) <= set(CATALOGUE), name
        d = e.as_dict()
        assert parse_expr(d["expr"], local_dict=local_dict()) == e.expr, name


def test_every_topic_contributes():
    assert {e.topic for e in catalogue().values()} == set(TOPICS)


def test_the_issue_names_are_there():
    for name in ["projection.flops", "projection.bytes", "projection.intensity",
                 "attention.flops", "attention.naive.bytes", "attention.naive.score_bytes",
                 "attention.tiled.bytes", "attention.tiled_fa2.bytes", "attention.ideal.bytes",
                 "prefill.flops", "prefill.bytes", "prefill.intensity", "prefill.time",
                 "decode.flops", "decode.bytes", "decode.intensity", "kv_cache.bytes",
                 "roofline.ridge", "roofline.attainable", "roofline.time",
                 "crossover.projection_compute_bound_tokens",
                 "crossover.prefill_compute_bound_tokens.naive",
                 "crossover.attention_equals_projection_flops_tokens",
                 "crossover.attention_dominates_time_tokens.tiled",
                 "crossover.attention_compute_bound_tokens.ideal",
                 "crossover.naive_scores_exceed_memory_tokens",
                 "crossover.kv_cache_exceeds_memory_tokens", "crossover.decode_critical_batch"]:
        assert get(name).name == name


def test_unknown_name_lists_close_ones():
    with pytest.raises(UnknownNameError, match="close matches: projection.flops"):
        get("projection.flop")
    assert [e.name for e in select(["roofline"])][:2] == ["roofline.ridge", "roofline.attainable"]
