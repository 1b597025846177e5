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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections, models, transaction

from annotation import sql_prepared
from annotation.sql_reads import quote


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
        conditions += [f"{quote(meta.get_field(name).column)} IS NULL" for name in where_null]
        self.sql = (
            f"UPDATE {quote(meta.db_table)} SET {', '.join(f'{quote(f.column)} = %s' for f in self._set)}"
            f" WHERE {' AND '.join(conditions)}"
        )

    def run(self, values: Sequence[Any], where_values: Sequence[Any]) -> int:
        """Run the UPDATE; return the number of rows it changed (0: the condition held for none).

        Raises:
            ValueError: for more or fewer values than the statement has fields.

        A foreign key's value is the related object or its id, as ``update()`` takes it.
        """
        connection = connections[self.using]
        params = [
            field.get_db_prep_save(
                value.prepare_database_save(field)
                if field.remote_field and isinstance(value, models.Model)
                else value,
                connection,
            )
            for field, value in zip(self._set, values, strict=True)
        ]
        params += [
            field.get_db_prep_value(field.get_prep_value(value), connection, prepared=True)
            for field, value in zip(self._where, where_values, strict=True)
        ]
        with transaction.mark_for_rollback_on_error(self.using), connection.cursor() as cursor:
            cursor.execute(sql_prepared.statement(connection, self.sql), params)
            return cursor.rowcount


class SqlInsert:
    """``instance.save(force_insert=True)`` for new instances of ``model``, without signals.

    Args:
        model: the model of the instances saved (no multi-table inheritance).
        using: the database alias.
    """

    def __init__(self, model: type[models.Model], *, using: str = DEFAULT_DB_ALIAS) -> None:
        meta = model._meta
        if meta.parents:
            raise ValueError(f"{model.__name__} inherits from another model: SqlInsert does not save it")
        self.model = model
        self.using = using
        self._fields = tuple(
            f for f in meta.local_concrete_fields if not f.generated and f is not meta.auto_field
        )
        for field in self._fields:
            if hasattr(field, "get_placeholder"):
                raise ValueError(f"{field} is a {type(field).__name__}: SqlInsert does not write it")
        self._returning = tuple(meta.db_returning_fields)
        columns = ", ".join(quote(f.column) for f in self._fields)
        self.sql = (
            f"INSERT INTO {quote(meta.db_table)} ({columns}) VALUES ({', '.join(['%s'] * len(self._fields))})"
            f" RETURNING {', '.join(quote(f.column) for f in self._returning)}"
        )

    def save(self, instance: models.Model) -> None:
        """Insert ``instance`` and set its key and generated values.

        ``instance`` is new and its foreign keys hold the ids of saved objects (``save()``'s check for
        unsaved related objects is not repeated here).
        """
        if not isinstance(instance, self.model) or not instance._state.adding:
            raise ValueError(f"{instance!r} is not a new {self.model.__name__}")
        connection = connections[self.using]
        params = [
            field.get_db_prep_save(field.pre_save(instance, True), connection) for field in self._fields
        ]
        with transaction.mark_for_rollback_on_error(self.using), connection.cursor() as cursor:
            cursor.execute(sql_prepared.statement(connection, self.sql), params)
            row = cursor.fetchone()
        for field, value in zip(self._returning, row, strict=True):
            convert = getattr(field, "from_db_value", None)
            setattr(instance, field.attname, convert(value, None, connection) if convert else value)
        instance._state.adding = False
        instance._state.db = self.using
