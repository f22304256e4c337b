#!/bin/sh
# A stand-in for cursor-agent: ignores its arguments, reads the prompt from stdin, then
# writes the transcript named by AGENTWIRE_REPLAY to stdout and exits with
# AGENTWIRE_REPLAY_EXIT (default 0). With AGENTWIRE_REPLAY_HANG=1 it first starts a child
# that never ends (like a tool the agent runs), writes the child's pid to
# AGENTWIRE_REPLAY_PIDFILE, and after the transcript waits for it: only killing the whole
# process group ends it.
if [ "${AGENTWIRE_REPLAY_HANG:-0}" = 1 ]; then
    sleep 600 &
    echo $! > "$AGENTWIRE_REPLAY_PIDFILE"
fi
cat > /dev/null
cat "$AGENTWIRE_REPLAY"
wait
exit "${AGENTWIRE_REPLAY_EXIT:-0}"
