#!/usr/bin/python3
"""Writes golden.json: protobuf's own proto3 JSON mapping of jsonmap.proto.

One-off generator, NOT run by the tests (test_json_golden.c reads the
golden.json it wrote). It needs protoc and python3-protobuf (Debian's
3.21.12: apt-get install python3-protobuf) and runs as
    /usr/bin/python3 tests/unit/codegen/json/make_golden.py
from anywhere. It compiles jsonmap.proto with protoc, builds messages,
and writes three lists:
  canonical: MessageToJson's text of each message (defaults left out) and
             that text as a JSON value; pbjson must read the text and
             print the same value back;
  accepted:  other inputs json_format.Parse takes (proto names, numbers
             as strings, enum numbers, URL-safe base64, ...) with the
             canonical JSON of what it parsed;
  rejected:  inputs json_format.Parse refuses (each checked here), with
             the field path pbjson's error must name (null: refused by
             the JSON parser itself, which names line and column);
  wire:      messages no JSON input makes (a FieldMask path with no JSON
             form, NaN in a Value), as rdmx's wire (msgpack, hex) has
             them, with MessageToJson's JSON, or the field path pbjson's
             error must name where MessageToJson refuses to print.
Inputs where python's json_format is lenient beyond the proto3 JSON spec
are left out: int() taking "1_0" and 1.5 or true for an enum, float()
taking true, a 10-digit Duration fraction rounded away, a top-level array,
strptime taking one-digit months, base64 dropping characters outside its
alphabet, NaN literals.
"""
import json
import math
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "golden.json")


def compile_proto():
    tmp = tempfile.mkdtemp(prefix="jsonmap")
    subprocess.check_call(["protoc", "-I", HERE, "-I", "/usr/include", "--python_out", tmp,
                           "--descriptor_set_out", os.path.join(tmp, "jsonmap.pb"),
                           "--include_imports", "jsonmap.proto"], cwd=HERE)
    sys.path.insert(0, tmp)
    import jsonmap_pb2  # noqa: E402
    return jsonmap_pb2


pb = compile_proto()
from google.protobuf import json_format  # noqa: E402
from google.protobuf import any_pb2, duration_pb2, empty_pb2, field_mask_pb2, struct_pb2, timestamp_pb2, wrappers_pb2  # noqa: E402

TYPES = {"Scalars": pb.Scalars, "Repeated": pb.Repeated, "Maps": pb.Maps, "Oneofs": pb.Oneofs,
         "Wkt": pb.Wkt, "Nested": pb.Nested}


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def to_json(m):
    return json_format.MessageToJson(m, including_default_value_fields=False)


canonical, accepted, rejected, wire = [], [], [], []


def canon(name, m, reparse=True):
    text = to_json(m)
    back = type(m)()
    if reparse:
        json_format.Parse(text, back)
        assert back == m or name.startswith("nan"), name  # NaN != NaN
    canonical.append({"name": name, "type": "jsonmap." + type(m).DESCRIPTOR.name,
                      "input": text, "canonical": json.loads(text)})


def accept(name, typ, text):
    m = TYPES[typ]()
    json_format.Parse(text, m)
    accepted.append({"name": name, "type": "jsonmap." + typ, "input": text,
                     "canonical": json.loads(to_json(m))})


def reject(name, typ, text, path):
    try:
        json_format.Parse(text, TYPES[typ]())
    except (json_format.ParseError, KeyError):  # a missing Any "value": KeyError
        rejected.append({"name": name, "type": "jsonmap." + typ, "input": text, "path": path})
        return
    raise SystemExit("json_format.Parse accepted reject case %s: %s" % (name, text))


def msgpack(v):
    """v as rdmx's wire has it (a message: a map keyed by field number);
    small maps, lists, strings and field numbers only"""
    if isinstance(v, dict):
        assert len(v) < 16
        return bytes([0x80 | len(v)]) + b"".join(msgpack(k) + msgpack(x) for k, x in v.items())
    if isinstance(v, list):
        assert len(v) < 16
        return bytes([0x90 | len(v)]) + b"".join(msgpack(x) for x in v)
    if isinstance(v, float):
        return b"\xcb" + struct.pack(">d", v)
    if isinstance(v, int):
        assert 0 <= v < 128
        return bytes([v])
    b = v.encode()
    assert len(b) < 32
    return bytes([0xa0 | len(b)]) + b


def from_wire(name, m, fields, path=None):
    """m, whose wire is fields, prints as MessageToJson prints it, or,
    when MessageToJson refuses it, fails naming path"""
    entry = {"name": name, "type": "jsonmap." + type(m).DESCRIPTOR.name,
             "wire": msgpack(fields).hex()}
    try:
        text = to_json(m)
    except json_format.SerializeToJsonError:
        assert path is not None, name
        entry["path"] = path
    else:
        assert path is None, "%s printed: %s" % (name, text)
        entry["canonical"] = json.loads(text)
    wire.append(entry)


