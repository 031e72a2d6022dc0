"""Immutable result mappings, as the published library returns them (spec 11 §3): read by key or
by attribute, compared with plain dicts, turned into a plain dict by ``to_dict()``; never changed."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from fgraph.core.types import JSON


class FrozenMapping(Mapping[str, Any]):
    """A read-only mapping over one dict, with attribute access and ``to_dict()``."""

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, Any]) -> None:
        object.__setattr__(self, "_data", data)

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._data[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"a {type(self).__name__} is immutable")

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self._data.items())
        return f"{type(self).__name__}({fields})"

    def to_dict(self) -> dict[str, Any]:
        return dict(self._data)


class TxReport(FrozenMapping):
    """The report of one transaction (spec 03 §12): status, tx, basis_tx, event, at, ids, asserted, retracted."""

    __slots__ = ()


def plain(value: JSON) -> JSON:
    """``value`` with every FrozenMapping turned into a dict, for JSON output."""
    if isinstance(value, FrozenMapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value
