"""The flags several ``oar`` commands share, each declared once (pip's ``cli/cmdoptions.py``)."""
__all__ = ["config", "overrides", "device", "quiet", "output_dir"]


def config(parser, required=True):
    """``-c/--config``: the YAML config (optional where a run directory's saved one is the default)."""
    parser.add_argument("-c", "--config", required=required,
                        help="YAML config file" + ("" if required else
                                                   " (default: the config.yaml the run saved in --output_dir)"))


def overrides(parser, help="override config values, e.g. -o train.epochs=3 model.hidden=64 (repeatable)"):
    """``-o/--override KEY=VALUE …`` (repeatable), into ``args.override``."""
    parser.add_argument("-o", "--override", nargs="+", action="extend", default=[], metavar="KEY=VALUE", help=help)


def device(parser):
    """``--device cpu|gpu`` (default cpu)."""
    parser.add_argument("--device", choices=["cpu", "gpu"], default="cpu", help="where to run (default cpu)")


def quiet(parser):
    """``--quiet``: no progress bars."""
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def output_dir(parser, help="the run directory (default: outputs/<config name>)"):
    """``--output_dir DIR``."""
    parser.add_argument("--output_dir", help=help)
