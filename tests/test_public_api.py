"""The package's front door: what ``import schedlab`` promises stays importable and documented."""

from __future__ import annotations

import schedlab

EXPECTED = {
    "Cluster",
    "ClusterState",
    "InputError",
    "PackConfig",
    "PackResult",
    "PodTable",
    "SchedlabError",
    "__version__",
    "make_placement",
    "placement_names",
    "run_pack",
}


def test_all_is_exactly_the_public_surface() -> None:
    assert set(schedlab.__all__) == EXPECTED
    for name in schedlab.__all__:
        assert hasattr(schedlab, name), name


def test_public_callables_have_docstrings() -> None:
    for name in schedlab.__all__:
        obj = getattr(schedlab, name)
        if callable(obj):
            assert (obj.__doc__ or "").strip(), f"{name} has no docstring"


def test_version_is_a_string() -> None:
    assert isinstance(schedlab.__version__, str) and schedlab.__version__
