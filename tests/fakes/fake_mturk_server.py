"""A local fake of the MTurk requester API speaking AWS JSON 1.1, plus the worker side of a HIT.

Point boto3 at it with ``endpoint_url=server.url`` or ``AWS_ENDPOINT_URL_MTURK=server.url`` (any fake
credentials). Requests are ``POST /`` with ``X-Amz-Target: MTurkRequesterServiceV20170117.<Operation>``
and a JSON body; errors are HTTP 400 ``{"__type": "RequestError", "message": ..., "TurkErrorCode": ...}``
like the real service (botocore's service model: ``RequestError`` / ``ServiceFault`` with ``Message`` and
``TurkErrorCode``), so botocore raises the same ``ClientError``s. A CreateHIT repeating a
UniqueRequestToken answers ``AWS.MechanicalTurk.HitAlreadyExists`` with the existing HIT's id, as
documented for CreateHITWithHITType. HITs, assignments, bonuses, blocks and qualifications live in
memory.

Faults: ``FakeMTurk(faults=Faults(seed).set(...))`` throttles (``ThrottlingException``), answers 503
``ServiceUnavailable``, stalls, resets, or applies a call and drops its answer, per operation and rate
(``tests.fakes.faults``); ``fail_next`` refuses one named call with a chosen error.

The worker side: ``accept`` gives a worker an assignment, ``worker_url`` is the ExternalURL with the
parameters MTurk adds (``assignmentId``, ``hitId``, ``workerId``, ``turkSubmitTo``), and a form POSTed to
``{turkSubmitTo}/mturk/externalSubmit`` submits the assignment, as MTurk's page does. ``submit`` does all
three in one call.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
import urllib.request
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler
from typing import Any, Optional
from xml.sax.saxutils import escape

from tests.fakes.faults import Faults
from tests.fakes.local_server import FakeHTTPServer, LocalServer, drop_connection

TARGET_PREFIX = "MTurkRequesterServiceV20170117."
ANSWER_NS = (
    "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2005-10-01/QuestionFormAnswers.xsd"
)


class _NoAnswer(Exception):
    """Close the connection without answering (``kind``: a fault of ``tests.fakes.faults``)."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


class FakeMTurkError(Exception):
    """An error the fake answers with (``__type`` and message)."""

    def __init__(
        self, message: str, error_type: str = "RequestError", status: int = 400, turk_code: str = ""
    ) -> None:
        super().__init__(message)
        self.message = message
        self.error_type = error_type
        self.status = status
        self.turk_code = turk_code


def answer_xml(answers: Mapping[str, Sequence[str]]) -> str:
    """Build QuestionFormAnswers XML as MTurk stores an ExternalQuestion submission."""
    parts = [f'<QuestionFormAnswers xmlns="{ANSWER_NS}">']
    for key, values in answers.items():
        for value in values:
            parts.append(
                f"<Answer><QuestionIdentifier>{escape(key)}</QuestionIdentifier>"
                f"<FreeText>{escape(value)}</FreeText></Answer>"
            )
    parts.append("</QuestionFormAnswers>")
    return "".join(parts)


