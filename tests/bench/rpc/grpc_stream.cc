// grpc_stream: the gRPC C++ anchor of the streaming benchmark, sync API:
// server-streaming messages/s (Flood), bidi ping-pong latency per message
// (Ping) and the unary round trip (Unary), with stream_bench's RESULT lines.
//   grpc_stream -l PORT                         (server)
//   grpc_stream [-s SIZE] [-n MSGS] [-r ROUNDS] HOST:PORT
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <getopt.h>
#include <grpcpp/grpcpp.h>

#include "stream.grpc.pb.h"

using rdmxbench::Blob;
using rdmxbench::Count;
using rdmxbench::Streams;

static uint64_t now_ns()
{
	return (uint64_t)std::chrono::duration_cast<std::chrono::nanoseconds>(
		       std::chrono::steady_clock::now().time_since_epoch())
		.count();
}

class StreamsImpl final : public Streams::Service {
	grpc::Status Flood(grpc::ServerContext *, const Count *req,
	                   grpc::ServerWriter<Blob> *w) override
	{
		Blob b;
		b.set_data(std::string(req->size(), '\xa5'));
		for (uint32_t i = 0; i < req->n(); i++)
			if (!w->Write(b))
				return grpc::Status(grpc::StatusCode::CANCELLED, "write failed");
		return grpc::Status::OK;
	}
	grpc::Status Ping(grpc::ServerContext *, grpc::ServerReaderWriter<Blob, Blob> *rw) override
	{
		Blob b;
		while (rw->Read(&b))
			if (!rw->Write(b))
				break;
		return grpc::Status::OK;
	}
	grpc::Status Unary(grpc::ServerContext *, const Blob *req, Blob *resp) override
	{
		resp->set_data(req->data());
		return grpc::Status::OK;
	}
};

int main(int argc, char **argv)
{
	size_t size = 64;
	unsigned long n = 100000, rounds = 20000;
	int port = 0, c;

	while ((c = getopt(argc, argv, "l:s:n:r:")) != -1) {
		switch (c) {
		case 'l': port = atoi(optarg); break;
		case 's': size = strtoul(optarg, nullptr, 0); break;
		case 'n': n = strtoul(optarg, nullptr, 0); break;
		case 'r': rounds = strtoul(optarg, nullptr, 0); break;
		default: return 2;
		}
	}
	if (port) {
		StreamsImpl svc;
		grpc::ServerBuilder b;
		b.AddListeningPort("127.0.0.1:" + std::to_string(port), grpc::InsecureServerCredentials());
		b.RegisterService(&svc);
		std::unique_ptr<grpc::Server> server(b.BuildAndStart());
		if (!server)
			return 1;
		printf("grpc_stream: listening on port %d\n", port);
		fflush(stdout);
		server->Wait();
		return 0;
	}
	if (optind >= argc)
		return 2;
	auto ch = grpc::CreateChannel(argv[optind], grpc::InsecureChannelCredentials());
	if (!ch->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10))) {
		fprintf(stderr, "grpc_stream: cannot connect to %s\n", argv[optind]);
		return 1;
	}
	auto stub = Streams::NewStub(ch);
	{
		grpc::ClientContext ctx;
		Count req;
		Blob b;
		unsigned long got = 0;
		req.set_n((uint32_t)n);
		req.set_size((uint32_t)size);
		uint64_t t0 = now_ns();
		auto r = stub->Flood(&ctx, req);
		while (r->Read(&b))
			got++;
		grpc::Status st = r->Finish();
		uint64_t t1 = now_ns();
		if (!st.ok() || got != n)
			return 1;
		printf("RESULT grpc stream %zu %lu %.0f\n", size, n, (double)n * 1e9 / (double)(t1 - t0));
	}
	{
		grpc::ClientContext ctx;
		Blob b;
		b.set_data(std::string(size, '\xa5'));
		auto rw = stub->Ping(&ctx);
		uint64_t t0 = now_ns();
		for (unsigned long i = 0; i < rounds; i++)
			if (!rw->Write(b) || !rw->Read(&b))
				return 1;
		uint64_t t1 = now_ns();
		rw->WritesDone();
		if (!rw->Finish().ok())
			return 1;
		printf("RESULT grpc bidi %zu %lu %.2f\n", size, rounds, (double)(t1 - t0) / 1e3 / (double)rounds);
	}
	{
		Blob b, out;
		b.set_data(std::string(size, '\xa5'));
		uint64_t t0 = now_ns();
		for (unsigned long i = 0; i < rounds; i++) {
			grpc::ClientContext ctx;
			if (!stub->Unary(&ctx, b, &out).ok())
				return 1;
		}
		uint64_t t1 = now_ns();
		printf("RESULT grpc unary %zu %lu %.2f\n", size, rounds, (double)(t1 - t0) / 1e3 / (double)rounds);
	}
	return 0;
}
