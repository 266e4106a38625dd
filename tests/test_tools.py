"""tools/check_outputs.py: what a stored output may not show, and the committed notebooks pass it."""
import importlib.util, json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("check_outputs", ROOT / "tools" / "check_outputs.py")
check_outputs = importlib.util.module_from_spec(spec); spec.loader.exec_module(check_outputs)


KERNEL = {"kernelspec": {"display_name": "python3", "language": "python", "name": "python3"}}


def notebook(tmp_path, *outputs, metadata=KERNEL) -> Path:
    p = tmp_path / "nb.ipynb"
    p.write_text(json.dumps({"cells": [{"cell_type": "code", "source": "x", "metadata": {}, "outputs": list(outputs)}],
                             "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}))
    return p


def stream(text, name="stdout"): return {"output_type": "stream", "name": name, "text": text}


def test_flags_paths_ansi_warnings_and_errors(tmp_path):
    bad = [stream("/tmp/tmpq77rywri/b.yml: malformed YAML\n"), stream("saved /home/ann/runs/best.safetensors\n"),
           stream("\x1b[2K\rtile 16\n"), stream("x.py:28: RuntimeWarning: invalid value\n", "stderr"),
           {"output_type": "execute_result", "data": {"text/plain": "C:\\\\Users\\\\ann\\\\x"}, "metadata": {}},
           {"output_type": "error", "ename": "ValueError", "evalue": "boom", "traceback": []}]
    for out in bad:
        assert check_outputs.problems(notebook(tmp_path, out)), out


def test_flags_a_notebook_without_a_kernelspec(tmp_path):
    "Jupyter opens such a notebook behind a 'Select Kernel' dialog."
    assert [w for _, w, _ in check_outputs.problems(notebook(tmp_path, metadata={}))] == ["no kernelspec"]


def test_passes_what_a_chapter_may_print(tmp_path):
    ok = [stream("../data/fixtures/formats/belle/train.json (belle, chat): kept 6 sample(s)\n"),
          stream("…/b.yml:5: malformed YAML\n"), stream("runs/_fit_demo/report.html: 40 KiB\n"),
          {"output_type": "display_data", "data": {"image/png": "iVBOR", "text/plain": "<IPython.core.display.Image object>"},
           "metadata": {}}]
    assert check_outputs.problems(notebook(tmp_path, *ok)) == []


def test_the_committed_notebooks_are_clean(capsys):
    assert check_outputs.main([]) == 0, capsys.readouterr().out
