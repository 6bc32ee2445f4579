"""The results of :func:`roofline.serving.goodput.goodput`: one instance's configuration and
capacity (:class:`Side`), and the comparison of the disaggregated pair with the colocated
instance (:class:`Goodput`), with their JSON and their text."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

from ..evaluate.memory import held_bytes
from ..evaluate.setting import Setting
from ..tables import si

__all__ = ["Side", "Goodput"]


@dataclass(frozen=True)
class Side:
    """One instance's configuration and its capacity: requests per second meeting its
    objective, and per device."""

    role: str  # prefill, decode or colocated
    tp: int
    pp: int
    rate_per_s: float
    time_s: float  # the prefill's bound (prefill), a step's (decode, colocated)
    batch: int = 0  # prompts in a prefill; decodes in a step (decode, colocated)
    chunk: int = 0  # the chunk budget (colocated)
    service_s: float = 0.0  # the time between prompts admitted (prefill, colocated)

    @property
    def devices(self) -> int:
        return self.tp * self.pp

    @property
    def per_device(self) -> float:
        return self.rate_per_s / self.devices


@dataclass(frozen=True)
class Goodput:
    """Disaggregated against colocated for one workload and pair of objectives."""

    setting: Setting
    prompt: int
    output: int
    ttft: float
    tpot: float
    attainment: float
    prefill: Side  # the best prefill configuration (rate 0: none meets the TTFT)
    decode: Side
    colocated: Side
    transfer_bytes: float  # one prompt's KV cache
    transfer_s: float  # its time between the two instances
    disaggregated_per_device: float  # 0 where a side meets nothing
    colocated_per_device: float
    devices: int = 8  # the most devices an instance was allowed (``goodput``'s ``devices``)

    def _margin(self) -> str:
        """Where both serve and the better leads by under 2 %: said to be within the model's
        approximations (the M/D/1 queues of batched prefills and packed chunks, about 1 %)."""
        low, high = sorted((self.disaggregated_per_device, self.colocated_per_device))
        if not low or high / low - 1 >= 0.02:
            return ""
        return (f" (by {high / low - 1:.1%}: within the model's approximations, about even)")

    def _limits(self) -> list[str]:
        """Where the device's interconnect joins fewer devices than were allowed, or than the
        pair holds: what the search and the transfer assumed."""
        node = self.setting.hardware.devices_per_node
        if node is None:
            return []
        name, lines = self.setting.hardware.name, []
        if self.devices > node:
            lines.append(f"  searched     instances of up to {node} devices: {name}'s "
                         f"interconnect joins {node} (an instance across it is not modelled)")
        pair = self.prefill.devices + self.decode.devices
        if self.disaggregated_per_device and pair > node:
            lines.append(f"  note         the pair's {pair} devices span more than the {node} "
                         "one interconnect joins: its KV transfer, timed at the interconnect, "
                         "may be slower (the more permissive bound)")
        return lines

    @property
    def winner(self) -> str:
        """The configuration with more goodput per device; "neither" where both serve none."""
        if not (self.disaggregated_per_device or self.colocated_per_device):
            return "neither"
        return "disaggregated" if self.disaggregated_per_device > self.colocated_per_device \
            else "colocated"

    def as_dict(self) -> dict[str, object]:
        s = self.setting
        sides = {f"{side.role}": {**asdict(side), "devices": side.devices,
                                  "per_device": side.per_device}
                 for side in (self.prefill, self.decode, self.colocated)}
        return {"hardware": s.hardware.name, "model": s.model.name, "dtype": s.dtype,
                "attention": s.attention, "prompt": self.prompt, "output": self.output,
                "ttft_s": self.ttft, "tpot_s": self.tpot, "attainment": self.attainment,
                **sides, "transfer_bytes": self.transfer_bytes,
                "transfer_s": None if math.isinf(self.transfer_s) else self.transfer_s,
                "disaggregated_per_device": self.disaggregated_per_device,
                "colocated_per_device": self.colocated_per_device, "winner": self.winner,
                "devices": self.devices}

    def __str__(self) -> str:
        s, p, d, c = self.setting, self.prefill, self.decode, self.colocated
        link = "no link between them" if math.isinf(self.transfer_s) else \
            f"{si(self.transfer_s, 's')} for its {si(self.transfer_bytes, 'B')}"
        return "\n".join([
            f"goodput per device ({s.hardware.name}, {s.model.name}, {s.precision_words}, "
            f"{s.attention} attention; requests of {self.prompt:,} and {self.output:,} tokens; "
            f"TTFT {si(self.ttft, 's')} and TPOT {si(self.tpot, 's')} at "
            f"{self.attainment:.0%})",
            f"  prefill      TP {p.tp} PP {p.pp}: {p.rate_per_s:,.4g} requests/s "
            f"({p.per_device:,.4g} a device; "
            + (f"{p.batch} prompts together in {si(p.time_s, 's')})" if p.batch > 1 else
               f"a prompt {si(p.time_s, 's')})"),
            f"  decode       TP {d.tp} PP {d.pp}: {d.rate_per_s:,.4g} requests/s "
            f"({d.per_device:,.4g} a device; {d.batch:,} sequences, a step "
            f"{si(d.time_s, 's')})",
            f"  KV transfer  {link}",
            f"  disaggregated  {self.disaggregated_per_device:,.4g} requests/s a device "
            f"(the pair replicated to match its sides' rates)",
            f"  colocated      {self.colocated_per_device:,.4g} requests/s a device "
            + (f"(TP {c.tp} PP {c.pp}: {c.rate_per_s:,.4g} requests/s, {c.batch:,} decodes beside chunks "
               f"of {c.chunk:,} tokens, a step {si(c.time_s, 's')})" if c.rate_per_s else
               "(no TP and PP degrees up to the devices given serve any: "
               + ("the weights exceed one device's memory; where a degree holds them, "
                  if _weights_exceed(s) else "") + "its decodes' caches or the objectives do "
               "not fit beside the weights)"),
            f"  better         {self.winner}{self._margin()}", *self._limits()])




def _weights_exceed(setting: Setting) -> bool:
    return held_bytes(replace(setting, batch=1), "weights", 0, "decode") \
        >= setting.hardware.memory_capacity
