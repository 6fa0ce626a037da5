"""One manifest, one loader: a section per stage, every type checked before any request."""

from __future__ import annotations

from pathlib import Path

import pytest

from procbench.clean import CleanOptions
from procbench.errors import BadInput, InputFileNotFound
from procbench.generate.options import PairOrderOptions, SequencingOptions, TextualClozeOptions, VisualClozeOptions
from procbench.generate.settings import Setting
from procbench.manifest import MAX_BYTES_CEILING, load_manifest
from procbench.scrape import HttpConfig

REPO = Path(__file__).resolve().parents[1]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "m.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_manifests_in_the_repository_are_valid() -> None:
    paths = sorted((REPO / "manifests").glob("*.toml"))
    names = {p.stem for p in paths}
    assert {"woodworkqa", "decorationqa"} <= names and len(paths) >= 5
    for path in paths:
        manifest = load_manifest(path)
        assert manifest.version == 2 and manifest.scrape is not None and manifest.clean is not None
        assert manifest.scrape.filters.min_steps == 3 and manifest.scrape.filters.max_steps == 25
        assert manifest.scrape.filters.language == "en" and manifest.scrape.limit
        assert manifest.clean_options().languages == ("en",)
    wood = load_manifest(REPO / "manifests" / "woodworkqa.toml")
    assert wood.scrape is not None and wood.scrape.source == "instructables"
    assert set(wood.scrape.categories) == {
        "workshop/furniture",
        "workshop/shelves",
        "workshop/woodworking",
        "workshop/workbenches",
    }
    options = load_manifest(REPO / "manifests" / "wikihow-home-and-garden.toml").scrape_options(limit=7)
    assert options.http.min_interval == 3.0 and options.limit == 7 and options.manifest == "wikihow-home-and-garden"


def test_one_manifest_drives_scrape_and_clean(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        'version = 2\nname = "both"\n[scrape]\nsource = "wikihow"\ncategories = ["Shelving"]\nlimit = 5\n'
        '[scrape.filters]\nlanguage = "any"\n[scrape.http]\nmin_interval = 0.5\nmax_bytes = 1000\n'
        '[clean]\nmin_steps = 1\nlanguages = ["en", "fr"]\n',
    )
    manifest = load_manifest(path)
    options = manifest.scrape_options(http=HttpConfig(min_interval=2.0))
    assert options.source == "wikihow" and options.categories == ("Shelving",) and options.limit == 5
    assert options.filters.language is None
    assert options.http.min_interval == 2.0  # a manifest slows requests down, never speeds them up
    assert options.http.max_bytes == 1000
    assert manifest.clean_options() == CleanOptions(min_steps=1, languages=("en", "fr"))


