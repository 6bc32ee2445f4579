"""``roofline measure`` and ``roofline validate``: wiring only.

``measure [-o FILE.toml] [--quick] [--name NAME]`` measures this machine and writes a hardware file
(default ``this-machine.toml``); with PyTorch and a CUDA device it also writes ``FILE-gpu.toml``.

``validate [--hardware FILE] [-o DIR] [--quick]`` times prefill-shaped work and compares it with the
model. Without ``--hardware`` it first runs ``measure`` (``--quick`` → the quick measurement) and
keeps that file as ``DIR/hardware.toml``, so the comparison always uses numbers measured on this
machine at the time. Writes ``DIR/validation.md`` and ``DIR/validation.png`` (default DIR:
``validation/``).

Both check what they will write before measuring anything (:func:`roofline.output.check_target`):
a target that cannot be written (a file where a folder must be, an unwritable folder, a folder
where a file must be) or a ``--name`` the hardware reader refuses is one line and exit status 2,
with nothing measured or written. The library names its arguments (``output``, ``name``); the
command line says them as flags (``--output``, ``--name``). A measured hardware file is read back
with the project's reader before its atomic rename, so ``measure`` never leaves a file that
``--hardware`` would refuse. The progress bar is drawn only when stderr is a terminal.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InputError, SpecError

if TYPE_CHECKING:
    from ..specs.hardware import Hardware

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    m = subparsers.add_parser(
        "measure", help="measure this machine (FLOP/s, memory bandwidth) into a hardware file",
        description="Measure attainable FLOP/s (numpy matmul, fp32 and fp64), memory bandwidth "
                    "(copy and triad on arrays far larger than the last-level cache) and the "
                    "fraction of it a thin BLAS product streaming its weights reaches "
                    "([efficiency] bandwidth), and write a hardware file. A few tens of seconds; "
                    "--quick takes a few seconds.")
    m.add_argument("-o", "--output", metavar="FILE.toml", default="this-machine.toml",
                   help="hardware file to write (default: %(default)s)")
    m.add_argument("--quick", action="store_true", help="smaller, fewer runs (a few seconds)")
    m.add_argument("--name", default="this-machine", help="name in the file (default: %(default)s)")
    m.set_defaults(run=run_measure)

    v = subparsers.add_parser(
        "validate", help="time prefill-shaped work here and compare it with the model",
        description="Time projections (T = 1…4096) and naive and blocked attention, compare with "
                    "the model's prediction for the measured hardware, and write "
                    "DIR/validation.md and DIR/validation.png.")
    v.add_argument("--hardware", metavar="FILE", default=None,
                   help="a hardware file written by `roofline measure` (default: measure first "
                        "and keep it as DIR/hardware.toml)")
    v.add_argument("-o", "--output", metavar="DIR", default="validation",
                   help="folder for validation.md and validation.png (default: %(default)s)")
    v.add_argument("--quick", action="store_true",
                   help="fewer, smaller points (under a minute) instead of a few minutes")
    v.set_defaults(run=run_validate)


def _gpu_file(path: Path) -> Path:
    return path.with_name(f"{path.stem}-gpu.toml")


def _check_measure_target(path: Path) -> None:
    """Before measuring: ``path`` and its GPU file can be written."""
    from ..output import check_target

    check_target(path, "file", suffix=".toml")
    if _gpu_file(path).is_dir():
        raise InputError("output", f"cannot write {_gpu_file(path)}: it is a folder", str(path))


def _measure(path: Path, quick: bool, name: str) -> str | None:
    """Measure, write ``path`` (and the GPU file); returns the GPU skip reason, if any.

    The text is read back with the hardware reader before the rename: a file ``--hardware``
    would refuse is never written."""
    from ..measure import cpu, gpu
    from ..measure.hwfile import write_hardware

    result = cpu.measure(quick=quick, progress_bar=True)
    doc = result.document(name)
    write_hardware(path, doc, cpu.HEADER)
    print(f"wrote {path}")
    for dtype, entry in doc["peak_flops"].items():
        print(f"  {dtype}: {entry['value']} (min {entry['min']}, max {entry['max']})")
    bw = doc["memory"]["bandwidth"]
    print(f"  memory bandwidth (triad): {bw['value']} (min {bw['min']}, max {bw['max']}); "
          f"{bw['note']}")
    eff = doc.get("efficiency", {}).get("bandwidth")
    if eff:
        print(f"  bandwidth efficiency (GEMM weight stream / triad): {eff['value']}; "
              f"{eff['note']}")
    reason = gpu.unavailable()
    if reason is None:
        gpu_path = _gpu_file(path)
        write_hardware(gpu_path, gpu.measure_gpu(quick), "Written by `roofline measure`")
        print(f"wrote {gpu_path}")
    else:
        print(f"GPU part skipped: {reason}", file=sys.stderr)
    return reason


def run_measure(args: argparse.Namespace) -> int:
    from ..measure.hwfile import check_name

    path = Path(args.output)
    _check_measure_target(path)  # before any measuring: nothing is lost to a bad target
    check_name(args.name)
    _measure(path, args.quick, args.name)
    return 0


def _check_this_machine(hw: Hardware, path: Path) -> None:
    """``validate`` times work on this machine's CPU: a file of another device (a shipped GPU,
    a CPU file measured elsewhere) would be held against work it never did."""
    from ..measure.system import cpu_name

    here = cpu_name()
    if hw.kind != "cpu":
        raise InputError("hardware", f"validate times work on this machine's CPU ({here}); "
                         f"{hw.name} is a {hw.kind} file: give a file `roofline measure` wrote "
                         "here, or none", str(path))
    measured = hw.provenance.get("cpu")
    if measured != here:
        raise InputError("hardware", f"validate times work on this machine's CPU ({here}); "
                         f"the file's provenance.cpu is {measured!r}: give a file "
                         "`roofline measure` wrote here, or none", str(path))


def run_validate(args: argparse.Namespace) -> int:
    import dataclasses

    from ..measure import gpu
    from ..measure import validation as V
    from ..measure.hwfile import write_hardware
    from ..measure.report import write_report
    from ..output import check_target
    from ..specs.hardware import load_hardware

    report = ["validation.md", "validation.png", "validation-gpu.png", "hardware-gpu.toml"]
    if args.hardware is None:
        report.append("hardware.toml")
    out = check_target(args.output, "folder", contents=report)  # before any work
    if args.hardware is None:
        hw_path = out / "hardware.toml"
        _measure(hw_path, args.quick, "this-machine")
    else:
        hw_path = Path(args.hardware)
    hw = load_hardware(hw_path)
    if args.hardware is not None:
        _check_this_machine(hw, hw_path)
    if "fp32" not in hw.peak_flops:
        raise SpecError(f"{hw_path}: peak_flops.fp32", "validate needs the fp32 peak; run "
                        "`roofline measure` to write one")
    result = V.validate(hw, quick=args.quick, progress_bar=True)
    reason = gpu.unavailable()
    if reason is None:
        gpu_path = _gpu_file(hw_path)
        if not gpu_path.exists():
            gpu_path = out / "hardware-gpu.toml"
            write_hardware(gpu_path, gpu.measure_gpu(quick=True))
        result = dataclasses.replace(
            result, gpu=gpu.validate_gpu(load_hardware(gpu_path), args.quick))
    else:
        result = dataclasses.replace(result, gpu_skipped=reason)
        if args.hardware is not None:  # otherwise measure said so already
            print(f"GPU part skipped: {reason}", file=sys.stderr)
    for path in write_report(result, out):
        print(f"wrote {path}")
    proj = result.projection
    knee = proj.knee
    print(f"projection: median absolute error {proj.mae:.1%}", end="")
    print(f" (uncalibrated {proj.mae_uncalibrated:.1%})" if result.machine.calibrated else "",
          end="")
    print(f"; measured knee T = {knee.knee:.1f} (fitted on T ≥ {V.KNEE_MIN_T})" if knee
          else "; no knee fitted", end="")
    print(f"; predicted crossover T = {proj.crossover:.1f}" if proj.crossover else "")
    return 0
