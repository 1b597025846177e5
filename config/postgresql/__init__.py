"""crowdqa's PostgreSQL database backend: Django's, with a health check that asks the server only when it
may have something to say (:mod:`config.postgresql.base`)."""
