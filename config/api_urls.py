"""The URLconf of requests under ``/api/``: the site's routes plus the REST API's.

The REST API brings Django REST framework, drf-spectacular, ``requests`` and Django's test client (which
drf-spectacular imports): about 25 MB per web worker that serves only HIT pages and the console.
So the site's URLconf (``config.urls``) leaves the API out, and
:class:`config.api_routing.ApiURLConfMiddleware` gives a request under ``/api/`` this URLconf instead
(Django's documented ``request.urlconf``): the first API request in a worker imports the API, and its
reversing and links work as before.
"""

from __future__ import annotations

from django.urls import include, path

from config.urls import handler400, handler403, handler404, handler500  # noqa: F401 - this URLconf's too
from config.urls import urlpatterns as site_patterns

urlpatterns = [path("api/v1/", include("api.urls")), *site_patterns]
