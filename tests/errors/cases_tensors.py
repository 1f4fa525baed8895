"""Error cases about initializers: dims, sizes, data types, and external data files.
"""

import os

from onnx import TensorProto, helper

from corpus_lib import (
    F, OUTSIDE_FILE, W_BYTES, case, vi, model, floats, ints, external, model_with_initializer,
    write,
)


# ---- initializers ----------------------------------------------------------------------

@case("tensor 'w': negative dimension -2")
def initializer_negative_dim(d):
    """An initializer with a negative dim is refused."""
    t = TensorProto(name="w", data_type=F, dims=[2, -2])
    return model_with_initializer(t)


@case("tensor 'w': shape [1099511627776,1099511627776] is too large")
def initializer_dims_overflow(d):
    """An initializer (with no data) whose element count overflows int64 is refused before
    any allocation."""
    return model_with_initializer(TensorProto(name="w", data_type=F, dims=[2 ** 40, 2 ** 40]))


@case("tensor 'w': shape [2147483648,2147483648] is too large")
def initializer_bytes_overflow(d):
    """An initializer whose byte size (not element count) overflows int64 is refused."""
    t = TensorProto(name="w", data_type=TensorProto.DOUBLE, dims=[2 ** 31, 2 ** 31])
    return model_with_initializer(t)


@case("tensor 'w': raw_data holds 8 bytes, but shape [2,3] of float32 needs 24")
def initializer_raw_data_short(d):
    """raw_data shorter than the shape needs is refused, never read past."""
    t = TensorProto(name="w", data_type=F, dims=[2, 3], raw_data=b"\0" * 8)
    return model_with_initializer(t)


@case("tensor 'w': float_data holds 2 values, but its shape needs 6")
def initializer_typed_field_short(d):
    """A typed data field with fewer values than the shape needs is refused."""
    t = TensorProto(name="w", data_type=F, dims=[2, 3], float_data=[1, 2])
    return model_with_initializer(t)


@case("tensor 'words': unsupported data type STRING")
def initializer_unsupported_dtype(d):
    """An initializer of a data type stitchc cannot compile is refused with the type's name."""
    t = helper.make_tensor("words", TensorProto.STRING, [1], [b"hi"])
    return model([helper.make_node("Identity", ["words"], ["y"], name="id0")], [],
                 [vi("y", [1], TensorProto.STRING)], [t])


@case("tensor 'w': segmented tensors are not supported")
def initializer_segmented(d):
    """A segmented initializer (one piece of a split tensor) is refused."""
    t = floats("w", [2, 2], [1, 2, 3, 4])
    t.segment.begin = 0
    t.segment.end = 2
    return model_with_initializer(t)


@case("sparse initializers are not supported ('sp')")
def initializer_sparse(d):
    """Sparse initializers are refused by name."""
    sp = helper.make_sparse_tensor(floats("sp", [1], [5]), ints("sp_idx", [1]), [2, 2])
    return model([helper.make_node("Add", ["x", "sp"], ["y"], name="add0")], [vi("x", [2, 2])],
                 [vi("y", [2, 2])], sparse_initializer=[sp])


# ---- external data ---------------------------------------------------------------------

@case("tensor 'w': external data location '../w.bin' leaves the model's folder ('..')")
def external_parent_folder(d):
    """An external data location with a '..' component is refused before any file access."""
    return model_with_initializer(external("w", [2, 2], "../w.bin"))


@case("tensor 'w': external data location '/tmp/w.bin' is absolute; it must be relative to the "
      "model's folder")
def external_absolute(d):
    """An absolute external data location is refused before any file access."""
    return model_with_initializer(external("w", [2, 2], "/tmp/w.bin"))


@case("tensor 'w': external data location 'link.bin' resolves to")
def external_symlink_escape(d):
    """A location that is a symlink leading outside the model's folder is refused, though
    the file it leads to exists (cases/outside.bin) and holds the right byte count."""
    os.symlink(os.path.join("..", OUTSIDE_FILE), os.path.join(d, "link.bin"))
    return model_with_initializer(external("w", [2, 2], "link.bin"))


@case("tensor 'w': external data file 'missing.bin' cannot be opened: No such file or directory")
def external_missing_file(d):
    """An external data file that does not exist is refused by name."""
    return model_with_initializer(external("w", [2, 2], "missing.bin"))


@case("tensor 'w': external data has no 'location'")
def external_no_location(d):
    """External data without a location key is refused."""
    return model_with_initializer(external("w", [2, 2], None, offset=0, length=16))


@case("tensor 'w': external data 'data' is not a regular file")
def external_is_folder(d):
    """An external data location naming a folder is refused."""
    os.mkdir(os.path.join(d, "data"))
    write(os.path.join(d, "data"), "w.bin", W_BYTES)
    return model_with_initializer(external("w", [2, 2], "data"))


@case("tensor 'w': external data '.' is not a regular file")
def external_is_model_folder(d):
    """An external data location naming the model's own folder ('.') is refused as not a
    file (it lies inside the folder; no symlink is involved)."""
    return model_with_initializer(external("w", [2, 2], "."))


@case("tensor 'w': external data offset 8 + length 16 runs past the end of 'w.bin' (16 bytes)")
def external_past_end(d):
    """External data whose offset + length run past the end of the file is refused."""
    write(d, "w.bin", W_BYTES)
    return model_with_initializer(external("w", [2, 2], "w.bin", offset=8, length=16))


@case("tensor 'w': external data offset 64 is past the end of 'w.bin' (16 bytes)")
def external_offset_past_end(d):
    """An external data offset beyond the end of the file is refused."""
    write(d, "w.bin", W_BYTES)
    return model_with_initializer(external("w", [2, 2], "w.bin", offset=64))


@case("tensor 'w': external data length 24 does not match the tensor's 16 bytes")
def external_length_mismatch(d):
    """An external data length other than the tensor's byte size is refused."""
    write(d, "w.bin", bytes(range(24)))
    return model_with_initializer(external("w", [2, 2], "w.bin", offset=0, length=24))


@case("tensor 'w': external data length 24 does not match the tensor's 16 bytes")
def external_file_size_mismatch(d):
    """With no length given, the rest of the file must be exactly the tensor's bytes."""
    write(d, "w.bin", bytes(range(24)))
    return model_with_initializer(external("w", [2, 2], "w.bin"))


@case("tensor 'w': external data offset '0x10' is not a decimal number")
def external_offset_not_decimal(d):
    """An external data offset that is not a plain decimal number is refused."""
    write(d, "w.bin", W_BYTES)
    return model_with_initializer(external("w", [2, 2], "w.bin", offset="0x10"))


@case("tensor 'w': external data length '-16' is not a decimal number")
def external_length_negative(d):
    """A negative external data length is refused."""
    write(d, "w.bin", W_BYTES)
    return model_with_initializer(external("w", [2, 2], "w.bin", length=-16))
