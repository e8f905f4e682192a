"""The numerics under every mechanism, none of them private in itself: products with the shared data
matrix (``linalg``), the compiled kernels (``kernels``, numba), the named random streams
(``streams``) and the noise samplers batched over runs (``noise``)."""
