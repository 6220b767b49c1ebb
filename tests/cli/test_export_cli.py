"""`orchrm export` as a user runs it: a plain transformers folder, refused over an existing one unless --replace."""

import json

from orchrm.cli import main


def orchrm(*argv):
    """The exit status of `orchrm ARGV...`, run in this process (torch and the model load once)."""
    try:
        main(list(argv))
    except SystemExit as exc:
        return exc.code
    return 0


def test_export_writes_a_plain_folder_and_refuses_to_overwrite(rm_dir, tmp_path, capsys):
    out = tmp_path / "rm-hf"
    assert orchrm("export", str(rm_dir), "--out", str(out)) == 0
    said = " ".join(capsys.readouterr().out.split())  # rich wraps the line at the terminal's width
    assert f"-> {out}" in said and "example plans, max |Δ|" in said
    assert {"config.json", "model.safetensors", "tokenizer.json", "README.md", "orchrm_template.json"} <= {
        p.name for p in out.iterdir()
    }
    assert orchrm("export", str(rm_dir), "--out", str(out)) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "already exists; refusing to export into it" in err and "--replace" in err
    (out / "stale").write_text("x")
    assert orchrm("export", str(rm_dir), "--out", str(out), "--replace") == 0
    assert not (out / "stale").exists()
    assert json.loads((out / "orchrm_template.json").read_text())["check"]["max_abs_diff"] <= 1e-5


def test_export_of_a_folder_that_is_no_model_is_one_line(tmp_path, capsys):
    assert orchrm("export", str(tmp_path), "--out", str(tmp_path / "x")) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not an orchrm reward model" in err
