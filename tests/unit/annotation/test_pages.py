"""Pure tests of annotation.pages: aligning PDF pages to a document text."""

from annotation.pages import page_of, page_starts


def test_page_starts__finds_each_page_despite_spacing() -> None:
    pages = [
        "Course title and instructor information here",
        "Grading policy: midterm 20 percent final",
        "Schedule of weekly topics and readings",
    ]
    text = (
        "Course title and\ninstructor information here\n\nGrading  policy: mid-term 20 percent final\n"
        "Schedule of weekly\ntopics and readings\n"
    )
    starts = page_starts(text, pages)
    assert starts[0] == 0
    assert text[starts[1] :].startswith("Grading")
    assert text[starts[2] :].startswith("Schedule")


def test_page_starts__unfound_page_is_estimated_monotonic() -> None:
    pages = [
        "alpha beta gamma delta epsilon zeta",
        "zzzz qqqq not in the text at all xxxx",
        "omega omega omega",
    ]
    text = "alpha beta gamma delta epsilon zeta and more words here omega omega omega"
    starts = page_starts(text, pages)
    assert starts == sorted(starts) and len(starts) == 3


def test_page_of__bounds() -> None:
    assert page_of([0, 10, 20], 0) == 1
    assert page_of([0, 10, 20], 10) == 2
    assert page_of([0, 10, 20], 99) == 3
    assert page_of([], 5) == 1
