/* A TCP relay for the sealed-connection tests: stands in front of a tcp
 * device (its exports advertise the relay's port from relay_start on),
 * forwards to the device's data listener, records every byte of both
 * directions, and, armed, does one thing to the next whole record (a
 * flipped bit, a replay, a drop, a swap with the following record, or a
 * truncation inside it). Criterion asserts on setup failures. */
#ifndef RDMX_TEST_RELAY_H
#define RDMX_TEST_RELAY_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <rdmx/dev.h>

enum relay_mode { R_FORWARD, R_FLIP, R_REPLAY, R_DROP, R_REORDER, R_TRUNCATE };

#define RELAY_MAX_PAIRS 4

struct relay_dir {
	uint8_t *buf; /* record assembly (tampering modes) */
	size_t len, cap;
};

struct relay_pair {
	int fd[2]; /* 0: the dialer's side, 1: towards the device */
	struct relay_dir d[2];
	uint8_t *held;
	size_t held_len;
	int held_to;
};

struct relay {
	int lfd, wake[2];
	uint16_t port;
	struct sockaddr_storage target; /* the device's data listener */
	socklen_t target_len;
	pthread_t thread;
	enum relay_mode mode;
	int armed, done; /* atomics */
	int only_to;     /* -1: any record; 0 / 1: only records going to fd[0] / fd[1] */
	int skip;        /* armed: records (of only_to's direction) to let pass first */
	pthread_mutex_t lock;
	uint8_t *rec; /* every byte seen, both directions */
	size_t rec_len, rec_cap;
	struct relay_pair p[RELAY_MAX_PAIRS];
	int np;
};

/* Starts a relay in front of device `dev` (tcp provider). */
void relay_start(struct relay *r, struct rdmx_dev *dev, enum relay_mode mode);
/* Stops its thread and closes its sockets; the recording stays. */
void relay_stop(struct relay *r);
void relay_free(struct relay *r);
/* True when the recording holds needle[len]. */
bool relay_seen(const struct relay *r, const void *needle, size_t len);

#endif
