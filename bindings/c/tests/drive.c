/*
 * Drives the C ABI over a transcript, for comparison with the Rust examples.
 *
 *   drive bridge [--api DIALECT] REQUEST CHUNK TRANSCRIPT [STDERR_FILE EXIT_CODE]
 *       Like `translate [--api DIALECT] --request REQUEST --chunk CHUNK`: the response body
 *       on stdout, `status: NNN` as the first line of stderr. DIALECT is chat-completions
 *       (the default), responses or messages.
 *   drive events CHUNK TRANSCRIPT
 *       Like `events --chunk CHUNK`: the decoder's events, one line each.
 *   drive reply count-tokens REQUEST
 *   drive reply error DIALECT KIND MESSAGE
 *       Like the `reply` example: the body on stdout, `status: NNN` and
 *       `retryable: true|false` on stderr.
 *
 * Includes only the public header.
 */
#include "agentwire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what, aw_result result, const char *message)
{
    fprintf(stderr, "drive: %s: %s (%s)\n", what, aw_result_name(result), message);
    exit(1);
}

static unsigned char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    unsigned char *data = NULL;
    size_t cap = 0;
    size_t n;
    *len = 0;
    if (!f) {
        perror(path);
        exit(1);
    }
    for (;;) {
        if (*len == cap) {
            unsigned char *grown;
            cap = cap ? cap * 2 : 65536;
            grown = (unsigned char *)realloc(data, cap);
            if (!grown) {
                perror("realloc");
                exit(1);
            }
            data = grown;
        }
        n = fread(data + *len, 1, cap - *len, f);
        if (n == 0) {
            break;
        }
        *len += n;
    }
    fclose(f);
    return data;
}

/* Drains the bridge: head to stderr, body to stdout. Returns 1 once the response ended. */
static int drain(aw_bridge *bridge)
{
    aw_output out;
    aw_result r;
    while ((r = aw_bridge_poll_output(bridge, &out)) == AW_RESULT_OK) {
        switch (out.kind) {
        case AW_OUTPUT_KIND_HEAD:
            fprintf(stderr, "status: %u\n", (unsigned)out.status);
            break;
        case AW_OUTPUT_KIND_BODY:
            fwrite(out.body.data, 1, out.body.len, stdout);
            break;
        case AW_OUTPUT_KIND_STOP_AGENT:
            break;
        case AW_OUTPUT_KIND_END:
            return 1;
        }
    }
    if (r != AW_RESULT_DRAINED) {
        die("aw_bridge_poll_output", r, aw_bridge_last_error(bridge));
    }
    return 0;
}

/* The aw_dialect named as translate's --api names it; exits on an unknown name. */
static aw_dialect dialect_named(const char *name)
{
    static const struct {
        const char *name;
        aw_dialect dialect;
    } DIALECTS[] = {
        {"chat-completions", AW_DIALECT_CHAT_COMPLETIONS},
        {"responses", AW_DIALECT_RESPONSES},
        {"messages", AW_DIALECT_MESSAGES},
    };
    size_t i;
    for (i = 0; i < sizeof DIALECTS / sizeof DIALECTS[0]; i++) {
        if (strcmp(name, DIALECTS[i].name) == 0) {
            return DIALECTS[i].dialect;
        }
    }
    fprintf(stderr, "drive: unknown dialect %s (chat-completions, responses, messages)\n", name);
    exit(2);
}

static int run_bridge(int argc, char **argv)
{
    size_t body_len, transcript_len, chunk, at;
    unsigned char *body, *transcript;
    aw_dialect dialect = AW_DIALECT_CHAT_COMPLETIONS;
    aw_bridge *bridge = NULL;
    aw_str program;
    aw_result r;
    int ended, failed_run;
    char **args = argv + 2; /* REQUEST CHUNK TRANSCRIPT [STDERR_FILE EXIT_CODE] */
    int count = argc - 2;

    if (count >= 2 && strcmp(args[0], "--api") == 0) {
        dialect = dialect_named(args[1]);
        args += 2;
        count -= 2;
    }
    if (count != 3 && count != 5) {
        fprintf(stderr, "usage: drive bridge [--api DIALECT] REQUEST CHUNK TRANSCRIPT "
                        "[STDERR_FILE EXIT_CODE]\n");
        return 2;
    }
    failed_run = count == 5;
    body = read_file(args[0], &body_len);
    chunk = (size_t)strtoul(args[1], NULL, 10);
    transcript = read_file(args[2], &transcript_len);
    r = aw_bridge_new(dialect, body, body_len, NULL, 0, 1700000000u, 0, &bridge);
    if (r != AW_RESULT_OK) {
        die("aw_bridge_new", r, "");
    }
    ended = drain(bridge);
    r = aw_bridge_invocation_program(bridge, &program);
    if (r == AW_RESULT_OK) {
        for (at = 0; at < transcript_len && !ended; at += chunk) {
            size_t n = transcript_len - at < chunk ? transcript_len - at : chunk;
            r = aw_bridge_push_stdout(bridge, transcript + at, n, 0);
            if (r != AW_RESULT_OK) {
                die("aw_bridge_push_stdout", r, aw_bridge_last_error(bridge));
            }
            ended = drain(bridge);
        }
        if (failed_run) {
            size_t stderr_len;
            unsigned char *stderr_bytes = read_file(args[3], &stderr_len);
            r = aw_bridge_push_stderr(bridge, stderr_bytes, stderr_len, 0);
            free(stderr_bytes);
            if (r != AW_RESULT_OK) {
                die("aw_bridge_push_stderr", r, aw_bridge_last_error(bridge));
            }
        }
        r = aw_bridge_agent_exited_code(bridge, failed_run ? atoi(args[4]) : 0, 0);
        if (r != AW_RESULT_OK) {
            die("aw_bridge_agent_exited_code", r, aw_bridge_last_error(bridge));
        }
        drain(bridge);
    } else if (r != AW_RESULT_REJECTED) {
        die("aw_bridge_invocation_program", r, aw_bridge_last_error(bridge));
    }
    aw_bridge_free(bridge);
    free(body);
    free(transcript);
    return 0;
}