# ---- canonical: every scalar and its edges ----
s = pb.Scalars()
s.f_double, s.f_float, s.f_int32, s.f_int64 = 1.5, 0.25, -7, -(2**63)
s.f_uint32, s.f_uint64, s.f_sint32, s.f_sint64 = 2**32 - 1, 2**64 - 1, -(2**31), 2**63 - 1
s.f_fixed32, s.f_fixed64, s.f_sfixed32, s.f_sfixed64 = 2**32 - 1, 2**64 - 1, 2**31 - 1, -(2**63)
s.f_bool, s.f_string, s.f_bytes, s.f_enum = True, "x", b"\x00\xff", pb.RED
canon("scalars_all", s)
s = pb.Scalars(f_int64=2**63 - 1, f_sfixed64=2**63 - 1, f_int32=2**31 - 1, f_sint64=-(2**63))
canon("int_limits", s)
canon("neg_zero_double", pb.Scalars(f_double=-0.0))
canon("neg_zero_float", pb.Scalars(f_float=-0.0))
canon("nan", pb.Scalars(f_double=math.nan, f_float=math.nan))
canon("infinities", pb.Scalars(f_double=math.inf, f_float=-math.inf))
canon("neg_infinity_double", pb.Scalars(f_double=-math.inf, f_float=math.inf))
canon("float_denormal_min", pb.Scalars(f_float=f32(1e-45)))
# python prints FLT_MAX as 3.4028235e+38 and then refuses that text (above
# its _FLOAT_MAX as a double); the text is FLT_MAX's shortest form, kept
canon("float_max", pb.Scalars(f_float=f32(3.4028234663852886e38)), reparse=False)
canon("float_tenth", pb.Scalars(f_float=f32(0.1), f_double=0.1))
canon("double_min_denormal", pb.Scalars(f_double=5e-324))
canon("double_max", pb.Scalars(f_double=1.7976931348623157e308))
canon("double_third", pb.Scalars(f_double=1 / 3))
canon("double_big_int", pb.Scalars(f_double=1e16))
canon("double_mixed_precision", pb.Repeated(r_double=[0.1, 1 / 3, 2.0, 1e-7, 123456789.125]))
canon("float_mixed_precision", pb.Repeated(r_float=[f32(0.1), f32(1 / 3), f32(16777216.0),
                                                   f32(1e-45), f32(1e-38)]))
# each real in its own shortest text, whatever else the document holds
canon("double_shortest_each", pb.Repeated(r_double=[0.1, 1 / 3, 1e-300, 5e-324, 1.7976931348623157e308,
                                                   1e16, 1e15, 1e-05, 0.0001, 100.0, -0.0, 2.5e-8]))
# FLT_MAX prints as 3.4028235e+38, a text python then refuses (float_max)
canon("float_shortest_each", pb.Repeated(r_float=[f32(0.1), f32(3.4028234663852886e38), f32(1.4e-45),
                                                  f32(1 / 3), 1.0, f32(1e-10), f32(123456.7)]),
      reparse=False)
canon("double_and_float_shortest", pb.Scalars(f_double=1 / 3, f_float=f32(0.1), o_double=0.1))
w = pb.Wkt(w_double=wrappers_pb2.DoubleValue(value=0.1), w_float=wrappers_pb2.FloatValue(value=f32(0.2)),
           val=struct_pb2.Value(number_value=2 / 3))
w.st.update({"a": 0.1, "b": 1e300, "c": 7})
canon("wkt_reals_shortest", w)
canon("empty_string_default", pb.Scalars(f_string=""))
canon("non_ascii_string", pb.Scalars(f_string="h\u00e9llo \u4e16\u754c \U0001f600 \"q\" \\ \n\t\x01"))
canon("bytes_all_256", pb.Scalars(f_bytes=bytes(range(256))))
canon("bytes_padding_1", pb.Scalars(f_bytes=b"\xfb\xff"))
canon("bytes_padding_2", pb.Scalars(f_bytes=b"\xfb"))
canon("enum_unknown_number", pb.Scalars(f_enum=7))
canon("enum_negative", pb.Scalars(f_enum=pb.NEG))
canon("enum_unknown_negative", pb.Scalars(f_enum=-5))
canon("optional_defaults_present", pb.Scalars(o_int32=0, o_string="", o_enum=pb.COLOR_UNSPECIFIED,
                                              o_double=0.0, o_bool=False))
