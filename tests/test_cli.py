"""The command-line contract (SPEC §7)."""

import json
import subprocess
import sys

import pytest

from dpcore.cli import commands as cli
from dpcore.cli import run as cli_run
from dpcore.cli import sweep as cli_sweep
from dpcore.cli.commands import main
from dpcore.experiments.run import RunSpec, run


def _cli(*args):
    proc = subprocess.run([sys.executable, "-m", "dpcore", *args], capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stdout, proc.stderr


def test_adult_nonprivate_baseline_json():
    code, out, err = _cli("run", "--dataset", "adult", "--model", "logreg", "--mechanism", "non-private", "--json")
    assert code == 0, err
    rec = json.loads(out)
    assert 0.83 <= rec["accuracy_mean"] <= 0.86
    assert rec["gap_mean"] <= 1e-8
    assert rec["epsilon_target"] is None and rec["epsilon_certified"] is None and rec["epsilon_local"] is None
    for key in ("accuracy_std", "gap_std", "sigma", "n_train", "d", "seconds", "client_sizes", "runs"):
        assert key in rec
    assert rec["n_train"] == 36177 and len(rec["runs"]) == 5
    assert "NaN" not in out and "Infinity" not in out


def test_datasets_and_mechanisms_json(capsys):
    assert main(["datasets", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["id"] for r in rows} >= {"adult", "bank", "kddcup99", "kddcup99-full", "breast-cancer",
                                       "credit-card", "iris", "synthetic-classification",
                                       "synthetic-regression"}
    assert main(["mechanisms", "--json"]) == 0
    mechs = json.loads(capsys.readouterr().out)
    assert any(m["id"] == "non-private" for m in mechs)
    for m in mechs:
        assert {"id", "family", "paper", "models", "privacy_notion"} <= set(m)


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "--dataset", "nope"], "unknown dataset 'nope'"),
        (["run", "--dataset", "iris", "--epsilon", "0"], "'epsilon' parameter of run must be a float in [0.0001, 1000]"),
        (["run", "--dataset", "iris", "--epsilon", "abc"], "'epsilon' parameter"),
        (["run", "--dataset", "iris", "--delta", "1"], "'delta' parameter of run must be a float in [1e-100, 1)"),
        (["run", "--dataset", "iris", "--iterations", "0"], "'iterations' parameter"),
        (["run", "--dataset", "iris", "--iterations", "2.5"], "'iterations' parameter"),
        (["run", "--dataset", "iris", "--mechanism", "magic"], "unknown mechanism 'magic'"),
        (["run", "--dataset", "iris", "--model", "linreg"], "pick a classification model"),
        (["run"], "one of the arguments --dataset --csv is required"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_input_exits_2_with_one_line(capsys, args, message):
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0]
    assert "Traceback" not in captured.err


def test_human_readable_run(capsys):
    assert main(["run", "--dataset", "iris", "--repeats", "2"]) == 0
    out = capsys.readouterr().out
    assert "accuracy" in out and "ε certified ∞" in out


def test_run_config_validation_and_result_dict():
    res = run(RunSpec(dataset="synthetic-regression", model="linreg", n=300, d=3, repeats=3))
    rec = res.to_dict()
    assert rec["rmse_mean"] == pytest.approx(rec["rmse_nonprivate"])
    assert abs(rec["gap_mean"]) <= 1e-15 and len(rec["runs"]) == 3  # L(θ*) − L*, to rounding


