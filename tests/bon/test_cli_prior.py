"""`orchrm bon --prior-traces`: a path that holds no traces is a one-line error before any model loads."""

import pytest

from orchrm.cli.app import main


def test_missing_prior_traces_is_a_one_line_error(tmp_path, capsys):
    argv = [
        "bon",
        "--task",
        "chain_sum",
        "--rm",
        str(tmp_path / "no-rm"),
        "--out",
        str(tmp_path / "bon"),
        "--prior-traces",
        str(tmp_path / "train" / "traces.jsonl"),
    ]
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err.strip()
    assert info.value.code == 1
    assert err.startswith("error: no traces at") and "train" in err and "Traceback" not in err
    assert len(err.splitlines()) == 1
    assert not (tmp_path / "bon").exists()  # nothing started
