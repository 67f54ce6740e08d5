#!/bin/sh
# hook.sh TAG MODE SIDE
#
# A SessionStart or SessionEnd command hook whose behaviour the tests choose,
# or a hook of a fired event whose input holds a fire_id. It appends
# "EVENT SESSION SOURCE-OR-REASON-OR-FIRE-ID TAG" to the file SIDE, so that
# every run is observed, then acts as MODE:
#
#   text   prints "TAG for SESSION SOURCE" as plain text
#   json   prints the same text as Claude Code JSON additionalContext
#   empty  prints nothing
#   fail   writes to stderr and exits 2
#   hang   sleeps without recording its run, until its timeout kills it
#
# A MODE that starts with "/" names a file holding the mode.
#
# When $REPRISE_CRASH_BLOCK is "EVENT SESSION TAG" and names this run, the
# hook records its run, waits until SIDE holds $REPRISE_CRASH_PEERS runs of
# EVENT on SESSION (its own included), writes "at $REPRISE_CRASH_POINT PGID"
# to the FIFO $REPRISE_CRASH_FIFO and sleeps until it is killed: a crash
# test's "while the hook runs" point.
tag=$1 mode=$2 side=$3
case $mode in
/*) read -r mode < "$mode" ;;
esac
if [ "$mode" = hang ]; then
	exec sleep 30
fi
IFS= read -r in || true
# get NAME sets v to the string field NAME of the JSON on stdin.
get() {
	v=${in#*\"$1\":\"}
	if [ "$v" = "$in" ]; then v=; else v=${v%%\"*}; fi
}
get hook_event_name; ev=$v
get session_id; sid=$v
get source; src=$v
if [ -z "$src" ]; then get reason; src=$v; fi
if [ -z "$src" ]; then get fire_id; src=$v; fi
printf '%s %s %s %s\n' "$ev" "$sid" "$src" "$tag" >> "$side"
if [ -n "$REPRISE_CRASH_BLOCK" ] && [ "$REPRISE_CRASH_BLOCK" = "$ev $sid $tag" ]; then
	while [ "$(grep -c "^$ev $sid " "$side")" -lt "$REPRISE_CRASH_PEERS" ]; do
		sleep 0.01
	done
	read -r stat < /proc/$$/stat
	set -- $stat
	printf 'at %s %s\n' "$REPRISE_CRASH_POINT" "$5" > "$REPRISE_CRASH_FIFO"
	exec sleep 60
fi
case $mode in
text) printf '%s for %s %s\n' "$tag" "$sid" "$src" ;;
json) printf '{"hookSpecificOutput":{"hookEventName":"%s","additionalContext":"%s for %s %s"}}\n' "$ev" "$tag" "$sid" "$src" ;;
fail)
	echo "$tag fails on purpose" >&2
	exit 2
	;;
esac
exit 0
