#!/bin/sh
# Leaves a background child holding stdout open, writes its pid to $1 and
# exits at once.
sleep 30 &
echo "$!" > "$1"
echo "daemon started"
