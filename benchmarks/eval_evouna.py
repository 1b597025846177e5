"""Lexical Match and offline lexical entailment evaluators against EVOUNA's human judgments.

For each dataset (NQ, TQ) and system (DPR-FiD, InstructGPT = gpt35, ChatGPT, GPT-4, BingChat), compares an
evaluator's correct/incorrect verdicts with the human ones on the proper questions with a judgment, and
prints F1 (of the "correct" class) and accuracy beside Yao & Barbosa's Table 1. Also prints the answer
hierarchy set sizes (paper Tables 9-10). The entailment rows here use the OFFLINE LEXICAL approximation
(rule-based QA2D + lexical coverage), not GPT-3.5 or DeBERTa NLI; ``--llm`` uses the OpenAI-compatible
endpoint in LLM_API_BASE / LLM_MODEL for QA2D and NLI instead (the paper's method), with ``--limit``.

    .venv/bin/python benchmarks/eval_evouna.py [--limit N] [--llm]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from annotation.screening.sra import prf_report  # noqa: E402
from config.shared_data import dataset_dir  # noqa: E402
from evaluation.entailment import EntailmentJudge, LexicalNLIBackend  # noqa: E402
from evaluation.lexical_match import lexical_match  # noqa: E402

SYSTEMS = ("fid", "gpt35", "chatgpt", "gpt4", "newbing")
# Yao & Barbosa (2024) Table 1, (F1, Acc) per system in SYSTEMS order, as printed.
PAPER = {
    "NQ": {
        "Lexical Match": [(92.0, 89.7), (86.9, 84.8), (85.0, 80.3), (87.6, 82.5), (87.8, 82.3)],
        "Entailment (GPT-3.5)": [(94.8, 92.5), (92.7, 90.2), (92.6, 88.9), (93.8, 90.1), (92.6, 88.1)],
        "Entailment (small: Llama-2-7B + DeBERTa)": [
            (91.5, 88.5),
            (88.0, 85.4),
            (87.7, 83.2),
            (89.9, 85.0),
            (87.8, 82.0),
        ],
    },
    "TQ": {
        "Lexical Match": [(91.8, 94.7), (94.8, 92.3), (95.2, 92.3), (94.8, 91.1), (94.1, 89.8)],
        "Entailment (GPT-3.5)": [(96.8, 94.7), (96.6, 94.2), (96.6, 94.2), (97.4, 95.3), (95.9, 92.5)],
    },
}


def judged(record: dict, system: str) -> bool | None:
    value = record.get(f"judge_{system}")
    if isinstance(value, bool):
        return value
    return None  # null (NQ) or the string "nan" (TQ)


def f1_acc(gold: list[bool], predicted: list[bool]) -> tuple[float, float]:
    report = prf_report(
        ["correct" if g else "incorrect" for g in gold], ["correct" if p else "incorrect" for p in predicted]
    )
    f1 = report["per_class"]["correct"]["f"] or 0.0
    return 100 * f1, 100 * (report["accuracy"] or 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=0, help="first N proper questions per dataset (0 = all)")
    parser.add_argument(
        "--llm",
        nargs="?",
        const="openai",
        choices=("openai", "local"),
        help="the paper's method with an LLM: 'openai' (LLM_API_BASE, costs API calls, the default) or "
        "'local' (the default SmolLM2-135M on CPU; slow, use --limit)",
    )
    args = parser.parse_args()
    root = dataset_dir("evouna")
    if root is None:
        raise SystemExit("evouna not found (set CROWDQA_SHARED_DATA)")
    if args.llm:
        from evaluation.llm import HFCausalLMBackend, LLMBackend, OpenAIChatBackend

        backend: LLMBackend = OpenAIChatBackend.from_env() if args.llm == "openai" else HFCausalLMBackend()
        # Verdicts only: the partial marks' explanation calls would not change them.
        judge, label = EntailmentJudge.llm(backend, partial_marks=False), f"Entailment ({backend.name})"
    else:
        judge = EntailmentJudge(LexicalNLIBackend(threshold=1.0))
        label = "Entailment (offline lexical approx.)"
    summary: dict[str, object] = {}
    for dataset in ("NQ", "TQ"):
        records = json.loads((root / f"{dataset}.json").read_text(encoding="utf-8"))
        records = [r for r in records if not r.get("improper") and r.get("golden_answer")]
        if args.limit:
            records = records[: args.limit]
        print(
            f"\nEVOUNA-{dataset}: {len(records)} proper questions; F1 / Acc per system ({', '.join(SYSTEMS)})"
        )
        rows: dict[str, list[tuple[float, float]]] = {"Lexical Match": [], label: []}
        sets: Counter[str] = Counter()
        for system in SYSTEMS:
            gold, lm, ent = [], [], []
            for record in records:
                human = judged(record, system)
                answer = record.get(f"answer_{system}")
                if human is None or not isinstance(answer, str):
                    continue
                golds = [g.strip() for g in record["golden_answer"].split("/") if g.strip()]
                gold.append(human)
                lm.append(lexical_match(answer, golds))
                result = judge.evaluate(record["question"], answer, golds)
                ent.append(result.correct)
                sets[result.answer_set] += 1
            rows["Lexical Match"].append(f1_acc(gold, lm))
            rows[label].append(f1_acc(gold, ent))
        for name, values in rows.items():
            print(f"  ours  {name:<42} " + " | ".join(f"{f:5.1f} {a:5.1f}" for f, a in values))
        for name, values in PAPER[dataset].items():
            print(f"  paper {name:<42} " + " | ".join(f"{f:5.1f} {a:5.1f}" for f, a in values))
        print(f"  answer sets ({label}): {dict(sets)}")
        summary[dataset] = {
            "n_questions": len(records),
            "ours": rows,
            "paper": PAPER[dataset],
            "sets": dict(sets),
        }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
