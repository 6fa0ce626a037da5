"""Photo corpora unlike the build guides (issue 35): variants written from the build guides' photos, and the
user's pipeline run on each of them through the CLI, recording what breaks or misleads.

Run by hand (it reads ``../shared``; never in tests):

    python benchmarks/photo_corpora.py --out DIR [--variants cooking,repair,mixed,few,large] [--large 600] [--no-run]

Each variant is ``DIR/VARIANT/procedures.jsonl`` with its ``images/`` (paths relative to the file), derived
deterministically (seed 0) from ``/work/shared/data/build-guides`` (``--source``):

- ``cooking``: the 35 guides regrouped into 2 categories; about a quarter of the steps get 1-2 extra photos
  (PIL edits of the step's photo: a crop, a mirror, a colour shift), a fifth of the steps lose their photo;
  step texts numbered ``Step N:`` and titles numbered ``N.``; unicode procedure titles; markdown kept.
- ``repair``: many short guides (each build guide cut into pieces of 3-5 steps), 5 categories of very
  different sizes, about half of the steps without a photo, texts numbered ``N.``/``N)``, a photo shown
  on two consecutive steps of a guide, and one photo shared by two guides.
- ``mixed``: guides cut into pieces of 3-12 steps (some long enough for the knobs' 5 image steps), a quarter
  of the steps without a photo, a fifth with 1-2 extra photos, ``Step N -`` numbering, 8 categories, and
  8 photos re-encoded (90% size, JPEG quality 60) into a step of another guide (``NEAR_COPIES``).
- ``few``: 6 guides in 3 categories (two each): too few procedures for most settings.
- ``large``: ``--large N`` (default 600) guides of 5-9 steps, each step a random step of the build guides with a
  fresh edit of its photo (a crop of 55-90%, mirrored half the time, a small rotation, a colour shift), 12
  categories: a corpus the size of a real site's section, for the time and memory of every command (each step's
  peak RSS is in ``run.json``). Its photos are edits of 235, so what the probes read on it says nothing about real
  photos. Only when asked for (``--variants large``): the run takes about half an hour on 2 cores.

Every variant but ``few`` also gets the odd files of real corpora: a PNG with alpha, a
palette PNG, a greyscale JPEG, a 16-bit greyscale PNG, a CMYK JPEG, a JPEG with an EXIF rotation, a tiny
(12x9) photo, a very large one (7000x5000), a truncated JPEG, a text file named ``.jpg``, a missing path, a
zero-byte file and a byte-identical copy of a photo under another name (``ODD_FILES``).

Then, unless ``--no-run``, as a user would: ``procbench ingest`` -> ``clean`` -> ``embed -t minilm-offline -i
efficientnet-lite0`` -> ``generate --task T --sweep`` for the three visual tasks -> ``audit`` of every set ->
``report``, each in a child process of this checkout (``PYTHONPATH``). Every command's exit code, the tail of
its stderr, its ``--json`` summary, wall and CPU seconds and peak RSS go to ``DIR/VARIANT/run.json``;
``DIR/summary.md`` has, per variant and task, the questions made per setting and what was skipped and why.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from _common import ROOT

SOURCE = Path("/work/shared/data/build-guides")
TASKS = ("visual-cloze", "visual-coherence", "visual-ordering")
VARIANTS = ("cooking", "repair", "mixed", "few", "large")
#: The odd image files every variant gets, by name: what each is.
ODD_FILES = {
    "alpha.png": "RGBA PNG, half transparent",
    "palette.png": "palette (P) PNG with a transparent colour",
    "grey.jpg": "greyscale (L) JPEG",
    "grey16.png": "16-bit greyscale (I;16) PNG",
    "cmyk.jpg": "CMYK JPEG",
    "rotated.jpg": "JPEG with EXIF orientation 6 (shown rotated 90 degrees)",
    "tiny.jpg": "12 x 9 pixels",
    "large.jpg": "7000 x 5000 pixels",
    "truncated.jpg": "the first 40% of a JPEG's bytes",
    "notanimage.jpg": "a text file named .jpg",
    "empty.jpg": "zero bytes",
    "copy.jpg": "a byte-identical copy of another photo of the corpus",
    "missing.jpg": "named in the JSONL, not on disk",
}
#: Photos of the ``mixed`` variant re-encoded into a step of another guide.
NEAR_COPIES = 8
UNICODE_TITLES = ["Crème brûlée — step by step", "Schnitzel & Spätzle ①②③", "寿司の作り方", "Ratatouille (é, ü, ñ) 🍅"]


def _load(source: Path) -> list[dict[str, Any]]:
    with open(source / "procedures.jsonl", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _edit(src: Path, dst: Path, rng: random.Random, crop: tuple[float, float] = (0.7, 0.9), turn: float = 0.0) -> None:
    """An "extra photo" of a step: a crop of 70-90% (``crop``), mirrored half the time, turned up to ``turn``
    degrees, with a colour shift."""
    from PIL import Image, ImageEnhance, ImageOps

    with Image.open(src) as opened:
        im = opened.convert("RGB")
        if turn:
            im = im.rotate(rng.uniform(-turn, turn), resample=Image.Resampling.BILINEAR)
        w, h = im.size
        f = rng.uniform(*crop)
        cw, ch = int(w * f), int(h * f)
        x, y = rng.randint(0, w - cw), rng.randint(0, h - ch)
        out = im.crop((x, y, x + cw, y + ch))
        if rng.random() < 0.5:
            out = ImageOps.mirror(out)
        out = ImageEnhance.Color(out).enhance(rng.uniform(0.6, 1.4))
        out = ImageEnhance.Brightness(out).enhance(rng.uniform(0.8, 1.2))
        out.save(dst, "JPEG", quality=88)


def _odd_files(images: Path, photo: Path) -> None:
    """Write :data:`ODD_FILES` (all but ``missing.jpg``) into ``images``, from one real photo."""
    from PIL import Image

    with Image.open(photo) as im:
        rgb = im.convert("RGB")
    rgba = rgb.convert("RGBA")
    alpha = Image.new("L", rgb.size, 255)
    alpha.paste(0, (0, 0, rgb.size[0] // 2, rgb.size[1]))
    rgba.putalpha(alpha)
    rgba.save(images / "alpha.png")
    pal = rgb.rotate(180).convert("P", palette=Image.Palette.ADAPTIVE, colors=64)
    pal.info["transparency"] = 0
    pal.save(images / "palette.png", transparency=0)
    rgb.transpose(Image.Transpose.FLIP_TOP_BOTTOM).convert("L").save(images / "grey.jpg", quality=90)
    grey = np.asarray(rgb.transpose(Image.Transpose.FLIP_LEFT_RIGHT).convert("L"), dtype=np.uint16)
    Image.fromarray(grey * 257).save(images / "grey16.png")  # 16 bits: 0-65535
    rgb.rotate(90, expand=True).convert("CMYK").save(images / "cmyk.jpg", quality=90)
    exif = Image.Exif()
    exif[0x0112] = 6
    rgb.crop((0, 0, rgb.size[0], rgb.size[1] * 3 // 4)).save(images / "rotated.jpg", quality=90, exif=exif)
    rgb.resize((12, 9)).save(images / "tiny.jpg", quality=90)
    rgb.resize((7000, 5000)).save(images / "large.jpg", quality=70)
    data = (photo).read_bytes()
    (images / "truncated.jpg").write_bytes(data[: int(len(data) * 0.4)])
    (images / "notanimage.jpg").write_text("this is not an image\n")
    (images / "empty.jpg").write_bytes(b"")


def _copy_photo(source: Path, rel: str, images: Path) -> str:
    name = Path(rel).name
    if not (images / name).exists():
        shutil.copyfile(source / rel, images / name)
    return f"images/{name}"


def _step_photos(
    source: Path, step: dict[str, Any], out: Path, rng: random.Random, *, dropped: float, tag: str
) -> list[str]:
    """A step's photos copied under ``out/images``: none with probability ``dropped``, else, up to 0.45, one or
    two edited copies of its first photo added (``extra-TAG-K.jpg``)."""
    images = out / "images"
    photos = [_copy_photo(source, p, images) for p in step.get("images") or []]
    roll = rng.random()
    if roll < dropped:
        return []
    if roll < 0.45 and photos:
        for k in range(rng.choice((1, 2))):
            name = f"extra-{tag}-{k}.jpg"
            _edit(out / photos[0], images / name, rng)
            photos.append(f"images/{name}")
    return photos


def cooking(guides: list[dict[str, Any]], source: Path, out: Path, rng: random.Random) -> list[dict[str, Any]]:
    cats = (["Desserts"], ["Soups and Stews"])
    procs: list[dict[str, Any]] = []
    for g, guide in enumerate(guides):
        steps = []
        for s, step in enumerate(guide["steps"], 1):
            photos = _step_photos(source, step, out, rng, dropped=0.2, tag=f"{g}-{s}")
            text = step.get("text") or ""
            title = step.get("title")
            steps.append(
                {
                    "title": f"{s}. {title}" if title else None,
                    "text": f"Step {s}: {text}" if text else text,
                    "images": photos,
                }
            )
        title = UNICODE_TITLES[g] if g < len(UNICODE_TITLES) else guide["title"]
        procs.append(
            {
                "source": "cooking",
                "id": f"c{g}",
                "title": title,
                "category": [*cats[g % 2], guide["title"]],
                "license": guide.get("license"),
                "steps": steps,
            }
        )
    return procs


def repair(guides: list[dict[str, Any]], source: Path, out: Path, rng: random.Random) -> list[dict[str, Any]]:
    images = out / "images"
    sources = sorted({g["source"] for g in guides})
    procs: list[dict[str, Any]] = []
    for guide in guides:
        steps = guide["steps"]
        i = 0
        while i < len(steps):
            n = rng.randint(3, 5)
            piece = steps[i : i + n]
            i += n
            if len(piece) < 3:
                break
            out_steps = []
            last: list[str] = []
            for s, step in enumerate(piece, 1):
                photos = [_copy_photo(source, p, images) for p in step.get("images") or []]
                roll = rng.random()
                if roll < 0.45:
                    photos = []
                elif roll < 0.55 and last:
                    photos = list(last)  # the photo of the step before, shown again
                last = photos
                fmt = rng.choice(("{n}. {t}", "{n}) {t}", "{t}"))
                out_steps.append(
                    {"title": step.get("title"), "text": fmt.format(n=s, t=step.get("text") or ""), "images": photos}
                )
            procs.append(
                {
                    "source": "repair",
                    "id": f"r{len(procs)}",
                    "title": f"Fix: {guide['title']} (part {len(procs)})",
                    "category": ["Repair", f"{guide['source'].title()} repairs"],
                    "license": guide.get("license"),
                    "steps": out_steps,
                }
            )
    # one photo in two guides
    a = next(p for p in procs if any(st["images"] for st in p["steps"]))
    b = procs[-1]
    shared = next(st["images"][0] for st in a["steps"] if st["images"])
    b["steps"][0]["images"] = [shared]
    assert len(sources) >= 2
    return procs


def mixed(guides: list[dict[str, Any]], source: Path, out: Path, rng: random.Random) -> list[dict[str, Any]]:
    """Guides of 3-12 steps (some long enough for the knobs, most not), a quarter of the steps without a photo,
    a fifth with 1-2 extra photos, ``Step N -`` numbering, 8 categories of uneven size."""
    procs: list[dict[str, Any]] = []
    for g, guide in enumerate(guides):
        steps = guide["steps"]
        i = 0
        while len(steps) - i >= 3:
            piece = steps[i : i + rng.randint(3, 12)]
            i += len(piece)
            out_steps = []
            for s, step in enumerate(piece, 1):
                photos = _step_photos(source, step, out, rng, dropped=0.25, tag=f"{len(procs)}-{s}")
                out_steps.append(
                    {"title": step.get("title"), "text": f"Step {s} - {step.get('text') or ''}", "images": photos}
                )
            procs.append(
                {
                    "source": "mixed",
                    "id": f"m{len(procs)}",
                    "title": f"{guide['title']} ({len(procs)})",
                    "category": ["Repair", f"Kind {min(g % 11, 7)}"],
                    "license": guide.get("license"),
                    "steps": out_steps,
                }
            )
    return procs


def large(
    guides: list[dict[str, Any]], source: Path, out: Path, rng: random.Random, n: int = 600
) -> list[dict[str, Any]]:
    """``n`` guides of 5-9 steps drawn from every guide's steps, each photo a fresh edit (:func:`_edit`, stronger)."""
    pool = [st for guide in guides for st in guide["steps"] if st.get("images")]
    procs: list[dict[str, Any]] = []
    for p in range(n):
        out_steps = []
        for s, step in enumerate(rng.sample(pool, rng.randint(5, 9)), 1):
            name = f"large-{p}-{s}.jpg"
            _edit(source / step["images"][0], out / "images" / name, rng, crop=(0.55, 0.9), turn=8.0)
            photo = [f"images/{name}"]
            out_steps.append({"title": step.get("title"), "text": step.get("text") or "", "images": photo})
        procs.append(
            {
                "source": "large",
                "id": f"l{p}",
                "title": f"{guides[rng.randrange(len(guides))]['title']} ({p})",
                "category": ["Builds", f"Kind {p % 12}"],
                "license": guides[0].get("license"),
                "steps": out_steps,
            }
        )
    return procs


