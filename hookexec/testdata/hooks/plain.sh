#!/bin/sh
# Plain text context surrounded by blank space.
printf '\n   plain context\nsecond line  \n\n'
