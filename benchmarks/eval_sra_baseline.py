"""SemEval-2013 SRA lexical-similarity baseline (8 overlap features + decision tree) on the real 2-way data.

For each corpus: 10-fold cross-validation on train (grouped by nothing, as in Dzikovska et al. 2012),
then train on all of train and test on unseen answers / questions / domains. Prints accuracy, macro F1 and
the corrective-feedback P/R/F1 beside the paper's corrective-feedback F1 (0.77 Beetle, 0.66 SciEntsBank,
5-way labels, 10-fold CV), then a JSON line. 5-way label folders are used when present (--ways 5way).

    .venv/bin/python benchmarks/eval_sra_baseline.py [--ways 2way]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sklearn.model_selection import StratifiedKFold  # noqa: E402

from annotation.screening.sra import examples, load_split, prf_report, train_classifier  # noqa: E402
from config.shared_data import dataset_dir  # noqa: E402

PAPER_CORRECTIVE_F1 = {"beetle": 0.77, "sciEntsBank": 0.66}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ways", default="2way", choices=["2way", "5way"])
    args = parser.parse_args()
    data = dataset_dir("semeval2013_sra")
    if data is None:
        raise SystemExit("semeval2013_sra not found (set CROWDQA_SHARED_DATA)")
    root = data / "semeval2013-task7"
    results: dict[str, dict[str, object]] = {}
    print(
        f"{'corpus':<12} {'split':<17} {'n':>5} {'acc':>6} {'macroF':>7} "
        f"{'CF-P':>6} {'CF-R':>6} {'CF-F':>6}  paper CF-F"
    )
    for corpus in ("beetle", "sciEntsBank"):
        rows, labels, _ = examples(load_split(root, corpus, "train", args.ways))
        predicted = [""] * len(labels)
        for train_idx, test_idx in StratifiedKFold(10, shuffle=True, random_state=0).split(rows, labels):
            model = train_classifier([rows[i] for i in train_idx], [labels[i] for i in train_idx])
            for i, label in zip(test_idx, model.predict([rows[i] for i in test_idx]), strict=False):
                predicted[i] = str(label)
        reports = {"train_10fold_cv": prf_report(labels, predicted)}
        model = train_classifier(rows, labels)
        splits = ["unseen_answers", "unseen_questions"] + (
            ["unseen_domains"] if corpus == "sciEntsBank" else []
        )
        for split in splits:
            test_rows, test_labels, _ = examples(load_split(root, corpus, split, args.ways))
            reports[split] = prf_report(test_labels, [str(p) for p in model.predict(test_rows)])
        for split, report in reports.items():
            cf = report["corrective_feedback"]
            print(
                f"{corpus:<12} {split:<17} {report['n']:>5} {report['accuracy']:>6.3f} "
                f"{report['macro']['f']:>7.3f} "
                f"{cf['p']:>6.3f} {cf['r']:>6.3f} {cf['f']:>6.3f}  {PAPER_CORRECTIVE_F1[corpus]:.2f}"
            )
        results[corpus] = reports
    print(
        json.dumps(
            {"ways": args.ways, "paper_corrective_feedback_f1": PAPER_CORRECTIVE_F1, "results": results}
        )
    )


if __name__ == "__main__":
    main()
