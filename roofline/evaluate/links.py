"""Which link times each collective: the device's interconnect inside a node, the network
between nodes beyond it.

The devices of one prefill are numbered tensor-parallel fastest, then context, expert and
pipeline parallel (:mod:`roofline.derive.parallel`), and a node holds ``devices_per_node``
consecutive devices (the device file's ``interconnect.devices_per_node``: 8 on an HGX or DGX
board). A group of the tensor-, context- or expert-parallel collectives then spans N_tp,
N_tp·N_cp or N_tp·N_cp·N_ep consecutive devices; where that is more than a node holds, some
step of its ring leaves the node, and as every device takes each step at once, the slowest link
sets the step's time: the group is timed at the network's α and β. A pipeline boundary sends
from each device of one stage (N_tp·N_cp·N_ep devices) to its peer in the next; the boundaries
whose sends leave a node are timed at the network, the others at the interconnect. Without a
``devices_per_node`` the interconnect is taken to join every device.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from ..errors import InputError

__all__ = ["GROUPS", "LEVELS", "Link", "spans", "crosses", "boundary_crosses",
           "crossing_boundaries", "group_of", "resolve", "linked"]

GROUPS = ("tp", "cp", "ep", "pp")  # the prefix of each collective's operation name
LEVELS = ("link", "network")  # the levels that time a collective: its bytes are no memory traffic


class Link(NamedTuple):
    """α (s per message), β (bytes/s each way per device) and the level's name: "link" (the
    interconnect) or "network"."""

    alpha: float
    beta: float
    level: str


def spans(tp: int, cp: int, ep: int) -> dict[str, int]:
    """Consecutive devices one group of each collective spans (tensor-parallel fastest).

    >>> spans(8, 2, 4)
    {'tp': 8, 'cp': 16, 'ep': 64}
    """
    return {"tp": tp, "cp": tp * cp, "ep": tp * cp * ep}


def crosses(span: int, per_node: int | None) -> bool:
    """Whether a group of ``span`` consecutive devices leaves a node of ``per_node``."""
    return per_node is not None and span > per_node


def boundary_crosses(k: int, stage: int, per_node: int | None) -> bool:
    """Whether pipeline boundary k (stage k − 1 sending to stage k, stages of ``stage``
    devices) leaves a node: the 2·``stage`` devices [(k−1)·s, (k+1)·s) are not all in one.

    >>> boundary_crosses(1, 4, 8), boundary_crosses(2, 4, 8)
    (False, True)
    """
    return per_node is not None and \
        ((k - 1) * stage) // per_node != ((k + 1) * stage - 1) // per_node


def crossing_boundaries(stage: int, stages: int, per_node: int | None) -> int:
    """How many of the ``stages`` − 1 pipeline boundaries send across a node: boundary k
    (k = 1 … stages − 1) sends from devices [(k−1)·s, k·s) to [k·s, (k+1)·s), s = ``stage``,
    and leaves a node where those 2·s devices are not all in one.

    >>> crossing_boundaries(4, 4, 8)  # stages of 4 devices: the boundary 1|2 leaves the node
    1
    >>> crossing_boundaries(8, 3, 8)
    2
    """
    return sum(1 for k in range(1, stages) if boundary_crosses(k, stage, per_node))


def group_of(name: str) -> str | None:
    """The parallelism a collective's operation belongs to, by its name's prefix ("tp.all_reduce
    .attn" → "tp"); None for an operation that is not one."""
    head = name.partition(".")[0]
    return head if head in GROUPS else None


def resolve(hardware, network, tp: int, cp: int, ep: int, pp: int) -> dict[str, Link]:
    """The link of each group (for "pp": the interconnect's; the boundaries that cross are
    :func:`crossing_boundaries`), and "network" where given. A group of more than one device
    that leaves a node without a network is an InputError naming ``network``."""
    beta, alpha = hardware.link_bandwidth(), hardware.link_latency()
    per_node = hardware.devices_per_node
    inside = Link(alpha, beta, "link") if beta is not None else None
    across = None if network is None else Link(network.latency, network.link_bandwidth(),
                                               "network")
    out: dict[str, Link] = {}
    degree = {"tp": tp, "cp": cp, "ep": ep}
    for group, span in spans(tp, cp, ep).items():
        leaves = degree[group] > 1 and crosses(span, per_node)
        if leaves and across is None:
            raise InputError("network", f"the {group} group spans {span} devices, more than "
                             f"the {per_node} of one node ({hardware.name}'s interconnect."
                             "devices_per_node): give the network between nodes (e.g. "
                             "InfiniBand-NDR)", None)
        link = across if leaves else inside
        if link is not None:
            out[group] = link
    if pp > 1 and crossing_boundaries(tp * cp * ep, pp, per_node) and across is None:
        raise InputError("network", f"the pipeline's {pp} stages of {tp * cp * ep} device"
                         f"{'s' if tp * cp * ep > 1 else ''} "
                         f"span more than one node of {per_node} ({hardware.name}'s "
                         "interconnect.devices_per_node): give the network between nodes "
                         "(e.g. InfiniBand-NDR)", None)
    used = any(link is across for link in out.values()) or (
        pp > 1 and crossing_boundaries(tp * cp * ep, pp, per_node) > 0)
    if used and inside is not None and across.beta > inside.beta:
        raise InputError("network", f"its {across.beta / 1e9:,.4g} GB/s per device is faster "
                         f"than {hardware.name}'s interconnect inside a node "
                         f"({inside.beta / 1e9:,.4g} GB/s): a group across nodes would beat one "
                         "inside a node; check the files", network.name)
    if inside is not None:
        out["pp"] = inside
    if across is not None:
        out["network"] = across
    return out


def linked(setting: Any, ops: list[dict[str, Any]], free: tuple[str, ...],
           compile: Callable[..., list]) -> list:
    """``ops`` (derived forms) compiled by ``compile`` (:func:`roofline.evaluate.phases.
    _compile`), each collective with the α and β of its group's link (:func:`resolve`: the
    interconnect, or the network beyond a node) and timed at that level; the pipeline's sends
    apart, those of the boundaries that leave a node ("pp.send.network") at the network."""
    numbers, bandwidths = setting.numbers(), setting.level_bandwidths
    out: list = []
    for op in ops:
        group = group_of(op["name"]) if op["kind"] == "communication" else None
        if group is None:
            out += compile([op], numbers, free, bandwidths)
            continue
        parts = [(op, setting.links[group])]
        if group == "ep":  # its time holds both links (derive.expert_parallel.dispatch_time):
            # as bytes at the interconnect's β, named by the link that its group leaves on
            inside = setting.links["pp"]
            parts = [(op, inside._replace(level=setting.links["ep"].level))]
        if group == "pp":
            across = crossing_boundaries(setting.tp * setting.cp * setting.ep, setting.pp,
                                         setting.hardware.devices_per_node)
            if across:
                parts = [({**op, "count": setting.pp - 1 - across}, setting.links["pp"]),
                         ({**op, "name": "pp.send.network", "count": across},
                          setting.links["network"])]
        for part, link in parts:
            levels = {link.level: part["levels"]["link"]}  # its time as bytes at that link
            out += compile([{**part, "levels": levels}],
                           {**numbers, "alpha_link": link.alpha, "beta_link": link.beta},
                           free, {**bandwidths, link.level: link.beta})
    return out
