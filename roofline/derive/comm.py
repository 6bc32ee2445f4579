"""Collective communication in the α–β model: a message of n bytes costs α + n/β.

Each collective over N devices (``N_dev``) of a buffer of S bytes on each device (``S_msg``) is a
sequence of steps; in each step every device sends (and receives) one message. Its time is
(steps)·α + (bytes each device sends)/β, with α the link's latency per message (``alpha_link``)
and β its bandwidth per device in one direction (``beta_link``). Reduction arithmetic (the γ term
of Thakur et al.) is left out: a few FLOPs per byte, far below the link's time.

- Ring all-reduce: a reduce-scatter then an all-gather around a ring, each N − 1 steps of S/N
  bytes: 2(N−1)·α + 2(N−1)/N·S/β, which is bandwidth-optimal (Patarasuk & Yuan 2009, "Bandwidth
  optimal all-reduce algorithms for clusters of workstations", J. Parallel Distrib. Comput.
  69(2): the lower bound 2(N−1)/N·S/β).
- Binomial-tree all-reduce: a reduce to one root then a broadcast, ⌈log₂N⌉ steps of S bytes
  each: 2⌈log₂N⌉·(α + S/β) (Thakur, Rabenseifner & Gropp 2005, "Optimization of collective
  communication operations in MPICH", IJHPCA 19(1), §4).
- Rabenseifner's all-reduce: recursive-halving reduce-scatter, recursive-doubling all-gather
  (N a power of two): 2·log₂N·α + 2(N−1)/N·S/β (Thakur et al. 2005, §4.4).
- Ring all-gather of S bytes in all (S/N from each device): (N−1)·α + (N−1)/N·S/β; ring
  reduce-scatter of an S-byte buffer: the same (Thakur et al. 2005, §3.1, §4.2).
- All-to-all, pairwise exchange, each device holding S bytes of which S/N go to each device:
  (N−1)·α + (N−1)/N·S/β (Thakur et al. 2005, §3.2, long messages).
- Point-to-point: α + S/β.

NCCL runs these algorithms ("Ring", "Tree") and picks between them with a tuning model of the
same form: a base latency per algorithm and protocol plus bytes over a bus bandwidth (NCCL
``src/graph/tuning.cc``; its "bus bandwidth" is the ring's S·2(N−1)/N over the time: NCCL's
``nccl-tests`` ``doc/PERFORMANCE.md``).
"""

from __future__ import annotations

from sympy import Expr, ceiling, log

from ..symbols import N_dev, S_msg, alpha_link, beta_link
from .entry import Entry

__all__ = ["ALGORITHMS", "ring_allreduce_bytes", "ring_allreduce_steps", "allreduce_time",
           "allgather_time", "reduce_scatter_time", "alltoall_time", "p2p_time",
           "time_as_bytes", "entries", "SOURCE"]

SOURCE = ("Thakur, Rabenseifner & Gropp 2005, 'Optimization of collective communication "
          "operations in MPICH' (IJHPCA 19(1)); Patarasuk & Yuan 2009, 'Bandwidth optimal "
          "all-reduce algorithms for clusters of workstations' (JPDC 69(2)); NCCL "
          "src/graph/tuning.cc (latency + bytes/bandwidth per algorithm)")
ALGORITHMS = ("ring", "tree", "rabenseifner")


def ring_allreduce_bytes(n: Expr = N_dev, size: Expr = S_msg) -> Expr:
    """Bytes each device sends in a ring all-reduce of ``size`` bytes: 2(N−1)/N·S.

    >>> from sympy import Integer
    >>> ring_allreduce_bytes(Integer(4), Integer(1024))
    1536
    """
    return 2 * (n - 1) * size / n


def ring_allreduce_steps(n: Expr = N_dev) -> Expr:
    """Steps (messages in sequence) of a ring all-reduce: 2(N−1).

    >>> ring_allreduce_steps(8)
    14
    """
    return 2 * (n - 1)


def _log2(n: Expr) -> Expr:
    return ceiling(log(n, 2))


