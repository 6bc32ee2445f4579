"""Issue "Figures a paper can print", colour: every pair of series drawn in one panel in the
same line style and marker differs by at least 10 ΔE (CIE76) under a protanopia and a
deuteranopia simulation (Machado, Oliveira & Fernandes 2009, severity 1), for every figure kind,
for a dense, an MoE, a windowed and a latent-attention model, on one device and three."""

import itertools
import warnings

import numpy as np
import pytest
from matplotlib.colors import to_rgb

from roofline import plot
from roofline.api import setting
from roofline.plot import _style

# Machado et al. 2009, Table 1 at severity 1.0: linear RGB to the simulated linear RGB.
MACHADO = {
    "protanopia": np.array([[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
}


def _linear(rgb):
    c = np.asarray(rgb, float)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)  # sRGB, IEC 61966


def _lab(linear):
    """CIE L*a*b* (D65) of linear sRGB."""
    xyz = np.array([[0.4124564, 0.3575761, 0.1804375], [0.2126729, 0.7151522, 0.0721750],
                    [0.0193339, 0.1191920, 0.9503041]]) @ np.clip(linear, 0, 1)
    xyz = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 216 / 24389, np.cbrt(xyz), (24389 / 27 * xyz + 16) / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def delta_e(a, b, vision):
    la, lb = (MACHADO[vision] @ _linear(to_rgb(c)) for c in (a, b))
    return float(np.linalg.norm(_lab(la) - _lab(lb)))


def test_the_simulation_reproduces_the_known_confusion():
    """tab10's orange and green, the issue's example, are 4.6 ΔE apart under deuteranopia-
    protanopia (they read as one colour); black and white stay 100 apart."""
    assert min(delta_e("#ff7f0e", "#2ca02c", v) for v in MACHADO) == pytest.approx(4.6, abs=0.1)
    assert delta_e("#000000", "#ffffff", "protanopia") == pytest.approx(100, abs=0.01)


def test_the_palette_is_told_apart():
    colours = [*_style.OKABE_ITO.values(), _style.INDIGO]
    for a, b in itertools.combinations(colours, 2):
        assert min(delta_e(a, b, v) for v in MACHADO) >= 17, (a, b)


def _confusable(fig):
    lines = [(n, line) for n, ax in enumerate(fig.axes) for line in ax.get_lines()]
    bad = []
    for (n1, a), (n2, b) in itertools.combinations(lines, 2):
        if n1 != n2 or to_rgb(a.get_color()) == to_rgb(b.get_color()):
            continue
        if (a.get_linestyle(), a.get_marker()) != (b.get_linestyle(), b.get_marker()):
            continue  # a second cue tells them apart
        worst = min(delta_e(a.get_color(), b.get_color(), v) for v in MACHADO)
        if worst < 10:
            bad.append((a.get_label(), b.get_label(), a.get_color(), b.get_color(), worst))
    return bad


@pytest.mark.parametrize("model", ["Llama-3-8B", "Mixtral-8x7B", "Mistral-7B",
                                   "DeepSeek-V2-Lite"])
@pytest.mark.parametrize("kind", ["roofline", "time", "attention", "phases", "scaling"])
@pytest.mark.parametrize("devices", [["H100-SXM"], ["H100-SXM", "MI300X", "TPU-v5e"]])
def test_no_two_series_read_as_one_under_colour_blindness(model, kind, devices):
    if kind == "scaling" and len(devices) > 1:
        pytest.skip("the scaling figure draws one device")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # weights past a device's memory: drawn all the same
        settings = [setting(h, model) for h in devices]
        fig = plot.figure(kind, settings, prompts=[128, 2048, 8192],
                          batches=[1, 64] if kind in ("roofline", "phases") else [1])
    assert _confusable(fig) == []
