"""The collectives of a parallel prefill on the roofline (:mod:`.roofline`): the link as a
ceiling of its own, the whole prefill at its link intensity, and the time the collectives add.

A collective does no arithmetic: its time is the bytes each device sends over its link at that
link's bandwidth β_link, one direction (its latency α counted as the β_link·α bytes the link
would move in it: :func:`roofline.derive.comm.time_as_bytes`). On the roofline's axes, where I
is FLOP per byte of HBM, such a link has no place; as the hierarchical roofline gives each
memory level a ceiling β_level·I against that level's intensity (Yang, Kurth & Williams, arXiv
2009.05257), and as the communication-aware roofline gives the network one against FLOP per
network byte (Cardwell & Song 2019), the link's ceiling is β_link·I_link against the
intensity I_link = FLOPs / link bytes: each device's FLOPs over the bytes it sends. The whole
prefill is placed once more at that intensity, at its attained FLOP/s, joined to its HBM point
by a dotted line: its time is at least its collectives' time, so it lies under that ceiling.

No ceiling shows the rest: run after the GEMM whose output they reduce (the default, as vLLM
runs them), the collectives' time adds to the operations' (t = t_ops + t_comm), so a prefill
whose every ceiling lies above it still sits below the roof. A bar from each whole prefill
(and each decode step) up to F/(t − t_comm) marks where it would sit without them: the time
they add, the exposed share of it under ``--overlap``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from .. import evaluate
from ..evaluate import Setting
from ..sweeps import OperationPoint
from ..tables import si

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = ["LINK_MARKER", "Shares", "prefill_shares", "decode_comm", "link_name", "draw_links",
           "place", "bar", "note_parts"]

LINK_MARKER = "d"  # the whole prefill at its link intensity (a thin diamond)
_LINK_STYLE = (0, (5, 1.5, 1, 1.5))  # the link's ceiling: dash-dot, apart from the levels'
_NAMES = re.compile(r"NVLink\d*|Infinity Fabric|PCIe|ICI|RoCE|InfiniBand")


@dataclass(frozen=True)
class Shares:
    """The whole prefill at one prompt length: its FLOPs and time, its collectives' time (the
    exposed share of it) and the bytes each device sends at each link's bandwidth."""

    tokens: int
    flops: float
    time_s: float
    comm_s: float
    sent: tuple[tuple[float, float], ...]  # (β_link, bytes sent at it), fastest link first

    def intensity(self, beta: float) -> float:
        """FLOP per byte sent over the link of bandwidth ``beta``."""
        return self.flops / dict(self.sent)[beta]


def prefill_shares(s: Setting, prompts: Sequence[int]) -> list[Shares]:
    """The prefill's collectives at each prompt length (:func:`roofline.evaluate.prefill`; a
    collective's link bytes at the bandwidth it is timed at: :func:`roofline.evaluate.links.
    linked`); empty for one device."""
    if not s.parallel:
        return []
    out = []
    compiled = evaluate.operations(s)  # in the order of each point's operations
    for p in evaluate.prefill(s, prompts):
        sent: dict[float, float] = {}
        comm = 0.0
        for op, r in zip(compiled, p.operations, strict=True):
            if r.kind != "communication":
                continue
            comm += r.time_s
            for level, q in r.levels:
                beta = op.bandwidths[level]
                sent[beta] = sent.get(beta, 0.0) + q
        out.append(Shares(p.prompt_tokens, p.flops, p.time_s, comm,
                          tuple(sorted(((b, q) for b, q in sent.items() if q > 0),
                                       reverse=True))))
    return out


def decode_comm(s: Setting, p: OperationPoint, context: int) -> float:
    """A decode step's all-reduces' time (:func:`roofline.evaluate.decode`), in the form of
    latent attention its group names."""
    if s.tp == 1:
        return 0.0
    form = "naive" if p.group == "decode.naive" else \
        "absorbed" if s.architecture.mla else s.mla_decode
    batch = int(p.label.rsplit(" ", 1)[1])
    return evaluate.decode(replace(s, batch=batch, mla_decode=form), context).communication_s


