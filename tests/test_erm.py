"""Exact non-private ERM against independent solvers."""

import json
import pickle

import numpy as np
import pytest
from scipy.optimize import minimize

from dpcore import datasets as D
from dpcore.erm import GRAD_TOL, ReferenceStore, solve_erm
from dpcore.jsonutil import MAX_CACHE_BYTES
from dpcore.exceptions import ModelError
from dpcore.models import LinReg, LogReg, MLP


@pytest.mark.parametrize("dataset_id", ["adult", "breast-cancer", "credit-card", "iris"])
def test_logreg_matches_sklearn(dataset_id):
    from sklearn.linear_model import LogisticRegression

    ds = D.load(dataset_id)
    lam = 1e-3
    sol = solve_erm(LogReg(lam=lam), ds.X_train, ds.y_train)
    assert sol.grad_norm <= GRAD_TOL
    # sklearn: C Σ log-loss + ½‖w‖² ⇔ mean log-loss + (λ/2)‖w‖² with C = 1/(nλ); bias is a feature.
    clf = LogisticRegression(C=1.0 / (ds.n * lam), fit_intercept=False, tol=1e-14, max_iter=10_000,
                             solver="lbfgs")
    clf.fit(ds.X_train, ds.y_train)
    theta_sk = clf.coef_[0]
    loss_sk = LogReg(lam=lam).loss(theta_sk[None], ds.X_train, ds.y_train)[0]
    assert abs(sol.loss - loss_sk) <= 1e-8 * abs(sol.loss)
    assert sol.loss <= loss_sk + 1e-15


def test_logreg_matches_scipy_lbfgs():
    ds = D.load("breast-cancer")
    m = LogReg(lam=1e-2)
    sol = solve_erm(m, ds.X_train, ds.y_train)
    res = minimize(lambda t: m.loss(t[None], ds.X_train, ds.y_train)[0], np.zeros(ds.d),
                   jac=lambda t: m.grad(t[None], ds.X_train, ds.y_train)[0], method="L-BFGS-B",
                   options={"gtol": 1e-12, "ftol": 1e-16, "maxiter": 10_000})
    assert abs(sol.loss - res.fun) <= 1e-8 * res.fun
    np.testing.assert_allclose(sol.theta, res.x, atol=1e-5)


@pytest.mark.parametrize("radius", [0.3, 50.0])
def test_linreg_ball_constrained_optimum(radius):
    ds = D.load("synthetic-regression", n=2000, d=6, noise=0.2)
    m = LinReg(radius=radius)
    sol = solve_erm(m, ds.X_train, ds.y_train)
    assert sol.grad_norm <= GRAD_TOL
    assert np.linalg.norm(sol.theta) <= radius * (1 + 1e-12)
    cons = {"type": "ineq", "fun": lambda t: radius**2 - t @ t}
    res = minimize(lambda t: m.loss(t[None], ds.X_train, ds.y_train)[0], np.zeros(ds.d),
                   jac=lambda t: m.grad(t[None], ds.X_train, ds.y_train)[0], method="SLSQP",
                   constraints=[cons], options={"ftol": 1e-15, "maxiter": 1000})
    assert sol.loss <= res.fun + 1e-12
    assert abs(sol.loss - res.fun) <= 1e-7 * res.fun


