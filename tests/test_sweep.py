"""Presets and sweeps: every seed figure end to end (reduced), the cache, parallel runs."""

import json
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from dpcore.experiments import context as context_mod
from dpcore.experiments import sweep as sweep_mod
from dpcore.experiments import records
from dpcore.cli.commands import main
from dpcore.experiments.run import RunSpec
from dpcore.experiments.presets import EPS_001, LR_004, N_003, PRESETS, auto_delta, get_preset, run_preset
from dpcore.experiments.context import Context
from dpcore.experiments.grid import run_grid
from dpcore.experiments.studies import epsilon_sweep
from dpcore.experiments.sweep import task_key

import plotly_html  # tests/plotly_html.py

FIGURES = {  # seed paper -> the figures the issue asks for
    "001": {"Fig. 2", "Fig. 3", "Fig. 4"},
    "002": {"Fig. 1", "Fig. 2"},
    "003": {"Fig. 1", "Fig. 2"},
    "004": {"Fig. 1", "Fig. 2", "Figs. 4–5", "Figs. 6–7", "Figs. 8–9", "Figs. 10–11", "Figs. 13–14",
            "Figs. 15–16"},
}


@pytest.fixture(scope="module")
def shared_out(tmp_path_factory):
    return tmp_path_factory.mktemp("sweeps")



def _grid(tasks, out, **kw):
    """A preset's tasks through the grid runner with a result cache in ``out``, as presets run."""
    ctx = Context(workers=1, threads=1, results_dir=Path(out) / "cache", erm_dir=Path(out) / "cache" / "erm",
                  trace_points=0, **kw)
    return run_grid([t.config for t in tasks], ctx, tags=[dict(t.tags) for t in tasks])

def test_every_seed_figure_has_a_preset():
    for seed, figs in FIGURES.items():
        have = " ".join(p.figures for p in PRESETS.values() if p.id.startswith(seed))
        for fig in figs:
            assert fig in have, f"seed {seed} {fig} has no preset"


@pytest.mark.parametrize("preset_id", list(PRESETS))
def test_preset_runs_end_to_end_reduced(preset_id, shared_out):
    preset = get_preset(preset_id)
    tasks = preset.tasks(quick=True)
    rec = run_preset(preset, shared_out, quick=True, workers=2)
    paths = rec["outputs"]
    df = pd.read_csv(paths["csv"])
    # one row per run (or one error row per refused task), every task present
    assert set(df["task"]) == {t.key for t in tasks}
    ok = df[df["error"].isna()]
    assert len(ok) == sum(t.config.repeats for t in tasks if t.key in set(ok["task"]))
    for col in ("dataset", "model", "mechanism", "epsilon", "delta", "iterations", "learning_rate",
                "seed", "run", "run_seed", "gap", "epsilon_target", "epsilon_certified", "epsilon_local"):
        assert col in df.columns
    metric = "rmse" if preset.models == ("linreg",) else "accuracy"
    assert ok[metric].notna().all() and ok["gap"].notna().all()
    # every mechanism of the figure produced numbers (a refused corner may exist, not a refused curve)
    assert set(ok["mechanism"]) == set(preset.mechanisms)
    assert len(ok) >= 0.9 * len(df)
    figs = plotly_html.figures(Path(paths["html"]).read_text())
    assert len(figs) == 1 and figs[0]["data"], "one figure with traces"
    assert preset.title in plotly_html.title(figs[0])
    record = json.loads(Path(paths["json"]).read_text())
    assert record["preset"]["id"] == preset_id and record["quick"] is True
    assert record["tasks"] == len(tasks) == len(record["configs"])
    assert record["environment"]["packages"]["numpy"]
    assert record["preset"]["choices"], "open settings must be documented"


