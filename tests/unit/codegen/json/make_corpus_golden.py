#!/usr/bin/python3
"""Writes corpus_golden.json: messages of the rw/ corpus files with every
field kind set, as protobuf's python json_format prints them.

One-off generator, NOT run by the tests (test_corpus_rw.c reads the file it
wrote). It needs protoc and python3-protobuf (Debian's 3.21.12) and runs as
    /usr/bin/python3 tests/unit/codegen/json/make_corpus_golden.py
from anywhere. Each case: the proto file, the message's full name and
MessageToJson's text (defaults left out) as "input", and that text as a
JSON value as "canonical". test_corpus_rw.c reads the input with rdmx-call's
JSON mapping (pbjson) into rdmx's wire, decodes it with the generated
decoder, encodes it with the generated encoder and prints it back with
pbjson: the JSON must be the canonical one.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.normpath(os.path.join(HERE, "..", "..", "..", "corpus", "proto"))
OUT = os.path.join(HERE, "corpus_golden.json")
FILES = ["rw/pb2/unittest_import_public.proto", "rw/pb2/unittest_import.proto",
         "rw/pb2/unittest.proto", "rw/lang/presence.proto", "validate/validate.proto",
         "rw/lang/oneof_options.proto", "rw/otel/common/v1/common.proto",
         "rw/otel/trace/v1/trace.proto", "rw/lang/maps.proto", "rw/wkt/everything.proto",
         "rw/lang/numbers_limits.proto",
         "rw/lang/c_keywords.proto", "rw/lang/deep_nesting.proto"]

tmp = tempfile.mkdtemp(prefix="corpusgold")
subprocess.check_call(["protoc", "-I", ".", "-I", "third_party", "-I", "/usr/include",
                       "--python_out", tmp] + FILES, cwd=CORPUS)
sys.path.insert(0, tmp)

from google.protobuf import json_format  # noqa: E402
from rw.pb2 import unittest_pb2 as ut, unittest_import_pb2 as imp  # noqa: E402
from rw.lang import presence_pb2, oneof_options_pb2, maps_pb2, numbers_limits_pb2  # noqa: E402
from rw.lang import c_keywords_pb2, deep_nesting_pb2  # noqa: E402
from rw.otel.trace.v1 import trace_pb2  # noqa: E402
from rw.wkt import everything_pb2  # noqa: E402
from google.protobuf import duration_pb2, empty_pb2, struct_pb2, wrappers_pb2  # noqa: E402

cases = []


def add(name, path, msg):
    text = json_format.MessageToJson(msg, indent=None)
    cases.append({"name": name, "file": path, "type": msg.DESCRIPTOR.full_name,
                  "input": text, "canonical": json.loads(text)})


# proto2: every scalar, optional and repeated, groups, nested, foreign,
# imported and publicly imported types, a oneof, defaults overridden
t = ut.TestAllTypes()
t.optional_int32 = -2147483648
t.optional_int64 = -9007199254740993
t.optional_uint32 = 4294967295
t.optional_uint64 = 18446744073709551615
t.optional_sint32 = -7
t.optional_sint64 = -9223372036854775808
t.optional_fixed32 = 3000000000
t.optional_fixed64 = 9223372036854775808
t.optional_sfixed32 = -1
t.optional_sfixed64 = 9223372036854775807
t.optional_float = 1.5
t.optional_double = -2.25e-300
t.optional_bool = True
t.optional_string = "h\u00e9llo \U0001F600 \u65e5\u672c"
t.optional_bytes = b"\x00\x01\xfe\xff"
t.optionalgroup.a = 17
t.optional_nested_message.bb = 18
t.optional_foreign_message.c = 19
t.optional_import_message.d = 20
t.optional_nested_enum = ut.TestAllTypes.NEG
t.optional_foreign_enum = ut.FOREIGN_BAZ
t.optional_import_enum = imp.IMPORT_BAR
t.optional_string_piece = "piece"
t.optional_cord = "cord"
t.optional_public_import_message.e = -26
t.optional_public_import_message.tags.extend(["a", ""])
t.optional_lazy_message.bb = 27
t.repeated_int32.extend([1, -1, 0])
t.repeated_int64.extend([-9223372036854775808, 9223372036854775807])
t.repeated_uint32.extend([0, 4294967295])
t.repeated_uint64.extend([18446744073709551615])
t.repeated_sint32.extend([-2147483648, 2147483647])
t.repeated_sint64.extend([-5])
t.repeated_fixed32.extend([7])
t.repeated_fixed64.extend([8])
t.repeated_sfixed32.extend([-9])
t.repeated_sfixed64.extend([-10])
t.repeated_float.extend([0.5, -0.0, float("inf")])
t.repeated_double.extend([1e300, float("-inf")])
t.repeated_bool.extend([True, False])
t.repeated_string.extend(["x", "\u00ff"])
t.repeated_bytes.extend([b"", b"\x80"])
t.repeatedgroup.add().a = 46
t.repeatedgroup.add()
t.repeated_nested_message.add().bb = 48
t.repeated_foreign_message.add().d = 49
t.repeated_import_message.add().d = 50
t.repeated_nested_enum.extend([ut.TestAllTypes.FOO, ut.TestAllTypes.NEG])
t.repeated_foreign_enum.extend([ut.FOREIGN_FOO])
t.repeated_import_enum.extend([imp.IMPORT_BAZ])
t.default_int32 = 0
t.default_string = ""
t.default_nested_enum = ut.TestAllTypes.FOO
t.oneof_bytes = b"\x00"
add("proto2_all_types", "rw/pb2/unittest.proto", t)

t = ut.TestAllTypes()
t.oneof_nested_message.bb = 112
add("proto2_oneof_message", "rw/pb2/unittest.proto", t)

m = ut.TestMaps()
m.map_int32_int32[-1] = -2
m.map_int64_int64[-9223372036854775808] = 9223372036854775807
m.map_uint32_uint32[4294967295] = 0
m.map_uint64_uint64[18446744073709551615] = 1
m.map_sint32_sint32[-3] = 3
m.map_sint64_sint64[4] = -4
m.map_fixed32_fixed32[5] = 5
m.map_fixed64_fixed64[6] = 6
m.map_sfixed32_sfixed32[-7] = -7
m.map_sfixed64_sfixed64[-8] = -8
m.map_int32_float[1] = 0.25
m.map_int32_double[2] = -1e-10
m.map_bool_bool[True] = False
m.map_bool_bool[False] = True
m.map_string_string["k\u00e9y"] = "v\u00e0lue"
m.map_string_string[""] = ""
m.map_int32_bytes[3] = b"\xff\x00"
m.map_int32_enum[4] = imp.BAR
m.map_int32_foreign_message[5].c = 55
m.map_string_required["r"].a = 1
m.map_string_required["r"].b = 2
m.map_string_required["r"].c = 3
add("proto2_maps", "rw/pb2/unittest.proto", m)

r = ut.TestRequired(a=0, b=-1, c=2147483647)
r.optional_foreign.c = 1
add("proto2_required", "rw/pb2/unittest.proto", r)

x = ut.TestReallyLargeTagNumber(a=1, bb=268435455)
add("proto2_large_tag", "rw/pb2/unittest.proto", x)

mr = ut.TestMutualRecursionA()
mr.bb.a.bb.optional_int32 = 3
mr.subgroup.sub_message.b.optional_int32 = 4
mr.subgroup.not_in_this_scc.optional_int32 = 5
add("proto2_mutual_recursion_groups", "rw/pb2/unittest.proto", mr)

# proto3 explicit presence: every kind set to its zero value (printed
# because present) and implicit fields set
p = presence_pb2.Presence(o_int32=0, o_int64=0, o_uint32=0, o_uint64=0, o_sint32=0,
                          o_sint64=0, o_fixed32=0, o_fixed64=0, o_sfixed32=0, o_sfixed64=0,
                          o_float=0.0, o_double=0.0, o_bool=False, o_string="", o_bytes=b"",
                          o_level=presence_pb2.LEVEL_UNSPECIFIED, p_int32=5, p_string="s",
                          p_level=presence_pb2.LEVEL_LOW)
p.o_sub.SetInParent()
p.p_sub.note = "n"
p.r_sub.add()
p.r_sub.add().note = "2"
p.r_level.extend([presence_pb2.LEVEL_LOW, presence_pb2.LEVEL_UNSPECIFIED])
p.r_bytes.extend([b"", b"a"])
p.m_sub["k"].note = "v"
p.m_sub["empty"].SetInParent()
add("proto3_presence_zeros", "rw/lang/presence.proto", p)

# a oneof member of each kind
C = oneof_options_pb2.Choice
for field, value in [("i", -1), ("l", -9223372036854775808), ("u", 4294967295),
                     ("ul", 18446744073709551615), ("si", -2), ("sl", -3), ("fx", 4),
                     ("fl", 5), ("sfx", -6), ("sfl", -7), ("f", 0.0), ("d", -0.5),
                     ("b", False), ("s", ""), ("by", b"\x01"), ("e", 0)]:
    c = C(**{field: value})
    c.maybe = 0
    add("oneof_" + field, "rw/lang/oneof_options.proto", c)
c = C()
c.nested.nested.s = "deep"
c.nested.maybe_choice.dur.seconds = -1
c.nested.maybe_choice.dur.nanos = -500000000
c.other = "second"
c.n.b.e = oneof_options_pb2.KIND_A
add("oneof_nested", "rw/lang/oneof_options.proto", c)
c = C()
c.dur.SetInParent()
c.maybe_kind = oneof_options_pb2.KIND_UNSPECIFIED
c.n.c = ""
add("oneof_empty_message_member", "rw/lang/oneof_options.proto", c)

mp = maps_pb2.Maps()
mp.i32[-1] = "minus"
mp.i64[9223372036854775807].x = 1.5
mp.u32[0] = maps_pb2.BLUE
mp.u64[18446744073709551615] = b"\xff"
mp.s32[-2147483648] = 0.5
mp.s64[-9223372036854775808] = -1e300
mp.f32[4294967295] = True
mp.f64[0] = -1
mp.sf32[-1] = 18446744073709551615
mp.sf64[1] = -9223372036854775808
mp.flags[True].y = -2
mp.flags[False].SetInParent()
mp.colors["red"] = maps_pb2.RED
mp.colors["blue"] = maps_pb2.BLUE
mp.recursive["self"].i32[1] = "one"
mp.recursive["self"].recursive["deeper"].colors["g"] = maps_pb2.GREEN
mp.times["epoch"].seconds = 0
mp.times["later"].seconds = 1700000000
mp.times["later"].nanos = 123000000
mp.attributes["a"].string_value = "s"
mp.attributes["b"].array_value.values.add().int_value = -3
mp.attributes["c"].kvlist_value.values.add(key="k").value.bool_value = True
mp.attributes["d"].bytes_value = b"\x00"
mp.deep["d"].children["c"].modes[1] = maps_pb2.Maps.Inner.FAST
mp.modes["m"] = maps_pb2.Maps.Inner.MODE_UNSPECIFIED
mp.i32_entry.extend(["not", "an", "entry"])
add("maps_every_key_and_value", "rw/lang/maps.proto", mp)

sp = trace_pb2.Span(trace_id=bytes(range(16)), span_id=b"\xff" * 8, trace_state="k=v",
                    flags=0x101, name="GET /", kind=trace_pb2.Span.SPAN_KIND_SERVER,
                    start_time_unix_nano=1700000000000000000,
                    end_time_unix_nano=18446744073709551615, dropped_attributes_count=1)
sp.attributes.add(key="http.status").value.int_value = 200
sp.attributes.add(key="ratio").value.double_value = 0.1
sp.events.add(name="e", time_unix_nano=1).attributes.add(key="x").value.string_value = "y"
sp.links.add(trace_id=b"\x01", flags=0xffffffff)
sp.status.code = trace_pb2.Status.STATUS_CODE_ERROR
sp.status.message = "boom"
add("otel_span", "rw/otel/trace/v1/trace.proto", sp)

ak = everything_pb2.AllKnown()
ak.any.Pack(duration_pb2.Duration(seconds=-1, nanos=-5))
ak.api.name = "rw.Api"
ak.api.methods.add(name="M", request_streaming=True)
ak.api.version = "v1"
ak.method.name = "m"
ak.mixin.name = "mix"
ak.duration.seconds = 315576000000
ak.duration.nanos = 999999999
ak.empty.SetInParent()
ak.field_mask.paths.extend(["a.b", "c_d"])
ak.source_context.file_name = "f.proto"
ak.struct.fields["n"].null_value = 0
ak.struct.fields["l"].list_value.values.add().string_value = "x"
ak.value.number_value = 1.25
ak.list_value.values.add().bool_value = True
ak.null_value = 0
ak.timestamp.seconds = -62135596800
ak.type.name = "T"
ak.field.kind = 9
ak.field_kind = 18
ak.cardinality = 3
ak.enum.name = "E"
ak.enum_value.number = -1
ak.option.name = "o"
ak.syntax = 1
ak.double_value.value = 0.0
ak.float_value.value = -1.5
ak.int64_value.value = -9223372036854775808
ak.uint64_value.value = 18446744073709551615
ak.int32_value.value = 0
ak.uint32_value.value = 4294967295
ak.bool_value.value = False
ak.string_value.value = ""
ak.bytes_value.value = b"\xfb\xff"
ak.anys.add().Pack(struct_pb2.Struct(fields={"k": struct_pb2.Value(string_value="v")}))
ak.anys.add().Pack(everything_pb2.AllKnown(syntax=1))
ak.timestamps.add(seconds=253402300799, nanos=999999999)
ak.int32_values.add(value=-5)
ak.values.add().string_value = "v"
ak.any_map["a"].Pack(wrappers_pb2.Int64Value(value=-1))
ak.any_map["e"].Pack(empty_pb2.Empty())
ak.duration_map["d"].nanos = 1000
ak.wrapper_map[1].value = "w"
ak.value_map["v"].struct_value.fields["x"].number_value = 2
ak.struct_map["s"].SetInParent()
ak.at.seconds = 1
add("wkt_everything", "rw/wkt/everything.proto", ak)

ak = everything_pb2.AllKnown()
ak.nothing = 0
add("wkt_oneof_null", "rw/wkt/everything.proto", ak)

ak = everything_pb2.AllKnown()
ak.nulls.extend([0, 0])
add("wkt_repeated_null", "rw/wkt/everything.proto", ak)

ak = everything_pb2.AllKnown()
ak.null_map["z"] = 0
add("wkt_map_null", "rw/wkt/everything.proto", ak)

ak = everything_pb2.AllKnown()
ak.optional_null = 0
add("wkt_optional_null", "rw/wkt/everything.proto", ak)

e = numbers_limits_pb2.Edges(first=1, last=-9223372036854775808, below_reserved=18999,
                            above_reserved=20000, s32=-2147483648, s64=1,
                            sign=numbers_limits_pb2.SIGNED_MIN, minimum=-1)
e.signs.extend([numbers_limits_pb2.SIGNED_NEG_HEX, numbers_limits_pb2.SIGNED_MINUS_ONE,
                numbers_limits_pb2.SIGNED_OCT])
e.by_code[-1] = numbers_limits_pb2.SIGNED_HEX
add("limits_edges", "rw/lang/numbers_limits.proto", e)

# (rw/lang/mangle_clash.proto's fields share JSON names, as proto2 allows:
# test_corpus_rw.c checks them through the generated codecs only)

u = c_keywords_pb2.union()
getattr(u, "int")["k"].char = "c"
getattr(u, "long").extend([1, 3])
getattr(u, "case_").void = -1
add("keywords_union", "rw/lang/c_keywords.proto", u)

o = deep_nesting_pb2.Outside()
o.six.leaf = 1
o.six.root.two.three.four.five.only_leaf = 1
o.six.root.two.three.four.five.by_name["x"].up4.jump.add().leaf = 1
o.leaf_map["l"] = 1
o.six_map[True].root.absolute.leaves[-1] = 1
o.shadowed.shadow = 7
o.unshadowed.three.leaf = 1
add("deep_nesting", "rw/lang/deep_nesting.proto", o)

with open(OUT, "w") as fp:
    json.dump({"generator": "python3-protobuf json_format (make_corpus_golden.py)",
               "cases": cases}, fp, indent=1, ensure_ascii=False)
    fp.write("\n")
print("%d cases -> %s" % (len(cases), OUT))