canon("json_name", pb.Scalars(renamed="r"))
canon("nested", pb.Scalars(nested=pb.Nested(a=1, child=pb.Nested(b="deep", child=pb.Nested()))))
canon("nested_empty", pb.Scalars(nested=pb.Nested()))
canon("empty_message", pb.Scalars())

# ---- repeated ----
r = pb.Repeated(r_double=[0.0, -1.5, math.inf], r_float=[1.5, math.nan], r_int32=[0, -1, 2**31 - 1],
                r_int64=[0, -(2**63), 2**63 - 1], r_uint32=[0, 2**32 - 1], r_uint64=[0, 2**64 - 1],
                r_sint32=[-1, 1], r_sint64=[-(2**63)], r_fixed32=[7], r_fixed64=[2**64 - 1],
                r_sfixed32=[-(2**31)], r_sfixed64=[-1], r_bool=[True, False, True],
                r_string=["", "a", "\u00e9"], r_bytes=[b"", b"\x00", b"ab"],
                r_enum=[pb.RED, 0, 9, pb.NEG], r_nested=[pb.Nested(), pb.Nested(a=3)])
canon("nan_repeated_all", r)

# ---- maps with every key type ----
mp = pb.Maps()
mp.m_int32[-(2**31)] = "min"
mp.m_int32[0] = "zero"
mp.m_int64[-(2**63)] = "min"
mp.m_int64[2**63 - 1] = "max"
mp.m_uint32[2**32 - 1] = "max"
mp.m_uint64[2**64 - 1] = "max"
mp.m_sint32[-5] = "neg"
mp.m_sint64[-(2**63)] = "min"
mp.m_fixed32[1] = "one"
mp.m_fixed64[2**64 - 1] = "max"
mp.m_sfixed32[-1] = "neg"
mp.m_sfixed64[2**63 - 1] = "max"
mp.m_bool[True] = "t"
mp.m_bool[False] = "f"
mp.m_string[""] = "empty key"
mp.m_string["\u00e9"] = ""
mp.m_nested["n"].a = 1
mp.m_nested["empty"].SetInParent()
mp.m_enum["r"] = pb.RED
mp.m_enum["zero"] = 0
mp.m_enum["unknown"] = 42
mp.m_bytes["b"] = b"\x01\x02"
mp.m_bytes["none"] = b""
mp.m_double["nan"] = math.nan
mp.m_double["zero"] = 0.0
mp.m_i64["k"] = -1
canon("nan_maps_all", mp)

# ---- oneofs ----
canon("oneof_int_zero", pb.Oneofs(o_int=0))
canon("oneof_str_empty", pb.Oneofs(o_str=""))
canon("oneof_msg_empty", pb.Oneofs(o_msg=pb.Nested()))
canon("oneof_enum_zero", pb.Oneofs(o_enum=0))
canon("oneof_enum_unknown", pb.Oneofs(o_enum=99))
o = pb.Oneofs(after="a")
o.o_value.null_value = 0
canon("oneof_value_null", o)
canon("oneof_none", pb.Oneofs(after="x"))

# ---- well-known types ----
def ts(seconds, nanos=0):
    return timestamp_pb2.Timestamp(seconds=seconds, nanos=nanos)


def dur(seconds, nanos=0):
    return duration_pb2.Duration(seconds=seconds, nanos=nanos)


canon("timestamp_min", pb.Wkt(ts=ts(-62135596800)))
canon("timestamp_max", pb.Wkt(ts=ts(253402300799, 999999999)))
canon("timestamp_epoch", pb.Wkt(ts=ts(0)))
canon("timestamp_fractions", pb.Wkt(ts_list=[ts(1, 1000000), ts(1, 10000), ts(1, 1), ts(-1, 500000000),
                                             ts(1700000000, 123456789), ts(951782400)]))
canon("duration_zero", pb.Wkt(dur=dur(0)))
canon("duration_fractions", pb.Wkt(dur_list=[dur(1, 500000000), dur(0, 1000), dur(0, 1), dur(-1, -500000000),
                                             dur(0, -1), dur(-5), dur(315576000000, 999999999),
                                             dur(-315576000000, -999999999), dur(0, -10000000)]))
w = pb.Wkt()
w.mask.paths.extend(["a.b_c", "d", "foo_bar.baz_qux_x"])
canon("field_mask", w)
w = pb.Wkt()
w.mask.SetInParent()
canon("field_mask_empty", w)
w = pb.Wkt()
w.st.update({"n": 1.5, "i": 3, "s": "x", "b": False, "z": None,
             "l": [1, "two", None, [], [[None]], {"k": {}}], "o": {"deep": {"deeper": [True]}}})
