"""Hive-style partition folders as Spark names them (``hive_folder``, used by the files tasks write
themselves) and back (``stage_partition_values``, used for every staged file): a round trip for every
partition type, the characters Spark escapes, and Hive's default partition for null and ''."""

from __future__ import annotations

from datetime import date

import pytest

from rebalance_replay.jobs.delta.partitions import hive_folder, stage_partition_values
from rebalance_replay.schemas.core import Column as C
from rebalance_replay.schemas.core import TableDef

TABLE = TableDef(
    "t",
    (C("id", "bigint", False), C("day", "date"), C("n", "int"), C("flag", "boolean"), C("key", "string")),
    partition_by=("day", "n", "flag", "key"),
)


@pytest.mark.parametrize(
    ("values", "folder"),
    [
        ({"day": date(2024, 5, 1), "n": 7, "flag": True, "key": "plain"},
         "day=2024-05-01/n=7/flag=true/key=plain"),
        ({"day": None, "n": -1, "flag": False, "key": None}, "day=__HIVE_DEFAULT_PARTITION__/n=-1/flag=false/"
         "key=__HIVE_DEFAULT_PARTITION__"),
        ({"day": date(2024, 1, 2), "n": 0, "flag": None, "key": "a:b c/50%=x?#"}, "day=2024-01-02/n=0/"
         "flag=__HIVE_DEFAULT_PARTITION__/key=a%3Ab c%2F50%25%3Dx%3F%23"),
        ({"day": date(2024, 1, 2), "n": 0, "flag": True, "key": "ü{[*]}^\\\x01\x7f'\""},
         "day=2024-01-02/n=0/flag=true/key=ü%7B%5B%2A%5D}%5E%5C%01%7F%27%22"),
    ],
)  # fmt: skip
def test_folder_names_are_sparks_and_read_back(values: dict[str, object], folder: str) -> None:
    assert hive_folder(TABLE, values) == folder
    back = stage_partition_values(TABLE, folder)
    expected = {
        "day": None if values["day"] is None else str(values["day"]),
        "n": str(values["n"]),
        "flag": None if values["flag"] is None else str(values["flag"]).lower(),
        "key": values["key"],
    }
    assert back == expected


def test_empty_string_is_the_default_partition_as_in_spark() -> None:
    folder = hive_folder(TABLE, {"day": date(2024, 5, 1), "n": 1, "flag": True, "key": ""})
    assert folder.endswith("key=__HIVE_DEFAULT_PARTITION__")
    assert stage_partition_values(TABLE, folder)["key"] is None


def test_only_partition_columns() -> None:
    with pytest.raises(KeyError):
        hive_folder(TABLE, {"day": date(2024, 5, 1)})
