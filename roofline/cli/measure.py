"""``roofline measure`` and ``roofline validate``: wiring only.

``measure [-o FILE.toml] [--quick] [--name NAME]`` measures this machine and writes a hardware file
(default ``this-machine.toml``); with PyTorch and a CUDA device it also writes ``FILE-gpu.toml``.

``validate [--hardware FILE] [-o DIR] [--quick]`` times prefill-shaped work and compares it with the
model. Without ``--hardware`` it first runs ``measure`` (``--quick`` → the quick measurement) and
keeps that file as ``DIR/hardware.toml``, so the comparison always uses numbers measured on this
machine at the time. Writes ``DIR/validation.md`` and ``DIR/validation.png`` (default DIR:
``validation/``).

Both check what they will write before measuring anything: a target that cannot be written (a
file where a folder must be, an unwritable folder, a folder where a file must be) or a ``--name``
the hardware reader refuses is one line and exit status 2, with nothing measured or written. A
measured hardware file is read back with the project's reader before its atomic rename, so
``measure`` never leaves a file that ``--hardware`` would refuse. The progress bar is drawn only
when stderr is a terminal.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import InputError, SpecError

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


def _check_measure_target(path: Path, option: str = "-o") -> None:
    """Before measuring: ``path`` and its GPU file can be written."""
    from ..hwfile import check_output_file

    check_output_file(path, option)
    if _gpu_file(path).is_dir():
        raise InputError(option, f"cannot write {_gpu_file(path)}: it is a folder", str(path))


def _write(path: Path, text: str, option: str, check=None) -> None:
    """:func:`roofline.hwfile.write_atomic`, with an operating-system error as one line."""
    from ..hwfile import write_atomic

    try:
        write_atomic(path, text, check)
    except OSError as err:
        raise InputError(option, f"cannot write the file: {err.strerror or err}",
                         str(path)) from None


def _measure(path: Path, quick: bool, name: str, option: str = "-o") -> str | None:
    """Measure, write ``path`` (and the GPU file); returns the GPU skip reason, if any.

    The text is read back with the hardware reader before the rename: a file ``--hardware``
    would refuse is never written."""
    from .. import gpu_measure
    from ..hwfile import hardware_check, toml_document
    from ..measure import measure

    result = measure(quick=quick, progress_bar=True)
    _write(path, result.toml(name), option, hardware_check(path))
    doc = result.document(name)
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
    reason = gpu_measure.unavailable()
    if reason is None:
        gpu_doc = gpu_measure.measure_gpu(quick)
        gpu_path = _gpu_file(path)
        _write(gpu_path, toml_document(gpu_doc, "Written by `roofline measure`"), option,
               hardware_check(gpu_path))
        print(f"wrote {gpu_path}")
    else:
        print(f"GPU part skipped: {reason}", file=sys.stderr)
    return reason


def run_measure(args: argparse.Namespace) -> int:
    from ..hwfile import check_name

    path = Path(args.output)
    _check_measure_target(path)  # before any measuring: nothing is lost to a bad target
    check_name(args.name)
    _measure(path, args.quick, args.name)
    return 0


def run_validate(args: argparse.Namespace) -> int:
    from .. import gpu_measure
    from ..hwfile import check_output_folder
    from ..specs.hardware import load_hardware
    from ..validate import KNEE_MIN_T, validate
    from ..validation_report import write_report

    report = ["validation.md", "validation.png", "validation-gpu.png", "hardware-gpu.toml"]
    if args.hardware is None:
        report.append("hardware.toml")
    out = check_output_folder(args.output, report)  # before any work
    if args.hardware is None:
        hw_path = out / "hardware.toml"
        _measure(hw_path, args.quick, "this-machine")
    else:
        hw_path = Path(args.hardware)
    hw = load_hardware(hw_path)
    if "fp32" not in hw.peak_flops:
        raise SpecError(f"{hw_path}: peak_flops.fp32", "validate needs the fp32 peak; run "
                        "`roofline measure` to write one")
    result = validate(hw, quick=args.quick, progress_bar=True)
    reason = gpu_measure.unavailable()
    if reason is None:
        gpu_path = _gpu_file(hw_path)
        if not gpu_path.exists():
            from ..hwfile import hardware_check, toml_document

            gpu_path = out / "hardware-gpu.toml"
            _write(gpu_path, toml_document(gpu_measure.measure_gpu(quick=True)), "-o",
                   hardware_check(gpu_path))
        result.gpu = {"validation": gpu_measure.validate_gpu(load_hardware(gpu_path), args.quick)}
    else:
        result.gpu = {"skipped": reason}
        if args.hardware is not None:  # otherwise measure said so already
            print(f"GPU part skipped: {reason}", file=sys.stderr)
    try:
        written = write_report(result, out)
    except OSError as err:
        raise InputError("-o", f"cannot write the report: {err.strerror or err}",
                         str(out)) from None
    for path in written:
        print(f"wrote {path}")
    knee = result.knee_measured
    print(f"projection: median absolute error {result.mae:.1%}", end="")
    print(f" (uncalibrated {result.mae_uncalibrated:.1%})" if result.calibrated else "", end="")
    print(f"; measured knee T = {knee.knee:.1f} (fitted on T ≥ {KNEE_MIN_T})" if knee
          else "; no knee fitted", end="")
    print(f"; predicted crossover T = {result.crossover:.1f}" if result.crossover else "")
    return 0
