"""App configuration for crowdqa's `worker` app: the crowd worker's face.

Everything a crowd worker reaches lives here: platform arrival, the admission rule, claiming work, the
signed HIT links and the HIT pages, framing inside a platform's iframe, and the local crowd's home,
login and invite pages. It sits on top of the domain apps (the data model and HIT kinds in
``annotation``, platforms in ``crowd``); no domain app imports it. It has no models.
"""

from django.apps import AppConfig


class WorkerConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "worker"