def test_tradeoff_json(capsys):
    code = main(["tradeoff", "--dataset", "iris", "--epsilon", "1", "--repeats", "1", "--iterations", "20",
                 "--mechanisms", "gradient-dpgd,local-duchi", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    rows = {r["mechanism"]: r for r in out["rows"]}
    assert rows["gradient-dpgd"]["epsilon_local"] is None  # ∞: no protection against the server
    assert rows["local-duchi"]["epsilon_local"] == 1.0
    assert len(out["curve"]) >= 3


def test_run_with_options_and_label_epsilon(capsys):
    assert main(["run", "--dataset", "iris", "--mechanism", "input-kang", "--label-epsilon", "0.3",
                 "--option", "variant=pl", "--json", "--repeats", "1"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["label_epsilon"] == 0.3 and rec["config"]["options"]["variant"] == "pl"
    assert main(["run", "--dataset", "iris", "--option", "novalue"]) == 2


def test_bounds_json(capsys):
    assert main(["bounds", "--dataset", "adult", "--epsilon", "0.1", "--delta", "1e-5", "--iterations", "1000",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["counts"] == {"001": 12, "002": 6, "003": 5, "004": 4}
    assert out["parameters"]["n"]["value"] == 36177


def test_audit_json_with_progress(capsys):
    assert main(["audit", "--dataset", "iris", "--mechanism", "non-private", "--trials", "100", "--json"]) == 0
    captured = capsys.readouterr()
    rec = json.loads(captured.out)
    assert {"epsilon_target", "epsilon_certified", "epsilon_lower_bound", "verdict"} <= set(rec)
    assert rec["epsilon_certified"] is None and rec["epsilon_lower_bound"] > 1
    assert "runs" in captured.err  # progress on stderr
    assert main(["audit", "--dataset", "iris", "--mechanism", "nope", "--trials", "10"]) == 2


def test_mechanisms_json_states_the_relation_and_the_privacy_event(capsys):
    assert main(["mechanisms", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    for r in rows:
        assert r["neighbouring"] == "replace-one"
        assert len(r["privacy_event"]) > 20 and r["calibration_note"]
    by_id = {r["id"]: r for r in rows}
    assert "Gaussian" in by_id["gradient-dpgd"]["privacy_event"]
    assert by_id["input-dbdp-if"]["privacy_event"].startswith("none")


def test_noise_scale_flag_shows_an_under_noised_run(capsys):
    assert main(["run", "--dataset", "iris", "--mechanism", "gradient-dpgd", "--noise-scale", "0.5",
                 "--repeats", "1", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["config"]["noise_scale"] == 0.5 and rec["epsilon_target"] == 1.0
    assert rec["epsilon_certified"] > 1.5  # half the noise: μ doubles


def test_tune_prints_the_choice_and_its_cost_and_writes_a_record(capsys, tmp_path):
    out = tmp_path / "tuned" / "bc.json"
    code = main(["tune", "--dataset", "breast-cancer", "--epsilons", "1", "--final-repeats", "3",
                 "--mechanisms", "objective-chaudhuri,output-gaussian", "--out", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "objective-chaudhuri" in text and "ε spent" in text
    record = json.loads(out.read_text())
    assert record["command"].startswith("python -m dpcore tune --dataset breast-cancer")
    assert {r["mechanism"] for r in record["rows"]} == {"objective-chaudhuri", "output-gaussian"}
    # 5 λ candidates and the final run against the choice: pure ε composes by adding
    chaudhuri = next(r for r in record["rows"] if r["mechanism"] == "objective-chaudhuri")
    assert chaudhuri["epsilon_spent"] == pytest.approx(6.0, rel=1e-6)
    assert record["delta"] == pytest.approx(1 / 546 ** 2)


@pytest.mark.parametrize("args, said", [
    (["--mechanisms", "local-duchi"], "central mechanisms"),
    (["--epsilons", "abc"], "not a number"),
    (["--dataset", "synthetic-regression", "--model", "linreg"], "classification"),
])
def test_tune_refuses_bad_input_with_one_line(capsys, args, said):
    argv = ["tune", "--dataset", "breast-cancer", *args]
    if argv.count("--dataset") == 2:
        argv = ["tune", *args]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert said in err and "\n" not in err


def test_run_reads_the_reference_the_app_stored_instead_of_solving_it(tmp_path, monkeypatch, capsys):
    from dpcore import erm
    monkeypatch.setenv("DPCORE_CACHE_DIR", str(tmp_path))
    args = ["run", "--dataset", "breast-cancer", "--mechanism", "gradient-dpgd", "--repeats", "2", "-T", "20", "--json"]
    assert main(args) == 0
    first = json.loads(capsys.readouterr().out)
    assert list((tmp_path / "erm").glob("erm-*.json"))  # the app's folder (pages/common.CACHE_DIR)

    def boom(*a, **k):
        raise AssertionError("the exact reference was solved again")

    monkeypatch.setattr(erm, "solve_erm", boom)
    assert main(args) == 0  # a new process's context: only the disk copy can answer
    assert json.loads(capsys.readouterr().out)["loss_star"] == first["loss_star"]


@pytest.mark.parametrize("value", ["nan", "lots", "-1", "inf", "0"])
@pytest.mark.parametrize("name", ["DPCORE_WORK_BUDGET", "DPCORE_MEMORY_BUDGET"])
def test_a_budget_variable_that_is_not_a_budget_refuses_runs_in_one_line(name, value):
    import os
    env = {**os.environ, name: value}
    out = subprocess.run([sys.executable, "-m", "dpcore", "run", "--dataset", "iris", "--repeats", "2"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and name in lines[0] and "Traceback" not in out.stderr


def _run_flags():
    """Every option of ``dpcore run`` that takes a value, from the parser itself."""
    from dpcore.cli.commands import build_parser
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return sorted(a.option_strings[-1] for a in sub.choices["run"]._actions
                  if a.option_strings and a.nargs != 0 and a.dest not in ("help",))


@pytest.mark.parametrize("flag", _run_flags())
def test_every_run_flag_given_a_hostile_number_exits_2_in_one_line(flag, capsys):
    """inf, nan, 1e400 and a huge integer: a clean refusal (exit 2, one line), never exit 1."""
    for value in ("inf", "-inf", "nan", "1e400", "9" * 400):
        code = main(["run", "--dataset", "iris", "--repeats", "2", "-T", "5", flag, value])
        err = capsys.readouterr().err.strip()
        assert code in (0, 2), f"{flag} {value}: exit {code}: {err}"
        if code == 2:  # one line; a long echoed value is cut to its ends (a list of choices may follow)
            assert len(err.splitlines()) == 1 and len(err) <= 1000, err
            assert len(value) <= 40 or value[:60] not in err, err


@pytest.mark.parametrize("args, said", [
    (["--mechanism", "non-private", "--noise-scale", "2"], "--noise-scale does not apply to non-private"),
    (["--mechanism", "non-private", "--calibration", "published", "--c", "2"], "--c does not apply"),
    (["--mechanism", "output-laplace", "-T", "5"], "--iterations does not apply to output-laplace"),
    (["--mechanism", "objective-chaudhuri", "--lr=0.1"], "--lr does not apply to objective-chaudhuri"),
    (["--mechanism", "distributed-wddp", "--clients", "1", "--skew", "4"], "--skew needs at least 2 clients"),
    (["--mechanism", "distributed-wddp", "--clients", "2", "--option", "split=random",
      "--option", "split=stratified"], "--option split is given twice"),
])
def test_a_flag_that_would_be_ignored_is_refused(args, said, capsys):
    assert main(["run", "--dataset", "iris", "--repeats", "2", *args]) == 2
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1
    assert main(["run", "--dataset", "iris", "--repeats", "2", "--mechanism", "output-gaussian", "-T", "5"]) == 0


def test_tuned_runs_the_shipped_setting_and_explicit_flags_still_win(capsys):
    from dpcore.experiments.tune import shipped_tuning
    row = next(r for r in shipped_tuning("adult", "logreg")["rows"]
               if r["mechanism"] == "gradient-dpgd" and r["epsilon"] == 1.0)  # read from the file itself
    assert main(["run", "--dataset", "adult", "--mechanism", "gradient-dpgd", "--epsilon", "1", "--repeats", "2",
                 "--tuned", "-T", "7", "--json"]) == 0
    cap = capsys.readouterr()
    config = json.loads(cap.out)["config"]
    assert config["iterations"] == 7  # named on the command line: it wins
    for k in ("learning_rate", "lam", "clip_norm"):
        assert config[k] == row["setting"][k], k
    assert "tuned at ε = 1" in cap.err
    assert main(["run", "--dataset", "iris", "--mechanism", "gradient-dpgd", "--tuned"]) == 2
    assert "no tuning is shipped" in capsys.readouterr().err


def test_audit_text_names_the_refuted_claim_the_ceiling_and_each_estimators_assumption(capsys):
    # the non-private baseline at 100 runs a side: a perfect test, so the bound is the size's ceiling
    assert main(["audit", "--dataset", "iris", "--mechanism", "non-private", "--trials", "100"]) == 0
    out = capsys.readouterr().out
    assert "the ceiling of an audit of 100 runs a side (more runs could show more)" in out
    # published DP-GD at c = 0.05, white-box: the target is refuted, by name, and every
    # estimator line says what it assumes
    assert main(["audit", "--dataset", "breast-cancer", "--mechanism", "gradient-dpgd", "--calibration",
                 "published", "--c", "0.05", "--threat", "white-box", "--trials", "200", "-T", "20"]) == 0
    out = capsys.readouterr().out
    assert "Refuted: the target ε = 1, by two independent audits." in out  # confirmed by default
    assert [ln.split()[0] for ln in out.splitlines() if "at α = " in ln] == [
        "direct", "measured", "noise-check"]
    # --no-confirm: one audit, so at most "refuted once, not confirmed", never "claim not met"
    assert main(["audit", "--dataset", "breast-cancer", "--mechanism", "gradient-dpgd", "--calibration",
                 "published", "--c", "0.05", "--threat", "white-box", "--trials", "200", "-T", "20",
                 "--no-confirm", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["verdict"] == "refuted once, not confirmed" and rec["refuted"] == [] and rec["refuted_once"] == [
        "target"] and rec["confirmation"] is None
    # each estimator line says what it assumes, and the line saying what the audited ε rests on names its assumption
    assert out.count("assumes ") == 3 + out.count("what the audited ε rests on:") and "assumes nothing" in out


def test_audit_end_to_end_from_the_command_line(capsys):
    assert main(["audit", "--dataset", "breast-cancer", "--mechanism", "gradient-dpgd", "--threat", "white-box",
                 "--end-to-end", "--clip", "0.2", "--trials", "100", "-T", "10", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["shift_check"]["reached"] and rec["shift_check"]["findings"] == []
    assert main(["audit", "--dataset", "iris", "--mechanism", "output-gaussian", "--clip", "0.2",
                 "--trials", "10"]) == 2
    assert "--clip does not apply to output-gaussian" in capsys.readouterr().err
    assert main(["audit", "--dataset", "iris", "--mechanism", "gradient-dpgd", "--end-to-end",
                 "--trials", "10"]) == 2  # black-box: the check is white-box only


def test_audit_one_run_from_the_command_line(capsys):
    assert main(["audit", "--dataset", "breast-cancer", "--mechanism", "gradient-dpsgd", "--one-run",
                 "--canaries", "200", "-T", "20", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["mode"] == "one-run" and rec["canaries"] == 200
    assert 0 <= rec["epsilon_lower_bound"] <= rec["epsilon_certified"]
    assert main(["audit", "--dataset", "breast-cancer", "--mechanism", "gradient-dpgd", "--one-run",
                 "--trials", "10"]) == 2
    assert "--trials does not apply to --one-run" in capsys.readouterr().err
    assert main(["audit", "--dataset", "breast-cancer", "--mechanism", "gradient-dpgd", "--canaries", "50"]) == 2


def test_run_names_the_class_that_guessing_answers(capsys):
    assert main(["run", "--dataset", "iris", "--mechanism", "non-private", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["guess_class"] == "setosa or versicolor"  # 100 of the 150 irises are not virginica
    assert main(["run", "--dataset", "synthetic-regression", "--model", "linreg", "--mechanism", "non-private",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["guess_class"] is None


def test_tuned_input_perturbation_chooses_on_its_released_records_and_says_what_it_chose(capsys):
    # Adult at ε = 1: the shipped tuning of input-kang is the free choice on each release; 2 releases
    assert main(["run", "--dataset", "adult", "--mechanism", "input-kang", "--epsilon", "1", "--repeats", "2",
                 "--tuned"]) == 0
    cap = capsys.readouterr()
    assert "tuned at ε = 1: training settings chosen on each release's own records (free)" in cap.err
    assert "the guess kept by 2 of 2; chosen: guess (always the released majority class)" in cap.out
    assert "ε certified 1 " in cap.out  # the choice is post-processing: the target, unchanged
    # given explicitly, the option wins over the shipped tuning
    assert main(["run", "--dataset", "adult", "--mechanism", "input-kang", "--epsilon", "1", "--repeats", "2",
                 "--tuned", "--option", "tune_on_release=false", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert "tuned_on_release" not in record and record["accuracy_mean"] < 0.7


def test_values_inside_the_declared_ranges_do_not_crash(capsys):
    """Issue 43's two examples: a noise scale next to nothing (σ of 1e-301: certified ε = ∞, said;
    a subnormal one is outside every declared range, refused in one line) and tradeoff at ε = 1000,
    the declared maximum (e^ε overflowed in DBDP-IF)."""
    assert main(["run", "--dataset", "breast-cancer", "--mechanism", "gradient-dpgd", "--noise-scale", "1e-300",
                 "--repeats", "1", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["sigma"] < 1e-299 and record["epsilon_certified"] is None  # ∞: nothing certified
    for tiny in ("5e-324", "1e-310"):
        assert main(["run", "--dataset", "breast-cancer", "--mechanism", "gradient-dpgd", "--noise-scale", tiny]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "'noise_scale'" in err and "subnormal" in err, err
    assert main(["tradeoff", "--dataset", "breast-cancer", "--epsilon", "1000", "--repeats", "1",
                 "--iterations", "5", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows and not [r for r in rows if "internal error" in str(r.get("error", ""))]


def test_the_run_text_names_the_one_non_private_reference(capsys):
    assert main(["run", "--dataset", "breast-cancer", "--mechanism", "gradient-dpgd", "--repeats", "1"]) == 0
    from dpcore.experiments.baselines import baseline

    ref = baseline(RunSpec(dataset="breast-cancer"))
    assert f"{ref.label} {ref.value:.4f}" in capsys.readouterr().out


# -- issue 43, all refused: a sweep, a tuning and a tradeoff whose every setting is refused exit 2
#    with one line saying how many and why (a sweep drew an empty figure and crashed; tune exited 0)


SWEEP = ["sweep", "--preset", "002-appendix", "--quick", "--set", "datasets=iris", "--set", "epsilons=1",
         "--set", "learning_rates=1", "--workers", "1"]


def _refusal(capsys) -> str:
    cap = capsys.readouterr()
    lines = [ln for ln in cap.err.strip().splitlines() if not ln.startswith("[")]  # progress
    assert cap.out == "" and len(lines) == 1 and "Traceback" not in cap.err, cap.err[-600:]
    return lines[0]


@pytest.mark.parametrize("how", ["budget", "model"])
def test_a_sweep_whose_every_setting_is_refused_says_so_in_one_line(how, tmp_path, capsys, monkeypatch):
    extra = []
    if how == "budget":
        monkeypatch.setenv("DPCORE_WORK_BUDGET", "1")  # read when the sweep's context is made
    else:
        extra = ["--set", "models=linreg"]  # a regression model on classification data: no task fits
    assert main([*SWEEP, *extra, "--out", str(tmp_path)]) == 2
    line = _refusal(capsys)
    assert line.startswith("dpcore: error: all ") and " settings were refused" in line, line
    assert ("DPCORE_WORK_BUDGET" if how == "budget" else "pick a classification model") in line
    assert list(tmp_path.glob("*.html"))  # the figure was drawn: empty, with the reason


def test_a_sweep_counts_the_settings_refused_not_their_reasons(tmp_path, capsys):
    """linreg on iris is refused for every ε and mechanism, with one reason: the summary counts settings."""
    assert main([*SWEEP, "--set", "models=logreg,linreg", "--out", str(tmp_path), "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    refused = len(rec["failed_tasks"])
    assert 1 < refused < rec["tasks"] and len(rec["errors"]) == 1
    assert main([*SWEEP, "--set", "models=logreg,linreg", "--out", str(tmp_path)]) == 0
    assert f"{refused} of {rec['tasks']} settings refused by the core (1 reason)" in capsys.readouterr().out


def test_the_empty_figure_of_a_sweep_with_nothing_to_draw():
    import pandas as pd

    from dpcore.experiments.presets import get_preset
    df = pd.DataFrame({"task": [0, 1], "error": ["refused", "refused"], "mechanism": ["input-kang"] * 2,
                       "dataset": ["iris"] * 2, "model": ["logreg"] * 2, "epsilon": [1.0, 1.0]})
    for pid in ("002-appendix", "001-fig2", "003-fig1", "004-fig2"):
        fig, note = get_preset(pid).figure_and_points(df)
        assert "every setting was refused" in fig.layout.annotations[0].text and note["rows"] == []


def test_tune_whose_every_candidate_is_refused_exits_2_like_sweep(capsys, monkeypatch):
    monkeypatch.setenv("DPCORE_WORK_BUDGET", "1")  # read by each context the command makes
    assert main(["tune", "--dataset", "breast-cancer", "--mechanisms", "output-gaussian,objective-chaudhuri",
                 "--epsilons", "1", "--final-repeats", "1"]) == 2
    line = _refusal(capsys)
    assert line.startswith("dpcore: error: all 10 candidates were refused") and "DPCORE_WORK_BUDGET" in line, line
    assert main(["tradeoff", "--dataset", "breast-cancer", "--mechanisms", "gradient-dpgd,output-gaussian",
                 "-R", "1", "-T", "3"]) == 2
    assert _refusal(capsys).startswith("dpcore: error: all 2 mechanisms were refused: ")


# -- issue 43, inputs dropped without a word


def _conflict_cases():
    """Every declared conflict (dpcore.params.CONFLICTS), on each subcommand with both flags."""
    from test_fuzz_cli import _applies  # tests/test_fuzz_cli.py: where a flag applies

    from dpcore.cli.commands import build_parser
    from dpcore.params import CONFLICTS, PARAMS
    samples = {"scheduler": "tcp://127.0.0.1:8786"}
    sub = next(a for a in build_parser()._actions if a.dest == "command").choices
    cases = []
    for first, second, _ in CONFLICTS:
        for command, parser in sub.items():
            flags = {}
            for action in parser._actions:
                name = getattr(action.type, "__name__", None)
                name = name if name in PARAMS else action.dest
                if name in (first, second) and name not in flags:
                    value = samples.get(name) or repr(PARAMS[name].default if PARAMS[name].default is not None
                                                      else PARAMS[name].ui_min)
                    flags[name] = [action.option_strings[0], value]
            if len(flags) == 2:
                base = _applies(command, first)
                for flag, _ in flags.values():  # the base's own value of either flag goes
                    if flag in base:
                        del base[base.index(flag):base.index(flag) + 2]
                cases.append(pytest.param(base, flags[first], flags[second],
                                          id=f"{command} {first} {second}"))
    return cases


CONFLICT_CASES = _conflict_cases()


def test_every_declared_conflict_can_be_given_on_the_command_line():
    from dpcore.params import CONFLICTS
    assert {c.id.split(" ", 1)[1] for c in CONFLICT_CASES} == {f"{a} {b}" for a, b, _ in CONFLICTS}


@pytest.mark.parametrize("base, one, other", CONFLICT_CASES)
def test_two_flags_that_set_one_thing_two_ways_are_refused_together(base, one, other, capsys, monkeypatch):
    monkeypatch.setattr(cli, "COMMANDS", {k: (lambda args: "ran") for k in cli.COMMANDS})
    assert main(base + one + other) == 2
    line = _refusal(capsys)
    assert one[0] in line and other[0] in line and "cannot be given together" in line, line
    for alone in (one, other):  # each alone gets past the check
        assert main(base + alone) == 0 and capsys.readouterr().out.strip() == "ran"


def test_a_tuned_setting_never_adds_the_other_half_of_a_conflict(capsys, monkeypatch):
    """A tuning of DP-SGD holds a sampling rate (Adult's shipped one does); --batch given
    explicitly wins, and so the tuned rate it conflicts with is left out."""
    monkeypatch.setattr(cli_run, "tuned_setting", lambda *a: ({"sample_rate": 0.05, "learning_rate": 2.0}, 1.0))
    assert main(["run", "--dataset", "breast-cancer", "--mechanism", "gradient-dpsgd", "--tuned", "--batch", "64",
                 "-T", "3", "--repeats", "1", "--json"]) == 0
    config = json.loads(capsys.readouterr().out)["config"]
    assert config["batch_size"] == 64 and config["sample_rate"] is None and config["learning_rate"] == 2.0


@pytest.mark.parametrize("command", ["tune", "tradeoff"])
@pytest.mark.parametrize("mechanisms", ["", ",,", " , "])
def test_an_empty_mechanism_list_is_refused_not_read_as_the_default(command, mechanisms, capsys, monkeypatch):
    where = {"tune": cli_sweep, "tradeoff": cli_run}[command]  # the module whose command calls it
    monkeypatch.setattr(where, command, lambda *a, **k: pytest.fail("ran the default mechanisms"))
    assert main([command, "--dataset", "breast-cancer", f"--mechanisms={mechanisms}"]) == 2
    assert "--mechanisms names no mechanism" in _refusal(capsys)


def test_an_internal_error_is_one_line_too(capsys, monkeypatch):
    def boom(args):
        raise ValueError("\nThe 'rows' argument to make_subplots must be an int greater than 0.\n    Received 0")
    monkeypatch.setattr(cli, "COMMANDS", {**cli.COMMANDS, "datasets": boom})
    assert main(["datasets"]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "internal error (ValueError)" in err
