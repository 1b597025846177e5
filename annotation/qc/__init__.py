"""Heuristic QC rules of QA pairs: a HIT kind's live checks of a submission and the QC of stored pairs."""
