"""scikit-learn estimators on top of the mechanism registry.

:class:`DPLogisticRegression` and :class:`DPLinearRegression` train one run of
any registered mechanism on the user's ``X, y`` and keep scikit-learn's
contract: ``__init__`` only stores its arguments, parameters are validated in
``fit`` through :class:`dpcore.experiments.run.RunSpec` (so the messages are the
command line's), learned attributes end in ``_`` and ``fit`` returns ``self``.

What ``fit`` does to the data, in order:

1. appends a constant-1 column when ``fit_intercept`` (the datasets' bias
   feature);
2. with ``normalize="row"``, divides every row with ``‖x‖₂ > 1`` (bias
   included) by its norm, so ``‖x‖₂ ≤ 1`` as the privacy proofs assume.  The
   map uses that row only, so it is applied record by record, spends no
   privacy, and ``predict`` applies the same map to new rows;
3. (regression) clips targets to ``[−1, 1]``, the range the sensitivity
   bounds of ``linreg`` assume — again record by record.

Feature scaling fitted on the private data (a ``StandardScaler``, say) is
*not* covered by the guarantee; scale with public bounds instead.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted

from .numerics import linalg
from .datasets import Dataset
from .erm import LazySolution
from .exceptions import DatasetError, DPCoreError, ParameterError, PrivacyWarning
from .experiments.run import RunSpec, delta_warning
from .mechanisms import Problem, get_mechanism
from .models import make_model
from .optim import BatchRNG
from .params import Options

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data as _sk_validate_data
except ImportError:  # pragma: no cover - scikit-learn < 1.6
    _sk_validate_data = None

__all__ = ["DPLogisticRegression", "DPLinearRegression", "EXPECTED_FAILED_CHECKS",
           "expected_failed_checks"]

_NORMALIZE = Options(("row", None))
_SEED_MAX = 2**32 - 1

# Checks of scikit-learn's common suite that a DP estimator fails by design,
# with the reason; passed to ``parametrize_with_checks(expected_failed_checks=...)``.
# Currently none: binary-only (classifier) and poor scores (regressor) are
# declared as tags instead (``multi_class=False``, ``poor_score=True``), which
# skip exactly the multiclass fits and the score thresholds, not whole checks.
EXPECTED_FAILED_CHECKS: dict[str, dict[str, str]] = {
    "DPLogisticRegression": {},
    "DPLinearRegression": {},
}


def expected_failed_checks(estimator) -> dict[str, str]:
    """``{check name: reason}`` for ``parametrize_with_checks`` (scikit-learn ≥ 1.6)."""
    return dict(EXPECTED_FAILED_CHECKS.get(type(estimator).__name__, {}))


def _validate_data(estimator, X, y="no_validation", *, reset: bool, **kw):
    """``sklearn.utils.validation.validate_data`` (≥ 1.6) or the older method."""
    _two_dimensional(X)
    if isinstance(X, np.matrix):  # scikit-learn refuses it with a TypeError: the same numbers as an array
        X = np.asarray(X)
    try:
        if _sk_validate_data is not None:
            return _sk_validate_data(estimator, X, y, reset=reset, **kw)
        return estimator._validate_data(X, y, reset=reset, **kw)  # pragma: no cover
    except DPCoreError:
        raise
    except ValueError as exc:  # NaN, no feature, no row …: scikit-learn's words, in one line (issue 67's campaign)
        raise DatasetError(" ".join(str(exc).split())) from None


def _two_dimensional(X) -> None:
    """Refuse a 1-D ``X`` in one line (scikit-learn's own message prints the whole array)."""
    ndim = getattr(X, "ndim", None)
    if ndim is None:
        try:
            ndim = np.ndim(X)
        except Exception:  # ragged: scikit-learn says so
            return
    if ndim == 1:
        raise DatasetError(
            f"X is a 1-D array of shape {np.shape(X)}, but must be 2-D (one row per record, one column per "
            "feature): Reshape your data with X.reshape(-1, 1) for a single feature or X.reshape(1, -1) for a "
            "single record")


def _draw_seed(random_state, owner: str) -> tuple[int, int]:
    """(seed of the noise generator, 32-bit seed for ``RunSpec.seed``).

    ``None`` draws 128 bits of fresh OS entropy (``SeedSequence().entropy``):
    a fixed default (0) would let anyone regenerate and subtract the noise, and
    even 32 bits could be searched exhaustively.  The drawn seed is not stored.
    """
    if random_state is None:
        seed = int(np.random.SeedSequence().entropy)
    elif isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        seed = int(random_state)
        if not 0 <= seed <= _SEED_MAX:
            raise ParameterError(
                f"The 'random_state' parameter of {owner} must be an int in [0, {_SEED_MAX}], "
                f"a numpy RandomState or Generator, or None. Got {random_state!r} instead."
            )
        return seed, seed
    elif isinstance(random_state, np.random.RandomState):
        words = random_state.randint(0, 2**32, size=4, dtype=np.uint64)
        seed = sum(int(w) << (32 * k) for k, w in enumerate(words))
    elif isinstance(random_state, np.random.Generator):
        words = random_state.integers(0, 2**32, size=4, dtype=np.uint64)
        seed = sum(int(w) << (32 * k) for k, w in enumerate(words))
    else:
        raise ParameterError(
            f"The 'random_state' parameter of {owner} must be an int in [0, {_SEED_MAX}], "
            f"a numpy RandomState or Generator, or None. Got {random_state!r} instead."
        )
    return seed, seed & _SEED_MAX


def _row_norms(X: np.ndarray) -> np.ndarray:
    """‖x_i‖ of every row without an (n, d) temporary (Adult: 1.3 against 3–30 ms for np.linalg.norm)."""
    return np.sqrt(np.einsum("ij,ij->i", X, X))


def _onto_ball(X: np.ndarray, norms: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Every row with ‖x‖ > 1 scaled onto the unit sphere (fit and predict alike), the others left;
    ``out=X`` scales a private copy in place (a fit: one 30 MB allocation less on Adult)."""
    return np.divide(X, np.maximum(norms, 1.0)[:, None], out=out)


class _DPLinearModel(BaseEstimator):
    """Shared ``fit`` / transform of the two estimators; subclasses set the model."""

    _model_id = ""
    _task = ""

    # -- parameters ---------------------------------------------------------
    def _run_config(self, seed32: int) -> RunSpec:
        """The core's configuration; validates every numeric parameter (owner ``run``)."""
        return RunSpec(
            dataset="estimator", model=self._model_id, mechanism=self.mechanism,
            epsilon=self.epsilon, delta=self.delta, iterations=self.iterations, repeats=1,
            seed=seed32, calibration=self.calibration, c=self.c, lam=self.lam,
            learning_rate=self.learning_rate, batch_size=self.batch_size,
            sample_rate=self.sample_rate, clip_norm=self.clip_norm,
            radius=getattr(self, "radius", None),
        )

    def _check_params(self):
        """Every parameter, before the data: (config, mechanism, seed of the noise)."""
        owner = type(self).__name__
        if not _NORMALIZE.contains(self.normalize):
            raise ParameterError(
                f"The 'normalize' parameter of {owner} must be {_NORMALIZE.describe()}. "
                f"Got {self.normalize!r} instead."
            )
        if not isinstance(self.fit_intercept, (bool, np.bool_)):
            raise ParameterError(
                f"The 'fit_intercept' parameter of {owner} must be a bool. "
                f"Got {self.fit_intercept!r} instead."
            )
        seed, seed32 = _draw_seed(self.random_state, owner)
        config = self._run_config(seed32)
        return config, get_mechanism(config.mechanism), seed

    # -- data ---------------------------------------------------------------
    def _augment(self, X: np.ndarray) -> np.ndarray:
        """Bias column, then the per-row scaling onto the unit ball (fit and predict alike)."""
        X = np.asarray(X, dtype=np.float64)
        if self.fit_intercept:
            X = np.hstack([X, np.ones((X.shape[0], 1))])
        if self.normalize == "row":
            X = _onto_ball(X, _row_norms(X))
        return X

    def _training_rows(self, X: np.ndarray) -> np.ndarray:
        """:meth:`_augment` on a private copy, saying what it changed (or refusing)."""
        n = X.shape[0]
        raw = np.hstack([X, np.ones((n, 1))]) if self.fit_intercept else np.array(X, dtype=np.float64)
        norms = _row_norms(raw)
        where = " (intercept column included)" if self.fit_intercept else ""
        # rows already scaled onto the sphere may read 1 + 1 ulp: they need no warning
        outside = int(np.count_nonzero(norms > 1.0 + 1e-12))
        if self.normalize == "row":
            if outside:
                warnings.warn(
                    f"{outside} of {n} rows had ‖x‖ > 1{where} and were scaled onto the unit "
                    "ball, as the privacy proofs assume. The scaling is per row and "
                    "data-independent, so it spends no privacy; predict applies the same "
                    "scaling. Scale features with public bounds: statistics of the private data "
                    "(a fitted StandardScaler) are not covered.",
                    PrivacyWarning, stacklevel=4,
                )
            return _onto_ball(raw, norms, out=raw)
        if outside:
            raise DatasetError(
                f"a training row has norm {norms.max():.4g} > 1{where}: the sensitivity bounds "
                "assume ‖x‖ ≤ 1. Scale the rows with a public bound or use normalize='row'."
            )
        return raw

    def _fit_dp(self, X: np.ndarray, y_pm: np.ndarray, config, mechanism, seed: int) -> np.ndarray:
        """Build the problem on ``(X, y_pm)`` and run one private training; returns θ."""
        Xa = linalg.share(self._training_rows(X))  # read-only; a sparse twin when mostly zeros (one-hot)
        y_pm = np.array(y_pm, dtype=np.float64)
        y_pm.setflags(write=False)
        names = tuple(str(f) for f in getattr(self, "feature_names_in_",
                                               [f"x{j}" for j in range(X.shape[1])]))
        dataset = Dataset(
            id="estimator", name=f"{type(self).__name__} training data", task=self._task,
            X_train=Xa, y_train=y_pm, X_test=Xa, y_test=y_pm,
            feature_names=names + (("intercept",) if self.fit_intercept else ()),
        )
        model = make_model(self._model_id, lam=config.lam, radius=config.radius)
        problem = Problem(dataset=dataset, model=model, erm=LazySolution(model, Xa, y_pm))
        mechanism.check(problem, config)
        message = delta_warning(config.delta, problem.n)
        if mechanism.private and message:
            warnings.warn(message, PrivacyWarning, stacklevel=3)
        out = mechanism.run(problem, config, BatchRNG([seed]))
        eps_certified, eps_local = out.certified(config.delta)
        if mechanism.private and eps_certified > config.epsilon * (1.0 + 1e-6):
            warnings.warn(
                f"the noise that ran certifies only ε = {eps_certified:.4g}, above the "
                f"target ε = {config.epsilon:g} ({mechanism.name}, {config.calibration} "
                "calibration); see epsilon_certified_.",
                PrivacyWarning, stacklevel=3,
            )
        self.epsilon_certified_ = float(eps_certified)
        self.epsilon_local_ = float(eps_local)
        self.sigma_ = None if out.sigma is None else float(out.sigma)
        return np.asarray(out.theta, dtype=np.float64)[0]

    def _split_theta(self, theta: np.ndarray) -> tuple[np.ndarray, float]:
        if self.fit_intercept:
            return theta[:-1].copy(), float(theta[-1])
        return theta.copy(), 0.0

    def _scores(self, X) -> np.ndarray:
        check_is_fitted(self)
        X = _validate_data(self, X, reset=False, dtype=np.float64)
        Xa = self._augment(X)
        coef = np.ravel(self.coef_)
        s = Xa[:, : coef.size] @ coef
        if self.fit_intercept:
            s = s + Xa[:, -1] * float(np.ravel(self.intercept_)[0])
        return s


class DPLogisticRegression(ClassifierMixin, _DPLinearModel):
    """Binary logistic regression trained by a differentially private mechanism.

    Any registered mechanism that supports ``logreg`` can be used; its privacy
    parameters are constructor parameters.  The released model is one run of
    the mechanism on ``(X, y)``; ``epsilon_certified_`` is what the noise that
    ran provably gives (``inf`` where no proof applies).

    Parameters
    ----------
    mechanism : str, default="gradient-dpgd"
        A mechanism id (``python -m dpcore mechanisms``).
    epsilon, delta : float, default=1.0, 1e-5
        Target privacy budget; keep δ well below 1/n.
    iterations : int, default=100
        Optimisation steps T (iterative mechanisms).
    calibration : {"certified", "published"}, default="certified"
        Certified: the exact accountant; published: the paper's formula with constant ``c``.
    c : float, default=1.0
        Constant of a published noise formula.
    lam : float, default=1e-3
        L2 regularisation λ (strong convexity).
    learning_rate : float, default=1.0
    batch_size, sample_rate, clip_norm : default=None
        Mini-batch size, Poisson rate and clipping norm of the SGD mechanisms.
    random_state : int, RandomState, Generator or None, default=None
        Seed of the noise.  ``None`` draws 128 bits of fresh OS entropy on every
        fit and does not keep them — use it for a real release: anyone who knows
        an int seed can regenerate the noise and subtract it.
    fit_intercept : bool, default=True
        Append a constant-1 feature (scaled with its row, see ``normalize``).
    normalize : {"row", None}, default="row"
        ``"row"`` divides every row with ‖x‖ > 1 (intercept column included) by
        its norm, in ``fit`` and ``predict`` alike.  ``None`` refuses data with
        a row outside the unit ball.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        ``classes_[1]`` is the positive class (+1 for the mechanism).  Read off
        ``y``: the label set is treated as public.
    coef_ : ndarray of shape (1, n_features)
    intercept_ : ndarray of shape (1,)
        Weights on the row-scaled features: the margin of a row ``x`` is
        ``(coef_ · x + intercept_) / max(1, ‖(x, 1)‖)``.
    epsilon_certified_, epsilon_local_ : float
    sigma_ : float or None
        Noise scale that ran (its meaning depends on the mechanism).
    n_features_in_, feature_names_in_

    References
    ----------
    Chaudhuri, Monteleoni & Sarwate 2011 (JMLR), the DP-ERM setting with ‖x‖ ≤ 1;
    the mechanism's own paper (see ``dpcore.mechanisms.REGISTRY[id].paper``).

    Examples
    --------
    Features scaled by a public bound (here: known to lie in [−1/3, 1/3]), so every row is in the
    unit ball the proofs assume and nothing is rescaled:

    >>> import numpy as np
    >>> from dpcore import DPLogisticRegression
    >>> X = np.random.default_rng(0).uniform(-1, 1, size=(5000, 5)) / 3
    >>> y = (X @ [3.0, -2.0, 1.0, 0.0, 0.0] > 0).astype(int)
    >>> clf = DPLogisticRegression(mechanism="objective-gaussian", epsilon=1.0, fit_intercept=False,
    ...                            random_state=0).fit(X[:4000], y[:4000])
    >>> clf.coef_.shape, clf.classes_.tolist(), float(clf.epsilon_certified_) <= 1.0
    ((1, 5), [0, 1], True)
    >>> clf.score(X[4000:], y[4000:])                    # 981 of 1000 held-out rows
    0.981
    """

    _model_id = "logreg"
    _task = "classification"

    def __init__(self, *, mechanism="gradient-dpgd", epsilon=1.0, delta=1e-5, iterations=100,
                 calibration="certified", c=1.0, lam=1e-3, learning_rate=1.0, batch_size=None,
                 sample_rate=None, clip_norm=None, random_state=None, fit_intercept=True,
                 normalize="row"):
        self.mechanism = mechanism
        self.epsilon = epsilon
        self.delta = delta
        self.iterations = iterations
        self.calibration = calibration
        self.c = c
        self.lam = lam
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.sample_rate = sample_rate
        self.clip_norm = clip_norm
        self.random_state = random_state
        self.fit_intercept = fit_intercept
        self.normalize = normalize

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False  # binary logistic loss only
        return tags

    def _more_tags(self):  # scikit-learn < 1.6
        return {"binary_only": True}

    def fit(self, X, y):
        """Train one private run on ``(X, y)``; returns ``self``."""
        config, mechanism, seed = self._check_params()
        X, y = _validate_data(self, X, y, reset=True, dtype=np.float64)
        try:
            check_classification_targets(y)
        except ValueError as exc:  # continuous labels: scikit-learn's words, in one line
            raise DatasetError(" ".join(str(exc).split())) from None
        classes = np.unique(y)
        if classes.size < 2:
            raise DatasetError(
                f"{type(self).__name__} needs two classes, but y holds one class "
                f"({classes[0]!r}); the logistic model cannot be trained on 1 class."
            )
        y_type = type_of_target(y, input_name="y", raise_unknown=True)
        if y_type != "binary":
            raise DatasetError(
                "Only binary classification is supported. The type of the target is "
                f"{y_type} ({classes.size} classes); train one-vs-rest classifiers, each "
                "spending its own privacy budget."
            )
        self.classes_ = classes
        theta = self._fit_dp(X, np.where(y == classes[1], 1.0, -1.0), config, mechanism, seed)
        coef, intercept = self._split_theta(theta)
        self.coef_ = coef[None, :]
        self.intercept_ = np.array([intercept])
        return self

    def decision_function(self, X):
        """Margin ``θᵀx̃`` of the row-scaled, bias-augmented ``x̃``; > 0 means ``classes_[1]``."""
        return self._scores(X)

    def predict(self, X):
        scores = self.decision_function(X)
        return self.classes_[(scores > 0).astype(int)]

    def predict_proba(self, X):
        """``[1 − σ(m), σ(m)]`` with ``m`` the margin and σ the logistic function."""
        p = expit(self.decision_function(X))
        return np.column_stack([1.0 - p, p])

    def predict_log_proba(self, X):
        return np.log(self.predict_proba(X))


class DPLinearRegression(RegressorMixin, _DPLinearModel):
    """Least squares on the ball ``‖θ‖ ≤ radius``, trained by a private mechanism.

    Targets are clipped to ``[−1, 1]`` (the range the sensitivity bounds
    assume; scale ``y`` by a public bound first) and rows scaled as in
    :class:`DPLogisticRegression`, so ``predict`` returns
    ``(coef_ · x + intercept_) / max(1, ‖(x, 1)‖)``, which lies in
    ``[−radius, radius]``.

    Parameters
    ----------
    lam : float, default=0.0
        L2 regularisation λ (the output mechanisms need λ > 0).
    radius : float, default=1.0
        The radius of the parameter ball ``‖θ‖ ≤ radius``.
    mechanism, epsilon, delta, iterations, calibration, c : see DPLogisticRegression
    learning_rate, batch_size, sample_rate, clip_norm : see DPLogisticRegression
    random_state, fit_intercept, normalize : see DPLogisticRegression
        As for :class:`DPLogisticRegression`.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    epsilon_certified_, epsilon_local_, sigma_, n_features_in_, feature_names_in_

    References
    ----------
    Chaudhuri, Monteleoni & Sarwate 2011 (JMLR); the mechanism's own paper.

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore import DPLinearRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(5000, 3)) / 2         # rows inside the unit ball
    >>> y = X @ [0.8, -0.4, 0.2]                            # targets inside [−1, 1]
    >>> reg = DPLinearRegression(mechanism="gradient-dpgd", epsilon=2.0, fit_intercept=False,
    ...                          random_state=0).fit(X, y)
    >>> reg.predict(X[:2]).shape, float(reg.epsilon_certified_) <= 2.0
    ((2,), True)
    """

    _model_id = "linreg"
    _task = "regression"

    def __init__(self, *, mechanism="gradient-dpgd", epsilon=1.0, delta=1e-5, iterations=100,
                 calibration="certified", c=1.0, lam=0.0, radius=1.0, learning_rate=1.0,
                 batch_size=None, sample_rate=None, clip_norm=None, random_state=None,
                 fit_intercept=True, normalize="row"):
        self.mechanism = mechanism
        self.epsilon = epsilon
        self.delta = delta
        self.iterations = iterations
        self.calibration = calibration
        self.c = c
        self.lam = lam
        self.radius = radius
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.sample_rate = sample_rate
        self.clip_norm = clip_norm
        self.random_state = random_state
        self.fit_intercept = fit_intercept
        self.normalize = normalize

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # The suite asks for R² > 0.5 on standardised targets (30 % with |y| > 1).  Clipped
        # targets, row scaling and ‖θ‖ ≤ 1 cap even the non-private fit at R² ≈ 0.42, and
        # DP noise at ε = 1 on its 200 rows takes it to ≈ 0.
        tags.regressor_tags.poor_score = True
        return tags

    def _more_tags(self):  # scikit-learn < 1.6
        return {"poor_score": True}

    def fit(self, X, y):
        """Train one private run on ``(X, y)``; returns ``self``."""
        config, mechanism, seed = self._check_params()
        X, y = _validate_data(self, X, y, reset=True, dtype=np.float64, y_numeric=True)
        y = np.asarray(y, dtype=np.float64)
        clipped = int(np.count_nonzero(np.abs(y) > 1.0))
        if clipped:
            warnings.warn(
                f"{clipped} of {y.size} targets had |y| > 1 and were clipped to [−1, 1], as the "
                "sensitivity bounds assume. Clipping is per record, so it spends no privacy; "
                "scale y by a public bound first to keep its information.",
                PrivacyWarning, stacklevel=2,
            )
        theta = self._fit_dp(X, np.clip(y, -1.0, 1.0), config, mechanism, seed)
        self.coef_, self.intercept_ = self._split_theta(theta)
        return self

    def predict(self, X):
        return self._scores(X)