static void quoted(aw_str s)
{
    size_t i;
    putchar('"');
    for (i = 0; i < s.len; i++) {
        unsigned char b = (unsigned char)s.data[i];
        if (b < 0x20 || b == 0x7f || b == '"' || b == '\\') {
            printf("\\x%02x", b);
        } else {
            putchar(b);
        }
    }
    putchar('"');
}

static void optional(const char *label, bool has, aw_str s)
{
    printf(" %s:", label);
    if (has) {
        quoted(s);
    } else {
        putchar('-');
    }
}

static const char *const OUTCOMES[] = {"none", "success", "rejected", "error",
                                       "permission_denied", "unknown"};
static const char *const PROGRESS[] = {"reconnecting", "reconnected", "retrying"};
static const char *const FINISH[] = {"stop", "length", "tool_calls", "content_filter"};
static const char *const FAILURES[] = {
    "invalid_request", "not_authenticated", "model_unavailable", "rate_limited",
    "misconfigured", "unavailable", "timeout", "agent_error", "agent_crashed", "bad_output"};

static void print_event(const aw_event *e)
{
    switch (e->kind) {
    case AW_EVENT_KIND_TEXT_DELTA:
        printf("text ");
        quoted(e->text);
        break;
    case AW_EVENT_KIND_REASONING_DELTA:
        printf("reasoning ");
        quoted(e->text);
        break;
    case AW_EVENT_KIND_TOOL_CALL:
        printf("tool_call %u ", (unsigned)e->tool_call.index);
        quoted(e->tool_call.id);
        putchar(' ');
        quoted(e->tool_call.name);
        putchar(' ');
        quoted(e->tool_call.arguments);
        break;
    case AW_EVENT_KIND_AGENT_ACTIVITY:
        printf("activity ");
        quoted(e->activity.call_id);
        putchar(' ');
        quoted(e->activity.tool);
        if (e->activity.phase == AW_ACTIVITY_PHASE_STARTED) {
            printf(" started ");
        } else {
            printf(" completed:%s:%d ", OUTCOMES[e->activity.outcome],
                   e->activity.started_seen ? 1 : 0);
        }
        quoted(e->activity.summary);
        optional("args", e->activity.has_arguments, e->activity.arguments);
        optional("model_call", e->activity.has_model_call_id, e->activity.model_call_id);
        break;
    case AW_EVENT_KIND_PROGRESS:
        printf("progress %s %u", PROGRESS[e->progress.kind], (unsigned)e->progress.attempt);
        break;
    case AW_EVENT_KIND_USAGE:
        printf("usage %llu %llu %llu %llu reasoning:", (unsigned long long)e->usage.input_tokens,
               (unsigned long long)e->usage.output_tokens,
               (unsigned long long)e->usage.cache_read_tokens,
               (unsigned long long)e->usage.cache_write_tokens);
        if (e->usage.has_reasoning_tokens) {
            printf("%llu", (unsigned long long)e->usage.reasoning_tokens);
        } else {
            putchar('-');
        }
        printf(" cost:");
        if (e->usage.has_cost) {
            uint64_t bits;
            memcpy(&bits, &e->usage.cost, sizeof bits);
            printf("%016llx", (unsigned long long)bits);
        } else {
            putchar('-');
        }
        printf(" %llu %llu", (unsigned long long)e->usage.prompt_tokens,
               (unsigned long long)e->usage.total_tokens);
        break;
    case AW_EVENT_KIND_FINISH:
        printf("finish %s", FINISH[e->finish_reason]);
        break;
    case AW_EVENT_KIND_FAILED:
        printf("failed %s ", FAILURES[e->failure.kind]);
        quoted(e->failure.message);
        break;
    }
    putchar('\n');
}

