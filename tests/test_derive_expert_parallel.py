"""Expert parallelism: the all-to-alls' copies against an enumeration of uniform routing, the
node limit, the slower link across nodes, and one device's experts."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
from sympy import Rational, expand, oo

from roofline.derive import expert_parallel as ep
from roofline.derive.architecture import Architecture
from roofline.symbols import (B, D, F, G_node, M_node, N_ep, T, alpha_link, alpha_net, b_a, b_w,
                              beta_link, beta_net, n_a, n_e)


def _enumerated(devices: int, nodes: int, active: int) -> tuple[Fraction, Fraction]:
    """(network, interconnect) copies per token, by enumeration of every way to place its
    ``active`` experts on ``devices`` devices (each drawn uniformly, independently) in
    ``nodes`` nodes of g: once to each other node holding one (landing on the device of the
    source's rank there), and inside each node from the landing device (the source itself in
    its own node) to each other device holding one. The source is device 0."""
    g = devices // nodes
    network = inside = 0
    placements = list(itertools.product(range(devices), repeat=active))
    for placed in placements:
        hit = set(placed)
        for node in range(nodes):
            in_node = {d for d in hit if d // g == node}
            if not in_node and node != 0:
                continue
            network += node != 0
            inside += len(in_node - {node * g})  # the landing device: the source's rank
    return Fraction(network, len(placements)), Fraction(inside, len(placements))


@pytest.mark.parametrize("devices, nodes, active", [(8, 1, 2), (4, 1, 3), (8, 2, 2), (8, 4, 3),
                                                    (6, 3, 2), (4, 4, 2)])
def test_copies_match_an_enumeration_of_routing(devices, nodes, active):
    """The copies an all-to-all sends per token (DeepEP's count) against every placement of a
    token's experts: the expectation of the distinct other nodes it reaches, and of the
    forwards inside each node that receives it, without a node limit."""
    net, inside = ep.copies()
    at = {N_ep: devices, G_node: nodes, n_a: active, M_node: oo}
    assert (net.subs(at), inside.subs(at)) == _enumerated(devices, nodes, active)


def test_the_node_limit_caps_the_nodes_reached():
    """DeepSeek-V3 over 8 nodes: 8 experts a token would reach 8·(1 − (7/8)⁸) ≈ 5.3 nodes,
    with the node limit M = 4 at most 4: (G − 1)·M/G = 3.5 other nodes."""
    net, _ = ep.copies()
    assert net.subs({G_node: 8, n_a: 8, M_node: 4}) == Rational(7, 2)
    assert float(net.subs({G_node: 8, n_a: 8, M_node: oo})) == pytest.approx(7 * (1 - (7 / 8)**8))


def test_layer_time_by_hand():
    # Mixtral-like in one node: 2 active experts, D 4096, 4096 tokens, 8 devices, 450 GB/s,
    # 0.47 us; a token reaches 7·(1 − (7/8)²) = 105/64 other devices on average
    t = ep.layer_communication_time().subs({N_ep: 8, G_node: 1, M_node: oo, B: 1, T: 4096,
                                             n_a: 2, D: 4096, b_a: 2,
                                             alpha_link: Rational(47, 10**8),
                                             beta_link: 450 * 10**9, alpha_net: 0, beta_net: 1})
    row = 4096 * 4096 * 2
    assert float(t) == pytest.approx(2 * (7 * 0.47e-6 + 105 / 64 * row / 450e9), rel=1e-12)


def test_across_nodes_the_slower_link_binds():
    """DeepSeek-V3's layer over 4 nodes of 8 (EP 32), 16,384 tokens, fp8 rows of 7,168 bytes:
    3·(1 − (3/4)⁸) other nodes at 50 GB/s against 28·(1 − (31/32)⁸) devices at 450 GB/s."""
    at = {N_ep: 32, G_node: 4, M_node: 4, B: 1, T: 16384, n_a: 8, D: 7168, b_a: 1,
          alpha_link: Rational(47, 10**8), beta_link: 450 * 10**9,
          alpha_net: Rational(27, 10**7), beta_net: 50 * 10**9}
    row = 16384 * 7168
    network = 3 * 2.7e-6 + 3 * (1 - 0.75**8) * row / 50e9
    inside = 7 * 0.47e-6 + 28 * (1 - (31 / 32)**8) * row / 450e9
    assert network > inside
    assert float(ep.dispatch_time().subs(at)) == pytest.approx(network, rel=1e-12)


def test_device_experts():
    whole = b_w * n_e * 3 * D * F  # gated experts of 3·D·F parameters
    assert expand(ep.device_expert_bytes(Architecture(moe=True)) * N_ep - whole) == 0


def test_node_limited_routing_is_read_from_the_config(tmp_path):
    """DeepSeek-V3's config: 8 expert groups, a token's experts in the top 4 (n_group,
    topk_group): 4 nodes at most when its experts span 4 or 8 nodes, 8 over 16 nodes (each
    group then spans two); a model without groups has no limit; topk_group above n_group is
    refused in one line."""
    import json

    from roofline.errors import SpecError
    from roofline.specs.model import load_model, read_model

    v3 = load_model("DeepSeek-V3")
    assert (v3.expert_groups, v3.groups_per_token) == (8, 4)
    assert [v3.node_limit(n) for n in (4, 8, 16)] == [4, 4, 8]
    assert load_model("Mixtral-8x7B").node_limit(4) == float("inf")
    config = json.loads(v3.path.read_text())
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**config, "topk_group": 9}))
    with pytest.raises(SpecError) as err:
        read_model(path)
    assert "topk_group" in str(err.value) and "\n" not in str(err.value)
