/*
 * The C ABI's contract from C: every result code reachable from C, NULL handles and
 * out-parameters, misuse after the end, invalid UTF-8, huge lengths, out-of-range enums,
 * poisoned handles and overlapping calls (with AW_TEST_HOOKS), every config field set and
 * read back, every dialect's bridge and error shape, the replies that need no agent, the
 * conversation handles (registry, MCP server, the ACP connection's MCP endpoint), the
 * version macros against aw_version(). Includes only the public header.
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
static const char RESPONSES_BODY[] = "{\"model\":\"auto\",\"stream\":true,\"input\":\"hi\"}";
static const char MESSAGES_BODY[] = "{\"model\":\"auto\",\"max_tokens\":1024,\"stream\":true,"
                                    "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
static const char ANSWER[] =
    "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s-1\",\"model\":\"Auto\"}\n"
    "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"Hi\"}]}}\n"
    "{\"type\":\"result\",\"subtype\":\"success\",\"result\":\"Hi\",\"session_id\":\"s-1\"}\n";

static int str_eq(aw_str s, const char *c)
{
    return s.len == strlen(c) && memcmp(s.data, c, s.len) == 0;
}

static int starts_with(const uint8_t *data, size_t len, const char *prefix)
{
    return len >= strlen(prefix) && memcmp(data, prefix, strlen(prefix)) == 0;
}

static aw_bridge *new_bridge_of(aw_dialect dialect, const char *body)
{
    aw_bridge *bridge = NULL;
    EXPECT(aw_bridge_new(dialect, (const uint8_t *)body, strlen(body), NULL, 0, 1700000000u, 1,
                         &bridge),
           AW_RESULT_OK);
    CHECK(bridge != NULL);
    return bridge;
}

static aw_bridge *new_bridge(const char *body)
{
    return new_bridge_of(AW_DIALECT_CHAT_COMPLETIONS, body);
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
    CHECK(named == 26);
    CHECK(!aw_result_is_status(AW_RESULT_BUSY));
    CHECK(strcmp(aw_result_name(AW_RESULT_UNKNOWN_TURN), "AW_RESULT_UNKNOWN_TURN") == 0);
}

/* The names of the enums' values: the enumerator's name after its prefix, in lower case
 * (the dialects' are their APIs'), NULL for a number that is no value. */
