#!/bin/sh
# The cursor-agent both proxies run in the end-to-end tests: the replay agent
# ($AGENTWIRE_REPLAY_AGENT) playing the fixture the requested `--model` names
# (tests/fixtures/e2e/models.txt lists them); any other model plays the CLI's unknown-model
# failure, and `models` prints that list. With $AGENTWIRE_E2E_LOGS set, each run appends its
# argv and prompt to $AGENTWIRE_E2E_LOGS/<model>.log.
set -eu
replay=${AGENTWIRE_REPLAY_AGENT:?the replay agent binary}
fixtures=$(cd "$(dirname "$0")/../fixtures" && pwd)

if [ "${1:-}" = models ] || [ "${1:-}" = --list-models ]; then
    exec cat "$fixtures/e2e/models.txt"
fi

model=
previous=
for arg in "$@"; do
    if [ "$previous" = --model ]; then model=$arg; fi
    previous=$arg
done
if [ -z "$model" ]; then
    exec "$replay" "$@"
fi
if [ -n "${AGENTWIRE_E2E_LOGS:-}" ]; then
    export AGENTWIRE_REPLAY_LOG="$AGENTWIRE_E2E_LOGS/$model.log"
fi

fail() {
    stderr=$fixtures/stderr/$1.txt
    shift
    exec "$replay" --transcript /dev/null --stderr "$stderr" --exit 1 "$@"
}
case "$model" in
    e2e-text) exec "$replay" --transcript "$fixtures/multibyte.jsonl" "$@" ;;
    e2e-tools) exec "$replay" --transcript "$fixtures/client_native_batch.jsonl" "$@" ;;
    e2e-read) exec "$replay" --scenario "$fixtures/e2e/read_file" "$@" ;;
    e2e-shell) exec "$replay" --scenario "$fixtures/e2e/run_command" "$@" ;;
    e2e-cut-short) exec "$replay" --transcript "$fixtures/e2e/cut_short.jsonl" --stderr "$fixtures/stderr/crash.txt" --exit 1 "$@" ;;
    e2e-not-logged-in) fail not_logged_in "$@" ;;
    e2e-usage-limit) fail usage_limit "$@" ;;
    e2e-crash) fail crash "$@" ;;
    *) fail unknown_model "$@" ;;
esac
