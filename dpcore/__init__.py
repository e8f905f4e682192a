"""dpcore: the numerical core of the DP-ERM teaching app.

Datasets, models, exact ERM, batched optimisers, mechanisms with published and
certified calibration, and the command line (``python -m dpcore``).  Never
imports streamlit.
"""

from .exceptions import DatasetError, DPCoreError, ModelError, ParameterError, PrivacyWarning

__version__ = "0.1.0"

__all__ = ["DPCoreError", "DatasetError", "ModelError", "ParameterError", "PrivacyWarning", "__version__"]
