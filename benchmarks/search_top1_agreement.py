"""Per-item top-1 agreement of the search baseline's analyzer with the SyllabusQA authors' Lucene analyzer.

The authors retrieved with rank-bm25 over terms from Pyserini's ``get_lucene_analyzer(stemmer="porter")``
(Java Lucene). Their retrieval outputs (``data/retrievalauggen/*.json``) are not published (their
repository ignores ``*.json``), so this script recomputes them: the same syllabus chunks (our
``split_text``, which reproduces LangChain's splitter) and the same BM25, once with terms from the real
Lucene analyzer (Anserini's ``DefaultEnglishAnalyzer`` from the jar Pyserini ships, run by
benchmarks/LuceneAnalyze.java) and once with ``evaluation.retrieval.analyze``, and compares the top-1
chunk of every item. Queries are cleaned as the authors' ``clean_str`` does. A differing item is put in
one category: ``tie`` (our chunk scores the same as theirs under their terms), ``query`` (the question's
terms differ), ``chunks`` (only chunk terms differ); term differences are also split into stemming
(the unstemmed terms agree) and tokenisation.

Needs Java 11+ and the Anserini jar:
    .venv/bin/pip download pyserini==0.22.1 --no-deps -d /tmp/pyserini
    unzip -o /tmp/pyserini/pyserini-0.22.1-py3-none-any.whl 'pyserini/resources/jars/*' -d /tmp/pyserini
    .venv/bin/python benchmarks/search_top1_agreement.py \
        --anserini-jar /tmp/pyserini/pyserini/resources/jars/anserini-0.22.1-fatjar.jar \
        [--decoding iso-8859-1]
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
from rank_bm25 import BM25Okapi

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from eval_search_baseline import DECODINGS, load_items  # noqa: E402

from config.shared_data import dataset_dir  # noqa: E402
from evaluation.chunking import split_text  # noqa: E402
from evaluation.retrieval import _POSSESSIVE_RE, LUCENE_ENGLISH_STOP_WORDS, analyze, words  # noqa: E402

HERE = Path(__file__).resolve().parent


def clean_str(text: str) -> str:
    """The authors' query cleaning: whitespace runs become one space, ends stripped."""
    return re.sub(r"\s+", " ", text).strip()


def lucene_terms(texts: list[str], jar: Path, java: str, stem: bool = True) -> list[list[str]]:
    """Analyze texts with the real Lucene analyzer (one JVM for all of them)."""
    payload = "".join(base64.b64encode(t.encode("utf-8")).decode("ascii") + "\n" for t in texts)
    command = [java, "-cp", str(jar), str(HERE / "LuceneAnalyze.java")] + ([] if stem else ["--no-stem"])
    done = subprocess.run(
        command, input=payload.encode("utf-8"), capture_output=True, check=True, timeout=1800
    )
    print(done.stderr.decode().strip(), file=sys.stderr)
    lines = done.stdout.decode("utf-8").split("\n")[: len(texts)]
    return [line.split("\t") if line else [] for line in lines]


def unstemmed(text: str) -> list[str]:
    """Our terms before stemming (for telling stemming from tokenisation differences)."""
    terms = []
    for word in words(text):
        token = _POSSESSIVE_RE.sub("", word).lower()
        if token and token not in LUCENE_ENGLISH_STOP_WORDS:
            terms.append(token)
    return terms


def top1(chunk_terms: list[list[str]], query_terms: list[str]) -> tuple[int, np.ndarray]:
    """The authors' choice: ``np.argsort(scores)[::-1][0]`` over rank-bm25 scores (and the scores)."""
    scores = BM25Okapi(chunk_terms).get_scores(query_terms)
    return int(np.argsort(scores)[::-1][0]), scores


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--anserini-jar", type=Path, required=True)
    parser.add_argument("--java", default="java")
    parser.add_argument("--split", default="test", choices=["train", "val", "test"])
    parser.add_argument("--decoding", default="iso-8859-1", choices=sorted(DECODINGS))
    parser.add_argument("--examples", type=int, default=8, help="differing items to print")
    args = parser.parse_args()
    root = dataset_dir("syllabusqa")
    if root is None:
        raise SystemExit("SyllabusQA not found (set CROWDQA_SHARED_DATA)")
    items = load_items(root, args.split, args.decoding)
    chunks = {item.document_name: split_text(item.document, 200, 50) for item in items}
    texts = [c for name in chunks for c in chunks[name]] + [clean_str(item.question) for item in items]
    stemmed = dict(zip(texts, lucene_terms(texts, args.anserini_jar, args.java), strict=True))
    plain = dict(zip(texts, lucene_terms(texts, args.anserini_jar, args.java, stem=False), strict=True))
    ours = {t: analyze(t) for t in texts}

    token_diffs: Counter[tuple[str, str]] = Counter()
    texts_differing = {"tokenisation": 0, "stemming only": 0}
    for text in texts:
        if ours[text] != stemmed[text]:
            kind = "stemming only" if unstemmed(text) == plain[text] else "tokenisation"
            texts_differing[kind] += 1
            ours_only = Counter(ours[text]) - Counter(stemmed[text])
            theirs_only = Counter(stemmed[text]) - Counter(ours[text])
            token_diffs[(" ".join(sorted(ours_only)), " ".join(sorted(theirs_only)))] += 1

    agree, categories, examples = 0, Counter(), []
    for item in items:
        doc_chunks = chunks[item.document_name]
        query = clean_str(item.question)
        theirs, their_scores = top1([stemmed[c] for c in doc_chunks], stemmed[query])
        mine, _ = top1([ours[c] for c in doc_chunks], ours[query])
        if theirs == mine:
            agree += 1
            continue
        if np.isclose(their_scores[mine], their_scores[theirs]):
            category = "tie"
        elif ours[query] != stemmed[query]:
            category = "query"
        else:
            category = "chunks"
        categories[category] += 1
        if len(examples) < args.examples:
            examples.append(
                {
                    "id": item.id,
                    "category": category,
                    "query": query,
                    "ours": doc_chunks[mine][:80],
                    "theirs": doc_chunks[theirs][:80],
                }  # fmt: skip
            )

    n = len(items)
    print(f"SyllabusQA {args.split} ({args.decoding}): {n} items, {len(texts)} texts analyzed")
    print(
        f"top-1 chunk identical: {agree} of {n} ({agree / n:.1%}); differing: {n - agree} {dict(categories)}"
    )
    print(f"texts whose terms differ from Lucene's: {texts_differing}")
    for (mine_only, theirs_only), count in token_diffs.most_common(15):
        print(f"  {count:>4}x ours only [{mine_only}] / Lucene only [{theirs_only}]")
    for example in examples:
        print(json.dumps(example, ensure_ascii=False))
    print(json.dumps({"split": args.split, "decoding": args.decoding, "n": n, "top1_identical": agree,
                      "differing": dict(categories), "texts_differing": texts_differing}))  # fmt: skip


if __name__ == "__main__":
    main()