@pytest.mark.parametrize("column", ["constant", "repeated", "zero"])
def test_linreg_ball_with_a_singular_gram_matrix(column):
    """A constant column (standardised to zeros) or a repeated one makes XᵀX singular with b in its
    range: the minimiser lies inside the ball and the secular equation has no root (brentq had "f(a)
    and f(b) must have different signs" on a regression CSV, issue 55).  The solve is the interior
    one, an optimum (gradient zero), and agrees with an independent solver."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 3))
    X = np.hstack([X, {"constant": np.zeros((300, 1)), "repeated": X[:, :1], "zero": np.zeros((300, 1))}[column]])
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.clip(X @ [0.3, -0.2, 0.1, 0.0] + 0.05 * rng.normal(size=300), -1, 1)
    if column == "zero":
        y = np.zeros(300)  # b = 0: the minimiser is 0
    m = LinReg(lam=0.0, radius=1.0)
    sol = solve_erm(m, X, y)
    assert sol.grad_norm <= GRAD_TOL and np.linalg.norm(sol.theta) <= 1.0
    cons = {"type": "ineq", "fun": lambda t: 1.0 - t @ t}
    res = minimize(lambda t: m.loss(t[None], X, y)[0], np.zeros(4), jac=lambda t: m.grad(t[None], X, y)[0],
                   method="SLSQP", constraints=[cons], options={"ftol": 1e-15, "maxiter": 1000})
    assert sol.loss <= res.fun + 1e-12


def test_mlp_local_optimum_is_documented():
    ds = D.load("iris")
    sol = solve_erm(MLP(lam=1e-3), ds.X_train, ds.y_train)
    assert not sol.certified_optimum and "local optimum" in sol.method
    start = MLP(lam=1e-3).init(1, ds.d, [np.random.default_rng([0, 0])])
    assert sol.loss < MLP(lam=1e-3).loss(start, ds.X_train, ds.y_train)[0]


def test_logreg_without_regularisation_is_refused():
    ds = D.load("iris")
    with pytest.raises(ModelError, match="λ > 0"):
        solve_erm(LogReg(lam=0.0), ds.X_train, ds.y_train)


def test_exact_solution_is_cached():
    ds = D.load("breast-cancer")
    store = ReferenceStore()
    assert store.exact(ds, LogReg()) is store.exact(ds, LogReg())
    assert store.holds(ds, LogReg()) and not ReferenceStore().holds(ds, LogReg())


def test_exact_solution_disk_cache_round_trips_exactly(tmp_path):
    from dpcore import erm
    from dpcore.datasets import load
    from dpcore.models import make_model

    ds, model = load("iris"), make_model("logreg")
    store = erm.ReferenceStore(tmp_path)
    first = store.exact(ds, model)
    files = list(tmp_path.glob("erm-*.json"))
    assert len(files) == 1
    store.clear()
    again = store.exact(ds, model)  # read back from disk
    assert again is not first
    np.testing.assert_array_equal(again.theta, first.theta)
    assert again.loss == first.loss and again.method == first.method
    assert pickle.loads(pickle.dumps(store)).holds(ds, model)  # a worker's copy sees the folder
    files[0].write_text("{torn")  # a damaged file is solved again, not trusted
    store.clear()
    assert store.exact(ds, model).loss == first.loss


def test_a_slow_reference_is_announced_until_it_is_held(tmp_path, monkeypatch):
    """The MLP's multi-start L-BFGS on large data takes minutes: the app says so, once."""
    from dpcore.experiments import run as experiment
    from dpcore.experiments.context import Context
    from dpcore.experiments.run import RunSpec, slow_reference

    assert slow_reference(RunSpec(dataset="adult")) is None  # logreg: Newton, fast
    assert "MLP's reference optimum" in slow_reference(RunSpec(dataset="adult", model="mlp"))
    assert slow_reference(RunSpec(dataset="nope", model="mlp")) is None  # the run will say why
    monkeypatch.setattr(experiment, "SLOW_REFERENCE_ROWS", 100)
    cfg = RunSpec(dataset="breast-cancer", model="mlp", lam=2e-3)
    ctx = Context(erm_dir=tmp_path)
    assert "n = 546" in slow_reference(cfg, ctx)
    experiment.load_problem(cfg, ctx=ctx)
    assert slow_reference(cfg, ctx) is None  # held in memory
    ctx.store.clear()
    assert slow_reference(cfg, ctx) is None  # and on disk, for the next process
    for f in tmp_path.glob("erm-*.json"):
        f.unlink()
    assert slow_reference(cfg, ctx) is not None


def test_runs_without_a_context_share_the_process_default():
    """A script's loop over run(spec) solves each exact reference once (the MLP's takes minutes)."""
    from dpcore.experiments.context import Context, default_context
    from dpcore.experiments.run import RunSpec, problem_data, run

    spec = RunSpec(dataset="iris", mechanism="output-gaussian", lam=3e-3)
    run(spec)
    assert default_context().store.holds(*problem_data(spec))
    assert default_context() is default_context()
    assert not Context().store.holds(*problem_data(spec))  # an explicit context has its own


