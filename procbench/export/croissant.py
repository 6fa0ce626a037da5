"""``croissant.json``: MLCommons Croissant 1.0 metadata of an export (validated with ``mlcroissant`` in the tests).

One ``cr:FileObject`` per parquet file (relative ``contentUrl`` and ``sha256``), one ``cr:FileSet`` per config
(its files), and one ``cr:RecordSet`` per config whose fields are the export's columns: scalars, lists
(``repeated``), items and context steps as sub-fields, images as ``sc:ImageObject`` read from the Image
feature's ``bytes``. The ``split`` field comes from the file names.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from procbench import __version__
from procbench.card import TASKS, spdx_license

if TYPE_CHECKING:
    from procbench.card import DatasetCard

__all__ = ["CONTEXT", "Exported", "croissant", "write_croissant"]


class Exported(Protocol):
    """What the document reads of an export (:class:`procbench.export.hf.ExportResult` is one)."""

    @property
    def files(self) -> list[Path]:
        """The parquet files written, under ``data/<config>/``."""
        ...

    @property
    def url(self) -> str | None:
        """Where the dataset was pushed, if it was."""
        ...


#: The JSON-LD context of Croissant 1.0 (as the specification gives it).
CONTEXT: dict[str, Any] = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/",
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileProperty": "cr:fileProperty",
    "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "parentField": "cr:parentField",
    "path": "cr:path",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
    "sc": "https://schema.org/",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}

_TEXT = "sc:Text"
_INT = "sc:Integer"
_SCALARS = [
    ("qid", _TEXT, "question id, PROCEDURE_ID#n"),
    ("task", _TEXT, "the task"),
    ("setting", _TEXT, "the setting (config) that made the question"),
    ("procedure_id", _TEXT, "SOURCE:ID of the procedure"),
    ("procedure_title", _TEXT, "the procedure's title"),
    ("source", _TEXT, "where the procedure comes from"),
    ("url", _TEXT, "the procedure's page"),
    ("license", _TEXT, "the procedure's license as recorded"),
    ("instruction", _TEXT, "what the question asks, in words"),
    ("answer", _INT, "index of the correct choice (pair order: 1 = in authored order)"),
    ("meta", _TEXT, "JSON: the sampling decisions of the question (fields differ per setting)"),
]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _source(file_set: str, column: str, json_path: str | None = None) -> dict[str, Any]:
    source: dict[str, Any] = {"fileSet": {"@id": file_set}, "extract": {"column": column}}
    if json_path:
        source["transform"] = {"jsonPath": json_path}
    return source


def _item_field(config: str, file_set: str, name: str, description: str) -> dict[str, Any]:
    base = f"{config}/{name}"
    sub = [
        {
            "@type": "cr:Field",
            "@id": f"{base}/{part}",
            "name": f"{base}/{part}",
            "description": text,
            "dataType": kind,
            "repeated": True,  # one value per item (mlcroissant casts each)
            "source": _source(file_set, name, part + (".bytes" if kind == "sc:ImageObject" else "")),
        }
        for part, kind, text in (
            ("key", _TEXT, "the item in the procbench set: step key, image id or text; @placeholder is the blank"),
            ("title", _TEXT, "the step's title"),
            ("text", _TEXT, "the step's text, or the item's text"),
            ("image", "sc:ImageObject", "the item's image (JPEG)"),
        )
    ]
    return {
        "@type": "cr:Field",
        "@id": base,
        "name": base,
        "description": description,
        "repeated": True,
        "subField": sub,
    }


def _record_set(config: str, file_set: str, task: str) -> dict[str, Any]:
    fields: list[dict[str, Any]] = [
        {
            "@type": "cr:Field",
            "@id": f"{config}/split",
            "name": f"{config}/split",
            "description": "train, validation or test (from the file name)",
            "dataType": _TEXT,
            "source": {
                "fileSet": {"@id": file_set},
                "extract": {"fileProperty": "fullpath"},
                "transform": {"regex": "^(?:.*/)?(train|validation|test)-\\d+-of-\\d+\\.parquet$"},
            },
        }
    ]
    fields += [
        {
            "@type": "cr:Field",
            "@id": f"{config}/{name}",
            "name": f"{config}/{name}",
            "description": text,
            "dataType": kind,
            "source": _source(file_set, name),
        }
        for name, kind, text in _SCALARS
    ]
    fields.append(
        {
            "@type": "cr:Field",
            "@id": f"{config}/category",
            "name": f"{config}/category",
            "description": "category path, root first",
            "dataType": _TEXT,
            "repeated": True,
            "source": _source(file_set, "category"),
        }
    )
    fields.append(
        {
            "@type": "cr:Field",
            "@id": f"{config}/context",
            "name": f"{config}/context",
            "description": "the context steps",
            "repeated": True,
            "subField": [
                {
                    "@type": "cr:Field",
                    "@id": f"{config}/context/{part}",
                    "name": f"{config}/context/{part}",
                    "description": text,
                    "dataType": kind,
                    "repeated": True,
                    "source": _source(file_set, "context", part),
                }
                for part, kind, text in (
                    ("index", _INT, "the step's index in the procedure"),
                    ("title", _TEXT, "the step's title (left out when the question's items are titles)"),
                    ("text", _TEXT, "the step's text"),
                )
            ],
        }
    )
    fields.append(_item_field(config, file_set, "question", "question items (for order tasks: the items to order)"))
    fields.append(_item_field(config, file_set, "choices", "the choices (empty for order tasks)"))
    fields.append(
        {
            "@type": "cr:Field",
            "@id": f"{config}/choice_orders",
            "name": f"{config}/choice_orders",
            "description": "order tasks: each choice as a list of positions into question",
            "dataType": _INT,
            "repeated": True,
            "source": _source(file_set, "choice_orders"),
        }
    )
    info = TASKS.get(task)
    return {
        "@type": "cr:RecordSet",
        "@id": config,
        "name": config,
        "description": f"{task}: {info.summary}" if info else task,
        "field": fields,
    }


def croissant(card: DatasetCard, result: Exported) -> dict[str, Any]:
    """The Croissant JSON-LD document of an export."""
    licenses = sorted({spdx_license(t) or t for t in card.procedures["licenses"]})
    distribution: list[dict[str, Any]] = []
    record_sets: list[dict[str, Any]] = []
    by_config: dict[str, list[Path]] = {}
    for path in result.files:
        by_config.setdefault(path.parent.name, []).append(path)
    for s in card.sets:
        config = s.config_name or s.setting
        files = by_config.get(config, [])
        if not files:
            continue
        file_set = f"parquet-files-{config}"
        distribution.append(
            {
                "@type": "cr:FileSet",
                "@id": file_set,
                "name": file_set,
                "description": f"the parquet files of config {config}",
                "encodingFormat": "application/x-parquet",
                "includes": f"data/{config}/*.parquet",
            }
        )
        record_sets.append(_record_set(config, file_set, s.task))
    from procbench.card.citations import citations_for

    own, _ = citations_for(list(dict.fromkeys(s.task for s in card.sets)))
    return {
        "@context": CONTEXT,
        "@type": "sc:Dataset",
        "name": card.title.replace(" ", "-").replace(",", ""),
        "description": (
            f"{card.title}: procedural comprehension questions generated by procbench {__version__} "
            f"({sum(s.questions for s in card.sets)} questions, {len(card.sets)} configurations)."
        ),
        "conformsTo": "http://mlcommons.org/croissant/1.0",
        "citeAs": own[0] if own else "",
        "license": licenses or ["unknown"],
        "url": result.url or "https://huggingface.co/datasets",
        "version": "1.0.0",
        **({"datePublished": card.published} if card.published else {}),
        "inLanguage": sorted(card.procedures["languages"]) or ["en"],
        "keywords": ["procbench", "procedural comprehension", *dict.fromkeys(s.task for s in card.sets)],
        "creator": {"@type": "Organization", "name": "procbench"},
        "distribution": distribution,
        "recordSet": record_sets,
    }


def write_croissant(out: Path, card: DatasetCard, result: Exported) -> Path:
    """Write ``croissant.json`` into the export folder ``out``."""
    path = out / "croissant.json"
    path.write_text(json.dumps(croissant(card, result), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
