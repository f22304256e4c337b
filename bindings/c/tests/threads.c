/*
 * Breaking the one-call-at-a-time rule from C: four threads hammer one handle at once (a
 * bridge: pushers, pollers and a timer; a decoder: four pushers and pollers; a config:
 * three setters while bridges are created from it; an ACP connection: two pushers of the
 * agent's lines and two pollers). A call refused with AW_RESULT_BUSY is made
 * again until it gets in. Every call must return a documented status or
 * AW_RESULT_BUSY, nothing may crash, and the handle must come out whole: the decoder
 * counts every pushed line once and hands out every event once; the bridge hands out one
 * head and one end in all; the ACP connection counts every pushed line once.
 *
 *   threads [ROUNDS] [--require-busy]
 *
 * ROUNDS (default 2000) is each thread's number of rounds. With --require-busy it also
 * fails unless calls on each handle did overlap (some were refused with AW_RESULT_BUSY);
 * on one core, or under valgrind's serialised threads, they may never do. Views handed out
 * are never read here: another thread's next call invalidates them, which is why a real
 * program serialises each handle's calls. Includes only the public header.
 */
#define _POSIX_C_SOURCE 200112L
#include "agentwire.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

#define THREADS 4

static const char STREAM_BODY[] =
    "{\"model\":\"auto\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
/* Three lines a push, reasoning deltas: each is one line, one event and one frame (text
   may be held back a line to tell a recap), so the outputs can be counted. */
#define LINES_PER_PUSH 3
static const char TEXT[] =
    "{\"type\":\"thinking\",\"subtype\":\"delta\",\"text\":\"a\"}\n"
    "{\"type\":\"thinking\",\"subtype\":\"delta\",\"text\":\"b\"}\n"
    "{\"type\":\"thinking\",\"subtype\":\"delta\",\"text\":\"c\"}\n";
static const char RESULT[] = "{\"type\":\"result\",\"subtype\":\"success\",\"result\":\"ab\"}\n";

static long rounds = 2000;

/* What one thread saw. */
struct tally {
    long ok, busy, other;
    long heads, ends, events;
    aw_result unexpected;
};

static void count(struct tally *t, aw_result r)
{
    if (aw_result_is_status(r)) {
        t->ok++;
    } else {
        t->other++;
        t->unexpected = r;
    }
}

/* Makes a call until it is not refused as BUSY (letting the thread inside go on), leaving
   its result in `r` and counting it. */
#define RETRY(t, r, call)                                                                      \
    do {                                                                                       \
        while (((r) = (call)) == AW_RESULT_BUSY) {                                             \
            (t)->busy++;                                                                       \
            sched_yield();                                                                     \
        }                                                                                      \
        count((t), (r));                                                                       \
    } while (0)

#define CALL(t, call)                                                                          \
    do {                                                                                       \
        aw_result r_;                                                                          \
        RETRY(t, r_, call);                                                                    \
    } while (0)

static aw_bridge *bridge;
static aw_decoder *decoder;
static aw_config *config;
static aw_acp_connection *acp;

/* Drains the bridge; the kinds are copied, never the views. */
static void poll_bridge(struct tally *t)
{
    aw_output out;
    for (;;) {
        aw_result r;
        RETRY(t, r, aw_bridge_poll_output(bridge, &out));
        if (r != AW_RESULT_OK) {
            return;
        }
        t->heads += out.kind == AW_OUTPUT_KIND_HEAD;
        t->ends += out.kind == AW_OUTPUT_KIND_END;
    }
}

static void *bridge_pusher(void *arg)
{
    struct tally *t = (struct tally *)arg;
    long i;
    for (i = 0; i < rounds; i++) {
        CALL(t, aw_bridge_push_stdout(bridge, (const uint8_t *)TEXT, strlen(TEXT), (uint64_t)i));
        poll_bridge(t);
    }
    return NULL;
}

static void *bridge_timer(void *arg)
{
    struct tally *t = (struct tally *)arg;
    long i;
    for (i = 0; i < rounds; i++) {
        bool has;
        uint64_t deadline;
        aw_str session;
        CALL(t, aw_bridge_handle_timeout(bridge, (uint64_t)i));
        CALL(t, aw_bridge_poll_timeout(bridge, &has, &deadline));
        CALL(t, aw_bridge_session_id(bridge, &session));
        /* Answers without a result code: a refused one is the NULL answer. */
        (void)aw_bridge_is_ended(bridge);
        (void)aw_bridge_is_stream(bridge);
        (void)aw_bridge_last_error(bridge);
        poll_bridge(t);
    }
    return NULL;
}

