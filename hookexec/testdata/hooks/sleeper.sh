#!/bin/sh
# Leaves a sleeping grandchild, writes "pgid pid childpid" to $1, then
# sleeps past any test timeout.
sleep 60 &
child=$!
read -r _ _ _ _ pgid _ < /proc/$$/stat
echo "$pgid $$ $child" > "$1.tmp"
mv "$1.tmp" "$1"
sleep 60
wait
