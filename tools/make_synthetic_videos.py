"""Write the synthetic labelled video set: ``python tools/make_synthetic_videos.py --out DIR --num N --seed S``.

See :mod:`video.data.synthetic` for the classes, the ranges (``--num_frames
LOW HIGH``, ``--width LOW HIGH``, …) and the files written.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from video.data.synthetic import main  # noqa: E402
from zoo.cli import run_tool  # noqa: E402

if __name__ == "__main__":
    sys.exit(run_tool(main))