def few(guides: list[dict[str, Any]], source: Path, out: Path, rng: random.Random) -> list[dict[str, Any]]:
    images = out / "images"
    chosen = rng.sample(guides, 6)
    procs = []
    for g, guide in enumerate(chosen):
        steps = [
            {
                "title": st.get("title"),
                "text": st.get("text"),
                "images": [_copy_photo(source, p, images) for p in st.get("images") or []],
            }
            for st in guide["steps"]
        ]
        procs.append(
            {
                "source": "few",
                "id": f"f{g}",
                "title": guide["title"],
                "category": [f"Category {g // 2}"],
                "license": guide.get("license"),
                "steps": steps,
            }
        )
    return procs


def _with_odd_files(procs: list[dict[str, Any]], out: Path, rng: random.Random) -> None:
    """Put each odd file on a step (a photo of its own on a step without one, else added after)."""
    images = out / "images"
    photo = next(out / st["images"][0] for p in procs for st in p["steps"] if st["images"])
    _odd_files(images, photo)
    steps = [st for p in procs for st in p["steps"]]
    for name, chosen in zip(ODD_FILES, rng.sample(steps, len(ODD_FILES)), strict=True):
        chosen["images"] = [f"images/{name}", *chosen["images"]] if rng.random() < 0.5 else [f"images/{name}"]


