"""Print the latest record of each train-step results file as the Markdown table bench/README.md shows.

    python bench/latest.py                      # every bench/results/train_step_*.jsonl
    python bench/latest.py bench/results/train_step_cpu.jsonl
"""
from __future__ import annotations
import json, sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402


def latest_table(path: Path) -> str:
    "Date, device, versions and the per-preset table of the last line of a train-step .jsonl file."
    rec = json.loads(Path(path).read_text().strip().splitlines()[-1])
    h = rec["host"]
    rows = []
    for r in rec["runs"]:
        for side, v in r["results"].items():
            rows.append(benchlib.train_row(r, side, v))
    head = (f"{rec['date'][:10]}, {h['device']}; numpy {h['numpy']}, numba {h['numba']}, torch {h['torch']}"
            f" ({h.get('torch_threads')} threads); vocab {rec['vocab_size']}; load average at start "
            f"{h.get('loadavg_1_5_15', ['?'])[0]}, {rec['runs'][0]['rounds']} rounds — `{Path(path).relative_to(benchlib.ROOT)}`")
    return head + "\n\n" + benchlib.table(rows, benchlib.TRAIN_STEP_COLS)


if __name__ == "__main__":
    paths = [Path(p).resolve() for p in sys.argv[1:]] or sorted(benchlib.RESULTS.glob("train_step_*.jsonl"))
    print("\n\n".join(latest_table(p) for p in paths))
