"""procbench.registry: names, aliases, "did you mean", lazy entries; and the registries built on it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from procbench.errors import BadInput
from procbench.registry import Registry, load_object


def _registry() -> Registry[object]:
    reg: Registry[object] = Registry("widget", normalise=lambda name: name.lower().replace("_", "-"))
    reg.add("colour-layout", "fractions:Fraction", aliases=("color-layout",))
    reg.add("hashed", 3, aliases=("hashed-tfidf",))
    return reg


def test_aliases_and_normalised_names_find_the_canonical_entry() -> None:
    reg = _registry()
    assert reg.canonical("Color_Layout") == "colour-layout"
    assert reg.canonical("HASHED-TFIDF") == "hashed"
    assert reg.get("hashed_tfidf") == 3
    assert "color-layout" in reg and "colour" not in reg and 3 not in reg
    assert reg.names() == ["colour-layout", "hashed"] == list(reg)  # no aliases, registration order
    assert reg.find("nothing") is None
    with pytest.raises(KeyError):
        reg["nothing"]


def test_unknown_name_suggests_the_closest_canonical_names() -> None:
    reg = _registry()
    with pytest.raises(BadInput) as caught:
        reg.get("hashd")
    message = str(caught.value)
    assert message == "unknown widget 'hashd'; did you mean 'hashed'? (available: colour-layout, hashed)"
    # A near miss of an alias suggests the name it stands for, once.
    assert "did you mean 'colour-layout'?" in reg.unknown("colr-layout")
    assert "did you mean" not in reg.unknown("zzzz") and "available: colour-layout, hashed" in reg.unknown("zzzz")


def test_lazy_entries_load_on_first_use_and_once() -> None:
    from fractions import Fraction

    reg = _registry()
    assert reg.get("colour-layout") is Fraction
    assert reg.values() == [Fraction, 3]
    assert reg.items() == [("colour-layout", Fraction), ("hashed", 3)]
    assert load_object("os.path:join.__name__") == "join"  # attributes of attributes
    with pytest.raises(ValueError, match="module:object"):
        load_object("os.path")


def test_a_taken_name_or_alias_is_refused() -> None:
    reg = _registry()
    with pytest.raises(ValueError, match="already registered"):
        reg.add("Hashed", 4)
    with pytest.raises(ValueError, match="already registered"):
        reg.add("new", 4, aliases=("color_layout",))
    assert reg.names() == ["colour-layout", "hashed"]

    @reg.register("decorated", aliases=("deco",))
    def fn() -> int:
        return 1

    assert reg.get("deco") is fn


def test_naming_every_registry_imports_nothing_heavy() -> None:
    """Listing tasks, models, probes' names, encoders and sources (and resolving a task or model) must not
    import torch, scikit-learn, FAISS or a task's generator: ``procbench --help`` and bad-input errors stay
    fast."""
    code = textwrap.dedent(
        """
        import sys
        from procbench.tasks import TASKS, get_task
        from procbench.models.registry import MODELS, get_model
        from procbench.embed.registry import ENCODERS
        from procbench.scrape.web import SOURCES
        names = [TASKS.names(), MODELS.names(), ENCODERS.names(), SOURCES.names()]
        assert get_task("visual_cloze").name == "visual-cloze" and get_task("sequencing").family == "sequencing"
        assert get_model("htrn").trained and not get_model("chance").trained
        heavy = ("torch", "sklearn", "faiss", "sentence_transformers", "procbench.generate",
                 "procbench.models.nets", "procbench.scrape.instructables")
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in heavy or m.startswith(heavy))
        print(loaded)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_every_task_spec_loads_its_builder_and_sweep() -> None:
    from procbench.generate import Setting
    from procbench.tasks import FAMILIES, TASKS

    assert TASKS.names() == [
        "sequencing",
        "pair-order",
        "textual-cloze",
        "next-action",
        "visual-cloze",
        "visual-coherence",
        "visual-ordering",
    ]
    for spec in TASKS.values():
        assert spec.family in FAMILIES and spec.items in ("text", "image", "step")
        assert callable(spec.builder())
        sweep = spec.sweep()
        assert sweep and all(isinstance(s, Setting) for s in sweep)
    # the paper's knob settings, then the rank-uniform K3=2 ones, then adversarial (and needs-context but for ordering)
    paper = [f"knobs-{k1}{k2}{k3}" for k1 in "01" for k2 in "01" for k3 in "01"]
    uniform = ["knobs-002", "knobs-012", "knobs-102", "knobs-112"]
    for task in ("visual-cloze", "visual-coherence"):
        assert [s.name for s in TASKS.get(task).sweep()] == [*paper, *uniform, "adversarial", "needs-context"]
    assert [s.name for s in TASKS.get("visual-ordering").sweep()] == [
        *(name for name in paper if name.endswith("0")),
        *uniform,
        "adversarial",
    ]


def test_every_trained_model_builds_through_its_factory() -> None:
    from procbench.models.config import TrainConfig
    from procbench.models.nets import Net, build_net
    from procbench.models.registry import MODELS

    dims = {"item": 8, "context": 8, "procedure": 8}
    hp = TrainConfig("hasty", hidden=8, heads=2).resolved()
    trained = [spec.name for spec in MODELS.values() if spec.trained]
    assert trained == [
        "hasty-choice-only",
        "hasty",
        "impatient-reader",
        "bidaf",
        "htrn",
        "pair-order",
        "pairwise-sort",
        "order-pointer",
    ]
    for name in trained:
        assert isinstance(build_net(name, dims, hp), Net)
    with pytest.raises(BadInput, match="not a trained model"):
        build_net("chance", dims, hp)
    with pytest.raises(BadInput, match="multiple of --heads"):
        build_net("htrn", dims, hp | {"heads": 3})


def test_the_cli_help_names_every_trained_model() -> None:
    """``procbench train --help`` lists the models as a literal (importing the registry at --help is avoided);
    it must stay the registry's list."""
    import re

    from procbench.cli.train import _MODELS
    from procbench.models.registry import MODELS

    listed = re.findall(r"[a-z][a-z-]+", re.sub(r"\(.*?\)", "", _MODELS))
    assert sorted(listed) == sorted(spec.name for spec in MODELS.values() if spec.trained)


def test_recipeqa_names_come_from_the_task_specs() -> None:
    from procbench.formats.recipeqa import QUESTION_TEXT, VISUAL_TASKS
    from procbench.tasks import TASKS

    assert sorted(VISUAL_TASKS) == ["visual-cloze", "visual-coherence", "visual-ordering"]
    assert QUESTION_TEXT["visual-coherence"] == "Select the incoherent image in the following sequence of images."
    assert set(QUESTION_TEXT) == set(TASKS.names()) and all(QUESTION_TEXT.values())
