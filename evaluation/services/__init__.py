"""Django-side services of the evaluation app: release items, benchmark runs, leaderboard tables.

The pure logic (baselines, metrics, judges) stays in ``evaluation/*.py``; these modules load rows,
call it and store what it returns on :class:`evaluation.models.BenchmarkRun`.
"""
