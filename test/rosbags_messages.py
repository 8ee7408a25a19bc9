"""A :class:`musculo_control.nodes.conversions.MessageFactory` made of ``rosbags`` classes.

rosbags ships the ROS 2 Humble message definitions and a CDR serialiser, so messages built by
the conversion module with these classes are checked field by field against the real
definitions without ROS installed: an unknown field name fails in the constructor, a wrong
type fails in serialisation. rosbags holds ``float64[]`` as numpy arrays and ``byte`` as int
(rclpy: ``array('d')`` and ``bytes``), the two differences the factory abstracts.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from rosbags.typesys import Stores, get_typestore
from rosbags.typesys.base import Nodetype

_NUMPY = {"bool": np.bool_, "byte": np.uint8, "char": np.uint8, "int8": np.int8,
          "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16, "int32": np.int32,
          "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64, "float32": np.float32,
          "float64": np.float64}


class RosbagsMessages:
    """Builds rosbags messages by name, giving absent fields their ROS defaults."""

    def __init__(self) -> None:
        self.typestore = get_typestore(Stores.ROS2_HUMBLE)

    def new(self, type_name: str, **fields: Any) -> Any:
        cls = self.typestore.types[type_name]
        _, defs = self.typestore.fielddefs[type_name]
        known = {name for name, _ in defs}
        unknown = set(fields) - known
        if unknown:
            raise TypeError(f"{type_name} has no fields {sorted(unknown)}; it has {sorted(known)}")
        kwargs = {name: fields[name] if name in fields else self._default(desc)
                  for name, desc in defs}
        return cls(**kwargs)

    def _default(self, desc: Any) -> Any:
        kind, detail = desc
        if kind == Nodetype.BASE:
            name = detail[0]
            if name == "string":
                return ""
            if name == "bool":
                return False
            return 0.0 if name.startswith("float") else 0
        if kind == Nodetype.NAME:
            return self.new(detail)
        (sub_kind, sub_detail), size = detail
        if sub_kind == Nodetype.BASE and sub_detail[0] in _NUMPY:
            return np.zeros(size if kind == Nodetype.ARRAY else 0, dtype=_NUMPY[sub_detail[0]])
        if kind == Nodetype.ARRAY:
            return [self._default((sub_kind, sub_detail)) for _ in range(size)]
        return []

    def float64s(self, values: npt.ArrayLike) -> Any:
        return np.array(values, dtype=np.float64).reshape(-1)

    def byte(self, value: int) -> int:
        return int(value)

    def round_trip(self, msg: Any, type_name: str) -> Any:
        """Serialise to CDR and back (fails on any field of the wrong type or shape)."""
        raw = self.typestore.serialize_cdr(msg, type_name)
        return self.typestore.deserialize_cdr(raw, type_name)