def test_a_context_with_a_folder_keeps_sampled_calibrations_there(tmp_path):
    """DP-SGD's noise multiplier is read back from the context's folder by the next process,
    and the run is the same number for number (the table only saves the calibration)."""
    from dpcore.experiments.context import Context
    from dpcore.experiments.run import RunSpec, run

    spec = RunSpec(dataset="iris", mechanism="gradient-dpsgd", epsilon=0.7, iterations=20, repeats=2)
    plain = run(spec, ctx=Context())
    first = run(spec, ctx=Context(erm_dir=tmp_path))
    files = list(tmp_path.glob("calibration-*.json"))
    assert len(files) == 1
    assert json.loads(files[0].read_text())["noise_multiplier"] == first.extras["noise_multiplier"]
    again = run(spec, ctx=Context(erm_dir=tmp_path))
    for r in (first, again):
        assert r.sigma == plain.sigma and r.epsilon_certified == plain.epsilon_certified
        assert np.array_equal(r.accuracy, plain.accuracy) and np.array_equal(r.gap, plain.gap)


def test_a_run_reports_its_steps_and_the_reference_solve_without_changing_a_number():
    """Context.progress hears a single run's optimisation steps (at most ~100 reports, the
    last one complete) and an MLP reference's L-BFGS iterations; a grid hears whole tasks."""
    from dpcore.experiments.context import Context
    from dpcore.experiments.grid import run_grid
    from dpcore.experiments.run import RunSpec, run

    heard = []
    ctx = Context(progress=lambda done, total, label: heard.append((done, total, label)))
    for mechanism, T in (("gradient-dpgd", 500), ("gradient-dpsgd", 60), ("distributed-wddp", 40)):
        heard.clear()
        clients = 3 if mechanism.startswith("distributed") else 1
        spec = RunSpec(dataset="iris", mechanism=mechanism, iterations=T, repeats=2,
                       clients=clients if clients > 1 else None)
        got = run(spec, ctx=ctx)
        assert heard[-1][:2] == (clients * T, clients * T)
        assert [d for d, _, _ in heard] == sorted(d for d, _, _ in heard)
        assert len(heard) <= 101 * clients
        quiet = run(spec, ctx=Context())
        assert np.array_equal(got.gap, quiet.gap) and got.sigma == quiet.sigma

    heard.clear()
    run(RunSpec(dataset="iris", model="mlp", mechanism="gradient-dpgd", iterations=5, lam=2e-3), ctx=ctx)
    solve = [h for h in heard if h[2].startswith("exact reference")]
    assert solve and solve[-1][1] == 900 and solve[-1][0] <= 900  # 3 restarts × 300 iterations at most
    assert heard[-1] == (5, 5, "training")

    heard.clear()
    specs = [RunSpec(dataset="iris", mechanism="gradient-dpgd", epsilon=e, iterations=300) for e in (0.5, 1.0)]
    run_grid(specs, ctx)
    assert [(d, t) for d, t, _ in heard] == [(1, 2), (2, 2)]


@pytest.mark.parametrize("kind", ["fifo", "device", "huge", "deep", "not an optimum", "wrong shape"])
def test_a_stored_solution_that_is_not_ours_is_solved_again(kind, tmp_path, caplog):
    import cachefiles  # tests/cachefiles.py
    from dpcore import erm
    ds, model = D.load("iris"), LogReg()
    store = erm.ReferenceStore(tmp_path)
    first = store.exact(ds, model)
    (path,) = tmp_path.glob("erm-*.json")
    rec = json.loads(path.read_text())
    if kind in cachefiles.SPECIAL:
        cachefiles.spoil(path, kind, MAX_CACHE_BYTES)
    elif kind == "not an optimum":  # a consistent record of a point that is not the minimiser,
        theta = np.array(rec["theta"]) * 0.5  # claiming a large gradient norm of its own
        loss = float(model.loss(theta[None], ds.X_train, ds.y_train)[0])
        rec.update(theta=theta.tolist(), loss=loss, grad_norm=10.0)
        path.write_text(json.dumps(rec))
    elif kind == "wrong shape":
        rec["theta"] = {"a": [1, 2]}
        path.write_text(json.dumps(rec))
    store.clear()
    with caplog.at_level("WARNING", logger="dpcore.erm"):
        again = store.exact(ds, model)  # returns: no hang, no exhausted memory, no traceback
    assert again.loss == first.loss  # solved again: the stored point was not trusted
    np.testing.assert_array_equal(again.theta, first.theta)
    assert any("discarding" in r.getMessage() for r in caplog.records)