def allreduce_time(algorithm: str = "ring", n: Expr = N_dev, size: Expr = S_msg,
                   alpha: Expr = alpha_link, beta: Expr = beta_link) -> Expr:
    """All-reduce of ``size`` bytes on each of ``n`` devices (see the module's docstring).

    >>> from sympy import Integer as I_
    >>> allreduce_time("ring", I_(2), I_(1000), 0, I_(10))
    100
    >>> allreduce_time("tree", I_(4), I_(1000), 0, I_(10))
    400
    """
    if algorithm == "ring":
        return ring_allreduce_steps(n) * alpha + ring_allreduce_bytes(n, size) / beta
    if algorithm == "tree":
        return 2 * _log2(n) * (alpha + size / beta)
    if algorithm == "rabenseifner":
        return 2 * _log2(n) * alpha + ring_allreduce_bytes(n, size) / beta
    raise ValueError(f"algorithm must be one of {', '.join(ALGORITHMS)}: {algorithm}")


def allgather_time(n: Expr = N_dev, size: Expr = S_msg, alpha: Expr = alpha_link,
                   beta: Expr = beta_link) -> Expr:
    """Ring all-gather of ``size`` bytes in all (size/n from each device):
    (N−1)·α + (N−1)/N·S/β."""
    return (n - 1) * alpha + (n - 1) * size / (n * beta)


def reduce_scatter_time(n: Expr = N_dev, size: Expr = S_msg, alpha: Expr = alpha_link,
                        beta: Expr = beta_link) -> Expr:
    """Ring reduce-scatter of an S-byte buffer (each device keeps S/N, reduced):
    (N−1)·α + (N−1)/N·S/β."""
    return (n - 1) * alpha + (n - 1) * size / (n * beta)


def alltoall_time(n: Expr = N_dev, size: Expr = S_msg, alpha: Expr = alpha_link,
                  beta: Expr = beta_link) -> Expr:
    """Pairwise-exchange all-to-all, S bytes on each device, S/N to each: (N−1)·α +
    (N−1)/N·S/β."""
    return (n - 1) * alpha + (n - 1) * size / (n * beta)


def p2p_time(size: Expr = S_msg, alpha: Expr = alpha_link, beta: Expr = beta_link) -> Expr:
    """One point-to-point send of ``size`` bytes: α + S/β.

    >>> from sympy import Integer
    >>> p2p_time(Integer(100), 1, Integer(10))
    11
    """
    return alpha + size / beta


def time_as_bytes(time: Expr, beta: Expr = beta_link) -> Expr:
    """A communication time as the bytes the link would move in it at β: time·β (exact: the
    evaluation then times it as bytes/β_link, as it times a memory level)."""
    from sympy import expand

    return expand(time * beta)


def entries() -> list[Entry]:
    per = ("N_dev devices, S_msg bytes on each", "alpha_link per message, beta_link per "
           "device in one direction", "reduction arithmetic neglected")
    return [
        Entry("comm.allreduce.ring.bytes", ring_allreduce_bytes(),
              "bytes each device sends in a ring all-reduce", "bytes", SOURCE, per[:1]),
        Entry("comm.allreduce.ring", allreduce_time("ring"), "time of a ring all-reduce", "s",
              SOURCE, per),
        Entry("comm.allreduce.tree", allreduce_time("tree"),
              "time of a binomial-tree all-reduce (reduce, then broadcast)", "s", SOURCE, per),
        Entry("comm.allreduce.rabenseifner", allreduce_time("rabenseifner"),
              "time of Rabenseifner's all-reduce (N a power of two)", "s", SOURCE, per),
        Entry("comm.allgather.ring", allgather_time(), "time of a ring all-gather of S_msg "
              "bytes in all", "s", SOURCE, per),
        Entry("comm.reduce_scatter.ring", reduce_scatter_time(),
              "time of a ring reduce-scatter of an S_msg-byte buffer", "s", SOURCE, per),
        Entry("comm.alltoall.pairwise", alltoall_time(),
              "time of a pairwise-exchange all-to-all", "s", SOURCE, per),
        Entry("comm.p2p", p2p_time(), "time of one point-to-point send", "s", SOURCE,
              ("one message of S_msg bytes",)),
    ]

