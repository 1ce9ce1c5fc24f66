"""The declarative base every table is declared on, and the type of the tables' ids."""

from __future__ import annotations

from typing import Any, ClassVar, Final

from sqlalchemy import JSON, String
from sqlalchemy.orm import DeclarativeBase

__all__ = ["ID", "Base"]

#: Ids are UUIDv7 strings.
ID: Final = String(36)


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSON}
