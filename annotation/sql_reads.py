"""Hot reads written as SQL once, turned into model instances with Django's documented APIs.

Django compiles a queryset into SQL every time it is evaluated, and on the worker's hot path that
costs more than the database: the signed link's read (an assignment with its HIT, batch, corpus,
document and worker, and the consent check) takes about 1 ms of CPU to compile, even from a queryset
built once. An :class:`SqlRead` is that read written as SQL when the module is imported, from the
models' own metadata (``Meta.db_table``, each concrete field's column), run through
``connection.cursor()`` ("Executing custom SQL directly"), and turned into instances with
``Model.from_db`` ("Customizing model loading"): instances marked as loaded from the database, which
save, refresh and follow their relations like any other. Related objects are attached by assigning
them to the foreign key (``assignment.hit = hit``), which caches them the way ``select_related`` does.

What the database returns is converted as a queryset would convert it, with documented means only:
each field's ``from_db_value`` (JSON), naive datetimes made aware in the database's time zone (the
``TIME_ZONE`` of ``DATABASES``, UTC by default: how Django stores datetimes on a database without time
zone support, such as SQLite) and booleans made ``bool``. Field types whose values the database
backend itself converts in other ways (decimals, UUIDs, durations, times...) are refused when the read
is built, so a model that gains such a field fails at import and in ``tests/test_sql_reads.py``, which
compares every read with its plain queryset, field by field, on SQLite and PostgreSQL. On PostgreSQL each
read is planned once per database session (:mod:`annotation.sql_prepared`).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, NotSupportedError, connections, models, transaction
from django.db.transaction import TransactionManagementError
from django.utils.dateparse import parse_datetime

from annotation import sql_prepared

M = TypeVar("M", bound=models.Model)

#: Field types whose database values need at most what :func:`_converter` does.
_PLAIN = (
    models.AutoField,
    models.BigAutoField,
    models.SmallAutoField,
    models.IntegerField,  # with Big, Small and the Positive variants
    models.FloatField,
    models.CharField,  # with Slug, Email, URL
    models.TextField,
    models.BooleanField,
    models.DateTimeField,
    models.JSONField,
    models.FileField,  # the stored name; the descriptor wraps it on access
)

#: The database backends whose SQL dialect the reads are written in.
VENDORS = ("postgresql", "sqlite")


def quote(name: str) -> str:
    """A quoted SQL identifier (standard double quotes: PostgreSQL and SQLite)."""
    return '"' + name.replace('"', '""') + '"'


def column(model: type[models.Model], name: str) -> str:
    """The quoted column of ``model``'s field ``name`` (a foreign key's ``<name>_id``), for SQL written
    from the model's metadata."""
    return quote(model._meta.get_field(name).column)


def _database_zone(using: str) -> datetime.tzinfo:
    """The zone a database without time zone support stores datetimes in (``DATABASES`` TIME_ZONE)."""
    name = settings.DATABASES[using].get("TIME_ZONE")
    return datetime.UTC if name is None else ZoneInfo(name)


def _converter(field: models.Field, using: str) -> Callable[[Any, Any], Any] | None:
    """How one column's database value becomes the field's value (None: used as it comes).

    Raises:
        ValueError: for a field type this module does not convert as a queryset would.
    """
    if field.is_relation:
        target = field.target_field
        if not isinstance(target, (models.AutoField, models.BigAutoField, models.IntegerField)):
            raise ValueError(f"{field} refers to a {type(target).__name__} key: not read by SqlRead")
        return None
    if not isinstance(field, _PLAIN):
        raise ValueError(f"{field} is a {type(field).__name__}: SqlRead does not convert it")
    from_db_value = getattr(field, "from_db_value", None)
    if from_db_value is not None:
        return lambda value, connection: from_db_value(value, None, connection)
    if isinstance(field, models.DateTimeField) and settings.USE_TZ:
        zone = _database_zone(using)

        def aware(value: Any, connection: Any) -> Any:
            if isinstance(value, str):
                value = parse_datetime(value)
            if value is not None and value.tzinfo is None:
                value = value.replace(tzinfo=zone)
            return value

        return aware
    if isinstance(field, models.BooleanField):
        return lambda value, connection: value if value is None else bool(value)
    return None