canon("struct_nested", w)
w = pb.Wkt()
w.st.SetInParent()
canon("struct_empty", w)
w = pb.Wkt()
w.val.null_value = 0
canon("value_null", w)
canon("value_number", pb.Wkt(val=struct_pb2.Value(number_value=-2.5)))
canon("value_integral_number", pb.Wkt(val=struct_pb2.Value(number_value=3)))
canon("value_string", pb.Wkt(val=struct_pb2.Value(string_value="")))
canon("value_bool", pb.Wkt(val=struct_pb2.Value(bool_value=False)))
w = pb.Wkt()
w.val.list_value.SetInParent()
canon("value_empty_list", w)
w = pb.Wkt()
w.val.struct_value.SetInParent()
canon("value_empty_struct", w)
w = pb.Wkt()
w.lv.extend([1, None, "s", {"a": None}])
canon("list_value", w)
w = pb.Wkt()
w.lv.SetInParent()
canon("list_value_empty", w)
w = pb.Wkt()
w.vmap["a"].null_value = 0
w.vmap["b"].number_value = 1
w.vlist.add().null_value = 0
w.vlist.add().string_value = "s"
canon("value_map_and_list", w)
canon("null_value_field", pb.Wkt(nv=0))
w = pb.Wkt()
w.empty.SetInParent()
canon("empty", w)
w = pb.Wkt()
w.any.Pack(pb.Nested(a=5, b="x", child=pb.Nested(a=1)))
canon("any_user_message", w)
w = pb.Wkt()
w.any.Pack(pb.Nested())
canon("any_user_message_empty", w)
w = pb.Wkt()
w.any.Pack(dur(1, 500000000))
canon("any_duration", w)
w = pb.Wkt()
w.any.Pack(ts(0))
canon("any_timestamp", w)
w = pb.Wkt()
w.any.Pack(wrappers_pb2.Int64Value(value=-3))
canon("any_wrapper", w)
w = pb.Wkt()
w.any.Pack(struct_pb2.Struct(fields={"k": struct_pb2.Value(string_value="v")}))
canon("any_struct", w)
w = pb.Wkt()
w.any.Pack(struct_pb2.Value(number_value=2))
canon("any_value", w)
w = pb.Wkt()
inner = pb.Wkt()
inner.any.Pack(pb.Nested(a=2))
w.any.Pack(inner)
canon("any_in_any_field", w)
w2 = pb.Wkt()
w2.anys.add().Pack(pb.Nested(b="in list"))
canon("any_repeated", w2)
w = pb.Wkt()
w.any.SetInParent()
canon("any_empty", w)
w = pb.Wkt()
a = any_pb2.Any()
a.Pack(pb.Nested(a=7))
w.any.Pack(a)
canon("any_of_any", w)
w = pb.Wkt()
w.any.Pack(empty_pb2.Empty())
canon("any_empty_message", w)
w = pb.Wkt()
w.any.Pack(field_mask_pb2.FieldMask(paths=["a_b"]))
canon("any_field_mask", w)
w = pb.Wkt(w_double=wrappers_pb2.DoubleValue(value=0), w_float=wrappers_pb2.FloatValue(value=1.5),
           w_int64=wrappers_pb2.Int64Value(value=-(2**63)), w_uint64=wrappers_pb2.UInt64Value(value=2**64 - 1),
           w_int32=wrappers_pb2.Int32Value(value=0), w_uint32=wrappers_pb2.UInt32Value(value=2**32 - 1),
           w_bool=wrappers_pb2.BoolValue(value=False), w_string=wrappers_pb2.StringValue(value=""),
           w_bytes=wrappers_pb2.BytesValue(value=b"\xff"))
canon("wrappers", w)
w = pb.Wkt(w_double=wrappers_pb2.DoubleValue(value=math.nan), w_float=wrappers_pb2.FloatValue(value=math.inf))
canon("nan_wrappers_nonfinite", w)
w = pb.Wkt(w_list=[wrappers_pb2.Int64Value(value=0), wrappers_pb2.Int64Value(value=5)])
canon("wrapper_list", w)

# ---- from the wire ----
for name, paths in [("field_mask_upper_case", ["a_B"]), ("field_mask_double_underscore", ["a__b"]),
                    ("field_mask_digit_after_underscore", ["a_1"]),
                    ("field_mask_trailing_underscore", ["ok", "a_"])]:
    from_wire(name, pb.Wkt(mask=field_mask_pb2.FieldMask(paths=paths)), {3: {1: paths}}, "mask")
from_wire("field_mask_leading_underscore", pb.Wkt(mask=field_mask_pb2.FieldMask(paths=["_a.b_c"])),
          {3: {1: ["_a.b_c"]}})