static void *decoder_pusher(void *arg)
{
    struct tally *t = (struct tally *)arg;
    long i;
    aw_event event;
    aw_decoder_stats stats;
    for (i = 0; i < rounds; i++) {
        CALL(t, aw_decoder_push_stdout(decoder, (const uint8_t *)TEXT, strlen(TEXT)));
        for (;;) {
            aw_result r;
            RETRY(t, r, aw_decoder_poll_event(decoder, &event));
            if (r != AW_RESULT_OK) {
                break;
            }
            t->events += event.kind == AW_EVENT_KIND_REASONING_DELTA;
        }
        CALL(t, aw_decoder_get_stats(decoder, &stats));
    }
    return NULL;
}

static void *config_setter(void *arg)
{
    struct tally *t = (struct tally *)arg;
    long i;
    uint64_t value;
    for (i = 0; i < rounds; i++) {
        CALL(t, aw_config_set_keep_alive_ms(config, (uint64_t)i + 1));
        CALL(t, aw_config_get_keep_alive_ms(config, &value));
        CALL(t, aw_config_set_workspace(config, "/srv", 4));
    }
    return NULL;
}

/* Fewer rounds: creating a bridge renders its prompt. */
static void *bridge_maker(void *arg)
{
    struct tally *t = (struct tally *)arg;
    long i;
    for (i = 0; i < rounds / 20 + 1; i++) {
        aw_bridge *made = NULL;
        CALL(t, aw_bridge_new(AW_DIALECT_CHAT_COMPLETIONS, (const uint8_t *)STREAM_BODY,
                              strlen(STREAM_BODY), config, 0, 0, (uint64_t)i, &made));
        if (made == NULL) {
            t->other++;
        }
        aw_bridge_free(made);
    }
    return NULL;
}

/* Runs `bodies[i]` on THREADS threads, adds up their tallies into `sum`. */
static int run(void *(*bodies[THREADS])(void *), struct tally *sum)
{
    pthread_t threads[THREADS];
    struct tally tallies[THREADS];
    int i;
    memset(tallies, 0, sizeof tallies);
    for (i = 0; i < THREADS; i++) {
        if (pthread_create(&threads[i], NULL, bodies[i], &tallies[i]) != 0) {
            fprintf(stderr, "threads: pthread_create failed\n");
            return 0;
        }
    }
    for (i = 0; i < THREADS; i++) {
        pthread_join(threads[i], NULL);
        sum->ok += tallies[i].ok;
        sum->busy += tallies[i].busy;
        sum->other += tallies[i].other;
        sum->heads += tallies[i].heads;
        sum->ends += tallies[i].ends;
        sum->events += tallies[i].events;
        if (tallies[i].other) {
            sum->unexpected = tallies[i].unexpected;
        }
    }
    return 1;
}

/* A bridge: pushers and pollers and timers at once, then the answer's end alone. */
static void bridge_round(struct tally *b)
{
    void *(*bodies[THREADS])(void *) = {bridge_pusher, bridge_pusher, bridge_timer,
                                        bridge_timer};
    long heads = b->heads, ends = b->ends;
    CHECK(aw_bridge_new(AW_DIALECT_CHAT_COMPLETIONS, (const uint8_t *)STREAM_BODY,
                        strlen(STREAM_BODY), NULL, 0, 0, 1, &bridge) == AW_RESULT_OK);
    CHECK(run(bodies, b));
    CHECK(aw_bridge_push_stdout(bridge, (const uint8_t *)RESULT, strlen(RESULT), 0) ==
          AW_RESULT_OK);
    poll_bridge(b);
    CHECK(aw_bridge_is_ended(bridge));
    CHECK(b->heads == heads + 1 && b->ends == ends + 1);
    aw_bridge_free(bridge);
}

/* A decoder: every push went in once and whole, every event came out once. */
static void decoder_round(struct tally *d)
{
    void *(*bodies[THREADS])(void *) = {decoder_pusher, decoder_pusher, decoder_pusher,
                                        decoder_pusher};
    long events = d->events;
    aw_decoder_stats stats;
    CHECK(aw_decoder_new(NULL, &decoder) == AW_RESULT_OK);
    CHECK(run(bodies, d));
    CHECK(aw_decoder_get_stats(decoder, &stats) == AW_RESULT_OK);
    CHECK(stats.lines == (uint64_t)(THREADS * rounds * LINES_PER_PUSH));
    CHECK(d->events - events == THREADS * rounds * LINES_PER_PUSH);
    aw_decoder_free(decoder);
}