@dataclass(frozen=True)
class _Table:
    """One model's columns in the row: where they are, how they convert, where the instance goes."""

    model: type[models.Model]
    alias: str
    start: int
    pk_index: int
    attnames: tuple[str, ...]
    converters: tuple[tuple[int, Callable[[Any, Any], Any]], ...]
    parent: int | None  # index of the table whose foreign key leads here
    field_name: str  # that foreign key's name ("" for the read's own model)

    def build(self, row: Sequence[Any], connection: Any) -> models.Model | None:
        values = list(row[self.start : self.start + len(self.attnames)])
        if values[self.pk_index] is None:  # an outer join that found nothing
            return None
        for index, convert in self.converters:
            values[index] = convert(values[index], connection)
        return self.model.from_db(connection.alias, self.attnames, values)


class SqlRead(Generic[M]):
    """A SELECT of ``model`` and the objects its foreign keys lead to, as ``select_related`` would bring them.

    Args:
        model: the model of the instances returned.
        related: ``select_related`` paths (``"hit__batch__corpus"``); each model on them is joined
            (inner join for a required foreign key, left outer join for a nullable one and below it)
            and attached to its parent instance.
        where: the condition (SQL), with ``%s`` for each value given to :meth:`all` / :meth:`get`.
        joins: further joins (SQL) the condition needs (not selected).
        extra: attribute name -> (SQL expression, converter), set on each instance (annotations).
        order_by: the ORDER BY clause's expressions (SQL).
        limit: at most this many rows (``LIMIT``; None: every row).

    In ``where``, ``joins``, ``extra`` and ``order_by``, ``{self}`` stands for the read's own table and
    ``{hit__batch}`` for the table a related path brought (short aliases keep the statement short:
    the database parses it, and SQLite's cursor scans it for parameters, on every call).
        lock: take the row lock of the read's own table only (``FOR UPDATE OF``, PostgreSQL); like
            ``select_for_update``, refused outside a transaction.
        skip_locked: with ``lock``, leave out the rows another transaction has locked instead of
            waiting for them (``SKIP LOCKED``, as ``select_for_update(skip_locked=True)``).
        using: the database alias.
    """

    def __init__(
        self,
        model: type[M],
        *,
        where: str,
        related: Sequence[str] = (),
        joins: str = "",
        extra: Mapping[str, tuple[str, Callable[[Any], Any]]] | None = None,
        order_by: str = "",
        limit: int | None = None,
        lock: bool = False,
        skip_locked: bool = False,
        using: str = DEFAULT_DB_ALIAS,
    ) -> None:
        if skip_locked and not lock:
            raise ValueError("skip_locked needs lock")
        self.model = model
        self.using = using
        self.lock = lock
        self._extra = dict(extra or {})
        self._tables: list[_Table] = []
        columns: list[str] = []
        self.aliases: dict[str, str] = {"self": "t0"}
        from_sql = [f"{quote(model._meta.db_table)} t0"]
        self._add_table(model, "t0", None, "", columns)
        outer: set[str] = set()
        for path in sorted({p for r in related for p in _prefixes(r)}):
            parent_path, _, name = path.rpartition("__")
            parent = self._tables[self._index_of(self.aliases[parent_path or "self"])]
            field = parent.model._meta.get_field(name)
            if not (field.many_to_one or field.one_to_one) or not field.concrete:
                raise ValueError(f"{path}: select a forward foreign key or one-to-one, not {field}")
            target = field.related_model
            alias = self.aliases[path] = f"t{len(self._tables)}"
            left = field.null or parent_path in outer
            if left:
                outer.add(path)
            from_sql.append(
                f"{'LEFT OUTER' if left else 'INNER'} JOIN {quote(target._meta.db_table)} {alias} "
                f"ON {parent.alias}.{quote(field.column)} = {alias}.{quote(field.target_field.column)}"
            )
            self._add_table(target, alias, self._index_of(parent.alias), name, columns)
        self._extra_start = len(columns)
        columns.extend(f"{sql} AS {quote(name)}" for name, (sql, _) in self._extra.items())
        sql = f"SELECT {', '.join(columns)} FROM {' '.join(from_sql)} {joins} WHERE {where}"
        if order_by:
            sql += f" ORDER BY {order_by}"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        self._sql = sql.format(**self.aliases)
        self._params = self._sql.count("%s")
        self._locked_sql = self._sql + " FOR UPDATE OF t0" + (" SKIP LOCKED" if skip_locked else "")

    def _add_table(
        self, model: type[models.Model], alias: str, parent: int | None, name: str, columns: list[str]
    ) -> None:
        fields = list(model._meta.concrete_fields)  # from_db's order when every field is loaded
        converters = tuple(
            (i, convert) for i, f in enumerate(fields) if (convert := _converter(f, self.using)) is not None
        )
        self._tables.append(
            _Table(
                model=model,
                alias=alias,
                start=len(columns),
                pk_index=fields.index(model._meta.pk),
                attnames=tuple(f.attname for f in fields),
                converters=converters,
                parent=parent,
                field_name=name,
            )
        )
        columns.extend(f"{alias}.{quote(f.column)}" for f in fields)

    def _index_of(self, alias: str) -> int:
        return next(i for i, t in enumerate(self._tables) if t.alias == alias)

    def sql(self, connection: Any) -> str:
        """The statement as sent to ``connection`` (the lock clause where the database has row locks)."""
        if connection.vendor not in VENDORS:
            raise NotSupportedError(f"SqlRead is written for {', '.join(VENDORS)}, not {connection.vendor}")
        if self.lock and connection.vendor == "postgresql":
            return self._locked_sql
        return self._sql  # SQLite has no row locks: its write transactions run one at a time

    def all(self, *params: Any) -> list[M]:
        """Every instance the read finds for ``params``, related objects attached."""
        self._check(params)
        connection = connections[self.using]
        with connection.cursor() as cursor:
            cursor.execute(sql_prepared.statement(connection, self.sql(connection)), params)
            rows = cursor.fetchall()
        return [self._instance(row, connection) for row in rows]

    def _check(self, params: Sequence[Any]) -> None:
        """Refuse what the read cannot run now: a lock in autocommit, or the wrong number of values."""
        if self.lock and transaction.get_autocommit(self.using):
            raise TransactionManagementError("select_for_update cannot be used outside of a transaction.")
        if len(params) != self._params:
            raise TypeError(f"the read takes {self._params} value(s), not {len(params)}")

    def get(self, *params: Any) -> M:
        """The one instance for ``params``.

        Raises:
            Model.DoesNotExist: (the read's model's) when there is none.
            Model.MultipleObjectsReturned: when there are several.
        """
        found = self.all(*params)
        if len(found) == 1:
            return found[0]
        name = self.model._meta.object_name
        if not found:
            raise self.model.DoesNotExist(f"{name} matching query does not exist.")
        raise self.model.MultipleObjectsReturned(f"get() returned more than one {name}")

    def _instance(self, row: Sequence[Any], connection: Any) -> M:
        built: list[models.Model | None] = []
        for table in self._tables:
            parent = built[table.parent] if table.parent is not None else None
            obj = table.build(row, connection) if table.parent is None or parent is not None else None
            if parent is not None:
                setattr(parent, table.field_name, obj)  # the foreign key's descriptor caches it
            built.append(obj)
        root: Any = built[0]
        for offset, (name, (_, convert)) in enumerate(self._extra.items()):
            setattr(root, name, convert(row[self._extra_start + offset]))
        return root