# json_format 3.21 prints a Value's NaN and infinities as strings (which
# read back as string values), not as an error
from_wire("value_nan", pb.Wkt(val=struct_pb2.Value(number_value=math.nan)), {5: {2: math.nan}})
from_wire("value_infinity", pb.Wkt(vlist=[struct_pb2.Value(number_value=-math.inf)]),
          {22: [{2: -math.inf}]})

# ---- accepted alternatives ----
accept("proto_names", "Scalars", '{"f_int32": 1, "f_double": 2.5, "o_int32": 0, "f_enum": "RED"}')
accept("json_name_by_proto_name", "Scalars", '{"renamed": "x"}')
accept("json_name", "Scalars", '{"customName": "x"}')
accept("int32_as_string", "Scalars", '{"fInt32": "-123", "fUint32": "4294967295", "fSfixed32": "7"}')
accept("int32_as_exp_number", "Scalars", '{"fInt32": 1e3, "fUint32": 2.0, "fSint32": -1E2}')
accept("int64_as_number", "Scalars", '{"fInt64": -9007199254740991, "fUint64": 18446744073709551615}')
accept("int64_exact_exp", "Scalars", '{"fInt64": 1e18, "fFixed64": 5.0}')
accept("uint64_max_unquoted_in_list_and_map", "Repeated",
       '{"rUint64": [18446744073709551615, 9223372036854775808, 1]}')
accept("int_literal_past_int64_for_double", "Scalars",
       '{"fDouble": 100000000000000000000, "fFloat": -36893488147419103232}')
accept("int_literal_past_int64_in_value", "Wkt", '{"val": 123456789012345678901234567890}')
accept("int64_as_string_limits", "Scalars",
       '{"fInt64": "-9223372036854775808", "fSint64": "9223372036854775807", '
       '"fUint64": "18446744073709551615"}')
accept("defaults_explicit", "Scalars",
       '{"fInt32": 0, "fInt64": "0", "fDouble": 0, "fFloat": 0.0, "fBool": false, "fString": "", '
       '"fBytes": "", "fEnum": "COLOR_UNSPECIFIED", "nested": null}')
accept("nulls_are_defaults", "Scalars", '{"fInt32": null, "fString": null, "oInt32": null, "fEnum": null}')
accept("floats_as_strings", "Scalars", '{"fDouble": "1.5", "fFloat": "-2.25"}')
accept("float_exponent_string", "Scalars", '{"fDouble": "1e3", "fFloat": "1E-3"}')
accept("float_specials", "Scalars", '{"fDouble": "-Infinity", "fFloat": "NaN"}')
accept("float_rounds_to_single", "Scalars", '{"fFloat": 0.1, "fDouble": 0.1}')
accept("float_int_number", "Scalars", '{"fFloat": 3, "fDouble": -4}')
# a quoted number past the range is an infinity (python's float()), a
# quoted float past FLT_MAX too; one too small is 0
accept("quoted_real_overflow", "Repeated",
       '{"rDouble": ["1e400", "-1e400", "1e-400", 1e-400], "rFloat": ["1e400", "-3.5e38", "1e-50"]}')
accept("enum_by_number", "Scalars", '{"fEnum": 2, "oEnum": 0}')
accept("enum_unknown_number", "Scalars", '{"fEnum": 12345}')
accept("enum_negative_number", "Scalars", '{"fEnum": -1}')
accept("bytes_url_safe", "Scalars", '{"fBytes": "-_-_"}')
accept("bytes_no_padding", "Scalars", '{"fBytes": "AQI"}')
accept("bytes_url_safe_no_padding", "Scalars", '{"fBytes": "-w"}')
accept("bool_true", "Scalars", '{"fBool": true}')
accept("unicode_escapes", "Scalars", '{"fString": "\\u00e9\\ud83d\\ude00\\u0000x"}')
accept("nested_proto_names", "Scalars", '{"nested": {"a": "5", "child": {"b": "c"}}}')
accept("repeated_strings_numbers", "Repeated",
       '{"r_int32": ["1", -2], "rInt64": [3, "-4"], "rUint64": ["18446744073709551615"], '
       '"rFloat": ["Infinity", 1], "rEnum": ["GREEN", 1, 77], "rBytes": ["_w", "AA=="]}')
accept("repeated_empty", "Repeated", '{"rInt32": [], "rNested": []}')
accept("map_keys", "Maps",
       '{"mInt32": {"-1": "a", "2147483647": "b"}, "m_int64": {"-9223372036854775808": "c"}, '
       '"mUint64": {"18446744073709551615": "d"}, "mBool": {"true": "t", "false": "f"}, '
       '"mSfixed64": {"0": "z"}}')
accept("map_values", "Maps",
       '{"mEnum": {"a": 1, "b": "GREEN", "c": 0}, "mBytes": {"x": "-_8"}, "mDouble": {"i": "Infinity", '
       '"n": "1e2"}, "mI64": {"k": 5}, "mNested": {"e": {}}}')
