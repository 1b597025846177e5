"""A local fake of Prolific's REST API (the parts crowdqa uses), plus the participant side.

Point ``ProlificClient(base_url=server.api_url, token=server.token)`` at it. It checks
``Authorization: Token ...``, paginates lists (``page_size`` items per page, ``_links.next.href``) and
answers errors as ``{"error": {"status", "error_code", "title", "detail"}}``. Like the real API, paying a
bulk bonus is NOT idempotent: every ``pay`` call pays again, and ``payments`` counts them.

Failure injection: ``drop_after_processing.add("pay")`` makes the next pay call be processed and then
the connection closed without an answer (the client sees a dropped connection), which is the case the
provider's payment store must survive. ``fail_next["add_to_group"] = FakeProlificError(503, "...")``
makes the next call of that route (named by its handler method) fail without doing anything.
``FakeProlific(faults=Faults(seed).set(...))`` throttles (429 with ``Retry-After``), answers 503, stalls,
resets, or applies a call and drops its answer, per route and rate (``tests.fakes.faults``).

The participant side: ``start`` reserves a place and returns the submission id, ``complete`` enters the
completion code (status AWAITING REVIEW; a participant who says they have no code is
recorded with the code ``NOCODE``, as Prolific does), and ``webhook`` builds a signed webhook request.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler
from typing import Any, Optional
from urllib.parse import parse_qs, urlparse

from crowd.providers.prolific.webhooks import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign
from tests.fakes.faults import Faults
from tests.fakes.local_server import FakeHTTPServer, LocalServer, drop_connection

API_PREFIX = "/api/v1/"


class FakeProlificError(Exception):
    """An HTTP error the fake answers with."""

    def __init__(
        self, status: int, detail: str, error_code: int = 0, headers: Optional[Mapping[str, str]] = None
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.error_code = error_code or status * 1000
        self.headers = dict(headers or {})


class _DropConnection(Exception):
    """Close the connection without answering (``kind``: a fault of ``tests.fakes.faults``)."""

    def __init__(self, kind: str = "lost_reply") -> None:
        super().__init__(kind)
        self.kind = kind


class FakeProlific:
    """In-memory studies, submissions, bonuses, participant groups and messages."""

    def __init__(
        self, token: str = "fake-prolific-token", page_size: int = 2, faults: Optional[Faults] = None
    ) -> None:
        self.lock = threading.RLock()
        self.faults = faults or Faults()
        self.token = token
        self.page_size = page_size
        self.base_url = ""
        self.studies: dict[str, dict[str, Any]] = {}
        self.submissions: dict[str, dict[str, Any]] = {}
        self.bulk_bonuses: dict[str, dict[str, Any]] = {}
        self.payments: list[dict[str, Any]] = []  # one entry per pay call: what Prolific paid
        self.groups: dict[str, dict[str, Any]] = {}
        self.messages: list[dict[str, Any]] = []
        # the account's workspaces; each pays in its currency_code, which Prolific gives only on
        # GET /workspaces/{id}/balance/ (GET /workspaces/{id}/ has no currency). A new account has one.
        self.workspaces: dict[str, dict[str, Any]] = {}
        self.add_workspace("USD", title="My workspace")
        self.calls: list[str] = []
        self.drop_after_processing: set[str] = set()
        self.fail_next: dict[str, FakeProlificError] = {}  # handler name -> error for its next call
        # handler name -> callable run once after the call took effect and before its answer is sent
        # (kill tests kill the calling process there: Prolific acted, the caller never heard).
        self.after: dict[str, Callable[[], None]] = {}

    @staticmethod
    def _id() -> str:
        return uuid.uuid4().hex[:24]

    def _study(self, study_id: str) -> dict[str, Any]:
        study = self.studies.get(study_id)
        if study is None:
            raise FakeProlificError(404, f"Study {study_id} not found")
        return study

    def _submission(self, submission_id: str) -> dict[str, Any]:
        sub = self.submissions.get(submission_id)
        if sub is None:
            raise FakeProlificError(404, f"Submission {submission_id} not found")
        return sub

    def _page(self, items: list[dict[str, Any]], path: str, query: Mapping[str, list[str]]) -> dict[str, Any]:
        page = int((query.get("page") or ["1"])[0])
        start = (page - 1) * self.page_size
        chunk = items[start : start + self.page_size]
        nxt = f"{self.base_url}{path}?page={page + 1}" if start + self.page_size < len(items) else None
        return {"results": chunk, "_links": {"next": {"href": nxt}}, "meta": {"count": len(items)}}

    # --- routes --------------------------------------------------------------------------------------

    def handle(self, method: str, path: str, query: Mapping[str, list[str]], body: Any) -> tuple[int, Any]:
        """Route one API call; return (status, JSON body)."""
        with self.lock:
            route = path[len(API_PREFIX) :]
            self.calls.append(f"{method} {route}")
            routes: list[tuple[str, str, Any]] = [
                ("GET", r"workspaces/", self.list_workspaces),
                ("GET", r"workspaces/(?P<id>\w+)/", self.get_workspace),
                ("GET", r"workspaces/(?P<id>\w+)/balance/", self.get_workspace_balance),
                ("GET", r"studies/", self.list_studies),
                ("POST", r"studies/", self.create_study),
                ("GET", r"studies/(?P<id>\w+)/", self.get_study),
                ("PATCH", r"studies/(?P<id>\w+)/", self.update_study),
                ("POST", r"studies/(?P<id>\w+)/transition/", self.transition_study),
                ("GET", r"studies/(?P<id>\w+)/submissions/", self.list_submissions),
                ("GET", r"submissions/", self.query_submissions),
                ("GET", r"submissions/(?P<id>\w+)/", self.get_submission),
                ("POST", r"submissions/(?P<id>\w+)/transition/", self.transition_submission),
                ("POST", r"submissions/bulk-approve/", self.bulk_approve),
                ("POST", r"submissions/bonus-payments/", self.set_up_bonus),
                ("POST", r"bulk-bonus-payments/(?P<id>\w+)/pay/", self.pay_bonus),
                ("POST", r"participant-groups/", self.create_group),
                ("GET", r"participant-groups/(?P<id>\w+)/participants/", self.list_group),
                ("POST", r"participant-groups/(?P<id>\w+)/participants/", self.add_to_group),
                ("DELETE", r"participant-groups/(?P<id>\w+)/participants/", self.remove_from_group),
                ("POST", r"messages/", self.send_message),
            ]
            for verb, pattern, handler in routes:
                match = re.fullmatch(pattern, route)
                if verb == method and match:
                    fault = self.faults.draw(handler.__name__)
                    self._inject_before(fault)
                    if handler.__name__ in self.fail_next:
                        raise self.fail_next.pop(handler.__name__)
                    result = handler(body or {}, query=query, path=path, **match.groupdict())
                    hook = self.after.pop(handler.__name__, None)
                    if hook is not None:
                        hook()
                    if fault == "lost_reply":
                        raise _DropConnection(fault)
                    return result
            raise FakeProlificError(404, f"no route {method} {route}")

    def _inject_before(self, fault: Optional[str]) -> None:
        """Refuse the call as Prolific does when throttling or failing, or drop it unanswered."""
        if fault == "throttle":
            raise FakeProlificError(
                429, "Request was throttled.", headers={"Retry-After": self.faults.retry_after}
            )
        if fault == "server_error":
            raise FakeProlificError(503, "Service temporarily unavailable.")
        if fault in ("timeout", "reset"):
            raise _DropConnection(fault)

    def create_study(self, body: Mapping[str, Any], **_: Any) -> tuple[int, Any]:
        missing = [
            k
            for k in (
                "name",
                "description",
                "external_study_url",
                "prolific_id_option",
                "completion_codes",
                "total_available_places",
                "estimated_completion_time",
                "reward",
            )
            if k not in body
        ]
        if missing:
            raise FakeProlificError(400, f"missing fields: {missing}")
        if "{{%PROLIFIC_PID%}}" not in body["external_study_url"]:
            raise FakeProlificError(400, "external_study_url lacks {{%PROLIFIC_PID%}}")
        study = dict(body, id=self._id(), status="UNPUBLISHED", places_taken=0)
        self.studies[study["id"]] = study
        return 201, study

    def list_studies(
        self, body: Mapping[str, Any], query: Mapping[str, list[str]], path: str, **_: Any
    ) -> tuple[int, Any]:
        # Like Prolific's list, a short form of each study (its internal_name included).
        keys = ("id", "name", "internal_name", "status", "total_available_places", "places_taken")
        items = [{k: s.get(k) for k in keys} for s in self.studies.values()]
        return 200, self._page(items, path, query)

    def add_workspace(self, currency_code: str, title: str = "QA lab", workspace_id: str = "") -> str:
        """Give the account a workspace paying in ``currency_code``; return its id."""
        workspace_id = workspace_id or self._id()
        self.workspaces[workspace_id] = {"id": workspace_id, "title": title, "currency_code": currency_code}
        return workspace_id

    def _workspace(self, workspace_id: str) -> dict[str, Any]:
        if workspace_id not in self.workspaces:
            raise FakeProlificError(404, f"no workspace {workspace_id}")
        workspace = self.workspaces[workspace_id]
        return {"id": workspace["id"], "title": workspace["title"], "description": "", "users": []}

    def list_workspaces(self, body: Mapping[str, Any], **_: Any) -> tuple[int, Any]:
        return 200, {"results": [self._workspace(w) for w in self.workspaces]}

    def get_workspace(self, body: Mapping[str, Any], id: str, **_: Any) -> tuple[int, Any]:
        return 200, self._workspace(id)

    def get_workspace_balance(self, body: Mapping[str, Any], id: str, **_: Any) -> tuple[int, Any]:
        self._workspace(id)
        balance = {"rewards": 0, "fees": 0, "vat": 0}
        return 200, {
            "currency_code": self.workspaces[id]["currency_code"],
            "total_balance": 0,
            "balance_breakdown": balance,
            "available_balance": 0,
            "available_balance_breakdown": balance,
        }

    def get_study(self, body: Mapping[str, Any], id: str, **_: Any) -> tuple[int, Any]:
        return 200, self._study(id)

    def update_study(self, body: Mapping[str, Any], id: str, **_: Any) -> tuple[int, Any]:
        study = self._study(id)
        if "total_available_places" in body and body["total_available_places"] < study["places_taken"]:
            raise FakeProlificError(400, "total_available_places below places taken")
        study.update(body)
        return 200, study

    def transition_study(self, body: Mapping[str, Any], id: str, **_: Any) -> tuple[int, Any]:
        study = self._study(id)
        allowed = {
            "PUBLISH": ({"UNPUBLISHED"}, "ACTIVE"),
            "PAUSE": ({"ACTIVE"}, "PAUSED"),
            "START": ({"PAUSED"}, "ACTIVE"),
            "STOP": ({"ACTIVE", "PAUSED"}, "AWAITING REVIEW"),
        }
        action = body.get("action")
        if action not in allowed:
            raise FakeProlificError(400, f"unknown action {action}")
        sources, target = allowed[action]
        if study["status"] not in sources:
            raise FakeProlificError(400, f"cannot {action} a study in status {study['status']}")
        study["status"] = target
        return 200, study

    def list_submissions(
        self, body: Mapping[str, Any], id: str, query: Mapping[str, list[str]], path: str, **_: Any
    ) -> tuple[int, Any]:
        # Like Prolific, an unknown study's submission list is empty, not a 404.
        items = [s for s in self.submissions.values() if s["study_id"] == id]
        return 200, self._page(items, path, query)

    def query_submissions(
        self, body: Mapping[str, Any], query: Mapping[str, list[str]], path: str, **_: Any
    ) -> tuple[int, Any]:
        """``GET /submissions/?study=&ordering=started_at&page=&page_size=``, as Prolific pages it.

        ``page_size`` is honoured up to the fake's own ``page_size``; a page past the end is a 404
        ("Invalid page"), as Django REST framework answers.
        """
        study = (query.get("study") or [""])[0]
        items = [s for s in self.submissions.values() if not study or s["study_id"] == study]
        if (query.get("ordering") or [""])[0].lstrip("-") == "started_at":
            items.sort(key=lambda s: s["started_at"], reverse=query["ordering"][0].startswith("-"))
        size = min(int((query.get("page_size") or [self.page_size])[0]), self.page_size)
        page = int((query.get("page") or ["1"])[0])
        start = (page - 1) * size
        if page < 1 or (page > 1 and start >= len(items)):
            raise FakeProlificError(404, "Invalid page.")
        params = {k: v[0] for k, v in query.items() if k != "page"}
        more = "&".join(f"{k}={v}" for k, v in params.items())
        nxt = f"{self.base_url}{path}?{more}&page={page + 1}" if start + size < len(items) else None
        return 200, {
            "results": items[start : start + size],
            "_links": {"next": {"href": nxt}},
            "meta": {"count": len(items)},
        }

    def get_submission(self, body: Mapping[str, Any], id: str, **_: Any) -> tuple[int, Any]:
        return 200, self._submission(id)

    def transition_submission(self, body: Mapping[str, Any], id: str, **_: Any) -> tuple[int, Any]:
        sub = self._submission(id)
        action = body.get("action")
        if sub["status"] != "AWAITING REVIEW":
            raise FakeProlificError(400, f"submission {id} is {sub['status']}, not AWAITING REVIEW")
        if action == "APPROVE":
            sub["status"] = "APPROVED"
        elif action == "REJECT":
            if len(body.get("message", "")) < 100 or not body.get("rejection_category"):
                raise FakeProlificError(400, "a rejection needs a 100-character message and a category")
            sub["status"] = "REJECTED"
        else:
            raise FakeProlificError(400, f"unknown action {action}")
        return 200, sub

    def bulk_approve(self, body: Mapping[str, Any], **_: Any) -> tuple[int, Any]:
        for sid in body.get("submission_ids", []):
            sub = self._submission(sid)
            if sub["status"] == "AWAITING REVIEW":
                sub["status"] = "APPROVED"
        return 200, {}

    def set_up_bonus(self, body: Mapping[str, Any], **_: Any) -> tuple[int, Any]:
        study = self._study(body.get("study_id", ""))
        rows = []
        for line in body.get("csv_bonuses", "").strip().splitlines():
            pid, amount = line.split(",")
            if not any(
                s["participant_id"] == pid and s["study_id"] == study["id"] for s in self.submissions.values()
            ):
                raise FakeProlificError(400, f"participant {pid} did not take part in study {study['id']}")
            rows.append((pid, round(float(amount) * 100)))
        amount = sum(c for _, c in rows)
        fees = round(amount / 3)
        bulk = {
            "id": self._id(),
            "study": study["id"],
            "amount": amount,
            "fees": fees,
            "total_amount": amount + fees,
            "_rows": rows,
        }
        self.bulk_bonuses[bulk["id"]] = bulk
        return 201, {k: v for k, v in bulk.items() if not k.startswith("_")}

    def pay_bonus(self, body: Mapping[str, Any], id: str, **_: Any) -> tuple[int, Any]:
        bulk = self.bulk_bonuses.get(id)
        if bulk is None:
            raise FakeProlificError(404, f"bulk bonus payment {id} not found")
        for pid, cents in bulk["_rows"]:  # not idempotent, like the real endpoint
            self.payments.append({"bulk_id": id, "participant_id": pid, "cents": cents})
            for sub in self.submissions.values():  # the submission record lists its bonuses
                if sub["participant_id"] == pid and sub["study_id"] == bulk["study"]:
                    sub["bonus_payments"].append(cents)
        if "pay" in self.drop_after_processing:
            self.drop_after_processing.discard("pay")
            raise _DropConnection()
        return 202, {}

    def create_group(self, body: Mapping[str, Any], **_: Any) -> tuple[int, Any]:
        group = {"id": self._id(), "name": body.get("name", ""), "participants": []}
        self.groups[group["id"]] = group
        return 201, {k: v for k, v in group.items() if k != "participants"}

    def _group(self, group_id: str) -> dict[str, Any]:
        group = self.groups.get(group_id)
        if group is None:
            raise FakeProlificError(404, f"participant group {group_id} not found")
        return group

    def list_group(
        self, body: Mapping[str, Any], id: str, query: Mapping[str, list[str]], path: str, **_: Any
    ) -> tuple[int, Any]:
        items = [{"participant_id": p} for p in self._group(id)["participants"]]
        return 200, self._page(items, path, query)

    def add_to_group(self, body: Mapping[str, Any], id: str, **_: Any) -> tuple[int, Any]:
        group = self._group(id)
        for pid in body.get("participant_ids", []):
            if pid not in group["participants"]:
                group["participants"].append(pid)
        return 200, {"results": [{"participant_id": p} for p in group["participants"]]}

    def remove_from_group(self, body: Mapping[str, Any], id: str, **_: Any) -> tuple[int, Any]:
        group = self._group(id)
        group["participants"] = [p for p in group["participants"] if p not in body.get("participant_ids", [])]
        return 200, {"results": [{"participant_id": p} for p in group["participants"]]}

    def send_message(self, body: Mapping[str, Any], **_: Any) -> tuple[int, Any]:
        if not body.get("recipient_id") or not body.get("body") or not body.get("study_id"):
            raise FakeProlificError(400, "a message needs recipient_id, body and study_id")
        self.messages.append(dict(body))
        return 201, {}

    # --- participant side --------------------------------------------------------------------------

    def _allowed(self, study: Mapping[str, Any], participant_id: str) -> bool:
        for f in study.get("filters", []):
            members = {
                p
                for g in f.get("selected_values", [])
                for p in self.groups.get(g, {}).get("participants", [])
            }
            if f.get("filter_id") == "participant_group_allowlist" and participant_id not in members:
                return False
            if f.get("filter_id") == "participant_group_blocklist" and participant_id in members:
                return False
        return True

    def start(self, study_id: str, participant_id: str) -> str:
        """A participant starts the study; return the submission (session) id.

        Raises:
            FakeProlificError: the study is not active or full, or the participant is filtered out or
                already took part.
        """
        with self.lock:
            study = self._study(study_id)
            if study["status"] != "ACTIVE" or study["places_taken"] >= study["total_available_places"]:
                raise FakeProlificError(400, f"study {study_id} is not open")
            if not self._allowed(study, participant_id):
                raise FakeProlificError(403, f"participant {participant_id} is not eligible")
            if any(
                s["participant_id"] == participant_id and s["study_id"] == study_id
                for s in self.submissions.values()
            ):
                raise FakeProlificError(400, f"participant {participant_id} already took part")
            study["places_taken"] += 1
            sub_id = self._id()
            self.submissions[sub_id] = {
                "id": sub_id,
                "study_id": study_id,
                "participant_id": participant_id,
                "status": "ACTIVE",
                "started_at": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
                "completed_at": None,
                "study_code": "",
                "bonus_payments": [],
            }
            return sub_id

    def study_url_for(self, study_id: str, participant_id: str, submission_id: str) -> str:
        """Return the study URL with the placeholders filled, as Prolific sends the participant."""
        url = self._study(study_id)["external_study_url"]
        return (
            url.replace("{{%PROLIFIC_PID%}}", participant_id)
            .replace("{{%STUDY_ID%}}", study_id)
            .replace("{{%SESSION_ID%}}", submission_id)
        )

    def complete(self, submission_id: str, code: str) -> None:
        """The participant lands on the completion URL with ``code``: AWAITING REVIEW if it is right."""
        with self.lock:
            sub = self._submission(submission_id)
            codes = {c["code"] for c in self._study(sub["study_id"])["completion_codes"]}
            sub["study_code"] = code
            sub["status"] = "AWAITING REVIEW"
            sub["completed_at"] = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
            if code not in codes:
                sub["entered_code_valid"] = False

    def webhook(
        self, secret: str, payload: Mapping[str, Any], timestamp: Optional[str] = None
    ) -> tuple[dict[str, str], bytes]:
        """Return (headers, body) of a webhook request signed as Prolific signs it."""
        body = json.dumps(payload).encode()
        ts = timestamp or str(int(time.time()))
        return {
            SIGNATURE_HEADER: sign(secret, ts, body),
            TIMESTAMP_HEADER: ts,
            "Content-Type": "application/json",
        }, body


class _Handler(BaseHTTPRequestHandler):
    server: FakeHTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _answer(self, status: int, payload: Any, headers: Optional[Mapping[str, str]] = None) -> None:
        body = b"" if payload is None else json.dumps(payload).encode()
        try:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the caller was killed: its answer is lost
            return

    def _dispatch(self, method: str) -> None:
        fake = self.server.fake
        parsed = urlparse(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.headers.get("Authorization") != f"Token {fake.token}":
            self._answer(
                401,
                {"error": {"status": 401, "error_code": 100, "title": "Unauthorized", "detail": "bad token"}},
            )
            return
        if not parsed.path.startswith(API_PREFIX):
            self._answer(404, {"error": {"status": 404, "error_code": 404000, "detail": parsed.path}})
            return
        try:
            status, payload = fake.handle(
                method, parsed.path, parse_qs(parsed.query), json.loads(raw) if raw else {}
            )
        except FakeProlificError as exc:
            err = {"status": exc.status, "error_code": exc.error_code, "title": "Error", "detail": exc.detail}
            self._answer(exc.status, {"error": err}, exc.headers)
            return
        except _DropConnection as exc:
            drop_connection(self, exc.kind, fake.faults.stall_seconds)
            return
        self._answer(status, payload)

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")


class FakeProlificServer(LocalServer):
    """Runs a ``FakeProlific`` on 127.0.0.1 in a background thread (use as a context manager)."""

    def __init__(self, fake: Optional[FakeProlific] = None, faults: Optional[Faults] = None) -> None:
        self.fake = fake or FakeProlific(faults=faults)
        super().__init__(_Handler, self.fake, "fake-prolific")
        self.api_url = f"{self.url}{API_PREFIX}"
        self.fake.base_url = self.url

    @property
    def token(self) -> str:
        """The API token the fake accepts."""
        return self.fake.token
