"""Writes the seed corpora of the tensor-file fuzzers (seeds/tensor_pb, seeds/npy): TensorProto
files of each dtype Loom reads, raw and typed, scalar, empty, with external data, and .npy files of
each format version and dtype. Plain Python, no packages: the protobuf wire format is written by
hand. The JSON fuzzers' seeds are copies of the repository's own files (bench/workloads,
profiles/gpu, profiles/library, docs/profile-format.md). Run from the repository root:
    python3 tests/fuzz/make_reader_seeds.py tests/fuzz/seeds
"""
import struct
import sys

# TensorProto.DataType
FLOAT, INT32, INT64, BOOL, FLOAT16, DOUBLE, BFLOAT16 = 1, 6, 7, 9, 10, 11, 16


def varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field_varint(number, value):
    return varint(number << 3) + varint(value)


def field_bytes(number, payload):
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def packed(number, values, fmt=None):
    if fmt:
        return field_bytes(number, b"".join(struct.pack(fmt, v) for v in values))
    return field_bytes(number, b"".join(varint(v) for v in values))


# TensorProto fields: dims 1, data_type 2, float_data 4, int32_data 5, int64_data 7, name 8,
# raw_data 9, external_data 13 (StringStringEntryProto: key 1, value 2), data_location 14.
def tensor(dims, data_type, name=b"", raw=None, extra=b""):
    out = b"".join(field_varint(1, d) for d in dims) + field_varint(2, data_type)
    if name:
        out += field_bytes(8, name)
    if raw is not None:
        out += field_bytes(9, raw)
    return out + extra


def npy(descr, shape, data, major=1, fortran=False):
    shape_text = "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape_text)
    prefix = 10 if major == 1 else 12
    header += " " * ((64 - (prefix + len(header) + 1) % 64) % 64) + "\n"
    length = struct.pack("<H", len(header)) if major == 1 else struct.pack("<I", len(header))
    return b"\x93NUMPY" + bytes([major, 0]) + length + header.encode("latin-1") + data


def main(folder):
    f32 = struct.pack("<6f", 1.5, -2.0, 0.0, 1e-30, 3.25, -7.0)
    pb = {
        "f32_raw.pb": tensor([2, 3], FLOAT, b"input_0", f32),
        "f16_raw.pb": tensor([3], FLOAT16, raw=struct.pack("<3H", 0x3C00, 0xB800, 0x7BFF)),
        "bf16_raw.pb": tensor([2], BFLOAT16, raw=struct.pack("<2H", 0x4040, 0xE08C)),
        "i64_raw.pb": tensor([2], INT64, raw=struct.pack("<2q", -1, 1 << 50)),
        "bool_raw.pb": tensor([4], BOOL, raw=bytes([1, 0, 2, 1])),
        "scalar.pb": tensor([], FLOAT, raw=struct.pack("<f", 42.0)),
        "empty.pb": tensor([0, 3], FLOAT, raw=b""),
        "f32_typed.pb": tensor([2, 2], FLOAT, extra=packed(4, [1.0, 2.0, 3.0, 4.0], "<f")),
        "i32_typed.pb": tensor([1, 2], INT32, extra=packed(5, [7, (1 << 64) - 8])),
        "i64_typed.pb": tensor([3], INT64, extra=packed(7, [0, 5, (1 << 64) - 1])),
        "bool_typed.pb": tensor([3], BOOL, extra=packed(5, [1, 0, 1])),
        "f16_typed.pb": tensor([2], FLOAT16, extra=packed(5, [0x3C00, 0xC000])),
        "external.pb": tensor([2, 2], FLOAT, b"w", extra=field_bytes(13, field_bytes(1, b"location") +
                                                                    field_bytes(2, b"weights.bin")) +
                              field_varint(14, 1)),
        "double.pb": tensor([1], DOUBLE, raw=struct.pack("<d", 1.0)),
    }
    for name, data in pb.items():
        with open(f"{folder}/tensor_pb/{name}", "wb") as f:
            f.write(data)

    arrays = {
        "f32_v1.npy": npy("<f4", (2, 3), f32),
        "f16_v1.npy": npy("<f2", (3,), struct.pack("<3H", 0x3C00, 0xB800, 0x7BFF)),
        "i64_v2.npy": npy("<i8", (2,), struct.pack("<2q", -1, 1 << 50), major=2),
        "i32_v3.npy": npy("<i4", (1, 2), struct.pack("<2i", 7, -8), major=3),
        "bool_v1.npy": npy("|b1", (4,), bytes([1, 0, 2, 1])),
        "scalar.npy": npy("<f4", (), struct.pack("<f", 42.0)),
        "empty.npy": npy("<f4", (1, 0, 3), b""),
        "fortran.npy": npy("<f4", (2, 3), f32, fortran=True),
        "f64.npy": npy("<f8", (1,), struct.pack("<d", 1.0)),
    }
    for name, data in arrays.items():
        with open(f"{folder}/npy/{name}", "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "seeds")
