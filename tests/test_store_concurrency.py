"""Two writers at once never lose a write: for every pair of store writers, the second one to commit either
read under the lock or finds the store changed and writes nothing (issue 15, defect 1)."""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest
from fixtures.scrape_site import FakeClock, FakeSite, fixture
from typer.testing import CliRunner

from procbench.clean import clean_store
from procbench.cli import app
from procbench.embed import embed_store
from procbench.errors import BadInput, StoreChanged, StoreLocked, StoreReadOnly
from procbench.generate import generate
from procbench.ingest import ingest_file
from procbench.scrape import HttpConfig, ScrapeOptions, scrape
from procbench.store import Store

from helpers import make_record, write_jsonl

ARTICLE = "Build-a-Floating-Shelf"
Writer = Callable[[Path], Any]


@pytest.fixture(scope="module")
def site() -> Iterator[FakeSite]:
    with FakeSite() as served:
        served.page("/robots.txt", "User-agent: *\nAllow: /\n", "text/plain")
        served.page(f"/{ARTICLE}", fixture(f"wikihow/{ARTICLE}.html"))
        yield served


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("base") / "store"
    records = [make_record(f"base-{i}", n_steps=4 + i % 3) for i in range(8)]
    ingest_file(Store.open(root, create=True), write_jsonl(root.parent / "base.jsonl", records))
    return root


def writers(site: FakeSite, tmp: Path, tag: str) -> dict[str, tuple[Writer, Callable[[Store], bool]]]:
    """Each writer, and a check that its change is in a store."""
    counter = itertools.count()
    ingested: list[str] = []

    def ingest(root: Path) -> None:
        slug = f"{tag}-{next(counter)}"
        ingested.append(f"test:{slug}")
        ingest_file(root, write_jsonl(tmp / f"{slug}.jsonl", [make_record(slug)]))

    def ingested_ok(store: Store) -> bool:
        ids = set(store.table("procedures", ["id"])["id"].to_pylist())
        return bool(ingested) and ingested[-1] in ids

    def scrape_one(root: Path) -> None:
        options = ScrapeOptions(
            "wikihow",
            urls=(f"https://www.wikihow.com/{ARTICLE}",),
            base_url=site.url,
            images=False,
            http=HttpConfig(contact="t@example.org"),
        )
        scrape(root, options, clock=FakeClock())

    return {
        "ingest": (ingest, ingested_ok),
        "scrape": (
            scrape_one,
            lambda s: f"wikihow:{ARTICLE}" in s.table("procedures", ["id"])["id"].to_pylist(),
        ),
        "clean": (lambda root: clean_store(root), lambda s: "keep" in s.columns("procedures")),
        "embed": (
            lambda root: embed_store(root, text_encoder="hashed", fields="step_text"),
            lambda s: any((s.root / "embeddings").glob("*.arrow")),
        ),
        "generate": (
            lambda root: generate(Store.open(root), "sequencing", seed=1),
            lambda s: (s.root / "questions" / "sequencing" / "default").is_dir(),
        ),
    }


def consistent(store: Store) -> None:
    """Every step and image belongs to a procedure, and the summary reads (defect 1 broke `info`)."""
    ids = store.table("procedures", ["id"])["id"]
    for name in ("steps", "images"):
        owners = store.table(name, ["procedure_id"])["procedure_id"]
        assert pc.all(pc.is_in(owners, value_set=ids)).as_py() in (True, None), name
    store.summary()


NAMES = ("ingest", "scrape", "clean", "embed", "generate")


