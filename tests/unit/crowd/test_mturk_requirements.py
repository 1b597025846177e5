"""Tests for crowd/providers/mturk/requirements.py."""

from __future__ import annotations

import pytest

from crowd.providers.mturk import requirements as mturk_requirements


def test_requirements__system_ids_and_comparators() -> None:
    assert mturk_requirements.locale_requirement(["us", "CA"])["LocaleValues"] == [
        {"Country": "US"},
        {"Country": "CA"},
    ]
    rate = mturk_requirements.approval_rate_requirement(98)
    assert (rate["QualificationTypeId"], rate["IntegerValues"]) == ("000000000000000000L0", [98])
    assert (
        mturk_requirements.number_approved_requirement(500)["QualificationTypeId"] == "00000000000000000040"
    )
    assert mturk_requirements.has_qualification_requirement("Q1")["Comparator"] == "Exists"
    assert mturk_requirements.has_qualification_requirement("Q1", 80)["IntegerValues"] == [80]
    assert mturk_requirements.lacks_qualification_requirement("Q2")["Comparator"] == "DoesNotExist"
    with pytest.raises(ValueError):
        mturk_requirements.approval_rate_requirement(101)
