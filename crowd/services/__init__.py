"""Django-side crowd services: the payment ledger, the local provider, the batch life cycle, review,
sync with the platforms and the batch dashboard (the providers themselves live in ``crowd.providers``)."""
