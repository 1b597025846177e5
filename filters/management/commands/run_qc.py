"""``manage.py run_qc --input QA.jsonl --json`` or ``run_qc --batch ID`` / ``--corpus NAME``: heuristic QC."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from annotation.models import Batch, Corpus, Document, QAPair
from config.commands import JsonCommand
from filters.qc import parse_record, run_qc
from filters.services import qc_queryset


class Command(JsonCommand):
    help = (
        "Heuristic QC of QA pairs (SyllabusQA and SciQ checks). With --input, reads JSON lines and prints "
        'one {"id", "flags", "normalized_answer"} line per pair (syllabi are looked up by name among '
        "imported documents). With --batch or --corpus, QCs stored pairs, saves their flags and prints "
        "a summary."
    )

    def add_arguments(self, parser: Any) -> None:
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument(
            "--input", type=Path, help="JSON lines of QA pairs (see run_qc in docs/reference/commands.md)."
        )
        source.add_argument("--batch", type=int, help="QC the QA pairs submitted in this batch.")
        source.add_argument("--corpus", help="QC the QA pairs of this corpus (e.g. an imported release).")
        parser.add_argument(
            "--json", action="store_true", help="JSON lines output (the default for --input)."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["input"] is not None:
            self._from_file(options["input"])
            return
        if options["batch"] is not None:
            if not Batch.objects.filter(pk=options["batch"]).exists():
                raise CommandError(f"no batch with id {options['batch']}")
            pairs = QAPair.objects.filter(assignment__hit__batch_id=options["batch"])
            scope = {"batch": options["batch"]}
        else:
            if not Corpus.objects.filter(name=options["corpus"]).exists():
                raise CommandError(f"no corpus named '{options['corpus']}'")
            pairs = QAPair.objects.filter(corpus__name=options["corpus"])
            scope = {"corpus": options["corpus"]}
        results = qc_queryset(pairs)
        flags = Counter(flag for result in results for flag in result["flags"])
        flagged = sum(1 for result in results if result["flags"])
        self.emit(
            {**scope, "pairs": len(results), "flagged": flagged, "flags": dict(sorted(flags.items()))},
            [f"{len(results)} QA pairs checked, {flagged} flagged."],
        )

    def _from_file(self, path: Path) -> None:
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        records = []
        with path.open(encoding="utf-8") as handle:
            for line_no, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                where = f"{path.name} line {line_no}"
                try:
                    records.append(parse_record(json.loads(line), where=where))
                except json.JSONDecodeError as exc:
                    raise CommandError(f"{where}: not valid JSON ({exc.msg})") from exc
                except ValueError as exc:
                    raise CommandError(str(exc)) from exc
        names = {getattr(r, "syllabus_name", "") for r in records} - {""}
        documents = dict(Document.objects.filter(name__in=names).values_list("name", "text"))
        missing = names - set(documents)
        if missing:
            raise CommandError(f"{path.name}: syllabus not imported: {', '.join(sorted(missing))}")
        for result in run_qc(records, documents):
            self.stdout.write(
                json.dumps(
                    {
                        "id": result["id"],
                        "flags": list(result["flags"]),
                        "normalized_answer": result.get("normalized_answer"),
                    },
                    ensure_ascii=False,
                )
            )
