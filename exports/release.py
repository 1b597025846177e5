"""Versioned, immutable releases: split -> format -> write -> card -> privacy gate -> manifest.

Layout of ``<out_dir>/<name>-<version>/``::

    manifest.json   name, version, created, source batches, split seed/ratios, files (sha256, rows)
    index.json      item -> split/document/content hash, document -> split (for later releases and diffs)
    card.md         dataset card, with plots/lengths.png and plots/types.png
    train.csv val.csv test.csv ... (QA)      or    multiple_choice/train.csv ... direct_answer/... (MCQ)
    suggestions_{train,val,test}.jsonl       MCQ only, when suggestion logs are given (exports.suggestions)
    train.json ... + syllabi/syllabi_redacted/text/*.txt, syllabi/syllabi_meta_info.csv   (QA: the
                     SyllabusQA authors' layout)   or   sciq/{train,valid,test}.json (MCQ: SciQ's own JSON)

A release is built in a hidden staging folder and renamed into place only after the privacy gate passes,
so a failed build leaves nothing behind and an existing release is never overwritten. Data files, the
index and the card are deterministic for the same records and seed; only ``created`` in the manifest
changes between re-exports.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Optional

from annotation.hashing import file_sha256
from annotation.importers.mcq import SCIQ_FILES
from exports.card import CardInputs, write_card
from exports.factories import create_formatter, create_writer, parse_formats, versions_for
from exports.formatters import ExtraFieldKinds, Formatter
from exports.original_formats import (
    SCIQ_DIR,
    SciQJsonWriter,
    SourceDocument,
    SyllabusQAJsonWriter,
    loader_notes,
    write_syllabi,
)
from exports.privacy import check_release_privacy
from exports.records import Record, RecordError, RecordStream, record_kind
from exports.release_files import INDEX, MANIFEST, ReleaseError
from exports.splits import (
    DEFAULT_RATIOS,
    SCIQ_TEST_SIZE,
    SCIQ_VAL_SIZE,
    SPLITS,
    GroupCollector,
    PreviousAssignment,
    SplitAssignment,
    SplitError,
    SplitItem,
    group_split_groups,
    sciq_split_groups,
)
from exports.statistics import SplitStatistics, count_tokens
from exports.suggestions import (
    SUGGESTIONS_FILE,
    ItemSuggestions,
    check_suggestion_ids,
    summarize_suggestions,
)
from exports.writers import RowSink

logger = logging.getLogger(__name__)

MANIFEST_SCHEMA = 1
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def safe_release_name(value: str) -> bool:
    """True when ``value`` may be a release name or version (letters, digits, ``.``, ``_``, ``-``)."""
    return bool(_SAFE_NAME.match(value))


@dataclass(frozen=True)
class ReleaseResult:
    """What :func:`build_release` produced.

    Attributes:
        path: the release directory.
        counts: split -> items assigned.
        achieved_ratios: split -> share of items.
        excluded: dataset version -> items left out (direct-answer items without a passage).
        manifest: the manifest as written.
    """

    path: Path
    counts: Mapping[str, int]
    achieved_ratios: Mapping[str, float]
    excluded: Mapping[str, int]
    manifest: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """Summary for a command's final JSON line."""
        return {
            "path": str(self.path),
            "name": self.manifest["name"],
            "version": self.manifest["version"],
            "counts": dict(self.counts),
            "achieved_ratios": dict(self.achieved_ratios),
            "excluded": dict(self.excluded),
            "files": len(self.manifest["files"]),
        }


def content_hash(record: Record) -> str:
    """Hash of every released field of a record, to tell changed items apart in release diffs."""
    text = json.dumps(record.content_dict(), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class _InMemory(RecordStream):
    """Records given as a sequence, put in release order once."""

    def __init__(self, records: Sequence[Record], *, keep_order: bool) -> None:
        self.records = list(records) if keep_order else sorted(records, key=lambda r: r.id)
        self.sorted_by_id = not keep_order

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records)


def record_stream(records: Sequence[Record] | RecordStream, *, keep_order: bool = False) -> RecordStream:
    """``records`` as a :class:`RecordStream` (a sequence is sorted by id unless ``keep_order``)."""
    if isinstance(records, RecordStream):
        return records
    return _InMemory(records, keep_order=keep_order)


