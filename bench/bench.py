"""Every benchmark of one device in one command: the training step (Mint vs PyTorch on the same model) and KV-cache
decoding (batch 1), each recorded under bench/results/ with the date and the device.

    python bench/bench.py                  # CPU (about 5 minutes on 2 cores)
    python bench/bench.py --device cuda    # GPU: also eager TF32 and torch.compile peers, MFU, memory, launches

Extra options go to both scripts (e.g. --presets tiny medium, --rounds 3, --no-record).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_train_step, bench_decode  # noqa: E402

if __name__ == "__main__":
    argv = sys.argv[1:]
    if "-h" in argv or "--help" in argv: print(__doc__); sys.exit(0)
    bench_train_step.main(argv)
    print()
    bench_decode.main([a for a in argv if a not in ("--compile", "--no-compile", "--flash")])