@pytest.mark.parametrize(("first", "second"), list(itertools.product(NAMES, NAMES)))
def test_a_writer_never_overwrites_a_commit_made_while_it_worked(
    first: str, second: str, base: Path, site: FakeSite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``second`` commits after ``first`` has opened and read the store, before ``first`` commits; then
    ``second`` tries again while ``first`` holds the write lock."""
    root = tmp_path / "store"
    shutil.copytree(base, root)
    _race(first, second, root, site, tmp_path, monkeypatch)


@pytest.mark.parametrize(("first", "second"), list(itertools.product(("ingest", "scrape", "clean"), repeat=2)))
def test_part_layout_appends_and_rewrites_are_serialised_too(
    first: str, second: str, base: Path, site: FakeSite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same race on a store whose tables are part-files (appends add parts, clean rewrites them)."""
    from procbench.store.layout import set_layout

    root = tmp_path / "store"
    shutil.copytree(base, root)
    set_layout(Store.open(root), "parts", part_rows=10)
    _race(first, second, root, site, tmp_path, monkeypatch)
    store = Store.open(root)
    assert store.table_layout("procedures") == store.table_layout("steps") == "parts"


def _race(
    first: str, second: str, root: Path, site: FakeSite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_first, first_done = writers(site, tmp_path, "first")[first]
    run_second, second_done = writers(site, tmp_path, "second")[second]
    original = Store.transaction
    events: list[str] = []

    @contextlib.contextmanager
    def interleaved(self: Store, command: str, **kwargs: Any) -> Iterator[Any]:
        if not events:
            events.append("second commits before first's transaction")
            run_second(root)
            with original(self, command, **kwargs) as txn:
                events.append("second while first holds the lock")
                with pytest.raises(StoreLocked):
                    run_second(root)
                yield txn
        else:
            with original(self, command, **kwargs) as txn:
                yield txn

    monkeypatch.setattr(Store, "transaction", interleaved)
    try:
        run_first(root)
        first_committed = True
    except StoreChanged as exc:
        assert "nothing was written" in str(exc) and "\n" not in str(exc)
        first_committed = False
    monkeypatch.setattr(Store, "transaction", original)
    assert events[0].startswith("second commits")
    store = Store.open(root)
    assert second_done(store), f"{first} lost the commit of {second}"
    consistent(store)
    if first_committed:
        assert first_done(store)
    else:  # a re-run now succeeds and keeps both
        run_first(root)
        store = Store.open(root)
        assert first_done(store) and second_done(store)
        consistent(store)


def test_a_read_only_store_is_read_without_a_lock(base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every reader works on a store it cannot write (tests may run as root, so writes are refused by
    patching os.open); writers fail with one line and exit 2."""
    root = tmp_path / "ro"
    shutil.copytree(base, root)
    (root / ".txn" / "left-by-a-killed-writer").mkdir(parents=True)  # makes open() try to recover
    new = write_jsonl(tmp_path / "x.jsonl", [make_record("read-only")])
    real_open = os.open

    def refuse_writes(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse_writes)
    store = Store.open(root)
    assert store.summary()["procedures"] == 8
    with pytest.raises(StoreReadOnly, match="read-only"), store.transaction("x"):
        pass
    runner = CliRunner()
    info = runner.invoke(app, ["info", "--store", str(root), "--json"])
    assert info.exit_code == 0, info.output
    ingest = runner.invoke(app, ["ingest", str(new), "--store", str(root)])
    assert ingest.exit_code == 2 and "read-only" in ingest.output
    assert len(ingest.output.strip().splitlines()) == 1


def test_a_killed_image_write_is_cleaned_and_links_out_of_the_store_are_not_followed(
    base: Path, tmp_path: Path
) -> None:
    root = tmp_path / "store"
    shutil.copytree(base, root)
    partial = root / "images" / ".partial"
    partial.mkdir(parents=True)
    (partial / ".abc.jpg.x1y2.tmp").write_bytes(b"half an image")  # what kill -9 mid-write leaves
    outside = tmp_path / "elsewhere" / "task" / "setting"
    outside.mkdir(parents=True)
    (root / "questions").mkdir()
    (root / "questions" / "task").symlink_to(outside.parent)
    store = Store.open(root)
    assert not any(partial.iterdir())  # cleaned on open, before any write
    assert "question_sets" not in store.summary()["stages"]
    ingest_file(store, write_jsonl(tmp_path / "n.jsonl", [make_record("after-crash")]))
    # a `questions` folder that is itself a link out of the store is neither read nor written through
    shutil.rmtree(root / "questions")
    (root / "questions").symlink_to(outside.parent.parent)
    store = Store.open(root)
    assert "question_sets" not in store.summary()["stages"]
    with pytest.raises(BadInput, match="outside the store through a link"):
        generate(store, "pair-order")
    assert sorted(p.name for p in outside.parent.parent.rglob("*")) == ["setting", "task"]
    assert not (root / ".txn").is_dir() or not any((root / ".txn").iterdir())
    runner = CliRunner()
    afile = tmp_path / "afile"
    afile.write_text("not a store", encoding="utf-8")
    result = runner.invoke(app, ["ingest", str(tmp_path / "n.jsonl"), "--store", str(afile)])
    assert result.exit_code == 2 and "is a file, not a procbench store" in result.output
