"""Bonuses for many submissions of one batch from a CSV: read and checked in full, previewed, then paid.

A lab pays bonuses in bulk after a pilot (for quality, for extra time) from a table it keeps. The CSV
names each submission by its worker's pseudonym (the one the batch page, exports and releases show) or by
its assignment id, with an amount in the batch's currency and a reason the worker reads::

    worker,amount,reason
    a3f9c2d17b5e4d08,0.50,Careful answers on every card
    assignment,amount,reason
    412,1.00,Stayed for the extra questions

Nothing is paid from a file with one bad row: every row is checked first (:func:`read_plan`) and every
problem is reported with its line. Paying (:func:`pay_plan`) goes row by row through
:func:`crowd.services.review.bonus`, so each row is paid once per submission and reason whatever happens
(a double submit, a retry after a crash, the same file uploaded twice) and the batch's budget cap is
checked before each payment, fees included.
"""

from __future__ import annotations

import csv
import hashlib
import io
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Optional

from annotation.models import Assignment, Batch
from crowd.providers.costs import bonus_fee_cents, check_budget, fees_for, format_money
from crowd.services.budget import spent_cents
from crowd.services.ledger import LedgerError
from crowd.services.review import ReviewError, bonus, bonus_key, checked_text, work_on_file

MAX_BYTES = 512 * 1024
"""Largest CSV read (about 10,000 rows of pseudonym, amount and a short reason)."""
MAX_ROWS = 2000
"""Most bonuses in one file; a larger payout is split into several files."""
MAX_AMOUNT = Decimal("100.00")
"""Largest bonus per row, in the batch's currency: more is taken for a typo (cents typed as units)."""
ID_COLUMNS = ("worker", "assignment")
PAYABLE = (Assignment.Status.SUBMITTED, Assignment.Status.APPROVED)


class BulkBonusError(ValueError):
    """The file as a whole cannot be read (not UTF-8, too large, no header, unknown columns)."""


@dataclass(frozen=True)
class PlannedBonus:
    """One checked row: the submission it pays, how much (hundredths of the batch's currency), why."""

    line: int
    assignment: Assignment
    amount_cents: int
    reason: str

    @property
    def key(self) -> str:
        """The ledger key the bonus is paid under (the single-bonus default: submission and reason)."""
        return bonus_key(self.assignment, self.reason)


@dataclass
class BonusPlan:
    """The rows of a CSV with the problems found, and what they would cost the batch."""

    batch: Batch
    rows: list[PlannedBonus] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    digest: str = ""

    @property
    def total_cents(self) -> int:
        return sum(r.amount_cents for r in self.rows)

    @property
    def cost_cents(self) -> int:
        """The total with the platform's bonus fees."""
        fees = fees_for(self.batch.provider)
        return sum(r.amount_cents + bonus_fee_cents(r.amount_cents, fees) for r in self.rows)

    def budget_note(self) -> Optional[str]:
        """Why the batch's budget cap would stop part of the payout, or None when it fits."""
        check = check_budget(self.cost_cents, spent_cents(self.batch)["total"], self.batch.budget_cap_cents)
        if check.allowed:
            return None
        currency = self.batch.currency
        left = (check.remaining_cents or 0) + self.cost_cents  # remaining_cents is what is left after it
        return (
            f"These bonuses cost {format_money(self.cost_cents, currency)} with fees, but only "
            f"{format_money(max(0, left), currency)} of the batch's budget is left: the "
            "rows past it would be refused. Raise the cap or pay fewer rows."
        )


