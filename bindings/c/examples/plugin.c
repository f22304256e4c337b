/*
 * A minimal plugin over the C ABI: runs one request through cursor-agent and prints the
 * response body as it streams.
 *
 *   plugin [--api chat-completions|responses|messages] [--agent PROGRAM] REQUEST.json
 *
 * --api is the API the request speaks (default chat-completions): OpenAI Chat Completions,
 * OpenAI Responses, or Anthropic Messages; a server would take it from the request's route.
 * It spawns the agent in its own process group with the bridge's invocation, writes the
 * prompt to its stdin, poll()s the agent's stdout and stderr and the bridge's deadline,
 * prints the body to stdout as it comes (the head's status goes to stderr), kills the
 * whole process group when the bridge says STOP_AGENT, and spawns the (new) invocation
 * again when it says RESPAWN (which a bridge of a conversation may). --agent replaces
 * cursor-agent (a stand-in that replays a transcript, in the tests).
 *
 * Build: cc -std=c99 plugin.c -Iinclude target/release/libagentwire.a -lpthread -ldl -lm
 * (older C libraries also want -lrt -lutil -lgcc_s).
 */
#define _POSIX_C_SOURCE 200809L

#include "agentwire.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void fail(const char *what, aw_result r, const char *message)
{
    fprintf(stderr, "plugin: %s: %s %s\n", what, aw_result_name(r), message);
    exit(1);
}

static unsigned char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    unsigned char *data;
    long size;
    if (!f || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        perror(path);
        exit(1);
    }
    data = (unsigned char *)malloc((size_t)size + 1);
    if (!data || fread(data, 1, (size_t)size, f) != (size_t)size) {
        perror(path);
        exit(1);
    }
    fclose(f);
    *len = (size_t)size;
    return data;
}

struct agent {
    pid_t pid;      /* also the process group id; 0 once reaped */
    int stdin_fd;   /* -1 once the prompt is written */
    int stdout_fd;  /* -1 at end of file */
    int stderr_fd;  /* -1 at end of file */
    aw_bytes prompt;
    size_t written;
};

/* Spawns the invocation in a new process group with pipes for stdin, stdout, stderr. */
static void spawn(aw_bridge *bridge, struct agent *agent)
{
    aw_str program, arg, name, value;
    size_t argc, envc, i;
    char **argv;
    int in[2], out[2], err[2];

    aw_bridge_invocation_program(bridge, &program);
    aw_bridge_invocation_arg_count(bridge, &argc);
    aw_bridge_invocation_env_count(bridge, &envc);
    aw_bridge_invocation_stdin(bridge, &agent->prompt);
    argv = (char **)calloc(argc + 2, sizeof *argv);
    argv[0] = (char *)program.data; /* NUL-terminated, valid until aw_bridge_free */
    for (i = 0; i < argc; i++) {
        aw_bridge_invocation_arg(bridge, i, &arg);
        argv[i + 1] = (char *)arg.data;
    }
    if (pipe(in) != 0 || pipe(out) != 0 || pipe(err) != 0) {
        perror("pipe");
        exit(1);
    }
    agent->pid = fork();
    if (agent->pid < 0) {
        perror("fork");
        exit(1);
    }
    if (agent->pid == 0) {
        setpgid(0, 0);
        dup2(in[0], 0);
        dup2(out[1], 1);
        dup2(err[1], 2);
        close(in[0]), close(in[1]), close(out[0]), close(out[1]), close(err[0]), close(err[1]);
        for (i = 0; i < envc; i++) {
            aw_bridge_invocation_env(bridge, i, &name, &value);
            setenv(name.data, value.data, 1);
        }
        execvp(argv[0], argv);
        perror(argv[0]);
        _exit(127);
    }
    /* Both sides set the group, so it exists whichever runs first. */
    setpgid(agent->pid, agent->pid);
    free(argv);
    close(in[0]), close(out[1]), close(err[1]);
    agent->stdin_fd = in[1];
    agent->stdout_fd = out[0];
    agent->stderr_fd = err[0];
    agent->written = 0;
    fcntl(agent->stdin_fd, F_SETFL, O_NONBLOCK);
    signal(SIGPIPE, SIG_IGN); /* an agent that exits early must not kill the plugin */
}

