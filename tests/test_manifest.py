"""One manifest, one loader: a section per stage, every type checked before any request."""

from __future__ import annotations

from pathlib import Path

import pytest

from procbench.clean import CleanOptions
from procbench.errors import BadInput, InputFileNotFound
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