class FakeMTurk:
    """The in-memory state and operations of the fake MTurk."""

    def __init__(self, balance_cents: int = 10_000, faults: Optional[Faults] = None) -> None:
        self.lock = threading.RLock()
        self.faults = faults or Faults()
        self.url = ""
        self.balance_cents = balance_cents
        self.hit_types: dict[str, dict[str, Any]] = {}
        self.hits: dict[str, dict[str, Any]] = {}
        self.assignments: dict[str, dict[str, Any]] = {}
        self.bonuses: list[dict[str, Any]] = []
        self.tokens: dict[str, str] = {}  # UniqueRequestToken -> resulting id
        self.blocks: dict[str, str] = {}
        self.qualification_types: dict[str, dict[str, Any]] = {}
        self.grants: dict[tuple[str, str], int] = {}  # (qualification, worker) -> value
        self.notifications: list[dict[str, Any]] = []
        self.calls: list[str] = []
        self.fail_next: dict[str, FakeMTurkError] = {}
        # operation -> callable run once after the operation took effect and before its answer is sent
        # (kill tests kill the calling process there: the platform acted, the caller never heard).
        self.after: dict[str, Callable[[], None]] = {}

    # --- helpers ---------------------------------------------------------------------------------------

    @staticmethod
    def _id(prefix: str) -> str:
        return (prefix + uuid.uuid4().hex.upper())[:30]

    def _use_token(self, token: Optional[str], result_id: str) -> None:
        if not token:
            return
        if token in self.tokens:
            raise FakeMTurkError(
                f'The idempotency token "{token}" has already been processed. ({int(time.time())})'
            )
        self.tokens[token] = result_id

    def _check_token(self, token: Optional[str]) -> None:
        if token and token in self.tokens:
            raise FakeMTurkError(
                f'The idempotency token "{token}" has already been processed. ({int(time.time())})'
            )

    def _hit(self, hit_id: str) -> dict[str, Any]:
        hit = self.hits.get(hit_id)
        if hit is None:
            raise FakeMTurkError(f"Hit {hit_id} does not exist. ({int(time.time())})")
        return hit

    def _assignment(self, assignment_id: str) -> dict[str, Any]:
        asg = self.assignments.get(assignment_id)
        if asg is None:
            raise FakeMTurkError(f"Assignment {assignment_id} does not exist. ({int(time.time())})")
        return asg

    @staticmethod
    def _page(items: list[dict[str, Any]], key: str, params: Mapping[str, Any]) -> dict[str, Any]:
        size = int(params.get("MaxResults", 10))
        start = int(params.get("NextToken") or 0)
        page = items[start : start + size]
        result: dict[str, Any] = {"NumResults": len(page), key: page}
        if start + size < len(items):
            result["NextToken"] = str(start + size)
        return result

    def _public_hit(self, hit: Mapping[str, Any]) -> dict[str, Any]:
        pending = sum(
            1 for a in self.assignments.values() if a["HITId"] == hit["HITId"] and a["_state"] == "Accepted"
        )
        done = sum(
            1 for a in self.assignments.values() if a["HITId"] == hit["HITId"] and a["_state"] != "Accepted"
        )
        out = {k: v for k, v in hit.items() if not k.startswith("_")}
        out["NumberOfAssignmentsPending"] = pending
        out["NumberOfAssignmentsCompleted"] = done
        out["NumberOfAssignmentsAvailable"] = max(0, hit["MaxAssignments"] - pending - done)
        return out

    @staticmethod
    def _public_assignment(asg: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in asg.items() if not k.startswith("_")}

    # --- operations (named as the X-Amz-Target operation) -----------------------------------------------

    def CreateHITType(self, p: Mapping[str, Any]) -> dict[str, Any]:
        for hit_type_id, existing in self.hit_types.items():
            if existing == dict(p):
                return {"HITTypeId": hit_type_id}  # MTurk reuses identical HIT types
        hit_type_id = self._id("HT")
        self.hit_types[hit_type_id] = dict(p)
        return {"HITTypeId": hit_type_id}

    def CreateHITWithHITType(self, p: Mapping[str, Any]) -> dict[str, Any]:
        hit_type = self.hit_types.get(p["HITTypeId"])
        if hit_type is None:
            raise FakeMTurkError(f"HITType {p['HITTypeId']} does not exist.")
        token = p.get("UniqueRequestToken")
        if token and token in self.tokens:
            raise FakeMTurkError(
                f"The HIT with ID {self.tokens[token]} already exists for this UniqueRequestToken. "
                f"({int(time.time())})",
                turk_code="AWS.MechanicalTurk.HitAlreadyExists",
            )
        hit_id = self._id("H")
        self._use_token(token, hit_id)
        now = time.time()
        self.hits[hit_id] = {
            "HITId": hit_id,
            "HITTypeId": p["HITTypeId"],
            "HITGroupId": p["HITTypeId"],
            "CreationTime": now,
            "Title": hit_type["Title"],
            "Description": hit_type["Description"],
            "Question": p["Question"],
            "HITStatus": "Assignable",
            "MaxAssignments": p["MaxAssignments"],
            "Reward": hit_type["Reward"],
            "AutoApprovalDelayInSeconds": hit_type["AutoApprovalDelayInSeconds"],
            "Expiration": now + p["LifetimeInSeconds"],
            "AssignmentDurationInSeconds": hit_type["AssignmentDurationInSeconds"],
            "RequesterAnnotation": p.get("RequesterAnnotation", ""),
            "QualificationRequirements": hit_type.get("QualificationRequirements", []),
        }
        return {"HIT": self._public_hit(self.hits[hit_id])}

    def GetHIT(self, p: Mapping[str, Any]) -> dict[str, Any]:
        return {"HIT": self._public_hit(self._hit(p["HITId"]))}

    def ListHITs(self, p: Mapping[str, Any]) -> dict[str, Any]:
        return self._page([self._public_hit(h) for h in self.hits.values()], "HITs", p)

    def UpdateExpirationForHIT(self, p: Mapping[str, Any]) -> dict[str, Any]:
        hit = self._hit(p["HITId"])
        hit["Expiration"] = p["ExpireAt"]
        if p["ExpireAt"] <= time.time():
            hit["HITStatus"] = "Unassignable"
        return {}

    def DeleteHIT(self, p: Mapping[str, Any]) -> dict[str, Any]:
        hit = self._hit(p["HITId"])
        if hit["Expiration"] > time.time():
            raise FakeMTurkError(f"This HIT is currently in the state 'Assignable'. ({p['HITId']})")
        if any(
            a["HITId"] == hit["HITId"] and a["AssignmentStatus"] == "Submitted"
            for a in self.assignments.values()
        ):
            raise FakeMTurkError(f"HIT {p['HITId']} has assignments that are not approved or rejected.")
        del self.hits[p["HITId"]]
        return {}

    def CreateAdditionalAssignmentsForHIT(self, p: Mapping[str, Any]) -> dict[str, Any]:
        hit = self._hit(p["HITId"])
        self._use_token(p.get("UniqueRequestToken"), hit["HITId"])
        hit["MaxAssignments"] += int(p["NumberOfAdditionalAssignments"])
        return {}

    def ListAssignmentsForHIT(self, p: Mapping[str, Any]) -> dict[str, Any]:
        self._hit(p["HITId"])
        statuses = set(p.get("AssignmentStatuses") or ["Submitted", "Approved", "Rejected"])
        items = [
            self._public_assignment(a)
            for a in self.assignments.values()
            if a["HITId"] == p["HITId"] and a["_state"] != "Accepted" and a["AssignmentStatus"] in statuses
        ]
        return self._page(items, "Assignments", p)

    def GetAssignment(self, p: Mapping[str, Any]) -> dict[str, Any]:
        # MTurk returns only Submitted, Approved or Rejected assignments: one still being worked on is
        # unknown to GetAssignment (its documented behaviour), so an id cannot be confirmed at arrival.
        asg = self._assignment(p["AssignmentId"])
        if asg["_state"] == "Accepted":
            raise FakeMTurkError(f"Assignment {p['AssignmentId']} does not exist. ({int(time.time())})")
        return {"Assignment": self._public_assignment(asg), "HIT": self._public_hit(self.hits[asg["HITId"]])}

    def ApproveAssignment(self, p: Mapping[str, Any]) -> dict[str, Any]:
        asg = self._assignment(p["AssignmentId"])
        allowed = ("Submitted", "Rejected") if p.get("OverrideRejection") else ("Submitted",)
        if asg["_state"] == "Accepted" or asg["AssignmentStatus"] not in allowed:
            raise FakeMTurkError(
                f"This operation can be called with a status of: Submitted ({int(time.time())})"
            )
        hit = self.hits[asg["HITId"]]
        self.balance_cents -= _cents(hit["Reward"])
        asg["AssignmentStatus"] = "Approved"
        asg["ApprovalTime"] = time.time()
        if p.get("RequesterFeedback"):
            asg["RequesterFeedback"] = p["RequesterFeedback"]
        return {}

    def RejectAssignment(self, p: Mapping[str, Any]) -> dict[str, Any]:
        asg = self._assignment(p["AssignmentId"])
        if asg["_state"] == "Accepted" or asg["AssignmentStatus"] != "Submitted":
            raise FakeMTurkError(
                f"This operation can be called with a status of: Submitted ({int(time.time())})"
            )
        asg["AssignmentStatus"] = "Rejected"
        asg["RejectionTime"] = time.time()
        asg["RequesterFeedback"] = p["RequesterFeedback"]
        return {}

    def SendBonus(self, p: Mapping[str, Any]) -> dict[str, Any]:
        asg = self._assignment(p["AssignmentId"])
        if asg["WorkerId"] != p["WorkerId"]:
            raise FakeMTurkError(f"Assignment {p['AssignmentId']} was not done by worker {p['WorkerId']}.")
        self._check_token(p.get("UniqueRequestToken"))
        cents = _cents(p["BonusAmount"])
        if cents > self.balance_cents:
            raise FakeMTurkError(
                "This Requester has insufficient funds in their account to complete this transaction."
            )
        self._use_token(p.get("UniqueRequestToken"), p["AssignmentId"])
        self.balance_cents -= cents
        self.bonuses.append(
            {
                "WorkerId": p["WorkerId"],
                "BonusAmount": p["BonusAmount"],
                "AssignmentId": p["AssignmentId"],
                "Reason": p["Reason"],
                "GrantTime": time.time(),
            }
        )
        return {}

    def ListBonusPayments(self, p: Mapping[str, Any]) -> dict[str, Any]:
        items = [b for b in self.bonuses if b["AssignmentId"] == p.get("AssignmentId", b["AssignmentId"])]
        return self._page(items, "BonusPayments", p)

    def CreateWorkerBlock(self, p: Mapping[str, Any]) -> dict[str, Any]:
        self.blocks[p["WorkerId"]] = p["Reason"]
        return {}

    def DeleteWorkerBlock(self, p: Mapping[str, Any]) -> dict[str, Any]:
        self.blocks.pop(p["WorkerId"], None)
        return {}

    def ListWorkerBlocks(self, p: Mapping[str, Any]) -> dict[str, Any]:
        items = [{"WorkerId": w, "Reason": r} for w, r in self.blocks.items()]
        return self._page(items, "WorkerBlocks", p)

    def CreateQualificationType(self, p: Mapping[str, Any]) -> dict[str, Any]:
        if any(q["Name"] == p["Name"] for q in self.qualification_types.values()):
            raise FakeMTurkError(f"You have already created a QualificationType with this name: {p['Name']}")
        qid = self._id("Q")
        qual = {
            "QualificationTypeId": qid,
            "CreationTime": time.time(),
            "Name": p["Name"],
            "Description": p["Description"],
            "QualificationTypeStatus": p["QualificationTypeStatus"],
        }
        self.qualification_types[qid] = qual
        return {"QualificationType": qual}

    def ListQualificationTypes(self, p: Mapping[str, Any]) -> dict[str, Any]:
        query = str(p.get("Query", "")).lower()
        items = [q for q in self.qualification_types.values() if query in q["Name"].lower()]
        return self._page(items, "QualificationTypes", p)

    def AssociateQualificationWithWorker(self, p: Mapping[str, Any]) -> dict[str, Any]:
        if p["QualificationTypeId"] not in self.qualification_types:
            raise FakeMTurkError(f"QualificationType {p['QualificationTypeId']} does not exist.")
        self.grants[(p["QualificationTypeId"], p["WorkerId"])] = int(p.get("IntegerValue", 1))
        return {}

    def DisassociateQualificationFromWorker(self, p: Mapping[str, Any]) -> dict[str, Any]:
        self.grants.pop((p["QualificationTypeId"], p["WorkerId"]), None)
        return {}

    def NotifyWorkers(self, p: Mapping[str, Any]) -> dict[str, Any]:
        if len(p["WorkerIds"]) > 100:
            raise FakeMTurkError("WorkerIds has more than 100 elements.")
        self.notifications.append(dict(p))
        return {"NotifyWorkersFailureStatuses": []}

    def GetAccountBalance(self, p: Mapping[str, Any]) -> dict[str, Any]:
        return {"AvailableBalance": f"{self.balance_cents // 100}.{self.balance_cents % 100:02d}"}

    def _inject_before(self, fault: Optional[str]) -> None:
        """Refuse the call as MTurk does when throttling or failing, or drop it unanswered."""
        if fault == "throttle":
            raise FakeMTurkError("Rate exceeded", "ThrottlingException", status=400)
        if fault == "server_error":
            raise FakeMTurkError("Service Unavailable", "ServiceUnavailable", status=503)
        if fault in ("timeout", "reset"):
            raise _NoAnswer(fault)

    def dispatch(self, operation: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """Run one operation under the lock (faults drawn from ``faults`` first)."""
        fault = self.faults.draw(operation)
        with self.lock:
            self.calls.append(operation)
            self._inject_before(fault)
            if operation in self.fail_next:
                raise self.fail_next.pop(operation)
            handler = getattr(self, operation, None)
            if handler is None or operation.startswith("_"):
                raise FakeMTurkError(
                    f"operation {operation} is not implemented by the fake", "UnknownOperationException"
                )
            result = handler(params)
            hook = self.after.pop(operation, None)
            if hook is not None:
                hook()
            if fault == "lost_reply":
                raise _NoAnswer(fault)
            return result

    # --- worker side ---------------------------------------------------------------------------------

    def _qualified(self, worker_id: str, requirements: Sequence[Mapping[str, Any]]) -> bool:
        for req in requirements:
            held = (req["QualificationTypeId"], worker_id) in self.grants
            if req["Comparator"] == "DoesNotExist" and held:
                return False
            if (
                req["Comparator"] == "Exists"
                and not held
                and req["QualificationTypeId"] in self.qualification_types
            ):
                return False
        return True

    def accept(self, hit_id: str, worker_id: str) -> str:
        """Let a worker accept a HIT; return the new assignment id.

        Raises:
            FakeMTurkError: the HIT is expired or full, the worker is blocked, unqualified, or already
                did this HIT.
        """
        with self.lock:
            hit = self._hit(hit_id)
            public = self._public_hit(hit)
            if hit["Expiration"] <= time.time() or public["NumberOfAssignmentsAvailable"] <= 0:
                raise FakeMTurkError(f"HIT {hit_id} is not available")
            if worker_id in self.blocks:
                raise FakeMTurkError(f"Worker {worker_id} is blocked")
            if not self._qualified(worker_id, hit["QualificationRequirements"]):
                raise FakeMTurkError(f"Worker {worker_id} does not meet the qualification requirements")
            if any(a["HITId"] == hit_id and a["WorkerId"] == worker_id for a in self.assignments.values()):
                raise FakeMTurkError(f"Worker {worker_id} already worked on HIT {hit_id}")
            assignment_id = self._id("A")
            now = time.time()
            self.assignments[assignment_id] = {
                "AssignmentId": assignment_id,
                "WorkerId": worker_id,
                "HITId": hit_id,
                "AssignmentStatus": "Submitted",
                "_state": "Accepted",
                "AutoApprovalTime": now + hit["AutoApprovalDelayInSeconds"],
                "AcceptTime": now,
                "Deadline": now + hit["AssignmentDurationInSeconds"],
            }
            return assignment_id

    def worker_url(self, hit_id: str, assignment_id: str, worker_id: str) -> str:
        """Return the ExternalURL with the parameters MTurk adds for an accepted assignment."""
        question = ET.fromstring(self._hit(hit_id)["Question"])
        url = next(el.text for el in question.iter() if el.tag.endswith("ExternalURL"))
        query = urllib.parse.urlencode(
            {"assignmentId": assignment_id, "hitId": hit_id, "workerId": worker_id, "turkSubmitTo": self.url}
        )
        return f"{url}{'&' if '?' in (url or '') else '?'}{query}"

    def external_submit(self, form: Mapping[str, Sequence[str]]) -> str:
        """Handle a POST to /mturk/externalSubmit: the assignment becomes Submitted, the form its answer."""
        with self.lock:
            assignment_id = (form.get("assignmentId") or [""])[0]
            asg = self._assignment(assignment_id)
            if asg["_state"] != "Accepted":
                raise FakeMTurkError(f"Assignment {assignment_id} was already submitted")
            answers = {k: list(v) for k, v in form.items() if k != "assignmentId"}
            asg["_state"] = "Submitted"
            asg["SubmitTime"] = time.time()
            asg["Answer"] = answer_xml(answers)
            return assignment_id

    def submit(self, hit_id: str, worker_id: str, answers: Optional[Mapping[str, Any]] = None) -> str:
        """Accept a HIT and POST the answers to externalSubmit over HTTP; return the assignment id."""
        assignment_id = self.accept(hit_id, worker_id)
        fields: list[tuple[str, str]] = [("assignmentId", assignment_id)]
        for key, value in (answers or {}).items():
            values = value if isinstance(value, (list, tuple)) else [value]
            fields.extend((key, str(v)) for v in values)
        data = urllib.parse.urlencode(fields).encode()
        with urllib.request.urlopen(f"{self.url}/mturk/externalSubmit", data=data, timeout=10) as response:
            response.read()
        return assignment_id


def _cents(dollars: str) -> int:
    whole, _, frac = dollars.partition(".")
    return int(whole or 0) * 100 + int((frac + "00")[:2])


class _Handler(BaseHTTPRequestHandler):
    server: FakeHTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        return

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the caller was killed: its answer is lost
            return

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        fake = self.server.fake
        if self.path.startswith("/mturk/externalSubmit"):
            try:
                fake.external_submit(urllib.parse.parse_qs(raw.decode(), keep_blank_values=True))
            except FakeMTurkError as exc:
                self._send(400, exc.message.encode(), "text/plain")
                return
            self._send(200, b"<html><body>Submitted</body></html>", "text/html")
            return
        target = self.headers.get("X-Amz-Target", "")
        if not target.startswith(TARGET_PREFIX):
            self._send(
                400,
                json.dumps({"__type": "UnknownOperationException", "message": target}).encode(),
                "application/x-amz-json-1.1",
            )
            return
        try:
            result = fake.dispatch(target[len(TARGET_PREFIX) :], json.loads(raw or b"{}"))
        except _NoAnswer as exc:
            drop_connection(self, exc.kind, fake.faults.stall_seconds)
            return
        except FakeMTurkError as exc:
            error: dict[str, str] = {"__type": exc.error_type, "message": exc.message}
            if exc.turk_code:
                error["TurkErrorCode"] = exc.turk_code
            body = json.dumps(error)
            self._send(exc.status, body.encode(), "application/x-amz-json-1.1")
            return
        self._send(200, json.dumps(result).encode(), "application/x-amz-json-1.1")


class FakeMTurkServer(LocalServer):
    """Runs a ``FakeMTurk`` on 127.0.0.1 in a background thread (use as a context manager)."""

    def __init__(self, fake: Optional[FakeMTurk] = None, faults: Optional[Faults] = None) -> None:
        self.fake = fake or FakeMTurk(faults=faults)
        super().__init__(_Handler, self.fake, "fake-mturk")
        self.fake.url = self.url
