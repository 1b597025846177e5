"""How well the screening quiz's grader separates right from wrong answers, on SemEval and on SyllabusQA.

Why: the quiz (annotation/screening/quiz.py) grades a worker's answers with the SemEval-2013
lexical-similarity baseline trained on Beetle + SciEntsBank 2-way train, exactly as the platform's
grader (annotation/screening/grader.py) trains it. Its thresholds (MIN_CONFIDENCE, PASS_FRACTION)
rest on these figures:

1. SemEval test splits with questions the classifier never saw: accuracy, the share of right answers
   graded correct, the share of wrong answers graded correct, and accuracy per confidence band.
2. SyllabusQA, the quiz's own domain: quiz questions chosen as the platform chooses them (3 per
   syllabus, seeded) from the real release. Two stand-ins for a right answer (yes/no questions left
   out, since "Yes" never overlaps its span): the pair's written answer graded against its copied spans
   only, and its first span graded against the written answer only. A wrong answer is another
   question's answer on the same syllabus, graded against all references.

Usage:
    .venv/bin/python benchmarks/screening_grader.py --semeval /work/shared/data/semeval2013_sra \
        --syllabusqa /work/shared/data/syllabusqa [--per-syllabus 3] [--seeds 5]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from annotation.importers.syllabusqa_csv import read_qa_rows  # noqa: E402
from annotation.screening.quiz import (  # noqa: E402
    MIN_CONFIDENCE,
    QuizAnswer,
    QuizCandidate,
    choose_questions,
    grade_item,
)
from annotation.screening.sra import CORRECT, examples, load_split, train_classifier  # noqa: E402

TEST_SPLITS = (
    ("beetle", "unseen_questions"),
    ("sciEntsBank", "unseen_questions"),
    ("sciEntsBank", "unseen_domains"),
)
BANDS = ((0.5, 0.6), (0.6, 0.7), (0.7, 0.8), (0.8, 0.9), (0.9, 1.01))


def semeval_figures(root: Path, model: object) -> dict[str, dict[str, object]]:
    """Accuracy, right-graded-correct, wrong-graded-correct and per-band accuracy per unseen split."""
    out: dict[str, dict[str, object]] = {}
    for corpus, split in TEST_SPLITS:
        rows, labels, _ = examples(load_split(root, corpus, split))
        proba = model.predict_proba(rows)  # type: ignore[attr-defined]
        classes = list(model.classes_)  # type: ignore[attr-defined]
        predicted = [classes[p.argmax()] for p in proba]
        confidence = [float(p.max()) for p in proba]
        right = [i for i, gold in enumerate(labels) if gold == CORRECT]
        wrong = [i for i, gold in enumerate(labels) if gold != CORRECT]
        bands = {}
        for low, high in BANDS:
            idx = [i for i, c in enumerate(confidence) if low <= c < high]
            if idx:
                bands[f"{low:.1f}-{min(high, 1.0):.1f}"] = {
                    "n": len(idx),
                    "accuracy": round(sum(predicted[i] == labels[i] for i in idx) / len(idx), 3),
                }
        out[f"{corpus} {split}"] = {
            "n": len(labels),
            "accuracy": round(sum(p == g for p, g in zip(predicted, labels, strict=True)) / len(labels), 3),
            "right_graded_correct": round(sum(predicted[i] == CORRECT for i in right) / len(right), 3),
            "wrong_graded_correct": round(sum(predicted[i] == CORRECT for i in wrong) / len(wrong), 3),
            "bands": bands,
        }
    return out


def syllabusqa_figures(root: Path, model: object, per_syllabus: int, seeds: int) -> dict[str, object]:
    """Labels the quiz gives to paraphrased right answers and to wrong answers on real SyllabusQA quizzes."""
    by_syllabus: dict[str, list] = defaultdict(list)
    for row in read_qa_rows(root):
        by_syllabus[row.syllabus_name].append(row)
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for seed in range(seeds):
        rng = random.Random(seed)
        for name in sorted(by_syllabus):
            rows = by_syllabus[name]
            spans_of = {r.id: tuple(s for s in r.spans if s.strip()) for r in rows}
            candidates = [
                QuizCandidate(r.id, r.question_type, r.question, r.answer, spans_of[r.id]) for r in rows
            ]
            answers = {r.id: r.answer.strip() for r in rows}
            for question in choose_questions(candidates, per_syllabus, seed):
                answer = answers[question.pair_id]
                spans = [s for s in spans_of[question.pair_id] if s.strip() != answer]
                if spans and question.question_type != "yes/no":  # "Yes" never overlaps its span
                    written = QuizAnswer(question.question, answer, tuple(spans))
                    counts["right, written (answer vs spans)"][grade_item(written, model).label] += 1
                    copied = QuizAnswer(question.question, spans[0], (answer,))
                    counts["right, copied (span vs answer)"][grade_item(copied, model).label] += 1
                others = [
                    a
                    for pid, a in answers.items()
                    if pid != question.pair_id and a and a != answers[question.pair_id]
                ]
                if others:
                    item = QuizAnswer(question.question, rng.choice(others), question.references)
                    counts["wrong"][grade_item(item, model).label] += 1
    return {kind: dict(sorted(c.items())) for kind, c in counts.items()}


def main() -> None:
    """Train as the platform does, print both tables and a JSON summary line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--semeval", type=Path, required=True, help="folder holding semeval2013-task7/")
    parser.add_argument("--syllabusqa", type=Path, required=True, help="the SyllabusQA release folder")
    parser.add_argument("--per-syllabus", type=int, default=3, help="quiz questions per syllabus")
    parser.add_argument("--seeds", type=int, default=5, help="quiz draws per syllabus")
    args = parser.parse_args()
    root = args.semeval / "semeval2013-task7"
    start = time.perf_counter()
    train = [q for corpus in ("beetle", "sciEntsBank") for q in load_split(root, corpus, "train", "2way")]
    rows, labels, _ = examples(train)
    model = train_classifier(rows, labels)
    print(f"trained on {len(rows)} answers in {time.perf_counter() - start:.1f} s")
    semeval = semeval_figures(root, model)
    print("\n| split | n | accuracy | right graded correct | wrong graded correct |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, f in semeval.items():
        cells = [name, f["n"], f["accuracy"], f["right_graded_correct"], f["wrong_graded_correct"]]
        print("| " + " | ".join(str(c) for c in cells) + " |")
    quiz = syllabusqa_figures(args.syllabusqa, model, args.per_syllabus, args.seeds)
    print(f"\nSyllabusQA quizzes (confidence below {MIN_CONFIDENCE} is 'uncertain'):")
    for kind, labels_count in quiz.items():
        total = sum(labels_count.values())
        shares = ", ".join(f"{label} {n} ({n / total:.1%})" for label, n in labels_count.items())
        print(f"  {kind} answers ({total}): {shares}")
    print(json.dumps({"semeval": semeval, "syllabusqa": quiz}))


if __name__ == "__main__":
    main()
