"""StreamInformation as cntk.io 2.7 made it: positional order, CNTK's m_* fields, dtype mapping."""

import numpy as np
import pytest

import cntkio
from conftest import ctf_source, write_ctf


def test_positional_order_and_cntk_fields():
    info = cntkio.StreamInformation("x", 3, "sparse", np.float64, (2, 5), True)
    assert (info.name, info.id, info.storage_format, info.dtype, info.shape) == ("x", 3, "sparse", np.float64, (2, 5))
    assert (info.m_name, info.m_id, info.m_defines_mb_size, info.defines_mb_size) == ("x", 3, True, True)
    assert info.m_storage_format == cntkio.StorageFormat.SparseCSC == 1
    assert info.m_element_type == cntkio.DataType.Double == 2
    assert info.m_sample_layout == info.sample_shape == (2, 5)
    assert info.is_sparse and info.alias == ""


def test_defaults_and_cntk_dtype_mapping():
    info = cntkio.StreamInformation("y", 0, "dense", np.float32, 4)
    assert info.shape == (4,) and not info.defines_mb_size
    assert info.m_storage_format == cntkio.StorageFormat.Dense == 0 and info.m_element_type == cntkio.DataType.Float
    assert cntkio.StreamInformation("y", 0, "dense", np.int64, ()).dtype == np.float32  # CNTK: integers -> float
    assert cntkio.StreamInformation("y", 0, "dense", float, ()).dtype == np.float64


@pytest.mark.parametrize("storage, dtype", [("csc", np.float32), ("dense", np.float16), ("dense", "text")])
def test_bad_storage_or_dtype_is_a_value_error(storage, dtype):
    with pytest.raises(ValueError):
        cntkio.StreamInformation("y", 0, storage, dtype, (1,))


def test_alias_is_keyword_only():
    with pytest.raises(TypeError):
        cntkio.StreamInformation("y", 0, "dense", np.float32, (1,), False, "f")
    assert cntkio.StreamInformation("y", 0, "dense", np.float32, (1,), alias="f").alias == "f"


def test_equal_infos_are_the_same_key():
    a = cntkio.StreamInformation("x", 1, "dense", np.float32, (3,))
    assert a == cntkio.StreamInformation("x", 1, "dense", np.float32, [3]) and {a: 1}[
        cntkio.StreamInformation("x", 1, "dense", np.float32, (3,))] == 1
    assert a != cntkio.StreamInformation("x", 2, "dense", np.float32, (3,))


def test_a_readers_infos_carry_the_file_alias_and_flags(tmp_path):
    source = ctf_source(write_ctf(tmp_path / "d.ctf", [1, 2]), randomize=False)
    f = source.streams.features
    assert f.alias == "f" and f.m_name == "features" and f.m_element_type == cntkio.DataType.Float
    assert source.streams.labels.m_storage_format == cntkio.StorageFormat.SparseCSC


def test_cntk_fields_can_be_assigned():
    # CNTK's StreamInformation fields are plain attributes; its own constructor assigns them
    info = cntkio.StreamInformation("f", 0, "dense", np.float32, (3,))
    info.m_name, info.m_id, info.m_defines_mb_size, info.m_sample_layout = "g", 2, True, (2, 2)
    info.m_storage_format, info.m_element_type = cntkio.StorageFormat.SparseCSC, cntkio.DataType.Double
    assert (info.name, info.id, info.defines_mb_size, info.shape) == ("g", 2, True, (2, 2))
    assert info.is_sparse and info.dtype == np.float64
    with pytest.raises(ValueError):
        info.m_element_type = cntkio.DataType.Unknown


def test_records_are_immutable_and_update_by_copy():
    # cntk.variables.Record: attributes cannot be assigned; updated_with gives a changed copy
    defs = cntkio.StreamDefs(a=1)
    with pytest.raises(AttributeError, match="immutable"):
        defs.b = 2
    changed = defs.updated_with(a=2, b=3)
    assert changed == {"a": 2, "b": 3} and changed.b == 3 and defs == {"a": 1}
    assert isinstance(changed, cntkio.Record)


def test_cntk_io_transforms_imports_as_in_cntk():
    import importlib

    transforms = importlib.import_module("cntkio.io.transforms")
    assert transforms is cntkio.transforms
    assert cntkio.io.transforms is cntkio.transforms  # `import cntkio` then `cntkio.io`, as with cntk