@dataclass
class Survey:
    """What one pass over a release's records tells before the split: kind, size, columns, documents.

    Attributes:
        kind: ``qa`` or ``mcq``.
        count: records.
        extra_kinds: extra field -> column kind (:func:`exports.formatters.extra_field_kinds`).
        groups: per-document aggregates for the splitter.
        suggested: ids of records that have a suggestion log.
    """

    kind: str
    count: int
    extra_kinds: dict[str, str]
    groups: GroupCollector
    suggested: set[str]


def survey_records(
    records: RecordStream,
    *,
    previous: Optional[PreviousAssignment] = None,
    suggestions: Collection[str] = (),
) -> Survey:
    """Read every record once: its kind, extra columns, document aggregates; refuse duplicate ids.

    Memory grows with the documents (and, for a stream not sorted by id, the ids), not with records.

    Raises:
        exports.records.RecordError: no records, records of two kinds, or something else than a record.
        exports.splits.SplitError: two records with one id.
        exports.formatters.FormatError: an extra field holds a list or dict.
    """
    kinds: set[str] = set()
    extras = ExtraFieldKinds()
    groups = GroupCollector(previous)
    suggested: set[str] = set()
    seen: set[str] = set()
    last: Optional[str] = None
    count = 0
    for record in records:
        kinds.add(record_kind([record]))
        if records.sorted_by_id:
            duplicate = record.id == last
            last = record.id
        else:
            duplicate = record.id in seen
            seen.add(record.id)
        if duplicate:
            raise SplitError(f"duplicate item id {record.id!r} (document {record.document_id!r})")
        extras.add(record)
        groups.add(SplitItem(record.id, record.document_id, record.stratum))
        answer = getattr(record, "correct_answer", None)
        if answer is not None:
            groups.add_question(record.document_id, record.question, str(answer))
        if record.id in suggestions:
            suggested.add(record.id)
        count += 1
    if len(kinds) != 1:
        raise RecordError(f"a release needs records of one kind, got {sorted(kinds) or 'none'}")
    return Survey(kinds.pop(), count, extras.kinds(), groups, suggested)


def split_survey(
    survey: Survey,
    *,
    ratios: Sequence[float],
    seed: int,
    sciq_mode: bool,
    sciq_sizes: tuple[int, int],
    previous: Optional[PreviousAssignment],
) -> SplitAssignment:
    """The split of surveyed records.

    Every item follows its document (see :meth:`~exports.splits.SplitAssignment.split_for`), and
    documents that ask the same multiple-choice question with the same answer are drawn together, so
    the leakage check never finds that question in two splits.
    """
    clusters = survey.groups.clusters()
    if sciq_mode:
        return sciq_split_groups(
            survey.groups.groups,
            kept=survey.groups.kept,
            val_size=sciq_sizes[0],
            test_size=sciq_sizes[1],
            seed=seed,
            previous=previous,
            clusters=clusters,
        )
    return group_split_groups(
        survey.groups.groups,
        kept=survey.groups.kept,
        ratios=ratios,
        seed=seed,
        previous=previous,
        clusters=clusters,
    )


def split_records(
    records: Sequence[Record] | RecordStream,
    *,
    ratios: Sequence[float],
    seed: int,
    sciq_mode: bool,
    sciq_sizes: tuple[int, int],
    previous: Optional[PreviousAssignment],
) -> SplitAssignment:
    """The split :func:`build_release` makes of ``records`` (also used to check a release before building)."""
    survey = survey_records(record_stream(records, keep_order=True), previous=previous)
    return split_survey(
        survey, ratios=ratios, seed=seed, sciq_mode=sciq_mode, sciq_sizes=sciq_sizes, previous=previous
    )


def _write_json(path: Path, data: Any, *, indent: Optional[int] = 2) -> None:
    path.write_text(json.dumps(data, indent=indent, ensure_ascii=False) + "\n", encoding="utf-8")