static void stop(struct agent *agent)
{
    if (agent->pid > 0) {
        kill(-agent->pid, SIGKILL); /* the whole process group */
    }
}

/* Drains the bridge after an input. Returns 1 once the response ended. */
static int drain(aw_bridge *bridge, struct agent *agent)
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
            fflush(stdout);
            break;
        case AW_OUTPUT_KIND_STOP_AGENT:
            stop(agent);
            break;
        case AW_OUTPUT_KIND_RESPAWN:
            /* Only a bridge of a conversation (aw_bridge_new_in_conversation) asks for it,
             * after the run it replaces was reaped and reported: its invocation now
             * describes a fresh run, to be fed to the same bridge. */
            spawn(bridge, agent);
            break;
        case AW_OUTPUT_KIND_END:
            return 1;
        }
    }
    if (r != AW_RESULT_DRAINED) {
        fail("aw_bridge_poll_output", r, aw_bridge_last_error(bridge));
    }
    return 0;
}

/* Reads what is there from `*fd` into the bridge; closes it at end of file. */
static void forward(aw_bridge *bridge, int *fd, int is_stdout)
{
    unsigned char buf[65536];
    ssize_t n = read(*fd, buf, sizeof buf);
    aw_result r;
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
        return;
    }
    if (n <= 0) {
        close(*fd);
        *fd = -1;
        return;
    }
    r = is_stdout ? aw_bridge_push_stdout(bridge, buf, (size_t)n, now_ms())
                  : aw_bridge_push_stderr(bridge, buf, (size_t)n, now_ms());
    if (r != AW_RESULT_OK) {
        fail("aw_bridge_push", r, aw_bridge_last_error(bridge));
    }
}

/* The dialect of an --api name; exits on an unknown one. */
static aw_dialect dialect_named(const char *name)
{
    if (strcmp(name, "chat-completions") == 0) {
        return AW_DIALECT_CHAT_COMPLETIONS;
    }
    if (strcmp(name, "responses") == 0) {
        return AW_DIALECT_RESPONSES;
    }
    if (strcmp(name, "messages") == 0) {
        return AW_DIALECT_MESSAGES;
    }
    fprintf(stderr, "plugin: unknown --api %s (chat-completions, responses, messages)\n", name);
    exit(2);
}

