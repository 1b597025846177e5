"""Reads whose SQL the ORM compiles once per thread instead of once per request.

Django turns a queryset into SQL every time it is evaluated. On the worker's hot path that
compilation costs more than the database: the signed link's read (an assignment with its HIT, batch,
corpus, document and worker, and the consent check) takes about 1 ms of CPU to compile and 0.1 ms to
run. A :class:`PreparedRead` is still written as an ordinary queryset, with one value left open
(the primary key, the HIT id...). The first call in a thread compiles it, with a marker in place of
that value. Every later call runs the same SQL with the real value. Instances are then built the way
``QuerySet.__iter__`` builds them: the fields' own converters, ``Model.from_db``, and the related
objects of ``select_related``. No SQL is written by hand, and the queryset stays the only definition
of the read.

This leans on the query compiler's attributes (``select``, ``klass_info``, ``annotation_col_map``)
and on ``django.db.models.query.get_related_populators``, which Django does not document. So:

- it reproduces ``ModelIterable`` with ``select_related`` and annotations only, and refuses (raises
  :class:`Unsupported` when compiling) every queryset that asks for more: ``prefetch_related``,
  ``values()`` / ``values_list()`` / ``dates()`` (another iterable class), ``defer()`` / ``only()``,
  ``extra()``, combined queries (``union``...), a related manager's queryset (whose instances get their
  cached parent), slicing and another database than the read's;
- ``tests/test_prepared_reads.py`` compares every read with the plain queryset's, field by field;
- the system check ``crowdqa.E020`` fails on a Django version it was not tested with
  (:data:`TESTED_DJANGO`), so an upgrade is tested here before it serves.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Model, QuerySet
from django.db.models.query import ModelIterable, get_related_populators
from django.db.transaction import TransactionManagementError

M = TypeVar("M", bound=Model)

#: The value compiled in place of the open one; found again among the compiled parameters.
MARKER = -1_999_999_937

#: The Django feature releases whose compiler this module was tested against (tests/test_prepared_reads.py).
TESTED_DJANGO: frozenset[tuple[int, int]] = frozenset({(5, 2)})


class Unsupported(ValueError):
    """The queryset uses a feature a prepared read does not reproduce; evaluate it as a queryset."""


def unsupported_features(queryset: QuerySet[Any], using: str) -> list[str]:
    """What ``queryset`` asks for that :class:`PreparedRead` would silently not do (empty: nothing)."""
    query = queryset.query
    found = []
    if queryset._prefetch_related_lookups:
        found.append("prefetch_related()")
    if queryset._iterable_class is not ModelIterable:
        found.append("values(), values_list() or dates() (not model instances)")
    if query.deferred_loading[0] or not query.deferred_loading[1]:
        found.append("defer() or only()")
    if query.extra or query.extra_tables or query.extra_order_by:
        found.append("extra()")
    if query.combinator:
        found.append(f"{query.combinator}()")
    if queryset._known_related_objects:
        found.append("a related manager's queryset (its instances' cached parent)")
    if query.low_mark or query.high_mark is not None:
        found.append("slicing")
    if queryset._db not in (None, using):
        found.append(f"using({queryset._db!r}) (the read's database is {using!r})")
    if queryset._fields is not None:
        found.append("a field list")
    return found


@dataclass(frozen=True)
class _Compiled:
    connection: Any
    sql: str
    params: tuple[Any, ...]
    slot: int
    compiler: Any
    converters: dict[int, Any]
    build: Callable[[list[Any]], Any]
    locks: bool


class PreparedRead(Generic[M]):
    """A queryset with one open value, compiled once per thread and database connection.

    Args:
        build: returns the queryset for a given integer (a primary or foreign key); it is called once
            per thread, with :data:`MARKER`, which must reach the SQL unchanged as exactly one
            parameter (an exact lookup; a compiled read that does not find it raises ValueError).
        using: the database alias.
    """

    def __init__(self, build: Callable[[Any], QuerySet[M]], using: str = DEFAULT_DB_ALIAS) -> None:
        self._build = build
        self._using = using
        self._local = threading.local()

    def _compiled(self) -> _Compiled:
        connection = connections[self._using]
        compiled: _Compiled | None = getattr(self._local, "compiled", None)
        if compiled is None or compiled.connection is not connection:
            compiled = self._compile(connection)
            self._local.compiled = compiled
        return compiled

    def _compile(self, connection: Any) -> _Compiled:
        queryset = self._build(MARKER)
        refused = unsupported_features(queryset, self._using)
        if refused:
            model = queryset.model._meta.label
            raise Unsupported(f"a prepared read of {model} does not reproduce {', '.join(refused)}")
        compiler = queryset.query.get_compiler(using=self._using)
        # For a locking read, as_sql itself refuses to compile outside a transaction.
        sql, params = compiler.as_sql()
        locks = bool(queryset.query.select_for_update)
        params = tuple(params)
        if params.count(MARKER) != 1:
            raise ValueError(f"the open value must reach the SQL as one parameter, got {params!r}")
        fields = [column[0] for column in compiler.select[: compiler.col_count]]
        return _Compiled(
            connection=connection,
            sql=sql,
            params=params,
            slot=params.index(MARKER),
            compiler=compiler,
            converters=compiler.get_converters(fields),
            build=self._instance_builder(compiler),
            locks=locks,
        )

    def _instance_builder(self, compiler: Any) -> Callable[[list[Any]], Any]:
        """A row -> instance function, as ``ModelIterable`` makes it (select_related and annotations)."""
        select, klass_info, annotation_col_map = (
            compiler.select,
            compiler.klass_info,
            compiler.annotation_col_map,
        )
        model_cls = klass_info["model"]
        start, end = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
        init_list = [column[0].target.attname for column in select[start:end]]
        populators = get_related_populators(klass_info, select, self._using)

        def build(row: list[Any]) -> Any:
            obj = model_cls.from_db(self._using, init_list, row[start:end])
            for populator in populators:
                populator.populate(row, obj)
            for name, position in annotation_col_map.items():
                setattr(obj, name, row[position])
            return obj

        return build

    def all(self, value: Any) -> list[M]:
        """Every instance the queryset gives for ``value``."""
        compiled = self._compiled()
        if compiled.locks and compiled.connection.get_autocommit():
            raise TransactionManagementError("select_for_update cannot be used outside of a transaction.")
        params = list(compiled.params)
        params[compiled.slot] = value
        with compiled.connection.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            rows: Any = cursor.fetchall()
        if compiled.converters:
            rows = compiled.compiler.apply_converters(rows, compiled.converters)
        return [compiled.build(list(row)) for row in rows]

    def get(self, value: Any) -> M:
        """The one instance for ``value``.

        Raises:
            Model.DoesNotExist: (the queryset's model's) when there is none.
            Model.MultipleObjectsReturned: when there are several.
        """
        found = self.all(value)
        if len(found) == 1:
            return found[0]
        model = self._compiled().compiler.query.model
        if not found:
            raise model.DoesNotExist(f"{model._meta.object_name} matching query does not exist.")
        raise model.MultipleObjectsReturned(f"get() returned more than one {model._meta.object_name}")
