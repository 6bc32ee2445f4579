"""The built-in default setting of the main job, ``roofline report`` (and of ``report.build``):
the device and model a newcomer gets without options. Plain data, so that the command line can
show it in ``--help`` without importing the report."""

DEFAULT = {"hardware": "H100-SXM", "model": "Llama-3-8B", "dtype": "bf16"}