def test_a_stored_local_optimum_of_the_mlp_is_read_back_and_a_moved_one_is_not(tmp_path, monkeypatch, caplog):
    """The MLP's reference (a local optimum, gradient norm 1e-8 to 2.5e-4 on the bundled data)
    is read back by a new process instead of solved again (on Adult: 70 s at every start of the
    app or the command line, when only an optimum's 1e-6 was accepted); a point that is not a
    local optimum, its record consistent and stating its own gradient, is still solved again."""
    from dpcore import erm
    from dpcore.models import MLP

    ds, model = D.load("credit-card"), MLP(lam=1e-3)
    first = erm.ReferenceStore(tmp_path).exact(ds, model)
    assert erm.STORED_GRAD_TOL < first.grad_norm <= erm.LOCAL_GRAD_TOL  # what an optimum's tolerance refused
    (path,) = tmp_path.glob("erm-*.json")

    def no_solve(*a, **k):
        raise AssertionError("solved again")

    with monkeypatch.context() as m:
        m.setattr(erm, "solve_erm", no_solve)
        again = erm.ReferenceStore(tmp_path).exact(ds, model)  # a new process: memory empty
    np.testing.assert_array_equal(again.theta, first.theta)
    assert again.loss == pytest.approx(first.loss, rel=1e-12)

    rec = json.loads(path.read_text())
    theta = np.array(rec["theta"]) * 0.5
    value, grad = model.loss_and_grad(theta[None], ds.X_train, ds.y_train)
    assert np.linalg.norm(grad) > erm.LOCAL_GRAD_TOL
    rec.update(theta=theta.tolist(), loss=float(value[0]), grad_norm=float(np.linalg.norm(grad)))
    path.write_text(json.dumps(rec))
    with caplog.at_level("WARNING", logger="dpcore.erm"):
        solved = erm.ReferenceStore(tmp_path).exact(ds, model)
    np.testing.assert_array_equal(solved.theta, first.theta)
    assert any("not an optimum" in r.getMessage() for r in caplog.records)


def test_cache_folders_are_kept_under_their_size_bounds(tmp_path):
    """Exact solutions and calibrations share a folder; each kind is pruned to its own bound,
    oldest first, by the writes of this process, and never touches the other kind's files."""
    import os

    from dpcore.cache import DiskCache
    from dpcore.jsonutil import prune_folder

    for k in range(6):
        for kind in ("erm", "calibration"):
            f = tmp_path / f"{kind}-{k}.json"
            f.write_text("x" * 1000)
            os.utime(f, (1_000_000 + k, 1_000_000 + k))
    (tmp_path / "notes.txt").write_text("y" * 10_000)  # not a cache file: never counted, never removed
    assert prune_folder(tmp_path, 3000, "erm-") == 3
    assert sorted(p.name for p in tmp_path.glob("erm-*")) == ["erm-3.json", "erm-4.json", "erm-5.json"]
    assert len(list(tmp_path.glob("calibration-*"))) == 6 and (tmp_path / "notes.txt").exists()
    cache = DiskCache(tmp_path, prefix="calibration-", folder_bytes=2100, prune_every=3)
    for k in (6, 7):  # two writes: nothing pruned yet
        cache.write(str(k), "x" * 998)
        os.utime(tmp_path / f"calibration-{k}.json", (2_000_000 + k, 2_000_000 + k))
    assert len(list(tmp_path.glob("calibration-*"))) == 8
    cache.write("8", "x" * 998)  # the third prunes, the oldest first
    assert sorted(p.name for p in tmp_path.glob("calibration-*")) == ["calibration-7.json", "calibration-8.json"]
    assert prune_folder(tmp_path / "missing", 0) == 0


def test_the_stores_prune_as_they_write(tmp_path, monkeypatch):
    """With a bound of 0 bytes checked at every write, what each store writes is pruned at once:
    the exact-solution store and the calibration table both go through their bounds."""
    from dpcore import datasets, erm
    from dpcore.privacy import accounting
    from dpcore.models import make_model

    store = erm.ReferenceStore(tmp_path)
    assert store.disk.folder_bytes == erm.ERM_FOLDER_BYTES == 256 * 2**20  # the real bounds are finite
    assert store.calibrations.disk.folder_bytes == accounting.TABLE_FOLDER_BYTES == 16 * 2**20
    for disk in (store.disk, store.calibrations.disk):
        disk.folder_bytes, disk.prune_every = 0, 1
    store.exact(datasets.load("iris"), make_model("logreg", lam=1e-3))
    store.calibrations.sampled_gaussian(1.0, 1e-5, 0.25, 7)
    assert list(tmp_path.glob("*.json")) == []


