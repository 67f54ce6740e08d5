# Stand-in for the plugin's kill-switch.sh: records how it was run.
. "$REPRISE_TEST_RECORDER.sh"
record "$@"