def _with_near_copies(procs: list[dict[str, Any]], out: Path, rng: random.Random, n: int = NEAR_COPIES) -> None:
    """Put a re-encoded copy (90% size, JPEG quality 60) of ``n`` photos first on a step of another procedure:
    the same photo in two guides, as real sites reuse one (not byte-identical, so stored twice)."""
    from PIL import Image

    with_photo = [(i, st) for i, p in enumerate(procs) for st in p["steps"] if st["images"]]
    for k, (i, step) in enumerate(rng.sample(with_photo, n)):
        with Image.open(out / step["images"][0]) as im:
            w, h = im.size
            im.convert("RGB").resize((w * 9 // 10, h * 9 // 10)).save(out / "images" / f"near-{k}.jpg", quality=60)
        j, other = rng.choice([(j, st) for j, st in with_photo if j != i])
        other["images"] = [f"images/near-{k}.jpg", *other["images"]]


def write_variant(
    name: str, source: Path, out: Path, seed: int = 0, near_copies: int = NEAR_COPIES, large_n: int = 600
) -> Path:
    """Write variant ``name`` into ``out/name`` (replacing it); the JSONL's path."""
    folder = out / name
    if folder.exists():
        shutil.rmtree(folder)
    (folder / "images").mkdir(parents=True)
    rng = random.Random(seed)
    guides = _load(source)
    if name == "large":
        procs = large(guides, source, folder, rng, large_n)
    else:
        procs = {"cooking": cooking, "repair": repair, "mixed": mixed, "few": few}[name](guides, source, folder, rng)
    if name not in ("few", "large"):
        _with_odd_files(procs, folder, rng)
    if name == "mixed" and near_copies:
        _with_near_copies(procs, folder, rng, near_copies)
    path = folder / "procedures.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for p in procs:
            fh.write(json.dumps(p, ensure_ascii=False) + "\n")
    n_steps = sum(len(p["steps"]) for p in procs)
    n_photos = sum(len(st["images"]) for p in procs for st in p["steps"])
    no_photo = sum(not st["images"] for p in procs for st in p["steps"])
    print(f"{name}: {len(procs)} procedures, {n_steps} steps ({no_photo} without a photo), {n_photos} photo refs")
    return path


def _run(cmd: list[str], store: Path, log: list[dict[str, Any]]) -> dict[str, Any] | None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PROCBENCH_PROGRESS": "lines"}
    start = time.time()
    with tempfile.TemporaryFile("w+") as out_file, tempfile.TemporaryFile("w+") as err_file:
        child = subprocess.Popen(
            [sys.executable, "-m", "procbench", *cmd, "--store", str(store), "--json"],
            env=env,
            stdout=out_file,
            stderr=err_file,
            text=True,
        )
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        out_file.seek(0)
        err_file.seek(0)
        done = subprocess.CompletedProcess(child.args, child.returncode, out_file.read(), err_file.read())
    took = time.time() - start
    peak_mb = usage.ru_maxrss / 1024  # Linux: KiB
    try:
        summary = json.loads(done.stdout) if done.stdout.strip() else None
    except json.JSONDecodeError:
        summary = {"stdout": done.stdout[-2000:]}
    warnings = [ln for ln in done.stderr.splitlines() if "arn" in ln or "rror" in ln][-20:]
    log.append(
        {
            "cmd": cmd,
            "exit": done.returncode,
            "seconds": round(took, 1),
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
            "peak_rss_mb": round(peak_mb),
            "stderr": done.stderr[-3000:],
            "warnings": warnings,
        }
    )
    print(f"  {' '.join(cmd)}: exit {done.returncode} ({took:.0f} s, peak {peak_mb:.0f} MB)", flush=True)
    if done.returncode != 0:
        print("    " + done.stderr.strip()[-600:].replace("\n", "\n    "), flush=True)
    return summary if done.returncode == 0 else None


def check_sets(store_root: Path) -> dict[str, dict[str, int]]:
    """Independent checks of every visual set of a store, from its parquet files and ``steps.image_ids`` (not the
    generator's code): per set, the questions, and the questions where a choice repeats a question image or
    another choice (``repeated``), where a wrong choice (cloze) or the intruder (coherence) is a photo of the
    question's own procedure, a photo shared with or copied into it included (``own_negative``), where a wrong
    choice (cloze) is a near copy of the answer or of a question photo, or the intruder (coherence) of a coherent
    photo (``near_copy``: dHash agreement >= 0.875 and thumbnail correlation >= 0.9, the signatures of
    :mod:`procbench.image_stats`), and ordering questions whose orders are not four distinct orders of the same
    images (``bad_orders``)."""
    from collections import defaultdict

    import pyarrow.parquet as pq

    sys.path.insert(0, str(ROOT))
    from procbench.image_stats import ImageStats, near_duplicate_similarity
    from procbench.store import Store

    store = Store.open(store_root)
    ids = store.table("images", ["id", "stored"]).to_pylist()
    stats = ImageStats.read([r["id"] for r in ids if r["stored"]], lambda key: store.image_path(key))
    row = {key: i for i, key in enumerate(stats.keys) if stats.found[i]}

    def near(a: str, b: str) -> bool:
        if a not in row or b not in row:
            return False
        i, j = row[a], row[b]
        agree, corr = near_duplicate_similarity(
            stats.bits[i : i + 1], stats.thumbs[i : i + 1], stats.bits[j : j + 1], stats.thumbs[j : j + 1]
        )
        return bool(agree[0, 0] >= 0.875 and corr[0, 0] >= 0.9)

    own: dict[str, set[str]] = defaultdict(set)
    for row in store.table("steps", ["procedure_id", "image_ids"]).to_pylist():
        own[row["procedure_id"]].update(row["image_ids"] or [])
    out: dict[str, dict[str, int]] = {}
    for folder in sorted((store_root / "questions").glob("visual-*/*")):
        qs = [q for f in sorted(folder.glob("*.parquet")) for q in pq.read_table(f).to_pylist() if "qid" in q]
        counts = {"questions": len(qs), "repeated": 0, "own_negative": 0, "near_copy": 0, "bad_orders": 0}
        for q in qs:
            choices = list(q["choices"])
            if folder.parent.name == "visual-ordering":
                orders = {tuple(c) for c in choices}
                counts["bad_orders"] += len(orders) < len(choices) or len({frozenset(c) for c in choices}) > 1
                continue
            shown = [x for x in q["question"] if x != "@placeholder"]
            counts["repeated"] += len(set(choices)) < len(choices) or bool(set(choices) & set(shown))
            if folder.name == "needs-context":  # its choices are the procedure's own photos by design
                continue
            answer = int(q["answer"])
            wrong = (
                [choices[answer]]
                if folder.parent.name == "visual-coherence"
                else choices[:answer] + choices[answer + 1 :]
            )
            counts["own_negative"] += any(c in own[q["procedure_id"]] for c in wrong)
            right = [c for c in choices if c not in wrong] + shown
            counts["near_copy"] += any(near(w, r) for w in wrong for r in right if w != r)
        out[f"{folder.parent.name}/{folder.name}"] = counts
    return out


def run_pipeline(jsonl: Path, tasks: tuple[str, ...]) -> dict[str, Any]:
    """The user's path on one variant; what each step said."""
    folder = jsonl.parent
    store = folder / "store"
    if store.exists():
        shutil.rmtree(store)
    log: list[dict[str, Any]] = []
    out: dict[str, Any] = {"log": log}
    out["ingest"] = _run(["ingest", str(jsonl)], store, log)
    out["clean"] = _run(["clean"], store, log)
    out["embed"] = _run(["embed", "-t", "minilm-offline", "-i", "efficientnet-lite0"], store, log)
    out["generate"] = {}
    sets = []
    for task in tasks:
        summary = _run(["generate", "--task", task, "--sweep"], store, log)
        out["generate"][task] = summary
        if summary:
            sets += [f"{task}/{s}" for s in summary.get("questions", {})]
    out["checks"] = check_sets(store)
    out["audit"] = _run(["audit", *sets], store, log) if sets else None
    out["report"] = _run(["report", "--out", str(folder / "report")], store, log)
    (folder / "run.json").write_text(json.dumps(out, indent=1, default=str))
    return out


def summarise(name: str, out: dict[str, Any]) -> list[str]:
    lines = [f"## {name}", ""]
    for entry in out["log"]:
        lines.append(
            f"- `{' '.join(entry['cmd'][:4])}`: exit {entry['exit']}, {entry['seconds']} s, "
            f"CPU {entry.get('cpu_s')} s, peak RSS {entry.get('peak_rss_mb')} MB"
        )
    ing = out.get("ingest") or {}
    if ing:
        lines.append(
            f"- ingest: {ing.get('added')} added, {ing.get('images_stored')} images stored, "
            f"{ing.get('images_failed')} failed: "
            + "; ".join(f"{f['image']}: {f['error']}" for f in ing.get("image_failures", []))
        )
    for task, summary in (out.get("generate") or {}).items():
        if not summary:
            lines.append(f"- {task}: failed")
            continue
        lines.append(f"- {task}: " + json.dumps(summary.get("questions")))
        per = (summary.get("counts") or {}).get("per_setting") or {}
        for setting, counts in per.items():
            lines.append(f"  - {setting}: {json.dumps(counts)[:400]}")
        if summary.get("skipped"):
            lines.append(f"  - skipped: {json.dumps(summary['skipped'])[:600]}")
    checks = out.get("checks") or {}
    bad = {name: c for name, c in checks.items() if any(v for k, v in c.items() if k != "questions")}
    clean = "no repeated item, own-procedure negative, near copy or bad order"
    lines.append(f"- independent checks: {json.dumps(bad) if bad else clean}")
    lines.append("")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder the variants (and their stores) go to")
    parser.add_argument("--source", type=Path, default=SOURCE)
    parser.add_argument(
        "--variants", default=",".join(v for v in VARIANTS if v != "large"), help=f"of {','.join(VARIANTS)}"
    )
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--no-run", action="store_true", help="only write the variants")
    parser.add_argument("--large", type=int, default=600, help="large: how many guides")
    parser.add_argument(
        "--near-copies", type=int, default=NEAR_COPIES, help="mixed: photos re-encoded into another guide"
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    summary: list[str] = ["# Photo corpora (benchmarks/photo_corpora.py)", ""]
    for name in args.variants.split(","):
        jsonl = write_variant(name, args.source, args.out, near_copies=args.near_copies, large_n=args.large)
        if args.no_run:
            continue
        out = run_pipeline(jsonl, tuple(args.tasks.split(",")))
        summary += summarise(name, out)
        (args.out / "summary.md").write_text("\n".join(summary))
    print("\n".join(summary))


if __name__ == "__main__":
    main()
