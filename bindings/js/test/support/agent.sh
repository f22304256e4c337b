#!/bin/sh
# The cursor-agent the tests run. With $AGENTWIRE_TEST_AGENT set, the replay agent
# ($AGENTWIRE_REPLAY_AGENT) with those options (a transcript, pacing, scripted failures);
# otherwise the end-to-end agent of tests/clients, which plays the fixture the requested
# --model names. cursor-agent's own flags follow either way (the replay agent ignores them).
set -eu
if [ -n "${AGENTWIRE_TEST_AGENT:-}" ]; then
    # Word splitting intended: the options are a list.
    # shellcheck disable=SC2086
    exec "${AGENTWIRE_REPLAY_AGENT:?the replay agent binary}" $AGENTWIRE_TEST_AGENT "$@"
fi
exec "$(dirname "$0")/../../../../tests/clients/agent.sh" "$@"
