"""The op library. Importing it registers every primitive in :mod:`gradtape.registry`."""
from . import core, math, reduce, linalg, shape, fused, sorting, scatter  # noqa: F401
from . import extra  # noqa: F401
