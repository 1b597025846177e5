"""Hot writes (conditional UPDATEs, an INSERT) written as SQL once, with the values prepared by the fields.

Every submission of a HIT runs the same two conditional UPDATEs (the assignment's submit, SciQ's taking
of a passage) and, for a SciQ question, the INSERT of its pair. Django compiles each into SQL on every
call, and on the web worker's hot path that costs about four times what running it does (0.4-0.5 ms of
CPU against 0.1).
An :class:`SqlUpdate` is that statement written once from the model's metadata (``Meta.db_table``, each
field's ``column``) and run through ``connection.cursor()`` ("Executing custom SQL directly"); each value
is turned into its database value by its field's ``get_db_prep_save`` (the method ``update()`` itself
calls: JSON, aware datetimes, foreign keys), and a failing statement marks the enclosing ``atomic`` block
for rollback as ``update()`` does. Like ``update()`` it sends no signals and leaves ``auto_now`` alone.
An :class:`SqlInsert` saves a new instance as ``save()`` would store it (``pre_save`` of each field, so
``auto_now_add`` and defaults apply; the key and the database-generated columns read back with
``RETURNING``) but, like ``bulk_create``, sends no ``pre_save``/``post_save`` signals: use it only for a
model nothing listens to. ``tests/test_sql_writes.py`` compares each use with its queryset, on SQLite
and PostgreSQL. On PostgreSQL each statement is planned once per database session
(:mod:`annotation.sql_prepared`).

Each write can also be bound to its values first (:meth:`SqlUpdate.bind`, :meth:`SqlInsert.bind`) and
run with others by :func:`together`: on PostgreSQL in one round trip, as :func:`annotation.sql_reads.together`
runs reads. An INSERT can carry an UPDATE that stores the new row's key elsewhere (``then``: the SciQ pair
and the taking of its passage), one statement on PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

from django.db import DEFAULT_DB_ALIAS, connections, models, transaction

from annotation import sql_prepared
from annotation.sql_reads import column, quote


@dataclass(frozen=True)
class BoundWrite:
    """One write with its database values, ready to run alone (:meth:`run`) or with others (:func:`together`).

    What running it gives: an UPDATE the number of rows it changed; an INSERT ``None``, or with its
    ``then`` UPDATE the number of rows that UPDATE changed; the INSERT's ``instance`` gets its key and
    generated values.
    """

    using: str
    sql: str
    params: list[Any]
    insert: Optional[SqlInsert] = None
    instance: Optional[models.Model] = None
    #: The INSERT's UPDATE and its where values (database values), where the INSERT's SQL does not hold it.
    then: Optional[tuple[SqlUpdate, list[Any]]] = None

    def run(self) -> Optional[int]:
        """Run this write alone (see the class note for what it gives)."""
        return together(self)[0]

    def _result(self, cursor: Any, connection: Any) -> Optional[int]:
        if self.insert is None:
            return cursor.rowcount
        row = cursor.fetchone()
        returned = len(self.insert._returning)
        self.insert._stored(self.instance, row[:returned], connection)
        return row[returned] if len(row) > returned else None

    def _run_alone(self, connection: Any) -> Optional[int]:
        with transaction.mark_for_rollback_on_error(self.using), connection.cursor() as cursor:
            cursor.execute(sql_prepared.statement(connection, self.sql), self.params)
            done = self._result(cursor, connection)
        if self.then is None:
            return done
        update, where = self.then
        keys = update._set_params([self.instance.pk] * len(update._set), connection)
        return BoundWrite(self.using, update.sql, keys + where)._run_alone(connection)


def together(*writes: BoundWrite) -> list[Optional[int]]:
    """Run ``writes`` in this order and give what each gives (:class:`BoundWrite`): in one round trip on
    PostgreSQL through psycopg 3 (:func:`annotation.sql_prepared.several_per_query`), one after another
    elsewhere.

    Why: on the submit's path each round trip costs the web process and PostgreSQL CPU of their own, and
    its writes always go in a row (a SciQ submit's in one round trip instead of three: about 0.2 ms of the
    web process's CPU and 0.1 ms of PostgreSQL's less, ``benchmarks/submit_profile.py``). Every write
    runs whatever an earlier one changed (a conditional UPDATE that matched nothing does not stop the
    next): a caller that needs all or nothing runs them in a transaction and rolls it back. A failing
    statement marks the enclosing ``atomic`` block for rollback, as ``update()`` and ``save()`` do. Every
    write must use the same database.
    """
    if not writes:
        return []
    using = writes[0].using
    if any(write.using != using for write in writes):
        raise ValueError("writes run together must use the same database")
    connection = connections[using]
    if not sql_prepared.several_per_query(connection):
        return [write._run_alone(connection) for write in writes]
    with transaction.mark_for_rollback_on_error(using):
        return sql_prepared.in_one_query(
            connection,
            [(write.sql, write.params) for write in writes],
            lambda cursor, index: writes[index]._result(cursor, connection),
        )


class SqlUpdate:
    """``model.objects.filter(<fields> = %s..., <null_fields> IS NULL).update(<set_fields>=...)``.

    Args:
        model: the model whose table is updated.
        set_fields: the names of the fields :meth:`run` sets, in the order of its ``values``.
        where: the names of the fields that must equal :meth:`run`'s ``where_values``, in that order.
        where_null: the names of the fields that must be NULL.
        using: the database alias.
    """

    def __init__(
        self,
        model: type[models.Model],
        *,
        set_fields: Sequence[str],
        where: Sequence[str],
        where_null: Sequence[str] = (),
        using: str = DEFAULT_DB_ALIAS,
    ) -> None:
        meta = model._meta
        self.using = using
        self._set = tuple(meta.get_field(name) for name in set_fields)
        self._where = tuple(meta.get_field(name) for name in where)
        for field in (*self._set, *self._where):
            if not field.concrete or field.many_to_many:
                raise ValueError(f"{field} has no column of {meta.db_table}")
            if hasattr(field, "get_placeholder"):  # binary, array, range: written with their own SQL
                raise ValueError(f"{field} is a {type(field).__name__}: SqlUpdate does not write it")
        conditions = [f"{quote(f.column)} = %s" for f in self._where]
        conditions += [f"{column(model, name)} IS NULL" for name in where_null]
        self._table = quote(meta.db_table)
        self._condition = " AND ".join(conditions)
        self.sql = self._sql(["%s"] * len(self._set))

    def _sql(self, values: Sequence[str]) -> str:
        """The statement with ``values`` (SQL) as what each of the set fields is set to."""
        assignments = ", ".join(
            f"{quote(f.column)} = {value}" for f, value in zip(self._set, values, strict=True)
        )
        return f"UPDATE {self._table} SET {assignments} WHERE {self._condition}"

    def bind(self, values: Sequence[Any], where_values: Sequence[Any]) -> BoundWrite:
        """The UPDATE with these values, to run alone or with other writes (:func:`together`).

        Raises:
            ValueError: for more or fewer values than the statement has fields.

        A foreign key's value is the related object or its id, as ``update()`` takes it.
        """
        connection = connections[self.using]
        params = self._set_params(values, connection) + self._where_params(where_values, connection)
        return BoundWrite(self.using, self.sql, params)

    def run(self, values: Sequence[Any], where_values: Sequence[Any]) -> int:
        """Run the UPDATE; return the number of rows it changed (0: the condition held for none).

        Raises:
            ValueError: for more or fewer values than the statement has fields.
        """
        return self.bind(values, where_values).run()

    def _set_params(self, values: Sequence[Any], connection: Any) -> list[Any]:
        return [
            field.get_db_prep_save(
                value.prepare_database_save(field)
                if field.remote_field and isinstance(value, models.Model)
                else value,
                connection,
            )
            for field, value in zip(self._set, values, strict=True)
        ]

    def _where_params(self, where_values: Sequence[Any], connection: Any) -> list[Any]:
        return [
            field.get_db_prep_value(field.get_prep_value(value), connection, prepared=True)
            for field, value in zip(self._where, where_values, strict=True)
        ]


class SqlInsert:
    """``instance.save(force_insert=True)`` for new instances of ``model``, without signals.

    Args:
        model: the model of the instances saved (no multi-table inheritance).
        then: an UPDATE that may go with the INSERT (:meth:`bind`'s ``then_where``), every one of its set
            fields set to the new row's key: on PostgreSQL one statement (``WITH ... INSERT ...
            RETURNING``, a data-modifying ``WITH``), elsewhere a second statement.
        using: the database alias.
    """

    def __init__(
        self, model: type[models.Model], *, then: Optional[SqlUpdate] = None, using: str = DEFAULT_DB_ALIAS
    ) -> None:
        meta = model._meta
        if meta.parents:
            raise ValueError(f"{model.__name__} inherits from another model: SqlInsert does not save it")
        if then is not None and then.using != using:
            raise ValueError("an INSERT and its UPDATE must use the same database")
        self.model = model
        self.using = using
        self._then = then
        self._fields = tuple(
            f for f in meta.local_concrete_fields if not f.generated and f is not meta.auto_field
        )
        for field in self._fields:
            if hasattr(field, "get_placeholder"):
                raise ValueError(f"{field} is a {type(field).__name__}: SqlInsert does not write it")
        self._returning = tuple(meta.db_returning_fields)
        columns = ", ".join(quote(f.column) for f in self._fields)
        returning = ", ".join(quote(f.column) for f in self._returning)
        self.sql = (
            f"INSERT INTO {quote(meta.db_table)} ({columns}) VALUES ({', '.join(['%s'] * len(self._fields))})"
            f" RETURNING {returning}"
        )
        self._sql_with_then = ""
        if then is not None:
            key = f"(SELECT {quote(meta.pk.column)} FROM inserted)"
            self._sql_with_then = (
                f"WITH inserted AS ({self.sql}), updated AS ({then._sql([key] * len(then._set))} RETURNING 1)"
                f" SELECT {returning}, (SELECT count(*) FROM updated) FROM inserted"
            )

    def bind(self, instance: models.Model, then_where: Optional[Sequence[Any]] = None) -> BoundWrite:
        """The INSERT of ``instance`` (and, with ``then_where``, the ``then`` UPDATE with those where
        values), to run alone or with other writes (:func:`together`).

        ``instance`` is new and its foreign keys hold the ids of saved objects (``save()``'s check for
        unsaved related objects is not repeated here).
        """
        if not isinstance(instance, self.model) or not instance._state.adding:
            raise ValueError(f"{instance!r} is not a new {self.model.__name__}")
        if then_where is not None and self._then is None:
            raise ValueError("this SqlInsert has no UPDATE to run with it")
        connection = connections[self.using]
        params = [
            field.get_db_prep_save(field.pre_save(instance, True), connection) for field in self._fields
        ]
        if then_where is None:
            return BoundWrite(self.using, self.sql, params, insert=self, instance=instance)
        where = self._then._where_params(then_where, connection)
        if connection.vendor == "postgresql":
            return BoundWrite(self.using, self._sql_with_then, params + where, insert=self, instance=instance)
        return BoundWrite(
            self.using, self.sql, params, insert=self, instance=instance, then=(self._then, where)
        )

    def save(self, instance: models.Model, then_where: Optional[Sequence[Any]] = None) -> Optional[int]:
        """Insert ``instance`` and set its key and generated values; with ``then_where``, run the ``then``
        UPDATE too and return the number of rows it changed."""
        return self.bind(instance, then_where).run()

    def _stored(self, instance: models.Model, row: Sequence[Any], connection: Any) -> None:
        for field, value in zip(self._returning, row, strict=True):
            convert = getattr(field, "from_db_value", None)
            setattr(instance, field.attname, convert(value, None, connection) if convert else value)
        instance._state.adding = False
        instance._state.db = self.using
