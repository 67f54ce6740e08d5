#!/bin/sh
# Never finishes: a background grandchild and the hook itself both sleep.
# $1 receives the process group id so the test can check it was killed.
cut -d' ' -f5 /proc/$$/stat > "$1"
sleep 300 &
sleep 300
