"""Named float blocks packed into one flat float64 vector with a self-describing layout.

A ``std_msgs/Float64MultiArray`` carries one flat ``data`` array and a ``layout`` whose
``dim`` entries are (label, size, stride). Its standard reading describes one dense N-d array;
here it describes a *record* of several named blocks instead (the dynamics snapshot, the
controller state), one ``dim`` per block:

- ``label`` = ``"<name>:<shape>"`` with the shape as ``RxC`` (matrix), ``N`` (vector) or ``1``
  (scalar), e.g. ``"mass_matrix:7x7"``, ``"gravity_torque_nm:7"``;
- ``size`` = number of elements of the block (rows x cols);
- ``stride`` = offset of the block's first element in ``data``;

and a first ``dim`` ``"schema:<name>"`` with size 0 and stride 0 naming the record type, so a
reader can refuse a record of another kind. Matrices are row-major; ``data_offset`` is 0.
Blocks follow each other without gaps, so ``len(data)`` is the sum of the sizes.

This module is ROS-free: it turns a mapping of arrays into ``(dims, data)`` and back, and
checks everything a reader relies on (schema, names, shapes, offsets, length, finiteness).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from musculo_control.errors import InputError

FloatArray = npt.NDArray[np.float64]

#: Label prefix of the first dimension, which names the record type.
SCHEMA_PREFIX = "schema:"


class Dim(NamedTuple):
    """One ``std_msgs/MultiArrayDimension``: label, size, stride."""

    label: str
    size: int
    stride: int


class Field(NamedTuple):
    """One named block: a scalar ``()``, a vector ``(n,)`` or a matrix ``(r, c)``."""

    name: str
    shape: tuple[int, ...]

    @property
    def size(self) -> int:
        return int(math.prod(self.shape))

    @property
    def label(self) -> str:
        if not self.shape:
            return f"{self.name}:1"
        return f"{self.name}:" + "x".join(str(s) for s in self.shape)


def _parse_label(label: str) -> Field:
    name, sep, shape_text = label.partition(":")
    if not sep or not name:
        raise InputError("record dim label", "'<name>:<shape>' such as 'mass_matrix:7x7'", label)
    try:
        dims = tuple(int(s) for s in shape_text.split("x"))
    except ValueError:
        raise InputError("record dim label", "a shape such as 7, 7x7 or 1", label) from None
    if any(d < 0 for d in dims) or len(dims) > 2:
        raise InputError("record dim label", "a shape of at most 2 non-negative sizes", label)
    return Field(name, () if dims == (1,) else dims)


class RecordLayout:
    """The fields of one record type, in order, and their offsets in the flat vector."""

    def __init__(self, schema: str, fields: Sequence[Field]) -> None:
        names = [f.name for f in fields]
        if len(set(names)) != len(names):
            raise InputError("record fields", "distinct names", names)
        self.schema = schema
        self.fields: tuple[Field, ...] = tuple(fields)
        offsets, total = [], 0
        for f in self.fields:
            offsets.append(total)
            total += f.size
        self.offsets: tuple[int, ...] = tuple(offsets)
        self.length = total
        # (name, shape, start, end) per field: what pack needs, computed once (it runs per tick)
        self._slots = tuple((f.name, f.shape, off, off + f.size)
                            for f, off in zip(self.fields, self.offsets))
        self._index = {f.name: i for i, f in enumerate(self.fields)}

    def dims(self) -> list[Dim]:
        """The layout's ``dim`` entries: the schema, then one per field."""
        out = [Dim(SCHEMA_PREFIX + self.schema, 0, 0)]
        out += [Dim(f.label, f.size, off) for f, off in zip(self.fields, self.offsets)]
        return out

    def pack(self, values: Mapping[str, npt.ArrayLike | float]) -> FloatArray:
        """The flat (length,) vector of ``values`` (every field, nothing else)."""
        if values.keys() != self._index.keys():
            missing = [f.name for f in self.fields if f.name not in values]
            extra = sorted(set(values) - set(self._index))
            raise InputError(f"record '{self.schema}'", f"exactly the fields {list(self._index)}",
                             {"missing": missing, "unknown": extra})
        out = np.empty(self.length)
        for name, shape, start, end in self._slots:
            arr = np.asarray(values[name], dtype=float)
            if arr.shape != shape:
                raise InputError(f"record '{self.schema}' field '{name}'",
                                 f"shape {shape}", arr.shape)
            out[start:end] = arr.reshape(-1)
        return out

    def unpack(self, data: npt.ArrayLike) -> dict[str, FloatArray]:
        """Field name -> array of the field's shape (copies; scalars as 0-d arrays)."""
        flat = np.asarray(data, dtype=float).reshape(-1)
        if flat.shape != (self.length,):
            raise InputError(f"record '{self.schema}' data", f"{self.length} values",
                             flat.shape[0])
        return {f.name: flat[off:off + f.size].reshape(f.shape).copy()
                for f, off in zip(self.fields, self.offsets)}

    def check_dims(self, dims: Sequence[Dim], data_offset: int = 0) -> None:
        """Raise :class:`InputError` unless ``dims`` describe exactly this layout."""
        if data_offset != 0:
            raise InputError(f"record '{self.schema}' layout", "data_offset 0", data_offset)
        expected = self.dims()
        got = [Dim(str(d[0]), int(d[1]), int(d[2])) for d in dims]
        if not got or got[0].label != expected[0].label:
            raise InputError("record schema", f"'{expected[0].label}'",
                             got[0].label if got else "no dims")
        if got != expected:
            for e, g in zip(expected[1:], got[1:]):
                if e != g:
                    raise InputError(f"record '{self.schema}' layout",
                                     f"dim {tuple(e)}", tuple(g))
            raise InputError(f"record '{self.schema}' layout", f"{len(expected)} dims",
                             len(got))


def layout_from_dims(dims: Sequence[Dim]) -> RecordLayout:
    """Rebuild a layout from received dims (for generic readers such as a plotting tool)."""
    if not dims or not str(dims[0][0]).startswith(SCHEMA_PREFIX):
        raise InputError("record dims", f"a first dim labelled '{SCHEMA_PREFIX}<name>'",
                         dims[0][0] if dims else "no dims")
    layout = RecordLayout(str(dims[0][0])[len(SCHEMA_PREFIX):],
                          [_parse_label(str(d[0])) for d in dims[1:]])
    layout.check_dims(dims)
    return layout
