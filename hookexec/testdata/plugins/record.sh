# record.sh is sourced by the shell stand-ins of the real-plugin fixtures:
# record "$@" keeps how the hook was run (its arguments, working directory,
# the variables of the hook protocol and its stdin) in a directory of its
# own under $REPRISE_TEST_RECORDS, renamed into place once complete.
record() {
	dir=${REPRISE_TEST_RECORDS:?}
	tmp=$(mktemp -d "$dir/.run-XXXXXX") || exit 1
	printf '%s\n' "$0" "$@" >"$tmp/argv"
	pwd -P >"$tmp/cwd"
	: >"$tmp/env"
	for name in CLAUDECODE CLAUDE_CODE_SESSION_ID CLAUDE_PROJECT_DIR CLAUDE_PLUGIN_ROOT CLAUDE_PLUGIN_DATA CLAUDE_ENV_FILE; do
		eval "if [ -n \"\${$name+set}\" ]; then printf '%s=%s\\n' $name \"\$$name\"; fi" >>"$tmp/env"
	done
	cat >"$tmp/stdin"
	mv "$tmp" "$dir/run-${tmp##*/.run-}"
}
