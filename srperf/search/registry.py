"""Search algorithms: find the highest rate whose loss stays under each threshold.

``create(name, settings)`` builds one from :data:`ALGORITHMS`;
:data:`DEFAULT_ALGORITHM` is the MLR-style search (:mod:`srperf.search.mlr`).
"""

from __future__ import annotations

from srperf.search.base import (GoalResult, Measure, SearchAlgorithm, SearchResult,
                                SearchSettings)
from srperf.search.bisect import BisectSearch
from srperf.search.lossfit import LossFitSearch
from srperf.search.mlr import MlrSearch
from srperf.search.mlrsearch_adapter import MlrSearchAdapter
from srperf.search.mrr import MrrSearch
from srperf.search.multi import MultiSearch

ALGORITHMS: dict[str, type[SearchAlgorithm]] = {
    BisectSearch.name: BisectSearch,
    LossFitSearch.name: LossFitSearch,
    MultiSearch.name: MultiSearch,
    MlrSearch.name: MlrSearch,
    MlrSearchAdapter.name: MlrSearchAdapter,
    MrrSearch.name: MrrSearch,
}
"""Every search algorithm by its name."""

DEFAULT_ALGORITHM = MlrSearch.name


def create(name: str, settings: SearchSettings) -> SearchAlgorithm:
    """The algorithm called ``name`` with ``settings`` (validated).

    Raises ValueError for an unknown name or impossible settings.
    """
    try:
        cls = ALGORITHMS[name]
    except KeyError:
        raise ValueError(
            f"unknown search algorithm {name!r} (known: {', '.join(sorted(ALGORITHMS))})"
        ) from None
    return cls(settings)


__all__ = ["ALGORITHMS", "DEFAULT_ALGORITHM", "create", "GoalResult", "Measure",
           "SearchAlgorithm", "SearchResult", "SearchSettings"]
