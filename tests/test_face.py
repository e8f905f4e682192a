"""The package's public face (``dpcore.__all__``) as a library user meets it.

* one name per object, and no function hides a module: ``dpcore.audit`` is the audit's subpackage and
  ``dpcore.certify`` the certification module, whatever imports them first;
* every callable takes its first parameter by position and every other by keyword (scikit-learn's
  rule), checked from the signatures, with a check of the check;
* the last release's spellings still run for one release, each with a ``DeprecationWarning`` that
  names the new one, and give the new spelling's answer.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import dpcore

ROOT = Path(__file__).resolve().parent.parent


def _positional_after_first(obj) -> list[str]:
    """The parameters of ``obj`` (a function, or a class's constructor) after its first that can be
    passed by position."""
    sig = inspect.signature(obj)
    params = list(sig.parameters.values())
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
    return [p.name for p in params[1:] if p.kind in kinds]


def _face_callables():
    for name in dpcore.__all__:
        obj = getattr(dpcore, name)
        if inspect.isclass(obj) and issubclass(obj, BaseException):
            continue  # exceptions take their message by position, as every exception does
        if callable(obj):
            yield name, obj


@pytest.mark.parametrize("name", [n for n, _ in _face_callables()])
def test_every_callable_of_the_face_takes_all_but_its_first_parameter_by_keyword(name):
    assert _positional_after_first(getattr(dpcore, name)) == []


def test_the_signature_check_can_fail():
    def old(config, trials, alpha=0.05, *, ctx=None):
        return config, trials, alpha, ctx

    class Old:
        def __init__(self, a, b=1):
            self.a, self.b = a, b

    assert _positional_after_first(old) == ["trials", "alpha"]
    assert _positional_after_first(Old) == ["b"]


def test_no_name_of_the_face_is_a_module_of_the_package_and_no_function_hides_one():
    modules = {m.name for m in pkgutil.iter_modules(dpcore.__path__)}
    assert not modules & set(dpcore.__all__)
    for name in modules:
        if name in vars(dpcore):  # a submodule imported so far: the attribute is that module
            assert vars(dpcore)[name] is sys.modules[f"dpcore.{name}"], name
    for name in ("audit", "certify"):  # the two that used to be functions
        module = importlib.import_module(f"dpcore.{name}")
        assert getattr(dpcore, name) is module and inspect.ismodule(module)


def test_a_fresh_interpreter_imports_the_modules_by_every_spelling():
    code = ("import dpcore.certify as c, dpcore.audit.whitebox as wb, inspect\n"
            "from dpcore.audit import measured\n"
            "import dpcore\n"
            "assert inspect.ismodule(c) and c.__name__ == 'dpcore.certify'\n"
            "assert wb.__name__ == 'dpcore.audit.whitebox' and measured.__name__ == 'dpcore.audit.measured'\n"
            "assert dpcore.audit.whitebox is wb and dpcore.certify is c\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_the_last_releases_certify_still_runs_warns_and_names_the_new_spelling():
    new = dpcore.certify_noise(1.1, sample_rate=0.004, steps=500, delta=1e-5)
    for old in (lambda: dpcore.certify(noise_multiplier=1.1, sample_rate=0.004, steps=500, delta=1e-5),
                lambda: dpcore.certify(1.1, 0.004, steps=500, delta=1e-5),
                lambda: importlib.import_module("dpcore.certify").certify(1.1, 0.004, steps=500, delta=1e-5)):
        with pytest.warns(DeprecationWarning, match="certify_noise"):
            got = old()
        assert got == new


def test_the_last_releases_audit_still_runs_warns_and_names_the_new_spelling():
    spec = dpcore.RunSpec("breast-cancer", mechanism="output-gaussian", epsilon=1.0, seed=3)
    new = dpcore.run_audit(spec, trials=40, alpha=0.1)
    from dpcore.audit import audit as old_function

    for old in (lambda: dpcore.audit(spec, 40, 0.1), lambda: old_function(spec, 40, alpha=0.1)):
        with pytest.warns(DeprecationWarning, match="run_audit"):
            got = old()
        assert (got.epsilon_lower_bound, got.verdict, got.false_positives, got.false_negatives) == (
            new.epsilon_lower_bound, new.verdict, new.false_positives, new.false_negatives)


def test_the_face_warns_of_nothing_on_import_and_use():
    code = ("import warnings\nwarnings.simplefilter('error')\n"
            "from dpcore import RunSpec, run, certify_noise\n"
            "run(RunSpec('breast-cancer', mechanism='output-gaussian', repeats=1))\n"
            "certify_noise(1.0, sample_rate=0.01, steps=10)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


def test_a_run_is_a_dp_accounting_event_any_accountant_certifies():
    import dp_accounting as dpa

    for mechanism, eps in (("gradient-dpgd", 1.0), ("gradient-dpsgd", 2.0), ("output-gaussian", 0.5)):
        spec = dpcore.RunSpec("breast-cancer", mechanism=mechanism, epsilon=eps, delta=1e-5)
        event = spec.dp_event()
        assert isinstance(event, dpa.DpEvent)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = dpa.pld.PLDAccountant(dpa.NeighboringRelation.REPLACE_ONE).compose(event).get_epsilon(1e-5)
        result = dpcore.run(spec)
        # the certified calibration: dp-accounting's own PLD certifies the target, to its grid
        assert got <= eps * (1 + 1e-3) + 1e-3, (mechanism, got)
        assert abs(got - result.epsilon_certified) <= 2e-2 * eps, (mechanism, got, result.epsilon_certified)


#: the paths users imported before the package had folders (issue 71), and the module each grew into
OLD_PATHS = {"dpcore.privacy": "dpcore.privacy.core", "dpcore.accounting": "dpcore.privacy.accounting",
             "dpcore.certify": "dpcore.certify.core", "dpcore.figures": "dpcore.figures.charts",
             "dpcore.cli": "dpcore.cli.commands"}


@pytest.mark.parametrize("old", sorted(OLD_PATHS))
def test_every_public_name_still_imports_by_its_old_path(old):
    """``from dpcore.privacy import certify`` and the rest: every public name of the module a path grew
    into is the same object by the old path, and a name neither has is an AttributeError naming the path."""
    new = importlib.import_module(OLD_PATHS[old])
    path = importlib.import_module(old)
    public = [n for n in vars(new) if not n.startswith("_") and not inspect.ismodule(getattr(new, n))]
    assert len(public) > 10
    assert [n for n in public if getattr(path, n) is not getattr(new, n)] == []
    assert set(new.__all__) <= set(dir(path)) | set(getattr(path, "__all__", ()))
    with pytest.raises(AttributeError, match=f"module '{old}' has no attribute 'no_such_name'"):
        getattr(path, "no_such_name")


def test_the_command_line_s_old_names_and_python_m_dpcore_still_run():
    from dpcore import cli
    from dpcore.cli import common, sweep
    assert cli.SlowProgress is common.SlowProgress and cli._sweep_outputs is sweep.sweep_outputs
    done = subprocess.run([sys.executable, "-m", "dpcore", "datasets", "--json"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and json.loads(done.stdout), done.stderr