def test_presets_carry_the_papers_settings():
    p = get_preset("001-fig2")
    tasks = p.tasks()
    private = [t.config for t in tasks if t.config.mechanism != "non-private"]
    assert sorted({c.epsilon for c in private}) == list(EPS_001)
    assert {c.model for c in private} == {"logreg", "mlp"}
    assert {c.dataset for c in private} == {"kddcup99", "adult", "bank"}
    assert all(c.delta == 1e-5 and c.delta < 1 / 30_000 for c in private)
    assert not any(t.config.mechanism == "objective-gaussian" and t.config.model == "mlp" for t in tasks)

    p = get_preset("003-fig1")
    cfgs = [t.config for t in p.tasks()]
    assert sorted({c.n for c in cfgs}) == list(N_003) == [2**k for k in range(7, 22, 2)]
    assert {c.epsilon for c in cfgs if c.mechanism != "non-private"} == {0.1, 1.0}
    assert {c.delta for c in cfgs} == {0.01} and {c.repeats for c in cfgs} == {100}
    assert {c.d for c in cfgs} == {14} and {c.dataset for c in cfgs} == {"synthetic-regression"}

    p = get_preset("004-fig1")
    cfgs = [t.config for t in p.tasks()]
    assert {c.iterations for c in cfgs} == {1000} and {c.delta for c in cfgs} == {1e-3}
    assert sorted({c.learning_rate for c in cfgs}) == sorted(LR_004)
    dist = [c for c in cfgs if c.mechanism.startswith("distributed")]
    assert {c.clients for c in dist} == {32} and {c.option("partition") for c in dist} == {"random"}

    p = get_preset("004-fig2")
    cfgs = [t.config for t in p.tasks()]
    dist = [c for c in cfgs if c.mechanism.startswith("distributed")]
    assert {c.clients for c in dist} == {16} and {c.epsilon for c in cfgs} == {0.05}
    assert sorted({c.skew for c in dist if c.dataset == "adult"}) == list(range(1, 10))
    assert sorted({c.skew for c in dist if c.dataset == "iris" or c.dataset == "credit-card"}) == list(range(1, 6))
    # the pooled reference does not depend on u: one task per (dataset, lr), not one per u
    pooled = [c for c in cfgs if c.mechanism == "gradient-dpgd"]
    assert len(pooled) == 5 * len(LR_004)
    assert {(m, get_preset(f"004-m{m}").clients) for m in (2, 4, 8, 16)} == {(2, 2), (4, 4), (8, 8), (16, 16)}


def test_auto_delta_is_below_one_over_n():
    for n in (120, 546, 787, 32_950, 36_177, 56_000, 395_216):
        assert auto_delta(n) < 1 / n <= 10 * auto_delta(n)


def test_task_key_is_a_content_hash():
    a = RunSpec(dataset="iris", mechanism="input-dbdp-if", options=(("t_local", 5), ("w_min", 0.1)))
    b = RunSpec(dataset="iris", mechanism="input-dbdp-if", options=(("w_min", 0.1), ("t_local", 5)))
    assert task_key(a) == task_key(b)
    assert task_key(a) != task_key(RunSpec(dataset="iris", mechanism="input-dbdp-if", epsilon=2.0))
    with pytest.raises(ValueError, match="twice"):
        run_grid([a, b], Context(results_dir="/nonexistent-never-created"))


def test_rerun_uses_the_cache_and_does_no_training(tmp_path, monkeypatch):
    preset = get_preset("003-fig2")
    first = run_preset(preset, tmp_path, quick=True, workers=1)
    assert first["computed"] == first["tasks"] and first["cached"] == 0

    def boom(*a, **k):
        raise AssertionError("training ran although every result is cached")

    monkeypatch.setattr(sweep_mod, "_execute_keyed", boom)
    monkeypatch.setattr(sweep_mod, "execute", boom)
    t0 = time.perf_counter()
    second = run_preset(preset, tmp_path, quick=True, workers=2)
    assert second["computed"] == 0 and second["cached"] == second["tasks"]
    assert time.perf_counter() - t0 < 30
    a = pd.read_csv(first["outputs"]["csv"])
    b = pd.read_csv(second["outputs"]["csv"])
    pd.testing.assert_frame_equal(a, b)


def test_a_budget_refusal_is_not_cached_so_a_larger_budget_computes_it(tmp_path, monkeypatch):
    """The refusal's message says to raise DPCORE_WORK_BUDGET; a rerun that does must then
    train, not read the refusal back from the result cache."""
    tasks = get_preset("003-fig2").tasks(quick=True)[:3]
    monkeypatch.setenv("DPCORE_WORK_BUDGET", "1")  # read when the grid's context is made
    refused = _grid(tasks, tmp_path)
    assert refused["error"].str.contains("DPCORE_WORK_BUDGET").all()
    assert not list((tmp_path / "cache").glob("*.json"))  # nothing cached
    monkeypatch.delenv("DPCORE_WORK_BUDGET")
    computed = _grid(tasks, tmp_path)
    assert computed.attrs["computed"] == len(tasks) and computed["error"].isna().all()
    assert len(list((tmp_path / "cache").glob("*.json"))) == len(tasks)
    # a refusal of the setting itself is still a result, cached like any other
    bad = RunSpec(dataset="iris", model="mlp", mechanism="objective-chaudhuri", epsilon=1.0, delta=1e-3,
                  iterations=5, repeats=2)
    ctx = Context(workers=1, threads=1, results_dir=tmp_path / "other", trace_points=0)
    assert run_grid([bad], ctx)["error"].notna().all()
    assert len(list((tmp_path / "other").glob("*.json"))) == 1


