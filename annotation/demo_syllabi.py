"""Demo syllabi and their reference QA pairs, generated from the course facts in ``demo/courses/``.

Why: the demo needs enough syllabi for a release with train, val and test (no syllabus in two splits)
and a benchmark on ``test``, without shipping real data. Each fictional course in ``courses.json`` (a few
lines of facts written for crowdqa) becomes a two-page syllabus and fourteen QA pairs, two of each of
the seven SyllabusQA types (papers/syllabusqa.txt 2.3), whose answer spans are copied from the text and
whose reasoning answers are computed from the same facts, so every pair is correct by construction.
The output is deterministic: the same file gives the same texts, pairs and ids.

No Django import: :mod:`console.demo` stores what this returns.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from annotation import question_types as qt

NO_INFORMATION = "No/insufficient information"


@dataclass(frozen=True)
class DemoPair:
    """One reference QA pair: spans are exact substrings of the syllabus text."""

    id: str
    question_type: str
    question: str
    answer: str
    spans: tuple[str, ...] = ()
    steps: tuple[str, ...] = ()


@dataclass(frozen=True)
class DemoSyllabus:
    """A generated syllabus: its name, its pages (joined, they are the document text) and its pairs."""

    name: str
    pages: tuple[str, ...]
    pairs: tuple[DemoPair, ...] = field(default=())

    @property
    def text(self) -> str:
        return "".join(self.pages)


def _slug(code: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", code.lower()).strip("-")


def _grading_lines(grading: list[list[Any]]) -> list[str]:
    return [f"{name}: {weight}%" for name, weight, _ in grading]


def render_pages(course: dict[str, Any]) -> tuple[str, str]:
    """The two pages of a course's syllabus (page 2 starts at the grading section)."""
    hours = " and ".join(course["office_hours"])
    exam_rule = (
        "Exams are closed book; no notes or devices are allowed."
        if course["closed_book"]
        else "Exams are open book: you may bring your textbook and your own notes."
    )
    attendance = (
        "Attendance is recorded at every class meeting and counts toward participation."
        if course["attendance_recorded"]
        else "Attendance is not recorded, but the material of every class meeting can appear on exams."
    )
    page1 = "\n".join(
        [
            f"{course['code']}: {course['title']}",
            f"Riverbend State University, Department of {course['department']}",
            f"{course['term']}, {course['credits']} credits",
            "",
            f"Instructor: {course['instructor']}",
            f"Office: {course['office']}",
            f"Office hours: {hours}",
            "Contact: use the course inbox on the learning site.",
            "",
            f"Class meetings: {course['meetings']}, {course['room']}",
            "",
            "Course description",
            course["description"],
            "",
            "Required materials",
            f"Textbook: {course['textbook']}.",
            "",
        ]
    )
    page2 = "\n".join(
        [
            "Grading",
            *_grading_lines(course["grading"]),
            "",
            "Late work",
            f"Late work loses {course['late_percent']}% per day. "
            f"Work more than {course['late_days']} days late is not accepted.",
            "",
            "Exams",
            f"The final exam is on {course['final_exam']}. {exam_rule}",
            "",
            "Attendance",
            attendance,
            "",
        ]
    )
    return page1 + "\n", page2


