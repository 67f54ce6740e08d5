#!/bin/sh
# A UserPromptSubmit or PreCompact hook: blocks (exit 2, the reason on
# stderr) when its input mentions "deploy", otherwise adds context.
input=$(cat)
case "$input" in
*deploy*)
	echo "no deploys on Friday" >&2
	exit 2
	;;
esac
echo "remember the style guide"