/* A config set on three threads while a fourth creates bridges from it. */
static void config_round(struct tally *c)
{
    void *(*bodies[THREADS])(void *) = {config_setter, config_setter, config_setter,
                                        bridge_maker};
    CHECK(aw_config_new(&config) == AW_RESULT_OK);
    CHECK(run(bodies, c));
    aw_config_free(config);
}

/* An ACP agent's line that is not JSON-RPC: each one pushed is counted once. */
static const char NOT_RPC[] = "not json-rpc\n";

static void *acp_pusher(void *arg)
{
    struct tally *t = (struct tally *)arg;
    long i;
    for (i = 0; i < rounds; i++) {
        CALL(t, aw_acp_connection_push_stdout(acp, (const uint8_t *)NOT_RPC, strlen(NOT_RPC),
                                              (uint64_t)i));
    }
    return NULL;
}

static void *acp_poller(void *arg)
{
    struct tally *t = (struct tally *)arg;
    long i;
    for (i = 0; i < rounds; i++) {
        aw_bytes bytes;
        aw_output out;
        bool has;
        uint64_t deadline, turn, lines;
        size_t active;
        CALL(t, aw_acp_connection_poll_transmit(acp, &bytes));
        CALL(t, aw_acp_connection_poll_ready(acp, &turn));
        CALL(t, aw_acp_connection_poll_output(acp, 0, &out));
        CALL(t, aw_acp_connection_poll_timeout(acp, &has, &deadline));
        CALL(t, aw_acp_connection_active_turns(acp, &active));
        CALL(t, aw_acp_connection_malformed_lines(acp, &lines));
        CALL(t, aw_acp_connection_handle_timeout(acp, 0));
        (void)aw_acp_connection_is_ready(acp);
        (void)aw_acp_connection_is_dead(acp);
        (void)aw_acp_connection_last_error(acp);
    }
    return NULL;
}

/* An ACP connection: two threads push the agent's lines while two poll; every line is
   counted exactly once. */
static void acp_round(struct tally *a)
{
    void *(*bodies[THREADS])(void *) = {acp_pusher, acp_pusher, acp_poller, acp_poller};
    uint64_t turn, lines;
    CHECK(aw_acp_connection_new(NULL, 0, &acp) == AW_RESULT_OK);
    CHECK(aw_acp_connection_start_turn(acp, AW_DIALECT_CHAT_COMPLETIONS,
                                       (const uint8_t *)STREAM_BODY, strlen(STREAM_BODY), NULL,
                                       0, 0, 1, &turn) == AW_RESULT_OK);
    CHECK(run(bodies, a));
    CHECK(aw_acp_connection_malformed_lines(acp, &lines) == AW_RESULT_OK);
    CHECK(lines == (uint64_t)(2 * rounds));
    aw_acp_connection_free(acp);
}

/* Runs `round` once; with `require_busy`, again until a call was refused as BUSY (the
   threads did overlap) or a minute passed. */
static void hammer(const char *what, void (*round)(struct tally *), struct tally *t,
                   int require_busy)
{
    time_t deadline = time(NULL) + 60;
    int runs = 0;
    do {
        round(t);
        runs++;
    } while (require_busy && t->busy == 0 && !failures && time(NULL) < deadline);
    printf("threads: %s: %d run(s) of %ld rounds a thread, BUSY returned %ld times\n", what,
           runs, rounds, t->busy);
    if (t->other) {
        fprintf(stderr, "threads: %s: %ld unexpected results, e.g. %s\n", what, t->other,
                aw_result_name(t->unexpected));
        failures++;
    }
    if (require_busy && t->busy == 0) {
        fprintf(stderr, "threads: %s: no call overlapped another\n", what);
        failures++;
    }
}

int main(int argc, char **argv)
{
    struct tally b, d, c, a;
    int require_busy = 0, i;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--require-busy") == 0) {
            require_busy = 1;
        } else {
            rounds = strtol(argv[i], NULL, 10);
        }
    }
    memset(&b, 0, sizeof b);
    memset(&d, 0, sizeof d);
    memset(&c, 0, sizeof c);
    memset(&a, 0, sizeof a);
    hammer("bridge", bridge_round, &b, require_busy);
    hammer("decoder", decoder_round, &d, require_busy);
    hammer("config", config_round, &c, require_busy);
    hammer("ACP connection", acp_round, &a, require_busy);
    if (failures) {
        fprintf(stderr, "threads: %d checks failed\n", failures);
        return 1;
    }
    return 0;
}
