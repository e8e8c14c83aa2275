// grpc_echo: the gRPC C++ anchor of the RPC benchmark — a sync unary echo.
// The client runs INFLIGHT threads, each making blocking calls on one
// shared channel (so INFLIGHT calls are in flight), records every call's
// round trip, and prints the same RESULT line as rdmx-perf and tcp_echo.
//   grpc_echo [-s SIZE] [-n ITERS] [-t INFLIGHT] [-p PORT] [SERVER_ADDR]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <getopt.h>
#include <grpcpp/grpcpp.h>

#include "echo.grpc.pb.h"

using rdmxbench::Echo;
using rdmxbench::Msg;

static uint64_t now_ns()
{
	return (uint64_t)std::chrono::duration_cast<std::chrono::nanoseconds>(
		       std::chrono::steady_clock::now().time_since_epoch())
		.count();
}

class EchoImpl final : public Echo::Service {
	grpc::Status Echo(grpc::ServerContext *, const Msg *req, Msg *resp) override
	{
		resp->set_data(req->data());
		return grpc::Status::OK;
	}
};

static int serve(uint16_t port)
{
	EchoImpl svc;
	grpc::ServerBuilder b;
	std::string addr = "0.0.0.0:" + std::to_string(port);

	b.AddListeningPort(addr, grpc::InsecureServerCredentials());
	b.SetMaxReceiveMessageSize(256 << 20);
	b.SetMaxSendMessageSize(256 << 20);
	b.RegisterService(&svc);
	std::unique_ptr<grpc::Server> server(b.BuildAndStart());
	if (!server) {
		fprintf(stderr, "grpc_echo: cannot listen on %s\n", addr.c_str());
		return 1;
	}
	printf("grpc_echo: server on port %u\n", port);
	fflush(stdout);
	server->Wait();
	return 0;
}

static int client(const char *host, uint16_t port, size_t size, uint64_t iters, unsigned inflight)
{
	grpc::ChannelArguments args;
	args.SetMaxReceiveMessageSize(256 << 20);
	args.SetMaxSendMessageSize(256 << 20);
	auto ch = grpc::CreateCustomChannel(std::string(host) + ":" + std::to_string(port),
					    grpc::InsecureChannelCredentials(), args);
	if (!ch->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(30))) {
		fprintf(stderr, "grpc_echo: cannot connect\n");
		return 1;
	}
	uint64_t warm = std::min<uint64_t>(iters / 10, 1000);
	std::atomic<uint64_t> next{0}, errors{0};
	std::atomic<uint64_t> t0{0};
	std::vector<std::vector<uint64_t>> lat(inflight);
	std::string payload(size, 'x');
	std::vector<std::thread> th;

	for (unsigned i = 0; i < inflight; i++) {
		th.emplace_back([&, i] {
			auto stub = Echo::NewStub(ch);
			Msg req, resp;
			req.set_data(payload);
			for (;;) {
				uint64_t k = next.fetch_add(1);
				if (k >= iters + warm)
					break;
				if (k == warm)
					t0.store(now_ns());
				grpc::ClientContext ctx;
				uint64_t s = now_ns();
				grpc::Status st = stub->Echo(&ctx, req, &resp);
				uint64_t e = now_ns();
				if (!st.ok() || resp.data().size() != size)
					errors++;
				if (k >= warm)
					lat[i].push_back(e - s);
			}
		});
	}
	for (auto &t : th)
		t.join();
	double secs = (double)(now_ns() - t0.load()) / 1e9;
	std::vector<uint64_t> all;
	for (auto &v : lat)
		all.insert(all.end(), v.begin(), v.end());
	std::sort(all.begin(), all.end());
	if (errors || all.empty()) {
		fprintf(stderr, "grpc_echo: %llu calls failed\n", (unsigned long long)errors.load());
		return 1;
	}
	double p50 = (double)all[all.size() / 2] / 1000.0;
	double p99 = (double)all[(all.size() - 1) * 99 / 100] / 1000.0;
	printf("RESULT test=grpc_echo size=%zu p50_us=%.2f p99_us=%.2f mib_s=%.2f ops_per_s=%.0f\n",
	       size, p50, p99, (double)iters * (double)size / secs / 1048576.0,
	       (double)iters / secs);
	return 0;
}

int main(int argc, char **argv)
{
	size_t size = 64;
	uint64_t iters = 10000;
	unsigned inflight = 1;
	uint16_t port = 18700;
	int c;

	while ((c = getopt(argc, argv, "s:n:t:p:")) != -1) {
		switch (c) {
		case 's': size = strtoull(optarg, nullptr, 0); break;
		case 'n': iters = strtoull(optarg, nullptr, 0); break;
		case 't': inflight = (unsigned)strtoul(optarg, nullptr, 0); break;
		case 'p': port = (uint16_t)strtoul(optarg, nullptr, 0); break;
		default:
			fprintf(stderr, "usage: grpc_echo [-s SIZE] [-n ITERS] [-t INFLIGHT] [-p PORT] [SERVER]\n");
			return 2;
		}
	}
	if (!iters || !inflight)
		return 2;
	if (optind < argc)
		return client(argv[optind], port, size, iters, inflight);
	return serve(port);
}
