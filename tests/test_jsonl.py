import gzip

import pytest
from pydantic import BaseModel

from orchrm import jsonl
from orchrm.errors import RunFileError


class Rec(BaseModel):
    a: int


def _parse(value):
    if value.get("a") == 13:
        raise jsonl.RecordError("thirteen is refused")
    return Rec.model_validate(value)


def test_appended_records_read_back_and_a_missing_file_is_empty(tmp_path):
    path = tmp_path / "sub" / "r.jsonl"
    assert jsonl.read(path, _parse, "rec") == []
    for i in range(3):
        jsonl.append(path, Rec(a=i))
    assert [r.a for r in jsonl.read(path, _parse, "rec")] == [0, 1, 2]


@pytest.mark.parametrize("repair", [False, True])
def test_a_torn_last_line_is_skipped_and_cut_only_on_repair(tmp_path, repair):
    path = tmp_path / "r.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": 2}\n{"a": ')
    assert [r.a for r in jsonl.read(path, _parse, "rec", repair=repair)] == [1, 2]
    assert path.read_bytes().endswith(b"\n") is repair


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b"{oops", r"r.jsonl:2: not a JSON record"),
        (b'{"a": "x"}', r"r.jsonl:2: not a valid rec \(a: Input should be a valid integer"),
        (b'{"a": 13}', r"r.jsonl:2: thirteen is refused"),
    ],
)
def test_a_bad_line_names_file_and_line_and_changes_nothing(tmp_path, line, message):
    path = tmp_path / "r.jsonl"
    data = b'{"a": 1}\n' + line + b'\n{"a": '
    path.write_bytes(data)
    with pytest.raises(RunFileError, match=message):
        jsonl.read(path, _parse, "rec", repair=True)
    assert path.read_bytes() == data


def test_a_gzipped_file_reads_as_its_records_and_is_never_repaired(tmp_path):
    plain = tmp_path / "r.jsonl"
    for i in range(3):
        jsonl.append(plain, Rec(a=i))
    packed = jsonl.gz_path(plain)
    packed.write_bytes(gzip.compress(plain.read_bytes() + b'{"a": ', mtime=0))  # a torn last line too
    assert [r.a for r in jsonl.read(packed, _parse, "rec")] == [0, 1, 2]
    before = packed.read_bytes()
    with pytest.raises(RunFileError, match="compressed") as err:
        jsonl.read(packed, _parse, "rec", repair=True)
    assert "gunzip" in err.value.hint and packed.read_bytes() == before


@pytest.mark.parametrize("cut", ["truncated", "not gzip", "bad crc"])
def test_a_damaged_gzip_is_a_one_line_error(tmp_path, cut):
    packed = tmp_path / "r.jsonl.gz"
    data = gzip.compress(b'{"a": 1}\n' * 100, mtime=0)
    bad = {"truncated": data[: len(data) // 2], "not gzip": b'{"a": 1}\n', "bad crc": data[:-8] + b"\0" * 8}[cut]
    packed.write_bytes(bad)
    with pytest.raises(RunFileError, match=r"r.jsonl.gz: not a readable gzip file"):
        jsonl.read(packed, _parse, "rec")


def test_a_writer_beside_a_gzipped_file_refuses_and_names_the_unpack_command(tmp_path):
    plain = tmp_path / "r.jsonl"
    jsonl.gz_path(plain).write_bytes(gzip.compress(b'{"a": 1}\n', mtime=0))
    with pytest.raises(RunFileError, match="compressed and cannot be appended to") as err:
        jsonl.append(plain, Rec(a=2))
    assert "unpack" in err.value.hint and not plain.exists()