def build_release(
    records: Sequence[Record] | RecordStream,
    *,
    name: str,
    version: str,
    out_dir: Path,
    formats: Sequence[str] | str = ("csv", "jsonl", "parquet"),
    ratios: Sequence[float] = DEFAULT_RATIOS,
    seed: int = 0,
    sciq_mode: bool = False,
    sciq_sizes: tuple[int, int] = (SCIQ_VAL_SIZE, SCIQ_TEST_SIZE),
    previous_assignment: Optional[PreviousAssignment] = None,
    card_inputs: Optional[CardInputs] = None,
    source_batches: Sequence[int | str] = (),
    privacy_allow: Collection[str] = (),
    created: Optional[datetime] = None,
    tokenize: Callable[[str], int] = count_tokens,
    suggestions: Optional[Mapping[str, ItemSuggestions]] = None,
    source: str = "",
    check_split: Optional[Callable[[SplitAssignment], None]] = None,
    keep_order: bool = False,
    source_documents: Iterable[SourceDocument] = (),
) -> ReleaseResult:
    """Build the immutable release directory ``out_dir/<name>-<version>``.

    Args:
        records: all :class:`~exports.records.QARecord` or all :class:`~exports.records.MCQRecord`: a
            sequence, or a :class:`RecordStream` (read twice, never held in memory).
        name: dataset name (letters, digits, ``.``, ``_``, ``-``).
        version: release version, same characters.
        out_dir: parent folder; created if missing.
        formats: any of ``csv``, ``jsonl``, ``parquet`` (list or comma-separated string).
        ratios: train/val/test shares of items (group mode).
        seed: seeds the split and the MCQ option order.
        sciq_mode: fixed-size val/test (``sciq_sizes``) instead of ratios.
        sciq_sizes: (val, test) sizes in SciQ mode.
        previous_assignment: an earlier release's assignment to keep (see :func:`load_assignment`);
            also the way to reproduce a dataset's original splits.
        card_inputs: facts for the dataset card (licence, citation, documents, crowd work).
        source_batches: batch ids the records came from (recorded in the manifest).
        privacy_allow: reviewed values the privacy gate lets through (public office contacts).
        created: the manifest timestamp; now (UTC) when None.
        tokenize: token counter for the card's statistics.
        suggestions: item id -> its distractor-suggestion log (MCQ only); written as
            ``suggestions_{split}.jsonl`` and summarised in the card. None or empty: no such files.
        source: what the items came from (corpus or batch), recorded in the manifest.
        check_split: called with the split before any file is written; it may raise to stop the
            build (``exports.services.exporting`` refuses empty or short splits and leakage there).
        keep_order: write each split's rows in the order of ``records`` (the source files' order, for
            original splits) instead of sorted by id (a :class:`RecordStream` brings its own order).
        source_documents: the syllabi a QA release's records refer to (any iterable; an empty one
            is falsy); written in the SyllabusQA authors' layout (``syllabi/``, see
            :mod:`exports.original_formats`).

    Returns:
        The :class:`ReleaseResult`.

    Raises:
        ReleaseError: the release exists, a name is unsafe, or suggestion logs are given for a QA
            release or for items it does not hold.
        exports.privacy.PrivacyError: personal data was found (nothing is left on disk).
        exports.splits.SplitError: bad ratios, duplicate ids, a document in two splits.
        exports.factories.UnknownFormatError: an unknown format.
    """
    for label, value in (("name", name), ("version", version)):
        if not _SAFE_NAME.match(value):
            raise ReleaseError(f"release {label} {value!r}: use letters, digits, '.', '_' and '-' only")
    stream = record_stream(records, keep_order=keep_order)
    survey = survey_records(stream, previous=previous_assignment, suggestions=suggestions or {})
    fmts = parse_formats(formats)
    inputs = card_inputs or CardInputs()
    out_dir = Path(out_dir)
    dest = out_dir / f"{name}-{version}"
    if dest.exists():
        raise ReleaseError(f"release {dest} exists already; releases are immutable, choose a new version")
    out_dir.mkdir(parents=True, exist_ok=True)
    staging = out_dir / f".{name}-{version}.staging-{os.getpid()}"
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir()
    try:
        manifest, assignment, excluded = _build_into(
            staging,
            stream,
            survey,
            name=name,
            version=version,
            formats=fmts,
            ratios=ratios,
            seed=seed,
            sciq_mode=sciq_mode,
            sciq_sizes=sciq_sizes,
            previous=previous_assignment,
            inputs=inputs,
            source_batches=source_batches,
            privacy_allow=privacy_allow,
            created=created or datetime.now(UTC),
            tokenize=tokenize,
            suggestions=suggestions or {},
            source=source,
            check_split=check_split,
            source_documents=source_documents,
        )
        if dest.exists():
            raise ReleaseError(f"release {dest} appeared while building; not overwriting it")
        staging.rename(dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    logger.info("Release(%s-%s) written to %s: %s", name, version, dest, dict(assignment.counts))
    return ReleaseResult(dest, dict(assignment.counts), dict(assignment.achieved_ratios), excluded, manifest)


class _SplitFiles:
    """Every file one split's records go to, opened together and fed one record at a time."""

    def __init__(
        self,
        root: Path,
        split: str,
        *,
        kind: str,
        formats: Sequence[str],
        formatters: Mapping[tuple[str, str], Formatter],
        with_suggestions: bool,
    ) -> None:
        self.split = split
        self.sinks: dict[str, tuple[str, Formatter, RowSink]] = {}
        self.excluded: dict[str, int] = {}
        self.rows: dict[str, dict[str, int]] = {}
        for dataset_version in versions_for(kind):
            folder = root / dataset_version.folder if dataset_version.folder else root
            folder.mkdir(parents=True, exist_ok=True)
            self.excluded[dataset_version.name] = 0
            for fmt in formats:
                formatter = formatters[(dataset_version.name, fmt)]
                writer = create_writer(fmt)
                path = folder / f"{split}.{writer.extension}"
                columns, kinds = formatter.schema()
                sink = writer.open(path, columns, kinds)
                self.sinks[str(path.relative_to(root))] = (dataset_version.name, formatter, sink)
        self.original: SyllabusQAJsonWriter | SciQJsonWriter
        if kind == "qa":
            self.original_path = f"{split}.json"
            self.original = SyllabusQAJsonWriter(root / self.original_path)
        else:
            self.original_path = f"{SCIQ_DIR}/{SCIQ_FILES[split]}"
            self.original = SciQJsonWriter(root / self.original_path)
        self.suggestions_path = SUGGESTIONS_FILE.format(split=split) if with_suggestions else None
        self.suggestions = (
            (root / self.suggestions_path).open("w", encoding="utf-8", newline="\n")
            if (self.suggestions_path)
            else None
        )
        self.suggestion_rows = 0
        self.index_path = root / f".index-{split}.part"
        self.index = self.index_path.open("w", encoding="utf-8")
        self.index_items = 0

    def write(self, record: Record, log: Optional[ItemSuggestions]) -> None:
        """Append ``record`` (and its suggestion log, if any) to every file of the split."""
        counted: set[str] = set()
        for version, formatter, sink in self.sinks.values():
            row = formatter.row(record)
            if row is None:
                if version not in counted:
                    self.excluded[version] += 1
                    counted.add(version)
                continue
            sink.write(row)
        self.original.write(record)  # type: ignore[arg-type]
        if self.suggestions is not None and log is not None:
            self.suggestions.write(json.dumps(log.to_dict(), ensure_ascii=False, sort_keys=True) + "\n")
            self.suggestion_rows += 1
        entry = {"split": self.split, "document": record.document_id, "sha256": content_hash(record)}
        prefix = ", " if self.index_items else ""
        self.index.write(prefix + json.dumps(record.id, ensure_ascii=False) + ": " + json.dumps(entry))
        self.index_items += 1

    def close(self) -> dict[str, int]:
        """Finish every file; return file -> data rows."""
        rows = {path: sink.close() for path, (_, _, sink) in self.sinks.items()}
        rows[self.original_path] = self.original.close()
        if self.suggestions is not None and self.suggestions_path:
            self.suggestions.close()
            rows[self.suggestions_path] = self.suggestion_rows
        self.index.close()
        return rows

    def abandon(self) -> None:
        """Close what can be closed after a failure (the staging folder is removed next)."""
        for _, _, sink in self.sinks.values():
            try:
                sink.close()
            except Exception:  # noqa: BLE001 - the first error is the one reported
                logger.debug("closing %s after a failure", self.split, exc_info=True)
        for handle in (self.suggestions, self.index, getattr(self.original, "handle", None)):
            if handle is not None:
                handle.close()


def _build_into(
    root: Path,
    records: RecordStream,
    survey: Survey,
    *,
    name: str,
    version: str,
    formats: tuple[str, ...],
    ratios: Sequence[float],
    seed: int,
    sciq_mode: bool,
    sciq_sizes: tuple[int, int],
    previous: Optional[PreviousAssignment],
    inputs: CardInputs,
    source_batches: Sequence[int | str],
    privacy_allow: Collection[str],
    created: datetime,
    tokenize: Callable[[str], int],
    suggestions: Mapping[str, ItemSuggestions],
    source: str,
    check_split: Optional[Callable[[SplitAssignment], None]] = None,
    source_documents: Iterable[SourceDocument] = (),
) -> tuple[dict[str, Any], SplitAssignment, dict[str, int]]:
    """Write every file of a release into ``root`` and return (manifest, assignment, excluded).

    One pass over the records writes every data file of every split, the index and the card's
    statistics; memory holds one record, the open files' buffers and per-document counts.
    """
    kind = survey.kind
    if suggestions:
        if kind != "mcq":
            raise ReleaseError(
                "suggestion logs belong to multiple-choice releases; this release holds QA pairs"
            )
        try:
            check_suggestion_ids(suggestions, survey.suggested)
        except ValueError as exc:
            raise ReleaseError(str(exc)) from exc
    assignment = split_survey(
        survey, ratios=ratios, seed=seed, sciq_mode=sciq_mode, sciq_sizes=sciq_sizes, previous=previous
    )
    if check_split is not None:
        check_split(assignment)

    formatters = {
        (v.name, fmt): create_formatter(v.name, fmt, seed=seed, extra_kinds=survey.extra_kinds)
        for v in versions_for(kind)
        for fmt in formats
    }
    files = {
        split: _SplitFiles(
            root, split, kind=kind, formats=formats, formatters=formatters, with_suggestions=bool(suggestions)
        )
        for split in SPLITS
    }
    stats = {split: SplitStatistics() for split in SPLITS}
    rows_written: dict[str, int] = {}
    try:
        for record in records:
            split = assignment.split_for(record.id, record.document_id)
            files[split].write(record, suggestions.get(record.id))
            stats[split].add(record, tokenize)
    except BaseException:
        for split_files in files.values():
            split_files.abandon()
        raise
    for split_files in files.values():
        rows_written.update(split_files.close())

    version_counts: dict[str, dict[str, int]] = {}
    excluded: dict[str, int] = {}
    for dataset_version in versions_for(kind):
        excluded[dataset_version.name] = sum(files[s].excluded[dataset_version.name] for s in SPLITS)
        for split in SPLITS:
            version_counts.setdefault(dataset_version.name, {})[split] = (
                stats[split].records - files[split].excluded[dataset_version.name]
            )
    syllabi_summary = None
    if kind == "qa" and source_documents:
        syllabi_summary = write_syllabi(source_documents, root)
    suggestion_summary = summarize_suggestions(list(suggestions.values())) if suggestions else None

    with (root / INDEX).open("w", encoding="utf-8") as index:
        index.write('{"documents": ' + json.dumps(dict(assignment.documents), ensure_ascii=False))
        index.write(', "items": {')
        wrote = False
        for split in SPLITS:
            part = files[split].index_path
            if files[split].index_items:
                if wrote:
                    index.write(", ")
                with part.open(encoding="utf-8") as handle:
                    shutil.copyfileobj(handle, index)
                wrote = True
            part.unlink()
        index.write("}}\n")
    write_card(
        root,
        name=name,
        version=version,
        split_stats=stats,
        split_summary=assignment.to_dict(),
        inputs=inputs,
        version_counts=version_counts,
        excluded=excluded,
        tokenize=tokenize,
        suggestions=suggestion_summary,
        extra_sections=loader_notes(kind, syllabi=syllabi_summary),
    )
    check_release_privacy(root, allow=privacy_allow)

    listed = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        relative = str(path.relative_to(root))
        listed.append(
            {
                "path": relative,
                "sha256": file_sha256(path),
                "bytes": path.stat().st_size,
                "rows": rows_written.get(relative),
            }
        )
    manifest = {
        "schema": MANIFEST_SCHEMA,
        "name": name,
        "version": version,
        "created": created.isoformat(timespec="seconds"),
        "kind": kind,
        "versions": [v.name for v in versions_for(kind)],
        "formats": list(formats),
        "source": source,
        "source_batches": list(source_batches),
        "license": inputs.license,
        **({"aggregation": dict(inputs.aggregation)} if inputs.aggregation else {}),
        "split": assignment.to_dict(),
        "counts": {v: dict(c) for v, c in version_counts.items()},
        "excluded": excluded,
        "privacy": {"checked": True, "allowed_values": len(set(privacy_allow))},
        "files": listed,
    }
    _write_json(root / MANIFEST, manifest)
    return manifest, assignment, excluded
