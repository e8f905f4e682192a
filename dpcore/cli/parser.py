"""The command line's parser: every subcommand and flag of ``python -m dpcore``, each value
checked against its declaration (:mod:`dpcore.params`, :data:`dpcore.certify.core.CERTIFY_PARAMS`) as it
is read, so a bad value is one line and exit code 2 (SPEC §7 in ``docs/spec.md``).  The commands
themselves are in :mod:`dpcore.cli.commands`."""

from __future__ import annotations

import argparse
import re
from typing import Any

from ..certify.params import CERTIFY_PARAMS
from ..exceptions import DPCoreError
from ..params import PARAMS, check, validate

__all__ = ["CSV_FLAGS", "Parser", "ParserExit", "build_parser", "certify_type", "common_run_args", "data_args",
           "param_type", "flag_given"]


class ParserExit(Exception):
    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


class Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # "-1e-300" is a (bad) value, not an option: argparse's own pattern knows no exponent, so
        # "--lam -1e-3" said "expected one argument" instead of naming the range
        self._negative_number_matcher = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super().parse_known_args(args, namespace)
        # argparse drops a lone "--" given as a value ("--dataset=--") and stores an empty list
        # instead of a string, which nothing downstream expects: refuse it here, for every option
        for action in self._actions:
            if (action.option_strings and action.nargs is None and isinstance(action, argparse._StoreAction)
                    and isinstance(getattr(namespace, action.dest, None), list)):
                self.error(f"argument {action.option_strings[0]}: expected one value")
        return namespace, extras

    def error(self, message: str) -> None:  # one line, exit code 2
        raise ParserExit(f"{self.prog}: {message}")


