// Every generated header included from C++ (-std=c++11 -pedantic -Werror):
// the build of this file is the test.
#include "all.rdmx.h"
#include "evo_v1.rdmx.h"
#include "evo_v2.rdmx.h"
#include "imp_dep.rdmx.h"
#include "imp_main.rdmx.h"
#include "keywords.rdmx.h"
#include "proto2.rdmx.h"
#include "stream.rdmx.h"
#include "svc.rdmx.h"

int rdmx_codegen_cxx_include_check();

int rdmx_codegen_cxx_include_check()
{
	rt_Oneofs o;
	Keywords k;
	hello_HelloRequest req;
	rt_Oneofs_init(&o);
	o.choice_case = rt_Oneofs_choice_b;
	o.b = rdmx_str_c("x");
	Keywords_init(&k);
	k.int_ = 1;
	k.union_case = Keywords_union_struct;
	k.struct_ = 2;
	hello_HelloRequest_init(&req);
	return static_cast<int>(rt_Oneofs_encoded_size(&o) + HELLO_GREETER_SAYHELLO_ID % 2) +
	       (STREAMS_V1_KINDS_CHAT_KIND == RDMX_RPC_BIDI_STREAMING) +
	       k.int_;
}
