"""A thread pool for tests that counts the work lent to it (so a threaded branch is really threaded)."""

from concurrent.futures import ThreadPoolExecutor

from dpcore.numerics import linalg


class CountingPool(ThreadPoolExecutor):
    """A context's pool (``linalg.using_pool``, ``Context(pool=…)``) that counts its ``map`` calls."""

    def __init__(self):
        super().__init__(linalg.THREADS, thread_name_prefix=linalg._POOL_NAME)
        self.calls = 0

    def map(self, fn, *iterables, **kw):
        self.calls += 1
        return super().map(fn, *iterables, **kw)