accept("map_empty", "Maps", '{"mInt32": {}}')
accept("oneof_with_null_sibling", "Oneofs", '{"oInt": 5, "oStr": null}')
accept("oneof_null_only", "Oneofs", '{"oMsg": null}')
accept("oneof_value_null", "Oneofs", '{"oValue": null}')
accept("oneof_proto_name", "Oneofs", '{"o_str": "s"}')
accept("timestamp_offsets", "Wkt",
       '{"tsList": ["1970-01-01T01:00:00+01:00", "1969-12-31T19:00:00-05:00", '
       '"2020-02-29T12:30:45.5+05:30", "2000-01-01T00:00:00.1234567Z", "2000-01-01T00:00:00.12Z"]}')
accept("timestamp_max_offset", "Wkt", '{"ts": "2000-01-01T00:00:00-23:59"}')
accept("duration_forms", "Wkt",
       '{"durList": ["1.5s", "-0.5s", "0.1234567s", "1.000s", "-0s", "00001s", "0.000000000s"]}')
accept("field_mask_forms", "Wkt", '{"mask": "fooBar,a.bC.dEf"}')
accept("struct_ints", "Wkt", '{"st": {"i": 1, "e": 1e2, "neg": -0, "l": [1, 2]}, "val": 5}')
accept("value_forms", "Wkt", '{"vlist": [null, true, 1, "s", [], {}], "vmap": {"n": null}}')
accept("null_value_field", "Wkt", '{"nv": null}')
accept("null_value_by_name", "Wkt", '{"nv": "NULL_VALUE"}')
accept("null_value_by_number", "Wkt", '{"nv": 0}')
accept("wrappers_alternatives", "Wkt",
       '{"wInt64": 5, "wUint64": "7", "wInt32": "-3", "wUint32": 4e0, "wDouble": "NaN", '
       '"wFloat": "1.5", "wBytes": "-_8", "wBool": true, "wString": ""}')
accept("wrapper_null", "Wkt", '{"wInt32": null, "wString": null}')
accept("any_type_last", "Wkt",
       '{"any": {"a": 1, "b": "x", "@type": "type.googleapis.com/jsonmap.Nested"}}')
accept("any_proto_names", "Wkt",
       '{"any": {"@type": "type.googleapis.com/jsonmap.Scalars", "f_int32": "5", "renamed": "r"}}')
accept("any_wkt_alt", "Wkt",
       '{"any": {"@type": "type.googleapis.com/google.protobuf.Timestamp", '
       '"value": "1970-01-01T00:00:01+00:00"}}')
accept("any_wrapper_alt", "Wkt",
       '{"any": {"@type": "type.googleapis.com/google.protobuf.UInt64Value", "value": 12}}')
accept("any_custom_host", "Wkt", '{"any": {"@type": "example.com/x/jsonmap.Nested", "a": 2}}')
accept("any_empty_object", "Wkt", '{"any": {}}')
accept("empty_alt", "Wkt", '{"empty": {}}')
accept("whitespace", "Scalars", ' \n\t{ "fInt32" : 1 }\r\n ')

