"""Hypothesis strategies for arbitrary JSON values, shared by the protocol's property tests."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

__all__ = ["json_scalars", "json_values"]


def json_scalars(text_size: int) -> st.SearchStrategy[Any]:
    """Scalars as ``loads`` can produce them (orjson parses at most 64-bit integers)."""
    return (
        st.none()
        | st.booleans()
        | st.integers(min_value=-(2**63), max_value=2**64 - 1)
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=text_size)
    )


def json_values(
    *, text_size: int, key_size: int, width: int, max_leaves: int
) -> st.SearchStrategy[Any]:
    """Nested lists and objects of :func:`json_scalars`."""
    return st.recursive(
        json_scalars(text_size),
        lambda children: (
            st.lists(children, max_size=width)
            | st.dictionaries(st.text(max_size=key_size), children, max_size=width)
        ),
        max_leaves=max_leaves,
    )