def together(*reads: tuple[SqlRead[Any], Sequence[Any]]) -> list[list[Any]]:
    """What each ``(read, params)`` finds, as :meth:`SqlRead.all` finds it, in one round trip on PostgreSQL.

    Why: on the hot path a second read of a request costs a round trip to the database, and a round trip
    costs both sides CPU of its own: read together with the signed link's, a SciQ HIT's passages cost
    the web process 0.2-0.3 ms and PostgreSQL 0.1-0.2 ms less (``benchmarks/link_read.py``).
    PostgreSQL runs several statements sent as one query string, and psycopg 3 keeps each statement's
    result for the cursor's ``nextset()`` (psycopg's documentation, "Multiple statements in the same
    query": with client-side parameter binding, which Django's PostgreSQL backend uses unless
    ``OPTIONS["server_side_binding"]`` is set). Elsewhere (SQLite; psycopg2, whose cursors keep only the
    last result) or with server-side binding, the reads run one after another. Every read must use the
    same database.
    """
    if not reads:
        return []
    using = reads[0][0].using
    if any(read.using != using for read, _ in reads):
        raise ValueError("reads run together must use the same database")
    connection = connections[using]
    if not sql_prepared.several_per_query(connection) or len(reads) == 1:
        return [read.all(*params) for read, params in reads]
    for read, params in reads:
        read._check(params)
    return sql_prepared.in_one_query(
        connection,
        [(read.sql(connection), params) for read, params in reads],
        lambda cursor, index: [reads[index][0]._instance(row, connection) for row in cursor.fetchall()],
    )


def _prefixes(path: str) -> list[str]:
    """``"a__b__c"`` -> ``["a", "a__b", "a__b__c"]``."""
    parts = path.split("__")
    return ["__".join(parts[: i + 1]) for i in range(len(parts))]