# ---- rejected ----
J = None  # refused by the JSON parser: line and column, no field path
reject("duplicate_key", "Scalars", '{"fInt32": 1, "fInt32": 2}', J)
reject("duplicate_key_nested", "Scalars", '{"nested": {"a": 1, "a": 2}}', J)
reject("trailing_garbage", "Scalars", '{"fInt32": 1} x', J)
reject("trailing_comma", "Scalars", '{"fInt32": 1,}', J)
reject("not_json", "Scalars", "fInt32: 1", J)
reject("unpaired_surrogate", "Scalars", '{"fString": "\\ud800"}', J)
reject("unknown_field", "Scalars", '{"nope": 1}', "nope")
reject("unknown_field_nested", "Scalars", '{"nested": {"child": {"zz": 1}}}', "nested.child.zz")
reject("wrong_case_name", "Scalars", '{"FInt32": 1}', "FInt32")
reject("string_for_bool", "Scalars", '{"fBool": "true"}', "fBool")
reject("number_for_bool", "Scalars", '{"fBool": 1}', "fBool")
reject("number_for_string", "Scalars", '{"fString": 1}', "fString")
reject("bool_for_int", "Scalars", '{"fInt32": true}', "fInt32")
reject("object_for_int", "Scalars", '{"fInt64": {}}', "fInt64")
reject("array_for_scalar", "Scalars", '{"fInt32": [1]}', "fInt32")
reject("string_for_message", "Scalars", '{"nested": "x"}', "nested")
reject("int32_too_big", "Scalars", '{"fInt32": 2147483648}', "fInt32")
reject("int32_too_small", "Scalars", '{"fInt32": "-2147483649"}', "fInt32")
reject("uint32_negative", "Scalars", '{"fUint32": -1}', "fUint32")
reject("uint32_too_big", "Scalars", '{"fFixed32": 4294967296}', "fFixed32")
reject("int64_too_big", "Scalars", '{"fInt64": "9223372036854775808"}', "fInt64")
reject("int64_too_small", "Scalars", '{"fSfixed64": "-9223372036854775809"}', "fSfixed64")
reject("uint64_too_big", "Scalars", '{"fUint64": "18446744073709551616"}', "fUint64")
reject("uint64_negative", "Scalars", '{"fUint64": "-1"}', "fUint64")
reject("int64_too_big_unquoted", "Scalars", '{"fInt64": 9223372036854775808}', "fInt64")
reject("int64_too_small_unquoted", "Scalars", '{"fSint64": -9223372036854775809}', "fSint64")
reject("uint64_too_big_unquoted", "Scalars", '{"fUint64": 18446744073709551616}', "fUint64")
reject("int32_past_int64_unquoted", "Scalars", '{"fInt32": 99999999999999999999}', "fInt32")
reject("string_given_big_int", "Scalars", '{"fString": 18446744073709551616}', "fString")
reject("bool_given_big_int", "Scalars", '{"fBool": 18446744073709551616}', "fBool")
reject("duration_given_big_int", "Wkt", '{"dur": 18446744073709551616}', "dur")
reject("int_fraction", "Scalars", '{"fInt32": 1.5}', "fInt32")
reject("int_fraction_string", "Scalars", '{"fInt64": "1.5"}', "fInt64")
reject("int_exp_string", "Scalars", '{"fInt32": "1e3"}', "fInt32")
reject("int_space_string", "Scalars", '{"fInt32": " 1"}', "fInt32")
reject("int_empty_string", "Scalars", '{"fInt32": ""}', "fInt32")
reject("int_hex_string", "Scalars", '{"fInt32": "0x10"}', "fInt32")
reject("int_nan_string", "Scalars", '{"fInt32": "NaN"}', "fInt32")
reject("float_too_big", "Scalars", '{"fFloat": 3.5e38}', "fFloat")
reject("float_too_small", "Scalars", '{"fFloat": -3.5e38}', "fFloat")
reject("double_number_overflow", "Scalars", '{"fDouble": 1e400}', J)
reject("double_number_overflow_negative", "Repeated", '{"rDouble": [-1e400]}', J)
reject("float_number_overflow", "Scalars", '{"fFloat": 1e400}', J)
reject("double_bad_string", "Scalars", '{"fDouble": "abc"}', "fDouble")
reject("double_lowercase_nan", "Scalars", '{"fDouble": "nan"}', "fDouble")
reject("enum_unknown_name", "Scalars", '{"fEnum": "PURPLE"}', "fEnum")
reject("enum_nul", "Scalars", '{"fEnum": "RED\\u0000x"}', "fEnum")
reject("timestamp_nul", "Wkt", '{"ts": "2020-01-01T00:00:00Z\\u0000"}', "ts")
reject("enum_lowercase", "Scalars", '{"fEnum": "red"}', "fEnum")
reject("bytes_bad_length", "Scalars", '{"fBytes": "A"}', "fBytes")
reject("bytes_number", "Scalars", '{"fBytes": 5}', "fBytes")
reject("repeated_not_array", "Repeated", '{"rInt32": 1}', "rInt32")
reject("repeated_null_element", "Repeated", '{"rInt32": [1, null]}', "rInt32[1]")
reject("repeated_null_message", "Repeated", '{"rNested": [{}, null]}', "rNested[1]")
reject("repeated_bad_element", "Repeated", '{"rString": ["a", 2]}', "rString[1]")
reject("repeated_nested_bad", "Repeated", '{"rNested": [{"a": "x"}]}', "rNested[0].a")
reject("map_not_object", "Maps", '{"mString": []}', "mString")
reject("map_bad_int_key", "Maps", '{"mInt32": {"x": "a"}}', 'mInt32["x"]')
reject("map_key_out_of_range", "Maps", '{"mUint32": {"4294967296": "a"}}', 'mUint32["4294967296"]')
reject("map_bad_bool_key", "Maps", '{"mBool": {"1": "a"}}', 'mBool["1"]')
reject("map_null_value", "Maps", '{"mString": {"a": null}}', 'mString["a"]')
reject("map_null_message_value", "Maps", '{"mNested": {"a": null}}', 'mNested["a"]')
reject("map_bad_value", "Maps", '{"mDouble": {"a": "x"}}', 'mDouble["a"]')
reject("oneof_two_members", "Oneofs", '{"oInt": 1, "oStr": "x"}', "oStr")
reject("timestamp_bad_month", "Wkt", '{"ts": "2020-13-01T00:00:00Z"}', "ts")
reject("timestamp_bad_day", "Wkt", '{"ts": "2021-02-29T00:00:00Z"}', "ts")
reject("timestamp_bad_hour", "Wkt", '{"ts": "2020-01-01T24:00:00Z"}', "ts")
reject("timestamp_leap_second", "Wkt", '{"ts": "2016-12-31T23:59:60Z"}', "ts")
reject("timestamp_lowercase_z", "Wkt", '{"ts": "2020-01-01T00:00:00z"}', "ts")
reject("timestamp_lowercase_t", "Wkt", '{"ts": "2020-01-01t00:00:00Z"}', "ts")
reject("timestamp_no_zone", "Wkt", '{"ts": "2020-01-01T00:00:00"}', "ts")
reject("timestamp_offset_no_colon", "Wkt", '{"ts": "2020-01-01T00:00:00+0100"}', "ts")
reject("timestamp_space", "Wkt", '{"ts": "2020-01-01 00:00:00Z"}', "ts")
reject("timestamp_ten_digits", "Wkt", '{"ts": "2020-01-01T00:00:00.1234567890Z"}', "ts")
reject("timestamp_trailing", "Wkt", '{"ts": "2020-01-01T00:00:00Zx"}', "ts")
reject("timestamp_year_zero", "Wkt", '{"ts": "0000-12-31T00:00:00Z"}', "ts")
reject("timestamp_number", "Wkt", '{"ts": 0}', "ts")
reject("timestamp_date_only", "Wkt", '{"ts": "2020-01-01"}', "ts")
reject("timestamp_list_bad", "Wkt", '{"tsList": ["1970-01-01T00:00:00Z", "x"]}', "tsList[1]")
reject("duration_no_s", "Wkt", '{"dur": "1"}', "dur")
reject("duration_number", "Wkt", '{"dur": 1.5}', "dur")
reject("duration_uppercase_s", "Wkt", '{"dur": "1S"}', "dur")
reject("duration_too_long", "Wkt", '{"dur": "315576000001s"}', "dur")
reject("duration_too_negative", "Wkt", '{"dur": "-315576000001s"}', "dur")
reject("duration_units", "Wkt", '{"dur": "1m"}', "dur")
reject("duration_empty", "Wkt", '{"dur": ""}', "dur")
reject("field_mask_underscore", "Wkt", '{"mask": "foo_bar"}', "mask")
reject("field_mask_number", "Wkt", '{"mask": 1}', "mask")
reject("struct_not_object", "Wkt", '{"st": [1]}', "st")
reject("struct_string", "Wkt", '{"st": "x"}', "st")
reject("list_value_not_array", "Wkt", '{"lv": {}}', "lv")
reject("any_no_type", "Wkt", '{"any": {"a": 1}}', "any")
reject("any_unknown_type", "Wkt", '{"any": {"@type": "type.googleapis.com/no.Such"}}', "any")
reject("any_unknown_field", "Wkt", '{"any": {"@type": "type.googleapis.com/jsonmap.Nested", "zz": 1}}',
       "any.zz")
