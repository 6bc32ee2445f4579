"""The examples in the package's docstrings are run: each module's ``>>>`` lines give what they
say (pytest collects only under ``tests/``: without this test an example that went stale would
never be seen, as two had been)."""

import doctest
import importlib
import pkgutil

import pytest

import roofline

# every module but the entry points (importing ``roofline.__main__`` runs the command line;
# ``roofline.evaluate.__main__`` writes the shipped forms)
MODULES = sorted(m.name for m in pkgutil.walk_packages(roofline.__path__, "roofline.")
                 if not m.name.endswith(".__main__"))


def test_the_package_has_examples() -> None:
    with_examples = [name for name in MODULES if _examples(importlib.import_module(name))]
    assert len(with_examples) >= 40, with_examples  # 51 modules carry examples today


def _examples(module) -> list[doctest.DocTest]:
    return [t for t in doctest.DocTestFinder().find(module, module.__name__) if t.examples]


@pytest.mark.parametrize("name", MODULES)
def test_examples_hold(name: str) -> None:
    module = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in _examples(module):
        runner.run(test, out=lambda text: None)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} fail"