def course_pairs(course: dict[str, Any], text: str) -> tuple[DemoPair, ...]:
    """Fourteen QA pairs about ``course`` (two per SyllabusQA type), checked against ``text``.

    Raises:
        ValueError: a span is not in the text (the facts and the template disagree).
    """
    code = course["code"]
    slug = _slug(code)
    grading = course["grading"]
    exams = [(name, weight) for name, weight, is_exam in grading if is_exam]
    exam_total = sum(w for _, w in exams)
    heaviest, heaviest_weight = max(((n, w) for n, w, _ in grading), key=lambda item: item[1])
    late = course["late_percent"]
    weekly = course["days"] * course["minutes"]
    closed = "Exams are closed book" if course["closed_book"] else "Exams are open book"
    attendance = "Attendance is recorded" if course["attendance_recorded"] else "Attendance is not recorded"
    description_first = course["description"].split(". ")[0].rstrip(".") + "."
    late_line = f"Late work loses {late}% per day."
    pairs = [
        DemoPair(
            f"{slug}-01",
            qt.YES_NO,
            f"Are exams in {code} closed book?",
            "Yes" if course["closed_book"] else "No",
            (closed,),
        ),
        DemoPair(
            f"{slug}-02",
            qt.YES_NO,
            f"Is attendance recorded in {code}?",
            "Yes" if course["attendance_recorded"] else "No",
            (attendance,),
        ),
        DemoPair(
            f"{slug}-03",
            qt.SINGLE_FACTUAL,
            f"Who teaches {code}?",
            course["instructor"],
            (f"Instructor: {course['instructor']}",),
        ),
        DemoPair(
            f"{slug}-04",
            qt.SINGLE_FACTUAL,
            f"When is the final exam of {code}?",
            course["final_exam"],
            (course["final_exam"],),
        ),
        DemoPair(
            f"{slug}-05",
            qt.MULTI_FACTUAL,
            f"When are the office hours for {code}?",
            " and ".join(course["office_hours"]),
            tuple(course["office_hours"]),
        ),
        DemoPair(
            f"{slug}-06",
            qt.MULTI_FACTUAL,
            f"What makes up the grade in {code}?",
            ", ".join(f"{n} {w}%" for n, w, _ in grading),
            tuple(_grading_lines(grading))[:5],
        ),
        DemoPair(
            f"{slug}-07",
            qt.SINGLE_REASONING,
            f"How much do I lose if I hand in {code} work two days late?",
            f"{2 * late}%" if course["late_days"] >= 2 else "It is not accepted.",
            steps=(
                f"Late work loses {late}% per day, so two days cost {2 * late}%."
                if course["late_days"] >= 2
                else f"Work more than {course['late_days']} day late is not accepted.",
            ),
        ),
        DemoPair(
            f"{slug}-08",
            qt.SINGLE_REASONING,
            f"How much do all exams count together in {code}?",
            f"{exam_total}%",
            steps=(
                " + ".join(f"{w}%" for _, w in exams) + f" = {exam_total}%"
                if exams
                else "No part of the grade is an exam, so 0%.",
            ),
        ),
        DemoPair(
            f"{slug}-09",
            qt.MULTI_REASONING,
            f"How many minutes of class are there each week in {code}?",
            f"{weekly} minutes",
            steps=(
                f"Class meets {course['days']} times a week ({course['meetings']}).",
                f"Each meeting lasts {course['minutes']} minutes, so {course['days']} x "
                f"{course['minutes']} = {weekly} minutes.",
            ),
        ),
        DemoPair(
            f"{slug}-10",
            qt.MULTI_REASONING,
            f"If I get full marks on everything except a zero for the {heaviest.lower()} of {code}, "
            "what is my score?",
            f"{100 - heaviest_weight}%",
            steps=(
                f"The {heaviest.lower()} is worth {heaviest_weight}% of the grade.",
                f"Everything else adds up to 100% - {heaviest_weight}% = {100 - heaviest_weight}%.",
            ),
        ),
        DemoPair(
            f"{slug}-11",
            qt.SUMMARIZATION,
            f"What is {code} about?",
            course["description"],
            (description_first,),
        ),
        DemoPair(
            f"{slug}-12",
            qt.SUMMARIZATION,
            f"What is the late work policy of {code}?",
            f"Late work loses {late}% per day and is not accepted after {course['late_days']} days.",
            (late_line, f"Work more than {course['late_days']} days late is not accepted."),
        ),
        DemoPair(
            f"{slug}-13", qt.NO_ANSWER, f"Is parking included in the course fee of {code}?", NO_INFORMATION
        ),
        DemoPair(
            f"{slug}-14", qt.NO_ANSWER, f"Can I take {code} online from another country?", NO_INFORMATION
        ),
    ]
    for pair in pairs:
        for span in pair.spans:
            if span not in text:
                raise ValueError(f"{code}: span {span!r} of {pair.id} is not in the syllabus")
    return tuple(pairs)


def load_courses(path: Path) -> list[DemoSyllabus]:
    """Read ``courses.json`` and return the generated syllabi with their pairs, in file order."""
    courses = json.loads(path.read_text(encoding="utf-8"))
    syllabi = []
    for course in courses:
        pages = render_pages(course)
        name = f"{course['code']} {course['title']} {course['term']}"
        syllabi.append(DemoSyllabus(name, pages, course_pairs(course, "".join(pages))))
    return syllabi
