"""Issue "Third sweep", what a new user missed: a downloaded config named by what it is, not
"config"; a folder taken as the model; --name."""

import json

import pytest

from roofline.cli import main
from roofline.specs.model import load_model


@pytest.fixture
def download(tmp_path):
    """A model as the Hub's download leaves it: a folder holding config.json."""
    folder = tmp_path / "Meta-Llama-3-8B"
    folder.mkdir()
    config = json.loads(load_model("Llama-3-8B").path.read_text())
    config.pop("_name_or_path", None)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_a_downloaded_config_is_named_by_its_folder_or_its_name_or_path(download):
    assert load_model(download / "config.json").name == "Meta-Llama-3-8B"
    assert load_model(download).name == "Meta-Llama-3-8B"  # the folder itself
    config = json.loads((download / "config.json").read_text())
    config["_name_or_path"] = "meta-llama/Meta-Llama-3-8B-Instruct"
    (download / "config.json").write_text(json.dumps(config))
    assert load_model(download / "config.json").name == "Meta-Llama-3-8B-Instruct"
    other = download / "llama.json"  # a file of another name keeps its own
    other.write_text(json.dumps(config))
    assert load_model(other).name == "llama"


def test_name_reaches_every_title(download, tmp_path, capsys):
    model = str(download)
    for argv in (["prefill", "--prompt", "128"], ["crossover"],
                 ["ttft", "--prompt", "128", "--rate", "1"]):
        assert main([argv[0], "--hardware", "H100-SXM", "--model", model,
                     "--name", "Llama 3 8B (ours)", *argv[1:]]) == 0
        out = capsys.readouterr().out
        assert "Llama 3 8B (ours)" in out.splitlines()[0] and "config" not in out.splitlines()[0]
    figure = tmp_path / "time.svg"
    assert main(["plot", "time", "--hardware", "H100-SXM", "--model", model, "--name", "Ours",
                 "-o", str(figure)]) == 0
    assert "time: Ours on H100-SXM" in figure.read_text()


@pytest.mark.parametrize("name", ["", " ", "a\nb", "x" * 101])
def test_a_bad_name_is_one_line(name, capsys):
    assert main(["prefill", "--hardware", "H100-SXM", "--model", "Llama-3-8B",
                 "--name", name]) == 2
    err = capsys.readouterr().err
    assert err.startswith("roofline: error: --name: must be 1 to 100 printable characters")
    assert err.count("\n") == 1
