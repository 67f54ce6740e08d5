#!/bin/sh
echo formatted
