"""Goodput per device: a disaggregated pair of a prefill and a decode instance against one
colocated instance with chunked prefill (DistServe, Zhong et al. 2024, arXiv 2401.09670, §2 and
§4; Sarathi-Serve, arXiv 2403.02310), for requests of T prompt and T_out output tokens under a
TTFT and a TPOT objective. The closed forms of the tool stand in for DistServe's simulator.

**Prefill instance** (tensor degree N_tp, pipeline stages N_pp): a prompt passes whole through
its stages (DistServe's inter-op instance, ``pipeline="whole"``): its execution e is the
stages' sum with the sends, and a new prompt enters at the slowest stage's time t (t = e on one
stage); with Poisson arrivals at rate R it is an M/D/1 queue of service t, and a request's TTFT
is e plus its wait W: the attainment P(e + W ≤ τ_TTFT). Where prompts are short enough that a
prefill is memory-bound, the instance may run k of them together (k = 1, 2, 4, 8, the best
kept): e the batch's execution and t its stage time over k, a prompt's share (the same packing
the colocated instance's chunks get; the wait to gather k prompts is not counted).
The attainment P(e + W ≤ τ_TTFT) is Erlang's M/D/1 waiting-time distribution (A. K. Erlang
1909; e.g. Kleinrock, Queueing Systems I, §5): P(W ≤ x) = (1 − ρ)·Σ_{k=0}^{⌊x/t⌋}
(R(kt − x))^k/k!·e^{−R(kt − x)}, ρ = R·t, at x = τ_TTFT − e, evaluated at 50 digits
(mpmath). Its capacity is the
highest R whose attainment reaches the chosen fraction.

**Decode instance** (N_tp, and N_pp stages: the batch in N_pp micro-batches, a step one TP
group's at ⌈B/N_pp⌉ sequences plus the stages' sends, each device its stage's layers of the
weights and caches): B sequences decode together, each step t_step(B) at the mean
context T + (T_out − 1)/2; a request stays T_out − 1 steps, so B = R·(T_out − 1)·t_step
(Little's law). Its TPOT is t_step plus its share of the KV-cache transfer, t_kv/(T_out − 1)
(DistServe's TPOT is the mean time per output token of a request); every request sees the same
TPOT in this model, so it meets the objective or none does. Its capacity is at the largest B
whose TPOT meets the objective and whose caches at the end fit: R = B/((T_out − 1)·t_step).

**The pair** (DistServe Algorithm 1): each side's configuration with the most requests per
second per device, replicated to match: goodput per device 1/(N_p/R_p + N_d/R_d). The KV cache
of a prompt (its ``kv_cache`` form at T) crosses the interconnect between them, on
the N_p links of the prefill instance's devices at once (each shard's own, DistServe §4.1),
timed at the interconnect: both instances within it (where the pair spans more devices than it
joins, the result says so: the transfer may then be slower, the more permissive bound).

**Colocated** (N_tp devices a stage and N_pp stages, each degree searched as for the decode
instance, the best per device kept): each step holds the decodes and chunks filling the budget
that keeps their TPOT under the objective (``tpot_chunk_budget_tokens`` at half a prompt's
tokens done, the mean offset of its chunks), from several prompts where they are short
(Sarathi-Serve's stall-free batching); the decodes in flight B = R·(T_out − 1)·t by Little's law
at the step's time t. Under N_pp stages the engine keeps N_pp hybrid micro-batches in flight,
each with ⌈B/N_pp⌉ of the decodes and its own chunks (Sarathi-Serve §4.4: uniform hybrid batches
keep the pipeline's bubbles small): a micro-batch's step is one TP group's hybrid step, all
layers, plus the N_pp − 1 sends of its C + B/N_pp rows, and it meets the objective; each device
holds its stage's layers of the weights and caches. A prompt takes T/(C·N_pp) of the steps'
capacity (its M/D/1 service) and ⌈T/C⌉ steps to its first token. An engine may keep its steps
shorter than the objective: the budgets of τ_TPOT, τ/2, τ/4 and τ/8 are tried, the best kept.
Its goodput is the highest R meeting the TTFT attainment with the decodes' caches in memory.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import replace

from ..errors import InputError
from ..evaluate.memory import held_bytes, peak_bytes
from ..evaluate.phases import decode, prefill_time
from ..evaluate.setting import Setting
from .checks import first_split
from .goodput_result import Goodput, Side
from .hybrid import budget
from .queue import md1_attainment
from .request import fits

__all__ = ["Side", "Goodput", "md1_attainment", "prefill_capacity", "decode_capacity",
           "colocated_capacity", "goodput", "attainment_curves", "DEGREES"]

DEGREES = (1, 2, 4, 8)  # tensor (and pipeline) degrees searched, within the devices given
PREFILL_BATCHES = (1, 2, 4, 8)  # prompts a prefill instance runs together, searched


def _highest(feasible, low: float, high: float) -> float:
    """The highest rate in (low, high) for which ``feasible`` holds (it holds below, fails
    above), to a relative 1e-5; 0 where it fails everywhere above ``low``."""
    if not feasible(low + 1e-9 * (high - low)):
        return 0.0
    for _ in range(80):
        mid = (low + high) / 2
        low, high = (mid, high) if feasible(mid) else (low, mid)
        if high - low <= 1e-5 * high:
            break
    return low


def prefill_capacity(setting: Setting, prompt: int, ttft: float, attainment: float) -> Side:
    """The highest rate whose TTFT attainment reaches ``attainment`` on the setting's
    prefill instance: N_tp devices a stage, and N_pp stages that a prompt passes whole, one
    after another (DistServe's inter-op instance: its execution the stages' sum with the
    sends, a new prompt admitted at the slowest stage's time); prompts prefilled k at a time
    where that serves more (k of :data:`PREFILL_BATCHES` whose activations fit: the batch's
    execution e_k, a prompt's share of the service t_k/k, as the colocated instance packs
    prompts into its chunks), the best k kept."""
    sides = [_prefill_at(setting, prompt, ttft, attainment, k) for k in PREFILL_BATCHES]
    return max(sides, key=lambda s: (s.rate_per_s, -s.batch))


def _prefill_at(setting: Setting, prompt: int, ttft: float, attainment: float,
                batch: int) -> Side:
    from ..evaluate.parallel import stage_times

    one = replace(setting, batch=batch, pipeline="whole")
    execution = float(prefill_time(one, [prompt])[0])
    if peak_bytes(one, prompt) > setting.hardware.memory_capacity:  # its share does not fit
        return Side("prefill", setting.tp, setting.pp, 0.0, execution, batch,
                    service_s=execution)
    service = (float(stage_times(one, [prompt]).max()) if one.pp > 1 else execution) / batch
    rate = _highest(lambda r: md1_attainment(r, service, ttft, execution) >= attainment,
                    0.0, 1 / service) if execution <= ttft else 0.0
    return Side("prefill", setting.tp, setting.pp, rate, execution, batch, service_s=service)


def decode_capacity(setting: Setting, prompt: int, output: int, tpot: float,
                    transfer_s: float = 0.0) -> Side:
    """The decode instance's capacity at the largest batch whose TPOT (a step and the KV
    transfer's share) meets ``tpot`` and whose caches at the end fit. Under N_pp stages the
    batch runs as N_pp micro-batches of ⌈B/N_pp⌉, one in each stage at a time: a token passes
    every layer, so a step takes one TP group's decode step at the micro-batch, all layers,
    plus the N_pp − 1 sends of its hidden states (:func:`roofline.derive.pipeline.send_time`),
    and each device holds its stage's layers of the weights and of the B caches."""
    if output < 2:
        raise InputError("output", "a decode instance needs at least 2 output tokens", output)
    context = prompt + (output - 1) // 2
    extra = transfer_s / (output - 1)
    most = fits(setting, prompt + output - 1)
    group, sends = replace(setting, pp=1), _sends(setting)

    def time(b: int) -> float:
        micro = -(-b // setting.pp)
        return decode(replace(group, batch=micro), context).time_s + sends(micro)

    if most < setting.pp or time(setting.pp) + extra > tpot:
        return Side("decode", setting.tp, setting.pp, 0.0, time(setting.pp), 0)
    low, high = setting.pp, most
    while low < high:  # the largest batch that meets the objective: the step grows with it
        mid = (low + high + 1) // 2
        low, high = (mid, high) if time(mid) + extra <= tpot else (low, mid - 1)
    t = time(low)
    return Side("decode", setting.tp, setting.pp, low / ((output - 1) * t), t, low)


def _sends(setting: Setting):
    """The N_pp − 1 sends of a decode step's micro-batch of ``rows`` sequences between the
    stages (the catalogue's ``send_time`` at one token a sequence, the pipeline's link)."""
    from ..derive.pipeline import send_time
    from ..symbols import B, D, T, alpha_link, b_a, beta_link

    if setting.pp == 1:
        return lambda rows: 0.0
    n, link = setting.numbers(), setting.links["pp"]
    one = send_time().xreplace({T: 1, D: n["D"], b_a: n["b_a"], alpha_link: link.alpha,
                                beta_link: link.beta})
    return lambda rows: (setting.pp - 1) * float(one.xreplace({B: rows}))


def _colocated_at(setting: Setting, prompt: int, output: int, ttft: float, tpot: float,
                  rate: float) -> tuple[float, int, int, float]:
    """(TTFT attainment, decodes, chunk budget, step time) of a colocated instance (the
    setting's N_tp devices a stage, N_pp stages) at ``rate`` whose steps keep the decodes' TPOT
    under ``tpot``; an attainment of 0 where the decodes' caches do not fit or no chunk meets
    the TPOT. The decodes in flight follow the step time (Little's law, B = R·(T_out − 1)·t, a
    few rounds to the fixed point), ⌈B/N_pp⌉ in each of the N_pp micro-batches; each step is
    filled with chunks of the budget (from several prompts where they are short, as
    Sarathi-Serve's stall-free batching fills it), its attention after half of a prompt's
    tokens, the mean offset of its chunks; a prompt takes T/(C·N_pp) of the steps' capacity and
    ⌈T/C⌉ steps to its first token."""
    context, most = prompt + (output - 1) // 2, fits(setting, prompt + output - 1)
    stages, group, sends = setting.pp, replace(setting, pp=1), _sends(setting)
    t, decodes, chunk = tpot, 0, 0
    for _ in range(4):
        wanted = max(stages, math.ceil(rate * (output - 1) * t))
        if wanted > most:
            return 0.0, wanted, 0, 0.0
        if wanted == decodes:
            break
        decodes = wanted
        found = _micro_budget(group, sends, -(-decodes // stages), context, prompt, tpot)
        if found is None:
            return 0.0, decodes, 0, 0.0
        chunk, t = found
    attained = md1_attainment(rate, prompt / (chunk * stages) * t, ttft,
                              math.ceil(prompt / chunk) * t)
    return attained, decodes, chunk, t


def _micro_budget(group: Setting, sends, micro: int, context: int, prompt: int,
                  tpot: float) -> tuple[int, float] | None:
    """(chunk, step time) of one micro-batch of ``micro`` decodes: the budget at half a
    prompt's tokens done within the objective less the sends of the micro-batch's rows; where
    the chunk's own rows make the sends longer, a second round with them counted (its chunk is
    no larger, so its sends no longer). None where no chunk meets it."""
    rows = 0  # the chunk's rows counted in the sends
    for _ in range(2):
        room = tpot - sends(micro + rows)
        if room <= 0:
            return None
        first = budget(group, micro, context, room)
        done = max(0, prompt - (first.chunk or 0)) // 2
        b = budget(group, micro, context, room, done) if done else first
        if b.chunk is None:
            return None
        chunk, at = b.chunk, b.at.time_s
        if sends(micro + chunk) <= sends(micro + rows):
            break
        rows = chunk
    return chunk, at + sends(micro + chunk)


def _colocated_best(setting: Setting, prompt: int, output: int, ttft: float, tpot: float,
                    rate: float) -> tuple[float, int, int, float]:
    """:func:`_colocated_at` at the TPOT objective, or at a tighter one (half, a quarter, an
    eighth: a smaller budget, faster first tokens) where that attains more: an engine may keep
    its steps shorter than the objective asks."""
    return max((_colocated_at(setting, prompt, output, ttft, tpot / 2**j, rate)
                for j in range(4)), key=lambda found: found[0])


def colocated_capacity(setting: Setting, prompt: int, output: int, ttft: float, tpot: float,
                       attainment: float) -> Side:
    """One instance (the setting's N_tp devices a stage, N_pp stages) running prefill chunks
    beside its decodes (the hybrid step, in N_pp micro-batches under pipeline stages)."""
    rate = _highest(lambda r: _colocated_best(setting, prompt, output, ttft, tpot, r)[0]
                    >= attainment, 0.0, 1e4)
    if rate == 0.0:
        return Side("colocated", setting.tp, setting.pp, 0.0, 0.0, 0)
    _, decodes, chunk, t = _colocated_best(setting, prompt, output, ttft, tpot, rate)
    return Side("colocated", setting.tp, setting.pp, rate, t, decodes, chunk,
                t * prompt / (chunk * setting.pp))


def attainment_curves(g: Goodput, rates: Sequence[float]) -> tuple[list[float], list[float]]:
    """The TTFT-and-TPOT attainment of the disaggregated pair and of the colocated instance at
    each request rate per device in ``rates``. The pair at a fraction x of its goodput runs
    each side at x times its capacity: the prefill's attainment at x·R_p, the decodes' TPOT met
    up to x = 1 (their batch grows with the rate; past B* none meets it)."""
    p, s = g.prefill, g.setting
    pair = []
    for r in rates:
        x = r / g.disaggregated_per_device if g.disaggregated_per_device else math.inf
        pair.append(0.0 if x > 1 else md1_attainment(x * p.rate_per_s, p.service_s, g.ttft,
                                                        p.time_s))
    c = replace(s, tp=g.colocated.tp, pp=g.colocated.pp)  # its rate: per device × its devices
    colo = [_colocated_best(c, g.prompt, g.output, g.ttft, g.tpot, r * c.tp * c.pp)[0]
            for r in rates]
    return pair, colo


def _configurations(setting: Setting, devices: int) -> list[Setting]:
    """The setting at each tensor and pipeline degree of :data:`DEGREES` within ``devices``
    that the model can be split into (its heads, its layers); the warning that one device's share outgrows the memory is the capacity's to
    weigh (a configuration that does not fit serves nothing), not printed."""
    out = []
    for tp in DEGREES:
        for pp in DEGREES:
            if tp * pp > devices:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    out.append(replace(setting, tp=tp, pp=pp))
                except InputError:  # a split the model's shape does not allow
                    continue
    return out


def goodput(setting: Setting, prompt: int, output: int, ttft: float, tpot: float,
            attainment: float = 0.9, devices: int = 8,
            link_bandwidth: float | None = None) -> Goodput:
    """Disaggregated against colocated for the setting's device and model (its tp, pp and
    batch are searched or set here: give them 1). ``devices``: the most one instance of a side
    may take; ``link_bandwidth``: the KV transfer's bytes/s per link (default the device's
    interconnect; ``math.inf``: a free transfer; 0: none possible)."""
    if setting.parallel:
        name, value = first_split(setting)
        raise InputError(name, "goodput searches the parallelism itself: give no tp, pp, ep "
                         "or cp", value)
    if setting.batch != 1:
        raise InputError("batch", "goodput sets the decode batch itself: give none",
                         setting.batch)
    if setting.overlap:
        raise InputError("overlap", "goodput times each all-reduce after the GEMM it reduces, "
                         "as vLLM runs them (the colocated instance's hybrid step has no other "
                         "schedule): give no overlap", True)
    if not 0 < attainment < 1:
        raise InputError("attainment", "must be a fraction in (0, 1)", attainment)
    if link_bandwidth is not None and not link_bandwidth >= 0:
        raise InputError("link_bandwidth", "must be bytes/s ≥ 0 (math.inf: a free transfer)",
                         link_bandwidth)
    beta = setting.hardware.link_bandwidth() if link_bandwidth is None else link_bandwidth
    kv = held_bytes(setting, "kv_cache", prompt, "decode")
    pre = [prefill_capacity(c, prompt, ttft, attainment)
           for c in _configurations(setting, devices)]
    best_p = max(pre, key=lambda s: s.per_device)
    def transfer(decode_devices: int) -> float:
        """The prompt's KV cache sent on min(N_p, N_d) links at once (each shard its own)."""
        if beta == math.inf:
            return 0.0
        return math.inf if not beta else kv / (beta * min(best_p.devices, decode_devices))
    dec = [decode_capacity(c, prompt, output, tpot, transfer(c.tp * c.pp))
           for c in _configurations(setting, devices)]
    best_d = max(dec, key=lambda s: s.per_device)
    pair = 0.0 if not (best_p.rate_per_s and best_d.rate_per_s) else \
        1 / (best_p.devices / best_p.rate_per_s + best_d.devices / best_d.rate_per_s)
    colo = max((colocated_capacity(c, prompt, output, ttft, tpot, attainment)
                for c in _configurations(setting, devices)),
               key=lambda s: (s.per_device, -s.devices, -s.pp))  # fewest devices on a tie
    return Goodput(setting, prompt, output, ttft, tpot, attainment, best_p, best_d, colo, kv,
                   transfer(best_d.devices), pair, colo.per_device, devices)
