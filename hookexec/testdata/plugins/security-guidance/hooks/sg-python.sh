# Stand-in for the plugin's sg-python.sh, which runs the Python script it
# is given: this one records how it was run, then exits with
# $REPRISE_TEST_EXIT, saying why on stderr, when a test sets it.
. "$REPRISE_TEST_RECORDER.sh"
record "$@"
if [ -n "${REPRISE_TEST_EXIT:-}" ]; then
	echo "stand-in review: finding in the change" >&2
	exit "$REPRISE_TEST_EXIT"
fi
