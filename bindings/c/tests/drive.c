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
 *   drive acp SCRIPT
 *       Like `acp run SCRIPT`: an aw_acp_connection driven by the script's inputs, with
 *       every output it makes written after each (the format is the example's).
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
        case AW_OUTPUT_KIND_RESPAWN:
            /* Nothing runs: the transcript is the agent. A bridge of aw_bridge_new never
             * asks for a respawn, as translate's never does. */
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

/* Whether `name` is `known`, a library name, with `-` allowed for `_`. */
static bool names(const char *name, const char *known)
{
    for (; *known != '\0'; name++, known++) {
        if (*name != *known && !(*name == '-' && *known == '_')) {
            return false;
        }
    }
    return *name == '\0';
}

/* The value named `name` of an enum whose names `name_of` gives (the library's
 * aw_*_name, NULL past the last value); exits on an unknown name. */
static uint32_t value_named(const char *(*name_of)(uint32_t), const char *what, const char *name)
{
    uint32_t value;
    const char *known;
    for (value = 0; (known = name_of(value)) != NULL; value++) {
        if (names(name, known)) {
            return value;
        }
    }
    fprintf(stderr, "drive: unknown %s %s\n", what, name);
    exit(2);
}

/* The aw_dialect named as translate's --api names it; exits on an unknown name. */
static aw_dialect dialect_named(const char *name)
{
    return (aw_dialect)value_named(aw_dialect_name, "dialect", name);
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
            printf(" completed:%s:%d ", aw_tool_outcome_name(e->activity.outcome),
                   e->activity.started_seen ? 1 : 0);
        }
        quoted(e->activity.summary);
        optional("args", e->activity.has_arguments, e->activity.arguments);
        optional("model_call", e->activity.has_model_call_id, e->activity.model_call_id);
        break;
    case AW_EVENT_KIND_PROGRESS:
        printf("progress %s %u", aw_progress_kind_name(e->progress.kind), (unsigned)e->progress.attempt);
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
        printf("finish %s", aw_finish_reason_name(e->finish_reason));
        break;
    case AW_EVENT_KIND_FAILED:
        printf("failed %s ", aw_failure_kind_name(e->failure.kind));
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
    return (aw_error_kind)value_named(aw_error_kind_name, "kind", name);
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

/* Drains an ACP connection after an input, writing what `acp run` writes. */
static void acp_drain(aw_acp_connection *conn)
{
    aw_bytes bytes;
    aw_acp_decision decision;
    aw_output out;
    uint64_t turn, deadline;
    size_t active;
    uint64_t malformed;
    bool has_deadline;
    aw_result r;
    while ((r = aw_acp_connection_poll_transmit(conn, &bytes)) == AW_RESULT_OK) {
        printf("transmit %zu\n", bytes.len);
        fwrite(bytes.data, 1, bytes.len, stdout);
        putchar('\n');
    }
    if (r != AW_RESULT_DRAINED) {
        die("aw_acp_connection_poll_transmit", r, aw_acp_connection_last_error(conn));
    }
    while ((r = aw_acp_connection_poll_decision(conn, &decision)) == AW_RESULT_OK) {
        printf("decision restart %.*s\n", (int)decision.reason.len, decision.reason.data);
    }
    if (r != AW_RESULT_DRAINED) {
        die("aw_acp_connection_poll_decision", r, aw_acp_connection_last_error(conn));
    }
    while ((r = aw_acp_connection_poll_ready(conn, &turn)) == AW_RESULT_OK) {
        unsigned long long t = (unsigned long long)turn;
        while ((r = aw_acp_connection_poll_output(conn, turn, &out)) == AW_RESULT_OK) {
            switch (out.kind) {
            case AW_OUTPUT_KIND_HEAD:
                printf("turn %llu head %u %.*s %s\n", t, (unsigned)out.status,
                       (int)out.content_type.len, out.content_type.data,
                       out.has_retryable ? (out.retryable ? "true" : "false") : "-");
                break;
            case AW_OUTPUT_KIND_BODY:
                printf("turn %llu body %zu\n", t, out.body.len);
                fwrite(out.body.data, 1, out.body.len, stdout);
                putchar('\n');
                break;
            case AW_OUTPUT_KIND_STOP_AGENT:
                printf("turn %llu stop-agent\n", t);
                break;
            case AW_OUTPUT_KIND_RESPAWN:
                printf("turn %llu respawn\n", t);
                break;
            case AW_OUTPUT_KIND_END:
                printf("turn %llu end\n", t);
                break;
            }
        }
        if (r != AW_RESULT_DRAINED) {
            die("aw_acp_connection_poll_output", r, aw_acp_connection_last_error(conn));
        }
    }
    if (r != AW_RESULT_DRAINED) {
        die("aw_acp_connection_poll_ready", r, aw_acp_connection_last_error(conn));
    }
    if ((r = aw_acp_connection_poll_timeout(conn, &has_deadline, &deadline)) != AW_RESULT_OK
        || (r = aw_acp_connection_active_turns(conn, &active)) != AW_RESULT_OK
        || (r = aw_acp_connection_malformed_lines(conn, &malformed)) != AW_RESULT_OK) {
        die("an ACP getter", r, aw_acp_connection_last_error(conn));
    }
    printf("state ready=%d dead=%d active=%zu malformed=%llu timeout=",
           aw_acp_connection_is_ready(conn) ? 1 : 0, aw_acp_connection_is_dead(conn) ? 1 : 0,
           active, (unsigned long long)malformed);
    if (has_deadline) {
        printf("%llu\n", (unsigned long long)deadline);
    } else {
        printf("none\n");
    }
}

/* The models line `acp run` ends with. */
static void acp_models(const aw_acp_connection *conn)
{
    size_t count, i;
    aw_str model;
    aw_result r = aw_acp_connection_model_count(conn, &count);
    if (r == AW_RESULT_NOT_AVAILABLE) {
        printf("models none\n");
    } else if (r == AW_RESULT_OK) {
        printf("models %zu\n", count);
        for (i = 0; i < count; i++) {
            if ((r = aw_acp_connection_model(conn, i, &model)) != AW_RESULT_OK) {
                die("aw_acp_connection_model", r, aw_acp_connection_last_error(conn));
            }
            printf("model %.*s\n", (int)model.len, model.data);
        }
    } else {
        die("aw_acp_connection_model_count", r, aw_acp_connection_last_error(conn));
    }
    r = aw_acp_connection_current_model(conn, &model);
    if (r == AW_RESULT_OK) {
        printf("current %.*s\n", (int)model.len, model.data);
    } else if (r == AW_RESULT_NOT_AVAILABLE) {
        printf("current none\n");
    } else {
        die("aw_acp_connection_current_model", r, aw_acp_connection_last_error(conn));
    }
}

/* The n-th space-separated word of `line` (from 0) as a number. */
static unsigned long long acp_word(const char *line, int n)
{
    const char *at = line;
    while (n-- > 0) {
        at = strchr(at, ' ');
        if (!at) {
            fprintf(stderr, "drive: short script line %s\n", line);
            exit(2);
        }
        at++;
    }
    return strtoull(at, NULL, 10);
}

static int run_acp(int argc, char **argv)
{
    size_t len, at = 0;
    unsigned char *script;
    aw_acp_connection *conn = NULL;
    aw_result r = AW_RESULT_OK;
    if (argc != 3) {
        fprintf(stderr, "usage: drive acp SCRIPT\n");
        return 2;
    }
    script = read_file(argv[2], &len);
    while (at < len) {
        char line[512];
        const unsigned char *payload = NULL;
        size_t payload_len = 0, line_len;
        const unsigned char *newline = (const unsigned char *)memchr(script + at, '\n', len - at);
        if (!newline || (size_t)(newline - (script + at)) >= sizeof line) {
            fprintf(stderr, "drive: a script line is cut short or too long\n");
            return 2;
        }
        line_len = (size_t)(newline - (script + at));
        memcpy(line, script + at, line_len);
        line[line_len] = '\0';
        at += line_len + 1;
        if (strncmp(line, "start ", 6) == 0 || strncmp(line, "stdout ", 7) == 0
            || strncmp(line, "stderr ", 7) == 0) {
            payload_len = (size_t)acp_word(line, line[2] == 'a' ? 5 : 2);
            if (at + payload_len + 1 > len) {
                fprintf(stderr, "drive: a payload is cut short\n");
                return 2;
            }
            payload = script + at;
            at += payload_len + 1;
        }
        printf("> %s\n", line);
        if (strncmp(line, "new ", 4) == 0) {
            aw_acp_config *config;
            const char *cwd = strchr(strchr(line + 4, ' ') + 1, ' ') + 1;
            if ((r = aw_acp_config_new(&config)) != AW_RESULT_OK
                || (r = aw_acp_config_set_pool_size(config, (size_t)acp_word(line, 2))) != AW_RESULT_OK
                || (r = aw_acp_config_set_cwd(config, cwd, strlen(cwd))) != AW_RESULT_OK) {
                die("the ACP config", r, aw_acp_config_last_error(config));
            }
            aw_acp_connection_free(conn);
            r = aw_acp_connection_new(config, acp_word(line, 1), &conn);
            aw_acp_config_free(config);
            if (r != AW_RESULT_OK) {
                die("aw_acp_connection_new", r, "");
            }
        } else if (!conn) {
            fprintf(stderr, "drive: the script does not start with `new`\n");
            return 2;
        } else if (strncmp(line, "start ", 6) == 0) {
            uint64_t turn;
            char api[32] = {0};
            sscanf(line + 6, "%31s", api);
            r = aw_acp_connection_start_turn(conn, dialect_named(api), payload, payload_len, NULL,
                                             acp_word(line, 2), acp_word(line, 3),
                                             acp_word(line, 4), &turn);
        } else if (strncmp(line, "stdout ", 7) == 0) {
            r = aw_acp_connection_push_stdout(conn, payload, payload_len, acp_word(line, 1));
        } else if (strncmp(line, "stderr ", 7) == 0) {
            r = aw_acp_connection_push_stderr(conn, payload, payload_len, acp_word(line, 1));
        } else if (strncmp(line, "exit ", 5) == 0) {
            r = aw_acp_connection_agent_exited_code(conn, (int32_t)strtol(strchr(line + 5, ' ') + 1, NULL, 10),
                                                    acp_word(line, 1));
        } else if (strncmp(line, "gone ", 5) == 0) {
            r = aw_acp_connection_client_gone(conn, acp_word(line, 1), acp_word(line, 2));
        } else if (strncmp(line, "timeout ", 8) == 0) {
            r = aw_acp_connection_handle_timeout(conn, acp_word(line, 1));
        } else if (strncmp(line, "shutdown ", 9) == 0) {
            r = aw_acp_connection_shutdown(conn, acp_word(line, 1));
        } else {
            fprintf(stderr, "drive: unknown script input %s\n", line);
            return 2;
        }
        if (r != AW_RESULT_OK) {
            die(line, r, aw_acp_connection_last_error(conn));
        }
        acp_drain(conn);
    }
    if (conn) {
        acp_models(conn);
    }
    aw_acp_connection_free(conn);
    free(script);
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
    if (argc >= 2 && strcmp(argv[1], "acp") == 0) {
        return run_acp(argc, argv);
    }
    fprintf(stderr, "usage: drive bridge|events|reply|acp ...\n");
    return 2;
}
