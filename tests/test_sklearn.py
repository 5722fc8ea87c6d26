"""scikit-learn's own array-API checks, for every estimator it tags as supporting the array API, with
gpk_array arrays as input (on the CPU, and on cuda:0 where there is one)."""
import os
import warnings

import pytest

os.environ.setdefault("SCIPY_ARRAY_API", "1")
sklearn = pytest.importorskip("sklearn")

from sklearn.decomposition import PCA  # noqa: E402
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis  # noqa: E402
from sklearn.kernel_approximation import Nystroem  # noqa: E402
from sklearn.linear_model import LogisticRegression, PoissonRegressor, Ridge, RidgeClassifierCV, RidgeCV  # noqa
from sklearn.naive_bayes import GaussianNB  # noqa: E402
from sklearn.preprocessing import (  # noqa: E402
    Binarizer, KernelCenterer, LabelEncoder, MinMaxScaler, Normalizer, PolynomialFeatures, StandardScaler,
)
from sklearn.utils.estimator_checks import check_array_api_input_and_values  # noqa: E402

import gpk_array as xp  # noqa: E402

from .conftest import DEVICES  # noqa: E402

ESTIMATORS = [
    LinearDiscriminantAnalysis(), PCA(n_components=2, svd_solver="full"),
    PCA(n_components=2, svd_solver="full", whiten=True), Ridge(solver="svd"), RidgeCV(), RidgeClassifierCV(),
    StandardScaler(), MinMaxScaler(), Normalizer(), Binarizer(), KernelCenterer(),
    PolynomialFeatures(), GaussianNB(), LogisticRegression(), PoissonRegressor(), Nystroem(),
]


@pytest.mark.parametrize("device_name", DEVICES)
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_check_array_api_input_and_values(estimator, device_name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check_array_api_input_and_values(type(estimator).__name__, estimator, array_namespace="gpk_array",
                                         device_name=device_name)


@pytest.mark.parametrize("device_name", DEVICES)
def test_label_encoder(device_name):
    """LabelEncoder takes y alone, which the generic check cannot call: compared with NumPy input instead."""
    import numpy as np
    y = np.array([3, 1, 7, 1, 3, 3, 9])
    ref = LabelEncoder().fit(y)
    with sklearn.config_context(array_api_dispatch=True):
        enc = LabelEncoder().fit(xp.asarray(y, device=device_name))
        codes = enc.transform(xp.asarray(y, device=device_name))
        back = enc.inverse_transform(codes)
    for got, want in ((enc.classes_, ref.classes_), (codes, ref.transform(y)), (back, y)):
        assert isinstance(got, xp.Array) and got.device == xp.Device(device_name)
        np.testing.assert_array_equal(got.to_device("cpu"), want)


@pytest.mark.parametrize("device_name", DEVICES)
def test_fitted_attributes_are_gpk_arrays_on_the_input_device(device_name):
    import numpy as np
    rng = np.random.default_rng(0)
    X = xp.asarray(rng.normal(size=(60, 4)), device=device_name)
    y = xp.asarray((rng.normal(size=60) > 0).astype(np.int64), device=device_name)
    with sklearn.config_context(array_api_dispatch=True):
        lda = LinearDiscriminantAnalysis().fit(X, y)
        pred = lda.predict(X)
    for attr in ("coef_", "intercept_", "means_", "scalings_"):
        a = getattr(lda, attr)
        assert isinstance(a, xp.Array), attr
        assert a.device == xp.Device(device_name), attr
    assert isinstance(pred, xp.Array) and pred.device == xp.Device(device_name)