static void drain_events(aw_decoder *decoder)
{
    aw_event event;
    aw_result r;
    while ((r = aw_decoder_poll_event(decoder, &event)) == AW_RESULT_OK) {
        print_event(&event);
    }
    if (r != AW_RESULT_DRAINED) {
        die("aw_decoder_poll_event", r, aw_decoder_last_error(decoder));
    }
}

static int run_events(int argc, char **argv)
{
    size_t len, chunk, at;
    unsigned char *transcript;
    aw_decoder *decoder = NULL;
    aw_result r;

    if (argc != 4) {
        fprintf(stderr, "usage: drive events CHUNK TRANSCRIPT\n");
        return 2;
    }
    chunk = (size_t)strtoul(argv[2], NULL, 10);
    transcript = read_file(argv[3], &len);
    r = aw_decoder_new(NULL, &decoder);
    if (r != AW_RESULT_OK) {
        die("aw_decoder_new", r, "");
    }
    for (at = 0; at < len; at += chunk) {
        size_t n = len - at < chunk ? len - at : chunk;
        r = aw_decoder_push_stdout(decoder, transcript + at, n);
        if (r != AW_RESULT_OK) {
            die("aw_decoder_push_stdout", r, aw_decoder_last_error(decoder));
        }
        drain_events(decoder);
    }
    r = aw_decoder_push_eof(decoder);
    if (r != AW_RESULT_OK) {
        die("aw_decoder_push_eof", r, aw_decoder_last_error(decoder));
    }
    drain_events(decoder);
    if (!aw_decoder_is_finished(decoder)) {
        fprintf(stderr, "drive: the decoder is not finished after its end\n");
        return 1;
    }
    aw_decoder_free(decoder);
    free(transcript);
    return 0;
}

/* The aw_error_kind named as the `reply` example names it; exits on an unknown name. */
static aw_error_kind kind_named(const char *name)
{
    static const struct {
        const char *name;
        aw_error_kind kind;
    } KINDS[] = {
        {"invalid-request", AW_ERROR_KIND_INVALID_REQUEST},
        {"authentication", AW_ERROR_KIND_AUTHENTICATION},
        {"permission-denied", AW_ERROR_KIND_PERMISSION_DENIED},
        {"not-found", AW_ERROR_KIND_NOT_FOUND},
        {"method-not-allowed", AW_ERROR_KIND_METHOD_NOT_ALLOWED},
        {"request-too-large", AW_ERROR_KIND_REQUEST_TOO_LARGE},
        {"unsupported-media-type", AW_ERROR_KIND_UNSUPPORTED_MEDIA_TYPE},
        {"rate-limited", AW_ERROR_KIND_RATE_LIMITED},
        {"internal", AW_ERROR_KIND_INTERNAL},
        {"agent-failed", AW_ERROR_KIND_AGENT_FAILED},
        {"unavailable", AW_ERROR_KIND_UNAVAILABLE},
        {"timeout", AW_ERROR_KIND_TIMEOUT},
    };
    size_t i;
    for (i = 0; i < sizeof KINDS / sizeof KINDS[0]; i++) {
        if (strcmp(name, KINDS[i].name) == 0) {
            return KINDS[i].kind;
        }
    }
    fprintf(stderr, "drive: unknown kind %s\n", name);
    exit(2);
}

static int run_reply(int argc, char **argv)
{
    aw_reply *reply = NULL;
    aw_bytes body;
    uint16_t status;
    bool retryable;
    aw_result r;

    if (argc == 4 && strcmp(argv[2], "count-tokens") == 0) {
        size_t len;
        unsigned char *request = read_file(argv[3], &len);
        r = aw_reply_new_count_tokens(request, len, NULL, &reply);
        free(request);
    } else if (argc == 6 && strcmp(argv[2], "error") == 0) {
        r = aw_reply_new_error(dialect_named(argv[3]), kind_named(argv[4]), argv[5],
                               strlen(argv[5]), &reply);
    } else {
        fprintf(stderr, "usage: drive reply count-tokens REQUEST | error DIALECT KIND MESSAGE\n");
        return 2;
    }
    if (r != AW_RESULT_OK) {
        die("aw_reply_new_*", r, "");
    }
    if ((r = aw_reply_status(reply, &status)) != AW_RESULT_OK ||
        (r = aw_reply_retryable(reply, &retryable)) != AW_RESULT_OK ||
        (r = aw_reply_body(reply, &body)) != AW_RESULT_OK) {
        die("aw_reply_*", r, aw_reply_last_error(reply));
    }
    fprintf(stderr, "status: %u\nretryable: %s\n", (unsigned)status, retryable ? "true" : "false");
    fwrite(body.data, 1, body.len, stdout);
    aw_reply_free(reply);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "bridge") == 0) {
        return run_bridge(argc, argv);
    }
    if (argc >= 2 && strcmp(argv[1], "events") == 0) {
        return run_events(argc, argv);
    }
    if (argc >= 2 && strcmp(argv[1], "reply") == 0) {
        return run_reply(argc, argv);
    }
    fprintf(stderr, "usage: drive bridge|events|reply ...\n");
    return 2;
}
