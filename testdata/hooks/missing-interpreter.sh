#!/usr/bin/no-such-interpreter
echo unreachable