def test_a_shipped_reference_is_read_checked_and_never_trusted_blindly(tmp_path, monkeypatch, caplog):
    """A store with no folder of its own (a script, a new machine) reads the exact solution shipped
    in data/references instead of solving; the file is checked like any stored one, so a shipped
    point that is not an optimum, or a damaged file, is solved again."""
    from dpcore import erm
    from dpcore import shipped as shipped_files
    from dpcore.experiments.studies import ship_references

    ds, model = D.load("iris"), MLP(lam=2e-3)
    shipped = tmp_path / "references"  # a data folder of the test's own: tmp_path
    monkeypatch.setattr("dpcore.experiments.studies.SHIPPED_REFERENCE_PAIRS", (("iris", "mlp"),))
    monkeypatch.setattr("dpcore.experiments.studies.SHIPPED_REFERENCE_GRIDS", ())
    shipped.mkdir()
    (shipped / "erm-of-an-older-code.json").write_text("{}")
    monkeypatch.setattr("dpcore.experiments.studies.problem_data",
                        lambda spec, dataset=None: (ds, model))  # the pair at this test's λ
    done = ship_references(folder=shipped)
    (path,) = shipped.glob("erm-*.json")  # the older code's file is gone
    assert path == ReferenceStore(data_dir=tmp_path).shipped_path(ds, model) and "iris (mlp, λ = 0.002)" in done[0]["what"]
    first = json.loads(path.read_text())

    def no_solve(*a, **k):
        raise AssertionError("solved again")

    with monkeypatch.context() as m:
        m.setattr(erm, "solve_erm", no_solve)
        store = ReferenceStore(data_dir=tmp_path)  # no folder of its own
        assert store.holds(ds, model)
        got = store.exact(ds, model)
    np.testing.assert_array_equal(got.theta, np.array(first["theta"]))
    # a shipped point that is not a local optimum (its record consistent) is solved again
    theta = np.array(first["theta"]) * 0.5
    value, grad = model.loss_and_grad(theta[None], ds.X_train, ds.y_train)
    path.write_text(json.dumps({**first, "theta": theta.tolist(), "loss": float(value[0]),
                                "grad_norm": float(np.linalg.norm(grad))}))
    with caplog.at_level("WARNING", logger="dpcore.erm"):  # edited, not listed: the manifest refuses it
        solved = ReferenceStore(data_dir=tmp_path).exact(ds, model)
    np.testing.assert_array_equal(solved.theta, np.array(first["theta"]))
    assert any("not the file that was shipped" in r.getMessage() for r in caplog.records)
    caplog.clear()
    shipped_files.record([path], tmp_path)  # listed as a maintainer's edit would be: its own check refuses it
    with caplog.at_level("WARNING", logger="dpcore.erm"):
        solved = ReferenceStore(data_dir=tmp_path).exact(ds, model)
    np.testing.assert_array_equal(solved.theta, np.array(first["theta"]))
    assert any("not an optimum" in r.getMessage() for r in caplog.records)
    path.write_text("{torn")
    assert ReferenceStore(data_dir=tmp_path).exact(ds, model).loss == pytest.approx(first["loss"], rel=1e-12)
    assert not ReferenceStore(data_dir=tmp_path).holds(ds, MLP(lam=3e-3))  # another λ ships nothing