static void test_enum_names(void)
{
    CHECK(strcmp(aw_error_kind_name(AW_ERROR_KIND_USAGE_LIMIT), "usage_limit") == 0);
    CHECK(strcmp(aw_error_kind_name(AW_ERROR_KIND_INVALID_REQUEST), "invalid_request") == 0);
    CHECK(aw_error_kind_name(1000) == NULL);
    CHECK(strcmp(aw_failure_kind_name(AW_FAILURE_KIND_AGENT_CRASHED), "agent_crashed") == 0);
    CHECK(aw_failure_kind_name(UINT32_MAX) == NULL);
    CHECK(strcmp(aw_finish_reason_name(AW_FINISH_REASON_TOOL_CALLS), "tool_calls") == 0);
    CHECK(aw_finish_reason_name(UINT32_MAX) == NULL);
    CHECK(strcmp(aw_tool_outcome_name(AW_TOOL_OUTCOME_NONE), "none") == 0);
    CHECK(strcmp(aw_tool_outcome_name(AW_TOOL_OUTCOME_PERMISSION_DENIED), "permission_denied") ==
          0);
    CHECK(aw_tool_outcome_name(1000) == NULL);
    CHECK(strcmp(aw_progress_kind_name(AW_PROGRESS_KIND_RETRYING), "retrying") == 0);
    CHECK(aw_progress_kind_name(1000) == NULL);
    CHECK(strcmp(aw_dialect_name(AW_DIALECT_CHAT_COMPLETIONS), "chat-completions") == 0);
    CHECK(strcmp(aw_dialect_name(AW_DIALECT_MESSAGES), "messages") == 0);
    CHECK(aw_dialect_name(1000) == NULL);
    CHECK(strcmp(aw_fresh_reason_name(AW_FRESH_REASON_NO_SESSION), "no_session") == 0);
    CHECK(strcmp(aw_fresh_reason_name(AW_FRESH_REASON_FOREIGN_ANSWER), "foreign_answer") == 0);
    CHECK(aw_fresh_reason_name(AW_FRESH_REASON_FOREIGN_ANSWER + 1) == NULL);
    CHECK(strcmp(aw_native_tools_name(AW_NATIVE_TOOLS_KEEP), "keep") == 0);
    CHECK(strcmp(aw_native_tools_name(AW_NATIVE_TOOLS_OFF), "off") == 0);
    CHECK(aw_native_tools_name(AW_NATIVE_TOOLS_OFF + 1) == NULL);
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
        EXPECT(aw_bridge_new(AW_DIALECT_CHAT_COMPLETIONS, (const uint8_t *)STREAM_BODY,
                             strlen(STREAM_BODY), config, 0, 0, 0, &bridge),
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
    EXPECT(aw_bridge_new(AW_DIALECT_CHAT_COMPLETIONS, NULL, 0, NULL, 0, 0, 0, NULL),
           AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_bridge_new(AW_DIALECT_MESSAGES, NULL, 5, NULL, 0, 0, 0, &bridge),
           AW_RESULT_NULL_PARAMETER);
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

/* Drains a bridge: the head's status and content type, the body (up to `cap` bytes,
   NUL-terminated), and how many ends. */
static int drain_all(aw_bridge *bridge, uint16_t *status, aw_str *content_type, char *body,
                     size_t cap)
{
    aw_output out;
    size_t len = 0;
    int ends = 0;
    while (aw_bridge_poll_output(bridge, &out) == AW_RESULT_OK) {
        if (out.kind == AW_OUTPUT_KIND_HEAD) {
            *status = out.status;
            *content_type = out.content_type;
        } else if (out.kind == AW_OUTPUT_KIND_BODY) {
            size_t n = out.body.len < cap - 1 - len ? out.body.len : cap - 1 - len;
            memcpy(body + len, out.body.data, n);
            len += n;
        } else if (out.kind == AW_OUTPUT_KIND_END) {
            ends++;
        }
    }
    body[len] = '\0';
    return ends;
}

/* Each dialect takes its own requests, streams its own events, and refuses a bad body
   with its own error body; a value that is no aw_dialect creates nothing. */
static void test_dialects(void)
{
    static const struct {
        aw_dialect dialect;
        const char *body;
        const char *first_event;
        const char *error_prefix;
    } CASES[] = {
        {AW_DIALECT_CHAT_COMPLETIONS, STREAM_BODY, "data: {\"id\":\"chatcmpl-", "{\"error\":{"},
        {AW_DIALECT_RESPONSES, RESPONSES_BODY, "event: response.created\n", "{\"error\":{"},
        {AW_DIALECT_MESSAGES, MESSAGES_BODY, "event: message_start\n",
         "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\""},
    };
    static const uint32_t INVALID[] = {3, 7, 0x7fffffffu, UINT32_MAX};
    size_t i;
    for (i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        char body[4096];
        uint16_t status = 0;
        aw_str content_type = {"", 0};
        aw_bridge *bridge = new_bridge_of(CASES[i].dialect, CASES[i].body);
        aw_str program;
        EXPECT(aw_bridge_invocation_program(bridge, &program), AW_RESULT_OK);
        CHECK(aw_bridge_is_stream(bridge));
        EXPECT(aw_bridge_push_stdout(bridge, (const uint8_t *)ANSWER, strlen(ANSWER), 1),
               AW_RESULT_OK);
        CHECK(drain_all(bridge, &status, &content_type, body, sizeof body) == 1);
        CHECK(status == 200 && str_eq(content_type, "text/event-stream"));
        CHECK(starts_with((const uint8_t *)body, strlen(body), CASES[i].first_event));
        CHECK(strstr(body, "Hi") != NULL);
        aw_bridge_free(bridge);

        /* Another dialect's body (or none at all) is a 400 in this dialect's shape. */
        bridge = new_bridge_of(CASES[i].dialect, i == 0 ? RESPONSES_BODY : "{\"model\":");
        EXPECT(aw_bridge_invocation_program(bridge, &program), AW_RESULT_REJECTED);
        CHECK(drain_all(bridge, &status, &content_type, body, sizeof body) == 1);
        CHECK(status == 400 && str_eq(content_type, "application/json"));
        CHECK(starts_with((const uint8_t *)body, strlen(body), CASES[i].error_prefix));
        aw_bridge_free(bridge);
    }
    for (i = 0; i < sizeof INVALID / sizeof INVALID[0]; i++) {
        aw_bridge *bridge = NULL;
        EXPECT(aw_bridge_new(INVALID[i], (const uint8_t *)STREAM_BODY, strlen(STREAM_BODY), NULL,
                             0, 0, 0, &bridge),
               AW_RESULT_INVALID_ENUM);
        CHECK(bridge == NULL);
    }
}

/* Reads a reply whole: its status, retry advice, and body (NUL-terminated, up to `cap`). */
static void read_reply(const aw_reply *reply, uint16_t *status, bool *retryable, char *body,
                       size_t cap)
{
    aw_bytes bytes;
    EXPECT(aw_reply_status(reply, status), AW_RESULT_OK);
    EXPECT(aw_reply_retryable(reply, retryable), AW_RESULT_OK);
    EXPECT(aw_reply_body(reply, &bytes), AW_RESULT_OK);
    CHECK(bytes.data != NULL && bytes.len < cap);
    memcpy(body, bytes.data, bytes.len < cap ? bytes.len : cap - 1);
    body[bytes.len < cap ? bytes.len : cap - 1] = '\0';
}

/* count_tokens never needs an agent: a valid body is an honest 404, a bad one its 400 (or
   413 over the configured limit); the adapter's own refusals have their status, their
   retry advice and the route dialect's error shape. */
static void test_replies(void)
{
    static const char COUNT_BODY[] =
        "{\"model\":\"claude-sonnet-4-5\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    static const struct {
        aw_error_kind kind;
        uint16_t status;
        bool retryable;
        const char *anthropic_type;
    } KINDS[] = {
        {AW_ERROR_KIND_INVALID_REQUEST, 400, false, "invalid_request_error"},
        {AW_ERROR_KIND_AUTHENTICATION, 401, false, "authentication_error"},
        {AW_ERROR_KIND_PERMISSION_DENIED, 403, false, "permission_error"},
        {AW_ERROR_KIND_NOT_FOUND, 404, false, "not_found_error"},
        {AW_ERROR_KIND_METHOD_NOT_ALLOWED, 405, false, "invalid_request_error"},
        {AW_ERROR_KIND_REQUEST_TOO_LARGE, 413, false, "request_too_large"},
        {AW_ERROR_KIND_UNSUPPORTED_MEDIA_TYPE, 415, false, "invalid_request_error"},
        {AW_ERROR_KIND_RATE_LIMITED, 429, true, "rate_limit_error"},
        {AW_ERROR_KIND_INTERNAL, 500, false, "api_error"},
        {AW_ERROR_KIND_AGENT_FAILED, 502, true, "api_error"},
        {AW_ERROR_KIND_UNAVAILABLE, 503, true, "overloaded_error"},
        {AW_ERROR_KIND_TIMEOUT, 504, true, "timeout_error"},
        {AW_ERROR_KIND_USAGE_LIMIT, 429, false, "rate_limit_error"},
    };
    static const char WHY[] = "Say \"why\".";
    aw_reply *reply = NULL;
    aw_config *config = NULL;
    char body[1024], expected[256];
    uint16_t status;
    bool retryable;
    aw_bytes bytes;
    size_t i;

    EXPECT(aw_reply_new_count_tokens((const uint8_t *)COUNT_BODY, strlen(COUNT_BODY), NULL, &reply),
           AW_RESULT_OK);
    read_reply(reply, &status, &retryable, body, sizeof body);
    CHECK(status == 404 && !retryable);
    CHECK(strstr(body, "{\"type\":\"error\",\"error\":{\"type\":\"not_found_error\"") == body);
    aw_reply_free(reply);
    EXPECT(aw_reply_new_count_tokens((const uint8_t *)"{\"model\":\"m\"}", 13, NULL, &reply),
           AW_RESULT_OK);
    read_reply(reply, &status, &retryable, body, sizeof body);
    CHECK(status == 400 && !retryable && strstr(body, "invalid_request_error") != NULL);
    CHECK(strstr(body, "messages") != NULL);
    aw_reply_free(reply);
    EXPECT(aw_config_new(&config), AW_RESULT_OK);
    EXPECT(aw_config_set_request_max_body_bytes(config, 8), AW_RESULT_OK);
    EXPECT(aw_reply_new_count_tokens((const uint8_t *)COUNT_BODY, strlen(COUNT_BODY), config,
                                     &reply),
           AW_RESULT_OK);
    read_reply(reply, &status, &retryable, body, sizeof body);
    CHECK(status == 413 && strstr(body, "request_too_large") != NULL);
    aw_reply_free(reply);
    aw_config_free(config);

    for (i = 0; i < sizeof KINDS / sizeof KINDS[0]; i++) {
        EXPECT(aw_reply_new_error(AW_DIALECT_MESSAGES, KINDS[i].kind, WHY, strlen(WHY), &reply),
               AW_RESULT_OK);
        read_reply(reply, &status, &retryable, body, sizeof body);
        CHECK(status == KINDS[i].status && retryable == KINDS[i].retryable);
        sprintf(expected, "{\"type\":\"error\",\"error\":{\"type\":\"%s\",\"message\":\"Say \\\"why\\\".\"}}",
                KINDS[i].anthropic_type);
        CHECK(strcmp(body, expected) == 0);
        aw_reply_free(reply);
        EXPECT(aw_reply_new_error(AW_DIALECT_RESPONSES, KINDS[i].kind, NULL, 0, &reply),
               AW_RESULT_OK);
        read_reply(reply, &status, &retryable, body, sizeof body);
        CHECK(status == KINDS[i].status && retryable == KINDS[i].retryable);
        CHECK(strstr(body, "{\"error\":{\"message\":\"\",\"type\":\"") == body);
        CHECK(strstr(body, "\"param\":null,\"code\":\"") != NULL);
        aw_reply_free(reply);
    }

    /* Misuse and bad input create nothing. */
    reply = NULL;
    EXPECT(aw_reply_new_error(3, AW_ERROR_KIND_NOT_FOUND, "x", 1, &reply), AW_RESULT_INVALID_ENUM);
    EXPECT(aw_reply_new_error(AW_DIALECT_CHAT_COMPLETIONS, 13, "x", 1, &reply),
           AW_RESULT_INVALID_ENUM);
    EXPECT(aw_reply_new_error(AW_DIALECT_CHAT_COMPLETIONS, UINT32_MAX, "x", 1, &reply),
           AW_RESULT_INVALID_ENUM);
    EXPECT(aw_reply_new_error(AW_DIALECT_MESSAGES, AW_ERROR_KIND_NOT_FOUND, "\xff", 1, &reply),
           AW_RESULT_INVALID_UTF8);
    EXPECT(aw_reply_new_error(AW_DIALECT_MESSAGES, AW_ERROR_KIND_NOT_FOUND, NULL, 3, &reply),
           AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_reply_new_error(AW_DIALECT_MESSAGES, AW_ERROR_KIND_NOT_FOUND, "x", SIZE_MAX, &reply),
           AW_RESULT_LENGTH_TOO_LARGE);
    EXPECT(aw_reply_new_error(AW_DIALECT_MESSAGES, AW_ERROR_KIND_NOT_FOUND, "x", 1, NULL),
           AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_reply_new_count_tokens(NULL, 1, NULL, &reply), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_reply_new_count_tokens((const uint8_t *)"{}", SIZE_MAX, NULL, &reply),
           AW_RESULT_LENGTH_TOO_LARGE);
    EXPECT(aw_reply_new_count_tokens(NULL, 0, NULL, NULL), AW_RESULT_NULL_PARAMETER);
    CHECK(reply == NULL);
    /* An empty body is a request like any other: a 400, not a failed call. */
    EXPECT(aw_reply_new_count_tokens(NULL, 0, NULL, &reply), AW_RESULT_OK);
    EXPECT(aw_reply_status(reply, NULL), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_reply_retryable(reply, NULL), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_reply_body(reply, NULL), AW_RESULT_NULL_PARAMETER);
    CHECK(strstr(aw_reply_last_error(reply), "out_body") != NULL);
    EXPECT(aw_reply_status(reply, &status), AW_RESULT_OK);
    CHECK(status == 400);
    aw_reply_free(reply);

    /* NULL handles. */
    EXPECT(aw_reply_status(NULL, &status), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_reply_retryable(NULL, &retryable), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_reply_body(NULL, &bytes), AW_RESULT_NULL_PARAMETER);
    CHECK(strcmp(aw_reply_last_error(NULL), "") == 0);
    aw_reply_free(NULL);
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

/* Whether `needle` occurs in the `len` bytes at `data`. */
static int contains(const uint8_t *data, size_t len, const char *needle)
{
    size_t n = strlen(needle), i;
    for (i = 0; i + n <= len; i++) {
        if (memcmp(data + i, needle, n) == 0) {
            return 1;
        }
    }
    return 0;
}

/* Pushes one agent line (its newline added) to an ACP connection. */
static void acp_push(aw_acp_connection *conn, const char *line, uint64_t now_ms)
{
    EXPECT(aw_acp_connection_push_stdout(conn, (const uint8_t *)line, strlen(line), now_ms),
           AW_RESULT_OK);
    EXPECT(aw_acp_connection_push_stdout(conn, (const uint8_t *)"\n", 1, now_ms), AW_RESULT_OK);
}

/* The next transmit must hold `needle`; then nothing more is to be written. */
static void acp_expect_transmit(aw_acp_connection *conn, const char *needle)
{
    aw_bytes bytes;
    EXPECT(aw_acp_connection_poll_transmit(conn, &bytes), AW_RESULT_OK);
    CHECK(contains(bytes.data, bytes.len, needle));
    CHECK(bytes.len > 0 && bytes.data[bytes.len - 1] == '\n');
    EXPECT(aw_acp_connection_poll_transmit(conn, &bytes), AW_RESULT_DRAINED);
}

static void test_acp_config(void)
{
    aw_acp_config *config = NULL;
    aw_str s;
    size_t size;
    uint64_t u64;
    aw_permission_choice choice;
    aw_native_tools native_tools;

    EXPECT(aw_acp_config_new(NULL), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_acp_config_new(&config), AW_RESULT_OK);
    /* The defaults of the Rust AcpConfig::default(). */
    EXPECT(aw_acp_config_get_cwd(config, &s), AW_RESULT_OK);
    CHECK(str_eq(s, "/"));
    EXPECT(aw_acp_config_get_client_name(config, &s), AW_RESULT_OK);
    CHECK(str_eq(s, "agentwire"));
    EXPECT(aw_acp_config_get_permission(config, &choice), AW_RESULT_OK);
    CHECK(choice == AW_PERMISSION_CHOICE_ALLOW_ONCE);
    EXPECT(aw_acp_config_get_native_tools(config, &native_tools), AW_RESULT_OK);
    CHECK(native_tools == AW_NATIVE_TOOLS_KEEP);
    EXPECT(aw_acp_config_get_pool_size(config, &size), AW_RESULT_OK);
    CHECK(size == 1);
    EXPECT(aw_acp_config_get_max_concurrent_prompts(config, &size), AW_RESULT_OK);
    CHECK(size == 4);
    EXPECT(aw_acp_config_get_queue_timeout_ms(config, &u64), AW_RESULT_OK);
    CHECK(u64 == 30000);
    EXPECT(aw_acp_config_get_turn_output_budget(config, &size), AW_RESULT_OK);
    CHECK(size == (size_t)8 << 20);

    /* Every setter, read back. */
    EXPECT(aw_acp_config_set_cwd(config, "/srv/w", 6), AW_RESULT_OK);
    EXPECT(aw_acp_config_set_client_name(config, "plugin", 6), AW_RESULT_OK);
    EXPECT(aw_acp_config_set_client_version(config, "9.9", 3), AW_RESULT_OK);
    EXPECT(aw_acp_config_set_permission(config, AW_PERMISSION_CHOICE_REJECT_ONCE), AW_RESULT_OK);
    EXPECT(aw_acp_config_set_native_tools(config, AW_NATIVE_TOOLS_OFF), AW_RESULT_OK);
    EXPECT(aw_acp_config_set_pool_size(config, 0), AW_RESULT_OK);
    EXPECT(aw_acp_config_set_max_concurrent_prompts(config, 2), AW_RESULT_OK);
    EXPECT(aw_acp_config_set_queue_timeout_ms(config, 11), AW_RESULT_OK);
    EXPECT(aw_acp_config_set_initialize_timeout_ms(config, 12), AW_RESULT_OK);
    EXPECT(aw_acp_config_set_new_session_timeout_ms(config, 13), AW_RESULT_OK);
    EXPECT(aw_acp_config_set_set_model_timeout_ms(config, 14), AW_RESULT_OK);
    EXPECT(aw_acp_config_set_cancel_timeout_ms(config, 15), AW_RESULT_OK);
    EXPECT(aw_acp_config_set_turn_output_budget(config, 16), AW_RESULT_OK);
    EXPECT(aw_acp_config_set_max_line_len(config, 17), AW_RESULT_OK);
    EXPECT(aw_acp_config_set_stderr_tail_bytes(config, 18), AW_RESULT_OK);
    EXPECT(aw_acp_config_get_cwd(config, &s), AW_RESULT_OK);
    CHECK(str_eq(s, "/srv/w"));
    EXPECT(aw_acp_config_get_client_name(config, &s), AW_RESULT_OK);
    CHECK(str_eq(s, "plugin"));
    EXPECT(aw_acp_config_get_client_version(config, &s), AW_RESULT_OK);
    CHECK(str_eq(s, "9.9"));
    EXPECT(aw_acp_config_get_permission(config, &choice), AW_RESULT_OK);
    CHECK(choice == AW_PERMISSION_CHOICE_REJECT_ONCE);
    EXPECT(aw_acp_config_get_native_tools(config, &native_tools), AW_RESULT_OK);
    CHECK(native_tools == AW_NATIVE_TOOLS_OFF);
    EXPECT(aw_acp_config_get_pool_size(config, &size), AW_RESULT_OK);
    CHECK(size == 0);
    EXPECT(aw_acp_config_get_max_concurrent_prompts(config, &size), AW_RESULT_OK);
    CHECK(size == 2);
    EXPECT(aw_acp_config_get_queue_timeout_ms(config, &u64), AW_RESULT_OK);
    CHECK(u64 == 11);
    EXPECT(aw_acp_config_get_initialize_timeout_ms(config, &u64), AW_RESULT_OK);
    CHECK(u64 == 12);
    EXPECT(aw_acp_config_get_new_session_timeout_ms(config, &u64), AW_RESULT_OK);
    CHECK(u64 == 13);
    EXPECT(aw_acp_config_get_set_model_timeout_ms(config, &u64), AW_RESULT_OK);
    CHECK(u64 == 14);
    EXPECT(aw_acp_config_get_cancel_timeout_ms(config, &u64), AW_RESULT_OK);
    CHECK(u64 == 15);
    EXPECT(aw_acp_config_get_turn_output_budget(config, &size), AW_RESULT_OK);
    CHECK(size == 16);
    EXPECT(aw_acp_config_get_max_line_len(config, &size), AW_RESULT_OK);
    CHECK(size == 17);
    EXPECT(aw_acp_config_get_stderr_tail_bytes(config, &size), AW_RESULT_OK);
    CHECK(size == 18);

    /* Bad values change nothing. */
    EXPECT(aw_acp_config_set_permission(config, 2), AW_RESULT_INVALID_ENUM);
    CHECK(strstr(aw_acp_config_last_error(config), "permission") != NULL);
    EXPECT(aw_acp_config_set_native_tools(config, AW_NATIVE_TOOLS_OFF + 1), AW_RESULT_INVALID_ENUM);
    CHECK(strstr(aw_acp_config_last_error(config), "native_tools") != NULL);
    EXPECT(aw_acp_config_get_native_tools(config, &native_tools), AW_RESULT_OK);
    CHECK(native_tools == AW_NATIVE_TOOLS_OFF);
    EXPECT(aw_acp_config_set_cwd(config, "\xff", 1), AW_RESULT_INVALID_UTF8);
    EXPECT(aw_acp_config_set_cwd(config, NULL, 1), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_acp_config_set_cwd(config, "x", (size_t)PTRDIFF_MAX + 1), AW_RESULT_LENGTH_TOO_LARGE);
    EXPECT(aw_acp_config_get_cwd(config, &s), AW_RESULT_OK);
    CHECK(str_eq(s, "/srv/w"));
    EXPECT(aw_acp_config_get_permission(config, NULL), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_acp_config_set_pool_size(NULL, 1), AW_RESULT_NULL_PARAMETER);
    CHECK(strcmp(aw_acp_config_last_error(NULL), "") == 0);
    aw_acp_config_free(config);
    aw_acp_config_free(NULL);
}

static const char ACP_INITIALIZED[] =
    "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":1,\"agentCapabilities\":{},"
    "\"authMethods\":[]}}";
static const char ACP_SESSION[] =
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"sessionId\":\"s-1\",\"models\":{"
    "\"currentModelId\":\"m-a\",\"availableModels\":[{\"modelId\":\"m-a\",\"name\":\"A\"},"
    "{\"modelId\":\"m-b\",\"name\":\"B\"}]}}}";
static const char ACP_CHUNK[] =
    "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"s-1\","
    "\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\","
    "\"text\":\"Hello from ACP\"}}}}";
static const char ACP_PROMPT_END[] =
    "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"stopReason\":\"end_turn\"}}";

/* One connection from the handshake to the agent's exit: a turn's outputs as a bridge's,
   the model list, and every misuse. */
/* What to add to an agent's launch with its own tools off: codex-acp's arguments, Gemini
 * CLI's policy file with the user's own policies named after it, unknown agents refused. */
static void test_acp_launch(void)
{
    aw_acp_launch *launch = NULL;
    const char *codex_args[] = {"@zed-industries/codex-acp"};
    const char *gemini_args[] = {"--acp"};
    const char *cursor_args[] = {"acp"};
    const char *gemini_env[] = {"HOME=/home/u", "GEMINI_CLI_HOME=/srv/gemini", NULL};
    const char *no_env[] = {NULL};
    size_t count = 0, i;
    aw_str s;

    EXPECT(aw_acp_launch_new("npx", codex_args, 1, NULL, &launch), AW_RESULT_OK);
    EXPECT(aw_acp_launch_arg_count(launch, &count), AW_RESULT_OK);
    CHECK(count > 0 && count % 2 == 0);
    for (i = 0; i < count; i += 2) {
        EXPECT(aw_acp_launch_arg(launch, i, &s), AW_RESULT_OK);
        CHECK(str_eq(s, "-c") && s.data[s.len] == '\0');
    }
    EXPECT(aw_acp_launch_arg(launch, 1, &s), AW_RESULT_OK);
    CHECK(strchr(s.data, '=') != NULL);
    EXPECT(aw_acp_launch_arg(launch, count, &s), AW_RESULT_INDEX_OUT_OF_RANGE);
    CHECK(strstr(aw_acp_launch_last_error(launch), "out of range") != NULL);
    CHECK(!aw_acp_launch_has_file(launch));
    EXPECT(aw_acp_launch_file_name(launch, &s), AW_RESULT_NOT_AVAILABLE);
    EXPECT(aw_acp_launch_file_contents(launch, &s), AW_RESULT_NOT_AVAILABLE);
    EXPECT(aw_acp_launch_file_flag(launch, &s), AW_RESULT_NOT_AVAILABLE);
    EXPECT(aw_acp_launch_file_after_count(launch, &count), AW_RESULT_NOT_AVAILABLE);
    EXPECT(aw_acp_launch_file_after(launch, 0, &s), AW_RESULT_NOT_AVAILABLE);
    CHECK(strstr(aw_acp_launch_last_error(launch), "no file") != NULL);
    aw_acp_launch_free(launch);

    launch = NULL;
    EXPECT(aw_acp_launch_new("/usr/bin/gemini", gemini_args, 1, gemini_env, &launch), AW_RESULT_OK);
    EXPECT(aw_acp_launch_arg_count(launch, &count), AW_RESULT_OK);
    CHECK(count == 0);
    CHECK(aw_acp_launch_has_file(launch));
    EXPECT(aw_acp_launch_file_name(launch, &s), AW_RESULT_OK);
    CHECK(str_eq(s, "agentwire-native-tools-off.toml") && s.data[s.len] == '\0');
    EXPECT(aw_acp_launch_file_flag(launch, &s), AW_RESULT_OK);
    CHECK(str_eq(s, "--policy"));
    EXPECT(aw_acp_launch_file_contents(launch, &s), AW_RESULT_OK);
    CHECK(strstr(s.data, "decision = \"deny\"") != NULL);
    CHECK(strstr(s.data, "mcpName = \"*\"") != NULL);
    EXPECT(aw_acp_launch_file_after_count(launch, &count), AW_RESULT_OK);
    CHECK(count == 2);
    EXPECT(aw_acp_launch_file_after(launch, 0, &s), AW_RESULT_OK);
    CHECK(str_eq(s, "--policy"));
    EXPECT(aw_acp_launch_file_after(launch, 1, &s), AW_RESULT_OK);
    CHECK(str_eq(s, "/srv/gemini/.gemini/policies"));
    EXPECT(aw_acp_launch_file_after(launch, 2, &s), AW_RESULT_INDEX_OUT_OF_RANGE);
    CHECK(strstr(aw_acp_launch_last_error(launch), "out of range") != NULL);
    aw_acp_launch_free(launch);

    /* No home in the agent's environment: no policies to name after the file. */
    launch = NULL;
    EXPECT(aw_acp_launch_new("gemini", gemini_args, 1, no_env, &launch), AW_RESULT_OK);
    CHECK(aw_acp_launch_has_file(launch));
    EXPECT(aw_acp_launch_file_after_count(launch, &count), AW_RESULT_OK);
    CHECK(count == 0);
    aw_acp_launch_free(launch);

    launch = NULL;
    EXPECT(aw_acp_launch_new("cursor-agent", cursor_args, 1, NULL, &launch), AW_RESULT_UNKNOWN_AGENT);
    CHECK(launch == NULL);
    EXPECT(aw_acp_launch_new("gemini", NULL, 0, NULL, &launch), AW_RESULT_UNKNOWN_AGENT);
    EXPECT(aw_acp_launch_new("codex-acp", NULL, 1, NULL, &launch), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_acp_launch_new("codex-acp\xff", NULL, 0, NULL, &launch), AW_RESULT_INVALID_UTF8);
    EXPECT(aw_acp_launch_new("codex-acp", NULL, 0, NULL, NULL), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_acp_launch_arg_count(NULL, &count), AW_RESULT_NULL_PARAMETER);
    CHECK(strcmp(aw_acp_launch_last_error(NULL), "") == 0);
    aw_acp_launch_free(NULL);
}

static void test_acp_connection(void)
{
    aw_acp_connection *conn = NULL;
    aw_output out;
    aw_acp_decision decision;
    aw_bytes bytes;
    aw_str s;
    size_t size;
    uint64_t turn = 77, u64;
    bool has;
    int heads = 0, ends = 0, text = 0;

    EXPECT(aw_acp_connection_new(NULL, 0, NULL), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_acp_connection_new(NULL, 0, &conn), AW_RESULT_OK);
    CHECK(!aw_acp_connection_is_ready(conn) && !aw_acp_connection_is_dead(conn));
    EXPECT(aw_acp_connection_poll_timeout(conn, &has, &u64), AW_RESULT_OK);
    CHECK(has && u64 == 10000);
    acp_expect_transmit(conn, "\"method\":\"initialize\"");
    EXPECT(aw_acp_connection_model_count(conn, &size), AW_RESULT_NOT_AVAILABLE);
    EXPECT(aw_acp_connection_model(conn, 0, &s), AW_RESULT_NOT_AVAILABLE);
    EXPECT(aw_acp_connection_current_model(conn, &s), AW_RESULT_NOT_AVAILABLE);

    /* The handshake, then the pool's session. */
    acp_push(conn, ACP_INITIALIZED, 5);
    CHECK(aw_acp_connection_is_ready(conn));
    acp_expect_transmit(conn, "\"method\":\"session/new\"");
    acp_push(conn, ACP_SESSION, 6);
    EXPECT(aw_acp_connection_model_count(conn, &size), AW_RESULT_OK);
    CHECK(size == 2);
    EXPECT(aw_acp_connection_model(conn, 1, &s), AW_RESULT_OK);
    CHECK(str_eq(s, "m-b"));
    EXPECT(aw_acp_connection_model(conn, 2, &s), AW_RESULT_INDEX_OUT_OF_RANGE);
    EXPECT(aw_acp_connection_current_model(conn, &s), AW_RESULT_OK);
    CHECK(str_eq(s, "m-a"));

    /* A turn: bad arguments first, each leaving *turn alone. */
    EXPECT(aw_acp_connection_start_turn(conn, 9, (const uint8_t *)STREAM_BODY, strlen(STREAM_BODY),
                                        NULL, 7, 1700000000u, 1, &turn),
           AW_RESULT_INVALID_ENUM);
    EXPECT(aw_acp_connection_start_turn(conn, AW_DIALECT_CHAT_COMPLETIONS, NULL, 3, NULL, 7,
                                        1700000000u, 1, &turn),
           AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_acp_connection_start_turn(conn, AW_DIALECT_CHAT_COMPLETIONS,
                                        (const uint8_t *)STREAM_BODY, strlen(STREAM_BODY), NULL,
                                        7, 1700000000u, 1, NULL),
           AW_RESULT_NULL_PARAMETER);
    CHECK(turn == 77);
    EXPECT(aw_acp_connection_poll_output(conn, 0, &out), AW_RESULT_UNKNOWN_TURN);
    CHECK(strstr(aw_acp_connection_last_error(conn), "never started") != NULL);
    EXPECT(aw_acp_connection_start_turn(conn, AW_DIALECT_CHAT_COMPLETIONS,
                                        (const uint8_t *)STREAM_BODY, strlen(STREAM_BODY), NULL,
                                        7, 1700000000u, 1, &turn),
           AW_RESULT_OK);
    CHECK(turn == 0);
    EXPECT(aw_acp_connection_active_turns(conn, &size), AW_RESULT_OK);
    CHECK(size == 1);
    acp_expect_transmit(conn, "\"method\":\"session/prompt\"");
    EXPECT(aw_acp_connection_poll_output(conn, 1, &out), AW_RESULT_UNKNOWN_TURN);
    EXPECT(aw_acp_connection_client_gone(conn, 1, 8), AW_RESULT_UNKNOWN_TURN);
    EXPECT(aw_acp_connection_poll_output(conn, 0, NULL), AW_RESULT_NULL_PARAMETER);

    acp_push(conn, ACP_CHUNK, 9);
    acp_push(conn, ACP_PROMPT_END, 10);
    EXPECT(aw_acp_connection_poll_ready(conn, &u64), AW_RESULT_OK);
    CHECK(u64 == 0);
    while (aw_acp_connection_poll_output(conn, 0, &out) == AW_RESULT_OK) {
        CHECK(out.kind != AW_OUTPUT_KIND_STOP_AGENT);
        if (out.kind == AW_OUTPUT_KIND_HEAD) {
            heads++;
            CHECK(out.status == 200 && str_eq(out.content_type, "text/event-stream"));
        }
        if (out.kind == AW_OUTPUT_KIND_BODY) {
            text += contains(out.body.data, out.body.len, "Hello from ACP");
        }
        ends += out.kind == AW_OUTPUT_KIND_END;
    }
    CHECK(heads == 1 && ends == 1 && text == 1);
    EXPECT(aw_acp_connection_poll_ready(conn, &u64), AW_RESULT_DRAINED);
    /* A finished turn is known: drained, not unknown. */
    EXPECT(aw_acp_connection_poll_output(conn, 0, &out), AW_RESULT_DRAINED);
    EXPECT(aw_acp_connection_client_gone(conn, 0, 11), AW_RESULT_OK);
    EXPECT(aw_acp_connection_active_turns(conn, &size), AW_RESULT_OK);
    CHECK(size == 0);
    EXPECT(aw_acp_connection_malformed_lines(conn, &u64), AW_RESULT_OK);
    CHECK(u64 == 0);
    EXPECT(aw_acp_connection_push_stdout(conn, (const uint8_t *)"not json\n", 9, 12), AW_RESULT_OK);
    EXPECT(aw_acp_connection_malformed_lines(conn, &u64), AW_RESULT_OK);
    CHECK(u64 == 1);

    /* The agent exits: dead; a turn started now fails at once; pushes are misuse. */
    EXPECT(aw_acp_connection_push_stderr(conn, (const uint8_t *)"bye\n", 4, 13), AW_RESULT_OK);
    EXPECT(aw_acp_connection_agent_exited_signal(conn, 9, 13), AW_RESULT_OK);
    CHECK(aw_acp_connection_is_dead(conn) && !aw_acp_connection_is_ready(conn));
    EXPECT(aw_acp_connection_agent_exited_code(conn, 0, 14), AW_RESULT_EXITED_TWICE);
    EXPECT(aw_acp_connection_push_stdout(conn, (const uint8_t *)"{}\n", 3, 14), AW_RESULT_AFTER_EXIT);
    CHECK(strstr(aw_acp_connection_last_error(conn), "exited") != NULL);
    EXPECT(aw_acp_connection_push_stderr(conn, (const uint8_t *)"x", 1, 14), AW_RESULT_AFTER_EXIT);
    while (aw_acp_connection_poll_decision(conn, &decision) == AW_RESULT_OK) {
        CHECK(decision.kind == AW_ACP_DECISION_KIND_RESTART && decision.reason.data != NULL);
    }
    EXPECT(aw_acp_connection_poll_decision(conn, NULL), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_acp_connection_start_turn(conn, AW_DIALECT_MESSAGES, (const uint8_t *)MESSAGES_BODY,
                                        strlen(MESSAGES_BODY), NULL, 15, 1700000000u, 2, &turn),
           AW_RESULT_OK);
    CHECK(turn == 1);
    EXPECT(aw_acp_connection_poll_output(conn, 1, &out), AW_RESULT_OK);
    CHECK(out.kind == AW_OUTPUT_KIND_HEAD && out.status >= 500);
    EXPECT(aw_acp_connection_shutdown(conn, 16), AW_RESULT_OK);
    EXPECT(aw_acp_connection_handle_timeout(conn, 17), AW_RESULT_OK);
    EXPECT(aw_acp_connection_poll_transmit(conn, &bytes), AW_RESULT_DRAINED);
    aw_acp_connection_free(conn);

    /* NULL handles. */
    EXPECT(aw_acp_connection_push_stdout(NULL, (const uint8_t *)"x", 1, 0), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_acp_connection_poll_ready(NULL, &u64), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_acp_connection_client_gone(NULL, 0, 0), AW_RESULT_NULL_PARAMETER);
    CHECK(aw_acp_connection_is_dead(NULL) && !aw_acp_connection_is_ready(NULL));
    CHECK(strcmp(aw_acp_connection_last_error(NULL), "") == 0);
    aw_acp_connection_free(NULL);
}

static void test_registry_config(void)
{
    aw_registry_config *config = NULL;
    bool b;
    uint64_t u64;
    size_t size;

    EXPECT(aw_registry_config_new(NULL), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_registry_config_new(&config), AW_RESULT_OK);
    /* The defaults of the Rust RegistryConfig::default(). */
    EXPECT(aw_registry_config_get_enabled(config, &b), AW_RESULT_OK);
    CHECK(b);
    EXPECT(aw_registry_config_get_ttl_ms(config, &u64), AW_RESULT_OK);
    CHECK(u64 == 30u * 60u * 1000u);
    EXPECT(aw_registry_config_get_max_parked(config, &size), AW_RESULT_OK);
    CHECK(size == 256);
    EXPECT(aw_registry_config_get_max_parked_per_owner(config, &size), AW_RESULT_OK);
    CHECK(size == 32);
    EXPECT(aw_registry_config_set_enabled(config, false), AW_RESULT_OK);
    EXPECT(aw_registry_config_set_ttl_ms(config, 11), AW_RESULT_OK);
    EXPECT(aw_registry_config_set_max_parked(config, 12), AW_RESULT_OK);
    EXPECT(aw_registry_config_set_max_parked_per_owner(config, 13), AW_RESULT_OK);
    EXPECT(aw_registry_config_get_enabled(config, &b), AW_RESULT_OK);
    CHECK(!b);
    EXPECT(aw_registry_config_get_ttl_ms(config, &u64), AW_RESULT_OK);
    CHECK(u64 == 11);
    EXPECT(aw_registry_config_get_max_parked(config, &size), AW_RESULT_OK);
    CHECK(size == 12);
    EXPECT(aw_registry_config_get_max_parked_per_owner(config, &size), AW_RESULT_OK);
    CHECK(size == 13);
    EXPECT(aw_registry_config_get_ttl_ms(config, NULL), AW_RESULT_NULL_PARAMETER);
    CHECK(strstr(aw_registry_config_last_error(config), "out_value") != NULL);
    EXPECT(aw_registry_config_set_enabled(NULL, true), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_registry_config_get_enabled(NULL, &b), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_registry_config_set_ttl_ms(NULL, 1), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_registry_config_set_max_parked(NULL, 1), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_registry_config_set_max_parked_per_owner(NULL, 1), AW_RESULT_NULL_PARAMETER);
    CHECK(strcmp(aw_registry_config_last_error(NULL), "") == 0);
    aw_registry_config_free(config);
    aw_registry_config_free(NULL);
}

/* A registry and the bridges of a conversation: every misuse, none of which touches the
   registry. */
static void test_registry(void)
{
    static const char KEY[] = "sk-1";
    aw_registry_config *config = NULL;
    aw_registry *registry = NULL, *other = NULL;
    aw_registry_stats stats;
    aw_bridge *bridge = NULL, *plain = NULL;
    aw_output out;
    aw_str s;
    size_t size;
    uint64_t u64;
    bool has;

    EXPECT(aw_registry_new(NULL, NULL), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_registry_config_new(&config), AW_RESULT_OK);
    EXPECT(aw_registry_config_set_ttl_ms(config, 500), AW_RESULT_OK);
    EXPECT(aw_registry_new(config, &registry), AW_RESULT_OK);
    aw_registry_config_free(config);
    EXPECT(aw_registry_new(NULL, &other), AW_RESULT_OK);

    EXPECT(aw_registry_parked(registry, &size), AW_RESULT_OK);
    CHECK(size == 0);
    EXPECT(aw_registry_busy(registry, &size), AW_RESULT_OK);
    CHECK(size == 0);
    EXPECT(aw_registry_get_stats(registry, &stats), AW_RESULT_OK);
    CHECK(stats.resumed == 0 && stats.refused == 0 && stats.dropped == 0);
    EXPECT(aw_registry_fresh(registry, AW_FRESH_REASON_DISABLED, &u64), AW_RESULT_OK);
    CHECK(u64 == 0);
    u64 = 77;
    EXPECT(aw_registry_fresh(registry, AW_FRESH_REASON_FOREIGN_ANSWER + 1, &u64),
           AW_RESULT_INVALID_ENUM);
    CHECK(u64 == 77 && strstr(aw_registry_last_error(registry), "reason") != NULL);
    EXPECT(aw_registry_poll_released(registry, &s), AW_RESULT_DRAINED);
    EXPECT(aw_registry_poll_timeout(registry, &has, &u64), AW_RESULT_OK);
    CHECK(!has && u64 == 0);
    EXPECT(aw_registry_handle_timeout(registry, 1), AW_RESULT_OK);
    EXPECT(aw_registry_clear(registry, 1), AW_RESULT_OK);

    /* Bridges of a conversation: what C hands over is checked first. */
    EXPECT(aw_bridge_new_in_conversation(AW_DIALECT_CHAT_COMPLETIONS, (const uint8_t *)STREAM_BODY,
                                         strlen(STREAM_BODY), NULL, 0, 0, 1, NULL, NULL, 0, NULL,
                                         0, NULL, 0, NULL, 0, &bridge),
           AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_bridge_new_in_conversation(AW_DIALECT_CHAT_COMPLETIONS, (const uint8_t *)STREAM_BODY,
                                         strlen(STREAM_BODY), NULL, 0, 0, 1, registry, NULL, 0,
                                         NULL, 0, NULL, 0, NULL, 0, NULL),
           AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_bridge_new_in_conversation(3, (const uint8_t *)STREAM_BODY, strlen(STREAM_BODY),
                                         NULL, 0, 0, 1, registry, NULL, 0, NULL, 0, NULL, 0, NULL,
                                         0, &bridge),
           AW_RESULT_INVALID_ENUM);
    EXPECT(aw_bridge_new_in_conversation(AW_DIALECT_CHAT_COMPLETIONS, (const uint8_t *)STREAM_BODY,
                                         strlen(STREAM_BODY), NULL, 0, 0, 1, registry, NULL, 3,
                                         NULL, 0, NULL, 0, NULL, 0, &bridge),
           AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_bridge_new_in_conversation(AW_DIALECT_CHAT_COMPLETIONS, (const uint8_t *)STREAM_BODY,
                                         strlen(STREAM_BODY), NULL, 0, 0, 1, registry, NULL, 0,
                                         "\xff", 1, NULL, 0, NULL, 0, &bridge),
           AW_RESULT_INVALID_UTF8);
    EXPECT(aw_bridge_new_in_conversation(AW_DIALECT_CHAT_COMPLETIONS, (const uint8_t *)STREAM_BODY,
                                         strlen(STREAM_BODY), NULL, 0, 0, 1, registry, NULL, 0,
                                         NULL, 0, "a", SIZE_MAX, NULL, 0, &bridge),
           AW_RESULT_LENGTH_TOO_LARGE);
    EXPECT(aw_bridge_new_in_conversation(AW_DIALECT_CHAT_COMPLETIONS, (const uint8_t *)STREAM_BODY,
                                         strlen(STREAM_BODY), NULL, 0, 0, 1, registry, NULL, 0,
                                         NULL, 0, NULL, 0, NULL, 7, &bridge),
           AW_RESULT_NULL_PARAMETER);
    CHECK(bridge == NULL);
    EXPECT(aw_registry_busy(registry, &size), AW_RESULT_OK);
    CHECK(size == 0);
    EXPECT(aw_bridge_new_in_conversation(AW_DIALECT_CHAT_COMPLETIONS, (const uint8_t *)STREAM_BODY,
                                         strlen(STREAM_BODY), NULL, 0, 0, 1, registry,
                                         (const uint8_t *)KEY, strlen(KEY), "s", 1, "", 0, "k", 1,
                                         &bridge),
           AW_RESULT_OK);
    EXPECT(aw_registry_busy(registry, &size), AW_RESULT_OK);
    CHECK(size == 1);
    /* Only the registry the bridge was made in takes its place back. */
    EXPECT(aw_bridge_end_conversation_turn(bridge, other, 1), AW_RESULT_WRONG_REGISTRY);
    CHECK(strstr(aw_bridge_last_error(bridge), "registry") != NULL);
    EXPECT(aw_bridge_end_conversation_turn(bridge, NULL, 1), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_bridge_end_conversation_turn(NULL, registry, 1), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_registry_busy(registry, &size), AW_RESULT_OK);
    CHECK(size == 1);
    /* Before the end it counts as a response that did not finish: the session goes. */
    EXPECT(aw_bridge_end_conversation_turn(bridge, registry, 2), AW_RESULT_OK);
    EXPECT(aw_registry_busy(registry, &size), AW_RESULT_OK);
    CHECK(size == 0);
    EXPECT(aw_bridge_poll_output(bridge, &out), AW_RESULT_DRAINED);
    aw_bridge_free(bridge);
    /* A bridge of no conversation has no place to give back. */
    plain = new_bridge(STREAM_BODY);
    EXPECT(aw_bridge_end_conversation_turn(plain, other, 1), AW_RESULT_OK);
    aw_bridge_free(plain);

    /* NULL handles and out-pointers. */
    EXPECT(aw_registry_parked(NULL, &size), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_registry_busy(NULL, &size), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_registry_get_stats(NULL, &stats), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_registry_fresh(NULL, 0, &u64), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_registry_handle_timeout(NULL, 0), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_registry_clear(NULL, 0), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_registry_poll_released(NULL, &s), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_registry_poll_timeout(NULL, &has, &u64), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_registry_parked(registry, NULL), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_registry_busy(registry, NULL), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_registry_get_stats(registry, NULL), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_registry_fresh(registry, 0, NULL), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_registry_poll_released(registry, NULL), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_registry_poll_timeout(registry, NULL, &u64), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_registry_poll_timeout(registry, &has, NULL), AW_RESULT_NULL_PARAMETER);
    CHECK(strcmp(aw_registry_last_error(NULL), "") == 0);
    aw_registry_free(NULL);
    aw_registry_free(other);
    aw_registry_free(registry);
}

static void test_mcp_config(void)
{
    aw_mcp_config *config = NULL;
    aw_str s;
    uint64_t u64;
    size_t size;

    EXPECT(aw_mcp_config_new(NULL), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_mcp_config_new(&config), AW_RESULT_OK);
    /* The defaults of the Rust mcp::Config::default(). */
    EXPECT(aw_mcp_config_get_server_name(config, &s), AW_RESULT_OK);
    CHECK(str_eq(s, "agentwire"));
    EXPECT(aw_mcp_config_get_server_version(config, &s), AW_RESULT_OK);
    CHECK(s.len > 0);
    EXPECT(aw_mcp_config_get_instructions(config, &s), AW_RESULT_NOT_AVAILABLE);
    EXPECT(aw_mcp_config_get_keep_alive_ms(config, &u64), AW_RESULT_OK);
    CHECK(u64 == 15000);
    EXPECT(aw_mcp_config_get_call_limit_ms(config, &u64), AW_RESULT_NOT_AVAILABLE);
    EXPECT(aw_mcp_config_get_max_pending_calls(config, &size), AW_RESULT_OK);
    CHECK(size == 32);
    EXPECT(aw_mcp_config_get_max_body_bytes(config, &size), AW_RESULT_OK);
    CHECK(size == (size_t)4 << 20);
    EXPECT(aw_mcp_config_get_max_exchanges(config, &size), AW_RESULT_OK);
    CHECK(size == 64);

    EXPECT(aw_mcp_config_set_server_name(config, "tools", 5), AW_RESULT_OK);
    EXPECT(aw_mcp_config_set_server_version(config, "2.0", 3), AW_RESULT_OK);
    EXPECT(aw_mcp_config_set_instructions(config, "Use them.", 9), AW_RESULT_OK);
    EXPECT(aw_mcp_config_set_keep_alive_ms(config, 11), AW_RESULT_OK);
    EXPECT(aw_mcp_config_set_call_limit_ms(config, 12), AW_RESULT_OK);
    EXPECT(aw_mcp_config_set_max_pending_calls(config, 13), AW_RESULT_OK);
    EXPECT(aw_mcp_config_set_max_body_bytes(config, 14), AW_RESULT_OK);
    EXPECT(aw_mcp_config_set_max_exchanges(config, 15), AW_RESULT_OK);
    EXPECT(aw_mcp_config_get_server_name(config, &s), AW_RESULT_OK);
    CHECK(str_eq(s, "tools"));
    EXPECT(aw_mcp_config_get_server_version(config, &s), AW_RESULT_OK);
    CHECK(str_eq(s, "2.0"));
    EXPECT(aw_mcp_config_get_instructions(config, &s), AW_RESULT_OK);
    CHECK(str_eq(s, "Use them."));
    EXPECT(aw_mcp_config_get_keep_alive_ms(config, &u64), AW_RESULT_OK);
    CHECK(u64 == 11);
    EXPECT(aw_mcp_config_get_call_limit_ms(config, &u64), AW_RESULT_OK);
    CHECK(u64 == 12);
    EXPECT(aw_mcp_config_get_max_pending_calls(config, &size), AW_RESULT_OK);
    CHECK(size == 13);
    EXPECT(aw_mcp_config_get_max_body_bytes(config, &size), AW_RESULT_OK);
    CHECK(size == 14);
    EXPECT(aw_mcp_config_get_max_exchanges(config, &size), AW_RESULT_OK);
    CHECK(size == 15);
    EXPECT(aw_mcp_config_clear_instructions(config), AW_RESULT_OK);
    EXPECT(aw_mcp_config_get_instructions(config, &s), AW_RESULT_NOT_AVAILABLE);
    EXPECT(aw_mcp_config_clear_call_limit_ms(config), AW_RESULT_OK);
    EXPECT(aw_mcp_config_get_call_limit_ms(config, &u64), AW_RESULT_NOT_AVAILABLE);

    /* Bad input changes nothing. */
    EXPECT(aw_mcp_config_set_server_name(config, "\xc3", 1), AW_RESULT_INVALID_UTF8);
    EXPECT(aw_mcp_config_set_instructions(config, NULL, 2), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_mcp_config_set_server_version(config, "x", SIZE_MAX), AW_RESULT_LENGTH_TOO_LARGE);
    EXPECT(aw_mcp_config_get_server_name(config, &s), AW_RESULT_OK);
    CHECK(str_eq(s, "tools"));
    EXPECT(aw_mcp_config_get_max_exchanges(config, NULL), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_mcp_config_set_keep_alive_ms(NULL, 1), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_mcp_config_clear_instructions(NULL), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_mcp_config_clear_call_limit_ms(NULL), AW_RESULT_NULL_PARAMETER);
    CHECK(strcmp(aw_mcp_config_last_error(NULL), "") == 0);
    aw_mcp_config_free(config);
    aw_mcp_config_free(NULL);
}

static const char TOOLS_BODY[] =
    "{\"model\":\"auto\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"bash\",\"parameters\":{\"type\":"
    "\"object\",\"properties\":{\"command\":{\"type\":\"string\"}}}}}]}";

/* A standalone MCP server: every misuse, and the calls' lifecycle errors. */
static void test_mcp_server(void)
{
    static const char SESSION[] = "0123456789abcdef";
    static const char INIT[] =
        "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
        "\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"x\",\"version\":\"1\"}}}\n";
    static const char CALL[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
                               "\"params\":{\"name\":\"bash\",\"arguments\":{}}}\n";
    aw_mcp_server *server = NULL;
    aw_mcp_event event;
    aw_mcp_output output;
    aw_bytes bytes;
    aw_str s;
    size_t size;
    uint64_t exchange = 77, u64;
    bool has;

    /* Creation: what C hands over, the session id, the request. */
    EXPECT(aw_mcp_server_new(AW_DIALECT_CHAT_COMPLETIONS, (const uint8_t *)TOOLS_BODY,
                             strlen(TOOLS_BODY), NULL, NULL, SESSION, strlen(SESSION), NULL),
           AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_mcp_server_new(3, (const uint8_t *)TOOLS_BODY, strlen(TOOLS_BODY), NULL, NULL,
                             SESSION, strlen(SESSION), &server),
           AW_RESULT_INVALID_ENUM);
    EXPECT(aw_mcp_server_new(AW_DIALECT_CHAT_COMPLETIONS, (const uint8_t *)TOOLS_BODY,
                             strlen(TOOLS_BODY), NULL, NULL, "", 0, &server),
           AW_RESULT_INVALID_SESSION_ID);
    EXPECT(aw_mcp_server_new(AW_DIALECT_CHAT_COMPLETIONS, (const uint8_t *)TOOLS_BODY,
                             strlen(TOOLS_BODY), NULL, NULL, "a b", 3, &server),
           AW_RESULT_INVALID_SESSION_ID);
    EXPECT(aw_mcp_server_new(AW_DIALECT_CHAT_COMPLETIONS, (const uint8_t *)TOOLS_BODY,
                             strlen(TOOLS_BODY), NULL, NULL, "\xff", 1, &server),
           AW_RESULT_INVALID_UTF8);
    EXPECT(aw_mcp_server_new(AW_DIALECT_MESSAGES, (const uint8_t *)TOOLS_BODY, strlen(TOOLS_BODY),
                             NULL, NULL, SESSION, strlen(SESSION), &server),
           AW_RESULT_INVALID_REQUEST);
    EXPECT(aw_mcp_server_new(AW_DIALECT_CHAT_COMPLETIONS, NULL, 4, NULL, NULL, SESSION,
                             strlen(SESSION), &server),
           AW_RESULT_NULL_PARAMETER);
    CHECK(server == NULL);
    EXPECT(aw_mcp_server_new(AW_DIALECT_CHAT_COMPLETIONS, (const uint8_t *)TOOLS_BODY,
                             strlen(TOOLS_BODY), NULL, NULL, SESSION, strlen(SESSION), &server),
           AW_RESULT_OK);
    EXPECT(aw_mcp_server_session_id(server, &s), AW_RESULT_OK);
    CHECK(str_eq(s, SESSION));
    EXPECT(aw_mcp_server_tool_name(server, 1, &s), AW_RESULT_INDEX_OUT_OF_RANGE);
    EXPECT(aw_mcp_server_pending_calls(server, &size), AW_RESULT_OK);
    CHECK(size == 0);

    /* Exchanges and calls never handed out. */
    EXPECT(aw_mcp_server_poll_exchange(server, 0, &output), AW_RESULT_UNKNOWN_EXCHANGE);
    CHECK(strstr(aw_mcp_server_last_error(server), "never handed out") != NULL);
    EXPECT(aw_mcp_server_exchange_gone(server, 0, 0), AW_RESULT_UNKNOWN_EXCHANGE);
    EXPECT(aw_mcp_server_answer_call(server, 0, "x", 1, false, 0), AW_RESULT_UNKNOWN_CALL);
    EXPECT(aw_mcp_server_poll_ready(server, &u64), AW_RESULT_DRAINED);
    EXPECT(aw_mcp_server_poll_event(server, &event), AW_RESULT_DRAINED);
    EXPECT(aw_mcp_server_poll_transmit(server, &bytes), AW_RESULT_DRAINED);
    EXPECT(aw_mcp_server_poll_timeout(server, &has, &u64), AW_RESULT_OK);
    CHECK(!has);
    /* A request is an exchange, whatever it holds; a header not UTF-8 is not. */
    EXPECT(aw_mcp_server_handle_http(server, "GET", 3, NULL, 0, NULL, 0, NULL, 0, NULL, 0, NULL,
                                     0, 0, &exchange),
           AW_RESULT_OK);
    CHECK(exchange == 0);
    EXPECT(aw_mcp_server_poll_ready(server, &u64), AW_RESULT_OK);
    CHECK(u64 == 0);
    EXPECT(aw_mcp_server_poll_exchange(server, 0, &output), AW_RESULT_OK);
    CHECK(output.kind == AW_MCP_OUTPUT_KIND_HEAD && output.status == 405);
    CHECK(str_eq(output.allow, "POST, DELETE") && output.allow.data[output.allow.len] == '\0');
    CHECK(output.content_type.len == 0 && output.session_id.len == 0);
    EXPECT(aw_mcp_server_poll_exchange(server, 0, &output), AW_RESULT_OK);
    CHECK(output.kind == AW_MCP_OUTPUT_KIND_END);
    EXPECT(aw_mcp_server_poll_exchange(server, 0, &output), AW_RESULT_DRAINED);
    EXPECT(aw_mcp_server_exchange_gone(server, 0, 0), AW_RESULT_OK);
    EXPECT(aw_mcp_server_handle_http(server, "POST", 4, "\xff", 1, NULL, 0, NULL, 0, NULL, 0,
                                     NULL, 0, 0, &exchange),
           AW_RESULT_INVALID_UTF8);
    EXPECT(aw_mcp_server_handle_http(server, "POST", 4, NULL, 0, NULL, 0, NULL, 0, NULL, 0,
                                     NULL, 0, 0, NULL),
           AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_mcp_server_handle_http(server, "POST", 4, NULL, 0, NULL, 0, NULL, 0, NULL, 0,
                                     NULL, 9, 0, &exchange),
           AW_RESULT_NULL_PARAMETER);
    CHECK(exchange == 0);

    /* A call over stdio, answered once. */
    EXPECT(aw_mcp_server_push_stdio(server, (const uint8_t *)INIT, strlen(INIT), 0), AW_RESULT_OK);
    EXPECT(aw_mcp_server_poll_transmit(server, &bytes), AW_RESULT_OK);
    CHECK(contains(bytes.data, bytes.len, "\"result\""));
    EXPECT(aw_mcp_server_push_stdio(server, (const uint8_t *)CALL, strlen(CALL), 0), AW_RESULT_OK);
    EXPECT(aw_mcp_server_poll_event(server, &event), AW_RESULT_OK);
    CHECK(event.kind == AW_MCP_EVENT_KIND_CALL && str_eq(event.arguments, "{}"));
    EXPECT(aw_mcp_server_answer_call(server, event.call, "\xff", 1, false, 0),
           AW_RESULT_INVALID_UTF8);
    EXPECT(aw_mcp_server_answer_call(server, event.call, NULL, 0, false, 0), AW_RESULT_OK);
    EXPECT(aw_mcp_server_answer_call(server, event.call, NULL, 0, false, 0),
           AW_RESULT_CALL_NOT_PENDING);
    CHECK(strstr(aw_mcp_server_last_error(server), "not pending") != NULL);
    EXPECT(aw_mcp_server_push_stdio(server, NULL, 1, 0), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_mcp_server_poll_event(server, NULL), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_mcp_server_poll_exchange(server, 0, NULL), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_mcp_server_close(server, 1), AW_RESULT_OK);
    CHECK(aw_mcp_server_is_closed(server) && !aw_mcp_server_is_initialized(server));
    aw_mcp_server_free(server);

    /* NULL handles. */
    EXPECT(aw_mcp_server_session_id(NULL, &s), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_mcp_server_protocol_version(NULL, &s), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_mcp_server_pending_calls(NULL, &size), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_mcp_server_tool_count(NULL, &size), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_mcp_server_tool_name(NULL, 0, &s), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_mcp_server_handle_http(NULL, "GET", 3, NULL, 0, NULL, 0, NULL, 0, NULL, 0, NULL, 0,
                                     0, &exchange),
           AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_mcp_server_push_stdio(NULL, NULL, 0, 0), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_mcp_server_answer_call(NULL, 0, NULL, 0, false, 0), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_mcp_server_exchange_gone(NULL, 0, 0), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_mcp_server_handle_timeout(NULL, 0), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_mcp_server_close(NULL, 0), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_mcp_server_poll_transmit(NULL, &bytes), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_mcp_server_poll_event(NULL, &event), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_mcp_server_poll_ready(NULL, &u64), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_mcp_server_poll_exchange(NULL, 0, &output), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_mcp_server_poll_timeout(NULL, &has, &u64), AW_RESULT_NULL_PARAMETER);
    CHECK(!aw_mcp_server_is_initialized(NULL) && aw_mcp_server_is_closed(NULL));
    CHECK(strcmp(aw_mcp_server_last_error(NULL), "") == 0);
    aw_mcp_server_free(NULL);

    /* Secrets compare equal only when equal. */
    CHECK(aw_mcp_secret_matches((const uint8_t *)"s3cret", 6, (const uint8_t *)"s3cret", 6));
    CHECK(!aw_mcp_secret_matches((const uint8_t *)"s3cret", 6, (const uint8_t *)"s3creT", 6));
    CHECK(!aw_mcp_secret_matches((const uint8_t *)"s3cret", 6, (const uint8_t *)"s3cre", 5));
    CHECK(aw_mcp_secret_matches(NULL, 0, NULL, 0));
    CHECK(!aw_mcp_secret_matches(NULL, 6, (const uint8_t *)"s3cret", 6));
    CHECK(!aw_mcp_secret_matches((const uint8_t *)"s3cret", SIZE_MAX, (const uint8_t *)"s", 1));
}

/* The ACP connection's conversation functions: every misuse; an MCP endpoint that admits
   only its session's secret. */
static void test_acp_conversations(void)
{
    static const char ENDPOINT[] = "http://127.0.0.1:1/mcp/";
    static const char INITIALIZED[] =
        "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":1,\"agentCapabilities\":{"
        "\"mcpCapabilities\":{\"http\":true}},\"agentInfo\":{\"name\":\"gemini-cli\","
        "\"version\":\"1\"}}}";
    aw_acp_config *config = NULL, *defaults = NULL;
    aw_mcp_config *mcp = NULL;
    aw_registry_config *conversations = NULL;
    aw_acp_connection *conn = NULL;
    aw_mcp_exchange exchange = {5, 6}, ready;
    aw_mcp_output output;
    aw_registry_stats stats;
    aw_bytes bytes;
    aw_str s;
    uint8_t entropy[32];
    uint64_t turn = 77, u64;
    size_t size;
    const char *url, *bearer;
    char token[64], auth[128];

    memset(entropy, 9, sizeof entropy);
    /* The settings: the endpoint, the server's name, the nested MCP and registry ones. */
    EXPECT(aw_acp_config_new(&defaults), AW_RESULT_OK);
    EXPECT(aw_acp_config_get_mcp_endpoint(defaults, &s), AW_RESULT_NOT_AVAILABLE);
    EXPECT(aw_acp_config_get_mcp_server_name(defaults, &s), AW_RESULT_OK);
    CHECK(str_eq(s, "client"));
    EXPECT(aw_acp_config_get_conversations(defaults, &conversations), AW_RESULT_OK);
    EXPECT(aw_registry_config_get_max_parked(conversations, &size), AW_RESULT_OK);
    CHECK(size == 16);
    EXPECT(aw_registry_config_get_max_parked_per_owner(conversations, &size), AW_RESULT_OK);
    CHECK(size == 8);
    EXPECT(aw_registry_config_set_enabled(conversations, false), AW_RESULT_OK);
    EXPECT(aw_acp_config_get_mcp(defaults, &mcp), AW_RESULT_OK);
    EXPECT(aw_mcp_config_get_keep_alive_ms(mcp, &u64), AW_RESULT_OK);
    CHECK(u64 == 15000);
    EXPECT(aw_mcp_config_set_keep_alive_ms(mcp, 3000), AW_RESULT_OK);
    EXPECT(aw_acp_config_new(&config), AW_RESULT_OK);
    /* NULL nested configs are the defaults. */
    EXPECT(aw_acp_config_set_conversations(config, NULL), AW_RESULT_OK);
    EXPECT(aw_acp_config_set_mcp(config, NULL), AW_RESULT_OK);
    EXPECT(aw_acp_config_set_mcp_endpoint(config, ENDPOINT, strlen(ENDPOINT)), AW_RESULT_OK);
    EXPECT(aw_acp_config_get_mcp_endpoint(config, &s), AW_RESULT_OK);
    CHECK(str_eq(s, ENDPOINT));
    EXPECT(aw_acp_config_set_mcp_server_name(config, "tools", 5), AW_RESULT_OK);
    EXPECT(aw_acp_config_get_mcp_server_name(config, &s), AW_RESULT_OK);
    CHECK(str_eq(s, "tools"));
    EXPECT(aw_acp_config_set_mcp(config, mcp), AW_RESULT_OK);
    EXPECT(aw_acp_config_set_conversations(config, conversations), AW_RESULT_OK);
    aw_mcp_config_free(mcp);
    aw_registry_config_free(conversations);
    mcp = NULL;
    conversations = NULL;
    EXPECT(aw_acp_config_get_mcp(config, &mcp), AW_RESULT_OK);
    EXPECT(aw_mcp_config_get_keep_alive_ms(mcp, &u64), AW_RESULT_OK);
    CHECK(u64 == 3000);
    aw_mcp_config_free(mcp);
    EXPECT(aw_acp_config_get_conversations(config, &conversations), AW_RESULT_OK);
    {
        bool enabled = true;
        EXPECT(aw_registry_config_get_enabled(conversations, &enabled), AW_RESULT_OK);
        CHECK(!enabled);
    }
    aw_registry_config_free(conversations);
    /* Bad values change nothing. */
    EXPECT(aw_acp_config_set_mcp_endpoint(config, "\xff", 1), AW_RESULT_INVALID_UTF8);
    EXPECT(aw_acp_config_set_mcp_server_name(config, NULL, 1), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_acp_config_get_mcp(config, NULL), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_acp_config_get_conversations(config, NULL), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_acp_config_clear_mcp_endpoint(defaults), AW_RESULT_OK);
    EXPECT(aw_acp_config_set_mcp_endpoint(NULL, "x", 1), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_acp_config_clear_mcp_endpoint(NULL), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_acp_config_set_mcp(NULL, NULL), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_acp_config_set_conversations(NULL, NULL), AW_RESULT_NULL_PARAMETER);
    aw_acp_config_free(defaults);
    EXPECT(aw_acp_config_set_pool_size(config, 0), AW_RESULT_OK);
    EXPECT(aw_acp_connection_new(config, 0, &conn), AW_RESULT_OK);
    aw_acp_config_free(config);

    /* Nothing to route to yet. */
    EXPECT(aw_acp_connection_handle_mcp(conn, "abc", 3, NULL, 0, "POST", 4, NULL, 0, NULL, 0, NULL,
                                        0, NULL, 0, NULL, 0, 0, &exchange),
           AW_RESULT_MCP_NOT_FOUND);
    CHECK(exchange.server == 5 && exchange.exchange == 6);
    CHECK(strstr(aw_acp_connection_last_error(conn), "404") != NULL);
    EXPECT(aw_acp_connection_poll_mcp_ready(conn, &ready), AW_RESULT_DRAINED);
    EXPECT(aw_acp_connection_poll_mcp_output(conn, exchange, &output), AW_RESULT_DRAINED);
    EXPECT(aw_acp_connection_mcp_exchange_gone(conn, exchange, 0), AW_RESULT_OK);
    EXPECT(aw_acp_connection_parked_sessions(conn, &size), AW_RESULT_OK);
    CHECK(size == 0);

    /* A conversation turn: what C hands over is checked first. */
    EXPECT(aw_acp_connection_start_conversation_turn(
               conn, AW_DIALECT_CHAT_COMPLETIONS, (const uint8_t *)TOOLS_BODY, strlen(TOOLS_BODY),
               NULL, 1, 1700000000u, 1, NULL, 0, NULL, 0, NULL, 0, NULL, 0, NULL, &turn),
           AW_RESULT_NULL_PARAMETER);
    CHECK(strstr(aw_acp_connection_last_error(conn), "entropy") != NULL);
    EXPECT(aw_acp_connection_start_conversation_turn(
               conn, 7, (const uint8_t *)TOOLS_BODY, strlen(TOOLS_BODY), NULL, 1, 1700000000u, 1,
               NULL, 0, NULL, 0, NULL, 0, NULL, 0, entropy, &turn),
           AW_RESULT_INVALID_ENUM);
    EXPECT(aw_acp_connection_start_conversation_turn(
               conn, AW_DIALECT_CHAT_COMPLETIONS, (const uint8_t *)TOOLS_BODY, strlen(TOOLS_BODY),
               NULL, 1, 1700000000u, 1, NULL, 0, NULL, 0, NULL, 0, "\xfe", 1, entropy, &turn),
           AW_RESULT_INVALID_UTF8);
    EXPECT(aw_acp_connection_start_conversation_turn(
               conn, AW_DIALECT_CHAT_COMPLETIONS, (const uint8_t *)TOOLS_BODY, strlen(TOOLS_BODY),
               NULL, 1, 1700000000u, 1, NULL, 0, NULL, 0, NULL, 0, NULL, 0, entropy, NULL),
           AW_RESULT_NULL_PARAMETER);
    CHECK(turn == 77);
    EXPECT(aw_acp_connection_client_gone(conn, 0, 1), AW_RESULT_UNKNOWN_TURN);
    acp_expect_transmit(conn, "\"method\":\"initialize\"");
    acp_push(conn, INITIALIZED, 2);
    EXPECT(aw_acp_connection_start_conversation_turn(
               conn, AW_DIALECT_CHAT_COMPLETIONS, (const uint8_t *)TOOLS_BODY, strlen(TOOLS_BODY),
               NULL, 3, 1700000000u, 1, (const uint8_t *)"k", 1, "s", 1, NULL, 0, NULL, 0, entropy,
               &turn),
           AW_RESULT_OK);
    CHECK(turn == 0);
    /* Its session carries the MCP server: the endpoint, a path and a bearer secret. */
    EXPECT(aw_acp_connection_poll_transmit(conn, &bytes), AW_RESULT_OK);
    {
        char line[4096];
        size_t n = bytes.len < sizeof line - 1 ? bytes.len : sizeof line - 1;
        memcpy(line, bytes.data, n);
        line[n] = '\0';
        CHECK(strstr(line, "\"method\":\"session/new\"") != NULL);
        url = strstr(line, ENDPOINT);
        bearer = strstr(line, "Bearer ");
        CHECK(url != NULL && bearer != NULL);
        if (url == NULL || bearer == NULL) {
            aw_acp_connection_free(conn);
            return;
        }
        sscanf(url + strlen(ENDPOINT), "%63[0-9a-f]", token);
        sscanf(bearer, "%127[^\"]", auth);
    }
    EXPECT(aw_acp_connection_handle_mcp(conn, token, strlen(token), (const uint8_t *)"Bearer 0", 8,
                                        "POST", 4, NULL, 0, NULL, 0, NULL, 0, NULL, 0, NULL, 0, 4,
                                        &exchange),
           AW_RESULT_MCP_UNAUTHORIZED);
    EXPECT(aw_acp_connection_handle_mcp(conn, token, strlen(token), NULL, 0, "POST", 4, NULL, 0,
                                        NULL, 0, NULL, 0, NULL, 0, NULL, 0, 4, &exchange),
           AW_RESULT_MCP_UNAUTHORIZED);
    CHECK(exchange.server == 5 && exchange.exchange == 6);
    EXPECT(aw_acp_connection_handle_mcp(conn, token, strlen(token), (const uint8_t *)auth,
                                        strlen(auth), "POST", 4, "\xff", 1, NULL, 0, NULL, 0,
                                        NULL, 0, NULL, 0, 4, &exchange),
           AW_RESULT_INVALID_UTF8);
    EXPECT(aw_acp_connection_handle_mcp(conn, token, strlen(token), (const uint8_t *)auth,
                                        strlen(auth), "POST", 4, NULL, 0, NULL, 0, NULL, 0, NULL,
                                        0, NULL, 0, 4, NULL),
           AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_acp_connection_handle_mcp(conn, token, strlen(token), (const uint8_t *)auth,
                                        strlen(auth), "POST", 4, NULL, 0, NULL, 0, NULL, 0, NULL,
                                        0, NULL, 0, 4, &exchange),
           AW_RESULT_OK);
    /* A body that is no JSON-RPC: answered with an error, as a response. */
    EXPECT(aw_acp_connection_poll_mcp_ready(conn, &ready), AW_RESULT_OK);
    CHECK(ready.server == exchange.server && ready.exchange == exchange.exchange);
    EXPECT(aw_acp_connection_poll_mcp_output(conn, exchange, &output), AW_RESULT_OK);
    CHECK(output.kind == AW_MCP_OUTPUT_KIND_HEAD && output.status >= 400);
    EXPECT(aw_acp_connection_poll_mcp_output(conn, exchange, NULL), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_acp_connection_mcp_exchange_gone(conn, exchange, 5), AW_RESULT_OK);
    EXPECT(aw_acp_connection_conversation_stats(conn, &stats), AW_RESULT_OK);
    CHECK(stats.resumed == 0);
    EXPECT(aw_acp_connection_conversation_fresh(conn, AW_FRESH_REASON_DISABLED, &u64),
           AW_RESULT_OK);
    CHECK(u64 == 1);
    EXPECT(aw_acp_connection_conversation_fresh(conn, 99, &u64), AW_RESULT_INVALID_ENUM);
    EXPECT(aw_acp_connection_conversation_stats(conn, NULL), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_acp_connection_parked_sessions(conn, NULL), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_acp_connection_poll_mcp_ready(conn, NULL), AW_RESULT_NULL_PARAMETER);
    aw_acp_connection_free(conn);

    /* NULL handles. */
    EXPECT(aw_acp_connection_start_conversation_turn(
               NULL, AW_DIALECT_CHAT_COMPLETIONS, NULL, 0, NULL, 0, 0, 0, NULL, 0, NULL, 0, NULL,
               0, NULL, 0, entropy, &turn),
           AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_acp_connection_handle_mcp(NULL, "", 0, NULL, 0, "", 0, NULL, 0, NULL, 0, NULL, 0,
                                        NULL, 0, NULL, 0, 0, &exchange),
           AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_acp_connection_mcp_exchange_gone(NULL, exchange, 0), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_acp_connection_poll_mcp_ready(NULL, &ready), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_acp_connection_poll_mcp_output(NULL, exchange, &output), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_acp_connection_parked_sessions(NULL, &size), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_acp_connection_conversation_stats(NULL, &stats), AW_RESULT_NULL_PARAMETER);
    EXPECT(aw_acp_connection_conversation_fresh(NULL, 0, &u64), AW_RESULT_NULL_PARAMETER);
}

#ifdef AW_TEST_HOOKS
/* An ACP connection poisoned by a panic, and calls overlapping on ACP handles. */
static void test_acp_hooks(void)
{
    aw_acp_config *config = NULL;
    aw_acp_connection *conn = NULL;
    aw_bytes bytes;
    size_t size;
    uint64_t turn;

    EXPECT(aw_acp_config_new(&config), AW_RESULT_OK);
    EXPECT(aw_acp_config_set_pool_size(config, 3), AW_RESULT_OK);
    EXPECT(aw_acp_config_test_overlap(config), AW_RESULT_BUSY);
    EXPECT(aw_acp_config_get_pool_size(config, &size), AW_RESULT_OK);
    CHECK(size == 3);
    EXPECT(aw_acp_connection_new(config, 0, &conn), AW_RESULT_OK);
    EXPECT(aw_acp_connection_test_overlap(conn), AW_RESULT_BUSY);
    EXPECT(aw_acp_connection_poll_transmit(conn, &bytes), AW_RESULT_OK);
    EXPECT(aw_acp_connection_test_panic(conn), AW_RESULT_PANIC);
    CHECK(strstr(aw_acp_connection_last_error(conn), "panicked") != NULL);
    EXPECT(aw_acp_connection_poll_transmit(conn, &bytes), AW_RESULT_POISONED);
    EXPECT(aw_acp_connection_start_turn(conn, AW_DIALECT_CHAT_COMPLETIONS,
                                        (const uint8_t *)STREAM_BODY, strlen(STREAM_BODY), NULL,
                                        0, 0, 0, &turn),
           AW_RESULT_POISONED);
    CHECK(aw_acp_connection_is_dead(conn) && !aw_acp_connection_is_ready(conn));
    aw_acp_connection_free(conn);
    conn = NULL;
    aw_acp_config_free(config);
}
#endif

#ifdef AW_TEST_HOOKS
/* The conversation handles: a panic poisons a registry and an MCP server (a poisoned
   registry makes no bridge and takes no place back), and overlapping calls are BUSY. */
static void test_conversation_hooks(void)
{
    aw_registry_config *rc = NULL;
    aw_registry *registry = NULL;
    aw_mcp_config *mc = NULL;
    aw_mcp_server *server = NULL;
    aw_bridge *bridge = NULL;
    aw_acp_config *acp = NULL;
    size_t size;
    uint64_t u64;

    EXPECT(aw_registry_config_new(&rc), AW_RESULT_OK);
    EXPECT(aw_registry_config_test_overlap(rc), AW_RESULT_BUSY);
    EXPECT(aw_registry_config_get_max_parked(rc, &size), AW_RESULT_OK);
    EXPECT(aw_registry_new(rc, &registry), AW_RESULT_OK);
    aw_registry_config_free(rc);
    EXPECT(aw_registry_test_overlap(registry), AW_RESULT_BUSY);
    EXPECT(aw_bridge_new_in_conversation(AW_DIALECT_CHAT_COMPLETIONS, (const uint8_t *)STREAM_BODY,
                                         strlen(STREAM_BODY), NULL, 0, 0, 1, registry, NULL, 0,
                                         NULL, 0, NULL, 0, NULL, 0, &bridge),
           AW_RESULT_OK);
    EXPECT(aw_registry_test_panic(registry), AW_RESULT_PANIC);
    CHECK(strstr(aw_registry_last_error(registry), "panicked") != NULL);
    EXPECT(aw_registry_parked(registry, &size), AW_RESULT_POISONED);
    EXPECT(aw_bridge_end_conversation_turn(bridge, registry, 1), AW_RESULT_POISONED);
    CHECK(strstr(aw_bridge_last_error(bridge), "registry") != NULL);
    aw_bridge_free(bridge);
    bridge = NULL;
    EXPECT(aw_bridge_new_in_conversation(AW_DIALECT_CHAT_COMPLETIONS, (const uint8_t *)STREAM_BODY,
                                         strlen(STREAM_BODY), NULL, 0, 0, 1, registry, NULL, 0,
                                         NULL, 0, NULL, 0, NULL, 0, &bridge),
           AW_RESULT_POISONED);
    CHECK(bridge == NULL);
    aw_registry_free(registry);

    EXPECT(aw_mcp_config_new(&mc), AW_RESULT_OK);
    EXPECT(aw_mcp_config_test_overlap(mc), AW_RESULT_BUSY);
    EXPECT(aw_mcp_config_get_max_exchanges(mc, &size), AW_RESULT_OK);
    EXPECT(aw_acp_config_new(&acp), AW_RESULT_OK);
    EXPECT(aw_acp_config_set_mcp(acp, mc), AW_RESULT_OK);
    aw_acp_config_free(acp);
    EXPECT(aw_mcp_server_new(AW_DIALECT_CHAT_COMPLETIONS, (const uint8_t *)TOOLS_BODY,
                             strlen(TOOLS_BODY), NULL, mc, "s", 1, &server),
           AW_RESULT_OK);
    aw_mcp_config_free(mc);
    EXPECT(aw_mcp_server_test_overlap(server), AW_RESULT_BUSY);
    EXPECT(aw_mcp_server_pending_calls(server, &size), AW_RESULT_OK);
    EXPECT(aw_mcp_server_test_panic(server), AW_RESULT_PANIC);
    EXPECT(aw_mcp_server_poll_ready(server, &u64), AW_RESULT_POISONED);
    EXPECT(aw_mcp_server_answer_call(server, 0, NULL, 0, false, 0), AW_RESULT_POISONED);
    CHECK(aw_mcp_server_is_closed(server) && !aw_mcp_server_is_initialized(server));
    aw_mcp_server_free(server);
}
#endif

#ifdef AW_TEST_HOOKS
static void test_poisoned(void)
{
    aw_config *config = NULL;
    aw_bridge *bridge = new_bridge(STREAM_BODY);
    aw_decoder *decoder = NULL;
    aw_reply *reply = NULL;
    aw_bytes bytes;
    uint16_t status;
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

    EXPECT(aw_reply_new_error(AW_DIALECT_RESPONSES, AW_ERROR_KIND_NOT_FOUND, "x", 1, &reply),
           AW_RESULT_OK);
    EXPECT(aw_reply_test_panic(reply), AW_RESULT_PANIC);
    CHECK(strstr(aw_reply_last_error(reply), "panicked") != NULL);
    EXPECT(aw_reply_status(reply, &status), AW_RESULT_POISONED);
    EXPECT(aw_reply_body(reply, &bytes), AW_RESULT_POISONED);
    aw_reply_free(reply);
    reply = NULL;

    EXPECT(aw_config_new(&config), AW_RESULT_OK);
    EXPECT(aw_config_test_panic(config), AW_RESULT_PANIC);
    EXPECT(aw_config_get_keep_alive_ms(config, &u64), AW_RESULT_POISONED);
    EXPECT(aw_config_set_keep_alive_ms(config, 1), AW_RESULT_POISONED);
    bridge = NULL;
    EXPECT(aw_bridge_new(AW_DIALECT_CHAT_COMPLETIONS, (const uint8_t *)STREAM_BODY,
                         strlen(STREAM_BODY), config, 0, 0, 0, &bridge),
           AW_RESULT_POISONED);
    CHECK(bridge == NULL);
    EXPECT(aw_decoder_new(config, &decoder), AW_RESULT_POISONED);
    EXPECT(aw_reply_new_count_tokens((const uint8_t *)MESSAGES_BODY, strlen(MESSAGES_BODY), config,
                                     &reply),
           AW_RESULT_POISONED);
    CHECK(reply == NULL);
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
    aw_reply *reply = NULL;
    uint16_t status;
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

    EXPECT(aw_reply_new_count_tokens((const uint8_t *)MESSAGES_BODY, strlen(MESSAGES_BODY), config,
                                     &reply),
           AW_RESULT_OK);
    EXPECT(aw_reply_test_overlap(reply), AW_RESULT_BUSY);
    EXPECT(aw_reply_status(reply, &status), AW_RESULT_OK);
    CHECK(status == 404);
    aw_reply_free(reply);
    aw_config_free(config);
}
#endif

int main(void)
{
    uint32_t v;
    test_version();
    test_result_names();
    test_enum_names();
    test_config();
    test_bridge();
    test_client_gone();
    test_shutdown();
    test_rejected();
    test_dialects();
    test_replies();
    test_decoder();
    test_acp_config();
    test_acp_launch();
    test_acp_connection();
    test_registry_config();
    test_registry();
    test_mcp_config();
    test_mcp_server();
    test_acp_conversations();
#ifdef AW_TEST_HOOKS
    test_acp_hooks();
    test_conversation_hooks();
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
