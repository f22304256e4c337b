/*
 * Conversations through the C ABI, whole: the stream-json path (a chat parked after a tool
 * round, resumed with `--resume` and only the results, a chat the agent does not know
 * replaced by a fresh run through AW_OUTPUT_KIND_RESPAWN, a follow-up turn, a client that
 * leaves), a warm ACP agent scripted here (the client's tools given to it as an MCP
 * server, a tool round that parks the session inside its call, the results answering the
 * call through MCP, a follow-up prompt holding only the new message, expiry), and a
 * standalone MCP server over HTTP and stdio with hostile input. Includes only the public
 * header.
 */
#include "agentwire.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define EXPECT(call, expected)                                                                 \
    do {                                                                                       \
        aw_result got_ = (call);                                                               \
        if (got_ != (expected)) {                                                              \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s\n", __FILE__, __LINE__, #call, \
                    aw_result_name(got_), aw_result_name(expected));                           \
            failures++;                                                                        \
        }                                                                                      \
    } while (0)

/* A growable NUL-terminated byte buffer. */
struct buf {
    char *data;
    size_t len, cap;
};

static void buf_add(struct buf *b, const void *data, size_t len)
{
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        char *grown;
        while (cap < b->len + len + 1) {
            cap *= 2;
        }
        grown = (char *)realloc(b->data, cap);
        if (!grown) {
            perror("realloc");
            exit(1);
        }
        b->data = grown;
        b->cap = cap;
    }
    if (len) {
        memcpy(b->data + b->len, data, len);
    }
    b->len += len;
    b->data[b->len] = '\0';
}

static void buf_str(struct buf *b, const char *s)
{
    buf_add(b, s, strlen(s));
}

static void buf_clear(struct buf *b)
{
    buf_add(b, "", 0);
    b->len = 0;
    b->data[0] = '\0';
}

static void buf_free(struct buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

static const char *text_of(const struct buf *b)
{
    return b->data ? b->data : "";
}

static int str_eq(aw_str s, const char *c)
{
    return s.len == strlen(c) && memcmp(s.data, c, s.len) == 0;
}

/* Whether the `len` bytes at `data` hold `needle`. */
static int holds(const void *data, size_t len, const char *needle)
{
    size_t n = strlen(needle), i;
    const char *bytes = (const char *)data;
    for (i = 0; i + n <= len; i++) {
        if (memcmp(bytes + i, needle, n) == 0) {
            return 1;
        }
    }
    return 0;
}

/* The JSON string after the first `"key":"` at or after `text`, into `out` (escapes are
 * not decoded: the ids read here have none). Returns 1 when found. */
static int json_string(const char *text, const char *key, char *out, size_t cap)
{
    char pattern[64];
    const char *at;
    size_t n = 0;
    sprintf(pattern, "\"%s\":\"", key);
    at = strstr(text, pattern);
    if (!at) {
        return 0;
    }
    at += strlen(pattern);
    while (at[n] != '\0' && at[n] != '"' && n + 1 < cap) {
        out[n] = at[n];
        n++;
    }
    out[n] = '\0';
    return at[n] == '"';
}

/* The JSON object after the first `"key":` in `text`, whole, into `out`. */
static int json_object(const char *text, const char *key, struct buf *out)
{
    char pattern[64];
    const char *at, *p;
    int depth = 0, in_string = 0;
    sprintf(pattern, "\"%s\":", key);
    at = strstr(text, pattern);
    if (!at) {
        return 0;
    }
    at += strlen(pattern);
    while (*at == ' ') {
        at++;
    }
    if (*at != '{') {
        return 0;
    }
    for (p = at; *p; p++) {
        if (in_string) {
            if (*p == '\\') {
                p++;
            } else if (*p == '"') {
                in_string = 0;
            }
        } else if (*p == '"') {
            in_string = 1;
        } else if (*p == '{') {
            depth++;
        } else if (*p == '}' && --depth == 0) {
            buf_clear(out);
            buf_add(out, at, (size_t)(p - at + 1));
            return 1;
        }
    }
    return 0;
}

/* The number after the first `"key":` in `text`, or -1. */
static long json_number(const char *text, const char *key)
{
    char pattern[64];
    const char *at;
    sprintf(pattern, "\"%s\":", key);
    at = strstr(text, pattern);
    return at ? strtol(at + strlen(pattern), NULL, 10) : -1;
}

static const char TOOLS[] =
    "[{\"type\":\"function\",\"function\":{\"name\":\"bash\",\"description\":\"Run a shell "
    "command.\",\"parameters\":{\"type\":\"object\",\"properties\":{\"command\":{\"type\":"
    "\"string\"}},\"required\":[\"command\"]}}}]";

/* A conversation: its messages, each a JSON object. */
struct conversation {
    struct buf messages[16];
    size_t count;
};

static void say(struct conversation *c, const char *message)
{
    buf_str(&c->messages[c->count++], message);
}

static void conversation_free(struct conversation *c)
{
    size_t i;
    for (i = 0; i < c->count; i++) {
        buf_free(&c->messages[i]);
    }
    c->count = 0;
}

/* A Chat Completions body holding the conversation and the tools. */
static void chat_body(const struct conversation *c, int stream, struct buf *body)
{
    size_t i;
    buf_clear(body);
    buf_str(body, stream ? "{\"model\":\"auto\",\"stream\":true,\"messages\":["
                         : "{\"model\":\"auto\",\"messages\":[");
    for (i = 0; i < c->count; i++) {
        if (i > 0) {
            buf_str(body, ",");
        }
        buf_str(body, text_of(&c->messages[i]));
    }
    buf_str(body, "],\"tools\":");
    buf_str(body, TOOLS);
    buf_str(body, "}");
}

/* ---- The stream-json path ---------------------------------------------------------- */

static const char CHAT[] = "9f1c2d3e-aaaa-4bbb-8ccc-0123456789ab";
static const char LOST[] = "11111111-2222-3333-4444-555555555555";
static const char FRESH[] = "22222222-2222-3333-4444-555555555555";

/* What the adapter saw of one response. */
struct seen {
    uint16_t status;
    struct buf body;
    int stops, respawns, ended;
};

static void drain(aw_bridge *bridge, struct seen *seen)
{
    aw_output out;
    aw_result r;
    while ((r = aw_bridge_poll_output(bridge, &out)) == AW_RESULT_OK) {
        switch (out.kind) {
        case AW_OUTPUT_KIND_HEAD:
            seen->status = out.status;
            break;
        case AW_OUTPUT_KIND_BODY:
            buf_add(&seen->body, out.body.data, out.body.len);
            break;
        case AW_OUTPUT_KIND_STOP_AGENT:
            seen->stops++;
            break;
        case AW_OUTPUT_KIND_RESPAWN:
            seen->respawns++;
            break;
        case AW_OUTPUT_KIND_END:
            seen->ended++;
            break;
        }
    }
    EXPECT(r, AW_RESULT_DRAINED);
}

/* One agent run: its stdout lines, then its exit (a signal when the bridge stopped it). */
static void run(aw_bridge *bridge, struct seen *seen, const char *const *lines, size_t count,
                uint64_t now)
{
    int stops_before = seen->stops;
    size_t i;
    for (i = 0; i < count; i++) {
        if (aw_bridge_is_ended(bridge) || seen->stops > stops_before) {
            break;
        }
        EXPECT(aw_bridge_push_stdout(bridge, (const uint8_t *)lines[i], strlen(lines[i]), now),
               AW_RESULT_OK);
        EXPECT(aw_bridge_push_stdout(bridge, (const uint8_t *)"\n", 1, now), AW_RESULT_OK);
        drain(bridge, seen);
    }
    if (seen->stops > stops_before) {
        EXPECT(aw_bridge_agent_exited_signal(bridge, 15, now), AW_RESULT_OK);
    } else {
        EXPECT(aw_bridge_agent_exited_code(bridge, 0, now), AW_RESULT_OK);
    }
    drain(bridge, seen);
}

static char lines[8][1024];

static const char *init_line(int at, const char *chat)
{
    sprintf(lines[at], "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"%s\",\"model\":\"Auto\"}",
            chat);
    return lines[at];
}

static const char *text_line(int at, const char *chat, const char *text)
{
    sprintf(lines[at],
            "{\"type\":\"assistant\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":"
            "\"text\",\"text\":\"%s\"}]},\"session_id\":\"%s\"}",
            text, chat);
    return lines[at];
}

static const char *shell_line(int at, const char *chat, const char *id, const char *command)
{
    sprintf(lines[at],
            "{\"type\":\"tool_call\",\"subtype\":\"started\",\"call_id\":\"%s\",\"tool_call\":{"
            "\"shellToolCall\":{\"args\":{\"command\":\"%s\"}}},\"model_call_id\":\"m-%s\","
            "\"session_id\":\"%s\"}",
            id, command, id, chat);
    return lines[at];
}

static const char *result_line(int at, const char *chat, const char *text)
{
    sprintf(lines[at],
            "{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"%s\","
            "\"session_id\":\"%s\",\"usage\":{\"inputTokens\":3,\"outputTokens\":2}}",
            text, chat);
    return lines[at];
}

static aw_bridge *in_conversation(const struct conversation *c, aw_registry *registry,
                                  uint64_t seed, uint64_t now)
{
    struct buf body = {NULL, 0, 0};
    aw_bridge *bridge = NULL;
    chat_body(c, 0, &body);
    EXPECT(aw_bridge_new_in_conversation(AW_DIALECT_CHAT_COMPLETIONS, (const uint8_t *)body.data,
                                         body.len, NULL, now, 1800000000u, seed, registry, NULL,
                                         0, NULL, 0, NULL, 0, NULL, 0, &bridge),
           AW_RESULT_OK);
    buf_free(&body);
    CHECK(bridge != NULL);
    return bridge;
}

/* The chat the invocation resumes (`--resume CHAT`), into `chat`; 0 when it runs fresh. */
static int resumes(aw_bridge *bridge, char *chat, size_t cap)
{
    size_t count, i;
    aw_str arg;
    EXPECT(aw_bridge_invocation_arg_count(bridge, &count), AW_RESULT_OK);
    for (i = 0; i + 1 < count; i++) {
        EXPECT(aw_bridge_invocation_arg(bridge, i, &arg), AW_RESULT_OK);
        if (str_eq(arg, "--resume")) {
            EXPECT(aw_bridge_invocation_arg(bridge, i + 1, &arg), AW_RESULT_OK);
            CHECK(arg.len < cap && arg.data[arg.len] == '\0');
            memcpy(chat, arg.data, arg.len + 1);
            return 1;
        }
    }
    return 0;
}

static int prompt_holds(aw_bridge *bridge, const char *needle)
{
    aw_bytes prompt;
    EXPECT(aw_bridge_invocation_stdin(bridge, &prompt), AW_RESULT_OK);
    return holds(prompt.data, prompt.len, needle);
}

/* Adds the assistant message of a non-streaming Chat Completions body, as a client echoes
 * it, and returns its first tool call id in `call_id` (empty when none). */
static void echo(struct conversation *c, const struct seen *seen, char *call_id, size_t cap)
{
    struct buf message = {NULL, 0, 0};
    CHECK(json_object(text_of(&seen->body), "message", &message));
    say(c, text_of(&message));
    call_id[0] = '\0';
    if (strstr(text_of(&message), "\"tool_calls\"")) {
        CHECK(json_string(strstr(text_of(&message), "\"tool_calls\""), "id", call_id, cap));
    }
    buf_free(&message);
}

static void tool_result(struct conversation *c, const char *call_id, const char *content)
{
    char message[512];
    sprintf(message, "{\"role\":\"tool\",\"tool_call_id\":\"%s\",\"content\":\"%s\"}", call_id,
            content);
    say(c, message);
}

/* A chat parked after a tool round; the results resume it with `--resume`; a chat the
 * agent does not know is replaced by a fresh run (RESPAWN) before anything reaches the
 * client; the conversation then continues the fresh chat. */
static void test_stream_json_conversation(void)
{
    aw_registry_config *rc = NULL;
    aw_registry *registry = NULL;
    aw_registry_stats stats;
    struct conversation c = {{{NULL, 0, 0}}, 0};
    struct seen seen = {0, {NULL, 0, 0}, 0, 0, 0};
    aw_bridge *bridge;
    aw_str released, s;
    char chat[128], call_id[128];
    size_t count, i;
    uint64_t fresh;
    aw_bytes old_prompt;
    const char *run1[3], *run2[2], *run3[3];

    EXPECT(aw_registry_config_new(&rc), AW_RESULT_OK);
    EXPECT(aw_registry_config_set_ttl_ms(rc, 60000), AW_RESULT_OK);
    EXPECT(aw_registry_new(rc, &registry), AW_RESULT_OK);
    aw_registry_config_free(rc);

    /* The first request runs fresh; its tool call ends the response and the chat parks. */
    say(&c, "{\"role\":\"user\",\"content\":\"List the files.\"}");
    bridge = in_conversation(&c, registry, 1, 0);
    CHECK(!resumes(bridge, chat, sizeof chat));
    CHECK(prompt_holds(bridge, "List the files."));
    EXPECT(aw_registry_busy(registry, &count), AW_RESULT_OK);
    CHECK(count == 1);
    run1[0] = init_line(0, CHAT);
    run1[1] = shell_line(1, CHAT, "a1", "ls");
    run1[2] = text_line(2, CHAT, "x");
    run(bridge, &seen, run1, 3, 1);
    CHECK(seen.status == 200 && seen.ended == 1 && seen.stops == 1 && seen.respawns == 0);
    CHECK(strstr(text_of(&seen.body), "\"finish_reason\":\"tool_calls\"") != NULL);
    EXPECT(aw_bridge_end_conversation_turn(bridge, registry, 2), AW_RESULT_OK);
    /* The second time does nothing. */
    EXPECT(aw_bridge_end_conversation_turn(bridge, registry, 2), AW_RESULT_OK);
    aw_bridge_free(bridge);
    EXPECT(aw_registry_parked(registry, &count), AW_RESULT_OK);
    CHECK(count == 1);
    EXPECT(aw_registry_busy(registry, &count), AW_RESULT_OK);
    CHECK(count == 0);
    EXPECT(aw_registry_poll_released(registry, &released), AW_RESULT_DRAINED);
    {
        bool has;
        uint64_t deadline;
        EXPECT(aw_registry_poll_timeout(registry, &has, &deadline), AW_RESULT_OK);
        CHECK(has && deadline == 2 + 60000);
    }

    /* The results resume the chat: `--resume`, and only what is new on stdin. */
    echo(&c, &seen, call_id, sizeof call_id);
    CHECK(strncmp(call_id, "call_", 5) == 0);
    tool_result(&c, call_id, "a.txt");
    buf_clear(&seen.body);
    seen.status = 0, seen.ended = seen.stops = 0;
    bridge = in_conversation(&c, registry, 2, 3);
    CHECK(resumes(bridge, chat, sizeof chat) && strcmp(chat, CHAT) == 0);
    CHECK(prompt_holds(bridge, "a.txt"));
    CHECK(!prompt_holds(bridge, "List the files."));
    /* cursor-agent started a new chat for an id it did not know: the run is stopped, then
     * replaced by a fresh one with the whole conversation, before anything was sent. */
    run2[0] = init_line(0, LOST);
    run2[1] = text_line(1, LOST, "I have no context.");
    for (i = 0; i < 2; i++) {
        EXPECT(aw_bridge_push_stdout(bridge, (const uint8_t *)run2[i], strlen(run2[i]), 4),
               AW_RESULT_OK);
        EXPECT(aw_bridge_push_stdout(bridge, (const uint8_t *)"\n", 1, 4), AW_RESULT_OK);
    }
    drain(bridge, &seen);
    CHECK(seen.stops == 1 && seen.respawns == 0);
    CHECK(resumes(bridge, chat, sizeof chat) && strcmp(chat, CHAT) == 0);
    EXPECT(aw_bridge_invocation_stdin(bridge, &old_prompt), AW_RESULT_OK);
    EXPECT(aw_bridge_agent_exited_signal(bridge, 15, 4), AW_RESULT_OK);
    /* From the exit on, the invocation is the fresh run's; the replaced run's views stay. */
    CHECK(!resumes(bridge, chat, sizeof chat));
    CHECK(holds(old_prompt.data, old_prompt.len, "a.txt"));
    CHECK(!holds(old_prompt.data, old_prompt.len, "List the files."));
    drain(bridge, &seen);
    CHECK(seen.stops == 1 && seen.respawns == 1 && !seen.ended && seen.body.len == 0);
    CHECK(!resumes(bridge, chat, sizeof chat));
    CHECK(prompt_holds(bridge, "List the files.") && prompt_holds(bridge, "a.txt"));
    EXPECT(aw_bridge_invocation_program(bridge, &s), AW_RESULT_OK);
    CHECK(str_eq(s, "cursor-agent") && s.data[s.len] == '\0');
    run3[0] = init_line(0, FRESH);
    run3[1] = text_line(1, FRESH, "a.txt is there.");
    run3[2] = result_line(2, FRESH, "a.txt is there.");
    run(bridge, &seen, run3, 3, 5);
    CHECK(seen.status == 200 && seen.ended == 1 && seen.respawns == 1);
    CHECK(strstr(text_of(&seen.body), "a.txt is there.") != NULL);
    EXPECT(aw_bridge_end_conversation_turn(bridge, registry, 6), AW_RESULT_OK);
    aw_bridge_free(bridge);
    /* The lost chat is let go: the conversation continues on the fresh one. */
    EXPECT(aw_registry_poll_released(registry, &released), AW_RESULT_OK);
    CHECK(str_eq(released, CHAT));
    EXPECT(aw_registry_poll_released(registry, &released), AW_RESULT_DRAINED);

    /* A follow-up turn resumes the fresh chat with only the new message. */
    echo(&c, &seen, call_id, sizeof call_id);
    CHECK(call_id[0] == '\0');
    say(&c, "{\"role\":\"user\",\"content\":\"What is in it?\"}");
    bridge = in_conversation(&c, registry, 3, 7);
    CHECK(resumes(bridge, chat, sizeof chat) && strcmp(chat, FRESH) == 0);
    CHECK(prompt_holds(bridge, "What is in it?") && !prompt_holds(bridge, "List the files."));
    /* Its client leaves: the chat is let go, and the same request again runs fresh. */
    EXPECT(aw_bridge_client_gone(bridge, 8), AW_RESULT_OK);
    buf_clear(&seen.body);
    seen.status = 0, seen.ended = seen.stops = seen.respawns = 0;
    drain(bridge, &seen);
    CHECK(seen.stops == 1 && seen.ended == 1 && seen.body.len == 0);
    EXPECT(aw_bridge_agent_exited_signal(bridge, 15, 9), AW_RESULT_OK);
    EXPECT(aw_bridge_end_conversation_turn(bridge, registry, 9), AW_RESULT_OK);
    aw_bridge_free(bridge);
    EXPECT(aw_registry_poll_released(registry, &released), AW_RESULT_OK);
    CHECK(str_eq(released, FRESH));
    EXPECT(aw_registry_parked(registry, &count), AW_RESULT_OK);
    CHECK(count == 0);
    bridge = in_conversation(&c, registry, 4, 10);
    CHECK(!resumes(bridge, chat, sizeof chat) && prompt_holds(bridge, "List the files."));
    EXPECT(aw_bridge_end_conversation_turn(bridge, registry, 11), AW_RESULT_OK);
    aw_bridge_free(bridge);

    EXPECT(aw_registry_get_stats(registry, &stats), AW_RESULT_OK);
    CHECK(stats.resumed == 2 && stats.refused == 0 && stats.expired == 0 && stats.evicted == 0);
    /* The lost chat (replaced) and the chat whose client left; the last request's session
     * never held an answer, so no agent session was let go for it. */
    CHECK(stats.dropped == 2);
    EXPECT(aw_registry_fresh(registry, AW_FRESH_REASON_NO_SESSION, &fresh), AW_RESULT_OK);
    CHECK(fresh == 2);
    EXPECT(aw_registry_fresh(registry, AW_FRESH_REASON_BUSY, &fresh), AW_RESULT_OK);
    CHECK(fresh == 0);
    buf_free(&seen.body);
    conversation_free(&c);
    aw_registry_free(registry);
}

/* A parked chat expires; another owner never resumes it; a Responses continuation whose
 * response is not here gets OpenAI's error. */
static void test_registry_bounds(void)
{
    aw_registry_config *rc = NULL;
    aw_registry *registry = NULL;
    struct conversation c = {{{NULL, 0, 0}}, 0};
    struct seen seen = {0, {NULL, 0, 0}, 0, 0, 0};
    struct buf body = {NULL, 0, 0};
    aw_bridge *bridge = NULL;
    aw_registry_stats stats;
    aw_str released;
    char chat[128], call_id[128];
    const char *run1[3];
    bool has;
    uint64_t deadline;
    size_t count;
    static const char OWNER[] = "sk-one";
    static const char CONTINUATION[] =
        "{\"model\":\"auto\",\"input\":\"hi\",\"previous_response_id\":\"resp_1\"}";

    EXPECT(aw_registry_config_new(&rc), AW_RESULT_OK);
    EXPECT(aw_registry_config_set_ttl_ms(rc, 1000), AW_RESULT_OK);
    EXPECT(aw_registry_new(rc, &registry), AW_RESULT_OK);
    aw_registry_config_free(rc);

    say(&c, "{\"role\":\"user\",\"content\":\"Go.\"}");
    chat_body(&c, 0, &body);
    EXPECT(aw_bridge_new_in_conversation(AW_DIALECT_CHAT_COMPLETIONS, (const uint8_t *)body.data,
                                         body.len, NULL, 0, 1800000000u, 1, registry,
                                         (const uint8_t *)OWNER, strlen(OWNER), "s", 1, NULL, 0,
                                         NULL, 0, &bridge),
           AW_RESULT_OK);
    run1[0] = init_line(0, CHAT);
    run1[1] = shell_line(1, CHAT, "a1", "ls");
    run1[2] = text_line(2, CHAT, "x");
    run(bridge, &seen, run1, 3, 1);
    EXPECT(aw_bridge_end_conversation_turn(bridge, registry, 2), AW_RESULT_OK);
    aw_bridge_free(bridge);
    echo(&c, &seen, call_id, sizeof call_id);
    tool_result(&c, call_id, "done");
    chat_body(&c, 0, &body);

    /* The local owner, and the same owner under another client session, start fresh. */
    bridge = in_conversation(&c, registry, 2, 3);
    CHECK(!resumes(bridge, chat, sizeof chat));
    EXPECT(aw_bridge_end_conversation_turn(bridge, registry, 3), AW_RESULT_OK);
    aw_bridge_free(bridge);
    EXPECT(aw_bridge_new_in_conversation(AW_DIALECT_CHAT_COMPLETIONS, (const uint8_t *)body.data,
                                         body.len, NULL, 3, 1800000000u, 3, registry,
                                         (const uint8_t *)OWNER, strlen(OWNER), "t", 1, NULL, 0,
                                         NULL, 0, &bridge),
           AW_RESULT_OK);
    CHECK(!resumes(bridge, chat, sizeof chat));
    EXPECT(aw_bridge_end_conversation_turn(bridge, registry, 3), AW_RESULT_OK);
    aw_bridge_free(bridge);

    /* The chat expires with no request. */
    EXPECT(aw_registry_poll_timeout(registry, &has, &deadline), AW_RESULT_OK);
    CHECK(has && deadline == 1002);
    EXPECT(aw_registry_handle_timeout(registry, 1001), AW_RESULT_OK);
    EXPECT(aw_registry_poll_released(registry, &released), AW_RESULT_DRAINED);
    EXPECT(aw_registry_handle_timeout(registry, 1002), AW_RESULT_OK);
    EXPECT(aw_registry_poll_released(registry, &released), AW_RESULT_OK);
    CHECK(str_eq(released, CHAT));
    EXPECT(aw_registry_poll_timeout(registry, &has, &deadline), AW_RESULT_OK);
    CHECK(!has && deadline == 0);

    /* A continuation of a response that is not here: OpenAI's own error, nothing to run. */
    EXPECT(aw_bridge_new_in_conversation(AW_DIALECT_RESPONSES, (const uint8_t *)CONTINUATION,
                                         strlen(CONTINUATION), NULL, 4, 1800000000u, 4, registry,
                                         NULL, 0, NULL, 0, NULL, 0, "key", 3, &bridge),
           AW_RESULT_OK);
    {
        aw_str program;
        EXPECT(aw_bridge_invocation_program(bridge, &program), AW_RESULT_REJECTED);
    }
    buf_clear(&seen.body);
    drain(bridge, &seen);
    CHECK(seen.status == 400 && strstr(text_of(&seen.body), "previous_response_not_found"));
    EXPECT(aw_bridge_end_conversation_turn(bridge, registry, 5), AW_RESULT_OK);
    aw_bridge_free(bridge);
    EXPECT(aw_registry_get_stats(registry, &stats), AW_RESULT_OK);
    CHECK(stats.expired == 1 && stats.refused == 1 && stats.resumed == 0);

    /* Clear lets every session go. */
    EXPECT(aw_registry_clear(registry, 6), AW_RESULT_OK);
    EXPECT(aw_registry_parked(registry, &count), AW_RESULT_OK);
    CHECK(count == 0);
    buf_free(&body);
    buf_free(&seen.body);
    conversation_free(&c);
    aw_registry_free(registry);
}

/* ---- A warm ACP agent, scripted ------------------------------------------------------ */

static const char ENDPOINT[] = "http://127.0.0.1:9999/mcp/";

struct harness {
    aw_acp_connection *conn;
    uint64_t now;
    uint8_t seed;
    struct buf written; /* what the core wrote to the agent since last taken */
};

static void agent_says(struct harness *h, const char *line)
{
    EXPECT(aw_acp_connection_push_stdout(h->conn, (const uint8_t *)line, strlen(line), h->now),
           AW_RESULT_OK);
    EXPECT(aw_acp_connection_push_stdout(h->conn, (const uint8_t *)"\n", 1, h->now),
           AW_RESULT_OK);
}

/* What the core wrote to the agent since last asked, into h->written. */
static const char *take_written(struct harness *h)
{
    aw_bytes bytes;
    buf_clear(&h->written);
    while (aw_acp_connection_poll_transmit(h->conn, &bytes) == AW_RESULT_OK) {
        buf_add(&h->written, bytes.data, bytes.len);
    }
    return text_of(&h->written);
}

static void tick(struct harness *h, uint64_t ms)
{
    bool has;
    uint64_t deadline;
    h->now += ms;
    EXPECT(aw_acp_connection_poll_timeout(h->conn, &has, &deadline), AW_RESULT_OK);
    if (has && h->now >= deadline) {
        EXPECT(aw_acp_connection_handle_timeout(h->conn, h->now), AW_RESULT_OK);
    }
}

static uint64_t start(struct harness *h, const struct conversation *c)
{
    struct buf body = {NULL, 0, 0};
    uint8_t entropy[32];
    uint64_t turn = 0;
    h->seed++;
    memset(entropy, h->seed, sizeof entropy);
    chat_body(c, 1, &body);
    EXPECT(aw_acp_connection_start_conversation_turn(
               h->conn, AW_DIALECT_CHAT_COMPLETIONS, (const uint8_t *)body.data, body.len, NULL,
               h->now, 1800000000u, h->seed, NULL, 0, NULL, 0, NULL, 0, NULL, 0, entropy, &turn),
           AW_RESULT_OK);
    buf_free(&body);
    return turn;
}

/* A turn's response so far. */
struct response {
    uint16_t status;
    struct buf body;
    int ended;
};

static void drain_turn(struct harness *h, uint64_t turn, struct response *r)
{
    aw_output out;
    while (aw_acp_connection_poll_output(h->conn, turn, &out) == AW_RESULT_OK) {
        CHECK(out.kind != AW_OUTPUT_KIND_STOP_AGENT && out.kind != AW_OUTPUT_KIND_RESPAWN);
        if (out.kind == AW_OUTPUT_KIND_HEAD) {
            r->status = out.status;
        } else if (out.kind == AW_OUTPUT_KIND_BODY) {
            buf_add(&r->body, out.body.data, out.body.len);
        } else {
            r->ended++;
        }
    }
}

/* An MCP exchange's output so far: "head STATUS SESSION" lines, the body, "end". */
static void mcp_output(struct harness *h, aw_mcp_exchange exchange, struct buf *out)
{
    aw_mcp_output o;
    char line[256];
    while (aw_acp_connection_poll_mcp_output(h->conn, exchange, &o) == AW_RESULT_OK) {
        switch (o.kind) {
        case AW_MCP_OUTPUT_KIND_HEAD:
            sprintf(line, "head %u %.*s|", (unsigned)o.status, (int)o.session_id.len,
                    o.session_id.data);
            buf_str(out, line);
            break;
        case AW_MCP_OUTPUT_KIND_BODY:
            buf_add(out, o.body.data, o.body.len);
            break;
        case AW_MCP_OUTPUT_KIND_END:
            buf_str(out, "|end");
            break;
        }
    }
}

/* The agent's MCP client of one session: where its server is, and its session id. */
struct agent_mcp {
    char token[128];
    char auth[128];
    char session[128];
};

static aw_mcp_exchange mcp_post(struct harness *h, const struct agent_mcp *m, const char *body,
                                int with_session, struct buf *out)
{
    static const char ACCEPT[] = "application/json, text/event-stream";
    static const char JSON[] = "application/json";
    aw_mcp_exchange exchange = {0, 0};
    buf_clear(out);
    EXPECT(aw_acp_connection_handle_mcp(
               h->conn, m->token, strlen(m->token), (const uint8_t *)m->auth, strlen(m->auth),
               "POST", 4, ACCEPT, strlen(ACCEPT), JSON, strlen(JSON),
               with_session ? m->session : NULL, with_session ? strlen(m->session) : 0,
               with_session ? "2025-11-25" : NULL, with_session ? 10 : 0, (const uint8_t *)body,
               strlen(body), h->now, &exchange),
           AW_RESULT_OK);
    mcp_output(h, exchange, out);
    return exchange;
}

/* Reads the server from a `session/new`, then initializes it and lists its tools. */
static void mcp_connect(struct harness *h, const char *new_session, struct agent_mcp *m)
{
    struct buf out = {NULL, 0, 0};
    char url[256];
    const char *session;
    CHECK(json_string(new_session, "url", url, sizeof url));
    CHECK(strncmp(url, ENDPOINT, strlen(ENDPOINT)) == 0);
    strcpy(m->token, url + strlen(ENDPOINT));
    CHECK(json_string(new_session, "value", m->auth, sizeof m->auth));
    CHECK(strncmp(m->auth, "Bearer ", 7) == 0);
    mcp_post(h, m,
             "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
             "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":"
             "\"claude-code\",\"version\":\"2\"}}}",
             0, &out);
    CHECK(strncmp(text_of(&out), "head 200 ", 9) == 0);
    session = text_of(&out) + 9;
    CHECK(strchr(session, '|') != NULL);
    memcpy(m->session, session, (size_t)(strchr(session, '|') - session));
    m->session[strchr(session, '|') - session] = '\0';
    CHECK(strlen(m->session) > 0);
    mcp_post(h, m, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", 1, &out);
    CHECK(strncmp(text_of(&out), "head 202", 8) == 0);
    mcp_post(h, m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", 1, &out);
    CHECK(strstr(text_of(&out), "\"name\":\"bash\"") != NULL);
    buf_free(&out);
}

static aw_mcp_exchange mcp_call(struct harness *h, const struct agent_mcp *m, int id,
                                const char *command, struct buf *out)
{
    char body[512];
    sprintf(body,
            "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":"
            "\"bash\",\"arguments\":{\"command\":\"%s\"}}}",
            id, command);
    return mcp_post(h, m, body, 1, out);
}

static void harness_new(struct harness *h, const char *agent_name)
{
    aw_acp_config *config = NULL;
    char line[512];
    memset(h, 0, sizeof *h);
    EXPECT(aw_acp_config_new(&config), AW_RESULT_OK);
    EXPECT(aw_acp_config_set_mcp_endpoint(config, ENDPOINT, strlen(ENDPOINT)), AW_RESULT_OK);
    EXPECT(aw_acp_config_set_pool_size(config, 0), AW_RESULT_OK);
    EXPECT(aw_acp_connection_new(config, 0, &h->conn), AW_RESULT_OK);
    aw_acp_config_free(config);
    CHECK(strstr(take_written(h), "\"method\":\"initialize\"") != NULL);
    sprintf(line,
            "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":1,"
            "\"agentCapabilities\":{\"mcpCapabilities\":{\"http\":true,\"sse\":true},"
            "\"sessionCapabilities\":{\"close\":{}}},\"agentInfo\":{\"name\":\"%s\","
            "\"version\":\"1\"}}}",
            agent_name);
    agent_says(h, line);
    CHECK(aw_acp_connection_is_ready(h->conn));
}

static void harness_free(struct harness *h)
{
    aw_acp_connection_free(h->conn);
    buf_free(&h->written);
}

/* A tool round parks the session inside its call; the results answer the call through
 * MCP and the continuation streams into the next response; a follow-up turn is a prompt
 * on the same session holding only the new message; the endpoint admits only the
 * session's secret. */
static void test_acp_conversation(void)
{
    struct harness h;
    struct conversation c = {{{NULL, 0, 0}}, 0};
    struct response r = {0, {NULL, 0, 0}, 0};
    struct buf out = {NULL, 0, 0}, message = {NULL, 0, 0};
    struct agent_mcp m;
    aw_mcp_exchange call, refused = {7, 7};
    aw_registry_stats stats;
    char new_session[4096], echo_message[1024], call_id[128], line[512];
    uint64_t turn, fresh;
    long prompt_id;
    size_t count;

    harness_new(&h, "@zed-industries/claude-agent-acp");
    say(&c, "{\"role\":\"system\",\"content\":\"Be careful.\"}");
    say(&c, "{\"role\":\"user\",\"content\":\"What is here?\"}");
    turn = start(&h, &c);
    /* A session of its own, with the client's tools as its MCP server, pre-authorised. */
    strcpy(new_session, take_written(&h));
    CHECK(strstr(new_session, "\"method\":\"session/new\"") != NULL);
    CHECK(strstr(new_session, "\"allowedTools\":[\"mcp__client__bash\"]") != NULL);
    sprintf(line, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"result\":{\"sessionId\":\"s1\"}}",
            json_number(new_session, "id"));
    agent_says(&h, line);
    take_written(&h);
    CHECK(strstr(text_of(&h.written), "\"method\":\"session/prompt\"") != NULL);
    CHECK(strstr(text_of(&h.written), "What is here?") != NULL);
    prompt_id = json_number(text_of(&h.written), "id");
    mcp_connect(&h, new_session, &m);

    /* Refusals change nothing: another path is 404, another secret 401. */
    EXPECT(aw_acp_connection_handle_mcp(h.conn, "0000000000000000", 16, (const uint8_t *)m.auth,
                                        strlen(m.auth), "POST", 4, NULL, 0, NULL, 0, NULL, 0, NULL,
                                        0, (const uint8_t *)"{}", 2, h.now, &refused),
           AW_RESULT_MCP_NOT_FOUND);
    EXPECT(aw_acp_connection_handle_mcp(h.conn, m.token, strlen(m.token),
                                        (const uint8_t *)"Bearer 00", 9, "POST", 4, NULL, 0, NULL,
                                        0, NULL, 0, NULL, 0, (const uint8_t *)"{}", 2, h.now,
                                        &refused),
           AW_RESULT_MCP_UNAUTHORIZED);
    CHECK(strstr(aw_acp_connection_last_error(h.conn), "401") != NULL);
    EXPECT(aw_acp_connection_handle_mcp(h.conn, m.token, strlen(m.token), NULL, 0, "POST", 4,
                                        NULL, 0, NULL, 0, NULL, 0, NULL, 0, NULL, 0, h.now,
                                        &refused),
           AW_RESULT_MCP_UNAUTHORIZED);
    CHECK(refused.server == 7 && refused.exchange == 7);

    agent_says(&h, "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":"
                   "\"s1\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{"
                   "\"type\":\"text\",\"text\":\"Let me look.\"}}}}");
    call = mcp_call(&h, &m, 5, "ls", &out);
    CHECK(strncmp(text_of(&out), "head 200", 8) == 0 && strstr(text_of(&out), "|end") == NULL);
    /* The batch window closes the response with the call; the session parks inside it. */
    tick(&h, 300);
    drain_turn(&h, turn, &r);
    CHECK(r.status == 200 && r.ended == 1);
    CHECK(strstr(text_of(&r.body), "\"finish_reason\":\"tool_calls\"") != NULL);
    CHECK(strstr(text_of(&r.body), "mcp__client__bash") == NULL);
    CHECK(strstr(text_of(&r.body), "Let me look.") != NULL);
    CHECK(strstr(text_of(&r.body), "{\\\"command\\\":\\\"ls\\\"}") != NULL);
    CHECK(json_string(strstr(text_of(&r.body), "\"tool_calls\""), "id", call_id, sizeof call_id));
    EXPECT(aw_acp_connection_parked_sessions(h.conn, &count), AW_RESULT_OK);
    CHECK(count == 1);
    CHECK(strstr(take_written(&h), "session/cancel") == NULL);
    /* Keep-alives hold the agent in its call. */
    tick(&h, 15000);
    buf_clear(&out);
    mcp_output(&h, call, &out);
    CHECK(strstr(text_of(&out), ": keepalive") != NULL);

    /* The results continue the same session: the call is answered, nothing is prompted. */
    sprintf(echo_message,
            "{\"role\":\"assistant\",\"content\":\"Let me look.\",\"tool_calls\":[{\"id\":\"%s\","
            "\"type\":\"function\",\"function\":{\"name\":\"bash\",\"arguments\":"
            "\"{\\\"command\\\":\\\"ls\\\"}\"}}]}",
            call_id);
    say(&c, echo_message);
    tool_result(&c, call_id, "a.txt b.txt");
    turn = start(&h, &c);
    CHECK(take_written(&h)[0] == '\0');
    buf_clear(&out);
    mcp_output(&h, call, &out);
    CHECK(strstr(text_of(&out), "a.txt b.txt") != NULL);
    CHECK(out.len >= 4 && strcmp(text_of(&out) + out.len - 4, "|end") == 0);
    agent_says(&h, "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":"
                   "\"s1\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{"
                   "\"type\":\"text\",\"text\":\"Two files.\"}}}}");
    sprintf(line, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"result\":{\"stopReason\":\"end_turn\"}}",
            prompt_id);
    agent_says(&h, line);
    buf_clear(&r.body);
    r.status = 0, r.ended = 0;
    drain_turn(&h, turn, &r);
    CHECK(r.ended == 1 && strstr(text_of(&r.body), "\"finish_reason\":\"stop\"") != NULL);
    CHECK(strstr(text_of(&r.body), "Two files.") != NULL);
    EXPECT(aw_acp_connection_parked_sessions(h.conn, &count), AW_RESULT_OK);
    CHECK(count == 1);

    /* A follow-up turn: a prompt on the same session holding only the new message. */
    say(&c, "{\"role\":\"assistant\",\"content\":\"Two files.\"}");
    say(&c, "{\"role\":\"user\",\"content\":\"Thanks! Which is bigger?\"}");
    turn = start(&h, &c);
    take_written(&h);
    CHECK(strstr(text_of(&h.written), "\"method\":\"session/prompt\"") != NULL);
    CHECK(strstr(text_of(&h.written), "\"sessionId\":\"s1\"") != NULL);
    CHECK(strstr(text_of(&h.written), "\"text\":\"Thanks! Which is bigger?\"") != NULL);
    CHECK(strstr(text_of(&h.written), "What is here?") == NULL);
    prompt_id = json_number(text_of(&h.written), "id");
    agent_says(&h, "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":"
                   "\"s1\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{"
                   "\"type\":\"text\",\"text\":\"b.txt\"}}}}");
    sprintf(line, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"result\":{\"stopReason\":\"end_turn\"}}",
            prompt_id);
    agent_says(&h, line);
    buf_clear(&r.body);
    r.ended = 0;
    drain_turn(&h, turn, &r);
    CHECK(r.ended == 1 && strstr(text_of(&r.body), "b.txt") != NULL);
    EXPECT(aw_acp_connection_conversation_stats(h.conn, &stats), AW_RESULT_OK);
    CHECK(stats.resumed == 2 && stats.expired == 0 && stats.dropped == 0);
    EXPECT(aw_acp_connection_conversation_fresh(h.conn, AW_FRESH_REASON_NO_SESSION, &fresh),
           AW_RESULT_OK);
    CHECK(fresh == 1);

    /* Shutdown closes the parked session (its turn is over: nothing to cancel). */
    EXPECT(aw_acp_connection_shutdown(h.conn, h.now), AW_RESULT_OK);
    take_written(&h);
    CHECK(strstr(text_of(&h.written), "session/cancel") == NULL);
    CHECK(strstr(text_of(&h.written), "\"method\":\"session/close\"") != NULL);
    CHECK(strstr(text_of(&h.written), "\"sessionId\":\"s1\"") != NULL);
    EXPECT(aw_acp_connection_parked_sessions(h.conn, &count), AW_RESULT_OK);
    CHECK(count == 0);

    buf_free(&out);
    buf_free(&message);
    buf_free(&r.body);
    conversation_free(&c);
    harness_free(&h);
}

/* A parked session expires: it is cancelled, and its call's stream ends. */
static void test_acp_expiry(void)
{
    struct harness h;
    struct conversation c = {{{NULL, 0, 0}}, 0};
    struct response r = {0, {NULL, 0, 0}, 0};
    struct buf out = {NULL, 0, 0};
    struct agent_mcp m;
    aw_acp_config *config = NULL;
    aw_registry_config *rc = NULL;
    aw_mcp_exchange call, ready;
    aw_registry_stats stats;
    char new_session[4096], line[256];
    uint64_t turn;
    size_t count;
    int i, named = 0;

    /* The conversations' settings, through their own handle. */
    memset(&h, 0, sizeof h);
    EXPECT(aw_acp_config_new(&config), AW_RESULT_OK);
    EXPECT(aw_acp_config_set_mcp_endpoint(config, ENDPOINT, strlen(ENDPOINT)), AW_RESULT_OK);
    EXPECT(aw_acp_config_set_pool_size(config, 0), AW_RESULT_OK);
    EXPECT(aw_acp_config_get_conversations(config, &rc), AW_RESULT_OK);
    EXPECT(aw_registry_config_set_ttl_ms(rc, 60000), AW_RESULT_OK);
    EXPECT(aw_acp_config_set_conversations(config, rc), AW_RESULT_OK);
    aw_registry_config_free(rc);
    EXPECT(aw_acp_connection_new(config, 0, &h.conn), AW_RESULT_OK);
    aw_acp_config_free(config);
    take_written(&h);
    agent_says(&h, "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":1,"
                   "\"agentCapabilities\":{\"mcpCapabilities\":{\"http\":true}},\"agentInfo\":{"
                   "\"name\":\"gemini-cli\",\"version\":\"1\"}}}");

    say(&c, "{\"role\":\"user\",\"content\":\"Go.\"}");
    turn = start(&h, &c);
    strcpy(new_session, take_written(&h));
    sprintf(line, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"result\":{\"sessionId\":\"s1\"}}",
            json_number(new_session, "id"));
    agent_says(&h, line);
    take_written(&h);
    mcp_connect(&h, new_session, &m);
    call = mcp_call(&h, &m, 10, "ls", &out);
    tick(&h, 300);
    drain_turn(&h, turn, &r);
    CHECK(r.ended == 1);
    EXPECT(aw_acp_connection_parked_sessions(h.conn, &count), AW_RESULT_OK);
    CHECK(count == 1);
    /* A keep-alive is due on the call's stream: that exchange is named, once. */
    tick(&h, 15000);
    while (aw_acp_connection_poll_mcp_ready(h.conn, &ready) == AW_RESULT_OK) {
        CHECK(ready.server == call.server && ready.exchange == call.exchange);
        named++;
    }
    CHECK(named == 1);
    for (i = 0; i < 4; i++) {
        tick(&h, 15000);
    }
    CHECK(strstr(take_written(&h), "session/cancel") != NULL);
    EXPECT(aw_acp_connection_parked_sessions(h.conn, &count), AW_RESULT_OK);
    CHECK(count == 0);
    EXPECT(aw_acp_connection_conversation_stats(h.conn, &stats), AW_RESULT_OK);
    CHECK(stats.expired == 1);
    buf_clear(&out);
    mcp_output(&h, call, &out);
    CHECK(out.len == 0 || strstr(text_of(&out), "|end") != NULL);
    /* The exchange of a server that is gone: drained, and its hang-up ignored. */
    EXPECT(aw_acp_connection_mcp_exchange_gone(h.conn, call, h.now), AW_RESULT_OK);
    buf_free(&out);
    buf_free(&r.body);
    conversation_free(&c);
    harness_free(&h);
}

/* ---- A standalone MCP server ---------------------------------------------------------- */

struct mcp_harness {
    aw_mcp_server *server;
    uint64_t now;
    char session[64];
};

/* One POST to the server; its output so far into `out`. Returns the exchange. */
static uint64_t server_post(struct mcp_harness *s, const char *body, int with_session,
                            struct buf *out)
{
    static const char ACCEPT[] = "application/json, text/event-stream";
    uint64_t exchange = 99;
    aw_mcp_output o;
    char line[128];
    buf_clear(out);
    EXPECT(aw_mcp_server_handle_http(s->server, "POST", 4, ACCEPT, strlen(ACCEPT),
                                     "application/json", 16, with_session ? s->session : NULL,
                                     with_session ? strlen(s->session) : 0, NULL, 0,
                                     (const uint8_t *)body, strlen(body), s->now, &exchange),
           AW_RESULT_OK);
    while (aw_mcp_server_poll_exchange(s->server, exchange, &o) == AW_RESULT_OK) {
        if (o.kind == AW_MCP_OUTPUT_KIND_HEAD) {
            sprintf(line, "head %u %.*s %.*s|", (unsigned)o.status, (int)o.content_type.len,
                    o.content_type.data, (int)o.session_id.len, o.session_id.data);
            buf_str(out, line);
        } else if (o.kind == AW_MCP_OUTPUT_KIND_BODY) {
            buf_add(out, o.body.data, o.body.len);
        } else {
            buf_str(out, "|end");
        }
    }
    return exchange;
}

/* The MCP server over HTTP: a session, its tools, a call held pending and answered, and
 * hostile input answered with JSON-RPC errors that leave the pending call as it was. */
static void test_mcp_server_http(void)
{
    static const char BODY_PREFIX[] =
        "{\"model\":\"auto\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":";
    struct mcp_harness s;
    struct buf body = {NULL, 0, 0}, out = {NULL, 0, 0};
    aw_mcp_config *config = NULL;
    aw_mcp_event event;
    aw_mcp_output o;
    aw_str name;
    size_t count;
    uint64_t call, held, deadline;
    bool has;

    memset(&s, 0, sizeof s);
    strcpy(s.session, "0123456789abcdef0123456789abcdef");
    buf_str(&body, BODY_PREFIX);
    buf_str(&body, TOOLS);
    buf_str(&body, "}");
    EXPECT(aw_mcp_config_new(&config), AW_RESULT_OK);
    EXPECT(aw_mcp_config_set_keep_alive_ms(config, 1000), AW_RESULT_OK);
    EXPECT(aw_mcp_config_set_call_limit_ms(config, 5000), AW_RESULT_OK);
    EXPECT(aw_mcp_server_new(AW_DIALECT_CHAT_COMPLETIONS, (const uint8_t *)body.data, body.len,
                             NULL, config, s.session, strlen(s.session), &s.server),
           AW_RESULT_OK);
    aw_mcp_config_free(config);
    EXPECT(aw_mcp_server_tool_count(s.server, &count), AW_RESULT_OK);
    CHECK(count == 1);
    EXPECT(aw_mcp_server_tool_name(s.server, 0, &name), AW_RESULT_OK);
    CHECK(str_eq(name, "bash"));
    EXPECT(aw_mcp_server_protocol_version(s.server, &name), AW_RESULT_NOT_AVAILABLE);
    CHECK(!aw_mcp_server_is_initialized(s.server) && !aw_mcp_server_is_closed(s.server));

    /* A request before initialize is refused; initialize opens the session. */
    server_post(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", 0, &out);
    CHECK(strstr(text_of(&out), "\"error\"") != NULL);
    server_post(&s,
                "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
                "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{"
                "\"name\":\"codex\",\"version\":\"1\"}}}",
                0, &out);
    CHECK(strncmp(text_of(&out), "head 200 application/json 0123456789abcdef", 42) == 0);
    CHECK(strstr(text_of(&out), "\"protocolVersion\":\"2025-06-18\"") != NULL);
    CHECK(aw_mcp_server_is_initialized(s.server));
    EXPECT(aw_mcp_server_protocol_version(s.server, &name), AW_RESULT_OK);
    CHECK(str_eq(name, "2025-06-18"));
    server_post(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", 1, &out);
    CHECK(strstr(text_of(&out), "\"inputSchema\"") != NULL);

    /* A call: an SSE stream held open, the call handed to us. */
    held = server_post(&s,
                       "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{"
                       "\"name\":\"bash\",\"arguments\":{\"command\":\"ls\"}}}",
                       1, &out);
    CHECK(strncmp(text_of(&out), "head 200 text/event-stream", 26) == 0);
    EXPECT(aw_mcp_server_poll_event(s.server, &event), AW_RESULT_OK);
    CHECK(event.kind == AW_MCP_EVENT_KIND_CALL && event.tool == 0);
    CHECK(str_eq(event.tool_name, "bash") && str_eq(event.arguments, "{\"command\":\"ls\"}"));
    CHECK(event.cancel_reason == AW_MCP_CANCEL_REASON_NONE && !event.has_cancel_message);
    call = event.call;
    EXPECT(aw_mcp_server_poll_event(s.server, &event), AW_RESULT_DRAINED);
    EXPECT(aw_mcp_server_pending_calls(s.server, &count), AW_RESULT_OK);
    CHECK(count == 1);

    /* Hostile input: each answered with its JSON-RPC error; the call stays pending. */
    server_post(&s, "{not json", 1, &out);
    CHECK(strstr(text_of(&out), "-32700") != NULL);
    server_post(&s, "{\"jsonrpc\":\"1.0\",\"id\":2,\"method\":\"ping\"}", 1, &out);
    CHECK(strstr(text_of(&out), "-32600") != NULL);
    server_post(&s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/list\"}", 1, &out);
    CHECK(strstr(text_of(&out), "-32601") != NULL);
    server_post(&s,
                "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"rm\",\"arguments\":{}}}",
                1, &out);
    CHECK(strstr(text_of(&out), "-32602") != NULL);
    server_post(&s,
                "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"bash\",\"arguments\":{\"command\":\"again\"}}}",
                1, &out);
    CHECK(strstr(text_of(&out), "-32600") != NULL);
    server_post(&s, "{\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{}}", 1, &out);
    CHECK(strncmp(text_of(&out), "head 202", 8) == 0);
    EXPECT(aw_mcp_server_poll_event(s.server, &event), AW_RESULT_DRAINED);
    EXPECT(aw_mcp_server_pending_calls(s.server, &count), AW_RESULT_OK);
    CHECK(count == 1);
    /* Another session id is 404; none is 400. */
    strcpy(s.session, "someone-else");
    server_post(&s, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}", 1, &out);
    CHECK(strncmp(text_of(&out), "head 404", 8) == 0);
    server_post(&s, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}", 0, &out);
    CHECK(strncmp(text_of(&out), "head 400", 8) == 0);
    strcpy(s.session, "0123456789abcdef0123456789abcdef");

    /* Keep-alives, then the call limit. */
    EXPECT(aw_mcp_server_poll_timeout(s.server, &has, &deadline), AW_RESULT_OK);
    CHECK(has && deadline == 1000);
    s.now = 1000;
    EXPECT(aw_mcp_server_handle_timeout(s.server, s.now), AW_RESULT_OK);
    EXPECT(aw_mcp_server_poll_exchange(s.server, held, &o), AW_RESULT_OK);
    CHECK(o.kind == AW_MCP_OUTPUT_KIND_BODY && holds(o.body.data, o.body.len, ": keepalive"));
    s.now = 5000;
    EXPECT(aw_mcp_server_handle_timeout(s.server, s.now), AW_RESULT_OK);
    EXPECT(aw_mcp_server_poll_event(s.server, &event), AW_RESULT_OK);
    CHECK(event.kind == AW_MCP_EVENT_KIND_CALL_LIMIT && event.call == call);

    /* The answer goes down the held stream, which then ends. */
    EXPECT(aw_mcp_server_answer_call(s.server, call, "a.txt", 5, false, s.now), AW_RESULT_OK);
    buf_clear(&out);
    while (aw_mcp_server_poll_exchange(s.server, held, &o) == AW_RESULT_OK) {
        if (o.kind == AW_MCP_OUTPUT_KIND_BODY) {
            buf_add(&out, o.body.data, o.body.len);
        } else {
            buf_str(&out, "|end");
        }
    }
    CHECK(strstr(text_of(&out), "\"text\":\"a.txt\"") != NULL);
    CHECK(strstr(text_of(&out), "\"isError\":false") != NULL);
    CHECK(strstr(text_of(&out), "|end") != NULL);
    EXPECT(aw_mcp_server_answer_call(s.server, call, "again", 5, false, s.now),
           AW_RESULT_CALL_NOT_PENDING);
    EXPECT(aw_mcp_server_answer_call(s.server, call + 1, "x", 1, true, s.now),
           AW_RESULT_UNKNOWN_CALL);

    /* A call whose connection closes is cancelled. */
    held = server_post(&s,
                       "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{"
                       "\"name\":\"bash\",\"arguments\":{\"command\":\"sleep 9\"}}}",
                       1, &out);
    EXPECT(aw_mcp_server_poll_event(s.server, &event), AW_RESULT_OK);
    call = event.call;
    EXPECT(aw_mcp_server_exchange_gone(s.server, held, s.now), AW_RESULT_OK);
    EXPECT(aw_mcp_server_poll_event(s.server, &event), AW_RESULT_OK);
    CHECK(event.kind == AW_MCP_EVENT_KIND_CANCELLED && event.call == call);
    CHECK(event.cancel_reason == AW_MCP_CANCEL_REASON_DISCONNECTED);
    EXPECT(aw_mcp_server_poll_exchange(s.server, held, &o), AW_RESULT_DRAINED);
    EXPECT(aw_mcp_server_poll_exchange(s.server, held + 100, &o), AW_RESULT_UNKNOWN_EXCHANGE);

    /* A cancellation with a reason. */
    server_post(&s,
                "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{"
                "\"name\":\"bash\",\"arguments\":{\"command\":\"make\"}}}",
                1, &out);
    EXPECT(aw_mcp_server_poll_event(s.server, &event), AW_RESULT_OK);
    call = event.call;
    server_post(&s,
                "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
                "\"requestId\":9,\"reason\":\"user stopped\"}}",
                1, &out);
    EXPECT(aw_mcp_server_poll_event(s.server, &event), AW_RESULT_OK);
    CHECK(event.kind == AW_MCP_EVENT_KIND_CANCELLED && event.call == call);
    CHECK(event.cancel_reason == AW_MCP_CANCEL_REASON_REQUESTED && event.has_cancel_message);
    CHECK(str_eq(event.cancel_message, "user stopped"));

    /* DELETE ends the session. */
    {
        uint64_t exchange;
        EXPECT(aw_mcp_server_handle_http(s.server, "DELETE", 6, NULL, 0, NULL, 0, s.session,
                                         strlen(s.session), NULL, 0, NULL, 0, s.now, &exchange),
               AW_RESULT_OK);
        EXPECT(aw_mcp_server_poll_event(s.server, &event), AW_RESULT_OK);
        CHECK(event.kind == AW_MCP_EVENT_KIND_CLOSED);
        CHECK(aw_mcp_server_is_closed(s.server));
    }
    buf_free(&body);
    buf_free(&out);
    aw_mcp_server_free(s.server);
}

/* The MCP server over stdio: one line in, one line out; a too-long line is an error. */
static void test_mcp_server_stdio(void)
{
    static const char BODY[] = "{\"model\":\"auto\",\"input\":\"hi\",\"tools\":[{\"type\":"
                               "\"custom\",\"name\":\"apply_patch\",\"description\":\"Patch.\"}]}";
    aw_mcp_server *server = NULL;
    aw_mcp_config *config = NULL;
    aw_mcp_event event;
    aw_bytes bytes;
    struct buf out = {NULL, 0, 0};
    static const char INIT[] =
        "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
        "\"2025-03-26\",\"capabilities\":{},\"clientInfo\":{\"name\":\"x\",\"version\":\"1\"}}}\n";
    static const char CALL[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
                               "\"params\":{\"name\":\"apply_patch\",\"arguments\":{\"input\":"
                               "\"*** Begin Patch\"}}}\n";
    size_t i;

    EXPECT(aw_mcp_config_new(&config), AW_RESULT_OK);
    EXPECT(aw_mcp_config_set_max_body_bytes(config, 512), AW_RESULT_OK);
    EXPECT(aw_mcp_server_new(AW_DIALECT_RESPONSES, (const uint8_t *)BODY, strlen(BODY), NULL,
                             config, "stdio-session", 13, &server),
           AW_RESULT_OK);
    aw_mcp_config_free(config);
    /* Byte at a time. */
    for (i = 0; INIT[i] != '\0'; i++) {
        EXPECT(aw_mcp_server_push_stdio(server, (const uint8_t *)INIT + i, 1, 0), AW_RESULT_OK);
    }
    while (aw_mcp_server_poll_transmit(server, &bytes) == AW_RESULT_OK) {
        buf_add(&out, bytes.data, bytes.len);
    }
    CHECK(strstr(text_of(&out), "\"id\":0,\"result\"") != NULL);
    CHECK(out.len > 0 && out.data[out.len - 1] == '\n');
    EXPECT(aw_mcp_server_push_stdio(server, (const uint8_t *)CALL, strlen(CALL), 0), AW_RESULT_OK);
    EXPECT(aw_mcp_server_poll_event(server, &event), AW_RESULT_OK);
    CHECK(event.kind == AW_MCP_EVENT_KIND_CALL && str_eq(event.tool_name, "apply_patch"));
    CHECK(str_eq(event.arguments, "*** Begin Patch"));
    EXPECT(aw_mcp_server_answer_call(server, event.call, "failed", 6, true, 1), AW_RESULT_OK);
    buf_clear(&out);
    while (aw_mcp_server_poll_transmit(server, &bytes) == AW_RESULT_OK) {
        buf_add(&out, bytes.data, bytes.len);
    }
    CHECK(strstr(text_of(&out), "\"id\":1,\"result\"") != NULL);
    CHECK(strstr(text_of(&out), "\"isError\":true") != NULL);
    /* A line over the limit is an error, and the server goes on. */
    {
        char long_line[1024];
        memset(long_line, 'x', sizeof long_line - 1);
        long_line[sizeof long_line - 1] = '\n';
        EXPECT(aw_mcp_server_push_stdio(server, (const uint8_t *)long_line, sizeof long_line, 2),
               AW_RESULT_OK);
        buf_clear(&out);
        while (aw_mcp_server_poll_transmit(server, &bytes) == AW_RESULT_OK) {
            buf_add(&out, bytes.data, bytes.len);
        }
        CHECK(strstr(text_of(&out), "-32600") != NULL);
    }
    EXPECT(aw_mcp_server_close(server, 3), AW_RESULT_OK);
    CHECK(aw_mcp_server_is_closed(server));
    EXPECT(aw_mcp_server_push_stdio(server, (const uint8_t *)INIT, strlen(INIT), 4), AW_RESULT_OK);
    EXPECT(aw_mcp_server_poll_transmit(server, &bytes), AW_RESULT_DRAINED);
    buf_free(&out);
    aw_mcp_server_free(server);
}

int main(void)
{
    test_stream_json_conversation();
    test_registry_bounds();
    test_acp_conversation();
    test_acp_expiry();
    test_mcp_server_http();
    test_mcp_server_stdio();
    if (failures) {
        fprintf(stderr, "conversations: %d checks failed\n", failures);
        return 1;
    }
    printf("conversations: all checks passed\n");
    return 0;
}