def param_type(name: str):
    """argparse type converting and validating through the declared constraint."""
    kind = getattr(PARAMS[name].constraint, "kind", str)

    def convert(text: str) -> Any:
        try:
            value = kind(text) if kind is not int else int(float(text))
            if kind is int and float(text) != value:
                raise ValueError
        except (ValueError, OverflowError):  # int(inf), int(1e400): not a number of iterations either
            raise argparse.ArgumentTypeError(
                f"The {name!r} parameter must be {PARAMS[name].constraint.describe()}. Got {text!r} instead."
            ) from None
        try:
            return validate(name, value, "run")
        except DPCoreError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = name
    return convert


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="dpcore", description="Differentially private ERM: datasets, mechanisms, runs.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)

    s = sub.add_parser("datasets", help="list the bundled datasets")
    s.add_argument("--json", action="store_true", help="print one JSON document")

    s = sub.add_parser("mechanisms", help="list the registered mechanisms")
    s.add_argument("--json", action="store_true", help="print one JSON document")

    s = sub.add_parser("run", help="run one configuration R times (batched)")
    data_args(s)
    s.add_argument("--model", default="logreg", help="logreg, linreg or mlp")
    s.add_argument("--mechanism", default="non-private", help="mechanism id (see `dpcore mechanisms`)")
    s.add_argument("--epsilon", type=param_type("epsilon"), default=PARAMS["epsilon"].default)
    s.add_argument("--delta", type=param_type("delta"), default=PARAMS["delta"].default)
    s.add_argument("--iterations", "-T", type=param_type("iterations"), default=PARAMS["iterations"].default)
    s.add_argument("--repeats", "-R", type=param_type("repeats"), default=PARAMS["repeats"].default)
    s.add_argument("--seed", type=param_type("seed"), default=0)
    s.add_argument("--calibration", choices=PARAMS["calibration"].constraint.values, default="certified")
    s.add_argument("--c", type=param_type("c"), default=None,
                   help="constant c of a published formula (with --calibration published)")
    s.add_argument("--noise-scale", type=param_type("noise_scale"), default=1.0,
                   help="multiply every noise the mechanism draws (below 1: deliberately too little)")
    s.add_argument("--lam", type=param_type("lam"), default=None, help="L2 regularisation λ")
    s.add_argument("--lr", type=param_type("learning_rate"), default=PARAMS["learning_rate"].default,
                   help="learning rate")
    s.add_argument("--batch", type=param_type("batch_size"), default=None, help="mini-batch size")
    s.add_argument("--sample-rate", type=param_type("sample_rate"), default=None, help="Poisson rate q")
    s.add_argument("--clip", type=param_type("clip_norm"), default=None, help="clipping norm C")
    s.add_argument("--clients", type=param_type("clients"), default=None, help="number of parties m")
    s.add_argument("--skew", type=param_type("skew"), default=None, help="client-size skew u")
    s.add_argument("--radius", type=param_type("radius"), default=None, help="parameter ball radius (linreg)")
    s.add_argument("--n", type=param_type("n"), default=None, help="rows (synthetic data)")
    s.add_argument("--d", type=param_type("d"), default=None, help="features (synthetic data)")
    s.add_argument("--noise", type=param_type("noise"), default=None, help="noise level (synthetic data)")
    s.add_argument("--label-epsilon", type=param_type("label_epsilon"), default=None,
                   help="randomized-response budget for labels (input / local mechanisms)")
    s.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="mechanism-specific option, e.g. smoothing=2 or variant=pl (repeatable)")
    s.add_argument("--tuned", action="store_true",
                   help="the shipped tuned T, η, λ, C or q for this dataset, model and mechanism (at the tuned ε "
                        "closest to --epsilon); flags given explicitly still win")
    s.add_argument("--plan-out", default=None, metavar="FILE",
                   help="write the run's noise plan as dp-accounting events (JSON; `certify --plan` reads it)")
    s.add_argument("--json", action="store_true", help="print one JSON document")

    s = sub.add_parser("bounds", help="the published noise and excess-risk bounds, evaluated")
    s.add_argument("--dataset", required=True)
    s.add_argument("--model", default="logreg")
    s.add_argument("--epsilon", type=param_type("epsilon"), default=PARAMS["epsilon"].default)
    s.add_argument("--delta", type=param_type("delta"), default=PARAMS["delta"].default)
    s.add_argument("--iterations", "-T", type=param_type("iterations"), default=PARAMS["iterations"].default)
    s.add_argument("--clients", type=param_type("clients"), default=None)
    s.add_argument("--skew", type=param_type("skew"), default=None)
    s.add_argument("--lam", type=param_type("lam"), default=None)
    s.add_argument("--lr", type=param_type("learning_rate"), default=None)
    s.add_argument("--json", action="store_true", help="print one JSON document")

    s = sub.add_parser("audit", help="empirical lower bound on ε from a canary membership test")
    data_args(s)
    s.add_argument("--model", default="logreg")
    s.add_argument("--mechanism", required=True)
    s.add_argument("--epsilon", type=param_type("epsilon"), default=PARAMS["epsilon"].default)
    s.add_argument("--delta", type=param_type("delta"), default=PARAMS["delta"].default)
    s.add_argument("--trials", type=param_type("trials"), default=PARAMS["trials"].default,
                   help="runs per side (D and D')")
    s.add_argument("--iterations", "-T", type=param_type("iterations"), default=PARAMS["iterations"].default)
    s.add_argument("--calibration", choices=PARAMS["calibration"].constraint.values, default="certified")
    s.add_argument("--c", type=param_type("c"), default=1.0)
    s.add_argument("--lam", type=param_type("lam"), default=None)
    s.add_argument("--lr", type=param_type("learning_rate"), default=PARAMS["learning_rate"].default)
    s.add_argument("--seed", type=param_type("seed"), default=0)
    s.add_argument("--alpha", type=param_type("alpha"), default=PARAMS["alpha"].default,
                   help="confidence 1 − α of the bound")
    s.add_argument("--canary", choices=PARAMS["canary"].constraint.values, default=PARAMS["canary"].default,
                   help="black-box: the differing record pair")
    s.add_argument("--threat", choices=PARAMS["threat"].constraint.values, default=PARAMS["threat"].default,
                   help="black-box: the attacker sees the released model; white-box: every release")
    s.add_argument("--noise-scale", type=param_type("noise_scale"), default=1.0,
                   help="multiply every noise the mechanism draws while claiming the target ε")
    s.add_argument("--end-to-end", action="store_true",
                   help="white-box, noisy-gradient mechanisms: first measure what a real replaced record "
                        "moves the first release (common random numbers) and score with that shift")
    s.add_argument("--clip", type=param_type("clip_norm"), default=None, help="per-record clipping norm C")
    s.add_argument("--no-confirm", dest="confirm", action="store_false",
                   help="skip the second, independent audit that confirms a refutation (a claim is then at most "
                        "'refuted once, not confirmed', never 'claim not met')")
    s.add_argument("--one-run", action="store_true",
                   help="one training run with --canaries canaries, each in with probability ½ "
                        "(Steinke, Nasr & Jagielski 2023), in place of --trials runs a side")
    s.add_argument("--canaries", type=param_type("canaries"), default=None,
                   help="canaries of a --one-run audit (default 1000)")
    s.add_argument("--json", action="store_true", help="print one JSON document")

    s = sub.add_parser("tradeoff", help="local vs central privacy of every mechanism at one ε")
    common_run_args(s)
    s.add_argument("--mechanisms", default=None, help="comma-separated ids (default: all applicable)")
    s.add_argument("--json", action="store_true", help="print one JSON document")
    s = sub.add_parser("tune", help="search each mechanism's settings on a validation split, "
                                    "choose privately, and report what the search costs")
    data_args(s, "a classification dataset id (any task for input and local perturbation)")
    s.add_argument("--model", default="logreg")
    s.add_argument("--mechanisms", default=None,
                   help="comma-separated ids (default: the central output, objective and gradient ones)")
    s.add_argument("--epsilons", default="0.1,1,10", help="comma-separated target ε's")
    s.add_argument("--delta", type=param_type("delta"), default=None, help="default 1/n² (Yu et al. 2020)")
    s.add_argument("--repeats", "-R", type=param_type("repeats"), default=1,
                   help="runs per candidate (each one is paid for)")
    s.add_argument("--final-repeats", type=param_type("repeats"), default=10,
                   help="runs of the chosen setting, for its test accuracy")
    s.add_argument("--seed", type=param_type("seed"), default=0)
    s.add_argument("--selection-epsilon", type=param_type("epsilon"), default=None,
                   help="ε of the private choice among candidates (default: the target ε)")
    s.add_argument("--validation-fraction", type=param_type("test_fraction"), default=0.2,
                   help="share of the training rows the candidates are scored on")
    s.add_argument("--out", default=None, help="write the JSON record (with its provenance) to this file")
    s.add_argument("--plan-out", default=None, metavar="FILE",
                   help="write each search's whole noise plan (every candidate, the choice, the final run) as "
                        "dp-accounting events (JSON; `certify --plan` reads it)")
    s.add_argument("--json", action="store_true", help="print one JSON document")

    s = sub.add_parser("prepare", help="before a class: compute ahead what the app will open (exact references, "
                                       "the Compare view's first preset) into the app's cache folder")
    s.add_argument("--no-mlp", action="store_true", help="skip the MLP's exact reference on Adult (minutes)")
    s.add_argument("--ship", action="store_true",
                   help="also write the Compare preset's rows to data/results/compare-classroom.json and the slow "
                        "exact references (the MLP's on Adult) to data/references/, the files the app opens at "
                        "once on a new machine (for maintainers, after a change to a mechanism, the models or "
                        "the solver)")
    s.add_argument("--json", action="store_true", help="print one JSON document")

    s = sub.add_parser("sweep", help="run a seed paper's figure (a preset) to CSV, HTML and JSON")
    s.add_argument("--preset", required=False, help="preset id (see `dpcore sweep --list`)")
    s.add_argument("--out", default=None, help="output folder (also holds the result cache)")
    s.add_argument("--workers", type=param_type("workers"), default=None,
                   help="local worker processes (default: one per CPU; 1 = this process)")
    s.add_argument("--scheduler", default=None,
                   help="Dask scheduler address, e.g. tcp://10.0.0.5:8786 (replaces local workers)")
    s.add_argument("--repeats", "-R", type=param_type("repeats"), default=None,
                   help="override the preset's repeats")
    s.add_argument("--max-n", type=param_type("n"), default=None,
                   help="cap the training rows (a seeded subsample)")
    s.add_argument("--quick", action="store_true",
                   help="a reduced rehearsal: 2 repeats, ≤ 10 iterations, a few hundred rows")
    s.add_argument("--calibration", choices=("certified", "published"), default=None,
                   help="override the preset's calibration (published: the papers' formulas, c = 1)")
    s.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="change one setting of the preset, e.g. epsilons=0.1,1 or datasets=adult "
                        "or iterations=500 (repeatable)")
    s.add_argument("--list", action="store_true", help="list the presets and exit")
    s.add_argument("--json", action="store_true", help="print the JSON record")

    s = sub.add_parser("certify", help="certify a DP-SGD run (or k Gaussian / Laplace releases) described in "
                                       "another library's terms: ε under add/remove and replace-one, by RDP, ε(δ)")
    s.add_argument("--mechanism", choices=CERTIFY_PARAMS["mechanism"].constraint.values, default="dp-sgd",
                   help=CERTIFY_PARAMS["mechanism"].help)
    s.add_argument("--accountant", choices=CERTIFY_PARAMS["accountant"].constraint.values, default="opacus-rdp",
                   help=CERTIFY_PARAMS["accountant"].help)
    s.add_argument("--sampling", choices=CERTIFY_PARAMS["sampling"].constraint.values, default="poisson",
                   help=CERTIFY_PARAMS["sampling"].help)
    for flag in ("noise_multiplier", "sample_rate", "batch_size", "dataset_size", "steps", "epochs", "sigma",
                 "sensitivity", "compositions", "delta", "target_epsilon"):
        s.add_argument("--" + flag.replace("_", "-"), type=certify_type(flag), default=None,
                       help=CERTIFY_PARAMS[flag].help)
    s.add_argument("--plan", default=None, metavar="FILE",
                   help="certify a noise plan written by run/tune --plan-out or a sweep (dp-accounting events, "
                        "JSON) in place of a description")
    data_args(s, "also train this app's central mechanisms on this dataset at the certified (replace-one) ε: "
                 "what the guarantee buys", required=False)
    s.add_argument("--json", action="store_true", help="print one JSON document (the full ε(δ) list)")

    s = sub.add_parser("export", help="a view of the app, given by its link, as a Jupyter notebook or a Python "
                                      "script that computes it again (the same calls, settings and seeds)")
    s.add_argument("--view", required=True, metavar="LINK",
                   help="the view's link: its name and the settings of its address, e.g. "
                        "'compare?cmp_T=20&cmp_R=2' (the app's 'Link for students')")
    s.add_argument("--format", choices=("ipynb", "py"), default="py",
                   help="ipynb: a Jupyter notebook; py: a plain script (default)")
    s.add_argument("--output", default=None, metavar="OUTPUT",
                   help="write it to this file (default: standard output)")
    s.add_argument("--json", action="store_true", help="print one JSON document saying what was written")
    return p


