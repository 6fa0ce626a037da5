"""The seed tree: named, independent streams; one declaration per name; recorded in every set."""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import shutil
import zlib
from pathlib import Path

import pytest

import procbench
from procbench.corpus.synthetic import write_synthetic_store
from procbench.errors import BadInput
from procbench.generate import Setting, generate, recipes
from procbench.qsets.files import options_fingerprint
from procbench.rng import RNG_VERSION, declared, stream

ROOT = Path(procbench.__file__).parent
#: Modules that may seed numpy themselves: the synthetic store maker draws a store, not a question set.
OWN_SEEDS = {"corpus/synthetic.py", "rng.py"}


def test_every_generation_stream_is_declared_once_and_no_generator_seeds_numpy_itself() -> None:
    for module in pkgutil.walk_packages([str(ROOT / "generate")], prefix="procbench.generate."):
        importlib.import_module(module.name)
    names = declared()
    # generation's own streams, and the fit sample of the probes its adversarial filter fits (procbench.shortcuts)
    owners = ("procbench.generate", "procbench.shortcuts")
    assert len(names) >= 20 and all(m.startswith(owners) for m in names.values()), names
    assert len({zlib.crc32(n.encode("utf-8")) for n in names}) == len(names)  # one code per name
    offenders = []
    for path in sorted((ROOT / "generate").rglob("*.py")):
        relative = str(path.relative_to(ROOT))
        if relative in OWN_SEEDS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) in ("default_rng", "RandomState"):
                offenders.append(f"{relative}:{node.lineno}")
    assert not offenders, f"seed numpy through procbench.rng streams: {offenders}"


def test_a_name_declared_by_a_second_module_is_an_error() -> None:
    stream("tests.rng.example")
    stream("tests.rng.example")  # the same module again (a reload) is the same stream
    scope = {"__name__": "some.other.module", "stream": stream}
    with pytest.raises(ValueError, match="declared twice"):
        exec("stream('tests.rng.example')", scope)  # noqa: S102 - a declaration from another module


def test_streams_are_independent_of_each_other_and_of_neighbouring_seeds() -> None:
    a, b = stream("tests.rng.a"), stream("tests.rng.b")
    draw = lambda s, seed, *keys: s.rng(seed, *keys).integers(0, 2**62, size=4).tolist()  # noqa: E731
    assert draw(a, 3, 1) == draw(a, 3, 1)  # same seed and keys, same stream
    assert draw(a, 3, 1) != draw(b, 3, 1)  # another name
    assert draw(a, 3, 2) != draw(a, 4, 1)  # round r+1 of seed s is not round r of seed s+1 (it was: seed + round)
    assert draw(a, 3) != draw(a, 3, 0)
    assert a.seed(3, 1) == a.seed(3, 1) and 0 <= a.seed(3, 1) < 2**32


def test_every_set_records_the_seed_trees_version(ingested_sample: Path, tmp_path: Path) -> None:
    from procbench.store import Store

    store = Store.open(shutil.copytree(ingested_sample, tmp_path / "store"))
    result = generate(store, "pair-order", seed=1)
    options = json.loads((result.paths["default"] / "options.json").read_text())
    assert options["options"]["rng_version"] == RNG_VERSION == 2
    assert "draw_version" not in options["options"] and "recipe_version" not in options["options"]  # no recipe
    synthetic = write_synthetic_store(tmp_path / "synthetic", n_procedures=12, dim=8, seed=1)
    visual = generate(synthetic, "visual-ordering", Setting("knobs", (0, 1, 2)), seed=1)
    record = json.loads((visual.paths["knobs-012"] / "options.json").read_text())["options"]
    assert record["recipe_version"] == recipes.get("visual-ordering", "rank-uniform").version == 3


def test_a_set_made_by_another_recipe_version_is_not_taken_for_one_made_now(tmp_path: Path) -> None:
    """A set whose ``options.json`` records another recipe version (the same options otherwise) has another
    fingerprint: generating over it is refused, naming the version, until ``--overwrite``."""
    store = write_synthetic_store(tmp_path / "synthetic", n_procedures=12, dim=8, seed=1)
    setting = Setting("knobs", (0, 1, 2))
    path = generate(store, "visual-ordering", setting, seed=1).paths["knobs-012"] / "options.json"
    record = json.loads(path.read_text())
    older = {**record["options"], "recipe_version": 1}
    path.write_text(json.dumps({"fingerprint": options_fingerprint(older), "options": older}))
    with pytest.raises(BadInput, match="recipe_version 1 -> 3"):
        generate(store, "visual-ordering", setting, seed=1)
    generate(store, "visual-ordering", setting, seed=1, overwrite=True)
    assert json.loads(path.read_text()) == record