def test_the_shipped_references_are_this_codes_and_read_without_a_solve(monkeypatch):
    """data/references holds the exact solution of every slow pair the app opens first (the MLP's on
    Adult) and of Adult's logistic regression at every λ Compare's tuned settings use, under the key
    this code computes (the solver's and the models' source are in it): a change to either fails this
    until `python -m dpcore prepare --ship` ships them again.  Read by a fresh store, checked, never
    solved."""
    from dpcore import erm
    from dpcore.experiments.baselines import LAMBDA_GRID
    from dpcore.experiments.run import problem_data
    from dpcore.experiments.studies import SHIPPED_REFERENCE_GRIDS, SHIPPED_REFERENCE_PAIRS, shipped_reference_specs
    from dpcore.experiments.tune import shipped_tuning
    from dpcore.shipped import folder_of

    def no_solve(*a, **k):
        raise AssertionError("solved: the shipped reference is missing or stale; run `python -m dpcore "
                             "prepare --ship`")

    assert SHIPPED_REFERENCE_PAIRS == (("adult", "mlp"),) and SHIPPED_REFERENCE_GRIDS == (("adult", "logreg"),)
    specs = shipped_reference_specs()
    assert len(specs) == 1 + len(LAMBDA_GRID)
    tuned = {row["setting"]["lam"] for row in shipped_tuning("adult", "logreg")["rows"]
             if isinstance(row.get("setting"), dict) and "lam" in row["setting"]}
    assert tuned and tuned <= {s.lam for s in specs}  # every λ the tuned settings run is shipped
    monkeypatch.setattr(erm, "solve_erm", no_solve)
    for spec in specs:
        data, m = problem_data(spec)
        assert ReferenceStore().shipped_path(data, m).exists(), "run `python -m dpcore prepare --ship`"
        sol = ReferenceStore().exact(data, m)
        assert sol.grad_norm <= erm.stored_grad_tol(m)
    assert sorted(p.name for p in folder_of("references").glob("erm-*.json")) == sorted(
        ReferenceStore().shipped_path(*problem_data(spec)).name for spec in specs)


def test_a_shipped_calibration_is_re_certified_on_reading_and_never_trusted_blindly(tmp_path, monkeypatch, caplog):
    """A store with no folder of its own reads a sampled Gaussian's noise multiplier shipped in the data
    folder's calibrations/ instead of searching for it, after certifying the event at it (and at 1 % less
    noise, which must not certify); an edited file, or a listed one whose multiplier under-noises, is
    calibrated again.  The table travels to worker processes with its shipped folder."""
    import pickle

    from dpcore import shipped as shipped_files
    from dpcore.privacy import accounting

    event = (1.0, 1e-5, 0.02, 10)  # ε, δ, q, T: a calibration of a few PLD constructions
    folder = tmp_path / "calibrations"
    z = accounting.CalibrationTable(folder).sampled_gaussian(*event)  # written there, as ship_calibrations does
    (path,) = folder.glob("calibration-*.json")
    shipped_files.record([path], tmp_path)
    calls = []
    real = accounting.calibrate_sampled_gaussian
    monkeypatch.setattr(accounting, "calibrate_sampled_gaussian", lambda *a: calls.append(a) or real(*a))
    store = ReferenceStore(data_dir=tmp_path)  # no folder of its own: the shipped file or a search
    assert store.calibrations.sampled_gaussian(*event) == z and calls == []
    assert pickle.loads(pickle.dumps(store)).calibrations.sampled_gaussian(*event) == z and calls == []
    record = json.loads(path.read_text())
    path.write_text(json.dumps({**record, "noise_multiplier": z * 0.9}))  # edited, not listed: refused by the manifest
    with caplog.at_level("WARNING"):
        assert ReferenceStore(data_dir=tmp_path).calibrations.sampled_gaussian(*event) == z
    assert len(calls) == 1 and any("not the file that was shipped" in r.getMessage() for r in caplog.records)
    shipped_files.record([path], tmp_path)  # listed as a maintainer's edit would be: the certificate refuses it
    caplog.clear()
    with caplog.at_level("WARNING"):
        assert ReferenceStore(data_dir=tmp_path).calibrations.sampled_gaussian(*event) == z
    assert len(calls) == 2 and any("certifies" in r.getMessage() for r in caplog.records)
    path.write_text(json.dumps({**record, "noise_multiplier": z * 1.5}))  # too much noise: refused as well
    shipped_files.record([path], tmp_path)
    assert ReferenceStore(data_dir=tmp_path).calibrations.sampled_gaussian(*event) == z and len(calls) == 3


