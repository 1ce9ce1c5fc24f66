"""The declarative base every table is declared on, the type of the tables' ids, and the type
of a column that holds one of a closed set."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar, Final

from sqlalchemy import JSON, Enum, String
from sqlalchemy.orm import DeclarativeBase

__all__ = ["ID", "Base", "closed_set"]

#: Ids are UUIDv7 strings.
ID: Final = String(36)


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSON}


def _values(members: type[StrEnum]) -> list[str]:
    return [member.value for member in members]


def closed_set(members: type[StrEnum], length: int) -> Enum:
    """A ``VARCHAR(length)`` column holding a member's value, read back as the member.

    The database sees a plain string column (no native enum type, no CHECK constraint), so
    adding a member needs no migration. A value outside the set is refused on write, and a
    stored one raises ``LookupError`` naming the set and its values on read.
    """
    return Enum(
        members,
        native_enum=False,
        create_constraint=False,
        values_callable=_values,
        validate_strings=True,
        length=length,
    )
