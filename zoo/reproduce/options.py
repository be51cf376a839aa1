"""How ``oar reproduce`` runs: :class:`ReproduceOptions` (the command's flags, checked), what every
procedure of :mod:`zoo.reproduce` reads."""
import dataclasses
import os

from ..commands import flags
from ..usage import UsageError

__all__ = ["ReproduceOptions", "add_arguments", "from_args", "FROM_RUNS_TARGETS"]

FROM_RUNS_TARGETS = ("video", "detection")    # the groups whose procedures can evaluate earlier runs


@dataclasses.dataclass
class ReproduceOptions:
    """``target`` (a card, ``all``, ``slim`` or a task group), ``overrides`` for every model's config, the
    ``device``, where runs go (``output_root``), ``dry_run`` (write under ``<output_root>/dry_run/``),
    ``quiet``; ``from_runs`` (target ``video``: evaluate ``<from_runs>/<model>`` of earlier ``oar train``
    runs instead of training), ``cards`` (target ``slim``: rebuild only these compressed cards) and ``seeds``
    (the Senta procedure trains each model with seeds 0 .. seeds - 1 and ships the median one)."""
    target: str
    overrides: list = dataclasses.field(default_factory=list)
    device: str = "cpu"
    output_root: str = os.path.join("outputs", "reproduce")
    dry_run: bool = False
    quiet: bool = False
    from_runs: str = None
    cards: list = None
    seeds: int = 1

    def __post_init__(self):
        if self.seeds < 1:
            raise UsageError(f"--seeds must be at least 1, got {self.seeds}")
        if self.from_runs is not None:
            if self.target not in FROM_RUNS_TARGETS:
                raise UsageError(f"--from_runs takes the runs of the video or detection models: use it with "
                                 f"target {' or '.join(FROM_RUNS_TARGETS)}, not {self.target}")
            if not os.path.isdir(self.from_runs):
                raise UsageError(f"--from_runs {self.from_runs}: no such folder")
        if self.cards is not None and self.target != "slim":
            raise UsageError(f"--cards names compressed cards: use it with target slim, not {self.target}")


def add_arguments(parser):
    """The flags of ``oar reproduce``."""
    parser.add_argument("target", help="a card name, or a group: nlp, senta, simnet, video, slim, all")
    flags.overrides(parser, help="config overrides for every model (e.g. a smaller budget)")
    flags.device(parser)
    parser.add_argument("--output_root", default=os.path.join("outputs", "reproduce"),
                        help="where the runs go (default outputs/reproduce; a finished slim run there is reused)")
    parser.add_argument("--dry_run", action="store_true",
                        help="write weights, catalog and RESULTS.md under <output_root>/dry_run/, not the repository")
    flags.quiet(parser)
    parser.add_argument("--from_runs", metavar="DIR",
                        help="target video or detection: evaluate DIR/<model> of earlier `oar train` runs instead "
                             "of training")
    parser.add_argument("--cards", nargs="+", metavar="NAME",
                        help="target slim: rebuild only these compressed cards (no RESULTS.md block is written)")
    parser.add_argument("--seeds", type=int, default=1, metavar="N",
                        help="Senta: train each model with seeds 0..N-1, ship the median on dev, report the spread")


def from_args(args):
    """The :class:`ReproduceOptions` of parsed ``oar reproduce`` arguments."""
    return ReproduceOptions(target=args.target, overrides=list(args.override), device=args.device,
                            output_root=args.output_root, dry_run=args.dry_run, quiet=args.quiet,
                            from_runs=args.from_runs, cards=args.cards, seeds=args.seeds)
