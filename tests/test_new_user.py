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


def test_prefill_prints_one_devices_memory(capsys):
    """Weights 2 bytes × 8,030,261,248 parameters, KV cache 2·L·n_kv·H·T·2 bytes (Llama-3-8B:
    32 layers, 8 KV heads of 128), the live activations at their peak (kernel attention: the
    MLP's, residual, input, gate-up, product and down output, (3D + 3F)·T·2 bytes), by hand;
    free = the H100's 80 GB less all three."""
    from roofline import api

    weights, kv = 2 * 8_030_261_248, 2 * 32 * 8 * 128 * 8192 * 2
    table = api.prefill("H100-SXM", "Llama-3-8B", [128, 8192])
    m = table.memory
    assert m["prompt_tokens"] == 8192 and m["weights"] == weights and m["kv_cache"] == kv
    live = (3 * 4096 + 3 * 14336) * 8192 * 2
    assert m["activations"] == live
    assert m["free"] == pytest.approx(80e9 - weights - kv - live)
    assert ("Memory at T = 8,192: weights 16.1 GB + KV cache 1.07 GB + live activations at "
            "their peak (kernel attention's workspace) 906 MB of 80 GB, 62 GB free") in str(table)
    naive = api.prefill("RTX-4090", "Llama-3-8B", 12_000, attention="naive").memory
    # the softmax phase: S and P, n_q heads of T×T scores each, 2 bytes; the residual and the
    # input (2·T·D) and QKV (T·(n_q + 2·n_kv)·H), 2 bytes each
    t = 12_000
    live = 2 * 32 * t * t * 2 + 2 * t * 4096 * 2 + t * 48 * 128 * 2
    assert naive["activations"] == live and naive["free"] < 0  # as the memory warning says
    assert main(["prefill", "--hardware", "H100-SXM", "--model", "Llama-3-70B", "--tp", "8",
                 "--prompt", "8192", "--json"]) == 0
    split = json.loads(capsys.readouterr().out)["memory"]
    assert split["kv_cache"] == 2 * 80 * 8 * 128 * 8192 * 2 / 8  # a device's KV heads


def test_tables_as_csv_hold_what_json_holds(capsys):
    import csv
    import io

    base = ["--hardware", "H100-SXM", "--model", "Llama-3-8B"]
    assert main(["prefill", *base, "--prompt", "128,2048", "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert main(["prefill", *base, "--prompt", "128,2048", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    data = out["results"]
    for point in data:
        mine = [r for r in rows if int(r["prompt_tokens"]) == point["prompt_tokens"]]
        (total,) = [r for r in mine if r["operation"] == "total"]
        assert float(total["time_s"]) == point["time_s"] and total["bound_by"] == point["bound"]
        # the estimate beside the bound on the total row, as JSON gives it
        est = [r for r in out["estimate"]["results"]
               if r["prompt_tokens"] == point["prompt_tokens"]]
        assert float(total["estimate_s"]) == est[0]["time_s"] >= point["time_s"]
        ops = [r for r in mine if r["operation"] != "total"]
        assert [r["operation"] for r in ops] == [o["name"] for o in point["operations"]]
        assert sum(float(r["flops"]) for r in ops) == pytest.approx(point["flops"], rel=1e-12)
    assert main(["crossover", *base, "--csv"]) == 0
    rows = {r["name"]: r for r in csv.DictReader(io.StringIO(capsys.readouterr().out))}
    assert main(["crossover", *base, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["crossovers"]
    assert rows.keys() == data.keys()
    for name, v in data.items():
        assert rows[name]["value"] == ("" if v["value"] is None else repr(v["value"]))
        assert rows[name]["expr"] == v["expr"]
    assert main(["crossover", *base, "--csv", "--json"]) == 2
