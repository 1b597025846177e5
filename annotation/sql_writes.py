"""Hot conditional UPDATEs written as SQL once, with the values prepared by the fields themselves.

Every submission of a HIT runs the same two conditional UPDATEs (the assignment's submit, SciQ's taking
of a passage). Django compiles ``QuerySet.filter(...).update(...)`` into SQL on every call, and on the
web worker's hot path that costs about four times what running it does (0.4-0.5 ms of CPU against 0.1).
An :class:`SqlUpdate` is that statement written once from the model's metadata (``Meta.db_table``, each
field's ``column``) and run through ``connection.cursor()`` ("Executing custom SQL directly"); each value
is turned into its database value by its field's ``get_db_prep_save`` (the method ``update()`` itself
calls: JSON, aware datetimes, foreign keys), and a failing statement marks the enclosing ``atomic`` block
for rollback as ``update()`` does. Like ``update()`` it sends no signals and leaves ``auto_now`` alone.
``tests/test_sql_writes.py`` compares each use with its queryset, on SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections, models, transaction

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
            cursor.execute(self.sql, params)
            return cursor.rowcount
