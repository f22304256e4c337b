# The real captures beside the repository (`../shared/fixtures`), found by the shell-driven
# tests (bindings/c/run-tests.sh) with the rules of the other finders
# (tests/support/shared.rs, shared_fixtures.py, shared_fixtures.mjs): `AGENTWIRE_SHARED_DIR`
# in place of `../shared`; present, every file asked for must be there; absent, skipped and
# said so; absent under `CI=true` or `AGENTWIRE_REQUIRE_SHARED=1`, a failure.
# Sourced from the repository's root.

# shared_fixtures_files SUBDIR SUFFIX: the files of fixtures/SUBDIR whose names end with
# SUFFIX, one a line, sorted. Status 0 when there (at least one), 1 when the captures are
# absent (a line on stderr says the tests are skipped), 2 when they are required, or present
# without such files (a line on stderr says why).
shared_fixtures_files() {
    local subdir=$1 suffix=$2
    local dir=${AGENTWIRE_SHARED_DIR:-../shared}/fixtures
    if [ ! -d "$dir" ]; then
        case "${CI:-}:${AGENTWIRE_REQUIRE_SHARED:-}" in
            [Tt][Rr][Uu][Ee]:* | 1:* | *:1 | *:[Tt][Rr][Uu][Ee])
                echo "the real captures $dir are absent, and CI=true or AGENTWIRE_REQUIRE_SHARED=1 requires them (set AGENTWIRE_SHARED_DIR to where they are)" >&2
                return 2
                ;;
        esac
        echo "SKIPPED: the real captures $dir are absent" >&2
        return 1
    fi
    if [ ! -d "$dir/$subdir" ]; then
        echo "$dir/$subdir: missing from the real captures" >&2
        return 2
    fi
    local found
    found=$(find "$dir/$subdir" -maxdepth 1 -type f -name "*$suffix" | LC_ALL=C sort)
    if [ -z "$found" ]; then
        echo "$dir/$subdir: no *$suffix in the real captures" >&2
        return 2
    fi
    printf '%s\n' "$found"
}
