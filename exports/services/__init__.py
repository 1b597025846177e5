"""Django-side services of the exports app (the pure release logic is in exports/*.py)."""
