/*
 * The C ABI's contract from C: every result code reachable from C, NULL handles and
 * out-parameters, misuse after the end, invalid UTF-8, huge lengths, poisoned handles and
 * overlapping calls (with AW_TEST_HOOKS), every config field set and read back, the version
 * macros against aw_version(). Includes only the public header.
 */
#include "agentwire.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* Every result value seen returned by a call, indexed by value - 7000. */
static int seen[300];

/* Checks that `call` returns `expected`, and records the value as reached. */
#define EXPECT(call, expected)                                                                 \
    do {                                                                                       \
        aw_result got_ = (call);                                                               \
        if (got_ >= 7000 && got_ < 7300) {                                                     \
            seen[got_ - 7000] = 1;                                                             \
        }                                                                                      \
        if (got_ != (expected)) {                                                              \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s\n", __FILE__, __LINE__, #call, \
                    aw_result_name(got_), aw_result_name(expected));                           \
            failures++;                                                                        \
        }                                                                                      \
    } while (0)

static const char STREAM_BODY[] =
    "{\"model\":\"auto\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
static const char ANSWER[] =
    "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s-1\",\"model\":\"Auto\"}\n"
    "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"Hi\"}]}}\n"
    "{\"type\":\"result\",\"subtype\":\"success\",\"result\":\"Hi\",\"session_id\":\"s-1\"}\n";

static int str_eq(aw_str s, const char *c)
{
    return s.len == strlen(c) && memcmp(s.data, c, s.len) == 0;
}

static aw_bridge *new_bridge(const char *body)
{
    aw_bridge *bridge = NULL;
    EXPECT(aw_bridge_new((const uint8_t *)body, strlen(body), NULL, 0, 1700000000u, 1, &bridge),
           AW_RESULT_OK);
    CHECK(bridge != NULL);
    return bridge;
}

static void test_version(void)
{
    char expected[64];
    sprintf(expected, "%d.%d.%d", AW_VERSION_MAJOR, AW_VERSION_MINOR, AW_VERSION_PATCH);
    CHECK(strcmp(aw_version(), expected) == 0);
    CHECK(AW_VERSION_NUMBER ==
          AW_VERSION_MAJOR * 1000000 + AW_VERSION_MINOR * 1000 + AW_VERSION_PATCH);
}

static void test_result_names(void)
{
    uint32_t v;
    int named = 0;
    CHECK(strcmp(aw_result_name(AW_RESULT_OK), "AW_RESULT_OK") == 0);
    CHECK(strcmp(aw_result_name(AW_RESULT_INTERIOR_NUL), "AW_RESULT_INTERIOR_NUL") == 0);
    CHECK(strcmp(aw_result_name(0), "AW_RESULT_UNKNOWN") == 0);
    CHECK(strcmp(aw_result_name(UINT32_MAX), "AW_RESULT_UNKNOWN") == 0);
    for (v = 7000; v < 7300; v++) {
        if (strcmp(aw_result_name(v), "AW_RESULT_UNKNOWN") != 0) {
            named++;
            CHECK(aw_result_is_status(v) == (v < 7100));
        }
    }
    CHECK(named == 16);
    CHECK(!aw_result_is_status(AW_RESULT_BUSY));
}

static void test_config(void)
{
    aw_config *config = NULL;
    aw_str s;
    bool b;
    uint64_t u64;
    size_t size;
    uint32_t u32;
    aw_tool_strategy strategy;
    aw_reasoning_field reasoning;

    EXPECT(aw_config_new(NULL), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_config_new(&config), AW_RESULT_OK);

    /* Defaults. */
    EXPECT(aw_config_get_cursor_binary(config, &s), AW_RESULT_OK);
    CHECK(str_eq(s, "cursor-agent"));
    EXPECT(aw_config_get_workspace(config, &s), AW_RESULT_NOT_AVAILABLE);
    EXPECT(aw_config_get_cli_config_dir(config, &s), AW_RESULT_NOT_AVAILABLE);
    EXPECT(aw_config_get_max_duration_ms(config, &u64), AW_RESULT_NOT_AVAILABLE);
    EXPECT(aw_config_get_allow_force(config, &b), AW_RESULT_OK);
    CHECK(!b);
    EXPECT(aw_config_get_partial_output(config, &b), AW_RESULT_OK);
    CHECK(b);
    EXPECT(aw_config_get_idle_timeout_ms(config, &u64), AW_RESULT_OK);
    CHECK(u64 == 20u * 60u * 1000u);
    EXPECT(aw_config_get_tool_strategy(config, &strategy), AW_RESULT_OK);
    CHECK(strategy == AW_TOOL_STRATEGY_READ_ONLY);

    /* Every field set, then read back. */
    EXPECT(aw_config_set_cursor_binary(config, "/opt/agent", 10), AW_RESULT_OK);
    EXPECT(aw_config_set_workspace(config, "/srv/ws", 7), AW_RESULT_OK);
    EXPECT(aw_config_set_cli_config_dir(config, "/tmp/cfg", 8), AW_RESULT_OK);
    EXPECT(aw_config_set_allow_force(config, true), AW_RESULT_OK);
    EXPECT(aw_config_set_tool_strategy(config, AW_TOOL_STRATEGY_ENVELOPE_ONLY), AW_RESULT_OK);
    EXPECT(aw_config_set_partial_output(config, false), AW_RESULT_OK);
    EXPECT(aw_config_set_reasoning(config, AW_REASONING_FIELD_OMITTED), AW_RESULT_OK);
    EXPECT(aw_config_set_activity_notes(config, false), AW_RESULT_OK);
    EXPECT(aw_config_set_head_deadline_ms(config, 11), AW_RESULT_OK);
    EXPECT(aw_config_set_keep_alive_ms(config, 12), AW_RESULT_OK);
    EXPECT(aw_config_set_idle_timeout_ms(config, 13), AW_RESULT_OK);
    EXPECT(aw_config_set_max_duration_ms(config, 14), AW_RESULT_OK);
    EXPECT(aw_config_set_batch_window_ms(config, 15), AW_RESULT_OK);
    EXPECT(aw_config_set_stderr_tail_bytes(config, 16), AW_RESULT_OK);
    EXPECT(aw_config_set_max_envelope_bytes(config, 17), AW_RESULT_OK);
    EXPECT(aw_config_set_decoder_max_line_len(config, 18), AW_RESULT_OK);
    EXPECT(aw_config_set_decoder_max_notes(config, 19), AW_RESULT_OK);
    EXPECT(aw_config_set_request_max_body_bytes(config, 20), AW_RESULT_OK);
    EXPECT(aw_config_set_request_max_messages(config, 21), AW_RESULT_OK);
    EXPECT(aw_config_set_request_max_tools(config, 22), AW_RESULT_OK);
    EXPECT(aw_config_set_request_reject_attachments(config, true), AW_RESULT_OK);
    EXPECT(aw_config_set_loop_guard_max_failed_repeats(config, 23), AW_RESULT_OK);
    EXPECT(aw_config_set_loop_guard_max_repeats(config, 24), AW_RESULT_OK);

    EXPECT(aw_config_get_cursor_binary(config, &s), AW_RESULT_OK);
    CHECK(str_eq(s, "/opt/agent"));
    EXPECT(aw_config_get_workspace(config, &s), AW_RESULT_OK);
    CHECK(str_eq(s, "/srv/ws"));
    EXPECT(aw_config_get_cli_config_dir(config, &s), AW_RESULT_OK);
    CHECK(str_eq(s, "/tmp/cfg"));
    EXPECT(aw_config_get_allow_force(config, &b), AW_RESULT_OK);
    CHECK(b);
    EXPECT(aw_config_get_tool_strategy(config, &strategy), AW_RESULT_OK);
    CHECK(strategy == AW_TOOL_STRATEGY_ENVELOPE_ONLY);
    EXPECT(aw_config_get_partial_output(config, &b), AW_RESULT_OK);
    CHECK(!b);
    EXPECT(aw_config_get_reasoning(config, &reasoning), AW_RESULT_OK);
    CHECK(reasoning == AW_REASONING_FIELD_OMITTED);
    EXPECT(aw_config_get_activity_notes(config, &b), AW_RESULT_OK);
    CHECK(!b);
    EXPECT(aw_config_get_head_deadline_ms(config, &u64), AW_RESULT_OK);
    CHECK(u64 == 11);
    EXPECT(aw_config_get_keep_alive_ms(config, &u64), AW_RESULT_OK);
    CHECK(u64 == 12);
    EXPECT(aw_config_get_idle_timeout_ms(config, &u64), AW_RESULT_OK);
    CHECK(u64 == 13);
    EXPECT(aw_config_get_max_duration_ms(config, &u64), AW_RESULT_OK);
    CHECK(u64 == 14);
    EXPECT(aw_config_get_batch_window_ms(config, &u64), AW_RESULT_OK);
    CHECK(u64 == 15);
    EXPECT(aw_config_get_stderr_tail_bytes(config, &size), AW_RESULT_OK);
    CHECK(size == 16);
    EXPECT(aw_config_get_max_envelope_bytes(config, &size), AW_RESULT_OK);
    CHECK(size == 17);
    EXPECT(aw_config_get_decoder_max_line_len(config, &size), AW_RESULT_OK);
    CHECK(size == 18);
    EXPECT(aw_config_get_decoder_max_notes(config, &size), AW_RESULT_OK);
    CHECK(size == 19);
    EXPECT(aw_config_get_request_max_body_bytes(config, &size), AW_RESULT_OK);
    CHECK(size == 20);
    EXPECT(aw_config_get_request_max_messages(config, &size), AW_RESULT_OK);
    CHECK(size == 21);
    EXPECT(aw_config_get_request_max_tools(config, &size), AW_RESULT_OK);
    CHECK(size == 22);
    EXPECT(aw_config_get_request_reject_attachments(config, &b), AW_RESULT_OK);
    CHECK(b);
    EXPECT(aw_config_get_loop_guard_max_failed_repeats(config, &u32), AW_RESULT_OK);
    CHECK(u32 == 23);
    EXPECT(aw_config_get_loop_guard_max_repeats(config, &u32), AW_RESULT_OK);
    CHECK(u32 == 24);

    /* Clearing the optional fields. */
    EXPECT(aw_config_clear_workspace(config), AW_RESULT_OK);
    EXPECT(aw_config_get_workspace(config, &s), AW_RESULT_NOT_AVAILABLE);
    EXPECT(aw_config_clear_cli_config_dir(config), AW_RESULT_OK);
    EXPECT(aw_config_get_cli_config_dir(config, &s), AW_RESULT_NOT_AVAILABLE);
    EXPECT(aw_config_clear_max_duration_ms(config), AW_RESULT_OK);
    EXPECT(aw_config_get_max_duration_ms(config, &u64), AW_RESULT_NOT_AVAILABLE);

    /* Bad input leaves the config unchanged and says why. */
    CHECK(strcmp(aw_config_last_error(config), "") == 0);
    EXPECT(aw_config_set_workspace(config, "\xff\xfe", 2), AW_RESULT_INVALID_UTF8);
    CHECK(strstr(aw_config_last_error(config), "UTF-8") != NULL);
    EXPECT(aw_config_set_cursor_binary(config, "a\0b", 3), AW_RESULT_INTERIOR_NUL);
    CHECK(strstr(aw_config_last_error(config), "NUL") != NULL);
    EXPECT(aw_config_get_cursor_binary(config, &s), AW_RESULT_OK);
    CHECK(str_eq(s, "/opt/agent"));
    EXPECT(aw_config_set_tool_strategy(config, 99), AW_RESULT_INVALID_ENUM);
    EXPECT(aw_config_set_reasoning(config, 3), AW_RESULT_INVALID_ENUM);
    EXPECT(aw_config_get_tool_strategy(config, &strategy), AW_RESULT_OK);
    CHECK(strategy == AW_TOOL_STRATEGY_ENVELOPE_ONLY);
    EXPECT(aw_config_set_workspace(config, NULL, 4), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_config_set_workspace(config, "x", SIZE_MAX), AW_RESULT_LENGTH_TOO_LARGE);
    EXPECT(aw_config_get_keep_alive_ms(config, NULL), AW_RESULT_NULL_PARAMETER);
    /* An empty string may be NULL with length 0. */
    EXPECT(aw_config_set_workspace(config, NULL, 0), AW_RESULT_OK);
    EXPECT(aw_config_get_workspace(config, &s), AW_RESULT_OK);
    CHECK(s.len == 0 && s.data != NULL);

    /* NULL handles. */
    EXPECT(aw_config_set_keep_alive_ms(NULL, 1), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_config_get_keep_alive_ms(NULL, &u64), AW_RESULT_NULL_PARAMETER);
    CHECK(strcmp(aw_config_last_error(NULL), "") == 0);
    aw_config_free(NULL);

    /* A bridge made from this config runs the configured program. */
    {
        aw_bridge *bridge = NULL;
        aw_str program;
        EXPECT(aw_config_set_request_max_body_bytes(config, 1 << 20), AW_RESULT_OK);
        EXPECT(aw_config_set_request_max_messages(config, 100), AW_RESULT_OK);
        EXPECT(aw_bridge_new((const uint8_t *)STREAM_BODY, strlen(STREAM_BODY), config, 0, 0, 0,
                             &bridge),
               AW_RESULT_OK);
        EXPECT(aw_bridge_invocation_program(bridge, &program), AW_RESULT_OK);
        CHECK(str_eq(program, "/opt/agent"));
        aw_bridge_free(bridge);
    }
    aw_config_free(config);
}

static void test_bridge(void)
{
    aw_bridge *bridge = new_bridge(STREAM_BODY);
    aw_str s, name, value;
    aw_bytes stdin_bytes;
    aw_output out;
    size_t count, i;
    bool has;
    uint64_t deadline;
    int heads = 0, ends = 0;

    CHECK(aw_bridge_is_stream(bridge));
    CHECK(!aw_bridge_is_ended(bridge));
    EXPECT(aw_bridge_invocation_program(bridge, &s), AW_RESULT_OK);
    CHECK(str_eq(s, "cursor-agent") && s.data[s.len] == '\0');
    EXPECT(aw_bridge_invocation_arg_count(bridge, &count), AW_RESULT_OK);
    CHECK(count > 3);
    for (i = 0; i < count; i++) {
        EXPECT(aw_bridge_invocation_arg(bridge, i, &s), AW_RESULT_OK);
        CHECK(s.data[s.len] == '\0');
    }
    EXPECT(aw_bridge_invocation_arg(bridge, count, &s), AW_RESULT_INDEX_OUT_OF_RANGE);
    CHECK(strstr(aw_bridge_last_error(bridge), "out of range") != NULL);
    EXPECT(aw_bridge_invocation_stdin(bridge, &stdin_bytes), AW_RESULT_OK);
    CHECK(stdin_bytes.len > 0);
    EXPECT(aw_bridge_invocation_env_count(bridge, &count), AW_RESULT_OK);
    CHECK(count == 0);
    EXPECT(aw_bridge_invocation_env(bridge, 0, &name, &value), AW_RESULT_INDEX_OUT_OF_RANGE);
    EXPECT(aw_bridge_session_id(bridge, &s), AW_RESULT_NOT_AVAILABLE);

    EXPECT(aw_bridge_poll_timeout(bridge, &has, &deadline), AW_RESULT_OK);
    CHECK(has && deadline == 30000);
    EXPECT(aw_bridge_poll_output(bridge, &out), AW_RESULT_DRAINED);

    /* Huge lengths and NULL data are refused before anything is read. */
    EXPECT(aw_bridge_push_stdout(bridge, (const uint8_t *)ANSWER, SIZE_MAX, 1),
           AW_RESULT_LENGTH_TOO_LARGE);
    EXPECT(aw_bridge_push_stdout(bridge, (const uint8_t *)ANSWER, (size_t)PTRDIFF_MAX + 1u, 1),
           AW_RESULT_LENGTH_TOO_LARGE);
    EXPECT(aw_bridge_push_stdout(bridge, NULL, 1, 1), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_bridge_push_stdout(bridge, NULL, 0, 1), AW_RESULT_OK);
    EXPECT(aw_bridge_poll_output(bridge, NULL), AW_RESULT_NULL_PARAMETER);

    EXPECT(aw_bridge_push_stdout(bridge, (const uint8_t *)ANSWER, strlen(ANSWER), 5),
           AW_RESULT_OK);
    EXPECT(aw_bridge_session_id(bridge, &s), AW_RESULT_OK);
    CHECK(str_eq(s, "s-1"));
    for (;;) {
        aw_result r = aw_bridge_poll_output(bridge, &out);
        if (r == AW_RESULT_DRAINED) {
            break;
        }
        EXPECT(r, AW_RESULT_OK);
        if (out.kind == AW_OUTPUT_KIND_HEAD) {
            heads++;
            CHECK(out.status == 200);
            CHECK(str_eq(out.content_type, "text/event-stream"));
            CHECK(out.content_type.data[out.content_type.len] == '\0');
            CHECK(!out.has_retryable);
        } else if (out.kind == AW_OUTPUT_KIND_END) {
            ends++;
        }
    }
    CHECK(heads == 1 && ends == 1);
    CHECK(aw_bridge_is_ended(bridge));
    EXPECT(aw_bridge_poll_timeout(bridge, &has, &deadline), AW_RESULT_OK);
    CHECK(!has && deadline == 0);

    /* After the end: inputs are ignored, outputs stay drained; misuse is still misuse. */
    EXPECT(aw_bridge_push_stdout(bridge, (const uint8_t *)ANSWER, strlen(ANSWER), 6),
           AW_RESULT_OK);
    EXPECT(aw_bridge_handle_timeout(bridge, 1000000), AW_RESULT_OK);
    EXPECT(aw_bridge_client_gone(bridge, 7), AW_RESULT_OK);
    EXPECT(aw_bridge_poll_output(bridge, &out), AW_RESULT_DRAINED);
    EXPECT(aw_bridge_agent_exited_code(bridge, 0, 8), AW_RESULT_OK);
    EXPECT(aw_bridge_agent_exited_signal(bridge, 9, 8), AW_RESULT_EXITED_TWICE);
    EXPECT(aw_bridge_push_stdout(bridge, (const uint8_t *)"x", 1, 9), AW_RESULT_AFTER_EXIT);
    EXPECT(aw_bridge_push_stderr(bridge, (const uint8_t *)"x", 1, 9), AW_RESULT_AFTER_EXIT);
    CHECK(strstr(aw_bridge_last_error(bridge), "exited") != NULL);
    aw_bridge_free(bridge);

    /* NULL handles. */
    EXPECT(aw_bridge_new(NULL, 0, NULL, 0, 0, 0, NULL), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_bridge_new(NULL, 5, NULL, 0, 0, 0, &bridge), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_bridge_push_stdout(NULL, (const uint8_t *)"x", 1, 0), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_bridge_push_stderr(NULL, (const uint8_t *)"x", 1, 0), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_bridge_agent_exited_code(NULL, 0, 0), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_bridge_agent_exited_signal(NULL, 9, 0), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_bridge_handle_timeout(NULL, 0), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_bridge_client_gone(NULL, 0), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_bridge_poll_output(NULL, &out), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_bridge_poll_timeout(NULL, &has, &deadline), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_bridge_invocation_program(NULL, &s), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_bridge_invocation_arg_count(NULL, &count), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_bridge_invocation_arg(NULL, 0, &s), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_bridge_invocation_stdin(NULL, &stdin_bytes), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_bridge_invocation_env_count(NULL, &count), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_bridge_invocation_env(NULL, 0, &name, &value), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_bridge_session_id(NULL, &s), AW_RESULT_NULL_PARAMETER);
    CHECK(aw_bridge_is_ended(NULL));
    CHECK(!aw_bridge_is_stream(NULL));
    CHECK(strcmp(aw_bridge_last_error(NULL), "") == 0);
    aw_bridge_free(NULL);
}

static void test_client_gone(void)
{
    aw_bridge *bridge = new_bridge(STREAM_BODY);
    aw_output out;
    EXPECT(aw_bridge_client_gone(bridge, 1), AW_RESULT_OK);
    EXPECT(aw_bridge_poll_output(bridge, &out), AW_RESULT_OK);
    CHECK(out.kind == AW_OUTPUT_KIND_STOP_AGENT);
    EXPECT(aw_bridge_poll_output(bridge, &out), AW_RESULT_OK);
    CHECK(out.kind == AW_OUTPUT_KIND_END);
    EXPECT(aw_bridge_poll_output(bridge, &out), AW_RESULT_DRAINED);
    aw_bridge_free(bridge);
}

static void test_shutdown(void)
{
    aw_bridge *bridge = new_bridge(STREAM_BODY);
    aw_output out;
    EXPECT(aw_bridge_shutdown(bridge, 1), AW_RESULT_OK);
    EXPECT(aw_bridge_poll_output(bridge, &out), AW_RESULT_OK);
    CHECK(out.kind == AW_OUTPUT_KIND_HEAD && out.status == 503);
    CHECK(out.has_retryable && out.retryable);
    EXPECT(aw_bridge_poll_output(bridge, &out), AW_RESULT_OK);
    CHECK(out.kind == AW_OUTPUT_KIND_BODY);
    EXPECT(aw_bridge_poll_output(bridge, &out), AW_RESULT_OK);
    CHECK(out.kind == AW_OUTPUT_KIND_STOP_AGENT);
    EXPECT(aw_bridge_poll_output(bridge, &out), AW_RESULT_OK);
    CHECK(out.kind == AW_OUTPUT_KIND_END);
    EXPECT(aw_bridge_poll_output(bridge, &out), AW_RESULT_DRAINED);
    EXPECT(aw_bridge_shutdown(bridge, 2), AW_RESULT_OK);
    EXPECT(aw_bridge_poll_output(bridge, &out), AW_RESULT_DRAINED);
    EXPECT(aw_bridge_shutdown(NULL, 0), AW_RESULT_NULL_PARAMETER);
    aw_bridge_free(bridge);
}

static void test_rejected(void)
{
    static const char *const hostile[] = {
        "{\"model\":", "\xff\xfe{}", "[]", "{\"messages\":[]}",
        "{\"model\":\"--force\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
    };
    size_t i;
    for (i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
        aw_bridge *bridge = new_bridge(hostile[i]);
        aw_str s;
        aw_output out;
        size_t count;
        aw_bytes bytes;
        int ended = 0;
        EXPECT(aw_bridge_invocation_program(bridge, &s), AW_RESULT_REJECTED);
        EXPECT(aw_bridge_invocation_arg_count(bridge, &count), AW_RESULT_REJECTED);
        EXPECT(aw_bridge_invocation_stdin(bridge, &bytes), AW_RESULT_REJECTED);
        EXPECT(aw_bridge_poll_output(bridge, &out), AW_RESULT_OK);
        CHECK(out.kind == AW_OUTPUT_KIND_HEAD && out.status == 400);
        CHECK(str_eq(out.content_type, "application/json"));
        CHECK(out.has_retryable && !out.retryable);
        EXPECT(aw_bridge_poll_output(bridge, &out), AW_RESULT_OK);
        CHECK(out.kind == AW_OUTPUT_KIND_BODY && out.body.len > 0);
        CHECK(memcmp(out.body.data, "{\"error\":", 9) == 0);
        while (aw_bridge_poll_output(bridge, &out) == AW_RESULT_OK) {
            ended += out.kind == AW_OUTPUT_KIND_END;
        }
        CHECK(ended == 1);
        aw_bridge_free(bridge);
    }
}

static void test_decoder(void)
{
    aw_decoder *decoder = NULL;
    aw_config *config = NULL;
    aw_event event;
    aw_decoder_stats stats;
    aw_str s;
    int texts = 0, finishes = 0;

    EXPECT(aw_decoder_new(NULL, NULL), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_config_new(&config), AW_RESULT_OK);
    EXPECT(aw_config_set_decoder_max_line_len(config, 1 << 20), AW_RESULT_OK);
    EXPECT(aw_decoder_new(config, &decoder), AW_RESULT_OK);
    aw_config_free(config);

    EXPECT(aw_decoder_model(decoder, &s), AW_RESULT_NOT_AVAILABLE);
    EXPECT(aw_decoder_poll_event(decoder, &event), AW_RESULT_DRAINED);
    EXPECT(aw_decoder_push_stdout(decoder, (const uint8_t *)ANSWER, SIZE_MAX),
           AW_RESULT_LENGTH_TOO_LARGE);
    EXPECT(aw_decoder_push_stdout(decoder, (const uint8_t *)ANSWER, strlen(ANSWER)), AW_RESULT_OK);
    EXPECT(aw_decoder_poll_event(decoder, NULL), AW_RESULT_NULL_PARAMETER);
    while (aw_decoder_poll_event(decoder, &event) == AW_RESULT_OK) {
        if (event.kind == AW_EVENT_KIND_TEXT_DELTA) {
            texts++;
            CHECK(str_eq(event.text, "Hi"));
        }
        finishes += event.kind == AW_EVENT_KIND_FINISH;
    }
    CHECK(texts == 1 && finishes == 1);
    EXPECT(aw_decoder_session_id(decoder, &s), AW_RESULT_OK);
    CHECK(str_eq(s, "s-1"));
    EXPECT(aw_decoder_model(decoder, &s), AW_RESULT_OK);
    CHECK(str_eq(s, "Auto"));
    EXPECT(aw_decoder_get_stats(decoder, &stats), AW_RESULT_OK);
    CHECK(stats.lines == 3 && stats.results == 1);
    CHECK(!aw_decoder_is_finished(decoder));
    EXPECT(aw_decoder_push_eof(decoder), AW_RESULT_OK);
    EXPECT(aw_decoder_push_eof(decoder), AW_RESULT_OK);
    EXPECT(aw_decoder_poll_event(decoder, &event), AW_RESULT_DRAINED);
    CHECK(aw_decoder_is_finished(decoder));
    EXPECT(aw_decoder_push_stdout(decoder, (const uint8_t *)"x", 1), AW_RESULT_AFTER_EOF);
    CHECK(strstr(aw_decoder_last_error(decoder), "after its end") != NULL);
    aw_decoder_free(decoder);

    /* Output without a result ends in a failure event with a kind and a message. */
    EXPECT(aw_decoder_new(NULL, &decoder), AW_RESULT_OK);
    EXPECT(aw_decoder_push_stdout(decoder, (const uint8_t *)"not json\n", 9), AW_RESULT_OK);
    EXPECT(aw_decoder_push_eof(decoder), AW_RESULT_OK);
    EXPECT(aw_decoder_poll_event(decoder, &event), AW_RESULT_OK);
    CHECK(event.kind == AW_EVENT_KIND_FAILED && event.failure.message.len > 0);
    EXPECT(aw_decoder_poll_event(decoder, &event), AW_RESULT_DRAINED);
    EXPECT(aw_decoder_get_stats(decoder, &stats), AW_RESULT_OK);
    CHECK(stats.non_json == 1);
    aw_decoder_free(decoder);

    /* NULL handles. */
    EXPECT(aw_decoder_push_stdout(NULL, (const uint8_t *)"x", 1), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_decoder_push_eof(NULL), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_decoder_poll_event(NULL, &event), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_decoder_get_stats(NULL, &stats), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_decoder_session_id(NULL, &s), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_decoder_model(NULL, &s), AW_RESULT_NULL_PARAMETER);
    CHECK(aw_decoder_is_finished(NULL));
    CHECK(strcmp(aw_decoder_last_error(NULL), "") == 0);
    aw_decoder_free(NULL);
}

#ifdef AW_TEST_HOOKS
static void test_poisoned(void)
{
    aw_config *config = NULL;
    aw_bridge *bridge = new_bridge(STREAM_BODY);
    aw_decoder *decoder = NULL;
    aw_output out;
    aw_event event;
    aw_str s;
    uint64_t u64;

    EXPECT(aw_bridge_test_panic(bridge), AW_RESULT_PANIC);
    CHECK(strstr(aw_bridge_last_error(bridge), "panicked") != NULL);
    EXPECT(aw_bridge_poll_output(bridge, &out), AW_RESULT_POISONED);
    EXPECT(aw_bridge_push_stdout(bridge, (const uint8_t *)"x", 1, 0), AW_RESULT_POISONED);
    EXPECT(aw_bridge_invocation_program(bridge, &s), AW_RESULT_POISONED);
    EXPECT(aw_bridge_test_panic(bridge), AW_RESULT_POISONED);
    CHECK(aw_bridge_is_ended(bridge));
    CHECK(!aw_bridge_is_stream(bridge));
    aw_bridge_free(bridge);

    EXPECT(aw_decoder_new(NULL, &decoder), AW_RESULT_OK);
    EXPECT(aw_decoder_test_panic(decoder), AW_RESULT_PANIC);
    EXPECT(aw_decoder_poll_event(decoder, &event), AW_RESULT_POISONED);
    EXPECT(aw_decoder_push_eof(decoder), AW_RESULT_POISONED);
    CHECK(aw_decoder_is_finished(decoder));
    aw_decoder_free(decoder);

    EXPECT(aw_config_new(&config), AW_RESULT_OK);
    EXPECT(aw_config_test_panic(config), AW_RESULT_PANIC);
    EXPECT(aw_config_get_keep_alive_ms(config, &u64), AW_RESULT_POISONED);
    EXPECT(aw_config_set_keep_alive_ms(config, 1), AW_RESULT_POISONED);
    bridge = NULL;
    EXPECT(aw_bridge_new((const uint8_t *)STREAM_BODY, strlen(STREAM_BODY), config, 0, 0, 0,
                         &bridge),
           AW_RESULT_POISONED);
    CHECK(bridge == NULL);
    EXPECT(aw_decoder_new(config, &decoder), AW_RESULT_POISONED);
    aw_config_free(config);
}

/* A call on a handle another call is inside (as from another thread) is refused with
   AW_RESULT_BUSY and so is its free; the handle stays whole and usable. The threads test
   does the same from real threads. */
static void test_overlap(void)
{
    aw_config *config = NULL;
    aw_bridge *bridge = NULL;
    aw_decoder *decoder = NULL;
    aw_output out;
    aw_event event;
    uint64_t u64;
    int ends = 0;

    EXPECT(aw_config_new(&config), AW_RESULT_OK);
    EXPECT(aw_config_set_keep_alive_ms(config, 5), AW_RESULT_OK);
    EXPECT(aw_config_test_overlap(config), AW_RESULT_BUSY);
    EXPECT(aw_config_get_keep_alive_ms(config, &u64), AW_RESULT_OK);
    CHECK(u64 == 5);
    CHECK(strcmp(aw_config_last_error(config), "") == 0);

    bridge = new_bridge(STREAM_BODY);
    EXPECT(aw_bridge_test_overlap(bridge), AW_RESULT_BUSY);
    EXPECT(aw_bridge_push_stdout(bridge, (const uint8_t *)ANSWER, strlen(ANSWER), 1), AW_RESULT_OK);
    while (aw_bridge_poll_output(bridge, &out) == AW_RESULT_OK) {
        ends += out.kind == AW_OUTPUT_KIND_END;
    }
    CHECK(ends == 1 && aw_bridge_is_ended(bridge));
    aw_bridge_free(bridge);

    EXPECT(aw_decoder_new(config, &decoder), AW_RESULT_OK);
    EXPECT(aw_decoder_test_overlap(decoder), AW_RESULT_BUSY);
    EXPECT(aw_decoder_push_stdout(decoder, (const uint8_t *)ANSWER, strlen(ANSWER)), AW_RESULT_OK);
    EXPECT(aw_decoder_poll_event(decoder, &event), AW_RESULT_OK);
    aw_decoder_free(decoder);
    aw_config_free(config);
}
#endif

int main(void)
{
    uint32_t v;
    test_version();
    test_result_names();
    test_config();
    test_bridge();
    test_client_gone();
    test_shutdown();
    test_rejected();
    test_decoder();
#ifdef AW_TEST_HOOKS
    test_poisoned();
    test_overlap();
    /* Every named result value was returned by some call above. */
    for (v = 7000; v < 7300; v++) {
        if (strcmp(aw_result_name(v), "AW_RESULT_UNKNOWN") != 0 && !seen[v - 7000]) {
            fprintf(stderr, "%s was never reached\n", aw_result_name(v));
            failures++;
        }
    }
#else
    (void)v;
#endif
    if (failures) {
        fprintf(stderr, "abi: %d checks failed\n", failures);
        return 1;
    }
    printf("abi: all checks passed\n");
    return 0;
}