reject("any_wkt_without_value", "Wkt",
       '{"any": {"@type": "type.googleapis.com/google.protobuf.Duration"}}', "any")
reject("any_wkt_bad_value", "Wkt",
       '{"any": {"@type": "type.googleapis.com/google.protobuf.Duration", "value": "x"}}', "any.value")
reject("any_not_object", "Wkt", '{"any": "x"}', "any")
reject("wrapper_wrong_type", "Wkt", '{"wBool": "true"}', "wBool")
reject("wrapper_out_of_range", "Wkt", '{"wUint32": -1}', "wUint32")
reject("wrapper_object", "Wkt", '{"wInt32": {"value": 1}}', "wInt32")
reject("empty_with_field", "Wkt", '{"empty": {"a": 1}}', "empty.a")
reject("empty_not_object", "Wkt", '{"empty": 1}', "empty")
reject("null_value_bad", "Wkt", '{"nv": "NULL"}', "nv")
reject("nested_not_object", "Scalars", '{"nested": [1]}', "nested")

with open(OUT, "w") as f:
    json.dump({"generator": "tests/unit/codegen/json/make_golden.py (python3-protobuf 3.21.12)",
               "canonical": canonical, "accepted": accepted, "rejected": rejected, "wire": wire},
              f, indent=1, ensure_ascii=False)
    f.write("\n")
print("%s: %d canonical, %d accepted, %d rejected, %d wire" % (OUT, len(canonical), len(accepted),
                                                                len(rejected), len(wire)))