def test_clean_only_and_version_1_manifests(tmp_path: Path) -> None:
    clean_only = load_manifest(write(tmp_path, "[clean]\nmin_steps = 4\n"))
    assert clean_only.scrape is None and clean_only.clean_options().min_steps == 4
    with pytest.raises(BadInput, match=r"no \[scrape\] section"):
        clean_only.scrape_options()
    old = load_manifest(
        write(
            tmp_path,
            'version = 1\nsource = "instructables"\ncategories = ["cooking"]\n[filters]\nmin_steps = 4\n'
            "[http]\nmin_interval = 2\n[clean]\nmax_steps = 9\n",
        )
    )
    assert (
        old.scrape is not None and old.scrape.filters.min_steps == 4 and dict(old.scrape.http) == {"min_interval": 2.0}
    )
    assert old.clean_options().max_steps == 9
    assert load_manifest(write(tmp_path, "")).clean_options() == CleanOptions()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[clean]\nminimum_steps = 1\n", r"unknown key\(s\) minimum_steps in \[clean\]"),
        ('[scrape]\nsource = "wikihow"\ncategories = ["X"]\ncolour = 1\n', r"colour in \[scrape\]"),
        ('[scrape]\nsource = "wikihow"\ncategories = ["X"]\n[scrape.http]\nspeed = 1\n', r"speed in \[scrape.http\]"),
        ("[generator]\nx = 1\n", "generator in the top level"),
        ('[scrape]\nsource = "wikihow"\ncategories = ["X"]\n[scrape.http]\nmin_interval = "1"\n', "a string"),
        ('[scrape]\nsource = "wikihow"\ncategories = ["X"]\n[scrape.http]\nmax_retries = 1.5\n', "an integer"),
        ('[scrape]\nsource = "wikihow"\ncategories = ["X"]\n[scrape.http]\nread_timeout = nan\n', "finite"),
        ('[scrape]\nsource = "wikihow"\ncategories = ["X"]\n[scrape.http]\nmax_bytes = 999999999999\n', "between"),
        ('[scrape]\nsource = "wikihow"\ncategories = ["X"]\n[scrape.filters]\nmin_steps = "3"\n', "integer"),
        ('[scrape]\nsource = "wikihow"\ncategories = ["X"]\n[scrape.filters]\nlanguage = 5\n', "string"),
        ('[scrape]\nsource = "wikihow"\ncategories = ["X"]\n[scrape.filters]\nrequire_images = 1\n', "true or"),
        ('[scrape]\nsource = "wikihow"\ncategories = ["X"]\nlimit_per_category = -1\n', "at least 1"),
        ('[scrape]\nsource = "wikihow"\ncategories = "X"\n', "list of strings"),
        ('[scrape]\nsource = "gopher"\ncategories = ["X"]\n', "unknown source"),
        ('[scrape]\nsource = "wikihow"\n', "categories or urls"),
        ("scrape = 3\n", "must be a table"),
        ("[clean]\nmin_steps = true\n", r"\[clean\].*min_steps"),
        ("version = 99\n", "version 99"),
        ("[clean\n", "not valid TOML"),
    ],
)
def test_bad_manifests_are_one_line_bad_input(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(BadInput, match=message) as caught:
        load_manifest(write(tmp_path, text))
    assert "\n" not in str(caught.value).strip()


def test_missing_manifest(tmp_path: Path) -> None:
    with pytest.raises(InputFileNotFound):
        load_manifest(tmp_path / "nope.toml")


def test_max_bytes_cannot_lift_the_cap(tmp_path: Path) -> None:
    path = write(
        tmp_path, f'[scrape]\nsource = "wikihow"\nurls = ["x"]\n[scrape.http]\nmax_bytes = {MAX_BYTES_CEILING}\n'
    )
    assert load_manifest(path).scrape_options(http=HttpConfig(max_bytes=1000)).http.max_bytes == 1000


# -- [generate.TASK] ----------------------------------------------------------------------------------------------
def test_generate_sections_load_as_typed_options(tmp_path: Path) -> None:
    (tmp_path / "refs.jsonl").write_text('{"procedure_id": "s:a", "orders": [[1, 0, 2]]}\n', encoding="utf-8")
    path = write(
        tmp_path,
        '[generate.textual-cloze]\nsetting = "adversarial"\nseed = 3\nsplit_by = "category:2"\nmin_yield = 0.9\n'
        "knn_k = 50\nsplit_ratios = [0.6, 0.2, 0.2]\n"
        '[generate.visual_cloze]\nknobs = [0, 1, 2]\nkc = 20\npolicy = "demo"\nceiling = 1\n'
        '[generate.sequencing]\nreferences = "refs.jsonl"\nmin_steps = 4\n'
        "[generate.pair-order]\nsweep = true\nadjacent = true\n",
    )
    manifest = load_manifest(path)
    assert list(manifest.generate) == ["textual-cloze", "visual-cloze", "sequencing", "pair-order"]
    textual, visual, sequencing, pairs = manifest.generate_sections()
    assert textual.setting == Setting("adversarial") and not textual.sweep
    assert textual.options == TextualClozeOptions(
        seed=3, split_by="category:2", min_yield=0.9, knn_k=50, split_ratios=(0.6, 0.2, 0.2)
    )
    assert visual.setting == Setting("knobs", (0, 1, 2))
    assert visual.options == VisualClozeOptions(kc=20, policy="demo", ceiling=1.0)
    assert isinstance(visual.options.ceiling, float)
    assert sequencing.setting is None and sequencing.options.references == {"s:a": [[1, 0, 2]]}
    assert sequencing.options == SequencingOptions(min_steps=4, references={"s:a": [[1, 0, 2]]})
    assert pairs.sweep and pairs.options == PairOrderOptions(adjacent=True)
    assert manifest.generate_sections("visual_cloze") == [visual]
    # the options' JSON is a section that loads back as the same options
    again = write(
        tmp_path, "[generate.textual-cloze]\n" + "".join(_toml(k, v) for k, v in textual.options.to_dict().items())
    )
    assert load_manifest(again).generate_sections("textual-cloze")[0].options == textual.options
    with pytest.raises(BadInput, match=r"has no \[generate.next-action\] section"):
        manifest.generate_sections("next-action")
    with pytest.raises(BadInput, match=r"no \[generate.TASK\] section"):
        load_manifest(write(tmp_path, "[clean]\n")).generate_sections()


def _toml(key: str, value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return f"{key} = {str(value).lower()}\n"
    return f"{key} = {value!r}\n".replace("'", '"')


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[generate.textual-cloze]\nminyield = 0.9\n", r"unknown key\(s\) minyield in \[generate.textual-cloze\]"),
        ("[generate.visual-ordering]\nkc = 5\n", r"unknown key\(s\) kc in \[generate.visual-ordering\]"),
        ("[generate.textual-cloze]\nmin_yield = '0.9'\n", r"\[generate.textual-cloze\] min_yield must be a number"),
        ("[generate.textual-cloze]\nrounds = 2.5\n", "rounds must be an integer, not a number"),
        ("[generate.pair-order]\nadjacent = 1\n", "adjacent must be true or false"),
        ("[generate.textual-cloze]\nmin_yield = 2\n", r"\[generate.textual-cloze\]: --min-yield must be a share"),
        ("[generate.textual-cloze]\nsplit_ratios = [1, 1, 1]\n", "split ratios must be three non-negative numbers"),
        ("[generate.textual-cloze]\nsplit_ratios = 1\n", "split_ratios must be a list"),
        ("[generate.visual-cloze]\nknobs = [0, 1, 5]\n", r"\[generate.visual-cloze\]: --knobs takes K1,K2,K3"),
        ("[generate.visual-cloze]\nsetting = 'hardest'\n", "unknown setting 'hardest'"),
        ("[generate.visual-cloze]\nsetting = 'default'\nsweep = true\n", "one of setting, knobs and sweep"),
        ("[generate.texual-cloze]\nseed = 1\n", r"unknown task 'texual-cloze'.*in \[generate\]"),
        ("[generate]\nseed = 1\n", r"unknown task 'seed'"),
        ("[generate.textual-cloze]\nseed = -1\n", "--seed must be an integer from 0"),
        ("[generate.sequencing]\nreferences = 'nope.jsonl'\n", "no such references file"),
    ],
)
def test_bad_generate_sections_are_one_line_bad_input(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(BadInput, match=message) as caught:
        load_manifest(write(tmp_path, text))
    assert "\n" not in str(caught.value).strip() and str(tmp_path) in str(caught.value)