def link_name(s: Setting, beta: float) -> str:
    """The link of bandwidth ``beta``: the interconnect as its file notes it ('NVLink4',
    'Infinity Fabric', 'ICI', 'PCIe'), the network by its name, else 'link'."""
    if s.network is not None and beta == s.network.link_bandwidth() \
            and beta != s.hardware.link_bandwidth():
        return s.network.name
    found = _NAMES.search(s.hardware.quantity_notes.get("interconnect.bandwidth") or "")
    return found.group(0) if found else "link"


def draw_links(ax: Axes, s: Setting, shares: list[Shares], x0: float, roof: float, color: str,
               short: bool, dashes: str | tuple = _LINK_STYLE) -> list[tuple]:
    """Each link's ceiling β_link·I_link up to the roof, thin, in ``color`` and ``dashes``
    (one device: dash-dot; several: the device's colour and dash pattern); returns the labels
    to place on them, as :func:`.ceilings.draw_ceilings` does ("memory" labels)."""
    labels = []
    for beta in sorted({b for sh in shares for b, _ in sh.sent}, reverse=True):
        name = link_name(s, beta)
        gid = f"ceiling-link:{s.hardware.name}:{name}"
        ax.plot([x0, roof / beta], [x0 * beta, roof], color=color, lw=1.0, ls=dashes,
                alpha=0.8, gid=gid,
                label=f"{name} ceiling: {si(beta, 'B/s')} × FLOP per byte sent over it")
        labels.append(("memory", name if short else f"{name}: {si(beta, 'B/s')}", color, gid,
                       beta, roof / beta))
    return labels


def place(ax: Axes, s: Setting, p: OperationPoint, share: Shares, size: float, color: str,
          fits: bool) -> None:
    """The whole prefill once more at each link's intensity, at its attained FLOP/s, joined to
    its HBM point by a dotted line."""
    for beta, _ in share.sent:
        at = share.intensity(beta)
        ax.plot([p.intensity, at], [p.attained] * 2, ":", lw=0.7, color=color, alpha=0.6,
                gid=f"link-join:{s.hardware.name}:{p.tokens}:{link_name(s, beta)}")
        ax.plot([at], [p.attained], LINK_MARKER, color=color, ms=size * 0.9,
                mec="white" if fits else color, mew=0.5 if fits else 1.2,
                mfc=color if fits else "white", zorder=5,
                gid=f"point:{s.hardware.name}:prefill:{p.tokens}:{link_name(s, beta)}")


def bar(ax: Axes, s: Setting, p: OperationPoint, comm_s: float, color: str, key: str) -> None:
    """From the point up to where it would sit without its collectives: F / (t − t_comm), a
    cap at the top."""
    if comm_s <= 0 or comm_s >= p.time_s:
        return
    ax.plot([p.intensity] * 2, [p.attained, p.flops / (p.time_s - comm_s)], "-", lw=0.9,
            color=color, marker="_", markevery=[1], ms=7, mew=1.0, zorder=5.5,
            gid=f"collectives:{s.hardware.name}:{p.group}:{key}")


def note_parts(group: list[Setting], names: list[str], bars: bool, short: bool,
               ceilings: Sequence[str] = ()) -> list[str]:
    """What the link's markers and the bars mean, for the note under the legend; several
    devices (``ceilings``: each device's links, 'H100-SXM NVLink4 450 GB/s'): what their
    thin diagonals and diamonds are, one sentence for all of them."""
    parts = []
    if ceilings:
        parts.append("thin diagonal in a device's colour: its link's ceiling, β_link × FLOP "
                     "per byte sent" + (f" ({', '.join(ceilings)})" if short else ""))
        parts.append("thin diamond: whole prefill at its link intensity"
                     + (" (FLOP per byte sent)" if short else
                        " (FLOPs / bytes each device sends over its link, latency as bytes)"))
        names = []
    for name in names:
        parts.append(f"thin diamond: whole prefill at its {name} intensity"
                     + (" (FLOP per byte sent)" if short else
                        " (FLOPs / bytes each device sends over it, latency as bytes)"))
    if bars:
        over = "exposed " if any(s.overlap for s in group) else ""
        parts.append("bar: up to where it would be without its collectives" if short else
                     f"bar above a point: where it would sit without its collectives (their "
                     f"{over}time at the link, added to the operations')")
    return parts