#: what the app's upload asks besides the file, by flag (the same reader: dpcore.datasets.from_csv)
CSV_FLAGS = ("--label", "--positive-class", "--task", "--name")


def data_args(s, dataset_help: str = "dataset id (see `dpcore datasets`)", required: bool = True) -> None:
    """The data a command trains on: a registered dataset, or a user's own CSV read as the app's
    upload reads it (:func:`dpcore.datasets.from_csv`: the same validation and limits; never cached)."""
    which = s.add_mutually_exclusive_group(required=required)
    which.add_argument("--dataset", help=dataset_help)
    which.add_argument("--csv", metavar="PATH", help="your own CSV file (header row first), in place of --dataset")
    s.add_argument("--label", metavar="COLUMN", default=None, help="the CSV's label column (with --csv)")
    s.add_argument("--positive-class", default=None, metavar="VALUE",
                   help="the CSV label value that is +1 (with --csv; default: as the app's upload chooses)")
    s.add_argument("--task", choices=("classification", "regression"), default=None,
                   help="the CSV's task (with --csv; default classification)")
    s.add_argument("--name", default=None, help="a name for the CSV's data in the output (with --csv)")


def certify_type(name: str):
    """argparse type of a ``certify`` flag, through its declaration (:data:`dpcore.certify.core.CERTIFY_PARAMS`)."""
    param = CERTIFY_PARAMS[name]
    kind = param.constraint.kind

    def convert(text: str) -> Any:
        try:
            value = kind(text) if kind is not int else int(float(text))
            if kind is int and float(text) != value:
                raise ValueError
        except (ValueError, OverflowError):
            raise argparse.ArgumentTypeError(
                f"The {name!r} parameter must be {param.constraint.describe()}. Got {text!r} instead.") from None
        try:
            return check(param, value, "certify")
        except DPCoreError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = "certify_" + name  # not a PARAMS name: its fuzz values are tests/test_fuzz_cli.py's
    return convert


def common_run_args(s) -> None:
    s.add_argument("--dataset", required=True)
    s.add_argument("--model", default="logreg")
    s.add_argument("--epsilon", type=param_type("epsilon"), default=PARAMS["epsilon"].default)
    s.add_argument("--delta", type=param_type("delta"), default=PARAMS["delta"].default)
    s.add_argument("--iterations", "-T", type=param_type("iterations"), default=PARAMS["iterations"].default)
    s.add_argument("--repeats", "-R", type=param_type("repeats"), default=3)
    s.add_argument("--seed", type=param_type("seed"), default=0)
    s.add_argument("--lr", type=param_type("learning_rate"), default=PARAMS["learning_rate"].default)


def flag_given(args, *flags: str) -> bool:
    """Whether the command line named one of ``flags`` (not merely left its default)."""
    return any(tok == f or tok.startswith(f + "=") for tok in getattr(args, "argv", []) for f in flags)
