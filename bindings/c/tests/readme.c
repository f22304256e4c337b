/*
 * The README's C blocks ("From C", "ACP from C and Python"), compiled and run exactly as the README writes it:
 * run-tests.sh copies the README's C block to readme_loop.inc, included below with the
 * declarations it takes for granted, and runs the program under ASan and valgrind, linked
 * to the debug and to the release library. Includes only the public header.
 */
#define _POSIX_C_SOURCE 200112L
#include "agentwire.h"

#include <stdint.h>
#include <string.h>
#include <time.h>

static uint64_t now_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000u + (uint64_t)now.tv_nsec / 1000000u;
}

int main(void)
{
    static const char request[] = "{\"model\":\"auto\",\"stream\":true,"
                                  "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    /* One read of the agent's stdout: a whole answer. */
    static const char answer[] =
        "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s-1\",\"model\":\"Auto\"}\n"
        "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"Hi\"}]}}\n"
        "{\"type\":\"result\",\"subtype\":\"success\",\"result\":\"Hi\",\"session_id\":\"s-1\"}\n";
    /* One read of an ACP agent's stdout: its answer to `initialize`. */
    static const char acp_answer[] =
        "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":1}}\n";
    const uint8_t *agent_out = (const uint8_t *)acp_answer;
    size_t agent_out_len = strlen(acp_answer);
    const uint8_t *body = (const uint8_t *)request;
    size_t body_len = strlen(request);
    const uint8_t *buf = (const uint8_t *)answer;
    size_t n = strlen(answer);
    uint64_t seed = 1;
    aw_str program;
    bool has_deadline;
    uint64_t deadline_ms;

#include "readme_loop.inc"

    return 0;
}