def _shipped_calibrations_asked(monkeypatch, *, whole: bool) -> set[str]:
    """The calibration keys a fresh store asks for, with every PLD search refused (the shipped file must
    answer): every configuration of Compare's classroom preset, tuned (as the view opens) and untuned,
    and the shipped tunings' rows; then, as a reader calls them (the default context's table), the
    tunings' searches' spent figures (``whole``: every search of every tuning, and every paper figure's
    shipped results; otherwise one DP-SGD search, the cheap twin)."""
    from dpcore.privacy import accounting
    from dpcore.experiments import search as certify_tuning
    from dpcore.exceptions import DPCoreError
    from dpcore.experiments import tune
    from dpcore.experiments.context import Context, default_context
    from dpcore.experiments.presets import PRESETS, shipped_results
    from dpcore.experiments.run import noise_plan
    from dpcore.experiments.studies import CLASSROOM_COMPARE, _sweep_plan, compare_base
    from dpcore.shipped import folder_of, read_json

    def no_search(*a):
        raise AssertionError(f"calibrated {a}: the shipped calibration is missing or stale; run "
                             "`python -m dpcore prepare --ship`")

    monkeypatch.setattr(accounting, "calibrate_sampled_gaussian", no_search)
    tune._read_tuned.cache_clear()  # memos of pure functions, cleared so that the tunings are read here
    tune._certified_for.cache_clear()
    certify_tuning._searched.cache_clear()
    c = CLASSROOM_COMPARE
    base = compare_base(c["dataset"], c["model"], delta=c["delta"], iterations=c["iterations"],
                        repeats=c["repeats"], calibration=c["calibration"], lam=c["lam"])
    ctx = Context()
    planned = 0
    for tuned in (True, False):
        for spec in _sweep_plan(base, c["mechanisms"], c["epsilons"], None, None, tuned)[1]:
            try:
                noise_plan(spec, ctx)
                planned += 1
            except DPCoreError:
                pass
    for path in sorted(folder_of("tuned").glob("*.json")):  # read and checked by a fresh context's store
        doc = tune.shipped_tuning(*path.stem.rsplit("-", 1))
        for row in doc["rows"] + doc.get("released_rows", []):  # the same plans, in this test's table
            if "error" not in row:
                noise_plan(tune.tuned_spec(doc, row), ctx)
    asked = set(ctx.store.calibrations.asked)
    assert planned > 100 and len(asked) >= 16  # DP-SGD's and Bassily et al.'s at every ε, at least
    table = default_context().store.calibrations
    table.asked.clear()  # what earlier tests in this process asked of it is not this read's
    before = len(asked)
    for path in sorted(folder_of("tuned").glob("*.json")):
        dataset, model = path.stem.rsplit("-", 1)
        doc = read_json(f"tuned/{path.name}")
        sgd = [(r["mechanism"], r["epsilon"]) for r in doc.get("rows", []) if r["mechanism"] == "gradient-dpsgd"]
        if whole or sgd:
            certify_tuning.check_tuning_spent(doc, dataset, model, only=None if whole else sgd[:1])
    if whole:
        for preset in PRESETS:
            shipped_results(preset)
    asked |= table.asked
    assert len(asked) > before + (50 if whole else 0)  # the searches' candidates: DP-SGD's grid at each ε
    return asked


def test_the_shipped_calibrations_answer_compares_classroom_preset_and_a_tunings_search(monkeypatch):
    """data/calibrations holds the noise multiplier of every sampled Gaussian of Compare's classroom
    preset and of the shipped tunings' rows, and of a tuning's search's candidates (whose ε spent a
    reader recomputes), under the key this code computes (the accountant's source is in it): a fresh
    store plans them without one PLD search.  The cheap twin of the next test (which also says the
    folder holds nothing else).  A change to the accountant fails this until
    `python -m dpcore prepare --ship`."""
    from dpcore.shipped import folder_of

    shipped_names = {p.name for p in folder_of("calibrations").glob("calibration-*.json")}
    assert {f"calibration-{key}.json" for key in _shipped_calibrations_asked(monkeypatch, whole=False)} <= shipped_names


@pytest.mark.slow
def test_the_shipped_calibrations_are_what_readers_ask_and_nothing_else(monkeypatch):
    """The same for every search of every shipped tuning and every paper figure's shipped results (whose
    certificates a reader recomputes): data/calibrations holds exactly the calibrations a reader of
    all of them asks for (about 50 s)."""
    from dpcore.shipped import folder_of

    assert sorted(p.name for p in folder_of("calibrations").glob("calibration-*.json")) == sorted(
        f"calibration-{key}.json" for key in _shipped_calibrations_asked(monkeypatch, whole=True))