int main(int argc, char **argv)
{
    aw_dialect dialect = AW_DIALECT_CHAT_COMPLETIONS;
    const char *agent_program = NULL;
    const char *request_path = NULL;
    unsigned char *body;
    size_t body_len;
    aw_config *config = NULL;
    aw_bridge *bridge = NULL;
    aw_str program;
    struct agent agent;
    int ended, i;
    uint64_t grace_until = 0;
    aw_result r;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--agent") == 0 && i + 1 < argc) {
            agent_program = argv[++i];
        } else if (strcmp(argv[i], "--api") == 0 && i + 1 < argc) {
            dialect = dialect_named(argv[++i]);
        } else {
            request_path = argv[i];
        }
    }
    if (!request_path) {
        fprintf(stderr, "usage: plugin [--api chat-completions|responses|messages] "
                        "[--agent PROGRAM] REQUEST.json\n");
        return 2;
    }
    body = read_file(request_path, &body_len);

    aw_config_new(&config);
    if (agent_program) {
        r = aw_config_set_cursor_binary(config, agent_program, strlen(agent_program));
        if (r != AW_RESULT_OK) {
            fail("aw_config_set_cursor_binary", r, aw_config_last_error(config));
        }
    }
    r = aw_bridge_new(dialect, body, body_len, config, now_ms(), (uint64_t)time(NULL),
                      (uint64_t)getpid(), &bridge);
    aw_config_free(config);
    free(body);
    if (r != AW_RESULT_OK) {
        fail("aw_bridge_new", r, "");
    }

    memset(&agent, 0, sizeof agent);
    agent.stdin_fd = agent.stdout_fd = agent.stderr_fd = -1;
    ended = drain(bridge, &agent);
    if (aw_bridge_invocation_program(bridge, &program) == AW_RESULT_OK) {
        spawn(bridge, &agent);
    }

    while (agent.pid > 0 || !ended) {
        struct pollfd fds[3];
        int nfds = 0, timeout = -1, status;
        bool has_deadline = false;
        uint64_t deadline = 0, now = now_ms();

        if (agent.pid > 0 && agent.stdout_fd < 0 && agent.stderr_fd < 0) {
            /* Both pipes closed: reap the agent and report how it ended. */
            waitpid(agent.pid, &status, 0);
            agent.pid = 0;
            r = WIFSIGNALED(status)
                    ? aw_bridge_agent_exited_signal(bridge, WTERMSIG(status), now_ms())
                    : aw_bridge_agent_exited_code(bridge, WEXITSTATUS(status), now_ms());
            if (r != AW_RESULT_OK) {
                fail("aw_bridge_agent_exited", r, aw_bridge_last_error(bridge));
            }
            ended = drain(bridge, &agent) || ended;
            continue;
        }
        if (agent.stdin_fd >= 0) {
            fds[nfds].fd = agent.stdin_fd, fds[nfds].events = POLLOUT, nfds++;
        }
        if (agent.stdout_fd >= 0) {
            fds[nfds].fd = agent.stdout_fd, fds[nfds].events = POLLIN, nfds++;
        }
        if (agent.stderr_fd >= 0) {
            fds[nfds].fd = agent.stderr_fd, fds[nfds].events = POLLIN, nfds++;
        }
        if (!ended) {
            aw_bridge_poll_timeout(bridge, &has_deadline, &deadline);
        } else {
            /* The response is over but the agent still runs: give it a moment to exit by
             * itself, then end its process group. */
            if (grace_until == 0) {
                grace_until = now + 2000;
            }
            has_deadline = true;
            deadline = grace_until;
        }
        if (has_deadline) {
            timeout = deadline > now ? (int)(deadline - now) : 0;
        }
        if (poll(fds, (nfds_t)nfds, timeout) < 0 && errno != EINTR) {
            perror("poll");
            return 1;
        }
        for (i = 0; i < nfds; i++) {
            if (fds[i].revents == 0) {
                continue;
            }
            if (fds[i].fd == agent.stdin_fd) {
                ssize_t n = write(agent.stdin_fd, agent.prompt.data + agent.written,
                                  agent.prompt.len - agent.written);
                if (n > 0) {
                    agent.written += (size_t)n;
                }
                if ((n < 0 && errno != EAGAIN && errno != EINTR) ||
                    agent.written == agent.prompt.len) {
                    close(agent.stdin_fd);
                    agent.stdin_fd = -1;
                }
            } else {
                forward(bridge, fds[i].fd == agent.stdout_fd ? &agent.stdout_fd : &agent.stderr_fd,
                        fds[i].fd == agent.stdout_fd);
            }
        }
        if (has_deadline && now_ms() >= deadline) {
            if (ended) {
                stop(&agent);
            } else {
                aw_bridge_handle_timeout(bridge, now_ms());
            }
        }
        if (!ended) {
            ended = drain(bridge, &agent);
        }
    }
    if (agent.stdin_fd >= 0) {
        close(agent.stdin_fd);
    }
    if (agent.stdout_fd >= 0) {
        close(agent.stdout_fd);
    }
    if (agent.stderr_fd >= 0) {
        close(agent.stderr_fd);
    }
    aw_bridge_free(bridge);
    return 0;
}
