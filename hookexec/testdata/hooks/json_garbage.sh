#!/bin/sh
# Starts like JSON but is not.
echo '  {not json, just braces}  '
