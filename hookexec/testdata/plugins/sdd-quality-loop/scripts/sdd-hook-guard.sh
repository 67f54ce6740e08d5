# Stand-in for the plugin's sdd-hook-guard.sh: records how it was run.
. "$REPRISE_TEST_RECORDER.sh"
record "$@"
