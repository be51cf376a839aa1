"""Finetune a vision backbone with a new head on an image folder: ``python tools/finetune.py --data_dir DIR …``.

See ``vision.finetune`` (``--help`` lists the options); prints a JSON summary
and exits as every ``oar`` command does (0 success, 1 a user mistake shown as
one line, 2 a usage error). Without ``--weights`` and ``--freeze_epochs`` it
trains the config it writes into ``--output_dir`` exactly as
``oar train -c <output_dir>/config.yaml`` would.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from vision.finetune import main  # noqa: E402
from zoo.cli import run_tool  # noqa: E402

if __name__ == "__main__":
    sys.exit(run_tool(main))
