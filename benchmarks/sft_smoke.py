"""SFT smoke benchmark: LoRA-fine-tune the default SmolLM2 on real SyllabusQA train items, score test answers.

Fine-tunes for ``--steps`` steps on a seeded sample of ``--train-items`` train items (J.1 RAG prompt,
answer-only loss), then answers a seeded sample of ``--test-items`` test questions three ways with the
same base model: ``zero-shot`` (J.1, no snippets), ``rag`` (J.1 + top-5 BM25 snippets, no adapter) and
``sft`` (the RAG prompt with the adapter), and prints ROUGE-L F1 for each and a final JSON line.
Greedy decoding, fixed seeds: rerunning gives the same figures (CPU float arithmetic permitting).

    .venv/bin/python benchmarks/sft_smoke.py --steps 60 --train-items 400 --test-items 20
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.eval_search_baseline import load_items  # noqa: E402
from config.shared_data import dataset_dir  # noqa: E402
from evaluation.baselines import SystemOptions, run_system  # noqa: E402
from evaluation.llm import HFCausalLMBackend  # noqa: E402
from evaluation.metrics import score  # noqa: E402
from evaluation.sft import SftConfig, finetune_lora, select_items  # noqa: E402


def main() -> None:
    """Parse arguments, fine-tune, generate with the three systems and print their ROUGE-L F1."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60, help="optimizer steps")
    parser.add_argument("--train-items", type=int, default=400, help="seeded sample of train items (0 = all)")
    parser.add_argument("--test-items", type=int, default=20, help="seeded sample of test items")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--max-length", type=int, default=512, help="tokens per training example")
    parser.add_argument("--learning-rate", type=float, default=2e-4)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="adapter folder (default: a temporary one)")
    args = parser.parse_args()
    root = dataset_dir("syllabusqa")
    if root is None:
        raise SystemExit("SyllabusQA not found (set CROWDQA_SHARED_DATA)")
    train = load_items(root, "train")
    test = select_items(load_items(root, "test"), args.test_items, args.seed)
    config = SftConfig(
        max_steps=args.steps,
        batch_size=args.batch_size,
        max_length=args.max_length,
        learning_rate=args.learning_rate,
        seed=args.seed,
        max_train_items=args.train_items or None,
    )
    with tempfile.TemporaryDirectory(prefix="sft_smoke_") as tmp:
        out = args.out or Path(tmp) / "adapter"
        result = finetune_lora(train, out, config, lambda d, t: print(f"\rstep {d}/{t}", end="", flush=True))
        print()
        print(
            f"fine-tuned {result.n_train} items, {result.steps} steps x {args.batch_size} "
            f"in {result.seconds:.0f}s; "
            f"loss {result.first_loss:.3f} -> {result.last_loss:.3f} (mean {result.train_loss:.3f}); "
            f"{result.mean_snippets:.2f} snippets per prompt, {result.n_answer_truncated} answers cut"
        )
        base = HFCausalLMBackend()
        figures: dict[str, dict[str, float]] = {}
        for system in ("zero-shot", "rag", "sft"):
            if system == "sft":
                options = SystemOptions(adapter_dir=str(out), max_new_tokens=args.max_new_tokens)
            else:
                options = SystemOptions(backend=base, max_new_tokens=args.max_new_tokens)
            start = time.perf_counter()
            predictions = run_system(system, test, options)
            seconds = time.perf_counter() - start
            rouge = score(predictions, test, ["rouge_l"])["rouge_l_f1"]
            figures[system] = {"rouge_l_f1": rouge, "seconds": round(seconds, 1)}
            print(f"{system:<10} n={len(test):>3} ROUGE-L F1 {rouge:.4f} ({seconds:.0f}s)")
            for prediction in predictions[:2]:
                print(f"    {prediction.id}: {prediction.answer[:100]!r}")
    summary = {
        "steps": result.steps,
        "n_train": result.n_train,
        "n_test": len(test),
        "batch_size": args.batch_size,
        "max_length": args.max_length,
        "first_loss": round(result.first_loss, 4),
        "last_loss": round(result.last_loss, 4),
        "train_loss": round(result.train_loss, 4),
        "train_seconds": round(result.seconds, 1),
        "mean_snippets": round(result.mean_snippets, 2),
        **{f"{system}_rouge_l_f1": round(v["rouge_l_f1"], 4) for system, v in figures.items()},
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
