"""Settings for the test suite: the platform's settings with every file it writes moved to a directory
of the test run's own, so ``scripts/test.sh`` can run beside a live ``scripts/demo.sh`` without touching
its SQLite database, media, models or file broker.

The first process of a run (pytest) creates a temporary directory, removed when the run ends, and
exports it as ``CROWDQA_VAR_DIR`` and ``CROWDQA_TEST_VAR_DIR``. Processes the tests start (Celery
workers, a web server) inherit this module through ``DJANGO_SETTINGS_MODULE``; they see
``CROWDQA_TEST_VAR_DIR`` already set and keep the ``CROWDQA_VAR_DIR`` they were given. In the first
process media and models always live in that directory, whatever ``CROWDQA_MEDIA_ROOT`` or
``CROWDQA_MODEL_DIR`` say in the developer's shell, and its own Celery broker is the file broker there
(and its cache in memory) even when ``REDIS_URL`` is set: integration tests reach Redis through the
``redis_url`` fixture, which uses a database of its own.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

_FIRST_PROCESS = not os.environ.get("CROWDQA_TEST_VAR_DIR")
if _FIRST_PROCESS:
    _run_dir = tempfile.mkdtemp(prefix="crowdqa-test-var-")
    atexit.register(shutil.rmtree, _run_dir, ignore_errors=True)
    os.environ["CROWDQA_TEST_VAR_DIR"] = _run_dir
    os.environ["CROWDQA_VAR_DIR"] = _run_dir
    for _name in ("CROWDQA_MEDIA_ROOT", "CROWDQA_MODEL_DIR", "CROWDQA_NLTK_DATA"):
        os.environ.pop(_name, None)

from config.broker import file_broker_options  # noqa: E402
from config.settings import *  # noqa: E402,F403
from config.settings import CELERY_BROKER_DIR  # noqa: E402

if _FIRST_PROCESS:
    CELERY_BROKER_URL = "filesystem://"
    CELERY_BROKER_TRANSPORT_OPTIONS = file_broker_options(CELERY_BROKER_DIR)
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    CROWDQA_FOLLOWUP_BATCHING = False  # its marks need a cache the Celery workers share

# Every process of a test run closes its database connection after each request or task, as before
# persistent connections, so that no worker or server process the tests start holds the test database
# open when it is dropped.
DATABASES["default"]["CONN_MAX_AGE"] = 0  # noqa: F405