def test_the_work_estimate_weighs_the_mlp_and_admits_the_papers_kdd_runs():
    """R × T × (n × p × weight + 3000), p = (d + 1)² for the MLP of width d: the paper presets'
    MLP on KDD Cup (T = 100, R = 5; about 80 s a configuration here) fits the default budget,
    ten times as many steps do not."""
    from dpcore.experiments import run as run_mod
    from dpcore.experiments.run import problem_data, work_estimate
    from dpcore.mechanisms import get_mechanism

    spec = RunSpec(dataset="kddcup99", model="mlp", mechanism="input-kang", iterations=100, repeats=5)
    data, model = problem_data(spec)
    by_hand = 5 * 100 * (data.n * (data.d + 1) ** 2 * 0.15 + 3000)
    assert work_estimate(spec, data, model, get_mechanism("input-kang")) == pytest.approx(by_hand, rel=1e-12)
    run_mod.check_budget(spec, data, model, get_mechanism("input-kang"))  # no refusal
    longer = RunSpec(**{**spec.to_dict(), "iterations": 1000, "options": ()})
    with pytest.raises(run_mod.BudgetError, match="lower the iterations or the repeats"):
        run_mod.check_budget(longer, data, model, get_mechanism("input-kang"))


def test_the_recorded_command_names_a_raised_budget(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DPCORE_WORK_BUDGET", "1e12")
    assert main(["sweep", "--preset", "003-fig2", "--out", str(tmp_path), "--quick", "--workers", "1",
                 "--set", "epsilons=1", "--set", "ns=128"]) == 0
    (record,) = [p for p in tmp_path.glob("*.json") if not p.name.endswith("-plans.json")]
    command = json.loads(record.read_text())["command"]
    assert command.startswith("DPCORE_WORK_BUDGET=1e12 python -m dpcore sweep --preset 003-fig2"), command


def test_interrupted_sweep_resumes_with_the_rest_only(tmp_path):
    preset = get_preset("004-u-m8")
    tasks = preset.tasks(quick=True)
    stop_after = 7

    def interrupt(done, total, label):
        if done == stop_after:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _grid(tasks, tmp_path, progress=interrupt)
    assert len(list((tmp_path / "cache").glob("*.json"))) == stop_after
    rest = _grid(tasks, tmp_path).attrs
    assert rest["cached"] == stop_after and rest["computed"] == len(tasks) - stop_after


def test_killed_cli_sweep_resumes(tmp_path):
    """A real SIGKILL halfway: no torn cache file, and the re-run computes only the rest."""
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "dpcore", "sweep", "--preset", "001-fig4", "--quick", "--out", str(out),
           "--workers", "1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cache = out / "cache"
    deadline = time.time() + 120
    while time.time() < deadline and len(list(cache.glob("*.json"))) < 3:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = len(list(cache.glob("*.json")))
    total = len(get_preset("001-fig4").tasks(quick=True))
    assert 3 <= done < total, "the sweep should have been killed halfway"
    for f in cache.glob("*.json"):
        json.loads(f.read_text())  # every cached result is whole
    res = subprocess.run(cmd + ["--json"], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    rec = json.loads(res.stdout)
    assert rec["cached"] == done and rec["computed"] == total - done
    assert "[" in res.stderr and f"/{total}]" in res.stderr  # progress on stderr


def _frame(path):
    return pd.read_csv(path).drop(columns=["task_seconds"]).sort_values(["task", "run"]).reset_index(drop=True)


def test_one_worker_two_workers_and_dask_agree_exactly(tmp_path):
    distributed = pytest.importorskip("distributed")
    preset = get_preset("004-u-m8")
    a = run_preset(preset, tmp_path / "w1", quick=True, workers=1)
    b = run_preset(preset, tmp_path / "w2", quick=True, workers=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        c = run_preset(preset, tmp_path / "dask", quick=True, scheduler=cluster.scheduler_address)
    assert c["scheduler"].startswith("tcp://127.0.0.1:")
    fa, fb, fc = (_frame(r["outputs"]["csv"]) for r in (a, b, c))
    pd.testing.assert_frame_equal(fa, fb, check_exact=True)
    pd.testing.assert_frame_equal(fa, fc, check_exact=True)
    assert a["computed"] == b["computed"] == c["computed"] == a["tasks"]


def test_sweep_cli_lists_and_refuses_bad_input(tmp_path, capsys, monkeypatch):
    assert main(["sweep", "--list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["id"] for r in rows} == set(PRESETS)
    assert main(["sweep", "--preset", "nope", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "unknown preset 'nope'" in err and err.count("\n") == 1
    assert main(["sweep", "--preset", "003-fig1"]) == 2
    assert "--out" in capsys.readouterr().err
    assert main(["sweep", "--preset", "003-fig1", "--out", str(tmp_path), "--workers", "0"]) == 2
    assert "--workers" in capsys.readouterr().err
    pytest.importorskip("distributed")
    monkeypatch.setattr(sweep_mod, "CONNECT_TIMEOUT", "1s")
    assert main(["sweep", "--preset", "003-fig1", "--quick", "--out", str(tmp_path),
                 "--scheduler", "tcp://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert "cannot reach the Dask scheduler" in err and err.count("\n") == 1


def test_epsilon_sweep_same_numbers_in_worker_processes():
    base = RunSpec(dataset="iris", repeats=3, iterations=30)
    mechs = ["gradient-dpgd", "output-gaussian", "objective-chaudhuri", "input-dbdp-if"]
    one = epsilon_sweep(base, mechs, [0.3, 3.0])
    two = epsilon_sweep(base, mechs, [0.3, 3.0], Context(workers=2))
    assert [(r["mechanism"], r["epsilon"]) for r in one] == [(r["mechanism"], r["epsilon"]) for r in two]
    for a, b in zip(one, two):
        assert a.get("error") == b.get("error")
        for k in ("accuracy_mean", "gap_mean", "epsilon_certified", "sigma"):
            if a.get(k) is None or b.get(k) is None:  # a mechanism without one σ (input-dbdp-if)
                assert a.get(k) is b.get(k), (a["mechanism"], k)
            else:
                assert a[k] == pytest.approx(b[k], rel=1e-9, abs=1e-12), (a["mechanism"], k)


def test_sparse_data_same_bits_on_threads_and_in_workers():
    """Adult's sparse twin: threaded products in-process equal 1-thread worker processes."""
    from dpcore import datasets
    from dpcore.numerics import linalg

    base = RunSpec(dataset="adult", n=3000, repeats=3, iterations=20)
    assert linalg.is_sparse(datasets.load("adult", subsample=3000).X_train)
    mechs = ["gradient-dpgd", "output-gaussian"]
    one = epsilon_sweep(base, mechs, [0.5])
    two = epsilon_sweep(base, mechs, [0.5], Context(workers=2))
    for a, b in zip(one, two):
        for k in ("accuracy_mean", "gap_mean", "epsilon_certified", "sigma"):
            assert a[k] == b[k], (a["mechanism"], k)


def test_warm_workers_loads_in_the_background_and_changes_no_number():
    base = RunSpec(dataset="breast-cancer", repeats=2, iterations=10)
    assert sweep_mod.warm_workers(base, Context(workers=1)) is None  # nothing to warm in-process
    thread = sweep_mod.warm_workers(base, Context(workers=2))
    assert thread is not None
    thread.join(timeout=120)
    assert not thread.is_alive()
    cold = epsilon_sweep(base, ["gradient-dpgd"], [1.0])
    warm = epsilon_sweep(base, ["gradient-dpgd"], [1.0], Context(workers=2))
    assert cold[0]["accuracy_mean"] == pytest.approx(warm[0]["accuracy_mean"], rel=1e-12)
    # a setting the core refuses is not warmed, and says so instead of raising
    bad = records.config_record(RunSpec(dataset="breast-cancer", n=10**6))
    assert sweep_mod._warm(bad).startswith("not warmed: ")


def test_output_gaussian_shares_one_noise_free_trajectory():
    """R batched runs (one GD, R noise draws) equal R separate runs with those seeds."""
    from dataclasses import replace

    from dpcore.experiments.run import run

    cfg = RunSpec(dataset="breast-cancer", mechanism="output-gaussian", repeats=4, epsilon=0.5)
    batched = run(cfg)
    for r in range(4):
        single = run(replace(cfg, repeats=1, seed=r))
        assert single.accuracy[0] == batched.accuracy[r]
        assert single.gap[0] == pytest.approx(batched.gap[r], rel=1e-12)
    assert batched.loss_trace.shape[1] == 4


def test_published_calibration_override(tmp_path):
    preset = get_preset("001-fig4")
    tasks = preset.tasks(quick=True, calibration="published")
    cals = {(t.config.mechanism, t.config.calibration) for t in tasks}
    assert ("input-kang", "published") in cals and ("non-private", "certified") in cals
    # the non-private run is the same task either way
    shared = {t.key for t in preset.tasks(quick=True)} & {t.key for t in tasks}
    assert {t.config.mechanism for t in tasks if t.key in shared} == {"non-private"}
    code = main(["sweep", "--preset", "003-fig1", "--quick", "--calibration", "published",
                 "--out", str(tmp_path), "--workers", "1"])
    assert code == 0
    df = pd.read_csv(tmp_path / "003-fig1-quick-published.csv")
    assert set(df.loc[df.mechanism != "non-private", "calibration"]) == {"published"}


def test_set_changes_one_setting_and_checks_it(tmp_path, capsys):
    from dpcore.experiments.presets import with_overrides

    base = get_preset("001-fig4")
    p = with_overrides(base, ["epsilons=0.1,1", "datasets=iris", "repeats=3"])
    assert p.id.startswith("001-fig4-set") and p.epsilons == (0.1, 1.0) and p.datasets == ("iris",)
    assert any("changed from the paper" in c for c in p.choices)
    cfgs = [t.config for t in p.tasks()]
    assert {c.dataset for c in cfgs} == {"iris"} and {c.repeats for c in cfgs} == {3}
    assert with_overrides(base, []) is base
    assert main(["sweep", "--preset", "001-fig4", "--set", "datasets=iris", "--set", "epsilons=0.5",
                 "--set", "repeats=2", "--out", str(tmp_path), "--workers", "1", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["preset"]["datasets"] == ["iris"] and rec["preset"]["epsilons"] == [0.5]
    for bad, msg in (("foo=1", "KEY one of"), ("epsilons=-1", "epsilon"), ("datasets=nope", "unknown dataset"),
                     ("iterations=1,2", "takes one value"), ("mechanisms=zzz", "zzz")):
        assert main(["sweep", "--preset", "001-fig4", "--set", bad, "--out", str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert msg in err and err.count("\n") == 1, (bad, err)


def test_one_worker_runs_in_this_process(tmp_path, monkeypatch):
    """--workers 1 means no worker processes: every task goes through this process's function."""
    calls = []
    real = sweep_mod._execute_keyed

    def counting(*args, **kw):
        calls.extend(args[0])  # the keys of a bundle of tasks
        return real(*args, **kw)

    monkeypatch.setattr(sweep_mod, "_execute_keyed", counting)
    tasks = get_preset("003-fig1").tasks(quick=True)
    res = _grid(tasks, tmp_path).attrs
    assert res["computed"] == len(tasks) and sorted(calls) == sorted(t.key for t in tasks)


def test_with_workers_the_first_bundle_runs_here_while_they_start(tmp_path, monkeypatch):
    """The first curve does not wait for a worker process: with two workers, the first scheduled
    (cheapest) bundle is computed in this process, the others in the workers; every task once."""
    here = []
    real = sweep_mod._execute_keyed

    def counting(*args, **kw):
        here.extend(args[0])  # only calls made in this process are seen
        return real(*args, **kw)

    monkeypatch.setattr(sweep_mod, "_execute_keyed", counting)
    base = RunSpec(dataset="iris", repeats=2, iterations=10)
    specs = [replace(base, mechanism=m, epsilon=e)
             for m in ("gradient-dpgd", "output-gaussian", "objective-chaudhuri") for e in (0.5, 2.0)]
    tasks = [sweep_mod.Task(config=c) for c in specs]
    first = sweep_mod._schedule(sweep_mod.bundles(tasks))[0]
    res = sweep_mod.run_tasks(tasks, Context(workers=2, erm_dir=tmp_path / "erm"))
    assert sorted(here) == sorted(t.key for t in first)
    assert res.computed == len(tasks) and set(res.results) == {t.key for t in tasks}


def test_preset_figure_rings_points_that_miss_their_target():
    """The exported figure carries the same marks as the app (defect 9)."""
    preset = get_preset("003-fig1")
    rows = []
    for mech, cert in (("input-fukuchi", 991.0), ("output-laplace", 0.1), ("objective-gaussian", None)):
        for r in range(2):
            rows.append(dict(dataset="synthetic-regression", model="linreg", mechanism=mech, epsilon=0.1,
                             n=128, learning_rate=1.0, rmse=0.5, gap=0.1, epsilon_target=0.1,
                             epsilon_certified=cert, error=None))
    fig = preset.figure(pd.DataFrame(rows)).to_plotly_json()
    ring = [t for t in fig["data"] if t.get("name") == "misses its target ε"]
    assert len(ring) == 2  # fukuchi (991) and objective-gaussian (∞); not output-laplace
    note = " ".join(a["text"] for a in fig["layout"]["annotations"] if "Ringed" in a["text"])
    assert "input (Fukuchi) (certified 991 at 0.1)" in note.replace("<br>", " ")
    assert "objective (Gaussian) (no guarantee" in note.replace("<br>", " ")


def test_run_grid_table_has_the_documented_schema_and_matches_single_runs():
    """One row per spec × repeat, the spec's position and tags, an error row for a refused
    spec; each spec's numbers equal a direct run's."""
    from dpcore.experiments.grid import summaries
    from dpcore.experiments.run import run

    specs = [RunSpec(dataset="iris", mechanism="gradient-dpgd", iterations=20, repeats=3),
             RunSpec(dataset="iris", mechanism="output-gaussian", epsilon=0.5, repeats=2),
             RunSpec(dataset="iris", mechanism="output-laplace", lam=0.0, repeats=2)]  # needs λ > 0
    df = run_grid(specs, Context(), tags=[{"label": "a"}, {"label": "b"}, {"label": "c"}])
    assert list(df.columns[:2]) == ["spec", "task"]
    for col in ("label", "dataset", "mechanism", "epsilon", "epsilon_target", "epsilon_certified",
                "epsilon_local", "sigma", "run", "run_seed", "accuracy", "gap", "error"):
        assert col in df.columns, col
    assert df.groupby("spec").size().to_dict() == {0: 3, 1: 2, 2: 1}
    refused = df[df["spec"] == 2].iloc[0]
    assert isinstance(refused["error"], str) and "λ" in refused["error"] and pd.isna(refused["run"])
    assert df.attrs["computed"] == 3 and df.attrs["cached"] == 0
    out = summaries(df, len(specs))
    assert out[2] == {"error": refused["error"]}
    for spec, summary in zip(specs[:2], out[:2]):
        direct = run(spec).to_dict()
        assert summary["accuracy_mean"] == direct["accuracy_mean"]
        assert summary["gap_mean"] == direct["gap_mean"]
        assert summary["epsilon_certified"] == direct["epsilon_certified"]
        assert list(summary["gap_runs"]) == [r["gap"] for r in direct["runs"]]


def test_a_rerun_never_writes_into_the_shipped_results(tmp_path):
    from dpcore.exceptions import ParameterError
    from dpcore.experiments.presets import rerun
    from dpcore.shipped import folder_of

    shipped_results_dir = folder_of("results")

    with pytest.raises(ParameterError, match="never writes into data/results"):
        rerun("003-fig1", shipped_results_dir)
    got = rerun("003-fig1", tmp_path, quick=True, workers=1)
    assert (tmp_path / "003-fig1-quick.csv").exists() and len(got.table) == got.record["tasks"] * 2
    assert got.record["command"] == f"python -m dpcore sweep --preset 003-fig1 --out {tmp_path} --quick"


def test_preset_panels_name_their_data_not_the_id():
    rows = [dict(dataset=d, model="logreg", mechanism="gradient-dpgd", epsilon=e, learning_rate=1.0, accuracy=0.8,
                 gap=0.1, epsilon_target=e, epsilon_certified=e, error=None)
            for d in ("kddcup99", "adult", "bank") for e in EPS_001]
    fig = get_preset("001-fig2").figure(pd.DataFrame(rows))
    titles = [a.text for a in fig.layout.annotations if a.text and "Ringed" not in a.text]
    assert titles[:3] == ["KDD Cup 1999 (LR)", "Adult (LR)", "Bank Marketing (LR)"], titles


# -- the results cache cannot be made to lie or hang; progressive results ------------------------

_SMALL = [RunSpec(dataset="breast-cancer", mechanism=m, epsilon=e, repeats=2, iterations=20)
          for m in ("output-gaussian", "gradient-dpgd") for e in (0.5, 2.0)]


def _cached_grid(folder):
    return run_grid(_SMALL, Context(workers=1, results_dir=folder, trace_points=0))


def _damage(kind, path, other):
    """One way a stored result can go wrong, applied to ``path`` (``other``: another task's)."""
    import cachefiles  # tests/cachefiles.py
    rec = json.loads(path.read_text())
    if kind in cachefiles.SPECIAL:
        cachefiles.spoil(path, kind, context_mod.MAX_RESULT_BYTES)
    elif kind == "torn":
        path.write_text(path.read_text()[:50])
    elif kind == "another task's":
        path.write_text(other.read_text())
    elif kind == "edited config":
        rec["config"]["epsilon"] = 99.0
        path.write_text(json.dumps(rec))
    elif kind == "edited runs":
        rec["result"]["runs"] = rec["result"]["runs"][:1]
        path.write_text(json.dumps(rec))
    elif kind == "wrong shape":
        rec["result"]["runs"] = [{"accuracy": {"nested": 1}}] * len(rec["result"]["runs"])
        path.write_text(json.dumps(rec))
    elif kind == "not an object":
        path.write_text("[1, 2, 3]")
    else:  # a forged field: well-formed JSON of the right shape that lies (FORGERIES)
        field, value = FORGERIES[kind]
        target = rec["result"]["runs"][0] if field in ("accuracy", "gap", "seed") else rec["result"]
        if value is _DROP:
            target.pop(field)
        else:
            target[field] = value
        path.write_text(json.dumps(rec))


_DROP = object()
#: lies a stored result might tell, each one field: the check recomputes the certificate, the
#: refusal and the data's size, and holds every other field to its declared type and range
FORGERIES = {
    "a smaller certified ε": ("epsilon_certified", 0.001), "no certified ε (∞ as null)": ("epsilon_certified", None),
    "a larger certified ε": ("epsilon_certified", 3.0), "an accuracy of 1.5": ("accuracy", 1.5),
    "a negative σ": ("sigma", -5.0), "another data set's n": ("n_train", 30_162),
    "an invented refusal": ("error", "refused: the mechanism cannot run this"),
    "another target": ("epsilon_target", 0.25), "a text accuracy": ("accuracy", "0.9"),
    "a boolean n": ("n_train", True), "a negative seed": ("seed", -1),
    "warnings that are not a list": ("warnings", "none"),
}

ONLY_RECOMPUTATION_SEES = {"a smaller certified ε", "no certified ε (∞ as null)", "a larger certified ε",
                           "another data set's n", "an invented refusal", "another target"}

DAMAGES = ["fifo", "device", "huge", "torn", "deep", "another task's", "edited config", "edited runs",
           "wrong shape", "not an object", *FORGERIES]


@pytest.mark.parametrize("kind", DAMAGES)
def test_a_damaged_stored_result_is_computed_again_not_served(kind, tmp_path, caplog):
    first = _cached_grid(tmp_path)
    keys = [task_key(s) for s in _SMALL]
    _damage(kind, tmp_path / f"{keys[0]}.json", tmp_path / f"{keys[1]}.json")
    if kind in ONLY_RECOMPUTATION_SEES:  # check of the check: types and ranges alone accept these
        records.check_stored_record(json.loads((tmp_path / f"{keys[0]}.json").read_text()), keys[0], None)
    with caplog.at_level("WARNING", logger="dpcore.experiments.sweep"):
        again = _cached_grid(tmp_path)  # returns (a FIFO or /dev/zero would hang or fill memory)
    assert again.attrs["computed"] == 1 and again.attrs["cached"] == len(_SMALL) - 1
    assert any(keys[0] in r.getMessage() for r in caplog.records)
    cols = ["spec", "run", "accuracy", "gap", "epsilon_certified"]
    pd.testing.assert_frame_equal(first[cols], again[cols])


def test_a_record_read_again_is_not_accounted_again_but_a_forged_one_still_is(tmp_path, monkeypatch):
    """The server remembers the stored records it has verified (by task key and what they claim):
    a second click, or another session, reads them without running their accounting again."""
    _cached_grid(tmp_path)
    real, calls = records.noise_plan, []
    monkeypatch.setattr(records, "noise_plan", lambda *a, **k: calls.append(1) or real(*a, **k))
    server = Context(workers=1, results_dir=tmp_path, trace_points=0)  # one server's context, fresh
    for _ in range(3):
        assert run_grid(_SMALL, server.with_(trace_points=0)).attrs["cached"] == len(_SMALL)
    assert len(calls) == len(_SMALL)  # once per record, not once per read
    keys = [task_key(s) for s in _SMALL]
    _damage("a smaller certified ε", tmp_path / f"{keys[0]}.json", None)
    assert run_grid(_SMALL, server).attrs["computed"] == 1  # a new claim is checked, and refused
    assert len(calls) == len(_SMALL) + 1


def test_the_key_covers_the_source_so_changed_code_never_reads_old_results(monkeypatch):
    spec = _SMALL[0]
    before = task_key(spec)
    monkeypatch.setattr(sweep_mod, "results_fingerprint", lambda: "a-changed-mechanism")
    assert task_key(spec) != before


def test_a_users_own_data_is_never_stored_in_the_results_folder(tmp_path):
    from dpcore import datasets
    ds = datasets.load("breast-cancer")
    run_grid(_SMALL[:1], Context(workers=1, results_dir=tmp_path, trace_points=0), dataset=ds)
    assert not list(tmp_path.glob("*.json"))


def test_partial_results_are_the_final_numbers_earlier(tmp_path):
    seen = []
    base = RunSpec(dataset="breast-cancer", repeats=2, iterations=20)
    mechs, eps = ["output-gaussian", "gradient-dpgd", "objective-chaudhuri"], [0.5, 2.0]
    ctx = Context(workers=1, results_dir=tmp_path, trace_points=0)
    rows = epsilon_sweep(base, mechs, eps, ctx, partial=lambda done: seen.append(done))
    assert len(seen) == len(rows) and [len(s) for s in seen] == list(range(1, len(rows) + 1))
    final = {(r["mechanism"], r["epsilon"]): r for r in rows}
    for so_far in seen:
        for r in so_far:  # every partial row has exactly the final row's numbers
            assert r == final[(r["mechanism"], r["epsilon"])]
    cached = []
    again = epsilon_sweep(base, mechs, eps, ctx, partial=lambda done: cached.append(done))
    assert again == rows and len(cached) == len(rows)  # from the cache, each result reported too


def test_the_results_folder_is_kept_under_its_size_by_removing_the_oldest(tmp_path, monkeypatch):
    import os
    first = _cached_grid(tmp_path)
    files = sorted(tmp_path.glob("*.json"))
    assert len(files) == len(_SMALL)
    for k, f in enumerate(files):  # the written order, oldest first
        os.utime(f, (1_000_000 + k, 1_000_000 + k))
    sizes = [f.stat().st_size for f in files]
    cache = Context(results_dir=tmp_path).results
    assert cache.prune(limit=sum(sizes)) == 0  # under the limit: nothing goes
    assert cache.prune(limit=sum(sizes[2:])) == 2  # the two oldest go, the newest stay
    assert sorted(tmp_path.glob("*.json")) == files[2:]
    again = _cached_grid(tmp_path)  # a removed result is only computed again
    assert again.attrs["computed"] == 2
    cols = ["spec", "run", "accuracy", "gap"]
    pd.testing.assert_frame_equal(first[cols], again[cols])
    (tmp_path / "x").mkdir()
    ctx = Context(workers=1, results_dir=tmp_path / "x", trace_points=0)
    # the writer prunes as it goes: room for one result but not two (the files differ by a few bytes)
    ctx.results.prune_every, ctx.results.folder_bytes = 1, max(sizes) + min(sizes) // 2
    run_grid(_SMALL, ctx)
    assert len(list((tmp_path / "x").glob("*.json"))) == 1


def test_paper_figures_draw_what_guessing_scores_in_every_accuracy_panel():
    """The shipped 004-fig1 table (written before the column existed) still gets, in each of its
    five accuracy panels, a dashed line at the panel's dataset's majority-class accuracy, and
    none in the gap panels; the legend names it once."""
    from pathlib import Path

    from dpcore.datasets import load
    from dpcore.experiments.presets import PRESETS

    preset = PRESETS["004-fig1"]
    df = pd.read_csv(Path(__file__).resolve().parent.parent / "data" / "results" / "004-fig1.csv")
    assert "accuracy_guess" not in df.columns
    fig = preset.figure(df)
    lines = [t for t in fig.data if t.name == "guessing (always the majority class)"]
    assert len(lines) == len(preset.datasets)
    for t, ds in zip(lines, preset.datasets):
        assert list(t.y) == pytest.approx([load(ds).guessing] * len(t.y)) and t.line.dash == "dash"
        assert t.yaxis in ("y", "y2", "y3", "y4", "y5")  # the first row: accuracy, not the gap row
    assert sum(bool(t.showlegend) for t in lines) == 1


def test_a_bundle_larger_than_a_workers_share_is_split_only_where_no_number_changes():
    """With workers, a stack of more than an even share of the work is halved (Compare's tuned
    DP-GD on Adult was a third of the whole, on one worker) when its runs are computed apart:
    a gradient mechanism on a linear model with sparse data.  Dense data and the MLP keep their
    stacks whole (their batched products change with the batch's size).  The split grid's
    numbers equal the one-worker grid's (which runs whole bundles), bit for bit."""
    from dpcore import datasets
    from dpcore.numerics import linalg

    def tasks(**kw):
        base = RunSpec(repeats=3, iterations=20, **kw)
        specs = [replace(base, mechanism="gradient-dpgd", epsilon=e) for e in (0.25, 0.5, 1.0, 2.0)]
        specs.append(replace(base, mechanism="output-gaussian", epsilon=1.0))
        return [sweep_mod.Task(config=c) for c in specs]

    assert linalg.is_sparse(datasets.load("adult", subsample=3000).X_train)
    sparse = tasks(dataset="adult", n=3000)
    assert [len(g) for g in sweep_mod.bundles(sparse)] == [4, 1]
    assert [len(g) for g in sweep_mod._for_workers(sparse, 2)] == [1, 1, 1, 1, 1]  # share: 300 / 3 steps
    for whole in (tasks(dataset="breast-cancer"), tasks(dataset="adult", n=3000, model="mlp")):
        assert [len(g) for g in sweep_mod._for_workers(whole, 2)] == [4, 1]
    specs = [t.config for t in sparse]
    one = run_grid(specs, Context(workers=1))
    two = run_grid(specs, Context(workers=2))
    for k in ("accuracy", "gap", "epsilon_certified", "sigma"):
        assert one[k].tolist() == two[k].tolist(), k


@pytest.mark.parametrize("preset_id", ["002-fig1", "002-fig2"])
def test_a_log_n_axis_over_decades_is_labelled_at_decades_only(preset_id):
    """002-fig1 and 002-fig2 (n from hundreds to tens of thousands, log axes) had Plotly label its
    minor ticks '2' and '5' between the decades, read as values of n: every log x axis spanning a
    decade or more now ticks at decades (dtick 1)."""
    from pages.common import load_shipped

    fig = load_shipped(preset_id)[1]
    if fig is None:
        pytest.skip(f"{preset_id} is not shipped")
    axes = [fig.layout[k] for k in fig.layout if k.startswith("xaxis") and fig.layout[k].type == "log"]
    assert axes
    wide = [a for a in axes if a.range is not None and a.range[1] - a.range[0] >= 1]
    assert wide and all(a.dtick == 1 for a in wide), [(a.range, a.dtick) for a in axes]