def digest_of(text: str) -> str:
    """The fingerprint of a CSV's text: paying needs the preview of exactly this text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def decode(data: bytes) -> str:
    """An uploaded file's text (UTF-8, with or without a byte-order mark).

    Raises:
        BulkBonusError: too large, or not UTF-8 text.
    """
    if len(data) > MAX_BYTES:
        raise BulkBonusError(f"The file is {len(data):,} bytes; at most {MAX_BYTES:,} are read.")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BulkBonusError(
            f"The file is not UTF-8 text (byte {exc.start + 1}); save it as CSV UTF-8 and upload it again."
        ) from None
    if "\x00" in text:
        raise BulkBonusError("The file holds NUL bytes: it is not a CSV text file.")
    return text


def _amount(value: str, currency: str) -> int:
    try:
        amount = Decimal(value.strip())
    except InvalidOperation:
        raise ValueError(f"the amount {value.strip()!r} is not a number such as 0.50") from None
    if not amount.is_finite() or amount <= 0:
        raise ValueError(f"the amount must be more than 0, not {value.strip()!r}")
    if amount > MAX_AMOUNT:
        raise ValueError(f"{value.strip()} {currency} is more than the {MAX_AMOUNT} {currency} a row may pay")
    if amount != amount.quantize(Decimal("0.01")):
        raise ValueError(f"the amount {value.strip()!r} has more than two decimals")
    return int(amount * 100)


def _submission(batch: Batch, column: str, value: str) -> Assignment:
    """The batch's submission a row names (a worker's latest payable one, or an assignment id)."""
    chosen = Assignment.objects.filter(hit__batch=batch, status__in=PAYABLE).select_related("worker")
    if column == "assignment":
        if not value.isdigit():
            raise ValueError(f"the assignment {value!r} is not an assignment number")
        found = chosen.filter(pk=int(value)).first()
        if found is None:
            raise ValueError(f"assignment {value} is not a submitted or approved submission of this batch")
        return found
    # Approved work before submitted work ("approved" sorts first), then the latest.
    found = chosen.filter(worker__pseudonym=value).order_by("status", "-submitted_at", "-pk").first()
    if found is None:
        raise ValueError(f"worker {value!r} has no submitted or approved work in this batch")
    return found


def _columns(header: Optional[list[str]]) -> tuple[str, dict[str, int]]:
    names = [(h or "").strip().lower() for h in header or []]
    index = {name: i for i, name in enumerate(names) if name}
    ids = [c for c in ID_COLUMNS if c in index]
    missing = [c for c in ("amount", "reason") if c not in index]
    if len(ids) != 1 or missing:
        raise BulkBonusError(
            "The first line must name the columns: worker (or assignment), amount and reason, such as "
            f"'worker,amount,reason'; found {', '.join(repr(n) for n in names) or 'nothing'}."
        )
    unknown = sorted(set(index) - {*ID_COLUMNS, "amount", "reason"})
    if unknown:
        raise BulkBonusError(
            f"Unknown column(s) {', '.join(unknown)}: use worker or assignment, amount, reason."
        )
    return ids[0], index


def read_plan(batch: Batch, text: str) -> BonusPlan:
    """Check every row of a CSV against ``batch``; each problem names its line.

    Raises:
        BulkBonusError: the file as a whole is unusable (header, size).
    """
    plan = BonusPlan(batch, digest=digest_of(text))
    reader = csv.reader(io.StringIO(text))
    try:
        column, index = _columns(next(reader, None))
    except csv.Error as exc:
        raise BulkBonusError(f"Line 1 is not CSV: {exc}.") from None
    seen: dict[str, int] = {}
    try:
        for values in reader:
            if not any(v.strip() for v in values):
                continue
            line = reader.line_num
            if len(plan.rows) + len(plan.problems) >= MAX_ROWS:
                raise BulkBonusError(f"More than {MAX_ROWS:,} rows: split the file.")
            cells = {name: (values[i] if i < len(values) else "").strip() for name, i in index.items()}
            try:
                row = _row(batch, line, column, cells)
            except (ValueError, ReviewError) as exc:
                plan.problems.append(f"Line {line}: {exc}.")
                continue
            if row.key in seen:
                plan.problems.append(
                    f"Line {line}: the same submission and reason as line {seen[row.key]} (it would be paid "
                    "once): change the reason or remove the line."
                )
                continue
            seen[row.key] = line
            plan.rows.append(row)
    except csv.Error as exc:
        raise BulkBonusError(f"Line {reader.line_num} is not CSV: {exc}.") from None
    if not plan.rows and not plan.problems:
        plan.problems.append("The file has a header but no bonus rows.")
    return plan


def _row(batch: Batch, line: int, column: str, cells: dict[str, str]) -> PlannedBonus:
    if not cells[column]:
        raise ValueError(f"no {column}")
    assignment = _submission(batch, column, cells[column])
    if not work_on_file(assignment):
        raise ValueError(
            f"submission {assignment.pk} has no work on file; pay it from its own page after checking it"
        )
    reason = checked_text(cells["reason"], "reason", f"submission {assignment.pk}")
    if not reason:
        raise ValueError("no reason (the worker reads it with the bonus)")
    return PlannedBonus(line, assignment, _amount(cells["amount"], batch.currency), reason)


@dataclass(frozen=True)
class PaidRow:
    """What paying one row did: ``paid``, ``already paid``, ``unconfirmed`` or ``refused`` (with why)."""

    row: PlannedBonus
    outcome: str
    detail: str = ""


def pay_plan(rows: Iterable[PlannedBonus]) -> list[PaidRow]:
    """Pay each row through the single-bonus path; a refused row does not stop the others.

    Must run outside ``transaction.atomic()`` (see :func:`crowd.services.review.bonus`).
    """
    done = []
    for row in rows:
        try:
            result = bonus(row.assignment, row.amount_cents, row.reason)
        except (ReviewError, LedgerError) as exc:
            done.append(PaidRow(row, "refused", str(exc)))
            continue
        done.append(PaidRow(row, result.status.value.replace("_", " ")))
    return done
