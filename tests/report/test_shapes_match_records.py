"""What each command reads of a report (report/shapes.py) is a key the report's records (records.py) write,
of a type the written value fits: a key renamed or retyped in one and not the other fails here."""
from __future__ import annotations

import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import pytest
from pydantic import TypeAdapter
from typing_extensions import NotRequired, Required, get_type_hints, is_typeddict

from agent_eval import records
from agent_eval.report import shapes

# Each shape's top TypedDict and the record it reads.
ROOTS = {"COMPARE_SHAPE": (shapes._CompareReport, records.Report),
         "RESCORE_SHAPE": (shapes._RescoreReport, records.Report),
         "SCORE_SHAPE": (shapes._ScoreReport, records.Report),
         "SCORE_RUN_SHAPE": (shapes._ScoreRun, records.RunRecord),
         "VIEW_SHAPE": (shapes._ViewReport, records.Report),
         "JUDGED_SHAPE": (shapes._JudgedReport, records.Report)}


def _plain(tp: Any) -> Any:
    while get_origin(tp) in (Annotated, Required, NotRequired):
        tp = get_args(tp)[0]
    return tp


def _members(tp: Any) -> list[Any]:
    tp = _plain(tp)
    if get_origin(tp) in (Union, types.UnionType):
        return [m for arg in get_args(tp) for m in _members(arg)]
    return [tp]


def _kinds(tp: Any) -> set[Any]:
    """The JSON kinds a value of tp may be: str, int, float, bool, list, dict, None or Any."""
    out: set[Any] = set()
    for member in _members(tp):
        if get_origin(member) is Literal:
            out |= {type(arg) for arg in get_args(member)}
        elif is_typeddict(member):
            out.add(dict)
        else:
            out.add(get_origin(member) or member)
    return out


def _nested(tp: Any) -> Any:
    """The TypedDict inside tp (itself, or its list's items), or None."""
    for member in _members(tp):
        if is_typeddict(member):
            return member
        if get_origin(member) is list and is_typeddict(item := _plain(get_args(member)[0])):
            return item
    return None


def _mismatches(shape: Any, record: Any, path: str) -> list[str]:
    written = get_type_hints(record, include_extras=True)
    out = []
    for key, read in get_type_hints(shape, include_extras=True).items():
        if key not in written:
            out.append(f"{path}.{key}: the report's {record.__name__} has no such key")
            continue
        wrote, accepted = _kinds(written[key]), _kinds(read) | {type(None)}
        if Any not in accepted and Any not in wrote and not wrote <= accepted | ({int} if float in accepted else set()):
            out.append(f"{path}.{key}: written as {sorted(map(str, wrote))}, read as {sorted(map(str, accepted))}")
        if _nested(read) is not None and _nested(written[key]) is not None:
            out.extend(_mismatches(_nested(read), _nested(written[key]), f"{path}.{key}"))
    return out


def test_every_shape_is_paired_with_its_record() -> None:
    adapters = {name for name, value in vars(shapes).items() if isinstance(value, TypeAdapter)}
    assert adapters == set(ROOTS)


@pytest.mark.parametrize("name", sorted(ROOTS))
def test_a_shape_reads_only_keys_the_report_writes_with_their_types(name: str) -> None:
    shape, record = ROOTS[name]
    assert _mismatches(shape, record, name) == []