def test_the_mlp_reference_takes_no_more_evaluations_than_its_budget_counts(monkeypatch):
    """The work budget prices the MLP's exact reference as restarts × iterations ×
    ``LBFGS_EVALS_PER_ITERATION`` passes over the data: L-BFGS's real count of objective-and-gradient
    evaluations, on a bundled dataset, stays within it (counted, not timed)."""
    from dpcore import erm
    from dpcore.experiments.run import RunSpec, problem_data

    data, model = problem_data(RunSpec(dataset="credit-card", model="mlp"))
    calls = []
    real = type(model).loss_and_grad
    monkeypatch.setattr(type(model), "loss_and_grad", lambda self, *a, **k: calls.append(1) or real(self, *a, **k))
    erm.solve_erm(model, data.X_train, data.y_train)
    evaluations = len(calls)  # every pass over the data the solve made
    assert 0 < evaluations <= erm.reference_passes(model)
    assert erm.reference_passes(LogReg(lam=1e-3)) == 0  # a few Newton products, not counted


def test_an_unsolved_mlp_reference_is_counted_in_the_work_budget_before_it_starts(tmp_path, monkeypatch):
    """Issue 43: an MLP whose exact reference was not shipped (Bank) sat silent for minutes, outside
    the work budget that counts training steps.  Now the reference's passes are counted before it
    starts: a budget that admits the training alone refuses the solve (one line that names it, and
    no solve begins), the same budget admits the run once the reference is held, and the app's
    notice gives the time the estimate implies (not a fixed 'a few minutes')."""
    from dpcore import erm
    from dpcore.exceptions import BudgetError
    from dpcore.experiments import run as experiment
    from dpcore.experiments.context import Budget, Context
    from dpcore.experiments.run import RunSpec, problem_data, reference_estimate, run, work_estimate
    from dpcore.mechanisms import get_mechanism

    spec = RunSpec(dataset="breast-cancer", model="mlp", mechanism="gradient-dpgd", iterations=3, repeats=1)
    data, model = problem_data(spec)
    training = work_estimate(spec, data, model, get_mechanism(spec.mechanism))
    solve = reference_estimate(data, model)
    assert solve == pytest.approx(erm.reference_passes(model) * (data.n * model.n_params(data.d) * model.work_weight + 3000))
    budget = Budget(work=solve + training / 2)  # either fits alone, not both
    solves = []
    monkeypatch.setattr(experiment, "solve_erm", lambda *a, **k: solves.append(1))
    ctx = Context(erm_dir=tmp_path, budget=budget, trace_points=0)
    with pytest.raises(BudgetError, match="with .* for the exact reference L"):
        run(spec, ctx=ctx)
    small = Context(erm_dir=tmp_path, budget=Budget(work=solve / 2), trace_points=0)
    with pytest.raises(BudgetError, match="exact reference L\\* behind the gap .* alone"):
        run(spec, ctx=small)
    assert not solves and not list(tmp_path.glob("erm-*.json"))
    monkeypatch.undo()
    Context(erm_dir=tmp_path, trace_points=0).store.exact(data, model)  # solved once, under the default budget
    assert run(spec, ctx=Context(erm_dir=tmp_path, budget=budget, trace_points=0)).gap is not None
    monkeypatch.setattr(experiment, "SLOW_REFERENCE_ROWS", 100)
    seconds = solve * experiment.SECONDS_PER_OPERATION
    assert f"up to about {seconds:.0f} s" in experiment.slow_reference(spec, Context(erm_dir=tmp_path / "new"))


def test_a_store_whose_folder_the_system_cannot_name_holds_nothing(tmp_path):
    """The work budget asks the store whether an MLP's reference is held before every run; a cache
    folder whose name is too long must answer 'no' (and the run go on), not end the command with an
    OSError (as `run --model mlp` under a 300-character DPCORE_CACHE_DIR did for a moment)."""
    from dpcore.experiments.run import RunSpec, problem_data

    data, model = problem_data(RunSpec(dataset="iris", model="mlp"))
    store = ReferenceStore(tmp_path / ("x" * 300))
    assert store.holds(data, model) is False
