# Shared by run-smoke.sh and campaign.sh, sourced from fuzz/: the toolchain, and each
# target's sanitizer and libFuzzer options.

# cargo-fuzz needs a nightly toolchain; without one, stable is told to accept nightly
# flags with RUSTC_BOOTSTRAP=1, as CI machines only have stable. (grep without -q reads
# all of rustup's output: no SIGPIPE under pipefail.)
toolchain=()
if rustup toolchain list 2>/dev/null | grep '^nightly' >/dev/null; then
    toolchain=(+nightly)
else
    export RUSTC_BOOTSTRAP=1
fi

# The sanitizer of target $1: FUZZ_SANITIZER when set; otherwise none, as the safe Rust
# behind the targets gives AddressSanitizer nothing the assertions do not find, at half
# the speed; but address for `abi`, which calls the C ABI's unsafe code and reads the views
# it hands out, so that a view into freed memory is found.
sanitizer_of() {
    if [ -n "${FUZZ_SANITIZER:-}" ]; then
        echo "$FUZZ_SANITIZER"
    elif [ "$1" = abi ]; then
        echo address
    else
        echo none
    fi
}

# Sets `run_options` to the libFuzzer options of target $1:
# - max_len 64 KiB: several real lines, room for the over-limit paths (the decoder
#   bodies use a 4 KiB line limit, the framing body 16 bytes and 1 KiB);
# - timeout 10 s per input: executions take milliseconds, so anything slower is a
#   finding (a quadratic path, or a generator that got out of hand);
# - rss_limit 1 GiB (half libFuzzer's default) and malloc_limit 256 MiB: the targets
#   peak below 250 MiB, so runaway memory is reported rather than tolerated;
# - a dictionary for the targets that read JSON text;
# - `abi` reads its input as a list of calls: whole lists from the start (no slow growth
#   of the length libFuzzer tries) reach states many calls deep, and 4 KiB holds more
#   calls than a run makes.
options_of() {
    run_options=(-max_len=65536 -timeout=10 -rss_limit_mb=1024 -malloc_limit_mb=256
        -print_final_stats=1)
    case "$1" in
    framing | decoder) run_options+=(-dict=dict/cursor.dict) ;;
    request) run_options+=(-dict=dict/request.dict) ;;
    abi) run_options+=(-max_len=4096 -len_control=0) ;;
    esac
}
