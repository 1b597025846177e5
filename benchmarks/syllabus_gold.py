"""Which simulated workers a syllabus QA batch's known-answer questions would flag or block, per threshold.

Why: a syllabus QA batch's gold is N questions per HIT from the syllabus's reference pairs, graded by the
screening quiz's lexical grader (annotation/screening/quiz.py), each graded answer one gold answer in the
worker's standing (crowd/services/gold.py). The grader is conservative, so the thresholds must be set
from what it does to whole workers, not to single answers. On the real SyllabusQA release, with the quiz
questions the platform would choose for each syllabus (seed 0), simulated workers each do ``--hits``
HITs on different syllabi and answer every question:

* ``copier``: copies the syllabus text that answers it (the pair's first span; the written answer where
  the pair has no span);
* ``writer``: answers in their own words: the pair's written answer graded against its spans only (the
  stand-in benchmarks/screening_grader.py uses; a written answer with no span to grade it against is
  graded against nothing else and left out);
* ``careless``: another question's answer on the same syllabus;
* ``spammer``: the same unrelated sentence everywhere.

It prints, per kind, the mean gold accuracy (uncertain grades left out, as the platform counts) and the
share of workers under each threshold after their HITs.

Usage:
    .venv/bin/python benchmarks/syllabus_gold.py --semeval /work/shared/data/semeval2013_sra \
        --syllabusqa /work/shared/data/syllabusqa [--questions 3] [--hits 4] [--workers 300]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from annotation.importers.syllabusqa_csv import read_qa_rows  # noqa: E402
from annotation.screening.quiz import (  # noqa: E402
    INCORRECT,
    UNANSWERED,
    QuizAnswer,
    QuizCandidate,
    choose_questions,
    grade_item,
)
from annotation.screening.sra import CORRECT, examples, load_split, train_classifier  # noqa: E402

KINDS = ("copier", "writer", "careless", "spammer")
SPAM = "I usually spend my weekends hiking in the mountains with my dog and my friends."
THRESHOLDS = (0.1, 0.2, 0.35, 0.5)


def graded_answers(root: Path, model: object, questions: int) -> dict[str, list[dict[str, str]]]:
    """Per syllabus with a quiz: for each of its quiz questions, the label each kind's answer gets."""
    by_syllabus: dict[str, list] = defaultdict(list)
    for row in read_qa_rows(root):
        by_syllabus[row.syllabus_name].append(row)
    out: dict[str, list[dict[str, str]]] = {}
    rng = random.Random(0)
    for name in sorted(by_syllabus):
        rows = by_syllabus[name]
        spans_of = {r.id: tuple(s.strip() for s in r.spans if s.strip()) for r in rows}
        answers = {r.id: r.answer.strip() for r in rows}
        candidates = [
            QuizCandidate(r.id, r.question_type, r.question, r.answer, spans_of[r.id]) for r in rows
        ]
        quiz = choose_questions(candidates, questions, 0)
        if not quiz:
            continue
        labels = []
        for question in quiz:
            answer, spans = answers[question.pair_id], spans_of[question.pair_id]
            others = [a for pid, a in answers.items() if pid != question.pair_id and a and a != answer]
            own = [s for s in spans if s != answer]
            given = {
                "copier": QuizAnswer(question.question, spans[0] if spans else answer, question.references),
                "careless": QuizAnswer(
                    question.question, rng.choice(others) if others else SPAM, question.references
                ),
                "spammer": QuizAnswer(question.question, SPAM, question.references),
            }
            if own:
                given["writer"] = QuizAnswer(question.question, answer, tuple(own))
            labels.append({kind: grade_item(item, model).label for kind, item in given.items()})
        out[name] = labels
    return out


def simulate(graded: dict[str, list[dict[str, str]]], hits: int, workers: int) -> dict[str, dict[str, float]]:
    """Mean gold accuracy and the share of workers under each threshold, per kind."""
    names = sorted(graded)
    rng = random.Random(1)
    figures: dict[str, dict[str, float]] = {}
    for kind in KINDS:
        accuracies = []
        for _ in range(workers):
            n = correct = 0
            for name in rng.sample(names, min(hits, len(names))):
                for labels in graded[name]:
                    label = labels.get(kind)
                    if label in (CORRECT, INCORRECT, UNANSWERED):
                        n += 1
                        correct += label == CORRECT
            if n:
                accuracies.append(correct / n)
        figures[kind] = {
            "workers": len(accuracies),
            "mean_accuracy": round(statistics.mean(accuracies), 3),
            **{
                f"under_{t:g}": round(sum(a < t for a in accuracies) / len(accuracies), 3) for t in THRESHOLDS
            },
        }
    return figures


def main() -> None:
    """Train the grader as the platform does, grade, simulate and print a table and a JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--semeval", type=Path, required=True, help="folder holding semeval2013-task7/")
    parser.add_argument("--syllabusqa", type=Path, required=True, help="the SyllabusQA release folder")
    parser.add_argument("--questions", type=int, default=3, help="known-answer questions per HIT")
    parser.add_argument("--hits", type=int, default=4, help="HITs per worker, on different syllabi")
    parser.add_argument("--workers", type=int, default=300, help="simulated workers per kind")
    args = parser.parse_args()
    root = args.semeval / "semeval2013-task7"
    start = time.perf_counter()
    train = [q for corpus in ("beetle", "sciEntsBank") for q in load_split(root, corpus, "train", "2way")]
    rows, labels, _ = examples(train)
    model = train_classifier(rows, labels)
    graded = graded_answers(args.syllabusqa, model, args.questions)
    figures = simulate(graded, args.hits, args.workers)
    took = time.perf_counter() - start
    print(
        f"{len(graded)} syllabi with a quiz, {args.questions} questions per HIT, {args.hits} HITs per "
        f"worker, {args.workers} workers per kind ({took:.1f} s)"
    )
    print("\n| worker | mean gold accuracy | " + " | ".join(f"under {t:.0%}" for t in THRESHOLDS) + " |")
    print("| --- | ---: | " + " | ".join("---:" for _ in THRESHOLDS) + " |")
    for kind, f in figures.items():
        cells = [kind, f"{f['mean_accuracy']:.1%}"] + [f"{f[f'under_{t:g}']:.1%}" for t in THRESHOLDS]
        print("| " + " | ".join(cells) + " |")
    print(json.dumps({"questions": args.questions, "hits": args.hits, "figures": figures}))


if __name__ == "__main__":
    main()
